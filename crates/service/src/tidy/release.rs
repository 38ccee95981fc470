//! One release, named alike everywhere an operator meets it (issue 46): the crate's version
//! (`oncebot --version`, the registry in Redis), the compose file's image tag and the
//! CHANGELOG's newest release. The git tag `v<version>` is made from the same commit; a clone
//! may lack tags, so it is not checked here.

use super::workspace_root;

fn read(name: &str) -> String {
    let path = workspace_root().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_compose_image_is_tagged_with_the_version() {
    let version = env!("CARGO_PKG_VERSION");
    let compose = read("docker-compose.yml");
    let images: Vec<&str> = compose
        .lines()
        .filter_map(|l| l.trim().strip_prefix("image: oncebot:"))
        .collect();
    assert_eq!(
        images,
        [version],
        "docker-compose.yml's oncebot image must be tagged `oncebot:{version}`, the crate's version"
    );
}

#[test]
fn the_changelogs_newest_release_is_the_version() {
    let version = env!("CARGO_PKG_VERSION");
    let changelog = read("CHANGELOG.md");
    let newest = changelog
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .find(|h| h.starts_with(|c: char| c.is_ascii_digit()))
        .expect("CHANGELOG.md has a release heading (`## X.Y.Z - date`)");
    assert!(
        newest.starts_with(&format!("{version} ")) || newest == version,
        "CHANGELOG.md's newest release is `{newest}`, the crate's version {version}: \
         cut the release's section, or bump the version"
    );
}
