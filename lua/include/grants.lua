--[[
  include/grants.lua: the one way a grant is written or removed (needs include/common.lua
  before it). Used by grants.lua (`oncebot users grant|revoke`, the Revoke button's job) and by
  every script that grants from the chat (a claim, an access request allowed), so the stored
  form is written in one place.

  A grant: one field of the HASH {P}:v1:users:granted, the field the Telegram id, the value
  `<role>:<by>:<at>`: role viewer | requester | user | admin, by an admin's Telegram id,
  `claim` or `cli`, at ms since the epoch (Redis's clock). Rust reads it as `users::Grant`.
  (Releases up to 0.2.0 read no grants, so a role they do not know is safe here.)

  write_grant(key, id, role, by, now)   sets the grant; returns the value it replaced (false: none)
  remove_grant(key, id)                 removes it; returns the value removed (false: none)
]]

local function write_grant(key, id, role, by, now)
  local before = call('HGET', key, id)
  call('HSET', key, id, role .. ':' .. by .. ':' .. now)
  return before
end

local function remove_grant(key, id)
  local before = call('HGET', key, id)
  if before then call('HDEL', key, id) end
  return before
end
