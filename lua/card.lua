--[[
  card: one step of a live card (issue 45): what the follower saw of its download or
  subscription this poll, its state and text, in one step with the edit of its message and,
  when the state is final, the closing notice. Guarantees: a card's edits are queued in the
  order of its steps (`seq`, one more per change), a step read before another follower's is
  refused (the caller's seq must still be the card's), and a closed card never changes again.
  The edit is checked once more when it is sent (reply_begin.lua): an edit older than the
  card's newest is dropped there, so a state older than the one shown is never sent over it.

  KEYS[1] card HASH         {P}:v1:card:<id>            see include/cards.lua; docs/redis.md
  KEYS[2] open cards ZSET   {P}:v1:cards:open           member = card id, score = end (ms)
  KEYS[3] replies stream    {P}:v1:stream:replies
  KEYS[4] following ZSET    {P}:v1:following:<digest>   the card's (follow_digest); any key of
                            the deployment when it has none (not touched)
  KEYS[5] notices prefix    {P}:v1:notify:              the person's own notices
                            (include/prefs.lua): the closing notice as they set it

  ARGV[1] replies consumer group
  ARGV[2] the card's seq as the caller read it
  ARGV[3] state (vocabulary::CardState)
  ARGV[4] the card's whole text
  ARGV[5] "progress": only the progress changed (the same state): applied in a private chat
          (chat id > 0) once ARGV[6] ms have passed since the card's last change, never in a
          group; "" otherwise
  ARGV[6] the least time between two progress edits of a card, milliseconds
  ARGV[7] "final": the card closes with this step (its last edit, then no more); "" otherwise
  ARGV[8] final: the closing notice, a new message in reply to the card ("" for none)
  ARGV[9] how long a closed card is kept, seconds
  ARGV[10] the clock of quiet hours (include/prefs.lua's parse_clock; "" : none applied)
  ARGV[11] the closing notice's category (transfer: a download's end; subscribe: a
          subscription's): in a private chat it is the person's own (notice_fate, mine), so
          it is sent, sent silently, held for the summary after quiet hours, or not sent
  ARGV[12..] name, value pairs the follower keeps in the card (what it saw: listed, percent,
          gone_at, filed, ...), written unless the answer is "stale", "closed" or "missing"

  Returns {outcome, seq}: "changed" (a new state or text: seq is the new one; its edit queued
  when the card's message is known and still there), "same" (nothing new to show; an edit
  still owed is queued now that the message is known), "held" (a progress change too soon or
  in a group: nothing queued), "stale" (the card's seq is not ARGV[2]: another step came
  first), "closed" (the card ended before), or "missing".
  Runs after include/common.lua (now_ms, ensure_group, queue_reply) and include/prefs.lua
  (notice_fate).
]]

local card, open, replies, following, notices = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local group = ARGV[1]
local c = call('HMGET', card, 'state', 'seq', 'text', 'chat_id', 'message_id', 'gone', 'queued',
  'progress_at', 'closed_at', 'follow_member', 'job', 'thread_id')
if not c[2] then return {'missing', ''} end
if c[9] then return {'closed', c[2]} end
if c[2] ~= ARGV[2] then return {'stale', c[2]} end

local now = now_ms()
local seq, state, text, final = tonumber(c[2]), ARGV[3], ARGV[4], ARGV[7] == 'final'
local chat_id, message_id, gone = c[4], c[5], c[6] == '1'
if #ARGV > 11 then call('HSET', card, unpack(ARGV, 12)) end

local outcome = 'same'
if state ~= c[1] or text ~= (c[3] or '') then
  outcome = 'changed'
  if ARGV[5] == 'progress' and not final then
    local last = tonumber(c[8] or '0')
    if tonumber(chat_id) < 0 or tonumber(now) - last < tonumber(ARGV[6]) then
      outcome = 'held'
    end
  end
end
if outcome == 'changed' then
  seq = seq + 1
  -- Every change counts toward the pace: a progress edit comes a minute after the last edit.
  call('HSET', card, 'state', state, 'text', text, 'seq', seq, 'updated_at', now,
    'progress_at', now)
else
  text = c[3] or ''
end

local queued = false
local function queue(r)
  if not queued then
    ensure_group(replies, group)
    queued = true
  end
  r.chat_id, r.now = chat_id, now
  queue_reply(replies, r)
end

-- The newest text, once the message it edits is known (reply_end.lua writes message_id when
-- the job's reply was sent) and still there.
if outcome ~= 'held' and message_id and not gone and text ~= ''
    and tonumber(c[7] or '0') < seq then
  queue({kind = 'card', text = text, edit_message_id = message_id, card = c[11],
    card_seq = tostring(seq)})
  call('HSET', card, 'queued', seq)
end

if final then
  local fate = 'drop'
  if ARGV[8] ~= '' then
    fate = notice_fate(notices, chat_id, ARGV[11], true, parse_clock(ARGV[10]))
  end
  if fate == 'send' or fate == 'silent' then
    local reply_to = ''
    if message_id and not gone then reply_to = message_id end
    -- A new message: in the card's forum topic, if it has one.
    queue({kind = 'card_end', reply_to = reply_to, text = ARGV[8], thread_id = c[12] or '',
      silent = fate == 'silent' and '1' or ''})
  end
  call('HSET', card, 'closed_at', now)
  call('ZREM', open, c[11])
  if c[10] then call('ZREM', following, c[10]) end
  call('EXPIRE', card, ARGV[9])
end
return {outcome, tostring(seq)}
