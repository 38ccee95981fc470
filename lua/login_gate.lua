--[[
  login_gate: one MoviePilot login at a time for the whole deployment, and none while a refusal's
  backoff runs. A refused login is a failed login in MoviePilot's log (a fail2ban in front of it
  locks the account after a few), so however many jobs and processes wait for their credentials,
  the deployment tries one login, then waits (the first backoff, doubling per refusal in a row,
  at most the longest backoff) before the next.

  Guarantee: between two `begin`s that answer go, the first holder reported its verdict
  (`refused`, `accepted`, `release`) or its lease ran out; after `refused` no `begin` answers go
  before the backoff it returned has run.

  KEYS[1] gate key   {P}:v1:mp_login   HASH until (ms: no login before), step (refusals in a
                     row), reason (the last refusal, operator text), holder and lease_until (ms:
                     the process logging in now); PX = how long refusals are remembered

  ARGV[1] begin | refused | accepted | release
  ARGV[2] holder: the process asking (begin, refused, release)
  ARGV[3] lease or first backoff (ms): begin's lease; refused's first backoff
  ARGV[4] refused: the longest backoff (ms)
  ARGV[5] refused: the reason (no secret: it names the settings to fix)
  ARGV[6] refused: how long refusals in a row are remembered (ms)

  Returns: begin {1} (go: the lease is the holder's), {0, ms, reason} (refused: no login for ms
  more), {2, ms} (busy: another holder's lease ends within ms); refused: the backoff (ms);
  accepted and release: 1.
]]

local key, mode = KEYS[1], ARGV[1]

if mode == 'accepted' then
  redis.call('DEL', key)
  return 1
end

local holder = ARGV[2]
local now = tonumber(now_ms())

if mode == 'release' then
  if redis.call('HGET', key, 'holder') == holder then
    redis.call('HDEL', key, 'holder', 'lease_until')
  end
  return 1
end

if mode == 'refused' then
  local step = (tonumber(redis.call('HGET', key, 'step')) or 0) + 1
  local first, longest = tonumber(ARGV[3]), tonumber(ARGV[4])
  local backoff = first
  for _ = 2, step do
    backoff = backoff * 2
    if backoff >= longest then break end
  end
  if backoff > longest then backoff = longest end
  redis.call('HSET', key, 'until', string.format('%d', now + backoff), 'step', step,
    'reason', ARGV[5])
  redis.call('HDEL', key, 'holder', 'lease_until')
  redis.call('PEXPIRE', key, ARGV[6])
  return backoff
end

-- begin
local gate = redis.call('HMGET', key, 'until', 'reason', 'holder', 'lease_until')
local until_ms = tonumber(gate[1]) or 0
if until_ms > now then
  return {0, until_ms - now, gate[2] or ''}
end
local lease_until = tonumber(gate[4]) or 0
if gate[3] and gate[3] ~= holder and lease_until > now then
  return {2, lease_until - now}
end
local lease = tonumber(ARGV[3])
redis.call('HSET', key, 'holder', holder, 'lease_until', string.format('%d', now + lease))
if redis.call('PTTL', key) < lease then
  redis.call('PEXPIRE', key, lease)
end
return {1}
