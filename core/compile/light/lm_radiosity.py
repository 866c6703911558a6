"""Bounce light by progressive refinement: the thesis's RADIOSITY (chapter 4) over patches.

Every patch (core/compile/light/lm_patches.py) holds *unshot* radiance.  A round (one bounce) lets the
patches with the most unshot power (area x radiance) shoot it, as the thesis's loop picks 'the
patch with the most unsent energy' (all of them, or the brightest holding shoot_fraction of the
round's power): shooter j sends to every patch i of the clusters its cluster can see (the PVS)

    dW_i = F_ij * unshot_j,    F_ij = (1 / pi) integral over j of cos_i cos_j / d^2 dA_j,

the form factor from the point i (the receiver's centre) to the polygon j: the issue's
cos_i cos_j A_j / (pi d^2) integrated exactly over the patch by Lambert's formula (the polygon
first clipped to the receiver's half-space) for receivers within FORM_FACTOR_NEAR, so the form
factors of a closed room sum to 1 however coarse its patches (the furnace converges to
E / (1 - rho)); the point formula itself farther away, where it is within about 1%.  The visibility H_ij is
one ray from receiver to shooter through the point tree.  What a patch receives in a round is
its irradiance (lightmap units); rho times it is what it shoots next round.  Rounds stop after
`bounces`, or when the unshot power falls below `threshold` of what it was after direct light.
progress() after each round; cancel() stops between batches of shooters and keeps the light
received so far (RadiosityResult.cancelled).

Shooters go cluster by cluster: each cluster's shooters meet the patches of the clusters it sees
in blocks, where the tests (in front, and the point form factor cos_i cos_j A / (pi d^2) times
the shooter's brightest unshot channel at least BOUNCE_CUTOFF) are (shooters x receivers)
products; pairs within FORM_FACTOR_NEAR get the exact form factor; each pair left casts a ray.
Sums are np.add.at (or lm_sum_c's loops) in pair order; a bounce block adds its clear rays' products
as it makes them (lm_sum_c.add_clear).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

import numpy as np

from ...detmath import arctan2_upper, dot
from ...geometry import cross3
from ...runtime.trace import RAY_E
from ...tolerances import BOUNCE_CUTOFF, BOUNCE_GROUP_FAR, FORM_FACTOR_NEAR
from .lm_groups import GroupStep, build_groups, links, patch_radius
from .lm_patches import clip_batch
from .lm_rays import ShadowRays
from .lm_sum_c import clear_adder

#: shooter x receiver pairs examined at once (memory bound: about 8 arrays of this many floats, on
#: each thread)
PAIR_CHUNK = 1 << 20
#: group roots x receivers a block of the group walk starts from: the walk holds a block's rays
#: until they are traced, so this bounds the memory of each of the threads' blocks (slope, a
#: cluster's roots against every patch: 2.5 million rays, 150 MB, in one block at 1 << 20)
GROUP_BLOCK = 1 << 18


@dataclass
class PatchWorld:
    """Patches as radiosity sees them (3-D)."""

    verts: np.ndarray  # (P, K, 3) polygon, padded
    count: np.ndarray  # (P,) vertices (0: empty patch, never shoots nor receives)
    area: np.ndarray  # (P,)
    point: np.ndarray  # (P, 3) the receiver point: the centroid lifted off the face
    centroid: np.ndarray  # (P, 3) on the face
    normal: np.ndarray  # (P, 3)
    cluster: np.ndarray  # (P,) PVS cluster of the point (-1: sees everything)
    reflectance: np.ndarray  # (P, 3)
    face: np.ndarray | None = None  # (P,) the patch's face, for shooter groups (None: no groups)
    cell: np.ndarray | None = None  # (P, 2) the patch's (i, j) in its face's grid


@dataclass
class RadiosityResult:
    received: np.ndarray  # (P, 3) irradiance gathered from shooting, lightmap units
    rounds: list = field(default_factory=list)  # per round: shooters, pairs, rays, seconds, unshot power
    cancelled: bool = False
    unshot_left: float = 0.0  # unshot power no round shot (area x brightest channel)


def point_polygon_form_factor(x: np.ndarray, n: np.ndarray, verts: np.ndarray, count: np.ndarray) -> np.ndarray:
    """(M,) form factor from points x with unit normals n to convex polygons (Lambert's formula:
    F = |sum_k gamma_k n . (r_k x r_k+1) / |r_k x r_k+1|| / (2 pi)), the polygons clipped to the
    points' front half-spaces first.  Exact for an unoccluded differential receiver.  Every edge
    of every polygon at once ((M, K) arrays, K cut to the longest polygon given), the edges' terms
    then summed in order k = 0, 1, ...  A polygon wholly behind its point's plane (a coplanar
    neighbour's: the point is lifted off its face) clips to nothing: 0, without the clipping."""
    kk = min(verts.shape[1], int(count.max(initial=0)))
    verts = verts[:, :kk]
    rel = verts - x[:, None, :]
    dist = dot(rel, n[:, None, :])
    valid = np.arange(kk)[None, :] < count[:, None]
    behind = np.all((dist < 0) | ~valid, axis=1)
    if not behind.any():
        return _lambert(x, n, rel, np.where(valid, dist, 0.0), count)
    out = np.zeros(len(x))
    seen = np.flatnonzero(~behind)
    out[seen] = _lambert(x[seen], n[seen], rel[seen], np.where(valid[seen], dist[seen], 0.0), count[seen])
    return out


def _lambert(x: np.ndarray, n: np.ndarray, rel: np.ndarray, dist: np.ndarray, count: np.ndarray) -> np.ndarray:
    """point_polygon_form_factor's sum for polygons relative to their points (rel (M, K, 3)),
    `dist` their vertices' heights over the points' planes (0 past `count`)."""
    kk = rel.shape[1]
    cnt = np.where(count >= 3, count, 0)
    straddle = np.flatnonzero((dist < 0).any(axis=1))  # only these need clipping (the rest: as they are)
    if len(straddle):
        rel = np.concatenate([rel, np.zeros((len(rel), 1, 3))], axis=1)
        rel[straddle], cnt[straddle] = clip_batch(rel[straddle, :kk], count[straddle], dist[straddle])
    total = np.zeros(len(x))
    width = int(cnt.max(initial=0))  # edges of the longest polygon left
    if width == 0:
        return total
    k = np.arange(width)[None, :]
    live = k < cnt[:, None]
    nxt = np.where(k + 1 < cnt[:, None], k + 1, 0)
    a = rel[:, :width]
    b = np.take_along_axis(rel, nxt[..., None], axis=1)
    c = cross3(a, b)
    cn = np.sqrt(dot(c, c))
    ok = live & (cn > 0)
    gamma = arctan2_upper(cn, dot(a, b))
    term = np.where(ok, gamma * dot(n[:, None, :], c) / np.where(ok, cn, 1.0), 0.0)
    for j in range(width):
        total = total + term[:, j]
    return np.abs(total) / (2.0 * math.pi)


def shoot(world: PatchWorld, level, shooters: np.ndarray, unshot: np.ndarray, see, counters: dict,
          cancel=None, rays: ShadowRays | None = None, cutoff: float = BOUNCE_CUTOFF,
          group_far: float = 0.0) -> tuple[np.ndarray, bool]:
    """One round: every shooter sends its unshot radiance to the patches its cluster sees.
    Shooters go cluster by cluster (the cluster of the brightest first); each cluster's shooters
    meet the live patches of the clusters it sees in (shooters x receivers) blocks.
    `rays` traces the visibility rays (None: the NumPy walk); shots under `cutoff` cast no ray.
    group_far > 0 (and patches that know their face): far shooters go as groups
    (core/compile/light/lm_groups.py), a cluster's face quadtrees walked against its receivers.
    Returns (received (P, 3), cancelled)."""
    received = np.zeros((len(world.area), 3))
    tree = rays if rays is not None else ShadowRays(level, "numpy")
    form = _form_kernel(tree)
    add_clear = clear_adder(tree.backend)  # NumPy's products and np.add.at, or the C loop: the same sums
    strength = unshot.max(axis=1)
    points, sent = world.point, unshot

    if group_far > 0 and world.face is not None:
        groups = build_groups(world, shooters, unshot, patch_radius(world))
        points, sent = np.concatenate([world.point, groups.point]), np.concatenate([unshot, groups.unshot])

        # the C walk, else NumPy's, made once for the round (links would make a GroupStep a block)
        kernel = _group_kernel(world, groups, cutoff, group_far, strength, tree) \
            or GroupStep(world, groups, cutoff, group_far, strength)

        def block_rays(block):
            (gn, gr, gf), (ls, lr, lf, near) = links(world, groups, block[0], block[1], cutoff, group_far, strength,
                                                     kernel)
            rows = np.arange(len(ls))
            si, ri, f = _near_pairs(world, ls, lr, strength[ls], cutoff, rows, rows, lf, near, form)
            return np.concatenate([gr, ri]), np.concatenate([gn, si]), np.concatenate([gf, f])

        blocks = _group_blocks(world, groups, shooters, see)
    else:
        scratch = _Scratch()  # each thread's (S, R) buffers, for this round only
        kernel = _pair_kernel(world, strength, cutoff, tree)

        def block_rays(block):
            si, ri, f = _pairs(world, block[0], block[1], strength[block[0]], cutoff, scratch, kernel, form)
            return ri, si, f

        blocks = _blocks(world, shooters, see)

    def block_light(block):
        """A block's rays traced on the worker's thread: (receivers, shooters, form factors, the
        kind of each ray)."""
        ri, si, f = block_rays(block)
        return ri, si, f, tree.between(points, ri, si)  # receiver -> shooter

    for ri, si, f, kind in tree.ordered(block_light, blocks):  # summed in block order, as one trace would
        if cancel is not None and cancel():
            return received, True
        counters["pairs"] = counters.get("pairs", 0) + len(ri)
        counters["rays"] = counters.get("rays", 0) + len(ri)
        add_clear(received, ri, kind, f, si, sent, RAY_E)  # each clear ray's f * sent, in order
    return received, False


def _pair_kernel(world: PatchWorld, strength: np.ndarray, cutoff: float, rays: ShadowRays):
    """The C pair selection (lm_pairs_c) when the rays are the C run-time's and it loads, else None
    (the NumPy products): the same pairs either way."""
    if rays.backend != "c" or not cutoff > 0:
        return None
    from .lm_pairs_c import PairKernel, available

    return PairKernel(world, strength, cutoff) if available() else None


def _form_kernel(rays: ShadowRays):
    """The C near pairs' form factors (lm_form_c) when the rays are the C run-time's and it loads,
    else None (point_polygon_form_factor): the same bits either way."""
    if rays.backend != "c":
        return None
    from . import lm_form_c

    return lm_form_c.form_factors if lm_form_c.BINDING.available() else None


def _group_kernel(world: PatchWorld, groups, cutoff: float, far: float, strength: np.ndarray, rays: ShadowRays):
    """The C group walk (lm_groups_c) when the rays are the C run-time's and it loads, else None
    (NumPy's GroupStep): the same answers either way."""
    if rays.backend != "c":
        return None
    from .lm_groups_c import GroupKernel, available

    return GroupKernel(world, groups, cutoff, far, strength) if available() else None


def _blocks(world: PatchWorld, shooters: np.ndarray, see):
    """(shooters, receivers) blocks: _cluster_groups' groups cut so a block has at most
    PAIR_CHUNK pairs."""
    for mine, receivers in _cluster_groups(world, shooters, see):
        step = max(1, PAIR_CHUNK // max(len(receivers), 1))
        for k in range(0, len(mine), step):
            yield mine[k : k + step], receivers


def _group_blocks(world: PatchWorld, groups, shooters: np.ndarray, see):
    """(group roots, receivers) blocks of the group walk: each cluster's roots with the receivers
    it sees, cut so a block starts from at most GROUP_BLOCK pairs.  A receiver is in one block of
    its cluster, and links() walks each receiver's pairs in the same order whatever else shares its
    block, so every receiver still sums what it gets in the same order: the same bits."""
    for mine, receivers in _cluster_groups(world, shooters, see):
        roots = groups.roots_of(int(world.cluster[mine[0]])) if see is not None else groups.root_node
        per = max(1, GROUP_BLOCK // max(len(roots), 1))
        for k in range(0, len(receivers), per):
            yield roots, receivers[k : k + per]


def _cluster_groups(world: PatchWorld, shooters: np.ndarray, see):
    """(shooters, receivers), one cluster at a time: the shooters of one cluster (in the given
    order, the clusters in order of their first shooter) with the live patches of every cluster it
    sees, ascending (see None: every shooter with every live patch).  A generator: a world's
    groups are made as the bounce reaches them, never all held at once.  The work per cluster is
    its own shooters and receivers (a cluster's shooters picked from all of them, and its
    receivers gathered cluster by cluster in Python, made it grow with the square of the world:
    tiled 10,000 brushes, 102 of its 155 s of light); the PVS is read a row at a time, never as
    a (clusters x clusters) table (441 MB at 21,000 clusters, and its temporaries)."""
    live = np.flatnonzero(world.count > 0)
    if see is None:
        yield shooters, live
        return
    cl = world.cluster[live]
    order = np.argsort(cl, kind="stable")
    uniq, first = np.unique(cl[order], return_index=True)
    ends = np.append(first[1:], len(order))
    by_cluster = live[order]  # live patches grouped by cluster, ascending in each
    shooter_cluster = np.searchsorted(uniq, world.cluster[shooters])
    by_shooter = np.argsort(shooter_cluster, kind="stable")  # shooters grouped by cluster, in order
    s_first = np.searchsorted(shooter_cluster[by_shooter], np.arange(len(uniq) + 1))
    _, first_shot = np.unique(shooter_cluster, return_index=True)
    for u in shooter_cluster[np.sort(first_shot)].tolist():
        mine = shooters[by_shooter[s_first[u]:s_first[u + 1]]]
        seen = np.flatnonzero(see(uniq[u : u + 1], uniq)[0])  # a row at a time: no (U, U) table
        length = ends[seen] - first[seen]
        at = np.repeat(first[seen] - (np.cumsum(length) - length), length) + np.arange(int(length.sum()))
        yield mine, np.sort(by_cluster[at])


def _outer_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(len(a), len(b)) a_i . b_j over 3 columns, summed in order (detmath.matmul's order), in
    place: one (S, R) array and one scratch."""
    out = np.multiply(a[:, 0, None], b[None, :, 0])
    tmp = np.empty_like(out)
    for k in (1, 2):
        np.multiply(a[:, k, None], b[None, :, k], out=tmp)
        out += tmp
    return out


def _pairs(world: PatchWorld, si: np.ndarray, ri: np.ndarray, strength: np.ndarray,
           cutoff: float = BOUNCE_CUTOFF, scratch=None, kernel=None,
           form=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (shooter, receiver) pairs of a block worth a ray, and their form factors.  The receiver
    lies in front of the shooter's plane, the shooter is not wholly behind the receiver's (its
    centroid within its own size of the front), and the form factor times the shooter's brightest
    unshot channel is at least `cutoff`.  Beyond FORM_FACTOR_NEAR the form factor is the
    point one, cos_s cos_r A / (pi d^2), computed here for the whole block as (shooters x
    receivers) products; nearer pairs get the exact polygon form factor (point_polygon_form_factor).

    Hot NumPy loop: every (S, R) array lives in this thread's part of `scratch` (_Scratch: four
    float64 and three bool buffers of the block's size, reused block after block of a round
    instead of faulting in fresh pages; None: fresh ones),
    each product written in place; a shooter meeting itself is dropped after the selection.  Each
    element goes through the same operations in the same order as _pairs_dense (the reference,
    tests/core/test_lightmap.py compares them to the bit).  `kernel` (lm_pairs_c.PairKernel, made
    for this round's strengths and cutoff): the selection and the point form factors by the C
    kernel instead, the same pairs and bits (tests/core/test_lm_pairs_c.py)."""
    if not cutoff > 0:  # pairs of zero form factor would pass: the reference keeps them
        return _pairs_dense(world, si, ri, strength, cutoff)
    if kernel is not None:
        sj, rj, value, close_mask = kernel.pairs(si, ri, scratch if scratch is not None else _Scratch())
        return _near_pairs(world, si, ri, strength, cutoff, sj, rj, value, close_mask, form)
    ns, cs, a = world.normal[si], world.centroid[si], world.area[si]
    nr, pr = world.normal[ri], world.point[ri]
    scratch = scratch if scratch is not None else _Scratch()
    front, above, d2, tmp, near, facing, ok = scratch.take(len(si), len(ri))
    _outer_dot_into(ns, pr, front, tmp)
    front -= dot(ns, cs)[:, None]  # n_s . (p_r - c_s) = cos_s d
    _outer_dot_into(cs, nr, above, tmp)
    above -= dot(nr, pr)[None, :]  # n_r . (c_s - p_r) = cos_r d
    _outer_dot_into(cs, pr, d2, tmp)
    d2 *= -2.0
    d2 += dot(cs, cs)[:, None]
    d2 += dot(pr, pr)[None, :]
    np.maximum(d2, 1e-12, out=d2)
    np.less(d2, FORM_FACTOR_NEAR * a[:, None], out=near)
    np.greater(front, 0.0, out=facing)
    np.greater(above, -np.sqrt(a)[:, None], out=ok)
    facing &= ok
    near &= facing  # near pairs facing each other: the exact form factor
    # point form factor cos_s cos_r A / (pi d^2) = front * above * A / (pi d2^2), where both > 0
    np.maximum(above, 0.0, out=above)
    f = np.maximum(front, 0.0, out=tmp)
    f *= above
    f *= (a / math.pi)[:, None]
    f /= d2
    f /= d2
    np.multiply(f, strength[:, None], out=front)
    np.greater_equal(front, cutoff, out=ok)
    ok |= near  # (far enough and bright enough) or near: (ok & ~near) | near
    flat = np.flatnonzero(ok)
    sj, rj = np.divmod(flat, len(ri))
    value = f.ravel().take(flat)
    close_mask = near.ravel().take(flat)
    other = si[sj] != ri[rj]
    if not other.all():
        sj, rj, value, close_mask = sj[other], rj[other], value[other], close_mask[other]
    return _near_pairs(world, si, ri, strength, cutoff, sj, rj, value, close_mask, form)


def _near_pairs(world: PatchWorld, si, ri, strength, cutoff, sj, rj, value, close_mask, form=None):
    """_pairs' end: the near pairs' (close_mask) exact form factors, those under `cutoff` dropped;
    (shooters, receivers, form factors) of the pairs (rows sj, rj of si, ri) left.  `form`: what
    computes them (point_polygon_form_factor, or lm_form_c's kernel: the same bits)."""
    form = form or point_polygon_form_factor
    close = np.flatnonzero(close_mask)
    if len(close):
        s_c, r_c = si[sj[close]], ri[rj[close]]
        width = int(world.count[s_c].max())  # the polygons' padding past the longest is not read
        value[close] = form(world.point[r_c], world.normal[r_c], world.verts[s_c, :width], world.count[s_c])
        worth = np.ones(len(sj), dtype=bool)
        worth[close] = value[close] * strength[sj[close]] >= cutoff
        sj, rj, value = sj[worth], rj[worth], value[worth]
    return si[sj], ri[rj], value


def _outer_dot_into(a: np.ndarray, b: np.ndarray, out: np.ndarray, tmp: np.ndarray) -> None:
    """_outer_dot into `out` (scratch `tmp`): the same sums in the same order."""
    np.multiply(a[:, 0, None], b[None, :, 0], out=out)
    for k in (1, 2):
        np.multiply(a[:, k, None], b[None, :, k], out=tmp)
        out += tmp


class _Scratch(threading.local):
    """Per thread: the (S, R) buffers of _pairs, grown to the largest block seen (freed with the
    object: shoot() makes one a round)."""

    def take(self, rows: int, cols: int) -> tuple:
        n = rows * cols
        if getattr(self, "size", 0) < n:
            self.size = n
            self.floats = [np.empty(n) for _ in range(4)]
            self.bools = [np.empty(n, dtype=bool) for _ in range(3)]
        return tuple(b[:n].reshape(rows, cols) for b in self.floats + self.bools)

    def take_out(self, n: int) -> tuple:
        """The C kernel's outputs for n pairs: shooter and receiver rows (int32), form factors,
        near flags (uint8)."""
        if getattr(self, "out_size", 0) < n:
            self.out_size = n
            self.out = (np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int32), np.empty(n), np.empty(n, dtype=np.uint8))
        return self.out



def _pairs_dense(world: PatchWorld, si: np.ndarray, ri: np.ndarray, strength: np.ndarray,
                 cutoff: float = BOUNCE_CUTOFF) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """_pairs with every test over the whole (shooters x receivers) block: the reference the
    gathered form is tested against (the same pairs, form factors to the bit)."""
    ns, cs, a = world.normal[si], world.centroid[si], world.area[si]
    nr, pr = world.normal[ri], world.point[ri]
    front = _outer_dot(ns, pr)
    front -= dot(ns, cs)[:, None]
    above = _outer_dot(cs, nr)
    above -= dot(nr, pr)[None, :]
    d2 = _outer_dot(cs, pr)
    d2 *= -2.0
    d2 += dot(cs, cs)[:, None]
    d2 += dot(pr, pr)[None, :]
    np.maximum(d2, 1e-12, out=d2)
    near = d2 < FORM_FACTOR_NEAR * a[:, None]
    f = np.maximum(front, 0.0)
    f *= np.maximum(above, 0.0)
    f *= (a / math.pi)[:, None]
    f /= d2
    f /= d2
    ok = f * strength[:, None] >= cutoff
    ok &= ~near
    near &= front > 0
    near &= above > -np.sqrt(a)[:, None]
    ok |= near
    ok &= si[:, None] != ri[None, :]
    sj, rj = np.nonzero(ok)
    value = f[sj, rj]
    close = np.flatnonzero(near[sj, rj])
    if len(close):
        s_c, r_c = si[sj[close]], ri[rj[close]]
        value[close] = point_polygon_form_factor(world.point[r_c], world.normal[r_c], world.verts[s_c],
                                                 world.count[s_c])
        worth = np.ones(len(sj), dtype=bool)
        worth[close] = value[close] * strength[sj[close]] >= cutoff
        sj, rj, value = sj[worth], rj[worth], value[worth]
    return si[sj], ri[rj], value


def unshot_power(world: PatchWorld, unshot: np.ndarray) -> float:
    return float((world.area * unshot.max(axis=1)).sum())


def radiosity(world: PatchWorld, level, emission: np.ndarray, direct: np.ndarray, bounces: int, threshold: float,
              see, progress=None, cancel=None, counters: dict | None = None, clock=None,
              shoot_fraction: float = 1.0, rays: ShadowRays | None = None,
              group_far: float = BOUNCE_GROUP_FAR) -> RadiosityResult:
    """Progressive refinement.  `emission` (P, 3): surface lights' radiance, shot first (that is
    direct light from area lights, round 0); `direct` (P, 3): point, spot and sun light at the
    patches.  Then `bounces` rounds, each shooting rho times what the patches received in the
    round before (round 1 shoots rho (direct + round 0)).  With shoot_fraction < 1 a round shoots
    only its brightest patches, holding that fraction of the round's unshot power; the others keep
    theirs for the next round (progressive refinement's order; what is left after the last round
    is not shot, RadiosityResult.unshot_left).  `rays`: the ShadowRays tracing visibility (None:
    the NumPy walk).  group_far: the bounces' shooter groups (lm_groups; 0: one ray per patch);
    surface lights are always shot patch by patch."""
    counters = counters if counters is not None else {}
    result = RadiosityResult(np.zeros_like(direct))
    total = 1 + bounces
    if emission.max(initial=0.0) > 0:
        got, _, stop = _round(world, level, emission, see, counters, cancel, result, 0, clock, 1.0, rays,
                              bounce_cutoff(emission + direct))
        result.received += got
        if stop:
            return result
        incoming = direct + got
    else:
        incoming = direct
    if progress is not None:
        progress(1 / total, "direct light shot")
    unshot = world.reflectance * incoming
    first_power = unshot_power(world, unshot)
    for b in range(1, bounces + 1):
        power = unshot_power(world, unshot)
        if power <= 0 or power < threshold * first_power:
            break
        got, kept, stop = _round(world, level, unshot, see, counters, cancel, result, b, clock, shoot_fraction, rays,
                                 bounce_cutoff(emission + direct + result.received), group_far)
        result.received += got
        if stop:
            break
        unshot = world.reflectance * got + kept
        if progress is not None:
            progress((b + 1) / total, f"bounce {b}/{bounces}")
    result.unshot_left = unshot_power(world, unshot)
    return result


def bounce_cutoff(lit: np.ndarray) -> float:
    """BOUNCE_CUTOFF for a scene as bright as a painted texture or brighter (`lit`, (P, 3): the
    light the patches have so far); for a dimmer one, BOUNCE_CUTOFF times the power of two at or
    below its brightness (the 99th percentile over the patches of the brightest channel: it only
    grows from round to round, so a bright scene keeps BOUNCE_CUTOFF throughout).  The cutoff is
    a fraction of white: a scene lit at a fiftieth of white would lose much of its bounce light to
    it, and its pages are brightened later by the engine's exposure anyway."""
    v = np.sort(lit.max(axis=1))
    brightness = float(v[int(0.99 * (len(v) - 1))]) if len(v) else 0.0
    if brightness <= 0.0:
        return BOUNCE_CUTOFF
    if brightness >= 1.0:
        return BOUNCE_CUTOFF
    return BOUNCE_CUTOFF * math.ldexp(1.0, math.frexp(brightness)[1] - 1)


def _round(world, level, unshot, see, counters, cancel, result: RadiosityResult, number: int, clock,
           fraction: float, rays=None, cutoff: float = BOUNCE_CUTOFF, group_far: float = 0.0):
    """One round of shooting, recorded in result.rounds: (received, unshot kept back, cancelled)."""
    t0 = clock() if clock else 0.0
    power = world.area * unshot.max(axis=1)
    shooters = np.flatnonzero((power > 0) & (world.count > 0))
    shooters = shooters[np.lexsort((shooters, -power[shooters]))]  # most unshot power first
    if fraction < 1.0 and len(shooters):
        running = np.cumsum(power[shooters])
        shooters = shooters[: int(np.searchsorted(running, fraction * running[-1])) + 1]
    kept = unshot.copy()
    kept[shooters] = 0.0
    before = dict(counters)
    got, stop = shoot(world, level, shooters, unshot, see, counters, cancel, rays, cutoff, group_far)
    result.rounds.append({"round": number, "shooters": int(len(shooters)),
                          "pairs": counters.get("pairs", 0) - before.get("pairs", 0),
                          "rays": counters.get("rays", 0) - before.get("rays", 0),
                          "unshot_power": float(power.sum()),
                          "seconds": (clock() - t0) if clock else 0.0})
    result.cancelled = stop
    return got, kept, stop
