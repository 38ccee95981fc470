--[[
  reply_end: record how replies ended and acknowledge their replies-stream entries, in one
  step. One call records every reply a dispatcher had ended at once (a group commit, as
  complete.lua's): each is recorded on its own, as if alone.

  A reply to a job (its job id names a job that still exists; not its "working on it" message)
  is recorded in the job HASH only (and, when the job opened a live card, its message_id and
  form in the card, `{P}:v1:card:<job id>`, derived from KEYS[2], which edits it from then
  on): reply_state, reply_attempts (from the reply HASH), reply_message_id and reply_form
  (photo | text) when sent, reply_error when failed (the other one of the two is removed, so
  the fields describe one reply), and its reply HASH is deleted.
  The entries are acknowledged and deleted in this same step, so nothing can deliver them again
  (reply_begin.lua answers "done" for an entry that is no longer pending). Every other reply
  keeps its HASH for ARGV[2].

  KEYS[1] replies stream    {P}:v1:stream:replies
  KEYS[2] job key prefix    {P}:v1:job:                 the script builds {P}:v1:job:<id>
  KEYS[2+i] reply HASH of the i-th reply                {P}:v1:reply:<entry id>

  ARGV[1] replies consumer group
  ARGV[2] retention of a reply HASH that is kept, seconds
  then one record of 7 values per reply, in KEYS order:
    +1 entry id
    +2 state: sent | failed
    +3 Telegram's message_id ("" for none)
    +4 error ("" for none)
    +5 job id ("" for none): its HASH gets reply_state / reply_attempts / reply_message_id /
       reply_error
    +6 "progress" if this was a job's "working on it" message: the job remembers its
       message_id as progress_message_id, so the final result edits it in place; the reply
       HASH is kept as for a reply without a job
    +7 form of the message sent: photo | text ("" when failed); a kept reply HASH has it as
       `form`

  A live card's edit (its reply HASH has `card` and `card_seq`, reply_begin.lua) also tells the
  card (`{P}:v1:card:<id>`, derived from KEYS[2]): sent, its `shown` becomes that seq (never
  lower); failed because the person deleted the message (Telegram's "message to edit not
  found"), its `gone` becomes "1": no more edits, the closing notice still comes.

  Returns {"ok", state} per reply, in order.
  Runs after include/common.lua (now_ms, ensure_group).
]]

local stream, job_prefix, group, retention = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
local card_prefix = (string.gsub(job_prefix, 'job:$', 'card:'))
local now = nil

-- A card's edit ended: the card learns what it shows, or that its message is gone.
local function tell_card(reply, state, err)
  local c = redis.call('HMGET', reply, 'card', 'card_seq')
  if not c[1] then return end
  local card = card_prefix .. c[1]
  if redis.call('EXISTS', card) == 0 then return end
  if state == 'sent' then
    if tonumber(redis.call('HGET', card, 'shown') or '0') < tonumber(c[2]) then
      redis.call('HSET', card, 'shown', c[2])
    end
  elseif string.find(err, 'message to edit not found', 1, true) then
    redis.call('HSET', card, 'gone', '1')
  end
end

-- Records the reply whose HASH is `reply` and whose record starts at ARGV[at + 1].
local function end_one(reply, at)
  local entry, state, message_id, err = ARGV[at + 1], ARGV[at + 2], ARGV[at + 3], ARGV[at + 4]
  local job_id, progress, form = ARGV[at + 5], ARGV[at + 6], ARGV[at + 7]
  local job = nil
  if job_id ~= '' and redis.call('EXISTS', job_prefix .. job_id) == 1 then
    job = job_prefix .. job_id
  end

  -- One HSET per key. In the job, a reply field without a value is removed instead (left from
  -- an earlier reply of the same job), so reply_message_id / reply_error describe this reply
  -- alone.
  if job and progress ~= 'progress' then
    local set, unset = {'reply_state', state}, {}
    local attempts = redis.call('HGET', reply, 'attempts')
    if attempts then
      set[#set + 1] = 'reply_attempts'
      set[#set + 1] = attempts
    end
    for _, f in ipairs({{'reply_message_id', message_id}, {'reply_error', err},
        {'reply_form', form}}) do
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
    -- A job's reply that opened a live card is the card's message: the card edits it.
    if message_id ~= '' then
      local card = card_prefix .. job_id
      if redis.call('EXISTS', card) == 1 then
        redis.call('HSET', card, 'message_id', message_id, 'form', form)
      end
    end
  else
    now = now or now_ms()
    local set = {'state', state, 'updated_at', now}
    if message_id ~= '' then
      set[#set + 1] = 'message_id'
      set[#set + 1] = message_id
    end
    if err ~= '' then
      set[#set + 1] = 'error'
      set[#set + 1] = err
    end
    if form ~= '' then
      set[#set + 1] = 'form'
      set[#set + 1] = form
    end
    redis.call('HSET', reply, unpack(set))
    redis.call('EXPIRE', reply, retention)
    tell_card(reply, state, err)
    if job and message_id ~= '' then
      redis.call('HSET', job, 'progress_message_id', message_id)
    end
  end
  return {'ok', state}
end

local answers, entries = {}, {}
for i = 1, #KEYS - 2 do
  local at = 2 + 7 * (i - 1)
  answers[i] = end_one(KEYS[2 + i], at)
  entries[i] = ARGV[at + 1]
end
-- Lua's unpack bounds a call to a few thousand entries; the dispatcher sends at most 64.
if #entries > 0 then
  redis.call('XACK', stream, group, unpack(entries))
  redis.call('XDEL', stream, unpack(entries))
end
return answers
