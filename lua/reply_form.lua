--[[
  reply_form: a dispatcher changes the form of a reply it is sending: Telegram refused its
  poster with a definite 400 (nothing was sent), so the reply goes as text. Recorded before the
  text is sent, so a crash between the refused photo and the text resumes with the text
  (reply_begin.lua hands the form back): one message, and the refused poster is not fetched
  again.

  KEYS[1] reply HASH        {P}:v1:reply:<entry id>

  ARGV[1] consumer name     only the dispatcher whose send reply_begin recorded may change it
  ARGV[2] form: text

  Returns 1 if recorded, 0 if not (the reply is no longer `sending` for this consumer: another
  dispatcher took it over, or it ended).
]]

local state, consumer = unpack(redis.call('HMGET', KEYS[1], 'state', 'consumer'))
if state ~= 'sending' or consumer ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'form', ARGV[2])
return 1
