--[[
  notice: tell the admin chats about a condition of the whole deployment once while it lasts
  (MoviePilot refusing oncebot's credentials), or end it so that its next occurrence is told
  again. Several workers meeting the same condition at once tell the admins once between them.

  KEYS[1] notice key        {P}:v1:notice:<condition>   STRING "1", EX = how long it lasts
  KEYS[2] replies stream    {P}:v1:stream:replies

  ARGV[1] raise | clear
  ARGV[2] replies consumer group
  ARGV[3] raise: seconds the notice lasts; after that it may be told again
  ARGV[4] raise: the text for the admin chats (reply kind "notice")
  ARGV[5..] raise: the admin chat ids (none: the condition is remembered, nobody is told)

  Returns 1 when the admin chats were told (raise) or a notice was ended (clear); 0 when the
  condition was already told (raise) or was not raised (clear).
]]

local key, replies = KEYS[1], KEYS[2]
local mode, replies_group = ARGV[1], ARGV[2]

if mode == 'clear' then
  return redis.call('DEL', key)
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
