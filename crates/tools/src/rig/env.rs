//! The `ONCEBOT__*` environment of an oncebot wired to a Redis and the simulators. Every user
//! of the rig starts from here and sets what its scene needs on top.

use oncebot::config::Settings;

use crate::sim::moviepilot::{MoviePilotSim, SimOptions};
use crate::sim::telegram::TelegramSim;

/// `ONCEBOT__*` variables, in order, each name at most once (a later [`OncebotEnv::set`]
/// replaces an earlier one).
#[derive(Clone, Debug, Default)]
pub struct OncebotEnv {
    vars: Vec<(String, String)>,
}

impl OncebotEnv {
    /// Redis at `redis_url`, HTTP on a port of the system's choosing.
    pub fn new(redis_url: &str) -> OncebotEnv {
        OncebotEnv::default()
            .set("ONCEBOT__REDIS__URL", redis_url)
            .set("ONCEBOT__HTTP__LISTEN", "127.0.0.1:0")
    }

    /// Sets one variable, replacing an earlier value.
    pub fn set(mut self, key: &str, value: impl Into<String>) -> OncebotEnv {
        self.vars.retain(|(k, _)| k != key);
        self.vars.push((key.to_string(), value.into()));
        self
    }

    /// Sets each of `vars`, in order.
    pub fn set_all<K: AsRef<str>, V: Into<String>>(
        mut self,
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> OncebotEnv {
        for (k, v) in vars {
            self = self.set(k.as_ref(), v);
        }
        self
    }

    /// The Bot API at `tg`, with its token.
    pub fn telegram(self, tg: &TelegramSim) -> OncebotEnv {
        self.set("ONCEBOT__TELEGRAM__API_URL", tg.url())
            .set("ONCEBOT__TELEGRAM__TOKEN", tg.token())
    }

    /// MoviePilot at `mp`, with the login it accepts.
    pub fn moviepilot(self, mp: &MoviePilotSim) -> OncebotEnv {
        self.set("ONCEBOT__MOVIEPILOT__URL", mp.url())
            .set(
                "ONCEBOT__MOVIEPILOT__USERNAME",
                mp.options().username.clone(),
            )
            .set(
                "ONCEBOT__MOVIEPILOT__PASSWORD",
                mp.options().password.clone(),
            )
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn vars(&self) -> &[(String, String)] {
        &self.vars
    }

    /// The settings the binary would load from exactly this environment.
    pub fn settings(&self) -> anyhow::Result<Settings> {
        Settings::load_from(None, self.vars.clone())
    }
}

/// Both simulated servers: what "oncebot plus simulators" needs besides a Redis.
pub struct Sims {
    pub mp: MoviePilotSim,
    pub tg: TelegramSim,
}

impl Sims {
    /// A MoviePilot simulator behaving as `opts` says and a default Bot API simulator.
    pub async fn start(opts: SimOptions) -> anyhow::Result<Sims> {
        Ok(Sims {
            mp: MoviePilotSim::try_start(opts).await?,
            tg: TelegramSim::start().await?,
        })
    }

    /// [`OncebotEnv::new`] wired to both simulators.
    pub fn env(&self, redis_url: &str) -> OncebotEnv {
        Sims::env_of(&self.mp, &self.tg, redis_url)
    }

    /// The same for simulators held apart (a scene that keeps them in fields of its own).
    pub fn env_of(mp: &MoviePilotSim, tg: &TelegramSim, redis_url: &str) -> OncebotEnv {
        OncebotEnv::new(redis_url).telegram(tg).moviepilot(mp)
    }
}
