--[[
  step_key: a running attempt takes (or gives back) the business key of one step it runs as
  another command would: the ⚡ Auto job's download of release 1 holds the key a `下载 1` tap of
  the same release makes (commands::idempotency_key of `grab` over the release), so the two
  buttons make one download whichever is tapped first. Atomic here, and fenced like note.lua:
  only the attempt that owns the job may take or give back a key.

  Guarantee: while the key names a job that has not failed (a failed job does not absorb a
  repeat, include/create_job.lua's find_duplicate), no other job takes it; a `下载 1` tapped
  after this took it is answered by tap.lua as a duplicate of this job.

  KEYS[1] job HASH          {P}:v1:job:<id>             this attempt's job
  KEYS[2] command key       {P}:v1:cmd:<digest>         the step's business key
  KEYS[3] job key prefix    {P}:v1:job:                 the script reads the holder's status

  ARGV[1] stream entry id of the attempt
  ARGV[2] consumer name
  ARGV[3] attempt number (the fencing token)
  ARGV[4] mode: "take" or "release"
  ARGV[5] window, milliseconds (the step's command's duplicate window; "take" only)
  ARGV[6] the job field that records the holder ("take" only; e.g. auto_download_job)

  Returns {outcome, job_id, state}:
    {"taken", id, ""}          "take": the key now names this job (or did already: its expiry is
                               left as it was, so the window still starts at the first request);
                               ARGV[6] = this job's id
    {"held", id, state}        "take": the key names job id, which has not failed: nothing
                               taken; ARGV[6] = that job's id
    {"released", "", ""}       "release": the key named this job and is deleted (the step was
                               refused, so a later `下载 1` may run), or named another job or
                               none and is left as it is
    {"stale", "", ""}          this attempt does not own the job: nothing written
]]

local job_key, command_key, job_prefix = KEYS[1], KEYS[2], KEYS[3]
local job = redis.call('HMGET', job_key, 'status', 'attempts', 'owner', 'entry', 'id')
if job[1] ~= 'running' or job[2] ~= ARGV[3] or job[3] ~= ARGV[2] or job[4] ~= ARGV[1] then
  return {'stale', '', ''}
end
local id = job[5]
local holder = redis.call('GET', command_key)

if ARGV[4] == 'release' then
  if holder == id then redis.call('DEL', command_key) end
  return {'released', '', ''}
end

if holder and holder ~= '-' and holder ~= id then
  local state = redis.call('HGET', job_prefix .. holder, 'status')
  if state and state ~= 'failed' then
    redis.call('HSET', job_key, ARGV[6], holder)
    return {'held', holder, state}
  end
end
if holder ~= id then
  redis.call('SET', command_key, id, 'PX', ARGV[5])
end
redis.call('HSET', job_key, ARGV[6], id)
return {'taken', id, ''}
