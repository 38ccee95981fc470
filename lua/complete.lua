--[[
  complete: record the outcomes of attempts, queue each user's reply and acknowledge each jobs
  entry, in one atomic step. A crash before it leaves the jobs `running` (recovered later by
  policy); a crash after it leaves nothing to do. One call records every outcome a worker had
  ready at once (a group commit): each is fenced and recorded on its own, as if alone.

  Guarantee: only the attempt that owns a job can record its outcome. A worker that was
  presumed dead and comes back (its attempt is not the job's current one, or the job is no longer
  `running`) changes nothing for that job and does not acknowledge its entry.

  Runs after include/common.lua, include/tokens.lua, include/claim.lua and include/cards.lua
  (a download's or subscription's live card opens with its outcome): a reply's buttons are
  stored, and a job that enters `needs_review` is announced to the admin chats with review
  buttons, in the same step.

  Then it takes up to ARGV[4] new entries for the worker (the slots the group frees): one
  XREADGROUP, and each fresh job claimed as claim.lua claims it, so that a busy worker makes one
  call per group instead of a read, a claim and a completion. Only a `pending` or `retry_wait`
  job is claimed here; a `running` one (never the case for a new entry unless the ledger was
  edited by hand) is left pending for claim.lua, which applies the recovery policy with the
  admin chats' buttons.

  KEYS[1] jobs stream       {P}:v1:stream:jobs
  KEYS[2] replies stream    {P}:v1:stream:replies
  KEYS[3] retry schedule    {P}:v1:retry                ZSET job id -> due time (ms)
  KEYS[4] review index      {P}:v1:index:needs_review   SET of job ids
  KEYS[5] token prefix      {P}:v1:token:               buttons' tokens (the reply's, the review's)
  KEYS[6] token-group pfx   {P}:v1:tgroup:              their groups
  KEYS[7] job key prefix    {P}:v1:job:                 the taken entries' jobs
  KEYS[7+i] job HASH of the i-th outcome                {P}:v1:job:<id>

  ARGV[1] retention of a finished job's HASH, seconds
  ARGV[2] jobs consumer group
  ARGV[3] replies consumer group
  ARGV[4] how many new entries to take after recording (0: none)
  ARGV[5] consumer name that takes them (the worker's)
  ARGV[6] trim the jobs stream after acknowledging (include/common.lua's trim_done): "1" now;
          "d" only once drained, when the read below took fewer entries than asked (or none was
          asked): nothing new waits, so the worker is going idle; "0" to leave it to a later
          call. A worker asks "1" every few dozen outcomes and "d" whenever nothing else of its
          own still runs, so a busy worker does not pay for an XPENDING and an XTRIM per group
          that would mostly remove nothing, and an idle stream still ends empty
  ARGV[7] job kinds the taker runs, each between two "|" (include/claim.lua's understood)
  ARGV[8] idle time (ms) an entry left for a newer worker is given (include/claim.lua's
          leave_for_newer)
  then one record per outcome, in KEYS order: 9 values, and 7 more when the ninth is "1":
    +1  stream entry id of the attempt
    +2  attempt number (the fencing token)
    +3  the job's chat_id (where its reply goes: the worker read it in the claim, and it never
        changes), `chat_id/thread_id` when the job has a forum topic
    +4  the job's message_id (the reply answers it; "" for none)
    +5  new status: succeeded | failed | retry_wait | needs_review
    +6  result (text; "" keeps none)
    +7  reply text for the user ("" sends none)
    +8  reply kind
    +9  "0": the record ends here (no error, retry, buttons, review notice, tokens, poster or
        extra fields: the common outcome, sent without seven empty values), and the attempt
        queued no "working on it" message (progress.lua), so a first attempt's job has no
        `progress` to delete; "p": the same, but it may have queued one; "1": these follow
        (and `progress` is deleted whether or not there is one)
    +10 error (text; "" keeps none)
    +11 retry_wait: due time in ms since the epoch
    +12 buttons under the reply (Telegram InlineKeyboardMarkup JSON, written as the reply's
        `markup` field); "" for none
    +13 needs_review only: the review notice for the admin chats (JSON, see
        include/tokens.lua); "" for none
    +14 the buttons' token group (JSON of `ledger::tokens::TokenGroup`, see
        include/tokens.lua), stored in this same step so that a button exists exactly when
        the reply that shows it does; "" for none
    +15 a poster's URL: the reply is sent as a photo with the text as its caption; "" for none
    +16 n, the number of extra job fields that follow (e.g. mp_subscription_id, outcome)
    then n name, value pairs; a `quota_used` among them settles the job's weekly quota slots
    (issue 44): of the `quota` slots it holds (`j<id>`, `j<id>:2` in `{P}:v1:quota:<user_id>`,
    the prefix derived from KEYS[7]), the first `quota_used` count from now, the rest are freed;
    a `follow` (JSON, issue 45) of a `succeeded` job opens its live card (include/cards.lua:
    `{P}:v1:card:<id>`, `{P}:v1:cards:open`, `{P}:v1:following:<digest>`,
    `{P}:v1:cards:of:<user_id>`, derived from KEYS[7]),
    followed for `follow_ms` milliseconds, a field of the JSON

  The fence is the attempt number and the entry: a job is `running` under attempts = a only
  between the claim that made attempt a (include/claim.lua's start_attempt, the one writer of
  both `attempts` and `running`; `attempts` only ever grows) and that attempt's outcome or
  recovery, and the entry, a stream id, names one admission of one job. The entry keeps the
  fence when Redis lost its last writes (a restart without persistence, a power loss under AOF
  everysec) and a job id was given again to a new job, which a new claim then ran as its own
  attempt 1. The owner is not checked as well: it can differ only when the claim itself was
  lost and the same job claimed again under the same number, and then the first of the two
  outcomes is recorded and the other is stale, one outcome either way.

  A `succeeded` job keeps an earlier attempt's error as `last_attempt_error` and its kind as
  `last_attempt_error_kind`, not as its `error` and `mp_error_kind` (which describe the
  outcome). The attempt's `owner` is removed; a `succeeded` or `failed` job also loses the other fields
  only a job that may still run needs (include/common.lua's finish_job) and gets its expiry.
  The entries of the recorded outcomes are acknowledged together at the end, with one XACK
  (Lua's unpack bounds a call to a few thousand outcomes; the worker sends at most 64), and
  when ARGV[6] asks, the stream is trimmed up to its oldest entry still pending
  (include/common.lua's trim_done):
  entries are removed in order instead of one by one, so a finished job's entry stays in the
  stream while an older one still runs. The job HASH's `entry` field, cleared by finish_job,
  no longer names it, and claim.lua skips an entry that is not its job's current one.

  Returns one flat array of strings: the number of outcomes n, then n answers, then what was
  taken. Each answer is one JSON array of strings (a nested reply array costs Redis a reply
  buffer of its own, more than the whole record):
    ["ok", status]                    recorded, reply queued (and for needs_review the admin
                                      chats' notices), entry acknowledged (and trimmed away
                                      once no older entry is pending)
    ["stale", status, attempts]       this attempt does not own the job: nothing changed
  taken: one string per entry read, in stream order: the job id, the entry id, then claim.lua's
  answer, or for a job's first attempt (the common claim) a shorter one, all in one string:
  joined by NUL bytes (a first attempt whose values hold none), else a JSON array of strings.
  One string, not a value each: each value in the answer costs Redis about as much as a field
  read, and the worker's RESP parser more; no JSON for the common one: encoding it cost Redis
  more than the claim's HSET. The answers:
    id, entry, "first", command, args, chat_id, user_id, message_id, recovery, requester, role,
    thread_id
                                      the job's first attempt, claimed as "fresh" but answered
                                      without what every first attempt has alike (status
                                      `running`, attempts 1, recoveries 0) or lacks
                                      (attempt_base, auth_wait_since, auth_waits), or repeats
                                      (the id and entry)
    id, entry, "run", attempt, "fresh", values...   as claim.lua's
    id, entry, "skip", status         nothing to run (finished, missing, an entry that is not the
                                      job's current one; "" for the id of an entry naming no
                                      job): acknowledged and deleted
    id, entry, "defer"                a `running` job: left pending for claim.lua
    id, entry, "unknown", kind        a job of a kind the taker does not run: left for a newer
                                      worker, nothing changed, not acknowledged
                                      (include/claim.lua's leave_for_newer)
]]

local stream, replies, retry, review = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local job_prefix = KEYS[7]
local retention, group, replies_group = ARGV[1], ARGV[2], ARGV[3]
local take, taker, trim = tonumber(ARGV[4]), ARGV[5], ARGV[6]
local kinds, left_idle = ARGV[7], ARGV[8]

local NO_EARLIER = {false, false}
-- The answers of the four statuses, made once: a string built per outcome is a new Lua string.
local OK = {succeeded = '["ok","succeeded"]', failed = '["ok","failed"]',
  retry_wait = '["ok","retry_wait"]', needs_review = '["ok","needs_review"]'}

local now = now_ms()
local acked = {}
local replies_ready = false

-- A job's weekly quota slots once it ended: the first `used` count from now, the rest freed.
local base = (string.gsub(job_prefix, 'job:$', ''))
local quota_prefix = base .. 'quota:'
local function settle_quota(job_key, id, used)
  local held = call('HMGET', job_key, 'quota', 'user_id')
  local slots = tonumber(held[1]) or 0
  if slots == 0 then return end
  local key = quota_prefix .. (held[2] or '')
  for i = 1, slots do
    local member = i == 1 and ('j' .. id) or ('j' .. id .. ':' .. i)
    if i <= used then
      call('ZADD', key, 'XX', now, member)
    else
      call('ZREM', key, member)
    end
  end
end

-- Records the outcome whose record starts at ARGV[at + 1]; returns the answer and where the
-- next record starts.
local function complete_one(job_key, at)
  local entry, attempt, chat_id, reply_to = ARGV[at + 1], ARGV[at + 2], ARGV[at + 3], ARGV[at + 4]
  -- `chat/topic` for a job asked in a forum topic (the worker has it from the claim).
  local thread = ''
  local slash = string.find(chat_id, '/', 1, true)
  if slash then
    thread = string.sub(chat_id, slash + 1)
    chat_id = string.sub(chat_id, 1, slash - 1)
  end
  local new_status, result, text, kind = ARGV[at + 5], ARGV[at + 6], ARGV[at + 7], ARGV[at + 8]
  local err, due, markup, notice, tokens, photo, extra = '', '', '', '', '', '', 0
  local next_at = at + 9
  local shape = ARGV[at + 9]
  if shape == '1' then
    err, due, markup, notice = ARGV[at + 10], ARGV[at + 11], ARGV[at + 12], ARGV[at + 13]
    tokens, photo, extra = ARGV[at + 14], ARGV[at + 15], tonumber(ARGV[at + 16])
    next_at = at + 16 + 2 * extra
  end

  -- The fence (see the header): the first three fields of the HASH.
  local job = call('HMGET', job_key, 'status', 'attempts', 'entry')
  local status, attempts = job[1], job[2]
  if status ~= 'running' or attempts ~= attempt or job[3] ~= entry then
    return cjson.encode({'stale', status or 'missing', attempts or ''}), next_at
  end
  local id = string.sub(job_key, #job_prefix + 1)
  -- An earlier attempt's error and its kind: only an outcome (or a recovery) writes them, so a
  -- first attempt has none to keep.
  local first = attempt == '1'
  local earlier = NO_EARLIER
  if not first and (new_status == 'succeeded' or new_status == 'needs_review') then
    earlier = call('HMGET', job_key, 'error', 'mp_error_kind')
  end

  -- The whole row change in one HSET; the common outcome's without building a table.
  if err == '' and extra == 0 and new_status ~= 'retry_wait' then
    if result ~= '' then
      call('HSET', job_key, 'status', new_status, 'updated_at', now, 'result', result)
    else
      call('HSET', job_key, 'status', new_status, 'updated_at', now)
    end
  else
    local set = {'status', new_status, 'updated_at', now}
    if result ~= '' then set[#set + 1] = 'result'; set[#set + 1] = result end
    if err ~= '' then set[#set + 1] = 'error'; set[#set + 1] = err end
    if new_status == 'retry_wait' then set[#set + 1] = 'retry_at'; set[#set + 1] = due end
    local quota_used, follow
    for i = at + 17, next_at, 2 do
      set[#set + 1] = ARGV[i]
      set[#set + 1] = ARGV[i + 1]
      if ARGV[i] == 'quota_used' then quota_used = tonumber(ARGV[i + 1]) end
      if ARGV[i] == 'follow' then follow = ARGV[i + 1] end
    end
    call('HSET', job_key, unpack(set))
    if quota_used then settle_quota(job_key, id, quota_used) end
    if follow and new_status == 'succeeded' then
      local spec = cjson.decode(follow)
      local user = call('HGET', job_key, 'user_id') or ''
      open_card({card_key = base .. 'card:' .. id, open_key = base .. 'cards:open',
        following_prefix = base .. 'following:',
        of_key = user ~= '' and (base .. 'cards:of:' .. user) or '', id = id, chat_id = chat_id,
        thread = thread, user_id = user, spec = follow, now = now,
        follow_ms = spec.follow_ms or '0'})
    end
  end
  if new_status == 'succeeded' and earlier[1] then
    -- An earlier attempt's error is not the job's: keep it apart, as that attempt's.
    call('HSET', job_key, 'last_attempt_error', earlier[1])
    call('HDEL', job_key, 'error')
  end
  if new_status == 'succeeded' and earlier[2] then
    -- Its kind too, beside it: the outcome has none.
    call('HSET', job_key, 'last_attempt_error_kind', earlier[2])
    call('HDEL', job_key, 'mp_error_kind')
  end

  if tokens ~= '' then
    create_tokens(KEYS[5], KEYS[6], cjson.decode(tokens), now)
  end

  if new_status == 'retry_wait' or new_status == 'needs_review' then
    call('HDEL', job_key, 'owner')
  end
  if new_status == 'retry_wait' then
    call('ZADD', retry, due, id)
  elseif new_status == 'needs_review' then
    call('SADD', review, id)
    if err == '' then err = earlier[1] or '' end
    local asked = call('HMGET', job_key, 'command', 'args')
    notify_review({notice = notice, token_prefix = KEYS[5], group_prefix = KEYS[6],
      replies = replies, replies_group = replies_group, now = now, job_id = id,
      vars = {job = id, command = asked[1] or '', args = asked[2] or '', attempts = attempts,
        error = err}})
  else
    finish_job(job_key, retention, first, shape == '0')
  end

  if text ~= '' then
    if markup == '' and photo == '' then
      queue_text_reply(replies, replies_group, chat_id, reply_to, kind, id, text, now, thread)
    else
      if not replies_ready then
        ensure_group(replies, replies_group)
        replies_ready = true
      end
      queue_reply(replies, {chat_id = chat_id, reply_to = reply_to, kind = kind, job_id = id,
        text = text, markup = markup, photo = photo, thread_id = thread, now = now})
    end
  end

  acked[#acked + 1] = entry
  return OK[new_status] or cjson.encode({'ok', new_status}), next_at
end

-- The answer for one entry read for the taker (see the header's "taken").
local function take_one(entry, fields)
  local id
  for i = 1, #fields, 2 do
    if fields[i] == 'job' then id = fields[i + 1] end
  end
  local status
  if id then
    local job_key = job_prefix .. id
    local every, later = read_claim_row(job_key)
    status = every[1]
    if status and every[3] == entry then
      if (status == 'pending' or status == 'retry_wait' or status == 'running')
        and not understood(kinds, every[4]) then
        leave_for_newer(stream, group, taker, entry, left_idle)
        return cjson.encode({id, entry, 'unknown', every[4] or ''})
      end
      if status == 'pending' or status == 'retry_wait' then
        if every[2] == '0' then
          begin_attempt(job_key, '1', taker, now, 0)
          -- A job's first attempt: only the values the job was made with (see the header).
          local command, args, chat_id, user_id = every[4] or '', every[5] or '', every[6] or '',
            every[7] or ''
          local message_id, recovery, requester, role = every[8] or '', every[9] or '',
            every[10] or '', every[11] or ''
          local thread = every[12] or ''
          -- Only the arguments and the requester are free text; the rest are numbers and
          -- oncebot's own words. One concatenation makes one string: no table, no buffer.
          if not string.find(args, '\0', 1, true) and not string.find(requester, '\0', 1, true) then
            return id .. '\0' .. entry .. '\0first\0' .. command .. '\0' .. args .. '\0' .. chat_id
              .. '\0' .. user_id .. '\0' .. message_id .. '\0' .. recovery .. '\0' .. requester
              .. '\0' .. role .. '\0' .. thread
          end
          return cjson.encode({id, entry, 'first', command, args, chat_id, user_id, message_id,
            recovery, requester, role, thread})
        end
        return cjson.encode(start_attempt({id, entry}, job_key, id, every, later, taker, now,
          'fresh', later[1] and tonumber(later[1]) or 0))
      end
      if status == 'running' then return cjson.encode({id, entry, 'defer'}) end
    end
  end
  call('XACK', stream, group, entry)
  call('XDEL', stream, entry)
  return cjson.encode({id or '', entry, 'skip', status or 'missing'})
end

local n = #KEYS - 7
local out = {tostring(n)}
local at = 8
for i = 1, n do
  out[i + 1], at = complete_one(KEYS[7 + i], at)
end
if #acked > 0 then
  call('XACK', stream, group, unpack(acked))
  if trim == '1' then trim_done(stream, group) end
end

local got = 0
if take > 0 then
  local read = call('XREADGROUP', 'GROUP', group, taker, 'COUNT', take, 'STREAMS', stream, '>')
  if read then
    local entries = read[1][2]
    got = #entries
    for _, e in ipairs(entries) do out[#out + 1] = take_one(e[1], e[2]) end
  end
end
-- Once drained: after the read, which tells whether anything new still waits.
if trim == 'd' and #acked > 0 and (take == 0 or got < take) then trim_done(stream, group) end
return out
