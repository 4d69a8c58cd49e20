-- 0003: /cost reads a device's jobs by finish time; (device, kernel, finished_at) cannot serve that range, so it
-- read every job of the device.
CREATE INDEX jobs_by_device_finished ON jobs (device, finished_at);
