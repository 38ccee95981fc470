--[[
  users: replace MoviePilot's own Telegram mapping with what one read of MoviePilot's users
  found, in one step, and end that read's turn (users_turn.lua).

  Guarantee: written only by the turn's holder (a read whose lease expired, overtaken by another
  process, writes nothing); readers (HGETALL) see the old mapping or the new one, never a mix.

  KEYS[1] mapping key   {P}:v1:users:moviepilot     HASH (below), no expiry
  KEYS[2] lock key      {P}:v1:lock:users-refresh   STRING holder, PX = lease

  ARGV[1] holder        the process that took the turn
  ARGV[2] state         `ok` (MoviePilot listed its users) | `not_superuser` (it refused: oncebot's
                        account is no superuser; the mapping is then empty)
  ARGV[3..] pairs       field, value: a telegram id and `<MoviePilot name>:<role>` (role `admin` |
                        `user` | `viewer`), `requester:<telegram id>` and `<MoviePilot
                        name>:requester` (a requester, whose id field then says `viewer`: see
                        below), or `permissions:<telegram id>` and the MoviePilot rights that
                        role was read from (JSON: `superuser`, `discovery`, `search`,
                        `subscribe`, `manage`, each true or false)

  The HASH: one field per mapped Telegram id (value `<MoviePilot name>:<role>`), one
  `permissions:<id>` per mapped id, a `requester:<id>` per requester, plus `state` (ARGV[2]),
  `refreshed_at` (ms, Redis's clock), `attempted_at` (kept, see users_turn.lua) and `by` (the
  holder); `reading` (users_turn.lua's) is gone: this read finished. Fields that are numbers
  are ids; the others describe the mapping (releases up to 0.2.0 read the ids and `state`,
  `refreshed_at`, `by`, and skip the rest). A requester's id field says `viewer`, what a
  release that knows no `requester` reads; later releases read `requester:<id>` instead
  (crates/service/src/ledger/users.rs, REQUESTER_FIELD).

  Returns {1, field, value, ...}: written, with the mapping it replaced (every field of the old
  HASH); {0}: the turn is no longer this holder's, nothing written.
]]

if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  return {0}
end
local before = redis.call('HGETALL', KEYS[1])
local attempted = redis.call('HGET', KEYS[1], 'attempted_at')
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'refreshed_at', now_ms(), 'by', ARGV[1])
if attempted then
  redis.call('HSET', KEYS[1], 'attempted_at', attempted)
end
for i = 3, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('DEL', KEYS[2])
local out = {1}
for _, v in ipairs(before) do
  out[#out + 1] = v
end
return out
