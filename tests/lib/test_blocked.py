"""The fast arrangement of the forward and backward passes (attention.blocked): query-row
blocks, grouped batch items, the scale folded into Q, the max shift on every block,
need_weights=False (the output alone, one block of scores at a time) and reusing the
forward pass's O and A.

Every result is compared with the formula of the pages written out directly, with block
sizes shrunk so that small inputs exercise every kind of block.
"""

from __future__ import annotations

import numpy as np
import pytest

import attention
import attention.blocked as blocked
from attention import (
    attention_backward,
    blocked_attention,
    blocked_attention_backward,
    causal_mask,
    measure,
    scaled_dot_product_attention,
    softmax,
)


def reference(Q, K, V, mask=None, temperature=1.0):
    """O and A straight from the formula, with the library's softmax (which shifts by the max)."""
    S = Q @ np.swapaxes(K, -1, -2) / (temperature * np.sqrt(Q.shape[-1]))
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = softmax(S)
    return A @ V, A


def reference_backward(Q, K, V, dO, mask=None, temperature=1.0):
    O, A = reference(Q, K, V, mask, temperature)
    c = 1.0 / (temperature * np.sqrt(Q.shape[-1]))
    dS = A * (dO @ np.swapaxes(V, -1, -2) - np.sum(dO * O, axis=-1, keepdims=True))
    return c * dS @ K, c * np.swapaxes(dS, -1, -2) @ Q, np.swapaxes(A, -1, -2) @ dO


@pytest.fixture(params=["row blocks", "item groups", "one block"])
def block_sizes(request, monkeypatch):
    """Shrink the blocks: rows of one item split over several blocks, several items per block,
    or (the default sizes) everything in one block."""
    if request.param == "row blocks":
        monkeypatch.setattr(blocked, "BLOCK_ENTRIES", 12)
        monkeypatch.setattr(blocked, "MIN_BLOCK_ROWS", 2)  # 7 queries: blocks of 2, 2, 2, 1 rows
    elif request.param == "item groups":
        monkeypatch.setattr(blocked, "BLOCK_ENTRIES", 7 * 6 * 2)  # two whole items per block
    return request.param


def _inputs(seed, scale=1.0, batch=(2, 3)):
    rng = np.random.default_rng(seed)
    Q = scale * rng.standard_normal(batch + (7, 5))
    K = scale * rng.standard_normal((batch[0], 1, 6, 5))  # one K shared by the heads
    V = rng.standard_normal((6, 4))  # one V for everything
    return Q, K, V


def _random_mask_with_empty_rows():
    m = np.random.default_rng(9).random((2, 3, 7, 6)) < 0.5
    m[0, 1, 2] = m[1, 2, 6] = False  # two queries that may see no key at all
    return m


MASKS = {
    "no mask": None,
    "causal, broadcast over batch and heads": causal_mask(7, 6),
    "random, one per head, with fully masked rows": _random_mask_with_empty_rows(),
}


@pytest.mark.parametrize("mask", MASKS.values(), ids=list(MASKS))
@pytest.mark.parametrize("scale", [1.0, 40.0], ids=["small scores", "large scores"])
def test_blocked_forward_equals_the_formula(block_sizes, mask, scale):
    Q, K, V = _inputs(1, scale)
    O_ref, A_ref = reference(Q, K, V, mask)
    O, A = blocked_attention(Q, K, V, mask=mask)
    np.testing.assert_allclose(A, A_ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(O, O_ref, rtol=1e-12, atol=1e-13)
    O_only, none = blocked_attention(Q, K, V, mask=mask, need_weights=False)
    assert none is None
    np.testing.assert_array_equal(O_only, O)
    if mask is not None:
        empty = ~np.broadcast_to(mask, A.shape).any(axis=-1)  # queries that see no key
        assert np.array_equal(O[empty], np.zeros_like(O[empty]))
        assert np.array_equal(A[empty], np.zeros_like(A[empty]))


def test_the_blocked_version_shifts_every_block_by_its_row_maximum(block_sizes, monkeypatch):
    """No block skips the shift, however small its scores (the stability page's lesson)."""
    calls = []
    real_shift = blocked._shift_by_row_max
    monkeypatch.setattr(blocked, "_shift_by_row_max",
                        lambda S, mask: (calls.append(S.shape), real_shift(S, mask)))
    Q, K, V = _inputs(2, scale=0.01)  # scores far too small to overflow anything
    blocked_attention(Q, K, V)
    n_blocks = len(list(blocked._blocks(6, 7, 6)))
    assert len(calls) == n_blocks and sum(np.prod(shape) for shape in calls) == 6 * 7 * 6


def test_plain_weights_are_bit_for_bit_the_shifted_formula():
    """The plain version is the page's algorithm, step for step: the same operations in the
    same order give the same bits (a version that skipped the shift, or worked in base 2,
    would differ in the last places)."""
    rng = np.random.default_rng(12)
    Q, K, V = (rng.standard_normal(s, dtype=np.float32) for s in ((3, 6, 8), (3, 9, 8), (3, 9, 4)))
    S = Q @ np.swapaxes(K, -1, -2)
    S *= float(1 / np.sqrt(8))  # a Python float, as the library uses: float32 arithmetic
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    A_ref = E / E.sum(axis=-1, keepdims=True)
    O, A = scaled_dot_product_attention(Q, K, V)
    np.testing.assert_array_equal(A, A_ref)
    np.testing.assert_array_equal(O, A_ref @ V)
    unshifted = np.exp(S) / np.exp(S).sum(axis=-1, keepdims=True)
    assert not np.array_equal(A, unshifted)  # the test can tell the two apart


@pytest.mark.parametrize("fn", [scaled_dot_product_attention, blocked_attention],
                         ids=["plain", "blocked"])
def test_scores_that_overflow_float32_raise_a_clear_error(fn):
    Q = np.full((2, 3), 1e20, dtype=np.float32)  # finite, but q . k = 3e40 overflows float32
    with pytest.raises(ValueError, match="overflowed float32"):
        fn(Q, Q, Q)
    with pytest.raises(ValueError, match="overflowed float32"):
        fn(Q, -Q, Q)  # every score -inf although no key is masked
    O, _ = fn(Q.astype(np.float64), Q, Q)  # float64 copes
    assert np.isfinite(O).all()


@pytest.mark.parametrize("fn", [scaled_dot_product_attention, blocked_attention],
                         ids=["plain", "blocked"])
def test_large_finite_inputs_pass_validation(fn):
    """The finiteness check's sum of squares overflows here; the closer look must accept."""
    x = np.full((3, 2), 3e30, dtype=np.float32)
    _, A = fn(x / 1e30, x / 1e30, x)
    np.testing.assert_allclose(A, 1 / 3, rtol=1e-6)


@pytest.mark.parametrize("mask", MASKS.values(), ids=list(MASKS))
def test_blocked_backward_equals_the_formula_and_reuses_O_and_A(block_sizes, mask):
    Q, K, V = _inputs(3)
    dO = np.random.default_rng(4).standard_normal((2, 3, 7, 4))
    expected = reference_backward(Q, K, V, dO, mask, temperature=0.8)
    shapes = [x.shape for x in (Q, K, V)]
    # the broadcast K and V get their gradients summed back to their own shapes
    expected = [attention._validate.sum_to_shape(g, s) for g, s in zip(expected, shapes)]
    recomputed = blocked_attention_backward(Q, K, V, dO, mask=mask, temperature=0.8)
    O, A = blocked_attention(Q, K, V, mask=mask, temperature=0.8)
    reused = blocked_attention_backward(Q, K, V, dO, mask=mask, temperature=0.8, O=O, A=A)
    plain = attention_backward(Q, K, V, dO, mask=mask, temperature=0.8)
    for got, want, other, shape in zip(recomputed, expected, plain, shapes):
        assert got.shape == other.shape == shape
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(other, want, rtol=1e-11, atol=1e-13)
    for a, b in zip(reused, recomputed):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("forward_fn, backward_fn", [
    (scaled_dot_product_attention, attention_backward),
    (blocked_attention, blocked_attention_backward)], ids=["plain", "blocked"])
def test_float16_is_computed_in_float32_and_cast_back(forward_fn, backward_fn):
    Q, K, V = (x.astype(np.float16) for x in _inputs(5, batch=(1, 2)))
    O, A = forward_fn(Q, K, V)
    assert O.dtype == A.dtype == np.float16
    O32, A32 = reference(*(x.astype(np.float32) for x in (Q, K, V)))
    np.testing.assert_allclose(O.astype(np.float32), O32, atol=2e-3)
    dQ, dK, dV = backward_fn(Q, K, V, np.ones(O.shape, dtype=np.float16))
    assert dQ.dtype == dK.dtype == dV.dtype == np.float16


def test_without_weights_memory_stays_far_below_the_weights_size():
    """need_weights=False keeps one block of scores, not the T x T weights."""
    T = 2048
    Q, K, V = measure.random_qkv(T, d=64, heads=1)
    weights_bytes = T * T * 4
    with_weights = measure.peak_memory(lambda: blocked_attention(Q, K, V))
    without = measure.peak_memory(lambda: blocked_attention(Q, K, V, need_weights=False))
    assert with_weights >= weights_bytes
    block = max(blocked.BLOCK_ENTRIES, blocked.MIN_BLOCK_ROWS * T)
    assert without <= block * 4 + 4 * T * 64 * 4, without  # one block + small arrays
    assert without < weights_bytes / 3


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-13), (np.float32, 1e-5), (np.float16, 2e-3)])
def test_blocked_output_only_path_divides_the_outputs_and_matches_the_weights_path(dtype, rtol):
    """need_weights=False normalises O, not A: the same outputs up to rounding, in every
    dtype, and a fully masked query still gets a zero output."""
    rng = np.random.default_rng(10)
    Q, K, V = (rng.standard_normal((2, 37, 16)).astype(dtype) for _ in range(3))
    mask = rng.random((37, 37)) < 0.7
    mask[5] = False  # query 5 sees no key
    O, A = blocked_attention(Q, K, V, mask=mask)
    O_only, none = blocked_attention(Q, K, V, mask=mask, need_weights=False)
    assert none is None and O_only.dtype == O.dtype == dtype
    np.testing.assert_allclose(O_only.astype(np.float64), O.astype(np.float64), rtol=rtol, atol=rtol)
    assert np.array_equal(O_only[:, 5], np.zeros((2, 16), dtype=dtype))
