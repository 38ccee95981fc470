--[[
  resolve: a person settles a `needs_review` job: succeeded, failed, or retry (back to
  `pending`, on the jobs stream again). Refused for jobs in any other state.

  KEYS[1] job HASH          {P}:v1:job:<id>
  KEYS[2] jobs stream       {P}:v1:stream:jobs
  KEYS[3] replies stream    {P}:v1:stream:replies
  KEYS[4] review index      {P}:v1:index:needs_review   SET of job ids

  ARGV[1] decision: succeeded | failed | retry
  ARGV[2] note (who decided and why; "" for none)
  ARGV[3] reply text for the user ("" sends none)
  ARGV[4] retention of a finished job's HASH, seconds
  ARGV[5] jobs consumer group
  ARGV[6] replies consumer group

  Returns:
    {"ok", new status}
    {"refused", current status}   the job is not waiting for review ("missing" if absent)
]]

local job_key, stream, replies, review = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local decision = ARGV[1]
local job = redis.call('HMGET', job_key, 'status', 'id', 'chat_id', 'message_id')
if job[1] ~= 'needs_review' then
  return {'refused', job[1] or 'missing'}
end
local id = job[2]
local t = redis.call('TIME')
local now_ms = tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local new_status = decision
if decision == 'retry' then new_status = 'pending' end

redis.call('SREM', review, id)
redis.call('HSET', job_key, 'status', new_status, 'updated_at', now_ms, 'resolved_as', decision,
  'resolution_note', ARGV[2], 'recoveries', 0)
-- A retry starts with a fresh attempt budget; attempts themselves keep counting (fencing).
redis.call('HSET', job_key, 'attempt_base', redis.call('HGET', job_key, 'attempts') or '0')
if new_status == 'pending' then
  if redis.call('EXISTS', stream) == 0 then
    redis.call('XGROUP', 'CREATE', stream, ARGV[5], '0', 'MKSTREAM')
  end
  local entry = redis.call('XADD', stream, '*', 'job', id)
  redis.call('HSET', job_key, 'entry', entry)
else
  redis.call('EXPIRE', job_key, tonumber(ARGV[4]))
end
if ARGV[3] ~= '' then
  if redis.call('EXISTS', replies) == 0 then
    redis.call('XGROUP', 'CREATE', replies, ARGV[6], '0', 'MKSTREAM')
  end
  redis.call('XADD', replies, '*', 'chat_id', job[3], 'reply_to', job[4] or '',
    'kind', 'resolved', 'job_id', id, 'text', (string.gsub(ARGV[3], '{job}', id)),
    'created_at', now_ms)
end
return {'ok', new_status}
