//! Every Redis key oncebot uses, in one table. This layout is a documented interface
//! (docs/redis.md, "Looking inside with redis-cli"): change it only together with `LAYOUT` and a migration, or
//! give a key whose type or meaning changes a new name (`updates:`, `index:recent`), so an older
//! release's keys are never misread.
//!
//! All keys start with `{<prefix>}:v1:`. The braces are a Redis Cluster hash tag, so every key of
//! one deployment lives in one slot and a Lua script may touch any of them.

/// The layout version in every key name; a release that changes the layout bumps it.
pub const LAYOUT: &str = "v1";

/// How many consecutive update_ids share one `updates:<n>` HASH ([`Keys::updates`]). Below
/// Redis's `hash-max-listpack-entries` (128 by default), so the HASH stays a compact listpack.
pub const UPDATES_PER_KEY: i64 = 100;

/// The deployment's three streams: each one's name (as the operator's views print it), key
/// and consumer group, in one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Jobs,
    Replies,
    Callbacks,
}

impl Stream {
    pub const ALL: [Stream; 3] = [Stream::Jobs, Stream::Replies, Stream::Callbacks];

    pub fn name(self) -> &'static str {
        match self {
            Stream::Jobs => "jobs",
            Stream::Replies => "replies",
            Stream::Callbacks => "callbacks",
        }
    }

    /// The consumer group that reads it: the one place a group's name is written (the
    /// scripts get it as an argument). The dispatchers read both of their lanes in one group,
    /// as one consumer each (`lua/liveness.lua` reaps a group's streams together).
    pub fn group(self) -> &'static str {
        match self {
            Stream::Jobs => "workers",
            Stream::Replies | Stream::Callbacks => "dispatchers",
        }
    }

    pub fn key(self, keys: &Keys) -> String {
        match self {
            Stream::Jobs => keys.jobs_stream(),
            Stream::Replies => keys.replies_stream(),
            Stream::Callbacks => keys.callbacks_stream(),
        }
    }
}

/// Builds key names for one deployment.
#[derive(Debug, Clone)]
pub struct Keys {
    base: String,
    /// `{p}:layout`, outside the versioned names: it must be found by a release of any layout.
    layout: String,
}

impl Keys {
    /// `prefix` has been validated by `config` (no braces, colons or spaces).
    pub fn new(prefix: &str) -> Self {
        Self {
            base: format!("{{{prefix}}}:{LAYOUT}:"),
            layout: format!("{{{prefix}}}:layout"),
        }
    }

    /// STRING, no expiry (one key), the one key outside the versioned names: the newest key
    /// layout any process of the deployment used, a number (`1` for `v1`). Each process sets
    /// it if missing and refuses to start below a larger one (`Ledger::check_layout`).
    pub fn layout(&self) -> &str {
        &self.layout
    }

    /// SET: the processes that run neither a worker nor a dispatcher (ingress, relay) and so
    /// are in no `consumers:<group>` list, but register their release in their `alive:` key
    /// all the same (`ledger/versions.rs`); a member whose key is gone is removed when read.
    pub fn processes(&self) -> String {
        format!("{}processes", self.base)
    }

    /// `{p}:v1:`, the start of every key.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// HASH, TTL = update retention (renewed by every write): for the [`UPDATES_PER_KEY`]
    /// update_ids around `update_id`, field = update_id, value = the job it became or `-` for
    /// none. One small HASH per hundred updates instead of a key per update: a key with an
    /// expiry costs about 120 bytes of Redis memory before its value, an entry of a small HASH
    /// about 12. Scripts take the field from their update_id argument.
    pub fn updates(&self, update_id: i64) -> String {
        let bucket = update_id.div_euclid(UPDATES_PER_KEY);
        format!("{}updates:{bucket}", self.base)
    }

    /// STRING, PX = the command's duplicate window: the job a business idempotency key points at.
    pub fn command(&self, digest: &str) -> String {
        format!("{}cmd:{digest}", self.base)
    }

    /// The prefix of command keys; tap.lua appends the idempotency key a button carries.
    pub fn command_prefix(&self) -> String {
        format!("{}cmd:", self.base)
    }

    /// STRING counter: the last job id handed out.
    pub fn job_seq(&self) -> String {
        format!("{}seq:job", self.base)
    }

    /// The prefix of job HASH keys; scripts append the id.
    pub fn job_prefix(&self) -> String {
        format!("{}job:", self.base)
    }

    /// HASH: one job's ledger row.
    pub fn job(&self, id: u64) -> String {
        format!("{}job:{id}", self.base)
    }

    /// STREAM: one entry (`job=<id>`) per job to run; group `Stream::Jobs.group()`.
    pub fn jobs_stream(&self) -> String {
        format!("{}stream:jobs", self.base)
    }

    /// STREAM: outgoing messages; group `Stream::Replies.group()`.
    pub fn replies_stream(&self) -> String {
        format!("{}stream:replies", self.base)
    }

    /// HASH, TTL = reply retention: one reply's delivery state (sending/sent/failed), keyed by
    /// its replies-stream entry id. A job's reply moves its record into the job HASH when it
    /// ends, and this HASH is deleted (reply_end.lua).
    pub fn reply(&self, entry: &str) -> String {
        format!("{}reply:{entry}", self.base)
    }

    /// STREAM: answers to callback queries (answerCallbackQuery), one per tap; group
    /// `Stream::Callbacks.group()`. Apart from replies so no queue of messages delays them.
    pub fn callbacks_stream(&self) -> String {
        format!("{}stream:callbacks", self.base)
    }

    /// HASH, EXPIRE = the button's lifetime: what one button does and whom it is for.
    pub fn token(&self, token: &str) -> String {
        format!("{}token:{token}", self.base)
    }

    /// The prefix of token HASH keys; scripts append the token.
    pub fn token_prefix(&self) -> String {
        format!("{}token:", self.base)
    }

    /// HASH, EXPIRE = the buttons' lifetime: a group of sibling buttons, open or used.
    pub fn token_group(&self, group: &str) -> String {
        format!("{}tgroup:{group}", self.base)
    }

    /// The prefix of token-group keys; scripts append the group id a token names.
    pub fn token_group_prefix(&self) -> String {
        format!("{}tgroup:", self.base)
    }

    /// HASH, EXPIRE = `commands.resources_window_secs`: the release list resource-search job
    /// `job_id` found (each release's torrent_info with its site cookie, the shared media_info
    /// once), for its `下载 k` buttons; its pages are in [`Self::pages`]. Scripts derive the prefix
    /// from the job prefix.
    pub fn releases(&self, job_id: u64) -> String {
        format!("{}releases:{job_id}", self.base)
    }

    /// HASH, EXPIRE = the buttons' lifetime: the pages of a list job `job_id` showed (matches,
    /// or a resource search's releases), each page's text and keyboard, for its ◀ / ▶ buttons
    /// (`pages`, `text:<k>`, `markup:<k>`). Scripts derive the prefix from the job prefix.
    pub fn pages(&self, job_id: u64) -> String {
        format!("{}pages:{job_id}", self.base)
    }

    /// LIST: a chat's recent job ids, newest first.
    pub fn chat_jobs(&self, chat_id: i64) -> String {
        format!("{}chat:{chat_id}:jobs", self.base)
    }

    /// LIST: recent job ids of every chat, newest first (LPUSH + LTRIM in the script that takes
    /// the id from INCR, so the order is the ids' order), for `oncebot jobs list`. A new name
    /// for what was the ZSET `index:jobs`, so a deployment's old key never meets a LIST command.
    pub fn jobs_index(&self) -> String {
        format!("{}index:recent", self.base)
    }

    /// ZSET: `retry_wait` jobs by due time (ms); promote.lua moves due ones to the stream.
    pub fn retry_schedule(&self) -> String {
        format!("{}retry", self.base)
    }

    /// SET: ids of jobs in `needs_review`, waiting for a person.
    pub fn review_index(&self) -> String {
        format!("{}index:needs_review", self.base)
    }

    /// STRING, PX = lease: who is creating a subscription to this media right now, so two
    /// worker processes never both pass the existence check.
    pub fn media_lock(&self, tmdb_id: u64, season: Option<u32>) -> String {
        format!("{}lock:media:{tmdb_id}:{}", self.base, season.unwrap_or(0))
    }

    /// STRING, PX = `moviepilot.library_cache_secs`: the library check's answer for one media
    /// (`movie` or `tv`; season 0: a movie, or every season of a series), as JSON.
    pub fn library(&self, kind: &str, tmdb_id: u64, season: Option<u32>) -> String {
        format!(
            "{}library:{kind}:{tmdb_id}:{}",
            self.base,
            season.unwrap_or(0)
        )
    }

    /// STRING, EX = how long it lasts: a deployment-wide condition the admin chats were told
    /// about (`credentials`: MoviePilot refuses oncebot's credentials), so they are told once.
    pub fn notice(&self, condition: &str) -> String {
        format!("{}notice:{condition}", self.base)
    }

    /// SET, EX = the notice's: the users told about `condition` while it lasts (each once,
    /// however many of their jobs meet it). Ended with the notice.
    pub fn notice_told(&self, condition: &str) -> String {
        format!("{}notice:{condition}:told", self.base)
    }

    /// HASH, PX = how long refusals are remembered: the deployment's MoviePilot login gate
    /// (login_gate.lua): no login before `until`, `step` refusals in a row, their `reason`, and
    /// the `holder` of the login in progress with its `lease_until`.
    pub fn mp_login(&self) -> String {
        format!("{}mp_login", self.base)
    }

    /// HASH, no expiry (one key): oncebot's own MoviePilot account as the last worker to reach
    /// MoviePilot found it (`ledger/mp_account.rs`): `state` (`superuser`, `not_superuser`,
    /// `unknown`), `dialect`, `version`, `via` (`api_key`, `login`), `user`, `by`, `at`.
    /// `/readyz` of every process reads it (ready.lua): `not_superuser` on `v3` stops workers.
    pub fn mp_account(&self) -> String {
        format!("{}mp_account", self.base)
    }

    /// STRING, PX = the liveness expiry: `consumer` (a worker or dispatcher process, or a
    /// registered process of another role) is alive. Its value is the process's registration
    /// (`ledger/versions.rs`, JSON); a release before 0.2.0 writes `1`.
    pub fn alive(&self, consumer: &str) -> String {
        format!("{}{consumer}", self.alive_prefix())
    }

    pub fn alive_prefix(&self) -> String {
        format!("{}alive:", self.base)
    }

    /// SET: the consumer names of `group` that keep a liveness key, where liveness.lua looks
    /// for dead ones.
    pub fn consumers(&self, group: &str) -> String {
        format!("{}consumers:{group}", self.base)
    }

    /// HASH, no expiry (one key): the notification relay's position, the newest MoviePilot
    /// history row handled (`id`, `reg_time`, `identity`), when it last polled (`polled_at`,
    /// ms) and its totals (`forwarded`, `collapsed`, `unrouted`, `skipped`). notify.lua alone
    /// writes it.
    pub fn notify_position(&self) -> String {
        format!("{}notify:position", self.base)
    }

    /// ZSET, trimmed by age and count in notify.lua: identities (`<id>|<reg_time>|<digest>`)
    /// of the history rows handled, scored by when (ms).
    pub fn notify_seen(&self) -> String {
        format!("{}notify:seen", self.base)
    }

    /// ZSET, trimmed to twice the duplicate window in notify.lua: a digest of type, title and
    /// text per notification sent, scored by its `reg_time` (s), to collapse MoviePilot's repeats.
    pub fn notify_recent(&self) -> String {
        format!("{}notify:recent", self.base)
    }

    /// STRING, PX = `notify.liveness_ttl_ms`: the process that polls MoviePilot (lock.lua).
    pub fn notify_lease(&self) -> String {
        format!("{}notify:lease", self.base)
    }

    /// LIST of at most one element, EX 60: a wake-up call arrived, the relay polls now. Written
    /// by the `/moviepilot/notify/<secret>` route, taken with BLPOP by the poller; holds no state.
    pub fn notify_wake(&self) -> String {
        format!("{}notify:wake", self.base)
    }

    /// The prefix of each person's own notices (issue 45, `/notify`): include/prefs.lua and
    /// quiet_end.lua derive the keys below from it.
    pub fn notice_prefix(&self) -> String {
        format!("{}notify:", self.base)
    }

    /// HASH, no expiry (one per person who used `/notify`): a Telegram user's own notices:
    /// `download`, `transfer`, `subscribe`, `site`, `other` = `all` | `mine` | `off` (no field:
    /// all), `quiet` = `HH:MM-HH:MM` in `commands.day_zone` (no field: none).
    pub fn notice_prefs(&self, user_id: i64) -> String {
        format!("{}prefs:{user_id}", self.notice_prefix())
    }

    /// STRING, EX = 2 days: notices sent silently to a person in the quiet night that began on
    /// `night` (`YYYY-MM-DD`); past `QUIET_NIGHT_MAX` they are held.
    pub fn notice_night(&self, user_id: i64, night: &str) -> String {
        format!("{}night:{user_id}:{night}", self.notice_prefix())
    }

    /// HASH, EX = 2 days: a person's notices held in quiet hours, count per category, until
    /// quiet_end.lua sums them up.
    pub fn notices_held_of(&self, user_id: i64) -> String {
        format!("{}held:{user_id}", self.notice_prefix())
    }

    /// ZSET, no expiry (one key, a member per person): whose held notices are summed up when,
    /// member = Telegram id, score = the end of their quiet hours (ms).
    pub fn notices_held(&self) -> String {
        format!("{}held", self.notice_prefix())
    }

    /// ZSET, expires with its newest member (`notify.requester_ttl_secs`): the chats that asked
    /// for one media through oncebot, member `<season>|<chat id>` (season 0: every season),
    /// scored by the member's expiry in ms (asked.lua). `digest` is `AskedMedia::digest`.
    pub fn asked(&self, digest: &str) -> String {
        format!("{}asked:{digest}", self.base)
    }

    /// HASH, no expiry (one key): the requester of each subscription oncebot created for a named
    /// user where MoviePilot keeps its own owner (v3), field `<id>:<tmdb id>:<season>`, removed
    /// when oncebot cancels it (`ledger/owners.rs`).
    pub fn owners(&self) -> String {
        format!("{}owners", self.base)
    }

    /// HASH, no expiry (one key): MoviePilot's own Telegram mapping as the last read found it,
    /// field = Telegram id, value = `<MoviePilot name>:<role>`, plus `state`, `refreshed_at`,
    /// `attempted_at`, `reading` and `by` (users.lua, users_turn.lua). Every ingress reads it.
    pub fn users_moviepilot(&self) -> String {
        format!("{}users:moviepilot", self.base)
    }

    /// HASH, no expiry (one key, a field per grant): the roles given from the chat (an admin's
    /// Allow, a claim) or with `oncebot users grant`, field = Telegram id, value =
    /// `<role>:<by>:<at ms>` (lua/include/grants.lua). Every ingress reads it with the mapping.
    pub fn users_granted(&self) -> String {
        format!("{}users:granted", self.base)
    }

    /// STRING, PX = one hour: the digest (SHA-256, hex) of the claim code while the directory
    /// gives nobody `admin`; created with SET NX, removed by the claim that spends it.
    pub fn claim_code(&self) -> String {
        format!("{}claim:code", self.base)
    }

    /// STRING counter, EX = one hour from the first: `/claim`s from one Telegram id that did not
    /// claim the bot (a wrong code), at most five an hour. Scripts append the id.
    pub fn claim_tries_prefix(&self) -> String {
        format!("{}claim:tries:", self.base)
    }

    /// HASH, PX = `household.access_request_window_secs` (and an hour more for its cards to be
    /// told it expired): one person's request for access and its cards. Scripts append the id.
    pub fn access_prefix(&self) -> String {
        format!("{}access:", self.base)
    }

    /// ZSET, at most `household.max_pending_access_requests` members: the pending requests'
    /// Telegram ids, scored by when each expires (ms).
    pub fn access_pending(&self) -> String {
        format!("{}pending:access", self.base)
    }

    /// HASH, PX = `household.request_ttl_secs` + 7 days while pending, 7 days from its
    /// decision after: one media request (issue 44; its fields: `lua/include/requests.lua`).
    /// Scripts append the id.
    pub fn request_prefix(&self) -> String {
        format!("{}request:", self.base)
    }

    /// The request's HASH.
    pub fn request(&self, id: u64) -> String {
        format!("{}{id}", self.request_prefix())
    }

    /// STRING counter: the last request id given.
    pub fn request_seq(&self) -> String {
        format!("{}seq:request", self.base)
    }

    /// ZSET: every pending request's id, scored by when it expires (ms): the admins' list and
    /// the expiry sweep.
    pub fn requests_pending(&self) -> String {
        format!("{}requests:pending", self.base)
    }

    /// ZSET, at most 50 members, PX = the newest's lifetime: one person's requests by when
    /// they asked (ms). Scripts append the Telegram id.
    pub fn requests_of_prefix(&self) -> String {
        format!("{}requests:of:", self.base)
    }

    /// One person's requests ([`Self::requests_of_prefix`]).
    pub fn requests_of(&self, user_id: i64) -> String {
        format!("{}{user_id}", self.requests_of_prefix())
    }

    /// STRING, PX = the request's ttl: the pending request of one person's ask (its business
    /// key's digest appended), so the same ask again points at it.
    pub fn requests_key_prefix(&self) -> String {
        format!("{}requests:key:", self.base)
    }

    /// ZSET, PX = 7 days from its newest slot: one person's weekly quota (issue 44): a member
    /// per slot a request (`r<id>`) or job (`j<id>`) holds or used, scored by when (ms).
    /// Scripts append the Telegram id.
    pub fn quota_prefix(&self) -> String {
        format!("{}quota:", self.base)
    }

    /// One person's weekly quota ([`Self::quota_prefix`]).
    pub fn quota(&self, user_id: i64) -> String {
        format!("{}{user_id}", self.quota_prefix())
    }

    /// The prefix of the chat indexes ([`Self::chat_jobs`]): a script that makes a job for
    /// another chat than the one it was called from builds the key from it.
    pub fn chat_prefix(&self) -> String {
        format!("{}chat:", self.base)
    }

    /// The prefix of the release lists ([`Self::releases`]).
    pub fn releases_prefix(&self) -> String {
        format!("{}releases:", self.base)
    }

    /// The prefix of the stored lists' pages ([`Self::pages`]).
    pub fn pages_prefix(&self) -> String {
        format!("{}pages:", self.base)
    }

    /// STRING, PX = one read's lease: the process reading MoviePilot's users now
    /// (users_turn.lua takes it, users.lua or unlock.lua ends it).
    pub fn users_refresh_lock(&self) -> String {
        format!("{}lock:users-refresh", self.base)
    }

    /// STRING, PX = a few probe intervals: a process's write probe (`redis_health`), written
    /// every few seconds to learn whether Redis takes writes; read by nothing.
    pub fn probe(&self, process: &str) -> String {
        format!("{}probe:{process}", self.base)
    }

    /// HASH, EX = `follow.max_days` once closed: a live card (issue 45), the job's reply message
    /// edited as the job's download or subscription moves (include/cards.lua opens it,
    /// card.lua steps it, reply_end.lua gives it its message). The id is the job's.
    pub fn card(&self, id: u64) -> String {
        format!("{}{id}", self.card_prefix())
    }

    /// The prefix of the cards ([`Self::card`]).
    pub fn card_prefix(&self) -> String {
        format!("{}card:", self.base)
    }

    /// ZSET, no expiry (one key): the cards still followed, member = card id, score = when
    /// following ends (ms).
    pub fn cards_open(&self) -> String {
        format!("{}cards:open", self.base)
    }

    /// The prefix of each person's cards ([`Self::cards_of`]): include/cards.lua derives it.
    pub fn cards_of_prefix(&self) -> String {
        format!("{}cards:of:", self.base)
    }

    /// ZSET, PX = 30 days after its newest card's end of following: one person's cards, member
    /// = card id, score = when it opened (ms), the newest 50 kept (include/cards.lua); `/mine`
    /// lists them.
    pub fn cards_of(&self, user_id: i64) -> String {
        format!("{}{user_id}", self.cards_of_prefix())
    }

    /// ZSET, expires with its last member: the chats with an open card of one media, member
    /// `<season>|<chat id>|<card id>`, scored by the card's end (ms); the relay sends them none
    /// of that media's subscription, download and 入库 notices. `digest` is `AskedMedia::digest`.
    pub fn following(&self, digest: &str) -> String {
        format!("{}following:{digest}", self.base)
    }

    /// STRING, PX = `follow.progress_poll_secs`: the process that polled for the cards last
    /// (follow_turn.lua): one poll per interval for the deployment.
    pub fn follow_lock(&self) -> String {
        format!("{}lock:follow", self.base)
    }

    /// HASH, no expiry (one key): where the follower's reading of the transfer history stands:
    /// `transfer_id`, the newest row read.
    pub fn follow_cursor(&self) -> String {
        format!("{}follow:cursor", self.base)
    }

    /// STRING: the next getUpdates offset of long polling.
    pub fn poll_offset(&self) -> String {
        format!("{}poll:offset", self.base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_carries_the_hash_tag_and_layout_version() {
        let k = Keys::new("oncebot");
        for key in [
            k.updates(7),
            k.command("ab"),
            k.job_seq(),
            k.users_moviepilot(),
            k.users_granted(),
            k.claim_code(),
            k.claim_tries_prefix(),
            k.access_prefix(),
            k.access_pending(),
            k.request(7),
            k.request_seq(),
            k.requests_pending(),
            k.requests_of(5),
            k.requests_key_prefix(),
            k.chat_prefix(),
            k.quota(5),
            k.releases_prefix(),
            k.pages_prefix(),
            k.users_refresh_lock(),
            k.job(42),
            k.jobs_stream(),
            k.replies_stream(),
            k.callbacks_stream(),
            k.token("ab"),
            k.token_group("cd"),
            k.chat_jobs(-100),
            k.jobs_index(),
            k.poll_offset(),
            k.retry_schedule(),
            k.media_lock(1, None),
            k.reply("1-0"),
            k.callbacks_stream(),
            k.review_index(),
            k.notice("credentials"),
            k.notice_told("credentials"),
            k.mp_login(),
            k.mp_account(),
            k.alive("host-1-abcd"),
            k.consumers(Stream::Jobs.group()),
            k.releases(3),
            k.pages(3),
            k.notify_position(),
            k.notify_seen(),
            k.notify_recent(),
            k.notify_lease(),
            k.notify_wake(),
            k.asked("ab12"),
            k.owners(),
            k.processes(),
            k.probe("host-1-abcd"),
            k.card(2),
            k.cards_open(),
            k.cards_of(5),
            k.notice_prefs(5),
            k.notice_night(5, "2026-12-07"),
            k.notices_held_of(5),
            k.notices_held(),
        ] {
            assert!(key.starts_with("{oncebot}:v1:"), "{key}");
        }
        assert_eq!(k.job(42), format!("{}42", k.job_prefix()));
        assert_eq!(k.token("ab"), format!("{}ab", k.token_prefix()));
        assert_eq!(k.token_group("cd"), format!("{}cd", k.token_group_prefix()));
        assert_eq!(k.command("ef"), format!("{}ef", k.command_prefix()));
        assert_eq!(k.chat_jobs(-5), format!("{}-5:jobs", k.chat_prefix()));
        assert_eq!(k.releases(3), format!("{}3", k.releases_prefix()));
        assert_eq!(k.pages(3), format!("{}3", k.pages_prefix()));
        assert_eq!(k.cards_of(5), format!("{}5", k.cards_of_prefix()));
        assert_eq!(
            k.cards_of(5),
            "{oncebot}:v1:cards:of:5",
            "as include/cards.lua builds it"
        );
        assert_eq!(k.notice_prefs(5), "{oncebot}:v1:notify:prefs:5");
        assert_eq!(
            k.notice_night(5, "2026-12-07"),
            "{oncebot}:v1:notify:night:5:2026-12-07",
            "as include/prefs.lua builds it"
        );
        assert_eq!(k.notices_held_of(5), "{oncebot}:v1:notify:held:5");
        assert_eq!(k.notices_held(), format!("{}held", k.notice_prefix()));
        assert_eq!(k.layout(), "{oncebot}:layout");
    }

    #[test]
    fn a_hundred_consecutive_update_ids_share_one_updates_hash() {
        let k = Keys::new("oncebot");
        assert_eq!(k.updates(123_456_789), "{oncebot}:v1:updates:1234567");
        assert_eq!(k.updates(123_456_700), k.updates(123_456_799));
        assert_ne!(k.updates(123_456_799), k.updates(123_456_800));
        assert_eq!(k.updates(0), "{oncebot}:v1:updates:0");
    }
}
