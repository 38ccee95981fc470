--[[
  progress: a job has been running for a while; queue "received, working on it (job #42)" so
  the user knows, once per job. The final result then edits that message in place (the
  dispatcher reads the job's progress_message_id).

  KEYS[1] job HASH          {P}:v1:job:<id>
  KEYS[2] replies stream    {P}:v1:stream:replies

  ARGV[1] attempt number the worker runs (only that attempt, still running, may do this)
  ARGV[2] text ("{job}" becomes the job id)
  ARGV[3] replies consumer group

  Returns 1 if queued, 0 if not (finished meanwhile, another attempt owns it, or already sent).
  Runs after include/common.lua (now_ms, ensure_group).
]]

local job = redis.call('HMGET', KEYS[1], 'status', 'attempts', 'progress', 'chat_id',
  'message_id', 'id', 'thread_id')
if job[1] ~= 'running' or job[2] ~= ARGV[1] or job[3] then
  return 0
end
local now = now_ms()
redis.call('HSET', KEYS[1], 'progress', 'queued')
ensure_group(KEYS[2], ARGV[3])
queue_reply(KEYS[2], {chat_id = job[4], reply_to = job[5], kind = 'progress', job_id = job[6],
  text = (string.gsub(ARGV[2], '{job}', job[6])), thread_id = job[7], now = now})
return 1
