//! Value parsers and the choices (enums) the subcommands share.

use anyhow::Result;

#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum DeskStereo {
    /// Red/cyan glasses on any monitor.
    Anaglyph,
    /// Left eye in the left half (3D monitors and TVs).
    SideBySide,
    /// Left eye in the top half.
    TopBottom,
    /// No stereo.
    Mono,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum DeskTracker {
    /// `OpenXR` if it is there, else none (says which).
    Auto,
    /// `OpenXR`, or fail saying why not.
    Openxr,
    /// The calibration's fixed head and the mouse.
    None,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum ToolArg {
    Select,
    Sphere,
    Superellipse,
    Deform,
    Ik,
    Skin,
    Liposuction,
    Weights,
    Paint,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum PlacementArg {
    Front,
    Tracker,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum FallbackArg {
    Desk,
    None,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum MusclesArg {
    Opaque,
    Translucent,
    Hidden,
}

/// A layer `render --layers` draws.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LayerArg {
    /// The skins.
    Skin,
    /// The muscles (and the FEM flesh's embedded mesh).
    Muscles,
    /// The joints and bones.
    Skeleton,
    /// The connective-tissue bands.
    Bands,
    /// The fat shell: the fat layer's inner face, seen through.
    Fat,
    /// The floor.
    Floor,
}

/// What colours the skin in `render` (see `crate::render::SkinMap`).
#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum MapArg {
    /// Its painted colours.
    Paint,
    /// Fat thickness.
    Fat,
    /// Stretch against the rest state.
    Stretch,
    /// How sharply the surface bends.
    Curvature,
    /// How fast the skin moves.
    Speed,
    /// Where the skin rests on the muscles.
    Contact,
}

pub(crate) fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("expected WxH such as 960x540, got '{s}'"))?;
    let parse = |v: &str| {
        v.trim()
            .parse::<u32>()
            .map_err(|_| format!("'{v}' is not a whole number"))
    };
    let (w, h) = (parse(w)?, parse(h)?);
    if !(16..=8192).contains(&w) || !(16..=8192).contains(&h) {
        return Err(format!("{w}x{h}: each side must lie in 16..=8192 pixels"));
    }
    Ok((w, h))
}

pub(crate) fn parse_vec3(s: &str) -> Result<glam::Vec3, String> {
    let parts: Vec<&str> = s.split(',').collect();
    let v: Vec<f32> = parts
        .iter()
        .filter_map(|p| p.trim().parse::<f32>().ok())
        .filter(|v| v.is_finite())
        .collect();
    if parts.len() != 3 || v.len() != 3 {
        return Err(format!("'{s}': expected three numbers X,Y,Z"));
    }
    Ok(glam::Vec3::new(v[0], v[1], v[2]))
}

pub(crate) fn parse_resolution(s: &str) -> Result<(usize, usize), String> {
    let (m, n) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("expected MxN such as 32x32, got '{s}'"))?;
    let m: usize = m
        .trim()
        .parse()
        .map_err(|_| format!("'{m}' is not a whole number"))?;
    let n: usize = n
        .trim()
        .parse()
        .map_err(|_| format!("'{n}' is not a whole number"))?;
    if m < 4 || n < 4 || m.saturating_mul(n) > crate::character::Skin::MAX_POINTS {
        return Err(format!(
            "{m}x{n}: each side must be at least 4 and the grid at most {} points",
            crate::character::Skin::MAX_POINTS
        ));
    }
    Ok((m, n))
}

/// A wall-clock interval in seconds: finite, not negative, at most a day.
pub(crate) fn parse_interval(s: &str) -> Result<std::time::Duration, String> {
    let x: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !(0.0..=86_400.0).contains(&x) {
        return Err(format!("{s}: expected 0 to 86400 seconds"));
    }
    Ok(std::time::Duration::from_secs_f64(x))
}

/// The ground a responding skeleton lands on (`bake`, `desk`, `xr`).
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct GroundArgs {
    /// Let the skeleton respond and land on the ground (y = 0), starting
    /// its lowest point H metres above it (FEM flesh): it falls, bounces
    /// and settles, and the hand can push it.
    #[arg(long, value_name = "H")]
    pub drop: Option<f64>,
    /// Coulomb friction of the ground under --drop.
    #[arg(long, value_name = "MU", requires = "drop",
          default_value_t = crate::contact::GROUND_FRICTION)]
    pub friction: f64,
    /// Restitution of the ground under --drop, in [0, 1].
    #[arg(long, value_name = "E", requires = "drop",
          default_value_t = crate::contact::GROUND_RESTITUTION)]
    pub restitution: f64,
}

impl GroundArgs {
    /// The ground asked for, validated (none without --drop).
    pub fn ground(&self) -> anyhow::Result<Option<crate::contact::GroundDrop>> {
        let Some(h) = self.drop else {
            return Ok(None);
        };
        let plane = crate::contact::Plane {
            friction: self.friction,
            restitution: self.restitution,
            ..crate::contact::Plane::ground()
        };
        plane
            .validate()
            .map_err(|e| anyhow::anyhow!("invalid ground: {e}"))?;
        Ok(Some(crate::contact::GroundDrop {
            plane,
            drop: Some(h),
        }))
    }
}
