//! Which plasticine front-end `cargo xtask demo` runs.
//!
//! Order the product will use: OpenXR runtime present → `plasticine xr`; else a
//! display present (`$DISPLAY` or `$WAYLAND_DISPLAY`) → `plasticine desk`; else
//! headless (`plasticine render`, or `plasticine bake` while there is no renderer).
//!
//! A front-end is only chosen if this build of plasticine has the subcommand
//! ([`BUILD_FRONTENDS`]); today it has all three. When the chosen one fails
//! (a runtime that will not start a session, a display that will not open),
//! the demo goes on with the next ([`fallback`]): xr → desk (with a display)
//! → headless rendering. `plasticine xr` runs with `--fallback none` there,
//! so that this chain, not the binary, decides.

use std::env;
use std::path::PathBuf;

/// The scene the demo uses.
pub const DEMO_SCENE: &str = "assets/penguin.ron";
/// Where headless runs write their result (relative to the repository root).
pub const DEMO_OUT: &str = "out/demo";
/// The high-resolution sample the headless demo wraps, in [`DEMO_OUT`].
pub const HIRES_SCENE: &str = "penguin_64x64.ron";

/// What was detected about the machine.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EnvFacts {
    /// Path of the active OpenXR runtime manifest, if one was found.
    pub openxr_runtime: Option<PathBuf>,
    /// The display we would open (`$WAYLAND_DISPLAY` or `$DISPLAY`), if any.
    pub display: Option<String>,
}

/// Which front-end subcommands the plasticine binary has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frontends {
    pub xr: bool,
    pub desk: bool,
    pub render: bool,
}

/// The front-ends of the plasticine binary in this tree. Flip these as the
/// `xr`, `desk` and `render` subcommands land.
pub const BUILD_FRONTENDS: Frontends = Frontends {
    xr: true,
    desk: true,
    render: true,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frontend {
    Xr,
    Desk,
    HeadlessRender,
    HeadlessBake,
}

/// The front-end to run and a one-line reason.
pub fn choose_frontend(facts: &EnvFacts, build: Frontends) -> (Frontend, String) {
    let xr = match &facts.openxr_runtime {
        Some(path) if build.xr => {
            return (
                Frontend::Xr,
                format!("OpenXR runtime found ({}): running in XR", path.display()),
            );
        }
        Some(path) => format!("OpenXR runtime {} found", path.display()),
        None => "no OpenXR runtime".to_string(),
    };
    let display = match &facts.display {
        Some(d) if build.desk => {
            return (
                Frontend::Desk,
                format!("{xr}; display {d} found: running on the desktop"),
            );
        }
        Some(d) => format!("display {d} found"),
        None => "no display".to_string(),
    };
    if build.render {
        return (
            Frontend::HeadlessRender,
            format!("{xr}, {display}: rendering headless"),
        );
    }
    if !build.xr && !build.desk {
        return (
            Frontend::HeadlessBake,
            format!("no renderer yet in this build: baking headless ({xr}, {display})"),
        );
    }
    (
        Frontend::HeadlessBake,
        format!("{xr}, {display}, no headless renderer in this build: baking headless"),
    )
}

/// The front end to try after `failed` failed: the desk after the headset
/// when there is a display (and a desk in this build), else headless
/// rendering; nothing after headless.
pub fn fallback(failed: Frontend, facts: &EnvFacts, build: Frontends) -> Option<Frontend> {
    match failed {
        Frontend::Xr if facts.display.is_some() && build.desk => Some(Frontend::Desk),
        Frontend::Xr | Frontend::Desk if build.render => Some(Frontend::HeadlessRender),
        Frontend::Xr | Frontend::Desk => Some(Frontend::HeadlessBake),
        Frontend::HeadlessRender | Frontend::HeadlessBake => None,
    }
}

/// Where the headless demo writes its images.
pub const DEMO_FRAMES: &str = "out/demo/frames";

/// The plasticine runs of a front-end, in order, each with its arguments;
/// `extra` goes to the last (the front-end proper). Headless rendering first
/// bakes the sample's animation, then renders the bake.
pub fn plasticine_runs(frontend: Frontend, extra: &[String]) -> Vec<Vec<String>> {
    // The headless demo shows the skin at 64×64, the penguin wrapped at that
    // resolution (seconds on 2 cores); the interactive front ends open the
    // shipped 16×16 sample, which runs in real time.
    let hires = format!("{DEMO_OUT}/{HIRES_SCENE}");
    let sample: Vec<&str> = vec![
        "sample",
        "penguin",
        "--resolution",
        "64x64",
        "--out",
        &hires,
    ];
    let bake: &[&str] = &["bake", &hires, "--out", DEMO_OUT, "--obj", "10"];
    let cache = format!("{DEMO_OUT}/bake.plcache");
    let runs: Vec<Vec<&str>> = match frontend {
        Frontend::Xr => vec![vec!["xr", DEMO_SCENE, "--fallback", "none"]],
        Frontend::Desk => vec![vec!["desk", DEMO_SCENE]],
        Frontend::HeadlessRender => vec![
            sample.clone(),
            bake.to_vec(),
            vec![
                "render",
                &hires,
                "--baked",
                &cache,
                "--out",
                DEMO_FRAMES,
                "--orbit",
                "30",
                "--every",
                "2",
            ],
        ],
        Frontend::HeadlessBake => vec![sample.clone(), bake.to_vec()],
    };
    let last = runs.len() - 1;
    runs.into_iter()
        .enumerate()
        .map(|(k, run)| {
            let extra = if k == last { extra } else { &[] };
            run.iter()
                .map(|s| s.to_string())
                .chain(extra.iter().cloned())
                .collect()
        })
        .collect()
}

/// Detects the real facts about this machine.
pub fn detect() -> EnvFacts {
    EnvFacts {
        openxr_runtime: detect_openxr_runtime(),
        display: non_empty_var("WAYLAND_DISPLAY").or_else(|| non_empty_var("DISPLAY")),
    }
}

fn non_empty_var(name: &str) -> Option<String> {
    env::var(name).ok().filter(|v| !v.is_empty())
}

/// Where the OpenXR loader looks for the active runtime on Linux:
/// `$XR_RUNTIME_JSON`, then `active_runtime.json` under `$XDG_CONFIG_HOME`
/// (default `~/.config`), `$XDG_CONFIG_DIRS` (default `/etc/xdg`), and `/etc`.
fn detect_openxr_runtime() -> Option<PathBuf> {
    if let Some(p) = non_empty_var("XR_RUNTIME_JSON").map(PathBuf::from) {
        return p.is_file().then_some(p);
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    match non_empty_var("XDG_CONFIG_HOME") {
        Some(d) => dirs.push(d.into()),
        None => {
            if let Some(home) = non_empty_var("HOME") {
                dirs.push(PathBuf::from(home).join(".config"));
            }
        }
    }
    let config_dirs = non_empty_var("XDG_CONFIG_DIRS").unwrap_or_else(|| "/etc/xdg".into());
    dirs.extend(
        config_dirs
            .split(':')
            .filter(|s| !s.is_empty())
            .map(PathBuf::from),
    );
    dirs.push("/etc".into());
    dirs.into_iter()
        .map(|d| d.join("openxr/1/active_runtime.json"))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Frontends = Frontends {
        xr: true,
        desk: true,
        render: true,
    };
    const NONE: Frontends = Frontends {
        xr: false,
        desk: false,
        render: false,
    };

    fn facts(xr: bool, display: bool) -> EnvFacts {
        EnvFacts {
            openxr_runtime: xr.then(|| PathBuf::from("/etc/xdg/openxr/1/active_runtime.json")),
            display: display.then(|| ":0".to_string()),
        }
    }

    #[test]
    fn full_build_prefers_xr_then_desk_then_render() {
        assert_eq!(choose_frontend(&facts(true, true), ALL).0, Frontend::Xr);
        assert_eq!(choose_frontend(&facts(true, false), ALL).0, Frontend::Xr);
        assert_eq!(choose_frontend(&facts(false, true), ALL).0, Frontend::Desk);
        assert_eq!(
            choose_frontend(&facts(false, false), ALL).0,
            Frontend::HeadlessRender
        );
    }

    #[test]
    fn missing_subcommands_fall_through() {
        let no_xr = Frontends { xr: false, ..ALL };
        assert_eq!(choose_frontend(&facts(true, true), no_xr).0, Frontend::Desk);
        assert_eq!(
            choose_frontend(&facts(true, false), no_xr).0,
            Frontend::HeadlessRender
        );
        let render_only = Frontends {
            render: true,
            ..NONE
        };
        assert_eq!(
            choose_frontend(&facts(true, true), render_only).0,
            Frontend::HeadlessRender
        );
        let desk_only = Frontends { desk: true, ..NONE };
        assert_eq!(
            choose_frontend(&facts(false, false), desk_only).0,
            Frontend::HeadlessBake
        );
    }

    #[test]
    fn todays_build_prefers_xr_then_desk_then_headless() {
        let (frontend, why) = choose_frontend(&facts(true, true), BUILD_FRONTENDS);
        assert_eq!(frontend, Frontend::Xr);
        assert!(why.ends_with("running in XR"), "{why}");
        assert_eq!(
            choose_frontend(&facts(true, false), BUILD_FRONTENDS).0,
            Frontend::Xr
        );
        let (frontend, why) = choose_frontend(&facts(false, true), BUILD_FRONTENDS);
        assert_eq!(frontend, Frontend::Desk);
        assert!(why.ends_with("running on the desktop"), "{why}");
        let (frontend, why) = choose_frontend(&facts(false, false), BUILD_FRONTENDS);
        assert_eq!(frontend, Frontend::HeadlessRender);
        assert!(why.ends_with("rendering headless"), "{why}");
        assert!(!why.contains('\n'));
    }

    #[test]
    fn a_failed_front_end_falls_back_to_the_desk_then_headless() {
        let b = BUILD_FRONTENDS;
        assert_eq!(
            fallback(Frontend::Xr, &facts(true, true), b),
            Some(Frontend::Desk)
        );
        assert_eq!(
            fallback(Frontend::Xr, &facts(true, false), b),
            Some(Frontend::HeadlessRender)
        );
        assert_eq!(
            fallback(Frontend::Desk, &facts(false, true), b),
            Some(Frontend::HeadlessRender)
        );
        assert_eq!(
            fallback(Frontend::HeadlessRender, &facts(true, true), b),
            None
        );
        let no_render = Frontends { render: false, ..b };
        assert_eq!(
            fallback(Frontend::Desk, &facts(false, true), no_render),
            Some(Frontend::HeadlessBake)
        );
        // The chain ends: every step goes on to a later front end.
        let mut f = Frontend::Xr;
        let mut steps = 0;
        while let Some(next) = fallback(f, &facts(true, true), b) {
            f = next;
            steps += 1;
        }
        assert_eq!((f, steps), (Frontend::HeadlessRender, 2));
    }

    #[test]
    fn the_xr_demo_leaves_the_fallback_to_the_demo() {
        let runs = plasticine_runs(Frontend::Xr, &[]);
        assert_eq!(runs, [["xr", DEMO_SCENE, "--fallback", "none"]]);
    }

    #[test]
    fn headless_render_bakes_then_renders_the_bake() {
        let runs = plasticine_runs(Frontend::HeadlessRender, &["--size".into(), "64x64".into()]);
        assert_eq!(runs.len(), 3);
        assert_eq!(runs[0][..4], ["sample", "penguin", "--resolution", "64x64"]);
        assert_eq!(runs[1][0], "bake");
        assert_eq!(runs[2][0], "render");
        let baked = runs[2]
            .iter()
            .position(|a| a == "--baked")
            .expect("--baked");
        assert_eq!(runs[2][baked + 1], "out/demo/bake.plcache");
        assert_eq!(runs[2][1], "out/demo/penguin_64x64.ron");
        assert_eq!(&runs[2][runs[2].len() - 2..], ["--size", "64x64"]);
        assert!(!runs[0].contains(&"--size".to_string()));
        assert!(!runs[1].contains(&"--size".to_string()));
    }

    #[test]
    fn reason_reports_detected_facts() {
        let (_, why) = choose_frontend(&facts(false, true), NONE);
        assert!(why.contains("no OpenXR runtime"), "{why}");
        assert!(why.contains("display :0 found"), "{why}");
        let (_, why) = choose_frontend(&facts(true, false), NONE);
        assert!(why.contains("active_runtime.json found"), "{why}");
        assert!(why.contains("no display"), "{why}");
    }

    #[test]
    fn bake_args_then_extra_args() {
        let extra = vec!["--duration".to_string(), "1".to_string()];
        let runs = plasticine_runs(Frontend::HeadlessBake, &extra);
        assert_eq!(
            runs[0],
            [
                "sample",
                "penguin",
                "--resolution",
                "64x64",
                "--out",
                "out/demo/penguin_64x64.ron"
            ]
        );
        assert_eq!(
            runs[1],
            [
                "bake",
                "out/demo/penguin_64x64.ron",
                "--out",
                "out/demo",
                "--obj",
                "10",
                "--duration",
                "1"
            ]
        );
        assert_eq!(
            plasticine_runs(Frontend::HeadlessBake, &[])[1],
            [
                "bake",
                "out/demo/penguin_64x64.ron",
                "--out",
                "out/demo",
                "--obj",
                "10"
            ]
        );
    }
}
