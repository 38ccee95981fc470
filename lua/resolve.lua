--[[
  resolve: a person settles a `needs_review` job: succeeded, failed, or retry (back to
  `pending`, on the jobs stream again). Refused for jobs in any other state. The work is
  include/resolve_job.lua (after include/common.lua), shared with tap.lua's review buttons.

  KEYS[1] job HASH          {P}:v1:job:<id>
  KEYS[2] jobs stream       {P}:v1:stream:jobs
  KEYS[3] replies stream    {P}:v1:stream:replies
  KEYS[4] review index      {P}:v1:index:needs_review   SET of job ids

  ARGV[1] decision: succeeded | failed | retry
  ARGV[2] note (who decided and why; "" for none)
  ARGV[3] reply text for the user ("" sends none)
  ARGV[4] retention of a finished job's HASH, seconds
  ARGV[5] jobs consumer group
  ARGV[6] replies consumer group

  Returns:
    {"ok", new status}
    {"refused", current status}   the job is not waiting for review ("missing" if absent)
]]

local outcome, status = resolve_job({
  job_key = KEYS[1], stream = KEYS[2], replies = KEYS[3], review = KEYS[4],
  decision = ARGV[1], note = ARGV[2], reply = ARGV[3], retention = ARGV[4],
  jobs_group = ARGV[5], replies_group = ARGV[6], now = now_ms(),
})
return {outcome, status}
