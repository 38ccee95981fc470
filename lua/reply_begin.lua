--[[
  reply_begin: a dispatcher is about to send one replies-stream entry. Records `sending` (and
  counts the attempt) BEFORE the Bot API call, so after a crash the ledger shows the send may
  have happened: replies are at-least-once, and this keeps a duplicate rare and visible.

  KEYS[1] reply HASH        {P}:v1:reply:<entry id>     state, attempts, message_id, error, ...
  KEYS[2] replies stream    {P}:v1:stream:replies
  KEYS[3] job HASH          {P}:v1:job:<job id>         read only, for its progress_message_id,
                            reply_message_id and reply_form; any key of the deployment when
                            the reply has no job
  KEYS[4] card HASH         {P}:v1:card:<id>            read only, when the entry is a live
                            card's edit (issue 45); any key of the deployment otherwise

  ARGV[1] entry id
  ARGV[2] replies consumer group
  ARGV[3] consumer name
  ARGV[4] retention of the reply HASH, seconds
  ARGV[5] chat id, ARGV[6] job id ("" for none), ARGV[7] kind (copied into the HASH)
  ARGV[8] a card's edit: its seq (card.lua), copied into the HASH with the card's id ARGV[9];
          "" for any other entry
  ARGV[9] the card's id ("" for none)

  Returns:
    {"send", attempts, progress, form, photo}
                                    go ahead (attempts includes this one; > 1 means a retry or
                                    a recovery after a crash, and the message may exist already);
                                    progress is the job's "working on it" message_id ("" for
                                    none), which its result edits in place: read here so the
                                    send needs no round trip of its own; form is the form an
                                    earlier attempt settled on (reply_form.lua: "text" after a
                                    refused poster; "" for none); photo is the job's reply's
                                    message_id when that reply went as a photo (reply_end.lua's
                                    reply_form), so an edit of it changes its caption ("" for
                                    none or no job)
    {"done", state, message_id}     already `sent` or `failed`: the entry was acknowledged and
                                    deleted, nothing to send
    {"done", "stale", ""}           a card's edit older than the card's newest step, or of a
                                    card whose message is gone (Telegram answered "message to
                                    edit not found"): acknowledged and deleted unsent, so an
                                    older state is never shown over a newer one
    {"done", "gone", ""}            no HASH and the entry is no longer pending in the group:
                                    reply_end settled it (acknowledged and deleted it; a job's
                                    reply keeps its record in the job HASH and has no HASH left)
                                    or it was dropped; acknowledged, nothing to send. A
                                    dispatcher that held the entry while another one took it
                                    over and finished it lands here. (XPENDING, not XRANGE: the
                                    answer is four small values, not the whole message.)
  Runs after include/common.lua (now_ms, ensure_group).
]]

local reply, stream, entry = KEYS[1], KEYS[2], ARGV[1]
local state = redis.call('HGET', reply, 'state')
if state == 'sent' or state == 'failed' then
  redis.call('XACK', stream, ARGV[2], entry)
  redis.call('XDEL', stream, entry)
  return {'done', state, redis.call('HGET', reply, 'message_id') or ''}
end
if not state and #redis.call('XPENDING', stream, ARGV[2], entry, entry, 1) == 0 then
  redis.call('XACK', stream, ARGV[2], entry)
  return {'done', 'gone', ''}
end
if ARGV[8] ~= '' then
  local card = redis.call('HMGET', KEYS[4], 'seq', 'gone')
  if card[2] == '1' or tonumber(card[1] or '0') > tonumber(ARGV[8]) then
    redis.call('XACK', stream, ARGV[2], entry)
    redis.call('XDEL', stream, entry)
    redis.call('DEL', reply)
    return {'done', 'stale', ''}
  end
end
local now = now_ms()
-- Every write of the HASH sets its state, so without one there is no HASH and this is the
-- first attempt: no HINCRBY (and no number to format) for the common case.
local attempts = '1'
if state then attempts = tostring(redis.call('HINCRBY', reply, 'attempts', 1)) end
redis.call('HSET', reply, 'state', 'sending', 'consumer', ARGV[3], 'updated_at', now,
  'chat_id', ARGV[5], 'job_id', ARGV[6], 'kind', ARGV[7], 'attempts', attempts)
if ARGV[8] ~= '' then redis.call('HSET', reply, 'card', ARGV[9], 'card_seq', ARGV[8]) end
redis.call('EXPIRE', reply, ARGV[4])
local progress, photo = '', ''
if ARGV[6] ~= '' then
  local job = redis.call('HMGET', KEYS[3], 'progress_message_id', 'reply_message_id', 'reply_form')
  progress = job[1] or ''
  if job[3] == 'photo' then photo = job[2] or '' end
elseif ARGV[8] ~= '' then
  -- A card edits the job's reply: in its form (a poster's caption).
  local card = redis.call('HMGET', KEYS[4], 'form', 'message_id')
  if card[1] == 'photo' then photo = card[2] or '' end
end
-- Only an earlier attempt (the HASH had a state) can have settled on a form: no HGET on a first.
local form = ''
if state then form = redis.call('HGET', reply, 'form') or '' end
return {'send', attempts, progress, form, photo}
