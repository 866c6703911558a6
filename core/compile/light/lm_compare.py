"""Comparing two sets of lightmap pages luxel by luxel (ours against Cycles', tests and bench).

Only luxels whose whole square lies on their face count: a renderer baking a page samples each
texel over its footprint, and a texel off the face, or partly off it (the chart's bounding
rectangle, faces split by the tree), is filled by extension or from part of its square only.  The figure is the per-luxel relative
RMSE of luminance (the mean of R, G, B):

    sqrt(mean over luxels of ((ours - theirs) / max(theirs, RMSE_FLOOR * mean of theirs))^2)

each luxel's error relative to its own light, except that luxels darker than RMSE_FLOOR of the
mean (deep shadow, where both are near 0) are measured against that floor instead of blowing up.
"""

from __future__ import annotations

import numpy as np

from ...detmath import dot
from ...tolerances import RMSE_FLOOR
from .lm_charts import edge_lines, make_charts


def face_luxels(level) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(page, y, x) of the texels of the luxels whose whole square lies on their face (a baked
    level): a renderer's bake integrates over the texel's footprint, which for an edge luxel is the
    part on the face (or on two faces, each in its own chart)."""
    charts = make_charts(level, level.lm_luxel, lit=np.asarray(level.lm_face_page) >= 0)
    f = charts.luxel_face
    st = np.stack([dot(charts.luxel_centre, charts.face_u[f]), dot(charts.luxel_centre, charts.face_v[f])], axis=1)
    ef, en, eo = edge_lines(level, charts)
    edge_first = np.searchsorted(ef, np.arange(len(charts.face_page)))
    edge_count = np.bincount(ef, minlength=len(charts.face_page))
    reps = edge_count[f]
    pt = np.repeat(np.arange(len(f)), reps)
    edge = np.repeat(edge_first[f], reps) + (np.arange(len(pt)) - np.repeat(np.cumsum(reps) - reps, reps))
    # the square's farthest corner along an edge's inward normal is |n_s| + |n_t| half-luxels back
    reach = 0.5 * level.lm_luxel * (np.abs(en[edge, 0]) + np.abs(en[edge, 1]))
    inside = np.ones(len(f), dtype=bool)
    np.logical_and.at(inside, pt, dot(en[edge], st[pt]) - reach >= eo[edge])
    page, y, x = charts.luxel_texels()
    return page[inside], y[inside], x[inside]


def relative_rmse(level, ours: np.ndarray, theirs: np.ndarray) -> float:
    """Per-luxel relative RMSE of luminance over the face luxels (see the module's docstring)."""
    page, y, x = face_luxels(level)
    a = np.asarray(ours, dtype=np.float64)[page, y, x].mean(axis=1)
    b = np.asarray(theirs, dtype=np.float64)[page, y, x].mean(axis=1)
    floor = max(RMSE_FLOOR * float(b.mean()), 1e-12)
    return float(np.sqrt(np.mean(((a - b) / np.maximum(b, floor)) ** 2)))
