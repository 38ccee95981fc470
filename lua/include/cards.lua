--[[
  include/cards.lua: the one way a live card is opened (issue 45). Not a script of its own (see
  include/common.lua); runs after include/common.lua.

  A card follows one effect a person made (a download by its hash, a subscription by its id)
  until its media is in the library. It is the job's reply message, edited in place: the card's
  id is the job's, its HASH `{P}:v1:card:<id>` holds its state and the message it edits (not the
  job, whose retention an operator may lower), and `{P}:v1:cards:open` lists the cards still
  followed, scored by when following ends.

  open_card(c)                      c = {card_key, open_key, following_prefix, of_key, id, chat_id,
                                    thread (its forum topic, "" for none), user_id, spec (JSON object of string fields from the
                                    worker: kind, title, and hash or subscription_id, tmdb_id,
                                    season, mtype, follow_digest, follow_season), now, follow_ms}.
                                    Writes the card (state `started` or `subscribed`, seq 0:
                                    nothing queued yet), lists it as open, and adds the chat to
                                    `{P}:v1:following:<follow_digest>` (member
                                    `<follow_season>|<chat id>|<card id>`, kept in the card as
                                    follow_member; score = the end of following) so that the relay leaves that
                                    media's subscription, download and 入库 notices to the card.
                                    It is listed among its person's cards, `of_key` =
                                    `{P}:v1:cards:of:<user_id>` ("" for none: a job without a
                                    user): member = card id, score = started_at, the newest
                                    CARDS_PER_PERSON kept (`/mine` reads them), the key expiring
                                    CARDS_KEPT_MS after its newest card's end of following (a
                                    closed card's HASH lives that long after it closes).
                                    An existing card is left as it is (a job ends once).
]]

-- The cards `/mine` lists of one person: its newest, as include/requests.lua keeps 50 requests.
local CARDS_PER_PERSON = 50
-- How long a closed card is kept (30 days: ledger::cards::CLOSED_CARD_SECS, a test holds them
-- equal), so a person's index outlives each of its cards.
local CARDS_KEPT_MS = 2592000000

local function open_card(c)
  if call('EXISTS', c.card_key) == 1 then return end
  local spec = cjson.decode(c.spec)
  local until_ms = tonumber(c.now) + tonumber(c.follow_ms)
  local digest = spec.follow_digest or ''
  local member = (spec.follow_season or '0') .. '|' .. c.chat_id .. '|' .. c.id
  local set = {'chat_id', c.chat_id, 'user_id', c.user_id, 'job', c.id, 'seq', '0',
    'queued', '0', 'started_at', c.now, 'until', until_ms}
  if digest ~= '' then
    set[#set + 1] = 'follow_member'
    set[#set + 1] = member
  end
  if c.thread and c.thread ~= '' then
    set[#set + 1] = 'thread_id'
    set[#set + 1] = c.thread
  end
  for name, value in pairs(spec) do
    if type(value) == 'string' and value ~= '' then
      set[#set + 1] = name
      set[#set + 1] = value
    end
  end
  set[#set + 1] = 'state'
  set[#set + 1] = spec.kind == 'subscription' and 'subscribed' or 'started'
  call('HSET', c.card_key, unpack(set))
  call('ZADD', c.open_key, until_ms, c.id)
  if digest ~= '' then
    local following = c.following_prefix .. digest
    -- GT: a member already there keeps the later end (and a new one is added).
    call('ZADD', following, 'GT', until_ms, member)
    local newest = call('ZRANGE', following, '+inf', '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 1,
      'WITHSCORES')
    call('PEXPIREAT', following, newest[2])
  end
  if c.of_key and c.of_key ~= '' then
    call('ZADD', c.of_key, c.now, c.id)
    call('ZREMRANGEBYRANK', c.of_key, 0, -(CARDS_PER_PERSON + 1))
    -- Never shortened: an older card followed longer (a setting lowered since) keeps its line.
    local at = until_ms + CARDS_KEPT_MS
    if call('PEXPIRETIME', c.of_key) < at then call('PEXPIREAT', c.of_key, at) end
  end
end
