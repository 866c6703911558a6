"""Swept traces through a solid or onion tree: find_first_transition (onion article, Listing 5).

A trace moves a hull's reference point from src to dest.  The answer is a *transition*:
- RAY_E: the whole segment is empty for the hull;
- RAY_S: the whole segment is solid;
- RAY_E2S / RAY_S2E: the first point where it goes from empty to solid (or solid to empty), with
  the plane crossed there, oriented to face the segment's start.

One convention differs from Listing 5, on purpose: a segment lying *in* a splitter plane (the
coplanar case) follows the front child only, instead of both children.  Points on a plane are on
its front (empty) side everywhere in brushbake, so a box sliding along a floor stays empty, and the
single and batch versions answer identically.  Listing 5's combination can report a spurious
transition below a floor the segment merely runs along.

Collision (trace_hull / trace_hulls): E2S gives the collision point, the normal facing against the
motion and the time t = |c - s| / |d - s|.  A start found solid (RAY_S or RAY_S2E: the start
touches a surface and rounding put it inside) is retried from s' = s - RETRY_BACKOFF * (d - s)/|d - s|;
if that finds an E2S within the back-off, the trace hits at t = 0 with that plane; otherwise
the start is solid (t = 0, zero normal).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RAY_E, RAY_S, RAY_E2S, RAY_S2E = 0, 1, 2, 3

#: m. How far back along the motion the start is moved for the robustness retry; larger than the
#: rounding that can put a start resting on a surface just inside it (~1e-12 m), smaller than any
#: real gap a character could be stuck in.
RETRY_BACKOFF = 1e-3


@dataclass
class Transition:
    kind: int  # RAY_E, RAY_S, RAY_E2S or RAY_S2E
    t: float = 1.0  # where along src -> dest (0..1)
    plane: int = -1  # plane crossed, facing the start's side


@dataclass
class TraceResult:
    fraction: float  # 1.0: no hit
    point: np.ndarray  # where the reference point stops
    normal: np.ndarray  # facing against the motion; zero for no hit or a solid start
    plane: int  # -1 for no hit or a solid start
    start_solid: bool
    hit: bool


class TreeLists:
    """A tree as Python lists, for single traces without NumPy per-call overhead."""

    def __init__(self, tree):
        self.normals = tree.plane_normals.tolist()
        self.dists = tree.plane_dists.tolist()
        self.planes = tree.node_plane.tolist()
        self.children = tree.node_children.tolist()
        self.solid = tree.leaf_solid.tolist()
        self.root = tree.root


def find_first_transition(tree: TreeLists, src, dest, hull: int = 0) -> Transition:
    """Listing 5 for one segment (see the module docstring for the coplanar convention)."""
    sx, sy, sz = (float(v) for v in src)
    dx, dy, dz = float(dest[0]) - sx, float(dest[1]) - sy, float(dest[2]) - sz
    bit = 1 << hull

    def fft_sub(code: int, t0: float, t1: float) -> tuple[int, float, int]:
        if code < 0:
            return (RAY_S if tree.solid[-1 - code] & bit else RAY_E), t0, -1
        p = tree.planes[code]
        nx, ny, nz = tree.normals[p]
        ds = nx * sx + ny * sy + nz * sz - tree.dists[p]
        dd = nx * dx + ny * dy + nz * dz
        d0, d1 = ds + t0 * dd, ds + t1 * dd
        near = 0 if d0 >= 0 else 1
        if (d1 >= 0) == (d0 >= 0):  # CP_FRONT / CP_BACK (and coplanar: front)
            return fft_sub(tree.children[code][near], t0, t1)
        tm = min(max(-ds / dd, t0), t1)  # CP_STRADDLE: split at the plane, near half first
        tr_near = fft_sub(tree.children[code][near], t0, tm)
        if tr_near[0] >= RAY_E2S:
            return tr_near
        tr_far = fft_sub(tree.children[code][1 - near], tm, t1)
        if tr_far[0] == RAY_E:
            return (RAY_E, 1.0, -1) if tr_near[0] == RAY_E else (RAY_S2E, tm, p ^ near)
        if tr_far[0] == RAY_S:
            return (RAY_S, 1.0, -1) if tr_near[0] == RAY_S else (RAY_E2S, tm, p ^ near)
        if tr_far[0] == RAY_E2S:
            return tr_far if tr_near[0] == RAY_E else (RAY_S2E, tm, p ^ near)
        return tr_far if tr_near[0] == RAY_S else (RAY_E2S, tm, p ^ near)  # RAY_S2E

    kind, t, plane = fft_sub(tree.root, 0.0, 1.0)
    return Transition(kind, t if kind >= RAY_E2S else (1.0 if kind == RAY_E else 0.0), plane)


def find_first_transitions(tree, starts, ends, hull: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Listing 5 for many segments at once: (kind (N,) int8, t (N,), plane (N,) int64).

    All segments walk the tree in lock step: one iteration moves every live segment one node on,
    into the nearer child at once, with the far half (node, t0, t1, entry plane) pushed on the
    segment's own stack in NumPy arrays, so leaves are met in order along each segment.  The first leaf gives the start's state; the first
    leaf in the other state gives the transition, at its t0 and entry plane.
    """
    s = np.asarray(starts, dtype=np.float64).reshape(-1, 3)
    e = np.asarray(ends, dtype=np.float64).reshape(-1, 3)
    n = len(s)
    kind = np.full(n, RAY_E, dtype=np.int8)
    t_out = np.ones(n)
    plane_out = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return kind, t_out, plane_out
    bit = 1 << hull
    normals, dists = tree.plane_normals, tree.plane_dists
    planes = np.asarray(tree.node_plane, dtype=np.int64)
    children = np.asarray(tree.node_children, dtype=np.int64)
    solid_of_leaf = (np.asarray(tree.leaf_solid) & bit) != 0
    depth = tree.depth() + 2
    # each segment's current entry lives in 'registers'; only far halves go on its stack, a
    # slice of one flat array (segment i owns [i * depth, (i + 1) * depth))
    cur = np.full(n, tree.root, dtype=np.int64)
    c_t0, c_t1 = np.zeros(n), np.ones(n)
    c_pl = np.full(n, -1, dtype=np.int64)
    st_code = np.empty(n * depth, dtype=np.int64)
    st_t0, st_t1 = np.empty(n * depth), np.empty(n * depth)
    st_plane = np.empty(n * depth, dtype=np.int64)
    base = np.arange(n, dtype=np.int64) * depth
    sp = np.zeros(n, dtype=np.int64)
    start_state = np.full(n, -1, dtype=np.int8)  # -1 unknown, 0 empty, 1 solid
    alive = np.ones(n, dtype=bool)
    live = np.arange(n)
    delta = e - s
    while len(live):
        code = cur[live]
        leaf = code < 0
        if leaf.any():
            r = live[leaf]
            state = solid_of_leaf[-1 - code[leaf]]
            known = start_state[r]
            first = known < 0
            start_state[r[first]] = state[first]
            changed = ~first & (state != (known == 1))
            done = r[changed]
            kind[done] = np.where(state[changed], RAY_E2S, RAY_S2E)
            t_out[done] = c_t0[done]
            plane_out[done] = c_pl[done]
            alive[done] = False
            rest = r[~changed]
            more = sp[rest] > 0
            alive[rest[~more]] = False
            p = rest[more]
            if len(p):  # pop the next far half
                k = base[p] + sp[p] - 1
                cur[p], c_t0[p], c_t1[p], c_pl[p] = st_code[k], st_t0[k], st_t1[k], st_plane[k]
                sp[p] -= 1
        nodes_sel = ~leaf
        if nodes_sel.any():
            r = live[nodes_sel]
            nodes = code[nodes_sel]
            pl = planes[nodes]
            nrm = normals[pl]
            sr, dr = s[r], delta[r]
            # summed x + y + z in this order, as the single walk does: identical bits
            ds = sr[:, 0] * nrm[:, 0] + sr[:, 1] * nrm[:, 1] + sr[:, 2] * nrm[:, 2] - dists[pl]
            dd = dr[:, 0] * nrm[:, 0] + dr[:, 1] * nrm[:, 1] + dr[:, 2] * nrm[:, 2]
            t0n, t1n = c_t0[r], c_t1[r]
            front0 = ds + t0n * dd >= 0
            cross = front0 != (ds + t1n * dd >= 0)
            near = (~front0).astype(np.int64)
            cur[r] = children[nodes, near]  # descend into the near side at once
            ci = np.flatnonzero(cross)
            if len(ci):  # the far half waits on the stack; dd != 0 where the plane is crossed
                rc = r[ci]
                t0c, t1c = t0n[ci], t1n[ci]
                tm = np.minimum(np.maximum(-ds[ci] / dd[ci], t0c), t1c)
                nc = near[ci]
                k = base[rc] + sp[rc]
                st_code[k] = children[nodes[ci], 1 - nc]
                st_t0[k], st_t1[k] = tm, t1c
                st_plane[k] = pl[ci] ^ nc  # the plane's face toward the near side
                sp[rc] += 1
                c_t1[rc] = tm
        live = live[alive[live]]
    untouched = kind == RAY_E
    solid_all = untouched & (start_state == 1)
    kind[solid_all] = RAY_S
    t_out[solid_all] = 0.0
    return kind, t_out, plane_out


def trace_hulls(level, starts, ends, hull: int = 0, retry: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Swept traces of a hull's reference point: ((N, 7) [fraction, point, normal], start_solid (N,)).

    Uses the level's tree for that hull (point tree for hull 0, onion tree for box hulls).  The
    normal faces against the motion; no hit gives fraction 1 and the end point.
    """
    tree = level.collision_tree(hull) if hasattr(level, "collision_tree") else level
    s = np.asarray(starts, dtype=np.float64).reshape(-1, 3)
    e = np.asarray(ends, dtype=np.float64).reshape(-1, 3)
    kind, t, plane = find_first_transitions(tree, s, e, hull)
    start_solid = (kind == RAY_S) | (kind == RAY_S2E)
    hit_t = np.where(kind == RAY_E2S, t, np.where(start_solid, 0.0, 1.0))
    hit_plane = np.where(kind == RAY_E2S, plane, -1)
    if retry and start_solid.any():
        idx = np.flatnonzero(start_solid)
        delta = e[idx] - s[idx]
        length = np.linalg.norm(delta, axis=1)
        moving = length > 0
        idx, delta, length = idx[moving], delta[moving], length[moving]
        back = s[idx] - RETRY_BACKOFF * delta / length[:, None]
        k2, t2, p2 = find_first_transitions(tree, back, e[idx], hull)
        total = length + RETRY_BACKOFF
        touching = (k2 == RAY_E2S) & (t2 * total <= RETRY_BACKOFF * (1 + 1e-9) + 1e-12)
        ok = idx[touching]
        start_solid[ok] = False
        hit_plane[ok] = p2[touching]
        hit_t[ok] = 0.0
    out = np.zeros((len(s), 7))
    out[:, 0] = hit_t
    out[:, 1:4] = np.where(hit_t[:, None] >= 1.0, e, s + hit_t[:, None] * (e - s))  # a miss ends exactly at e
    has = hit_plane >= 0
    out[has, 4:7] = tree.plane_normals[hit_plane[has]]
    return out, start_solid


def trace_hull(level, start, end, hull: int = 0, lists: TreeLists | None = None) -> TraceResult:
    """One swept trace (plain Python walk; pass `lists` to reuse the tree's list form)."""
    tree = level.collision_tree(hull) if hasattr(level, "collision_tree") else level
    lists = lists or TreeLists(tree)
    s = np.asarray(start, dtype=np.float64)
    e = np.asarray(end, dtype=np.float64)
    tr = find_first_transition(lists, s, e, hull)
    if tr.kind in (RAY_S, RAY_S2E):
        delta = e - s
        length = float(np.linalg.norm(delta))
        if length > 0:
            back = s - RETRY_BACKOFF * delta / length
            tr2 = find_first_transition(lists, back, e, hull)
            if tr2.kind == RAY_E2S and tr2.t * (length + RETRY_BACKOFF) <= RETRY_BACKOFF * (1 + 1e-9) + 1e-12:
                return TraceResult(0.0, s.copy(), np.array(lists.normals[tr2.plane]), tr2.plane, False, True)
        return TraceResult(0.0, s.copy(), np.zeros(3), -1, True, True)
    if tr.kind == RAY_E2S:
        return TraceResult(tr.t, s + tr.t * (e - s), np.array(lists.normals[tr.plane]), tr.plane, False, True)
    return TraceResult(1.0, e.copy(), np.zeros(3), -1, False, False)
