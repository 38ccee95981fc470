//! The README's Quick start names two commands; the second, `scripts/test`, holds the test
//! command, and `.ci/run` runs that same script (not a copy of its command), so CI and a new user
//! on a fresh machine run one thing.

const README: &str = include_str!("../../README.md");
const SCRIPT: &str = include_str!("../../scripts/test");
const CI: &str = include_str!("../../.ci/run");

/// The command `scripts/test` runs, as its `TEST_CMD=(...)` line spells it.
fn script_test_command() -> String {
    let line = SCRIPT
        .lines()
        .find_map(|l| l.strip_prefix("TEST_CMD=("))
        .expect("scripts/test has a TEST_CMD=(...) line");
    line.strip_suffix(')')
        .expect("TEST_CMD=(...) closes on its line")
        .to_owned()
}

/// The lines of the first ```sh block under "## Quick start", without comments.
fn quick_start_commands() -> Vec<String> {
    let section = README
        .split("\n## Quick start\n")
        .nth(1)
        .expect("the README has a Quick start section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the Quick start opens with a sh block");
    block
        .lines()
        .map(|l| l.split(" #").next().unwrap_or(l).trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn readme_quick_start_is_the_demo_then_scripts_test() {
    assert_eq!(
        quick_start_commands(),
        ["cargo run --release -- demo", "scripts/test"]
    );
}

#[test]
fn readme_names_the_test_command_scripts_test_runs() {
    let command = script_test_command();
    assert_eq!(
        command, "cargo nextest run --features failpoints --no-fail-fast",
        "scripts/test runs the suite with failpoints and every failure shown"
    );
    let quick_start = README.split("\n## Quick start\n").nth(1).unwrap();
    let quick_start = quick_start.split("\n## ").next().unwrap();
    assert!(
        quick_start
            .replace('\n', " ")
            .contains(&format!("`{command}`")),
        "the Quick start says what scripts/test runs: `{command}`"
    );
}

#[test]
fn ci_runs_scripts_test_not_its_own_test_command() {
    let commands: Vec<&str> = CI
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .collect();
    let install = commands
        .iter()
        .position(|l| *l == "scripts/test --install-only")
        .expect(".ci/run installs through scripts/test --install-only");
    let clippy = commands
        .iter()
        .position(|l| l.starts_with("cargo clippy"))
        .expect(".ci/run runs clippy");
    let test = commands
        .iter()
        .position(|l| *l == "scripts/test")
        .expect(".ci/run runs scripts/test");
    assert!(
        install < clippy && clippy < test,
        "install, clippy, then the tests"
    );
    assert!(
        !CI.contains("nextest run"),
        ".ci/run keeps no copy of the test command; scripts/test holds it"
    );
}

/// `.ci/run` runs the upgrade test after the suite, and the script runs the ignored test by the
/// module it lives in (a renamed module would otherwise run nothing and pass).
#[test]
fn ci_runs_the_upgrade_test_after_the_suite() {
    const UPGRADE: &str = include_str!("../../scripts/upgrade-test");
    let commands: Vec<&str> = CI.lines().map(str::trim).collect();
    let test = commands.iter().position(|l| *l == "scripts/test");
    let upgrade = commands.iter().position(|l| *l == "scripts/upgrade-test");
    assert!(
        matches!((test, upgrade), (Some(t), Some(u)) if t < u),
        ".ci/run runs scripts/upgrade-test after scripts/test"
    );
    assert!(UPGRADE.contains("--run-ignored only") && UPGRADE.contains("-E 'test(/upgrade::/)'"));
    assert!(
        include_str!("upgrade/mod.rs").contains("async fn a_rolling_upgrade_under_load"),
        "the upgrade test lives in tests/it/upgrade/"
    );
}
