--[[
  step: a running job says how far it got (the ⚡ Auto job after its download, before its
  subscription) by editing its "working on it" message. Only a job that has one: a job quick
  enough to have none tells nothing until its result. Fenced like note.lua: only the attempt
  that owns the job may queue it.

  The entry (kind "step") reports on the job, so the dispatcher edits the job's
  progress_message_id in place (reply_begin.lua hands it over; the job's replies go in stream
  order, so the progress message was delivered first); one that finds none (its send failed)
  goes as a new message, which reply_end.lua then records as the progress message. Either way
  the job's result edits it afterwards, as every result does: one message in the end.

  KEYS[1] job HASH          {P}:v1:job:<id>
  KEYS[2] replies stream    {P}:v1:stream:replies

  ARGV[1] stream entry id of the attempt
  ARGV[2] consumer name
  ARGV[3] attempt number (the fencing token)
  ARGV[4] text
  ARGV[5] replies consumer group

  Returns 1 if queued, 0 if not (this attempt does not own the job, or it has no progress
  message).
  Runs after include/common.lua (now_ms, ensure_group, queue_reply).
]]

local job = redis.call('HMGET', KEYS[1], 'status', 'attempts', 'owner', 'entry', 'progress',
  'chat_id', 'message_id', 'id', 'thread_id')
if job[1] ~= 'running' or job[2] ~= ARGV[3] or job[3] ~= ARGV[2] or job[4] ~= ARGV[1] then
  return 0
end
if not job[5] then return 0 end
ensure_group(KEYS[2], ARGV[5])
queue_reply(KEYS[2], {chat_id = job[6], reply_to = job[7], kind = 'step', job_id = job[8],
  text = ARGV[4], thread_id = job[9], now = now_ms()})
return 1
