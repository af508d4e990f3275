//! `plasticine blendshape`: build a physical blendshape rig from meshes, and
//! solve a blend of it to a mesh.

use crate::blendshape::{
    BlendModel, Boundary, ImportError, Obstacle, load_rig, rig_from_meshes, save_rig,
};
use crate::io::{ImportedMesh, load_mesh, load_mesh_with_targets};
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
}

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
    /// Where to write the shape (.obj): the base's vertices, in its order.
    #[arg(long)]
    out: PathBuf,
}

impl BlendshapeArgs {
    pub fn run(self) -> Result<()> {
        match self.command {
            BlendshapeCommand::Import(a) => a.run(),
            BlendshapeCommand::Solve(a) => a.run(),
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
        let name = self.name.unwrap_or_else(|| stem(&self.base));
        let rig =
            rig_from_meshes(&name, &base, &targets, boundary, !self.no_interior).map_err(|e| {
                match &e {
                    ImportError::Mismatch { target, .. } => {
                        let file = self.targets.iter().find(|p| stem(p) == *target);
                        anyhow::anyhow!(
                            "{}: {e}",
                            file.map_or(target.clone(), |p| p.display().to_string())
                        )
                    }
                    ImportError::Rig(_) => anyhow::anyhow!("{}: {e}", self.base.display()),
                }
            })?;
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
