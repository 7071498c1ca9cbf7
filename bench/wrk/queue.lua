-- Visitors of a waiting room reading where they stand, with their place's pass, sent by wrk;
-- used by `bench/src/bin/queue.rs`, which writes the file and reads what `done` prints:
--
--   wrk -t2 -c256 -d30s --timeout 10s --latency -s bench/wrk/queue.lua \
--       http://127.0.0.1:<gateway port> -- <visitors file> <wrk threads>
--
-- Each line of the file is one visitor: path, bearer token and place pass, separated by tabs.
-- With n threads, thread k (0-based) takes lines k+1, k+1+n, ... and cycles through them for
-- the whole run, as a crowd refreshing its pages would. Answers are counted as 200 and other;
-- `done` prints one line, "queue-result {json}", with the sums and wrk's latency percentiles,
-- and a second, "queue-timeline {json}", the 200s of each tenth of a second by the wall clock
-- (`fromS`: the first tenth's Unix time), to count the reads made while a sale ran beside them.

-- The wall clock, for the timeline's tenths (LuaJIT's ffi; without it there is no timeline).
local wall = nil
local has_ffi, ffi = pcall(require, "ffi")
if has_ffi then
   ffi.cdef [[
      typedef struct { long tv_sec; long tv_nsec; } queue_timespec;
      int clock_gettime(int clock_id, queue_timespec *tp);
   ]]
   local now = ffi.new("queue_timespec")
   wall = function()
      ffi.C.clock_gettime(0, now)
      return tonumber(now.tv_sec) + tonumber(now.tv_nsec) / 1e9
   end
end

local threads = {}

function setup(thread)
   thread:set("id", #threads)
   table.insert(threads, thread)
end

function init(args)
   local file, count = args[1], tonumber(args[2])
   if not file or not count or count < 1 then
      error("usage: wrk ... -s queue.lua <url> -- <visitors file> <wrk threads>")
   end
   requests = {}
   local line_number = 0
   for line in io.lines(file) do
      if line_number % count == id then
         local path, token, pass = line:match("^([^\t]+)\t([^\t]+)\t([^\t]+)$")
         if not path then
            error(string.format("%s:%d: not path<TAB>token<TAB>pass", file, line_number + 1))
         end
         requests[#requests + 1] = wrk.format("GET", path, {
            ["Authorization"] = "Bearer " .. token,
            ["X-Queue-Place"] = pass,
         })
      end
      line_number = line_number + 1
   end
   if #requests == 0 then
      error(string.format("thread %d has no line of %s (fewer lines than threads)", id, file))
   end
   next_line = 0
   ok, other = 0, 0
   timeline = {}
   seen = ""
end

function request()
   next_line = next_line % #requests + 1
   return requests[next_line]
end

function response(status, headers, body)
   if status == 200 then
      ok = ok + 1
      if wall then
         local tenth = math.floor(wall() * 10)
         timeline[tenth] = (timeline[tenth] or 0) + 1
      end
   else
      other = other + 1
      if other <= 5 then
         seen = seen .. string.format("thread %d: %d %s\n", id, status, body:sub(1, 300))
      end
   end
end

function done(summary, latency, rates)
   local sums = { ok = 0, other = 0 }
   local timeline, from, to = {}, nil, nil
   for _, thread in ipairs(threads) do
      for tenth, n in pairs(thread:get("timeline") or {}) do
         timeline[tenth] = (timeline[tenth] or 0) + n
         from = (from == nil or tenth < from) and tenth or from
         to = (to == nil or tenth > to) and tenth or to
      end
      sums.ok = sums.ok + (thread:get("ok") or 0)
      sums.other = sums.other + (thread:get("other") or 0)
      local s = thread:get("seen")
      if s and s ~= "" then
         io.stderr:write(s)
      end
   end
   local ms = function(us)
      return us / 1000
   end
   local e = summary.errors
   io.write(string.format(
      'queue-result {"ok":%d,"other":%d,"durationS":%.6f,"p50Ms":%.3f,"p90Ms":%.3f,' ..
      '"p99Ms":%.3f,"maxMs":%.3f,"connectErrors":%d,"readErrors":%d,"writeErrors":%d,"timeouts":%d}\n',
      sums.ok, sums.other, summary.duration / 1e6,
      ms(latency:percentile(50)), ms(latency:percentile(90)), ms(latency:percentile(99)),
      ms(latency.max), e.connect, e.read, e.write, e.timeout))
   if from then
      local reads = {}
      for tenth = from, to do
         reads[#reads + 1] = tostring(timeline[tenth] or 0)
      end
      io.write(string.format('queue-timeline {"fromS":%.1f,"tenthsS":[%s]}\n',
         from / 10, table.concat(reads, ",")))
   end
   io.stdout:flush()
end
