//! Finds a built example binary (`target/<profile>/examples/NAME`) for tests that run
//! it, refusing a missing or stale one.
//!
//! `cargo test` builds the examples before it runs integration tests, but
//! `cargo test --test X` alone does not: build them first with `cargo build --examples`.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// `target/<profile>/deps/TEST-…` → `target/<profile>/examples/name`, checked.
pub fn example_path(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir =
        exe.parent().and_then(Path::parent).expect("test binary lives in target/<profile>/deps");
    let examples = profile_dir.join("examples");
    let path = examples.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "the {name} example was not found at {}; build it first with `cargo build --example {name}` \
         (plain `cargo test` builds examples automatically)",
        path.display()
    );
    if let Some(source) = newer_source(&path, &examples.join(format!("{name}.d"))) {
        panic!(
            "{} is older than {}; rebuild it with `cargo build --example {name}`",
            path.display(),
            source.display()
        );
    }
    path
}

/// A source file listed in the binary's dep-info file that changed after the binary was
/// built (what would make cargo rebuild it), if any.
fn newer_source(binary: &Path, dep_info: &Path) -> Option<PathBuf> {
    let built = std::fs::metadata(binary).and_then(|m| m.modified()).ok()?;
    let info = std::fs::read_to_string(dep_info).ok()?;
    // First line: `target: dep dep …`, spaces inside paths escaped as `\ `.
    let (_, deps) = info.lines().next()?.split_once(": ")?;
    let modified =
        |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).unwrap_or(SystemTime::UNIX_EPOCH);
    deps.replace("\\ ", "\0")
        .split_whitespace()
        .map(|dep| PathBuf::from(dep.replace('\0', " ")))
        .find(|dep| modified(dep) > built)
}
