--[[
  promote: put `retry_wait` jobs whose backoff is due back on the jobs stream, atomically with
  removing them from the retry schedule (a job is never both scheduled and queued, nor neither).

  KEYS[1] retry schedule    {P}:v1:retry                ZSET job id -> due time (ms)
  KEYS[2] jobs stream       {P}:v1:stream:jobs
  KEYS[3] job key prefix    {P}:v1:job:                 the script builds {P}:v1:job:<id>

  ARGV[1] most jobs to promote in one call
  ARGV[2] jobs consumer group

  Returns the number of jobs put back on the stream.
  Runs after include/common.lua and include/promote.lua (promote_due); a worker process's
  heartbeat (liveness.lua) promotes the same way, so a worker does not call this one.
]]

return promote_due(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2])
