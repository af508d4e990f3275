//! `plasticine morph`: dynamic morph targets of the FEM flesh (Galoppo
//! 2008, ch. 5), kept and removed headless.

use super::args::parse_vec3;
use crate::character::{Character, MorphOffset, MorphTarget, PartStiffness, Posture};
use crate::fem::{Pull, REST_TARGET, sculpt_target, with_target};
use crate::io::{load_character, save_character};
use crate::kinematics::PosedBody;
use crate::skin::SkeletonDriver;
use anyhow::{Context, Result, bail};
use glam::Vec3;
use std::path::PathBuf;

/// The arguments of `plasticine morph`.
#[derive(clap::Args)]
pub struct MorphArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Keep the flesh, posed and pulled, as a target at that posture (a
    /// target already at that pose is replaced).
    Add(AddArgs),
    /// Remove a target by name.
    Remove(RemoveArgs),
}

#[derive(clap::Args)]
struct AddArgs {
    /// Character file (.ron) with FEM flesh.
    character: PathBuf,
    /// The target's name.
    #[arg(long)]
    name: String,
    /// The posture: the key postures' animation at this time, s.
    #[arg(long, conflicts_with = "key")]
    at: Option<f64>,
    /// The posture: key posture K (from 0).
    #[arg(long)]
    key: Option<usize>,
    /// Grab the flesh at POINT and pull it by DX,DY,DZ (m): `POINT:DX,DY,DZ`,
    /// POINT a joint's name (its muscles' flesh on the side pulled toward,
    /// at the posture) or X,Y,Z in the world. Repeat for several grabs held at once.
    #[arg(long, value_name = "POINT:DX,DY,DZ")]
    pull: Vec<String>,
    /// Instead of pulls: the target's shape as a mesh (OBJ, glTF), the
    /// character's imported (embedded) mesh sculpted, same vertices in the
    /// same order, at rest (a shape key on the rest mesh). Its offsets are
    /// fitted to the lattice.
    #[arg(long, conflicts_with = "pull")]
    mesh: Option<PathBuf>,
    /// With --mesh: take the glTF mesh's morph target of this name.
    #[arg(long, requires = "mesh")]
    mesh_target: Option<String>,
    /// With --mesh: multiply its coordinates by this, as `fem-import` did.
    #[arg(long, default_value_t = 1.0, requires = "mesh")]
    scale: f64,
    /// With --mesh: then move it by X,Y,Z metres, as `fem-import` did.
    #[arg(long, value_parser = parse_vec3, default_value = "0,0,0", allow_hyphen_values = true, requires = "mesh")]
    translate: Vec3,
    /// The flesh's stiffness at this posture, as a factor.
    #[arg(long, default_value_t = 1.0)]
    stiffness: f64,
    /// A part's own factor at this posture, on top of --stiffness:
    /// `JOINT=FACTOR`. Repeat for several parts.
    #[arg(long, value_name = "JOINT=FACTOR")]
    part: Vec<String>,
    /// Where to write the character.
    #[arg(long)]
    out: PathBuf,
}

#[derive(clap::Args)]
struct RemoveArgs {
    /// Character file (.ron).
    character: PathBuf,
    /// The target's name.
    #[arg(long)]
    name: String,
    /// Where to write the character.
    #[arg(long)]
    out: PathBuf,
}

impl MorphArgs {
    pub fn run(self) -> Result<()> {
        match self.action {
            Action::Add(a) => a.run(),
            Action::Remove(a) => a.run(),
        }
    }
}

impl AddArgs {
    fn run(self) -> Result<()> {
        let mut c = load_character(&self.character)?;
        if c.flesh.fem().is_none() {
            bail!(
                "{} has no FEM flesh; morph targets shape the lattice FEM flesh \
                 (e.g. `plasticine sample penguin --flesh fem`)",
                self.character.display()
            );
        }
        let posture = self.posture(&c)?;
        let body = PosedBody::new(&c, &posture);
        let pulls = self
            .pull
            .iter()
            .map(|p| parse_pull(p, &c, &body))
            .collect::<Result<Vec<_>>>()?;
        let parts = self
            .part
            .iter()
            .map(|p| parse_part(p))
            .collect::<Result<Vec<_>>>()?;
        let target = match &self.mesh {
            Some(path) => self.mesh_target(&c, path, posture.clone(), parts)?,
            None => sculpt_target(&c, &self.name, &posture, &pulls, self.stiffness, parts)?,
        };
        let count = target.offsets.len();
        let largest = target
            .offsets
            .iter()
            .map(|o| o.offset.length())
            .fold(0.0, f32::max);
        let fem = c.flesh.fem().expect("checked above");
        let (flesh, added) = with_target(fem, &c.skeleton, target);
        *c.flesh.fem_mut().expect("checked above") = flesh;
        let replaced = added.replaced;
        let with_rest = added.rest;
        c.validate()
            .map_err(|e| anyhow::anyhow!("the target is not valid: {}: {}", e.field, e.message))?;
        // The flesh must build with it (a shape that inverts a cell is refused).
        crate::fem::FleshSim::new(&c, &posture, 0.0)
            .context("the flesh with the new target cannot be built")?;
        save_character(&self.out, &c)?;
        let total = c.flesh.fem().map_or(0, |f| f.morph_targets.len());
        println!(
            "Kept '{}' ({} offsets, largest {:.1} mm, stiffness x{}){}; {} target(s). Wrote {}",
            self.name,
            count,
            largest * 1e3,
            self.stiffness,
            if replaced.is_empty() {
                String::new()
            } else {
                format!(", replacing {}", replaced.join(", "))
            },
            total,
            self.out.display()
        );
        if with_rest {
            println!(
                "Added '{REST_TARGET}', the plain flesh at the rest posture, so '{}' acts near its own pose \
                 (`plasticine morph remove --name {REST_TARGET}` makes it act everywhere).",
                self.name
            );
        }
        Ok(())
    }

    /// The target whose rest shape is the sculpted embedded mesh in `path`.
    fn mesh_target(
        &self,
        c: &Character,
        path: &std::path::Path,
        posture: Posture,
        parts: Vec<PartStiffness>,
    ) -> Result<MorphTarget> {
        let Some(base) = c.flesh.fem().and_then(|f| f.embedded_mesh.as_ref()) else {
            bail!(
                "--mesh shapes an imported mesh (`plasticine fem-import`); this character has none"
            );
        };
        let (mesh, targets) = crate::io::load_mesh_with_targets(path)?;
        let positions = match &self.mesh_target {
            None => mesh.positions,
            Some(name) => match targets.into_iter().find(|t| t.name == *name) {
                Some(t) => t.positions,
                None => bail!("{} has no morph target '{name}'", path.display()),
            },
        };
        if positions.len() != base.positions.len() {
            bail!(
                "{} has {} vertices; the imported mesh '{}' has {}: a target is the same mesh sculpted",
                path.display(),
                positions.len(),
                base.source,
                base.positions.len()
            );
        }
        let offsets = base
            .positions
            .iter()
            .zip(&positions)
            .map(|(&rest, &p)| MorphOffset {
                at: rest,
                offset: p * self.scale as f32 + self.translate - rest,
            })
            .collect();
        Ok(MorphTarget {
            name: self.name.clone(),
            posture,
            offsets,
            stiffness: self.stiffness,
            part_stiffness: parts,
        })
    }

    fn posture(&self, c: &Character) -> Result<Posture> {
        if let Some(k) = self.key {
            let key = c.key_postures.get(k).with_context(|| {
                format!(
                    "no key posture {k}: the character has {}",
                    c.key_postures.len()
                )
            })?;
            return Ok(key.posture.clone());
        }
        let t = self.at.unwrap_or(0.0);
        if !t.is_finite() {
            bail!("--at must be a finite time, got {t}");
        }
        if c.key_postures.is_empty() {
            return Ok(c.skeleton.rest_posture());
        }
        Ok(SkeletonDriver::Keys(c.key_postures.clone()).posture_at(t))
    }
}

impl RemoveArgs {
    fn run(self) -> Result<()> {
        let mut c = load_character(&self.character)?;
        let Some(fem) = c.flesh.fem_mut() else {
            bail!(
                "{} has no FEM flesh, so no morph targets",
                self.character.display()
            );
        };
        let before = fem.morph_targets.len();
        fem.morph_targets.retain(|t| t.name != self.name);
        if fem.morph_targets.len() == before {
            let names: Vec<&str> = fem.morph_targets.iter().map(|t| t.name.as_str()).collect();
            bail!(
                "no morph target '{}' (the targets are: {})",
                self.name,
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            );
        }
        let left = fem.morph_targets.len();
        save_character(&self.out, &c)?;
        println!(
            "Removed '{}'; {left} target(s) left. Wrote {}",
            self.name,
            self.out.display()
        );
        Ok(())
    }
}

/// How far from a muscle's centre toward its surface a pull by joint name
/// grabs (a share of the way along the pull's direction).
const SURFACE_SHARE: f32 = 0.7;

/// `POINT:DX,DY,DZ`, POINT a joint's name or X,Y,Z.
fn parse_pull(text: &str, c: &Character, body: &PosedBody) -> Result<Pull> {
    let (point, by) = text
        .rsplit_once(':')
        .with_context(|| format!("--pull '{text}': expected POINT:DX,DY,DZ"))?;
    let by = parse_vec3(by).map_err(|e| anyhow::anyhow!("--pull '{text}': the pull: {e}"))?;
    let at = match c.skeleton.find(point) {
        Some(j) => {
            // The joint's muscles' flesh on the side pulled toward (their
            // centres sit on the bone, which holds them).
            let muscles: Vec<_> = c
                .muscles
                .iter()
                .zip(&body.muscles)
                .filter(|(m, _)| m.joint == j)
                .map(|(_, p)| p)
                .collect();
            if muscles.is_empty() {
                bail!("--pull '{text}': joint '{point}' carries no muscle to grab");
            }
            let dir = by.normalize_or_zero();
            muscles
                .iter()
                .map(|m| {
                    // March out from the centre to the surface along the pull.
                    let inside = |p: Vec3| {
                        m.shape
                            .distance_and_normal(m.to_local.transform_point3(p), m.radius)
                            .0
                            < 0.0
                    };
                    let step = m.radius / 64.0;
                    let mut reach = 0.0;
                    while reach < m.radius && inside(m.center + dir * (reach + step)) {
                        reach += step;
                    }
                    m.center + dir * (SURFACE_SHARE * reach)
                })
                .sum::<Vec3>()
                / muscles.len() as f32
        }
        None => parse_vec3(point).map_err(|_| {
            anyhow::anyhow!("--pull '{text}': POINT is neither a joint's name nor X,Y,Z")
        })?,
    };
    Ok(Pull { at, to: at + by })
}

fn parse_part(text: &str) -> Result<PartStiffness> {
    let (joint, scale) = text
        .split_once('=')
        .with_context(|| format!("--part '{text}': expected JOINT=FACTOR"))?;
    let scale: f64 = scale
        .trim()
        .parse()
        .with_context(|| format!("--part '{text}': FACTOR must be a number"))?;
    Ok(PartStiffness {
        joint: joint.trim().to_string(),
        scale,
    })
}
