--[[
  enqueue: admit one Telegram update into the ledger, atomically (one EVALSHA per update).

  Guarantee: an update_id is admitted at most once while its key lives (transport layer), and a
  side-effecting command with a duplicate window creates at most one job per window (business
  layer). Either the whole admission is written or, on a transport duplicate, nothing is.

  Every key is under the configured prefix as hash tag, so the script also runs on Redis Cluster.

  KEYS[1]  update key       {P}:v1:update:<update_id>   STRING: job id, or "-" when no job was made
  KEYS[2]  command key      {P}:v1:cmd:<digest>         STRING: job id, PX = duplicate window
  KEYS[3]  job id sequence  {P}:v1:seq:job              STRING counter (INCR)
  KEYS[4]  job key prefix   {P}:v1:job:                 the script builds {P}:v1:job:<id> (HASH)
  KEYS[5]  jobs stream      {P}:v1:stream:jobs          entries: job=<id>
  KEYS[6]  replies stream   {P}:v1:stream:replies       entries: chat_id, text, kind, job_id, ...
  KEYS[7]  chat index       {P}:v1:chat:<chat_id>:jobs  LIST of job ids, newest first, trimmed
  KEYS[8]  jobs index       {P}:v1:index:jobs           ZSET job id -> id, trimmed to the newest N
  Keys built inside: KEYS[4] .. <id> (the job HASH), for a new job and for the job a key points to.

  ARGV[1]  mode: "job" (create a job) or "reply" (answer with ARGV[12], make no job)
  ARGV[2]  update_id
  ARGV[3]  update key retention, seconds
  ARGV[4]  chat_id
  ARGV[5]  user_id
  ARGV[6]  message_id to reply to ("" for none)
  ARGV[7]  command, normalised (e.g. "subscribe")
  ARGV[8]  arguments as the user typed them (whitespace collapsed)
  ARGV[9]  idempotency key: hex digest of chat, user, normalised command and arguments
  ARGV[10] duplicate window, milliseconds (0: the command is never treated as a duplicate);
           in mode "reply", the window in which the same reply (KEYS[2]) is sent only once
  ARGV[11] reply kind for the reply stream ("refusal", "help", "duplicate", ...)
  ARGV[12] mode "reply": the text to send; mode "job": the text sent to a duplicate, in which
           "{job}" becomes the original job id and "{state}" its state's label
  ARGV[13] chat index length
  ARGV[14] jobs index length
  ARGV[15] consumer group of the jobs stream
  ARGV[16] consumer group of the replies stream
  ARGV[17] recovery policy of the command (rerun | verify | idempotent | review), stored in the
           job for claim.lua to read after a crash
  ARGV[18..] pairs: state name, state label (for "{state}")

  Returns an array {outcome, job_id, state}:
    {"new", id, "pending"}                   a job was created and added to the jobs stream
    {"duplicate_update", id or "", state}    the update_id was seen before; nothing changed
    {"duplicate_command", id, state}         same command inside its window: the update now points
                                             at the existing job, whose duplicates counter grew; a
                                             "duplicate" reply went to the replies stream
    {"replied", "", ""}                      mode "reply": the reply was queued, no job
    {"suppressed", "", ""}                   mode "reply" with a window that was already open:
                                             no reply, no job (refusals go out once a window)
  A job whose state is "failed" does not absorb a repeat: the user may try again at once.
]]

local update_key, command_key, seq_key, job_prefix = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local jobs_stream, replies_stream, chat_index, jobs_index = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local mode, update_id, retention = ARGV[1], ARGV[2], ARGV[3]
local chat_id, user_id, message_id = ARGV[4], ARGV[5], ARGV[6]
local command, args, idem_key, window_ms = ARGV[7], ARGV[8], ARGV[9], tonumber(ARGV[10])
local reply_kind, reply_text = ARGV[11], ARGV[12]

-- 1. Transport layer: the same update_id again changes nothing.
local seen = redis.call('GET', update_key)
if seen then
  if seen == '-' then return {'duplicate_update', '', ''} end
  local state = redis.call('HGET', job_prefix .. seen, 'status')
  return {'duplicate_update', seen, state or ''}
end

local t = redis.call('TIME')
local now_ms = tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))

local function ensure_group(stream, group)
  if redis.call('EXISTS', stream) == 0 then
    redis.call('XGROUP', 'CREATE', stream, group, '0', 'MKSTREAM')
  end
end

local function reply(kind, text, job_id)
  ensure_group(replies_stream, ARGV[16])
  redis.call('XADD', replies_stream, '*', 'chat_id', chat_id, 'reply_to', message_id,
    'kind', kind, 'job_id', job_id, 'text', text, 'created_at', now_ms)
end

if mode == 'reply' then
  redis.call('SET', update_key, '-', 'EX', retention)
  -- A window on a reply (e.g. refusals to a stranger) sends it once per window, not per message.
  if window_ms > 0 and not redis.call('SET', command_key, '-', 'NX', 'PX', window_ms) then
    return {'suppressed', '', ''}
  end
  reply(reply_kind, reply_text, '')
  return {'replied', '', ''}
end

-- 2. Business layer: the same command inside its window points at the existing job.
if window_ms > 0 then
  local existing = redis.call('GET', command_key)
  if existing then
    local job_key = job_prefix .. existing
    local state = redis.call('HGET', job_key, 'status')
    if state and state ~= 'failed' then
      redis.call('SET', update_key, existing, 'EX', retention)
      redis.call('HINCRBY', job_key, 'duplicates', 1)
      redis.call('HSET', job_key, 'last_duplicate_update_id', update_id)
      local label = state
      for i = 18, #ARGV - 1, 2 do
        if ARGV[i] == state then label = ARGV[i + 1] end
      end
      local text = string.gsub(reply_text, '{job}', existing)
      text = string.gsub(text, '{state}', (string.gsub(label, '%%', '%%%%')))
      reply('duplicate', text, existing)
      return {'duplicate_command', existing, state}
    end
  end
end

-- 3. A new job.
local id = tostring(redis.call('INCR', seq_key))
local job_key = job_prefix .. id
redis.call('HSET', job_key,
  'id', id, 'idempotency_key', idem_key, 'update_id', update_id,
  'chat_id', chat_id, 'user_id', user_id, 'message_id', message_id,
  'command', command, 'args', args, 'status', 'pending', 'attempts', '0',
  'recovery', ARGV[17], 'created_at', now_ms, 'updated_at', now_ms, 'result', '', 'error', '')
redis.call('SET', update_key, id, 'EX', retention)
if window_ms > 0 then
  redis.call('SET', command_key, id, 'PX', window_ms)
end
ensure_group(jobs_stream, ARGV[15])
local entry = redis.call('XADD', jobs_stream, '*', 'job', id)
redis.call('HSET', job_key, 'entry', entry)
redis.call('LPUSH', chat_index, id)
redis.call('LTRIM', chat_index, 0, tonumber(ARGV[13]) - 1)
redis.call('ZADD', jobs_index, id, id)
local excess = redis.call('ZCARD', jobs_index) - tonumber(ARGV[14])
if excess > 0 then
  redis.call('ZREMRANGEBYRANK', jobs_index, 0, excess - 1)
end
return {'new', id, 'pending'}
