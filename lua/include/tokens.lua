--[[
  include/tokens.lua: one-time button tokens (needs include/common.lua before it).

  A token is what a button's callback_data carries ("t:<token>", 32 hex characters = 128 random
  bits, made in Rust: Lua has no good randomness). Buttons offered together (Confirm + Cancel;
  the Subscribe buttons under one search; the review buttons sent to every admin chat) share a
  group: using one uses the group, so a sibling tapped afterwards is "already handled". A group's
  key is written only when one of its buttons is first used (tap.lua): until then the tokens
  alone stand for the open group, which saves a key per keyboard (about 100 bytes of Redis and
  two commands). The used group is kept a second longer than the tapped token (which expires
  with its siblings, all written in one step with one ttl), so a second tap can be told what
  the first one did and no sibling ever outlives the record that it was used.

  A token marked `solo` is a group of its own (`<group>.<n>`, n its place in the spec): the
  download buttons of one release list, and the download buttons under search matches, are not
  siblings, so a tap uses that button only and the others keep working. A solo token may name
  the release list (`list`, a resource-search job id) and the page its button is on (`page`)
  whose stored keyboard a tap edits, marking the tapped button with `used_label` (see tap.lua
  and worker::releases).

  A page token (action `page`: a ◀ / ▶ button, or the page number between them) is no button
  that acts: it shows page `page` of the list job `list` stored ({P}:v1:pages:<list>) in the
  tapped message. Its group is never read or written: it uses nothing up, nothing used stops
  it, and it works for its owner until it (with the list) expires.

  A show token (action `show`: `/mine`'s Show, issue 45) is as read-only: it sends the current
  text of the live card `job_id` ({P}:v1:card:<id>) again as a new message (tap.lua), `text`
  when the card has none yet. Its group is never read or written either.

  Keys (all under the caller's hash tag):
    <token_prefix><token>  HASH: group, chat_id, user_id, scope (admin for a review button; none
                           for a user's button), action (run | force | cancel | review | page |
                           show | ask | access | decide | withdraw; force: run even inside the
                           window, an admin's; ask and access: access.lua's, behind callback
                           data `a:<token>`, decide and withdraw request.lua's, behind
                           `r:<token>`, never tap.lua's), label, command,
                           args, idem, window_ms, recovery, reply_to, job_id, decision, solo
                           ("1": its own group), list (a solo or page token's release or
                           match list; a request button's on a /requests or /mine list: that
                           list's job, whose message request.lua leaves as shown), used_label,
                           page, least_role
                           (the least role a tap needs, tap.lua ranks it), person (an access
                           card's: whose request; a request card's: the requester), request
                           (a request card's or Withdraw button's: its id, set by
                           include/requests.lua, or by Rust on a list), ask, poster, best_idem, best_window_ms (a
                           run button made for a requester: the request card's description
                           and poster, and a subscription's /best key and window), text (a
                           show token's, and its card is `job_id`), in_place ("1": a run
                           button whose job's answer edits the tapped message: tap.lua); a field
                           whose value would be empty is not stored (a Cancel button has no
                           command, a review button no user_id), and readers take a missing
                           field as empty
    <group_prefix><group>  HASH, written by the tap that uses the group (tap.lua): state (used),
                           outcome, job_id, used_by, used_at, chat_id, message_id. No key: the
                           group is open (while any of its tokens exists)

  TOKEN_FIELDS
      the fields of a token besides group, in the order they are written
  create_tokens(token_prefix, group_prefix, g, now)
      writes each token with its non-empty fields only, each with the group's ttl, or its own
      `ttl` when it has one (a request button on a list lives as its request; `ttl` is not
      stored) (no group key: see above)
      g = the decoded JSON of `ledger::tokens::TokenGroup`: {"group": id, "ttl": seconds,
      "tokens": [{"token", "chat_id", "user_id", "scope", "action", "label", "command", "args",
      "idem", "window_ms", "recovery", "reply_to", "job_id", "decision", "solo", "list",
      "used_label", "page", "least_role", "person", "request", "ask", "poster",
      "best_idem", "best_window_ms", "ttl", "text", "in_place"}, ...]}; every value is a string (JSON numbers would lose the digits of
      52-bit ids, and a number given to redis.call is formatted with printf); a field left out
      is empty
  notify_review(n)
      n = {notice (JSON: {"text": template, "group": spec, "messages": [{"chat_id", "thread_id", "markup"}]}),
           token_prefix, group_prefix, replies, replies_group, now, job_id,
           vars = {job, command, args, attempts, error}}
      Creates the review group's tokens and queues one message per admin chat (kind "review",
      with its buttons as `markup`); "{job}", "{command}", ... in the template are filled in here,
      because only the calling script knows them at that instant. "" as notice does nothing.
]]

local TOKEN_FIELDS = {'chat_id', 'user_id', 'scope', 'action', 'label', 'command', 'args', 'idem',
  'window_ms', 'recovery', 'reply_to', 'job_id', 'decision', 'solo', 'list', 'used_label',
  'page', 'least_role', 'person', 'request', 'ask', 'poster', 'best_idem', 'best_window_ms',
  'text', 'in_place'}

local function create_tokens(token_prefix, group_prefix, g, now)
  local ttl = g.ttl
  for i, t in ipairs(g.tokens) do
    local key = token_prefix .. t.token
    local group = g.group
    if t.solo == '1' then group = g.group .. '.' .. i end
    local fields = {'group', group}
    for _, name in ipairs(TOKEN_FIELDS) do
      local v = t[name]
      if type(v) == 'string' and v ~= '' then
        fields[#fields + 1] = name
        fields[#fields + 1] = v
      end
    end
    redis.call('HSET', key, unpack(fields))
    redis.call('EXPIRE', key, (t.ttl ~= nil and t.ttl ~= '') and t.ttl or ttl)
  end
end

local function notify_review(n)
  if n.notice == nil or n.notice == '' then return end
  local notice = cjson.decode(n.notice)
  create_tokens(n.token_prefix, n.group_prefix, notice.group, n.now)
  local text = fill(notice.text, n.vars)
  ensure_group(n.replies, n.replies_group)
  for _, m in ipairs(notice.messages) do
    queue_reply(n.replies, {chat_id = m.chat_id, thread_id = m.thread_id, kind = 'review',
      job_id = n.job_id, text = text, markup = m.markup, now = n.now})
  end
end
