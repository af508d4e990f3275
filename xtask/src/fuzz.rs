//! `cargo xtask fuzz [TARGET] [--seconds N | --runs N]`: runs the fuzz targets of
//! `fuzz/` (cargo-fuzz with libFuzzer) on their seeds, installing
//! cargo-fuzz when it is missing. libFuzzer's instrumentation needs
//! unstable compiler flags: with the stable toolchain they are allowed
//! through `RUSTC_BOOTSTRAP=1`, for this build only.

use std::process::{Command, Stdio};

/// The fuzz targets, each a file the program reads (see fuzz/README.md).
pub const TARGETS: &[&str] = &[
    "character",
    "cache",
    "checkpoint",
    "mesh",
    "calibration",
    "session",
    "character_arbitrary",
    "input_script",
    "cli",
];

/// How long each target runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// Wall-clock seconds: for long runs by hand.
    Seconds(u64),
    /// A fixed number of inputs from a fixed seed: the same run every time
    /// (what CI uses, so it cannot fail by chance).
    Runs(u64),
}

/// Parses `[TARGET] [--seconds N | --runs N]`.
pub fn parse(args: &[String]) -> Result<(Vec<&'static str>, Budget), String> {
    let mut targets = Vec::new();
    let mut budget = Budget::Seconds(60);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--seconds" || a == "--runs" {
            let n = it.next().ok_or_else(|| format!("{a} needs a number"))?;
            let n = n
                .parse()
                .ok()
                .filter(|&s: &u64| s > 0)
                .ok_or_else(|| format!("{a} must be a positive whole number, got {n:?}"))?;
            budget = if a == "--runs" {
                Budget::Runs(n)
            } else {
                Budget::Seconds(n)
            };
        } else if let Some(t) = TARGETS.iter().find(|t| **t == a.as_str()) {
            targets.push(*t);
        } else {
            return Err(format!(
                "unknown fuzz target {a:?}: choose from {}",
                TARGETS.join(", ")
            ));
        }
    }
    if targets.is_empty() {
        targets = TARGETS.to_vec();
    }
    Ok((targets, budget))
}

/// Inputs for `target` in a run of `n`: every input of `character_arbitrary`
/// is a character that loads and is simulated (a few per second under the
/// sanitizer, where the text targets mostly stop at the parser), so it gets
/// a fiftieth.
fn runs(target: &str, n: u64) -> u64 {
    if target == "character_arbitrary" {
        (n / 50).max(1)
    } else {
        n
    }
}

pub fn run(args: &[String]) -> Result<(), String> {
    let (targets, budget) = parse(args)?;
    let root = crate::repo_root();
    let fuzz_dir = root.join("fuzz");
    let have = Command::new(crate::cargo())
        .args(["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !have {
        println!("xtask: installing cargo-fuzz (once)");
        let mut cmd = Command::new(crate::cargo());
        cmd.args(["install", "cargo-fuzz", "--locked"]);
        crate::run(cmd)?;
    }
    for target in targets {
        let corpus = fuzz_dir.join("corpus").join(target);
        let seeds = fuzz_dir.join("seeds").join(target);
        std::fs::create_dir_all(&corpus)
            .map_err(|e| format!("cannot create {}: {e}", corpus.display()))?;
        let mut cmd = Command::new(crate::cargo());
        cmd.current_dir(&fuzz_dir)
            .env("RUSTC_BOOTSTRAP", "1")
            .args(["fuzz", "run", "-O", target])
            .arg(&corpus);
        // A target may have no seeds (git keeps no empty folder).
        if seeds.is_dir() {
            cmd.arg(&seeds);
        }
        cmd.arg("--");
        // Keywords of the target's format (field names, OBJ and glTF keys),
        // so mutations reach past the parser into validation.
        let dict = fuzz_dir.join("dicts").join(format!("{target}.dict"));
        if dict.is_file() {
            cmd.arg(format!("-dict={}", dict.display()));
        }
        match budget {
            Budget::Seconds(s) => cmd.arg(format!("-max_total_time={s}")),
            Budget::Runs(n) => cmd.args([format!("-runs={}", runs(target, n)), "-seed=1".into()]),
        };
        cmd
            // A file that makes the loader allocate over 1 GiB or take
            // over 2 s is a finding, like a crash.
            .args(["-rss_limit_mb=1024", "-timeout=2", "-print_final_stats=1"]);
        crate::run(cmd)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn targets_and_seconds_are_read_and_bad_ones_refused() {
        assert_eq!(parse(&[]).unwrap(), (TARGETS.to_vec(), Budget::Seconds(60)));
        assert_eq!(
            parse(&s(&["cache", "--seconds", "5"])).unwrap(),
            (vec!["cache"], Budget::Seconds(5))
        );
        assert_eq!(
            parse(&s(&["--runs", "100"])).unwrap(),
            (TARGETS.to_vec(), Budget::Runs(100))
        );
        assert!(
            parse(&s(&["cash"]))
                .unwrap_err()
                .contains("unknown fuzz target")
        );
        assert!(parse(&s(&["--seconds", "0"])).is_err());
        assert!(parse(&s(&["--seconds"])).is_err());
    }
}
