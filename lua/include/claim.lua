--[[
  include/claim.lua: a fresh claim, shared by claim.lua (the entries a worker read or took over)
  and complete.lua (the entries it takes in the same step as a group's outcomes). Runs after
  include/common.lua.

  CLAIM_FIELDS                      the job fields a worker reads, in the order a claim returns
                                    them (crates/service/src/ledger/attempts.rs keeps the same
                                    list)
  read_claim_row(job_key)           the job's CLAIM_FIELDS (false for a missing one), read as
                                    cheaply as the job allows: see below
  start_attempt(job_key, row, consumer, now, mode, recoveries)
                                    the job becomes `running` under attempt + 1, owned by
                                    consumer; row is the HMGET of CLAIM_FIELDS before, mode
                                    "fresh" or "recovered", recoveries the job's count (written
                                    too when above 0). Returns {"run", attempt, mode, values...}:
                                    CLAIM_FIELDS as they are after the claim ("" for a missing one)
]]

local CLAIM_FIELDS = {'status', 'attempts', 'recoveries', 'entry', 'id', 'command', 'args',
  'chat_id', 'user_id', 'message_id', 'recovery', 'attempt_base', 'auth_wait_since',
  'auth_waits', 'requester', 'role'}

-- Four of CLAIM_FIELDS are written only by what follows an attempt (the worker's outcome, a
-- recovery, a review's resolution), so a job whose `attempts` is still 0 has none of them.
-- Asking a listpack HASH for a field it lacks scans the whole of it, so a fresh job's claim
-- asks for them only once an attempt was made: that is a retry, a recovery or a resolved job.
local EVERY_JOB = {'status', 'attempts', 'entry', 'id', 'command', 'args', 'chat_id', 'user_id',
  'message_id', 'recovery', 'requester', 'role'}
local AFTER_AN_ATTEMPT = {'recoveries', 'attempt_base', 'auth_wait_since', 'auth_waits'}
local NONE_YET = {false, false, false, false}

local function read_claim_row(job_key)
  local r = redis.call('HMGET', job_key, unpack(EVERY_JOB))
  local later = NONE_YET
  if r[2] and r[2] ~= '0' then later = redis.call('HMGET', job_key, unpack(AFTER_AN_ATTEMPT)) end
  return {r[1], r[2], later[1], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], later[2],
    later[3], later[4], r[11], r[12]}
end

local function start_attempt(job_key, row, consumer, now, mode, recoveries)
  local a = tostring(tonumber(row[2] or '0') + 1)
  if recoveries > 0 then
    redis.call('HSET', job_key, 'status', 'running', 'attempts', a, 'owner', consumer,
      'updated_at', now, 'started_at', now, 'recoveries', tostring(recoveries))
  else
    redis.call('HSET', job_key, 'status', 'running', 'attempts', a, 'owner', consumer,
      'updated_at', now, 'started_at', now)
  end
  -- A fresh claim leaves recoveries as they were: no number to format.
  local rec = mode == 'fresh' and (row[3] or '0') or tostring(recoveries)
  -- One constructor for the whole answer: Lua sizes the table once instead of growing it.
  return {'run', a, mode, 'running', a, rec, row[4] or '', row[5] or '', row[6] or '',
    row[7] or '', row[8] or '', row[9] or '', row[10] or '', row[11] or '', row[12] or '',
    row[13] or '', row[14] or '', row[15] or '', row[16] or ''}
end
