--[[
  ready: `/readyz`'s probe of the admission path, and `oncebot jobs`'s first call. It is run on a
  key of the deployment's slot, so only the node that owns the slot runs it (any other node of a
  Redis Cluster answers MOVED to a connection that does not follow it), and with EVALSHA, so it
  answers NOSCRIPT where the scripts were never loaded (a replica promoted by a failover).

  It also reads the deployment-wide flag that MoviePilot refuses oncebot's credentials (the
  admin notice a worker raised), so the `/readyz` of every process says so, an ingress-only one
  of a split deployment included.

  Guarantee: reads two keys, writes nothing.

  KEYS[1]   job sequence   {P}:v1:seq:job
  KEYS[2]   credentials notice   {P}:v1:notice:credentials

  ARGV      none

  Returns 1, or 2 while the credentials notice is raised.
]]

redis.call('EXISTS', KEYS[1])
return 1 + redis.call('EXISTS', KEYS[2])
