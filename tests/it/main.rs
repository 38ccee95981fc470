//! oncebot's integration tests: one binary, one module per area, every test against its own real
//! `redis-server` (private, on a unix socket) and simulated outside services that speak the real
//! wire protocol (`oncebot_tools::sim`), never traits.
//!
//! Run them with `scripts/test`, which installs what is missing (as root) and runs `cargo nextest
//! run --features failpoints --no-fail-fast`. `redis-server` must be on the PATH (`apt-get install
//! redis-server`); tests fail, not skip, without it.

/// Shared helpers: updates as Telegram sends them, a view of Redis, the app in-process and the
/// binary as a child process.
mod support;

/// Redis refusing writes, through real redis-server processes: `maxmemory` under `noeviction`,
/// a failed RDB save and an AOF write error. 503s counted, outcomes kept and recorded once, the
/// cause on `/readyz`, the admin chats told once an episode; nothing lost, nothing twice.
mod redis_faults;

/// Live cards (issue 45): a download's and a subscription's reply edited in place through
/// every state MoviePilot's data shows, then one notice; a deleted card; a title without a year.
mod cards;

/// card.lua and reply_begin.lua's check of a card's edit, through the ledger: ordered, paced,
/// final, stale edits dropped.
mod card_script;

/// The webhook front door: secret, size and shape checks, and the three layers of duplicates
/// (update_id, command window, none for read-only commands), Redis outages and restarts.
mod ingress;

/// `oncebot serve --role ingress --poll` as a real process against the simulated Bot API: the
/// offset advances only after admission, a crash in between repeats nothing, 409 and 401.
mod polling;

/// A Redis that may evict oncebot's keys (`maxmemory` and a policy but `noeviction`): start-up
/// stops with one line, or warns; found live, the doors admit nothing until it is fixed.
mod eviction;

/// A flood of wrong secrets at the webhook and the relay's wake-up path: each counted, the log
/// one line a second per peer.
mod refusals;

/// The listener's limits against the real process: half-sent requests and idle kept-alive
/// connections closed at their deadlines, the connection cap and the open-files limit.
mod http_limits;

/// What a caller without credentials can send and learn: smuggling, gzip, an oversized form, and
/// the probes' fixed reasons.
mod exposure;

/// The Lua scripts called through the ledger: every outcome in a script's header, and every job
/// state change checked against `JobState::can_transition`.
mod lua_scripts;

/// The `oncebot` binary as a process: `jobs list/show --json`, exit codes, start-up errors,
/// `serve` with its probes and graceful SIGTERM.
mod cli;

/// The simulated Bot API itself: offset semantics, long polls, error shapes, faults.
mod telegram_sim;

/// The MoviePilot client against the simulator, in both dialects: operations, duplicate
/// creates, the shared re-login, timeouts and error kinds; and the simulator against the bodies
/// a real v2.5.6 answered (`tests/fixtures/moviepilot-v2.5.6/`).
mod moviepilot;

/// MoviePilot as the trouble: a changed API token (jobs wait, admins told once) and a restart
/// that refuses connections (waited out), with plain words for users.
mod moviepilot_trouble;

/// What MoviePilot answers, read safely: the byte limit (a 45 MB search, memory bounded),
/// `success` before `data` in each version's real refusals, the locale, v3's 403, two-factor
/// login and v3.0.0's search trigger, control characters kept from Telegram, one login at a
/// time for the deployment while refused, `/downloading` telling torrents apart.
mod moviepilot_answers;

/// Liveness: dead workers' and dispatchers' entries taken within seconds, slow live ones left
/// alone, dead consumers removed from the groups.
mod liveness;

/// Workers as real processes against the MoviePilot simulator (both dialects): one effect per
/// command, retries by error kind, and a SIGKILL at every dangerous point of a job.
mod worker;

/// The worker's scripts through the ledger: fencing of zombie completions and lease renewals,
/// recovery by policy, retries promoted once, and what may be resolved by a person.
mod worker_scripts;

/// The operator's page through HTTP (auth, read-only, decisions, CSRF, no secrets) and in a
/// real headless Chromium driven over WebDriver.
mod admin_web;

/// The operator's commands as processes: `jobs resolve`, `webhook set|info|delete`.
mod admin_cli;

/// `oncebot doctor` (issue 43): a healthy world, then each broken piece (token, webhook, an
/// evicting or forgetful Redis, MoviePilot's credentials and rights, an admin chat, silent
/// peers); reads only, `--json`, no secret printed.
mod doctor;

/// The relay of MoviePilot's notifications as processes: routing and each chat once, repeats
/// collapsed, ids reused after a purge, first start and backfill, a long outage announced, a
/// burst, MoviePilot down, the wake-up endpoint and the site cookie, two relays, SIGKILLs.
mod notify;

/// The dispatcher as a process against the simulated Bot API: 429/5xx/403, a SIGKILL mid-send,
/// rate limits under a burst, long texts, progress edited in place, the callback fast lane, and
/// one chat's replies in stream order when read together.
mod dispatch;

/// Notifications with posters: one sendPhoto fetched from a loopback image host, text when
/// Telegram refuses the poster or the text is too long for a caption, retries as the photo.
mod photos;

/// Posters on the worker's replies (issue 24): search results, release lists and subscriptions
/// as one photo; a caption too long, a refused poster (also across a crash), a result after its
/// progress message, edits of a photo message, `telegram.posters = false`.
mod posters;

/// One-time buttons (the seed's scenario 3): Confirm / Cancel under `/unsubscribe`, Subscribe
/// under search results and the season choice, review buttons in admin chats; a double tap, an
/// expired button, another user's tap and a redelivered update each run nothing more.
mod confirmations;

/// `/download`: resource searches with stored lists and solo `下载 k` buttons, downloads once,
/// verified in MoviePilot's history after a SIGKILL or a lost answer, the site cookie kept secret.
mod downloads;

/// The library check (issue 24): match lines, the stop before a subscription or a resource
/// search of media already there and its once-only "anyway" buttons, the cache, and a media
/// server that is missing, slow or not configured never in the way.
mod library;

/// `/best` (洗版, issue 24): best-version subscriptions, a command of its own, a plain
/// subscription left as it is, a crash after the create verified.
mod best;

/// Paged lists: ◀ / ▶ edit the message in place from the stored list (no job, no MoviePilot
/// request), a button on an old page acts on the item it showed (#258), two users' lists apart,
/// expiry, the memory bound's message.
mod pages;

/// The ⚡ Auto button (issue 24): release 1 downloaded once across it and `下载 1`, the listed
/// season subscribed, one report edited between the steps, a SIGKILL at either step verified.
mod auto;

/// Issue 43: asking for access from the chat, the first admin deciding once.
mod access;
/// Issue 43: claiming a deployment nobody administers (`/claim` with the logged code).
mod claims;
/// Issue 43: the household from the chat: grants (`/whoami`, `/users` and Revoke, `oncebot users
/// grant|revoke`) followed by every ingress within 2 s.
mod grants;
/// The house commands (issue 23): each of MoviePilot's scheduler jobs started once per window
/// for everyone, a force button for an admin, a crash recovered as the policy table says.
mod house;
/// `GET /metrics` after a scripted run: the counters match what happened.
mod metrics;
/// oncebot's own MoviePilot account (issue 43): a plain one stops the workers on v3, every
/// `/readyz` saying so, and is warned about once on v2.
mod mp_account;
/// MoviePilot's own Telegram mapping (`telegram_userid`): its roles (MoviePilot's permissions,
/// never above them), the setting winning, a removal at the next refresh, a service account that
/// is no superuser.
mod mp_users;
/// Subscriptions owned by the user who asked (the owner's update, a crash between the two
/// calls), and `/subscriptions` as the asker's own.
mod ownership;
/// Issue 44: weekly quotas: a third request over a quota of two refused with when a slot frees;
/// a decline and a failed job free their slots.
mod quotas;
/// Issue 44: `/requests` and `/mine`, the lists of requests: a decision or a withdrawal from a
/// list is the card's, once; a requester or viewer is refused `/requests`.
mod request_lists;
/// Issue 44: the requester role: from MoviePilot's mapping with `household.media_requests`, the
/// access card's Allow as requester, the resource search a viewer is refused.
mod requesters;
/// Issue 44: ask and approve: requests from a typed command and a tapped button, one card per
/// admin chat, the first tap decides once, decline, withdrawal, expiry, crashes after approval.
mod requests;
/// Users and roles (`telegram.users`): refused commands, nothing changed while nobody is mapped.
mod roles;

/// `oncebot demo` as a process: every scene plays and checks itself, only its own
/// `oncebot-demo-*` keys are touched and none remain, a private redis-server when none answers.
mod demo;

/// `oncebot bench`: runs the real binary and checks the shape of its report, never its speed.
mod bench;

/// `oncebot bench --soak` in short minutes: a busy household's day at 720 times the speed
/// against one process per role, SIGKILLs and MoviePilot away included; every check passes.
mod soak;

/// The admission script survives Redis forgetting its scripts (bare EVALSHA + reload).
mod admission_script;

/// A stream reader whose consumer group vanished makes it again and reads on.
mod stream_reader;

/// Redis Cluster: the pipeline on whichever node the setting names, failovers under load with
/// `redis.wait_replicas`, `/readyz` and the CLI on a misrouted standalone connection.
mod cluster;

/// What a run of jobs leaves in Redis: empty streams, trimmed indexes, keys that expire.
mod retention;

/// Every Bot API request oncebot sends and every answer of the simulated Bot API checked
/// against teloxide-core's types, and recorded real updates read alike by both models.
mod wire_types;

/// A rolling upgrade under load (issue 46): the old release's processes replaced one role at a
/// time by this tree's; nothing lost, nothing done twice. Ignored: `scripts/upgrade-test` builds
/// the old release and runs it.
mod upgrade;

/// The README's two commands, `scripts/test` and `.ci/run` agree: CI runs what a new user runs.
mod quick_start;

/// Releases side by side: unknown job kinds left for a newer worker, new kinds held while an
/// older worker lives, the registry and the layout guard (docs/releases.md).
mod versions;

/// Issue 45, item 5: forum topics (a command in a topic answered there, a plain reply thread
/// not echoed, a refused topic's answer in General).
mod topics;

/// Issue 45, item 6: each person's own notices (`/notify`: only mine, off, quiet hours sent
/// silently with the night's allowance and the summary; a forged tap changes nothing).
mod notices;
