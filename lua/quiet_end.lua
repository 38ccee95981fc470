--[[
  quiet_end: the notices held in a person's quiet hours (include/prefs.lua counted them) summed
  up in one message once the hours ended, for every person whose hours ended by now; each
  person's count is queued once and removed in the same step, so two workers calling it at once
  send one summary.

  KEYS[1] notices prefix    {P}:v1:notify:          held (ZSET) and held:<telegram id> (HASH)
                                                    are read there (include/prefs.lua)
  KEYS[2] replies stream    {P}:v1:stream:replies

  ARGV[1] replies consumer group
  ARGV[2] now, ms since the epoch (the clock the hours' ends were computed with)
  ARGV[3] the summary's text: "{n}" is the number held, "{types}" the counts per category
  ARGV[4] the separator between two counts in "{types}"
  ARGV[5] the most people summed up in one call
  ARGV[6..10] the five categories' labels, in order: download, transfer, subscribe, site, other

  Returns the number of summaries queued (kind "notification", to the person's private chat).
  Runs after include/common.lua (now_ms, ensure_group, fill, queue_text_reply).
]]

local base, replies = KEYS[1], KEYS[2]
local group, now = ARGV[1], ARGV[2]
local categories = {'download', 'transfer', 'subscribe', 'site', 'other'}
local due = call('ZRANGEBYSCORE', base .. 'held', '-inf', now, 'LIMIT', 0, tonumber(ARGV[5]))
local queued = 0
local stamp = now_ms()
for _, chat in ipairs(due) do
  local held = base .. 'held:' .. chat
  local counts = call('HMGET', held, unpack(categories))
  local total, parts = 0, {}
  for i, n in ipairs(counts) do
    if n and tonumber(n) > 0 then
      total = total + tonumber(n)
      parts[#parts + 1] = ARGV[5 + i] .. ' ' .. n
    end
  end
  if total > 0 then
    local text = fill(ARGV[3], {n = tostring(total), types = table.concat(parts, ARGV[4])})
    queue_text_reply(replies, group, chat, '', 'notification', '', text, stamp)
    queued = queued + 1
  end
  call('DEL', held)
  call('ZREM', base .. 'held', chat)
end
return queued
