"""The leak check kept live while a level is edited: each check rebuilds only the regions an edit
touched.

A leak is a matter of the structural brushes alone (detail, clip and non-solid brushes do not
seal; core/compile/vis/leaks.py), so a check compiles the structural point tree (no hulls, no
bevels, no detail), builds its portals and floods from the void.  The tree is cut along the
region grid first (core/compile/trees/regions.py) and each grid cell's subtree is a pure function
of its RegionJob: its faces, the planes they lie on (index and value) and the splitter settings
(core/compile/trees/region_jobs.py).  LeakWatch is the runner of those jobs: it keeps every
cell's subtree under a digest of exactly that, and builds only the cells whose digest it has not
seen (after an edit: the cells the edited brushes' faces reach, and those whose faces' plane
numbers moved).  The union of faces is kept the same way, brush by brush: a brush's pieces depend
on its planes and its neighbours' (the brushes whose boxes touch its own, and which of the two
comes first), so only brushes an edit moved, or moved next to, are cut again.  The answer is the answer a check from scratch gives (the tests compare them on
random edits); only the time differs.

The seal is the exact one (settings.seal 'exact'): the qbsp rule's second compile
(core/compile/vis/sliver_seal.py) stays with Bake.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time

import numpy as np

from ...model.brushes import Contents
from ...tolerances import ON_EPSILON
from ..trees.build import compile_scene
from ..trees.csg import FaceList, _near_brushes, union_faces
from ..trees.region_jobs import build_regions
from .leaks import check_scene


class LeakWatch:
    """Leak checks of one scene as it changes; check() after every edit."""

    #: a cell not used by this many checks in a row is forgotten (an edit undone finds its cells)
    KEEP_CHECKS = 4

    #: the grid the live check cuts its tree along (metres): finer than a bake's, so that an edit
    #: rebuilds less; a leak's verdict does not depend on it (the exact seal judges the brushes)
    REGION_SIZE = 32.0

    def __init__(self, region_size: float | None = None):
        self.region_size = self.REGION_SIZE if region_size is None else float(region_size)
        self._trees: dict[bytes, object] = {}
        self._last_used: dict[bytes, int] = {}
        self._pieces: dict[bytes, list] = {}  # a brush's CSG pieces: [(face index, vertices)]
        self._piece_used: dict[bytes, int] = {}
        self.csg_built = self.csg_reused = 0
        self._checks = 0
        self.built = 0  # cells built by the last check
        self.reused = 0  # cells the last check took from earlier ones
        self.seconds = 0.0

    def check(self, scene, extra_points=(), cancel=None):
        """The leak report of `scene` (core/compile/vis/leaks.py LeakReport) from its structural
        brushes, markers, lights and `extra_points`."""
        t0 = time.perf_counter()
        self.built = self.reused = 0
        self._checks += 1
        structural = dataclasses.replace(
            scene, hulls=[], brushes=[b for b in scene.brushes if b.contents == Contents.SOLID],
            settings=dataclasses.replace(scene.settings, bevels=False, vis="none", slices=False, light=False,
                                         region_size=self.region_size))
        level = compile_scene(structural, cancel=cancel, farm=self, csg=self.union_faces)
        _, report = check_scene(structural, level, extra_points, cancel=cancel)
        old = [k for k, n in self._last_used.items() if n <= self._checks - self.KEEP_CHECKS]
        for k in old:  # cells gone for a while
            del self._trees[k], self._last_used[k]
        for k in [k for k, n in self._piece_used.items() if n <= self._checks - self.KEEP_CHECKS]:
            del self._pieces[k], self._piece_used[k]
        self.seconds = time.perf_counter() - t0
        return report

    # -- the union of faces, each brush's pieces kept between checks ---------------------------------
    def union_faces(self, brushes, plane_ids, planes, subtract_from=0, flags=0, out=None, cancel=None):
        """csg.union_faces, the same faces in the same order, computing only the pieces of brushes
        whose own planes or whose neighbours (their planes, and which comes first: the coplanar
        rule) changed; a brush's pieces are kept by the index of the face they lie on."""
        out = out if out is not None else FaceList()
        if subtract_from or not brushes:
            return union_faces(brushes, plane_ids, planes, subtract_from, flags, out, cancel)
        own = [brush_digest(b) for b in brushes]
        bounds = np.array([b.bounds for b in brushes])
        near = _near_brushes(bounds[:, 0] - ON_EPSILON, bounds[:, 1] + ON_EPSILON)
        keys = []
        for i, js in enumerate(near):
            h = hashlib.blake2b(own[i], digest_size=20)
            for j in js.tolist():
                h.update(b"<" if j < i else b">")
                h.update(own[j])
            keys.append(h.digest())
        missing = [i for i, k in enumerate(keys) if k not in self._pieces]
        if missing:
            fresh = union_faces(brushes, plane_ids, planes, out=FaceList(), cancel=cancel, only=missing)
            got: dict[int, list] = {i: [] for i in missing}
            for verts, pid, b in zip(fresh.verts, fresh.plane, fresh.brush):
                got[b].append((plane_ids[b].tolist().index(pid), verts))
            for i in missing:
                self._pieces[keys[i]] = got[i]
        for i, key in enumerate(keys):
            self._piece_used[key] = self._checks
            ids = plane_ids[i]
            for k, verts in self._pieces[key]:
                out.add(verts, int(ids[k]), i, flags)
        self.csg_built, self.csg_reused = len(missing), len(brushes) - len(missing)
        return out

    # -- the runner compile_scene hands the cells to (as a farm would) ----------------------------
    def region_runner(self, cancel=None):
        return self._run

    def _run(self, planes, settings, jobs):
        keys = [region_digest(planes, settings, job) for job in jobs]
        missing = {}
        for key, job in zip(keys, jobs):
            self._last_used[key] = self._checks
            if key not in self._trees:
                missing.setdefault(key, job)
        for (key, job), tree in zip(missing.items(), build_regions(planes, settings, list(missing.values()))):
            self._trees[key] = (tree, np.unique(job.planes), np.unique(job.brushes))
        self.built, self.reused = len(missing), len(jobs) - len(missing)
        return [relabelled(*self._trees[key], job) for key, job in zip(keys, jobs)]


def brush_digest(brush) -> bytes:
    """A brush's planes (the faces follow from them) and contents."""
    h = hashlib.blake2b(digest_size=20)
    h.update(np.ascontiguousarray(brush.normals, dtype=np.float64).tobytes())
    h.update(np.ascontiguousarray(brush.dists, dtype=np.float64).tobytes())
    h.update(str(brush.contents).encode())
    return h.digest()


def region_digest(planes, settings, job) -> bytes:
    """What a cell's subtree depends on: its faces, the values of the planes they lie on and the
    order of those planes' numbers (candidates are tried in that order), which faces share a
    brush, and the splitter settings.  Plane and brush numbers themselves are labels: an edit
    elsewhere renumbers them without changing the cell (relabelled() carries the new ones over)."""
    h = hashlib.blake2b(digest_size=20)
    h.update(repr(dataclasses.astuple(settings)).encode())
    plane_rank = np.unique(job.planes, return_inverse=True)[1]
    brush_rank = np.unique(job.brushes, return_inverse=True)[1]
    for a in (job.verts, job.counts, job.flags, job.cand, job.cnt, job.box, plane_rank, brush_rank,
              job.planes & 1, planes.normals[job.planes], planes.dists[job.planes]):
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(a.tobytes())
    return h.digest()


def relabelled(tree, old_planes: np.ndarray, old_brushes: np.ndarray, job):
    """A cached subtree with the plane and brush numbers of `job` (same digest: same planes and
    brushes in the same order, other numbers)."""
    new_planes, new_brushes = np.unique(job.planes), np.unique(job.brushes)
    canon_old, canon_new = old_planes >> 1, new_planes >> 1
    node_canon = canon_new[np.searchsorted(canon_old, tree.node_plane >> 1)]
    return dataclasses.replace(
        tree, node_plane=(node_canon << 1) | (tree.node_plane & 1),
        new_planes=new_planes[np.searchsorted(old_planes, tree.new_planes)],
        new_brushes=new_brushes[np.searchsorted(old_brushes, tree.new_brushes)])
