--[[
  include/resolve_job.lua: a person settles a `needs_review` job (needs include/common.lua).
  Used by resolve.lua (`oncebot jobs resolve`) and tap.lua (an admin's review button), so both
  ways of settling a job are the same code.

  resolve_job(r) -> "ok", new status | "refused", current status ("missing" if absent)
      r = {job_key, stream, replies, review, decision (succeeded | failed | retry), note,
           reply (text for the job's chat; "{job}" becomes the id; "" sends none), retention,
           jobs_group, replies_group, now}
      succeeded | failed: the job is finished (EXPIRE = retention); retry: back to `pending` with
      a fresh jobs-stream entry and a fresh budget of attempts.
]]

local function resolve_job(r)
  local job = redis.call('HMGET', r.job_key, 'status', 'id', 'chat_id', 'message_id',
    'thread_id')
  if job[1] ~= 'needs_review' then
    return 'refused', job[1] or 'missing'
  end
  local id = job[2]
  local new_status = r.decision
  if r.decision == 'retry' then new_status = 'pending' end

  redis.call('SREM', r.review, id)
  redis.call('HSET', r.job_key, 'status', new_status, 'updated_at', r.now,
    'resolved_as', r.decision, 'resolution_note', r.note, 'recoveries', 0)
  -- A retry starts with a fresh attempt budget; attempts themselves keep counting (fencing).
  redis.call('HSET', r.job_key, 'attempt_base', redis.call('HGET', r.job_key, 'attempts') or '0')
  if new_status == 'pending' then
    ensure_group(r.stream, r.jobs_group)
    local entry = redis.call('XADD', r.stream, '*', 'job', id)
    redis.call('HSET', r.job_key, 'entry', entry)
  else
    finish_job(r.job_key, r.retention)
  end
  if r.reply ~= '' then
    ensure_group(r.replies, r.replies_group)
    queue_reply(r.replies, {chat_id = job[3], reply_to = job[4], kind = 'resolved', job_id = id,
      text = fill(r.reply, {job = id}), thread_id = job[5], now = r.now})
  end
  return 'ok', new_status
end
