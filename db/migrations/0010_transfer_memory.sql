-- 0010: the host memory a job's transfers used, as its answer's timing.transfer_memory says it: 'pinned'
-- (page-locked, read and written by the device's DMA directly) or 'pageable' (staged by the driver). NULL for jobs
-- that moved no data of the host's and for jobs an earlier version recorded.
ALTER TABLE jobs ADD COLUMN transfer_memory TEXT;
