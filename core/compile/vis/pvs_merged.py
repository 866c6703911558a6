"""The full portal flow ('flow'), with merged states: Quake's RecursiveLeafFlow, but each chain of
portals from a source portal s that reaches portal q is merged into one state (s, q), so the work
grows with the number of (source, portal) pairs seen instead of with the number of chains.

Quake's vis follows every chain s -> q1 -> ... -> qn separately; in an open area the chains are
counted in millions, which is why its full vis takes minutes on big maps (and why the old path
flow here needed a budget that made it loose).  Here a state (s, q) holds a *pass polygon* P(s, q):
a convex part of portal q through which every unobstructed line from s along any chain to q
crosses q.  P is stored as a k-DOP on q's plane (the largest extent of the polygon along K fixed
directions in that plane), so merging the chains that reach q is an elementwise max, and the
polygon is q clipped by those K half-planes.

Expanding a state (s, r) with pass P(s, r), for every portal q leaving r's cluster (Quake's steps):
  target  = q clipped to the front of s's plane;
  source  = s clipped to the back of r's plane;
  target is clipped by the separating planes of (source, P(s, r)), both ways round
            (core/compile/vis/pvs_winding.py: ClipToSeperators and its flipped form; Quake tries
            every (edge, vertex) plane, here each edge tries only the two vertices at the angular
            extremes about its line, which gives the same planes but for near-duplicates:
            tangent_planes' docstring argues it, tests/core/test_pvs_separators.py checks it);
  a target left non-empty: s sees q's cluster, and P(s, q) grows to hold it.
Cost (2026-11-25, bench/pvs.py --modes flow --jobs 1, load ~1.2): the separators by the angular
extremes instead of Quake's trial of every (edge, vertex) plane, the planes shared by a state's
targets, and the tests, clips and k-DOP extents laid out vertex-major (NumPy reduces a small
trailing axis many times slower than a leading one) took lq_e0m3 from 31.9 to 18.2 CPU s and
lqdm13 from 74.9 to 39.9 (e3m4, its portals run directly: 10.0 -> 5.4), with the same
rows bit for bit (the states expanded too, but for 55 of 2.66M on lqdm13, where targets clipped
without Quake's near-duplicate planes round differently in the last bits and a k-DOP grows once
more or less); about 15 us a state expanded with its targets.
A state whose P grew waits to be expanded again (a worklist, in batches).  After MAX_GROWTH
growths a state takes the whole of q (it can then grow no more), which bounds the work.  The bound
is a safety net: most states grow a few times (lq_e0m3: 57% once, 27% twice, 10% three times), a
rare few creep up by the clip margin round a cycle of portals until they reach it (most growths of
any state: lqdm13 38, lq_e0m3 25, e3m4 15; a cap of 64 gives the same rows on lqdm13).  A lower cap
(it was 4) makes the flow looser at no saving, since a state given its whole portal sends looser
targets on, which grow their states the more (with the AND below, cap 4 against 32: lqdm13 358.8
against 350.2 leaves, lq_e0m3 118.9 against 118.2, e3m4 781.0 against 780.2).

Which waiting states go first: each step expands, of each source's waiting states, the ORDER_K
whose portals come nearest the source's plane (the least distance of a vertex).  A line of sight
crosses its portals ever farther from the source's plane, so a state tends to be expanded after the
chains that reach it have all merged into it, instead of once per growth as a breadth-first
frontier does (lq_e0m3: 933k distinct states took 1.56M expansions breadth first, 1.21M by the
portals' centres, eight a step).  One a step, by the nearest vertex (2026-12-02, the C kernel, two
jobs; before: eight a step by the centre): states expanded slab_2000 2.05M -> 1.63M (1.50M
distinct), tiled_1500 764k -> 616k, slope 353k -> 294k (229k distinct), lq_e0m3 1.28M -> 1.15M,
lqdm13 2.53M -> 2.28M, e3m4 471k -> 422k, e1m7 312k -> 278k; the flow's seconds 1.59-1.75 ->
1.43-1.48, 0.56-0.59 -> 0.47-0.50, 0.22 -> 0.19-0.20, 0.93 -> 0.84, 1.93 -> 1.67-1.73, 0.34 -> 0.32,
0.20 -> 0.19.  One a step alone (by the centre) gave slab 1.66M, tiled 630k, slope 333k; the
nearest vertex of the state's pass polygon instead of its portal's, more states and slower.  The
NumPy reference takes one state per source a step, so its steps are more (e1m7 2.2 -> 3.9 s): the
C has no cost per step.  The order is each source's own, so a source's states never depend on
which sources share its batches or its wave.  The order changes which children the 'more' test
prunes, not what is sound: clusters seen per cluster 146.311 -> 146.325 on slab_2000, 113.249 ->
113.254 on tiled_1500, 78.984 -> 78.982 on e3m4, 289.311 -> 289.307 on lqdm13, 144.829 -> 144.803
on slope, the same on lq_e0m3 and e1m7.  A state's k-DOP, might set and growths live in a slot made
when it is first reached (slot[w, q]): a source reaches a few hundred of its D portals, so the
slots take a small part of the dense (W, D, ...) tables they replace, and a wave holds up to
WAVE_SOURCES sources, which keeps the batches large while each source takes only ORDER_K states
a step.

Why it never loses a line of sight (the invariant, by induction over a line's portals): a line L
from s through portals q1 ... qn crosses q1 inside (q1 in front of s) = P(s, q1); crossing qi
inside P(s, qi) and s inside (s behind qi's plane), L lies in front of every separator of that
pair, so it crosses q(i+1) inside the clipped target, which P(s, q(i+1)) holds.  Merging only
grows P (a k-DOP of a union holds the union); clips keep FLOW_CLIP_MARGIN on the kept side.

Pruning, all conservative, as in Quake:
- might: q is entered only if the fast mode's flood lets s see q (BasePortalVis + flood), and
  only if q's cluster is in the state's might set: Quake's chain of ANDs, s's flood & the test
  row of every portal passed (a portal's test row: its flood, or its final row once its own
  flow is done -- sources go in waves, fewest flood bits first, as Quake orders them); merged
  chains OR their might sets, and a state whose might set grew is expanded again;
- more: a portal whose cluster s already sees, through which s could see nothing it does not
  already see (the child's might set, cluster bits), is not entered;
- the way back (not in Quake): q is entered only if the test row of rev(q) (q reversed: its
  flood, or its final row once done) holds s's own cluster A, or q leaves A itself.  Why: a clear
  segment from a point a of A that leaves A through s and later crosses q, read backwards from
  where it crosses q, is a clear segment that crosses rev(q) into the cluster q leaves and goes on
  to a; rev(q)'s row holds every cluster such a segment reaches, except the one rev(q) enters
  (which the exception covers), so it holds A.

The C kernel (runtime_c/compiler/vis_flow.c, through flow_c.py; the bake's default where it
builds) runs each source's whole flow as _Wave does for one source: a source's states never read
another source's, a step's expansions read the state as the step began (its k-DOPs, might sets and
the clusters seen) and its growths merge by max and OR, so the expansions' order inside a step
does not matter; the waiting states are a heap on (key, order queued), the reference's stable
sort of [still waiting, newly grown in portal order].  Every sum is written term for term as here
(x, y, z in order; no fused multiply-adds), so its rows, states expanded and growths are these, bit
for bit (tests/core/test_pvs_flow_c.py).  2026-11-29, one job, loaded machine: lq_e0m3 2.41 CPU s
against 24.4 here, e3m4 0.91 against 9.3 (about 2 us a state with its targets; profile: tangent
planes 30%, clips 17%, children and more-tests 22%, extents 12%, merging 9%).

The rows are per source portal and per cluster; a cluster's row is the OR of its portals' rows, its
neighbours and itself.  The PVS is the AND of the rows both ways round (A sees B only if A's row
holds B and B's row holds A).  Why this loses nothing: every clear segment from a point of A to a
point of B leaves A through some portal s of A (its first crossing out of A; a segment that never
leaves A joins A to itself), and from there is a line of sight along a chain of portals into B, so
B is in s's row and thus in A's (the invariant above; the pruning drops only chains no segment
follows); the same segment read from b to a puts A in B's row.  So each direction's row holds
every truly visible pair, and so does their intersection (the rows were made symmetric by OR
before; the AND lets each direction's merging looseness be cut by the other's).  For this each
row must hold every cluster its own flow reaches: so a source's row is no longer seeded with the
clusters of earlier sources that saw rev(s) -- the 'more' test trusted those bits and skipped
the portals leading only to them, so the row held them only by the seed, from the other
direction.

Tried and dropped: flowing from each cluster at once (its exits merged into one source, separators
tangent to the union of the exits): lq_e0m3 1.22M states against 1.41M here, but each dearer
(112 s against 47 s CPU) and looser (134.6 leaves against 125.0): the portals of a cluster look
into different places, so their states hardly overlap.  Keeping each state's part of the source
too (a k-DOP in s's plane, clipped behind every portal passed, as Quake clips its source): no
tighter on lq_e0m3 (125.08 leaves against 125.04), 11% slower.  One separator per edge, found as the
plane through the edge tangent to the other polygon (angles about the edge, Ms * Mp work instead of
Quake's Ms * Mp * (Ms + Mp)): 30% faster, but 2% looser (127.7 leaves), because it drops the
planes through vertices that adjacent portals share, which Quake's trial of every vertex keeps.
(What is used now, pvs_winding.tangent_planes, is that idea done so as to lose nothing: two
candidates per edge, the least and the greatest angle about the edge's line, with the vertices on
the line left out of the search, each put to Quake's own test; every plane kept is one of Quake's,
and the rows are the same bits.)
Might sets of portals (Quake's own, D bits a state) instead of clusters: a little tighter (124.7
leaves against 125.0) but 1.61M states against 1.41M (the 'more' test prunes less on portal bits)
and 35% slower.  Larger k-DOPs and more growths (16 directions, 8 growths) on lqdm13: 369 leaves
against 398, 47% slower.  Quake's source narrowing per chain (its test levels 3 and 4), with each
state's source part kept as a k-DOP in s's plane merged by max like the pass, the child's source
the parent's clipped behind q and by the separators of (target, pass) both ways round, and the
target also clipped to the front of the pass portal's plane: lqdm13 395.8 leaves against 397.5,
189 s CPU against 74; lq_e0m3 125.04 against 125.04, 78 s against 31 (the separators of (target,
pass) are per child, not per state, and the merge of the sources from many chains is as loose as
that of the passes).  Filtering each source's might set by the transposed cluster rows (clusters
whose row holds A): no tighter than the way-back test alone (358.77 against 358.78 on lqdm13).
Measured before the two-way AND: no growth cap at all: 378 leaves on lqdm13, so on lqdm13 the merge itself, not
the cap, is what is loose.  Fewer growths on lq_e0m3 (2 or 1): 2% or 7% fewer states, 130.8 or
135.8 leaves against 125.0.  Waves a quarter the size (more finished test rows for later
sources): 1.3995M states against 1.407M.  Seeding each source's seen set (what the 'more' test
reads) with clusters that rays show it sees (7.4M rays from sample points on the source to
sample points on every portal of its flood; they find 74% of the final rows' bits): only 8% fewer
states, because the test prunes a child only when every cluster of its might set is already
seen, and one missing bit keeps it.  Even the final rows themselves as seeds (an oracle: they
are the answer) leave 0.55M states, 2.6x fewer, the bound of any seeding; seeding with the
source cluster's row instead of the portal's is worse (1.80M states), because those rows, kept as
test rows, widen later sources' might sets.
Also with cap 4: narrowing the test rows between waves (a portal t's row kept only where the
clusters seen hold src(t) and dst(t) both ways) and the way-back test also for the cluster before
the pass portal: 358.05 leaves; a second pass started from the first pass's rows: 356.0 at 1.9
times the CPU.
Waves that overlap (2026-11-25, third session): wave k reading the final rows of the waves up to
k - 2 only, from one of two copies of the rows, so that wave k + 1 starts while wave k still runs
and no worker waits at a wave's end for the slower part: lqdm13 at two jobs 20.85 and 20.73 s
wall against 19.91 and 19.95 (runs alternated, load 1.1-1.9), 2.68M states against 2.66M (fewer
finished rows to prune by) and 351.3 leaves against 350.4; the wait it removes is small.
Fifth session of 2026-11-25 (lq_e0m3, one job, load 0.2-1.0; here 1,207,130 states, 118.248
leaves, 11.4 CPU s):
- Clusters known unseen counted as seen: for a source leaving A, every cluster B whose row is
  final (all portals leaving B done) and lacks A joins what the 'more' test reads (no clear
  segment joins A and B, so the flow from A need not look for B): 1,205,702 states, the same
  leaves, the same CPU.  The way-back test already refuses, portal by portal, every entry into such
  a B, so the clusters it adds are almost never the last unseen bit of a child's might set.
- The AND by portals instead of clusters: A and B kept only if some portal s leaving A and t
  leaving B have each reached the other's reverse (a clear segment leaves A first through s and
  enters B last through rev(t), so the flow from s reaches rev(t) and, read backwards, the flow
  from t reaches rev(s)); a child the 'more' test drops counted as reaching every portal into
  its might set.  16 cluster pairs fewer (118.233 leaves), 2 CPU s more; with the 'more' test off,
  so that the portals reached are exact, 24 pairs fewer (118.225) for 1.53M states; on lqdm13 158
  pairs fewer (350.52 leaves against 350.99).  The looseness is inside each direction's pass
  polygons, not in how the two directions are joined.
- Fewer k-DOP directions (cheaper pass polygons, separators and extents): 4 directions (a
  rectangle) 1.17M states, 9.7 CPU s, 119.7 leaves; 3: 10.3 s, 123.5; 6: 11.0 s, 120.5; on lqdm13
  4 directions take 25.4 CPU s against 29.5 and give 363.9 leaves against 351.0.  A sixth
  off the CPU, and looser where the flow is already loosest: 8 stays.
- Finer portals (lqdm13): every portal cut in halves along its longest chord until none is longer
  than 16 m (1,765 portals -> 4,109, same clusters), so each pass polygon covers a smaller piece
  and each source is narrower: 346.1 leaves against 351.0, at 458 CPU s against 29.5 (16.0M
  states).  With 16 k-DOP directions (342.6 at 1.4x) and a second pass (356 at 1.9x, above),
  every tighter variant measured on lqdm13 costs far more than the 8% between its flow (17.5-18.6
  s) and ericw's 20.2 s.
- Better bounds and orders for states: the final rows themselves as every portal's might and test
  row from the start (an oracle) leave 1,134,603 states, 6% fewer, so a tighter might set from any
  cheaper first pass cannot pay for itself; waiting states taken most-unseen-first (the clusters
  of the state's might set not yet seen, then the distance) instead of nearest-first: 1,117,855
  states (7% fewer), the same rows, the same CPU (the key costs what the states save).
- Where the work ends: 39% of the 3.55M targets are emptied by the separators, and 12% of the
  states with children lose all of them, so a cheap test that spared a dead state its separators
  would save at most about a tenth of them.
"""

from __future__ import annotations

import os

import numpy as np

from ...errors import CancelledError
from ...tolerances import FLOW_CLIP_MARGIN, FLOW_MIN_NORMAL, FLOW_PLANE_EPSILON
from .pvs_flow import DirectedPortals, PortalFlood, and_transpose, as_portal_flood
from .pvs_winding import MAX_WINDING, centres, clip_front, packed_separators
from .wave_jobs import WaveRunner, can_fork, default_jobs, shared_array

#: directions of a pass polygon's k-DOP (in its portal's plane, evenly spaced)
KDOP_DIRECTIONS = 8
#: growths after which a state takes its whole portal (bounds the re-expansions; stats
#: 'most_growths' reports the most any state needed)
MAX_GROWTH = 32
#: states expanded together in one batch
STATE_BATCH = 4096
#: each step expands, of each source's states waiting, the ORDER_K whose portals come nearest its
#: plane (see _Wave.run and the module docstring)
ORDER_K = 1
#: a waiting state's distance from its source's plane (its portal's nearest vertex), in whole steps
#: of this (m), ranks it (see wait_keys); an exact grid, the same for every source
WAIT_KEY_STEP = 2.0 ** -10
#: a k-DOP extent that grows by less than this (m) is not a growth
GROWTH_EPSILON = 1e-9
#: threads that share a wave at most (more than the cores only adds memory)
MAX_JOBS = 8
#: bytes the per-wave table of state slots may take (sets how many sources go in one wave)
WAVE_BYTES = 32 << 20
#: sources a thread of the C kernel takes at a time (a wave's threads take parts as they come free)
KERNEL_PART = 8
#: sources in one wave at most.  Larger waves make larger batches for each worker (a worker takes
#: 1 / jobs of a wave) but fewer finished rows to prune by: 1024 against 512 at two jobs
#: (2026-11-25, runs alternated, load 0.3-1.8): lqdm13 18.2 and 18.0 s against 19.4 and 19.0,
#: 2.67M states against 2.66M, 350.99 leaves against 350.38; lq_e0m3 6.8 and 7.0 s against 7.9 and
#: 7.3, 118.25 leaves against 118.18; 2048: lq_e0m3 7.0 and 6.8 s, 118.36 leaves
WAVE_SOURCES = 1024


def kernel_constants() -> dict:
    """The flow's constants as the C kernel takes them (one source of truth: this module's)."""
    return dict(clip_margin=FLOW_CLIP_MARGIN, plane_epsilon=FLOW_PLANE_EPSILON, min_normal=FLOW_MIN_NORMAL,
                growth_epsilon=GROWTH_EPSILON, wait_key_step=WAIT_KEY_STEP, max_growth=MAX_GROWTH,
                order_k=ORDER_K, max_winding=MAX_WINDING)


def kdop_directions(dp: DirectedPortals) -> np.ndarray:
    """(D, K, 3) unit directions in each portal's plane, evenly spaced round its normal."""
    n = dp.normal
    helper = np.where(np.abs(n[:, 0:1]) < 0.6, np.array([[1.0, 0.0, 0.0]]), np.array([[0.0, 1.0, 0.0]]))
    u = _cross(n, helper)
    u /= np.sqrt(u[:, 0] ** 2 + u[:, 1] ** 2 + u[:, 2] ** 2)[:, None]
    v = _cross(n, u)
    ang = 2.0 * np.pi * np.arange(KDOP_DIRECTIONS) / KDOP_DIRECTIONS
    return np.cos(ang)[None, :, None] * u[:, None, :] + np.sin(ang)[None, :, None] * v[:, None, :]


def _cross(a, b):
    return np.stack([a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1], a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
                     a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]], axis=1)


def _by_count(n: np.ndarray):
    """(m, rows) for each vertex count m > 0 of the rows, in increasing m, rows in order."""
    by_count = np.argsort(n, kind="stable")
    sizes = n[by_count]
    bounds = np.flatnonzero(np.concatenate(([True], sizes[1:] != sizes[:-1], [True])))
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        if sizes[lo] > 0:
            yield int(sizes[lo]), by_count[lo:hi]


def extents(w: np.ndarray, n: np.ndarray, dirs: np.ndarray) -> np.ndarray:
    """(B, K): the largest d_k . x over each row's vertices (summed x, y, z in order); -inf for an
    empty row.  The rows go by vertex count (no padding vertex is ever used) and each block runs
    vertex major, (m, R, K), so the largest reduces the leading axis (a small trailing axis
    reduces many times slower)."""
    out = np.full((len(n), dirs.shape[1]), -np.inf)
    if not len(n):
        return out
    for m, rows in _by_count(n):
        x = np.ascontiguousarray(w[rows, :m].transpose(2, 1, 0))[:, :, :, None]  # (3, m, R, 1)
        d = np.ascontiguousarray(dirs[rows].transpose(2, 0, 1))  # (3, R, K)
        out[rows] = (x[0] * d[0] + x[1] * d[1] + x[2] * d[2]).max(axis=0)
    return out


def pass_polygons(dp: DirectedPortals, r: np.ndarray, h: np.ndarray, dirs: np.ndarray, full: np.ndarray):
    """Each portal r clipped to its k-DOP h (only by the half-planes that cut it)."""
    w, n = dp.windings[r], dp.count[r].copy()  # fresh copies: changed in place
    for k in range(dirs.shape[1]):
        rows = np.flatnonzero((h[:, k] < full[r, k]) & (n > 0))
        if not len(rows):
            continue
        sub = w[rows]
        cw, cn = clip_front(sub, n[rows], -dirs[r[rows], k], -h[rows, k])
        if cw is sub:  # nothing cut
            continue
        if cw.shape[1] > w.shape[1]:
            w = _widen(w, cw.shape[1])
        w[rows] = 0.0
        w[rows, : cw.shape[1]] = cw
        n[rows] = cn
    return w, n


def _widen(w, m):
    out = np.zeros((w.shape[0], m, 3))
    out[:, : w.shape[1]] = w
    return out


def _cut_tests(target, nt, normal, dist, counts, plane_row):
    """(cuts (B, S): plane j has a vertex of row b behind it, culled (B,): some plane has every
    vertex of the row behind it), over live planes only.  The rows go by vertex count and the
    (row, plane) pairs are listed, so no padding vertex or padding plane is ever tested (the
    padded (B, S, M) table did about 3.7 times the work).  Vertex major, (m, pairs), so the tests
    reduce the leading axis (a small trailing axis reduces several times slower).  Row i's planes
    are those of plane row plane_row[i]; counts are per row."""
    b, s = len(nt), normal.shape[1]
    cuts = np.zeros((b, s), dtype=bool)
    culled = np.zeros(b, dtype=bool)
    live = (np.arange(s)[None, :] < counts[:, None]) & (nt > 0)[:, None]
    for m, rows in _by_count(nt):
        pr, pc = np.nonzero(live[rows])
        if not len(pr):
            continue
        rr = rows[pr]
        w = np.ascontiguousarray(target[rows, :m].transpose(2, 1, 0))  # (3, m, R)
        flat = plane_row[rr] * s + pc
        nrm = np.take(normal.reshape(-1, 3), flat, axis=0).T
        d = (nrm[0] * np.take(w[0], pr, axis=1) + nrm[1] * np.take(w[1], pr, axis=1)
             + nrm[2] * np.take(w[2], pr, axis=1)) - np.take(dist.reshape(-1), flat) \
            + FLOW_CLIP_MARGIN  # (m, P), summed x, y, z in order
        behind = d < 0
        cuts[rr, pc] = behind.any(axis=0)
        culled[rr[behind.all(axis=0)]] = True
    return cuts, culled


def clip_by_cutting(target, nt, normal, dist, counts, plane_row=None):
    """Clip each target row to the front of its planes [0, counts[row]).  Only the (row, plane)
    pairs where the plane cuts the row are clipped, one cutting plane of every row per pass (the
    same result as clipping by all of them in order: a plane that does not cut a polygon does not
    cut any part of it); a plane with the whole row behind it empties the row.  `plane_row`: row
    i's planes are row plane_row[i] of (normal, dist, counts) (targets share their state's
    planes, which are then never copied per target); None: row i's own."""
    if not len(nt):
        return target, nt
    if plane_row is None:
        plane_row = np.arange(len(nt))
    s = normal.shape[1]
    cuts, culled = _cut_tests(target, nt, normal, dist, counts[plane_row], plane_row)
    nt = np.where(culled, 0, nt)
    rows = np.flatnonzero(cuts.any(axis=1) & ~culled & (nt > 0))
    if not len(rows):
        return target, nt
    sub_cuts = cuts[rows]
    per = sub_cuts.sum(axis=1)
    # each row's cutting planes, left-packed in their order
    plane_order = np.argsort(~sub_cuts, axis=1, kind="stable")[:, : int(per.max())]
    base = plane_row[rows] * s  # row's planes in the flat (planes, 3) table
    flat_n, flat_d = normal.reshape(-1, 3), dist.reshape(-1)
    # the rows still being cut, compacted as they finish (no copy of the whole batch per pass)
    act = np.arange(len(rows))
    w, n = target[rows], nt[rows]
    done = []
    for j in range(plane_order.shape[1]):
        stay = (per[act] > j) & (n > 0)
        if not stay.all():
            done.append((act[~stay], w[~stay], n[~stay]))
            act, w, n = act[stay], w[stay], n[stay]
        if not len(act):
            break
        k = base[act] + plane_order[act, j]
        w, n = clip_front(w, n, np.take(flat_n, k, axis=0), np.take(flat_d, k))
    done.append((act, w, n))
    width = max([target.shape[1]] + [c[1].shape[1] for c in done])
    out = np.zeros((len(nt), width, 3))
    out[:, : target.shape[1]] = target
    nt = nt.copy()
    for a, cw, cn in done:
        out[rows[a]] = 0.0
        out[rows[a], : cw.shape[1]] = cw
        nt[rows[a]] = cn
    return out, nt


def separators_by_size(sw, sn, pw, pn, rows_per_bucket: int = 512):
    """packed_separators over rows sorted by (source, pass) vertex counts, each bucket trimmed to its
    own widths (the work grows with Ms * Mp: padding to the batch's widest costs more than the
    extra calls; 512 rows a bucket measured best against 256 and 1024).  Same planes as
    packed_separators, columns padded to the widest."""
    b = len(sn)
    order = np.argsort(sn * 1024 + pn, kind="stable")
    parts = []
    for i in range(0, b, rows_per_bucket):
        rows = order[i: i + rows_per_bucket]
        ms, mp = max(int(sn[rows].max()), 1), max(int(pn[rows].max()), 1)
        parts.append((rows, packed_separators(sw[rows, :ms], sn[rows], pw[rows, :mp], pn[rows])))
    width = max(p[1][0].shape[1] for p in parts) if parts else 1
    normal, dist, count = np.zeros((b, width, 3)), np.zeros((b, width)), np.zeros(b, dtype=np.int64)
    for rows, (n_, d_, c_) in parts:
        normal[rows, : n_.shape[1]] = n_
        dist[rows, : d_.shape[1]] = d_
        count[rows] = c_
    return normal, dist, count


def _group_reduce(ufunc, a, starts):
    """ufunc.reduceat(a, starts, axis=0), reducing only the groups of more than one row (most
    states get one target a step; reduceat's cost is per row)."""
    sizes = np.diff(np.append(starts, len(a)))
    out = a[starts]
    multi = np.flatnonzero(sizes > 1)
    if len(multi):
        ms = sizes[multi]
        offset = np.cumsum(ms) - ms
        rows = np.repeat(starts[multi] - offset, ms) + np.arange(int(ms.sum()))
        out[multi] = ufunc.reduceat(a[rows], offset, axis=0)
    return out


def wait_keys(w: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """int64 sort keys of waiting states: the source's index w in the wave, then the distance (m)
    of the state's portal (its nearest vertex) from the source's plane on the WAIT_KEY_STEP grid (clamped to
    [0, 2**20) m).  Integers, so a source's states rank the same whatever its index (a float key
    w * stride + dist would round dist more coarsely for larger w, and two sources sharing a wave
    could order the same states differently by their places in it)."""
    steps = np.floor(np.clip(dist, 0.0, 2.0 ** 20 - 1.0) / WAIT_KEY_STEP).astype(np.int64)
    return (np.asarray(w, dtype=np.int64) << 31) | steps


def nearest_vertex(windings: np.ndarray, count: np.ndarray, normal: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """(M,) the least n . x - d over each winding's vertices (padded (M, W, 3), count (M,)), each
    against its own plane (normal (M, 3), dist (M,)): x, y, z summed in order, as the C kernel's
    push does; +inf for a winding without vertices."""
    d = windings[..., 0] * normal[:, 0, None] + windings[..., 1] * normal[:, 1, None] \
        + windings[..., 2] * normal[:, 2, None] - dist[:, None]
    d = np.where(np.arange(windings.shape[1])[None, :] < count[:, None], d, np.inf)
    return np.fmin.reduce(d, axis=1, initial=np.inf)


def _bit(bits, rows, cols):
    return ((bits[rows, cols >> 3] >> (cols & 7).astype(np.uint8)) & 1).astype(bool)


def _children(first, leaving, clusters):
    """(parent index, portal) for every portal leaving each cluster."""
    per = first[clusters + 1] - first[clusters]
    parent = np.repeat(np.arange(len(clusters)), per)
    q = leaving[np.repeat(first[clusters] - np.cumsum(per) + per, per) + np.arange(int(per.sum()))]
    return parent, q


def portal_cluster_bits(dp: DirectedPortals, portal_rows: np.ndarray) -> np.ndarray:
    """(R, C) bool: the clusters the portals of each row lead into."""
    out = np.zeros((portal_rows.shape[0], dp.num_clusters), dtype=bool)
    r, q = np.nonzero(portal_rows)
    out[r, dp.dst[q]] = True
    return out


def merged_flow(dp: DirectedPortals, flood: np.ndarray | PortalFlood, progress=None, cancel=None,
                stats: dict | None = None, jobs: int | None = None, one_way: bool = False, farm=None,
                backend: str = "numpy") -> np.ndarray:
    """(C, C) bool cluster PVS by the merged full flow; `flood` is the fast mode's: its (D, D) bool
    rows or the same as bit rows (pvs_flow.PortalFlood).
    `one_way`: each cluster's own row, before the AND with the other direction (for the tests:
    each must hold every line of sight).
    `jobs` workers share each wave (core/compile/vis/wave_jobs.py; None: one per core where workers
    fork, else one, since threads gain little against NumPy's many small steps); the answer does
    not depend on it.  `farm` (the bake farm's LevelFarm: parts() and wave_runner(flow, cancel))
    runs the waves' parts on a cluster's workers instead, with the same answer (there in NumPy).
    `backend` 'c': each source flows in the C kernel (core/compile/vis/flow_c.py, the same rows,
    states and growths); 'numpy': here."""
    d, c = dp.num, dp.num_clusters
    vis = np.eye(c, dtype=bool)
    if d == 0:
        return vis
    flood = as_portal_flood(dp, flood)
    order = np.argsort(flood.sizes, kind="stable")
    wave = int(max(8, min(WAVE_SOURCES, WAVE_BYTES // max(1, 4 * d))))
    if farm is not None:
        jobs = farm.parts()
        flow = _Flow(dp, flood, cancel)
        runner = farm.wave_runner(flow, cancel)
    else:
        native = backend == "c"
        jobs = max(1, min(jobs or (default_jobs() if can_fork() or native else 1), MAX_JOBS))
        # the C kernel lets go of the GIL: threads run it side by side, with no fork and no copies
        flow = _Flow(dp, flood, cancel, shared=jobs > 1 and not native, backend=backend)
        runner = WaveRunner(flow.run_part, jobs, cancel, fork=not native)
    with runner:
        for start in range(0, d, wave):
            flow.run_wave(order[start: start + wave], runner, jobs)
            if progress is not None:
                done = min(d, start + wave)
                progress(done / d, f"portal flow {done}/{d} portals")
    if flow.kernel is not None:  # the same ORs on the packed rows, without a (D, C) bool table
        from .flow_c import cluster_rows_from_bits

        vis = cluster_rows_from_bits(dp, flow.test_cl, cancel, jobs)
    else:
        rows = np.unpackbits(flow.test_cl, axis=1, bitorder="little", count=c).astype(bool)
        np.logical_or.at(vis, dp.src, rows)
        vis[dp.src, dp.dst] = True
    if stats is not None:
        stats.update(states_expanded=flow.expanded, targets_clipped=flow.clipped, flow_jobs=jobs,
                     most_growths=flow.most_growths)
    return vis if one_way else and_transpose(vis)  # each way's row holds every line: so does their AND


class _Flow:
    """What the sources of a wave share, read only during the wave: per portal, its cluster row
    (flood, then final)."""

    def __init__(self, dp: DirectedPortals, flood: np.ndarray, cancel, shared: bool = False,
                 backend: str = "numpy"):
        self.dp, self.cancel, self.pid = dp, cancel, os.getpid()
        flood = as_portal_flood(dp, flood)
        self.flood_bits = flood.bits
        self.might_cl = flood.clusters  # s's might, clusters
        # the rows that change between waves; in shared memory when workers are forked
        make = shared_array if shared else np.zeros
        self.test_cl = make(self.might_cl.shape, np.uint8)  # flood, then the final row once done
        self.test_cl[:] = self.might_cl
        self.dirs = kdop_directions(dp)
        self.full = extents(dp.windings, dp.count, self.dirs)
        self.first, self.leaving = dp.leaving()
        self.expanded = self.clipped = self.most_growths = 0
        self.centre = centres(dp.windings, dp.count)
        self.kernel = None
        if backend == "c":
            from .flow_c import FlowKernel

            self.kernel = FlowKernel(dp, self.flood_bits, self.might_cl, self.test_cl, self.dirs, self.full,
                                     self.centre, self.first, self.leaving, kernel_constants())
        elif backend != "numpy":
            raise ValueError(f"unknown flow backend {backend!r}")

    def run_part(self, sources: np.ndarray):
        """Flow from some sources of a wave: their packed cluster rows and counts."""
        if self.kernel is not None:
            return self.kernel.run(sources, self.cancel if os.getpid() == self.pid else None)
        wave = _Wave(self, sources)
        wave.run()
        return (np.packbits(wave.viscl, axis=1, bitorder="little"), wave.expanded, wave.clipped,
                int(wave.grown[: wave.used].max(initial=0)))

    def run_wave(self, sources: np.ndarray, runner: WaveRunner, jobs: int) -> None:
        """Flow from each source of the wave; the sources of one wave do not read each other's
        results (only those of earlier waves), so the wave splits into parts run side by side,
        and the rows are the same however it is split."""
        if self.kernel is not None:  # small parts the threads take as they come free
            parts = [sources[i: i + KERNEL_PART] for i in range(0, len(sources), KERNEL_PART)]
        else:
            parts = [p for p in (sources[k::jobs] for k in range(jobs)) if len(p)]  # dealt: sources
            # come sorted by flood size, so dealing them evens out the parts' work
        results = runner.map(parts)
        for part, (viscl, expanded, clipped, grown) in zip(parts, results):  # after all have read
            self.most_growths = max(self.most_growths, grown)
            self.test_cl[part] = viscl
            self.expanded += expanded
            self.clipped += clipped


class _Wave:
    """The states (source, portal) of some sources of one wave, flowed to the end.  A state lives
    in a slot (slot[w, q], -1 until first reached): its k-DOP h, its might set and its growths;
    a source reaches a few hundred of its D portals, so the slots take far less than dense
    (W, D, ...) tables and a wave can hold hundreds of sources (large batches)."""

    def __init__(self, flow: _Flow, sources: np.ndarray):
        dp = flow.dp
        w = len(sources)
        self.flow, self.dp, self.dirs, self.full = flow, dp, flow.dirs, flow.full
        self.first, self.leaving = flow.first, flow.leaving
        self.flood_bits, self.test_cl = flow.flood_bits, flow.test_cl
        self.sources = sources
        self.slot = np.full((w, dp.num), -1, dtype=np.int32)
        self.used = 0
        self.h = np.zeros((0, KDOP_DIRECTIONS))
        self.might = np.zeros((0, flow.might_cl.shape[1]), dtype=np.uint8)
        self.grown = np.zeros(0, dtype=np.int16)
        self.viscl = np.zeros((w, dp.num_clusters), dtype=bool)
        self.expanded = self.clipped = 0

    def _slots(self, idx: np.ndarray) -> np.ndarray:
        """The slots of the states idx (flat w * D + q, distinct), made for those first reached."""
        flat = self.slot.reshape(-1)
        sl = flat[idx]
        new = np.flatnonzero(sl < 0)
        if len(new):
            need = self.used + len(new)
            if need > len(self.grown):
                cap = max(need, 2 * len(self.grown), 1024)
                self.h = np.concatenate([self.h, np.full((cap - len(self.h), KDOP_DIRECTIONS), -np.inf)])
                self.might = np.concatenate([self.might, np.zeros((cap - len(self.might), self.might.shape[1]),
                                                                  dtype=np.uint8)])
                self.grown = np.concatenate([self.grown, np.zeros(cap - len(self.grown), dtype=np.int16)])
            sl[new] = np.arange(self.used, need, dtype=np.int32)
            flat[idx[new]] = sl[new]
            self.used = need
        return sl

    def run(self) -> None:
        flow, dp, sources = self.flow, self.dp, self.sources
        # first step: every portal leaving s's cluster, clipped to the front of s
        parent, q = _children(self.first, self.leaving, dp.dst[sources])
        s = sources[parent]
        ok = _bit(self.flood_bits, s, q) & (dp.plane[q] != (dp.plane[s] ^ 1)) \
            & (_bit(self.test_cl, q ^ 1, dp.src[s]) | (dp.src[q] == dp.src[s]))
        parent, q, s = parent[ok], q[ok], s[ok]
        tw, tn = clip_front(dp.windings[q], dp.count[q], dp.normal[s], dp.dist[s])
        self._pending = []
        self._mark(parent, q, tw, tn, flow.might_cl[s] & self.test_cl[q])
        fw, fq = self._grow()
        sn, sd = dp.normal[sources], dp.dist[sources]
        waiting = np.zeros((len(sources), dp.num), dtype=bool)

        def keyed(w, q):
            return wait_keys(w, nearest_vertex(dp.windings[q], dp.count[q], sn[w], sd[w]))

        key = keyed(fw, fq)
        order = np.argsort(key, kind="stable")
        fw, fq, key = fw[order], fq[order], key[order]
        waiting[fw, fq] = True
        while len(fw):
            if flow.cancel is not None and os.getpid() == flow.pid and flow.cancel():
                raise CancelledError()
            # the clusters seen when the step began: the 'more' test reads these, so that a
            # source's states do not depend on which other sources share its batches
            self.have = np.packbits(self.viscl, axis=1, bitorder="little")
            # of each source's waiting states, the ORDER_K whose portals come nearest its plane:
            # lines of sight cross portals ever farther from it, so a state tends to have been
            # reached by all its chains before it is expanded (fewer re-expansions than a
            # breadth-first frontier's)
            start = np.flatnonzero(np.concatenate(([True], fw[1:] != fw[:-1])))
            rank = np.arange(len(fw)) - np.repeat(start, np.diff(np.append(start, len(fw))))
            take = rank < ORDER_K
            ew, eq = fw[take], fq[take]
            fw, fq, key = fw[~take], fq[~take], key[~take]
            waiting[ew, eq] = False
            for i in range(0, len(ew), STATE_BATCH):
                self._expand(ew[i: i + STATE_BATCH], eq[i: i + STATE_BATCH])
            nw, nq = self._grow()
            new = ~waiting[nw, nq]  # a state still waiting goes with its grown k-DOP when its turn comes
            nw, nq = nw[new], nq[new]
            if len(nw):
                waiting[nw, nq] = True
                nk = keyed(nw, nq)
                fw, fq, key = np.concatenate((fw, nw)), np.concatenate((fq, nq)), np.concatenate((key, nk))
                order = np.argsort(key, kind="stable")  # a sorted run and a short one
                fw, fq, key = fw[order], fq[order], key[order]

    def _mark(self, wi, q, tw, tn, might) -> None:
        """Record the non-empty targets: sightings, and their extents and might for _grow."""
        ok = tn > 0
        wi, q, tw, tn, might = wi[ok], q[ok], tw[ok], tn[ok], might[ok]
        self.viscl[wi, self.dp.dst[q]] = True
        self._pending.append((wi * self.dp.num + q, extents(tw, tn, self.dirs[q]) + FLOW_CLIP_MARGIN, might))

    def _grow(self):
        """Merge this step's extents into the states; returns the states that grew (w, q)."""
        if not self._pending:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        idx = np.concatenate([p[0] for p in self._pending])
        ext = np.concatenate([p[1] for p in self._pending])
        mig = np.concatenate([p[2] for p in self._pending])
        self._pending = []
        if not len(idx):
            return idx, idx
        order = np.argsort(idx, kind="stable")
        idx, ext, mig = idx[order], ext[order], mig[order]
        starts = np.flatnonzero(np.concatenate(([True], idx[1:] != idx[:-1])))
        idx, ext, mig = idx[starts], _group_reduce(np.maximum, ext, starts), _group_reduce(np.bitwise_or, mig, starts)
        sl = self._slots(idx)
        old, old_m = self.h[sl], self.might[sl]
        changed = np.any(ext > old + GROWTH_EPSILON, axis=1) | np.any(mig & ~old_m, axis=1)
        idx, sl, new = idx[changed], sl[changed], np.maximum(old[changed], ext[changed])
        self.grown[sl] += 1
        new[self.grown[sl] > MAX_GROWTH] = np.inf
        self.h[sl] = new
        self.might[sl] = old_m[changed] | mig[changed]
        return np.divmod(idx, self.dp.num)

    def _expand(self, wi, r) -> None:
        dp = self.dp
        s = self.sources[wi]
        self.expanded += len(wi)
        sw, sn = clip_front(dp.windings[s], dp.count[s], -dp.normal[r], -dp.dist[r])
        sl = self.slot[wi, r]
        pw, pn = pass_polygons(dp, r, self.h[sl], self.dirs, self.full)
        live = np.flatnonzero((sn > 0) & (pn > 0))
        if not len(live):
            return
        wi, r, s, sl = wi[live], r[live], s[live], sl[live]
        parent, q = _children(self.first, self.leaving, dp.dst[r])
        pw_, ps = wi[parent], s[parent]
        state_might = self.might[sl]  # (B, C8): what the chains to r might still see
        ok = _bit(self.flood_bits, ps, q) & _bit(state_might, parent, dp.dst[q]) \
            & (_bit(self.test_cl, q ^ 1, dp.src[ps]) | (dp.src[q] == dp.src[ps])) \
            & (dp.plane[q] != (dp.plane[r[parent]] ^ 1))
        known = ok & _bit(self.have, pw_, dp.dst[q])
        idx = np.flatnonzero(known)
        if len(idx):  # Quake's 'more' test on cluster bits
            more = np.any(state_might[parent[idx]] & self.test_cl[q[idx]] & ~self.have[pw_[idx]], axis=1)
            ok[idx[~more]] = False
        keep = np.flatnonzero(ok)
        if not len(keep):
            return
        parent, q = parent[keep], q[keep]
        child_might = state_might[parent] & self.test_cl[q]
        used, parent = np.unique(parent, return_inverse=True)
        normal, dist, count = separators_by_size(sw[live][used], sn[live][used], pw[live][used], pn[live][used])
        tw, tn = clip_front(dp.windings[q], dp.count[q], dp.normal[s[used][parent]], dp.dist[s[used][parent]])
        tw, tn = clip_by_cutting(tw, tn, normal, dist, count, parent)
        self.clipped += len(q)
        self._mark(wi[used][parent], q, tw, tn, child_might)


