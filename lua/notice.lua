--[[
  notice: tell the admin chats about a condition of the whole deployment once while it lasts
  (MoviePilot refusing oncebot's credentials), tell each user about it once (however many of
  their jobs meet it), or end it so that its next occurrence is told again. Several workers
  meeting the same condition at once tell the admins (and each user) once between them.

  KEYS[1] notice key        {P}:v1:notice:<condition>        STRING "1", EX = how long it lasts
  KEYS[2] replies stream    {P}:v1:stream:replies
  KEYS[3] told set          {P}:v1:notice:<condition>:told   SET of user ids told, EX as KEYS[1]

  ARGV[1] raise | tell | clear
  ARGV[2] replies consumer group
  ARGV[3] seconds the notice lasts (raise and tell); after that it may be told again
  ARGV[4] text or user: raise: the text for the admin chats (reply kind "notice"); tell: the
          user's id
  ARGV[5..] raise: the admin chat ids (none: the condition is remembered, nobody is told)

  Returns 1 when the admin chats were told (raise), the user is to be told now (tell: the
  caller's reply tells them) or a notice was ended (clear); 0 when the condition was already
  told (raise), the user already was (tell) or it was not raised (clear).
]]

local key, replies, told = KEYS[1], KEYS[2], KEYS[3]
local mode, replies_group = ARGV[1], ARGV[2]

if mode == 'clear' then
  return math.min(redis.call('DEL', key, told), 1)
end

if mode == 'tell' then
  local new = redis.call('SADD', told, ARGV[4])
  if new == 1 then redis.call('EXPIRE', told, ARGV[3]) end
  return new
end

if not redis.call('SET', key, '1', 'NX', 'EX', tonumber(ARGV[3])) then
  return 0
end
local now = now_ms()
if #ARGV >= 5 then ensure_group(replies, replies_group) end
for i = 5, #ARGV do
  queue_reply(replies, {chat_id = ARGV[i], kind = 'notice', text = ARGV[4], now = now})
end
return 1
