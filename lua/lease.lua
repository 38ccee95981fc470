--[[
  lease: renew the leases of the stream entries a live consumer is working on (its PEL
  entries' idle time), so they are not reclaimed while it waits (a 429, a slow send, a slow job
  that has no job fence of its own). An entry that another consumer owns now is left alone:
  a consumer presumed dead cannot take an entry back.

  KEYS[1] stream            {P}:v1:stream:replies (or another stream with a consumer group)

  ARGV[1] consumer group
  ARGV[2] consumer name
  ARGV[3..] entry ids

  Returns the entry ids whose lease was NOT renewed (owned by another consumer, or gone).
]]

local stream, group, consumer = KEYS[1], ARGV[1], ARGV[2]
local lost = {}
for i = 3, #ARGV do
  local entry = ARGV[i]
  local pending = redis.call('XPENDING', stream, group, entry, entry, 1)
  if pending[1] and pending[1][2] == consumer then
    redis.call('XCLAIM', stream, group, consumer, 0, entry, 'JUSTID')
  else
    lost[#lost + 1] = entry
  end
end
return lost
