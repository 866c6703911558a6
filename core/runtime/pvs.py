"""The potentially visible set at run time: compressed rows, 'can cluster A see cluster B',
'which leaves can this point see', batch over points.

A level baked with visibility carries three arrays (docs/FORMAT.md, sections VSLC, VSRO, VSRD):
- vis_leaf_cluster (L,) int32: the visibility cluster of each leaf, or -1 for a leaf with no row
  (solid leaves, and on a sealed map the cells outside it);
- vis_row_offset (C,) uint32: where cluster c's compressed row starts in vis_rows (identical rows
  may share bytes);
- vis_rows (B,) uint8: the rows, each ceil(C / 8) bytes of bits (bit b & 7 of byte b >> 3 set when
  cluster b is potentially visible) run-length compressed as Quake's vis does: a zero byte is
  followed by a count (1..255) of zero bytes it stands for; any other byte stands for itself.

A point whose leaf has no cluster (inside solid, or outside a sealed map) is answered
conservatively: it sees, and is seen by, everything (Quake's 'novis' row).  Every query is a NumPy
batch; nothing here imports the compiler.
"""

from __future__ import annotations

import numpy as np

from .cruntime import c_level, check_backend
from .pvs_rows import (  # noqa: F401 -- the codec, named here for callers
    compress_row,
    compress_rows,
    decompress_rows,
    pack_bits,
    row_bytes,
    unpack_bits,
)
from .query import point_leaves

# --------------------------------------------------------------------------------------------
# Queries


class Visibility:
    """A level's PVS decompressed once: (C, ceil(C/8)) bits and the cluster of each leaf."""

    def __init__(self, level):
        if not has_vis(level):
            raise ValueError("the level was baked without visibility (bake with --vis flow, fast or sample)")
        self.level = level
        self.leaf_cluster = np.asarray(level.vis_leaf_cluster, dtype=np.int64)
        self.num_clusters = len(level.vis_row_offset)
        self.bits = decompress_rows(level.vis_row_offset, level.vis_rows, self.num_clusters)

    def matrix(self) -> np.ndarray:
        """(C, C) bool: row a, column b set when cluster a may see cluster b."""
        return unpack_bits(self.bits, self.num_clusters)

    def clusters_of_points(self, points) -> np.ndarray:
        """(N,) int64 cluster of each point's leaf (-1: no row, sees everything)."""
        return self.leaf_cluster[point_leaves(self.level, points)]

    def can_see(self, a, b) -> np.ndarray:
        """(N,) bool for cluster arrays a, b (-1 on either side: True, conservatively)."""
        a = np.asarray(a, dtype=np.int64).ravel()
        b = np.asarray(b, dtype=np.int64).ravel()
        out = np.ones(np.broadcast(a, b).shape, dtype=bool)
        ok = (a >= 0) & (b >= 0)
        aa, bb = np.broadcast_to(a, out.shape)[ok], np.broadcast_to(b, out.shape)[ok]
        out[ok] = ((self.bits[aa, bb >> 3] >> (bb & 7).astype(np.uint8)) & 1).astype(bool)
        return out

    def can_see_points(self, pairs, backend: str = "numpy") -> np.ndarray:
        """(N, 2, 3) point pairs -> (N,) uint8: 1 where the first point's leaf may see the second's.
        backend "c": the C run-time (core/runtime/cruntime.py), the same answers."""
        if backend != "numpy":
            check_backend(backend)
            return c_level(self.level).can_see_points(pairs)
        p = np.asarray(pairs, dtype=np.float64).reshape(-1, 2, 3)
        ca = self.clusters_of_points(p[:, 0])
        cb = self.clusters_of_points(p[:, 1])
        return self.can_see(ca, cb).astype(np.uint8)

    def see_matrix(self, a, b) -> np.ndarray:
        """(len(a), len(b)) bool: cluster a[i] may see cluster b[j] (-1 anywhere: True)."""
        a = np.asarray(a, dtype=np.int64).ravel()
        b = np.asarray(b, dtype=np.int64).ravel()
        out = np.ones((len(a), len(b)), dtype=bool)
        ra, rb = np.flatnonzero(a >= 0), np.flatnonzero(b >= 0)
        if len(ra) and len(rb):
            cb = b[rb]
            rows = self.bits[a[ra]][:, cb >> 3]  # (ra, rb) bytes
            out[np.ix_(ra, rb)] = ((rows >> (cb & 7).astype(np.uint8)[None, :]) & 1).astype(bool)
        return out

    def visible_leaf_mask(self, points) -> np.ndarray:
        """(N, L) bool: the leaves each point's PVS holds (leaves with a cluster only, except that a
        point with no cluster sees every leaf)."""
        clusters = self.clusters_of_points(points)
        leaf_has = self.leaf_cluster >= 0
        mask = self.see_matrix(clusters, np.where(leaf_has, self.leaf_cluster, 0))
        mask &= leaf_has[None, :] | (clusters[:, None] < 0)
        return mask

    def visible_leaves(self, point) -> np.ndarray:
        """Indices of the leaves one point may see."""
        return np.flatnonzero(self.visible_leaf_mask(np.asarray(point, dtype=np.float64).reshape(1, 3))[0])


def has_vis(level) -> bool:
    return len(getattr(level, "vis_row_offset", ())) > 0


def visibility(level) -> Visibility:
    """The level's Visibility, decompressed once and kept on the level."""
    vis = getattr(level, "_visibility", None)
    if vis is None or vis.level is not level:
        vis = Visibility(level)
        try:
            level._visibility = vis
        except AttributeError:
            pass
    return vis
