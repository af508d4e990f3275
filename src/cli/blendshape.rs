//! `plasticine blendshape`: build a physical blendshape rig from meshes, and
//! solve a blend of it to a mesh.

use crate::blendshape::{
    BlendModel, Boundary, ImportError, Obstacle, load_rig, median_edge, rig_from_meshes, save_rig,
    split_long_edges,
};
use crate::io::{ImportedMesh, load_character, load_mesh, load_mesh_with_targets, save_character};
use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::time::Instant;

/// The arguments of `plasticine blendshape`.
#[derive(clap::Args)]
pub struct BlendshapeArgs {
    #[command(subcommand)]
    command: BlendshapeCommand,
}

#[derive(clap::Subcommand)]
enum BlendshapeCommand {
    /// Build a rig from a base mesh and target meshes (OBJ or glTF, one file
    /// per shape, all with the base's vertices and triangles in its order),
    /// or from a glTF mesh and its morph targets.
    Import(ImportArgs),
    /// Solve a blend: the equilibrium of the springs with blended rest
    /// lengths (or, with --linear, the linear blend), written as OBJ.
    Solve(SolveArgs),
    /// Put a rig's targets on an FEM character whose embedded mesh is the
    /// rig's base (as `fem-import` placed it): its postures then carry a
    /// weight per target, keyed on the timeline and set on the panel.
    Attach(AttachArgs),
    /// Key the targets' weights: set them on the key posture at --time (a
    /// key is made there from the animation if there is none).
    Key(KeyArgs),
}

#[derive(clap::Args)]
struct AttachArgs {
    /// Character file (.ron) with FEM flesh and an embedded mesh.
    character: PathBuf,
    /// The rig (.ron, from `plasticine blendshape import`).
    rig: PathBuf,
    /// Blend the targets linearly instead of solving the springs.
    #[arg(long)]
    linear: bool,
    /// Where to write the character.
    #[arg(long)]
    out: PathBuf,
}

#[derive(clap::Args)]
struct KeyArgs {
    /// Character file (.ron) with blendshapes.
    character: PathBuf,
    /// Time of the key, s.
    #[arg(long)]
    time: f32,
    /// A target's weight at the key: `NAME=W`, W in [0, 1]. Repeat for
    /// several targets; the others are 0, and the base takes the rest.
    #[arg(long, value_name = "NAME=W")]
    weight: Vec<String>,
    /// Where to write the character.
    #[arg(long)]
    out: PathBuf,
}

#[derive(clap::Args)]
struct ImportArgs {
    /// The base mesh (the neutral shape).
    base: PathBuf,
    /// The target meshes; each target is named after its file. With none,
    /// the base must be glTF with morph targets: those are the targets
    /// (named by the mesh's `extras.targetNames`).
    targets: Vec<PathBuf>,
    /// Where to save the rig (.ron).
    #[arg(long)]
    out: PathBuf,
    /// Name of the rig [default: the base file's name].
    #[arg(long)]
    name: Option<String>,
    /// What holds the springs: `anchor` (a rigid object inside, all the
    /// surface free), `static` (the vertices no target moves) or `pins`
    /// (--pins, following the linear blend).
    #[arg(long, default_value = "anchor", value_parser = ["anchor", "static", "pins"])]
    boundary: String,
    /// With --boundary static: how far, relative to the base's size, a
    /// vertex may move and still count as static.
    #[arg(long, default_value_t = 1e-6)]
    static_tolerance: f32,
    /// With --boundary pins: the pinned vertices, e.g. 0,5,17.
    #[arg(long, value_delimiter = ',')]
    pins: Vec<u32>,
    /// No internal springs (an open mesh, e.g. a face mask, has no inside).
    #[arg(long)]
    no_interior: bool,
    /// Split the edges longer than this many times the base's median edge,
    /// in any shape, at their midpoints in every shape, so that no spring
    /// is much longer than the rest (Ma §3.1). The new vertices come after
    /// the base's, which keep their order. Not for a rig to attach to an
    /// FEM character: its mesh must stay the character's.
    #[arg(long, value_name = "TIMES_MEDIAN")]
    split_longer_than: Option<f32>,
}

/// A split may at most multiply the base's vertices by this (plus
/// [`SPLIT_SLACK`]): past it, the limit asked for was too short.
const SPLIT_GROWTH: usize = 4;
const SPLIT_SLACK: usize = 1000;

#[derive(clap::Args)]
struct SolveArgs {
    /// The rig (.ron, from `plasticine blendshape import`).
    rig: PathBuf,
    /// One weight per shape, the base's first, on the simplex: e.g. 0.5,0.5.
    #[arg(
        long,
        value_delimiter = ',',
        required = true,
        allow_hyphen_values = true
    )]
    weights: Vec<f64>,
    /// Blend the positions linearly instead (what other tools do).
    #[arg(long)]
    linear: bool,
    /// Something that pushes the blend (repeatable): `sphere:X,Y,Z,R`,
    /// `capsule:X,Y,Z,X,Y,Z,R` (the axis's two ends) or `mesh:FILE` (a
    /// closed OBJ or glTF mesh), in the rig's units.
    #[arg(long = "obstacle", value_name = "OBSTACLE", value_parser = parse_obstacle, allow_hyphen_values = true)]
    obstacles: Vec<Obstacle>,
    /// Where to write the shape (.obj): the rig's vertices, the base's
    /// first in its order (then any a split added).
    #[arg(long)]
    out: PathBuf,
}

impl BlendshapeArgs {
    pub fn run(self) -> Result<()> {
        match self.command {
            BlendshapeCommand::Import(a) => a.run(),
            BlendshapeCommand::Solve(a) => a.run(),
            BlendshapeCommand::Attach(a) => a.run(),
            BlendshapeCommand::Key(a) => a.run(),
        }
    }
}

fn stem(path: &std::path::Path) -> String {
    path.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("shape")
        .to_string()
}

impl ImportArgs {
    fn run(self) -> Result<()> {
        let mut targets = Vec::new();
        let base = if self.targets.is_empty() {
            let (base, morphs) = load_mesh_with_targets(&self.base)?;
            if morphs.is_empty() {
                bail!(
                    "{}: no target meshes given and the file has no morph targets",
                    self.base.display()
                );
            }
            for m in morphs {
                let mesh = ImportedMesh {
                    positions: m.positions,
                    triangles: base.triangles.clone(),
                };
                targets.push((m.name, mesh));
            }
            base
        } else {
            for path in &self.targets {
                targets.push((stem(path), load_mesh(path)?));
            }
            load_mesh(&self.base)?
        };
        let boundary = match self.boundary.as_str() {
            "static" => Boundary::Static {
                tolerance: self.static_tolerance,
            },
            "pins" => Boundary::Pins {
                vertices: self.pins,
            },
            _ => Boundary::Anchor,
        };
        if let Some(times) = self.split_longer_than
            && !(times.is_finite() && times > 0.0)
        {
            bail!("--split-longer-than {times}: give a length above zero, in median edges");
        }
        let name = self.name.unwrap_or_else(|| stem(&self.base));
        let mut rig = rig_from_meshes(&name, &base, &targets, boundary, !self.no_interior)
            .map_err(|e| match &e {
                ImportError::Mismatch { target, .. } => {
                    let file = self.targets.iter().find(|p| stem(p) == *target);
                    anyhow::anyhow!(
                        "{}: {e}",
                        file.map_or(target.clone(), |p| p.display().to_string())
                    )
                }
                ImportError::Rig(_) => anyhow::anyhow!("{}: {e}", self.base.display()),
            })?;
        if let Some(times) = self.split_longer_than {
            let longest = times * median_edge(&rig);
            let limit = SPLIT_GROWTH * rig.base.len() + SPLIT_SLACK;
            let added = split_long_edges(&mut rig, longest, limit)
                .map_err(|e| anyhow::anyhow!("--split-longer-than {times}: {e}"))?;
            println!(
                "split the edges longer than {longest:.4} ({times} median edges): {added} vertices added after the base's {}",
                rig.base.len() - added
            );
        }
        for (shape, a, b) in rig.self_intersections() {
            eprintln!(
                "warning: {shape} passes through itself (triangles {a} and {b} cross); \
                 blends near it may fold through themselves"
            );
        }
        // Building the model checks that the springs can be solved (each
        // target's interior and anchor) before anything is written.
        let t = Instant::now();
        let model =
            BlendModel::new(&rig).with_context(|| format!("rig from {}", self.base.display()))?;
        save_rig(&self.out, &rig)?;
        println!(
            "rig '{}': {} shapes, {} vertices ({} on the surface), {} springs, built in {:.0} ms; saved {}",
            rig.name,
            rig.targets.len() + 1,
            model.vertices(),
            model.surface_vertices(),
            model.springs().len(),
            t.elapsed().as_secs_f64() * 1e3,
            self.out.display()
        );
        Ok(())
    }
}

impl SolveArgs {
    fn run(self) -> Result<()> {
        let rig = load_rig(&self.rig)?;
        rig.check_weights(&self.weights)
            .map_err(|e| anyhow::anyhow!("--weights: {e}"))?;
        let mut model = BlendModel::new(&rig).with_context(|| format!("{}", self.rig.display()))?;
        let t = Instant::now();
        if self.linear && !self.obstacles.is_empty() {
            bail!("--linear cannot take obstacles: only the physical blend is pushed");
        }
        let positions = if self.linear {
            let x = model.linear(&self.weights);
            println!("linear blend of {} shapes", rig.targets.len() + 1);
            x
        } else {
            let blend = model
                .solve_with(&self.weights, &rig, &self.obstacles)
                .with_context(|| format!("{}", self.rig.display()))?;
            let r = blend.report;
            println!(
                "equilibrium in {} Newton steps, {:.1} ms (factor and solve {:.1} ms); largest force {:.2e}, {:.1e} of the springs' scale",
                r.iterations,
                t.elapsed().as_secs_f64() * 1e3,
                r.factor_s * 1e3,
                r.residual,
                r.residual / r.force_scale
            );
            if !self.obstacles.is_empty() {
                println!(
                    "{} surface vertices held on the obstacles after {} solves",
                    blend.contacts.len(),
                    blend.rounds
                );
            }
            blend.positions
        };
        let surface: Vec<glam::Vec3> = positions[..model.surface_vertices()]
            .iter()
            .map(|p| p.as_vec3())
            .collect();
        if !surface.iter().all(|p| p.is_finite()) {
            bail!("the blend is not finite; nothing written");
        }
        crate::io::write_colored_obj(&self.out, &[(&rig.name, &surface, &rig.triangles)], &[])?;
        println!("wrote {}", self.out.display());
        Ok(())
    }
}

/// `sphere:X,Y,Z,R`, `capsule:X,Y,Z,X,Y,Z,R` or `mesh:FILE`.
fn parse_obstacle(text: &str) -> Result<Obstacle, String> {
    let (kind, rest) = text.split_once(':').ok_or_else(|| {
        format!("'{text}': expected sphere:X,Y,Z,R, capsule:X,Y,Z,X,Y,Z,R or mesh:FILE")
    })?;
    let numbers = || -> Result<Vec<f64>, String> {
        rest.split(',')
            .map(|v| {
                v.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| format!("'{v}' is not a finite number"))
            })
            .collect()
    };
    let positive = |r: f64| {
        if r > 0.0 {
            Ok(r)
        } else {
            Err(format!("radius {r} is not positive"))
        }
    };
    match kind {
        "sphere" => match numbers()?.as_slice() {
            &[x, y, z, r] => Ok(Obstacle::Sphere {
                centre: glam::DVec3::new(x, y, z),
                radius: positive(r)?,
            }),
            v => Err(format!("sphere needs X,Y,Z,R: {} numbers given", v.len())),
        },
        "capsule" => match numbers()?.as_slice() {
            &[ax, ay, az, bx, by, bz, r] => Ok(Obstacle::Capsule {
                a: glam::DVec3::new(ax, ay, az),
                b: glam::DVec3::new(bx, by, bz),
                radius: positive(r)?,
            }),
            v => Err(format!(
                "capsule needs X,Y,Z,X,Y,Z,R: {} numbers given",
                v.len()
            )),
        },
        "mesh" => {
            let mesh = load_mesh(std::path::Path::new(rest)).map_err(|e| e.to_string())?;
            let solid = crate::fem::MeshSolid::new(&mesh.positions, &mesh.triangles)
                .map_err(|e| format!("{rest}: {e}"))?;
            Ok(Obstacle::Mesh(Box::new(solid)))
        }
        _ => Err(format!("'{kind}': expected sphere, capsule or mesh")),
    }
}

/// The uniform scale s and offset t that best place `from` on `to`
/// (least squares), and the largest distance left: how `fem-import`'s
/// `--scale` and `--translate` moved a mesh.
fn fit_placement(from: &[glam::Vec3], to: &[glam::Vec3]) -> (f64, glam::DVec3, f64) {
    let n = from.len().max(1) as f64;
    let centre = |p: &[glam::Vec3]| p.iter().map(|v| v.as_dvec3()).sum::<glam::DVec3>() / n;
    let (cf, ct) = (centre(from), centre(to));
    let (mut num, mut den) = (0.0, 0.0);
    for (a, b) in from.iter().zip(to) {
        let (a, b) = (a.as_dvec3() - cf, b.as_dvec3() - ct);
        num += a.dot(b);
        den += a.length_squared();
    }
    let s = if den > 0.0 { num / den } else { 1.0 };
    let t = ct - cf * s;
    let worst = from
        .iter()
        .zip(to)
        .map(|(a, b)| (a.as_dvec3() * s + t).distance(b.as_dvec3()))
        .fold(0.0, f64::max);
    (s, t, worst)
}

impl AttachArgs {
    fn run(self) -> Result<()> {
        let mut c = load_character(&self.character)?;
        let rig = load_rig(&self.rig)?;
        let Some(fem) = c.flesh.fem_mut() else {
            bail!(
                "{}: the flesh is not FEM; blendshapes reshape the embedded mesh of FEM flesh \
                 (make one with `plasticine fem-import MESH --skeleton {} --out ...`)",
                self.character.display(),
                self.character.display()
            );
        };
        let Some(mesh) = &fem.embedded_mesh else {
            bail!(
                "{}: the FEM flesh has no embedded mesh for the targets to reshape \
                 (import the rig's base with `plasticine fem-import`)",
                self.character.display()
            );
        };
        if mesh.positions.len() != rig.base.len() || mesh.triangles != rig.triangles {
            bail!(
                "{}: the rig's base ({} vertices, {} triangles) is not the character's embedded \
                 mesh '{}' ({} vertices, {} triangles): import the targets against the mesh \
                 that was given to `fem-import`",
                self.rig.display(),
                rig.base.len(),
                rig.triangles.len(),
                mesh.source,
                mesh.positions.len(),
                mesh.triangles.len()
            );
        }
        let (scale, offset, worst) = fit_placement(&rig.base, &mesh.positions);
        let size = rig.diagonal() * scale.abs();
        if scale.is_nan() || scale <= 0.0 || worst > 1e-4 * size.max(f64::MIN_POSITIVE) {
            bail!(
                "{}: the rig's base is not the character's embedded mesh placed by a scale and \
                 an offset (after the best fit, scale {scale:.4} and offset {offset:.4}, a \
                 vertex is {worst:.2e} m off)",
                self.rig.display()
            );
        }
        let place = |p: &glam::Vec3| (p.as_dvec3() * scale + offset).as_vec3();
        let mut shapes = rig.blendshapes();
        shapes.linear = self.linear;
        for t in &mut shapes.targets {
            t.positions = t.positions.iter().map(place).collect();
        }
        let names: Vec<String> = shapes.targets.iter().map(|t| t.name.clone()).collect();
        let mesh_name = mesh.source.clone();
        fem.blendshapes = Some(Box::new(shapes));
        // Weights keyed before (for other targets) no longer fit.
        for key in &mut c.key_postures {
            key.posture.blend.clear();
        }
        c.validate()
            .with_context(|| format!("{} with the rig", self.character.display()))?;
        let t = Instant::now();
        crate::skin::BlendRun::build(&c)
            .with_context(|| format!("{} on the embedded mesh", self.rig.display()))?;
        save_character(&self.out, &c)?;
        println!(
            "attached {} targets ({}) to the embedded mesh '{mesh_name}', {} blend, springs \
             built in {:.0} ms; saved {}",
            names.len(),
            names.join(", "),
            if self.linear { "linear" } else { "physical" },
            t.elapsed().as_secs_f64() * 1e3,
            self.out.display()
        );
        println!(
            "key the weights on the desk's panel (rows 'blend NAME', then K) or with \
             `plasticine blendshape key {} --time T --weight NAME=W --out ...`",
            self.out.display()
        );
        Ok(())
    }
}

impl KeyArgs {
    fn run(self) -> Result<()> {
        let mut c = load_character(&self.character)?;
        let Some(shapes) = c.blendshapes() else {
            bail!(
                "{}: the character has no blendshapes (attach a rig with \
                 `plasticine blendshape attach`)",
                self.character.display()
            );
        };
        let mut weights = vec![0.0f32; shapes.targets.len()];
        for w in &self.weight {
            let Some((name, value)) = w.split_once('=') else {
                bail!("--weight {w}: expected NAME=W");
            };
            let Some(k) = shapes.target(name.trim()) else {
                let known: Vec<&str> = shapes.targets.iter().map(|t| t.name.as_str()).collect();
                bail!(
                    "--weight {w}: no target '{name}' (the targets are {})",
                    known.join(", ")
                );
            };
            weights[k] = value
                .trim()
                .parse()
                .map_err(|_| anyhow::anyhow!("--weight {w}: '{value}' is not a number"))?;
        }
        // The key there keeps its posture and tension/continuity/bias; a
        // new one takes the animation's posture at that time.
        let existing = c
            .key_postures
            .iter()
            .find(|k| (k.time - self.time).abs() <= crate::tools::KEY_TIME_EPSILON);
        let (mut posture, [tension, continuity, bias]) = match existing {
            Some(k) => (k.posture.clone(), [k.tension, k.continuity, k.bias]),
            None => (
                crate::anim::sample_posture(&c.key_postures, self.time)
                    .unwrap_or_else(|| c.skeleton.rest_posture()),
                [0.0; 3],
            ),
        };
        posture.blend = weights;
        // The timeline's own command checks the time and the weights.
        crate::tools::History::new(&c)
            .apply(
                &mut c,
                crate::tools::Command::SetKey {
                    time: self.time,
                    posture,
                    tension,
                    continuity,
                    bias,
                },
            )
            .map_err(|e| anyhow::anyhow!("--time {} --weight: {e}", self.time))?;
        save_character(&self.out, &c)?;
        println!(
            "keyed {} at {:.3} s ({} keys); saved {}",
            self.weight.join(", "),
            self.time,
            c.key_postures.len(),
            self.out.display()
        );
        Ok(())
    }
}
