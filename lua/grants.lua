--[[
  grants: give a Telegram id a role, or take a grant back, in one step (`oncebot users grant` /
  `oncebot users revoke`, and the job of a Revoke button under `/users`). Runs after
  include/common.lua and include/grants.lua.

  Guarantee: one field of the grants HASH changes (or none), and the caller learns what it was,
  so a second revoke of the same grant says it found none.

  KEYS[1] grants key    {P}:v1:users:granted        HASH, field = Telegram id (include/grants.lua)

  ARGV[1] mode          grant | revoke
  ARGV[2] telegram id   the person
  ARGV[3] role          viewer | requester | user | admin (mode grant); "" for revoke
  ARGV[4] by            who: an admin's Telegram id, or `cli`

  Returns {outcome, previous}:
    {"granted", previous}   mode grant: written; previous is the value it replaced ("" for none)
    {"revoked", previous}   mode revoke: the grant removed, previous its value
    {"none", ""}            mode revoke: that id had no grant; nothing changed
]]

local key, mode, id = KEYS[1], ARGV[1], ARGV[2]
if mode == 'grant' then
  local before = write_grant(key, id, ARGV[3], ARGV[4], now_ms())
  return {'granted', before or ''}
end
local before = remove_grant(key, id)
if not before then
  return {'none', ''}
end
return {'revoked', before}
