//! GPU back end of the lattice FEM: the same step as [`FemBody::step`] (and
//! [`FemBody::solve_static`]) with each region's projected, block-Jacobi
//! preconditioned CG run by wgpu compute kernels (`shaders/fem_cg.wgsl`).
//!
//! ## What runs where
//!
//! - **GPU, f32:** the whole CG loop of every region: the block-CSR product
//!   `A p = c_mass M p + c_stiff R K Rᵀ p` (one invocation per block row), the
//!   residual `b − A x`, the Jacobi preconditioner `R B⁻¹ Rᵀ r`, the masking
//!   of known (bone and clamped) DOFs, the projection onto the position
//!   constraints' null space, axpy/xpay updates and the dot products (a
//!   workgroup reduction into partial sums, then one workgroup that also
//!   updates α, β and the stopping test on the GPU). The host records
//!   `batch` iterations per submission and reads back only eight scalars
//!   (and x) after each, so a solve costs one round trip when it converges
//!   within the first batch, whose length is the region's previous
//!   iteration count.
//! - **CPU, f64:** everything O(n) around the solve, exactly as the CPU back
//!   end does it: the right-hand side (one product with K per region), the
//!   bone targets, the constraint basis (Gram–Schmidt) and the start vector
//!   on the constraint set, the warm start's filtering, the blend of the
//!   regions and the state update. The state (q, v) stays f64 on the CPU in
//!   the wrapped [`FemBody`]; the GPU holds only the matrices and CG vectors.
//!
//! ## Agreement with the CPU back end
//!
//! The matrices are rounded to f32 and the CG runs in f32, so the GPU solves
//! a system within ~1e-7 relative of the CPU's, to the same relative
//! residual. With the CG tolerance τ (≥ 1e-5: f32 CG cannot be asked much
//! below that), both solutions lie within about τ·cond of the exact one;
//! `tests/it/fem_gpu.rs` measures the displacement difference against the
//! displacement scale.

use super::regions::Region;
use super::solver::{
    CgReport, ConstraintBasis, FemBody, LocalConstraint, MassKind, PositionConstraint, StepReport,
    advance_state,
};
use super::sparse::Assembled;
use crate::render::{GpuContext, RenderError};
use glam::{DAffine3, DMat3, DVec3};
use std::sync::mpsc;

/// Errors of the GPU back end.
#[derive(Debug, thiserror::Error)]
pub enum GpuFemError {
    #[error("GPU FEM: {0}")]
    Render(#[from] RenderError),
    #[error("GPU FEM: reading back {what}: {cause}")]
    Readback { what: &'static str, cause: String },
}

const WG_ROWS: u32 = 64;
const WG_REDUCE: u32 = 256;
const MAX_PARTIALS: u32 = 256;
const PART: u64 = 16;
const SCALARS: u64 = PART + 2 * MAX_PARTIALS as u64;
const S_RR: usize = 4;
const S_R0SQ: usize = 5;
const S_ITER: usize = 6;
const S_DONE: usize = 7;
const V_X: u64 = 0;
const V_B: u64 = 1;
const V_Z: u64 = 3;
const V_P: u64 = 4;
const V_AP: u64 = 5;

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    nnz: u32,
    mass_kind: u32,
    n_cols: u32,
    off_col: u32,
    off_mask: u32,
    off_cptr: u32,
    off_cidx: u32,
    off_mass: u32,
    off_prec: u32,
    off_cw: u32,
    num_partials: u32,
    c_mass: f32,
    c_stiff: f32,
    tolerance: f32,
    max_iterations: f32,
    rot: [[f32; 4]; 3],
}

/// The compiled kernels and their bind group layout.
struct Kernels {
    layout: wgpu::BindGroupLayout,
    residual: wgpu::ComputePipeline,
    spmv_p: wgpu::ComputePipeline,
    warm_add: wgpu::ComputePipeline,
    precond: wgpu::ComputePipeline,
    copy_p: wgpu::ComputePipeline,
    update_xr: wgpu::ComputePipeline,
    update_xr_precond: wgpu::ComputePipeline,
    update_p: wgpu::ComputePipeline,
    project_r: wgpu::ComputePipeline,
    project_z: wgpu::ComputePipeline,
    project_ap: wgpu::ComputePipeline,
    dot_rr: wgpu::ComputePipeline,
    dot_pap: wgpu::ComputePipeline,
    dot_rz_rr: wgpu::ComputePipeline,
    finalize_r0: wgpu::ComputePipeline,
    finalize_init: wgpu::ComputePipeline,
    finalize_alpha: wgpu::ComputePipeline,
    finalize_beta: wgpu::ComputePipeline,
}

impl Kernels {
    fn new(device: &wgpu::Device) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("fem_cg"),
            source: wgpu::ShaderSource::Wgsl(include_str!("../../shaders/fem_cg.wgsl").into()),
        });
        let storage = |binding, read_only| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("fem_cg"),
            entries: &[
                storage(0, true),
                storage(1, true),
                storage(2, false),
                storage(3, false),
                wgpu::BindGroupLayoutEntry {
                    binding: 4,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                },
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("fem_cg"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipe = |entry: &str| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        Self {
            residual: pipe("residual"),
            spmv_p: pipe("spmv_p"),
            warm_add: pipe("warm_add"),
            precond: pipe("precond"),
            copy_p: pipe("copy_p"),
            update_xr: pipe("update_xr"),
            update_xr_precond: pipe("update_xr_precond"),
            update_p: pipe("update_p"),
            project_r: pipe("project_r"),
            project_z: pipe("project_z"),
            project_ap: pipe("project_ap"),
            dot_rr: pipe("dot_rr"),
            dot_pap: pipe("dot_pap"),
            dot_rz_rr: pipe("dot_rz_rr"),
            finalize_r0: pipe("finalize_r0"),
            finalize_init: pipe("finalize_init"),
            finalize_alpha: pipe("finalize_alpha"),
            finalize_beta: pipe("finalize_beta"),
            layout,
        }
    }
}

/// One region's matrices and CG vectors on the GPU.
struct RegionGpu {
    n: usize,
    nnz: usize,
    mass_kind: MassKind,
    /// u32 words of mat_u before the constraint data (row_ptr, col, mask).
    u_static: usize,
    /// f32 words of mat_f before the constraint data (K, mass, precond).
    f_static: usize,
    off_mask: usize,
    off_mass: usize,
    off_prec: usize,
    cap_u: usize,
    cap_f: usize,
    mat_u: wgpu::Buffer,
    mat_f: wgpu::Buffer,
    vecs: wgpu::Buffer,
    scal: wgpu::Buffer,
    params: wgpu::Buffer,
    stage_scal: wgpu::Buffer,
    stage_x: wgpu::Buffer,
    bind: wgpu::BindGroup,
    /// The mask now on the GPU.
    mask: Vec<u32>,
    /// (c_mass, c_stiff) the preconditioner on the GPU was built for.
    precond_for: Option<(f64, f64)>,
    /// The preconditioner's unrotated diagonal blocks c_m m + c_s K_aa.
    diag_k: Vec<DMat3>,
    diag_m: Vec<f64>,
    /// Iterations of the last solve: the first batch's length.
    last_iterations: usize,
}

fn storage_buffer(device: &wgpu::Device, label: &str, words: usize) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: (words.max(4) * 4) as u64,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}

fn staging_buffer(device: &wgpu::Device, label: &str, bytes: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: bytes.max(16),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

fn to_vec4(v: &[DVec3]) -> Vec<[f32; 4]> {
    v.iter()
        .map(|a| [a.x as f32, a.y as f32, a.z as f32, 0.0])
        .collect()
}

fn mat_f32(m: &DMat3) -> [f32; 9] {
    let c = m.to_cols_array();
    std::array::from_fn(|i| c[i] as f32)
}

impl RegionGpu {
    fn new(ctx: &GpuContext, kernels: &Kernels, m: &Assembled, mass_kind: MassKind) -> Self {
        let k = &m.stiffness;
        let n = k.rows();
        let nnz = k.col.len();
        let mut u: Vec<u32> = k.row_ptr.iter().map(|&p| p as u32).collect();
        u.extend_from_slice(&k.col);
        let off_mask = u.len();
        u.resize(off_mask + n, 0);
        let u_static = u.len();
        let mut f: Vec<f32> = Vec::with_capacity(9 * nnz + nnz + 9 * n);
        for b in &k.blocks {
            f.extend_from_slice(&mat_f32(b));
        }
        let off_mass = f.len();
        let (diag_m, mass_words): (Vec<f64>, Vec<f32>) = match mass_kind {
            MassKind::Lumped => (
                m.lumped_mass.clone(),
                m.lumped_mass.iter().map(|&x| x as f32).collect(),
            ),
            MassKind::Consistent => (
                (0..n)
                    .map(|l| k.find(l, l).map_or(0.0, |i| m.consistent_mass.values[i]))
                    .collect(),
                m.consistent_mass.values.iter().map(|&x| x as f32).collect(),
            ),
        };
        f.extend_from_slice(&mass_words);
        let off_prec = f.len();
        f.resize(off_prec + 9 * n, 0.0);
        let f_static = f.len();
        let (cap_u, cap_f) = (u_static + 64, f_static + 64);
        let device = &ctx.device;
        let mat_u = storage_buffer(device, "fem mat_u", cap_u);
        let mat_f = storage_buffer(device, "fem mat_f", cap_f);
        ctx.queue.write_buffer(&mat_u, 0, bytemuck::cast_slice(&u));
        ctx.queue.write_buffer(&mat_f, 0, bytemuck::cast_slice(&f));
        let vecs = storage_buffer(device, "fem vecs", 6 * 4 * n);
        let scal = storage_buffer(device, "fem scalars", SCALARS as usize);
        let params = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("fem params"),
            size: std::mem::size_of::<Params>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let stage_scal = staging_buffer(device, "fem scalars read", 64);
        let stage_x = staging_buffer(device, "fem x read", (16 * n) as u64);
        let bind = Self::bind_group(ctx, kernels, &mat_u, &mat_f, &vecs, &scal, &params);
        Self {
            n,
            nnz,
            mass_kind,
            u_static,
            f_static,
            off_mask,
            off_mass,
            off_prec,
            cap_u,
            cap_f,
            mat_u,
            mat_f,
            vecs,
            scal,
            params,
            stage_scal,
            stage_x,
            bind,
            mask: vec![0; n],
            precond_for: None,
            diag_k: (0..n).map(|l| k.diagonal(l)).collect(),
            diag_m,
            last_iterations: 0,
        }
    }

    fn bind_group(
        ctx: &GpuContext,
        kernels: &Kernels,
        mat_u: &wgpu::Buffer,
        mat_f: &wgpu::Buffer,
        vecs: &wgpu::Buffer,
        scal: &wgpu::Buffer,
        params: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("fem_cg"),
            layout: &kernels.layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: mat_u.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: mat_f.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: vecs.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: scal.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 4,
                    resource: params.as_entire_binding(),
                },
            ],
        })
    }

    /// Makes room for `u_words` / `f_words` of constraint data after the
    /// static parts, copying those on the GPU into bigger buffers if needed.
    fn reserve(&mut self, ctx: &GpuContext, kernels: &Kernels, u_words: usize, f_words: usize) {
        let need_u = self.u_static + u_words;
        let need_f = self.f_static + f_words;
        if need_u <= self.cap_u && need_f <= self.cap_f {
            return;
        }
        let cap_u = need_u.max(self.cap_u) * 3 / 2;
        let cap_f = need_f.max(self.cap_f) * 3 / 2;
        let mat_u = storage_buffer(&ctx.device, "fem mat_u", cap_u);
        let mat_f = storage_buffer(&ctx.device, "fem mat_f", cap_f);
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        enc.copy_buffer_to_buffer(&self.mat_u, 0, &mat_u, 0, (self.u_static * 4) as u64);
        enc.copy_buffer_to_buffer(&self.mat_f, 0, &mat_f, 0, (self.f_static * 4) as u64);
        ctx.queue.submit(Some(enc.finish()));
        self.bind = Self::bind_group(
            ctx,
            kernels,
            &mat_u,
            &mat_f,
            &self.vecs,
            &self.scal,
            &self.params,
        );
        self.mat_u = mat_u;
        self.mat_f = mat_f;
        self.cap_u = cap_u;
        self.cap_f = cap_f;
    }

    fn set_mask(&mut self, ctx: &GpuContext, known: &[bool]) {
        let mask: Vec<u32> = known.iter().map(|&k| u32::from(k)).collect();
        if mask != self.mask {
            ctx.queue.write_buffer(
                &self.mat_u,
                (self.off_mask * 4) as u64,
                bytemuck::cast_slice(&mask),
            );
            self.mask = mask;
        }
    }

    fn set_precond(&mut self, ctx: &GpuContext, c_mass: f64, c_stiff: f64) {
        if self.precond_for == Some((c_mass, c_stiff)) {
            return;
        }
        let mut words = Vec::with_capacity(9 * self.n);
        for (d, m) in self.diag_k.iter().zip(&self.diag_m) {
            let block = DMat3::from_diagonal(DVec3::splat(c_mass * m)) + *d * c_stiff;
            let inv = if block.determinant().abs() > 0.0 {
                block.inverse()
            } else {
                DMat3::IDENTITY
            };
            words.extend_from_slice(&mat_f32(&inv));
        }
        ctx.queue.write_buffer(
            &self.mat_f,
            (self.off_prec * 4) as u64,
            bytemuck::cast_slice(&words),
        );
        self.precond_for = Some((c_mass, c_stiff));
    }

    fn write_vec(&self, ctx: &GpuContext, segment: u64, v: &[DVec3]) {
        ctx.queue.write_buffer(
            &self.vecs,
            segment * (16 * self.n) as u64,
            bytemuck::cast_slice(&to_vec4(v)),
        );
    }

    fn num_partials(&self) -> u32 {
        (self.n as u32).div_ceil(WG_REDUCE).clamp(1, MAX_PARTIALS)
    }

    /// Uploads the constraint basis and the parameters of one solve.
    #[allow(clippy::too_many_arguments)]
    fn set_params(
        &mut self,
        ctx: &GpuContext,
        kernels: &Kernels,
        basis: &ConstraintBasis,
        rotation: DMat3,
        c_mass: f64,
        c_stiff: f64,
        tolerance: f64,
        max_iterations: usize,
    ) {
        let cols = &basis.columns;
        let entries: usize = cols.iter().map(Vec::len).sum();
        self.reserve(ctx, kernels, cols.len() + 1 + entries, entries);
        let off_cptr = self.u_static;
        let off_cidx = off_cptr + cols.len() + 1;
        let off_cw = self.f_static;
        if !cols.is_empty() {
            let mut u = Vec::with_capacity(cols.len() + 1 + entries);
            let mut acc = 0u32;
            u.push(0);
            for c in cols {
                acc += c.len() as u32;
                u.push(acc);
            }
            let mut w = Vec::with_capacity(entries);
            for c in cols {
                for &(l, x) in c {
                    u.push(l as u32);
                    w.push(x as f32);
                }
            }
            ctx.queue
                .write_buffer(&self.mat_u, (off_cptr * 4) as u64, bytemuck::cast_slice(&u));
            ctx.queue
                .write_buffer(&self.mat_f, (off_cw * 4) as u64, bytemuck::cast_slice(&w));
        }
        let r = rotation.to_cols_array();
        let params = Params {
            n: self.n as u32,
            nnz: self.nnz as u32,
            mass_kind: u32::from(self.mass_kind == MassKind::Consistent),
            n_cols: cols.len() as u32,
            off_col: (self.n + 1) as u32,
            off_mask: self.off_mask as u32,
            off_cptr: off_cptr as u32,
            off_cidx: off_cidx as u32,
            off_mass: self.off_mass as u32,
            off_prec: self.off_prec as u32,
            off_cw: off_cw as u32,
            num_partials: self.num_partials(),
            c_mass: c_mass as f32,
            c_stiff: c_stiff as f32,
            tolerance: tolerance as f32,
            max_iterations: max_iterations.min(1 << 24) as f32,
            rot: std::array::from_fn(|c| {
                [
                    r[3 * c] as f32,
                    r[3 * c + 1] as f32,
                    r[3 * c + 2] as f32,
                    0.0,
                ]
            }),
        };
        ctx.queue
            .write_buffer(&self.params, 0, bytemuck::bytes_of(&params));
    }

    fn rows(&self) -> u32 {
        (self.n as u32).div_ceil(WG_ROWS)
    }

    fn dispatch(&self, pass: &mut wgpu::ComputePass<'_>, p: &wgpu::ComputePipeline, groups: u32) {
        pass.set_pipeline(p);
        pass.set_bind_group(0, &self.bind, &[]);
        pass.dispatch_workgroups(groups, 1, 1);
    }

    /// Records the start of the solve: r₀ of the cold start, the warm start
    /// (z holds it), z, p, rz and the first convergence test.
    fn record_init(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        k: &Kernels,
        constrained: bool,
        warm: bool,
    ) {
        let (rows, parts) = (self.rows(), self.num_partials());
        self.dispatch(pass, &k.residual, rows);
        if constrained {
            self.dispatch(pass, &k.project_r, 1);
        }
        self.dispatch(pass, &k.dot_rr, parts);
        self.dispatch(pass, &k.finalize_r0, 1);
        if warm {
            self.dispatch(pass, &k.warm_add, rows);
            self.dispatch(pass, &k.residual, rows);
            if constrained {
                self.dispatch(pass, &k.project_r, 1);
            }
        }
        self.dispatch(pass, &k.precond, rows);
        if constrained {
            self.dispatch(pass, &k.project_z, 1);
        }
        self.dispatch(pass, &k.copy_p, rows);
        self.dispatch(pass, &k.dot_rz_rr, parts);
        self.dispatch(pass, &k.finalize_init, 1);
    }

    fn record_iteration(&self, pass: &mut wgpu::ComputePass<'_>, k: &Kernels, constrained: bool) {
        let (rows, parts) = (self.rows(), self.num_partials());
        self.dispatch(pass, &k.spmv_p, rows);
        if constrained {
            self.dispatch(pass, &k.project_ap, 1);
        }
        self.dispatch(pass, &k.dot_pap, parts);
        self.dispatch(pass, &k.finalize_alpha, 1);
        if constrained {
            self.dispatch(pass, &k.update_xr, rows);
            self.dispatch(pass, &k.precond, rows);
            self.dispatch(pass, &k.project_z, 1);
        } else {
            self.dispatch(pass, &k.update_xr_precond, rows);
        }
        self.dispatch(pass, &k.dot_rz_rr, parts);
        self.dispatch(pass, &k.finalize_beta, 1);
        self.dispatch(pass, &k.update_p, rows);
    }

    /// Copies the scalars and x into the staging buffers and maps them.
    fn read_back(&self, enc: &mut wgpu::CommandEncoder, with_x: bool) {
        enc.copy_buffer_to_buffer(&self.scal, 0, &self.stage_scal, 0, 64);
        if with_x {
            enc.copy_buffer_to_buffer(&self.vecs, 0, &self.stage_x, 0, (16 * self.n) as u64);
        }
    }
}

fn map_read(
    ctx: &GpuContext,
    buffer: &wgpu::Buffer,
    bytes: u64,
    what: &'static str,
) -> Result<Vec<f32>, GpuFemError> {
    let (tx, rx) = mpsc::channel();
    buffer.map_async(wgpu::MapMode::Read, 0..bytes, move |r| {
        let _ = tx.send(r);
    });
    ctx.wait_idle()?;
    let err = |cause: String| GpuFemError::Readback { what, cause };
    rx.recv()
        .map_err(|e| err(e.to_string()))?
        .map_err(|e| err(e.to_string()))?;
    let out = {
        let view = buffer
            .get_mapped_range(0..bytes)
            .map_err(|e| err(format!("{e:?}")))?;
        bytemuck::cast_slice::<u8, f32>(&view).to_vec()
    };
    buffer.unmap();
    Ok(out)
}

/// The smallest relative residual the GPU's f32 CG is asked for in a
/// dynamic step (a tighter `cg_tolerance` is raised to it; static solves
/// refine in f64 and keep theirs).
pub const F32_CG_FLOOR: f64 = 1e-5;

/// A [`FemBody`] whose CG solves run on the GPU.
pub struct GpuFemBody {
    /// The CPU body: lattice, regions, settings, constraints and the f64
    /// state (q, v). Edit `fixed`, `constraints` and `settings` here.
    pub body: FemBody,
    /// CG iterations recorded per submission after the first.
    pub batch: usize,
    /// Rounds of f64 iterative refinement after a static solve's f32 CG
    /// (K alone is ill-conditioned: f32 leaves ~cond(K)·6e-8 of residual).
    pub static_refinement: usize,
    ctx: GpuContext,
    kernels: Kernels,
    regions: Vec<RegionGpu>,
    warm: Vec<Vec<DVec3>>,
}

impl GpuFemBody {
    /// Uploads the regions' matrices of `body` to the GPU of `ctx`.
    pub fn new(ctx: &GpuContext, body: FemBody) -> Self {
        let kernels = Kernels::new(&ctx.device);
        let regions = body
            .regions
            .iter()
            .map(|r| RegionGpu::new(ctx, &kernels, &r.matrices, body.settings.mass))
            .collect();
        let warm = body
            .regions
            .iter()
            .map(|r| vec![DVec3::ZERO; r.len()])
            .collect();
        Self {
            body,
            batch: 16,
            static_refinement: 2,
            ctx: ctx.clone(),
            kernels,
            regions,
            warm,
        }
    }

    pub fn vertex_count(&self) -> usize {
        self.body.vertex_count()
    }

    /// Deformed vertex positions r_a + q_a.
    pub fn positions(&self) -> Vec<DVec3> {
        self.body.positions()
    }

    /// `A x` for region `region` on the GPU (no masking): the product the CG
    /// runs, exposed for tests.
    pub fn apply(
        &mut self,
        region: usize,
        rotation: DMat3,
        c_mass: f64,
        c_stiff: f64,
        x: &[DVec3],
    ) -> Result<Vec<DVec3>, GpuFemError> {
        let rg = &mut self.regions[region];
        assert_eq!(x.len(), rg.n);
        let none = ConstraintBasis {
            columns: Vec::new(),
        };
        rg.set_mask(&self.ctx, &vec![false; rg.n]);
        rg.set_params(
            &self.ctx,
            &self.kernels,
            &none,
            rotation,
            c_mass,
            c_stiff,
            0.0,
            0,
        );
        rg.write_vec(&self.ctx, V_P, x);
        let mut enc = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            rg.dispatch(&mut pass, &self.kernels.spmv_p, rg.rows());
        }
        let bytes = (16 * rg.n) as u64;
        enc.copy_buffer_to_buffer(&rg.vecs, V_AP * bytes, &rg.stage_x, 0, bytes);
        self.ctx.queue.submit(Some(enc.finish()));
        let y = map_read(&self.ctx, &rg.stage_x, bytes, "A x")?;
        Ok(y.chunks_exact(4)
            .map(|c| DVec3::new(c[0] as f64, c[1] as f64, c[2] as f64))
            .collect())
    }

    /// Solves region `ri`'s `A x = b` with `x` holding the known entries
    /// (and the start of the unknown ones) on input, like the CPU's
    /// `projected_pcg`; returns the report and leaves the solution in `x`.
    #[allow(clippy::too_many_arguments)]
    fn solve(
        &mut self,
        ri: usize,
        rotation: DMat3,
        c_mass: f64,
        c_stiff: f64,
        b: &[DVec3],
        x: &mut [DVec3],
        known: &[bool],
        cons: &[LocalConstraint],
        warm: bool,
    ) -> Result<CgReport, GpuFemError> {
        let s = self.body.settings.clone();
        // f32 CG stalls near a relative residual of 1.6e-6: asking for less
        // would only run it to the iteration cap.
        let tolerance = s.cg_tolerance.max(F32_CG_FLOOR);
        let n = x.len();
        let (basis, dropped) = ConstraintBasis::new(n, known, cons, x);
        let rg = &mut self.regions[ri];
        let ctx = &self.ctx;
        rg.set_mask(ctx, known);
        rg.set_precond(ctx, c_mass, c_stiff);
        rg.set_params(
            ctx,
            &self.kernels,
            &basis,
            rotation,
            c_mass,
            c_stiff,
            tolerance,
            s.cg_max_iterations,
        );
        rg.write_vec(ctx, V_X, x);
        rg.write_vec(ctx, V_B, b);
        if warm {
            let mut w = self.warm[ri].clone();
            for (wi, &k) in w.iter_mut().zip(known) {
                if k {
                    *wi = DVec3::ZERO;
                }
            }
            basis.project(&mut w);
            rg.write_vec(ctx, V_Z, &w);
        }
        let constrained = !basis.columns.is_empty();
        let max = s.cg_max_iterations;
        let mut recorded = 0usize;
        let mut first = true;
        let (scalars, xs) = loop {
            let count = if first {
                (rg.last_iterations + 1).max(4)
            } else {
                self.batch.max(1)
            }
            .min(max - recorded);
            let mut enc = ctx
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            {
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
                if first {
                    rg.record_init(&mut pass, &self.kernels, constrained, warm);
                }
                for _ in 0..count {
                    rg.record_iteration(&mut pass, &self.kernels, constrained);
                }
            }
            first = false;
            recorded += count;
            rg.read_back(&mut enc, true);
            ctx.queue.submit(Some(enc.finish()));
            let scalars = map_read(ctx, &rg.stage_scal, 64, "CG scalars")?;
            if scalars[S_DONE] != 0.0 || recorded >= max {
                let xs = map_read(ctx, &rg.stage_x, (16 * n) as u64, "CG solution")?;
                break (scalars, xs);
            }
        };
        // Known entries keep their exact f64 values; the rest come back f32.
        for ((xi, c), &k) in x.iter_mut().zip(xs.chunks_exact(4)).zip(known) {
            if !k {
                *xi = DVec3::new(c[0] as f64, c[1] as f64, c[2] as f64);
            }
        }
        let r0 = (scalars[S_R0SQ] as f64).sqrt();
        let iterations = scalars[S_ITER] as usize;
        rg.last_iterations = iterations;
        let rel = if r0 == 0.0 {
            0.0
        } else {
            (scalars[S_RR].max(0.0) as f64).sqrt() / r0
        };
        Ok(CgReport {
            iterations,
            relative_residual: rel,
            converged: rel <= tolerance,
            dropped_constraints: dropped,
        })
    }

    /// The static solve `R K Rᵀ x = b` with f64 iterative refinement: the
    /// residual (masked and projected like the CG's) is formed on the CPU in
    /// f64 and the correction solved on the GPU, `static_refinement` times
    /// or until the f64 relative residual meets the tolerance. The report's
    /// residual is the f64 one, relative to the start's.
    #[allow(clippy::too_many_arguments)]
    fn solve_refined(
        &mut self,
        ri: usize,
        rot: DMat3,
        b: &[DVec3],
        x: &mut [DVec3],
        known: &[bool],
        cons: &[LocalConstraint],
    ) -> Result<CgReport, GpuFemError> {
        let n = x.len();
        let tolerance = self.body.settings.cg_tolerance;
        let residual = |body: &FemBody, x: &[DVec3]| -> Vec<DVec3> {
            let k = &body.regions[ri].matrices.stiffness;
            let rx: Vec<DVec3> = x.iter().map(|v| rot.transpose() * *v).collect();
            let mut kx = vec![DVec3::ZERO; n];
            k.mul(&rx, &mut kx);
            (0..n)
                .map(|l| {
                    if known[l] {
                        DVec3::ZERO
                    } else {
                        b[l] - rot * kx[l]
                    }
                })
                .collect()
        };
        let norm = |v: &[DVec3]| v.iter().map(|a| a.length_squared()).sum::<f64>().sqrt();
        // The start's residual, projected as the CG's (on a copy of x moved
        // onto the constraints, as the CG starts).
        let mut start = x.to_vec();
        let (basis, _) = ConstraintBasis::new(n, known, cons, &mut start);
        let mut r = residual(&self.body, &start);
        basis.project(&mut r);
        let r0 = norm(&r);
        let mut report = self.solve(ri, rot, 0.0, 1.0, b, x, known, cons, false)?;
        if r0 == 0.0 {
            return Ok(report);
        }
        for round in 0..=self.static_refinement {
            let mut r = residual(&self.body, x);
            basis.project(&mut r);
            report.relative_residual = norm(&r) / r0;
            report.converged = report.relative_residual <= tolerance;
            if report.converged || round == self.static_refinement {
                break;
            }
            // A d = r with d = 0 on known rows and Σφ d = what x misses.
            let cons_d: Vec<LocalConstraint> = cons
                .iter()
                .map(|c| LocalConstraint {
                    support: c.support.clone(),
                    value: c.support.iter().fold(c.value, |v, &(l, w)| v - x[l] * w),
                })
                .collect();
            let mut d = vec![DVec3::ZERO; n];
            let inner = self.solve(ri, rot, 0.0, 1.0, &r, &mut d, known, &cons_d, false)?;
            report.iterations += inner.iterations;
            for (xi, di) in x.iter_mut().zip(&d) {
                *xi += *di;
            }
        }
        Ok(report)
    }

    fn constraint_value(&self, c: &PositionConstraint, h: f64) -> DVec3 {
        let b = &self.body;
        let d = b.lattice.displacement(&c.embedding, &b.q);
        let v = b.lattice.displacement(&c.embedding, &b.v);
        (c.target - d) / h - v
    }

    /// One step of linearized implicit Euler, as [`FemBody::step`], with the
    /// CG solves on the GPU.
    pub fn step(&mut self, bones: &[DAffine3]) -> Result<StepReport, GpuFemError> {
        assert_eq!(
            bones.len(),
            self.body.lattice.bones.len(),
            "one transform per bone"
        );
        let s = self.body.settings.clone();
        let h = s.time_step;
        let targets = self.body.pin_targets(bones);
        let nv = self.vertex_count();
        let mut dv = vec![DVec3::ZERO; nv];
        let mut report = StepReport::default();
        for ri in 0..self.regions.len() {
            let region: &Region = &self.body.regions[ri];
            let t = self.body.region_transform(region, bones);
            let rot = t.matrix3;
            let inv = t.inverse();
            let n = region.len();
            let m = &region.matrices;
            let mut tmp = vec![DVec3::ZERO; n];
            let mut vloc = vec![DVec3::ZERO; n];
            for (l, &a) in region.vertices.iter().enumerate() {
                let r = self.body.lattice.rest[a];
                let u = inv.transform_point3(r + self.body.q[a]) - r;
                tmp[l] = u + rot.transpose() * self.body.v[a] * (s.stiffness_damping + h);
                vloc[l] = self.body.v[a];
            }
            let mut ku = vec![DVec3::ZERO; n];
            m.stiffness.mul(&tmp, &mut ku);
            let mut mv = vec![DVec3::ZERO; n];
            match s.mass {
                MassKind::Lumped => {
                    for l in 0..n {
                        mv[l] = vloc[l] * m.lumped_mass[l];
                    }
                }
                MassKind::Consistent => m.consistent_mass.mul(&m.stiffness, &vloc, &mut mv),
            }
            let b: Vec<DVec3> = (0..n)
                .map(|l| {
                    let fg = s.gravity * m.gravity_weight[l];
                    (fg - mv[l] * s.mass_damping - rot * ku[l]) * h
                })
                .collect();
            let mut x = vec![DVec3::ZERO; n];
            let mut known = vec![false; n];
            for (l, &a) in region.vertices.iter().enumerate() {
                if let Some(target) = targets[a] {
                    known[l] = true;
                    x[l] = (target - self.body.q[a]) / h - self.body.v[a];
                }
            }
            let cons = self
                .body
                .local_constraints(region, |c| self.constraint_value(c, h));
            let weights = region.weights.clone();
            let vertices = region.vertices.clone();
            let (c_m, c_k) = s.implicit_euler_coefficients();
            report
                .solves
                .push(self.solve(ri, rot, c_m, c_k, &b, &mut x, &known, &cons, true)?);
            self.warm[ri].copy_from_slice(&x);
            for (l, &a) in vertices.iter().enumerate() {
                dv[a] += x[l] * weights[l];
            }
        }
        if self.regions.len() > 1 {
            let values: Vec<DVec3> = self
                .body
                .constraints
                .iter()
                .map(|c| self.constraint_value(c, h))
                .collect();
            self.body.correct_blend(&mut dv, &targets, &values);
        }
        let body = &mut self.body;
        advance_state(&mut body.q, &mut body.v, &dv, &targets, h);
        Ok(report)
    }

    /// Static equilibrium, as [`FemBody::solve_static`], with the CG solves
    /// on the GPU.
    pub fn solve_static(
        &mut self,
        bones: &[DAffine3],
        extra_forces: Option<&[DVec3]>,
    ) -> Result<StepReport, GpuFemError> {
        assert_eq!(
            bones.len(),
            self.body.lattice.bones.len(),
            "one transform per bone"
        );
        let s = self.body.settings.clone();
        let targets = self.body.pin_targets(bones);
        let nv = self.vertex_count();
        let mut q = vec![DVec3::ZERO; nv];
        let mut report = StepReport::default();
        for ri in 0..self.regions.len() {
            let region: &Region = &self.body.regions[ri];
            let t = self.body.region_transform(region, bones);
            let rot = t.matrix3;
            let inv = t.inverse();
            let n = region.len();
            let m = &region.matrices;
            let tmp: Vec<DVec3> = region
                .vertices
                .iter()
                .map(|&a| {
                    let r = self.body.lattice.rest[a];
                    inv.transform_point3(r) - r
                })
                .collect();
            let mut ku = vec![DVec3::ZERO; n];
            m.stiffness.mul(&tmp, &mut ku);
            let mut b = vec![DVec3::ZERO; n];
            let mut x = vec![DVec3::ZERO; n];
            let mut known = vec![false; n];
            for (l, &a) in region.vertices.iter().enumerate() {
                let mut f = s.gravity * m.gravity_weight[l];
                if let Some(extra) = extra_forces {
                    f += extra[a];
                }
                b[l] = f - rot * ku[l];
                if let Some(target) = targets[a] {
                    known[l] = true;
                    x[l] = target;
                } else {
                    x[l] = self.body.q[a];
                }
            }
            let cons = self.body.local_constraints(region, |c| c.target);
            let weights = region.weights.clone();
            let vertices = region.vertices.clone();
            report
                .solves
                .push(self.solve_refined(ri, rot, &b, &mut x, &known, &cons)?);
            for (l, &a) in vertices.iter().enumerate() {
                q[a] += x[l] * weights[l];
            }
        }
        if self.regions.len() > 1 {
            let values: Vec<DVec3> = self.body.constraints.iter().map(|c| c.target).collect();
            self.body.correct_blend(&mut q, &targets, &values);
        }
        for a in 0..nv {
            if let Some(target) = targets[a] {
                q[a] = target;
            }
        }
        self.body.q = q;
        self.body.v.iter_mut().for_each(|v| *v = DVec3::ZERO);
        Ok(report)
    }
}

/// Either back end behind one stepping API.
pub enum FemBackend {
    Cpu(Box<FemBody>),
    Gpu(Box<GpuFemBody>),
}

impl FemBackend {
    /// The CPU back end, or the GPU one on `ctx` when given.
    pub fn new(body: FemBody, ctx: Option<&GpuContext>) -> Self {
        match ctx {
            Some(ctx) => Self::Gpu(Box::new(GpuFemBody::new(ctx, body))),
            None => Self::Cpu(Box::new(body)),
        }
    }

    /// The body: lattice, settings, constraints and state.
    pub fn body(&self) -> &FemBody {
        match self {
            Self::Cpu(b) => b,
            Self::Gpu(g) => &g.body,
        }
    }

    pub fn body_mut(&mut self) -> &mut FemBody {
        match self {
            Self::Cpu(b) => b,
            Self::Gpu(g) => &mut g.body,
        }
    }

    pub fn step(&mut self, bones: &[DAffine3]) -> Result<StepReport, GpuFemError> {
        match self {
            Self::Cpu(b) => Ok(b.step(bones)),
            Self::Gpu(g) => g.step(bones),
        }
    }

    pub fn solve_static(
        &mut self,
        bones: &[DAffine3],
        extra_forces: Option<&[DVec3]>,
    ) -> Result<StepReport, GpuFemError> {
        match self {
            Self::Cpu(b) => Ok(b.solve_static(bones, extra_forces)),
            Self::Gpu(g) => g.solve_static(bones, extra_forces),
        }
    }

    pub fn positions(&self) -> Vec<DVec3> {
        self.body().positions()
    }
}
