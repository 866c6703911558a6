"""The PVS rows' bytes: ceil(C / 8) bytes of bits a row, run-length coded as Quake's vis codes them
(a zero byte, then a count 1..255 of the zero bytes it stands for).  No queries: the file's reader
and writer (exporters/native.py) and the vis stage use these alone.
"""

from __future__ import annotations

import numpy as np


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
    their bytes, so the same matrix always gives the same arrays.  Each distinct row is coded as
    compress_row codes it, all of them at once (_compress_many: a row by compress_row's byte loop
    cost 0.13 ms at 10,000 clusters, 1.3 s a bake, growing with the square of the clusters)."""
    matrix = np.ascontiguousarray(matrix, dtype=np.uint8)
    offsets = np.zeros(len(matrix), dtype=np.uint32)
    first_of: dict[bytes, int] = {}
    unique: list[int] = []  # rows coded, in order of first appearance
    which = np.zeros(len(matrix), dtype=np.int64)
    for c in range(len(matrix)):
        key = matrix[c].tobytes()
        k = first_of.get(key)
        if k is None:
            k = first_of[key] = len(unique)
            unique.append(c)
        which[c] = k
    data, starts = _compress_many(matrix[np.array(unique, dtype=np.int64)] if unique else matrix[:0])
    offsets[:] = starts[which] if len(matrix) else offsets
    return offsets, data


def _compress_many(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """compress_row of each row, concatenated: (data (B,) uint8, each row's start (U,) int64).

    Items in row order: a nonzero byte (itself) or a run of zero bytes inside one row of length L
    (ceil(L / 255) pairs (0, 255) ... (0, the rest)), as compress_row's loop emits them."""
    u, b = rows.shape
    if u == 0 or b == 0:
        return np.zeros(0, dtype=np.uint8), np.zeros(u, dtype=np.int64)
    flat = rows.ravel()
    zero = flat == 0
    first_col = np.zeros(u * b, dtype=bool)
    first_col[::b] = True
    last_col = np.zeros(u * b, dtype=bool)
    last_col[b - 1 :: b] = True
    prev_zero = np.r_[False, zero[:-1]] & ~first_col
    next_zero = np.r_[zero[1:], False] & ~last_col
    run_start = np.flatnonzero(zero & ~prev_zero)
    run_len = np.flatnonzero(zero & ~next_zero) - run_start + 1
    lit = np.flatnonzero(~zero)
    pieces = (run_len + 254) // 255
    at = np.concatenate([lit, run_start])
    size = np.concatenate([np.ones(len(lit), dtype=np.int64), 2 * pieces])
    order = np.argsort(at, kind="stable")
    at, size = at[order], size[order]
    out_at = np.cumsum(size) - size
    data = np.zeros(int(size.sum()), dtype=np.uint8)
    is_lit = order < len(lit)
    data[out_at[is_lit]] = flat[at[is_lit]]
    # the runs' pairs: (0, 255) for every piece but the last, (0, L - 255 (pieces - 1)) for it
    run_out = out_at[~is_lit]
    run_k = order[~is_lit] - len(lit)
    piece_run = np.repeat(np.arange(len(run_k)), pieces[run_k])
    piece_no = np.arange(len(piece_run)) - np.repeat(np.cumsum(pieces[run_k]) - pieces[run_k], pieces[run_k])
    last = piece_no == pieces[run_k][piece_run] - 1
    count = np.where(last, run_len[run_k][piece_run] - 255 * piece_no, 255)
    data[run_out[piece_run] + 2 * piece_no + 1] = count.astype(np.uint8)
    row_size = np.bincount(at // b, weights=size, minlength=u).astype(np.int64)
    return data, np.cumsum(row_size) - row_size


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
