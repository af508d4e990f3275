//! The glTF document the export builds: typed `gltf-json` elements, and
//! the one buffer's layout (views and accessors over data held in memory,
//! then data streamed from the cache afterwards).

use glam::Vec3;
use gltf::accessor::{ComponentType, GenericComponentType, Type};
use gltf::animation::{Interpolation, Property};
use gltf::buffer::Target;
use gltf::mesh::{Mode, MorphTarget, Primitive, Semantic};
use gltf::validation::{Checked::Valid, USize64};
use gltf::{Accessor, Index};
use gltf_json as gltf;
use std::collections::BTreeMap;

/// The glTF document (its views and accessors over one buffer whose first
/// part is built in memory and whose rest is streamed afterwards, and its
/// nodes and meshes), and the animation's samplers and channels.
#[derive(Default)]
pub(super) struct Builder {
    pub(super) root: gltf::Root,
    /// The in-memory part.
    pub(super) bin: Vec<u8>,
    /// Bytes reserved after `bin` (padded to 4) for streamed views.
    pub(super) streamed: u64,
    pub(super) samplers: Vec<gltf::animation::Sampler>,
    pub(super) channels: Vec<gltf::animation::Channel>,
    /// The scene's root nodes.
    pub(super) scene_roots: Vec<Index<gltf::Node>>,
}

/// The index of element `k` of a document's array.
pub(super) fn index<T>(k: usize) -> Index<T> {
    Index::new(u32::try_from(k).expect("fewer than 2^32 glTF elements"))
}

/// `value` as glTF extras.
pub(super) fn extras(value: &serde_json::Value) -> gltf::Extras {
    Some(serde_json::value::to_raw_value(value).expect("a JSON value serializes"))
}

impl Builder {
    pub(super) fn align(&mut self) {
        while !self.bin.len().is_multiple_of(4) {
            self.bin.push(0);
        }
    }

    pub(super) fn view(
        &mut self,
        offset: u64,
        len: u64,
        target: Option<Target>,
    ) -> Index<gltf::buffer::View> {
        self.root.push(gltf::buffer::View {
            buffer: Index::new(0),
            byte_length: USize64(len),
            byte_offset: Some(USize64(offset)),
            byte_stride: None,
            name: None,
            target: target.map(Valid),
            extensions: None,
            extras: None,
        })
    }

    /// A view over `bytes`, stored in memory.
    pub(super) fn static_view(
        &mut self,
        bytes: &[u8],
        target: Option<Target>,
    ) -> Index<gltf::buffer::View> {
        assert_eq!(self.streamed, 0, "static data goes before streamed data");
        self.align();
        let offset = self.bin.len() as u64;
        self.bin.extend_from_slice(bytes);
        self.view(offset, bytes.len() as u64, target)
    }

    /// A view of `len` bytes (a multiple of 4) to be streamed later, in order.
    pub(super) fn streamed_view(
        &mut self,
        len: u64,
        target: Option<Target>,
    ) -> Index<gltf::buffer::View> {
        debug_assert_eq!(len % 4, 0);
        if self.streamed == 0 {
            self.align();
        }
        let offset = self.bin.len() as u64 + self.streamed;
        self.streamed += len;
        self.view(offset, len, target)
    }

    pub(super) fn accessor(
        &mut self,
        view: Option<Index<gltf::buffer::View>>,
        component: ComponentType,
        count: usize,
        ty: Type,
        bounds: Option<&Bounds>,
    ) -> Index<Accessor> {
        self.root.push(Accessor {
            buffer_view: view,
            byte_offset: None,
            count: USize64::from(count),
            component_type: Valid(GenericComponentType(component)),
            extensions: None,
            extras: None,
            type_: Valid(ty),
            min: bounds.map(|b| gltf::Value::from(b.min.clone())),
            max: bounds.map(|b| gltf::Value::from(b.max.clone())),
            name: None,
            normalized: false,
            sparse: None,
        })
    }

    /// Floats stored in memory, `ty` of `comps` components, with bounds if asked.
    pub(super) fn floats(
        &mut self,
        data: &[f32],
        comps: usize,
        ty: Type,
        target: Option<Target>,
        with_bounds: bool,
    ) -> Index<Accessor> {
        let view = self.static_view(&f32_bytes(data), target);
        let bounds = with_bounds.then(|| Bounds::of(data, comps));
        self.accessor(
            Some(view),
            ComponentType::F32,
            data.len() / comps,
            ty,
            bounds.as_ref(),
        )
    }

    /// Vertex positions or normals, stored in memory.
    pub(super) fn vec3s(&mut self, data: &[Vec3], with_bounds: bool) -> Index<Accessor> {
        let flat: Vec<f32> = data.iter().flat_map(|v| v.to_array()).collect();
        self.floats(&flat, 3, Type::Vec3, Some(Target::ArrayBuffer), with_bounds)
    }

    /// A VEC3 float accessor of `data` stored sparsely (the non-zero
    /// elements and their indices over implicit zeros) when fewer than half
    /// are non-zero, densely otherwise; with min/max.
    pub(super) fn sparse_vec3s(&mut self, data: &[Vec3]) -> Index<Accessor> {
        let nonzero: Vec<u32> = (0..data.len() as u32)
            .filter(|&i| data[i as usize] != Vec3::ZERO)
            .collect();
        if nonzero.is_empty() || 2 * nonzero.len() >= data.len() {
            return self.vec3s(data, true);
        }
        let flat: Vec<f32> = data.iter().flat_map(|v| v.to_array()).collect();
        let bounds = Bounds::of(&flat, 3);
        let index_bytes: Vec<u8> = nonzero.iter().flat_map(|i| i.to_le_bytes()).collect();
        let indices = self.static_view(&index_bytes, None);
        let values: Vec<f32> = nonzero
            .iter()
            .flat_map(|&i| data[i as usize].to_array())
            .collect();
        let values = self.static_view(&f32_bytes(&values), None);
        let accessor = self.accessor(
            None,
            ComponentType::F32,
            data.len(),
            Type::Vec3,
            Some(&bounds),
        );
        self.root.accessors[accessor.value()].sparse = Some(gltf::accessor::sparse::Sparse {
            count: USize64::from(nonzero.len()),
            indices: gltf::accessor::sparse::Indices {
                buffer_view: indices,
                byte_offset: USize64(0),
                component_type: Valid(gltf::accessor::IndexComponentType(ComponentType::U32)),
                extensions: None,
                extras: None,
            },
            values: gltf::accessor::sparse::Values {
                buffer_view: values,
                byte_offset: USize64(0),
                extensions: None,
                extras: None,
            },
            extensions: None,
            extras: None,
        });
        accessor
    }

    /// Joint indices (`u16` VEC4) stored in memory.
    pub(super) fn joints(&mut self, joints: &[[u16; 4]]) -> Index<Accessor> {
        let bytes: Vec<u8> = joints
            .iter()
            .flatten()
            .flat_map(|j| j.to_le_bytes())
            .collect();
        let view = self.static_view(&bytes, Some(Target::ArrayBuffer));
        self.accessor(
            Some(view),
            ComponentType::U16,
            joints.len(),
            Type::Vec4,
            None,
        )
    }

    /// The index accessor of `triangles` over `points` vertices (`u16`
    /// where they fit, else `u32`).
    pub(super) fn indices(&mut self, triangles: &[[u32; 3]], points: usize) -> Index<Accessor> {
        let flat = triangles.iter().flatten().copied();
        let (bytes, ty): (Vec<u8>, ComponentType) = if points <= usize::from(u16::MAX) {
            (
                flat.flat_map(|i| (i as u16).to_le_bytes()).collect(),
                ComponentType::U16,
            )
        } else {
            (
                flat.flat_map(|i| i.to_le_bytes()).collect(),
                ComponentType::U32,
            )
        };
        let view = self.static_view(&bytes, Some(Target::ElementArrayBuffer));
        self.accessor(Some(view), ty, triangles.len() * 3, Type::Scalar, None)
    }

    /// A node at the scene's root.
    pub(super) fn root_node(&mut self, node: gltf::Node) -> Index<gltf::Node> {
        let index = self.root.push(node);
        self.scene_roots.push(index);
        index
    }

    /// `mesh` on a node of its own at the scene's root, skinned to the
    /// skeleton (skin 0) if asked.
    pub(super) fn mesh_node(
        &mut self,
        name: String,
        mesh: gltf::Mesh,
        skinned: bool,
    ) -> Index<gltf::Node> {
        let mesh = self.root.push(mesh);
        self.root_node(gltf::Node {
            name: Some(name),
            mesh: Some(mesh),
            skin: skinned.then(|| Index::new(0)),
            ..Default::default()
        })
    }

    /// An animation channel driving `path` of `node` from `input` to `output`.
    pub(super) fn channel(
        &mut self,
        node: Index<gltf::Node>,
        path: Property,
        (input, output): (Index<Accessor>, Index<Accessor>),
        interpolation: Interpolation,
    ) {
        self.channels.push(gltf::animation::Channel {
            sampler: index(self.samplers.len()),
            target: gltf::animation::Target {
                extensions: None,
                extras: None,
                node,
                path: Valid(path),
            },
            extensions: None,
            extras: None,
        });
        self.samplers.push(gltf::animation::Sampler {
            extensions: None,
            extras: None,
            input,
            interpolation: Valid(interpolation),
            output,
        });
    }

    /// Total buffer length.
    pub(super) fn len(&self) -> u64 {
        self.bin.len().next_multiple_of(4) as u64 + self.streamed
    }
}

/// A triangle-list primitive.
pub(super) fn triangles(
    attributes: &[(Semantic, Index<Accessor>)],
    indices: Option<Index<Accessor>>,
    targets: Option<Vec<MorphTarget>>,
) -> Primitive {
    Primitive {
        attributes: attributes
            .iter()
            .map(|(semantic, accessor)| (Valid(semantic.clone()), *accessor))
            .collect::<BTreeMap<_, _>>(),
        extensions: None,
        extras: None,
        indices,
        material: None,
        mode: Valid(Mode::Triangles),
        targets,
    }
}

/// A morph target displacing positions and normals.
pub(super) fn morph_target(position: Index<Accessor>, normal: Index<Accessor>) -> MorphTarget {
    MorphTarget {
        positions: Some(position),
        normals: Some(normal),
        tangents: None,
    }
}

/// A mesh with its morph targets' names (Blender's shape keys).
pub(super) fn mesh(
    name: String,
    primitives: Vec<Primitive>,
    target_names: &[String],
) -> gltf::Mesh {
    gltf::Mesh {
        extensions: None,
        extras: (!target_names.is_empty())
            .then(|| extras(&serde_json::json!({ "targetNames": target_names })))
            .flatten(),
        name: Some(name),
        primitives,
        weights: (!target_names.is_empty()).then(|| vec![0.0; target_names.len()]),
    }
}

/// Per-component bounds, as the exact values of the stored `f32`s.
#[derive(Clone, Debug)]
pub(super) struct Bounds {
    min: Vec<f64>,
    max: Vec<f64>,
}

impl Bounds {
    pub(super) fn empty(comps: usize) -> Self {
        Self {
            min: vec![f64::INFINITY; comps],
            max: vec![f64::NEG_INFINITY; comps],
        }
    }

    pub(super) fn of(data: &[f32], comps: usize) -> Self {
        let mut b = Self::empty(comps);
        for chunk in data.chunks_exact(comps) {
            for (c, &v) in chunk.iter().enumerate() {
                b.add(c, v);
            }
        }
        b
    }

    pub(super) fn add(&mut self, c: usize, v: f32) {
        let v = f64::from(v);
        self.min[c] = self.min[c].min(v);
        self.max[c] = self.max[c].max(v);
    }

    pub(super) fn add_vec3(&mut self, v: Vec3) {
        for (c, x) in v.to_array().into_iter().enumerate() {
            self.add(c, x);
        }
    }
}

pub(super) fn f32_bytes(data: &[f32]) -> Vec<u8> {
    data.iter().flat_map(|v| v.to_le_bytes()).collect()
}
