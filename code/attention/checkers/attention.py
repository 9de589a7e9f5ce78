"""Checker of the exercise ``ex-numpy-attention`` (page "Masks"): scaled dot-product
attention in NumPy, ``fn(Q, K, V, mask=None) -> (O, A)``.

The contract the exercise states, and this checker tests:

* shapes: Q (..., T_q, d_k), K (..., T_k, d_k), V (..., T_k, d_v), with leading batch
  and head dimensions; returns O (..., T_q, d_v) and A (..., T_q, T_k), in that order;
* scores Q K^T / sqrt(d_k); A is their softmax along the keys (each row sums to 1),
  computed stably (the row maximum subtracted), so that large scores do not overflow;
* ``mask`` is boolean, True = "may attend", and broadcasts to (..., T_q, T_k); a masked
  key gets weight exactly 0; a query whose every key is masked gets all-zero weights and
  a zero output, never NaN;
* the outputs have the inputs' dtype (float16, float32 or float64).

When an attempt fails a case, the checker compares it with the usual mistakes on the same
inputs and names the one it matches; otherwise it says what differed and what the case
tests. Messages are wrapped to 76 columns.
"""

from __future__ import annotations

import math
import textwrap
import warnings
from collections.abc import Callable

import numpy as np

from ..forward import scaled_dot_product_attention
from ..masks import causal_mask, padding_mask
from ._common import _RNG_SEED, _run

WIDTH = 76  # printed lines fit the book's code column


# --- the usual mistakes, as implementations -------------------------------------------

def _variant(Q, K, V, mask=None, *, scale=None, axis=-1, fill=-np.inf,
             invert=False, after=None, guard=True, shift=True, out_scale=1.0):
    """Attention in float64 with one deliberate deviation from the contract.

    ``scale`` replaces 1/sqrt(d_k); ``axis`` is the softmax axis; ``fill`` is the value
    masked scores get (None: the mask is ignored); ``invert`` flips the mask; ``after``
    applies the mask to the weights instead ("zero": just zero them, "renormalise": zero
    them and divide by the new row sums); ``guard=False`` lets a fully masked row become
    NaN; ``shift=False`` skips the subtraction of the row maximum; ``out_scale``
    multiplies the output.
    """
    Q, K, V = (np.asarray(x, dtype=np.float64) for x in (Q, K, V))
    c = 1.0 / math.sqrt(Q.shape[-1]) if scale is None else scale
    S = c * (Q @ np.swapaxes(K, -1, -2))
    if mask is not None and invert:
        mask = ~np.asarray(mask)
    with np.errstate(all="ignore"):
        if mask is not None and after is None and fill is not None:
            S = np.where(mask, S, fill)
        m = S.max(axis=axis, keepdims=True) if shift else np.zeros(1)
        if guard:
            m = np.where(np.isneginf(m), 0.0, m)
        E = np.exp(S - m)
        total = E.sum(axis=axis, keepdims=True)
        if guard and fill is not None and np.isinf(fill):
            total = np.where(total == 0, 1.0, total)
        A = E / total
        if mask is not None and after is not None:
            A = np.where(mask, A, 0.0)
            if after == "renormalise":
                A = A / A.sum(axis=-1, keepdims=True)
        return out_scale * (A @ V), A


def _mistakes(d_k: int, d_v: int, T_k: int) -> list[tuple[str, str, dict]]:
    """(key, message, deviation) for every mistake the checker can name."""
    return [
        ("no-shift",
         "the softmax does not subtract each row's maximum before exp(): large scores "
         "overflow to inf and inf / inf is NaN; compute exp(S - S.max(-1)) instead",
         dict(shift=False)),
        ("unguarded",
         "a fully masked row gives NaN: with every score -inf, the row maximum is -inf "
         "and -inf - (-inf) is NaN (masking after the softmax gives 0 / 0 instead); "
         "such a row must get zero weights and a zero output: shift it by 0 and divide "
         "its zero sum by 1", dict(guard=False)),
        ("after-renormalise",
         "the mask is applied after the softmax and the weights renormalised: when a "
         "masked key's score is far above the allowed ones, their exponentials underflow "
         "to 0 and the renormalisation divides 0 by 0; set masked scores to -inf before "
         "the softmax", dict(after="renormalise")),
        ("after-zero",
         "the mask is applied after the softmax without renormalising, so the rows no "
         "longer sum to 1; set masked scores to -inf before the softmax",
         dict(after="zero")),
        ("inverted",
         "the mask is inverted: True means 'may attend', but your weights are zero where "
         "the mask is True", dict(invert=True)),
        ("ignored", "the mask is ignored: masked keys get weight", dict(fill=None)),
        ("zero-fill",
         "masked scores are set to 0 instead of -inf; a score of 0 is an ordinary score "
         "and still gets weight", dict(fill=0.0)),
        ("large-negative",
         "masked scores are set to a large negative number (such as -1e9) instead of "
         "-inf: a fully masked row then gets uniform weights and averages keys it must "
         "not see; the contract asks for zero weights and a zero output",
         dict(fill=-1e9)),
        ("axis",
         "the softmax runs along the wrong axis: the columns of A sum to 1; each row "
         "(one query over all keys) must sum to 1, axis=-1", dict(axis=-2)),
        ("axis", "the softmax runs along the wrong axis: the columns of A sum to 1; "
         "each row (one query over all keys) must sum to 1, axis=-1",
         dict(axis=-2, guard=False)),
        ("no-scale", "the scores are not scaled: divide Q K^T by sqrt(d_k)",
         dict(scale=1.0)),
        ("scale-on-output",
         "the scale divides the output instead of the scores: the weights are "
         "softmax(Q K^T), unscaled; divide Q K^T by sqrt(d_k) before the softmax, and "
         "O = A V", dict(scale=1.0, out_scale=1.0 / math.sqrt(d_k))),
        ("d_k", "the scores are divided by d_k instead of sqrt(d_k)",
         dict(scale=1.0 / d_k)),
        ("times-sqrt", "the scores are multiplied by sqrt(d_k) instead of divided by it",
         dict(scale=math.sqrt(d_k))),
        ("d_v", "the scale uses d_v (the width of V) instead of d_k, the width of Q and K",
         dict(scale=1.0 / math.sqrt(d_v))),
        ("T_k",
         "the scale uses T_k (the number of keys) instead of d_k, the width of Q and K",
         dict(scale=1.0 / math.sqrt(T_k))),
    ]


# --- comparing one attempt with the reference -----------------------------------------

def _same(got: np.ndarray, want: np.ndarray, atol: float) -> bool:
    return got.shape == want.shape and np.allclose(got, want, rtol=0.0, atol=atol,
                                                   equal_nan=True)


def _call(fn, Q, K, V, mask):
    """The attempt's (O, A) as arrays, or an exception whose message says what is wrong."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        result = fn(Q, K, V) if mask is None else fn(Q, K, V, mask=mask)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise TypeError(f"the function must return a pair (O, A), got "
                        f"{type(result).__name__}")
    O, A = result
    for name, x in (("the output O", O), ("the weights A", A)):
        if x is None:
            raise TypeError(f"{name} is None: return (O, A)")
    return np.asarray(O), np.asarray(A)


def _diagnose(O, A, Q, K, V, mask, O_ref, A_ref, atol) -> tuple[str, str]:
    """Say what is wrong with an attempt (O, A) that does not match (O_ref, A_ref).

    Returns (key, message); the key names the matched mistake, "" when none matched.
    """
    if O.shape == A_ref.shape and A.shape == O_ref.shape and O.shape != A.shape:
        return "swapped", "O and A are swapped: return (O, A), the output first"
    if A.shape != A_ref.shape or O.shape != O_ref.shape:
        transposed = A_ref.shape[:-2] + A_ref.shape[:-3:-1]
        hint = (": the weights are transposed; A has one row per query"
                if A.shape == transposed else "")
        return "shape", (f"shapes O {O.shape}, A {A.shape}; expected O {O_ref.shape}, "
                         f"A {A_ref.shape}{hint}")
    Af, Of = A.astype(np.float64), O.astype(np.float64)
    d_k, d_v, T_k = Q.shape[-1], V.shape[-1], K.shape[-2]
    matches = []
    for key, message, deviation in _mistakes(d_k, d_v, T_k):
        if mask is None and {"invert", "fill", "after"} & set(deviation):
            continue
        O_w, A_w = _variant(Q, K, V, mask, **deviation)
        if _same(A_w, A_ref, atol):
            continue  # this mistake makes no difference here
        if _same(Af, A_w, atol) and _same(Of, O_w, atol) and \
                key not in {k for k, _ in matches}:
            matches.append((key, message))
    keys = {key for key, _ in matches}
    if "unguarded" in keys:  # its message names both ways a fully masked row turns NaN
        matches = [(k, m) for k, m in matches if k != "after-renormalise"]
    if len(matches) == 1:
        return matches[0]
    if matches:  # this case cannot tell them apart: say so, and name each
        return matches[0][0], ("this case cannot tell which of these it is: "
                               + "; or: ".join(message for _, message in matches))
    if mask is not None:
        masked = ~np.broadcast_to(mask, A.shape)
        leak = np.abs(Af[masked]).max(initial=0.0)
        if 0.0 < leak < 1e-6:
            return "finite-fill", (f"masked keys get tiny weights (up to {leak:.2g}) instead of exactly "
                    "0: masked scores need -inf, whose exponential is exactly 0")
    if np.isnan(Af).any() or np.isnan(Of).any():
        return "", ("the result contains NaN where the reference has none: exp() of a score "
                "that overflowed (inf / inf), or a row whose every score is -inf "
                "(-inf - (-inf))")
    if _same(Af, A_ref, atol):
        if _same(Of, (Af @ V.astype(np.float64)) / math.sqrt(d_k), atol):
            return "output-scaled", ("the output is A V divided by sqrt(d_k): the scale belongs on the "
                    "scores, and O = A V")
        err = float(np.abs(Of - O_ref).max())
        return "", f"the weights are right but the output differs by up to {err:.3g}; O = A V"
    err = float(np.abs(Af - A_ref).max())
    return "", f"the weights differ from the reference by up to {err:.3g}"


def _case(fn, Q, K, V, mask=None, *, atol=1e-8, what="", on_error="", notes=None):
    """One comparison with the library's reference, as a case for ``_run``.

    ``what`` (what the case tests) is added when no known mistake matched, ``on_error``
    when the attempt raised, ``notes[key]`` when the mistake ``key`` matched.
    """
    def case():
        O_ref, A_ref = scaled_dot_product_attention(Q, K, V, mask=mask)
        O_ref, A_ref = O_ref.astype(np.float64), A_ref.astype(np.float64)
        try:
            O, A = _call(fn, Q, K, V, mask)
        except Exception as exc:
            return False, f"raised {type(exc).__name__}: {exc}{on_error}"
        exact = mask is None or not np.any(A[~np.broadcast_to(mask, A.shape)]) \
            if A.shape == A_ref.shape else False
        if exact and _same(A.astype(np.float64), A_ref, atol) and \
                _same(O.astype(np.float64), O_ref, atol):
            return True, ""
        key, detail = _diagnose(O, A, Q, K, V, mask, O_ref, A_ref, atol)
        extra = (notes or {}).get(key, "") if key else what
        return False, f"{detail}{extra}"
    return case


def _dtype_case(fn, Q, K, V, mask=None):
    def case():
        O, A = _call(fn, Q, K, V, mask)
        want = np.dtype(Q.dtype)
        if O.dtype != want or A.dtype != want:
            cause = ""
            if want == np.float32 and np.float64 in (O.dtype, A.dtype):
                cause = (": dividing by np.sqrt(d_k), a NumPy float64 scalar, turns a "
                         "float32 array into float64; use math.sqrt(d_k), or cast the "
                         "results with .astype(Q.dtype)")
            return False, (f"{want.name} inputs gave O of dtype {O.dtype} and A of "
                           f"dtype {A.dtype}; the contract keeps the input's dtype{cause}")
        return True, ""
    return case


def _report(results, verbose: bool) -> bool:
    details = {detail for _, ok, detail in results if not ok}
    if verbose and len(details) == 1 and not any(ok for _, ok, _ in results):
        # every case failed the same way (an unfinished skeleton): say it once
        print(textwrap.fill(f"✗ every case: {details.pop()}", WIDTH,
                            subsequent_indent="    "))
        print(f"0 of {len(results)} checks passed.")
    elif verbose:
        for name, ok, detail in results:
            line = f"{'✓' if ok else '✗'} {name}" + ("" if ok else f": {detail}")
            print(textwrap.fill(line, WIDTH, subsequent_indent="    ",
                                break_long_words=True, break_on_hyphens=False))
        n_ok = sum(ok for _, ok, _ in results)
        print(f"{n_ok} of {len(results)} checks passed.")
    return all(ok for _, ok, _ in results)


def _inputs(rng, batch=(), T_q=3, T_k=5, d_k=4, d_v=2):
    """Q, K, V with T_q, T_k, d_k, d_v all different, so that a wrong one shows."""
    return (rng.standard_normal(batch + (T_q, d_k)),
            rng.standard_normal(batch + (T_k, d_k)),
            rng.standard_normal(batch + (T_k, d_v)))


def check_scaled_dot_product_attention(fn: Callable, verbose: bool = True) -> bool:
    """Check ``fn(Q, K, V, mask=None) -> (O, A)`` against the contract in this module's
    docstring: twelve cases, one line each; returns True when all pass."""
    rng = np.random.default_rng(_RNG_SEED)
    Q, K, V = _inputs(rng)
    T_q, T_k = Q.shape[-2], K.shape[-2]

    # Large scores: the query 1000 times longer puts scores beyond float64's exp range.
    Q_big = 1000.0 * Q

    # A masked key far above the others: key 0's score exceeds every other by > 1000,
    # and key 0 is masked for every query.
    Q_far = Q.copy()
    Q_far[:, 0] = np.abs(Q_far[:, 0]) + 1.0
    K_far = K.copy()
    K_far[0] = [3000.0, 0.0, 0.0, 0.0]
    not_key_0 = np.ones((T_q, T_k), dtype=bool)
    not_key_0[1:, 0] = False  # query 0 may see key 0; the others may not

    empty_row = causal_mask(T_q, T_k)
    empty_row[1] = False  # query 1 may attend to nothing

    Qb, Kb, Vb = _inputs(rng, batch=(2, 3))  # (B, H, T, d)
    mask_bh = rng.random((2, 3, T_q, T_k)) < 0.6
    mask_bh[..., 0] = True  # every row sees key 0: no fully masked row here
    pad = padding_mask([4, 0], T_k)[:, None]  # (B, 1, 1, T_k); sequence 1 is empty

    Q32, K32, V32 = (x.astype(np.float32) for x in (Q, K, V))
    Q16, K16, V16 = (x.astype(np.float16) for x in (Q, K, V))

    def batched_error():
        # Said only if the batched case without a mask passed: then the attempt
        # handles batch dimensions, and the mask's shape is what it mishandles.
        if batched_ok:
            return ("; the mask has fewer dimensions than the scores and must broadcast "
                    "against them: np.where(mask, S, -np.inf) broadcasts, "
                    "S[~mask] = -np.inf does not")
        return ""

    results = [
        _run("weights and output, one head, no mask", _case(fn, Q, K, V)),
        _run("large scores (a query 1000 times longer)", _case(
            fn, Q_big, K, V,
            what="; the scores here exceed 700, where exp() overflows float64")),
        _run("a causal mask: masked keys get weight exactly 0",
             _case(fn, Q, K, V, causal_mask(T_q, T_k))),
        _run("a masked key whose score is far above the others", _case(
            fn, Q_far, K_far, V, not_key_0,
            what="; here key 0, masked for every query but the first, outscores "
                 "every other key by over 1000")),
        _run("a fully masked row gets zero weights and a zero output",
             _case(fn, Q, K, V, empty_row)),
    ]
    flat_ok = results[0][1]  # the same computation without batch dimensions passed
    results += [
        _run("batch and head dimensions (B, H, T, d), no mask", _case(
            fn, Qb, Kb, Vb,
            on_error="; with batch and head dimensions, transpose only the last two "
                     "axes, np.swapaxes(K, -1, -2) (K.T reverses every axis), and "
                     "multiply with @, not np.dot" if flat_ok else "")),
    ]
    batched_ok = results[-1][1]
    results += [
        _run("one (T_q, T_k) mask for every batch item and head",
             _case(fn, Qb, Kb, Vb, causal_mask(T_q, T_k), on_error=batched_error())),
        _run("a (B, H, T_q, T_k) mask", _case(fn, Qb, Kb, Vb, mask_bh)),
        _run("a (B, 1, 1, T_k) padding mask, one sequence empty",
             _case(fn, Qb, Kb, Vb, pad, on_error=batched_error())),
        _run("float32 inputs give float32 results", _dtype_case(fn, Q32, K32, V32)),
        _run("float16 inputs give float16 results", _dtype_case(fn, Q16, K16, V16)),
        _run("float16, causal mask with a fully masked row", _case(
            fn, Q16, K16, V16, empty_row, atol=5e-3,
            notes={"unguarded": " (in float16, -1e9 also rounds to -inf)"})),
    ]
    return _report(results, verbose)
