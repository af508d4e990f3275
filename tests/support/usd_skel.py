"""Evaluates the UsdSkel-bound meshes of a USD file the way a pipeline's
renderer does (Pixar's USD from the PyPI package usd-core): blend shapes,
then skinning, by `UsdSkel.BakeSkinning`; prints the posed points as JSON.

    python usd_skel.py FILE.usda TIME_CODE [TIME_CODE ...]

Output: {"rest": {mesh path: point count}, "baked": true/false,
"meshes": {mesh path: {time code: [[x, y, z], ...]}}} for every mesh under a
SkelRoot. Exits 1 if the file does not open as a USD stage.
"""
import json
import sys

from pxr import Gf, Usd, UsdGeom, UsdSkel


def main():
    path, codes = sys.argv[1], [float(c) for c in sys.argv[2:]]
    stage = Usd.Stage.Open(path)
    if stage is None:
        print(f"{path}: not a USD stage", file=sys.stderr)
        return 1
    roots = [p for p in stage.Traverse() if p.IsA(UsdSkel.Root)]
    meshes = [m for r in roots for m in Usd.PrimRange(r) if m.IsA(UsdGeom.Mesh)]
    out = {
        "rest": {
            m.GetPath().pathString: len(UsdGeom.Mesh(m).GetPointsAttr().Get())
            for m in meshes
        },
        "meshes": {},
    }
    # Baking turns each SkelRoot into an Xform: the meshes were found first.
    interval = Gf.Interval(min(codes), max(codes))
    out["baked"] = all(UsdSkel.BakeSkinning(UsdSkel.Root(r), interval) for r in roots)
    for m in meshes:
        points = UsdGeom.Mesh(m).GetPointsAttr()
        out["meshes"][m.GetPath().pathString] = {
            str(c): [list(p) for p in points.Get(c)] for c in codes
        }
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
