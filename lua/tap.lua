--[[
  tap: one callback query (a user tapped an inline button), decided and answered in one atomic
  step. Runs after include/common.lua, include/create_job.lua, include/tokens.lua,
  include/resolve_job.lua, include/quota.lua and include/requests.lua (concatenated in front of it by
  crates/service/src/ledger/scripts.rs), so the job a tap makes is made exactly as enqueue.lua
  makes one, a review button settles a job exactly as `oncebot jobs resolve` does, and a
  requester's tap makes a request exactly as request.lua's `ask` does.

  Guarantee: a button's group is used at most once. The tap that uses it runs its action (a job,
  a cancel, or a review decision) in the same step; every other tap (a second tap, a sibling, a
  tap after expiry, another user's tap) changes no job. Every callback query gets exactly one
  answer on the callbacks stream, written here with the decision; an update_id seen before
  (Telegram delivering the update again) writes nothing at all.

  KEYS[1]  updates HASH      {P}:v1:updates:<n>          field ARGV[2]: job id, or "-"
                                                         (n = update_id / 100, rounded down)
  KEYS[2]  token key         {P}:v1:token:<token>        HASH (see include/tokens.lua; a field
                             not stored is empty); mode "unknown": any key that does not exist
  KEYS[3]  token-group pfx   {P}:v1:tgroup:              the script reads the token's group there
  KEYS[4]  command-key pfx   {P}:v1:cmd:                 + the token's idempotency key
  KEYS[5]  job id sequence   {P}:v1:seq:job
  KEYS[6]  job key prefix    {P}:v1:job:
  KEYS[7]  jobs stream       {P}:v1:stream:jobs
  KEYS[8]  replies stream    {P}:v1:stream:replies       gets `op=clear_markup` entries
  KEYS[9]  callbacks stream  {P}:v1:stream:callbacks     one answer per callback query
  KEYS[10] chat index        {P}:v1:chat:<chat_id>:jobs  of the chat the button is in
  KEYS[11] jobs index        {P}:v1:index:recent         LIST of job ids, newest first, ARGV[10] of them
  KEYS[12] review index      {P}:v1:index:needs_review
  KEYS[13] request prefix    {P}:v1:request:             (include/requests.lua, for a request)
  KEYS[14] request sequence  {P}:v1:seq:request
  KEYS[15] pending requests  {P}:v1:requests:pending
  KEYS[16] person prefix     {P}:v1:requests:of:
  KEYS[17] pointer prefix    {P}:v1:requests:key:
  KEYS[18] quota prefix      {P}:v1:quota:               + the tapper's id: their weekly quota
                                                         (include/quota.lua)

  ARGV[1]  mode: "token" (callback_data was "t:<token>") or "unknown" (anything else, or a
           button whose message Telegram did not say)
  ARGV[2]  update_id
  ARGV[3]  update retention, seconds (the updates HASH's expiry, renewed by every write)
  ARGV[4]  callback_query_id
  ARGV[5]  id of the user who tapped
  ARGV[6]  id of the chat the button's message is in ("" if unknown)
  ARGV[7]  id of the button's message ("" if unknown)
  ARGV[8]  "1" if the user who tapped is in telegram.allowed_users, else "0"
  ARGV[9]  chat index length
  ARGV[10] jobs index length
  ARGV[11] jobs consumer group
  ARGV[12] replies consumer group
  ARGV[13] callbacks consumer group
  ARGV[14] retention of a finished job's HASH, seconds (a review decision finishes a job)
  ARGV[15] texts (JSON): {"expired", "foreign", "forbidden", "unknown", "received", "duplicate", "already",
           "already_done", "cancelled", "resolved", "settled", "resolved_reply": {"succeeded",
           "failed", "retry"}, "labels": {state: label}}; "{job}" and "{state}" are filled in
  ARGV[16] role of the user who tapped, as the ingress knows it at the tap (viewer | requester
           | user | admin; admin for everyone while nobody is mapped, see crates/service/src/users):
           refused ("forbidden") when it ranks below the token's `least_role` (the command's
           least role; admin for a review or force button; none for Cancel and page buttons);
           stored as the job's `role`
  ARGV[17] the MoviePilot user the tapper acts for ("" for the service account): the `requester`
           of a job the tap makes
  ARGV[18] every role, least first, comma-separated (viewer,requester,user,admin): roles compare by their
           place here, never by name, so a role added later takes its rank. A role not listed
           ranks below every listed one (a tapper) or above them all (a token's least_role from
           a newer release): either way the tap is refused. A token without `least_role` (made
           by an earlier release) needs admin for a review or force button and user for a run
           button
  ARGV[19] job kinds a tap must not make now, each between two "|" ("" for none): kinds an
           older worker still alive would fail (docs/releases.md); a run or force button of one
           is answered "upgrading" and makes nothing
  ARGV[20] a requester's request (JSON, "" for anyone else; issue 44): {"ttl_ms", "max_pending",
           "who", "texts": {"card", "sent", "same", "many", "nobody", "quota"}, "cards": {tokens,
           messages}, "withdraw": {tokens, markup}, "quota": {limit} or absent}
           (include/requests.lua's q). A run button
           whose token carries `ask` (the card's description: made for a requester) and
           whose least role ranks above the tapper's, tapped by a requester, makes a request
           instead of the job, in this step: never a job
  ARGV[21] the tapper's weekly quota (JSON, "" for none): {"limit", "text": the answer when it
           is used up}. A run button of a command that makes something (subscribe, best, grab:
           1 slot; auto: 2; not a series' season choice, `tmdb:<id> tv`) makes its job only
           with room, holding `j<id>` (include/quota.lua; the job's `quota` field says how many
           slots), else it is answered with the text and makes nothing
  ARGV[22] the forum topic of the button's message ("" for none): the job a button in the
           token's own chat makes, a repeat's answer and a request stay in it (the job's and the
           request's `thread_id`)

  Returns {outcome, job_id, state}:
    {"new", id, "pending"}            Confirm / a choice: the job was created; the group is used.
                                      A force button (action "force") creates it inside the
                                      window, takes the window over and sets `forced_by`; a
                                      token with `in_place` gives the job the tapped message as
                                      its `progress_message_id`, so its reply edits it
    {"duplicate_command", id, state}  the same command is inside its window as job id: no new
                                      job; the group is used and points at that job
    {"cancelled", "", ""}             Cancel: the group is used, no job
    {"page", "", ""}                  a page button (action "page"): page `page` of the stored
                                      list ({P}:v1:pages:<list>, prefix derived from KEYS[6])
                                      queued as an edit of the tapped message (kind
                                      "page": its text and keyboard), answered without a text;
                                      no job, no group read or written, the token stays usable
    {"show", "", ""}                  a Show button (action "show", `/mine`'s, issue 45): the
                                      text of live card `job_id` ({P}:v1:card:<id>, prefix
                                      derived from KEYS[6]; the token's `text` while the card
                                      has none) queued as a new message (kind "card_again"), in
                                      reply to the card's message when the card is in the
                                      tapped chat and its message is still there (in the card's
                                      topic), else plainly in the tapped chat (in its topic);
                                      answered without a text; no job, no group read or
                                      written, the token stays usable. A card gone (expired):
                                      "expired", the buttons left
    {"resolved", id, status}          a review button: the job was settled (now status)
    {"settled", id, status}           a review button for a job that no longer waits for review
                                      (settled meanwhile): the group is used, the job unchanged
    {"used", id or "", state or ""}   the group was used before (a second tap, or a sibling):
                                      nothing changed but the answer
    {"expired", "", ""}               no such token (expired, or never made), or a page button
                                      whose list expired, or a Show button whose card expired:
                                      nothing changed
    {"foreign", "", ""}               the token belongs to another user or chat, or the user is
                                      not allowed: nothing changed, the token stays usable (a
                                      page or Show button too)
    {"forbidden", "", ""}             the user's role (ARGV[16]) ranks below the token's
                                      least role: nothing changed, the token stays usable (a
                                      page or Show button is every role's)
    {"unknown", "", ""}               not one of our buttons (or a button access.lua decides,
                                      action ask or access, sent as t:): nothing changed
    {"upgrading", "", ""}             a run or force button whose command is of a kind in
                                      ARGV[19]: nothing changed, the token stays usable
    {"request", id, outcome}          a requester's tap (ARGV[20]): make_request's outcome
                                      ("sent", "same", "many", "nobody", "quota") and the
                                      request id; the group is used only when one was sent
    {"quota", "", ""}                 ARGV[21]'s quota has no room for the button's job:
                                      nothing changed, the token stays usable
    {"duplicate_update", id or "", state}  update_id seen before: nothing written at all
  Besides the callbacks entry, "new", "duplicate_command", "cancelled", "resolved", "settled" and
  "expired" (and "used" from another message than the first tap's) queue a replies entry
  `op=clear_markup, edit_message_id=<message>` that removes that message's buttons.
  A group's key does not exist until a tap uses the group (include/tokens.lua): a token without
  one belongs to an open group, and using it writes the key, expiring a second after the tapped
  token (its PEXPIRETIME + 1000 ms). Its siblings were written in the same step with the same
  ttl, so while any of them exists the record that the group was used does too.
  Except for a solo token (include/tokens.lua): its tap leaves the other buttons working, so
  "new" and "duplicate_command" do not clear the message; a solo token that names a release
  list (`list`) instead marks itself used in the stored keyboard of its page (`page`) of that
  list ({P}:v1:pages:<list>, prefix derived from KEYS[6]) and queues that page (kind "page",
  its text and keyboard, job_id the list's job, whose reply_form says photo or text) as an edit
  of the tapped message: the message then shows the page the
  tapped button is on, whatever page turn was queued before.
  A "duplicate_command" whose job is a finished resource search with a stored list also queues
  that list again (kind "duplicate", its buttons as `markup`), so a repeat gets working buttons.
]]

local updates_key, token_key, group_prefix, cmd_prefix = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local seq_key, job_prefix, jobs_stream, replies = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local callbacks, chat_index, jobs_index, review = KEYS[9], KEYS[10], KEYS[11], KEYS[12]
local mode, update_id, retention, query_id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local user_id, chat_id, message_id, allowed = ARGV[5], ARGV[6], ARGV[7], ARGV[8] == '1'
local tap_thread = ARGV[22]
local role = ARGV[16]

-- The kinds a weekly quota counts (their jobs make a subscription or a download).
local QUOTA_KINDS = {subscribe = true, best = true, grab = true, auto = true}

-- Roles by rank (ARGV[18], least first).
local rank = {}
do
  local place = 0
  for name in string.gmatch(ARGV[18], '[^,]+') do
    place = place + 1
    rank[name] = place
  end
end
local function ranks_at_least(have, needs)
  return (rank[have] or 0) >= (rank[needs] or math.huge)
end

-- 1. Transport layer: a redelivered update_id writes nothing (its answer went out the first time).
local seen = seen_update(updates_key, update_id, job_prefix)
if seen then return seen end

local now = now_ms()
local texts = cjson.decode(ARGV[15])

local function answer(text, alert)
  answer_query(callbacks, ARGV[13], query_id, text, alert, now)
end

local function clear_markup(job_id)
  if chat_id == '' or message_id == '' then return end
  ensure_group(replies, ARGV[12])
  queue_reply(replies, {chat_id = chat_id, kind = 'clear_markup', job_id = job_id,
    op = 'clear_markup', edit_message_id = message_id, now = now})
end

-- Stored lists' pages (their text and keyboards) live beside the jobs, same hash tag.
local pages_prefix = (string.gsub(job_prefix, 'job:$', 'pages:'))

-- A stored page ({text, markup}) as an edit of the tapped message (nothing without one). The
-- entry names the list's job, whose recorded reply form tells the dispatcher whether the
-- message is a photo (its caption is edited) or a text.
local function show_page(list, page, markup)
  if message_id == '' then return end
  ensure_group(replies, ARGV[12])
  queue_reply(replies, {chat_id = chat_id, kind = 'page', job_id = list, text = page[1],
    markup = markup or page[2], edit_message_id = message_id, now = now})
end

local function finish(update_value, outcome, job_id, state)
  mark_update(updates_key, update_id, update_value, retention)
  return {outcome, job_id or '', state or ''}
end

local function state_label(state)
  return label_of(state, texts.labels)
end

if mode ~= 'token' or chat_id == '' then
  answer(texts.unknown, false)
  return finish('-', 'unknown')
end

-- 2. The token: missing (expired or never made), or bound to someone else.
local t = redis.call('HGETALL', token_key)
if #t == 0 then
  answer(texts.expired, true)
  clear_markup('')
  return finish('-', 'expired')
end
local tok = {}
for i = 1, #t, 2 do tok[t[i]] = t[i + 1] end
-- Empty fields are not stored (include/tokens.lua): a missing one reads as empty.
for _, name in ipairs(TOKEN_FIELDS) do
  if tok[name] == nil then tok[name] = '' end
end

local mine
-- A user's button has no scope: anything but "admin" gets the stricter check.
if tok.scope == 'admin' then
  mine = allowed and tok.chat_id == chat_id
else
  mine = allowed and tok.chat_id == chat_id and tok.user_id == user_id
end
if not mine then
  answer(texts.foreign, true)
  return finish('-', 'foreign')
end
-- A page button: read-only, for anyone the list was made for (a viewer too), outside any group.
if tok.action == 'page' then
  local k = tok.page ~= '' and tok.page or '1'
  local page = redis.call('HMGET', pages_prefix .. tok.list, 'text:' .. k, 'markup:' .. k)
  if not page[1] or not page[2] then
    answer(texts.expired, true)
    clear_markup('')
    return finish('-', 'expired')
  end
  answer('', false)
  show_page(tok.list, page)
  return finish('-', 'page')
end
-- A Show button: read-only as a page button; the card's text again, a new message.
if tok.action == 'show' then
  local card = redis.call('HMGET', (string.gsub(job_prefix, 'job:$', 'card:')) .. tok.job_id,
    'user_id', 'chat_id', 'message_id', 'gone', 'thread_id', 'text')
  -- Only its person's card (the list was theirs; a token names nothing else, but say it here).
  if card[1] ~= tok.user_id then
    answer(texts.expired, true)
    return finish('-', 'expired')
  end
  local reply_to, thread = '', tap_thread
  if card[2] == chat_id and card[3] and card[4] ~= '1' then
    reply_to, thread = card[3], card[5] or ''
  end
  local text = card[6]
  if not text or text == '' then text = tok.text end
  answer('', false)
  ensure_group(replies, ARGV[12])
  queue_reply(replies, {chat_id = chat_id, kind = 'card_again', reply_to = reply_to,
    text = text, thread_id = thread, now = now})
  return finish('-', 'show')
end

-- The role, checked now (a right is checked when it is used, not when the button was made): the
-- tapper's must rank at least the token's least role. Cancel acts on nothing: no role needed.
local needs = tok.least_role
if needs == '' then
  -- A token an earlier release made names no least role: its action says it.
  if tok.action == 'review' or tok.action == 'force' then
    needs = 'admin'
  elseif tok.action == 'run' then
    needs = 'user'
  end
end
-- A requester's tap on a button whose command they may not run makes a request instead
-- (issue 44): only a run button made for them (it carries the card's description, `ask`).
local requesting = needs ~= '' and not ranks_at_least(role, needs) and tok.action == 'run'
  and tok.ask ~= '' and ARGV[20] ~= '' and ranks_at_least(role, 'requester')
if needs ~= '' and not ranks_at_least(role, needs) and not requesting then
  answer(texts.forbidden, true)
  return finish('-', 'forbidden')
end

-- A kind an older worker still alive would fail (an upgrade under way): no job now; the button
-- keeps working, for once the upgrade is over.
if (tok.action == 'run' or tok.action == 'force') and ARGV[19] ~= ''
  and string.find(ARGV[19], '|' .. tok.command .. '|', 1, true) then
  answer(texts.upgrading, true)
  return finish('-', 'upgrading')
end

-- 3. The group: used before means this tap only learns what happened.
local group_key = group_prefix .. tok.group
local group = redis.call('HMGET', group_key, 'state', 'outcome', 'job_id', 'chat_id', 'message_id')
-- A group is written when it is used: an existing token without one is open. (A key in state
-- `open` is one an earlier release wrote at creation.)
local unused = not group[1]
if group[1] == 'used' then
  local job_id = group[3] or ''
  local state = ''
  if job_id ~= '' then state = redis.call('HGET', job_prefix .. job_id, 'status') or '' end
  if group[2] == 'cancelled' then
    answer(texts.cancelled, false)
  elseif job_id ~= '' and state ~= '' then
    answer(fill(texts.already, {job = job_id, state = state_label(state)}), false)
  else
    answer(texts.already_done, false)
  end
  if tok.solo ~= '1' and (group[4] ~= chat_id or group[5] ~= message_id) then
    clear_markup(job_id)
  end
  return finish('-', 'used', job_id, state)
end

local function use_group(outcome, job_id)
  -- A key an earlier release wrote keeps its expiry (HSET does not touch it). A new one lives a
  -- second longer than the tapped token: its siblings, written in the same step with the same
  -- ttl, are gone by then, so none can find its group open again.
  redis.call('HSET', group_key, 'state', 'used', 'outcome', outcome, 'job_id', job_id or '',
    'used_by', user_id, 'used_at', now, 'chat_id', chat_id, 'message_id', message_id)
  if unused then
    -- (-1: a token without expiry, made by hand; its group then has none either.)
    -- Absolute times: a PTTL and a PEXPIRE in one script may read the clock a millisecond
    -- apart under load, which made the group outlive its token by 1001 ms.
    local at = redis.call('PEXPIRETIME', token_key)
    if at >= 0 then redis.call('PEXPIREAT', group_key, at + 1000) end
  end
end

-- A solo token's tap marks it used in its list's keyboard, or leaves the message alone; any
-- other tap removes the message's buttons.
local function settle_markup(job_id)
  if tok.solo ~= '1' then
    clear_markup(job_id)
    return
  end
  if tok.list == '' or message_id == '' or tok.used_label == '' then return end
  local k = tok.page ~= '' and tok.page or '1'
  local list_key = pages_prefix .. tok.list
  local page = redis.call('HMGET', list_key, 'text:' .. k, 'markup:' .. k)
  if not page[1] or not page[2] then return end
  local keyboard = cjson.decode(page[2])
  local changed = false
  for _, row in ipairs(keyboard.inline_keyboard or {}) do
    for _, b in ipairs(row) do
      if b.text == tok.label then
        b.text = tok.used_label
        changed = true
      end
    end
  end
  if not changed then return end
  local markup = cjson.encode(keyboard)
  redis.call('HSET', list_key, 'markup:' .. k, markup)
  show_page(tok.list, page, markup)
end

-- 4. Use it.
if tok.action == 'cancel' then
  use_group('cancelled', '')
  answer(texts.cancelled, false)
  clear_markup('')
  return finish('-', 'cancelled')
end

if tok.action == 'review' then
  local job_key = job_prefix .. tok.job_id
  local outcome, status = resolve_job({
    job_key = job_key, stream = jobs_stream, replies = replies, review = review,
    decision = tok.decision,
    note = 'decided with a review button by Telegram user ' .. user_id .. ' in chat ' .. chat_id,
    reply = texts.resolved_reply[tok.decision] or '', retention = ARGV[14],
    jobs_group = ARGV[11], replies_group = ARGV[12], now = now,
  })
  if outcome == 'ok' then
    use_group('resolved', tok.job_id)
    answer(fill(texts.resolved, {job = tok.job_id, state = state_label(status)}), false)
    clear_markup(tok.job_id)
    return finish('-', 'resolved', tok.job_id, status)
  end
  use_group('settled', tok.job_id)
  answer(fill(texts.settled, {job = tok.job_id, state = state_label(status)}), false)
  clear_markup(tok.job_id)
  return finish('-', 'settled', tok.job_id, status)
end

-- Any other action is not tap.lua's (`ask` and `access` are access.lua's, behind `a:` data):
-- nothing is made of it.
if tok.action ~= 'run' and tok.action ~= 'force' then
  answer(texts.unknown, false)
  return finish('-', 'unknown')
end

-- action "run": the same business window as a typed command, then the job. Action "force" (an
-- admin's button under a house command's repeat) skips the window once: its job takes the
-- window over, and says who forced it.
local window_ms = tonumber(tok.window_ms) or 0
local command_key = cmd_prefix .. (tok.idem ~= '' and tok.idem or '-')
-- The button's topic is the job's when the button is in the token's own chat (a user's
-- buttons always are).
local thread = ''
if tok.chat_id == chat_id then thread = tap_thread end

local existing, state
if tok.action ~= 'force' then
  existing, state = find_duplicate(command_key, job_prefix, window_ms)
end
if existing then
  absorb_duplicate(job_prefix, existing, update_id)
  use_group('duplicate', existing)
  local text = fill(texts.duplicate, {job = existing, state = state_label(state)})
  answer(text, false)
  settle_markup(existing)
  local list_text, list_markup = stored_list(job_prefix, existing, state)
  if list_text then
    ensure_group(replies, ARGV[12])
    queue_reply(replies, {chat_id = tok.chat_id, reply_to = tok.reply_to, kind = 'duplicate',
      job_id = existing, text = text .. '\n\n' .. list_text, markup = list_markup,
      thread_id = thread, now = now})
  end
  return finish(existing, 'duplicate_command', existing, state)
end

if requesting then
  local d = cjson.decode(ARGV[20])
  local outcome, request = make_request({
    prefix = KEYS[13], seq = KEYS[14], pending = KEYS[15], of_prefix = KEYS[16],
    key_prefix = KEYS[17], token_prefix = (string.gsub(group_prefix, 'tgroup:$', 'token:')),
    group_prefix = group_prefix, replies = replies, replies_group = ARGV[12],
    pages_prefix = pages_prefix, releases_prefix = (string.gsub(job_prefix, 'job:$', 'releases:')),
    quota_prefix = KEYS[18], quota = d.quota,
    now = now, ttl_ms = d.ttl_ms, max_pending = d.max_pending,
    fields = {user_id = tok.user_id, chat_id = tok.chat_id, reply_to = tok.reply_to,
      thread_id = thread, requester = ARGV[17], who = d.who, command = tok.command, args = tok.args,
      idem = tok.idem, window_ms = tok.window_ms, recovery = tok.recovery,
      best_idem = tok.best_idem, best_window_ms = tok.best_window_ms, list = tok.list,
      what = tok.ask, poster = tok.poster},
    cards = d.cards, withdraw = d.withdraw, texts = d.texts,
  })
  if outcome == 'sent' then
    use_group('request', '')
    settle_markup('')
    answer(fill(d.texts.sent, {id = request}), false)
  else
    answer(fill(d.texts[outcome], {id = request}), true)
  end
  return finish('-', 'request', request, outcome)
end

-- The tapper's weekly quota: a button that makes something needs room for its slots.
local slots = 0
if ARGV[21] ~= '' and QUOTA_KINDS[tok.command] and not string.find(tok.args, ' tv$') then
  local quota = cjson.decode(ARGV[21])
  slots = tok.command == 'auto' and 2 or 1
  if not quota_room(KEYS[18] .. user_id, quota.limit, slots, now) then
    answer(quota.text, true)
    return finish('-', 'quota')
  end
end

local id = create_job({
  seq_key = seq_key, job_prefix = job_prefix, jobs_stream = jobs_stream, jobs_group = ARGV[11],
  chat_index = chat_index, chat_index_len = ARGV[9], jobs_index = jobs_index,
  jobs_index_len = ARGV[10], command_key = command_key, window_ms = window_ms,
  updates_key = updates_key, retention = retention, now = now,
  fields = {idempotency_key = tok.idem, update_id = update_id, chat_id = tok.chat_id,
    user_id = tok.user_id, message_id = tok.reply_to, command = tok.command, args = tok.args,
    recovery = tok.recovery, requester = ARGV[17], role = role, thread_id = thread},
})
if tok.action == 'force' then
  redis.call('HSET', job_prefix .. id, 'forced_by', user_id)
end
if slots > 0 then
  quota_hold(KEYS[18] .. user_id, slots_of('j', id, slots), now)
  redis.call('HSET', job_prefix .. id, 'quota', slots)
end
-- A button answered in place (`in_place`: /notify's menu): the job's reply edits the tapped
-- message (reply_begin.lua hands its progress_message_id over) instead of a new one. The
-- message is in the token's chat: a tap from any other was refused above ("foreign").
if tok.in_place == '1' and message_id ~= '' then
  redis.call('HSET', job_prefix .. id, 'progress_message_id', message_id)
end
use_group('job', id)
answer(fill(texts.received, {job = id}), false)
settle_markup(id)
return {'new', id, 'pending'}
