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
