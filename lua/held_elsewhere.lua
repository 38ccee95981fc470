--[[
  held_elsewhere: replies-stream entries pending under another dispatcher, so that a chat's newer
  replies wait for its older ones wherever they are held. A dispatcher killed mid-send leaves its
  entries pending under its name until its liveness key expires and another takes them over; a
  dispatcher that sent the newer entries it read meanwhile delivered a chat's notices out of
  order (17 of a 60-notice backlog arrived after 7-23 newer ones). Read-only.

  KEYS[1] replies stream    {P}:v1:stream:replies

  ARGV[1] replies consumer group
  ARGV[2] this dispatcher's consumer name
  ARGV[3] mode: "find" or "gone"
  find:
    ARGV[4] the newest entry id of a batch this dispatcher read: only entries before it count
    ARGV[5] at most this many entries are looked at
  gone:
    ARGV[4..] entry ids found before

  Returns:
    find: a flat list {entry id, chat id, ...}: each entry before ARGV[4] pending under another
          consumer, with its chat (an entry without one, or no longer in the stream, is left out);
          {} at once when every pending entry is this dispatcher's (one XPENDING summary: the
          common case costs nothing more)
    gone: the ids of ARGV[4..] no longer pending under another consumer (acknowledged, or taken
          over by this dispatcher)
]]

local stream, group, me = KEYS[1], ARGV[1], ARGV[2]

if ARGV[3] == 'gone' then
  local gone = {}
  for i = 4, #ARGV do
    local entry = ARGV[i]
    local pending = redis.call('XPENDING', stream, group, entry, entry, 1)
    if not pending[1] or pending[1][2] == me then gone[#gone + 1] = entry end
  end
  return gone
end

local summary = redis.call('XPENDING', stream, group)
local elsewhere = false
for _, c in ipairs(summary[4] or {}) do
  if c[1] ~= me and tonumber(c[2]) > 0 then elsewhere = true end
end
if not elsewhere then return {} end

local out = {}
local rows = redis.call('XPENDING', stream, group, '-', '(' .. ARGV[4], tonumber(ARGV[5]))
for _, row in ipairs(rows) do
  if row[2] ~= me then
    local found = redis.call('XRANGE', stream, row[1], row[1])
    local fields = found[1] and found[1][2] or {}
    for i = 1, #fields, 2 do
      if fields[i] == 'chat_id' then
        out[#out + 1] = row[1]
        out[#out + 1] = fields[i + 1]
        break
      end
    end
  end
end
return out
