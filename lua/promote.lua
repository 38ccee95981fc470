--[[
  promote: put `retry_wait` jobs whose backoff is due back on the jobs stream, atomically with
  removing them from the retry schedule (a job is never both scheduled and queued, nor neither).

  KEYS[1] retry schedule    {P}:v1:retry                ZSET job id -> due time (ms)
  KEYS[2] jobs stream       {P}:v1:stream:jobs
  KEYS[3] job key prefix    {P}:v1:job:                 the script builds {P}:v1:job:<id>

  ARGV[1] most jobs to promote in one call
  ARGV[2] jobs consumer group

  Returns the number of jobs put back on the stream.
  Runs after include/common.lua (now_ms, ensure_group).
]]

local retry, stream, prefix = KEYS[1], KEYS[2], KEYS[3]
local now = tonumber(now_ms())
local due = redis.call('ZRANGEBYSCORE', retry, '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local promoted = 0
for _, id in ipairs(due) do
  redis.call('ZREM', retry, id)
  local job_key = prefix .. id
  if redis.call('HGET', job_key, 'status') == 'retry_wait' then
    ensure_group(stream, ARGV[2])
    local entry = redis.call('XADD', stream, '*', 'job', id)
    redis.call('HSET', job_key, 'entry', entry)
    promoted = promoted + 1
  end
end
return promoted
