//! For the settings' tests: settings loaded from a given environment (never the process's),
//! and the environments and `Needs` of the roles the tests check. Its own file because every
//! section's tests use it.

use super::{Needs, Settings};

pub(super) fn load(env: &[(&str, &str)]) -> anyhow::Result<Settings> {
    Settings::load_from(
        None,
        env.iter().map(|(k, v)| (k.to_string(), v.to_string())),
    )
}

pub(super) fn serving_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("ONCEBOT__TELEGRAM__TOKEN", "123:abc-DEF_ghi"),
        ("ONCEBOT__TELEGRAM__WEBHOOK_SECRET", "s3cret_-0123456789"),
        ("ONCEBOT__TELEGRAM__ALLOWED_USERS", "1, 2,3"),
    ]
}

pub(super) const ALL: Needs = Needs {
    ingress: true,
    webhook: true,
    bot_api: true,
    moviepilot: false,
    dispatcher: true,
    notify: false,
};

pub(super) const WORKER: Needs = Needs {
    ingress: false,
    webhook: false,
    bot_api: false,
    moviepilot: true,
    dispatcher: false,
    notify: false,
};

pub(super) const NOTIFY: Needs = Needs {
    ingress: false,
    webhook: false,
    bot_api: false,
    moviepilot: false,
    dispatcher: false,
    notify: true,
};

pub(super) fn notify_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("ONCEBOT__MOVIEPILOT__URL", "http://127.0.0.1:3001"),
        ("ONCEBOT__MOVIEPILOT__API_KEY", "k"),
        ("ONCEBOT__NOTIFY__ENABLED", "true"),
        ("ONCEBOT__TELEGRAM__ADMIN_CHATS", "42"),
    ]
}
