"""Light's sums in C (core/compile/light/lm_sum_c.py, runtime_c/compiler/light_sum.c) against
np.add.at, to the bit: random rows, many to the same point (the order of the adds is what fixes
the rounding), on (P, 3) and (P,) totals that already hold values; a bounce block's clear rays
(add_clear) against NumPy's products and np.add.at; indices outside refused with nothing
changed; and the kernels under ASan/UBSan (tests/c/sum_driver.c)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brushbake.core.compile.light import lm_sum_c

from sanitized import build_sanitized, run_sanitized


@pytest.fixture(autouse=True)
def _kernel_or_skip():
    if not lm_sum_c.BINDING.available():
        pytest.skip("the native library does not load here (no C compiler)")


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), points=st.integers(1, 50), n=st.integers(0, 3000),
       width=st.sampled_from([None, 1, 3]))
def test_add_rows_equals_add_at(seed, points, n, width):
    rng = np.random.default_rng(seed)
    shape = (points,) if width is None else (points, width)
    start = rng.normal(size=shape) * rng.choice([1e-8, 1.0, 1e8], size=shape)
    index = rng.integers(0, points, size=n)
    values = rng.normal(size=(n,) + shape[1:]) * rng.choice([1e-12, 1.0, 1e12], size=(n,) + shape[1:])
    want, got = start.copy(), start.copy()
    np.add.at(want, index, values)
    lm_sum_c.add_rows(got, index, values)
    assert np.array_equal(got.view(np.int64), want.view(np.int64))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), points=st.integers(1, 40), shooters=st.integers(1, 40),
       n=st.integers(0, 3000), width=st.sampled_from([1, 3]))
def test_add_clear_equals_the_products_added_at(seed, points, shooters, n, width):
    """Only the clear rays add, each its f times its shooter's row, in order: the rounding of the
    products and of the sums is NumPy's."""
    rng = np.random.default_rng(seed)
    start = rng.normal(size=(points, width)) * rng.choice([1e-8, 1.0, 1e8], size=(points, width))
    sent = rng.normal(size=(shooters, width)) * rng.choice([1e-12, 1.0, 1e12], size=(shooters, width))
    index, src = rng.integers(0, points, size=n), rng.integers(0, shooters, size=n)
    f = rng.random(n) * rng.choice([1e-9, 1.0, 1e9], size=n)
    kind = rng.integers(0, 4, size=n).astype(np.int8)
    want, got = start.copy(), start.copy()
    lm_sum_c.add_clear_numpy(want, index, kind, f, src, sent, 1)
    lm_sum_c.add_clear(got, index, kind, f, src, sent, 1)
    assert np.array_equal(got.view(np.int64), want.view(np.int64))


def test_add_clear_refuses_a_clear_rays_index_outside_and_reads_no_other():
    out, sent = np.zeros((4, 3)), np.ones((2, 3))
    kind = np.array([1, 0, 1], dtype=np.int8)
    for index, src in (([0, 0, 4], [0, 0, 1]), ([0, 0, -1], [0, 0, 1]), ([0, 0, 1], [0, 0, 2]),
                       ([0, 0, 1], [-1, 0, 1])):
        with pytest.raises(IndexError):
            lm_sum_c.add_clear(out, np.array(index), kind, np.ones(3), np.array(src), sent, 1)
    assert not out.any()  # refused before any row changed
    # a blocked ray's indices are never read, as the reference never reads them
    lm_sum_c.add_clear(out, np.array([0, 99, 1]), kind, np.array([2.0, 5.0, 3.0]), np.array([0, 99, 1]), sent, 1)
    assert np.array_equal(out, [[2.0] * 3, [3.0] * 3, [0.0] * 3, [0.0] * 3])
    assert lm_sum_c.clear_adder("numpy") == lm_sum_c.add_clear_numpy
    assert lm_sum_c.clear_adder("c") == lm_sum_c.add_clear


def test_add_clear_refuses_what_numpy_refuses_and_reads_sent_before_summing():
    out = np.zeros((4, 1))
    with pytest.raises(IndexError):  # float indices, as np.add.at refuses them
        lm_sum_c.add_clear(out, np.array([0.0]), np.array([1]), np.ones(1), np.array([0]), np.ones((2, 1)), 1)
    with pytest.raises(ValueError):  # sent of another width
        lm_sum_c.add_clear(out, np.array([0]), np.array([1]), np.ones(1), np.array([0]), np.ones((2, 3)), 1)
    assert not out.any()
    # a kind that an int8 would wrap to the clear one is not clear
    lm_sum_c.add_clear(out, np.array([0, 1]), np.array([257, 1], dtype=np.int64), np.ones(2), np.array([0, 0]),
                       np.ones((1, 1)), 1)
    assert out[:, 0].tolist() == [0.0, 1.0, 0.0, 0.0]
    # sent sharing out's memory: every product made from sent as it was, as NumPy makes them
    got, want = np.array([[1.0], [2.0]]), np.array([[1.0], [2.0]])
    args = (np.array([0, 1]), np.array([0, 0], dtype=np.int8), np.ones(2), np.array([1, 0]))
    lm_sum_c.add_clear(got, *args, got, 0)
    lm_sum_c.add_clear_numpy(want, *args, want.copy(), 0)
    assert got.tolist() == want.tolist() == [[3.0], [3.0]]


def test_outside_indices_and_wrong_arrays_are_refused():
    out = np.zeros((4, 3))
    with pytest.raises(IndexError):
        lm_sum_c.add_rows(out, np.array([0, 4]), np.ones((2, 3)))
    with pytest.raises(IndexError):
        lm_sum_c.add_rows(out, np.array([1, -1]), np.ones((2, 3)))
    assert not out.any()  # refused before any row changed
    with pytest.raises(ValueError):
        lm_sum_c.add_rows(np.zeros((4, 3), dtype=np.float32), np.array([0]), np.ones((1, 3)))
    assert lm_sum_c.adder("numpy") == np.add.at and lm_sum_c.adder("c") == lm_sum_c.add_rows


@pytest.fixture(scope="module")
def sanitized_sum(tmp_path_factory):
    return build_sanitized(tmp_path_factory, "sum_driver", ["light_sum"])


def _driven(driver, tmp_path, arrays: list, shape) -> tuple[int, np.ndarray]:
    """The driver run on the arrays written one after another (integers as int64, int8 and
    floats as they are): (its return code, out after the sums)."""
    raw = [a.astype(np.int64) if a.dtype.kind == "i" and a.dtype != np.int8 else a for a in arrays]
    (tmp_path / "in.bin").write_bytes(b"".join(a.tobytes() for a in raw))
    run_sanitized(driver, tmp_path)
    data = (tmp_path / "out.bin").read_bytes()
    return int(np.frombuffer(data[:8], dtype=np.int64)[0]), np.frombuffer(data[8:], dtype=np.float64).reshape(shape)


@pytest.mark.parametrize("bad", [False, True])
def test_sanitized_kernel_sums_as_add_at(sanitized_sum, tmp_path, bad):
    rng = np.random.default_rng(1)
    out = rng.normal(size=(30, 3))
    index = rng.integers(0, 30, size=500)
    if bad:
        index[250] = 30
    values = rng.normal(size=(500, 3))
    code, got = _driven(sanitized_sum, tmp_path, [np.array([0, 500, 3, 30]), index, values, out], out.shape)
    want = out.copy()
    if not bad:
        np.add.at(want, index, values)
    assert code == (-2 if bad else 0) and np.array_equal(got.view(np.int64), want.view(np.int64))


@pytest.mark.parametrize("bad", [False, True])
def test_sanitized_kernel_adds_clear_rays_as_the_reference(sanitized_sum, tmp_path, bad):
    rng = np.random.default_rng(2)
    out, sent = rng.normal(size=(30, 3)), rng.normal(size=(12, 3))
    index, src = rng.integers(0, 30, size=500), rng.integers(0, 12, size=500)
    f, kind = rng.random(500), rng.integers(0, 3, size=500).astype(np.int8)
    kind[100] = 1
    if bad:
        src[100] = 12
    code, got = _driven(sanitized_sum, tmp_path, [np.array([1, 500, 3, 30, 12, 1]), index, src, f, kind, sent, out],
                        out.shape)
    want = out.copy()
    if not bad:
        lm_sum_c.add_clear_numpy(want, index, kind, f, src, sent, 1)
    assert code == (-2 if bad else 0) and np.array_equal(got.view(np.int64), want.view(np.int64))
