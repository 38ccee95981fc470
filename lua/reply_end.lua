--[[
  reply_end: record how a reply ended and acknowledge its replies-stream entry, in one step.

  KEYS[1] reply HASH        {P}:v1:reply:<entry id>
  KEYS[2] replies stream    {P}:v1:stream:replies
  KEYS[3] job key prefix    {P}:v1:job:                 the script builds {P}:v1:job:<id>

  ARGV[1] entry id
  ARGV[2] replies consumer group
  ARGV[3] state: sent | failed
  ARGV[4] Telegram's message_id ("" for none)
  ARGV[5] error ("" for none)
  ARGV[6] job id ("" for none): its HASH gets reply_state / reply_message_id / reply_error
  ARGV[7] "progress" if this was a job's "working on it" message: the job remembers its
          message_id as progress_message_id, so the final result edits it in place
  ARGV[8] retention of the reply HASH, seconds

  Returns {"ok", state}.
  Runs after include/common.lua (now_ms, ensure_group).
]]

local reply, stream = KEYS[1], KEYS[2]
local state, message_id, err, job_id = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local now = now_ms()
redis.call('HSET', reply, 'state', state, 'updated_at', now)
if message_id ~= '' then redis.call('HSET', reply, 'message_id', message_id) end
if err ~= '' then redis.call('HSET', reply, 'error', err) end
redis.call('EXPIRE', reply, tonumber(ARGV[8]))
if job_id ~= '' then
  local job = KEYS[3] .. job_id
  if redis.call('EXISTS', job) == 1 then
    if ARGV[7] == 'progress' then
      if message_id ~= '' then redis.call('HSET', job, 'progress_message_id', message_id) end
    else
      redis.call('HSET', job, 'reply_state', state)
      if message_id ~= '' then redis.call('HSET', job, 'reply_message_id', message_id) end
      if err ~= '' then redis.call('HSET', job, 'reply_error', err) end
    end
  end
end
redis.call('XACK', stream, ARGV[2], ARGV[1])
redis.call('XDEL', stream, ARGV[1])
return {'ok', state}
