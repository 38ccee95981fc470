--[[
  notify: the relay forwards a batch of MoviePilot's notification history rows, read oldest
  first, in one step: each new row is recorded as seen, MoviePilot's own repeats are collapsed,
  one replies-stream entry is queued per target chat (each chat at most once per row), and the
  relay's position advances. A crash before this script leaves nothing (the rows are read
  again); after it, everything (they are recognised as seen). Two relays running it at once
  still forward each row once: the seen-set decides, inside the script.

  A row's identity is `<id>|<reg_time>|<digest of title and text>`: MoviePilot gives a deleted
  row's id again, so an id alone would hide a new notification after a purge.

  KEYS[1] position HASH     {P}:v1:notify:position   id, reg_time, identity of the newest row
                                                      handled; polled_at (ms); totals forwarded,
                                                      collapsed, unrouted, skipped
  KEYS[2] seen ZSET         {P}:v1:notify:seen       member = identity, score = ms recorded;
                                                      trimmed by age and count here
  KEYS[3] recent ZSET       {P}:v1:notify:recent     member = digest of type, title and text,
                                                      score = reg_time (s) of the last one sent
  KEYS[4] replies stream    {P}:v1:stream:replies
  KEYS[5] notices prefix    {P}:v1:notify:           each person's own notices: prefs:<id>,
                                                      night:<id>:<day>, held:<id>, held
                                                      (include/prefs.lua)

  ARGV[1] mode: start (the first poll: sets the position unless one exists) | rows
  ARGV[2] replies consumer group
  ARGV[3] seen retention, milliseconds
  ARGV[4] seen entries kept at most
  ARGV[5] duplicate window, seconds (0: no collapsing)
  ARGV[6] skipped: rows beyond the page limit, not read (0: none)
  ARGV[7] skipped: the notice for the admin chats ("" : none)
  ARGV[8] skipped: the admin chat ids, comma-separated
  ARGV[9] start: the newest row's id
  ARGV[10] start: its reg_time
  ARGV[11] start: its identity
  ARGV[12] the clock of quiet hours (include/prefs.lua's parse_clock; "" : none applied)
  ARGV[13..] ten per row, oldest first: identity, duplicate digest, reg_time in seconds, id,
            reg_time as MoviePilot wrote it, the message text, the poster URL ("" none), the
            target chat ids comma-separated ("" : no route, counted as unrouted; "-" : record
            as seen only, as the first start does for the rows it does not backfill), the
            row's category (download | transfer | subscribe | site | other), and the target
            chats that get it as their own (matched to what they asked), comma-separated

  Each target that is a private chat gets the row as its person's settings say
  (include/prefs.lua's notice_fate): sent, sent silently (`silent=1`), held for the summary
  after their quiet hours, or not at all. A row every target of which declined still counts as
  forwarded (it was routed); `messages` counts what was queued.

  Includes: common.lua (now_ms, ensure_group, queue_reply), prefs.lua (notice_fate).

  Returns {outcome, forwarded, collapsed, unrouted, seen_before, messages}: outcome "ok", or
  "exists" when mode start met a position (nothing changed: the caller polls as usual);
  forwarded = rows sent, collapsed = repeats within the window, unrouted = rows without a
  chat, seen_before = rows already handled, messages = replies-stream entries queued.
]]

local position, seen, recent, replies, notices = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local clock = parse_clock(ARGV[12])
local mode, group = ARGV[1], ARGV[2]
local retention, keep = tonumber(ARGV[3]), tonumber(ARGV[4])
local window = tonumber(ARGV[5])
local skipped = tonumber(ARGV[6])

if mode == 'start' and redis.call('EXISTS', position) == 1 then
  return {'exists', 0, 0, 0, 0, 0}
end

local now = now_ms()
local cur_time = redis.call('HGET', position, 'reg_time') or ''
local cur_id = tonumber(redis.call('HGET', position, 'id') or '-1')

-- Later by (reg_time, id): reg_time is "YYYY-MM-DD HH:MM:SS", so strings compare as times.
local function later(reg_time, id)
  if reg_time ~= cur_time then return reg_time > cur_time end
  return id > cur_id
end

local function advance(id, reg_time, identity)
  if later(reg_time, id) then
    redis.call('HSET', position, 'id', id, 'reg_time', reg_time, 'identity', identity)
    cur_time, cur_id = reg_time, id
  end
end

local forwarded, collapsed, unrouted, before, messages = 0, 0, 0, 0, 0
local grouped = false
local last_secs
for i = 13, #ARGV, 10 do
  local identity, digest, secs = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local id, reg_time = tonumber(ARGV[i + 3]), ARGV[i + 4]
  local text, photo, chats = ARGV[i + 5], ARGV[i + 6], ARGV[i + 7]
  local category, mine = ARGV[i + 8], ',' .. ARGV[i + 9] .. ','
  last_secs = secs
  if redis.call('ZSCORE', seen, identity) then
    before = before + 1
  else
    redis.call('ZADD', seen, now, identity)
    local last = window > 0 and redis.call('ZSCORE', recent, digest)
    local sent_at = last and tonumber(last)
    if chats == '-' then
      -- Known, not sent: older than where the relay starts.
    elseif chats == '' then
      unrouted = unrouted + 1
    elseif sent_at and math.abs(secs - sent_at) <= window then
      collapsed = collapsed + 1
    else
      if window > 0 then redis.call('ZADD', recent, secs, digest) end
      if not grouped then
        ensure_group(replies, group)
        grouped = true
      end
      local told = {}
      for chat in string.gmatch(chats, '[^,]+') do
        if not told[chat] then
          told[chat] = true
          local own = string.find(mine, ',' .. chat .. ',', 1, true) ~= nil
          local fate = notice_fate(notices, chat, category, own, clock)
          if fate == 'send' or fate == 'silent' then
            queue_reply(replies, {chat_id = chat, kind = 'notification', text = text,
              photo = photo, silent = fate == 'silent' and '1' or '', now = now})
            messages = messages + 1
          end
        end
      end
      forwarded = forwarded + 1
    end
  end
  advance(id, reg_time, identity)
end

if mode == 'start' then
  advance(tonumber(ARGV[9]), ARGV[10], ARGV[11])
end

if skipped > 0 then
  redis.call('HINCRBY', position, 'skipped', skipped)
  if ARGV[7] ~= '' then
    if not grouped then ensure_group(replies, group) end
    for chat in string.gmatch(ARGV[8], '[^,]+') do
      queue_reply(replies, {chat_id = chat, kind = 'notice', text = ARGV[7], now = now})
    end
  end
end

redis.call('HSET', position, 'polled_at', now)
if forwarded > 0 then redis.call('HINCRBY', position, 'forwarded', forwarded) end
if collapsed > 0 then redis.call('HINCRBY', position, 'collapsed', collapsed) end
if unrouted > 0 then redis.call('HINCRBY', position, 'unrouted', unrouted) end

-- Bounded: the seen-set by age and by count, the recent digests by the window.
redis.call('ZREMRANGEBYSCORE', seen, '-inf', '(' .. (tonumber(now) - retention))
redis.call('ZREMRANGEBYRANK', seen, 0, -(keep + 1))
if window > 0 and last_secs then
  redis.call('ZREMRANGEBYSCORE', recent, '-inf', '(' .. (last_secs - 2 * window))
end
return {'ok', forwarded, collapsed, unrouted, before, messages}
