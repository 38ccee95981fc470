--[[
  include/requests.lua: the one way a media request comes into being (issue 44), and what the
  request scripts share (needs include/common.lua, include/tokens.lua and include/quota.lua before it). Used by
  tap.lua (a requester's tap on a Subscribe, 下载 k or ⚡ Auto button: a request in the same step,
  never a job) and by request.lua's mode `ask` (a requester's typed /subscribe or /best, once
  their worker looked the media up and checked the library).

  A request is a HASH `<request prefix><id>`:
    state        pending | approved | declined | expired | withdrawn
    id, user_id, chat_id, reply_to   the requester, where they asked, the message a job answers
    thread_id    the forum topic they asked in ("" for none): the answers and the job go there
    requester    the MoviePilot user they act for ("" for the service account)
    who          their name, for the cards
    command, args, idem, window_ms, recovery   the job approval makes (as a run button's)
    best_idem, best_window_ms        a subscription's: the /best job "Approve as best version" makes
    list         a release list's job id (下载 k, ⚡ Auto): its stored list is kept while pending
    quota_slots  the weekly quota's slots it holds (`r<id>`, include/quota.lua): 0 unlimited
    what, poster the card's description and poster URL ("" for none)
    text         the card as sent (for its edits)
    asked_at, expires_at             ms
    cards        `<chat id>:<replies entry>` of each card, space-separated
    answer       the replies entry of the requester's answer ("sent for approval"): its decision
                 and its job's result edit that message, which becomes the job's live card;
                 answer_job instead for a typed ask, whose lookup job's reply is the answer
    decided_by, decided_by_name, decided_at, job_id   once decided (job_id: approved)
  It lives until `expires_at` + KEEP_MS while pending, KEEP_MS from its decision after.

  Indexes: `<pending ZSET>` every pending request's id scored by expires_at (the admins' list and
  the expiry sweep); `<of prefix><user id>` a ZSET of one person's requests by asked_at (their
  `/mine`), at most KEEP_PER_PERSON, expiring with the newest; `<key prefix><idem>` the pending
  request of one person's command and arguments (the same ask again is a pointer to it).

  request_of(prefix, id) -> key, table of the HASH's fields (empty table: none)
  live_request(r, now) -> whether r is pending and not past expires_at
  pending_of(of_prefix, prefix, user_id, now) -> how many of the person's requests are live
  edit_cards(r, last, skip, c) -> the card's text with `last`; every card of r edited to it (no
      buttons) but `skip` ("<chat>:<message>"); c = {replies, replies_group, reply_prefix, now}
  tell_requester(r, text, c) -> message id or nil
                              the requester told (kind `request`): their answer message edited
                              (its Withdraw button gone) when it was sent (`answer`, its replies
                              entry, whose reply HASH holds its message_id; or `answer_job`'s
                              reply_message_id, with c.job_prefix), else a new message replying
                              to their ask; the edited message's id
  close_request(r, key, state, c)  r leaves the pending indexes and frees its quota slots
      (c.quota_prefix); its HASH kept KEEP_MS
  make_request(q) -> outcome, id
      q = {prefix, seq, pending, of_prefix, key_prefix, token_prefix, group_prefix, replies,
           replies_group, pages_prefix, releases_prefix, quota_prefix, now, ttl_ms, max_pending,
           fields = {user_id, chat_id, reply_to, thread_id, requester, who, command, args, idem,
                     window_ms, recovery, best_idem, best_window_ms, list, what, poster},
           cards = {tokens = a token group (include/tokens.lua), messages = [{chat_id, thread_id,
                    markup, markup_best}]},
           withdraw = {tokens, markup} or nil: the requester's Withdraw button,
           answer_job = a typed ask's lookup job id (its reply is the answer) or nil,
           quota = {limit, text} or nil: the requester's weekly quota (`text`: the answer when
                   it is used up), texts = {card, sent}}
      Outcomes: "same" (this person's same ask is pending: id is it, nothing written), "many"
      (max_pending of theirs pending), "nobody" (no admin chat to ask), "quota" (their weekly
      quota has no room for it: ⚡ Auto takes 2 slots, anything else 1), "sent" (the request,
      its cards queued, kind `request_card`, and with `withdraw` the requester's answer, kind
      `request`, with the button). Every token of `cards` and `withdraw` gets `request` = id.
]]

local KEEP_MS = 7 * 86400000
local KEEP_PER_PERSON = 50

local function request_of(prefix, id)
  local key = prefix .. id
  return key, hash_of(key)
end

local function live_request(r, now)
  return r.state == 'pending' and (tonumber(r.expires_at) or 0) > tonumber(now)
end

local function pending_of(of_prefix, prefix, user_id, now)
  local ids = redis.call('ZRANGE', of_prefix .. user_id, 0, -1)
  local n = 0
  for _, id in ipairs(ids) do
    local state, expires = unpack(redis.call('HMGET', prefix .. id, 'state', 'expires_at'))
    if state == 'pending' and (tonumber(expires) or 0) > tonumber(now) then n = n + 1 end
  end
  return n
end

local function request_card_reply(c, chat, text, markup, edit, photo, thread)
  ensure_group(c.replies, c.replies_group)
  return queue_reply(c.replies, {chat_id = chat, kind = 'request_card', text = text,
    markup = markup, edit_message_id = edit, photo = photo, thread_id = thread, now = c.now})
end

local function edit_cards(r, last, skip, c)
  local text = (r.text or '') .. '\n\n' .. last
  for card in string.gmatch(r.cards or '', '%S+') do
    local chat, entry = string.match(card, '^(-?%d+):(.+)$')
    if chat then
      local sent = redis.call('HGET', c.reply_prefix .. entry, 'message_id')
      if sent and chat .. ':' .. sent ~= skip then request_card_reply(c, chat, text, nil, sent) end
    end
  end
  return text
end

local function tell_requester(r, text, c)
  ensure_group(c.replies, c.replies_group)
  local shown = nil
  if (r.answer or '') ~= '' then
    shown = redis.call('HGET', c.reply_prefix .. r.answer, 'message_id')
  elseif (r.answer_job or '') ~= '' and c.job_prefix then
    shown = redis.call('HGET', c.job_prefix .. r.answer_job, 'reply_message_id')
  end
  if shown then
    queue_reply(c.replies, {chat_id = r.chat_id, kind = 'request', text = text,
      edit_message_id = shown, now = c.now})
  else
    queue_reply(c.replies, {chat_id = r.chat_id, reply_to = r.reply_to, kind = 'request',
      text = text, thread_id = r.thread_id, now = c.now})
  end
  return shown
end

local function close_request(r, key, state, c)
  redis.call('ZREM', c.pending, r.id)
  quota_free(c.quota_prefix .. (r.user_id or ''), slots_of('r', r.id, r.quota_slots))
  if r.idem and r.idem ~= '' and redis.call('GET', c.key_prefix .. r.idem) == r.id then
    redis.call('DEL', c.key_prefix .. r.idem)
  end
  r.state = state
  redis.call('HSET', key, 'state', state)
  redis.call('PEXPIRE', key, KEEP_MS)
end

local function make_request(q)
  local f = q.fields
  local pointer = q.key_prefix .. f.idem
  local same = redis.call('GET', pointer)
  if same then
    local _, r = request_of(q.prefix, same)
    if live_request(r, q.now) and r.user_id == f.user_id then return 'same', same end
  end
  if pending_of(q.of_prefix, q.prefix, f.user_id, q.now) >= tonumber(q.max_pending) then
    return 'many', ''
  end
  if #q.cards.messages == 0 then return 'nobody', '' end
  local slots = 0
  if q.quota then
    slots = f.command == 'auto' and 2 or 1
    if not quota_room(q.quota_prefix .. f.user_id, q.quota.limit, slots, q.now) then
      return 'quota', ''
    end
  end

  local id = tostring(redis.call('INCR', q.seq))
  local now, ttl = tonumber(q.now), tonumber(q.ttl_ms)
  local expires = now + ttl
  for _, t in ipairs(q.cards.tokens.tokens) do t.request = id end
  create_tokens(q.token_prefix, q.group_prefix, q.cards.tokens, q.now)
  local text = fill(q.texts.card, {id = id, what = f.what, who = f.who})
  local c = {replies = q.replies, replies_group = q.replies_group, now = q.now}
  local cards, seen = {}, {}
  for _, m in ipairs(q.cards.messages) do
    if not seen[m.chat_id] then
      seen[m.chat_id] = true
      local markup = m.markup
      if f.best_idem ~= '' and m.markup_best then markup = m.markup_best end
      local entry = request_card_reply(c, m.chat_id, text, markup, nil, f.poster, m.thread_id)
      cards[#cards + 1] = m.chat_id .. ':' .. entry
    end
  end

  local key = q.prefix .. id
  redis.call('HSET', key, 'state', 'pending', 'id', id, 'user_id', f.user_id,
    'chat_id', f.chat_id, 'reply_to', f.reply_to, 'thread_id', f.thread_id or '',
    'requester', f.requester, 'who', f.who,
    'command', f.command, 'args', f.args, 'idem', f.idem, 'window_ms', f.window_ms,
    'recovery', f.recovery, 'best_idem', f.best_idem, 'best_window_ms', f.best_window_ms,
    'list', f.list, 'what', f.what, 'poster', f.poster, 'text', text,
    'asked_at', q.now, 'expires_at', string.format('%d', expires),
    'cards', table.concat(cards, ' '), 'quota_slots', slots)
  redis.call('PEXPIRE', key, ttl + KEEP_MS)
  if slots > 0 then quota_hold(q.quota_prefix .. f.user_id, slots_of('r', id, slots), q.now) end
  redis.call('ZADD', q.pending, string.format('%d', expires), id)
  redis.call('SET', pointer, id, 'PX', ttl)
  local mine = q.of_prefix .. f.user_id
  redis.call('ZADD', mine, q.now, id)
  if redis.call('ZCARD', mine) > KEEP_PER_PERSON then
    redis.call('ZREMRANGEBYRANK', mine, 0, -KEEP_PER_PERSON - 1)
  end
  redis.call('PEXPIRE', mine, ttl + KEEP_MS)
  -- A download's release list must outlive the decision: its job reads the stored release.
  if f.list ~= '' then
    for _, list_key in ipairs({q.pages_prefix .. f.list, q.releases_prefix .. f.list}) do
      if redis.call('PTTL', list_key) < ttl + 60000 then
        redis.call('PEXPIRE', list_key, ttl + 60000)
      end
    end
  end
  if q.withdraw then
    for _, t in ipairs(q.withdraw.tokens.tokens) do t.request = id end
    create_tokens(q.token_prefix, q.group_prefix, q.withdraw.tokens, q.now)
    ensure_group(q.replies, q.replies_group)
    local entry = queue_reply(q.replies, {chat_id = f.chat_id, reply_to = f.reply_to,
      kind = 'request', text = fill(q.texts.sent, {id = id}), markup = q.withdraw.markup,
      thread_id = f.thread_id, now = q.now})
    -- The answer is the request's one message: its decision edits it, its job's result too.
    redis.call('HSET', key, 'answer', entry)
  elseif (q.answer_job or '') ~= '' then
    -- A typed ask: the lookup job's own reply is the answer.
    redis.call('HSET', key, 'answer_job', q.answer_job)
  end
  return 'sent', id
end
