"""Imports a glTF file into Blender (the `bpy` module from PyPI, Blender as a
Python module) the way a user's File > Import > glTF 2.0 does, and prints,
as JSON into OUT.json (Blender logs on stdout), what Blender made of it at
some frames.

    python blender_import.py FILE.glb OUT.json FPS FRAME [FRAME ...]

The scene runs at FPS before the import, so the importer turns glTF seconds
into those frames. Output: {"import": result, "objects": {name: {"type",
"parent", "vertices", "shape_keys", "modifiers"}}, "frames": {frame:
{"meshes": {name: [[x, y, z], ...]}, "bones": {name: [x, y, z]}}}}, where
meshes are the evaluated (shape keys, armature, animation) world-space
vertices of every mesh whose world transform is not scaled to nothing, and
bones the world positions of the pose bones' heads. Coordinates are
converted back from Blender's Z up to glTF's Y up.
"""
import json
import sys

import bpy


def gltf_axes(v):
    # The importer maps glTF (x, y, z) to Blender (x, -z, y).
    return [v[0], v[2], -v[1]]


def main():
    path, report = sys.argv[1], sys.argv[2]
    fps, frames = int(sys.argv[3]), [int(f) for f in sys.argv[4:]]
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = fps
    scene.render.fps_base = 1.0
    result = bpy.ops.import_scene.gltf(filepath=path)
    out = {"import": sorted(result), "objects": {}, "frames": {}}
    for ob in bpy.data.objects:
        entry = {"type": ob.type, "parent": ob.parent.name if ob.parent else None}
        if ob.type == "MESH":
            keys = ob.data.shape_keys
            entry["vertices"] = len(ob.data.vertices)
            entry["shape_keys"] = len(keys.key_blocks) if keys else 0
            entry["modifiers"] = [m.type for m in ob.modifiers]
        if ob.type == "ARMATURE":
            entry["bones"] = [b.name for b in ob.data.bones]
        out["objects"][ob.name] = entry
    for frame in frames:
        scene.frame_set(frame)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        meshes, bones = {}, {}
        for ob in bpy.data.objects:
            if ob.type == "MESH":
                if min(abs(s) for s in ob.matrix_world.to_scale()) < 1e-9:
                    continue  # hidden by a zero scale
                ev = ob.evaluated_get(depsgraph)
                mesh = ev.to_mesh()
                mw = ev.matrix_world
                meshes[ob.name] = [gltf_axes(mw @ v.co) for v in mesh.vertices]
                ev.to_mesh_clear()
            elif ob.type == "ARMATURE":
                for pb in ob.pose.bones:
                    bones[pb.name] = gltf_axes(ob.matrix_world @ pb.head)
        out["frames"][str(frame)] = {"meshes": meshes, "bones": bones}
    with open(report, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
