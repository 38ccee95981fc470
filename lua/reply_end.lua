--[[
  reply_end: record how a reply ended and acknowledge its replies-stream entry, in one step.

  A reply to a job (ARGV[6] names a job that still exists; not its "working on it" message) is
  recorded in the job HASH only: reply_state, reply_attempts (from the reply HASH),
  reply_message_id and reply_form (photo | text) when sent, reply_error when failed (the other one of the two is removed, so
  the fields describe one reply), and its reply HASH is deleted. The entry is acknowledged and
  deleted in this same step, so nothing can deliver it again (reply_begin.lua answers "done" for
  an entry that is no longer pending). Every other reply keeps its HASH for ARGV[8].

  KEYS[1] reply HASH        {P}:v1:reply:<entry id>
  KEYS[2] replies stream    {P}:v1:stream:replies
  KEYS[3] job key prefix    {P}:v1:job:                 the script builds {P}:v1:job:<id>

  ARGV[1] entry id
  ARGV[2] replies consumer group
  ARGV[3] state: sent | failed
  ARGV[4] Telegram's message_id ("" for none)
  ARGV[5] error ("" for none)
  ARGV[6] job id ("" for none): its HASH gets reply_state / reply_attempts / reply_message_id /
          reply_error
  ARGV[7] "progress" if this was a job's "working on it" message: the job remembers its
          message_id as progress_message_id, so the final result edits it in place; the reply
          HASH is kept as for a reply without a job
  ARGV[8] retention of a reply HASH that is kept, seconds
  ARGV[9] form of the message sent: photo | text ("" when failed); a kept reply HASH has it
          as `form`

  Returns {"ok", state}.
  Runs after include/common.lua (now_ms, ensure_group).
]]

local reply, stream = KEYS[1], KEYS[2]
local state, message_id, err, job_id = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local job = nil
if job_id ~= '' and redis.call('EXISTS', KEYS[3] .. job_id) == 1 then
  job = KEYS[3] .. job_id
end

-- One HSET per key. In the job, a reply field without a value is removed instead (left from an
-- earlier reply of the same job), so reply_message_id / reply_error describe this reply alone.
if job and ARGV[7] ~= 'progress' then
  local set, unset = {'reply_state', state}, {}
  local attempts = redis.call('HGET', reply, 'attempts')
  if attempts then
    set[#set + 1] = 'reply_attempts'
    set[#set + 1] = attempts
  end
  for _, f in ipairs({{'reply_message_id', message_id}, {'reply_error', err},
      {'reply_form', ARGV[9]}}) do
    if f[2] ~= '' then
      set[#set + 1] = f[1]
      set[#set + 1] = f[2]
    else
      unset[#unset + 1] = f[1]
    end
  end
  redis.call('HSET', job, unpack(set))
  if #unset > 0 then redis.call('HDEL', job, unpack(unset)) end
  redis.call('DEL', reply)
else
  local set = {'state', state, 'updated_at', now_ms()}
  if message_id ~= '' then
    set[#set + 1] = 'message_id'
    set[#set + 1] = message_id
  end
  if err ~= '' then
    set[#set + 1] = 'error'
    set[#set + 1] = err
  end
  if ARGV[9] ~= '' then
    set[#set + 1] = 'form'
    set[#set + 1] = ARGV[9]
  end
  redis.call('HSET', reply, unpack(set))
  redis.call('EXPIRE', reply, tonumber(ARGV[8]))
  if job and message_id ~= '' then
    redis.call('HSET', job, 'progress_message_id', message_id)
  end
end
redis.call('XACK', stream, ARGV[2], ARGV[1])
redis.call('XDEL', stream, ARGV[1])
return {'ok', state}
