--[[
  include/prefs.lua: each person's own notices (issue 45, `/notify`). Not a script of its own:
  crates/service/src/ledger/scripts.rs concatenates it (after common.lua) in front of notify.lua
  and card.lua. Its functions take everything as parameters and never read KEYS or ARGV.

  The keys, under `base` = {P}:v1:notify: (docs/redis.md):
    prefs:<telegram id>         HASH: download, transfer, subscribe, site, other = all | mine |
                                off (no field: all); quiet = "HH:MM-HH:MM" (no field: none)
    night:<telegram id>:<day>   STRING, EX 2 days: notices sent silently in the quiet night that
                                began on <day>
    held:<telegram id>          HASH, EX 2 days: notices held since, count per category
    held                        ZSET: member = telegram id, score = the end of their quiet hours
                                (ms): quiet_end.lua sums them up then

  parse_clock(text)                 the caller's clock (vocabulary::notice_clock): "<minute of the
                                    day>|<today>|<yesterday>|<ms at the minute's start>|<night
                                    max>", in commands.day_zone; nil when malformed
  notice_fate(base, chat, category, mine, clock)
                                    what becomes of one notice of `category` (download |
                                    transfer | subscribe | site | other) for target `chat` (as
                                    queued: "123", "-100..." or "-100.../7"); mine: true when it
                                    is the person's own (their card's end, a row matched to what
                                    they asked). Returns
                                      "send"    a group or topic (the operator's routes), no
                                                settings, or outside quiet hours
                                      "silent"  in quiet hours, within the night's allowance
                                                (counted): sent with disable_notification
                                      "hold"    in quiet hours, the allowance spent: counted in
                                                held:<id> for the summary, not sent
                                      "drop"    the person turned the category off, or to only
                                                theirs and this is not
]]

local QUIET_KEPT_SECS = 172800

local function parse_clock(text)
  local minute, today, yesterday, at, max =
    string.match(text or '', '^(%d+)|([%d%-]+)|([%d%-]+)|(%d+)|(%d+)$')
  if not minute then return nil end
  return {minute = tonumber(minute), today = today, yesterday = yesterday, at = tonumber(at),
    max = tonumber(max)}
end

local function minutes_of(hhmm)
  local h, m = string.match(hhmm, '^(%d%d):(%d%d)$')
  return tonumber(h) * 60 + tonumber(m)
end

-- The night (the day it began) that quiet hours `quiet` hold the clock's minute in, and the
-- minutes left of them; nil outside (or no hours).
local function quiet_night(quiet, clock)
  local from, to = string.match(quiet or '', '^(%d%d:%d%d)%-(%d%d:%d%d)$')
  if not from then return nil end
  from, to = minutes_of(from), minutes_of(to)
  local m = clock.minute
  if from < to then
    if m >= from and m < to then return clock.today, to - m end
  elseif from > to then
    if m >= from then return clock.today, to + 1440 - m end
    if m < to then return clock.yesterday, to - m end
  end
  return nil
end

local function notice_fate(base, chat, category, mine, clock)
  -- Private chats only: a group's (and a topic's) notices are the operator's routes.
  if not clock or string.sub(chat, 1, 1) == '-' or string.find(chat, '/', 1, true) then
    return 'send'
  end
  local p = call('HMGET', base .. 'prefs:' .. chat, category, 'quiet')
  local mode = p[1] or 'all'
  if mode == 'off' or (mode == 'mine' and not mine) then return 'drop' end
  local night, left = quiet_night(p[2], clock)
  if not night then return 'send' end
  local count = base .. 'night:' .. chat .. ':' .. night
  local n = call('INCR', count)
  if n == 1 then call('EXPIRE', count, QUIET_KEPT_SECS) end
  if n <= clock.max then return 'silent' end
  local held = base .. 'held:' .. chat
  call('HINCRBY', held, category, 1)
  call('EXPIRE', held, QUIET_KEPT_SECS)
  call('ZADD', base .. 'held', string.format('%d', clock.at + left * 60000), chat)
  return 'hold'
end
