--[[
  list: store a list a job showed, page by page, for its ◀ / ▶ buttons (and, for a resource
  search, the releases its `下载 k` buttons download), both keys in one step. The releases hold
  each release's torrent_info as MoviePilot sent it, site cookie included, so they live exactly
  as long as the buttons that name them and are never copied into a job.

  KEYS[1] pages HASH        {P}:v1:pages:<job id>      replaced whole
  KEYS[2] releases HASH     {P}:v1:releases:<job id>   replaced whole; deleted when ARGV[3] is 0

  ARGV[1] lifetime, seconds (the buttons' lifetime: commands.resources_window_secs for a release
          list, telegram.confirm_ttl_secs for a list of matches)
  ARGV[2] N, the number of pages (at least 1)
  ARGV[3] R, the number of releases (0 for a list of matches)
  ARGV[4 .. 3 + 2N]  each page's text and markup (the keyboard, its ◀ / ▶ row included), in
          page order: stored as `text:<k>` and `markup:<k>` (k = 1 .. N), beside `pages` = N.
          tap.lua edits a `markup:<k>` as buttons are used
  ARGV[4 + 2N]       the releases' media_info JSON, shared by every release (when R > 0)
  ARGV[5 + 2N ..]    R values: each release's torrent_info JSON, in list order (when R > 0):
          stored as `media`, `count` = R and `r1` .. `rR`, beside `job_id`

  Returns 1.
]]

local ttl, n, r = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local pages_key, releases_key = KEYS[1], KEYS[2]
local job_id = string.match(pages_key, '(%d+)$') or ''

redis.call('DEL', pages_key, releases_key)
local pages = {'pages', ARGV[2]}
for k = 1, n do
  pages[#pages + 1] = 'text:' .. k
  pages[#pages + 1] = ARGV[2 + 2 * k]
  pages[#pages + 1] = 'markup:' .. k
  pages[#pages + 1] = ARGV[3 + 2 * k]
end
redis.call('HSET', pages_key, unpack(pages))
redis.call('EXPIRE', pages_key, ttl)

if r > 0 then
  local base = 4 + 2 * n
  local releases = {'job_id', job_id, 'media', ARGV[base], 'count', ARGV[3]}
  for i = 1, r do
    releases[#releases + 1] = 'r' .. i
    releases[#releases + 1] = ARGV[base + i]
  end
  redis.call('HSET', releases_key, unpack(releases))
  redis.call('EXPIRE', releases_key, ttl)
end
return 1
