--[[
  request: a media request (issue 44) asked, decided, withdrawn or expired, each in one atomic
  step. Runs after include/common.lua, include/create_job.lua, include/tokens.lua,
  include/quota.lua and include/requests.lua (the request's fields and indexes are described
  there).

  Modes:
    ask     a requester's typed /subscribe or /best, once their worker looked the media up and
            the library does not have it (or they asked anyway): a request and its cards
            (include/requests.lua's make_request). The worker's reply answers them
    tap     a tap on an `r:` button; the token's action says whose:
            `decide` (an admin's card: approve | best | decline): the first tap decides the
            request, once, whoever and wherever. Approval makes the job in the same step
            (include/create_job.lua, for the requester as owner, `approved_by` and `request`
            set, the business key taken over), unless the requester may no longer use the bot
            (then it is declined). Every card is edited to say who decided what, the requester
            told once. A later tap is told it was decided, by whom, and its card edited
            `withdraw` (the requester's): a pending request withdrawn, its cards edited
            A button on a /requests or /mine list (the token's `list`) decides as a card's
            does, but the list's message is left as it is shown: the answer says what
            happened (a list is a snapshot; the command shows it again)
    expire  pending requests past expires_at: expired, cards edited, requester told (at most
            20 a call)

  Guarantee: a request is decided at most once (pending -> approved | declined | withdrawn |
  expired, never back), approval makes exactly one job in the same step as the decision, and
  nobody but an admin now decides: a requester's tap on a card (forged or copied data), a tap
  on a card in another chat, a tap after expiry or decision makes nothing. An update_id seen
  before writes nothing.

  KEYS[1]  updates HASH      {P}:v1:updates:<n>          field ARGV[2]: job id or "-"
  KEYS[2]  request prefix    {P}:v1:request:             + id: a request (HASH)
  KEYS[3]  request sequence  {P}:v1:seq:request
  KEYS[4]  pending ZSET      {P}:v1:requests:pending     id by expires_at (ms)
  KEYS[5]  person prefix     {P}:v1:requests:of:         + Telegram id: ZSET of their requests
  KEYS[6]  pointer prefix    {P}:v1:requests:key:        + idem: the pending request of that ask
  KEYS[7]  token prefix      {P}:v1:token:
  KEYS[8]  token-group pfx   {P}:v1:tgroup:
  KEYS[9]  replies stream    {P}:v1:stream:replies
  KEYS[10] callbacks stream  {P}:v1:stream:callbacks     one answer per tap
  KEYS[11] reply prefix      {P}:v1:reply:               + a card's entry: its delivery record
  KEYS[12] pages prefix      {P}:v1:pages:               a release list's pages (kept alive)
  KEYS[13] releases prefix   {P}:v1:releases:            a release list (kept alive)
  KEYS[14] command-key pfx   {P}:v1:cmd:
  KEYS[15] job id sequence   {P}:v1:seq:job
  KEYS[16] job key prefix    {P}:v1:job:
  KEYS[17] jobs stream       {P}:v1:stream:jobs
  KEYS[18] chat prefix       {P}:v1:chat:                + <chat id>:jobs, the requester's chat index
  KEYS[19] jobs index        {P}:v1:index:recent
  KEYS[20] quota prefix      {P}:v1:quota:               + Telegram id: the requester's weekly
                                                         quota (include/quota.lua): a request's
                                                         slots become its job's at approval, and
                                                         are freed by any other end

  ARGV[1]  mode: ask | tap | expire
  ARGV[2]  update_id (tap), else ""
  ARGV[3]  update retention, seconds
  ARGV[4]  the tapper's Telegram id (tap), else ""
  ARGV[5]  chat id of the tapped button's message (tap), else ""
  ARGV[6]  message id of the tapped button's message (tap), else ""
  ARGV[7]  callback_query_id (tap), else ""
  ARGV[8]  token (tap), else ""
  ARGV[9]  request ttl, ms (household.request_ttl_secs)
  ARGV[10] most pending requests per person (household.max_pending_requests_per_person)
  ARGV[11] jobs consumer group
  ARGV[12] replies consumer group
  ARGV[13] callbacks consumer group
  ARGV[14] chat index length, jobs index length ("<n>,<m>")
  ARGV[15] texts (JSON): "card" ({id}, {what}, {who}), "sent" ({id}); tap answers "expired",
           "foreign", "forbidden", "decided" ({what}), "done" ({what}), "gone" (the requester
           may no longer use the bot), "withdrawn"; a card's last line "card_approved",
           "card_best", "card_declined" ({who}), "card_expired", "card_withdrawn", "card_gone";
           the requester's "person_approved", "person_declined", "person_expired", "person_gone"
           ({id}, {what})
  ARGV[16] detail (JSON), by mode: ask: include/requests.lua's q as Rust builds it (fields,
           cards, quota; texts from ARGV[15] added here); tap: {"may_decide": "1" when the tapper
           may use the bot and is an admin now, "who": the tapper's name, "role": their role
           (the approved job's `role`), "person_allowed": "1" when the token's person may
           still use the bot}; expire: ""

  Returns {outcome, id}:
    ask:    make_request's outcome ("sent", "same", "many", "nobody", "quota") and the request id
    tap:    "approved" (id: the job's), "declined", "gone" (declined: the requester lost access),
            "withdrawn", "decided" (decided before), "expired", "foreign", "forbidden",
            "duplicate_update"; id the request's (the job's for approved)
    expire: "expired", n
]]

local updates_key, prefix, seq, pending = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local of_prefix, key_prefix, token_prefix, group_prefix = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local replies, callbacks, reply_prefix = KEYS[9], KEYS[10], KEYS[11]
local pages_prefix, releases_prefix, cmd_prefix = KEYS[12], KEYS[13], KEYS[14]
local job_seq, job_prefix, jobs_stream, chat_prefix, jobs_index =
  KEYS[15], KEYS[16], KEYS[17], KEYS[18], KEYS[19]
local quota_prefix = KEYS[20]
local mode, update_id, retention, user_id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local chat_id, message_id, query_id, token = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local ttl_ms, max_pending = ARGV[9], ARGV[10]
local jobs_group, replies_group, callbacks_group = ARGV[11], ARGV[12], ARGV[13]
local chat_len, jobs_len = string.match(ARGV[14], '^(%d+),(%d+)$')
local texts = cjson.decode(ARGV[15])
local detail = ARGV[16] ~= '' and cjson.decode(ARGV[16]) or {}
local now = now_ms()
local c = {replies = replies, replies_group = replies_group, reply_prefix = reply_prefix,
  job_prefix = job_prefix,
  pending = pending, key_prefix = key_prefix, quota_prefix = quota_prefix, now = now}

local function answer(text, alert)
  answer_query(callbacks, callbacks_group, query_id, text, alert, now)
end

local function vars(r)
  return {id = r.id or '', what = r.what or '', who = r.decided_by_name or r.decided_by or ''}
end

-- A pending request past its time: expired, its cards and its requester told.
local function expire(r, key)
  close_request(r, key, 'expired', c)
  edit_cards(r, texts.card_expired, '', c)
  tell_requester(r, fill(texts.person_expired, vars(r)), c)
end

if mode == 'expire' then
  local due = redis.call('ZRANGEBYSCORE', pending, '-inf', now, 'LIMIT', 0, 20)
  for _, id in ipairs(due) do
    local key, r = request_of(prefix, id)
    if r.state == 'pending' then expire(r, key) else redis.call('ZREM', pending, id) end
  end
  return {'expired', #due}
end

if mode == 'ask' then
  local q = detail
  q.prefix, q.seq, q.pending, q.of_prefix, q.key_prefix = prefix, seq, pending, of_prefix, key_prefix
  q.token_prefix, q.group_prefix, q.replies, q.replies_group = token_prefix, group_prefix,
    replies, replies_group
  q.pages_prefix, q.releases_prefix, q.now, q.ttl_ms, q.max_pending = pages_prefix,
    releases_prefix, now, ttl_ms, max_pending
  q.quota_prefix = quota_prefix
  q.texts = texts
  local outcome, id = make_request(q)
  return {outcome, id}
end

-- mode tap. The transport layer: an update_id seen before writes nothing.
if redis.call('HEXISTS', updates_key, update_id) == 1 then return {'duplicate_update', ''} end
local function finish(value, outcome, id)
  mark_update(updates_key, update_id, value, retention)
  return {outcome, id or ''}
end

local t = hash_of(token_prefix .. token)
if t.action ~= 'decide' and t.action ~= 'withdraw' then
  answer(texts.expired, true)
  return finish('-', 'expired')
end
if t.chat_id ~= chat_id then
  answer(texts.foreign, true)
  return finish('-', 'foreign')
end
if t.action == 'withdraw' and t.user_id ~= user_id then
  answer(texts.foreign, true)
  return finish('-', 'foreign')
end
if t.action == 'decide' and detail.may_decide ~= '1' then
  answer(texts.forbidden, true)
  return finish('-', 'forbidden')
end

local key, r = request_of(prefix, t.request or '')
local tapped = chat_id .. ':' .. message_id
local function last_line()
  local v = vars(r)
  if r.state == 'approved' then
    return fill(r.decision == 'best' and texts.card_best or texts.card_approved, v)
  elseif r.state == 'declined' then
    return fill(r.decision == 'gone' and texts.card_gone or texts.card_declined, v)
  elseif r.state == 'withdrawn' then
    return texts.card_withdrawn
  end
  return texts.card_expired
end
-- Edits the tapped card (an admin's) to `text`; a requester's own message loses its button;
-- a list (/requests, /mine) is left as shown.
local function settle_tapped(text)
  if (t.list or '') ~= '' then return end
  if t.action == 'decide' then
    request_card_reply(c, chat_id, text, nil, message_id)
  else
    ensure_group(replies, replies_group)
    queue_reply(replies, {chat_id = chat_id, kind = 'clear_markup', op = 'clear_markup',
      edit_message_id = message_id, now = now})
  end
end

if r.state == nil then
  answer(texts.expired, true)
  return finish('-', 'expired')
end
if r.state == 'pending' and not live_request(r, now) then
  expire(r, key)
  answer(texts.expired, true)
  if t.action == 'withdraw' then settle_tapped('') end
  return finish('-', 'expired', r.id)
end
if r.state ~= 'pending' then
  local last = last_line()
  answer(fill(texts.decided, {what = last}), true)
  settle_tapped((r.text or '') .. '\n\n' .. last)
  return finish('-', 'decided', r.id)
end

-- The first tap decides.
if t.action == 'withdraw' then
  close_request(r, key, 'withdrawn', c)
  redis.call('HSET', key, 'decided_by', user_id, 'decided_at', now)
  edit_cards(r, texts.card_withdrawn, '', c)
  settle_tapped('')
  answer(texts.withdrawn, false)
  return finish('-', 'withdrawn', r.id)
end

local decision = t.decision
r.decided_by, r.decided_by_name = user_id, detail.who
if decision ~= 'decline' and detail.person_allowed ~= '1' then decision = 'gone' end
r.decision = decision
local job_id = ''
if decision == 'approve' or decision == 'best' then
  local command, idem, window_ms = r.command, r.idem, r.window_ms
  if decision == 'best' and (r.best_idem or '') ~= '' then
    command, idem, window_ms = 'best', r.best_idem, r.best_window_ms
  end
  -- The approval takes the business key over: the requester's own lookup job may hold it.
  job_id = create_job({
    seq_key = job_seq, job_prefix = job_prefix, jobs_stream = jobs_stream,
    jobs_group = jobs_group, chat_index = chat_prefix .. r.chat_id .. ':jobs',
    chat_index_len = chat_len, jobs_index = jobs_index, jobs_index_len = jobs_len,
    command_key = cmd_prefix .. idem, window_ms = tonumber(window_ms) or 0,
    updates_key = updates_key, retention = retention, now = now,
    fields = {idempotency_key = idem, update_id = update_id, chat_id = r.chat_id,
      user_id = r.user_id, message_id = r.reply_to or '', command = command,
      args = r.args, recovery = r.recovery, requester = r.requester or '',
      role = detail.role, thread_id = r.thread_id},
  })
  redis.call('HSET', job_prefix .. job_id, 'approved_by', user_id, 'request', r.id)
  close_request(r, key, 'approved', c)
  -- The request's quota slots become its job's, which complete.lua settles by what it made.
  local slots = tonumber(r.quota_slots) or 0
  if slots > 0 then
    quota_hold(quota_prefix .. r.user_id, slots_of('j', job_id, slots), now)
    redis.call('HSET', job_prefix .. job_id, 'quota', slots)
  end
  redis.call('HSET', key, 'decision', decision, 'decided_by', user_id,
    'decided_by_name', detail.who, 'decided_at', now, 'job_id', job_id)
  -- The job's result edits the requester's answer, which so becomes its live card (issue
  -- 45): one message from the request to the library.
  local shown = tell_requester(r, fill(texts.person_approved, vars(r)), c)
  if shown then redis.call('HSET', job_prefix .. job_id, 'progress_message_id', shown) end
else
  close_request(r, key, 'declined', c)
  redis.call('HSET', key, 'decision', decision, 'decided_by', user_id,
    'decided_by_name', detail.who, 'decided_at', now)
  tell_requester(r, fill(decision == 'gone' and texts.person_gone or texts.person_declined,
    vars(r)), c)
end
local text = edit_cards(r, last_line(), tapped, c)
settle_tapped(text)
if decision == 'gone' then
  answer(texts.gone, true)
  return finish('-', 'gone', r.id)
end
answer(fill(texts.done, {what = last_line()}), false)
if job_id ~= '' then return {'approved', job_id} end
return finish('-', 'declined', r.id)
