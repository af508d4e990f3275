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

/// What `cargo xtask fuzz` was asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub targets: Vec<&'static str>,
    pub budget: Budget,
    /// AddressSanitizer on (the default, and what CI runs). `--no-sanitizer`
    /// turns it off for long runs: about 3x the inputs per second, where
    /// the code fuzzed is safe Rust (a panic, a timeout and the memory limit
    /// are still caught; only out-of-bounds access in `unsafe` code would go
    /// unseen). It builds into a target folder of its own, so neither build
    /// undoes the other.
    pub sanitizer: bool,
}

/// Parses `[TARGET...] [--seconds N | --runs N] [--no-sanitizer]`.
pub fn parse(mut args: pico_args::Arguments) -> Result<Request, String> {
    let sanitizer = !args.contains("--no-sanitizer");
    let mut count = |flag: &'static str| -> Result<Option<u64>, String> {
        match args.opt_value_from_str::<_, String>(flag) {
            Err(e) => Err(e.to_string()),
            Ok(None) => Ok(None),
            Ok(Some(n)) => n
                .parse()
                .ok()
                .filter(|&n: &u64| n > 0)
                .map(Some)
                .ok_or_else(|| format!("{flag} must be a positive whole number, got {n:?}")),
        }
    };
    let (seconds, runs) = (count("--seconds")?, count("--runs")?);
    let budget = match (seconds, runs) {
        (Some(_), Some(_)) => return Err("give --seconds or --runs, not both".into()),
        (_, Some(n)) => Budget::Runs(n),
        (s, None) => Budget::Seconds(s.unwrap_or(60)),
    };
    let mut targets = Vec::new();
    for a in crate::rest(args)? {
        match TARGETS.iter().find(|t| **t == a) {
            Some(t) => targets.push(*t),
            None => {
                return Err(format!(
                    "unknown fuzz target {a:?}: choose from {}",
                    TARGETS.join(", ")
                ));
            }
        }
    }
    if targets.is_empty() {
        targets = TARGETS.to_vec();
    }
    Ok(Request {
        targets,
        budget,
        sanitizer,
    })
}

/// CI's run: every target from a fixed seed, 20,000 inputs each, but 800
/// for `character_arbitrary`, whose every input is a character that loads
/// and is simulated (13 a second under the sanitizer, where the text
/// targets mostly stop at the parser): about a minute each.
pub fn ci() -> Result<(), String> {
    let (slow, fast): (Vec<&str>, Vec<&str>) =
        TARGETS.iter().partition(|t| **t == "character_arbitrary");
    for (targets, runs) in [(fast, 20_000), (slow, 800)] {
        run(&Request {
            targets,
            budget: Budget::Runs(runs),
            sanitizer: true,
        })?;
    }
    Ok(())
}

/// Runs each of the requested targets for its budget.
pub fn run(request: &Request) -> Result<(), String> {
    let Request {
        targets,
        budget,
        sanitizer,
    } = request;
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
        // Unoptimised: it only starts cargo and libFuzzer, and builds in
        // 32 s instead of 51 s on two cores (CI installs it every run).
        cmd.args(["install", "--debug", "cargo-fuzz", "--locked"]);
        crate::run(cmd)?;
    }
    for &target in targets {
        let corpus = fuzz_dir.join("corpus").join(target);
        let seeds = fuzz_dir.join("seeds").join(target);
        std::fs::create_dir_all(&corpus)
            .map_err(|e| format!("cannot create {}: {e}", corpus.display()))?;
        let mut cmd = Command::new(crate::cargo());
        cmd.current_dir(&fuzz_dir)
            .env("RUSTC_BOOTSTRAP", "1")
            .args(["fuzz", "run", "-O", target]);
        if !sanitizer {
            let dir = fuzz_dir.join("target").join("no-sanitizer");
            cmd.args(["--sanitizer", "none", "--target-dir"]).arg(dir);
        }
        cmd.arg(&corpus);
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
        match *budget {
            Budget::Seconds(s) => cmd.arg(format!("-max_total_time={s}")),
            Budget::Runs(n) => cmd.args([format!("-runs={n}"), "-seed=1".into()]),
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

    fn s(v: &[&str]) -> pico_args::Arguments {
        pico_args::Arguments::from_vec(v.iter().map(Into::into).collect())
    }

    fn asked(targets: &[&'static str], budget: Budget) -> Request {
        Request {
            targets: targets.to_vec(),
            budget,
            sanitizer: true,
        }
    }

    #[test]
    fn targets_and_seconds_are_read_and_bad_ones_refused() {
        assert_eq!(parse(s(&[])).unwrap(), asked(TARGETS, Budget::Seconds(60)));
        assert_eq!(
            parse(s(&["cache", "--seconds", "5"])).unwrap(),
            asked(&["cache"], Budget::Seconds(5))
        );
        assert_eq!(
            parse(s(&["--runs", "100"])).unwrap(),
            asked(TARGETS, Budget::Runs(100))
        );
        assert_eq!(
            parse(s(&["character_arbitrary", "--no-sanitizer", "--runs", "9"])).unwrap(),
            Request {
                sanitizer: false,
                ..asked(&["character_arbitrary"], Budget::Runs(9))
            }
        );
        assert!(
            parse(s(&["cash"]))
                .unwrap_err()
                .contains("unknown fuzz target")
        );
        assert!(parse(s(&["--seconds", "0"])).is_err());
        assert!(parse(s(&["--seconds"])).is_err());
        assert!(parse(s(&["--seconds", "5", "--runs", "5"])).is_err());
        assert_eq!(
            parse(s(&["--runs", "7", "mesh", "cli"])).unwrap(),
            asked(&["mesh", "cli"], Budget::Runs(7)),
            "options may come before the targets"
        );
    }
}
