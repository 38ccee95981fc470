--[[
  asked: remembers that a chat asked for a media through oncebot (a subscription or a download
  that succeeded), so the notification relay also sends MoviePilot's notifications about that
  media there. Entries past their expiry are dropped here; the key expires with its newest
  entry, so nothing is kept longer than notify.requester_ttl_secs after the last ask.

  KEYS[1] askers ZSET       {P}:v1:asked:<digest of title_year>   member = <season>|<chat id>
                                                                  (season 0: every season),
                                                                  score = expiry (ms)

  ARGV[1] member
  ARGV[2] time to live, milliseconds

  Includes: common.lua (now_ms).

  Returns the number of askers remembered for this media.
]]

local now = tonumber(now_ms())
local expires = now + tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], expires, ARGV[1])
redis.call('PEXPIREAT', KEYS[1], expires)
return redis.call('ZCARD', KEYS[1])
