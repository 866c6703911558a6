"""Grid worlds for the PVS tests: unit cubes, some solid; each empty cube is a cluster and each face
between two empty cubes a portal.  Visibility here has an exact ground truth that shares nothing
with portal flow or the BSP: a segment sees through exactly the cubes its open pieces lie in
(cut at every grid plane it crosses, each piece's midpoint names its cube)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Grid:
    solid: np.ndarray  # (nx, ny, nz) bool
    cluster: np.ndarray  # (nx, ny, nz) int64, -1 for solid
    clusters: np.ndarray  # (P, 2)
    plane: np.ndarray  # (P,)
    first_vertex: np.ndarray
    num_vertices: np.ndarray
    vertices: np.ndarray
    plane_normals: np.ndarray
    plane_dists: np.ndarray

    @property
    def normals(self) -> np.ndarray:
        return self.plane_normals[self.plane]

    @property
    def dists(self) -> np.ndarray:
        return self.plane_dists[self.plane]

    @property
    def num_inner(self) -> int:
        return len(self.plane)

    @property
    def cluster_of_leaf(self) -> np.ndarray:
        return self.cluster.ravel()

    @property
    def num_clusters(self) -> int:
        return int(self.cluster.max()) + 1


def make_grid(solid: np.ndarray) -> Grid:
    solid = np.asarray(solid, dtype=bool)
    shape = solid.shape
    cluster = np.full(shape, -1, dtype=np.int64)
    cluster[~solid] = np.arange(int((~solid).sum()))
    k = max(shape) + 1
    normals, dists = [], []
    for axis in range(3):
        for c in range(k):
            n = np.zeros(3)
            n[axis] = 1.0
            normals += [n, -n]
            dists += [float(c), -float(c)]
    clusters, plane, verts = [], [], []
    for axis in range(3):
        u, v = (axis + 1) % 3, (axis + 2) % 3
        for idx in np.argwhere(~solid):
            nb = idx.copy()
            nb[axis] += 1
            if nb[axis] >= shape[axis] or solid[tuple(nb)]:
                continue
            clusters.append((cluster[tuple(idx)], cluster[tuple(nb)]))
            plane.append(2 * (axis * k + int(nb[axis])))
            corner = nb.astype(float)
            quad = []
            for du, dv in ((0, 0), (1, 0), (1, 1), (0, 1)):
                p = corner.copy()
                p[u] += du
                p[v] += dv
                quad.append(p)
            verts += quad
    p = len(clusters)
    return Grid(solid, cluster, np.array(clusters, dtype=np.int64).reshape(-1, 2), np.array(plane, dtype=np.int64),
                np.arange(p, dtype=np.int64) * 4, np.full(p, 4, dtype=np.int64),
                np.array(verts, dtype=np.float64).reshape(-1, 3), np.array(normals), np.array(dists))


def grid_truth(grid: Grid, segments: int, rng: np.random.Generator) -> np.ndarray:
    """(C, C) bool: cluster pairs joined by random segments that stay in empty cubes."""
    shape = np.array(grid.solid.shape)
    empty = np.argwhere(~grid.solid)
    c = grid.num_clusters
    seen = np.zeros((c, c), dtype=bool)
    a = empty[rng.integers(0, len(empty), segments)] + rng.random((segments, 3))
    b = empty[rng.integers(0, len(empty), segments)] + rng.random((segments, 3))
    # local segments too: short ones through single openings
    half = segments // 2
    b[:half] = a[:half] + rng.normal(size=(half, 3)) * rng.random((half, 1)) * 2
    inside = np.all((b > 0) & (b < shape), axis=1)
    a, b = a[inside], b[inside]
    cell_b = np.floor(b).astype(np.int64)
    ok = ~grid.solid[cell_b[:, 0], cell_b[:, 1], cell_b[:, 2]]
    a, b = a[ok], b[ok]
    clear = np.ones(len(a), dtype=bool)
    d = b - a
    ts = [np.zeros((len(a), 1)), np.ones((len(a), 1))]
    for axis in range(3):
        for plane in range(1, int(shape[axis])):
            with np.errstate(divide="ignore", invalid="ignore"):
                t = (plane - a[:, axis]) / d[:, axis]
            ts.append(np.where((t > 0) & (t < 1), t, 1.0)[:, None])
    t = np.sort(np.concatenate(ts, axis=1), axis=1)
    mid = 0.5 * (t[:, 1:] + t[:, :-1])
    longer = t[:, 1:] - t[:, :-1] > 1e-12
    for j in range(mid.shape[1]):
        p = a + mid[:, j: j + 1] * d
        cell = np.clip(np.floor(p).astype(np.int64), 0, shape - 1)
        clear &= ~(longer[:, j] & grid.solid[cell[:, 0], cell[:, 1], cell[:, 2]])
    ca = grid.cluster[tuple(np.floor(a[clear]).astype(np.int64).T)]
    cb = grid.cluster[tuple(np.floor(b[clear]).astype(np.int64).T)]
    seen[ca, cb] = True
    seen[cb, ca] = True
    return seen


def random_solid(rng: np.random.Generator, shape=(6, 6, 3), density=0.35) -> np.ndarray:
    return rng.random(shape) < density
