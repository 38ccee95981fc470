--[[
  releases: store the release list a resource search found, for its `下载 k` buttons. The list
  holds each release's torrent_info as MoviePilot sent it, site cookie included, so it lives
  exactly as long as the buttons that name it and is never copied into a job.

  KEYS[1] list HASH         {P}:v1:releases:<job id>   (replaced whole)

  ARGV[1] lifetime, seconds (commands.resources_window_secs, the buttons' lifetime too)
  ARGV[2..] pairs: field, value: job_id, text, markup (the keyboard, edited by tap.lua as
          buttons are used), media (media_info JSON, shared by every release), count, and
          r1..rN (each release's torrent_info JSON)

  Returns 1.
]]

redis.call('DEL', KEYS[1])
local set = {}
for i = 2, #ARGV, 2 do
  set[#set + 1] = ARGV[i]
  set[#set + 1] = ARGV[i + 1]
end
redis.call('HSET', KEYS[1], unpack(set))
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1]))
return 1
