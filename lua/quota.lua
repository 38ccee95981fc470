--[[
  quota: a running job takes its weekly quota slots where it is about to make something (a
  user's typed /subscribe or /best of a media: a button's job took them at its tap), in one
  step with the job's `quota` field, so a crash between the two cannot leave slots nobody
  settles (issue 44). Runs after include/common.lua and include/quota.lua.

  KEYS[1]  quota ZSET   {P}:v1:quota:<telegram id>
  KEYS[2]  job HASH     {P}:v1:job:<id>

  ARGV[1]  the person's weekly limit
  ARGV[2]  slots the job takes (1, or 2 for ⚡ Auto)
  ARGV[3]  the job's id

  Returns {outcome, used}:
    {"held", used}     the slots are the job's (`quota` = ARGV[2]); used counts them
    {"had", used}      the job holds its slots already (an earlier attempt took them)
    {"full", used}     no room: nothing written
]]

local key, job_key = KEYS[1], KEYS[2]
local limit, slots, id = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local now = now_ms()
if (tonumber(redis.call('HGET', job_key, 'quota')) or 0) > 0 then
  local _, used = quota_room(key, limit, 0, now)
  return {'had', used}
end
local room, used = quota_room(key, limit, slots, now)
if not room then return {'full', used} end
quota_hold(key, slots_of('j', id, slots), now)
redis.call('HSET', job_key, 'quota', slots)
return {'held', used + slots}
