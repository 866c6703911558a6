"""Shooter groups: a bounce's far patches shot as one (hierarchical radiosity, shooter side).

Progressive refinement (core/compile/light/lm_radiosity.py) casts one ray per (shooter patch,
receiver patch) pair worth it, so a receiver that sees a wide surface pays a ray for every patch
of it however far away.  Hanrahan, Salzman and Aupperle ('A rapid hierarchical radiosity
algorithm', 1991) link a receiver to a *group* of patches instead wherever the group is small
as seen from there: the point form factor of the group (its area at its centroid) is then as
good as the sum of its patches', and one ray stands for all of them.

The groups are a quadtree over each face's patch grid (lm_patches: a patch is cell (i, j) of its
face's grid), built anew each round from the round's shooters, per face and per PVS cluster (a
group's patches all see what their cluster sees): level L gathers the cells (i >> L, j >> L).  A
group with one member is that member; a face's last group is its root.  A group's area is its
members' sum, its centroid, receiver point and unshot radiance their area-weighted means (so it
shoots exactly their power), and its radius the farthest reach of a member polygon from its
centroid.

A (group, receiver) link is used where the receiver is at least GROUP_FAR radii from the group's
centroid (beyond FORM_FACTOR_NEAR's reach for a patch, the point form factor is within about 1%
of the polygon's; at 6 radii a group of patches is as far away as that relative to its size);
nearer, the group's children are tried; a patch is linked as before (lm_radiosity._pairs' tests,
the exact form factor near).  Only bounces use groups: surface lights' direct light (round 0)
keeps one ray per patch, for its shadows.  Deterministic: every sum is taken in a fixed order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...detmath import dot
from ...tolerances import FORM_FACTOR_NEAR


@dataclass
class ShooterGroups:
    """The groups of one round, numbered after the patches (node P + g is group g).  Children of
    group g: children[child_first[g]:child_first[g + 1]] (nodes: patches or groups).  roots:
    (cluster, node) of every face's top node, sorted by cluster then node."""

    n_patches: int
    point: np.ndarray  # (G, 3)
    centroid: np.ndarray  # (G, 3)
    normal: np.ndarray  # (G, 3)
    area: np.ndarray  # (G,)
    radius: np.ndarray  # (G,)
    unshot: np.ndarray  # (G, 3)
    child_first: np.ndarray  # (G + 1,)
    children: np.ndarray  # (C,)
    root_cluster: np.ndarray  # (R,)
    root_node: np.ndarray  # (R,)

    def roots_of(self, cluster: int) -> np.ndarray:
        a, b = np.searchsorted(self.root_cluster, [cluster, cluster + 1])
        return self.root_node[a:b]


def patch_radius(world) -> np.ndarray:
    """(P,) the farthest vertex of each patch polygon from its centroid."""
    k = world.verts.shape[1]
    rel = world.verts - world.centroid[:, None, :]
    d = np.sqrt(dot(rel, rel))
    d = np.where(np.arange(k)[None, :] < world.count[:, None], d, 0.0)
    return d.max(axis=1, initial=0.0)


def build_groups(world, shooters: np.ndarray, unshot: np.ndarray, radius: np.ndarray) -> ShooterGroups:
    """The quadtree groups over `shooters` (patch indices) for one round (unshot (P, 3))."""
    P = len(world.area)
    nodes = np.asarray(shooters, np.int64)
    cluster = world.cluster[nodes].astype(np.int64)
    face = world.face[nodes].astype(np.int64)
    cell = world.cell[nodes].astype(np.int64)
    area = world.area[nodes].astype(np.float64)
    cen, pnt, uns, nrm = world.centroid[nodes], world.point[nodes], unshot[nodes], world.normal[nodes]
    rad = radius[nodes]
    g_point, g_cen, g_norm, g_area, g_rad, g_uns, g_children = [], [], [], [], [], [], []
    roots_c, roots_n = [], []
    count = 0
    while len(nodes):
        # a node alone in its (cluster, face) is that face's root
        fkey = np.stack([cluster, face], axis=1)
        _, finv, fcount = np.unique(fkey, axis=0, return_inverse=True, return_counts=True)
        finv = finv.reshape(-1)
        alone = fcount[finv] == 1
        roots_c.append(cluster[alone])
        roots_n.append(nodes[alone])
        keep = ~alone
        nodes, cluster, face, cell, area = nodes[keep], cluster[keep], face[keep], cell[keep] >> 1, area[keep]
        cen, pnt, uns, rad, nrm = cen[keep], pnt[keep], uns[keep], rad[keep], nrm[keep]
        if not len(nodes):
            break
        key = np.stack([cluster, face, cell[:, 0], cell[:, 1]], axis=1)
        order = np.lexsort((nodes, key[:, 3], key[:, 2], key[:, 1], key[:, 0]))
        nodes, cluster, face, cell, area = nodes[order], cluster[order], face[order], cell[order], area[order]
        cen, pnt, uns, rad, nrm, key = cen[order], pnt[order], uns[order], rad[order], nrm[order], key[order]
        new = np.ones(len(nodes), bool)
        new[1:] = np.any(key[1:] != key[:-1], axis=1)
        parent = np.cumsum(new) - 1
        first = np.flatnonzero(new)
        size = np.diff(np.append(first, len(nodes)))
        single = size == 1
        # parents of one child: the child goes on up as itself
        many = ~single[parent]
        m = len(first)
        a_sum = np.bincount(parent, weights=area, minlength=m)
        c_sum, p_sum, u_sum = (np.stack([np.bincount(parent, weights=v[:, k] * area, minlength=m) for k in range(3)],
                                        axis=1) for v in (cen, pnt, uns))  # area-weighted sums per parent
        made = np.flatnonzero(~single)
        group_cen = cen[first].copy()  # a parent of one child is that child
        group_cen[made] = c_sum[made] / a_sum[made, None]
        reach = np.sqrt(dot(cen - group_cen[parent], cen - group_cen[parent])) + rad
        g_radius = np.full(m, -np.inf)
        np.maximum.at(g_radius, parent, reach)
        ids = P + count + np.arange(len(made))
        node_of_parent = np.empty(m, np.int64)
        node_of_parent[made] = ids
        node_of_parent[single] = nodes[first[single]]
        count += len(made)
        g_point.append(p_sum[made] / a_sum[made, None])
        g_cen.append(group_cen[made])
        g_norm.append(nrm[first[made]])
        g_area.append(a_sum[made])
        g_rad.append(g_radius[made])
        g_uns.append(u_sum[made] / a_sum[made, None])
        g_children.append((nodes[many], parent[many], node_of_parent))
        # next level: one node per parent
        nodes = node_of_parent
        cluster, face, cell, nrm = cluster[first], face[first], cell[first], nrm[first]
        area, rad, cen = a_sum, np.where(single, rad[first], g_radius), group_cen
        pnt, uns = pnt[first].copy(), uns[first].copy()
        pnt[made], uns[made] = g_point[-1], g_uns[-1]
    # children lists, group by group in number order
    kids, owner = [], []
    for members, parent, node_of_parent in g_children:
        kids.append(members)
        owner.append(node_of_parent[parent])
    kids_a = np.concatenate(kids) if kids else np.zeros(0, np.int64)
    owner_a = np.concatenate(owner) - P if owner else np.zeros(0, np.int64)
    order = np.argsort(owner_a, kind="stable")
    child_first = np.searchsorted(owner_a[order], np.arange(count + 1))
    rc = np.concatenate(roots_c) if roots_c else np.zeros(0, np.int64)
    rn = np.concatenate(roots_n) if roots_n else np.zeros(0, np.int64)
    ro = np.lexsort((rn, rc))

    def cat(parts, shape):
        return np.concatenate(parts) if parts else np.zeros(shape)

    return ShooterGroups(P, cat(g_point, (0, 3)), cat(g_cen, (0, 3)), cat(g_norm, (0, 3)), cat(g_area, (0,)),
                         cat(g_rad, (0,)), cat(g_uns, (0, 3)), child_first, kids_a[order], rc[ro], rn[ro])


#: the most (node, receiver) pairs a level of the walk takes at once (links: more are cut in two)
GROUP_FRONTIER = 1 << 18


def links(world, groups: ShooterGroups, roots: np.ndarray, receivers: np.ndarray, cutoff: float,
          far: float, strength: np.ndarray, kernel=None, chunk: int = 1 << 20, frontier: int | None = None):
    """Walk the groups under `roots` down against `receivers` (patch indices), a level at a time.
    Returns (group links: node, receiver, form factor) for the pairs a group serves, and the patch
    pairs worth a ray (shooter, receiver, point form factor, near: the exact form factor is the
    caller's).  Each receiver's pairs come level by level, each level in GroupStep's order, and its
    group links before its patch pairs: the order a receiver sums what it gets in.  Receivers go in
    chunks, and a level of more than `frontier` pairs is cut in two by receiver, the first part
    walked to the end before the second (a frontier grows as groups open into their children:
    slope's bounce held 130 MB of it), which keeps each receiver's order.
    strength (P,): each patch's brightest unshot channel.  `kernel`:
    the round's step, lm_groups_c.GroupKernel or a GroupStep (the same answers, bit for bit); None:
    a GroupStep made here."""
    step = kernel.step if kernel is not None else GroupStep(world, groups, cutoff, far, strength).step
    frontier = GROUP_FRONTIER if frontier is None else frontier
    found: list = [[] for _ in range(7)]  # patch s, r, f, near; group node, r, f
    per = max(1, chunk // max(len(roots), 1))
    for k in range(0, len(receivers), per):
        rec = receivers[k: k + per]
        waiting = [(np.repeat(np.asarray(roots, np.int64), len(rec)), np.tile(np.asarray(rec, np.int64), len(roots)))]
        while waiting:
            node, recv = waiting.pop()
            while len(node):
                if len(node) > frontier:
                    later = recv > np.median(recv)  # receivers past the middle one wait
                    if later.any():
                        waiting.append((node[later], recv[later]))
                        node, recv = node[~later], recv[~later]
                        continue
                patch_pairs, group_links, (node, recv) = step(node, recv)
                for into, part in zip(found, patch_pairs + group_links):
                    into.append(part)
    kinds = (np.int64, np.int64, np.float64, bool, np.int64, np.int64, np.float64)
    out = [np.concatenate(parts).astype(t, copy=False) if parts else np.zeros(0, t) for parts, t in zip(found, kinds)]
    return tuple(out[4:]), tuple(out[:4])


class GroupStep:
    """One level of the walk in NumPy (the reference; runtime_c/compiler/light_groups.c does the
    same): the frontier's patch pairs worth a ray, its group links and the next frontier.

    A patch pair passes lm_radiosity._pairs' tests, as lm_radiosity.patch_pair_tests states them
    (in front, the point form factor times the patch's brightest unshot channel at least `cutoff`,
    or near: the exact form factor is the caller's).  A group link needs the receiver in front of
    the group's face, the group not wholly behind the receiver's plane (its centroid within its
    radius of the front), the receiver at least `far` radii from the centroid, and the point form
    factor times the group's brightest unshot channel at least `cutoff` (a far group under it is
    dropped with all its patches, as each would be).  A group nearer than `far` radii passes its
    children on."""

    def __init__(self, world, groups: ShooterGroups, cutoff: float, far: float, strength: np.ndarray):
        self.world, self.groups, self.cutoff, self.far = world, groups, cutoff, far
        self.area_pi = groups.area / math.pi
        self.g_strength = groups.unshot.max(axis=1) if len(groups.area) else np.zeros(0)
        self.patch = PatchTerms(world, strength)

    def step(self, node: np.ndarray, recv: np.ndarray):
        groups, P, w = self.groups, self.groups.n_patches, self.world
        is_patch = node < P
        s, rs = node[is_patch], recv[is_patch]
        t = self.patch
        rel = w.point[rs] - w.centroid[s]
        front = dot(w.normal[s], rel)  # cos_s d
        above = -dot(w.normal[rs], rel)  # cos_r d
        d2 = np.maximum(dot(rel, rel), 1e-12)
        near = d2 < t.near[s]
        near &= front > 0.0
        near &= above > t.low[s]
        f = np.maximum(front, 0.0) * np.maximum(above, 0.0) * t.area_pi[s] / d2 / d2
        ok = (f * t.strength[s] >= self.cutoff) | near
        ok &= s != rs
        keep = np.flatnonzero(ok)
        g, r = node[~is_patch] - P, recv[~is_patch]
        rel = w.point[r] - groups.centroid[g]
        front = dot(groups.normal[g], rel)  # cos_g d
        above = -dot(w.normal[r], rel)  # cos_r d
        d2 = dot(rel, rel)
        rad = groups.radius[g]
        live = (front > 0.0) & (above > -rad)
        reach = d2 >= (self.far * rad) ** 2
        use = np.flatnonzero(live & reach)
        fg = front[use] * np.maximum(above[use], 0.0) * self.area_pi[g[use]] / d2[use] / d2[use]
        sent = fg * self.g_strength[g[use]] >= self.cutoff
        down = np.flatnonzero(live & ~reach)
        first, last = groups.child_first[g[down]], groups.child_first[g[down] + 1]
        n_kids = last - first
        rep = np.repeat(np.arange(len(down)), n_kids)
        offs = np.arange(len(rep)) - np.repeat(np.cumsum(n_kids) - n_kids, n_kids)
        return ((s[keep], rs[keep], f[keep], near[keep]), (P + g[use][sent], r[use][sent], fg[sent]),
                (groups.children[first[rep] + offs], r[down][rep]))


class PatchTerms:
    """Per patch, the terms of the patch pair tests, each computed once as the tests use it."""

    def __init__(self, world, strength: np.ndarray):
        a = world.area
        self.near = FORM_FACTOR_NEAR * a
        self.low = -np.sqrt(a)
        self.area_pi = a / math.pi
        self.strength = np.asarray(strength, dtype=np.float64)
