--[[
  extend: a live worker renews the leases of the jobs it is running, so a slow job is never
  taken from it. The lease is the jobs-stream entry's idle time in the consumer group: XCLAIM
  with min-idle 0 and JUSTID resets it without counting a delivery. XAUTOCLAIM takes only
  entries idle longer than the reclaim time, i.e. those whose owner stopped renewing.

  Guarantee: a lease is renewed only while the job is still `running` under this worker's
  attempt; a zombie worker cannot take an entry back from the worker that recovered it.

  KEYS[1]   jobs stream       {P}:v1:stream:jobs
  KEYS[2..] job HASHes        {P}:v1:job:<id>, one per entry in ARGV

  ARGV[1] jobs consumer group
  ARGV[2] consumer name
  ARGV[3..] pairs: stream entry id, attempt number (in the order of KEYS[2..])

  Returns the entry ids whose lease was NOT renewed (the job moved on without this worker).
]]

local stream, group, consumer = KEYS[1], ARGV[1], ARGV[2]
local lost = {}
for i = 2, #KEYS do
  local entry, attempt = ARGV[2 * i - 1], ARGV[2 * i]
  local job = redis.call('HMGET', KEYS[i], 'status', 'attempts', 'owner', 'entry')
  if job[1] == 'running' and job[2] == attempt and job[3] == consumer and job[4] == entry then
    redis.call('XCLAIM', stream, group, consumer, 0, entry, 'JUSTID')
  else
    lost[#lost + 1] = entry
  end
end
return lost
