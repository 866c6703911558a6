"""Light's sums in C (core/compile/light/lm_sum_c.py, runtime_c/compiler/light_sum.c) against
np.add.at, to the bit: random rows, many to the same point (the order of the adds is what fixes
the rounding), on (P, 3) and (P,) totals that already hold values; and indices outside refused."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brushbake.core.compile.light import lm_sum_c


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
    with pytest.raises(ValueError):
        lm_sum_c.add_rows(np.zeros((4, 3), dtype=np.float32), np.array([0]), np.ones((1, 3)))
    assert lm_sum_c.adder("numpy") == np.add.at and lm_sum_c.adder("c") == lm_sum_c.add_rows
