-- Visitors of a waiting room reading where they stand, with their place's pass, sent by wrk;
-- used by `bench/src/bin/queue.rs`, which writes the file and reads what `done` prints:
--
--   wrk -t2 -c256 -d30s --timeout 10s --latency -s bench/wrk/queue.lua \
--       http://127.0.0.1:<gateway port> -- <visitors file> <wrk threads>
--
-- Each line of the file is one visitor: path, bearer token and place pass, separated by tabs.
-- With n threads, thread k (0-based) takes lines k+1, k+1+n, ... and cycles through them for
-- the whole run, as a crowd refreshing its pages would. Answers are counted as 200 and other;
-- `done` prints one line, "queue-result {json}", with the sums and wrk's latency percentiles.

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
   seen = ""
end

function request()
   next_line = next_line % #requests + 1
   return requests[next_line]
end

function response(status, headers, body)
   if status == 200 then
      ok = ok + 1
   else
      other = other + 1
      if other <= 5 then
         seen = seen .. string.format("thread %d: %d %s\n", id, status, body:sub(1, 300))
      end
   end
end

function done(summary, latency, rates)
   local sums = { ok = 0, other = 0 }
   for _, thread in ipairs(threads) do
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
   io.stdout:flush()
end
