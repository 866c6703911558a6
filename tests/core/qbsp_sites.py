"""Where Quake's qbsp would treat a brush vertex as lying on a plane it does not lie on.

ericw-tools' qbsp builds its tree from brushes (qbsp/brushbsp.cc, after Quake 2's qbsp3).  When a
node's plane splits a brush, SplitBrush looks at how far the brush reaches on each side: a brush
reaching less than 0.1 unit across the plane is not split but kept whole on the other side (and a
cut whose cross-section is 'tiny', WindingIsTiny with 0.02 unit edges, is not made either).  The
sliver beyond the plane is then missing from that side of the tree: in the leaves there, that
space is empty.  Where a map is sealed by brushes meeting only along edges and at vertices, as
q1_mountain's terrain of tetrahedra is, the sliver at a vertex is all that stands between the
air above the terrain and the void below it (docs/VISIBILITY.md).

A *site* here: the plane of some brush face passes within 0.1 unit of a vertex V of another brush
B, not through it, and every other vertex of B lies on the far side (so qbsp, splitting B there,
keeps B whole on the far side and B's tip at V is gone from V's side).  `sites(scene)` lists
them in Quake units; run this file on a map to print them:

    PYTHONPATH=... python tests/core/qbsp_sites.py maps/ericw-tools/q1_mountain.map [--drop [N]]

(PYTHONPATH as for the tests, so that `import brushbake` finds the repository).  With --drop,
each site with tips (the N nearest) is compiled with its tips cut off, as qbsp's split would
leave them, and the leak check's verdict printed.

This is test-side analysis (never imported by brushbake itself).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

#: Quake units: qbsp's SplitBrush lets a brush that reaches less than this across a plane slide
#: by without being split (ericw-tools qbsp/brushbsp.cc, `d_front < 0.1`, PLANESIDE_EPSILON)
QBSP_SPLIT_SLACK = 0.1
#: Quake units: below this a vertex is on the plane (the vertices come from float plane
#: intersections; integer maps put a vertex that truly lies on a plane within ~1e-9 of it)
ON_PLANE = 1e-6


@dataclass(frozen=True)
class Site:
    distance: float  #: units, V's distance from the plane (> 0: V in front of the plane)
    plane_brush: int  #: index in scene.brushes of the brush whose face carries the plane
    plane_index: int  #: the plane's index in that brush
    vertex: tuple  #: V, Quake units
    face_distance: float  #: units from V to that brush's face polygon (how near the splitter's face is)
    tips: tuple  #: indices of the brushes that have V as a vertex and lie beyond the plane but for V


def _point_polygon_distance(p, poly):
    """Distance from p to a convex planar polygon (all (.., 3) arrays)."""
    n = np.cross(poly[1] - poly[0], poly[2] - poly[0])
    n = n / np.linalg.norm(n)
    q = p - np.dot(p - poly[0], n) * n
    edges = np.roll(poly, -1, axis=0) - poly
    if np.all(np.einsum("ij,ij->i", np.cross(edges, q - poly), np.broadcast_to(n, poly.shape)) >= 0):
        return abs(float(np.dot(p - poly[0], n)))
    t = np.clip(np.einsum("ij,ij->i", p - poly, edges) / np.einsum("ij,ij->i", edges, edges), 0, 1)
    return float(np.min(np.linalg.norm(p - (poly + t[:, None] * edges), axis=1)))


def sites(scene, unit: float = 1.0 / 32.0, slack: float = QBSP_SPLIT_SLACK) -> list[Site]:
    """Every site of the scene's brushes (see the module docstring), nearest first."""
    verts = [np.asarray(b.vertices) / unit for b in scene.brushes]
    owner = np.concatenate([np.full(len(v), i) for i, v in enumerate(verts)])
    allv = np.concatenate(verts)
    lo = np.array([v.min(axis=0) for v in verts])
    hi = np.array([v.max(axis=0) for v in verts])
    out = []
    for a, brush in enumerate(scene.brushes):
        for k, (n, d) in enumerate(zip(brush.normals, brush.dists)):
            dist = allv @ n - d / unit
            near = np.flatnonzero((np.abs(dist) > ON_PLANE) & (np.abs(dist) < slack) & (owner != a))
            for v in np.unique(np.round(allv[near], 6), axis=0):
                s = float(v @ n - d / unit)
                tips = []
                for b in np.flatnonzero(np.all(lo <= v + 1e-6, axis=1) & np.all(hi >= v - 1e-6, axis=1)).tolist():
                    vb = verts[b]
                    at = np.all(np.abs(vb - v) < 1e-6, axis=1)
                    if b == a or not at.any():
                        continue
                    other = vb[~at] @ n - d / unit
                    if np.all(other * np.sign(s) < -ON_PLANE):
                        tips.append(b)
                face = np.asarray(brush.faces[k]) / unit
                out.append(Site(s, a, k, tuple(v.tolist()), _point_polygon_distance(v, face), tuple(tips)))
    out.sort(key=lambda x: (abs(x.distance), x.plane_brush, x.vertex))
    return out


def drop_tips(scene, site: Site, unit: float = 1.0 / 32.0):
    """The scene as qbsp's tree sees it on V's side of the site's plane: every tip brush cut by
    the plane, keeping its part on the far side (SplitBrush keeps the whole brush there, and the
    far side of the tree never holds V's side of the plane)."""
    import dataclasses

    from brushbake.core.model.brushes import brush_from_planes

    plane = scene.brushes[site.plane_brush]
    sign = 1.0 if site.distance > 0 else -1.0
    n, d = sign * plane.normals[site.plane_index], sign * plane.dists[site.plane_index]
    brushes = list(scene.brushes)
    for t in site.tips:
        b = brushes[t]
        brushes[t] = brush_from_planes(np.vstack([b.normals, n]), np.append(b.dists, d), b.name, b.contents,
                                       entity=b.entity)
    return dataclasses.replace(scene, brushes=brushes)


def opens(scene, site: Site, unit: float = 1.0 / 32.0):
    """Compile the scene with the site's tips dropped and run the leak check: (report, portals)."""
    from brushbake.core.compile.vis.leaks import find_leaks, inside_points
    from brushbake.core.compile.pipeline import compile_scene
    from brushbake.core.compile.vis.portals import build_portals

    cut = drop_tips(scene, site, unit)
    level = compile_scene(cut)
    portals = build_portals(level)
    return find_leaks(level, portals, *inside_points(cut)), level, portals


def main(argv):
    from brushbake.core.formats.loaders import load_scene

    scene = load_scene(argv[1])
    found = sites(scene)
    print(f"{len(found)} sites ({sum(1 for s in found if s.tips)} with a tip beyond the plane)")
    for s in found:
        tips = ", ".join(scene.brushes[t].name.split(":")[-1] for t in s.tips) or "-"
        print(f"{abs(s.distance):.4f} u  V=({s.vertex[0]:g} {s.vertex[1]:g} {s.vertex[2]:g})  plane {s.plane_index} of "
              f"{scene.brushes[s.plane_brush].name.split(':', 1)[-1]} (face {s.face_distance:.0f} u away)  tips: {tips}")
    if "--drop" in argv:  # compile each site with its tips dropped, as qbsp's split would
        at = argv.index("--drop") + 1
        limit = int(argv[at]) if at < len(argv) else None  # --drop N: the N nearest sites only
        for s in [s for s in found if s.tips][:limit]:
            report = opens(scene, s)[0]
            near = float(np.min(np.linalg.norm(report.chain * 32.0 - np.array(s.vertex), axis=1))) if report.leaks else None
            print(f"V=({s.vertex[0]:g} {s.vertex[1]:g} {s.vertex[2]:g}) tips dropped: "
                  + (f"LEAKS, the chain passes {near:.3f} u from V" if report.leaks else "sealed"))


if __name__ == "__main__":
    main(sys.argv)
