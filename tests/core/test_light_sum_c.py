"""Light's sums in C (core/compile/light/lm_sum_c.py, runtime_c/compiler/light_sum.c) against
np.add.at, to the bit: random rows, many to the same point (the order of the adds is what fixes
the rounding), on (P, 3) and (P,) totals that already hold values; indices outside refused with
nothing changed; and the kernel under ASan/UBSan (tests/c/sum_driver.c)."""

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


@pytest.mark.parametrize("bad", [False, True])
def test_sanitized_kernel_sums_as_add_at(sanitized_sum, tmp_path, bad):
    rng = np.random.default_rng(1)
    out = rng.normal(size=(30, 3))
    index = rng.integers(0, 30, size=500)
    if bad:
        index[250] = 30
    values = rng.normal(size=(500, 3))
    head = np.array([500, 3, 30], dtype=np.int64)
    (tmp_path / "in.bin").write_bytes(head.tobytes() + index.astype(np.int64).tobytes() + values.tobytes()
                                      + out.tobytes())
    run_sanitized(sanitized_sum, tmp_path)
    data = (tmp_path / "out.bin").read_bytes()
    code = int(np.frombuffer(data[:8], dtype=np.int64)[0])
    got = np.frombuffer(data[8:], dtype=np.float64).reshape(30, 3)
    want = out.copy()
    if not bad:
        np.add.at(want, index, values)
    assert code == (-2 if bad else 0) and np.array_equal(got.view(np.int64), want.view(np.int64))
