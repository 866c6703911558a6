"""Where a point light can shine: the leaves the camera queries' portal walk reaches from it.

A point or spot light without a radius lights a sample point only along the segment between
them, which must be clear: a line of sight from the light.  The portal walk (core/runtime/cull.py
'portal' mode, core/runtime/portal_walk.py) draws, for a camera at the light, every leaf holding
a point that camera truly sees -- conservative at every portal edge, and tested so against pixel
rays (docs/CAMERA.md).  Six cameras of 90 degrees by 90 (a cube around the light; their frustums
meet edge to edge, and each keeps what lies within CULL_MARGIN of its sides) see every direction,
so the union of the leaves they draw holds every point the light reaches; a sample point in
another leaf would only cast a blocked shadow ray, and gets none (lm_direct; a point within
TOUCH_EPSILON of a plane on its way down the tree keeps its ray: it may be seen from the leaf on
the plane's other side).  Fewer rays where the PVS of the light's cluster is loose -- a PVS row is
for the whole cluster, the walk for the light's one point: lq_e0m3 1.62 -> 0.68 million direct
rays, e3m4 23.6 -> 5.8 million (measured when a .map light fell off as an inverse square; Quake's
linear falloff, core/model/light_units.py, casts no ray past a light's reach, so the walk saves
less there: e1m7 104,390 -> 99,077).  The pages stay the same to the byte (tests/core/test_lm_rays.py
bakes two samples and three maps with and without; lq_e0m3 and e3m4 too), except where a shadow
ray passes a zero-width crack that the walk's open solids let through and no portal opens: on
lqdm13 2 luxels of 466,740 lose a light 65 m away whose ray is blocked once its end moves 0.1 mm.

Lights with a radius (rays to points of a disk), suns and area lights keep the PVS alone.
"""

from __future__ import annotations

import numpy as np

#: (yaw, pitch) degrees of the six cube-face cameras
CUBE = ((0.0, 0.0), (90.0, 0.0), (180.0, 0.0), (270.0, 0.0), (0.0, 90.0), (0.0, -90.0))


def light_views(level, lights: list, far: float, backend: str = "numpy") -> list:
    """Per light, the (L,) bool leaves the portal walk reaches from it, or None (the PVS alone:
    a light with a radius, a sun, an area light, or a level without portals)."""
    from ...runtime.camera import FAR_RANGE
    from ...runtime.cull import cull, cull_data
    from ...runtime.pvs import has_vis

    out: list = [None] * len(lights)
    which = [k for k, li in enumerate(lights) if li.kind in ("point", "spot") and li.radius <= 0]
    if not which or not has_vis(level) or not cull_data(level).has_portals:
        return out
    far = float(min(max(far, FAR_RANGE[0]), FAR_RANGE[1]))
    cams = np.array([[*np.asarray(lights[k].position, dtype=np.float64), yaw, pitch, 90.0, 1.0, far]
                     for k in which for yaw, pitch in CUBE])
    drawn = cull(level, cams, "portal", backend=backend).drawn.reshape(len(which), len(CUBE), -1).any(axis=1)
    for row, k in enumerate(which):
        out[k] = drawn[row]
    return out
