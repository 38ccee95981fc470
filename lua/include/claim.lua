--[[
  include/claim.lua: a fresh claim, shared by claim.lua (the entries a worker read or took over)
  and complete.lua (the entries it takes in the same step as a group's outcomes). Runs after
  include/common.lua.

  CLAIM_FIELDS                      the job fields a worker reads, in the order a claim returns
                                    them (crates/service/src/ledger/attempts.rs keeps the same
                                    list)
  read_claim_row(job_key)           the job's CLAIM_FIELDS but `id` (the caller knows it), read
                                    as cheaply as the job allows (see below): two arrays,
                                    EVERY_JOB's values and AFTER_AN_ATTEMPT's (false for a
                                    missing field)
  start_attempt(out, job_key, id, every, later, consumer, now, mode, recoveries)
                                    the job becomes `running` under attempt + 1, owned by
                                    consumer; every and later are read_claim_row's arrays from
                                    before, mode "fresh" or "recovered", recoveries the job's
                                    count (written too when above 0). Appends "run", attempt,
                                    mode, then CLAIM_FIELDS as they are after the claim ("" for
                                    a missing one) to the array out and returns it: claim.lua
                                    passes a new table, complete.lua one holding the id and
                                    the entry
  begin_attempt(job_key, attempt, consumer, now, recoveries)
                                    start_attempt's write alone, attempt the new number as a
                                    string: complete.lua answers a first attempt its own way
  understood(kinds, command)        whether the claiming worker runs jobs of kind `command`
                                    (docs/releases.md: a job's kind is its `command` field);
                                    kinds is the worker's list as one string, each kind between
                                    two "|" ("|search|status|"): one plain find, no table built
  leave_for_newer(stream, group, consumer, entry, idle)
                                    a job of a kind the worker does not run is left for a newer
                                    worker: nothing of the job changes and the entry is not
                                    acknowledged, only its idle time in the pending list is set
                                    to `idle` (ms, above any worker's reclaim_idle_ms), so the
                                    next reclaim of any worker may take it; a worker that does
                                    not run it leaves it again, one that does runs it. Without
                                    that, an older worker's own reclaim would reset the idle
                                    time and could keep it from the newer ones
]]

local CLAIM_FIELDS = {'status', 'attempts', 'recoveries', 'entry', 'id', 'command', 'args',
  'chat_id', 'user_id', 'message_id', 'recovery', 'attempt_base', 'auth_wait_since',
  'auth_waits', 'requester', 'role', 'thread_id'}

-- Four of CLAIM_FIELDS are written only by what follows an attempt (the worker's outcome, a
-- recovery, a review's resolution), so a job whose `attempts` is still 0 has none of them.
-- Asking a listpack HASH for a field it lacks scans the whole of it, so a fresh job's claim
-- asks for them only once an attempt was made: that is a retry, a recovery or a resolved job.
-- `id` is the key's own: every caller has it, and each field read costs a scan of the HASH
-- and a string in the reply's Lua table.
local EVERY_JOB = {'status', 'attempts', 'entry', 'command', 'args', 'chat_id', 'user_id',
  'message_id', 'recovery', 'requester', 'role', 'thread_id'}
local AFTER_AN_ATTEMPT = {'recoveries', 'attempt_base', 'auth_wait_since', 'auth_waits'}
local NONE_YET = {false, false, false, false}

local function read_claim_row(job_key)
  local every = call('HMGET', job_key, unpack(EVERY_JOB))
  local later = NONE_YET
  if every[2] and every[2] ~= '0' then
    later = call('HMGET', job_key, unpack(AFTER_AN_ATTEMPT))
  end
  return every, later
end

local function begin_attempt(job_key, a, consumer, now, recoveries)
  if recoveries > 0 then
    call('HSET', job_key, 'status', 'running', 'attempts', a, 'owner', consumer,
      'updated_at', now, 'started_at', now, 'recoveries', tostring(recoveries))
  else
    call('HSET', job_key, 'status', 'running', 'attempts', a, 'owner', consumer,
      'updated_at', now, 'started_at', now)
  end
end

local function start_attempt(out, job_key, id, every, later, consumer, now, mode, recoveries)
  -- A fresh job's first attempt, the common claim, needs no number formatted (tostring of a
  -- Lua number goes through printf).
  local before = every[2]
  local a = '1'
  if before and before ~= '0' then a = tostring(tonumber(before) + 1) end
  begin_attempt(job_key, a, consumer, now, recoveries)
  -- A fresh claim leaves recoveries as they were: no number to format.
  local rec = mode == 'fresh' and (later[1] or '0') or tostring(recoveries)
  local n = #out
  out[n + 1], out[n + 2], out[n + 3], out[n + 4], out[n + 5] = 'run', a, mode, 'running', a
  out[n + 6], out[n + 7], out[n + 8], out[n + 9] = rec, every[3] or '', id, every[4] or ''
  out[n + 10], out[n + 11], out[n + 12] = every[5] or '', every[6] or '', every[7] or ''
  out[n + 13], out[n + 14], out[n + 15] = every[8] or '', every[9] or '', later[2] or ''
  out[n + 16], out[n + 17], out[n + 18] = later[3] or '', later[4] or '', every[10] or ''
  out[n + 19], out[n + 20] = every[11] or '', every[12] or ''
  return out
end

local function understood(kinds, command)
  return string.find(kinds, '|' .. (command or '') .. '|', 1, true) ~= nil
end

local function leave_for_newer(stream, group, consumer, entry, idle)
  call('XCLAIM', stream, group, consumer, 0, entry, 'IDLE', idle, 'JUSTID')
end
