"""Shared test fixtures: where the maps and sample scenes are, a session cache of compiled levels
(each scene is loaded and compiled once per test session), and the brute-force ground truth the
collision tests compare the BSP against.

The ground truth here never touches the BSP code: it tests points and segments against every
convex brush directly (points @ normals.T - dists), with an axis-aligned box prefilter.

Helpers are handed out through session fixtures (`truth`, `levels`) rather than imported, because
tests/exporters has its own conftest.py and `import conftest` would be ambiguous.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
#: The real Quake maps the tests read ship with the repository (maps/README.md: sources, licences)
MAPS_DIR = REPO / "maps"
SAMPLES_DIR = REPO / "sample_scenes"

MAP_PATHS = sorted(Path(p) for p in glob.glob(str(MAPS_DIR / "**" / "*.map"), recursive=True))
SAMPLE_PATHS = sorted(Path(p) for p in glob.glob(str(SAMPLES_DIR / "*.json"))) + sorted(
    Path(p) for p in glob.glob(str(SAMPLES_DIR / "*.map"))
)

#: m. The tolerance band around brush surfaces inside which the ground truth makes no claim.
BAND = 1e-4


def scene_params(paths, what: str):
    """pytest params for a list of scene files; an empty list gives one param that fails loudly
    (a glob that finds nothing must not turn into a silently empty test)."""
    if not paths:
        return [pytest.param(None, id=f"NO-{what}-FOUND")]
    return [pytest.param(p, id=p.name) for p in paths]


def pytest_generate_tests(metafunc):
    """Tests that take `map_path` run once per map, `sample_path` once per sample scene."""
    if "map_path" in metafunc.fixturenames:
        metafunc.parametrize("map_path", scene_params(MAP_PATHS, "maps"))
    if "sample_path" in metafunc.fixturenames:
        metafunc.parametrize("sample_path", scene_params(SAMPLE_PATHS, "sample-scenes"))


@pytest.fixture(scope="session")
def map_paths():
    return list(MAP_PATHS)


@pytest.fixture(scope="session")
def sample_paths():
    return list(SAMPLE_PATHS)


@pytest.fixture(scope="session")
def map_named():
    """map_named('qbspfeatures.map') -> its path (fails when the map is missing)."""

    def find(name):
        for p in MAP_PATHS:
            if p.name == name:
                return p
        pytest.fail(f"map {name} not found under {MAPS_DIR}")

    return find


def require_path(path):
    if path is None:
        pytest.fail("no scene files were found: expected sample_scenes/*.json and maps/**/*.map "
                    f"(looked in {SAMPLES_DIR} and {MAPS_DIR})")
    return path


# --------------------------------------------------------------------------------------------
# Brute-force ground truth


@dataclass
class BrushArrays:
    """The collision brushes of a scene as flat arrays for the brute force."""

    normals: list  # per brush (K, 3)
    dists: list  # per brush (K,)
    lo: np.ndarray  # (B, 3)
    hi: np.ndarray  # (B, 3)
    faces: list  # per brush list of (M, 3) polygons, counter-clockwise seen from outside

    def __len__(self) -> int:
        return len(self.dists)


class Truth:
    BAND = BAND

    @staticmethod
    def brush_arrays(brushes) -> BrushArrays:
        """Every brush given (callers pick the ones that collide with the point hull)."""
        if not brushes:
            return BrushArrays([], [], np.zeros((0, 3)), np.zeros((0, 3)), [])
        bounds = np.array([b.bounds for b in brushes])
        return BrushArrays(
            [np.asarray(b.normals, float) for b in brushes],
            [np.asarray(b.dists, float) for b in brushes],
            bounds[:, 0],
            bounds[:, 1],
            [list(b.faces) for b in brushes],
        )

    @staticmethod
    def point_hull_brushes(scene):
        return [b for b in scene.brushes if b.contents.collides_with_point]

    @staticmethod
    def classify_points(ba: BrushArrays, points: np.ndarray, band: float = BAND):
        """(inside, in_band): inside = strictly inside some brush (every plane distance < 0);
        in_band = within `band` of some brush plane while not more than `band` outside any of
        that brush's other planes, i.e. -band <= max_k(n_k.p - d_k) <= band for some brush."""
        pts = np.asarray(points, float).reshape(-1, 3)
        inside = np.zeros(len(pts), bool)
        in_band = np.zeros(len(pts), bool)
        order = np.argsort(pts[:, 0], kind="stable")
        xs = pts[order, 0]
        margin = band + 1e-9
        for k in range(len(ba)):
            a = np.searchsorted(xs, ba.lo[k, 0] - margin, "left")
            b = np.searchsorted(xs, ba.hi[k, 0] + margin, "right")
            if a >= b:
                continue
            idx = order[a:b]
            p = pts[idx]
            m = np.all(p[:, 1:] >= ba.lo[k, 1:] - margin, axis=1) & np.all(p[:, 1:] <= ba.hi[k, 1:] + margin, axis=1)
            idx, p = idx[m], p[m]
            if not len(idx):
                continue
            worst = (p @ ba.normals[k].T - ba.dists[k]).max(axis=1)
            inside[idx[worst < 0]] = True
            in_band[idx[np.abs(worst) <= band]] = True
        return inside, in_band

    @staticmethod
    def _intervals(s0: np.ndarray, dd: np.ndarray):
        """Per row (segment) of plane distances s0 at t=0 and their rates dd: the parameter
        interval [enter, leave] within [0, 1] where every plane distance is < 0, the index of the
        plane that bounds it from below (-1 when the segment starts inside) and whether it exists."""
        with np.errstate(divide="ignore", invalid="ignore"):
            t = -s0 / dd
        entering = dd < 0
        leaving = dd > 0
        t_in = np.where(entering, t, -np.inf)
        t_out = np.where(leaving, t, np.inf)
        t_lo = t_in.max(axis=1)
        plane = np.where(np.isfinite(t_lo), t_in.argmax(axis=1), -1)
        t_hi = t_out.min(axis=1)
        impossible = np.any((dd == 0) & (s0 >= 0), axis=1)
        enter = np.maximum(t_lo, 0.0)
        leave = np.minimum(t_hi, 1.0)
        hit = ~impossible & (enter < leave)
        plane = np.where(t_lo >= 0, plane, -1)
        return enter, leave, hit, plane

    @staticmethod
    def segments(ba: BrushArrays, starts, ends, band: float = BAND, t_tol: float = 1e-6):
        """Brute-force first hit of each segment against every brush (slab / Cyrus-Beck clipping).

        Returns a dict of arrays:
          t           (N,) earliest entering parameter in [0, 1], inf for a miss
          start_solid (N,) start strictly inside some brush (by more than `band`)
          ambiguous   (N,) no claim: the start lies in the band, or some brush that could be
                      the first hit is hit when grown by `band` and missed when shrunk by it
                      (grazing an edge or a face, running along a seam), or the first hit
                      moves by more than 0.01 m between the grown and the shrunk brushes
                      (near-parallel incidence)
          normal_seg, normals  (M,), (M, 3): the acceptable hit normals (every plane tied
                      for the earliest entry within t_tol metres, facing the start)
        """
        s = np.asarray(starts, float).reshape(-1, 3)
        e = np.asarray(ends, float).reshape(-1, 3)
        n = len(s)
        delta = e - s
        length = np.linalg.norm(delta, axis=1)
        seg_lo = np.minimum(s, e)
        seg_hi = np.maximum(s, e)
        t_exact = np.full(n, np.inf)
        t_grow = np.full(n, np.inf)
        t_shrink = np.full(n, np.inf)
        start_solid = np.zeros(n, bool)
        start_band = np.zeros(n, bool)
        per_brush = []  # (brush, seg idx, enter exact, enter grown, hit grown, hit shrunk)
        margin = band + 1e-9
        for k in range(len(ba)):
            sel = np.flatnonzero(np.all(seg_lo <= ba.hi[k] + margin, axis=1) & np.all(seg_hi >= ba.lo[k] - margin, axis=1))
            if not len(sel):
                continue
            N, D = ba.normals[k], ba.dists[k]
            s0 = s[sel] @ N.T - D
            dd = delta[sel] @ N.T
            worst0 = s0.max(axis=1)
            start_solid[sel[worst0 < -band]] = True
            start_band[sel[np.abs(worst0) <= band]] = True
            enter, _, hit, _ = Truth._intervals(s0, dd)
            enter_g, _, hit_g, _ = Truth._intervals(s0 - band, dd)
            enter_s, _, hit_s, _ = Truth._intervals(s0 + band, dd)
            np.minimum.at(t_exact, sel[hit], enter[hit])
            np.minimum.at(t_grow, sel[hit_g], enter_g[hit_g])
            np.minimum.at(t_shrink, sel[hit_s], enter_s[hit_s])
            per_brush.append((k, sel, s0, dd, enter, hit, enter_g, hit_g, hit_s))
        ambiguous = start_band.copy()
        first = np.where(np.isfinite(t_exact), t_exact, 1.0)
        seg_parts, normal_parts = [], []
        for k, sel, s0, dd, enter, hit, enter_g, hit_g, hit_s in per_brush:
            # a brush hit only when grown, early enough to matter
            unsure = (hit_g != hit_s) & (enter_g <= first[sel] + 1e-9)
            ambiguous[sel[unsure]] = True
            # planes tied for the earliest entry: the brush enters within t_tol of the first hit
            # and the plane is crossed (inward) within t_tol of it while the rest of the brush admits it
            L = length[sel]
            close = hit & (np.abs(enter - t_exact[sel]) * L <= t_tol) & (enter > 0)
            if close.any():
                rows = np.flatnonzero(close)
                with np.errstate(divide="ignore", invalid="ignore"):
                    tk = -s0[rows] / dd[rows]
                tied = (dd[rows] < 0) & (np.abs(tk - enter[rows, None]) * L[rows, None] <= t_tol)
                r, c = np.nonzero(tied)
                seg_parts.append(sel[rows[r]])
                normal_parts.append(ba.normals[k][c])
        with np.errstate(invalid="ignore"):
            gap = np.where(np.isfinite(t_shrink), t_shrink - np.where(np.isfinite(t_grow), t_grow, 0.0), np.inf)
        wide = np.isfinite(t_grow) & (gap * length > 0.01)
        ambiguous |= wide & (t_grow <= first + 1e-9)
        ambiguous |= length == 0
        return {
            "t": t_exact,
            "start_solid": start_solid,
            "ambiguous": ambiguous,
            "length": length,
            "normal_seg": np.concatenate(seg_parts) if seg_parts else np.zeros(0, np.int64),
            "normals": np.concatenate(normal_parts) if normal_parts else np.zeros((0, 3)),
        }

    @staticmethod
    def face_samples(ba: BrushArrays, count: int, rng: np.random.Generator):
        """`count` random points on brush faces (area-weighted) and the faces' outward normals."""
        tris, normals = [], []
        for k in range(len(ba)):
            for poly, nrm in zip(ba.faces[k], ba.normals[k]):
                for j in range(1, len(poly) - 1):
                    tris.append((poly[0], poly[j], poly[j + 1]))
                    normals.append(nrm)
        if not tris:
            return np.zeros((0, 3)), np.zeros((0, 3))
        tris = np.array(tris)  # (T, 3, 3)
        normals = np.array(normals)
        area = 0.5 * np.linalg.norm(np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]), axis=1)
        pick = rng.choice(len(tris), size=count, p=area / area.sum())
        u, v = rng.random(count), rng.random(count)
        flip = u + v > 1
        u[flip], v[flip] = 1 - u[flip], 1 - v[flip]
        t = tris[pick]
        pts = t[:, 0] + u[:, None] * (t[:, 1] - t[:, 0]) + v[:, None] * (t[:, 2] - t[:, 0])
        return pts, normals[pick]

    @staticmethod
    def sample_points(ba: BrushArrays, bounds: np.ndarray, n_uniform: int, n_surface: int, rng, margin: float = 1.0):
        """Uniform points in the bounds plus a margin, and points on brush faces pushed along the
        normal by +-1e-3 m (half of them) or by a log-uniform 2e-4 .. 1e-2 m (the rest)."""
        lo, hi = bounds[0] - margin, bounds[1] + margin
        uniform = lo + rng.random((n_uniform, 3)) * (hi - lo)
        on, nrm = Truth.face_samples(ba, n_surface, rng)
        if not len(on):
            return uniform
        sign = np.where(rng.random(len(on)) < 0.5, -1.0, 1.0)
        size = np.where(rng.random(len(on)) < 0.5, 1e-3, np.exp(rng.uniform(np.log(2e-4), np.log(1e-2), len(on))))
        return np.concatenate([uniform, on + (sign * size)[:, None] * nrm])


    # ---- the comparisons every ground-truth test makes ---------------------------------------

    @staticmethod
    def check_points(level, ba: BrushArrays, points, band: float = BAND, min_checked: float = 0.98):
        """Compare point_solid with the brute force; returns a list of failure lines (empty = pass).

        Points in the band are not checked, but at least `min_checked` of them must be, and both
        answers must occur among the checked ones (a test that sees only one answer cannot fail)."""
        from brushbake.core.runtime.query import point_solid

        pts = np.asarray(points, float).reshape(-1, 3)
        inside, in_band = Truth.classify_points(ba, pts, band)
        got = point_solid(level, pts)
        problems = []
        if got.dtype != np.uint8 or got.shape != (len(pts),) or not set(np.unique(got).tolist()) <= {0, 1}:
            problems.append(f"point_solid answered {got.dtype} {got.shape} values {np.unique(got)[:5]}")
            return problems
        checked = ~in_band
        if checked.mean() < min_checked:
            problems.append(f"only {checked.mean():.3%} of the points are outside the band")
        if not (inside[checked].any() and (~inside[checked]).any()):
            problems.append(f"the checked points are all {'solid' if inside[checked].any() else 'empty'}")
        bad = np.flatnonzero(checked & (got.astype(bool) != inside))
        if len(bad):
            problems.append(f"{len(bad)} of {int(checked.sum())} points disagree with the brute force, e.g.")
            for i in bad[:8]:
                problems.append(f"  point {pts[i].tolist()}: brute force {'solid' if inside[i] else 'empty'}, "
                                f"BSP {'solid' if got[i] else 'empty'}")
        return problems

    @staticmethod
    def check_segments(level, ba: BrushArrays, starts, ends, band: float = BAND, t_tol: float = 1e-6,
                       max_ambiguous: float = 0.05):
        """Compare segment_hits with the brute force (hit or miss, fraction within t_tol metres,
        the hit point, a tied plane's normal facing the start, start-in-solid answers); returns
        (problems, counts)."""
        from brushbake.core.runtime.query import segment_hits

        s = np.asarray(starts, float).reshape(-1, 3)
        e = np.asarray(ends, float).reshape(-1, 3)
        gt = Truth.segments(ba, s, e, band, t_tol)
        got = segment_hits(level, s, e)
        problems = []
        if got.dtype != np.float64 or got.shape != (len(s), 7):
            return [f"segment_hits answered {got.dtype} {got.shape}"], {}
        ok = ~gt["ambiguous"]
        L = gt["length"]
        gt_hit = np.isfinite(gt["t"])
        frac, point, normal = got[:, 0], got[:, 1:4], got[:, 4:7]
        bsp_hit = np.any(normal != 0, axis=1) | (frac < 1.0)
        counts = {
            "segments": len(s),
            "ambiguous": int(gt["ambiguous"].sum()),
            "hits": int((ok & gt_hit).sum()),
            "misses": int((ok & ~gt_hit).sum()),
            "start_solid": int((ok & gt["start_solid"]).sum()),
        }
        if gt["ambiguous"].mean() > max_ambiguous:
            problems.append(f"{gt['ambiguous'].mean():.2%} of the segments are ambiguous")

        def report(mask, what, limit=5):
            idx = np.flatnonzero(mask)
            if len(idx):
                problems.append(f"{len(idx)} segments: {what}, e.g.")
                for i in idx[:limit]:
                    problems.append(f"  {s[i].tolist()} -> {e[i].tolist()}: brute force t={gt['t'][i]!r} "
                                    f"start_solid={bool(gt['start_solid'][i])}; BSP {got[i].tolist()}")

        report(ok & (gt_hit != bsp_hit), "hit/miss differs from the brute force")
        miss = ok & ~gt_hit & ~bsp_hit
        report(miss & (np.any(point != e, axis=1)), "a miss that does not answer point = end")
        both = ok & gt_hit & bsp_hit
        report(both & (np.abs(frac - np.where(gt_hit, gt["t"], 0.0)) * L > t_tol), f"fraction off by more than {t_tol} m")
        expect_point = s + np.where(gt_hit, gt["t"], 0.0)[:, None] * (e - s)
        report(both & (np.abs(point - expect_point).max(axis=1) > t_tol + 1e-9 * np.abs(s).max(axis=1)),
               "hit point not at the brute-force entry point")
        entering = both & ~gt["start_solid"]
        if entering.any():  # the hit point lies on some brush's surface (within t_tol)
            _, on_surface = Truth.classify_points(ba, point[entering], band=t_tol + 1e-9 * float(np.abs(point).max()))
            report(np.isin(np.arange(len(s)), np.flatnonzero(entering)[~on_surface]), "hit point not on a brush surface")
        ss = ok & gt["start_solid"]
        report(ss & ((frac != 0.0) | np.any(normal != 0.0, axis=1) | np.any(point != s, axis=1)),
               "start in solid must answer fraction 0, point = start, normal 0")
        normal_ok = np.zeros(len(s), bool)
        seg = gt["normal_seg"]
        if len(seg):
            np.logical_or.at(normal_ok, seg, np.abs(gt["normals"] - normal[seg]).max(axis=1) < 1e-6)
        report(both & ~gt["start_solid"] & ~normal_ok, "normal is not a plane of the entered face facing the start")
        report(both & ~gt["start_solid"] & (np.einsum("ij,ij->i", normal, e - s) >= 0), "normal does not face the start")
        return problems, counts


@pytest.fixture(scope="session")
def truth():
    return Truth


# --------------------------------------------------------------------------------------------
# Session cache of loaded and compiled scenes


@dataclass
class Compiled:
    path: Path
    scene: object
    level: object
    brushes: BrushArrays  # the point-hull collision brushes (solid and detail)


class LevelCache:
    def __init__(self):
        self._cache: dict = {}

    def get(self, path) -> Compiled:
        path = Path(require_path(path))
        if path not in self._cache:
            from brushbake.core.compile.pipeline import compile_scene
            from brushbake.core.formats.loaders import load_scene

            scene = load_scene(path)
            level = compile_scene(scene)
            self._cache[path] = Compiled(path, scene, level, Truth.brush_arrays(Truth.point_hull_brushes(scene)))
        return self._cache[path]

    def with_vis(self, path):
        """A copy of the compiled level with its PVS and culling portals (bake_vis 'fast', as `bake`
        makes them), made once per session and shared by the camera tests; the compiled level
        itself stays without visibility."""
        import dataclasses

        path = Path(require_path(path))
        key = ("vis", path)
        if key not in self._cache:
            from brushbake.core.compile.vis.vis import bake_vis

            level = dataclasses.replace(self.get(path).level, stats={})
            bake_vis(level, "fast")
            self._cache[key] = level
        return self._cache[key]


@pytest.fixture(scope="session")
def levels():
    return LevelCache()
