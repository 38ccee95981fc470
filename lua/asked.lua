--[[
  asked: remembers that a chat asked for a media through oncebot (a subscription or a download),
  so the notification relay also sends MoviePilot's notifications about that media there; and
  forgets an ask whose job failed, so a failed ask draws no notices of that media for months.
  Entries past their expiry are dropped here; the key expires with its newest entry, so nothing
  is kept longer than notify.requester_ttl_secs after the last ask.

  The worker remembers an ask twice: before it sends the create or the download (MoviePilot
  writes its "已添加订阅" during that very request, and its Webhook plugin wakes the relay, which
  must already know who asked), and again when the job succeeded (which also renews it). The
  first one notes in the job what it did (the member, and the score the member had before),
  once per job, so that whichever attempt ends the job `failed` can undo exactly it.

  KEYS[1] askers ZSET       {P}:v1:asked:<digest of title_year>   member = <season>|<chat id>
                                                                  (season 0: every season),
                                                                  score = expiry (ms)
  KEYS[2] job HASH          {P}:v1:job:<id>   the asking job (mode "remember" with ARGV[4] "1",
                            and "forget"); any key of the deployment otherwise (not touched)
  KEYS[3] following ZSET    {P}:v1:following:<digest>   the chats whose live card tells this
                            media's notices (include/cards.lua); with ARGV[4] "1" the job's card
                            to come is noted there for ten minutes (at most ARGV[3]) before
                            the call (MoviePilot's "已添加订阅" arrives during it, before the
                            card opens), member `<member>|<ARGV[6]>`; "forget" removes it

  ARGV[1] mode: "remember" or "forget"
  remember:
    ARGV[2] member
    ARGV[3] time to live, milliseconds
    ARGV[4] "1": the job is about to send its create or download: note the ask in the job
            (fields asked_digest = ARGV[5], asked_member, asked_before = the member's score before
            this ask, "" for none) unless an earlier attempt noted one; "0": do not
    ARGV[5] the digest in KEYS[1] (for the note)
    ARGV[6] the job's id (its card's): the member's end in KEYS[3]
  forget (the job ended `failed`):
    the job's noted ask is undone: the member gets back the score it had before (an earlier,
    unexpired ask of the same chat stays), or is removed, and its card's note in KEYS[3] (ARGV[6]
    the job's id) is removed; the note is deleted. Nothing when the job noted no ask.

  Includes: common.lua (now_ms).

  Returns: remember: the number of askers remembered for this media; forget: 1 if an ask was
  undone, 0 if the job had none.
]]

local askers, job = KEYS[1], KEYS[2]
local now = tonumber(now_ms())

if ARGV[1] == 'forget' then
  local noted = redis.call('HMGET', job, 'asked_member', 'asked_before')
  local member, before = noted[1], noted[2]
  if not member then return 0 end
  local restore = tonumber(before or '')
  if restore and restore > now then
    redis.call('ZADD', askers, restore, member)
  else
    redis.call('ZREM', askers, member)
  end
  redis.call('ZREM', KEYS[3], member .. '|' .. ARGV[6])
  redis.call('HDEL', job, 'asked_digest', 'asked_member', 'asked_before')
  return 1
end

local member = ARGV[2]
local expires = now + tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', askers, '-inf', now)
if ARGV[4] == '1' and redis.call('EXISTS', job) == 1
    and redis.call('HEXISTS', job, 'asked_member') == 0 then
  local before = redis.call('ZSCORE', askers, member) or ''
  redis.call('HSET', job, 'asked_digest', ARGV[5], 'asked_member', member, 'asked_before', before)
end
if ARGV[4] == '1' and ARGV[6] ~= '' then
  -- The card to come: the relay leaves this media's notices in this chat to it from now on.
  local note_ms = math.min(600000, tonumber(ARGV[3]))
  local until_ms = now + note_ms
  redis.call('ZADD', KEYS[3], 'GT', until_ms, member .. '|' .. ARGV[6])
  if redis.call('PTTL', KEYS[3]) < note_ms then redis.call('PEXPIREAT', KEYS[3], until_ms) end
end
redis.call('ZADD', askers, expires, member)
redis.call('PEXPIREAT', askers, expires)
return redis.call('ZCARD', askers)
