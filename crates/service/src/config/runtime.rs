//! `[runtime]`: how the process runs its tasks, and how many threads that means on this
//! machine.

use serde::Deserialize;

use super::{SettingError, Settings, env_name};

/// How the process runs its tasks.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeSettings {
    /// Threads of the async runtime; 0: one per CPU core. See `Settings::runtime_threads`.
    pub worker_threads: usize,
}

/// The cores this process may use (affinity and cgroup quota included): what "one thread per
/// core" counts.
pub fn cpu_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl Settings {
    /// Most threads `runtime.worker_threads` may ask for.
    pub const MAX_RUNTIME_THREADS: usize = 256;

    /// `runtime.worker_threads` as the runtime needs it: `None` for one thread per core
    /// ([`cpu_cores`]). Checked before anything starts, because every command runs on that
    /// runtime.
    pub fn runtime_threads(&self) -> Result<Option<usize>, SettingError> {
        match self.runtime.worker_threads {
            0 => Ok(None),
            n if n <= Self::MAX_RUNTIME_THREADS => Ok(Some(n)),
            n => Err(SettingError::new(
                "runtime.worker_threads",
                format!("is {n}, more than {}", Self::MAX_RUNTIME_THREADS),
                format!(
                    "set {} to 0 (one per CPU core) or a number of threads from 1 to {}",
                    env_name("runtime.worker_threads"),
                    Self::MAX_RUNTIME_THREADS
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::test_env::load;

    #[test]
    fn runtime_threads_default_to_one_per_core_and_are_bounded() {
        assert_eq!(load(&[]).unwrap().runtime_threads(), Ok(None));
        let one = load(&[("ONCEBOT__RUNTIME__WORKER_THREADS", "1")]).unwrap();
        assert_eq!(one.runtime_threads(), Ok(Some(1)));
        let many = load(&[("ONCEBOT__RUNTIME__WORKER_THREADS", "300")]).unwrap();
        let e = many.runtime_threads().unwrap_err();
        assert_eq!(e.key, "runtime.worker_threads");
        assert!(
            e.to_string().contains("ONCEBOT__RUNTIME__WORKER_THREADS"),
            "{e}"
        );
    }
}
