//! `[http]`: the listener every process serves (probes, and ingress's doors), and the limits
//! that keep a slow or greedy client from holding it.

use std::net::SocketAddr;

use serde::Deserialize;

use super::{SettingError, Settings, env_name, nonzero};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSettings {
    pub listen: String,
    /// Bodies above this are refused with 413 before they are parsed.
    pub max_body_bytes: u64,
    /// A request's head must arrive whole within this after its first byte (or the connection's
    /// start): a client that sends half a request line is dropped, not waited for.
    pub header_read_timeout_secs: u64,
    /// A kept-alive connection with no request in flight is closed after this.
    pub idle_timeout_secs: u64,
    /// Connections served at once per listener; beyond it new ones wait in the listen backlog.
    pub max_connections: u32,
}

impl HttpSettings {
    /// The parsed `http.listen`.
    pub fn listen_addr(&self) -> Result<SocketAddr, std::net::AddrParseError> {
        self.listen.parse()
    }

    /// For the roles that take updates: the listener.
    pub(super) fn validate(&self) -> Result<(), SettingError> {
        if self.listen_addr().is_err() {
            return Err(SettingError::new(
                "http.listen",
                format!("is {:?}, not an address", self.listen),
                format!("set {} to e.g. 0.0.0.0:8080", env_name("http.listen")),
            ));
        }
        if self.max_body_bytes < 1024 {
            return Err(SettingError::new(
                "http.max_body_bytes",
                format!("is {}, too small for any update", self.max_body_bytes),
                format!("set {} to e.g. 1048576", env_name("http.max_body_bytes")),
            ));
        }
        Ok(())
    }

    /// For every process (each serves `http.listen`, and `admin.listen` takes the same limits):
    /// no limit may be 0, which would close every connection or accept none.
    pub(super) fn validate_limits(&self) -> Result<(), SettingError> {
        nonzero(
            &[
                (
                    "http.header_read_timeout_secs",
                    self.header_read_timeout_secs,
                ),
                ("http.idle_timeout_secs", self.idle_timeout_secs),
                ("http.max_connections", u64::from(self.max_connections)),
            ],
            ", which would leave no connection served",
            "a positive number (defaults: 10, 60 and 1024)",
        )
    }
}

impl Settings {
    /// The parsed `http.listen`.
    pub fn listen_addr(&self) -> Result<SocketAddr, std::net::AddrParseError> {
        self.http.listen_addr()
    }
}

#[cfg(test)]
mod tests {
    use crate::config::test_env::load;
    use crate::config::{Needs, env_name};

    #[test]
    fn http_limits_default_to_10_60_1024_and_0_is_refused_by_name() {
        let s = load(&[]).unwrap();
        assert_eq!(s.http.header_read_timeout_secs, 10);
        assert_eq!(s.http.idle_timeout_secs, 60);
        assert_eq!(s.http.max_connections, 1024);
        for key in [
            "http.header_read_timeout_secs",
            "http.idle_timeout_secs",
            "http.max_connections",
        ] {
            let var = env_name(key);
            // Every process serves http.listen, so every role's check refuses it.
            let e = load(&[(var.as_str(), "0")])
                .unwrap()
                .validate(Needs::default())
                .unwrap_err();
            assert_eq!(e.key, key);
            assert!(e.to_string().contains(&var), "{e}");
        }
    }
}
