--[[
  reap: take at once the pending entries of a group's consumers whose liveness expired (they
  are dead: killed, or cut off for longer than the expiry), and remove every dead consumer that
  has nothing pending. Both in one step with the ownership check: an entry is taken only while
  it is still the dead consumer's (XPENDING filtered by consumer, then XCLAIM, with nothing in
  between), so an entry another reclaimer took first is never taken from it. XAUTOCLAIM has no
  consumer filter; the idle-time lease stays the backstop for a process that is alive but stuck.

  KEYS[1] the group's list   {P}:v1:consumers:<group>   SET of consumer names (liveness.lua)
  KEYS[2] liveness prefix    {P}:v1:alive:              + consumer name = its liveness key
  KEYS[3..] the streams read with that group            {P}:v1:stream:...

  ARGV[1] consumer group (workers | dispatchers)
  ARGV[2] the taking consumer (the caller, alive)
  ARGV[3] most entries to take in this call, over all streams; the rest wait for the next call
  ARGV[4] milliseconds after which a consumer that is not in the list (made by a release
          without liveness) and has nothing pending is removed from the streams; 0 skips that
          sweep in this call (it reads XINFO CONSUMERS of every stream, so callers run it seldom)

  Returns {removed, taken_1, ..., taken_n}: how many consumers were removed, then for each
  stream in KEYS order the entries taken, as XCLAIM answers them ({id, {field, value, ...}});
  entries deleted from the stream meanwhile are dropped from the PEL by XCLAIM and not returned.
  The taken entries are the caller's to run now; each job or reply is recovered by its own rules
  (claim.lua's policy, reply_begin.lua's record).
]]

local list, alive_prefix = KEYS[1], KEYS[2]
local group, me = ARGV[1], ARGV[2]
local budget = tonumber(ARGV[3])
local forget_after = tonumber(ARGV[4])

local taken = {}
for i = 3, #KEYS do taken[i - 2] = {} end

local function pending_of(stream, consumer, count)
  local ok, pending = pcall(redis.call, 'XPENDING', stream, group, '-', '+', count, consumer)
  if ok then return pending end
  return {}
end

local function remove(consumer)
  for i = 3, #KEYS do
    pcall(redis.call, 'XGROUP', 'DELCONSUMER', KEYS[i], group, consumer)
  end
end

local members = redis.call('SMEMBERS', list)
local listed = {}
for _, consumer in ipairs(members) do listed[consumer] = true end

local removed = 0
for _, consumer in ipairs(members) do
  if consumer ~= me and redis.call('EXISTS', alive_prefix .. consumer) == 0 then
    local left = 0
    for i = 3, #KEYS do
      local stream = KEYS[i]
      if budget > 0 then
        local pending = pending_of(stream, consumer, budget)
        if #pending > 0 then
          local ids = {}
          for j, p in ipairs(pending) do ids[j] = p[1] end
          local claimed = redis.call('XCLAIM', stream, group, me, 0, unpack(ids))
          for _, entry in ipairs(claimed) do
            local t = taken[i - 2]
            t[#t + 1] = entry
          end
          budget = budget - #pending
        end
      end
      left = left + #pending_of(stream, consumer, 1)
    end
    if left == 0 then
      remove(consumer)
      redis.call('SREM', list, consumer)
      removed = removed + 1
    end
  end
end

-- Consumers a release without liveness left behind: idle for long, nothing pending.
for i = 3, #KEYS do
  if forget_after == 0 then break end
  local ok, consumers = pcall(redis.call, 'XINFO', 'CONSUMERS', KEYS[i], group)
  if ok then
    for _, c in ipairs(consumers) do
      local info = {}
      for j = 1, #c, 2 do info[c[j]] = c[j + 1] end
      if info.name ~= me and not listed[info.name] and tonumber(info.pending) == 0
        and tonumber(info.idle) > forget_after then
        redis.call('XGROUP', 'DELCONSUMER', KEYS[i], group, info.name)
        removed = removed + 1
      end
    end
  end
end

local answer = {removed}
for i = 1, #taken do answer[i + 1] = taken[i] end
return answer
