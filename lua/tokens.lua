--[[
  tokens: store one group of one-time buttons (the worker's choices under a reply: Subscribe
  under search results, the season choice). Runs after include/common.lua and
  include/tokens.lua, which hold the layout and the rules of tokens.

  Called before the reply that shows the buttons is recorded (complete.lua): if that never
  happens, nobody ever sees the tokens and they expire unused.

  KEYS[1] token prefix      {P}:v1:token:
  KEYS[2] token-group pfx   {P}:v1:tgroup:

  ARGV[1] the group (JSON of `ledger::tokens::TokenGroup`, see include/tokens.lua)

  Returns "ok".
]]

create_tokens(KEYS[1], KEYS[2], cjson.decode(ARGV[1]), now_ms())
return 'ok'
