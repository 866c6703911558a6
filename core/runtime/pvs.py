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

from .query import point_leaves


def row_bytes(num_clusters: int) -> int:
    return (int(num_clusters) + 7) // 8


# --------------------------------------------------------------------------------------------
# Compression


def compress_row(bits: np.ndarray) -> bytes:
    """One row of packed bits (uint8) -> Quake RLE bytes (a zero byte, then a count 1..255)."""
    data = np.asarray(bits, dtype=np.uint8).ravel().tobytes()
    out, i, n = bytearray(), 0, len(data)
    while i < n:
        if data[i]:
            out.append(data[i])
            i += 1
            continue
        k = i
        while k < n and data[k] == 0 and k - i < 255:
            k += 1
        out += bytes((0, k - i))
        i = k
    return bytes(out)


def compress_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(C, row_bytes) packed bits -> (offsets (C,) uint32, data (B,) uint8); identical rows share
    their bytes, so the same matrix always gives the same arrays."""
    matrix = np.ascontiguousarray(matrix, dtype=np.uint8)
    offsets = np.zeros(len(matrix), dtype=np.uint32)
    seen: dict[bytes, int] = {}
    chunks, size = [], 0
    for c in range(len(matrix)):
        key = matrix[c].tobytes()
        if key not in seen:
            packed = compress_row(matrix[c])
            seen[key] = size
            chunks.append(packed)
            size += len(packed)
        offsets[c] = seen[key]
    data = np.frombuffer(b"".join(chunks), dtype=np.uint8).copy()
    return offsets, data


def decompress_rows(offsets: np.ndarray, data: np.ndarray, num_clusters: int) -> np.ndarray:
    """(C, row_bytes) uint8 packed bits from the compressed rows, in NumPy (no loop over bytes).

    A byte is a count exactly when the byte before it is a zero (counts are never zero), so the
    tokens are found at once; a row is the tokens from its offset until ceil(C/8) bytes are out.
    Raises ValueError when a row does not decode to exactly that many bytes inside `data`, starts
    on a count, or has a zero count or a set bit beyond the last cluster."""
    offsets = np.asarray(offsets, dtype=np.int64).ravel()
    data = np.asarray(data, dtype=np.uint8).ravel()
    nbytes = row_bytes(num_clusters)
    if len(offsets) != num_clusters:
        raise ValueError(f"{len(offsets)} row offsets for {num_clusters} clusters")
    if num_clusters == 0:
        return np.zeros((0, 0), dtype=np.uint8)
    if np.any(offsets >= len(data)):
        c = int(np.flatnonzero(offsets >= len(data))[0])
        raise ValueError(f"cluster {c}'s row starts at byte {int(offsets[c])}, beyond the {len(data)} there are")
    zero = data == 0
    is_count = np.zeros(len(data), dtype=bool)
    is_count[1:] = zero[:-1]
    # a zero count is invalid; a zero byte at the very end lacks its count
    if np.any(is_count & zero):
        raise ValueError(f"a zero run at byte {int(np.flatnonzero(is_count & zero)[0]) - 1} has count 0")
    out_len = np.where(is_count, 0, 1).astype(np.int64)
    zero_tok = zero & ~is_count
    has_count = np.flatnonzero(zero_tok)
    if len(has_count) and has_count[-1] == len(data) - 1:
        out_len[-1] = 1 << 40  # a row reaching it overshoots and fails the length check below
    else:
        out_len[has_count] = data[has_count + 1].astype(np.int64)
    if np.any(is_count[offsets]):
        c = int(np.flatnonzero(is_count[offsets])[0])
        raise ValueError(f"cluster {c}'s row starts on a run count")
    before = np.concatenate(([0], np.cumsum(out_len)))  # output position before each byte
    start = before[offsets]
    # the byte where the row's output reaches nbytes: before[end] == start + nbytes, a token start
    ends = np.searchsorted(before, start + nbytes, side="left")
    good = (ends <= len(data)) & (before[np.minimum(ends, len(data))] == start + nbytes)
    good &= ends > offsets
    if not np.all(good):
        c = int(np.flatnonzero(~good)[0])
        raise ValueError(f"cluster {c}'s row does not decode to exactly {nbytes} bytes")
    # build the output: for every row, its tokens from offsets[c] to ends[c]
    lengths = ends - offsets
    byte_index = np.repeat(offsets - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
    tok_len = out_len[byte_index]
    tok_val = np.where(zero_tok[byte_index], 0, data[byte_index])
    matrix = np.repeat(tok_val, np.maximum(tok_len, 0)).astype(np.uint8).reshape(num_clusters, nbytes)
    extra = num_clusters % 8
    if extra and np.any(matrix[:, -1] >> np.uint8(extra)):
        c = int(np.flatnonzero(matrix[:, -1] >> np.uint8(extra))[0])
        raise ValueError(f"cluster {c}'s row sets bits beyond the {num_clusters} clusters")
    return matrix


def pack_bits(visible: np.ndarray) -> np.ndarray:
    """(C, C) bool -> (C, ceil(C/8)) uint8, bit c & 7 of byte c >> 3 (little bit order, as Quake)."""
    return np.packbits(np.asarray(visible, dtype=bool), axis=1, bitorder="little")


def unpack_bits(matrix: np.ndarray, num_clusters: int) -> np.ndarray:
    return np.unpackbits(matrix, axis=1, bitorder="little", count=num_clusters).astype(bool)


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
            from .cruntime import c_level, check_backend

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
