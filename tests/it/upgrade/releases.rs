//! The two releases the upgrade test runs side by side: the old one that `scripts/upgrade-test`
//! built from the base tag's tree, and this tree's binary.

use std::collections::BTreeSet;
use std::path::PathBuf;

/// One build of oncebot: its binary, and the settings it knows (`None`: every one this tree's
/// `config/default.toml` has).
pub struct Release {
    pub name: String,
    exe: PathBuf,
    known: Option<BTreeSet<String>>,
}

impl Release {
    /// The old release `scripts/upgrade-test` built: `ONCEBOT_OLD_BINARY`, its tree
    /// `ONCEBOT_OLD_TREE` and its name `ONCEBOT_OLD_NAME`. Fails (never skips) without them: a
    /// run that cannot test the upgrade must not pass as one that did.
    pub fn old() -> Release {
        let var = |name: &str| {
            std::env::var(name).unwrap_or_else(|_| {
                panic!(
                    "{name} is not set: the upgrade test runs the old release's binary, which \
                     scripts/upgrade-test builds (run that script, not this test alone)"
                )
            })
        };
        let exe = PathBuf::from(var("ONCEBOT_OLD_BINARY"));
        assert!(
            exe.is_file(),
            "ONCEBOT_OLD_BINARY {} is no file",
            exe.display()
        );
        let defaults = PathBuf::from(var("ONCEBOT_OLD_TREE")).join("config/default.toml");
        let text = std::fs::read_to_string(&defaults)
            .unwrap_or_else(|e| panic!("reading {}: {e}", defaults.display()));
        Release {
            name: var("ONCEBOT_OLD_NAME"),
            exe,
            known: Some(settings_in(&text)),
        }
    }

    /// This tree's binary, the one the rest of the suite runs.
    pub fn new() -> Release {
        Release {
            name: format!("HEAD ({})", env!("CARGO_PKG_VERSION")),
            exe: PathBuf::from(env!("CARGO_BIN_EXE_oncebot")),
            known: None,
        }
    }

    pub fn exe(&self) -> &PathBuf {
        &self.exe
    }

    /// `env` as this release may be given it. An old release's settings are
    /// `deny_unknown_fields`: a setting added since would stop it at start-up, so it gets only
    /// the `ONCEBOT__SECTION__KEY` variables whose `[section] key` its own
    /// `config/default.toml` has (read from its tree, as an operator's environment written for
    /// that release would be). Other variables (RUST_LOG) pass as they are.
    pub fn env(&self, env: &[(String, String)]) -> Vec<(String, String)> {
        let Some(known) = &self.known else {
            return env.to_vec();
        };
        env.iter()
            .filter(|(name, _)| match name.strip_prefix("ONCEBOT__") {
                Some(setting) => known.contains(&setting.to_lowercase().replace("__", ".")),
                None => true,
            })
            .cloned()
            .collect()
    }
}

/// Every `section.key` a `config/default.toml` sets: its `[section]` headers and the `key =`
/// lines under them (the file is flat, one table per section, no inline tables).
fn settings_in(default_toml: &str) -> BTreeSet<String> {
    let mut section = String::new();
    let mut out = BTreeSet::new();
    for line in default_toml.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim().to_string();
        } else if let Some((key, _)) = line.split_once('=')
            && !line.starts_with('#')
            && !section.is_empty()
        {
            out.insert(format!("{section}.{}", key.trim()));
        }
    }
    out
}

#[test]
fn the_settings_of_a_default_toml_are_its_section_keys() {
    let text = "# a = 1\n[redis]\nurl = \"redis://x\" # c\n\n[notify]\n# min_poll_gap_ms = 5\nmax_pages = 10\n";
    let known = settings_in(text);
    assert_eq!(
        known.into_iter().collect::<Vec<_>>(),
        ["notify.max_pages", "redis.url"]
    );
    let old = Release {
        name: "old".into(),
        exe: PathBuf::new(),
        known: Some(settings_in(text)),
    };
    let env = [
        ("ONCEBOT__REDIS__URL".to_string(), "u".to_string()),
        ("ONCEBOT__NOTIFY__MIN_POLL_GAP_MS".into(), "0".into()),
        ("RUST_LOG".into(), "info".into()),
    ];
    let names: Vec<_> = old.env(&env).into_iter().map(|(k, _)| k).collect();
    assert_eq!(names, ["ONCEBOT__REDIS__URL", "RUST_LOG"]);
    // This tree's own file parses to settings this tree knows.
    let here = settings_in(include_str!("../../../config/default.toml"));
    assert!(here.contains("notify.min_poll_gap_ms") && here.contains("redis.url"));
}
