--[[
  access: a stranger asks the admins for access from the chat, and the first admin decides, each
  step in one atomic call (household.access_requests). Runs after include/common.lua,
  include/tokens.lua and include/grants.lua.

  Modes:
    offer   a stranger's message in a private chat: answered (at most once an hour, ARGV[14]'s
            `once_ms`) with their Telegram id and, unless they asked within the window and are
            still waiting or were declined, an Ask button (a token, callback data `a:<token>`)
    tap     a tap on an `a:` button: the token's action says what it is.
            `ask` (the stranger's): a request, one card per admin chat, each with Allow as
            viewer / (requester, with household.media_requests) / user / admin and Decline
            (tokens of action `access`, the role in the token's decision), unless one is pending
            or declined within the window, or ARGV[10] requests are pending (no admin bothered)
            `access` (an admin's card): the first tap decides the request once: a grant (through
            include/grants.lua) or a decline; every card of it edited to say who decided what,
            the person told once; any later tap is told it is decided and its card edited
    expire  requests whose window passed: their cards edited to say so (at most 20 a call; also
            done at the start of every `ask`)

  Guarantee: at most ARGV[10] requests are pending at once (the pending ZSET holds no more live
  ones), a person has at most one request, a request is decided at most once and its person
  told once, a tap that is not an admin's, or on an expired or decided request, grants nothing.
  Every key written expires or is bounded: a request's HASH lives its window and an hour more (a
  declined one the window from the decline), tokens their window (an offer's an hour), the
  pending ZSET holds at most the cap plus requests expired since the last sweep. An update_id
  seen before writes nothing.

  KEYS[1]  updates HASH      {P}:v1:updates:<n>          field ARGV[2]: "-" (no job is made)
  KEYS[2]  access prefix     {P}:v1:access:              + a Telegram id: one request (HASH, below)
  KEYS[3]  pending ZSET      {P}:v1:pending:access       the pending requests' ids, scored by
                                                         when each expires (ms)
  KEYS[4]  token prefix      {P}:v1:token:               the buttons (include/tokens.lua)
  KEYS[5]  token-group pfx   {P}:v1:tgroup:              (include/tokens.lua; no group is used)
  KEYS[6]  grants key        {P}:v1:users:granted        HASH (include/grants.lua)
  KEYS[7]  replies stream    {P}:v1:stream:replies
  KEYS[8]  callbacks stream  {P}:v1:stream:callbacks     one answer per tap
  KEYS[9]  command-key pfx   {P}:v1:cmd:                 + ARGV[14]'s `once`: an offer once an hour
  KEYS[10] reply prefix      {P}:v1:reply:               + a card's entry: its delivery record,
                                                         whose `message_id` an edit names

  ARGV[1]  mode: offer | tap | expire
  ARGV[2]  update_id ("" in mode expire)
  ARGV[3]  update retention, seconds
  ARGV[4]  user id: the stranger (offer), the tapper (tap)
  ARGV[5]  chat id of the message or the tapped button's message
  ARGV[6]  message id: the stranger's message (offer), the tapped button's message (tap)
  ARGV[7]  callback_query_id (tap), else ""
  ARGV[8]  token (tap), else ""
  ARGV[9]  window, ms (household.access_request_window_secs)
  ARGV[10] cap: most requests pending at once (household.max_pending_access_requests)
  ARGV[11] replies consumer group
  ARGV[12] callbacks consumer group
  ARGV[13] texts (JSON): "offer", "waiting", "declined" (the stranger's answers, "{id}" filled);
           "asked", "pending", "was_declined", "full", "nobody", "already_allowed", "expired",
           "foreign", "forbidden", "decided", "done" (tap answers; "{what}" filled); "card_allowed",
           "card_declined", "card_expired" (a card's last line: "{who}", "{role}"),
           "person_allowed", "person_declined" (the person's answer: "{role}"), "roles"
           ({viewer, requester, user, admin}: their names)
  ARGV[14] detail (JSON), by mode: offer {"once": once key, "once_ms", "tokens": a token group
           (include/tokens.lua), "markup"}; tap {"allowed": "1" when the tapper may use the bot
           now, "may_decide": "1" when they are allowed and an admin now, "who": the tapper's
           name for a card, "card": the card's text, "name",
           "username" (the asker's, cleaned), "tokens": the cards' token group, "messages":
           [{"chat_id", "thread_id" ("" or a forum topic), "markup"}]}; expire ""

  A request (KEYS[2] .. <id>): `state` (pending | allowed | declined | expired), `chat_id` (the
  person's private chat), `asked_at`, `expires_at` (ms), `text` (the card), `name`, `username`,
  `cards` (`<chat id>:<replies entry>` of each card, space-separated), and once decided `role`,
  `decided_by`, `decided_at`.

  Returns {outcome}:
    offer:  "offered" (with the button), "waiting" (a request is pending: no button),
            "declined" (declined within the window: no button), "suppressed" (answered within
            the hour), "duplicate_update"
    tap:    "asked", "pending", "was_declined", "full", "nobody" (no card to send),
            "allowed_already" (an Ask by someone who may use the bot now), "allowed",
            "declined", "decided" (decided before: told, its card edited), "expired", "foreign",
            "forbidden", "duplicate_update"
    expire: "expired", n (how many)
]]

local updates_key, access_prefix, pending, token_prefix = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local group_prefix, grants, replies, callbacks = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local cmd_prefix, reply_prefix = KEYS[9], KEYS[10]
local mode, update_id, retention, user_id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local chat_id, message_id, query_id, token = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local window, cap, replies_group, callbacks_group = ARGV[9], tonumber(ARGV[10]), ARGV[11], ARGV[12]
local texts = cjson.decode(ARGV[13])
local detail = ARGV[14] ~= '' and cjson.decode(ARGV[14]) or {}
local now = now_ms()

local function reply(chat, text, markup, edit)
  ensure_group(replies, replies_group)
  return queue_reply(replies, {chat_id = chat, kind = 'access', text = text, markup = markup,
    edit_message_id = edit, now = now})
end

local function card_reply(chat, text, markup, edit, thread)
  ensure_group(replies, replies_group)
  return queue_reply(replies, {chat_id = chat, kind = 'access_card', text = text,
    markup = markup, edit_message_id = edit, thread_id = thread, now = now})
end

local function answer(text, alert)
  answer_query(callbacks, callbacks_group, query_id, text, alert, now)
end

local function request_of(id)
  local key = access_prefix .. id
  return key, hash_of(key)
end

-- Every card of request r edited to its text and `last` (no buttons); `skip` the message
-- already edited ("<chat>:<message>").
local function edit_cards(r, last, skip)
  local text = (r.text or '') .. '\n\n' .. last
  for card in string.gmatch(r.cards or '', '%S+') do
    local chat, entry = string.match(card, '^(-?%d+):(.+)$')
    if chat then
      local sent = redis.call('HGET', reply_prefix .. entry, 'message_id')
      if sent and chat .. ':' .. sent ~= skip then card_reply(chat, text, nil, sent) end
    end
  end
  return text
end

-- Requests whose window passed: marked expired, their cards say so. At most `most`.
local function expire_due(most)
  local due = redis.call('ZRANGEBYSCORE', pending, '-inf', now, 'LIMIT', 0, most)
  for _, id in ipairs(due) do
    redis.call('ZREM', pending, id)
    local key, r = request_of(id)
    if r.state == 'pending' then
      redis.call('HSET', key, 'state', 'expired')
      edit_cards(r, texts.card_expired, '')
    end
  end
  return #due
end

if mode == 'expire' then
  return {'expired', expire_due(20)}
end

-- The transport layer: an update_id seen before writes nothing.
if redis.call('HEXISTS', updates_key, update_id) == 1 then return {'duplicate_update'} end
redis.call('HSET', updates_key, update_id, '-')
redis.call('EXPIRE', updates_key, retention)

local function live(r)
  return r.state ~= nil and (tonumber(r.expires_at) or 0) > tonumber(now)
end

if mode == 'offer' then
  if not redis.call('SET', cmd_prefix .. detail.once, '-', 'NX', 'PX', detail.once_ms) then
    return {'suppressed'}
  end
  local _, r = request_of(user_id)
  local vars = {id = user_id}
  if r.state == 'pending' and live(r) then
    reply(chat_id, fill(texts.waiting, vars))
    return {'waiting'}
  end
  if r.state == 'declined' then
    reply(chat_id, fill(texts.declined, vars))
    return {'declined'}
  end
  create_tokens(token_prefix, group_prefix, detail.tokens, now)
  reply(chat_id, fill(texts.offer, vars), detail.markup)
  return {'offered'}
end

-- mode tap: the token says whose button it is.
local t = hash_of(token_prefix .. token)
local tapped = chat_id .. ':' .. message_id
if t.action ~= 'ask' and t.action ~= 'access' then
  answer(texts.expired, true)
  return {'expired'}
end

if t.action == 'ask' then
  if t.user_id ~= user_id or t.chat_id ~= chat_id then
    answer(texts.foreign, true)
    return {'foreign'}
  end
  if detail.allowed == '1' then
    answer(texts.already_allowed, true)
    return {'allowed_already'}
  end
  local key, r = request_of(user_id)
  if r.state == 'pending' and live(r) then
    answer(texts.pending, true)
    return {'pending'}
  end
  if r.state == 'declined' then
    answer(texts.was_declined, true)
    return {'was_declined'}
  end
  expire_due(20)
  if redis.call('ZCARD', pending) >= cap then
    answer(texts.full, true)
    return {'full'}
  end
  if #detail.messages == 0 then
    answer(texts.nobody, true)
    return {'nobody'}
  end
  local expires = tonumber(now) + tonumber(window)
  create_tokens(token_prefix, group_prefix, detail.tokens, now)
  local cards = {}
  for _, m in ipairs(detail.messages) do
    local entry = card_reply(m.chat_id, detail.card, m.markup, nil, m.thread_id)
    cards[#cards + 1] = m.chat_id .. ':' .. entry
  end
  redis.call('DEL', key)
  redis.call('HSET', key, 'state', 'pending', 'chat_id', chat_id, 'asked_at', now,
    'expires_at', string.format('%d', expires), 'text', detail.card, 'name', detail.name,
    'username', detail.username, 'cards', table.concat(cards, ' '))
  redis.call('PEXPIRE', key, tonumber(window) + 3600000)
  redis.call('ZADD', pending, string.format('%d', expires), user_id)
  redis.call('DEL', token_prefix .. token)
  answer(texts.asked, false)
  reply(chat_id, fill(texts.offer, {id = user_id}) .. '\n\n' .. texts.asked, nil, message_id)
  return {'asked'}
end

-- An admin's card: bound to its chat, for an admin now.
if t.chat_id ~= chat_id then
  answer(texts.foreign, true)
  return {'foreign'}
end
if detail.may_decide ~= '1' then
  answer(texts.forbidden, true)
  return {'forbidden'}
end
local person = t.person
local key, r = request_of(person)
local role_name = texts.roles[r.role or ''] or (r.role or '')
local function decided_line()
  if r.state == 'allowed' then
    return fill(texts.card_allowed, {who = r.decided_by_name or r.decided_by or '', role = role_name})
  elseif r.state == 'declined' then
    return fill(texts.card_declined, {who = r.decided_by_name or r.decided_by or ''})
  end
  return texts.card_expired
end
if r.state == nil or r.state == 'expired' or (r.state == 'pending' and not live(r)) then
  answer(texts.expired, true)
  if r.state ~= nil then card_reply(chat_id, (r.text or '') .. '\n\n' .. texts.card_expired, nil, message_id) end
  return {'expired'}
end
if r.state ~= 'pending' then
  local last = decided_line()
  answer(fill(texts.decided, {what = last}), true)
  card_reply(chat_id, (r.text or '') .. '\n\n' .. last, nil, message_id)
  return {'decided'}
end

-- The first tap decides.
local decision = t.decision
redis.call('ZREM', pending, person)
r.decided_by, r.decided_by_name = user_id, detail.who
if decision == 'decline' then
  r.state = 'declined'
  redis.call('HSET', key, 'state', 'declined', 'decided_by', user_id, 'decided_by_name', detail.who,
    'decided_at', now)
  redis.call('PEXPIRE', key, window)
  reply(r.chat_id, texts.person_declined)
else
  r.state, r.role = 'allowed', decision
  role_name = texts.roles[decision] or decision
  write_grant(grants, person, decision, user_id, now)
  redis.call('HSET', key, 'state', 'allowed', 'role', decision, 'decided_by', user_id,
    'decided_by_name', detail.who, 'decided_at', now)
  reply(r.chat_id, fill(texts.person_allowed, {role = role_name}))
end
local text = edit_cards(r, decided_line(), tapped)
card_reply(chat_id, text, nil, message_id)
answer(fill(texts.done, {what = decided_line()}), false)
return {r.state}
