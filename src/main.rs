//! The `oncebot` binary: parses the command line, loads settings, and hands over to the library.
//! Errors are printed once, as one line on stderr; stdout carries only a command's own output.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use oncebot::app::{self, Role, ServeOptions};
use oncebot::config::{Needs, Settings};
use oncebot::ledger::{JobFilter, JobState, Ledger, Resolution, Role as UserRole};

/// See the note on `mimalloc` in Cargo.toml.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A Telegram bot for MoviePilot that makes every command take effect once.
#[derive(Parser)]
#[command(name = "oncebot", version, about)]
struct Cli {
    /// A TOML file layered over config/default.toml; ONCEBOT__SECTION__KEY variables override both.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the bot: every role in this process, or the ones given with --role.
    Serve {
        /// Run only this role (repeatable): ingress, worker, dispatcher, notify (the relay of
        /// MoviePilot's notifications; needs notify.enabled).
        #[arg(long = "role", value_enum)]
        roles: Vec<RoleArg>,
        /// Take updates with getUpdates (long polling) instead of the webhook.
        #[arg(long)]
        poll: bool,
    },
    /// Look at the job ledger (needs only Redis).
    Jobs {
        #[command(subcommand)]
        command: JobsCmd,
    },
    /// Each allowed user, their role, MoviePilot name and where that came from
    /// (telegram.users, MoviePilot's own mapping or a grant, as stored in Redis); a bad
    /// telegram.users exits 2 with the entry and why, an unreadable Redis 1 after the setting's
    /// view. `grant` and `revoke` change a grant.
    Users {
        /// One JSON array instead of a table.
        #[arg(long, global = true)]
        json: bool,
        #[command(subcommand)]
        command: Option<UsersCmd>,
    },
    /// Check the deployment: the bot token, the webhook (or polling), Redis, MoviePilot and
    /// the admin chats, one line each, ✓ or ✗ with the fix. Exit 0 when all pass, 1 when one
    /// fails, 2 for a setting `serve` would refuse. Reads only: takes no updates, changes nothing.
    Doctor {
        /// Updates come by long polling (`serve --poll`): check that no webhook is set.
        #[arg(long)]
        poll: bool,
        /// One JSON object ({"ok", "checks": [{"name", "ok", "detail", "fix"}]}) instead of lines.
        #[arg(long)]
        json: bool,
        /// The most seconds any one check may take.
        #[arg(long, value_name = "SECS", default_value_t = 10,
              value_parser = clap::value_parser!(u64).range(1..=300))]
        timeout: u64,
    },
    /// Register, inspect or remove the webhook with Telegram (setWebhook, getWebhookInfo,
    /// deleteWebhook).
    Webhook {
        #[command(subcommand)]
        command: WebhookCmd,
    },
    /// Measure admission throughput and latency on a private Redis.
    Bench(oncebot_tools::bench::BenchArgs),
    /// Watch oncebot absorb a repeated update, a double tap and a worker crash, with simulated
    /// Telegram and MoviePilot (needs a Redis, or redis-server installed; touches no other keys).
    Demo,
}

#[derive(Subcommand)]
enum JobsCmd {
    /// Recent jobs, newest first.
    List {
        /// Only jobs in this state: pending, running, retry_wait, succeeded, failed, needs_review.
        #[arg(long, value_parser = parse_state)]
        status: Option<JobState>,
        /// Only jobs of this Telegram chat.
        #[arg(long, value_name = "ID", allow_negative_numbers = true)]
        chat: Option<i64>,
        /// At most this many jobs.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// One JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// One job with every field.
    Show {
        id: u64,
        /// One JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Settle a job waiting for a person (needs_review): succeeded, failed, or retry.
    Resolve {
        id: u64,
        /// What happened, as far as you found out at MoviePilot.
        #[arg(long = "as", value_enum)]
        decision: ResolutionArg,
        /// Who decided and why; kept in the job as resolution_note.
        #[arg(long, default_value = "")]
        note: String,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum UsersCmd {
    /// Give a Telegram id a role (viewer, requester, user or admin): it may use the bot from
    /// then on, as an admin's Allow in the chat makes it. telegram.users and MoviePilot's
    /// mapping still win where they map the id.
    Grant {
        #[arg(value_name = "TELEGRAM_ID")]
        user_id: i64,
        #[arg(value_parser = parse_role)]
        role: UserRole,
    },
    /// Take a grant back (telegram.allowed_users stays: it is not a grant).
    Revoke {
        #[arg(value_name = "TELEGRAM_ID")]
        user_id: i64,
    },
}

#[derive(Subcommand)]
enum WebhookCmd {
    /// setWebhook with telegram.webhook_url, the webhook secret, and allowed_updates
    /// message + callback_query.
    Set {
        /// How many connections Telegram may open at once (1-100).
        #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u8).range(1..=100))]
        max_connections: u8,
        /// Drop the updates Telegram is still holding for the bot.
        #[arg(long)]
        drop_pending_updates: bool,
    },
    /// getWebhookInfo: the URL, pending updates and the last delivery error.
    Info,
    /// deleteWebhook (needed before `serve --poll`).
    Delete {
        /// Drop the updates Telegram is still holding for the bot.
        #[arg(long)]
        drop_pending_updates: bool,
    },
}

/// `serve --role`'s values: [`Role`] as the command line spells it (clap is the binary's, not
/// the service's). The variants' doc lines are `--help`'s description of each value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum RoleArg {
    /// Receives updates (webhook, or long polling with --poll) and records them.
    Ingress,
    /// Runs jobs against MoviePilot.
    Worker,
    /// Delivers replies to Telegram.
    Dispatcher,
    /// Relays MoviePilot's notifications (needs notify.enabled).
    Notify,
}

impl From<RoleArg> for Role {
    fn from(role: RoleArg) -> Role {
        match role {
            RoleArg::Ingress => Role::Ingress,
            RoleArg::Worker => Role::Worker,
            RoleArg::Dispatcher => Role::Dispatcher,
            RoleArg::Notify => Role::Notify,
        }
    }
}

/// `jobs resolve --as`'s values: [`Resolution`] as the command line spells it, which is how
/// resolve.lua stores it (`Resolution::as_str`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ResolutionArg {
    Succeeded,
    Failed,
    Retry,
}

impl From<ResolutionArg> for Resolution {
    fn from(decision: ResolutionArg) -> Resolution {
        match decision {
            ResolutionArg::Succeeded => Resolution::Succeeded,
            ResolutionArg::Failed => Resolution::Failed,
            ResolutionArg::Retry => Resolution::Retry,
        }
    }
}

fn parse_state(s: &str) -> Result<JobState, String> {
    s.parse()
}

fn parse_role(s: &str) -> Result<UserRole, String> {
    s.parse()
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    #[cfg(feature = "failpoints")]
    let _failpoints = fail::FailScenario::setup();
    let settings = match Settings::load(cli.config.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("oncebot: {}", one_line(&e));
            return ExitCode::from(2);
        }
    };
    let mut log = settings.log.clone();
    if matches!(cli.command, Cmd::Demo) {
        // The transcript is the demo's output; oncebot's own info lines would bury it.
        // RUST_LOG still wins.
        log.level = "warn".into();
    }
    if matches!(cli.command, Cmd::Doctor { .. }) {
        // The checks' lines are the output; a login or a refusal is in them already.
        log.level = "off".into();
    }
    if matches!(cli.command, Cmd::Bench(_)) {
        // The in-process ingress would otherwise log every update it measures.
        log.level = oncebot_tools::bench::LOG_FILTER.to_string();
    }
    oncebot::telemetry::init(&log, settings.secrets());
    let threads = match settings.runtime_threads() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("oncebot: {e}");
            return ExitCode::from(2);
        }
    };
    let threads = match (&cli.command, threads) {
        (_, Some(n)) => n,
        (Cmd::Bench(args), None) if args.redis_url.is_none() => {
            oncebot_tools::bench::runtime_threads_beside_private_redis()
        }
        (_, None) => oncebot::config::cpu_cores(),
    };
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    runtime.worker_threads(threads);
    let runtime = match runtime.enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("oncebot: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(cli.command, settings));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // A setting to fix: a setting, a Redis that may evict oncebot's keys, a newer layout.
            let code = if e.downcast_ref::<oncebot::config::SettingError>().is_some()
                || e.downcast_ref::<oncebot::redis_policy::EvictionRefused>()
                    .is_some()
                || e.downcast_ref::<oncebot::versions::NewerLayout>().is_some()
            {
                2
            } else {
                1
            };
            eprintln!("oncebot: {}", one_line(&e));
            ExitCode::from(code)
        }
    }
}

async fn run(command: Cmd, settings: Settings) -> anyhow::Result<()> {
    match command {
        Cmd::Serve { roles, poll } => {
            let roles = roles.into_iter().map(Role::from).collect();
            app::serve(settings, ServeOptions { roles, poll }).await
        }
        Cmd::Jobs { command } => {
            settings.validate(Needs::default())?;
            let ledger = Ledger::connect(
                &settings,
                oncebot::i18n::Texts::new(settings.telegram.locale).for_ledger(),
            )?;
            match command {
                JobsCmd::List {
                    status,
                    chat,
                    limit,
                    json,
                } => {
                    let filter = JobFilter {
                        status,
                        chat_id: chat,
                        limit,
                    };
                    oncebot::admin::list(&ledger, &filter, json).await
                }
                JobsCmd::Show { id, json } => oncebot::admin::show(&ledger, id, json).await,
                JobsCmd::Resolve {
                    id,
                    decision,
                    note,
                    json,
                } => {
                    let decision = Resolution::from(decision);
                    oncebot::admin::resolve(&ledger, &settings, id, decision, &note, json).await
                }
            }
        }
        Cmd::Users { json, command } => match command {
            None => oncebot::admin::users(&settings, json).await,
            Some(UsersCmd::Grant { user_id, role }) => {
                oncebot::admin::change_grant(&settings, user_id, Some(role), json).await
            }
            Some(UsersCmd::Revoke { user_id }) => {
                oncebot::admin::change_grant(&settings, user_id, None, json).await
            }
        },
        Cmd::Doctor {
            poll,
            json,
            timeout,
        } => {
            // What `serve` with every role would refuse to start with.
            let all_roles = ServeOptions {
                roles: Vec::new(),
                poll,
            };
            settings.validate(all_roles.needs(settings.notify.enabled))?;
            let options = oncebot::doctor::Options {
                poll,
                json,
                timeout: std::time::Duration::from_secs(timeout),
            };
            oncebot::doctor::run(&settings, options).await
        }
        Cmd::Webhook { command } => {
            let needs = Needs {
                bot_api: true,
                webhook: matches!(command, WebhookCmd::Set { .. }),
                ..Needs::default()
            };
            settings.validate(needs)?;
            match command {
                WebhookCmd::Set {
                    max_connections,
                    drop_pending_updates,
                } => {
                    oncebot::admin::webhook_set(&settings, max_connections, drop_pending_updates)
                        .await
                }
                WebhookCmd::Info => oncebot::admin::webhook_info(&settings).await,
                WebhookCmd::Delete {
                    drop_pending_updates,
                } => oncebot::admin::webhook_delete(&settings, drop_pending_updates).await,
            }
        }
        Cmd::Bench(args) => oncebot_tools::bench::run(args).await,
        Cmd::Demo => oncebot_tools::demo::run(&settings).await,
    }
}

/// The error and its causes on one line, each cause once. `{:#}` alone repeats a cause whose
/// text the layer above already carries (a Redis error names its I/O error and also returns it
/// as its source), which printed "No such file or directory (os error 2)" three times.
fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;

    use super::*;

    /// Each value `--as` takes is the decision of that name, as resolve.lua stores it, and every
    /// decision has one.
    #[test]
    fn every_resolution_is_a_cli_value_of_its_own_name() {
        for decision in Resolution::ALL {
            let arg = ResolutionArg::from_str(decision.as_str(), false).unwrap();
            assert_eq!(Resolution::from(arg), decision);
        }
        assert_eq!(ResolutionArg::value_variants().len(), Resolution::ALL.len());
    }

    /// `--role` takes each role under its own name (what `serve --role worker` and the compose
    /// files spell) and no two values mean one role.
    #[test]
    fn each_role_value_is_its_own_role() {
        let roles: std::collections::HashSet<Role> = RoleArg::value_variants()
            .iter()
            .map(|&arg| Role::from(arg))
            .collect();
        assert_eq!(roles.len(), RoleArg::value_variants().len());
        for (name, role) in [
            ("ingress", Role::Ingress),
            ("worker", Role::Worker),
            ("dispatcher", Role::Dispatcher),
            ("notify", Role::Notify),
        ] {
            assert_eq!(Role::from(RoleArg::from_str(name, false).unwrap()), role);
        }
    }
}
