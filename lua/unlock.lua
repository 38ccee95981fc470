--[[
  unlock: release a lock only if this owner still holds it (it may have expired and been taken
  by someone else meanwhile, whose lock must stay).

  KEYS[1] lock key          {P}:v1:lock:<what>          STRING owner, PX = lease

  ARGV[1] owner

  Returns 1 if released, 0 if the lock was not (or no longer) this owner's.
]]

if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
