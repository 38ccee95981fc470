--[[
  users_turn: whether this process reads MoviePilot's users now (MoviePilot's own Telegram
  mapping). One process at a time, and only once the last read is `interval` old (`retry` old
  when the last read did not finish), so the workers of a deployment make one read per interval
  between them, not one each.

  Guarantee: at most one holder between a turn and its users.lua (or its unlock.lua, or the
  lease's expiry).

  KEYS[1] mapping key   {P}:v1:users:moviepilot     HASH, the fields users.lua lists
  KEYS[2] lock key      {P}:v1:lock:users-refresh   STRING holder, PX = lease

  ARGV[1] holder        the process asking (its consumer name)
  ARGV[2] interval      ms between two reads (moviepilot.users_refresh_secs)
  ARGV[3] retry         ms after a read that did not finish (a failed call, a crash)
  ARGV[4] lease         ms one read may take before another process may try

  Writes into the mapping key when the turn is taken: `attempted_at` (ms, Redis's clock) and
  `reading` (the holder), which users.lua removes: while it is there, the last read did not
  finish.

  Returns 1: the turn is this holder's (the lock is set), 0: not now (read recently enough, or
  another process reads now).
]]

if redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
local now = now_ms()
local attempted = tonumber(redis.call('HGET', KEYS[1], 'attempted_at') or '')
if attempted then
  local wait = tonumber(ARGV[2])
  if redis.call('HEXISTS', KEYS[1], 'reading') == 1 then
    wait = math.min(wait, tonumber(ARGV[3]))
  end
  if tonumber(now) - attempted < wait then
    return 0
  end
end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[4])
redis.call('HSET', KEYS[1], 'attempted_at', now, 'reading', ARGV[1])
return 1
