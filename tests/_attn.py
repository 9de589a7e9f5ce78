"""Shared settings and small builders for the tests of the helper package ``attention``.

Hypothesis runs derandomized (the same examples on every run, so two runs agree) with
few examples, to keep the library suite fast. Apply ``@FAST`` under ``@given``.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

settings.register_profile(
    "attention-lib",
    derandomize=True,
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
# A settings object built from the profile, applied per test: loading the profile
# globally would change other test files' hypothesis settings too.
FAST = settings(settings.get_profile("attention-lib"))

finite = st.floats(-30.0, 30.0, allow_nan=False, allow_infinity=False, width=64)


def score_rows(max_rows: int = 4, max_cols: int = 8):
    """2-D float64 arrays of moderate scores."""
    shape = st.tuples(st.integers(1, max_rows), st.integers(1, max_cols))
    return arrays(np.float64, shape, elements=finite)


@st.composite
def qkv(draw, max_T: int = 5, max_d: int = 4, batch=()):
    """(Q, K, V) float64 with random small sizes, drawn from a seed (fast to generate)."""
    T_q = draw(st.integers(1, max_T))
    T_k = draw(st.integers(1, max_T))
    d_k = draw(st.integers(1, max_d))
    d_v = draw(st.integers(1, max_d))
    scale = draw(st.sampled_from([0.1, 1.0, 3.0]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    Q = scale * rng.standard_normal(batch + (T_q, d_k))
    K = scale * rng.standard_normal(batch + (T_k, d_k))
    V = rng.standard_normal(batch + (T_k, d_v))
    return Q, K, V


def random_qkv(seed: int, T_q: int = 4, T_k: int = 5, d_k: int = 3, d_v: int = 2, batch=(),
               dtype=np.float64):
    rng = np.random.default_rng(seed)
    return tuple(
        rng.standard_normal(batch + shape).astype(dtype)
        for shape in ((T_q, d_k), (T_k, d_k), (T_k, d_v))
    )
