"""What a bake keeps for the next one: the work of its expensive pure steps, each under a digest of
exactly what it depends on, so that a re-bake after an edit computes only what the edit reached.

Three steps of the compile are pure functions of small inputs:

- a brush's pieces after the union of faces (core/compile/trees/csg.py): its planes and those of
  the brushes whose boxes touch its own, with which of each pair comes first (the coplanar rule);
- a brush expanded by a box hull (core/compile/trees/expand.py): the brush and the hull's box;
- a region's subtree (core/compile/trees/region_jobs.py): its RegionJob, as region_digest says;
- a solid cell's bevels (core/compile/trees/bevel.py): its faces, touching ancestors and seam
  planes, as cell_digests says.

BakeCache stands between the compile and those steps.  It looks every input up by its digest,
hands only the missing ones to the step (or to the runner that would have run them: this
machine's cores, a farm), and returns the answers in the order the step would: the level is the
level a bake from scratch makes, byte for byte (tests/core/test_bake_cache.py holds that on random
edits).  Plane and brush numbers are labels, not part of a digest: an edit renumbers them and
relabelled() carries the new numbers over.

An edit therefore rebuilds the brushes it moved and their neighbours' pieces, their expansions,
and the regions of the grid their faces reach (the point tree's and the onion's), the edited
brush's old and new place both, and the bevels of the solid cells whose faces or touching planes
changed.  What else comes after (leaf solidity, portals, the leak check, the outside fill, vis and
light) is computed again whole.

The cache lives in memory between bakes (the add-on's re-bake, the live leak check) or in a file
beside the level (``bake --update OLD.bbk`` reads OLD.bbk.cache and writes the new level's):
NumPy arrays only (np.load with allow_pickle=False), stamped with a digest of the compiler's code,
so a cache made by other code is never used.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
from pathlib import Path

import numpy as np

from ..model.brushes import Brush
from ..tolerances import ON_EPSILON
from .trees.csg import FaceList, _near_brushes, brush_bounds, union_faces
from .trees.expand import expand_brushes
from .trees.region_jobs import build_regions
from .trees.regions import RegionTree

#: the layout of a cache file; a file of another layout is not read
FORMAT = 5

#: the kinds of a cell's bevels (bevel_cell._CellPlanes.out), in the order a file lists them
BEVEL_KINDS = ("seam", "edge", "vertex", "axial", "flat_top")

#: a cache file's name: the level's, with this after it
SUFFIX = ".cache"


class BakeCache:
    """The pieces, expansions and region subtrees of recent bakes.  start() before a bake and
    finish() after it; an entry no bake used in the last `keep` is forgotten."""

    def __init__(self, keep: int = 1):
        self.keep = max(1, int(keep))
        self._pieces: dict[bytes, list] = {}  # a brush's union pieces: [(face index, vertices)]
        self._expanded: dict[bytes, tuple] = {}  # (normals, dists, faces) of an expanded brush
        self._trees: dict[bytes, tuple] = {}  # (RegionTree, its job's planes, its job's brushes)
        self._bevels: dict[bytes, dict] = {}  # a solid cell's bevels: {kind: [(normal, dist)]}
        self._used: dict[bytes, int] = {}
        self._digests: dict[int, tuple] = {}  # id(brush) -> (brush, brush_digest), for one bake
        self._bakes = 0
        self.from_disk = False  # read from a file (which may hold anything): bake --update falls back
        self.counts = {"pieces": [0, 0], "expanded": [0, 0], "regions": [0, 0], "bevels": [0, 0]}  # [built, reused]

    def __len__(self) -> int:
        return len(self._pieces) + len(self._expanded) + len(self._trees) + len(self._bevels)

    def start(self) -> None:
        """A bake begins: its counts start from zero."""
        self._bakes += 1
        self.counts = {kind: [0, 0] for kind in self.counts}

    def finish(self, ok: bool = True) -> None:
        """A bake ended: forget what the last `keep` bakes did not use.  A bake that failed or was
        cancelled forgets nothing (what it did not reach yet is what the next one needs)."""
        self._digests.clear()
        if not ok:
            return
        old = {k for k, n in self._used.items() if n <= self._bakes - self.keep}
        for store in (self._pieces, self._expanded, self._trees, self._bevels):
            for k in old & store.keys():
                del store[k]
        for k in old:
            del self._used[k]

    def digest(self, brush: Brush) -> bytes:
        """brush_digest(brush), computed once per brush in a bake (its spaces share brushes)."""
        got = self._digests.get(id(brush))
        if got is None or got[0] is not brush:
            got = self._digests[id(brush)] = (brush, brush_digest(brush))
        return got[1]

    def _count(self, kind: str, built: int, total: int) -> None:
        self.counts[kind][0] += built
        self.counts[kind][1] += total - built

    def summary(self) -> dict:
        """{kind: (built, reused)} of the last bake."""
        return {kind: tuple(v) for kind, v in self.counts.items()}

    # -- the union of faces ------------------------------------------------------------------------
    def union(self, inner=union_faces):
        """csg.union_faces (same arguments, same faces in the same order) that computes only the
        pieces of brushes not seen with the same neighbours; `inner` computes a union whole (the
        first bake's, or one where nothing is kept: LocalUnion spreads it over the cores)."""

        def run(brushes, plane_ids, planes, subtract_from=0, flags=0, out=None, cancel=None):
            out = out if out is not None else FaceList()
            if not brushes or subtract_from >= len(brushes):
                return out
            keys = union_keys(brushes, subtract_from, self.digest)
            missing = [i for i, k in zip(range(subtract_from, len(brushes)), keys)
                       if not _pieces_fit(self._pieces.get(k), len(plane_ids[i]))]
            if missing:
                whole = len(missing) == len(keys)
                fresh = (inner(brushes, plane_ids, planes, subtract_from, 0, FaceList(), cancel) if whole else
                         union_faces(brushes, plane_ids, planes, subtract_from, 0, FaceList(), cancel, only=missing))
                got: dict[int, list] = {i: [] for i in missing}
                face_of = {i: {p: k for k, p in enumerate(plane_ids[i].tolist())} for i in missing}
                for verts, pid, b in zip(fresh.verts, fresh.plane, fresh.brush):
                    got[b].append((face_of[b][pid], verts))
                for i in missing:
                    self._pieces[keys[i - subtract_from]] = [(k, _frozen([v])[0]) for k, v in got[i]]
            self._count("pieces", len(missing), len(keys))
            for i, key in zip(range(subtract_from, len(brushes)), keys):
                self._used[key] = self._bakes
                ids = plane_ids[i]
                for k, verts in self._pieces[key]:
                    out.add(verts, int(ids[k]), i, flags)
            return out

        return run

    # -- brushes expanded by the hulls -------------------------------------------------------------
    def expand(self, brushes: list[Brush], hulls) -> list[list[Brush]]:
        """expand.expand_brushes(brushes, hulls), the same brushes, expanding only those not seen
        with the same hull box."""
        out: list[list[Brush]] = []
        digests = [self.digest(b) for b in brushes]
        for hull in hulls:
            box = np.array([hull.mins, hull.maxs], dtype=np.float64).tobytes()
            keys = [hashlib.blake2b(d + box, digest_size=20).digest() for d in digests]
            missing = [i for i, k in enumerate(keys) if k not in self._expanded]
            if missing:
                for i, e in zip(missing, expand_brushes([brushes[i] for i in missing], [hull])[0]):
                    self._expanded[keys[i]] = (*_frozen([e.normals, e.dists]), _frozen(list(e.faces)),
                                               list(e.textures), brush_digest(e))
            self._count("expanded", len(missing), len(keys))
            space = []
            for b, key in zip(brushes, keys):
                self._used[key] = self._bakes
                normals, dists, faces, textures, digest = self._expanded[key]
                e = Brush(f"{b.name}@{hull.name}", b.contents, normals, dists, list(faces), textures=list(textures),
                          entity=b.entity)
                self._digests[id(e)] = (e, digest)
                space.append(e)
            out.append(space)
        return out

    # -- the regions' subtrees ---------------------------------------------------------------------
    def region_runner(self, inner=None):
        """A runner (core/compile/trees/region_jobs.py) that builds only the jobs not seen, through
        `inner` (another runner: this machine's cores, a farm) or here."""

        def run(planes, settings, jobs):
            keys = [region_digest(planes, settings, job) for job in jobs]
            missing: dict[bytes, object] = {}
            for key, job in zip(keys, jobs):
                self._used[key] = self._bakes
                if not _tree_fits(self._trees.get(key), job):
                    missing.setdefault(key, job)
            fresh = {}
            if missing:
                todo = list(missing.values())
                trees = inner(planes, settings, todo) if inner is not None else build_regions(planes, settings, todo)
                for (key, job), tree in zip(missing.items(), trees):
                    fresh[key] = tree  # the first tree carries the build's counts: kept without them
                    kept = dataclasses.replace(tree, splits=0, scored=0)
                    _frozen([getattr(kept, f.name) for f in dataclasses.fields(RegionTree)
                             if isinstance(getattr(kept, f.name), np.ndarray)])
                    self._trees[key] = (kept, *_frozen([np.unique(job.planes), np.unique(job.brushes)]))
            self._count("regions", len(missing), len(jobs))
            return [fresh.pop(key) if key in fresh else relabelled(*self._trees[key], job) for key, job in zip(keys, jobs)]

        return run

    # -- the solid cells' bevels ---------------------------------------------------------------------
    def bevels(self, cells, seams: list, normals: np.ndarray, dists: np.ndarray, settings, compute) -> list[dict]:
        """Each cell's bevels (cells: a CellArrays, seams: each cell's seam planes; cell_digests
        says what they depend on): kept ones as they were, the others from compute(their
        positions), which returns them in that order."""
        keys = cell_digests(cells, seams, normals, dists, settings)
        missing = [i for i, k in enumerate(keys) if k not in self._bevels]
        if missing:
            for i, out in zip(missing, compute(missing)):
                self._bevels[keys[i]] = {kind: [(_frozen([np.array(n, dtype=np.float64)])[0], float(d)) for n, d in found]
                                         for kind, found in out.items()}
        self._count("bevels", len(missing), len(keys))
        for k in keys:
            self._used[k] = self._bakes
        return [self._bevels[k] for k in keys]

    # -- a file beside the level -------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """Everything kept, as an .npz of plain arrays."""
        arrays: dict[str, np.ndarray] = {"format": np.array([FORMAT]), "code": np.frombuffer(code_digest(), np.uint8)}
        _pack(arrays, "pieces", self._pieces, lambda rows: {
            "face": np.array([k for k, _ in rows], dtype=np.int64),
            "count": np.array([len(v) for _, v in rows], dtype=np.int64),
            "verts": np.concatenate([v for _, v in rows]) if rows else np.zeros((0, 3))})
        _pack(arrays, "expanded", self._expanded, lambda e: {
            "normals": e[0], "dists": e[1], "count": np.array([len(f) for f in e[2]], dtype=np.int64),
            "verts": np.concatenate(e[2]) if e[2] else np.zeros((0, 3)), "textures": np.array(e[3], dtype=str),
            "digest": np.frombuffer(e[4], np.uint8)})
        _pack(arrays, "trees", self._trees, lambda t: {
            **{f.name: np.atleast_1d(np.asarray(getattr(t[0], f.name))) for f in dataclasses.fields(RegionTree)},
            "job_planes": t[1], "job_brushes": t[2]})
        _pack(arrays, "bevels", self._bevels, lambda out: {
            "kind": np.array([BEVEL_KINDS.index(kind) for kind in BEVEL_KINDS for _ in out[kind]], dtype=np.int64),
            "normals": np.array([n for kind in BEVEL_KINDS for n, _ in out[kind]], dtype=np.float64).reshape(-1, 3),
            "dists": np.array([d for kind in BEVEL_KINDS for _, d in out[kind]], dtype=np.float64)})
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        return buf.getvalue()

    @classmethod
    def from_file(cls, path) -> "BakeCache | None":
        """The cache a bake wrote to `path`, or None when there is none, it cannot be read, or
        other code made it (its digest differs)."""
        try:
            with open(Path(path), "rb") as file, np.load(file, allow_pickle=False) as npz:
                arrays = {k: npz[k] for k in npz.files}
            if int(arrays["format"][0]) != FORMAT or arrays["code"].tobytes() != code_digest():
                return None
            for a in arrays.values():  # what the cache hands out goes into levels as it is: views of these
                a.flags.writeable = False
            cache = cls()
            keys, e = _unpack(arrays, "pieces", ints=("face", "count"), points=("verts",))
            if keys:
                _rows_match(e, "count", "verts")
                if not np.array_equal(e["face"].lens, e["count"].lens):
                    raise ValueError("faces and counts do not match")
                pieces = _slices(e["verts"].whole, e["count"].whole)
                ends = np.cumsum(e["count"].lens).tolist()
                for key, faces, z, n in zip(keys, e["face"].parts, ends, e["count"].lens.tolist()):
                    cache._pieces[key] = list(zip(faces.tolist(), pieces[z - n : z]))
            keys, e = _unpack(arrays, "expanded", ints=("count",), points=("normals", "verts"))
            if keys:
                _rows_match(e, "count", "verts")
                if not (np.array_equal(e["dists"].lens, e["normals"].lens) and np.array_equal(e["count"].lens,
                                                                                              e["normals"].lens)
                        and np.array_equal(e["textures"].lens, e["normals"].lens) and e["textures"].whole.ndim == 1
                        and np.all(e["digest"].lens == 20) and e["dists"].whole.dtype == np.float64
                        and e["dists"].whole.ndim == 1):
                    raise ValueError("an expanded brush's planes, faces and digest do not match")
                faces = _slices(e["verts"].whole, e["count"].whole)
                ends = np.cumsum(e["count"].lens).tolist()
                for key, normals, dists, z, n, textures, digest in zip(
                        keys, e["normals"].parts, e["dists"].parts, ends, e["count"].lens.tolist(), e["textures"].parts,
                        e["digest"].parts):
                    cache._expanded[key] = (normals, dists, faces[z - n : z], textures.tolist(), digest.tobytes())
            keys, e = _unpack(arrays, "trees")
            for row, key in enumerate(keys):
                fields = {f.name: e[f.name].parts[row] for f in dataclasses.fields(RegionTree)}
                fields["splits"], fields["scored"] = int(fields["splits"][0]), int(fields["scored"][0])
                fields["node_children"] = fields["node_children"].reshape(-1, 2)
                fields["leaf_bounds"] = fields["leaf_bounds"].reshape(-1, 2, 3)
                fields["new_verts"] = fields["new_verts"].reshape(-1, 3)
                if fields["leaf_bounds"].dtype != np.float64 or fields["new_verts"].dtype != np.float64:
                    raise ValueError("a kept subtree's points are not floats")
                tree = RegionTree(**fields)
                _check_tree(tree, e["job_planes"].parts[row], e["job_brushes"].parts[row])
                cache._trees[key] = (tree, e["job_planes"].parts[row], e["job_brushes"].parts[row])
            keys, e = _unpack(arrays, "bevels", ints=("kind",), points=("normals",))
            if keys:
                kind, normals, dists = e["kind"].whole, e["normals"].whole, e["dists"].whole
                if not (np.array_equal(e["dists"].lens, e["kind"].lens) and np.array_equal(e["normals"].lens,
                                                                                           e["kind"].lens)
                        and (not len(kind) or kind.max() < len(BEVEL_KINDS)) and dists.dtype == np.float64
                        and dists.ndim == 1 and (not len(normals) or np.abs(normals).max() <= 2.0)):
                    raise ValueError("a cell's bevels do not match")
                rows = list(zip(kind.tolist(), list(normals), dists.tolist()))
                ends = np.cumsum(e["kind"].lens).tolist()
                for key, z, n in zip(keys, ends, e["kind"].lens.tolist()):
                    out: dict = {name: [] for name in BEVEL_KINDS}
                    for k, normal, d in rows[z - n : z]:
                        out[BEVEL_KINDS[k]].append((normal, d))
                    cache._bevels[key] = out
        except Exception:  # whatever the file holds, it is no cache this code can use
            return None
        cache._used = {k: 0 for store in (cache._pieces, cache._expanded, cache._trees, cache._bevels) for k in store}
        cache.from_disk = True
        return cache


def _pieces_fit(pieces, n_faces: int) -> bool:
    """Kept pieces that name faces the brush has (a cache read from a file may hold anything)."""
    return pieces is not None and all(k < n_faces for k, _ in pieces)


def _tree_fits(kept, job) -> bool:
    """A kept subtree whose faces are its job's and its own split-off ones, and whose planes and
    brushes are as many as its job's (a cache read from a file may hold anything)."""
    if kept is None:
        return False
    tree, planes, brushes = kept
    n_faces = len(job.counts) + len(tree.new_counts)
    return (len(planes) == len(np.unique(job.planes)) and len(brushes) == len(np.unique(job.brushes))
            and (not len(tree.leaf_faces) or int(tree.leaf_faces.max()) < n_faces)
            and (not len(tree.node_face) or int(tree.node_face.max()) < n_faces))


def _frozen(arrays: list) -> list:
    """The arrays made read-only: what the cache hands out goes into a level's lists as it is."""
    for a in arrays:
        a.flags.writeable = False
    return arrays


def _check_tree(tree: RegionTree, job_planes: np.ndarray, job_brushes: np.ndarray) -> None:
    """Raise ValueError unless every index of a kept subtree points inside it: children at its
    nodes and leaves, faces at its job's and its own split faces, planes and brushes at its job's."""
    n_nodes, n_leaves = len(tree.node_plane), len(tree.leaf_face_counts)
    for a in (tree.node_plane, tree.node_face, tree.node_children, tree.leaf_faces, tree.leaf_face_counts,
              tree.leaf_parent, tree.leaf_side, tree.new_counts, tree.new_planes, tree.new_brushes, job_planes,
              job_brushes):
        if a.dtype.kind not in "iu":
            raise ValueError("indices expected")
    kids = tree.node_children
    if (len(tree.node_face) != n_nodes or len(kids) != n_nodes or (n_nodes and (kids.max() >= n_nodes or
                                                                              (-1 - kids).max() >= n_leaves))
            or len(tree.leaf_solid) != n_leaves or len(tree.leaf_bounds) != n_leaves
            or len(tree.leaf_parent) != n_leaves or len(tree.leaf_side) != n_leaves
            or int(tree.leaf_face_counts.sum()) != len(tree.leaf_faces) or (n_leaves and tree.leaf_face_counts.min() < 0)
            or (n_leaves and (tree.leaf_parent.max() >= n_nodes or tree.leaf_parent.min() < -1))
            or int(tree.new_counts.sum()) != len(tree.new_verts) or (len(tree.new_counts) and tree.new_counts.min() < 0)
            or len(tree.new_planes) != len(tree.new_counts) or len(tree.new_brushes) != len(tree.new_counts)
            or len(tree.new_flags) != len(tree.new_counts) or tree.new_verts.dtype != np.float64
            or not np.all(np.isin(tree.node_plane >> 1, job_planes >> 1))
            or not np.all(np.isin(tree.new_planes, job_planes)) or not np.all(np.isin(tree.new_brushes, job_brushes))
            or (len(tree.node_face) and tree.node_face.min() < -1) or (len(tree.leaf_faces) and tree.leaf_faces.min() < 0)
            or np.any(np.diff(job_planes) <= 0) or np.any(np.diff(job_brushes) <= 0)):
        raise ValueError("a kept subtree's indices point outside it")


def cache_path(level_path) -> Path:
    """Where the cache of the level at `level_path` lives."""
    p = Path(level_path)
    return p.with_name(p.name + SUFFIX)


def _pack(arrays: dict, kind: str, store: dict, fields_of) -> None:
    """Each entry's fields concatenated along their first axis, with each entry's lengths."""
    keys = list(store)
    arrays[f"{kind}/keys"] = np.frombuffer(b"".join(keys), np.uint8).reshape(len(keys), -1) if keys else \
        np.zeros((0, 20), np.uint8)
    entries = [fields_of(store[k]) for k in keys]
    if not entries:
        return
    for name in entries[0]:
        parts = [np.asarray(e[name]) for e in entries]
        arrays[f"{kind}/{name}/len"] = np.array([len(p) for p in parts], dtype=np.int64)
        arrays[f"{kind}/{name}"] = np.concatenate(parts) if parts else np.zeros(0)


#: no index or count a cache file holds is larger than this
MAX_ROWS = 1 << 40
#: no coordinate, distance or normal a cache file holds is larger than this (NaN fails it too)
MAX_VALUE = 1e12


class _Field:
    """One field of a store in a cache file: all entries' rows (whole), each entry's row count
    (lens), and each entry's rows (parts: views of whole)."""

    def __init__(self, whole: np.ndarray, lens: np.ndarray):
        if lens.dtype.kind not in "iu" or lens.ndim != 1 or (len(lens) and (lens.min() < 0 or lens.max() > len(whole))):
            raise ValueError("lengths out of range")
        lens = lens.astype(np.int64)  # each at most len(whole): the sum cannot wrap
        if int(lens.sum()) != len(whole):
            raise ValueError("lengths do not match")
        if whole.dtype.kind == "f" and len(whole) and not np.all(np.abs(whole) <= MAX_VALUE):
            raise ValueError("values out of range")
        self.whole, self.lens = whole, lens
        self.parts = _slices(whole, lens)


def _slices(a: np.ndarray, lens) -> list:
    """a cut into consecutive runs of these lengths (views; np.split costs ten times as much)."""
    ends = np.cumsum(lens).tolist()
    return [a[z - n : z] for z, n in zip(ends, np.asarray(lens).tolist())]


def _unpack(arrays: dict, kind: str, ints=(), points=()):
    """(keys, {field: _Field}) of a store _pack wrote, the `ints` fields checked to be indices >= 0
    and the `points` fields to be (n, 3) float64 rows, for all entries at once."""
    keys = [k.tobytes() for k in arrays[f"{kind}/keys"]]
    names = sorted({k.split("/")[1] for k in arrays if k.startswith(kind + "/") and k.count("/") == 1} - {"keys"})
    fields = {}
    for name in names:
        whole = arrays[f"{kind}/{name}"]
        if name in points:
            whole = whole.reshape(-1, 3)
            if whole.dtype != np.float64:
                raise ValueError(f"{name}: not points")
        if name in ints and (whole.dtype.kind not in "iu" or whole.ndim != 1 or (len(whole) and whole.min() < 0)):
            raise ValueError(f"{name}: not indices")
        if name in ints:
            if len(whole) and whole.max() > MAX_ROWS:
                raise ValueError(f"{name}: out of range")
            whole = whole.astype(np.int64)
        fields[name] = _Field(whole, arrays[f"{kind}/{name}/len"])
        if len(fields[name].lens) != len(keys):
            raise ValueError(f"{name}: not one run per entry")
    return keys, fields


def _rows_match(e: dict, count: str, verts: str) -> None:
    """Each entry's counts add up to its vertex rows."""
    total = np.concatenate([[0], np.cumsum(e[count].whole)])
    ends = np.cumsum(e[count].lens)
    if not np.array_equal(total[ends] - total[ends - e[count].lens], e[verts].lens):
        raise ValueError("counts and vertices do not match")


def union_keys(brushes: list[Brush], subtract_from: int = 0, digest=None) -> list[bytes]:
    """For each brush from subtract_from on, what its union pieces depend on: its planes and those
    of every brush whose box (grown by ON_EPSILON, as the union grows them) touches its own, in
    brush order, each marked as before or after it.  `digest`: brush_digest, or what gives the
    same (a BakeCache's, which remembers them)."""
    own = [(digest or brush_digest)(b) for b in brushes]
    lo, hi = brush_bounds(brushes)
    near = _near_brushes(lo - ON_EPSILON, hi + ON_EPSILON)
    keys = []
    for i in range(subtract_from, len(brushes)):
        h = hashlib.blake2b(own[i], digest_size=20)
        for j in near[i].tolist():
            h.update(b"<" if j < i else b">")
            h.update(own[j])
        keys.append(h.digest())
    return keys


def brush_digest(brush: Brush) -> bytes:
    """A brush's planes, faces and contents.  The faces count: a brush's corners are computed from
    every plane it was given, dropped ones too (a plane touching only a corner moves it in the
    last bit), so two brushes with the same planes may differ in their faces."""
    h = hashlib.blake2b(digest_size=20)
    h.update(np.ascontiguousarray(brush.normals, dtype=np.float64).tobytes())
    h.update(np.ascontiguousarray(brush.dists, dtype=np.float64).tobytes())
    h.update(np.array([len(f) for f in brush.faces], dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(np.concatenate(brush.faces), dtype=np.float64).tobytes())
    h.update(str(brush.contents).encode())
    return h.digest()


def _update(h, *arrays) -> None:
    """Each array into the hash with its dtype and shape (so no two inputs run into each other)."""
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(a.tobytes())


def cell_digests(cells, seams: list, normals: np.ndarray, dists: np.ndarray, settings) -> list[bytes]:
    """For each solid cell (core/compile/trees/cells.py CellArrays, with each cell's seam planes),
    what its bevels depend on: its faces (box tags, polygons, and the values of the planes they
    lie on), its ancestors and seam planes (values), the order of all those planes' numbers (the
    touching ancestors are taken in that order) and the bevel settings.  Plane numbers themselves
    are labels: an edit elsewhere renumbers them without changing the cell."""
    head = repr(settings).encode()
    slot = np.arange(cells.verts.shape[1])
    keys = []
    for k in range(len(cells.codes)):
        a, b = int(cells.first[k]), int(cells.first[k + 1])
        tag, count = cells.tag[a:b], cells.count[a:b]
        chain, seam = np.asarray(cells.chains[k], dtype=np.int64), np.asarray(seams[k], dtype=np.int64)
        uniq, rank = np.unique(np.concatenate([tag[tag >= 0], chain, seam]), return_inverse=True)
        h = hashlib.blake2b(head, digest_size=20)
        _update(h, np.where(tag >= 0, -100, tag), count, rank, np.array([len(chain), len(seam)]), normals[uniq],
                dists[uniq], cells.verts[a:b][slot < count[:, None]])  # the polygons, one after another
        keys.append(h.digest())
    return keys


def region_digest(planes, settings, job) -> bytes:
    """What a region's subtree depends on: its faces, the values of the planes they lie on and the
    order of those planes' numbers (candidates are tried in that order), which faces share a
    brush, and the splitter settings.  Plane and brush numbers themselves are labels: an edit
    elsewhere renumbers them without changing the region (relabelled() carries the new ones over)."""
    h = hashlib.blake2b(digest_size=20)
    h.update(repr(dataclasses.astuple(settings)).encode())
    plane_rank = np.unique(job.planes, return_inverse=True)[1]
    brush_rank = np.unique(job.brushes, return_inverse=True)[1]
    _update(h, job.verts, job.counts, job.flags, job.cand, job.cnt, job.box, plane_rank, brush_rank, job.planes & 1,
            planes.normals[job.planes], planes.dists[job.planes])
    return h.digest()


def relabelled(tree: RegionTree, old_planes: np.ndarray, old_brushes: np.ndarray, job) -> RegionTree:
    """A kept subtree with the plane and brush numbers of `job` (same digest: the same planes and
    brushes in the same order, other numbers)."""
    new_planes, new_brushes = np.unique(job.planes), np.unique(job.brushes)
    canon_old, canon_new = old_planes >> 1, new_planes >> 1
    node_canon = canon_new[np.searchsorted(canon_old, tree.node_plane >> 1)]
    return dataclasses.replace(
        tree, node_plane=(node_canon << 1) | (tree.node_plane & 1),
        new_planes=new_planes[np.searchsorted(old_planes, tree.new_planes)],
        new_brushes=new_brushes[np.searchsorted(old_brushes, tree.new_brushes)])


_CODE_DIGEST: list[bytes] = []


def code_digest() -> bytes:
    """A digest of the core's Python files and the compiler kernels' C sources: a cache made by
    other code (whose answers may differ in a last bit) is not used."""
    if not _CODE_DIGEST:
        root = Path(__file__).resolve().parents[1]  # core/
        h = hashlib.blake2b(digest_size=20)
        h.update(np.__version__.encode())
        files = sorted(root.rglob("*.py"))
        c_dir = root.parent / "runtime_c" / "compiler"
        if c_dir.is_dir():
            files += sorted(c_dir.glob("*.[ch]"))
        for f in files:
            h.update(str(f.relative_to(root.parent)).encode())
            h.update(f.read_bytes())
        _CODE_DIGEST.append(h.digest())
    return _CODE_DIGEST[0]
