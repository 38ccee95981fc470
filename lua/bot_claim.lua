--[[
  bot_claim: one `/claim <code>` in a private chat (the one command a stranger may send): the
  sender becomes an admin (a grant, by `claim`) when the code is the deployment's claim code,
  which is then spent; every other answer is counted against the sender. Runs after
  include/common.lua and include/grants.lua.

  Guarantee: the code makes one admin, once (the key is deleted in the same step as the grant is
  written); a Telegram id gets at most ARGV[7] answers that did not claim the bot per ARGV[8]
  seconds, and one "too many" answer after them (then silence until the count expires), so a
  stranger cannot guess on, nor make the bot write without end. An update_id seen before writes
  nothing. The code itself never reaches Redis: the caller sends its digest.

  KEYS[1] updates HASH      {P}:v1:updates:<n>          field ARGV[1]: "-" (a claim makes no job)
  KEYS[2] code key          {P}:v1:claim:code           STRING: the code's digest, PX one hour
  KEYS[3] tries key         {P}:v1:claim:tries:<id>     STRING counter, EX ARGV[8] from the first
  KEYS[4] grants key        {P}:v1:users:granted        HASH (include/grants.lua)
  KEYS[5] replies stream    {P}:v1:stream:replies

  ARGV[1] update_id
  ARGV[2] update retention, seconds
  ARGV[3] chat id (the sender's private chat)
  ARGV[4] user id
  ARGV[5] message id to reply to
  ARGV[6] digest of the code typed (SHA-256, hex; "" when none was typed)
  ARGV[7] most answers without a claim per window (5)
  ARGV[8] that window, seconds (3600)
  ARGV[9] "1" when the directory already gives someone `admin` (the bot is claimed), else "0"
  ARGV[10] replies consumer group
  ARGV[11] texts (JSON): {"claimed", "already", "wrong", "none", "too_many"}

  Returns {outcome}:
    {"claimed"}           the code was right: the sender is an admin grant, the code deleted
    {"already"}           the bot has an admin (ARGV[9], or a grant a claim made): told so
    {"no_code"}           no code is waiting (expired, or none was needed): told so
    {"wrong"}             the code was not the one waiting: told so, counted
    {"throttled"}         the sender used up their answers: told so once, then
    {"silent"}            nothing queued (still counted)
    {"duplicate_update"}  update_id seen before: nothing written
]]

local updates_key, code_key, tries_key, grants, replies = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local update_id, retention, chat_id, user_id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local message_id, digest, most, window = ARGV[5], ARGV[6], tonumber(ARGV[7]), ARGV[8]

if redis.call('HEXISTS', updates_key, update_id) == 1 then return {'duplicate_update'} end
mark_update(updates_key, update_id, '-', retention)
local now = now_ms()
local texts = cjson.decode(ARGV[11])

local function tell(text)
  queue_text_reply(replies, ARGV[10], chat_id, message_id, 'claim', '', text, now)
end

-- Counts one answer that did not claim the bot; true while the sender may still be told.
local function count()
  local n = redis.call('INCR', tries_key)
  if n == 1 then redis.call('EXPIRE', tries_key, window) end
  return n
end

local tries = tonumber(redis.call('GET', tries_key) or '0')
if tries >= most then
  if count() == most + 1 then
    tell(texts.too_many)
    return {'throttled'}
  end
  return {'silent'}
end

local code = redis.call('GET', code_key)
if code and digest ~= '' and code == digest then
  redis.call('DEL', code_key, tries_key)
  write_grant(grants, user_id, 'admin', 'claim', now)
  tell(texts.claimed)
  return {'claimed'}
end

local claimed = ARGV[9] == '1'
if not claimed and not code then
  -- Told apart from "no code": a claim within the last 2 s (before the caller saw its admin).
  for _, v in ipairs(redis.call('HVALS', grants)) do
    if string.sub(v, 1, 12) == 'admin:claim:' then claimed = true end
  end
end
count()
if claimed then
  tell(texts.already)
  return {'already'}
end
if not code then
  tell(texts.none)
  return {'no_code'}
end
tell(texts.wrong)
return {'wrong'}
