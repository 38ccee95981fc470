--[[
  include/quota.lua: the weekly quota ledger (issue 44, household.quotas), one ZSET a person
  `<quota prefix><telegram id>`: a member per slot, scored by when it was taken or last counted
  (ms). A request holds `r<id>` (⚡ Auto also `r<id>:2`), a job `j<id>` (and `j<id>:2`); a slot
  older than QUOTA_WINDOW_MS no longer counts and is dropped at the next look. Needs nothing
  before it. The layer above decides who has a quota (their limit) and how many slots an ask
  takes; these functions only count.

  quota_room(key, limit, slots, now) -> whether `slots` more fit under `limit` (the expired
      dropped first), and how many are used
  quota_hold(key, members, now)       the members held from now; the key lives a window
  quota_free(key, members)            the members freed (a failed, declined, expired, withdrawn
                                      ask, or a slot its job did not use)
  quota_move(key, from, to, now)      the holds `from` (a request's) become `to` (its job's)
  slots_of(prefix, id, n) -> the members of `n` slots of `prefix` (`r` or `j`) and id
]]

local QUOTA_WINDOW_MS = 7 * 86400000

local function quota_room(key, limit, slots, now)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', tonumber(now) - QUOTA_WINDOW_MS)
  local used = redis.call('ZCARD', key)
  return used + slots <= tonumber(limit), used
end

local function quota_hold(key, members, now)
  for _, m in ipairs(members) do redis.call('ZADD', key, now, m) end
  redis.call('PEXPIRE', key, QUOTA_WINDOW_MS)
end

local function quota_free(key, members)
  if #members > 0 then redis.call('ZREM', key, unpack(members)) end
end

local function quota_move(key, from, to, now)
  quota_free(key, from)
  quota_hold(key, to, now)
end

local function slots_of(prefix, id, n)
  local members = {}
  for i = 1, tonumber(n) or 0 do
    members[i] = i == 1 and (prefix .. id) or (prefix .. id .. ':' .. i)
  end
  return members
end
