--[[
  enqueue: admit one Telegram update into the ledger, atomically (one EVALSHA per update).
  Runs after include/common.lua, include/create_job.lua and include/tokens.lua (concatenated in
  front of it by crates/service/src/ledger/scripts.rs): a job is created by the same code here and in tap.lua.

  Guarantee: an update_id is admitted at most once while it is remembered (transport layer), and a
  side-effecting command with a duplicate window creates at most one job per window (business
  layer). Either the whole admission is written or, on a transport duplicate, nothing is.

  Every key is under the configured prefix as hash tag, so the script also runs on Redis Cluster.

  KEYS[1]  updates HASH     {P}:v1:updates:<n>          field ARGV[2]: job id, or "-" when no job
                                                        was made (n = update_id / 100, rounded down)
  KEYS[2]  command key      {P}:v1:cmd:<digest>         STRING: job id, PX = duplicate window
  KEYS[3]  job id sequence  {P}:v1:seq:job              STRING counter (INCR)
  KEYS[4]  job key prefix   {P}:v1:job:                 the script builds {P}:v1:job:<id> (HASH)
  KEYS[5]  jobs stream      {P}:v1:stream:jobs          entries: job=<id>
  KEYS[6]  replies stream   {P}:v1:stream:replies       entries: chat_id, text, kind, job_id, ...
  KEYS[7]  chat index       {P}:v1:chat:<chat_id>:jobs  LIST of job ids, newest first, trimmed
  KEYS[8]  jobs index       {P}:v1:index:recent         LIST of job ids, newest first, ARGV[14] of them
  KEYS[9]  token prefix     {P}:v1:token:               the buttons' tokens (HASH): mode "confirm",
                                                        and a repeat's force button
  KEYS[10] token-group pfx  {P}:v1:tgroup:              their group (HASH)
  Keys built inside: KEYS[4] .. <id> (the job HASH), for a new job and for the job a key points to;
  a repeated resource search reads {P}:v1:releases:<id> (prefix derived from KEYS[4]);
  KEYS[9] .. <token> and KEYS[10] .. <group> (see include/tokens.lua).

  ARGV[1]  mode: "job" (create a job), "reply" (answer with ARGV[12], make no job) or "confirm"
           (a command that needs a confirmation: offer Confirm / Cancel buttons, make no job;
           the job is made by tap.lua when Confirm is tapped)
  ARGV[2]  update_id
  ARGV[3]  update retention, seconds (the updates HASH's expiry, renewed by every write)
  ARGV[4]  chat_id
  ARGV[5]  user_id
  ARGV[6]  message_id to reply to ("" for none)
  ARGV[7]  command, normalised (e.g. "subscribe")
  ARGV[8]  arguments as the user typed them (whitespace collapsed)
  ARGV[9]  idempotency key: hex digest of the asker (the MoviePilot user for a mapped user, else
           chat and user), normalised command and arguments
  ARGV[10] duplicate window, milliseconds (0: the command is never treated as a duplicate);
           in mode "reply", the window in which the same reply (KEYS[2]) is sent only once
  ARGV[11] reply kind for the reply stream ("refusal", "help", "duplicate", ...)
  ARGV[12] mode "reply": the text to send; modes "job" and "confirm": the text sent to a
           duplicate, in which "{job}" becomes the original job id and "{state}" its state's label
  ARGV[13] chat index length
  ARGV[14] jobs index length
  ARGV[15] consumer group of the jobs stream
  ARGV[16] consumer group of the replies stream
  ARGV[17] recovery policy of the command (rerun | once | verify | idempotent | review | none),
           stored in the job for claim.lua to read after a crash
  ARGV[18] mode "confirm": the buttons' token group (JSON, see include/tokens.lua); mode "job":
           a token group stored only when the command repeats one inside its window (a house
           command's force button), else ""
  ARGV[19] mode "confirm": the question asked; else ""
  ARGV[20] mode "confirm": the buttons (a Telegram InlineKeyboardMarkup, JSON); mode "job": the
           buttons under the answer to a repeat (with ARGV[18]'s tokens); else ""
  ARGV[21] the MoviePilot user the job acts for ("" for the service account), stored as the
           job's `requester`
  ARGV[22] the asker's role (viewer | user | admin), stored as the job's `role`
  ARGV[23] seconds east of UTC for "{time}" in the answer to a repeat: the first job's
           `created_at` as HH:MM there (commands.day_zone's offset now)
  ARGV[24] the forum topic the message is in ("" for none: a chat without topics, or its General
           topic): every reply here and the job's (its `thread_id`) go there
  ARGV[25..] pairs: state name, state label (for "{state}")

  Returns an array {outcome, job_id, state}:
    {"new", id, "pending"}                   a job was created and added to the jobs stream
    {"duplicate_update", id or "", state}    the update_id was seen before; nothing changed
    {"duplicate_command", id, state}         same command inside its window: the update now points
                                             at the existing job, whose duplicates counter grew; a
                                             "duplicate" reply went to the replies stream (for a
                                             finished resource search: with its stored list and
                                             the list's buttons as `markup`)
    {"confirming", "", ""}                   mode "confirm": the question went to the replies
                                             stream (kind "confirm", with `markup`); no job yet
    {"replied", "", ""}                      mode "reply": the reply was queued, no job
    {"suppressed", "", ""}                   mode "reply" with a window that was already open:
                                             no reply, no job (refusals go out once a window)
  A job whose state is "failed" does not absorb a repeat: the user may try again at once.
]]

local updates_key, command_key, seq_key, job_prefix = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local jobs_stream, replies_stream, chat_index, jobs_index = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local mode, update_id, retention = ARGV[1], ARGV[2], ARGV[3]
local chat_id, user_id, message_id = ARGV[4], ARGV[5], ARGV[6]
local command, args, idem_key, window_ms = ARGV[7], ARGV[8], ARGV[9], tonumber(ARGV[10])
local reply_kind, reply_text = ARGV[11], ARGV[12]
local thread = ARGV[24]

-- 1. Transport layer: the same update_id again changes nothing.
local seen = seen_update(updates_key, update_id, job_prefix)
if seen then return seen end

local now = now_ms()

local function reply(kind, text, job_id, markup)
  ensure_group(replies_stream, ARGV[16])
  queue_reply(replies_stream, {chat_id = chat_id, reply_to = message_id, kind = kind,
    job_id = job_id, text = text, markup = markup, thread_id = thread, now = now})
end

if mode == 'reply' then
  mark_update(updates_key, update_id, '-', retention)
  -- A window on a reply (e.g. refusals to a stranger) sends it once per window, not per message.
  if window_ms > 0 and not redis.call('SET', command_key, '-', 'NX', 'PX', window_ms) then
    return {'suppressed', '', ''}
  end
  reply(reply_kind, reply_text, '')
  return {'replied', '', ''}
end

-- 2. Business layer: the same command inside its window points at the existing job.
local existing, state = find_duplicate(command_key, job_prefix, window_ms)
if existing then
  mark_update(updates_key, update_id, existing, retention)
  absorb_duplicate(job_prefix, existing, update_id)
  local labels = {}
  for i = 25, #ARGV - 1, 2 do labels[ARGV[i]] = ARGV[i + 1] end
  local created = tonumber(redis.call('HGET', job_prefix .. existing, 'created_at')) or now
  local local_secs = math.floor(created / 1000) + (tonumber(ARGV[23]) or 0)
  local time = string.format('%02d:%02d', math.floor(local_secs % 86400 / 3600),
    math.floor(local_secs % 3600 / 60))
  local text = fill(reply_text, {job = existing, state = label_of(state, labels), time = time})
  -- A finished resource search answers with its list again (its buttons still work).
  local list_text, list_markup = stored_list(job_prefix, existing, state)
  if list_text then text = text .. '\n\n' .. list_text end
  -- A house command's repeat carries its force button.
  if not list_markup and mode == 'job' and ARGV[18] ~= '' then
    create_tokens(KEYS[9], KEYS[10], cjson.decode(ARGV[18]), now)
    list_markup = ARGV[20]
  end
  reply('duplicate', text, existing, list_markup)
  return {'duplicate_command', existing, state}
end

-- 3a. A command that needs a confirmation: the buttons, and no job until one is tapped.
if mode == 'confirm' then
  create_tokens(KEYS[9], KEYS[10], cjson.decode(ARGV[18]), now)
  mark_update(updates_key, update_id, '-', retention)
  reply('confirm', ARGV[19], '', ARGV[20])
  return {'confirming', '', ''}
end

-- 3b. A new job.
local id = create_job({
  seq_key = seq_key, job_prefix = job_prefix, jobs_stream = jobs_stream, jobs_group = ARGV[15],
  chat_index = chat_index, chat_index_len = ARGV[13], jobs_index = jobs_index,
  jobs_index_len = ARGV[14], command_key = command_key, window_ms = window_ms,
  updates_key = updates_key, retention = retention, now = now,
  fields = {idempotency_key = idem_key, update_id = update_id, chat_id = chat_id,
    user_id = user_id, message_id = message_id, command = command, args = args,
    recovery = ARGV[17], requester = ARGV[21], role = ARGV[22], thread_id = thread},
})
return {'new', id, 'pending'}
