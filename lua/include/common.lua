--[[
  include/common.lua: helpers every script that includes it may call. Not a script of its own:
  crates/service/src/ledger/scripts.rs concatenates include files in front of a script's body at compile time
  (`concat!(include_str!(..), ..)`), so these are local functions of the one chunk Redis runs.
  Functions take everything as parameters and never read KEYS or ARGV, so each script keeps its
  own KEYS/ARGV contract in its header.

  call                              redis.call, as a local
  now_ms()                          Redis's clock, milliseconds since the epoch, as a string
  ensure_group(stream, group)       XGROUP CREATE .. MKSTREAM if the stream does not exist yet
  label_of(state, labels)           a state's label; labels is {state = label, ...}
  fill(template, vars)              replaces each "{name}" with vars[name] (literally, no patterns)
  seen_update(updates_key, update_id, job_prefix)
                                    the transport layer: nil for a new update_id, else the
                                    {"duplicate_update", job id or "", state or ""} to return
  mark_update(updates_key, update_id, value, retention)
                                    remembers what update_id became (a job id, or "-"): a field
                                    of the updates HASH, whose expiry (seconds) every write
                                    renews, so each update_id is kept at least that long
  finish_job(job_key, retention, first_attempt, quiet)
                                    a job that became `succeeded` or `failed`: removes the fields
                                    that matter only while it may still run (RUNNING_FIELDS) and
                                    sets its expiry (seconds). first_attempt: the job's only
                                    attempt was the one finishing, so it has no `retry_at`
                                    (written between attempts) to remove; quiet (with
                                    first_attempt): that attempt queued no "working on it"
                                    message either, so the job has no `progress`
  trim_done(stream, group)          after an XACK: trims the stream (read by this one group) up to
                                    its oldest entry still pending, or when none is, up to
                                    after the last one delivered: everything older was
                                    delivered and acknowledged (XTRIM MINID). While entries are
                                    pending it removes whole nodes only (MINID ~): an exact trim
                                    walks the oldest node from its start on every call, as XDEL
                                    of each entry would. When none is pending the trim is exact,
                                    so an idle stream ends empty as it did with XDEL
  queue_text_reply(stream, group, chat_id, reply_to, kind, job_id, text, now, thread)
                                    the common entry, plain text (none of queue_reply's
                                    optional fields but the thread; reply_to, job_id and thread
                                    "" or nil for none), from its
                                    values: no table built per reply. With a group, makes sure
                                    of it itself, as ensure_group would, but only once XADD ..
                                    NOMKSTREAM found no stream: no EXISTS per call; with none
                                    (nil), the caller made sure
  queue_reply(stream, r)            XADD of one replies-stream entry: with queue_text_reply, the
                                    one place its fields are written: r = {chat_id, reply_to,
                                    kind, job_id, text, now, and when they apply markup, op,
                                    edit_message_id, photo (a poster's http or https URL: the
                                    dispatcher sends it with sendPhoto, text as its caption),
                                    thread_id (a forum topic: the dispatcher's
                                    message_thread_id), card and card_seq (a live card's
                                    edit: card.lua), silent ("1": a notice in the person's
                                    quiet hours, sent with disable_notification:
                                    include/prefs.lua)}; a chat_id written `chat/topic` (the
                                    settings' spelling, as Rust hands lists of chats) is split
                                    into chat_id and thread_id;
                                    "" or nil for reply_to, job_id and text stand for none, and
                                    an optional field that is "" or nil is left out. The caller
                                    makes sure the group exists (ensure_group)
  answer_query(stream, group, query_id, text, alert, now)
                                    the one answer to a callback query: an entry of the
                                    callbacks stream (its group made sure of), shown as an alert
                                    when `alert`
  hash_of(key)                      a HASH as a table of its fields (an empty table: no key)
]]

-- redis.call through a local: each use of the global is two table lookups, and the scripts
-- that run per job make a few dozen calls.
local call = redis.call

-- String work only: number arithmetic would end in tostring's float formatting, which costs
-- more than the TIME call itself. For the same reason numbers that arrive as strings (ARGV,
-- the tokens' ttl) go to redis.call as they came: a Lua number argument is formatted with
-- printf's %.17g on its way in.
local function now_ms()
  local t = call('TIME')
  local us = t[2]
  local n = #us
  if n <= 3 then return t[1] .. '000' end
  return t[1] .. string.rep('0', 6 - n) .. string.sub(us, 1, n - 3)
end

local function ensure_group(stream, group)
  if call('EXISTS', stream) == 0 then
    call('XGROUP', 'CREATE', stream, group, '0', 'MKSTREAM')
  end
end

local function label_of(state, labels)
  return labels[state] or state
end

local function fill(template, vars)
  return (string.gsub(template, '{(%w+)}', function(name)
    local v = vars[name]
    if v == nil then return nil end
    return tostring(v)
  end))
end

-- Job fields only a job that may still run needs: its worker (`owner`), its jobs-stream entry
-- (claim.lua's check), when its attempt started, when its retry is due, whether its "working on
-- it" message was queued. A finished job drops them; readers take a missing field as empty.
local RUNNING_FIELDS = {'owner', 'entry', 'started_at', 'retry_at', 'progress'}
-- The same but `retry_at`: HDEL of a field a HASH lacks scans all of it.
local FIRST_ATTEMPT_FIELDS = {'owner', 'entry', 'started_at', 'progress'}
-- The same but `progress` too, for a first attempt that queued no "working on it" message.
local QUIET_FIRST_ATTEMPT_FIELDS = {'owner', 'entry', 'started_at'}

local function finish_job(job_key, retention, first_attempt, quiet)
  if first_attempt and quiet then
    call('HDEL', job_key, unpack(QUIET_FIRST_ATTEMPT_FIELDS))
  elseif first_attempt then
    call('HDEL', job_key, unpack(FIRST_ATTEMPT_FIELDS))
  else
    call('HDEL', job_key, unpack(RUNNING_FIELDS))
  end
  call('EXPIRE', job_key, retention)
end

local function trim_done(stream, group)
  local oldest = call('XPENDING', stream, group)[2]
  if not oldest then
    -- Nothing pending: keep only what was never delivered, after the group's last-delivered-id.
    local last
    for _, g in ipairs(call('XINFO', 'GROUPS', stream)) do
      local info = {}
      for i = 1, #g, 2 do info[g[i]] = g[i + 1] end
      if info.name == group then last = info['last-delivered-id'] end
    end
    if not last then return end
    local ms, seq = string.match(last, '^(%d+)-(%d+)$')
    if not ms then return end
    oldest = ms .. '-' .. string.format('%d', tonumber(seq) + 1)
    call('XTRIM', stream, 'MINID', oldest)
    return
  end
  call('XTRIM', stream, 'MINID', '~', oldest)
end

-- `thread_id` last: a dispatcher of a release before forum topics ignores it, and the reply
-- goes to the chat's General topic.
local OPTIONAL_REPLY_FIELDS = {'markup', 'op', 'edit_message_id', 'photo', 'card', 'card_seq',
  'thread_id', 'silent'}

local function queue_text_reply(stream, group, chat_id, reply_to, kind, job_id, text, now, thread)
  for _ = 1, 2 do
    local id
    if thread and thread ~= '' then
      id = call('XADD', stream, 'NOMKSTREAM', '*', 'chat_id', chat_id, 'reply_to', reply_to,
        'kind', kind, 'job_id', job_id, 'text', text, 'thread_id', thread, 'created_at', now)
    else
      id = call('XADD', stream, 'NOMKSTREAM', '*', 'chat_id', chat_id, 'reply_to', reply_to,
        'kind', kind, 'job_id', job_id, 'text', text, 'created_at', now)
    end
    if id or not group then return id end
    ensure_group(stream, group)
  end
end

local function queue_reply(stream, r)
  local chat, thread = r.chat_id, r.thread_id
  local slash = string.find(chat, '/', 1, true)
  if slash then
    thread = string.sub(chat, slash + 1)
    chat = string.sub(chat, 1, slash - 1)
  end
  local markup, op, edit, photo = r.markup, r.op, r.edit_message_id, r.photo
  if (not markup or markup == '') and (not op or op == '') and (not edit or edit == '')
    and (not photo or photo == '') and (not r.silent or r.silent == '') then
    -- The caller made sure of the group (no group given: nothing to create).
    return queue_text_reply(stream, nil, chat, r.reply_to or '', r.kind, r.job_id or '',
      r.text or '', r.now, thread)
  end
  r.thread_id = thread
  local fields = {'chat_id', chat, 'reply_to', r.reply_to or '', 'kind', r.kind,
    'job_id', r.job_id or '', 'text', r.text or ''}
  for _, name in ipairs(OPTIONAL_REPLY_FIELDS) do
    local v = r[name]
    if v and v ~= '' then
      fields[#fields + 1] = name
      fields[#fields + 1] = v
    end
  end
  fields[#fields + 1] = 'created_at'
  fields[#fields + 1] = r.now
  return call('XADD', stream, '*', unpack(fields))
end

local function mark_update(updates_key, update_id, value, retention)
  call('HSET', updates_key, update_id, value)
  call('EXPIRE', updates_key, retention)
end

local function seen_update(updates_key, update_id, job_prefix)
  local seen = call('HGET', updates_key, update_id)
  if not seen then return nil end
  if seen == '-' then return {'duplicate_update', '', ''} end
  local state = call('HGET', job_prefix .. seen, 'status')
  return {'duplicate_update', seen, state or ''}
end

local function answer_query(stream, group, query_id, text, alert, now)
  ensure_group(stream, group)
  call('XADD', stream, '*', 'callback_query_id', query_id, 'text', text,
    'show_alert', alert and '1' or '0', 'created_at', now)
end

local function hash_of(key)
  local h = call('HGETALL', key)
  local t = {}
  for i = 1, #h, 2 do t[h[i]] = h[i + 1] end
  return t
end
