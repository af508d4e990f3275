//! The command line: every subcommand, option and value parser of
//! `plasticine` (`plasticine::cli`, the command line's module), given an
//! argument list from the fuzzer's bytes (split at NUL bytes; arguments
//! need not be UTF-8). Parsing must end in a command or in clap's error,
//! whose message (usage, suggestions) must render; nothing runs.
#![no_main]

use clap::Parser;
use libfuzzer_sys::fuzz_target;
use plasticine::cli;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

/// Arguments past which an input is cut (a command line is short).
const MAX_ARGS: usize = 64;

fuzz_target!(|data: &[u8]| {
    let args = std::iter::once(OsString::from("plasticine")).chain(
        data.split(|&b| b == 0)
            .take(MAX_ARGS)
            .map(|a| OsString::from_vec(a.to_vec())),
    );
    if let Err(e) = cli::Cli::try_parse_from(args) {
        let _ = e.render().to_string();
    }
});
