--[[
  include/create_job.lua: the one way a job comes into being (needs include/common.lua before it).
  Used by enqueue.lua (a typed command) and tap.lua (a confirmed button), so a job made by a tap
  has the same fields, the same business duplicate window, recovery policy, jobs-stream entry and
  chat index as one made by a message. Why an include and not a mode of enqueue.lua: a tap
  needs its own checks first (the token, its owner, its siblings) and its own answer (a callback
  answer, not a message), and those would have made enqueue.lua's ARGV a union of two contracts.

  find_duplicate(command_key, job_prefix, window_ms)
      -> id, state of the job the business key points at, if the window is open and that job
         has not failed (a failed job does not absorb a repeat); nil otherwise
  absorb_duplicate(job_prefix, id, update_id)
      counts one more duplicate on job `id`
  stored_list(job_prefix, id, state)
      -> text, markup of page 1 of the list job `id` stored ({P}:v1:pages:<id>, the prefix
         derived from job_prefix, so under the same hash tag), if it succeeded and its list has
         not expired; nil otherwise. A repeated resource search answers with it, so its buttons
         (◀ / ▶ included) work again without a second search.
  create_job(j) -> id
      j = {seq_key, job_prefix, jobs_stream, jobs_group, chat_index, chat_index_len, jobs_index,
           jobs_index_len, command_key, window_ms, updates_key, retention, now, fields = {
           idempotency_key, update_id, chat_id, user_id, message_id, command, args, recovery,
           requester, role, thread_id}}
      INCR the id, XADD the jobs stream, HSET the job `pending` (with that `entry`; no `result`
      or `error` until an outcome has one; `requester` only when it names a MoviePilot user, ""
      meaning the service account; `thread_id` always, "" for none: every claim reads it, and a
      field a small HASH lacks is looked for in all of it), the update_id's entry and (with a window) the business
      key to it, index it per chat and globally (both LISTs, newest first, trimmed).
]]

local function find_duplicate(command_key, job_prefix, window_ms)
  if window_ms <= 0 then return nil end
  local existing = redis.call('GET', command_key)
  if not existing or existing == '-' then return nil end
  local state = redis.call('HGET', job_prefix .. existing, 'status')
  if state and state ~= 'failed' then
    return existing, state
  end
  return nil
end

local function absorb_duplicate(job_prefix, id, update_id)
  local job_key = job_prefix .. id
  redis.call('HINCRBY', job_key, 'duplicates', 1)
  redis.call('HSET', job_key, 'last_duplicate_update_id', update_id)
end

local function stored_list(job_prefix, id, state)
  if state ~= 'succeeded' then return nil end
  local key = (string.gsub(job_prefix, 'job:$', 'pages:')) .. id
  local list = redis.call('HMGET', key, 'text:1', 'markup:1')
  if not list[1] or not list[2] then return nil end
  return list[1], list[2]
end

local function create_job(j)
  local f = j.fields
  local id = tostring(redis.call('INCR', j.seq_key))
  local job_key = j.job_prefix .. id
  ensure_group(j.jobs_stream, j.jobs_group)
  local entry = redis.call('XADD', j.jobs_stream, '*', 'job', id)
  -- A small HASH is a listpack, searched from its start for each field asked: the fields
  -- every claim and outcome read or write come first.
  redis.call('HSET', job_key,
    'status', 'pending', 'attempts', '0', 'entry', entry, 'updated_at', j.now, 'id', id,
    'chat_id', f.chat_id, 'message_id', f.message_id, 'command', f.command, 'args', f.args,
    'user_id', f.user_id, 'recovery', f.recovery, 'role', f.role, 'thread_id', f.thread_id or '',
    'idempotency_key', f.idempotency_key, 'update_id', f.update_id, 'created_at', j.now)
  if f.requester ~= '' then redis.call('HSET', job_key, 'requester', f.requester) end
  mark_update(j.updates_key, f.update_id, id, j.retention)
  if j.window_ms > 0 then
    redis.call('SET', j.command_key, id, 'PX', j.window_ms)
  end
  -- LPUSH answers the list's new length: trimmed only when it is longer than its bound.
  local chat_len, jobs_len = tonumber(j.chat_index_len), tonumber(j.jobs_index_len)
  if redis.call('LPUSH', j.chat_index, id) > chat_len then
    redis.call('LTRIM', j.chat_index, 0, chat_len - 1)
  end
  if redis.call('LPUSH', j.jobs_index, id) > jobs_len then
    redis.call('LTRIM', j.jobs_index, 0, jobs_len - 1)
  end
  return id
end
