--[[
  ready: `/readyz`'s probe of the admission path, and `oncebot jobs`'s first call. It is run on a
  key of the deployment's slot, so only the node that owns the slot runs it (any other node of a
  Redis Cluster answers MOVED to a connection that does not follow it), and with EVALSHA, so it
  answers NOSCRIPT where the scripts were never loaded (a replica promoted by a failover).

  It also reads two deployment-wide facts a worker wrote, so the `/readyz` of every process says
  them, an ingress-only one of a split deployment included: the flag that MoviePilot refuses
  oncebot's credentials (the admin notice a worker raised), and oncebot's MoviePilot account
  found no superuser on MoviePilot v3 (which stops the workers).

  Guarantee: reads three keys, writes nothing.

  KEYS[1]   job sequence   {P}:v1:seq:job
  KEYS[2]   credentials notice   {P}:v1:notice:credentials
  KEYS[3]   account   {P}:v1:mp_account   HASH (`state`, `dialect`, ...: ledger/mp_account.rs)

  ARGV      none

  Returns 1 + 1 while the credentials notice is raised + 2 while the account is `not_superuser`
  on `v3`: 1, 2, 3 or 4.
]]

redis.call('EXISTS', KEYS[1])
local out = 1 + redis.call('EXISTS', KEYS[2])
local account = redis.call('HMGET', KEYS[3], 'state', 'dialect')
if account[1] == 'not_superuser' and account[2] == 'v3' then
  out = out + 2
end
return out
