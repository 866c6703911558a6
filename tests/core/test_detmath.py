"""detmath's functions that give the same bits with every NumPy version."""

from __future__ import annotations

import numpy as np

def test_arctan2_is_the_c_librarys_element_by_element():
    """NumPy 2's SIMD arctan2 differs from 1.26's in the last bit; detmath.arctan2 is libm's."""
    import math

    from brushbake.core.detmath import arctan2

    rng = np.random.default_rng(7)
    y, x = rng.normal(size=(2, 5000))
    y[:10], x[:10] = 0.0, np.array([1, -1, 0, 0, -0.0, 1e-300, -1e-300, np.inf, -np.inf, 2.0])
    got = arctan2(y, x)
    assert got.dtype == np.float64 and got.shape == y.shape
    assert [float(v) for v in got] == [math.atan2(a, b) for a, b in zip(y.tolist(), x.tolist())]
    assert arctan2(np.zeros((2, 3)), np.ones((2, 3))).shape == (2, 3)


def test_cos_sin_tan_are_the_c_librarys():
    """detmath.cos/sin/tan are libm's (what runtime_c/brushbake.c's camera queries compute with):
    NumPy's own tan differs from libm's in the last bit on many arguments."""
    import math

    from brushbake.core import detmath

    x = np.random.default_rng(8).uniform(-10, 10, 3000)
    for name in ("cos", "sin", "tan"):
        got = getattr(detmath, name)(x)
        assert got.dtype == np.float64 and got.shape == x.shape
        assert [float(v) for v in got] == [getattr(math, name)(v) for v in x.tolist()]
    assert detmath.tan(np.zeros((2, 3))).shape == (2, 3)


def test_core_uses_no_numpy_transcendentals_that_differ_between_numpy_versions():
    """np.arctan2, arccos, arcsin, exp and log differ between NumPy 1.26 and 2.x in the last bit;
    core/ computes what it stores without them (detmath.arctan2 instead).  vis_truth draws random
    segment lengths for tests and benchmarks only, so it may use them."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "core"
    bad = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "vis_truth.py":
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"np\.(arctan2|arccos|arcsin|arctan|exp|log|log2|log10|expm1|log1p)\(", line):
                bad.append(f"{path.relative_to(root)}:{i}: {line.strip()}")
    assert not bad, "\n".join(bad)


def test_ceil_log2_from_the_exponent():
    from brushbake.core.compile.trees.bsp import _ceil_log2

    x = np.array([0, 1, 2, 3, 4, 5, 7, 8, 9, 1023, 1024, 1025, 2**40, 2**40 + 1])
    assert _ceil_log2(x).tolist() == [0 if v <= 1 else (int(v) - 1).bit_length() for v in x.tolist()]


def test_arctan2_upper_is_within_4_ulp_of_the_c_library():
    """detmath.arctan2_upper (plain arithmetic, for y >= 0) against libm's atan2 over many decades,
    signs of x, zeros and the octant boundaries."""
    import math

    from brushbake.core.detmath import arctan2_upper

    rng = np.random.default_rng(11)
    n = 200_000
    y = np.abs(rng.normal(size=n)) * 10.0 ** rng.uniform(-12, 12, n)
    x = rng.normal(size=n) * 10.0 ** rng.uniform(-12, 12, n)
    y[:8] = [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, math.tan(math.pi / 8), 1e-300]
    x[:8] = [1.0, -1.0, 0.0, 0.0, 1.0, -1.0, 1.0, -1.0]
    got = arctan2_upper(y, x)
    want = np.array([math.atan2(a, b) for a, b in zip(y.tolist(), x.tolist())])
    assert got[0] == 0.0 and got[1] == math.pi and got[2] == 0.0 and got[3] == math.pi / 2
    assert np.all(np.abs(got - want) <= 4 * np.spacing(np.abs(want)))
    assert np.all((got >= 0) & (got <= math.pi))


def _matmul_in_order(a, b):
    """The reference: each term a plain product, summed left to right in Python floats' order,
    element by element (no NumPy reduction, no BLAS)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if b.ndim == 1:
        b2 = b[:, None]
    else:
        b2 = b
    a2 = a[None, :] if a.ndim == 1 else a
    shape = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2]) + a2.shape[-2:-1] + b2.shape[-1:]
    a3 = np.broadcast_to(a2, shape[:-2] + a2.shape[-2:])
    b3 = np.broadcast_to(b2, shape[:-2] + b2.shape[-2:])
    out = np.zeros(shape)
    for idx in np.ndindex(*shape):
        *lead, i, j = idx
        total = 0.0
        for k in range(a.shape[-1]):
            term = float(a3[(*lead, i, k)]) * float(b3[(*lead, k, j)])
            total = term if k == 0 else total + term
        out[idx] = total
    if b.ndim == 1:
        out = out[..., 0]
    if a.ndim == 1:
        out = out[..., 0, :] if b.ndim > 1 else out[..., 0]
    return out


def test_matmul_sums_each_product_in_order_whatever_the_shape():
    """detmath.matmul (summed in place into one buffer) gives the bits of the products summed
    term by term, k = 0, 1, ..., for every shape np.matmul takes, and np.matmul's shapes
    (an empty sum included)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from brushbake.core.detmath import matmul

    shapes = st.sampled_from([((5, 3), (3,)), ((3,), (3,)), ((3,), (3, 4)), ((7, 3), (3, 4)),
                              ((2, 5, 3), (2, 3, 6)), ((4, 6, 4), (4, 4, 2)), ((6, 1), (1, 3)),
                              ((3,), (2, 3, 4)), ((2, 1, 4, 3), (5, 3, 2)), ((0, 3), (3, 2))])

    @settings(max_examples=60, deadline=None)
    @given(shapes, st.integers(0, 2**32 - 1), st.integers(-6, 6))
    def check(pair, seed, scale):
        rng = np.random.default_rng(seed)
        a = rng.standard_normal(pair[0]) * 10.0**scale
        b = rng.standard_normal(pair[1]) * 10.0 ** -scale
        got = matmul(a, b)
        want = _matmul_in_order(a, b)
        assert np.shape(got) == np.matmul(a, b).shape
        assert np.array_equal(np.asarray(got).view(np.uint64), np.asarray(want).view(np.uint64))

    check()
    for sa, sb in [((2, 0), (0, 3)), ((0,), (0,)), ((4, 0), (0,)), ((0,), (0, 5)), ((3, 2, 0), (0, 4))]:
        got = matmul(np.zeros(sa), np.zeros(sb))
        assert np.shape(got) == np.matmul(np.zeros(sa), np.zeros(sb)).shape and not np.any(got)
