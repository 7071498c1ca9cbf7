-- Registrations read from a file of pre-signed requests, sent by wrk; used by
-- `bench/src/bin/outside.rs`, which writes the file and reads what `done` prints:
--
--   wrk -t2 -c256 -d120s --timeout 10s --latency -s bench/wrk/register.lua \
--       http://127.0.0.1:<gateway port> -- <requests file> <wrk threads>
--
-- Each line of the file is one person: path, bearer token, idempotency key and JSON body,
-- separated by tabs, and, when the event's waiting room is open, a fifth field: the person's
-- admission (sent as X-Admission). With n threads, thread k (0-based) sends lines k+1, k+1+n, k+1+2n, ...
-- of the file (1-based), each once, so the threads never send the same line. Once a thread has
-- had the answers to all its lines it prints "register-thread-done <k>" and stops; after the
-- last line a connection sends nothing more. Answers are counted as created (201), sold out
-- (422 with code sold_out) and other; the id of every 201 goes to "<file>.ids.<k>" for the
-- audit. `done` prints one line, "register-result {json}", with the sums over the threads and
-- wrk's latency percentiles (of every answer, 201 and 422 alike), and a second,
-- "register-timeline {json}", the answers of each tenth of a second from the first answer's to
-- the last's (`fromS`: the first tenth's Unix time): wrk cannot say when its slow answers
-- came, but with every connection waiting for its answer a slow stretch has few answers.
-- On standard error each thread also writes when it sent its first request (Unix time) and
-- how long after it its 1st, 64th, 128th, 256th and 512th answers came ("register-start"):
-- how long a burst's first wave waited. wrk runs each thread's `init` (which reads the file)
-- only after starting the threads before it, so on a busy machine the last thread would begin
-- seconds after the first, and the burst's first seconds would be sent by half the
-- connections: each thread leaves "<file>.ready.<k>" once it has read the file, and the first
-- request of each waits until every thread's is there.

-- A monotonic clock in seconds, for the time from the first request sent to the last answer
-- (wrk's own duration also counts the time its threads sat idle after their last line), and
-- the wall clock, for the timeline's tenths (to be laid beside PostgreSQL's log).
local clock, wall = nil, nil
local has_ffi, ffi = pcall(require, "ffi")
if has_ffi then
   ffi.cdef [[
      typedef struct { long tv_sec; long tv_nsec; } register_timespec;
      int clock_gettime(int clock_id, register_timespec *tp);
      int usleep(unsigned int usec);
   ]]
   local now = ffi.new("register_timespec")
   local CLOCK_MONOTONIC = 1
   local CLOCK_REALTIME = 0
   local read = function(id)
      ffi.C.clock_gettime(id, now)
      return tonumber(now.tv_sec) + tonumber(now.tv_nsec) / 1e9
   end
   clock = function()
      return read(CLOCK_MONOTONIC)
   end
   wall = function()
      return read(CLOCK_REALTIME)
   end
end

-- Sleeps about `seconds` (the thread's whole event loop with it).
local function pause(seconds)
   if has_ffi then
      ffi.C.usleep(math.floor(seconds * 1e6))
   else
      os.execute(string.format("sleep %.3f", seconds))
   end
end

-- Whether every thread has read its lines: each leaves a file when it has.
local function marker(file, k)
   return file .. ".ready." .. k
end

local function all_ready(file, count)
   for k = 0, count - 1 do
      local f = io.open(marker(file, k), "r")
      if not f then
         return false
      end
      f:close()
   end
   return true
end

-- Main state: the threads, each given its number.
local threads = {}

function setup(thread)
   thread:set("id", #threads)
   table.insert(threads, thread)
end

-- Thread state from here on (`id` was set by setup before init runs).
function init(args)
   -- args[0] is the URL; the arguments after `--` follow from 1.
   local file, count = args[1], tonumber(args[2])
   if not file or not count or count < 1 then
      error("usage: wrk ... -s register.lua <url> -- <requests file> <wrk threads>")
   end
   -- The requests are made once, here, so that sending costs wrk no more than a table lookup.
   requests = {}
   local line_number = 0
   for line in io.lines(file) do
      if line_number % count == id then
         local path, token, key, body = line:match("^([^\t]+)\t([^\t]+)\t([^\t]+)\t(.+)$")
         if not path then
            error(string.format("%s:%d: not path<TAB>token<TAB>key<TAB>body", file, line_number + 1))
         end
         local headers = {
            ["Authorization"] = "Bearer " .. token,
            ["X-Idempotency-Key"] = key,
            ["Content-Type"] = "application/json",
         }
         local json, admission = body:match("^([^\t]+)\t([^\t]+)$")
         if json then
            body = json
            headers["X-Admission"] = admission
         end
         requests[#requests + 1] = wrk.format("POST", path, headers, body)
      end
      line_number = line_number + 1
   end
   if #requests == 0 then
      error(string.format("thread %d has no line of %s (fewer lines than threads)", id, file))
   end
   -- The first thread's init runs before any other's (wrk runs them one after the other), so
   -- markers left by an earlier run are gone before any thread of this one leaves its own.
   if id == 0 then
      for k = 0, count - 1 do
         os.remove(marker(file, k))
      end
   end
   assert(io.open(marker(file, id), "w")):close()
   ready_file, thread_count, waiting = file, count, true
   ids = assert(io.open(file .. ".ids." .. id, "w"))
   next_line = 1
   created, sold_out, other, answered = 0, 0, 0, 0
   first, last = -1, -1
   -- Answers a tenth of a second, keyed by the wall clock's tenths: where the burst slowed.
   timeline = {}
   seen = ""
   -- wrk calls request() once on its first thread before the run to check what it returns,
   -- and never sends that one: it must not use up a line.
   checking = (id == 0)
end

function request()
   if checking then
      checking = false
      return requests[1]
   end
   local r = requests[next_line]
   if r == nil then
      -- Every line sent: this connection stays quiet until the thread stops.
      return ""
   end
   if waiting then
      -- The thread's first request: nothing goes out before every thread can send too.
      while not all_ready(ready_file, thread_count) do
         pause(0.01)
      end
      waiting = false
   end
   if next_line == 1 and clock then
      first = clock()
      first_wall = wall()
      io.stderr:write(string.format("register-start thread %d: first request at %.3f\n", id, first_wall))
   end
   next_line = next_line + 1
   return r
end

function response(status, headers, body)
   if status == 201 then
      created = created + 1
      -- The registration's own id is the first field of the answer.
      local registration = body:match('"id":"([%x%-]+)"')
      if registration then
         ids:write(registration .. "\n")
      end
   elseif status == 422 and body:find('"code":"sold_out"', 1, true) then
      sold_out = sold_out + 1
   else
      other = other + 1
      if other <= 5 then
         seen = seen .. string.format("thread %d: %d %s\n", id, status, body:sub(1, 300))
      end
   end
   answered = answered + 1
   if wall and (answered == 1 or answered == 64 or answered == 128 or answered == 256 or answered == 512) then
      io.stderr:write(string.format("register-start thread %d: answer %d at +%.1f ms\n", id, answered, (wall() - first_wall) * 1000))
   end
   if clock then
      last = clock()
      local tenth = math.floor(wall() * 10)
      timeline[tenth] = (timeline[tenth] or 0) + 1
   end
   if answered == #requests then
      ids:flush()
      io.write(string.format("register-thread-done %d\n", id))
      io.stdout:flush()
      wrk.thread:stop()
   end
end

-- Main state again, after every thread has stopped.
function done(summary, latency, rates)
   local sums = { created = 0, sold_out = 0, other = 0, answered = 0, sent = 0 }
   local first, last = nil, nil
   local timeline, from, to = {}, nil, nil
   for _, thread in ipairs(threads) do
      for tenth, n in pairs(thread:get("timeline") or {}) do
         timeline[tenth] = (timeline[tenth] or 0) + n
         from = (from == nil or tenth < from) and tenth or from
         to = (to == nil or tenth > to) and tenth or to
      end
      sums.created = sums.created + (thread:get("created") or 0)
      sums.sold_out = sums.sold_out + (thread:get("sold_out") or 0)
      sums.other = sums.other + (thread:get("other") or 0)
      sums.answered = sums.answered + (thread:get("answered") or 0)
      sums.sent = sums.sent + (thread:get("next_line") or 1) - 1
      local f, l = thread:get("first") or -1, thread:get("last") or -1
      if f >= 0 and (first == nil or f < first) then
         first = f
      end
      if l >= 0 and (last == nil or l > last) then
         last = l
      end
      local s = thread:get("seen")
      if s and s ~= "" then
         io.stderr:write(s)
      end
   end
   local elapsed = (first and last and last >= first) and (last - first) or -1
   local ms = function(us)
      return us / 1000
   end
   local e = summary.errors
   io.write(string.format(
      'register-result {"created":%d,"soldOut":%d,"other":%d,"answered":%d,"sent":%d,' ..
      '"elapsedS":%.6f,"durationS":%.6f,"p50Ms":%.3f,"p90Ms":%.3f,"p99Ms":%.3f,"maxMs":%.3f,' ..
      '"connectErrors":%d,"readErrors":%d,"writeErrors":%d,"timeouts":%d}\n',
      sums.created, sums.sold_out, sums.other, sums.answered, sums.sent,
      elapsed, summary.duration / 1e6,
      ms(latency:percentile(50)), ms(latency:percentile(90)), ms(latency:percentile(99)),
      ms(latency.max),
      e.connect, e.read, e.write, e.timeout))
   -- Every tenth of a second from the first answer's to the last's, quiet ones as 0.
   if from then
      local answers = {}
      for tenth = from, to do
         answers[#answers + 1] = tostring(timeline[tenth] or 0)
      end
      io.write(string.format('register-timeline {"fromS":%.1f,"tenthsS":[%s]}\n',
         from / 10, table.concat(answers, ",")))
   end
   io.stdout:flush()
end
