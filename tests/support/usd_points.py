"""Reads a USD file with Pixar's USD (`pxr`, from the PyPI package usd-core)
and prints, as JSON, what a pipeline would see of a Plasticine point cache.

    python usd_points.py FILE.usda TIME_CODE [TIME_CODE ...]

Output: {"stage": {metadata}, "meshes": {prim path: {"counts": [...],
"indices": [...], "orientation": ..., "times": [...], "points": {time code:
[[x, y, z], ...]}, "normals": {...}, "extent": {...}}}}. Exits 1 if the file
does not open as a USD stage.
"""
import json
import sys

from pxr import Usd, UsdGeom


def main():
    path, codes = sys.argv[1], [float(c) for c in sys.argv[2:]]
    stage = Usd.Stage.Open(path)
    if stage is None:
        print(f"{path}: not a USD stage", file=sys.stderr)
        return 1
    out = {
        "stage": {
            "defaultPrim": stage.GetDefaultPrim().GetPath().pathString,
            "upAxis": UsdGeom.GetStageUpAxis(stage),
            "metersPerUnit": UsdGeom.GetStageMetersPerUnit(stage),
            "timeCodesPerSecond": stage.GetTimeCodesPerSecond(),
            "framesPerSecond": stage.GetFramesPerSecond(),
            "startTimeCode": stage.GetStartTimeCode(),
            "endTimeCode": stage.GetEndTimeCode(),
        },
        "meshes": {},
    }
    for prim in stage.Traverse():
        if not prim.IsA(UsdGeom.Mesh):
            continue
        mesh = UsdGeom.Mesh(prim)
        points = mesh.GetPointsAttr()
        normals = mesh.GetNormalsAttr()
        extent = mesh.GetExtentAttr()
        entry = {
            "counts": list(mesh.GetFaceVertexCountsAttr().Get()),
            "indices": list(mesh.GetFaceVertexIndicesAttr().Get()),
            "orientation": mesh.GetOrientationAttr().Get(),
            "subdivisionScheme": mesh.GetSubdivisionSchemeAttr().Get(),
            "normalsInterpolation": mesh.GetNormalsInterpolation(),
            "times": points.GetTimeSamples(),
            "points": {},
            "normals": {},
            "extent": {},
        }
        for code in codes:
            key = repr(code)
            entry["points"][key] = [list(p) for p in points.Get(code)]
            entry["normals"][key] = [list(n) for n in normals.Get(code)]
            entry["extent"][key] = [list(e) for e in extent.Get(code)]
        out["meshes"][prim.GetPath().pathString] = entry
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
