--[[
  liveness: a consumer (a worker or a dispatcher process) says it is alive, or that it leaves.
  Its liveness key is separate from its leases (the PEL idle time): a process killed outright
  stops renewing the key, and its entries are taken as soon as it expires (reap.lua), instead of
  when their idle time passes reclaim_idle_ms.

  KEYS[1] its liveness key   {P}:v1:alive:<consumer>    STRING, PX = the liveness expiry
  KEYS[2] the group's list   {P}:v1:consumers:<group>   SET of the group's consumer names
  KEYS[3..] the streams it reads with that group        {P}:v1:stream:...

  ARGV[1] beat | retire
  ARGV[2] consumer name
  ARGV[3] consumer group (workers | dispatchers)
  ARGV[4] beat: the liveness expiry, milliseconds

  beat: sets the key with its expiry and lists the consumer, so a reclaimer can find it once
  the key is gone. Returns 1.
  retire (a graceful stop): deletes the key, so whatever it leaves pending is taken at once; a
  consumer with nothing pending in any of the streams is removed from them (XGROUP
  DELCONSUMER) and from the list. Returns the number of entries it leaves pending.
]]

local alive, list = KEYS[1], KEYS[2]
local mode, consumer, group = ARGV[1], ARGV[2], ARGV[3]

if mode == 'beat' then
  redis.call('SET', alive, '1', 'PX', tonumber(ARGV[4]))
  redis.call('SADD', list, consumer)
  return 1
end

redis.call('DEL', alive)
local left = 0
for i = 3, #KEYS do
  local ok, pending = pcall(redis.call, 'XPENDING', KEYS[i], group, '-', '+', 1000, consumer)
  if ok then left = left + #pending end
end
if left == 0 then
  for i = 3, #KEYS do
    pcall(redis.call, 'XGROUP', 'DELCONSUMER', KEYS[i], group, consumer)
  end
  redis.call('SREM', list, consumer)
end
return left
