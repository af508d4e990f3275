//! A [`MorphMesh`] posed on the GPU (DyRT §4): `shaders/morph.wgsl`
//! superposes every vertex's targets before skinning, once per frame, into
//! a buffer of positions and unit normals that both eyes draw from
//! (`Renderer::set_morph`). Static buffers hold what never changes (rest
//! position and normal, four joints and weights, each vertex's `Φ̄` and `N`
//! over its span of targets, the triangles); a frame uploads only the
//! uniform of the bone palette and the weights, a few hundred bytes.
//!
//! DyRT evaluates the sum in the vertex program. Here one compute pass does
//! it for the frame: a stereo frame draws the mesh twice (or once with
//! multiview), and every stereo path then draws the same posed vertices
//! instead of evaluating the targets per eye. Where the device offers no
//! compute or too few storage buffers (a downlevel GL device), or the mesh
//! exceeds the uniform's palette or weight room, [`MorphMeshGpu::new`]
//! says why and the caller poses on the CPU ([`MorphMesh::positions`], the
//! same sum).

use super::RenderError;
use crate::gpu::{GpuContext, GpuError, read_buffer};
use crate::morph::MorphMesh;
use glam::{DAffine3, Mat4, Vec3};

/// Most joints the uniform's bone palette holds (`MAX_JOINTS` in the shader).
pub const MAX_JOINTS: usize = 64;
/// Most modes the uniform's amplitudes hold (4 × `MAX_MODE_VEC4S`).
pub const MAX_MODES: usize = 256;
/// Invocations per workgroup (`@workgroup_size` in the shader).
const WORKGROUP: u32 = 64;

/// One vertex's static data, as `Vertex` in the shader.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct GpuVertex {
    rest: [f32; 4],
    normal: [f32; 4],
    joints: [u32; 4],
    weights: [f32; 4],
    span: [u32; 4],
}

/// The per-frame uniform's header, before the palette and amplitudes.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct FrameHeader {
    vertex_count: u32,
    modes: u32,
    joints: u32,
    _pad: u32,
}

const HEADER_BYTES: u64 = std::mem::size_of::<FrameHeader>() as u64;
const PALETTE_BYTES: u64 = 64 * MAX_JOINTS as u64;
const FRAME_BYTES: u64 = HEADER_BYTES + PALETTE_BYTES + 4 * MAX_MODES as u64;

/// Why the GPU cannot pose a morph mesh (the CPU does it instead).
#[derive(Debug, thiserror::Error)]
pub enum MorphGpuError {
    /// The device lacks what the compute pass needs.
    #[error("the GPU cannot pose the morph mesh: {0}")]
    Unsupported(String),
    /// The mesh has more joints or modes than the uniform holds.
    #[error("the morph mesh has {what}, the GPU uniform holds at most {limit}")]
    TooLarge {
        /// What is too many (e.g. "70 joints").
        what: String,
        /// The limit.
        limit: usize,
    },
    /// The device failed.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// Reading the posed vertices back failed.
    #[error("reading the posed morph mesh back: {0}")]
    Readback(String),
}

/// A morph mesh's buffers and compute pass on one device.
pub struct MorphMeshGpu {
    pipeline: wgpu::ComputePipeline,
    bind: wgpu::BindGroup,
    frame: wgpu::Buffer,
    posed: wgpu::Buffer,
    indices: wgpu::Buffer,
    index_count: u32,
    vertex_count: u32,
    modes: usize,
    joints: usize,
    /// Bytes of the static buffers (vertices and mode shapes).
    pub static_bytes: u64,
}

impl MorphMeshGpu {
    /// Uploads `mesh` (posed by `joints` joints) to the device of `ctx`.
    pub fn new(ctx: &GpuContext, mesh: &MorphMesh, joints: usize) -> Result<Self, MorphGpuError> {
        if joints == 0 || joints > MAX_JOINTS {
            return Err(MorphGpuError::TooLarge {
                what: format!("{joints} joints"),
                limit: MAX_JOINTS,
            });
        }
        if mesh.modes > MAX_MODES {
            return Err(MorphGpuError::TooLarge {
                what: format!("{} modes", mesh.modes),
                limit: MAX_MODES,
            });
        }
        let flags = ctx.adapter.get_downlevel_capabilities().flags;
        if !flags.contains(wgpu::DownlevelFlags::COMPUTE_SHADERS) {
            return Err(MorphGpuError::Unsupported(
                "the device runs no compute shaders".into(),
            ));
        }
        let limits = ctx.device.limits();
        if limits.max_storage_buffers_per_shader_stage < 3 {
            return Err(MorphGpuError::Unsupported(format!(
                "{} storage buffers per stage, 3 needed",
                limits.max_storage_buffers_per_shader_stage
            )));
        }
        let (vertices, shapes) = static_data(mesh);
        let vertex_bytes = std::mem::size_of_val(vertices.as_slice()) as u64;
        let shape_bytes = std::mem::size_of_val(shapes.as_slice()) as u64;
        let posed_bytes = 32 * vertices.len().max(1) as u64;
        let largest = vertex_bytes.max(shape_bytes).max(posed_bytes);
        if largest > limits.max_storage_buffer_binding_size {
            return Err(MorphGpuError::Unsupported(format!(
                "a {largest}-byte buffer, over the device's {}-byte storage binding limit",
                limits.max_storage_buffer_binding_size
            )));
        }
        let device = &ctx.device;
        let storage = |label: &str, bytes: &[u8], extra: wgpu::BufferUsages| {
            let b = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes.len().max(16) as u64,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | extra,
                mapped_at_creation: false,
            });
            ctx.queue.write_buffer(&b, 0, bytes);
            b
        };
        let vertex_buf = storage(
            "morph vertices",
            bytemuck::cast_slice(&vertices),
            wgpu::BufferUsages::empty(),
        );
        let shape_buf = storage(
            "morph shapes",
            bytemuck::cast_slice(&shapes),
            wgpu::BufferUsages::empty(),
        );
        let posed = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("morph posed"),
            size: posed_bytes,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::VERTEX,
            mapped_at_creation: false,
        });
        let triangles: Vec<u32> = mesh.triangles.iter().flatten().copied().collect();
        let indices = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("morph triangles"),
            size: (4 * triangles.len()).max(16) as u64,
            usage: wgpu::BufferUsages::INDEX | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        ctx.queue
            .write_buffer(&indices, 0, bytemuck::cast_slice(&triangles));
        let frame = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("morph frame"),
            size: FRAME_BYTES,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let (pipeline, layout) = pose_pipeline(device);
        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("morph"),
            layout: &layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: vertex_buf.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: shape_buf.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: frame.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: posed.as_entire_binding(),
                },
            ],
        });
        Ok(Self {
            pipeline,
            bind,
            frame,
            posed,
            indices,
            index_count: triangles.len() as u32,
            vertex_count: vertices.len() as u32,
            modes: mesh.modes,
            joints,
            static_bytes: vertex_bytes + shape_bytes + 4 * triangles.len() as u64,
        })
    }

    /// Writes a frame's uniform: the joints' placements (rest → posed) and
    /// the amplitudes. Returns the bytes uploaded.
    pub fn set_frame(&self, ctx: &GpuContext, placements: &[DAffine3], q: &[f64]) -> u64 {
        assert_eq!(placements.len(), self.joints, "one placement per joint");
        assert_eq!(q.len(), self.modes, "one amplitude per mode");
        let header = FrameHeader {
            vertex_count: self.vertex_count,
            modes: self.modes as u32,
            joints: self.joints as u32,
            _pad: 0,
        };
        let mut bytes: Vec<u8> = bytemuck::bytes_of(&header).to_vec();
        for p in placements {
            let m = Mat4::from(glam::Affine3A::from(p.as_affine3()));
            bytes.extend_from_slice(bytemuck::cast_slice(&m.to_cols_array()));
        }
        ctx.queue.write_buffer(&self.frame, 0, &bytes);
        let mut amplitudes: Vec<f32> = q.iter().map(|&q| q as f32).collect();
        amplitudes.resize(q.len().div_ceil(4) * 4, 0.0);
        if !amplitudes.is_empty() {
            ctx.queue.write_buffer(
                &self.frame,
                HEADER_BYTES + PALETTE_BYTES,
                bytemuck::cast_slice(&amplitudes),
            );
        }
        bytes.len() as u64 + 4 * amplitudes.len() as u64
    }

    /// Records the pose pass into `encoder`.
    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("morph pose"),
            timestamp_writes: None,
        });
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind, &[]);
        pass.dispatch_workgroups(self.vertex_count.div_ceil(WORKGROUP).max(1), 1, 1);
    }

    /// The posed vertices: per vertex its position then its unit normal, as
    /// `vec4<f32>` each (w 1 and 0).
    pub fn posed(&self) -> &wgpu::Buffer {
        &self.posed
    }

    /// The mesh's triangles (`u32` indices) and how many indices they are.
    pub fn triangles(&self) -> (&wgpu::Buffer, u32) {
        (&self.indices, self.index_count)
    }

    /// Poses the mesh for one frame and reads it back: positions and unit
    /// normals (what tests and the CPU comparison use).
    pub fn pose(
        &self,
        ctx: &GpuContext,
        placements: &[DAffine3],
        q: &[f64],
    ) -> Result<(Vec<Vec3>, Vec<Vec3>), MorphGpuError> {
        self.set_frame(ctx, placements, q);
        let bytes = 32 * u64::from(self.vertex_count);
        let stage = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("morph read"),
            size: bytes.max(16),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        self.encode(&mut encoder);
        encoder.copy_buffer_to_buffer(&self.posed, 0, &stage, 0, bytes);
        ctx.queue.submit(Some(encoder.finish()));
        let raw = read_buffer(ctx, &stage, bytes).map_err(|e| match e {
            GpuError::Readback(cause) => MorphGpuError::Readback(cause),
            other => RenderError::from(other).into(),
        })?;
        let floats: Vec<f32> = bytemuck::pod_collect_to_vec(&raw);
        let mut positions = Vec::with_capacity(self.vertex_count as usize);
        let mut normals = Vec::with_capacity(self.vertex_count as usize);
        for c in floats.chunks_exact(8) {
            positions.push(Vec3::new(c[0], c[1], c[2]));
            normals.push(Vec3::new(c[4], c[5], c[6]));
        }
        Ok((positions, normals))
    }
}

/// Each vertex's static data and the mode shapes (`Φ̄` then `N`, six
/// tightly packed floats per mode of a vertex's span),
/// as the shader reads them.
fn static_data(mesh: &MorphMesh) -> (Vec<GpuVertex>, Vec<[f32; 6]>) {
    let vertices: Vec<GpuVertex> = (0..mesh.rest.len())
        .map(|v| {
            let f = |p: glam::DVec3| {
                let p = p.as_vec3();
                [p.x, p.y, p.z, 0.0]
            };
            GpuVertex {
                rest: f(mesh.rest[v]),
                normal: f(mesh.normal[v]),
                joints: mesh.skin[v].map(|e| e.0 as u32),
                weights: mesh.skin[v].map(|e| e.1 as f32),
                span: [mesh.span[v][0], mesh.span[v][1], mesh.start[v] as u32, 0],
            }
        })
        .collect();
    let mut shapes: Vec<[f32; 6]> = Vec::with_capacity(mesh.shape.len().max(1));
    for (s, n) in mesh.shape.iter().zip(&mesh.normal_shape) {
        let (s, n) = (s.as_vec3(), n.as_vec3());
        shapes.push([s.x, s.y, s.z, n.x, n.y, n.z]);
    }
    if shapes.is_empty() {
        shapes.push([0.0; 6]); // a binding may not be empty
    }
    (vertices, shapes)
}

/// The pose pass and its bind group layout.
fn pose_pipeline(device: &wgpu::Device) -> (wgpu::ComputePipeline, wgpu::BindGroupLayout) {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("morph"),
        source: wgpu::ShaderSource::Wgsl(include_str!("../../../../shaders/morph.wgsl").into()),
    });
    let entry = |binding, ty| wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty,
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    };
    let read = wgpu::BufferBindingType::Storage { read_only: true };
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("morph"),
        entries: &[
            entry(0, read),
            entry(1, read),
            entry(2, wgpu::BufferBindingType::Uniform),
            entry(3, wgpu::BufferBindingType::Storage { read_only: false }),
        ],
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("morph"),
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("morph pose"),
        layout: Some(&pipeline_layout),
        module: &module,
        entry_point: Some("pose"),
        compilation_options: Default::default(),
        cache: None,
    });
    (pipeline, layout)
}
