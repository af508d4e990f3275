"""Writes a .glb with a shape key from Blender's own glTF exporter.

Usage: python blender_shape_keys.py OUT.glb

A UV sphere of radius 0.1 (16 segments, 8 rings, smooth, no UVs) with a
shape key "lift" that raises the vertices of its upper cap (z > 0.05) by
0.02 m, exported with sparse morph-target accessors where they are
smaller (Blender's export_try_sparse_sk), without normals or texture
coordinates so no vertex is split.
"""

import sys

import bpy

out = sys.argv[1]
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.mesh.primitive_uv_sphere_add(segments=16, ring_count=8, radius=0.1)
sphere = bpy.context.active_object
sphere.name = "ball"
sphere.shape_key_add(name="Basis")
lift = sphere.shape_key_add(name="lift")
for point in lift.data:
    if point.co.z > 0.05:
        point.co.z += 0.02
result = bpy.ops.export_scene.gltf(
    filepath=out,
    export_format="GLB",
    export_morph=True,
    export_morph_normal=False,
    export_try_sparse_sk=True,
    export_normals=False,
    export_texcoords=False,
    export_materials="NONE",
)
print(result)
