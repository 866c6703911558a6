"""Crowds on multi-level height slices (Fernandes and Deusdado, "Efficient Conservative Collision
Detection for Populated Virtual Worlds"): the run-time side.  Z is up.

A level baked with slices (core/compile/crowds/slices.py) stores, over a grid of square cells covering the
world's XY bounds, K kept slices: slice k was taken at height sliceHeight[k] and records, per cell,
the height of the highest solid at or below it in the cell's *column* (the cell's square grown by
half the avatar's width on each side, so an avatar anywhere in the cell is inside it), or INVALID
(0: nothing below, the far plane).  Heights are integers in `unit` metres above z0 (16 bits).

Algorithm 1 (move): an avatar with feet f on cell A reads the slice just above its head, i (the
lowest with sliceHeight[i] >= f + height); its ground there is slice[i][A] = f.  A step to a
neighbouring cell B is legal when hb = slice[i][B] + height differs from hA = f + height by at most
the avatar's step and, when hb pokes above sliceHeight[i], the slice j just above hb agrees with
slice i at A (nothing above A stops the vertical move, the paper's test) and at B (nothing above B
between the two slices; the paper checks A only, which lets a low ceiling over B through).  A
diagonal step also needs the two cells beside both A and B clear above the higher feet in the
slice it is judged in (corners_clear): an avatar anywhere in A going to anywhere in B may cut
through their corners (the exact-collision check found exactly such moves on the Cornell box's
rotated blocks before this rule).

The slices are held by change (CrowdSlices), never as K x cells.  Cells are flat indices (row-major,
y then x) of the grid padded with one INVALID cell on each side, so a step from any real cell lands
on a cell of the array and the border refuses it.  The crowd walks on a Walk: the standing places
(a place is a (slice, cell) where an avatar of the crowd's height stands, in the slice just above
its head) numbered in the order of their dense keys slice * cells + cell, and per place and
direction the place a step lands on; avatar against avatar, one occupancy value per place.
check_moves reads grounds by sweeps up the changes (ground_at).  PaddedSlices, the dense layout
(ground heights (K, cells) flat as slice * cells + cell, the crowd words), is the reference the
tests hold them to, and serves small levels (the truth check's own moves, the add-on's overlay).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import BrushbakeError
from ..tolerances import FEET_MATCH

#: the ground code for 'nothing below' (the paper's INVALID, below minZ)
INVALID = 0

#: the eight neighbour directions, counter-clockwise from +x: (dx, dy)
DIRECTIONS = np.array([(1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1)], dtype=np.int64)


#: crowd word bits (PaddedSlices.crowd_table): 0-7 arrival by direction, SLICE_SHIFT and up the
#: landing slice's offset (signed), then the ground
SLICE_SHIFT = 8
#: the most slices a uint32 crowd word serves (the slice offset in bits 8-14, -63 to 63); more: uint64
WORD32_SLICES = 64
#: the most standing places one cell may have for uint8 / uint16 claim tags (a tag is 1 + direction
#: + 8 * the place's rank in its cell, Crowd)
TAG8_PLACES, TAG16_PLACES = 31, 8191


class CrowdWord:
    """The layout of a crowd word for a level of K slices: uint32 when K <= 64 (the landing
    slice's offset takes bits 8-14, two's complement), else uint64 (bits 8-46).  The ground (16 bits) sits at `shift` =
    bits - 17 under a top guard bit that is always 0, so a step test is one subtraction and one
    comparison over whole words (Crowd._pass): with A = ((fa - step) mod 2^17) << shift,
    t - A holds (fb - fa + step) mod 2^17 in its top 17 bits and t's low bits untouched (A's are
    0, no borrow); fb - fa + step lies in [step - 65535, 65535 + step], so the top field is
    at most 2 * step exactly when |fb - fa| <= step: a negative sum wraps to at least
    2^17 - 65535 + step > 2 * step for any step <= 65535 (larger steps are clamped to 65535,
    which changes nothing: two 16-bit grounds never differ by more)."""

    def __init__(self, kept: int):
        self.wide = np.uint32 if kept <= WORD32_SLICES else np.uint64
        bits = 8 * np.dtype(self.wide).itemsize
        self.shift = bits - 17
        self.slice_bits = self.shift - SLICE_SHIFT
        self.ground_mask = 0xFFFF << self.shift
        self.fix_mask = ((1 << self.shift) - 1) & ~0xFF  # the landing slice's offset

    def ground(self, t) -> np.ndarray:
        return t >> self.wide(self.shift)

    def slice_offset(self, t) -> np.ndarray:
        """(N,) int64: the landing slice minus the slice the word was read in."""
        f = ((np.asarray(t) >> self.wide(SLICE_SHIFT)) & self.wide((1 << self.slice_bits) - 1)).astype(np.int64)
        return f - ((f >> (self.slice_bits - 1)) << self.slice_bits)

    def from_feet(self, feet, step_u: int) -> np.ndarray:
        """A per avatar (the class docstring) from its feet (ground units)."""
        a = (np.asarray(feet, dtype=np.int64) - step_u) & 0x1FFFF
        return (a << self.shift).astype(self.wide)

    def feet(self, a, step_u: int) -> np.ndarray:
        return (((a >> self.wide(self.shift)) + self.wide(step_u)) & self.wide(0x1FFFF)).astype(self.wide)


#: a change's value for 'the slice cuts through a solid here': the ground is the slice's own height
CUT = 0xFFFF


@dataclass
class CrowdSlices:
    """The kept slices of a level and the avatar they were taken for (all lengths in metres).

    Stored by change: going up the slices, a cell's ground only changes where a new solid top
    comes under the slice, and a cell inside a solid reads each slice's own height (a cut), so the
    slices are, per slice k, the cells whose *value* changes from slice k - 1 (every cell's value
    is 0 below slice 0) and their new values: `span_count[k]` spans of consecutive flat cells
    (unpadded grid, y then x; `span` rows (first cell, length), increasing and apart within a
    slice) and for each of their cells in order its `change_value` (u2: the ground, 0 for nothing
    below, CUT for a cut).  The ground of cell c in slice k is min(value, sliceHeight[k]).
    Memory and work grow with the changes, not K x cells; `ground` decodes the dense (K, ny, nx)
    array for small levels, tests and tools."""

    origin: tuple[float, float]  # the grid's (min x, min y) corner
    cell: float
    z0: float  # height of unit 0 (the far plane, below the world)
    unit: float  # metres per height unit (a power of two)
    width: float  # avatar width, height (the smallest served), step
    height: float
    step: float
    resolution: float
    slice_height: np.ndarray  # (K,) int64 units, strictly increasing
    grid: tuple[int, int]  # (ny, nx)
    span_count: np.ndarray  # (K,) int64 spans per slice
    span: np.ndarray  # (S, 2) int64 (first cell, length)
    change_value: np.ndarray  # (C,) uint16: the ground, 0 = INVALID, CUT = a cut
    taken: int = 0  # slices computed by Algorithm 3 (kept: K)

    @classmethod
    def from_ground(cls, ground, **kw) -> "CrowdSlices":
        """From dense grounds (K, ny, nx): a slice's ground equal to its height is a cut."""
        ground = np.asarray(ground)
        k, ny, nx = ground.shape
        top = np.asarray(kw["slice_height"], dtype=np.int64)
        g = ground.reshape(k, -1).astype(np.int64)
        value = np.where(g == top[:, None], CUT, g).astype(np.uint16)
        before = np.vstack([np.zeros((1, g.shape[1]), np.uint16), value[:-1]])
        ch = value != before
        kk, cc = np.nonzero(ch)  # slice-major, cells increasing
        counts, spans = spans_by_slice(kk, cc, k)
        return cls(grid=(ny, nx), span_count=counts, span=spans, change_value=value[kk, cc], **kw)

    def changes(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Slice k's changes: (cells int32, values u2)."""
        first = self.__dict__.get("_first")
        if first is None:
            n = np.asarray(self.span, dtype=np.int64).reshape(-1, 2)[:, 1]
            s_first = np.concatenate([[0], np.cumsum(self.span_count)])
            c_first = np.concatenate([[0], np.cumsum(n)])[s_first]
            first = self.__dict__["_first"] = (s_first, c_first)
        s_first, c_first = first
        cells = expand_spans(np.asarray(self.span, dtype=np.int64).reshape(-1, 2)[s_first[k]:s_first[k + 1]])
        return cells, self.change_value[c_first[k]:c_first[k + 1]]

    @property
    def ground(self) -> np.ndarray:
        """(K, ny, nx) int32 units: the highest solid at or below each slice, 0 = INVALID (dense:
        K x cells; for small levels)."""
        if "_ground" not in self.__dict__:
            ny, nx = self.grid
            value = np.zeros(ny * nx, dtype=np.int64)
            out = np.zeros((self.kept, ny * nx), dtype=np.int32)
            for k in range(self.kept):
                c, v = self.changes(k)
                value[c] = v
                out[k] = np.minimum(value, int(self.slice_height[k]))
            self.__dict__["_ground"] = out.reshape(self.kept, ny, nx)
        return self.__dict__["_ground"]

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.grid[0]), int(self.grid[1])

    @property
    def kept(self) -> int:
        return int(len(self.slice_height))

    def units(self, metres) -> np.ndarray:
        """Heights in metres as the nearest units (int64)."""
        return np.rint((np.asarray(metres, dtype=np.float64) - self.z0) / self.unit).astype(np.int64)

    def metres(self, units) -> np.ndarray:
        return self.z0 + np.asarray(units, dtype=np.float64) * self.unit

    def length_units(self, metres: float) -> int:
        """A length (a step, a height) in units, rounded towards stricter: steps down, heights up."""
        return int(np.ceil(metres / self.unit - 1e-9))

    def step_units(self, metres: float) -> int:
        return int(np.floor(metres / self.unit + 1e-9))

    def padded(self) -> "PaddedSlices":
        cache = self.__dict__.setdefault("_padded", {})
        if "p" not in cache:
            cache["p"] = PaddedSlices(self)
        return cache["p"]

    def walk(self, height_u: int, step_u: int) -> "Walk":
        """The standing places and steps for avatars of one height and step (made once each)."""
        cache = self.__dict__.setdefault("_walks", {})
        if (height_u, step_u) not in cache:
            cache[(height_u, step_u)] = Walk(self, height_u, step_u)
        return cache[(height_u, step_u)]

    def nbytes(self) -> int:
        """Bytes of the kept slices as stored (heights, span counts, spans and values)."""
        return 2 * self.kept + 4 * self.kept + 8 * int(len(self.span)) + 2 * int(len(self.change_value))


def spans_by_slice(slices: np.ndarray, cells: np.ndarray, kept: int) -> tuple[np.ndarray, np.ndarray]:
    """Changed (slice, cell) pairs, slice-major and cells increasing, as spans of consecutive cells:
    ((K,) spans per slice, (S, 2) int64 (first cell, length))."""
    slices, cells = np.asarray(slices, dtype=np.int64), np.asarray(cells, dtype=np.int64)
    start = np.ones(len(cells), dtype=bool)
    start[1:] = (cells[1:] != cells[:-1] + 1) | (slices[1:] != slices[:-1])
    first = np.flatnonzero(start)
    length = np.diff(np.append(first, len(cells)))
    return (np.bincount(slices[first], minlength=kept).astype(np.int64),
            np.stack([cells[first], length], axis=1).astype(np.int64).reshape(-1, 2))


def expand_spans(spans: np.ndarray) -> np.ndarray:
    """The cells of spans (S, 2) (first, length), in order (int32: a grid has at most
    MAX_SLICE_CELLS cells)."""
    spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    n = spans[:, 1]
    total = int(n.sum())
    if not total:
        return np.zeros(0, np.int32)
    out = np.repeat((spans[:, 0] - (np.cumsum(n) - n)).astype(np.int32), n)
    out += np.arange(total, dtype=np.int32)
    return out


class PaddedSlices:
    """The slices in the batch walk's layout (module docstring).  A place is a flat key
    slice * cells + cell; `table` holds, per place, its ground (bits 0-15) and its head room
    sliceHeight - ground (bits 16-31), so one gather answers both halves of Algorithm 1's first
    test for a whole batch."""

    def __init__(self, s: CrowdSlices):
        ny, nx = s.shape
        self.s, self.nx, self.ny = s, nx + 2, ny + 2
        self.cells = self.nx * self.ny
        k = s.kept
        g = np.zeros((k, self.ny, self.nx), dtype=np.uint32)
        g[:, 1:-1, 1:-1] = s.ground
        self.top = np.asarray(s.slice_height, dtype=np.int64)
        room = self.top.astype(np.uint32)[:, None, None] - g
        self.table = (g | (room << np.uint32(16))).reshape(-1)  # (K * cells,) uint32
        #: place keys are intp: NumPy converts any other index array to intp on every gather
        self.key_type = np.intp
        self.cells_t = self.key_type(self.cells)
        self.offsets = (DIRECTIONS[:, 0] + DIRECTIONS[:, 1] * self.nx).astype(self.key_type)  # neighbours
        self.height_u = s.length_units(s.height)
        self._canon: dict = {}

    @property
    def ground(self) -> np.ndarray:
        return (self.table & np.uint32(0xFFFF)).astype(np.int64)

    def canon(self, height_u: int) -> np.ndarray:
        """(K * cells,) key type: for every place, how many slices down (<= 0) the same ground
        (cell and height) lies in the slice just above the head of an avatar of that height
        standing there, where an avatar that steps onto it is kept (made once per height)."""
        if height_u not in self._canon:
            k = len(self.top)
            here = np.arange(k, dtype=np.int64).repeat(self.cells)
            above = np.minimum(self.slice_above(self.ground + height_u), k - 1)
            self._canon[height_u] = (above - here).astype(self.key_type)
        return self._canon[height_u]

    def crowd_table(self, height_u: int) -> np.ndarray:
        """(K * cells,) crowd words (CrowdWord) for avatars of one height (the Crowd's): per place
        and direction d whether a step arriving there by d passes Algorithm 1's tests that do not
        involve the step height (bit d: the corners clear in this slice for diagonal steps, and
        when the head rises above the slice, the second test in the slice j above the new head:
        the same ground at A and B there and the corners clear there; never where there is no
        ground, so the bit alone refuses INVALID ground), the slice an avatar arriving there lands
        in, as an offset from this one (the slice just above its head: j for a riser, a lower one
        where the same ground lies lower down; bits SLICE_SHIFT and up), and its ground: one
        gather and one comparison (the step height) decide a step.  Everything but the step
        height depends on the place and the direction alone: A is the place by -d in the same
        slice, and an avatar stands at its own ground (Crowd)."""
        w = CrowdWord(len(self.top))
        key = ("crowd", height_u, np.dtype(w.wide).str)
        if key not in self._canon:
            wide = w.wide
            g = self.ground
            shift = self.canon(height_u).astype(np.int64)
            shift[g == INVALID] = 0
            field = (shift & ((1 << w.slice_bits) - 1)).astype(wide)  # two's complement
            t = (g.astype(wide) << wide(w.shift)) | (field << wide(SLICE_SHIFT))
            n = len(g)
            places = np.arange(n, dtype=np.intp)
            for d in range(8):
                if d % 2 == 0:
                    t |= wide(1 << d)
                    continue
                dx, dy = (int(v) for v in DIRECTIONS[d])
                a = np.clip(places - self.offsets[d], 0, n - 1)  # the cell a step in direction d comes from
                h0 = np.maximum(g, g.take(a))
                clear = (g.take(np.clip(a + dx, 0, n - 1)) <= h0) & (g.take(np.clip(a + dy * self.nx, 0, n - 1)) <= h0)
                t |= clear.astype(wide) << wide(d)
            t[g == INVALID] &= ~wide(0xFF)  # no arriving where there is no ground
            self._riser_bits(t, g, height_u)
            self._canon[key] = t
        return self._canon[key]

    def _riser_bits(self, t, g, height_u: int) -> None:
        """Clear in the crowd words t the arrival bits of steps whose head rises above their slice
        and fail Algorithm 1's second test: in the slice j just above the new head (none: fail)
        the ground at B must be B's and the ground at A the feet's (nothing above either between
        the slices), and for a diagonal step the two side cells no higher than the higher feet
        there (corners_clear).  B's part is the same for all eight directions."""
        rise = np.flatnonzero(((self.table >> np.uint32(16)) < height_u) & (g != INVALID))
        fb = g.take(rise)
        j = self.slice_above(fb + height_u)
        jb = np.minimum(j, len(self.top) - 1) * self.cells  # slice j's first key
        b = rise % self.cells
        b_ok = (j < len(self.top)) & (g.take(jb + b) == fb)
        for d in range(8):
            dx, dy = (int(v) for v in DIRECTIONS[d])
            a = b - self.offsets[d]  # the cell a step in direction d comes from
            fa = g.take(rise - self.offsets[d])
            ok = b_ok & (g.take(jb + a) == fa)
            if dx and dy:
                h0 = np.maximum(fa, fb)
                ok &= (g.take(jb + a + dx) <= h0) & (g.take(jb + a + dy * self.nx) <= h0)
            t[rise[~ok]] &= ~t.dtype.type(1 << d)

    def cell_of(self, xy) -> tuple[np.ndarray, np.ndarray]:
        """Flat padded cell of each point (N,) int64 and whether it lies on the grid."""
        s = self.s
        xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
        with np.errstate(invalid="ignore", over="ignore"):
            ix = np.floor((xy[:, 0] - s.origin[0]) / s.cell)
            iy = np.floor((xy[:, 1] - s.origin[1]) / s.cell)
        ny, nx = s.shape
        inside = np.isfinite(ix) & np.isfinite(iy) & (ix >= 0) & (ix < nx) & (iy >= 0) & (iy < ny)
        ix = np.where(inside, ix, -1).astype(np.int64) + 1
        iy = np.where(inside, iy, -1).astype(np.int64) + 1
        return iy * self.nx + ix, inside

    def centre(self, cells) -> np.ndarray:
        """(N, 2) the centres of flat padded cells."""
        s = self.s
        cells = np.asarray(cells, dtype=np.int64)
        ix, iy = cells % self.nx - 1, cells // self.nx - 1
        return np.stack([s.origin[0] + (ix + 0.5) * s.cell, s.origin[1] + (iy + 0.5) * s.cell], axis=1)

    def slice_above(self, head_units) -> np.ndarray:
        """The lowest slice with sliceHeight >= head (K when none)."""
        return np.searchsorted(self.top, np.asarray(head_units, dtype=np.int64), side="left")

    def ground_at(self, slice_index, cells) -> np.ndarray:
        """slice[i][cell] (int64); INVALID where i is past the last slice."""
        i = np.asarray(slice_index, dtype=np.int64)
        ok = i < len(self.top)
        got = self.table[np.where(ok, i, 0) * self.cells + cells] & np.uint32(0xFFFF)
        return np.where(ok, got.astype(np.int64), INVALID)


def legal_steps(p: PaddedSlices, ka, kb, fa, height_u, step_u):
    """Algorithm 1 for a batch: avatars with feet fa standing at place keys ka (slice i, the
    lowest above the head; cell A) step to kb (slice i, neighbouring cell B).  Returns (the indices
    of the legal steps (M,), their landing feet (M,), their landing place keys (M,): in the slice
    just above the new head).  hA - hB is fa - fb; 'hb > sliceHeight[i]' is 'head room at B below
    the height', read from the same gather as the ground.  No loop over avatars; the only
    searchsorted is over the risers (the legal steps whose head rises above slice i)."""
    t = p.table[kb]
    fb = (t & np.uint32(0xFFFF)).astype(np.int64)
    fa = np.asarray(fa).astype(np.int64)
    ok = np.flatnonzero((fb != INVALID) & (np.abs(fb - fa) <= step_u))
    kb, fb, t = kb[ok], fb[ok], t[ok]
    new = kb + p.canon(height_u)[kb] * p.cells_t
    j = np.minimum(ka[ok] // p.cells, len(p.top) - 1)  # the slice read: i, or j for a riser
    up = np.flatnonzero((t >> np.uint32(16)) < height_u)
    good = np.ones(len(ok), dtype=bool)
    if len(up):
        j[up] = p.slice_above(fb[up] + height_u)
        a, b = ka[ok[up]] % p.cells, kb[up] % p.cells
        good[up] = (p.ground_at(j[up], a) == fa[ok[up]]) & (p.ground_at(j[up], b) == fb[up])
        new[up] = (np.minimum(j[up], len(p.top) - 1) * p.cells + b).astype(new.dtype)
    good &= corners_clear(p, ka[ok], kb, np.maximum(fa[ok], fb), j)
    keep = np.flatnonzero(good)
    return ok[keep], fb[keep], new[keep]


def corners_clear(p: PaddedSlices, ka, kb, h0, j) -> np.ndarray:
    """(N,) bool: for a diagonal step from A to B, the two cells beside both (A + dx, A + dy) have
    no ground above h0 (the higher feet) in slice j (the slice the step is judged in): an avatar
    anywhere in A going to anywhere in B may sweep through their corners.  Axial steps: True."""
    delta = kb - ka
    dy = np.floor_divide(delta + 1, p.nx)
    dx = delta - dy * p.nx
    diag = np.flatnonzero((dx != 0) & (dy != 0))
    out = np.ones(len(ka), dtype=bool)
    if len(diag):
        a = ka[diag] % p.cells
        jj = j[diag]
        c1 = p.ground_at(jj, a + dx[diag])
        c2 = p.ground_at(jj, a + dy[diag] * p.nx)
        out[diag] = (c1 <= h0[diag]) & (c2 <= h0[diag])
    return out


def check_moves(slices: CrowdSlices, moves, height: float | None = None, step: float | None = None) -> np.ndarray:
    """The command line's query --moves: moves (N, 2, 3), an avatar's feet before and after one
    step.  (N,) uint8, 1 where the slices call the step legal: both feet on the grid, the cells
    the same or neighbours (one step), the feet before on the slices' ground (within FEET_MATCH)
    read in the slice just above the head, Algorithm 1 legal, and the feet after at the height the
    slices land them on (within FEET_MATCH).  `height` (>= the slices' height) and `step` default
    to the slices' avatar.  The grounds it reads come from sweeps up the slices' changes
    (ground_at), never a K x cells table; the same answers as check_moves_dense (legal_steps on
    the dense layout: tests/core/test_crowd.py)."""
    s = slices
    ny, nx = s.shape
    wide = nx + 2
    top = np.asarray(s.slice_height, dtype=np.int64)
    m = np.asarray(moves, dtype=np.float64).reshape(-1, 2, 3)
    height_u = s.length_units(s.height if height is None else max(height, s.height))
    step_u = s.step_units(s.step if step is None else step)
    tol = int(np.ceil(FEET_MATCH / s.unit))
    cells = []
    for xy in (m[:, 0, :2], m[:, 1, :2]):
        with np.errstate(invalid="ignore", over="ignore"):
            ix = np.floor((xy[:, 0] - s.origin[0]) / s.cell)
            iy = np.floor((xy[:, 1] - s.origin[1]) / s.cell)
        inside = np.isfinite(ix) & np.isfinite(iy) & (ix >= 0) & (ix < nx) & (iy >= 0) & (iy < ny)
        cells.append((np.where(inside, iy, -1).astype(np.int64) + 1) * wide
                     + np.where(inside, ix, -1).astype(np.int64) + 1)
        cells.append(inside)
    a, ina, b, inb = cells
    with np.errstate(invalid="ignore"):
        ok = ina & inb & np.all(np.abs(m) < 1e9, axis=(1, 2))
    dx, dy = b % wide - a % wide, b // wide - a // wide
    ok &= np.maximum(np.abs(dx), np.abs(dy)) <= 1
    zs = np.where(ok[:, None], m[:, :, 2], s.z0)
    f0, f1 = s.units(zs[:, 0]), s.units(zs[:, 1])
    i = np.searchsorted(top, f0 + height_u, side="left")
    live = np.flatnonzero(ok & (i < len(top)))
    ga, fb = ground_at(s, np.concatenate([i[live]] * 2), np.concatenate([a[live], b[live]])).reshape(2, -1)
    good = (ga != INVALID) & (np.abs(ga - f0[live]) <= tol)
    good &= (fb != INVALID) & (np.abs(fb - ga) <= step_u)
    j = i[live].copy()
    up = np.flatnonzero(good & (top[np.minimum(j, len(top) - 1)] - fb < height_u))
    j[up] = np.searchsorted(top, fb[up] + height_u, side="left")
    if len(up):
        ja, jb = ground_at(s, np.concatenate([j[up]] * 2), np.concatenate([a[live][up], b[live][up]])).reshape(2, -1)
        good[up] &= (ja == ga[up]) & (jb == fb[up])
    diag = np.flatnonzero(good & (dx[live] != 0) & (dy[live] != 0))
    if len(diag):
        al = a[live][diag]
        c = ground_at(s, np.concatenate([j[diag]] * 2),
                      np.concatenate([al + dx[live][diag], al + dy[live][diag] * wide])).reshape(2, -1)
        h0 = np.maximum(ga[diag], fb[diag])
        good[diag] &= (c[0] <= h0) & (c[1] <= h0)
    good &= np.abs(fb - f1[live]) <= tol
    out = np.zeros(len(m), dtype=np.uint8)
    out[live[good]] = 1
    return out


def ground_at(s: CrowdSlices, slice_index, cells) -> np.ndarray:
    """slice[i][cell] (int64) for padded cells (PaddedSlices' numbering), INVALID for a slice past
    the last: one sweep up the slices' changes, answering each query in its slice (time: the
    changes up to the highest slice asked, the padded grid, and sorting the queries)."""
    i = np.asarray(slice_index, dtype=np.int64).reshape(-1)
    cells = np.asarray(cells, dtype=np.int64).reshape(-1)
    out = np.zeros(len(i), dtype=np.int64)
    kept = s.kept
    asked = np.flatnonzero(i < kept)
    if not len(asked):
        return out
    order = asked[np.argsort(i[asked], kind="stable")]
    edges = np.searchsorted(i[order], np.arange(kept + 1), side="left")
    ny, nx = s.shape
    value = np.zeros((ny + 2) * (nx + 2), dtype=np.int64)
    for k in range(int(i[order[-1]]) + 1):
        c, v = s.changes(k)
        value[Walk._pad(c, nx)] = v
        q = order[edges[k]:edges[k + 1]]
        if len(q):
            out[q] = np.minimum(value.take(cells.take(q)), int(s.slice_height[k]))
    return out


def check_moves_dense(slices: CrowdSlices, moves, height: float | None = None, step: float | None = None) -> np.ndarray:
    """check_moves on the dense layout (PaddedSlices, legal_steps): K x cells; the reference its
    answers are held to, for small levels."""
    p = slices.padded()
    m = np.asarray(moves, dtype=np.float64).reshape(-1, 2, 3)
    height_u = slices.length_units(slices.height if height is None else max(height, slices.height))
    step_u = slices.step_units(slices.step if step is None else step)
    tol = int(np.ceil(FEET_MATCH / slices.unit))
    a, ina = p.cell_of(m[:, 0, :2])
    b, inb = p.cell_of(m[:, 1, :2])
    with np.errstate(invalid="ignore"):
        ok = ina & inb & np.all(np.abs(m) < 1e9, axis=(1, 2))
    d = np.abs(np.stack([a % p.nx - b % p.nx, a // p.nx - b // p.nx], axis=1))
    ok &= d.max(axis=1) <= 1
    zs = np.where(ok[:, None], m[:, :, 2], slices.z0)
    f0, f1 = slices.units(zs[:, 0]), slices.units(zs[:, 1])
    i = p.slice_above(f0 + height_u)
    ga = p.ground_at(i, a)
    ok &= (i < len(p.top)) & (ga != INVALID) & (np.abs(ga - f0) <= tol)
    i = np.where(ok, i, 0)
    ka, kb = (i * p.cells + a).astype(p.key_type), (i * p.cells + b).astype(p.key_type)
    legal, fb, _ = legal_steps(p, ka, kb, ga.astype(np.int32), height_u, step_u)
    out = np.zeros(len(m), dtype=bool)
    out[legal] = ok[legal] & (np.abs(fb.astype(np.int64) - f1[legal]) <= tol)
    return out.astype(np.uint8)


class Walk:
    """The standing places and every step between them for avatars of one height and step,
    made by one sweep up the slices in time and memory linear in the places and the slices'
    changes (CrowdSlices), never K x cells: what a crowd walks on.

    Places are numbered 1 to P in the order of their dense keys slice * cells + cell (so place i
    is standing_spots(padded, height)[i - 1]); 0 is the sink, where refused claims go.  Per
    place: `cell` (int32, the padded grid's flat cell, PaddedSlices' numbering), `slice`, `rank`
    (how many places of its cell come before it) and `ground` (u2, units), and `step[d * stride + place]` (int32; stride >= P + 1): the place an avatar standing there
    lands on stepping in direction d when Algorithm 1 allows it (the same verdicts and landing
    places as PaddedSlices.crowd_table and legal_steps: tests/core/test_crowd.py), else 0.

    The sweep finds the places: each change that starts a ground v at slice k (a cell's value,
    not INVALID nor a cut) stands an avatar in the slice i just above v + height, when the value
    lasts up to i (checked at i: the cell has not changed since k).  It keeps, per padded cell,
    the value in the current slice and the place of that value, and judges from each place of
    slice i the eight steps in slice i (ground, step height, corners); a step
    whose head rises above slice i is judged again in the slice j just above the new head when
    the sweep gets there (the same ground at A and at B, the corners clear there), landing on
    B's place in j; the others land on B's place, made at or below i."""

    def __init__(self, s: CrowdSlices, height_u: int, step_u: int, native: bool | None = None):
        ny, nx = s.shape
        self.nx, self.ny = nx + 2, ny + 2
        self.cells = self.nx * self.ny
        top = np.asarray(s.slice_height, dtype=np.int64)
        kept = len(top)
        step_u = min(int(step_u), 0xFFFF)  # two 16-bit grounds never differ by more
        offsets = DIRECTIONS[:, 0] + DIRECTIONS[:, 1] * self.nx
        cv = s.change_value
        most = int(np.count_nonzero((cv != INVALID) & (cv != CUT)))  # a value starts at most one place
        #: Walk.step's row length: at least P + 1 (the places are counted as the sweep finds them)
        self.stride = most + 1
        cell_of = np.zeros(most + 1, dtype=np.int32)
        slice_of = np.zeros(most + 1, dtype=np.uint8 if kept <= 256 else np.uint16)
        self.ground = np.zeros(most + 1, dtype=np.uint16)
        step = np.zeros((8, most + 1), dtype=np.int32)
        rank_of = np.zeros(most + 1, dtype=np.uint16)
        ranks = np.zeros(self.cells, dtype=np.uint16)  # places made in each cell so far
        start = np.zeros(self.cells, dtype=slice_of.dtype)  # the slice each cell's value started in
        value = np.zeros(self.cells, dtype=np.int32)  # each cell's value in the current slice
        place = np.zeros(self.cells, dtype=np.int32)  # the place of that value (0: none yet, or none)
        waiting: list[list] = [[] for _ in range(kept)]
        risers: list[list] = [[] for _ in range(kept)]
        first = 1
        buf = _WalkBuffers(WALK_CHUNK)
        steps_c = None  # the eight steps in C (crowd_c.walk_steps: the same steps) where the library loads
        if native is not False and np.dtype(np.intp) == np.dtype(np.int64):
            from . import crowd_c
            if native or crowd_c.available():
                steps_c = crowd_c.walk_steps(self, _groups)
        for k in range(kept):
            c, v = s.changes(k)
            c = self._pad(c, nx)
            start[c] = k
            ok = np.flatnonzero((v - np.uint16(1)) < np.uint16(CUT - 1))  # a ground (not 0, not CUT): its place
            # is in the slice just above the head
            at = np.searchsorted(top, v.take(ok).astype(np.int64) + height_u)
            good = (at >= k) & (at < kept)
            for i, cells in _groups(at[good], c.take(ok[good])):
                waiting[i].append((k, cells))
            v = v.astype(np.int32)
            v[v == INVALID] = NOTHING
            value[c] = v
            place[c] = 0
            got = [cells[start.take(cells) == k0] for k0, cells in waiting[k]]  # the value lasted up to k
            waiting[k] = []
            a = np.sort(np.concatenate(got)) if got else np.zeros(0, np.int32)
            n = len(a)
            cell_of[first:first + n] = a
            slice_of[first:first + n] = k
            a = a.astype(np.intp)  # intp: NumPy turns any other index type into intp on every take
            r = ranks.take(a)
            rank_of[first:first + n] = r
            r += 1
            ranks[a] = r
            place[a] = np.arange(first, first + n, dtype=np.int32)
            first += n
            tk = int(top[k])
            for src, d, ca, cb, fa, fb in risers[k]:  # steps judged again in the slice above the head
                ok = (np.minimum(value.take(ca), tk) == fa) & (np.minimum(value.take(cb), tk) == fb)
                dx, dy = (int(t) for t in DIRECTIONS[d])
                if dx and dy:
                    h0 = np.maximum(fa, fb)
                    ok &= (np.minimum(value.take(ca + dx), tk) <= h0) & (np.minimum(value.take(ca + dy * self.nx), tk) <= h0)
                step[d, src] = place.take(cb) * ok
            risers[k] = []
            for lo in range(0, n, WALK_CHUNK):  # in chunks: the work buffers stay in the cache
                hi = min(lo + WALK_CHUNK, n)
                judge = self._steps if steps_c is None else steps_c
                judge(step, risers, buf, value, place, a[lo:hi], first - n + lo, tk, top, height_u, step_u,
                            offsets)
        self.count = first - 1
        self.cell, self.slice, self.ground = cell_of[:first], slice_of[:first], self.ground[:first]
        self.rank = rank_of[:first]  # each place's rank among its cell's places (Crowd's claim tags)
        self.step = step.reshape(-1)
        self.top = top

    def _steps(self, step, risers, buf, value, place, a, at, tk, top, height_u, step_u, offsets) -> None:
        """The eight steps from the places in cells `a` (intp) of slice k (numbered from `at`),
        written into `step`; steps whose head rises above slice k go to `risers` (by the slice j
        they are judged in again)."""
        n = len(a)
        kept = len(top)
        fa, fa_low, b, t, ok, ok2, h0, pb = (x[:n] for x in (buf.fa, buf.fa_low, buf.b, buf.t, buf.ok, buf.ok2,
                                                             buf.h0, buf.pb))
        value.take(a, out=fa, mode="wrap")
        self.ground[at:at + n] = fa
        np.subtract(fa, step_u, out=fa_low)  # |fb - fa| <= step: fb - fa_low from 0 to 2 * step
        rises_above = tk - height_u  # a ground above this: the head rises above slice k
        twice = np.uint32(2 * step_u)
        for d in (0, 2, 4, 6, 1, 3, 5, 7):
            dx, dy = (int(v) for v in DIRECTIONS[d])
            np.add(a, int(offsets[d]), out=b)
            fb = buf.fb[d][:n] if d % 2 == 0 else buf.fb_diag[:n]  # the axial ones: the diagonals' corners
            value.take(b, out=fb, mode="wrap")
            np.minimum(fb, tk, out=fb)  # NOTHING (no ground) fails the step test below
            np.subtract(fb, fa_low, out=t)
            np.less_equal(t.view(np.uint32), twice, out=ok)
            if dx and dy:
                np.maximum(buf.fb[_AXIAL[(dx, 0)]][:n], buf.fb[_AXIAL[(0, dy)]][:n], out=t)
                np.maximum(fa, fb, out=h0)
                ok &= np.less_equal(t, h0, out=ok2)
            up = np.flatnonzero(np.greater(fb, rises_above, out=ok2))
            if len(up):
                r = up[ok.take(up)]  # legal so far, and the head rises above slice k: judged in j
                ok[up] = False
                j = np.searchsorted(top, fb.take(r).astype(np.int64) + height_u)
                for jj, sub in _groups(j, r):
                    if jj < kept:
                        risers[jj].append((sub.astype(np.int32) + np.int32(at), d, a.take(sub), b.take(sub),
                                           fa.take(sub), fb.take(sub)))
            place.take(b, out=pb, mode="wrap")
            np.multiply(pb, ok, out=step[d, at:at + n])  # legal: B's place, made at or below k

    @staticmethod
    def _pad(cells, nx: int) -> np.ndarray:
        c = np.asarray(cells, dtype=np.int32)
        out = c // nx  # (y + 1) * (nx + 2) + x + 1 = c + 2 * y + nx + 3
        out *= 2
        out += c
        out += nx + 3
        return out

    def keys(self, places) -> np.ndarray:
        """Dense place keys (PaddedSlices: slice * cells + padded cell) of place numbers (int64)."""
        places = np.asarray(places)
        return self.slice.take(places).astype(np.int64) * self.cells + self.cell.take(places)


#: Walk's working value for 'no ground': below every feet by more than any step, so the step test
#: refuses it and a corner there is clear
NOTHING = -(1 << 20)
#: places Walk judges at a time (its work buffers, about 40 bytes a place, stay in the cache)
WALK_CHUNK = 1 << 15
#: the axial directions by (dx, dy)
_AXIAL = {(1, 0): 0, (0, 1): 2, (-1, 0): 4, (0, -1): 6}


class _WalkBuffers:
    """Work buffers for Walk._steps, `n` places long."""

    def __init__(self, n: int):
        self.fa, self.fa_low, self.t, self.h0, self.pb, self.fb_diag = (np.empty(n, np.int32) for _ in range(6))
        self.fb = {d: np.empty(n, np.int32) for d in (0, 2, 4, 6)}
        self.b = np.empty(n, np.intp)
        self.ok, self.ok2 = np.empty(n, bool), np.empty(n, bool)


def _groups(labels: np.ndarray, items: np.ndarray):
    """(label, items with that label) for each label, items in their order."""
    if not len(labels):
        return []
    order = np.argsort(labels, kind="stable")
    lab = labels.take(order)
    cut = np.flatnonzero(lab[1:] != lab[:-1]) + 1
    edges = np.concatenate([[0], cut, [len(lab)]])
    return [(int(lab[e0]), items.take(order[e0:e1])) for e0, e1 in zip(edges[:-1], edges[1:])]


class Crowd:
    """N avatars walking on a level's slices, one tick at a time, all in NumPy (no loop over
    avatars).  Each avatar is a standing place (Walk: numbered 1 to P) and a direction.  Each
    tick every avatar tries one step to the neighbouring cell it faces (Algorithm 1, then the
    occupancy of the place it would stand on); an avatar whose step is refused turns left or right
    at random (90 degrees, the paper's rule) and tries the new direction once in the same tick, as
    the paper's timings include.  Same seed, same walk.  Spawning draws place numbers (the
    places are never listed as keys); memory and time grow with the places, not K x cells.

    Occupancy is one small unsigned int per place: 0 when free, else the claim tag of the avatar
    that took it, 1 + direction + 8 * rank, the rank of the place it came from among its cell's
    places (Walk.rank; uint8 when no cell has more than 31 places, uint16 up to 8,191).  Avatars
    aiming at one free place in a pass all write their tags there and read it back; the one whose
    tag is there wins.  No two of them share a tag: the place's cell and the direction give the
    cell each came from, and the rank the place in it, where only one avatar stands.  So there is
    exactly one winner whatever order the writes land in; NumPy writes repeated indices in order,
    so it is the highest avatar number, on every run (tests/core/test_crowd.py: PlainCrowd).

    Layout (structure of arrays, one row per avatar): place (intp: NumPy turns any other index
    type into intp on every gather), dir (uint8) and the claim tag's base 1 + 8 * rank; work
    buffers of N rows for one pass, reused every tick.  A pass (_pass) gathers the landing place
    of each avatar's step (Walk.step: 0, the sink, when refused), reads the occupancy there, sends
    the claims on taken places to the sink, scatters the claims, gathers them back and moves the
    winners: all branch-free (verdicts are bools multiplied in; at a million avatars half are
    refused at random, and a branch per avatar mispredicted that often costs more than the
    arithmetic); the only index list is the refused, for the second pass."""

    def __init__(self, slices: CrowdSlices, n: int, seed: int = 0, height: float | None = None,
                 step: float | None = None, native: bool | None = None):
        self.s = slices
        self.height_u = slices.length_units(slices.height if height is None else max(height, slices.height))
        self.step_u = slices.step_units(slices.step if step is None else step)
        self.rng = np.random.default_rng(seed)
        self.walk = w = slices.walk(self.height_u, self.step_u)
        if n > w.count:
            raise BrushbakeError(f"{n:,} avatars do not fit: the slices have {w.count:,} standing places for "
                                 "this avatar.", subject="crowd",
                                 hint="Use fewer avatars, or bake with a smaller CELL in --slices W,H,STEP,CELL.")
        pick = np.sort(self.rng.choice(w.count, size=n, replace=False)) if n else np.zeros(0, np.int64)
        self.place = (pick + 1).astype(np.intp)
        self.dir = self.rng.integers(0, 8, size=n).astype(np.uint8)
        k = slices.kept
        most = int(w.rank.max(initial=0)) + 1  # the most places in one cell
        tag = np.uint8 if most <= TAG8_PLACES else np.uint16 if most <= TAG16_PLACES else np.uint32
        #: per place the claim tag base 1 + 8 * rank (0 at the sink)
        self.place_base = w.rank.astype(tag)  # 8 * rank + 1 fits the tag type (TAG8_PLACES, TAG16_PLACES)
        self.place_base *= tag(8)
        self.place_base += tag(1)
        self.place_base[0] = 0
        #: per place 0 when free, else the claim tag of the avatar standing there (Crowd docstring)
        self.occupant = np.zeros(w.count + 1, dtype=tag)
        self.base = self.place_base.take(self.place)
        self.occupant[self.place] = self.base + self.dir
        self._stride = np.intp(w.stride)  # Walk.step: direction-major
        #: work buffers for one pass (Crowd._pass): i (intp), kb (int32), o, tag, good, b2 (bool)
        self._buf = tuple(np.empty(n, dt) for dt in (np.intp, np.int32, tag, tag, bool, bool))
        self.ticks = 0
        #: the pass in C (core/runtime/crowd_c.py: the same moves, bit for bit) when `native` is not
        #: False and the library loads (True: it must); else NumPy's
        self.native = False
        if native is not False and np.dtype(np.intp) == np.dtype(np.int64):
            from . import crowd_c
            if native or crowd_c.available():
                crowd_c.kernel()
                self.native = True

    @property
    def p(self) -> "PaddedSlices":
        """The dense layout (PaddedSlices) of the same slices: for tests and small levels."""
        return self.s.padded()

    @property
    def key(self) -> np.ndarray:
        """(N,) int64 the avatars' dense place keys (slice * cells + padded cell)."""
        return self.walk.keys(self.place)

    @property
    def feet(self) -> np.ndarray:
        """(N,) the avatars' feet in ground units (u2)."""
        return self.walk.ground.take(self.place)

    @property
    def occupied(self) -> np.ndarray:
        """(K * cells,) bool: the places an avatar stands on (dense: for tests and small levels)."""
        out = np.zeros(self.s.kept * self.walk.cells, dtype=bool)
        out[self.walk.keys(np.flatnonzero(self.occupant[1:]) + 1)] = True
        return out

    def positions(self) -> np.ndarray:
        """(N, 3) feet positions in metres: cell centres at the ground height."""
        w, s = self.walk, self.s
        cells = w.cell.take(self.place).astype(np.int64)
        ix, iy = cells % w.nx - 1, cells // w.nx - 1
        xy = np.stack([s.origin[0] + (ix + 0.5) * s.cell, s.origin[1] + (iy + 0.5) * s.cell], axis=1)
        return np.column_stack([xy, s.metres(self.feet)])

    def tick(self) -> int:
        """Move every avatar one step (or turn it); returns how many moved."""
        refused = self._pass(None)
        if len(refused):
            bits = np.unpackbits(self.rng.integers(0, 256, size=(len(refused) + 7) // 8, dtype=np.uint8))
            turn = 2 + 4 * bits[: len(refused)]  # 90 degrees left (+2) or right (+6), uint8
            d = (self.dir.take(refused) + turn) & np.uint8(7)
            self.dir[refused] = d
            moved_again = self._pass(refused, d)
        else:
            moved_again = 0
        self.ticks += 1
        return len(self.place) - len(refused) + moved_again

    def _pass(self, who, dirs=None):
        """Try the step each avatar in `who` (None: all; else with their new directions `dirs`)
        faces; move the winners; return the avatars refused (all) or how many moved.  Branch-free
        over the avatars (class docstring).  In C when self.native (crowd_c: the same answers)."""
        if self.native:
            from .crowd_c import crowd_pass
            return crowd_pass(self, who, dirs)
        if who is None:
            place, base, dirs = self.place, self.base, self.dir
        else:
            place, base = self.place.take(who, mode="wrap"), self.base.take(who, mode="wrap")
        n = len(place)
        i, kb, o, tag, good, b2 = (v[:n] for v in self._buf)
        np.multiply(dirs, self._stride, out=i, dtype=np.intp)  # the direction's row in Walk.step
        i += place
        self.walk.step.take(i, out=kb, mode="wrap")  # the landing place, 0 (the sink) when refused
        occ = self.occupant
        occ.take(kb, out=o, mode="wrap")
        np.equal(o, 0, out=good)  # free (the sink always reads free)
        kb *= good  # claims on taken places go to the sink
        np.add(base, dirs, out=tag)
        occ[kb] = tag  # the claims: the last written wins
        occ[0] = 0
        occ.take(kb, out=o, mode="wrap")
        win = np.equal(o, tag, out=good)
        lose = np.logical_not(win, out=b2)
        # the winners leave their places (the others write 1: still taken); bool as the type
        occ[place] = lose.view(np.uint8) if occ.dtype == np.uint8 else lose.astype(occ.dtype)
        np.subtract(kb, place, out=i)
        i *= win
        self.place_base.take(kb, out=o, mode="wrap")  # the winners' new tag base
        o -= base
        o *= win
        if who is None:
            self.place += i
            self.base += o
            return np.flatnonzero(lose)
        place += i
        base += o
        self.place[who] = place
        self.base[who] = base
        return int(np.count_nonzero(win))


def crowd_steps(p: PaddedSlices, table: np.ndarray, ka, kb, fa, height_u: int, step_u: int, dirs=None):
    """Algorithm 1 for avatars of one height on the crowd words, step by step as Crowd._pass
    decides it (written plainly, for tests): (indices of the legal steps (M,), their landing
    ground (M,), their landing keys (M,)).  fa is in the table's type.  The same verdicts as
    legal_steps (tests/core/test_crowd.py compares them)."""
    w = CrowdWord(len(p.top))
    wide = w.wide
    t = table.take(kb)
    fb = w.ground(t)
    if dirs is None:
        delta = kb - ka
        dirs = np.zeros(len(kb), dtype=np.intp)
        for d, o in enumerate(p.offsets):
            dirs[delta == o] = d
    arrive = t & (wide(1) << np.asarray(dirs).astype(wide))
    step = wide(min(step_u, 0xFFFF))
    ok = np.flatnonzero((fb - fa.astype(wide) + step <= wide(2) * step) & (arrive != 0))
    t, fb = t.take(ok), fb.take(ok)
    return ok, fb, kb.take(ok) + w.slice_offset(t) * p.cells


def standing_spots(p: PaddedSlices, height_u: int) -> np.ndarray:
    """Place keys of every place an avatar of that height can stand: ground there, head under
    the slice, and the slice the lowest above the head (so each place once).  Dense (K x cells):
    the reference for Walk's places, and for small levels."""
    t = p.table
    keys = np.flatnonzero(((t & np.uint32(0xFFFF)) != INVALID) & ((t >> np.uint32(16)) >= height_u))
    return keys[p.canon(height_u)[keys] == 0]
