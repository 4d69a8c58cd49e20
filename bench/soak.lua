-- wrk script for bench/soak.sh: each connection's requests rotate through a fixed mix of read endpoints and small
-- jobs; responses are counted by status in each thread and summed in done(), which prints "soak ..." lines that
-- soak.sh parses (wrk's own error counts lump 429 in with real failures, so statuses are counted here).
-- Arguments after the URL keep only the mix entries whose path starts with one of them (e.g. /cost /run).

local mix = {
    {"GET", "/devices"},
    {"GET", "/metrics"},
    {"GET", "/select?prefer=cpu"},
    {"POST", "/run", '{"kernel":"saxpy","n":1024,"wait":true}'},
    {"GET", "/cost"},
    {"GET", "/select?policy=fastest&kernel=sgemm"},
    {"POST", "/run", '{"kernel":"dot","n":4096,"generate":{"seed":7},"wait":true}'},
}

local function name(m)
    if m[3] then return m[1] .. " " .. m[2] .. " " .. m[3] end
    return m[1] .. " " .. m[2]
end

local threads = {}

function setup(thread)
    thread:set("offset", #threads)
    table.insert(threads, thread)
end

function init(args)
    requests, names = {}, {}
    for _, m in ipairs(mix) do
        local keep = #args == 0
        for _, prefix in ipairs(args) do
            if m[2]:sub(1, #prefix) == prefix then keep = true end
        end
        if keep then
            local headers = nil
            if m[3] then headers = {["Content-Type"] = "application/json"} end
            table.insert(requests, wrk.format(m[1], m[2], headers, m[3]))
            table.insert(names, name(m))
        end
    end
    if #requests == 0 then error("no request in the mix matches the arguments") end
    -- threads start at different places in the mix so the endpoints interleave from the first request
    next_index = offset % #requests
    sent = {}
    statuses = {}
end

function request()
    next_index = next_index % #requests + 1
    sent[names[next_index]] = (sent[names[next_index]] or 0) + 1
    return requests[next_index]
end

function response(status, headers, body)
    statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
    local by_status, by_request = {}, {}
    for _, thread in ipairs(threads) do
        for status, n in pairs(thread:get("statuses")) do
            by_status[status] = (by_status[status] or 0) + n
        end
        for what, n in pairs(thread:get("sent")) do
            by_request[what] = (by_request[what] or 0) + n
        end
    end
    for status, n in pairs(by_status) do
        io.write(string.format("soak status %d %d\n", status, n))
    end
    for _, m in ipairs(mix) do
        if by_request[name(m)] then
            io.write(string.format("soak sent %d %s\n", by_request[name(m)], name(m)))
        end
    end
    local e = summary.errors
    io.write(string.format("soak errors connect=%d read=%d write=%d timeout=%d\n",
        e.connect, e.read, e.write, e.timeout))
    io.write(string.format("soak total requests=%d duration_us=%d bytes=%d\n",
        summary.requests, summary.duration, summary.bytes))
    io.write(string.format("soak latency_us p50=%d p99=%d max=%d\n",
        latency:percentile(50), latency:percentile(99), latency.max))
end
