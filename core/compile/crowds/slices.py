"""Slicing the world for crowds: Algorithms 2 (testSlice) and 3 (sliceWorld) of Fernandes and
Deusdado, without a GPU.  Z is up (the paper's Y).

ComputeSlice(h) is the paper's depth map rendered with a clip plane at h: per cell of a grid over
the world's XY bounds, the height of the highest solid at or below h.  Here it is a lookup in each
cell's *column*: the solid intervals in z of everything an avatar collides with (solid, detail and
clip brushes) over the cell's square grown by half the avatar's width.  The columns come from a
rasteriser in NumPy: every brush is expanded by the box (+-(width + cell) / 2, +-(width + cell) / 2,
0) (core/compile/trees/expand.py, the exact Minkowski sum the onion tree uses), and the vertical line
through each cell centre is clipped by its planes (top planes bound it above, bottom planes below,
vertical planes decide whether the line meets it at all).  So a vertical wall registers with its
full height in every cell its grown footprint touches: the paper's section 3.3 problem (vertical
polygons have no projected area, the depth map misses them) does not arise, since solids, not
polygons, are rasterised.  A slice through a solid records h itself (the clip plane is inside).

Heights are integers: units of 2^-k m (SLICE_FINEST_UNIT at most) above z0 = minZ - resolution,
rounded outwards (tops up, undersides down), so every comparison of Algorithms 1-3 is exact and the
16-bit depths stored in the level (sliceHeight - height) are exactly what was tested.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ...errors import InvalidSettingError, check_cancel
from ...model.brushes import Brush, Contents
from ...model.scene import Hull
from ...model.setting_specs import setting_view
from ...runtime.crowd import CUT, INVALID, CrowdSlices, spans_by_slice
from ...tolerances import MAX_SLICE_CELLS, SLICE_FINEST_UNIT, SLICE_HULL_DEPTH, SLICE_TOUCH, SLICE_VERTICAL_NZ
from ..trees.expand import expand_brushes

#: testSlice's answers
KEEP_SLICES, DISMISS_CURRENT_SLICE, REPLACE_PREVIOUS_SLICE = 0, 1, 2

#: column intervals are keyed cell * KEY + height (heights < 2^16)
KEY = 1 << 17


@dataclass(frozen=True)
@setting_view(width="slice_width", height="slice_height", step="slice_step", cell="slice_cell",
              resolution="slice_resolution")
class SliceSettings:
    """The avatar and grid the slices serve: the bake settings slice_* (core/model/setting_specs.py),
    checked when made."""


@dataclass
class Columns:
    """The solid intervals of every cell's column: merged, disjoint, sorted by cell then height."""

    cell: np.ndarray  # (M,) int64 flat cell (y * nx + x)
    lo: np.ndarray  # (M,) int64 units
    hi: np.ndarray  # (M,) int64 units
    cells: np.ndarray  # (C,) int64 the cells with any solid, sorted
    keys: np.ndarray  # (M,) cell * KEY + lo, sorted

    def __post_init__(self):
        self.starts = np.sort(self.lo)  # every interval's bottom, for starts_between
        # the union of all intervals in z (all cells), for max_at
        order = np.argsort(self.lo, kind="stable")
        lo, hi = self.lo[order], np.maximum.accumulate(self.hi[order]) if len(self.lo) else self.hi
        first = np.ones(len(lo), dtype=bool)
        first[1:] = lo[1:] > hi[:-1]
        last = np.append(np.flatnonzero(first)[1:], len(lo)) - 1
        self.union_lo, self.union_hi = lo[first], hi[last]

    def max_at(self, h: int) -> int:
        """maximum(ComputeSlice(h)) without computing the slice: h when some solid reaches h, else
        the highest solid top below it (INVALID when there is none)."""
        k = int(np.searchsorted(self.union_lo, h, side="right")) - 1
        if k < 0:
            return INVALID
        return h if self.union_hi[k] >= h else int(self.union_hi[k])

    def starts_between(self, low: int, high: int) -> bool:
        """Does some interval start in (low, high]?"""
        k = int(np.searchsorted(self.starts, low, side="right"))
        return k < len(self.starts) and int(self.starts[k]) <= high

    def slice_at(self, h: int) -> np.ndarray:
        """ComputeSlice(h) over self.cells: the highest solid at or below h, INVALID when none."""
        pos = np.searchsorted(self.keys, self.cells * KEY + h, side="right") - 1
        ok = (pos >= 0) & (self.cell[np.maximum(pos, 0)] == self.cells)
        return np.where(ok, np.minimum(self.hi[np.maximum(pos, 0)], h), INVALID)


class Sweep:
    """ComputeSlice for heights that only go down, in time linear in the columns overall: each
    cell keeps the interval it reads (the last one starting at or below the height); going down,
    the intervals starting above the new height are dropped in one batch, highest first, so a cell
    ends on the one below its lowest dropped interval (NumPy writes repeated indices in order).
    The same values as Columns.slice_at (tests compare them)."""

    def __init__(self, cols: Columns):
        self.cols = cols
        m = len(cols.lo)
        dense = np.searchsorted(cols.cells, cols.cell)
        self.dense = dense
        first_of_cell = np.ones(m, dtype=bool)
        first_of_cell[1:] = cols.cell[1:] != cols.cell[:-1]
        self.below = np.where(first_of_cell, -1, np.arange(m) - 1)  # the interval under each, in its cell
        self.pos = np.full(len(cols.cells), -1, dtype=np.int64)
        self.pos[dense] = np.arange(m)  # the last interval of each cell (intervals sorted by cell, lo)
        self.events = np.argsort(-cols.lo, kind="stable")  # highest start first
        self.done = 0
        self.sorted_starts = cols.lo[self.events]

    def slice_at(self, h: int) -> np.ndarray:
        end = int(np.searchsorted(-self.sorted_starts, -h, side="left"))  # starts above h: lo > h
        if end > self.done:
            drop = self.events[self.done:end]
            self.pos[self.dense[drop]] = self.below[drop]
            self.done = end
        pos = self.pos
        ok = pos >= 0
        return np.where(ok, np.minimum(self.cols.hi[np.maximum(pos, 0)], h), INVALID)


def grid_for(bounds: np.ndarray, s: SliceSettings) -> tuple[float, float, int, int]:
    """(origin x, origin y, nx, ny): cells of s.cell covering the XY bounds (at least one)."""
    ox, oy = float(bounds[0, 0]), float(bounds[0, 1])
    nx = max(1, int(np.ceil((float(bounds[1, 0]) - ox) / s.cell)))
    ny = max(1, int(np.ceil((float(bounds[1, 1]) - oy) / s.cell)))
    if nx * ny > MAX_SLICE_CELLS:
        raise InvalidSettingError(
            f"slice_cell {s.cell!r} makes a grid of {nx} x {ny} = {nx * ny:,} cells over the world; "
            f"the most is {MAX_SLICE_CELLS:,}.", subject="slices",
            hint="Use a larger CELL in --slices W,H,STEP,CELL.")
    return ox, oy, nx, ny


def height_unit(zmin: float, zmax: float, s: SliceSettings) -> tuple[float, float]:
    """(unit, z0): the finest power of two <= SLICE_FINEST_UNIT m for which everything from the
    far plane (minZ - resolution) to the first slice (maxZ + height + resolution), with one more
    resolution of margin, fits in 65,535 units; z0 is the far plane on that unit's grid."""
    unit = SLICE_FINEST_UNIT
    span = (zmax + s.height + 2 * s.resolution) - (zmin - s.resolution) + 4 * unit
    while span / unit > 65000:
        unit *= 2.0
    return unit, float(np.floor((zmin - s.resolution) / unit) * unit)


def build_columns(brushes: list[Brush], s: SliceSettings, grid, unit: float, z0: float,
                  progress=None, cancel=None) -> Columns:
    """Rasterise the grown brushes into the columns (module docstring).  One NumPy pass per
    brush over the cells under its bounds; intervals merged per cell."""
    ox, oy, nx, ny = grid
    r = 0.5 * (s.width + s.cell)
    colliding = [b for b in brushes if b.contents in (Contents.SOLID, Contents.DETAIL, Contents.CLIP)]
    grown = expand_brushes(colliding, [Hull("slice", (-r, -r, -SLICE_HULL_DEPTH), (r, r, 0.0))])[0] if colliding else []
    cells, los, his = [], [], []
    for k, brush in enumerate(grown):
        if k % 64 == 0:
            check_cancel(cancel)
            if progress is not None:
                progress(0.3 * k / max(len(grown), 1), f"columns: brush {k} of {len(grown)}")
        got = _brush_column(brush, ox, oy, nx, ny, s.cell)
        if got is None:
            continue
        c, lo, hi = got
        cells.append(c)
        los.append(np.floor((lo - z0) / unit).astype(np.int64))
        his.append(np.ceil((hi - z0) / unit).astype(np.int64))
    if not cells:
        e = np.zeros(0, np.int64)
        return Columns(e, e, e, e, e)
    return _merge(np.concatenate(cells), np.clip(np.concatenate(los), 1, 65535), np.clip(np.concatenate(his), 1, 65535))


def _brush_column(brush: Brush, ox: float, oy: float, nx: int, ny: int, cell: float):
    """(cells, lo, hi) of the vertical lines through the cell centres that meet the brush."""
    b = brush.bounds
    ix0 = max(0, int(np.ceil((b[0, 0] - ox) / cell - 0.5 - 1e-9)))
    ix1 = min(nx - 1, int(np.floor((b[1, 0] - ox) / cell - 0.5 + 1e-9)))
    iy0 = max(0, int(np.ceil((b[0, 1] - oy) / cell - 0.5 - 1e-9)))
    iy1 = min(ny - 1, int(np.floor((b[1, 1] - oy) / cell - 0.5 + 1e-9)))
    if ix0 > ix1 or iy0 > iy1:
        return None
    ix, iy = np.meshgrid(np.arange(ix0, ix1 + 1), np.arange(iy0, iy1 + 1))
    ix, iy = ix.reshape(-1), iy.reshape(-1)
    x, y = ox + (ix + 0.5) * cell, oy + (iy + 0.5) * cell
    n, d = brush.normals, brush.dists
    rest = d[:, None] - (n[:, 0:1] * x[None, :] + n[:, 1:2] * y[None, :])  # (K, cells): n.z * z <= rest
    nz = n[:, 2]
    inside = np.ones(len(x), dtype=bool)
    vertical = np.abs(nz) < SLICE_VERTICAL_NZ
    if vertical.any():
        inside &= np.all(rest[vertical] >= -SLICE_TOUCH, axis=0)
    top = np.full(len(x), b[1, 2])
    bottom = np.full(len(x), b[0, 2])
    up, down = nz >= SLICE_VERTICAL_NZ, nz <= -SLICE_VERTICAL_NZ
    if up.any():
        top = np.minimum(top, np.min(rest[up] / nz[up, None], axis=0) + SLICE_TOUCH)
    if down.any():
        bottom = np.maximum(bottom, np.max(rest[down] / nz[down, None], axis=0) - SLICE_TOUCH)
    inside &= top >= bottom
    if not inside.any():
        return None
    return (iy * nx + ix)[inside].astype(np.int64), bottom[inside], top[inside]


def _merge(cell: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> Columns:
    """Overlapping or touching intervals of a cell become one (no avatar fits in a zero gap)."""
    order = np.lexsort((hi, lo, cell))
    cell, lo, hi = cell[order], lo[order], hi[order]
    hi_key = np.maximum.accumulate(cell * KEY + hi)
    start = np.ones(len(cell), dtype=bool)
    start[1:] = (cell[1:] != cell[:-1]) | (cell[1:] * KEY + lo[1:] > hi_key[:-1])
    first = np.flatnonzero(start)
    last = np.append(first[1:], len(cell)) - 1
    mc, mlo, mhi = cell[first], lo[first], hi_key[last] - cell[first] * KEY
    return Columns(mc, mlo, mhi, np.unique(mc), mc * KEY + mlo)


def testSlice(cur: np.ndarray, h_cur: int, prev: np.ndarray, h_prev: int, prev2: np.ndarray | None,
               avatar_height: int) -> int:
    """Algorithm 2 (testSlice) over the cells with any solid (the rest are INVALID in every
    slice, so equal).  A cell is useless when an avatar of the smallest height cannot stand under
    the slice there; the current slice is dismissed when every cell is useless or equal to the
    previous kept slice's; the previous is replaced when every cell of it is carried by the
    current one (equal there), by the one before it (equal), or useless."""
    useless = h_cur - cur < avatar_height
    equal = ~useless & (cur == prev)
    if np.all(useless | equal):
        return DISMISS_CURRENT_SLICE
    if prev2 is not None:
        carried = equal | (prev2 == prev) | (h_prev - prev < avatar_height)
        if np.all(carried):
            return REPLACE_PREVIOUS_SLICE
    return KEEP_SLICES


testSlice.__test__ = False  # a name from the paper, not a pytest test


class _Changes:
    """The kept slices' changes (CrowdSlices), gathered top down as slices become final: a slice's
    changes are its values (the ground, or CUT where it cuts a solid) that differ from the next
    kept slice's below it.  Only the last kept slices stay whole (Algorithm 3 may still replace
    the last and testSlice reads the one before it)."""

    def __init__(self, cells: np.ndarray):
        self.cells = cells
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []  # per slice, highest first

    @staticmethod
    def _code(values: np.ndarray, h: int) -> np.ndarray:
        return np.where(values == h, CUT, values).astype(np.uint16)

    def add(self, upper: np.ndarray, h_upper: int, lower: np.ndarray | None, h_lower: int | None) -> None:
        code = self._code(upper, h_upper)
        diff = np.flatnonzero(code != (self._code(lower, h_lower) if lower is not None else INVALID))
        self.parts.append((self.cells[diff].astype(np.int32), code[diff]))

    def lowest_first(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(spans per slice, spans, values), lowest slice first (CrowdSlices)."""
        parts = self.parts[::-1]
        counts, spans = [], []
        for k, (c, _) in enumerate(parts):
            n, sp = spans_by_slice(np.zeros(len(c), np.int64), c, 1)
            counts.append(int(n[0]))
            spans.append(sp)
        value = np.concatenate([v for _, v in parts]) if parts else np.zeros(0, np.uint16)
        return (np.array(counts, dtype=np.int64), np.concatenate(spans) if spans else np.zeros((0, 2), np.int64),
                value)


def slice_world(brushes: list[Brush], bounds: np.ndarray, s: SliceSettings, progress=None,
                cancel=None, literal: bool = False) -> CrowdSlices:
    """Algorithm 3 (sliceWorld): the first slice at maxZ + avatarHeight + resolution, each next one
    at the previous slice's maximum minus resolution while that maximum is above minZ +
    avatarHeight; each new slice goes through testSlice.  Returns the kept slices (lowest first)
    with `taken` the number taken.

    A slice at h below the last kept one (at h') where no column interval starts in (h, h'] is
    dismissed without computing it (unless `literal`): in every cell the interval it reads is the
    same, so its value is either the same top (equal) or h itself (cut: useless); its maximum comes
    from the union of all intervals (Columns.max_at).  Slicing through a mountain or a tall block
    then costs a binary search per slice, not a pass over the grid; the kept slices are the same
    (tests/core/test_crowd.py compares both ways)."""
    t0 = time.perf_counter()
    bounds = np.asarray(bounds, dtype=np.float64).reshape(2, 3)
    grid = grid_for(bounds, s)
    unit, z0 = height_unit(float(bounds[0, 2]), float(bounds[1, 2]), s)
    cols = build_columns(brushes, s, grid, unit, z0, progress, cancel)
    res = max(1, int(round(s.resolution / unit)))
    h_av = int(np.ceil(s.height / unit - 1e-9))
    zmin = int(np.floor((bounds[0, 2] - z0) / unit))
    h = int(np.ceil((bounds[1, 2] - z0) / unit)) + h_av + res
    sweep = Sweep(cols)
    compute = cols.slice_at if literal else sweep.slice_at
    heights, values = [h], [compute(h)]
    changes = _Changes(cols.cells)
    top = int(values[0].max()) if len(values[0]) else INVALID
    taken, span = 1, max(h - zmin, 1)
    while top > zmin + h_av:
        if taken % 16 == 0:
            check_cancel(cancel)
            if progress is not None:
                progress(0.3 + 0.7 * (1.0 - (top - zmin) / span), f"slice {taken} at {z0 + top * unit:.2f} m")
        h = top - res
        taken += 1
        if not literal and not cols.starts_between(h, heights[-1]):
            top = cols.max_at(h)  # dismissed: every cell equal to the last kept slice, or cut
            continue
        cur = compute(h)
        top = int(cur.max())
        test = testSlice(cur, h, values[-1], heights[-1], values[-2] if len(values) > 1 else None, h_av)
        if test == KEEP_SLICES:
            heights.append(h)
            values.append(cur)
            if len(values) == 3:  # values[0] can no longer be replaced, nor values[1]: their changes are known
                changes.add(values[0], heights[-3], values[1], heights[-2])
                values.pop(0)
        elif test == REPLACE_PREVIOUS_SLICE:
            heights[-1], values[-1] = h, cur
    if len(values) == 2:
        changes.add(values[0], heights[-2], values[1], heights[-1])
    changes.add(values[-1], heights[-1], None, None)  # the lowest slice: its changes from nothing
    ox, oy, nx, ny = grid
    if progress is not None:
        progress(1.0, f"{len(heights)} of {taken} slices kept")
    count, spans, value = changes.lowest_first()
    out = CrowdSlices(origin=(ox, oy), cell=s.cell, z0=z0, unit=unit, width=s.width, height=s.height, step=s.step,
                      resolution=s.resolution, slice_height=np.array(heights[::-1], dtype=np.int64), grid=(ny, nx),
                      span_count=count, span=spans, change_value=value, taken=taken)
    out.seconds = time.perf_counter() - t0
    return out
