--[[
  liveness: one call per consumer process per heartbeat, for every consumer group it is in (the
  workers' on the jobs stream, the dispatchers' on the replies and callbacks streams): it says
  the process is alive, takes at once the pending entries of consumers whose liveness expired,
  and, in a worker process, puts due retries back on the jobs stream. Or (retire) a group's
  consumer leaves.

  A process has one consumer name in every group it is in, and one liveness key. The key is
  separate from its leases (the PEL idle time): a process killed outright stops renewing it, and
  its entries are taken as soon as it expires instead of when their idle time passes
  reclaim_idle_ms. Taking is done with the ownership check: an entry is taken only while it is
  still the dead consumer's (XPENDING filtered by consumer, then XCLAIM, with nothing in
  between), so an entry another reclaimer took first is never taken from it. XAUTOCLAIM has no
  consumer filter; the idle-time lease stays the backstop for a process that is alive but stuck.

  Idle, a beat runs SET, one SMEMBERS or SUNION of the lists, an EXISTS of the other listed
  consumers' keys (when there are others) and, in a worker process, TIME and ZRANGEBYSCORE:
  XPENDING and XCLAIM run only when a listed consumer's key is gone.

  KEYS[1] its liveness key     {P}:v1:alive:<consumer>    STRING, PX = the liveness expiry
  KEYS[2] liveness prefix      {P}:v1:alive:              + consumer name = its liveness key
  KEYS[3] retry schedule       {P}:v1:retry               ZSET job id -> due time (ms)
  KEYS[4] jobs stream          {P}:v1:stream:jobs
  KEYS[5] job key prefix       {P}:v1:job:                the script builds {P}:v1:job:<id>
  KEYS[6..] per group, in ARGV's order: the group's list ({P}:v1:consumers:<group>, a SET of
          the consumer names that keep a liveness key), then the streams read with that group

  ARGV[1] beat | retire
  ARGV[2] consumer name (the caller, alive)
  ARGV[3] beat: the liveness expiry, milliseconds; retire: 1 deletes the key (the process's
          last group leaves), 0 keeps it (another role of the process still runs)
  ARGV[4] beat: 1 lists the consumer in every group given (its first beat in a group, or after
          a beat that failed); 0 lists it only when its key was gone (expired meanwhile, and
          perhaps removed by another's beat)
  ARGV[5] beat: most entries to take in this call, over all streams; the rest wait for the next
  ARGV[6] beat: milliseconds after which a consumer that is not in its group's list (made by a
          release without liveness) and has nothing pending is removed from the streams; 0
          skips that sweep in this call (it reads XINFO CONSUMERS of every stream, so callers
          run it seldom)
  ARGV[7] beat: most due retries to promote (include/promote.lua); 0 for a process that runs
          no worker
  ARGV[8] jobs consumer group (workers)
  ARGV[9] beat: the process's registration, the liveness key's value (JSON: its release, key
          layout, roles and the job kinds it understands; ledger/versions.rs); a release
          before 0.2.0 wrote "1"
  ARGV[10] number of groups that follow
  ARGV[11..] per group: its name (workers | dispatchers), then how many streams it reads

  beat: returns {removed, promoted, taken_1, ..., taken_n}: how many consumers were removed (dead
  with nothing pending, or left by an old release), how many retries were promoted, then for
  each stream in KEYS order the entries taken, as XCLAIM answers them ({id, {field, value,
  ...}}); entries deleted from the stream meanwhile are dropped from the PEL by XCLAIM and not
  returned. The taken entries are the caller's to run now; each job or reply is recovered by
  its own rules (claim.lua's policy, reply_begin.lua's record).
  retire (a graceful stop of one role): a consumer with nothing pending in any of the group's
  streams is removed from them (XGROUP DELCONSUMER) and from the list. Returns the number of
  entries it leaves pending; they are taken at once once the key is gone.
  Runs after include/common.lua and include/promote.lua.
]]

local alive, alive_prefix = KEYS[1], KEYS[2]
local mode, me = ARGV[1], ARGV[2]

local groups = {}
local k, a = 6, 11
for g = 1, tonumber(ARGV[10]) do
  local n = tonumber(ARGV[a + 1])
  local streams = {}
  for s = 1, n do streams[s] = KEYS[k + s] end
  groups[g] = {name = ARGV[a], list = KEYS[k], streams = streams}
  k, a = k + 1 + n, a + 2
end

local function pending_of(stream, group, consumer, count)
  local ok, pending = pcall(redis.call, 'XPENDING', stream, group, '-', '+', count, consumer)
  if ok then return pending end
  return {}
end

local function remove(g, consumer)
  for _, stream in ipairs(g.streams) do
    pcall(redis.call, 'XGROUP', 'DELCONSUMER', stream, g.name, consumer)
  end
  redis.call('SREM', g.list, consumer)
end

if mode == 'retire' then
  if ARGV[3] == '1' then redis.call('DEL', alive) end
  local left = 0
  for _, g in ipairs(groups) do
    for _, stream in ipairs(g.streams) do left = left + #pending_of(stream, g.name, me, 1000) end
  end
  if left == 0 then
    for _, g in ipairs(groups) do remove(g, me) end
  end
  return left
end

-- beat
local was = redis.call('SET', alive, ARGV[9], 'PX', ARGV[3], 'GET')
if not was or ARGV[4] == '1' then
  for _, g in ipairs(groups) do redis.call('SADD', g.list, me) end
end

-- Anyone dead? One read of the lists and one EXISTS over the others' keys.
local names
if #groups == 1 then
  names = redis.call('SMEMBERS', groups[1].list)
else
  local lists = {}
  for i, g in ipairs(groups) do lists[i] = g.list end
  names = redis.call('SUNION', unpack(lists))
end
local others = {}
for _, name in ipairs(names) do
  if name ~= me then others[#others + 1] = alive_prefix .. name end
end
local someone_dead = #others > 0 and redis.call('EXISTS', unpack(others)) < #others

local budget = tonumber(ARGV[5])
local taken = {}
local removed = 0

-- A dead consumer's entries, per group, taken while they are still its own.
local function reap(g, first)
  for _, consumer in ipairs(redis.call('SMEMBERS', g.list)) do
    if consumer ~= me and redis.call('EXISTS', alive_prefix .. consumer) == 0 then
      local left = 0
      for s, stream in ipairs(g.streams) do
        if budget > 0 then
          local pending = pending_of(stream, g.name, consumer, budget)
          if #pending > 0 then
            local ids = {}
            for j, p in ipairs(pending) do ids[j] = p[1] end
            local claimed = redis.call('XCLAIM', stream, g.name, me, 0, unpack(ids))
            local t = taken[first + s - 1]
            for _, entry in ipairs(claimed) do t[#t + 1] = entry end
            budget = budget - #pending
          end
        end
        left = left + #pending_of(stream, g.name, consumer, 1)
      end
      if left == 0 then
        remove(g, consumer)
        removed = removed + 1
      end
    end
  end
end

-- Consumers a release without liveness left behind: idle for long, nothing pending.
local function sweep(g, forget_after)
  local listed = {}
  for _, consumer in ipairs(redis.call('SMEMBERS', g.list)) do listed[consumer] = true end
  for _, stream in ipairs(g.streams) do
    local ok, consumers = pcall(redis.call, 'XINFO', 'CONSUMERS', stream, g.name)
    if ok then
      for _, c in ipairs(consumers) do
        local info = {}
        for j = 1, #c, 2 do info[c[j]] = c[j + 1] end
        if info.name ~= me and not listed[info.name] and tonumber(info.pending) == 0
          and tonumber(info.idle) > forget_after then
          redis.call('XGROUP', 'DELCONSUMER', stream, g.name, info.name)
          removed = removed + 1
        end
      end
    end
  end
end

local forget_after = tonumber(ARGV[6])
local first = 1
for _, g in ipairs(groups) do
  for s = 1, #g.streams do taken[first + s - 1] = {} end
  if someone_dead then reap(g, first) end
  if forget_after > 0 then sweep(g, forget_after) end
  first = first + #g.streams
end

local promoted = 0
if ARGV[7] ~= '0' then
  promoted = promote_due(KEYS[3], KEYS[4], KEYS[5], ARGV[7], ARGV[8])
end

local answer = {removed, promoted}
for i = 1, #taken do answer[i + 2] = taken[i] end
return answer
