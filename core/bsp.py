"""The leafy solid BSP compiler: faces in, a tree of planes out, leaves empty or solid.

Construction follows Golodetz's build_subtree (onion article, Listing 2): a face whose plane is
used as a splitter stays in the tree but stops being a split candidate, so every leaf keeps the
faces that bound it, and a node becomes a leaf when no candidate is left.  Every face then faces
*into* the leaf that holds it, which gives solidity by face orientation without any extra test:
a leaf holding a face is empty (a face's front is empty space); a leaf holding none lies right
behind the splitter face its parent was cut by, so it is solid.

Two splitter heuristics (Settings.splitter):
- 'onion': Golodetz / hesperus score |front - back| + split_weight * splits, lowest wins;
- 'thesis': CHOOSE-DIVIDING-POLYGON, fewest splits among candidates whose balance
  min(front, back) / max(front, back) exceeds MINIMUMRELATION, halving it until one qualifies.
Scoring every candidate plane against every face is O(n^2) per node; at most
Settings.max_candidates planes (evenly spaced through the node's candidates, so deterministic)
are scored per node, all at once in NumPy, against at most max_score_faces faces (an evenly
strided sample of big nodes; every face is still routed by the chosen plane).

Detail faces are pushed into the finished structural tree (the thesis's PUSH-POLYGON): parts
reaching solid leaves are dropped, and an empty leaf that receives detail faces is split further
by them alone.  Its sub-leaves remember the structural leaf as their cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .csg import FaceList
from .errors import CancelledError
from .geometry import PlaneTable, split_polygon
from .tolerances import ON_EPSILON, WORLD_HALF_EXTENT


@dataclass
class SplitterSettings:
    splitter: str = "onion"
    split_weight: float = 8.0
    min_relation: float = 0.8
    relation_scale: float = 2.0
    max_candidates: int = 48
    max_score_faces: int = 1024


@dataclass
class LeafRecord:
    faces: list[int]
    solid: bool
    bounds: np.ndarray  # (2, 3) conservative: exact on axial splits
    parent: int  # node index, -1 for the root
    side: int  # 0 front, 1 back
    cluster: int = -1
    alive: bool = True


@dataclass
class TreeStats:
    splits: int = 0
    nodes: int = 0
    leaves: int = 0
    detail_nodes: int = 0
    scored: int = 0  # candidate planes scored, summed over nodes


class TreeBuilder:
    """Builds one tree over a growing face set.  Faces are split in place: a split face is
    retired and its two pieces appended, so face numbers only ever grow."""

    def __init__(self, planes: PlaneTable, faces: FaceList, settings: SplitterSettings, progress=None, cancel=None):
        self.planes = planes
        self.faces = faces
        self.settings = settings
        self.progress = progress
        self.cancel = cancel
        self.node_plane: list[int] = []
        self.node_children: list[list[int]] = []
        self.node_face: list[int] = []  # one face lying on each node's splitter (for probe points)
        self.leaves: list[LeafRecord] = []
        self.stats = TreeStats()
        # vertex pool: faces[i] occupies pool[first[i] : first[i] + count[i]]
        self._pool = np.zeros((1024, 3))
        self._pool_size = 0
        # per-face arrays mirrored from the FaceList, grown by doubling (no per-node list copies)
        cap = max(16, 2 * len(faces))
        self._first = np.zeros(cap, dtype=np.int64)
        self._count = np.zeros(cap, dtype=np.int64)
        self._plane = np.zeros(cap, dtype=np.int64)
        self._nfaces = 0
        for v, p in zip(faces.verts, faces.plane):
            self._append_face(v, p)
        self._total_faces = max(1, len(faces))
        self._done_faces = 0

    # -- vertex pool -------------------------------------------------------------------------
    def _append_face(self, verts: np.ndarray, plane: int) -> None:
        k = len(verts)
        while self._pool_size + k > len(self._pool):
            self._pool = _grown(self._pool, self._pool_size)
        if self._nfaces == len(self._first):
            self._first = _grown(self._first, self._nfaces)
            self._count = _grown(self._count, self._nfaces)
            self._plane = _grown(self._plane, self._nfaces)
        self._pool[self._pool_size : self._pool_size + k] = verts
        i = self._nfaces
        self._first[i], self._count[i], self._plane[i] = self._pool_size, k, plane
        self._nfaces += 1
        self._pool_size += k

    def _new_face(self, verts: np.ndarray, like: int) -> int:
        f = self.faces
        idx = f.add(verts, f.plane[like], f.brush[like], f.flags[like])
        self._append_face(verts, f.plane[like])
        return idx

    # -- building ----------------------------------------------------------------------------
    def build(self, face_ids: np.ndarray, candidate: np.ndarray, counts: np.ndarray, bounds: np.ndarray,
              parent: int = -1, side: int = 0) -> int:
        """Build a subtree; returns its child code (node index, or -1 - leaf index).

        candidate[i]: face_ids[i] may still be a splitter.  counts[i]: face_ids[i] makes its leaf
        empty (all faces for the structural tree, detail faces only inside a structural leaf).
        """
        root_code = None
        stack = [(np.asarray(face_ids, dtype=np.int64), np.asarray(candidate, bool), np.asarray(counts, bool),
                  np.asarray(bounds, float), parent, side)]
        while stack:
            ids, cand, cnt, box, par, sd = stack.pop()
            if self.cancel is not None and self.cancel():
                raise CancelledError()
            splitter = self._choose_splitter(ids, cand) if cand.any() else None
            if splitter is None:
                code = -1 - len(self.leaves)
                # a faceless leaf lies right behind its parent's splitter face: solid; a faceless
                # root (nothing to build from) is the empty world
                solid = not cnt.any() and par >= 0
                self.leaves.append(LeafRecord(ids.tolist(), solid=solid, bounds=box, parent=par, side=sd))
                self._done_faces += int(cnt.sum())
                self._report()
            else:
                plane, cls, facing = splitter
                code = len(self.node_plane)
                self.node_plane.append(plane)
                self.node_children.append([0, 0])
                self.node_face.append(int(ids[np.argmin(cls)]))  # the first face on the plane (code 0)
                front, back = self._partition(ids, cand, cnt, plane, cls, facing)
                fbox, bbox = _split_box(box, self.planes.normal(plane), self.planes.dist(plane))
                stack.append((*back, bbox, code, 1))
                stack.append((*front, fbox, code, 0))
            if par >= 0:
                self.node_children[par][sd] = code
            if root_code is None:
                root_code = code
        return root_code

    def _report(self) -> None:
        if self.progress is not None and len(self.leaves) % 64 == 0:
            self.progress(min(1.0, self._done_faces / self._total_faces), f"{len(self.node_plane)} nodes")

    def _classify(self, ids: np.ndarray, plane_ids: np.ndarray) -> np.ndarray:
        """(len(ids), len(plane_ids)) int8 codes: 0 on, 1 front, 2 back, 3 spanning.

        Each vertex gets bit 1 when in front (> ON_EPSILON) and bit 2 when behind; a face's code
        is the OR over its vertices: one integer reduction instead of a float max and min."""
        first = self._first[ids]
        count = self._count[ids]
        seg = np.zeros(len(ids), dtype=np.int64)
        np.cumsum(count[:-1], out=seg[1:])
        vidx = np.arange(int(seg[-1] + count[-1])) + np.repeat(first - seg, count)
        dist = self._pool[vidx] @ self.planes.normals[plane_ids].T - self.planes.dists[plane_ids]
        bits = (dist > ON_EPSILON).view(np.int8) | ((dist < -ON_EPSILON).view(np.int8) << 1)
        return np.bitwise_or.reduceat(bits, seg, axis=0)

    def _choose_splitter(self, ids: np.ndarray, cand: np.ndarray):
        """The splitter plane (oriented like its first candidate face), every face's class against
        it, and whether each face's normal points the plane's way (the side a face on it goes to)."""
        face_planes = self._plane[ids]
        # canonical orientation, sorted; a set beats np.unique's fixed cost on the small nodes
        cand_planes = np.array(sorted(set((face_planes[cand] >> 1).tolist())), dtype=np.int64) * 2
        limit = self.settings.max_candidates
        if limit and len(cand_planes) > limit:
            pick = np.linspace(0, len(cand_planes) - 1, limit).round().astype(np.int64)
            cand_planes = cand_planes[np.unique(pick)]
        cap = self.settings.max_score_faces
        sampled = bool(cap and len(ids) > cap)
        if sampled:  # score on an evenly strided sample; route all faces below
            sample = np.unique(np.linspace(0, len(ids) - 1, cap).round().astype(np.int64))
            cls = self._classify(ids[sample], cand_planes)
            normals = self.planes.normals[face_planes[sample]]
        else:
            cls = self._classify(ids, cand_planes)
            normals = self.planes.normals[face_planes]
        self.stats.scored += len(cand_planes)
        # a face on a candidate plane goes to the side its normal faces; a nearly identical plane
        # from another brush (a different index) must count by direction too, not by index
        same = normals @ self.planes.normals[cand_planes].T > 0
        best = self._best_candidate(cls, same) if len(cand_planes) > 1 else 0  # a third of all nodes have one
        plane = int(cand_planes[best])
        if sampled:
            facing = self.planes.normals[face_planes] @ self.planes.normals[plane] > 0
            column = self._classify(ids, cand_planes[best : best + 1])[:, 0]
        else:
            column, facing = cls[:, best], same[:, best]
        return self._orient_like_face(plane, face_planes, cand, column, facing)

    @staticmethod
    def _orient_like_face(plane: int, face_planes, cand, cls, facing):
        """Store the splitter the way its first candidate face faces, so that 'a point exactly on
        a node's plane goes to the front child' puts a point on a face on the face's empty side
        (a wall facing -x is split by the -x plane, not by its canonical +x flip)."""
        first = int(np.flatnonzero(cand & ((face_planes >> 1) == (plane >> 1)))[0])
        if not face_planes[first] & 1:
            return plane, cls, facing
        flipped = np.where(cls == 1, 2, np.where(cls == 2, 1, cls)).astype(cls.dtype)
        return plane ^ 1, flipped, ~facing

    def _best_candidate(self, cls: np.ndarray, same: np.ndarray) -> int:
        """Column of the best candidate by the configured heuristic, from the faces' classes."""
        on = cls == 0
        on_same = np.count_nonzero(on & same, axis=0)
        n_on = np.count_nonzero(on, axis=0)
        n_front = np.count_nonzero(cls == 1, axis=0) + on_same
        n_back = np.count_nonzero(cls == 2, axis=0) + (n_on - on_same)
        n_split = np.count_nonzero(cls == 3, axis=0)
        if self.settings.splitter == "thesis":
            return _choose_thesis(n_front, n_back, n_split, self.settings)
        score = np.abs(n_front - n_back) + self.settings.split_weight * n_split
        return int(np.argmin(score))  # first minimum: deterministic

    def _partition(self, ids, cand, cnt, plane: int, cls: np.ndarray, facing: np.ndarray):
        """Route faces to (front, back) lists, splitting the ones that span the plane.

        A face on the plane goes to the side its normal faces (`facing`) and stops being a
        candidate (Listing 2)."""
        on = cls == 0
        side = np.where(on, 2 - facing.view(np.int8), cls)  # 1 front, 2 back, 3 spanning
        to_front, to_back = side == 1, side == 2
        cand = cand & ~on
        front = ids[to_front], cand[to_front], cnt[to_front]
        back = ids[to_back], cand[to_back], cnt[to_back]
        spanning = np.flatnonzero(side == 3)
        if not len(spanning):
            return front, back
        f = self.faces
        n, d = self.planes.normal(plane), self.planes.dist(plane)
        new_f, new_b, cf, cb, kf, kb = [], [], [], [], [], []
        for k, face, c, w in zip(spanning.tolist(), ids[spanning].tolist(), cand[spanning].tolist(),
                                 cnt[spanning].tolist()):
            fp, bp = split_polygon(f.verts[face], n, d)
            self.stats.splits += 1
            if fp is not None:
                new_f.append(self._new_face(fp, face))
                cf.append(c)
                kf.append(w)
            if bp is not None:
                new_b.append(self._new_face(bp, face))
                cb.append(c)
                kb.append(w)
        return _extended(front, new_f, cf, kf), _extended(back, new_b, cb, kb)

    # -- detail ------------------------------------------------------------------------------
    def push_faces(self, face_ids: list[int]) -> tuple[dict[int, list[int]], set[int]]:
        """PUSH-POLYGON: send faces down the tree, splitting them at nodes they span.

        Returns ({leaf index: [face ids]} for the empty leaves reached, the set of face ids that
        lay *on* some node's plane on the way).  Such a face lies on its leaf's boundary, so it
        must not split that leaf again: that would only cut off a zero-volume cell behind it,
        which a trace can fall into by rounding.  Parts reaching solid leaves are dropped (they
        lie inside structural brushes).

        All faces first walk down together, one tree level per step (_descend), as far as they
        go unsplit; then, face by face in the given order, the Python walk finishes the ones that
        span a plane.  Lists and new face numbers come out exactly as a face-by-face walk makes them.
        """
        out: dict[int, list[int]] = {}
        on_boundary: set[int] = set()
        ids = np.asarray(face_ids, dtype=np.int64)
        reached, was_on = self._descend(ids, 0 if self.node_plane else -1)
        for face, code, on in zip(ids.tolist(), reached.tolist(), was_on.tolist()):
            if on:
                on_boundary.add(face)
            self._push_one(face, code, out, on_boundary)
        return out, on_boundary

    def _descend(self, ids: np.ndarray, root: int) -> tuple[np.ndarray, np.ndarray]:
        """Walk all faces down at once without splitting: per face, the leaf code reached or the
        node whose plane it spans, and whether it lay on a node's plane on the way (it then goes
        to the side its normal faces, as in _push_one)."""
        codes = np.full(len(ids), root, dtype=np.int64)
        was_on = np.zeros(len(ids), dtype=bool)
        if root < 0 or not len(ids):
            return codes, was_on
        node_plane = np.asarray(self.node_plane, dtype=np.int64)
        children = np.asarray(self.node_children, dtype=np.int64).reshape(-1, 2)
        normals, dists = self.planes.normals, self.planes.dists
        face_normals = normals[self._plane[ids]]
        count = self._count[ids]
        first = self._first[ids]
        active = np.arange(len(ids))
        while len(active):
            nodes = codes[active]
            plane = node_plane[nodes]
            cnt = count[active]
            seg = np.zeros(len(active), dtype=np.int64)
            np.cumsum(cnt[:-1], out=seg[1:])
            verts = self._pool[np.arange(int(seg[-1] + cnt[-1])) + np.repeat(first[active] - seg, cnt)]
            vplane = np.repeat(plane, cnt)
            dist = np.einsum("ij,ij->i", verts, normals[vplane]) - dists[vplane]
            in_front = np.minimum.reduceat(dist, seg) >= -ON_EPSILON
            behind = np.maximum.reduceat(dist, seg) <= ON_EPSILON
            on = in_front & behind
            facing = np.einsum("ij,ij->i", face_normals[active], normals[plane]) > 0
            was_on[active[on]] = True
            to_front = np.where(on, facing, in_front)
            to_back = np.where(on, ~facing, behind)
            codes[active[to_front]] = children[nodes[to_front], 0]
            codes[active[to_back]] = children[nodes[to_back], 1]
            active = active[(to_front | to_back) & (codes[active] >= 0)]  # spanning faces stop here
        return codes, was_on

    def _push_one(self, start: int, code: int, out: dict[int, list[int]], on_boundary: set[int]) -> None:
        """PUSH-POLYGON for one face from tree code `code` on, splitting it where it spans."""
        normals, dists = self.planes.normals, self.planes.dists
        stack = [(code, start)]
        while stack:
            code, face = stack.pop()
            if code < 0:
                leaf = -1 - code
                if not self.leaves[leaf].solid:
                    out.setdefault(leaf, []).append(face)
                continue
            plane = self.node_plane[code]
            front_code, back_code = self.node_children[code]
            verts = self.faces.verts[face]
            dist = verts @ normals[plane] - dists[plane]
            fmax, fmin = float(dist.max()), float(dist.min())
            if fmin >= -ON_EPSILON and fmax <= ON_EPSILON:
                facing = float(normals[self.faces.plane[face]] @ normals[plane]) > 0
                on_boundary.add(face)
                stack.append((front_code if facing else back_code, face))
            elif fmin >= -ON_EPSILON:
                stack.append((front_code, face))
            elif fmax <= ON_EPSILON:
                stack.append((back_code, face))
            else:
                fp, bp = split_polygon(verts, normals[plane], dists[plane], dist=dist)
                self.stats.splits += 1
                for part, child in ((bp, back_code), (fp, front_code)):
                    if part is not None:
                        piece = self._new_face(part, face)
                        if face in on_boundary:
                            on_boundary.add(piece)
                        stack.append((child, piece))


@dataclass
class FlatTree:
    """A built tree renumbered for storage: leaves in preorder (front first), children encoded
    c >= 0 node, c < 0 leaf -1 - c; `leaf_order[new] = old` maps back to TreeBuilder.leaves."""

    node_plane: np.ndarray  # (N,) int32
    node_children: np.ndarray  # (N, 2) int32
    leaf_order: np.ndarray  # (L,) int64

    @property
    def root(self) -> int:
        return 0 if len(self.node_plane) else -1


def flatten_tree(builder: "TreeBuilder") -> FlatTree:
    """Renumber a built tree's live leaves in preorder and encode its children arrays."""
    n_nodes = len(builder.node_plane)
    children = np.array(builder.node_children, dtype=np.int64).reshape(-1, 2)
    order: list[int] = []
    new_index: dict[int, int] = {}
    stack = [0] if n_nodes else [-1]
    while stack:
        code = stack.pop()
        if code < 0:
            new_index[-1 - code] = len(order)
            order.append(-1 - code)
        else:
            stack.append(int(children[code, 1]))
            stack.append(int(children[code, 0]))
    remapped = children.copy()
    leaf_mask = children < 0
    remapped[leaf_mask] = [-1 - new_index[-1 - int(c)] for c in children[leaf_mask]]
    return FlatTree(np.array(builder.node_plane, dtype=np.int32), remapped.astype(np.int32),
                    np.array(order, dtype=np.int64))


def _extended(lists, new_ids, new_cand, new_cnt):
    """(ids, cand, cnt) arrays with the split pieces appended."""
    ids, cand, cnt = lists
    return (np.concatenate([ids, np.array(new_ids, dtype=np.int64)]), np.concatenate([cand, np.array(new_cand, dtype=bool)]),
            np.concatenate([cnt, np.array(new_cnt, dtype=bool)]))


def _grown(a: np.ndarray, used: int) -> np.ndarray:
    out = np.zeros((2 * len(a),) + a.shape[1:], dtype=a.dtype)
    out[:used] = a[:used]
    return out


def _choose_thesis(n_front, n_back, n_split, settings: SplitterSettings) -> int:
    """CHOOSE-DIVIDING-POLYGON over all scored candidates at once.

    The thesis loops, dividing MinRelation by MINRELATIONSCALE until some candidate's relation
    exceeds it; that is the first round r with min_relation / scale**r < max(relation).  A set
    where every candidate has relation 0 (all faces on one side: the thesis would stop there
    with a convex set) takes the fewest splits.
    """
    hi = np.maximum(n_front, n_back)
    relation = np.where(hi > 0, np.minimum(n_front, n_back) / np.maximum(hi, 1), 0.0)
    top = float(relation.max())
    threshold = settings.min_relation
    while threshold >= top and threshold > 1e-12:
        threshold /= settings.relation_scale
    ok = relation > threshold if top > 0 else np.ones(len(relation), bool)
    # fewest splits, then best relation, then first in order
    order = np.lexsort((np.arange(len(relation)), -relation, n_split))
    for k in order:
        if ok[k]:
            return int(k)
    return int(order[0])


def _split_box(box: np.ndarray, n: np.ndarray, d: float) -> tuple[np.ndarray, np.ndarray]:
    """Children's conservative bounds: an axial plane cuts the box exactly, others keep it.

    Plain Python on the three components: this runs once per node."""
    comps = n.tolist()
    mags = [abs(c) for c in comps]
    axis = mags.index(max(mags))
    if mags[axis] != 1.0:
        return box, box
    pos = d * comps[axis]
    front, back = box.copy(), box.copy()
    if comps[axis] > 0:
        front[0, axis] = max(front[0, axis], pos)
        back[1, axis] = min(back[1, axis], pos)
    else:
        front[1, axis] = min(front[1, axis], pos)
        back[0, axis] = max(back[0, axis], pos)
    return front, back


def world_box(bounds: np.ndarray, margin: float = 1.0) -> np.ndarray:
    """Bounds used for unbounded cells: the scene's bounds plus a margin (metres)."""
    if bounds is None or not np.all(np.isfinite(bounds)):
        return np.array([[-WORLD_HALF_EXTENT] * 3, [WORLD_HALF_EXTENT] * 3])
    return np.array([bounds[0] - margin, bounds[1] + margin])
