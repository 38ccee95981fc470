--[[
  complete: record the outcome of one attempt, queue the user's reply and acknowledge the jobs
  entry, in one atomic step. A crash before it leaves the job `running` (recovered later by
  policy); a crash after it leaves nothing to do.

  Guarantee: only the attempt that owns the job can record its outcome. A worker that was
  presumed dead and comes back (its attempt is not the job's current one, or the job is no longer
  `running`) changes nothing and does not acknowledge the entry.

  Runs after include/common.lua and include/tokens.lua: the reply's buttons are stored, and a job
  that enters `needs_review` is announced to the admin chats with review buttons, in the same
  step.

  KEYS[1] job HASH          {P}:v1:job:<id>
  KEYS[2] jobs stream       {P}:v1:stream:jobs
  KEYS[3] replies stream    {P}:v1:stream:replies
  KEYS[4] retry schedule    {P}:v1:retry                ZSET job id -> due time (ms)
  KEYS[5] review index      {P}:v1:index:needs_review   SET of job ids
  KEYS[6] token prefix      {P}:v1:token:               buttons' tokens (the reply's, the review's)
  KEYS[7] token-group pfx   {P}:v1:tgroup:              their groups

  ARGV[1]  stream entry id of the attempt
  ARGV[2]  consumer name
  ARGV[3]  attempt number (the fencing token)
  ARGV[4]  new status: succeeded | failed | retry_wait | needs_review
  ARGV[5]  result (text; "" keeps none)
  ARGV[6]  error (text; "" keeps none)
  ARGV[7]  reply text for the user ("" sends none)
  ARGV[8]  reply kind
  ARGV[9]  retry_wait: due time in ms since the epoch
  ARGV[10] retention of a finished job's HASH, seconds
  ARGV[11] jobs consumer group
  ARGV[12] replies consumer group
  ARGV[13] buttons under the reply (Telegram InlineKeyboardMarkup JSON, written as the reply's
           `markup` field); "" for none
  ARGV[14] needs_review only: the review notice for the admin chats (JSON, see
           include/tokens.lua); "" for none
  ARGV[15] the buttons' token group (JSON of `ledger::tokens::TokenGroup`, see
           include/tokens.lua), stored in this same step so that a button exists exactly when
           the reply that shows it does; "" for none
  ARGV[16..] pairs of extra job fields to set (e.g. mp_subscription_id, outcome)

  The attempt's `owner` is removed; a `succeeded` or `failed` job also loses the other fields
  only a job that may still run needs (include/common.lua's finish_job) and gets its expiry.

  Returns:
    {"ok", status}                    recorded, reply queued (and for needs_review the admin
                                      chats' notices), entry acknowledged and deleted
    {"stale", status, attempts}       this attempt does not own the job: nothing changed
]]

local job_key, stream, replies, retry, review = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local entry, consumer, attempt, new_status = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

local job = redis.call('HMGET', job_key, 'status', 'attempts', 'owner', 'entry', 'chat_id',
  'message_id', 'id', 'command', 'args', 'error')
local status, attempts, owner = job[1], job[2], job[3]
if status ~= 'running' or attempts ~= attempt or owner ~= consumer or job[4] ~= entry then
  return {'stale', status or 'missing', attempts or ''}
end
local id = job[7]

local now = now_ms()

-- The whole row change in one HSET.
local set = {'status', new_status, 'updated_at', now}
if ARGV[5] ~= '' then set[#set + 1] = 'result'; set[#set + 1] = ARGV[5] end
if ARGV[6] ~= '' then set[#set + 1] = 'error'; set[#set + 1] = ARGV[6] end
if new_status == 'retry_wait' then set[#set + 1] = 'retry_at'; set[#set + 1] = ARGV[9] end
for i = 16, #ARGV - 1, 2 do
  set[#set + 1] = ARGV[i]
  set[#set + 1] = ARGV[i + 1]
end
redis.call('HSET', job_key, unpack(set))

if ARGV[15] ~= '' then
  create_tokens(KEYS[6], KEYS[7], cjson.decode(ARGV[15]), now)
end

if new_status == 'retry_wait' or new_status == 'needs_review' then
  redis.call('HDEL', job_key, 'owner')
end
if new_status == 'retry_wait' then
  redis.call('ZADD', retry, ARGV[9], id)
elseif new_status == 'needs_review' then
  redis.call('SADD', review, id)
  local err = ARGV[6]
  if err == '' then err = job[10] or '' end
  notify_review({notice = ARGV[14], token_prefix = KEYS[6], group_prefix = KEYS[7],
    replies = replies, replies_group = ARGV[12], now = now, job_id = id,
    vars = {job = id, command = job[8] or '', args = job[9] or '', attempts = attempts,
      error = err}})
else
  finish_job(job_key, ARGV[10])
end

if ARGV[7] ~= '' then
  ensure_group(replies, ARGV[12])
  if ARGV[13] ~= '' then
    redis.call('XADD', replies, '*', 'chat_id', job[5], 'reply_to', job[6] or '',
      'kind', ARGV[8], 'job_id', id, 'text', ARGV[7], 'markup', ARGV[13], 'created_at', now)
  else
    redis.call('XADD', replies, '*', 'chat_id', job[5], 'reply_to', job[6] or '',
      'kind', ARGV[8], 'job_id', id, 'text', ARGV[7], 'created_at', now)
  end
end

redis.call('XACK', stream, ARGV[11], entry)
redis.call('XDEL', stream, entry)
return {'ok', new_status}
