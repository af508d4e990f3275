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

use crate::fem::Region;
use crate::fem::{
    CgReport, ConstraintBasis, FemBody, LocalConstraint, MassKind, PositionConstraint, StepReport,
    advance_state,
};
use crate::gpu::{GpuContext, GpuError};
use glam::{DAffine3, DMat3, DVec3};

/// Errors of the GPU back end.
#[derive(Debug, thiserror::Error)]
pub enum GpuFemError {
    /// The GPU (wgpu) context reported an error.
    #[error("GPU FEM: {0}")]
    Gpu(#[from] GpuError),
    /// Mapping a GPU buffer to read it back failed.
    #[error("GPU FEM: reading back {what}: {cause}")]
    Readback {
        /// What was being read back (e.g. the CG scalars).
        what: &'static str,
        /// The error wgpu or its callback channel reported.
        cause: String,
    },
}

mod region;

use region::{Kernels, RegionGpu, S_DONE, S_ITER, S_R0SQ, S_RR, V_AP, V_B, V_P, V_X, V_Z};

fn map_read(
    ctx: &GpuContext,
    buffer: &wgpu::Buffer,
    bytes: u64,
    what: &'static str,
) -> Result<Vec<f32>, GpuFemError> {
    let raw = crate::gpu::read_buffer(ctx, buffer, bytes).map_err(|e| match e {
        GpuError::Readback(cause) => GpuFemError::Readback { what, cause },
        other => other.into(),
    })?;
    // A byte Vec need not be aligned for f32: copy, not cast.
    Ok(bytemuck::pod_collect_to_vec::<u8, f32>(&raw))
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

    /// Number of lattice vertices.
    pub fn vertex_count(&self) -> usize {
        self.body.vertex_count()
    }

    /// Deformed vertex positions `r_a` + `q_a`.
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
    #[allow(
        clippy::too_many_arguments,
        reason = "one solve's right-hand side, constraints and tolerances, as the CPU solver takes them"
    )]
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
    #[allow(
        clippy::too_many_arguments,
        reason = "one solve's right-hand side, constraints and tolerances, as the CPU solver takes them"
    )]
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
    /// The CPU back end: f64 CG.
    Cpu(Box<FemBody>),
    /// The GPU back end: f32 CG in wgpu compute kernels.
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

    /// The body, mutably: edit its clamps (`fixed`), constraints and settings here.
    pub fn body_mut(&mut self) -> &mut FemBody {
        match self {
            Self::Cpu(b) => b,
            Self::Gpu(g) => &mut g.body,
        }
    }

    /// One step of linearized implicit Euler to bone transforms `bones` on this back
    /// end (only the GPU one can fail).
    pub fn step(&mut self, bones: &[DAffine3]) -> Result<StepReport, GpuFemError> {
        match self {
            Self::Cpu(b) => Ok(b.step(bones)),
            Self::Gpu(g) => g.step(bones),
        }
    }

    /// Static equilibrium with the bones at `bones` under gravity and `extra_forces`
    /// (if any) on this back end; sets q and zeroes v.
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

    /// Deformed vertex positions `r_a + q_a`, m.
    pub fn positions(&self) -> Vec<DVec3> {
        self.body().positions()
    }
}
