--[[
  ready: `/readyz`'s probe of the admission path, and `oncebot jobs`'s first call. It is run on a
  key of the deployment's slot, so only the node that owns the slot runs it (any other node of a
  Redis Cluster answers MOVED to a connection that does not follow it), and with EVALSHA, so it
  answers NOSCRIPT where the scripts were never loaded (a replica promoted by a failover).

  Guarantee: reads one key, writes nothing.

  KEYS[1]   job sequence   {P}:v1:seq:job

  ARGV      none

  Returns 1.
]]

redis.call('EXISTS', KEYS[1])
return 1
