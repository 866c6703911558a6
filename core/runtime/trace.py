"""Swept traces through a solid or onion tree: find_first_transition (onion article, Listing 5).

A trace moves a hull's reference point from src to dest.  The answer is a *transition*:
- RAY_E: the whole segment is empty for the hull;
- RAY_S: the whole segment is solid;
- RAY_E2S / RAY_S2E: the first point where it goes from empty to solid (or solid to empty), with
  the plane crossed there, oriented to face the segment's start.

Solids are open sets (core/tolerances.py TOUCH_EPSILON): touching is not being inside.  A point
within TOUCH_EPSILON of a node's plane is *on* it, and solid only where both sides are; a segment
lying in a plane (both ends of its piece on it: Listing 5's coplanar case) is solid where both
children are, so a box sliding along a floor, or under a ceiling that shares its plane with
another brush's top, is not stopped, and a trace can leave the point where the previous one
stopped (rounding may have put it a hair inside).  Only the start's own state and coplanar pieces
need this; everywhere else an end of a piece on a plane takes the side of the other end.

The walks give the same answers to the bit.  The single fast walk (Listing 5's recursion) runs
until it meets a start on a plane or a coplanar piece and hands that segment to the open walk
(`_fft_open`), which follows both sides there.  The batch walk (_lockstep) finishes starts on a
plane itself (_starts_on_planes, solid_open_batch), and coplanar pieces where one side of the
plane is the same all along (_lying_pieces); only pieces with structure on both sides go to the
open walk.

Collision (trace_hull / trace_hulls): E2S gives the collision point, the normal facing against the
motion and the time t = |c - s| / |d - s|.  A start found solid (RAY_S or RAY_S2E: rounding put a
start resting on a surface inside it by more than TOUCH_EPSILON) is retried from
s' = s - RETRY_BACKOFF * (d - s)/|d - s|; if that finds an E2S within the back-off, the trace hits
at t = 0 with that plane; otherwise the start is solid (t = 0, zero normal).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..detmath import norm
from ..tolerances import RETRY_BACKOFF, RETRY_SLACK, RETRY_SLACK_ABS, TOUCH_EPSILON
from .cruntime import c_level, check_backend
from .heap import keep_freed_pages
from .results import Hit, Hits
from .tree import Tree, TreeLists, as_tree

RAY_E, RAY_S, RAY_E2S, RAY_S2E = 0, 1, 2, 3



@dataclass
class Transition:
    kind: int  # RAY_E, RAY_S, RAY_E2S or RAY_S2E
    t: float = 1.0  # where along src -> dest (0..1)
    plane: int = -1  # plane crossed, facing the start's side


class _OnPlane(Exception):
    """The fast walk met a start on a plane or a piece lying in one: the open walk decides."""


def find_first_transition(tree: Tree, src, dest, hull: int = 0) -> Transition:
    """Listing 5 for one segment, solids open (see the module docstring)."""
    lists = tree.lists
    sx, sy, sz = (float(v) for v in src)
    dx, dy, dz = float(dest[0]) - sx, float(dest[1]) - sy, float(dest[2]) - sz
    seg = (sx, sy, sz, dx, dy, dz)
    bit = 1 << hull
    try:
        kind, t, plane = _fft_fast(lists, seg, bit)
    except _OnPlane:
        kind, t, plane = _fft_open(lists, seg, bit)
    return Transition(kind, t if kind >= RAY_E2S else (1.0 if kind == RAY_E else 0.0), plane)


def _fft_fast(tree: TreeLists, seg, bit: int) -> tuple[int, float, int]:
    """Listing 5 without recursion: the leaves along the segment in order (near half first, far
    halves on a stack), up to the first change of state, which is Listing 5's transition (the
    recursion combines near and far halves to exactly that).  Raises _OnPlane where solids
    being open matters."""
    sx, sy, sz, dx, dy, dz = seg
    eps = TOUCH_EPSILON
    planes, normals, dists, children, solid = tree.planes, tree.normals, tree.dists, tree.children, tree.solid
    stack: list[tuple[int, float, float, int]] = []  # far halves: (code, t0, t1, plane entered through)
    code, t0, t1, entry = tree.root, 0.0, 1.0, -1
    state = -1  # the first leaf's state, then the state so far
    while True:
        while code >= 0:
            p = planes[code]
            nx, ny, nz = normals[p]
            ds = nx * sx + ny * sy + nz * sz - dists[p]
            dd = nx * dx + ny * dy + nz * dz
            d0, d1 = ds + t0 * dd, ds + t1 * dd
            on1 = -eps <= d1 <= eps
            if -eps <= d0 <= eps:
                if on1 or t0 == 0.0:  # a piece in the plane, or the start on it
                    raise _OnPlane
                front0 = d1 > 0
            else:
                front0 = d0 > 0
            near = 0 if front0 else 1
            if not (on1 or (d1 > 0) == front0):  # CP_STRADDLE: split at the plane, near half first
                tm = min(max(-ds / dd, t0), t1)
                stack.append((children[code][1 - near], tm, t1, p ^ near))
                t1 = tm
            code = children[code][near]
        leaf_solid = 1 if solid[-1 - code] & bit else 0
        if state < 0:
            state = leaf_solid
        elif leaf_solid != state:
            return (RAY_E2S if leaf_solid else RAY_S2E), t0, entry
        if not stack:
            return (RAY_S, 1.0, -1) if state else (RAY_E, 1.0, -1)
        code, t0, t1, entry = stack.pop()


def solid_open(tree: Tree, code: int, x: float, y: float, z: float, bit: int) -> bool:
    """Is the point solid (below `code`), solids being open: on a plane (within TOUCH_EPSILON)
    it is solid only if it is solid on both sides."""
    return tree.lists.solid_open(code, x, y, z, bit)


def _fft_open(tree: TreeLists, seg, bit: int) -> tuple[int, float, int]:
    """find_first_transition with open solids everywhere: the start's state from every side of
    the planes it lies on, the pieces along the segment in order (_pieces), the first change."""
    sx, sy, sz = seg[:3]
    start = tree.solid_open(tree.root, sx, sy, sz, bit)
    pieces = iter(_pieces(tree, seg, bit, tree.root, 0.0, 1.0, -1))
    _, state, plane = next(pieces)
    if state != start and plane >= 0:  # the start touches a surface the segment goes into
        return (RAY_E2S if state else RAY_S2E), 0.0, plane
    # (without a plane through the start between the two, the state just after it stands)
    for t, solid, plane in pieces:
        if solid != state:
            return (RAY_E2S if solid else RAY_S2E), t, plane
    return (RAY_S, 0.0, -1) if state else (RAY_E, 1.0, -1)


def _pieces(tree: TreeLists, seg, bit: int, code: int, t0: float, t1: float, entry: int) -> list:
    """[(t where a piece starts, solid, plane entered there)] for the leaves along [t0, t1] in
    order.  A piece lying in a node's plane is solid where both children are.  For the piece at
    the segment's start, `entry` becomes a plane the start lies on with open (empty) space across
    it, facing that space: the plane a trace into solid from there hits at t = 0.

    No recursion: a stack of tasks, each appending to an output list.  ('walk', code, t0, t1,
    entry, out) walks down from a node (a straddled plane pushes the far half's walk below the
    near half's, so outputs stay in order); a piece lying in a plane walks both children into
    lists of their own, and a ('lying', ...) task below those two combines them into `out`."""
    outputs: list[list] = [[]]
    tasks: list[tuple] = [("walk", code, t0, t1, entry, 0)]
    while tasks:
        task = tasks.pop()
        if task[0] == "lying":
            _, a, b, t0, out = task
            outputs[out].extend(_lying(outputs[a], outputs[b], t0))
            continue
        _, code, t0, t1, entry, out = task
        code, t0, t1, entry, lying = _walk_down(tree, seg, bit, code, t0, t1, entry, out, tasks)
        if lying is None:
            outputs[out].append((t0, bool(tree.solid[-1 - code] & bit), entry))
            continue
        front, back = lying
        a, b = len(outputs), len(outputs) + 1
        outputs += [[], []]
        tasks.append(("lying", a, b, t0, out))
        tasks.append(("walk", back, t0, t1, entry, b))
        tasks.append(("walk", front, t0, t1, entry, a))
    return outputs[0]


def _walk_down(tree: TreeLists, seg, bit, code, t0, t1, entry, out, tasks):
    """Follow one piece down to a leaf, or to a node whose plane it lies in (then `lying` is that
    node's (front, back)); straddled planes push the far half's walk onto `tasks` and shorten the
    piece to its near half: (code, t0, t1, entry, lying) where the walk stopped."""
    sx, sy, sz, dx, dy, dz = seg
    eps = TOUCH_EPSILON
    while code >= 0:
        p = tree.planes[code]
        nx, ny, nz = tree.normals[p]
        ds = nx * sx + ny * sy + nz * sz - tree.dists[p]
        dd = nx * dx + ny * dy + nz * dz
        d0, d1 = ds + t0 * dd, ds + t1 * dd
        front, back = tree.children[code]
        on0, on1 = -eps <= d0 <= eps, -eps <= d1 <= eps
        if on0 and on1:  # lying in the plane: solid where both children are (as _lying_pieces)
            return code, t0, t1, entry, (front, back)
        front0 = (d1 > 0) if on0 else (d0 > 0)
        near = 0 if front0 else 1
        if on0 and t0 == 0.0 and entry < 0 and not tree.solid_open((back, front)[near], sx, sy, sz, bit):
            entry = p ^ (1 - near)  # the start on this plane, open space on the other side
        if on1 or (d1 > 0) == front0:
            code = (front, back)[near]
            continue
        tm = min(max(-ds / dd, t0), t1)
        tasks.append(("walk", (back, front)[near], tm, t1, p ^ near, out))  # the far half, after
        t1 = tm
        code = (front, back)[near]
    return code, t0, t1, entry, None


def _lying(a: list, b: list, t0: float) -> list:
    """The pieces of a piece lying in a plane, from its children's pieces a (front) and b (back):
    solid where both are."""
    all_a, all_b = all(x[1] == a[0][1] for x in a), all(x[1] == b[0][1] for x in b)
    start_plane = a[0][2] if a[0][2] >= 0 else b[0][2]  # at the piece's start: front first
    if all_b and b[0][1]:
        return [(a[0][0], a[0][1], start_plane)] + a[1:]
    if all_a and a[0][1]:
        return [(b[0][0], b[0][1], start_plane)] + b[1:]
    if (all_a and not a[0][1]) or (all_b and not b[0][1]):
        return [(t0, False, start_plane)]
    return list(_both(a, b))


def _both(a: list, b: list):
    """Pieces solid where both piece lists are (both start at the same t).  A piece's plane is
    that of a list that changed there to the new state."""
    i = j = 0
    sa = sb = False
    while i < len(a) or j < len(b):
        t = min(a[i][0] if i < len(a) else np.inf, b[j][0] if j < len(b) else np.inf)
        changed = []
        if i < len(a) and a[i][0] == t:
            sa, i = a[i][1], i + 1
            changed.append((sa, a[i - 1][2]))
        if j < len(b) and b[j][0] == t:
            sb, j = b[j][1], j + 1
            changed.append((sb, b[j - 1][2]))
        both = sa and sb
        yield t, both, next((pl for st, pl in changed if st == both and pl >= 0), -1)


def find_first_transitions(tree, starts, ends, hull: int = 0,
                           counts: dict | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Listing 5 for many segments at once: (kind (N,) int8, t (N,), plane (N,) int64).

    The segments walk the tree in lock step (_lockstep).  Every value is computed as the single
    walk computes it (same operations in the same order), so the answers are bit-identical.
    Starts on a plane are finished in NumPy (_starts_on_planes), and so are pieces lying in a
    plane where one side is the same all along the piece (see _lockstep); the rest -- a piece in
    a plane with structure on both sides -- go to the open walk one by one.  With a `counts`
    dict (benchmarks) it also gives, per segment, the 'nodes' and 'leaves' the lock-step walk
    visited, and the loop's 'iterations'.
    """
    s = np.asarray(starts, dtype=np.float64).reshape(-1, 3)
    e = np.asarray(ends, dtype=np.float64).reshape(-1, 3)
    n = len(s)
    kind = np.full(n, RAY_E, dtype=np.int8)
    t_out = np.ones(n)
    plane_out = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return kind, t_out, plane_out
    keep_freed_pages()
    tree = as_tree(tree, hull)
    bit = 1 << hull
    solid_of_leaf = (np.asarray(tree.leaf_solid) & bit) != 0
    if tree.root < 0:  # a tree that is one leaf
        solid = bool(solid_of_leaf[-1 - tree.root])
        kind[:] = RAY_S if solid else RAY_E
        t_out[:] = 0.0 if solid else 1.0
        return kind, t_out, plane_out
    delta = e - s
    walk = _lockstep(tree.walk, solid_of_leaf, s, delta, np.arange(n), np.full(n, tree.root, dtype=np.int64),
                     np.zeros(n), np.ones(n), np.full(n, -1, dtype=np.int64), counts)
    kind[:], t_out[:], plane_out[:] = walk.kind, walk.t, walk.plane
    if walk.start_on:
        _starts_on_planes(tree, s, walk.start_on, walk.first, bit, kind, t_out, plane_out)
    if len(walk.open_walk):
        lists = tree.lists
        for i in walk.open_walk.tolist():
            seg = (float(s[i, 0]), float(s[i, 1]), float(s[i, 2]),
                   float(delta[i, 0]), float(delta[i, 1]), float(delta[i, 2]))
            kind[i], t_out[i], plane_out[i] = _fft_open(lists, seg, bit)
    return kind, t_out, plane_out


@dataclass
class _Walk:
    """What _lockstep found, per walked segment (indexed like its inputs)."""

    kind: np.ndarray  # RAY_E / RAY_S (no change along the piece), RAY_E2S / RAY_S2E
    t: np.ndarray
    plane: np.ndarray
    first: np.ndarray  # the state just after the piece's start
    start_on: list  # (segment, node, near side) where the start lies on a node's plane, path order
    open_walk: np.ndarray  # segments (ids) the open walk must finish


def _lockstep(arrays, solid_of_leaf, s, delta, ids, code, t0, t1, entry, counts=None, nested=False) -> _Walk:
    """Walk segments ids (rows of s, delta) from their nodes `code` over the pieces [t0, t1] with
    entry planes `entry`, all in lock step, to the first change of state along each piece.

    The registers (node, piece, entry plane, stack top, first state, the segment) are packed to
    the live segments: one iteration moves every segment from its node into the nearer child,
    with the far half pushed on the segment's own stack; segments that reach a leaf take it at
    once and pop until they stand at a node again.  Leaves are thus met in order along each
    segment: the first gives the state just after the piece's start, the first in the other
    state the change, at its t0 and entry plane.  A finished segment waits at the sink node (see
    core/runtime/tree.py WalkArrays) until a quarter of the registers are finished, then they are packed.

    A piece lying in a node's plane is solid where both children are (open solids).  Each child
    is walked over the piece first (_lying_pieces, a `nested` walk); where one child is solid all
    along, the piece is the other child's; where one is empty all along, the piece is empty; where
    both change along it, the open walk decides (the segment goes to open_walk).  _pieces decides
    the same.  A nested walk never nests again: a piece lying in a second plane (a segment along
    an edge) goes to the open walk, so the walk's depth of calls is bounded whatever the tree.
    """
    nx_, ny_, nz_, nd_, node_plane, children, depth, slot_entry = arrays
    sink = len(node_plane)
    eps = TOUCH_EPSILON
    n = len(ids)
    kind = np.full(n, RAY_E, dtype=np.int8)
    t_out = np.ones(n)
    plane_out = np.full(n, -1, dtype=np.int64)
    first_out = np.zeros(n, dtype=bool)
    # registers (reg = the walked segment's index here, row = its row of s and delta)
    reg = np.arange(n, dtype=np.int64)
    code, t0, t1, entry = code.copy(), np.asarray(t0, float).copy(), np.asarray(t1, float).copy(), entry.copy()
    first = np.full(n, -1, dtype=np.int8)
    rows = np.asarray(ids, dtype=np.int64)
    sx, sy, sz = s[rows, 0], s[rows, 1], s[rows, 2]
    dx, dy, dz = delta[rows, 0], delta[rows, 1], delta[rows, 2]
    # far halves: register i's stack entries are i, i + n, i + 2n, ... (level by level, so that
    # memory is touched only as deep as stacks grow), `top` its next free one.  A far half is
    # kept as its child slot (2 * node + side: the child and, by slot_entry, its entry plane) and
    # its t0; its t1 is the t0 of the entry below it, because a piece always ends where the top
    # far half starts.  The bottom entry holds slot -1 (the stack is empty when it is on top)
    # and the first piece's t1.
    st_slot = np.empty(n * depth, dtype=np.int64)
    st_t0 = np.empty(n * depth)
    st_slot[:n] = -1
    st_t0[:n] = t1
    st_t0[-n:] = 0.0  # never pushed to: the t1 an empty stack's pop reads (k - n wraps round)
    top = reg + n
    open_walk: list[np.ndarray] = []
    start_on: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    parked = 0
    state_of_code = solid_of_leaf[::-1].view(np.int8)  # a leaf's code -1 - leaf counts from the end
    if counts is not None:
        counts.update(nodes=np.zeros(n, dtype=np.int64), leaves=np.zeros(n, dtype=np.int64), iterations=0)
    while True:
        # -- segments at a leaf take it, then pop until they stand at a node (or are done)
        at_leaf = np.flatnonzero(code < 0)
        while len(at_leaf):
            if counts is not None:
                counts["leaves"][reg[at_leaf]] += 1
            state = state_of_code[code[at_leaf]]
            known = first[at_leaf]
            known = np.where(known < 0, state, known)  # the first leaf gives the first state
            first[at_leaf] = known
            changed = state != known
            if changed.any():  # the first change: a transition at the piece's start
                done = at_leaf[changed]
                r = reg[done]
                kind[r] = np.where(state[changed], RAY_E2S, RAY_S2E)
                t_out[r] = t0[done]
                plane_out[r] = entry[done]
                code[done] = sink
                parked += len(done)
                at_leaf = at_leaf[~changed]
            # pop; an empty stack pops its bottom's slot -1, which leads to the sink: parked with
            # no change (all empty, or all solid: written when the registers are packed)
            k = top[at_leaf] - n
            slot = st_slot[k]
            code[at_leaf], t0[at_leaf], t1[at_leaf], entry[at_leaf] = (children[slot], st_t0[k], st_t0[k - n],
                                                                       slot_entry[slot])
            top[at_leaf] = k
            parked += int(np.count_nonzero(slot < 0))
            at_leaf = at_leaf[code[at_leaf] < 0]
        if 4 * parked >= len(reg):  # pack the registers to the live segments
            first_out[reg] = first == 1  # a finished segment's last word on it
            parked_solid = reg[(code == sink) & (first == 1)]
            parked_solid = parked_solid[kind[parked_solid] == RAY_E]  # solid all along (no change)
            kind[parked_solid] = RAY_S
            t_out[parked_solid] = 0.0
            keep = np.flatnonzero(code != sink)
            reg, code, t0, t1, entry, top, first = (reg[keep], code[keep], t0[keep], t1[keep], entry[keep],
                                                    top[keep], first[keep])
            rows, sx, sy, sz, dx, dy, dz = rows[keep], sx[keep], sy[keep], sz[keep], dx[keep], dy[keep], dz[keep]
            parked = 0
        if not len(reg):
            break
        if counts is not None:
            counts["iterations"] += 1
            counts["nodes"][reg[code != sink]] += 1
        # -- every segment stands at a node: classify its piece, go to the near child
        nx, ny, nz = nx_[code], ny_[code], nz_[code]
        ds = nx * sx + ny * sy + nz * sz - nd_[code]
        dd = nx * dx + ny * dy + nz * dz
        d0 = ds + t0 * dd
        d1 = ds + t1 * dd
        front0 = d0 > 0
        front1 = d1 > 0
        on0 = np.abs(d0) <= eps
        on1 = np.abs(d1) <= eps
        lying = on_start = None
        if on0.any():  # an end of the piece on the plane takes the other end's side
            front0 = np.where(on0, front1, front0)
            lying = np.flatnonzero(on0 & on1)  # a piece lying in the plane
            on_start = np.flatnonzero(on0 & ~on1 & (t0 == 0.0))  # the start on the plane
        cross = front0 != front1
        if on1.any():
            cross &= ~on1
        near = (~front0).view(np.int8)
        if on_start is not None and len(on_start):  # in path order, for the start's own state
            start_on.append((rows[on_start], code[on_start], near[on_start]))
        slot = 2 * code + near
        ci = np.flatnonzero(cross)
        if len(ci):  # the far half waits on the stack; dd != 0 where the plane is crossed
            t0c, t1c = t0[ci], t1[ci]
            tm = np.minimum(np.maximum(-ds[ci] / dd[ci], t0c), t1c)
            k = top[ci]
            st_slot[k] = slot[ci] ^ 1  # the far child, entered through the plane's face toward the near side
            st_t0[k] = tm
            top[ci] = k + n
            t1[ci] = tm
        nodes = code
        code = children[slot]
        if lying is not None and len(lying):
            if nested:
                hand = np.arange(len(lying))
            else:
                go, hand, sub_starts = _lying_pieces(arrays, solid_of_leaf, s, delta, rows[lying], nodes[lying],
                                                     t0[lying], t1[lying], entry[lying])
                code[lying] = go
                start_on.extend(sub_starts)  # a start on a plane in either child counts (front first)
            if len(hand):
                hand = lying[hand]
                open_walk.append(rows[hand])
                code[hand] = sink
                parked += len(hand)
    return _Walk(kind, t_out, plane_out, first_out, start_on,
                 np.concatenate(open_walk) if open_walk else np.zeros(0, dtype=np.int64))


def _lying_pieces(arrays, solid_of_leaf, s, delta, rows, nodes, t0, t1, entry) -> tuple[np.ndarray, np.ndarray, list]:
    """Pieces lying in their node's plane: where to go on (the child to follow, or a leaf of
    the piece's one state), which must go to the open walk (indices into the inputs), and the
    starts on a plane both children's walks met (front child first)."""
    children = arrays[5]
    front, back = children[2 * nodes], children[2 * nodes + 1]
    walks = [_lockstep(arrays, solid_of_leaf, s, delta, rows, c, t0, t1, entry, nested=True) for c in (front, back)]
    uniform = [(w.kind <= RAY_S) & ~np.isin(rows, w.open_walk) for w in walks]
    solid = [w.kind == RAY_S for w in walks]
    any_empty = np.flatnonzero(~solid_of_leaf)
    empty_leaf = -1 - int(any_empty[0]) if len(any_empty) else -1
    go = np.full(len(rows), -1, dtype=np.int64)
    decided = np.zeros(len(rows), dtype=bool)
    for mask, value in ((uniform[1] & solid[1], front), (uniform[0] & solid[0], back),
                        ((uniform[0] & ~solid[0]) | (uniform[1] & ~solid[1]), np.full(len(rows), empty_leaf))):
        pick = mask & ~decided
        go[pick] = value[pick]
        decided |= pick
    return go, np.flatnonzero(~decided), walks[0].start_on + walks[1].start_on


def _starts_on_planes(tree, s, start_on, first_leaf, bit, kind, t_out, plane_out) -> None:
    """Finish segments that start on a node's plane (what _fft_open does for one): the walk went
    on along the side the segment moves into, so its answer holds for the state just after the
    start.  Where the start's own (open) state differs -- it touches a solid the segment goes
    into -- the answer is a transition at t = 0 through the first plane on the start's path with
    open space across it at the start."""
    rays = np.concatenate([r for r, _, _ in start_on])
    nodes = np.concatenate([c for _, c, _ in start_on])
    near = np.concatenate([k for _, _, k in start_on])
    flagged = np.unique(rays)
    arrays = tree.walk
    differs = solid_open_batch(arrays, tree.leaf_solid, s[flagged], np.full(len(flagged), tree.root), bit)
    differs = flagged[differs != first_leaf[flagged]]
    if not len(differs):
        return
    mine = np.isin(rays, differs)
    rays, nodes, near = rays[mine], nodes[mine], near[mine]
    node_plane, front_back = arrays[4], arrays[5]
    other = front_back[2 * nodes + 1 - near]
    across_open = ~solid_open_batch(arrays, tree.leaf_solid, s[rays], other, bit)
    rays, nodes, near = rays[across_open], nodes[across_open], near[across_open]
    hit_rays, first_rec = np.unique(rays, return_index=True)  # records are in path order
    plane = node_plane[nodes[first_rec]] ^ (1 - near[first_rec])  # facing the open side
    kind[hit_rays] = np.where(first_leaf[hit_rays], RAY_E2S, RAY_S2E)
    t_out[hit_rays] = 0.0
    plane_out[hit_rays] = plane


def solid_open_batch(arrays, leaf_solid, points, codes, bit: int) -> np.ndarray:
    """solid_open for many points at once, each from its own start code (a node, or -1 - leaf):
    a point within TOUCH_EPSILON of a plane goes down both sides and is solid only if every leaf
    it reaches is.  `arrays` is the tree's walk form (Tree.walk)."""
    nx_, ny_, nz_, nd_, _, children = arrays[:6]
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    solid = np.ones(len(pts), dtype=bool)
    who = np.arange(len(pts))
    code = np.asarray(codes, dtype=np.int64).copy()
    leaf_bits = (np.asarray(leaf_solid) & bit) != 0
    while len(who):
        at_leaf = code < 0
        if at_leaf.any():
            empty = ~leaf_bits[-1 - code[at_leaf]]
            solid[who[at_leaf][empty]] = False
            who, code = who[~at_leaf], code[~at_leaf]
            if not len(who):
                break
        p = pts[who]
        d = nx_[code] * p[:, 0] + ny_[code] * p[:, 1] + nz_[code] * p[:, 2] - nd_[code]
        on = np.abs(d) <= TOUCH_EPSILON
        side = (d <= 0).astype(np.int64)  # (off the plane: d > 0 front, d < 0 back)
        nxt = children[2 * code + side]
        if on.any():  # both sides: the front child too
            who = np.concatenate([who, who[on]])
            nxt = np.concatenate([np.where(on, children[2 * code + 1], nxt), children[2 * code[on]]])
        code = nxt
    return solid


def trace_hulls(level, starts, ends, hull: int = 0, retry: bool = True, backend: str = "numpy") -> Hits:
    """Swept traces of a hull's reference point through the level's tree for that hull (point
    tree for hull 0, onion tree for box hulls; or a Tree as given).  With `retry`, a start found
    solid gets the robustness retry (module docstring).  backend "c": the C run-time
    (core/runtime/cruntime.py; a level, not a Tree), the same answers."""
    if backend != "numpy":
        check_backend(backend)
        if isinstance(level, Tree):
            raise ValueError("the C backend traces a level (CompiledLevel), not a Tree")
        level.collision_tree(hull)  # the typed UnknownHullError, as the NumPy path gives
        return c_level(level).trace(starts, ends, hull=hull, retry=retry)
    tree = as_tree(level, hull)
    s = np.asarray(starts, dtype=np.float64).reshape(-1, 3)
    e = np.asarray(ends, dtype=np.float64).reshape(-1, 3)
    kind, t, plane = find_first_transitions(tree, s, e, hull)
    start_solid = (kind == RAY_S) | (kind == RAY_S2E)
    hit_t = np.where(kind == RAY_E2S, t, np.where(start_solid, 0.0, 1.0))
    hit_plane = np.where(kind == RAY_E2S, plane, -1)
    if retry and start_solid.any():
        idx = np.flatnonzero(start_solid)
        delta = e[idx] - s[idx]
        length = norm(delta, axis=1)
        moving = length > 0
        idx, delta, length = idx[moving], delta[moving], length[moving]
        back = s[idx] - RETRY_BACKOFF * delta / length[:, None]
        k2, t2, p2 = find_first_transitions(tree, back, e[idx], hull)
        touching = (k2 == RAY_E2S) & _within_backoff(t2, length)
        ok = idx[touching]
        start_solid[ok] = False
        hit_plane[ok] = p2[touching]
        hit_t[ok] = 0.0
    point = np.where(hit_t[:, None] >= 1.0, e, s + hit_t[:, None] * (e - s))  # a miss ends exactly at e
    normal = np.zeros((len(s), 3))
    has = hit_plane >= 0
    normal[has] = tree.plane_normals[hit_plane[has]]
    return Hits(hit_t, point, normal, hit_plane, start_solid, hit_t < 1.0)


def _within_backoff(t, length):
    """Did the retry from RETRY_BACKOFF back hit within the back-off (the start was touching)?
    t is along the retried segment of length + RETRY_BACKOFF; RETRY_SLACK absorbs its rounding."""
    return t * (length + RETRY_BACKOFF) <= RETRY_BACKOFF * (1 + RETRY_SLACK) + RETRY_SLACK_ABS


def trace_hull(level, start, end, hull: int = 0, retry: bool = True) -> Hit:
    """One swept trace (plain Python walk over the tree's cached list form)."""
    tree = as_tree(level, hull)
    s = np.asarray(start, dtype=np.float64)
    e = np.asarray(end, dtype=np.float64)
    tr = find_first_transition(tree, s, e, hull)
    if tr.kind in (RAY_S, RAY_S2E):
        delta = e - s
        length = float(norm(delta))
        if retry and length > 0:
            back = s - RETRY_BACKOFF * delta / length
            tr2 = find_first_transition(tree, back, e, hull)
            if tr2.kind == RAY_E2S and _within_backoff(tr2.t, length):
                return Hit(0.0, s.copy(), np.array(tree.lists.normals[tr2.plane]), tr2.plane, False, True)
        return Hit(0.0, s.copy(), np.zeros(3), -1, True, True)
    if tr.kind == RAY_E2S:
        return Hit(tr.t, s + tr.t * (e - s), np.array(tree.lists.normals[tr.plane]), tr.plane, False, True)
    return Hit(1.0, e.copy(), np.zeros(3), -1, False, False)
