--[[
  note: a running attempt writes what it must remember before a side effect whose answer may be
  lost (a download's intent: the release, the matching history rows that already existed, when
  this attempt began the add), so that whoever runs the job next can verify instead of repeating.
  Fenced like complete.lua: only the attempt that owns the job may write.

  KEYS[1] job HASH          {P}:v1:job:<id>

  ARGV[1] stream entry id of the attempt
  ARGV[2] consumer name
  ARGV[3] attempt number (the fencing token)
  ARGV[4..] pairs: field name, value (names are the worker's `grab_*` fields; never a job state)

  Returns 1 if written, 0 if this attempt does not own the job (nothing written).
]]

local job = redis.call('HMGET', KEYS[1], 'status', 'attempts', 'owner', 'entry')
if job[1] ~= 'running' or job[2] ~= ARGV[3] or job[3] ~= ARGV[2] or job[4] ~= ARGV[1] then
  return 0
end
local set = {}
for i = 4, #ARGV, 2 do
  set[#set + 1] = ARGV[i]
  set[#set + 1] = ARGV[i + 1]
end
if #set > 0 then redis.call('HSET', KEYS[1], unpack(set)) end
return 1
