--[[
  claim: a worker takes the jobs-stream entries one XREADGROUP (or XAUTOCLAIM) gave it; each
  entry's job becomes (or stays) `running` under a new attempt, which is the fencing token every
  later script checks. One call claims a whole batch: the entries are independent, and one call
  instead of one per entry halves the worker's round trips to Redis.

  Guarantee: two workers can never both run one attempt. Only a `pending` job, a `retry_wait` job
  (its entry is added only once due, by promote.lua), or a `running` job whose owner stopped
  renewing its lease (the entry came back through XAUTOCLAIM) is claimed. A recovered job is never
  simply replayed: its `recovery` policy (written at enqueue) decides. A job held for a person
  is announced to the admin chats with review buttons in the same step (include/tokens.lua's
  notify_review; this script runs after include/common.lua, include/tokens.lua and
  include/claim.lua).

  KEYS[1] jobs stream       {P}:v1:stream:jobs
  KEYS[2] replies stream    {P}:v1:stream:replies
  KEYS[3] review index      {P}:v1:index:needs_review   SET of job ids waiting for a person
  KEYS[4] token prefix      {P}:v1:token:               the review buttons' tokens
  KEYS[5] token-group pfx   {P}:v1:tgroup:              their group
  KEYS[5+i] job HASH of the i-th entry                  {P}:v1:job:<id>

  ARGV[1] consumer name of the claiming worker
  ARGV[2] jobs consumer group
  ARGV[3] replies consumer group
  ARGV[4] most recoveries (crashes of an owner) a job may go through before it is settled
  ARGV[5] text sent when a job is held for review; "{job}" becomes the job id
  ARGV[6] text sent when a read-only job failed after too many crashes; "{job}" likewise
  ARGV[7] retention of a finished job's HASH, seconds
  ARGV[8] job kinds this worker runs, each between two "|" (include/claim.lua's understood)
  ARGV[9] idle time (ms) an entry left for a newer worker is given (include/claim.lua's
          leave_for_newer)
  ARGV[7+3i] stream entry id of the i-th entry
  ARGV[8+3i] its job's id (the one in KEYS[5+i])
  ARGV[9+3i] review notice for the admin chats, used only if that job is held (JSON, see
          include/tokens.lua; "" when there are no admin chats)

  Returns one answer per entry, in the order given:
    {"run", attempt, "fresh", values...}      pending|retry_wait -> running
    {"run", attempt, "recovered", values...}  running (owner gone) -> running, recoveries + 1;
                                              the job's policy is rerun, once (only after its
                                              first crash), idempotent or verify
    {"held", attempt}                         running -> needs_review (policy "review", or a side
                                              effect out of recoveries); reply queued, admin
                                              chats told with buttons, entry acked
    {"failed", attempt}                       running -> failed (rerun out of recoveries, or
                                              once after a second crash);
                                              owner, entry, ... removed (finish_job)
    {"skip", status}                          nothing to run (finished, held, missing, or an
                                              entry that is not the job's current one): acked
    {"unknown", kind}                         a pending, retry_wait or running job of a kind
                                              not in ARGV[8]: left for a newer worker, nothing
                                              changed, not acked (leave_for_newer)
  values... are the job's CLAIM_FIELDS (include/claim.lua), in that order, as they are after
  the claim ("" for a field the job does not have): what a worker reads of the job, and no
  more. Fewer values than the whole HASH are cheaper at both ends.
]]

local stream, replies, review = KEYS[1], KEYS[2], KEYS[3]
local consumer, group, replies_group = ARGV[1], ARGV[2], ARGV[3]
local max_recoveries = tonumber(ARGV[4])
local retention, kinds, left_idle = ARGV[7], ARGV[8], ARGV[9]

local now = now_ms()

-- The answer for one entry; the job's HASH is job_key, its id id.
local function claim_one(job_key, entry, id, review_notice)
  local function drop_entry()
    redis.call('XACK', stream, group, entry)
    redis.call('XDEL', stream, entry)
  end

  local every, later = read_claim_row(job_key)
  local status, current_entry = every[1], every[3]
  if not status or current_entry ~= entry then
    drop_entry()
    return {'skip', status or 'missing'}
  end

  local attempts = tonumber(every[2] or '0')
  local recoveries = tonumber(later[1] or '0')
  local command, args, chat_id, message_id, recovery = every[4], every[5], every[6], every[8],
    every[9]

  local function reply(kind, text)
    ensure_group(replies, replies_group)
    queue_reply(replies, {chat_id = chat_id, reply_to = message_id, kind = kind, job_id = id,
      text = (string.gsub(text, '{job}', id)), thread_id = every[12], now = now})
  end

  local function run(mode)
    return start_attempt({}, job_key, id, every, later, consumer, now, mode, recoveries)
  end

  local runnable = status == 'pending' or status == 'retry_wait'
  if not runnable and status ~= 'running' then
    -- succeeded, failed or needs_review: nothing to run; the entry is stale.
    drop_entry()
    return {'skip', status}
  end
  -- Before any change, a running job's recovery included: a newer worker's job.
  if not understood(kinds, command) then
    leave_for_newer(stream, group, consumer, entry, left_idle)
    return {'unknown', command or ''}
  end
  if runnable then
    return run('fresh')
  end

  -- running, and the entry came back: its owner stopped renewing the lease (crashed or hung).
  recoveries = recoveries + 1
  -- "once": a costly read (a resource search asks every indexer site) runs again after one
  -- crash only; after a second it fails like a read-only job out of recoveries.
  local limit = max_recoveries
  if recovery == 'once' then limit = math.min(1, max_recoveries) end
  local reruns = recovery == 'rerun' or recovery == 'once'
  if recovery == 'review' or (recoveries > limit and not reruns) then
    local why = 'interrupted while running; the outcome is uncertain (recoveries: ' .. recoveries .. ')'
    redis.call('HSET', job_key, 'status', 'needs_review', 'updated_at', now, 'error', why,
      'recoveries', recoveries)
    redis.call('HDEL', job_key, 'owner')
    redis.call('SADD', review, id)
    drop_entry()
    reply('needs_review', ARGV[5])
    notify_review({notice = review_notice, token_prefix = KEYS[4], group_prefix = KEYS[5],
      replies = replies, replies_group = replies_group, now = now, job_id = id,
      vars = {job = id, command = command or '', args = args or '', attempts = attempts,
        error = why}})
    return {'held', tostring(attempts)}
  end
  if recoveries > limit then
    redis.call('HSET', job_key, 'status', 'failed', 'updated_at', now,
      'error', 'the worker running it stopped ' .. recoveries .. ' times; not retried again',
      'recoveries', recoveries)
    finish_job(job_key, retention)
    drop_entry()
    reply('failed', ARGV[6])
    return {'failed', tostring(attempts)}
  end
  return run('recovered')
end

local answers = {}
for i = 1, #KEYS - 5 do
  answers[i] = claim_one(KEYS[5 + i], ARGV[7 + 3 * i], ARGV[8 + 3 * i], ARGV[9 + 3 * i])
end
return answers
