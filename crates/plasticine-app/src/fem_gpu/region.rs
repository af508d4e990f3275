//! The GPU side of one bone region: its buffers, the compute kernels
//! (`fem_cg.wgsl`) and the per-step uploads and dispatches.

use crate::fem::Assembled;
use crate::fem::{ConstraintBasis, MassKind};
use crate::gpu::GpuContext;
use glam::{DMat3, DVec3};

pub(super) const WG_ROWS: u32 = 64;
pub(super) const WG_REDUCE: u32 = 256;
pub(super) const MAX_PARTIALS: u32 = 256;
pub(super) const PART: u64 = 16;
pub(super) const SCALARS: u64 = PART + 4 * MAX_PARTIALS as u64;
pub(super) const S_RR: usize = 4;
pub(super) const S_R0SQ: usize = 5;
pub(super) const S_ITER: usize = 6;
pub(super) const S_DONE: usize = 7;
pub(super) const V_X: u64 = 0;
pub(super) const V_B: u64 = 1;
pub(super) const V_Z: u64 = 3;
pub(super) const V_P: u64 = 4;
pub(super) const V_AP: u64 = 5;

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct Params {
    pub(super) n: u32,
    pub(super) width: u32,
    pub(super) mass_kind: u32,
    pub(super) n_cols: u32,
    pub(super) off_col: u32,
    pub(super) off_mask: u32,
    pub(super) off_cptr: u32,
    pub(super) off_cidx: u32,
    pub(super) off_mass: u32,
    pub(super) off_prec: u32,
    pub(super) off_cw: u32,
    pub(super) num_partials: u32,
    pub(super) c_mass: f32,
    pub(super) c_stiff: f32,
    pub(super) tolerance: f32,
    pub(super) max_iterations: f32,
    pub(super) rot: [[f32; 4]; 3],
}

/// The compiled kernels and their bind group layout.
pub(super) struct Kernels {
    pub(super) layout: wgpu::BindGroupLayout,
    pub(super) residual: wgpu::ComputePipeline,
    pub(super) spmv_p: wgpu::ComputePipeline,
    pub(super) warm_add: wgpu::ComputePipeline,
    pub(super) precond: wgpu::ComputePipeline,
    pub(super) copy_p: wgpu::ComputePipeline,
    pub(super) update_xr: wgpu::ComputePipeline,
    pub(super) update_p: wgpu::ComputePipeline,
    pub(super) project_r: wgpu::ComputePipeline,
    pub(super) project_z: wgpu::ComputePipeline,
    pub(super) project_ap: wgpu::ComputePipeline,
    pub(super) dot_rr: wgpu::ComputePipeline,
    pub(super) dot_pap: wgpu::ComputePipeline,
    pub(super) dot_rz_rr: wgpu::ComputePipeline,
    pub(super) finalize_r0: wgpu::ComputePipeline,
    pub(super) finalize_init: wgpu::ComputePipeline,
    pub(super) finalize_alpha: wgpu::ComputePipeline,
    pub(super) finalize_beta: wgpu::ComputePipeline,
    pub(super) spmv_dot: wgpu::ComputePipeline,
    pub(super) update_dot: wgpu::ComputePipeline,
    pub(super) update_p_dot: wgpu::ComputePipeline,
}

impl Kernels {
    pub(super) fn new(device: &wgpu::Device) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("fem_cg"),
            source: wgpu::ShaderSource::Wgsl(
                include_str!("../../../../shaders/fem_cg.wgsl").into(),
            ),
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
            spmv_dot: pipe("spmv_dot"),
            update_dot: pipe("update_dot"),
            update_p_dot: pipe("update_p_dot"),
            layout,
        }
    }
}

/// One region's matrices and CG vectors on the GPU.
pub(super) struct RegionGpu {
    pub(super) n: usize,
    /// ELL slots per row: the longest row of K.
    pub(super) width: usize,
    pub(super) mass_kind: MassKind,
    /// u32 words of `mat_u` before the constraint data (the ELL columns, the mask).
    pub(super) u_static: usize,
    /// f32 words of `mat_f` before the constraint data (K, mass, precond).
    pub(super) f_static: usize,
    pub(super) off_mask: usize,
    pub(super) off_mass: usize,
    pub(super) off_prec: usize,
    pub(super) cap_u: usize,
    pub(super) cap_f: usize,
    pub(super) mat_u: wgpu::Buffer,
    pub(super) mat_f: wgpu::Buffer,
    pub(super) vecs: wgpu::Buffer,
    pub(super) scal: wgpu::Buffer,
    pub(super) params: wgpu::Buffer,
    pub(super) stage_scal: wgpu::Buffer,
    pub(super) stage_x: wgpu::Buffer,
    pub(super) bind: wgpu::BindGroup,
    /// The mask now on the GPU.
    pub(super) mask: Vec<u32>,
    /// (`c_mass`, `c_stiff`) the preconditioner on the GPU was built for.
    pub(super) precond_for: Option<(f64, f64)>,
    /// The preconditioner's unrotated diagonal blocks `c_m` m + `c_s` `K_aa`.
    pub(super) diag_k: Vec<DMat3>,
    pub(super) diag_m: Vec<f64>,
    /// Iterations of the last solve: the first batch's length.
    pub(super) last_iterations: usize,
}

pub(super) fn storage_buffer(device: &wgpu::Device, label: &str, words: usize) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: (words.max(4) * 4) as u64,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}

pub(super) fn staging_buffer(device: &wgpu::Device, label: &str, bytes: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: bytes.max(16),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

pub(super) fn to_vec4(v: &[DVec3]) -> Vec<[f32; 4]> {
    v.iter()
        .map(|a| [a.x as f32, a.y as f32, a.z as f32, 0.0])
        .collect()
}

pub(super) fn mat_f32(m: &DMat3) -> [f32; 9] {
    let c = m.to_cols_array();
    std::array::from_fn(|i| c[i] as f32)
}

impl RegionGpu {
    pub(super) fn new(
        ctx: &GpuContext,
        kernels: &Kernels,
        m: &Assembled,
        mass_kind: MassKind,
    ) -> Self {
        let k = &m.stiffness;
        let n = k.rows();
        // ELLPACK, slot-major (see fem_cg.wgsl): entry (slot s, row r) at
        // s·n + r; padding points at the row itself with a zero block.
        let width = k.row_ptr.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        let slots = width * n;
        let mut u: Vec<u32> = (0..slots).map(|e| (e % n.max(1)) as u32).collect();
        let mut f = vec![0f32; 9 * slots];
        let mut ell_mass = vec![0f32; slots];
        for r in 0..n {
            for (s, i) in (k.row_ptr[r]..k.row_ptr[r + 1]).enumerate() {
                let e = s * n + r;
                u[e] = k.col[i];
                for (c, x) in mat_f32(&k.blocks[i]).into_iter().enumerate() {
                    f[(9 * s + c) * n + r] = x;
                }
                if mass_kind == MassKind::Consistent {
                    ell_mass[e] = m.consistent_mass.values[i] as f32;
                }
            }
        }
        let off_mask = u.len();
        u.resize(off_mask + n, 0);
        let u_static = u.len();
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
                ell_mass,
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
            width,
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

    pub(super) fn bind_group(
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
    pub(super) fn reserve(
        &mut self,
        ctx: &GpuContext,
        kernels: &Kernels,
        u_words: usize,
        f_words: usize,
    ) {
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

    pub(super) fn set_mask(&mut self, ctx: &GpuContext, known: &[bool]) {
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

    pub(super) fn set_precond(&mut self, ctx: &GpuContext, c_mass: f64, c_stiff: f64) {
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

    pub(super) fn write_vec(&self, ctx: &GpuContext, segment: u64, v: &[DVec3]) {
        ctx.queue.write_buffer(
            &self.vecs,
            segment * (16 * self.n) as u64,
            bytemuck::cast_slice(&to_vec4(v)),
        );
    }

    pub(super) fn num_partials(&self) -> u32 {
        (self.n as u32).div_ceil(WG_REDUCE).clamp(1, MAX_PARTIALS)
    }

    /// Uploads the constraint basis and the parameters of one solve.
    #[allow(
        clippy::too_many_arguments,
        reason = "the kernels' parameter block, field by field"
    )]
    pub(super) fn set_params(
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
            width: self.width as u32,
            mass_kind: u32::from(self.mass_kind == MassKind::Consistent),
            n_cols: cols.len() as u32,
            off_col: 0,
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

    pub(super) fn rows(&self) -> u32 {
        (self.n as u32).div_ceil(WG_ROWS)
    }

    pub(super) fn dispatch(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        p: &wgpu::ComputePipeline,
        groups: u32,
    ) {
        pass.set_pipeline(p);
        pass.set_bind_group(0, &self.bind, &[]);
        pass.dispatch_workgroups(groups, 1, 1);
    }

    /// Records the start of the solve: r₀ of the cold start, the warm start
    /// (z holds it), z, p, rz and the first convergence test.
    pub(super) fn record_init(
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

    pub(super) fn record_iteration(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        k: &Kernels,
        constrained: bool,
    ) {
        let (rows, parts) = (self.rows(), self.num_partials());
        if !constrained {
            // Three passes, each finishing the last one's dot product.
            self.dispatch(pass, &k.spmv_dot, parts);
            self.dispatch(pass, &k.update_dot, parts);
            self.dispatch(pass, &k.update_p_dot, parts);
            return;
        }
        // z must be projected between the update and the next dot.
        self.dispatch(pass, &k.spmv_p, rows);
        self.dispatch(pass, &k.project_ap, 1);
        self.dispatch(pass, &k.dot_pap, parts);
        self.dispatch(pass, &k.finalize_alpha, 1);
        self.dispatch(pass, &k.update_xr, rows);
        self.dispatch(pass, &k.precond, rows);
        self.dispatch(pass, &k.project_z, 1);
        self.dispatch(pass, &k.dot_rz_rr, parts);
        self.dispatch(pass, &k.finalize_beta, 1);
        self.dispatch(pass, &k.update_p, rows);
    }

    /// Copies the scalars and x into the staging buffers and maps them.
    pub(super) fn read_back(&self, enc: &mut wgpu::CommandEncoder, with_x: bool) {
        enc.copy_buffer_to_buffer(&self.scal, 0, &self.stage_scal, 0, 64);
        if with_x {
            enc.copy_buffer_to_buffer(&self.vecs, 0, &self.stage_x, 0, (16 * self.n) as u64);
        }
    }
}
