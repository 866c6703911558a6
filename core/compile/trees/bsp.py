"""The leafy solid BSP compiler: faces in, a tree of planes out, leaves empty or solid.

One idea, the TreeBuilder, in one module (over 600 lines): its level-by-level build, splitter
choice and scoring (batched NumPy over every node of a level; _choose_splitters documents its
layout), partition, PUSH-POLYGON and flattening all share the builder's face and leaf tables.

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

The tree grows one level at a time (TreeBuilder.build_many): every node of a level scores its
candidates and is partitioned at the same time as the others (big nodes by one matrix product
each, small ones together, classified from their faces' bounds where those decide exactly), and
the finished tree is numbered as a depth-first build numbers it.

Detail faces are pushed into the finished structural tree (the thesis's PUSH-POLYGON): parts
reaching solid leaves are dropped, and an empty leaf that receives detail faces is split further
by them alone.  Its sub-leaves remember the structural leaf as their cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .csg import FaceList
from .regions import RegionGrid, RegionJob
from . import tree_score_c
from ... import kernels
from ...detmath import matmul
from ...errors import check_cancel
from ...geometry import PlaneTable, split_polygon
from ..split_c import split_polygons
from ...model.setting_specs import setting_view
from ...tolerances import (
    MIN_RELATION_FLOOR,
    ON_EPSILON,
    RADIUS_SLACK,
    RECLASSIFY_DIST_BAND,
    RECLASSIFY_DOT_BAND,
    WORLD_HALF_EXTENT,
)


@dataclass(frozen=True)
@setting_view(splitter="splitter", split_weight="split_weight", min_relation="min_relation",
              relation_scale="relation_scale", max_candidates="max_candidates", max_score_faces="max_score_faces")
class SplitterSettings:
    """The tree's splitter choice: the bake settings of those names (core/model/setting_specs.py),
    checked when made."""


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

    def __init__(self, planes: PlaneTable, faces: FaceList, settings: SplitterSettings, progress=None, cancel=None,
                 grid: RegionGrid | None = None, runner=None):
        self.planes = planes
        self.grid = grid  # regions: nodes crossing its lines are cut there first (core/compile/trees/regions.py)
        # runner(planes, settings, jobs) -> RegionTrees: builds the region roots a grid leaves
        # apart (core/compile/trees/region_jobs.py); None builds them here, with the rest
        self.runner = runner if grid is not None else None
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
        # per face: bounding box, centre and radius, filled in when first needed
        self._lo, self._hi, self._centre = np.zeros((cap, 3)), np.zeros((cap, 3)), np.zeros((cap, 3))
        self._radius = np.zeros(cap)
        self._bounded = 0
        self._axes = (np.zeros(0, np.int64), np.zeros(0))  # _plane_axes of the plane table, when needed
        self._nfaces = 0
        if len(faces):
            self._append_faces(np.concatenate(faces.verts), np.array([len(v) for v in faces.verts]),
                               np.array(faces.plane, dtype=np.int64))
        self._total_faces = max(1, len(faces))
        self._done_faces = 0
        # who scores the splitters: the C kernel or NumPy (core/kernels.py), the same trees
        self._score_backend = "numpy" if settings.splitter == "thesis" else kernels.resolve(tree_score_c.BINDING)

    # -- vertex pool -------------------------------------------------------------------------
    def _append_faces(self, flat: np.ndarray, counts: np.ndarray, planes: np.ndarray) -> None:
        """Append faces whose vertices are `flat`, one face after another (counts[i] each)."""
        n, k = len(counts), len(flat)
        while self._pool_size + k > len(self._pool):
            self._pool = _grown(self._pool, self._pool_size)
        while self._nfaces + n > len(self._first):
            for name in ("_first", "_count", "_plane", "_lo", "_hi", "_centre", "_radius"):
                setattr(self, name, _grown(getattr(self, name), self._nfaces))
        self._pool[self._pool_size : self._pool_size + k] = flat
        i = self._nfaces
        self._first[i : i + n] = self._pool_size + np.cumsum(counts) - counts
        self._count[i : i + n] = counts
        self._plane[i : i + n] = planes
        self._nfaces += n
        self._pool_size += k

    def _append_face(self, verts: np.ndarray, plane: int) -> None:
        self._append_faces(verts, np.array([len(verts)]), np.array([plane]))

    def _update_face_bounds(self) -> None:
        """Bounding box, centre and radius (a bound on every vertex's distance from the centre)
        of every face that has none yet."""
        a, z = self._bounded, self._nfaces
        if a == z:
            return
        count = self._count[a:z]
        rows = np.arange(self._first[a], self._first[z - 1] + count[-1])
        seg = self._first[a:z] - self._first[a]
        verts = self._pool[rows]
        self._lo[a:z] = np.minimum.reduceat(verts, seg, axis=0)
        self._hi[a:z] = np.maximum.reduceat(verts, seg, axis=0)
        centre = np.add.reduceat(verts, seg, axis=0) / count[:, None]
        self._centre[a:z] = centre
        reach = np.sqrt(np.einsum("ij,ij->i", verts - np.repeat(centre, count, axis=0), verts - np.repeat(centre, count, axis=0)))
        self._radius[a:z] = np.maximum.reduceat(reach, seg) * (1.0 + RADIUS_SLACK)
        self._bounded = z

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

        The tree grows one level at a time, every node of a level at once (_Level), and is then
        numbered as a depth-first build numbers it (preorder, front child first): nodes, leaves
        and their face lists come out the same; only split pieces get other face numbers.
        """
        return self.build_many([(face_ids, candidate, counts, bounds, parent, side)])[0][0]

    def build_many(self, roots) -> list[tuple[int, int, int]]:
        """build() for several subtrees (face_ids, candidate, counts, bounds, parent, side), grown
        together level by level and numbered one after another as consecutive build() calls
        number them.  Returns per subtree (its code, its first leaf, the leaf after its last)."""
        if not roots:
            return []
        ids = [np.asarray(r[0], dtype=np.int64) for r in roots]
        length = np.array([len(i) for i in ids], dtype=np.int64)
        level = _Level(np.concatenate(ids) if ids else np.zeros(0, np.int64),
                       np.concatenate([np.asarray(r[1], bool) for r in roots]),
                       np.concatenate([np.asarray(r[2], bool) for r in roots]), np.cumsum(length) - length, length,
                       np.array([np.asarray(r[3], float) for r in roots]).reshape(-1, 2, 3),
                       np.full(len(roots), -1), np.array([r[5] for r in roots], dtype=np.int64),
                       np.array([r[4] for r in roots], dtype=np.int64))
        nodes: list[tuple[int, int]] = []  # per new node: (plane, face on it); children below
        children: list[list[int]] = []
        leaves: list[LeafRecord] = []  # parent: new node number, or -1 for a root
        root_codes = None
        deferred: list = []  # region roots left to the runner: (level, item, that level's codes)
        while len(level):
            check_cancel(self.cancel)
            codes, level = self._grow(level, nodes, children, leaves, deferred)
            root_codes = codes if root_codes is None else root_codes
            if self.progress is not None:
                self.progress(min(1.0, self._done_faces / self._total_faces), f"{len(self.node_plane) + len(nodes)} nodes")
        if deferred:
            self._build_deferred(deferred, nodes, children, leaves)
        out = []
        for code, r in zip(root_codes.tolist(), roots):
            first = len(self.leaves)
            out.append((self._number_depth_first(code, nodes, children, leaves, r[4], r[5]), first, len(self.leaves)))
        return out

    def _number_depth_first(self, root: int, nodes, children, leaves, parent: int, side: int) -> int:
        """Append the level-built nodes and leaves in depth-first order (the order a recursive
        build makes them: a node, its front subtree, its back subtree); returns the root's code."""
        node_base, leaf_base = len(self.node_plane), len(self.leaves)
        node_new = np.full(len(nodes), -1, dtype=np.int64)
        leaf_new = np.full(len(leaves), -1, dtype=np.int64)
        order_nodes, order_leaves = [], []
        stack = [root]
        while stack:
            code = stack.pop()
            if code >= 0:
                node_new[code] = node_base + len(order_nodes)
                order_nodes.append(code)
                stack.append(children[code][1])
                stack.append(children[code][0])
            else:
                leaf_new[-1 - code] = leaf_base + len(order_leaves)
                order_leaves.append(-1 - code)

        def final(code: int) -> int:
            return int(node_new[code]) if code >= 0 else -1 - int(leaf_new[-1 - code])

        for n in order_nodes:
            plane, face = nodes[n]
            self.node_plane.append(plane)
            self.node_face.append(face)
            self.node_children.append([final(children[n][0]), final(children[n][1])])
        for l in order_leaves:
            rec = leaves[l]
            rec.parent = int(node_new[rec.parent]) if rec.parent >= 0 else parent
            self.leaves.append(rec)
        root_code = final(root)
        if parent >= 0:
            self.node_children[parent][side] = root_code
        return root_code

    def _grow(self, level: "_Level", nodes, children, leaves, deferred: list):
        """One level: every item becomes a leaf (no candidate left) or a node whose two children
        are the next level's items; with a runner, a region root that would split is left to it
        (appended to `deferred`).  Returns (each item's code, the next level)."""
        n_items = len(level)
        item_of = np.repeat(np.arange(n_items), level.length)
        has_cand = np.bincount(item_of, weights=level.cand, minlength=n_items) > 0
        forced, cut_plane = self._region_cuts(level)
        codes = np.zeros(n_items, dtype=np.int64)
        leaf_items = np.flatnonzero(~(has_cand | forced))
        if self.runner is not None:  # the region roots that would split go to the runner
            deferred.extend((level, i, codes) for i in np.flatnonzero(has_cand & ~forced).tolist())
            has_cand = has_cand & forced
        if len(leaf_items):  # the leaves' counts at once, their records one by one
            cnt_of = np.bincount(item_of, weights=level.cnt, minlength=n_items)[leaf_items]
            self._done_faces += int(cnt_of.sum())
            ids = level.ids.tolist()
            starts, lengths = level.start[leaf_items].tolist(), level.length[leaf_items].tolist()
            parents, sides = level.parent[leaf_items].tolist(), level.side[leaf_items].tolist()
            outers, has = level.outer[leaf_items].tolist(), (cnt_of > 0).tolist()
            bounds = level.box[leaf_items].copy()
            for k, i in enumerate(leaf_items.tolist()):
                # a faceless leaf lies right behind its parent's splitter face: solid; a faceless
                # root (nothing to build from) is the empty world
                par = parents[k]
                code = -1 - len(leaves)
                codes[i] = code
                leaves.append(LeafRecord(ids[starts[k]: starts[k] + lengths[k]],
                                         solid=not has[k] and (par >= 0 or outers[k] >= 0), bounds=bounds[k],
                                         parent=par, side=sides[k]))
                if par >= 0:
                    children[par][sides[k]] = code
        split = np.flatnonzero(has_cand | forced)
        if not len(split):
            return codes, _Level.empty()
        sub = level.take(split)
        if forced.any():
            plane, column, facing, node_face = self._forced_or_chosen(sub, forced[split], cut_plane[split])
        else:
            plane, column, facing, node_face = self._choose_splitters(sub)
        for k, i in enumerate(split.tolist()):
            codes[i] = len(nodes)
            nodes.append((int(plane[k]), int(node_face[k])))
            children.append([0, 0])
            par = int(level.parent[i])
            if par >= 0:
                children[par][int(level.side[i])] = int(codes[i])
        return codes, self._partition_level(sub, codes[split], plane, column, facing)

    def _build_deferred(self, deferred: list, nodes, children, leaves) -> None:
        """Build the region roots left to the runner (core/compile/trees/region_jobs.py) and graft
        each subtree where its root was: into the level-built lists, its code into its parent's
        children (or its level's codes, for a root of the build)."""
        jobs, items = [], []
        for level, i, codes in deferred:
            a, z = int(level.start[i]), int(level.start[i] + level.length[i])
            ids = level.ids[a:z]
            counts = self._count[ids]
            rows = np.repeat(self._first[ids] - (np.cumsum(counts) - counts), counts) + np.arange(int(counts.sum()))
            f = self.faces
            jobs.append(RegionJob(self._pool[rows].copy(), counts.copy(), self._plane[ids].copy(),
                                  np.array([f.brush[k] for k in ids.tolist()], dtype=np.int64),
                                  np.array([f.flags[k] for k in ids.tolist()], dtype=np.int64),
                                  level.cand[a:z].copy(), level.cnt[a:z].copy(), level.box[i].copy()))
            items.append((ids, int(level.parent[i]), int(level.side[i]), codes, i))
        trees = self.runner(self.planes, self.settings, jobs)
        for tree, (ids, par, side, codes, i) in zip(trees, items):
            code = self._graft(tree, ids, par, side, nodes, children, leaves)
            codes[i] = code
            if par >= 0:
                children[par][side] = code

    def _graft(self, tree, ids: np.ndarray, par: int, side: int, nodes, children, leaves) -> int:
        """Append a RegionTree built from faces `ids` to the level-built lists (its split-off
        faces become new faces here); returns its root's code in them."""
        f = self.faces
        first_new = len(f)
        ends = np.cumsum(tree.new_counts).tolist()
        f.verts.extend(tree.new_verts[a:z] for a, z in zip([0] + ends[:-1], ends))
        f.plane.extend(tree.new_planes.tolist())
        f.brush.extend(tree.new_brushes.tolist())
        f.flags.extend(tree.new_flags.tolist())
        if len(tree.new_counts):
            self._append_faces(tree.new_verts, tree.new_counts, tree.new_planes)
        face_map = np.concatenate([ids, np.arange(first_new, len(f), dtype=np.int64)])
        base_node, base_leaf = len(nodes), len(leaves)

        def code(c):
            return np.where(c >= 0, base_node + c, -1 - (base_leaf + (-1 - c)))

        node_face = tree.node_face
        if len(face_map):
            node_face = np.where(node_face >= 0, face_map[np.maximum(node_face, 0)], -1)
        nodes.extend(zip(tree.node_plane.tolist(), node_face.tolist()))
        children.extend(code(tree.node_children).tolist())
        ends = np.cumsum(tree.leaf_face_counts).tolist()
        leaf_faces = face_map[tree.leaf_faces].tolist() if len(tree.leaf_faces) else []
        p = tree.leaf_parent
        parents = np.where(p >= 0, base_node + p, par).tolist()
        sides = np.where(p >= 0, tree.leaf_side, side).tolist()
        bounds = tree.leaf_bounds.copy()
        for k, (a, z, solid) in enumerate(zip([0] + ends[:-1], ends, tree.leaf_solid.tolist())):
            leaves.append(LeafRecord(leaf_faces[a:z], solid=bool(solid), bounds=bounds[k], parent=parents[k],
                                     side=sides[k]))
        self.stats.splits += tree.splits
        self.stats.scored += tree.scored
        self._done_faces += int(tree.leaf_face_counts.sum())
        return int(code(np.int64(0))) if len(tree.node_plane) else int(code(np.int64(-1)))

    def _region_cuts(self, level: "_Level") -> tuple[np.ndarray, np.ndarray]:
        """Which items of a level the region grid cuts (those holding faces whose box crosses a
        grid line), and each one's grid plane (facing +axis; -1 for the others)."""
        forced = np.zeros(len(level), dtype=bool)
        cut_plane = np.full(len(level), -1, dtype=np.int64)
        if self.grid is None:
            return forced, cut_plane
        items = np.flatnonzero(level.length > 0)
        cut, axis, position = self.grid.splits_of(level.box[items])
        items, axis, position = items[cut], axis[cut], position[cut]
        if len(items):  # the grid planes, added in item order as one add() each would
            cut_plane[items] = self.planes.add_many(np.eye(3)[axis], position)
            forced[items] = True
        return forced, cut_plane

    def _forced_or_chosen(self, sub: "_Level", forced: np.ndarray, cut_plane: np.ndarray):
        """_choose_splitters' answer for a level where the region grid cuts some items (forced,
        along cut_plane) and the others choose as usual.  A grid plane is stored the way the first
        face lying on it faces, as a chosen splitter is (a point on a face goes to its empty side)."""
        n_items = len(sub)
        plane = np.zeros(n_items, dtype=np.int64)
        column = np.zeros(len(sub.ids), dtype=np.int8)
        facing = np.zeros(len(sub.ids), dtype=bool)
        node_face = np.full(n_items, -1, dtype=np.int64)
        chosen = np.flatnonzero(~forced)
        if len(chosen):
            rows = _item_rows(sub, chosen)
            plane[chosen], column[rows], facing[rows], node_face[chosen] = self._choose_splitters(sub.take(chosen))
        normals = self.planes.normals
        for k in np.flatnonzero(forced).tolist():
            rows = np.arange(sub.start[k], sub.start[k] + sub.length[k])
            ids = sub.ids[rows]
            pid = int(cut_plane[k])
            cls = self._classify(ids, np.array([pid]))[:, 0]
            same = matmul(normals[self._plane[ids]], normals[pid]) > 0
            on = np.flatnonzero(cls == 0)
            if len(on) and not same[on[0]]:  # the first face on it faces -axis: store the flip
                pid ^= 1
                cls = np.where(cls == 1, 2, np.where(cls == 2, 1, cls)).astype(np.int8)
                same = ~same
            plane[k], column[rows], facing[rows] = pid, cls, same
            node_face[k] = ids[on[0]] if len(on) else -1
        return plane, column, facing, node_face

    def _classify(self, ids: np.ndarray, plane_ids: np.ndarray) -> np.ndarray:
        """(len(ids), len(plane_ids)) int8 codes: 0 on, 1 front, 2 back, 3 spanning.

        Each vertex gets bit 1 when in front (> ON_EPSILON) and bit 2 when behind; a face's code
        is the OR over its vertices: one integer reduction instead of a float max and min.  The
        exact reference for _classify_items (one matrix product of the faces' vertices with the
        planes)."""
        first = self._first[ids]
        count = self._count[ids]
        seg = np.zeros(len(ids), dtype=np.int64)
        np.cumsum(count[:-1], out=seg[1:])
        vidx = np.arange(int(seg[-1] + count[-1])) + np.repeat(first - seg, count)
        dist = matmul(self._pool[vidx], self.planes.normals[plane_ids].T) - self.planes.dists[plane_ids]
        bits = (dist > ON_EPSILON).view(np.int8) | ((dist < -ON_EPSILON).view(np.int8) << 1)
        return np.bitwise_or.reduceat(bits, seg, axis=0)

    def _choose_splitters(self, lv: "_Level"):
        """For every item of a level: the splitter (oriented like its first candidate face), every
        face's class against it (0 on, 1 front, 2 back, 3 spanning) and whether each face's normal
        points the plane's way, and the first face lying on it.

        Per item: candidate planes are the item's candidate faces' planes (canonical, sorted, at
        most max_candidates evenly spaced), scored against its faces (an evenly strided sample of
        at most max_score_faces) by the configured heuristic; ties go to the first."""
        n_items = len(lv)
        item_of = np.repeat(np.arange(n_items), lv.length)
        face_planes = self._plane[lv.ids]
        # candidate planes per item: sorted unique canonical planes of its candidate faces
        pairs = np.unique(item_of[lv.cand] * (len(self.planes) + 2) + (face_planes[lv.cand] >> 1))
        c_item = pairs // (len(self.planes) + 2)
        c_plane = (pairs % (len(self.planes) + 2)) * 2
        c_count = np.bincount(c_item, minlength=n_items)
        limit = self.settings.max_candidates
        if limit and c_count.max() > limit:
            keep = np.ones(len(pairs), bool)
            c_start = np.cumsum(c_count) - c_count
            for i in np.flatnonzero(c_count > limit).tolist():
                pick = np.unique(np.linspace(0, c_count[i] - 1, limit).round().astype(np.int64))
                mask = np.zeros(c_count[i], bool)
                mask[pick] = True
                keep[c_start[i] : c_start[i] + c_count[i]] = mask
            c_item, c_plane = c_item[keep], c_plane[keep]
            c_count = np.bincount(c_item, minlength=n_items)
        self.stats.scored += int(c_count.sum())
        c_start = np.cumsum(c_count) - c_count
        width = int(c_count.max())
        table = np.repeat(c_plane[c_start][:, None], width, axis=1)  # padding repeats the first plane
        table[c_item, np.arange(len(c_item)) - c_start[c_item]] = c_plane
        # the faces each item is scored on
        cap = self.settings.max_score_faces
        sampled = (lv.length > cap) if cap else np.zeros(n_items, bool)
        scored = np.ones(len(lv.ids), bool)
        for i in np.flatnonzero(sampled).tolist():
            pick = np.unique(np.linspace(0, lv.length[i] - 1, cap).round().astype(np.int64))
            mask = np.zeros(lv.length[i], bool)
            mask[pick] = True
            scored[lv.start[i] : lv.start[i] + lv.length[i]] = mask
        s_pos = np.flatnonzero(scored)
        s_item = item_of[s_pos]
        s_count = np.bincount(s_item, minlength=n_items)
        s_first = np.cumsum(s_count) - s_count
        # items grouped by candidate count (powers of two), so that padding stays small
        best = np.zeros(n_items, dtype=np.int64)
        column = np.zeros(len(lv.ids), dtype=np.int8)
        facing = np.zeros(len(lv.ids), dtype=bool)
        group_of = _ceil_log2(c_count)
        for key in np.unique(group_of).tolist():
            g = np.flatnonzero(group_of == key)
            length = s_count[g]
            rows = np.repeat(s_first[g] - (np.cumsum(length) - length), length) + np.arange(int(length.sum()))
            w = int(c_count[g].max())
            best[g], cls, same = self._score_items(lv.ids[s_pos[rows]], face_planes[s_pos[rows]],
                                                   np.repeat(np.arange(len(g)), length), table[g, :w], c_count[g])
            whole = ~sampled[s_item[rows]]
            pick = best[g][np.repeat(np.arange(len(g)), length)][whole]
            column[s_pos[rows[whole]]] = cls[whole, pick]
            facing[s_pos[rows[whole]]] = same[whole, pick]
        plane = table[np.arange(n_items), best]
        normals = self.planes.normals
        if sampled.any():
            rows = np.flatnonzero(sampled[item_of])
            r_item = item_of[rows]
            col = np.zeros(len(rows), dtype=np.int8)
            for i in np.flatnonzero(sampled).tolist():
                mine = np.flatnonzero(r_item == i)
                col[mine] = self._classify(lv.ids[rows[mine]], plane[i : i + 1])[:, 0]
            dot = np.einsum("ij,ij->i", normals[face_planes[rows]], normals[plane[r_item]])
            fac = dot > 0
            near = np.bincount(r_item, weights=(col == 0) & (np.abs(dot) < RECLASSIFY_DOT_BAND), minlength=n_items) > 0
            for i in np.flatnonzero(near).tolist():
                mine = np.flatnonzero(r_item == i)
                fac[mine] = matmul(normals[face_planes[rows[mine]]], normals[plane[i]]) > 0
            column[rows], facing[rows] = col, fac
        # store the splitter the way its first candidate face faces, so that "a point exactly on a
        # node's plane goes to the front child" puts a point on a face on the face's empty side (a
        # wall facing -x is split by the -x plane, not by its canonical +x flip)
        on_plane = np.flatnonzero(lv.cand & ((face_planes >> 1) == (plane[item_of] >> 1)))
        _, first = np.unique(item_of[on_plane], return_index=True)
        flip = (face_planes[on_plane[first]] & 1).astype(bool)
        plane = plane ^ flip
        swap = flip[item_of]
        column = np.where(swap & (column == 1), 2, np.where(swap & (column == 2), 1, column)).astype(np.int8)
        facing = facing ^ swap
        # the first face on the plane (class 0, the smallest) of each item
        low = np.minimum.reduceat(column, lv.start) if len(column) else column
        hits = np.flatnonzero(column == low[item_of])
        _, first = np.unique(item_of[hits], return_index=True)
        node_face = lv.ids[hits[first]]
        return plane, column, facing, node_face

    def _score_items(self, s_ids, s_planes, s_item, table, c_count):
        """Score items' candidates (table[item, :c_count[item]]) against their faces (s_ids, item
        by item; s_planes their planes): (each item's best column, every face's class against
        every candidate, whether its normal points the candidate's way).  With the C backend,
        tree_score_c's kernel gives the same answers (where a face lies on a candidate, which is
        all that is read of `same`)."""
        if self._score_backend == "c":
            return tree_score_c.score_items(self._pool, self._first, self._count, self.planes.normals,
                                            self.planes.dists, s_ids, s_planes, s_item, table, c_count,
                                            self.settings.split_weight)
        n_items, width = table.shape
        c_valid = np.arange(width) < c_count[:, None]
        # big items: one matrix product each (_classify); the many small ones all together
        s_count = np.bincount(s_item, minlength=n_items)
        s_first = np.cumsum(s_count) - s_count
        big = s_count >= _BIG_ITEM
        small = np.flatnonzero(~big[s_item])
        cls = np.zeros((len(s_ids), width), dtype=np.int8)
        cls[small], near = self._classify_items(s_ids[small], s_item[small], table, c_count)
        for i in np.flatnonzero(big | near).tolist():  # near: too close to ON_EPSILON for another rounding
            rows = slice(s_first[i], s_first[i] + s_count[i])
            cls[rows, : c_count[i]] = self._classify(s_ids[rows], table[i, : c_count[i]])
        # whether a face's normal points a candidate's way; it matters for faces on the plane,
        # whose normals are (anti)parallel to it, unless a sliver face lies on a crossing plane
        normals = self.planes.normals
        same = np.zeros(cls.shape, bool)
        rows, cols = np.nonzero((cls == 0) & c_valid[s_item])
        dots = np.einsum("ij,ij->i", normals[s_planes[rows]], normals[table[s_item[rows], cols]])
        same[rows, cols] = dots > 0
        near = np.bincount(s_item[rows], weights=np.abs(dots) < RECLASSIFY_DOT_BAND, minlength=n_items) > 0
        for i in np.flatnonzero(near).tolist():  # too close to 0 for another rounding: the exact product
            rows = slice(s_first[i], s_first[i] + s_count[i])
            same[rows, : c_count[i]] = matmul(normals[s_planes[rows]], normals[table[i, : c_count[i]]].T) > 0
        return self._best_candidates(cls, same, s_item, c_count, c_valid), cls, same

    def _classify_items(self, face_ids, face_item, table, c_count):
        """_classify for many items at once: (len(face_ids), table width) int8 codes of each face
        against its item's planes (table[item, :c_count[item]]), and per item whether some
        vertex lies so close to a threshold (ON_EPSILON) that another rounding of its distance
        could change its class; those items must be classified by _classify itself.

        Against an axial plane a vertex's distance is one coordinate minus the plane's distance
        in any rounding, so the face's bounding box gives its class exactly.  Against other
        planes a face whose bounding sphere keeps clear of both thresholds is wholly on one side;
        only the rest are classified vertex by vertex."""
        self._update_face_bounds()
        n_items, width = table.shape
        codes = np.zeros((len(face_ids), width), dtype=np.int8)
        near = np.zeros(n_items, bool)
        if not len(face_ids):
            return codes, near
        normals, dists = self.planes.normals, self.planes.dists
        if len(self._axes[0]) != len(normals):
            self._axes = _plane_axes(normals)
        axis, sign = self._axes
        lo, hi = self._lo[face_ids], self._hi[face_ids]
        step = max(1, _BATCH_CELLS // (4 * width))
        vertex_pairs = []
        for a in range(0, len(face_ids), step):
            rows = slice(a, a + step)
            pl = table[face_item[rows]]
            d = dists[pl]
            ax = axis[pl]
            axial = ax >= 0
            s = sign[pl]
            axc = np.maximum(ax, 0)
            top = np.take_along_axis(hi[rows], axc, axis=1)
            bottom = np.take_along_axis(lo[rows], axc, axis=1)
            d_max = np.where(s > 0, top, -bottom) - d
            d_min = np.where(s > 0, bottom, -top) - d
            centre = np.einsum("sj,swj->sw", self._centre[face_ids[rows]], normals[pl]) - d
            radius = self._radius[face_ids[rows]][:, None] + RECLASSIFY_DIST_BAND
            d_max = np.where(axial, d_max, centre + radius)
            d_min = np.where(axial, d_min, centre - radius)
            codes[rows] = (d_max > ON_EPSILON).view(np.int8) | ((d_min < -ON_EPSILON).view(np.int8) << 1)
            # the sphere (grown by RECLASSIFY_DIST_BAND for rounding) wholly beyond a threshold says front
            # or back for any rounding of the vertices' distances; otherwise vertex by vertex
            unclear = ~axial & (d_min <= ON_EPSILON) & (d_max >= -ON_EPSILON)
            unclear &= np.arange(width) < c_count[face_item[rows]][:, None]
            f, w = np.nonzero(unclear)
            vertex_pairs.append((f + a, w))
        f = np.concatenate([p[0] for p in vertex_pairs])
        w = np.concatenate([p[1] for p in vertex_pairs])
        if len(f):
            code, close = self._classify_pairs(face_ids[f], table[face_item[f], w])
            codes[f, w] = code
            near[np.unique(face_item[f[close]])] = True
        return codes, near

    def _classify_pairs(self, faces: np.ndarray, plane_ids: np.ndarray):
        """Codes of faces against planes pair by pair, vertex by vertex (any rounding), and for
        each pair whether some vertex lies within RECLASSIFY_DIST_BAND of a threshold."""
        count = self._count[faces]
        order = np.argsort(count, kind="stable")  # similar sizes together: little padding
        codes = np.zeros(len(faces), dtype=np.int8)
        close = np.zeros(len(faces), bool)
        normals, dists = self.planes.normals[plane_ids], self.planes.dists[plane_ids]
        for a in range(0, len(faces), 1 << 16):
            o = order[a : a + (1 << 16)]
            width = int(count[o].max())
            fill = np.minimum(np.arange(width), count[o][:, None] - 1)  # padding repeats a vertex
            verts = self._pool[self._first[faces[o]][:, None] + fill]
            dist = np.einsum("pvj,pj->pv", verts, normals[o]) - dists[o][:, None]
            codes[o] = (np.any(dist > ON_EPSILON, axis=1).view(np.int8)
                        | (np.any(dist < -ON_EPSILON, axis=1).view(np.int8) << 1))
            close[o] = np.any(np.abs(np.abs(dist) - ON_EPSILON) < RECLASSIFY_DIST_BAND, axis=1)
        return codes, close

    def _best_candidates(self, cls, same, s_item, c_count, c_valid) -> np.ndarray:
        """Column of each item's best candidate by the configured heuristic (0 for one candidate).

        The five counts per candidate (in front, behind, spanning, on and facing its way, on
        and facing away) are summed in one reduction, packed 12 bits apart in an int64."""
        n_items = len(c_count)
        sizes = np.bincount(s_item, minlength=n_items)
        starts = np.cumsum(sizes) - sizes
        best = np.zeros(n_items, dtype=np.int64)
        many = np.flatnonzero(c_count > 1)  # a third of all nodes have one candidate: no scoring
        if not len(many):
            return best
        # 0 spanning, 1 in front, 2 behind, 3 on and facing the candidate's way, 4 on facing away
        category = np.array([3, 1, 2, 0], dtype=np.int64)[cls] + ((cls == 0) & ~same)
        if sizes.max() < 4096:
            packed = np.add.reduceat(np.left_shift(1, 12 * category), starts, axis=0)
            n_split, n_front, n_back, on_same, on_other = (packed >> (12 * k) & 4095 for k in range(5))
        else:
            n_split, n_front, n_back, on_same, on_other = (
                np.add.reduceat((category == k).astype(np.int64), starts, axis=0) for k in range(5))
        n_front = n_front + on_same
        n_back = n_back + on_other
        if self.settings.splitter == "thesis":
            for i in many.tolist():
                c = c_count[i]
                best[i] = _choose_thesis(n_front[i, :c], n_back[i, :c], n_split[i, :c], self.settings)
            return best
        score = np.abs(n_front - n_back) + self.settings.split_weight * n_split
        score = np.where(c_valid, score, np.inf)
        best[many] = np.argmin(score[many], axis=1)  # first minimum: deterministic
        return best

    def _partition_level(self, lv: "_Level", node_codes, plane, column, facing) -> "_Level":
        """Route every item's faces to its (front, back) children, splitting the ones that span
        the item's plane: the next level, two items per node (front then back).

        A face on the plane goes to the side its normal faces and stops being a candidate
        (Listing 2); split pieces keep the face's flags and are appended after the unsplit faces,
        front piece first, in face order."""
        n_items = len(lv)
        item_of = np.repeat(np.arange(n_items), lv.length)
        on = column == 0
        side = np.where(on, 2 - facing.view(np.int8), column)  # 1 front, 2 back, 3 spanning
        cand = lv.cand & ~on
        spanning = np.flatnonzero(side == 3)
        self.stats.splits += len(spanning)
        # every entry of the next level: (child item, 0 unsplit / 1 piece, position) sorted
        keep = np.flatnonzero(side != 3)
        child = [2 * item_of[keep] + (side[keep] == 2)]
        kind = [np.zeros(len(keep), np.int64)]
        pos = [keep]
        ids = [lv.ids[keep]]
        cands = [cand[keep]]
        cnts = [lv.cnt[keep]]
        if len(spanning):
            faces = lv.ids[spanning]
            s_plane = plane[item_of[spanning]]
            n, d = self.planes.normals[s_plane], self.planes.dists[s_plane]
            count = self._count[faces]
            width = int(count.max())
            fill = np.minimum(np.arange(width), count[:, None] - 1)
            verts = self._pool[self._first[faces][:, None] + fill]
            dist = matmul(verts, n[:, :, None])[:, :, 0] - d[:, None]  # each face's own `verts @ n - d`
            front, nf, back, nb = split_polygons(verts, count, dist, n, d)
            for pieces, counts, to_back in ((front, nf, 0), (back, nb, 1)):
                got = np.flatnonzero(counts)
                new_ids = self._new_faces(pieces[got], counts[got], faces[got])
                child.append(2 * item_of[spanning[got]] + to_back)
                kind.append(np.ones(len(got), np.int64))
                pos.append(spanning[got] * 2 + to_back)
                ids.append(new_ids)
                cands.append(cand[spanning[got]])
                cnts.append(lv.cnt[spanning[got]])
        child, kind, pos = np.concatenate(child), np.concatenate(kind), np.concatenate(pos)
        order = np.lexsort((pos, kind, child))
        length = np.bincount(child, minlength=2 * n_items)
        boxes = _split_boxes(lv.box, self.planes.normals[plane], self.planes.dists[plane])
        return _Level(np.concatenate(ids)[order], np.concatenate(cands)[order], np.concatenate(cnts)[order],
                      np.cumsum(length) - length, length, boxes, np.repeat(node_codes, 2),
                      np.tile(np.array([0, 1]), n_items))

    def _new_faces(self, pieces: np.ndarray, counts: np.ndarray, like: np.ndarray) -> np.ndarray:
        """Append split pieces (padded (M, V, 3), counts) as new faces like faces `like`: ids."""
        f = self.faces
        first_id = len(f)
        flat = pieces[np.arange(pieces.shape[1]) < counts[:, None]]
        ends = np.cumsum(counts).tolist()
        f.verts.extend(flat[a:z] for a, z in zip([0] + ends[:-1], ends))
        like = like.tolist()
        f.plane.extend(f.plane[i] for i in like)
        f.brush.extend(f.brush[i] for i in like)
        f.flags.extend(f.flags[i] for i in like)
        self._append_faces(flat, counts, np.asarray(f.plane[first_id:], dtype=np.int64))
        return np.arange(first_id, len(f), dtype=np.int64)

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
            dist = matmul(verts, normals[plane]) - dists[plane]
            fmax, fmin = float(dist.max()), float(dist.min())
            if fmin >= -ON_EPSILON and fmax <= ON_EPSILON:
                facing = float(matmul(normals[self.faces.plane[face]], normals[plane])) > 0
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


#: Cells (faces x planes) _classify_items works on at once.
_BATCH_CELLS = 1 << 21
#: Items scored on at least this many faces are classified one by one (_classify: one matrix
#: product, cheaper than _classify_items' bounds for big items); smaller ones all together.
_BIG_ITEM = 64


def _plane_axes(normals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per plane: the axis of an axial plane (-1 for others) and the sign of its normal there."""
    axial = (np.abs(normals) == 1.0) & (np.count_nonzero(normals, axis=1) == 1)[:, None]  # exactly axial
    axis = np.where(axial.any(axis=1), np.argmax(axial, axis=1), -1)
    sign = np.sign(normals[np.arange(len(normals)), np.maximum(axis, 0)])
    return axis, sign


def _ceil_log2(x: np.ndarray) -> np.ndarray:
    """ceil(log2(x)) for x >= 1 (x < 1 as 1), from the binary exponent (np.frexp is exact; NumPy's
    log2 is not the same function in every NumPy version)."""
    m, e = np.frexp(np.maximum(np.asarray(x, dtype=np.float64), 1.0))
    return np.where(m == 0.5, e - 1, e).astype(np.int64)


class _Level:
    """The items (future nodes or leaves) of one tree level: their face lists one after another
    (ids, cand, cnt; item i is [start[i], start[i] + length[i])), bounds, parent node (in the
    build's own numbering, -1 for a root), side, and for a root the node it hangs from outside
    the build (-1 for none; 0 for items that are not roots)."""

    def __init__(self, ids, cand, cnt, start, length, box, parent, side, outer=None):
        self.ids, self.cand, self.cnt = ids, cand, cnt
        self.start, self.length, self.box, self.parent, self.side = start, length, box, parent, side
        self.outer = np.zeros(len(length), dtype=np.int64) if outer is None else outer

    def __len__(self) -> int:
        return len(self.length)

    @staticmethod
    def empty() -> "_Level":
        z = np.zeros(0, dtype=np.int64)
        return _Level(z, z.astype(bool), z.astype(bool), z, z, np.zeros((0, 2, 3)), z, z)

    def take(self, items: np.ndarray) -> "_Level":
        length = self.length[items]
        rows = np.repeat(self.start[items] - (np.cumsum(length) - length), length) + np.arange(int(length.sum()))
        return _Level(self.ids[rows], self.cand[rows], self.cnt[rows], np.cumsum(length) - length, length,
                      self.box[items], self.parent[items], self.side[items], self.outer[items])


def _item_rows(level: "_Level", items: np.ndarray) -> np.ndarray:
    """The face rows of `items` (ascending) in a level, in the order level.take(items) keeps them."""
    length = level.length[items]
    return np.repeat(level.start[items] - (np.cumsum(length) - length), length) + np.arange(int(length.sum()))


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
    while threshold >= top and threshold > MIN_RELATION_FLOOR:
        threshold /= settings.relation_scale
    ok = relation > threshold if top > 0 else np.ones(len(relation), bool)
    # fewest splits, then best relation, then first in order
    order = np.lexsort((np.arange(len(relation)), -relation, n_split))
    for k in order:
        if ok[k]:
            return int(k)
    return int(order[0])


def _split_boxes(box: np.ndarray, n: np.ndarray, d: np.ndarray) -> np.ndarray:
    """The children's conservative bounds for every item of a level: (2M, 2, 3), front then back
    per item.  An axial plane (its largest normal component exactly +-1) cuts the box exactly;
    others leave both children the whole box."""
    m = len(box)
    rows = np.arange(m)
    mags = np.abs(n)
    axis = np.argmax(mags, axis=1)  # the first of the largest, as list.index(max)
    comp = n[rows, axis]
    axial = mags[rows, axis] == 1.0
    pos = d * comp
    out = np.repeat(np.asarray(box, dtype=np.float64), 2, axis=0).reshape(m, 2, 2, 3)  # (item, child, lo/hi, xyz)
    r, a, p, up = rows[axial], axis[axial], pos[axial], comp[axial] > 0
    # front: lo raised to the plane when it faces +axis, hi lowered when -axis; back the other way
    for child, bound, raise_it in ((0, 0, up), (0, 1, ~up), (1, 1, up), (1, 0, ~up)):
        k = raise_it
        cur = out[r[k], child, bound, a[k]]
        if bound == 0:  # max(cur, pos): pos only when greater
            out[r[k], child, bound, a[k]] = np.where(p[k] > cur, p[k], cur)
        else:  # min(cur, pos): pos only when smaller
            out[r[k], child, bound, a[k]] = np.where(p[k] < cur, p[k], cur)
    return out.reshape(2 * m, 2, 3)


def world_box(bounds: np.ndarray, margin: float = 1.0) -> np.ndarray:
    """Bounds used for unbounded cells: the scene's bounds plus a margin (metres)."""
    if bounds is None or not np.all(np.isfinite(bounds)):
        return np.array([[-WORLD_HALF_EXTENT] * 3, [WORLD_HALF_EXTENT] * 3])
    return np.array([bounds[0] - margin, bounds[1] + margin])
