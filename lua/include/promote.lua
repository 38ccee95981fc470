--[[
  include/promote.lua: the one way due retries go back on the jobs stream, shared by
  promote.lua and liveness.lua (a worker process's heartbeat promotes in the same call). Runs
  after include/common.lua (now_ms, ensure_group). Never reads KEYS or ARGV.

  promote_due(retry, stream, prefix, limit, group)
      retry   the retry schedule (ZSET job id -> due time, ms), stream the jobs stream, prefix
      the job key prefix, limit the most jobs to promote (a string), group the jobs consumer
      group. Each `retry_wait` job whose time is due is removed from the schedule and added to
      the stream in one step (a job is never both scheduled and queued, nor neither); an id
      whose job is no longer `retry_wait` is only removed. Returns how many were put back.
]]

local function promote_due(retry, stream, prefix, limit, group)
  local due = redis.call('ZRANGEBYSCORE', retry, '-inf', now_ms(), 'LIMIT', 0, limit)
  local promoted = 0
  for _, id in ipairs(due) do
    redis.call('ZREM', retry, id)
    local job_key = prefix .. id
    if redis.call('HGET', job_key, 'status') == 'retry_wait' then
      ensure_group(stream, group)
      local entry = redis.call('XADD', stream, '*', 'job', id)
      redis.call('HSET', job_key, 'entry', entry)
      promoted = promoted + 1
    end
  end
  return promoted
end
