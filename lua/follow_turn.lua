--[[
  follow_turn: whether this process polls MoviePilot for the live cards now (issue 45). One
  poll per interval for the whole deployment, however many workers run, and none while no card
  is open: the turn is a lock that lasts the interval and is never released early.

  KEYS[1] open cards ZSET   {P}:v1:cards:open           member = card id, score = end (ms)
  KEYS[2] lock key          {P}:v1:lock:follow          STRING holder, PX = the interval

  ARGV[1] holder            the process asking (its consumer name)
  ARGV[2] interval          ms between two polls (follow.progress_poll_secs)

  Returns the number of open cards when the turn is this holder's (the lock is set), 0 when
  not now (no card is open, or a poll was made within the interval).
]]

local open = redis.call('ZCARD', KEYS[1])
if open == 0 then return 0 end
if not redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end
return open
