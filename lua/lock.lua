--[[
  lock: take a lock for `owner`, or renew it if `owner` already holds it. Re-entry matters: a job
  recovered after a crash is the same owner as the attempt that died holding the lock, and must
  not wait for that lock to expire.

  KEYS[1] lock key          {P}:v1:lock:<what>          STRING owner, PX = lease

  ARGV[1] owner
  ARGV[2] lease, milliseconds

  Returns 1 if `owner` holds the lock now, 0 if someone else does.
]]

local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
return 1
