"""Checker of Exercise 9, ``ex-backward`` (page "The backward pass, by hand"): the
gradients of attention in NumPy, ``fn(Q, K, V, dO, mask=None) -> (dQ, dK, dV)``.

The contract the exercise states, and this checker tests:

* shapes: Q (..., T_q, d_k), K (..., T_k, d_k), V (..., T_k, d_v) and dO (..., T_q, d_v),
  with leading batch and head dimensions (B, H), one (B,), or three, (2, 3, 2, T, d)
  (code written per ndim shows); each gradient has the shape of its input, and they
  are returned in the order (dQ, dK, dV);
* every row counts all its keys: one masked case has T_k = 4999 (prime: not a
  multiple of any block size), each row's maximum growing from each block of 64 (up
  to 4096) keys to the next (an online softmax that does not rescale its running sum
  when the running maximum grows is named, with a block size that gives its
  answer; D summed over the first keys fails); its row 1 hides every key but its
  last (a first block of any size up to 4998 is fully masked there; st21a: with 4200 hidden, blocks of 4201 to
  4998 keys passed), and another case's rows their first 3 and 2, so that an online
  softmax whose running maximum starts at -inf, NaN on a fully masked first block,
  is named, and so is that NaN made zeros by np.nan_to_num (the gradients of those
  rows fully masked; st17a: it passed);
* the forward pass is the attention of ``ex-numpy-attention``: S = c Q K^T with
  c = 1/sqrt(d_k), A = softmax(S) along the keys, O = A V; ``mask`` is boolean, True =
  "may attend", broadcasts to (..., T_q, T_k) as it is (the cases give it as (T_k,),
  on T_q != T_k and on T_q = T_k, where read as one flag per query, ``mask[:, None]``,
  it broadcasts and is named; all-False (T_k,), an empty sequence;
  (T_q, T_k), (B, T_q, T_k) for 3-D inputs, (B, 1, 1, T_k), (B, H, T_q, T_k), and
  (H, T_q, T_k) for 4-D inputs, one per head, with B = H = 3: a mask given new axes,
  ``mask[:, None]`` on a 3-D one (on 3-D inputs it adds an axis; on 4-D ones it reads
  the mask as (B, T_q, T_k), one per batch item) or ``mask[:, None, None]`` on a
  (T_k,) one, is named), and a masked score is -inf before the softmax, or a finite
  fill below every visible score (``np.finfo(np.float64).min`` as the fill is
  accepted: it ties only with a visible score of exactly that value, which no case
  has); a query whose every key is masked has zero weights and a zero output, so its
  gradients are zero, never NaN; and so has every query when there is no key at all
  (T_k = 0: K (0, d_k), V (0, d_v), with and without a (T_q, 0) mask, in float64,
  float32 and float16, and with (B, H) axes): dQ zeros (..., T_q, d_k), dK
  (..., 0, d_k), dV (..., 0, d_v) (a plain S.max(axis=-1), which raises there, is
  told initial=-np.inf; zeros built by hand without the leading axes, or in float32
  for float16 inputs, are named, st20a); one key, T_k = 1, on (B, H) inputs with a
  (T_q, 1) mask that hides it from one query, whose gradients are zero (a shortcut
  giving the one key weight 1, dV = dO summed over every query, is named where the
  same rows masked over two keys come out right; st21a: it passed); ``mask=None`` is
  no mask (on T_q = T_k, a
  causal mask applied by default is named, st20a);
* the gradients have the inputs' dtype (float64 in, float64 out, not long double;
  float32 in, float32 out; float16 in, float16 out, within 1e-2 of the exact gradients,
  2e-3 at the high scores);
* the inputs and the mask are left unchanged (no ``Q *= c`` on the caller's array);
* the gradients are NumPy arrays (not lists, not ``np.ma`` masked arrays), computed
  in NumPy: an attempt that runs
  the library's own backward pass (``attention.attention_backward``,
  ``tiled_attention_backward`` or ``blocked_attention_backward``), its forward
  attention (``attention.scaled_dot_product_attention`` and the others of
  ``_engine._library_attention``), its softmax (``attention.softmax``,
  ``softmax_vjp`` and the others of ``_engine._library_softmax``), or PyTorch's
  autograd (``torch.autograd.backward``, which ``Tensor.backward()`` calls, and
  ``torch.autograd.grad``, which ``torch.autograd.functional`` and ``torch.func.vjp``
  call; and its forward mode, ``torch.autograd.forward_ad.make_dual`` and
  ``unpack_dual``, which ``torch.func.jvp``, ``jacfwd`` and ``linearize`` call;
  st22a: dual numbers passed), is refused where the profiler of ``_engine._refusing_the_library`` sees the
  call (its blind spots are listed there).

Eleven cases: one head without and with a causal mask, compared with central differences
in float64 (they know nothing of the derivation), and with a (T_k,) mask, an all-False
one, no key at all (T_k = 0), a masked row of 4999 keys and rows whose first keys are
masked; one head with T_q = T_k (where a missing transpose
does not change a shape, only the values), without and with a (T_k,) mask (without
one, a causal mask applied by default is named);
one head with
scores near 7000 (no row maximum subtracted overflows) and one query's scores near
-1000 (a shift that is not the row's own maximum, clamped at 0 or the whole array's,
underflows), and at d_k = 1 saturated rows that are not one-hot (scores [9, 0, 0, 0]
to [32, 0, 0, 0], largest weights 1 - 3.7e-4 to 1 - 3.8e-14), whose dQ is compared
row by row, each to a relative 1e-4 of its own size (9.3e-3 at [29, 0, 0, 0] and 0.19
at [32, 0, 0, 0], where one rounding of A is more; a backward pass that skips rows
above a threshold on A.max(), even 1 - 1e-13, or flushes weights below 1e-13 or dS
below 1e-14 to 0, shows; and one query at [40, 0, 0, 0], whose largest weight is
exactly 1.0 in float64 and whose others are 4.2e-18: its small keys' dS_j, dK's rows
and dV's are exact to a few roundings there, and only dQ and the top key's dK,
differences of numbers near 1, are not, so each entry is compared with ROUNDINGS
roundings of the size of its terms (relatively for the small keys, absolutely for the
top key's): a backward pass that zeroes dS where A.max() == 1.0, or above 1 - 1e-15,
or flushes weights below 1e-15, is named (st17a: these passed); one with masked keys
far above the others (masking after the softmax underflows; one scores near 1e300, which a finite bias added to it, such as -1e9, leaves
on top) and one query's visible keys near -1e12, then near -1e300, finite (below a
finite fill such as -1e15 or float32's -3.4e38, and below a row maximum clamped from
below at -1e13), and, at d_k = 1, a masked key near 1.4e308 above visible keys near
-1e308 (finite), which even ``np.finfo(np.float64).min`` added to it leaves on top,
and a visible key near -1.79e308, above which a finite fill of -1.5e308 or -1.75e308
lies; three with batch and head dimensions (B, H): no mask (and 5-D inputs, and no key at
all), one causal mask for every head (and one key, T_k = 1, hidden from one query), a
(B, 1, 1, T_k) padding mask with lengths 4 and 0 (a guard for queries that see no key
that looks only at a full-shape mask shows); other sizes on 3-D inputs (B, T, d),
(3, 2, 9) queries against 8 keys with d_v = 4 and a (T_q, T_k) mask, the same with
B = 1, T_q = 1 (a size-1 axis dropped, as np.squeeze does, shows), and with a (B, T_q, T_k)
mask, and the forward checker's sizes drawn afresh on each call
(``attention.checkers.attention._draw_sizes``, T_k from 2, query 0 seeing keys 0 and 1
under the drawn mask: where every row sees one key, dS is rounding noise; dO drawn from
the sizes; a failure prints the sizes and the seed, and ``_drawn_inputs(seed)`` here
gives the inputs again; st21a, st22a); a full (B, H, T_q, T_k) mask in
which some queries see no key, and an (H, T_q, T_k) mask on inputs with B = H = 3, whose
heads' masks differ; and float32 inputs with scores above 100 (float32's exp()
overflows above 88.7), with a causal mask and without one, and at small scores with
the (B, H, T_q, T_k) mask in which some queries see no key (st18a: empty rows were
checked in float64 only, and a finite fill in float32 that left them uniform passed),
compared with the inputs' exact gradients, and float16 inputs (with that mask too, and with no key at all), whose gradients must be float16: at small scores
within 1e-2, and with scores from 15 to 36 (d_k = 8; float16's exp() overflows above
11.1) and near 9600 (d_k = 64; the raw products pass 65504) within 2e-3, which only a
computation in float32 cast back meets; and, masked, with visible scores near -65600
(below float16's -65504: float16's minimum as the fill of float32 scores is named),
and the forward checker's float16 scores near 65600 and 514000; with those, and at
d_k = 2 a query's visible scores near 7.1e6 and another's near 1.4e299 (one-hot),
scores clipped from above before exp() (np.minimum(S, 1e4), at float16's 65504, 1e5,
1e6, or anywhere below 7e298) are named (st16a: such clips passed while no visible
score exceeded 9600).
At d_k = 5 a scale of 1/int(np.sqrt(d_k)) equals 1/sqrt(T_q): both are named (an
integer root is told that int() or // truncates the scale). Every
size differs
from every other (B = 2, H = 3, T_q = 4, d_k = 5, T_k = 6, d_v = 7; but for the
(H, T_q, T_k) mask's B = H = 3, on purpose), so that a size read from the wrong axis
shows. When an attempt fails a case,
the checker compares it with the usual mistakes on the same inputs and names the one it
matches. Messages are wrapped to 76 columns.

Blind spots: the page's equations written in PyTorch's operations, with no autograd (or
with ``torch.nn.functional.scaled_dot_product_attention`` for O), on tensors made from
the inputs, are not refused: such an attempt passes if its numbers are right. The checker
checks the gradients' values, not how they were found: gradients found numerically in
NumPy, entry by entry, pass where they are accurate enough (st22a: the complex step
passed every case, in 179 s); no time is measured (a timed check fails on a loaded
machine).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from types import SimpleNamespace

import numpy as np

from ..forward import scaled_dot_product_attention
from ..gradcheck import numerical_gradient, relative_error
from ..masks import causal_mask, padding_mask
from ..softmax import softmax
from .attention import (CAUSAL_DEFAULT, FIRST_BLOCK, FIRST_BLOCK_ZEROED,  # said alike
                        KEY_PER_QUERY, LOG_SUM_EXP, LONG_T_K, ONLINE_BLOCKS, PER_BATCH,
                        DRAWN_SIZES, _drawn_case, _drawn_sets, _first_block_nan,
                        _first_block_rows, _fresh_seed, _long_row, _lse_weights,
                        _two_key_mask)
from ._engine import (_RNG_SEED, BATCH_HINT, LEADING_HINT, Rejected, _dtype_rejection,
                      _all, _float32_valued, _mask_axes_hint, _named, _qkv,
                      _boolean_index_hint, _fill_edge, _library_attention,
                      _library_softmax,
                      _refusing_the_library, _report, _results, _run)

NAMES = ("dQ", "dK", "dV")

#: Said when the attempt runs one of the library's backward passes.
LIBRARY = ("your function calls the library's own {name}: the exercise is to write the "
           "backward pass yourself, in NumPy, without the library's own functions or "
           "torch (dV = A^T dO, dA = dO V^T, dS = A * (dA - D), dQ = c dS K, "
           "dK = c dS^T Q)")


#: Said when the attempt has PyTorch's autograd compute the gradients.
TORCH_AUTOGRAD = ("your function calls {name}, PyTorch's automatic differentiation "
                  "(Tensor.backward() calls torch.autograd.backward): the exercise is "
                  "to derive the backward pass and write it yourself, in NumPy "
                  "(dV = A^T dO, dA = dO V^T, dS = A * (dA - D), dQ = c dS K, "
                  "dK = c dS^T Q)")


#: Said when the attempt has PyTorch's forward-mode autodiff (dual numbers) compute them.
TORCH_FORWARD_AD = ("your function calls {name}, PyTorch's forward-mode automatic "
                    "differentiation (dual numbers, which torch.func.jvp and jacfwd "
                    "use): the exercise is to derive the backward pass and write it "
                    "yourself, in NumPy (dV = A^T dO, dA = dO V^T, dS = A * (dA - D), "
                    "dQ = c dS K, dK = c dS^T Q)")


def _torch_autograd() -> dict:
    """torch.autograd.backward and torch.autograd.grad (Python functions, which
    Tensor.backward() and torch.autograd.functional reach), each with TORCH_AUTOGRAD,
    and torch.autograd.forward_ad.make_dual and unpack_dual (which torch.func.jvp,
    jacfwd and linearize reach), each with TORCH_FORWARD_AD, by name; {} when torch is
    not installed (imported here, not before)."""
    try:
        import torch
        import torch.autograd.forward_ad as forward_ad
    except ImportError:
        return {}
    banned = {f"torch.autograd.{name}": (getattr(torch.autograd, name), TORCH_AUTOGRAD)
              for name in ("backward", "grad")
              if hasattr(getattr(torch.autograd, name, None), "__code__")}
    banned.update({f"torch.autograd.forward_ad.{name}": (getattr(forward_ad, name),
                                                         TORCH_FORWARD_AD)
                   for name in ("make_dual", "unpack_dual")
                   if hasattr(getattr(forward_ad, name, None), "__code__")})
    return banned


def _drawn_dO(Q, V):
    """The upstream gradient of the drawn inputs Q, V, drawn from their sizes (the same
    sizes, the same dO)."""
    return np.random.default_rng(list(Q.shape) + [V.shape[-1]]).standard_normal(
        Q.shape[:-1] + V.shape[-1:])


def _drawn_inputs(seed: int) -> list:
    """The inputs the checker draws afresh from ``seed`` (printed when one fails): for
    each set of sizes, (Q, K, V, dO, mask), the forward checker's drawn inputs with
    T_k at least 2 and query 0 seeing keys 0 and 1, and dO drawn from the sizes; the
    checker runs each without the mask and with it."""
    return [(Q, K, V, _drawn_dO(Q, V), mask) for Q, K, V, mask in _drawn_sets(seed, True)]


def _library_backward() -> dict:
    """The library's backward passes, public and private, by name."""
    from .. import backward, blocked
    places = [("attention", backward, "attention_backward"),
              ("attention", backward, "tiled_attention_backward"),
              ("attention", blocked, "blocked_attention_backward"),
              ("attention.blocked", blocked, "_gradient_blocks")]
    return {f"{where}.{name}": getattr(module, name) for where, module, name in places
            if hasattr(getattr(module, name, None), "__code__")}
RTOL = 1e-9  # float64 against the page's equations: rounding is far below this
RTOL_NUMERIC = 1e-6  # against central differences, whose own error is about 1e-9
RTOL_FLOAT32 = 1e-4  # float32 inputs: a few thousand float32 roundings at most
RTOL_FLOAT16 = 1e-2  # float16 inputs: the right steps come within 8e-4
RTOL_FLOAT16_HIGH = 2e-3  # float16, scores above 11.1: in float32, 2e-4 to 7e-4


def _swap(X):
    return np.swapaxes(X, -1, -2)


def _parts(Q, K, V, dO, mask=None, *, d=None, mask_mode="-inf", axis=-1, guard=True,
           scores=None, bias=0.0, eps=0.0, shift="row", fill=-np.inf, work=np.float64,
           floor=0.0, block=None, clip=None):
    """The page's forward and backward quantities in float64 (c, S, A, O, dA, D, dS), the
    forward pass done some wrong way if asked: ``d`` is read for d_k in c = 1/sqrt(d);
    ``mask_mode`` "causal-default" (no mask read as a causal one), "per-batch" (a 3-D
    mask given a head axis, ``mask[:, None]``),
    "ignored", "inverted", "zero" (masked scores 0), "large" (-1e9 for
    -inf: a query with no visible key gets uniform weights) or "after" (the unmasked
    softmax times the mask, not renormalised), "bias" (``bias`` added to the masked
    scores) or "bias-zeroed" (and a query with no visible key zeroed afterwards);
    ``axis`` is the softmax's; ``guard=False`` lets a query with no visible key have NaN
    weights (0/0) instead of zeros; ``eps`` is added to the softmax's denominator;
    ``shift`` is what exp() is shifted by: "row" (each row's own maximum), "clamp" (that
    maximum clamped from below at ``floor``, 0 unless given), "none" (0), "global" (the largest finite score of the whole
    array) or "head" (of each head), a zero sum divided by 1, exp() taken in ``work``
    (float32 for float32 inputs: what underflows there); ``mask_mode`` "fill" or
    "fill-zeroed" puts ``fill`` for a masked score (and zeroes a query with no visible
    key afterwards); ``mask_mode`` "per-query" reads a (T_k,) mask as one flag per
    query (``mask[:, None]``); given ``block``, A is an online softmax over key blocks
    of that size whose running sum is not rescaled when the running maximum grows;
    given ``clip``, the scores are clipped from above at it before the mask."""
    Q, K, V, dO = (np.asarray(x, dtype=np.float64) for x in (Q, K, V, dO))
    if mask is None and mask_mode == "causal-default":  # mask=None read as causal
        mask, mask_mode = causal_mask(Q.shape[-2], K.shape[-2]), "-inf"
    if mask is not None and mask_mode == "per-batch":  # a 3-D mask read as (B, T_q, T_k)
        mask, mask_mode = np.asarray(mask)[:, None], "-inf"
    if mask is not None and mask_mode == "per-query":  # a (T_k,) mask read per query
        mask, mask_mode = np.asarray(mask)[:, None], "-inf"
    c = 1.0 / math.sqrt(Q.shape[-1] if d is None else d)
    S_free = S = c * (Q @ _swap(K)) if scores is None else np.asarray(scores, np.float64)
    if clip is not None:  # np.minimum(S, clip), "so that exp() never sees huge numbers"
        S = np.minimum(S, clip)
    if mask is not None and mask_mode.startswith("bias"):
        S = S + np.where(mask, 0.0, bias)
        if work == np.float32:  # the sum rounded as float32 inputs' attempt rounds it
            S = S.astype(np.float32).astype(np.float64)
    elif mask is not None and mask_mode not in ("ignored", "after"):
        keep = ~np.asarray(mask) if mask_mode == "inverted" else np.asarray(mask)
        S = np.where(keep, S, {"zero": 0.0, "large": -1e9, "fill": fill,
                               "fill-zeroed": fill}.get(mask_mode, -np.inf))
    if shift != "row":
        finite = np.where(np.isfinite(S), S, -np.inf)
        m = {"clamp": lambda: np.maximum(S.max(axis=axis, keepdims=True), floor),
             "none": lambda: np.zeros(1),
             "global": lambda: finite.max(),
             "head": lambda: finite.max(axis=(-2, -1), keepdims=True)}[shift]()
        E = np.exp((S - np.where(np.isneginf(m), 0.0, m)).astype(work)).astype(np.float64)
        total = E.sum(axis=axis, keepdims=True)
        A = E / np.where(total == 0, 1.0, total)
    elif guard:
        A = softmax(S, axis=axis)
    else:
        E = np.exp(S - S.max(axis=axis, keepdims=True))
        A = E / E.sum(axis=axis, keepdims=True)
    if block:  # an online softmax, the running sum never rescaled (st15a)
        m = np.full(S.shape[:-1] + (1,), -np.inf)
        total = np.zeros_like(m)
        for b in range(0, S.shape[-1], block):
            m_new = np.maximum(m, S[..., b:b + block].max(axis=-1, keepdims=True))
            total = total + np.exp(S[..., b:b + block] - np.where(
                np.isneginf(m_new), 0.0, m_new)).sum(axis=-1, keepdims=True)
            m = m_new
        E = np.exp(S - np.where(np.isneginf(m), 0.0, m))
        A = E / np.where(total == 0, 1.0, total)
    if eps:
        m = S.max(axis=axis, keepdims=True)
        E = np.exp(S - np.where(np.isneginf(m), 0.0, m))
        A = E / (E.sum(axis=axis, keepdims=True) + eps)
    if mask is not None and mask_mode in ("bias-zeroed", "fill-zeroed"):
        A = np.where(np.broadcast_to(mask, A.shape).any(axis=-1, keepdims=True), A, 0.0)
    if mask is not None and mask_mode == "after":
        A = A * np.asarray(mask)
    if mask is not None and mask_mode == "after-renormalised":
        A = np.where(mask, softmax(S_free, axis=axis), 0.0)
        total = A.sum(axis=axis, keepdims=True)
        A = A / np.where(total == 0, 1.0, total)
    O, dA = A @ V, dO @ _swap(V)
    D = np.sum(dO * O, axis=-1, keepdims=True)
    return SimpleNamespace(Q=Q, K=K, V=V, dO=dO, c=c, S_free=S_free, A=A, O=O, dA=dA, D=D,
                           dS=A * (dA - D))


def _grads(p, dS=None, dQ=None, dK=None, dV=None):
    """(dQ, dK, dV) from the quantities ``p`` (``_parts``), each the page's formula
    unless given: dQ = c dS K, dK = c dS^T Q, dV = A^T dO."""
    dS = p.dS if dS is None else dS
    return (p.c * (dS @ p.K) if dQ is None else dQ, p.c * (_swap(dS) @ p.Q) if dK is None
            else dK, _swap(p.A) @ p.dO if dV is None else dV)


def _gradients(Q, K, V, dO, mask=None):
    """The reference (dQ, dK, dV) in float64, by the page's formulas."""
    return _grads(_parts(Q, K, V, dO, mask))


def _times(p, dQ=1.0, dK=1.0, dV=1.0):
    """The right gradients, each multiplied by a factor."""
    return tuple(f * g for f, g in zip((dQ, dK, dV), _grads(p)))


def _with_D(p, D):
    return _grads(p, dS=p.A * (p.dA - D))


def _pinv_dS(p, D=None):
    """dS from dA = dO pinv(V), D from that dA (sum_j A_ij dA_ij) unless given."""
    dA = p.dO @ np.linalg.pinv(p.V)
    return p.A * (dA - (np.sum(p.A * dA, axis=-1, keepdims=True) if D is None else D))


#: Said when the forward pass is an online softmax whose running sum was not
#: rescaled (st15a: passed every case while the longest row was 8 keys).
ONLINE = ("the running sum was not rescaled when the running maximum grew: an online "
          "softmax over key blocks (a running maximum m and a running sum l) must "
          "multiply l by exp(m_old - m_new) whenever m grows, l = l * exp(m_old - "
          "m_new) + exp(S_block - m_new).sum(-1); without it the earlier blocks "
          "count at their old shift, a row of A no longer sums to 1, and every "
          "gradient is off")


#: Said when the gradients are those of scores clipped from above before exp() (st16a:
#: np.minimum(S, 1e4), 1e5 or 1e6 passed while no visible score exceeded 9600).
CLIPPED = ("the gradients are those of scores clipped from above before exp(): were "
           "the scores clipped (np.clip, or np.minimum) before exp()? Clipping "
           "changes the differences between the scores, and so the weights and "
           "every gradient (here visible scores lie {top}); subtract each row's "
           "maximum instead, which changes no weight")

#: The clips tried from above: float16's largest number, the forward checker's, and
#: powers of ten up to 1e299 (only those below a case's largest visible score).
CLIPS = (1e4, 65504.0, 7e4, 1e5, 6e5, 1e6) + tuple(10.0 ** k for k in range(7, 300))


#: Said when a gradient is a NumPy masked array.
MASKED_ARRAY = ("{name} is a numpy.ma.MaskedArray, not a plain NumPy array: its "
                "masked entries still hold numbers (whatever the computation left "
                "there, which np.asarray and any caller outside np.ma read); return "
                "plain arrays, such as X.filled(0.0)")


#: Said when an attempt that ran on one head raises on five-dimensional inputs.
FIVE_D_HINT = ("; the inputs may have any number of leading axes (here three, "
               "(2, 3, 2, T, d)): every step must act on the last two axes "
               "whatever comes before them (np.swapaxes(X, -1, -2), @, axis=-1, "
               "d_k = Q.shape[-1]), not on a list of cases per ndim or axes "
               "counted from the front")


PINV = ("dA is dO V^T (the product rule for O = A V), not dO times an inverse of V: "
        "the backward pass never inverts a matrix")
RIGHT = _grads  # the backward step of a mistake made in the forward pass alone


#: Said when dS = (A + eps) * (dA - D) (st19a: told "compute dS the same way on
#: every row" on saturated rows).
EPSILON_IN_DS = ("dS has an epsilon added to the weights, dS = (A + {eps:.0e}) * (dA - D): "
                 "dS is then off where A is 0 or tiny (a masked key, a key far below "
                 "its row's maximum), and dK and dQ carry it; dS = A * (dA - D), with no "
                 "epsilon (nothing there divides by A)")
#: The epsilons tried.
DS_EPSILONS = (1e-30, 1e-20, 1e-16, 1e-12, 1e-9, 1e-6)
#: Said when dS = A (1 - A) dA (st19a: told only "dV is right, so A is").
DIAGONAL_ONLY = ("dS = A (1 - A) dA uses the diagonal of J only (softmax' = s(1 - s), "
                 "entry by entry): every weight of a row depends on every score of it, "
                 "and the off-diagonal terms -a_i a_j add up to the - D of "
                 "dS = A * (dA - D), D_i = dO_i . O_i")


def _epsilon_in_dS(got, Q, K, V, dO) -> str:
    """EPSILON_IN_DS when got is far closer to the gradients of dS = (A + eps) *
    (dA - D), for one of DS_EPSILONS, than to the right ones, else ""."""
    with np.errstate(all="ignore"):
        p = _parts(Q, K, V, dO)
        ref = _grads(p)
        off = max(float(np.abs(g - r).max()) for g, r in zip(got, ref))
        for eps in DS_EPSILONS:
            want = _grads(p, dS=(p.A + eps) * (p.dA - p.D))
            if max(float(np.abs(g - w).max()) for g, w in zip(got, want)) <= 0.1 * off:
                return EPSILON_IN_DS.format(eps=eps)
    return ""


def _mistakes(Q, K, mask, V=None) -> list[tuple[str, str, dict, Callable]]:
    """(key, sentence, forward, backward) for each usual mistake these inputs can show:
    its gradients are ``backward(_parts(..., **forward))``.

    A sentence may name the gradients it concerns with ``{names}`` (and agree with them
    through ``{is_are}``, ``{s}``); the others concern one gradient only.
    """
    d_k = Q.shape[-1]
    c = 1.0 / math.sqrt(d_k)
    square = Q.shape[-2] == K.shape[-2]
    lowest = _lowest_row(Q, K, mask)
    work = np.promote_types(np.asarray(Q).dtype, np.float32)
    low = f"here {_near(lowest)}" if lowest < -700 else "such as -1000"
    own = (f"the shift must be each row's own maximum, even when it is negative: a row "
           f"whose allowed scores all lie far below 0 ({low}) underflows to 0 / 0 when "
           "it is shifted by less")
    mistakes = [
        ("shift-none", "the softmax does not subtract each row's maximum before exp() "
                       "(or only when some score is large): large scores overflow to "
                       f"inf, and inf / inf is NaN; and {own}; subtract "
                       "the maximum along the last axis, always",
         dict(shift="none", work=work), RIGHT),
        ("shift-clamp", f"{own}: np.maximum(S.max(-1), 0), or any shift clamped at 0, "
                        "leaves such a row unshifted; subtract the row maximum "
                        "itself (and shift a fully masked row, whose maximum is -inf, "
                        "by 0)", dict(shift="clamp", work=work), RIGHT),
        *[("shift-clamp-below", f"{own}: a finite fill (or a clamp of the row maximum) "
           "above the scores, as np.maximum(S.max(-1), -1e13), shifts such a row by "
           "less; subtract the row maximum itself (and shift a fully masked row, "
           "whose maximum is -inf, by 0)", dict(shift="clamp", floor=b, work=work), RIGHT)
          for b in (-1e13, -1e15) if lowest < b],
        ("shift-global", "the shift is the maximum of the whole array, not of each row: "
                         "a row whose scores all lie far below it underflows to 0 / 0; "
                         "subtract each row's own maximum (along the last axis)",
         dict(shift="global", work=work), RIGHT),
        ("shift-head", "the shift is the maximum of each head (over all its queries), "
                       "not of each row: a row whose scores all lie far below it "
                       "underflows to 0 / 0; subtract each row's own maximum (along "
                       "the last axis)", dict(shift="head", work=work), RIGHT),
        ("no-D", "dS lacks the '- D' term: the softmax ties each row together, so "
                 "dS = A * (dA - D) with D_i = dO_i . O_i (one number per query)",
         {}, lambda p: _with_D(p, 0.0)),
        ("D-sign", "D has the wrong sign: dS = A * (dA - D), not A * (dA + D)",
         {}, lambda p: _with_D(p, -p.D)),
        ("D-row-sum", "D_i is the weighted sum sum_j A_ij dA_ij (which equals "
                      "dO_i . O_i), not the plain row sum of dA",
         {}, lambda p: _with_D(p, p.dA.sum(axis=-1, keepdims=True))),
        ("dS-sign", "{names} {is_are} negated: dS = A * (dA - D), not A * (D - dA)",
         {}, lambda p: _grads(p, dS=-p.dS)),
        *[("dS-epsilon", EPSILON_IN_DS.format(eps=eps), {},
           lambda p, eps=eps: _grads(p, dS=(p.A + eps) * (p.dA - p.D)))
          for eps in DS_EPSILONS],
        ("dS-diagonal", DIAGONAL_ONLY, {},
         lambda p: _grads(p, dS=p.A * (1 - p.A) * p.dA)),
        ("dA-pinv", PINV, {}, lambda p: _grads(p, dS=_pinv_dS(p))),
        ("dA-pinv-D", PINV, {}, lambda p: _grads(p, dS=_pinv_dS(p, p.D))),
        ("dQ-no-scale", "dQ lacks the factor c = 1/sqrt(d_k): S = c Q K^T puts c on "
                        "dQ = c dS K", {}, lambda p: _times(p, dQ=1.0 / c)),
        ("dK-no-scale", "dK lacks the factor c = 1/sqrt(d_k): S = c Q K^T puts c on "
                        "dK = c dS^T Q", {}, lambda p: _times(p, dK=1.0 / c)),
        ("dQ-scale-twice", "dQ carries the factor c twice", {}, lambda p: _times(p, dQ=c)),
        ("dK-scale-twice", "dK carries the factor c twice", {}, lambda p: _times(p, dK=c)),
        ("dQ-divided", "dQ divides by c where it should multiply: dQ = c dS K",
         {}, lambda p: _times(p, dQ=1.0 / c**2)),
        ("dK-divided", "dK divides by c where it should multiply: dK = c dS^T Q",
         {}, lambda p: _times(p, dK=1.0 / c**2)),
        ("dV-scaled", "dV carries the factor c, but c scales the scores S, not "
                      "O = A V: dV = A^T dO has no c", {}, lambda p: _times(p, dV=c)),
        ("dV-sign", "dV has the wrong sign: dV = A^T dO", {}, lambda p: _times(p, dV=-1.0)),
        ("scale-T_q", "the scale uses T_q, the number of queries (Q.shape[-2]), "
                      "instead of the width d_k = Q.shape[-1]", dict(d=Q.shape[-2]), RIGHT),
        ("scale-T_k", "the scale uses T_k, the number of keys, instead of the width "
                      "d_k = Q.shape[-1]"
                      + (" (or d_k + 1, which equals T_k here: divide by sqrt(d_k) "
                         "itself)" if K.shape[-2] == d_k + 1 else ""),
         dict(d=K.shape[-2]), RIGHT),
        ("axis", "the softmax runs over the wrong axis: each query's weights (a row "
                 "of A, the last axis) sum to 1", dict(axis=-2), RIGHT),
        ("scale-d_k", "the scale is 1/d_k instead of 1/sqrt(d_k): c = 1/sqrt(d_k)",
         dict(d=d_k**2), RIGHT),
    ]
    named = {d_k, d_k + 1, d_k**2, Q.shape[-2], K.shape[-2]} | set(Q.shape[:-2])
    if V is not None:
        named.add(V.shape[-1])
    for m in sorted(set(range(2, 10)) - named):  # the other cases' widths, as a constant
        mistakes.append((f"scale-{m}", f"the scale is 1/sqrt({m}), but d_k = {d_k} here: "
                                      "a constant, or a width from another problem? Read "
                                      "d_k from the inputs, Q.shape[-1]", dict(d=m), RIGHT))
    if V is not None and V.shape[-1] not in (d_k, Q.shape[-2], K.shape[-2]):
        mistakes.append(("scale-d_v", "the scale uses d_v, the width of V, instead of "
                                      "d_k, the width of Q and K: c = 1/sqrt(d_k)",
                         dict(d=V.shape[-1]), RIGHT))
    if d_k + 1 not in (Q.shape[-2], K.shape[-2]):
        mistakes.append(("scale-d_k+1", "the scale is 1/sqrt(d_k + 1) instead of "
                                        "1/sqrt(d_k)", dict(d=d_k + 1), RIGHT))
    if Q.ndim > 2:
        mistakes.append(
            ("scale-axis-1", "the scale reads d_k from Q.shape[1], which is d_k for one "
                             "head but H with batch and head dimensions: use Q.shape[-1]",
             dict(d=Q.shape[1]), RIGHT))
    if mask is not None:
        mistakes += [
            ("mask-ignored", "{names} {is_are} the gradient{s} of unmasked attention: "
                             "the mask is ignored; set masked scores to -inf before the "
                             "softmax (the backward pass then needs nothing more)",
             dict(mask_mode="ignored"), RIGHT),
            ("D-unmasked", "D comes from the unmasked forward pass: with a mask, "
                           "D_i = dO_i . O_i uses the masked output O (equivalently "
                           "sum_j A_ij dA_ij with the masked A)", {},
             lambda p: _with_D(p, np.sum(p.dO * (softmax(p.S_free) @ p.V), axis=-1,
                                         keepdims=True))),
            *[("mask-per-batch", PER_BATCH, dict(mask_mode="per-batch"), RIGHT)]
            [:1 if np.ndim(mask) == 3 and Q.ndim == 4 and np.shape(mask)[0] == Q.shape[0]
             else 0],
            *[("key-mask-per-query", KEY_PER_QUERY, dict(mask_mode="per-query"), RIGHT)]
            [:1 if np.ndim(mask) == 1 and Q.shape[-2] == K.shape[-2] else 0],
            ("mask-inverted", "the mask is inverted: True means 'may attend', so masked "
                              "scores are where the mask is False",
             dict(mask_mode="inverted"), RIGHT),
            ("mask-zero", "masked scores were set to 0 instead of -inf, so masked keys "
                          "keep some weight", dict(mask_mode="zero"), RIGHT),
            ("mask-after", "the mask multiplies the weights after the softmax, so the "
                           "rows no longer sum to 1: set masked scores to -inf before "
                           "the softmax instead", dict(mask_mode="after"), RIGHT),
            ("mask-after-renormalised",
             "the mask is applied to the softmax's weights and the weights renormalised: "
             "when a masked key's score is far above the allowed ones, their "
             "exponentials underflow to 0 before the mask removes that key; set masked "
             "scores to -inf before the softmax", dict(mask_mode="after-renormalised"),
             RIGHT),
            *[("mask-bias", "masked scores are shifted by a finite bias, as "
               "S + (~mask) * -1e9 does: a finite mask value (use -inf, "
               "np.where(mask, S, -np.inf)) only moves a masked score down by a fixed "
               "amount, so a masked key scoring far above the others stays on top"
               + (", and a query whose every key is masked keeps the weights it would "
                  "have without the mask" if mode == "bias" else ""),
               # (-1e4 rounded in float32 as float32 inputs' attempt does;
               # -1e9 there erases the scores: uniform weights, told so)
               dict(mask_mode=mode, bias=-b, work=work if b == 1e4 else np.float64),
               RIGHT)
              for b, mode in ((1e4, "bias"), (1e4, "bias-zeroed"), (1e9, "bias"),
                              (1e9, "bias-zeroed"),
                              # float64's most negative number: it flattens a query
                              # with no visible key, which such an attempt zeroes
                              (np.finfo(np.float64).max, "bias-zeroed"))],
            *[("fill-below", "masked scores are replaced by a finite number (such as "
               "-1e9, -1e15, float16's -65504 or float32's -3.4e38), not -inf, and a "
               "finite fill (or a clamp of the row maximum) above the scores beats "
               "them: an allowed score below it "
               f"(here a query's visible keys score {_near(lowest)}) then loses to the "
               "masked keys, which take the weight; use -inf, np.where(mask, S, "
               "-np.inf), which is below every finite score",
               dict(mask_mode=mode, fill=value),
               RIGHT) for value in (-1e9, -65504.0, -1e4) if lowest < value
              if value != -65504.0 or lowest < -1e9
              for mode in ("fill-zeroed", "fill")],
            # float16's most negative number as the fill of float32 scores: above
            # visible scores near -65600 (the masked float16 case)
            *[("fill-float16", "masked scores are replaced by a finite fill, "
               "float16's most negative number (np.finfo(np.float16).min, -65504), "
               "not -inf: in float32 scores that is an ordinary number, and a finite "
               "fill (float16's minimum) above a visible score (here a query's "
               f"visible keys score {_near(lowest)}) gives the masked keys the "
               "weight; once the scores are float32, fill with -inf (or float32's "
               "own minimum)", dict(mask_mode=mode, fill=-65504.0), RIGHT)
              for mode in ("fill-zeroed", "fill") if -1e9 <= lowest < -65504.0],
            ("mask-large", "a query whose every key is masked got uniform weights over "
                           "all keys (a large negative number such as -1e9 in place of "
                           "-inf): the contract gives it zero weights and a zero output, "
                           "so nothing flows back through it",
             dict(mask_mode="large"), RIGHT),
        ]
    mistakes += [("eps", "the softmax divides by its sum plus a small constant, "
                  "E / (E.sum() + eps): every row of A then sums to a little less than "
                  "1 and the gradients are off by about eps; once the row maximum is "
                  "subtracted the sum is at least 1, and a query with no visible key "
                  "needs a guard, not a constant", dict(eps=10.0 ** -k), RIGHT)
                 for k in range(3, 11)]
    if mask is not None and not np.any(mask):
        # every key masked (an empty sequence): a finite fill or bias flattens each
        # row, as a mask ignored or filled with 0 does; what it misses is the guard
        mistakes.sort(key=lambda m: m[0] not in ("mask-large", "mask-bias"))
    mistakes += [("online", ONLINE + f" (here in key blocks of {block}, or of any size "
                  "that splits these rows alike)",
                  dict(block=block), RIGHT)
                 for block in ONLINE_BLOCKS if block < K.shape[-2]]
    with np.errstate(all="ignore"):
        S = c * (np.asarray(Q, np.float64) @ _swap(np.asarray(K, np.float64)))
    top = float(np.where(True if mask is None else mask, S, -np.inf).max(initial=-np.inf))
    tried = [hi for hi in CLIPS if hi < top]
    # the largest clip first (it changes least), a few below it (one case's rows)
    mistakes += [("clipped", CLIPPED.format(top=_near(top)), dict(clip=hi), RIGHT)
                 for hi in (tried[::-1][:3] + [h for h in tried if h <= 1e6])]
    if _empty_rows(Q, K, mask):
        mistakes.append((
            "nan-to-num", "{names} {is_are} zero where they should not be: a query whose "
            "every key is masked gave NaN (its softmax is 0/0), and np.nan_to_num (or "
            "a NaN-to-0 replacement) zeroed the gradients afterwards, but the NaN had "
            "already spread through dV = A^T dO and dK to every key of that head, "
            "whose true gradients are wiped out; guard the forward pass instead (such "
            "a query gets zero weights and a zero output) and its gradients are 0",
            dict(guard=False), lambda p: tuple(np.nan_to_num(g) for g in _grads(p))))
    if square and mask is None:
        mistakes.append(("causal-default", CAUSAL_DEFAULT,
                         dict(mask_mode="causal-default"), RIGHT))
    if square:
        mistakes += [
            ("dK-no-transpose", "dK uses dS where it needs dS^T: dK = c dS^T Q has one "
                                "row per key", {}, lambda p: _grads(p, dK=p.c * (p.dS @ p.Q))),
            ("dQ-transposed", "dQ uses dS^T where it needs dS: dQ = c dS K has one "
                              "row per query", {},
             lambda p: _grads(p, dQ=p.c * (_swap(p.dS) @ p.K))),
            ("dV-no-transpose", "dV uses A where it needs A^T: dV = A^T dO has one "
                                "row per key", {}, lambda p: _grads(p, dV=p.A @ p.dO)),
            ("D-no-keepdims", "D lost its keepdims: dA - D subtracted D_j from column j "
                              "instead of D_i from row i; keep D of shape (..., T_q, 1)",
             {}, lambda p: _with_D(p, np.sum(p.dO * p.O, axis=-1)[..., None, :])),
        ]
    # 1/int(np.sqrt(d_k)) is 1/sqrt(r) with r the largest square up to d_k: when
    # another candidate (T_q, a constant) has that width, its message says both.
    root = math.isqrt(d_k)
    if root * root != d_k:
        isqrt_msg = (f"the scale must be 1/sqrt(d_k) as a float; int() or // "
                     f"truncates it: 1/int(np.sqrt(d_k)) = 1/{root} at d_k = {d_k} "
                     "(right only when d_k is a square); use math.sqrt(d_k)")
        shared = [i for i, (key, _, fwd, _) in enumerate(mistakes)
                  if key.startswith("scale-") and fwd.get("d") == root * root]
        for i in shared:
            key, message, fwd, bwd = mistakes[i]
            mistakes[i] = (key, f"{message}; or: {isqrt_msg}", fwd, bwd)
        if not shared:
            mistakes.append(("scale-isqrt", isqrt_msg, dict(d=root * root), RIGHT))
    return mistakes


#: The mistakes in the shift before exp(): on a case where they give the same
#: gradients (a row far below 0), what they share is named (SHIFT_SHARED).
SHIFTS = ("shift-none", "shift-clamp", "shift-clamp-below", "shift-global", "shift-head")
SHIFT_SHARED = (
    "a row whose allowed scores all lie far below 0 (here {low}) gets zero weights: the "
    "shift "
    "must be each row's own maximum, even when it is negative; subtract the maximum "
    "along the last axis itself, in every row and always (not 0, not a maximum clamped "
    "at 0 or taken over every row, and not only when some score is large){below}")
#: Added to SHIFT_SHARED where the row lies near -1e300.
SHIFT_BELOW = ("; a finite fill (or a clamp of the row maximum) above the scores, as "
               "np.maximum(S.max(-1), -1e13), fails the same way")
#: Added to SHIFT_SHARED where the row lies below -1e9 (near -1e12): a fill of -1e9
#: with the masked weights zeroed afterwards gives that row zeros too.
SHIFT_BELOW_FILL = ("; a finite fill above the scores (such as -1e9, here above "
                    "them), with the masked weights zeroed afterwards, fails the "
                    "same way")


#: Said where the whole array's maximum is the head's (one head).
SHIFT_GLOBAL_OR_HEAD = (
    "the shift is the maximum of the whole array (or the maximum of each head: here "
    "there is one), not of each row: a row whose scores all lie far below it "
    "underflows to 0 / 0; subtract each row's own maximum (along the last axis)")


def _near(x: float) -> str:
    """"near -1000", "near -1e12": a score's size in a message."""
    return (f"near {x:.0e}".replace("e+", "e") if abs(x) >= 1e6
            else f"near {round(x, -2):.0f}")


def _lowest_row(Q, K, mask) -> float:
    """The lowest row maximum of the allowed scores c Q K^T (rows with a visible key)."""
    with np.errstate(all="ignore"):
        S = (np.asarray(Q, np.float64) @ _swap(np.asarray(K, np.float64))) / \
            math.sqrt(Q.shape[-1])
        if mask is not None:
            S = np.where(mask, S, -np.inf)
        m = S.max(axis=-1)
    m = m[np.isfinite(m)]
    return float(m.min()) if m.size else 0.0


def _same(got: np.ndarray, want: np.ndarray, rtol: float = RTOL) -> bool:
    if got.shape != want.shape:
        return False
    scale = max(np.abs(want).max(initial=0.0), 1e-300)
    return bool(np.all(np.isfinite(got))) and \
        float(np.abs(got - want).max(initial=0.0)) <= rtol * scale


def _same_with_nan(got: np.ndarray, want: np.ndarray, rtol: float) -> bool:
    """NaN in the same places and the other entries equal."""
    if got.shape != want.shape or not np.array_equal(np.isnan(got), np.isnan(want)):
        return False
    finite = ~np.isnan(want)
    return _same(got[finite], want[finite], rtol) if finite.any() else True


def _call(fn, Q, K, V, dO, mask):
    """The attempt's (dQ, dK, dV) as float64 arrays and their own dtypes."""
    result = _results(fn, dict(Q=Q, K=K, V=V, dO=dO), None if mask is None else dict(mask=mask),
                      NAMES)
    for name, g in zip(NAMES, result):
        if isinstance(g, np.ma.MaskedArray):
            raise Rejected(MASKED_ARRAY.format(name=name))
        if not isinstance(g, np.ndarray):
            raise Rejected(f"{name} is a {type(g).__name__}, not a NumPy array: return "
                           "the arrays themselves (no .tolist(), list() or list "
                           "comprehension)")
    grads = [np.asarray(g) for g in result]
    return [g.astype(np.float64) for g in grads], [g.dtype for g in grads]


def _names(names: list[str]) -> dict:
    return dict(names=", ".join(names), is_are="is" if len(names) == 1 else "are",
                s="" if len(names) == 1 else "s")


def _empty_rows(Q, K, mask) -> bool:
    """Whether some query sees no key."""
    if mask is None:
        return False
    shape = np.broadcast_shapes(Q.shape[:-1] + (K.shape[-2],), np.shape(mask))
    return not np.broadcast_to(mask, shape).any(axis=-1).all()


def _diagnose(got, Q, K, V, dO, mask, ref, rtol) -> str:
    """Say what is wrong with gradients ``got`` that do not all match ``ref``."""
    for order in itertools.permutations(range(3)):
        if order != (0, 1, 2) and all(_same(got[i], ref[j], rtol) for i, j in enumerate(order)):
            returned = ", ".join(NAMES[j] for j in order)
            return (f"the gradients are right but in the wrong order: you returned "
                    f"({returned}); return (dQ, dK, dV)")
    if all(_same(-g, r, rtol) for g, r in zip(got, ref)):
        return ("every gradient has the wrong sign: return dL/dX itself, not -dL/dX "
                "(the direction a descent step takes)")
    if all(g.shape == r.shape for g, r in zip(got, ref)):
        # the gradients of the rows whose first key block is fully masked zeroed
        # (an online softmax from -inf, its NaN made zeros; st21a)
        shape = np.broadcast_shapes(Q.shape[:-1] + K.shape[-2:-1], np.shape(mask))
        for rows in _first_block_rows(mask, shape):
            zeroed = np.broadcast_to(mask, shape) & ~rows[..., None]
            if all(_same(g, r, rtol) for g, r in zip(got, _gradients(Q, K, V, dO, zeroed))):
                return FIRST_BLOCK_ZEROED
    flat = lambda xs: np.concatenate([np.ravel(x) for x in xs])  # noqa: E731
    shaped = all(g.shape == r.shape for g, r in zip(got, ref))
    fin = np.isfinite(flat(got)) if shaped else None  # NaN and inf say nothing of it
    in_float32 = rtol < RTOL_FLOAT32 and shaped and np.any(flat(got)[fin]) and \
        _float32_valued(flat(got)[fin], flat(ref)[fin]) and not _float16_valued(got)
    if in_float32 and all(_same(g, r, 1e-2) for g, r in zip(got, ref)):
        err = max(relative_error(g, r) for g, r in zip(got, ref))
        return (f"the gradients agree with the reference only to a relative {err:.0e}, "
                "and every entry is a float32 number: they were computed in float32 "
                "(float32 precision, about 7 digits), but float64 inputs need float64 "
                "throughout (something was cast to float32)")
    variants: dict = {}

    def variant(key, forward, backward, guard=True):
        at = (key, str(forward), guard)  # one key may name several forward passes
        if at not in variants:
            with np.errstate(all="ignore"):
                variants[at] = backward(_parts(Q, K, V, dO, mask,
                                               **{"guard": guard, **forward}))
        return variants[at]

    unguarded = variant("", {}, RIGHT, guard=False)
    messages, matched, nan, unexplained, huge = [], {}, [], [], []
    for i, name in enumerate(NAMES):
        if _same(got[i], ref[i], rtol):
            continue
        if got[i].shape == ref[i].shape and np.isfinite(got[i]).all() and \
                np.abs(got[i]).max() > 1e100 * max(1.0, np.abs(ref[i]).max()):
            # weight on a key whose row is near 1e300 times rounding noise: its
            # size says more than its value, which every such mistake shares
            huge.append(name)
            continue
        if got[i].shape != ref[i].shape:
            hint = ""
            if name == "dK" and got[i].shape[-2:] == (Q.shape[-2], K.shape[-1]):
                hint = ": it needs one row per key, dK = c dS^T Q"
            axes = _mask_axes_hint(got[i].shape, ref[i].shape, mask, name)
            if not hint and not any(axes[2:] in m for m in messages):  # said once
                hint = axes
            messages.append(f"{name} has shape {got[i].shape}, expected "
                            f"{ref[i].shape} (the shape of {name[1:]}){hint}")
            continue
        has_nan = bool(np.isnan(got[i]).any())
        table = [((key, message), lambda f=forward, b=backward, k=key:
                  variant(k, f, b, guard=not has_nan)[i])
                 for key, message, forward, backward in _mistakes(Q, K, mask, V)]

        def same(g, v):
            if has_nan:  # a mistake whose own -inf rows give NaN, e.g. the softmax over
                # queries (one whose gradient is NaN everywhere explains nothing)
                return (_same_with_nan(g, v, rtol) and not np.isnan(ref[i]).any()
                        and not np.isnan(v).all() and not _same_with_nan(v, unguarded[i], rtol))
            # and far closer to the mistake than to the right answer: a mistake
            # that changes little (eps) must not name rounding noise
            return _same(g, v, max(rtol, 1e-7)) and not _same(v, ref[i], rtol) and \
                np.abs(g - v).max() <= 0.1 * np.abs(g - ref[i]).max()

        hit = _named(got[i], table, same)
        if hit and hit[0] == "eps" and in_float32:
            hit = ""  # float32's rounding, not a constant
        if hit and hit[0] in SHIFTS:
            entries = {k: (f, b) for k, _, f, b in _mistakes(Q, K, mask, V) if k in SHIFTS}
            mine = variant(hit[0], *entries[hit[0]])
            if any(k != hit[0] and all(_same_with_nan(x, y, 1e-12) for x, y in
                                       zip(mine, variant(k, *entries[k])))
                   for k in entries):
                twins = {k for k in entries if all(
                    _same_with_nan(x, y, 1e-12) for x, y in
                    zip(mine, variant(k, *entries[k])))}
                lowest = _lowest_row(Q, K, mask)
                hit = (("shift", SHIFT_SHARED.format(
                    low=_near(lowest), below=SHIFT_BELOW if lowest < -1e200 else
                    SHIFT_BELOW_FILL if lowest < -1e9 else ""))
                       if twins - {"shift-global", "shift-head"} else
                       ("shift-global", SHIFT_GLOBAL_OR_HEAD))
        if hit:
            matched.setdefault(hit[0], (hit[1], []))[1].append(name)
        else:
            (nan if has_nan else unexplained).append(name)
    if nan:
        verb = "contains" if len(nan) == 1 else "contain"
        if _empty_rows(Q, K, mask) and all(
                np.array_equal(np.isnan(got[i]), np.isnan(unguarded[i]))
                for i in map(NAMES.index, nan)):
            messages.append(
                f"{', '.join(nan)} {verb} NaN: a query whose every key is masked has only "
                "-inf scores, and their softmax is 0/0 = NaN, which dV = A^T dO and dK "
                "spread to every key; the contract gives such a query zero weights and a "
                "zero output (guard the row maximum and the sum, as in "
                "ex-numpy-attention), and then its gradients are 0")
        elif "dQ" in nan and _first_block_nan(got[0], mask, K.shape[-2]):
            messages.append(f"{', '.join(nan)} {verb} NaN: {FIRST_BLOCK}")
        elif mask is not None and not matched and \
                all(np.isnan(got[i]).all() for i in map(NAMES.index, nan)):
            messages.append(
                f"{', '.join(nan)} {verb} NaN in every entry once there is a mask: was it "
                "applied by arithmetic, as S + (~mask) * -inf? 0 * -inf is NaN, so every "
                "allowed score turns NaN; replace the masked scores instead, "
                "np.where(mask, S, -np.inf)")
        else:
            messages.append(
                f"{', '.join(nan)} {verb} NaN: usually exp() of a score that overflowed "
                "(subtract each row's maximum first), or a row whose every score is -inf")
    if len(matched) > 1 and not nan and not unexplained:
        # one mistake that explains every wrong gradient beats a mix of several
        wrong = [i for i, n in enumerate(NAMES) if not _same(got[i], ref[i], rtol)
                 and n not in huge]
        for key, message, forward, backward in _mistakes(Q, K, mask, V):
            v = variant(key, forward, backward)
            if message in {m for m, _ in matched.values()} and all(
                    _same(got[i], v[i], max(rtol, 1e-7)) for i in wrong):
                matched = {key: (message, [NAMES[i] for i in wrong])}
                break
    if "dS-sign" in matched and len(matched["dS-sign"][1]) == 1 and not nan:
        name = matched["dS-sign"][1][0]
        if name in ("dQ", "dK"):
            other = "dK" if name == "dQ" else "dQ"
            if _same(got[NAMES.index(other)], ref[NAMES.index(other)], rtol):
                formula = "dQ = c dS K" if name == "dQ" else "dK = c dS^T Q"
                matched["dS-sign"] = (
                    f"{name} has the wrong sign, but {other} is right, and so is dS = "
                    f"A * (dA - D): the sign is lost in {name} alone ({formula})",
                    [name])
    for message, names in matched.values():
        message = message.format(**_names(names))
        if message not in messages:
            messages.append(message)
    if huge and not messages:
        near = max(np.abs(got[NAMES.index(n)]).max() for n in huge)
        has = 'has' if len(huge) == 1 else 'have'
        if "dV" not in huge and _same(got[2], ref[2], rtol):
            # dV = A^T dO right: the weights are, and what is wrong came after them
            messages.append(
                f"{', '.join(huge)} {has} entries near {near:.0e}, yet dV is right, "
                "so A is, to this case's tolerance: dS must be exactly 0 where A is "
                "0 (a masked key, or a visible key far below its row's maximum), as "
                "dS = A * (dA - D) makes it; a change made to dS afterwards (such "
                "as subtracting its row mean to make its rows sum to 0, which they "
                "already do), a masked key given even a tiny weight, or a visible "
                "key given a floor weight (np.maximum before exp, as "
                "exp(np.maximum(S - m, -c)) does: no floor is needed), gives that "
                "key a gradient, which the rows of K and Q here, near 1e300 and "
                "1e12, blow up")
        else:
            messages.append(
                f"{', '.join(huge)} {has} entries near {near:.0e}: a masked key "
                "whose row is near 1e300 got some weight; a masked key must get "
                "weight exactly 0, its score -inf before the softmax")
    if unexplained and _float16_rounding(got, Q, K, V, dO, mask, ref):
        err = max(relative_error(g, r) for g, r in zip(got, ref))
        messages.append(
            f"the gradients differ from the reference by a relative {err:.0e}, as "
            "float16 rounding does (Q K^T, or everything, computed in float16): "
            "float16 keeps about 3 digits; compute in the inputs' dtype")
        unexplained = []
    if unexplained and Q.ndim > 2 and all(g.shape == r.shape for g, r in zip(got, ref)):
        batch = Q.shape[:-2]
        # (an item whose gradients are all 0, every query masked, is right by default)
        right = [idx for idx in np.ndindex(batch)
                 if all(_same(g[idx], r[idx], rtol) for g, r in zip(got, ref))
                 and any(np.any(r[idx]) for r in ref)]
        # blamed on a loop only when some other pair is far off (beyond 100 rtol): pairs
        # just outside the tolerance are precision lost, not a result stored elsewhere
        far = right and any(not all(_same(g[idx], r[idx], 100 * rtol)
                                    for g, r in zip(got, ref))
                            for idx in np.ndindex(batch) if idx not in right)
        if right and not far:
            err = max(relative_error(g, r) for g, r in zip(got, ref))
            precision = "float32" if Q.dtype == np.float32 else "the inputs' dtype"
            messages.append(
                f"the gradients agree with the reference only to a relative {err:.0e}, "
                f"just outside the tolerance here ({rtol:.0e}): "
                f"precision was lost on the way, beyond {precision} rounding (a "
                "step in a narrower dtype, or one that loses digits, such as "
                "exp(S - L) with L the log of the row's sum in place of the "
                "weights E / E.sum())")
            unexplained = []
        elif right:
            first = next(idx for idx in np.ndindex(batch) if idx not in right)
            messages.append(
                f"right for {len(right)} of {math.prod(batch)} (batch item, head) pairs "
                f"and wrong for the others, the first at index {list(first)}: every "
                "batch item and head needs its own result; with a loop, store each one "
                "at its own index")
            unexplained = []
    # a constant in the softmax's normaliser, however small, before precision
    eps = _fitted_eps(got, ref, lambda e: variant(f"eps={e!r}", dict(eps=e), RIGHT)) \
        if unexplained and _same(got[2], ref[2], rtol) and \
        set(unexplained) <= {"dQ", "dK"} else 0.0
    if unexplained and Q.dtype == np.float64 and not eps and \
            all(g.shape == r.shape for g, r in zip(got, ref)):
        p = _parts(Q, K, V, dO, mask)
        S_m = np.where(True if mask is None else mask, p.S_free, -np.inf)
        A_lse = _lse_weights(S_m)
        lse = _from_weights(p, A_lse)
        off = max(float(np.abs(g - r).max()) for g, r in zip(got, ref))
        if off > 0 and all(float(np.abs(g - w).max()) <= 1e-2 * off
                           for g, w in zip(got, lse)):
            worst = np.unravel_index(np.argmax(np.abs(A_lse - p.A)), A_lse.shape)[:-1]
            messages.append(LOG_SUM_EXP.format(
                top=f"near {float(S_m[worst].max()):.2g}".replace("e+0", "e"),
                sums=float(np.abs(A_lse.sum(-1) - 1)[p.A.sum(-1) > 0.5].max())))
            unexplained = []
    if unexplained and rtol < RTOL_FLOAT32 and not in_float32 and not eps and \
            all(_same(g, r, 1e-3) for g, r in zip(got, ref)):
        err = max(relative_error(g, r) for g, r in zip(got, ref))
        # float32 is named only where the entries are float32 numbers (in_float32)
        messages.append(f"the gradients agree with the reference only to a relative "
                        f"{err:.0e}: precision was lost on the way (a step that loses "
                        "digits, or a constant added somewhere); float64 inputs "
                        "need every step exact to float64's rounding")
        unexplained = []
    for name in unexplained:
        i = NAMES.index(name)
        err = float(np.abs(got[i] - ref[i]).max())
        messages.append(f"{name} differs from the reference by up to {err:.3g}")
    if in_float32:
        big = max(float(np.abs(x).max()) for x in (Q, K, V, dO))
        messages.append("every entry is a float32 number: float64 inputs need float64 "
                        "throughout" + (f" (an input here holds {big:.0e}, beyond "
                                        "float32's range, 3.4e38)" if big > 3.4e38 else ""))
    if unexplained and _same(got[2], ref[2], rtol) and set(unexplained) <= {"dQ", "dK"}:
        if eps:  # an eps too small to move dV beyond its tolerance moves A all the same
            messages.append(next(m for k, m, *_ in _mistakes(Q, K, mask, V) if k == "eps")
                            + f" (here eps is about {eps:.0e}: it moves dV by too "
                            "little to show, but not dQ and dK)")
        elif Q.dtype == np.float16:
            # dV within float16's tolerance does not show A right to float32's
            # precision: A, O or D rounded to float16 passes dV and moves dS
            messages.append(
                f"dV is within this case's tolerance (a relative {rtol:.0e}) but "
                f"{' and '.join(unexplained)} "
                f"{'is' if len(unexplained) == 1 else 'are'} not, "
                "which does not show A right to float32's precision: "
                "A, O or D rounded to float16 (about 3 digits) can leave dV within "
                "it and move dS = A * (dA - D), where dA - D cancels; keep every "
                "step in float32, and look at D and the factor c")
        elif rtol > RTOL_NUMERIC:
            messages.append(f"dV is right to this case's tolerance (a relative "
                            f"{rtol:.0e}): look at D, dS = A * (dA - D) and the "
                            "factor c")
        else:
            messages.append("dV is right, so A is: look at D, dS = A * (dA - D) and the "
                            "factor c")
    return "; ".join(messages)


def _fitted_eps(got, ref, gradients: Callable) -> float:
    """The eps of E / (E.sum() + eps) that gives dQ and dK ``got``, if one does
    (``gradients(eps)`` the gradients with that eps), else 0. The gradients move
    linearly with a small eps: one at 1e-12 gives the direction. The fit is taken
    only when it explains the error: what is left of dQ's and dK's after it, at
    most a tenth of the error itself (an error of 1e-8 of a gradient's size is
    within 1e-7 of any fit, an eps or not: D from O rounded to float32, or small
    entries of dS flushed to 0)."""
    moved = gradients(1e-12)
    d = [m - r for m, r in zip(moved[:2], ref[:2])]
    dd = sum(float(np.sum(x * x)) for x in d)
    if not dd > 0 or not all(np.isfinite(g).all() for g in got):
        return 0.0
    eps = 1e-12 * sum(float(np.sum((g - r) * x)) for g, r, x in zip(got, ref, d)) / dd
    if not 0 < eps < 1e-2:
        return 0.0
    fit = gradients(eps)
    explained = all(float(np.abs(g - f).max(initial=0.0))
                    <= 0.1 * float(np.abs(g - r).max(initial=0.0))
                    for g, f, r in zip(got[:2], fit[:2], ref[:2]))
    return eps if explained and all(_same(g, f, 1e-7) for g, f in zip(got, fit)) \
        else 0.0


def _float16_valued(xs) -> bool:
    """Whether every entry of the arrays xs is a float16 number (and some is not 0)."""
    with np.errstate(all="ignore"):
        return all(np.array_equal(x, x.astype(np.float16).astype(np.float64)) for x in xs) \
            and any(np.any(x) for x in xs)


def _in_float16(Q, K, V, dO, mask, scale_first=False):
    """The page's forward and backward steps, every one in float16 (the scale applied
    to Q before the product if ``scale_first``)."""
    c = np.float16(1.0 / math.sqrt(Q.shape[-1]))
    S = (c * Q) @ _swap(K) if scale_first else c * (Q @ _swap(K))
    if mask is not None:
        S = np.where(mask, S, np.float16(-np.inf))
    m = S.max(axis=-1, keepdims=True)
    E = np.exp(S - np.where(np.isneginf(m), np.float16(0), m))
    t = E.sum(axis=-1, keepdims=True)
    A = E / np.where(t == 0, np.float16(1), t)
    dS = A * (dO @ _swap(V) - np.sum(dO * (A @ V), axis=-1, keepdims=True))
    return tuple(g.astype(np.float64) for g in
                 (c * (dS @ K), c * (_swap(dS) @ Q), _swap(A) @ dO))


def _float16_rounding(got, Q, K, V, dO, mask, ref) -> bool:
    """Whether gradients ``got`` lie much closer to those of scores formed in float16
    (from float16 inputs, or from every input rounded to float16) than to ``ref``."""
    if Q.dtype == np.float16 or not all(g.shape == r.shape for g, r in zip(got, ref)):
        return False
    half = [np.asarray(x).astype(np.float16) for x in (Q, K, V, dO)]
    c = 1.0 / math.sqrt(Q.shape[-1])
    with np.errstate(all="ignore"):
        # the scores rounded to float16: scaled after the product, or before it (c Q
        # rounded, as an attempt that scales first to avoid overflow forms them), the
        # rest in the inputs' precision or in float16; a way whose scores overflow
        # float16 is not the attempt's
        S16 = (half[0] @ _swap(half[1])) * np.float16(c)
        S16_first = np.asarray(Q * c).astype(np.float16) @ _swap(half[1])
        ways = [lambda: _grads(_parts(*half, mask, scores=S16)),
                lambda: _in_float16(*half, mask)] if np.isfinite(S16).all() else []
        ways.append(lambda: _in_float16(*half, mask, scale_first=True))
        ways += [lambda S=S: _grads(_parts(Q, K, V, dO, mask, scores=S))
                 for S in (S16, S16_first) if np.isfinite(S).all()]
        ways = [w() for w in ways]
    ways = [w for w in ways if all(np.isfinite(x).all() for x in w)]
    err = max(float(np.abs(g - r).max()) for g, r in zip(got, ref))
    return err > 0 and any(max(float(np.abs(g - w).max()) for g, w in zip(got, way))
                           <= 0.6 * err for way in ways)


def _error_hint(exc: Exception) -> str:
    """What an exception raised by the attempt usually means here."""
    text = str(exc)
    if isinstance(exc, np.linalg.LinAlgError):
        return ("; the backward pass needs no matrix inverse: each product Y = X W "
                "sends back dX = dY W^T and dW = X^T dY")
    if isinstance(exc, ValueError) and "matmul" in text:
        return ("; the shapes of a product do not fit: dV = A^T dO, dA = dO V^T, "
                "dQ = c dS K, dK = c dS^T Q")
    if isinstance(exc, ValueError) and "broadcast" in text:
        return ("; the shapes of an elementwise step do not broadcast: D has one "
                "number per query, (dO * O).sum(axis=-1, keepdims=True), of shape "
                "(..., T_q, 1)")
    return ""


_NUMERIC: dict = {}  # the checker's inputs are fixed: compute their references once


def _numeric_gradients(Q, K, V, dO, mask):
    """Central differences in float64 of the library's forward pass (memoised)."""
    key = tuple(np.asarray(x).tobytes() for x in (Q, K, V, dO, mask if mask is not None else 0))
    if key not in _NUMERIC:
        def loss(Q_, K_, V_):
            return float(np.sum(scaled_dot_product_attention(Q_, K_, V_, mask=mask)[0] * dO))
        _NUMERIC[key] = (numerical_gradient(lambda X: loss(X, K, V), Q),
                         numerical_gradient(lambda X: loss(Q, X, V), K),
                         numerical_gradient(lambda X: loss(Q, K, X), V))
    return _NUMERIC[key]


def _case(fn, Q, K, V, dO, mask=None, *, numeric=False, on_error="", note="",
          what=""):
    """One comparison, as a case for ``_run``. With ``numeric`` the reference is central
    differences of the library's forward pass, otherwise the formulas of the page. For
    float32 inputs the gradients must also be float32. ``what`` (what the case tests)
    is added to a diagnosis that does not name the online softmax's mistake."""
    float32 = Q.dtype == np.float32
    rtol = RTOL_FLOAT32 if float32 else RTOL_NUMERIC if numeric else RTOL

    def case():
        ref = _numeric_gradients(Q, K, V, dO, mask) if numeric else _gradients(Q, K, V, dO, mask)
        try:
            got, dtypes = _call(fn, Q, K, V, dO, mask)
        except Rejected as exc:  # changed in place, not arrays, the library's own
            return False, str(exc)
        except Exception as exc:
            hint = _boolean_index_hint(exc, mask) or on_error or _error_hint(exc)
            return False, f"raised {type(exc).__name__}: {exc}{hint}"
        if not all(_same(g, r, rtol) for g, r in zip(got, ref)) and note and \
                all(g.shape == r.shape for g, r in zip(got, ref)):
            # inputs built for one mistake, where the others' signs would mislead
            with np.errstate(all="ignore"):
                far = [f"{name} differs from the reference by up to "
                       f"{float(np.nan_to_num(np.abs(g - r), nan=np.inf).max()):.3g}"
                       for name, g, r in zip(NAMES, got, ref) if not _same(g, r, rtol)]
            return False, "; ".join(far) + note
        if not all(_same(g, r, rtol) for g, r in zip(got, ref)):
            with np.errstate(all="ignore"):
                detail = _diagnose(got, Q, K, V, dO, mask, ref, rtol)
            blocks = ONLINE in detail or FIRST_BLOCK in detail or \
                FIRST_BLOCK_ZEROED in detail
            flushed = _flushed_weights(got, Q, K, V, dO, mask, rtol) \
                if what and not blocks else ""
            if flushed:  # (st18a: told the long row's note on key blocks)
                detail = flushed
            elif what and not blocks:
                detail += what
            if numeric and all(g.shape == r.shape for g, r in zip(got, ref)):
                errs = ", ".join(f"{relative_error(np.nan_to_num(g), r):.1g}"
                                 for g, r in zip(got, ref))
                detail += f" (relative errors dQ, dK, dV against central differences: {errs})"
            other = [f"{n} is {d}" for n, d in zip(NAMES, dtypes) if d != np.float64]
            if Q.dtype == np.float64 and other:
                detail = f"{' and '.join(other)}; the inputs are float64: {detail}"
            return False, detail
        # float64 inputs too: long double (or float32) gradients are not float64
        wrong = _dtype_rejection(Q.dtype, dict(zip(NAMES, dtypes)))
        if wrong and mask is not None:
            try:
                unmasked = _call(fn, Q, K, V, dO, None)[1]
            except Exception:
                unmasked = dtypes
            if all(d == Q.dtype for d in unmasked):
                kinds = " and ".join(sorted({str(d) for d in dtypes if d != Q.dtype}))
                wrong = (f"the mask made the gradients {kinds}: "
                         + ", ".join(f"{n} of dtype {d}" for n, d in zip(NAMES, dtypes))
                         + f" for {Q.dtype} inputs, which without the mask keep "
                         f"{Q.dtype}. A fill or bias of another dtype promotes the "
                         "scores: np.where(mask, 0.0, -np.inf) is a float64 array, "
                         "np.finfo(np.float64).min a float64 number; "
                         "np.where(mask, S, -np.inf) keeps S's dtype")
        if wrong:
            return False, wrong
        return True, ""
    return case


#: Tolerance on a saturated row's dQ, relative to that row's own largest entry: right
#: ways of computing it differ from the page's formulas by up to about 1e-5 at scores
#: [25, 0, 0, 0] (dA - D cancels to about 1e-11 there), so a tighter one would reject
#: them; a row skipped or zeroed is off by 1.
RTOL_SATURATED = 1e-4

#: Said when a saturated (not one-hot) row's gradient is lost.
SATURATED = ("a saturated row still passes a small gradient: its largest weight is "
             "near 1 ({largest}), not exactly 1, so its dS = A * (dA - D) is small but "
             "not 0, and dQ's row ({error:.2g} off, relative to its own size) and dK "
             "carry it; only a one-hot row passes none. Compute dS the same way on "
             "every row, with no threshold on A.max(), and no small entry of dS (or "
             "of dQ) flushed to 0: this row's are at most {dS:.1e}")

#: Said when a saturated row's gradient matches weights raised to a floor, or flushed.
WEIGHTS_CHANGED = {
    "floor": ("the weights have a floor, as np.clip(A, {t:.0e}, 1) or np.maximum(A, "
              "{t:.0e}) gives: a weight below it (here {low:.1e}, in a row whose "
              "largest weight is {largest}) is raised to it, and that row's small "
              "gradient, proportional to its small weights, is off by {error:.2g} of "
              "its size; use A as the softmax gives it, with no floor (the softmax "
              "needs none: its row sums are at least 1 once the maximum is "
              "subtracted)"),
    "flush": ("weights below a threshold were flushed to 0, as np.where(A < {t:.0e}, "
              "0, A) does: the small weights of a row near one-hot (here {low:.1e}, "
              "largest weight {largest}) are small but not 0, and that row's gradient, "
              "proportional to them, is off by {error:.2g} of its size; use A as the "
              "softmax gives it, with no threshold on its entries"),
}
#: The floors and thresholds tried on the weights (a flush below 1e-13 and one below
#: 1e-14 change the same weights here).
WEIGHT_THRESHOLDS = (1e-16, 1e-15, 1e-14, 1e-13, 1e-12, 1e-10, 1e-8)


def _from_weights(p, A):
    """(dQ, dK, dV) by the page's formulas from the weights A in place of p.A."""
    dA = p.dO @ _swap(p.V)
    D = np.sum(p.dO * (A @ p.V), axis=-1, keepdims=True)
    dS = A * (dA - D)
    return p.c * (dS @ p.K), p.c * (_swap(dS) @ p.Q), _swap(A) @ p.dO


def _weights_changed(got, p, allowed) -> str:
    """The message of WEIGHTS_CHANGED whose weights give got's dQ, row by row within
    ``allowed`` (relative to each row's own size) and no closer to the reference, or ""."""
    ref = _grads(p)[0]
    size = np.abs(ref).max(axis=-1)
    far = np.abs(got[0] - ref).max(axis=-1) / size > allowed
    for kind in ("floor", "flush"):
        for t in WEIGHT_THRESHOLDS:
            A = np.clip(p.A, t, 1) if kind == "floor" else np.where(p.A < t, 0.0, p.A)
            if np.array_equal(A, p.A):
                continue
            want = _from_weights(p, A)[0]
            error = np.abs(got[0] - want).max(axis=-1) / size
            if np.all(error <= allowed):
                moved = (A != p.A).any(axis=-1) & far
                if not moved.any():
                    continue
                i = int(np.argmax(np.where(moved, p.A.max(axis=-1), -np.inf)))
                row = p.A[i]
                low = float(row[(A[i] != row)].max())
                return WEIGHTS_CHANGED[kind].format(
                    t=t, low=low, largest=f"1 - {1 - row.max():.1e}",
                    error=float(np.abs(got[0][i] - ref[i]).max() / size[i]))
    return ""


#: Said when every gradient is that of weights flushed to 0 below a threshold.
FLUSHED_WEIGHTS = ("weights below a threshold were flushed to 0, as "
                   "np.where(A < {t:.0e}, 0, A) does: a key far below its row's "
                   "maximum keeps a small weight, not 0, and the gradients move "
                   "with it; use A as the softmax gives it, with no threshold on "
                   "its entries")


#: Said when every gradient is that of dS's small entries flushed to 0 (st24a: the
#: long row's key-block note came first).
FLUSHED_DS = ("small entries of dS were flushed to 0, as np.where(np.abs(dS) < {t:.0e}, "
              "0, dS) does: the small entries of dS = A * (dA - D) are not 0, and dQ "
              "and dK carry them; use dS as it comes, with no threshold on its entries")


def _flushed_weights(got, Q, K, V, dO, mask, rtol) -> str:
    """FLUSHED_WEIGHTS when got is, within ``rtol``, the page's gradients from the
    weights flushed to 0 below one of WEIGHT_THRESHOLDS (or 1e-9, 1e-6), FLUSHED_DS
    when from dS flushed so, else ""."""
    if not all(np.shape(g) == np.shape(x) for g, x in zip(got, (Q, K, V))):
        return ""
    with np.errstate(all="ignore"):
        p = _parts(Q, K, V, dO, mask)
        for what, t in itertools.product((FLUSHED_WEIGHTS, FLUSHED_DS),
                                         sorted(set(WEIGHT_THRESHOLDS) | {1e-9, 1e-6})):
            before = p.A if what == FLUSHED_WEIGHTS else p.dS
            after = np.where(np.abs(before) < t, 0.0, before)
            if np.array_equal(after, before):
                continue
            want = _from_weights(p, after) if what == FLUSHED_WEIGHTS else \
                _grads(p, dS=after)
            # (and far closer to it than to the right answer, as in _diagnose)
            if all(_same(g, w, rtol) for g, w in zip(got, want)) and max(
                    np.abs(g - w).max() for g, w in zip(got, want)) <= 0.1 * max(
                    np.abs(g - r).max() for g, r in zip(got, _grads(p))):
                return what.format(t=t)
    return ""


def _saturated_case(fn, Q, K, V, dO):
    """One head whose rows are saturated but not one-hot (scores such as [9, 0, 0, 0] and
    [25, 0, 0, 0]): dQ compared row by row, each row to a relative RTOL_SATURATED of its
    own largest entry (more where one rounding of A is more: 9.3e-3 at [29, 0, 0, 0],
    0.19 at [32, 0, 0, 0]) (a row's gradient is far below the whole dQ's largest entry, which a
    tolerance relative to that would let go), then the whole case as ``_case``."""
    whole = _case(fn, Q, K, V, dO)

    def case():
        ref = _gradients(Q, K, V, dO)
        try:
            got, _ = _call(fn, Q, K, V, dO, None)
        except Exception:
            return whole()
        if got[0].shape != ref[0].shape or not np.isfinite(got[0]).all():
            return whole()
        size = np.abs(ref[0]).max(axis=-1)
        error = np.abs(got[0] - ref[0]).max(axis=-1) / size
        # a row's dS is about (1 - A.max()) dA: one rounding of A (2.2e-16) is a
        # relative 2.2e-16 / (1 - A.max()) of it, 3e-4 at [29, 0, 0, 0] (6e-3 at
        # [32, 0, 0, 0], where right sums of D, in another order, exactly or in long
        # double, are off by up to 6.7e-3 and a row zeroed or flushed by 1), which
        # float64 steps without the shift reach (7.5e-4): 32 roundings allowed
        p = _parts(Q, K, V, dO)
        gap = 1 - p.A.max(axis=-1)
        allowed = np.maximum(RTOL_SATURATED, 32 * np.finfo(float).eps / gap)
        bad = error > allowed
        # weights raised to a floor or flushed to 0 are named before a lost row
        changed = _weights_changed(got, p, allowed) if bad.any() else ""
        if changed:
            return False, changed
        if bad.any() and _same(got[2], ref[2], RTOL) and np.all(
                np.abs(got[0][bad]).max(axis=-1) < 0.5 * size[bad]):
            A = p.A.max(axis=-1)
            i = int(np.argmax(np.where(bad, A, -np.inf)))
            dS = float(np.abs(p.dS[i]).max())
            return False, SATURATED.format(largest=f"1 - {1 - A[i]:.1e}", dS=dS,
                                           error=float(error[i]))
        ok, detail = whole()
        if ok and bad.any():
            i = int(np.argmax(error))
            return False, (f"dQ's row {i} differs from the reference by a relative "
                           f"{float(error[i]):.2g} of its own size (a saturated row, "
                           "whose gradient is small but not 0)")
        return ok, detail
    return case


#: Tolerance on each gradient's entry at a row whose largest weight is exactly 1.0,
#: in roundings of the size of the terms it is made of (_term_sizes).
ROUNDINGS = 64

#: Said when such a row's small gradient is lost (st17a: a backward pass that
#: zeroes dS where A.max() == 1.0, or above 1 - 1e-15, passed).
SATURATED_ONE = (
    "at scores [40, 0, 0, 0] the largest weight rounds to exactly 1.0 in float64, "
    "but the other weights are {low:.1e}, not 0, and so are their dS_j = "
    "A_j (dA_j - D) and dK's rows for those keys (up to {dK:.1e}): saturated "
    "rows are not zero: their small entries a_j(1-a_j) ~ {low:.0e} must be kept; "
    "compute dS the same way on every row, with no test of A.max() (not even "
    "A.max() == 1.0) and no threshold on the weights")


def _term_sizes(Q, K, V, dO):
    """The size of the terms each entry of dQ, dK and dV is a sum or difference of
    (float64; their rounding is ROUNDINGS of these): dA_ij of sum_k |dO_ik| |V_jk|,
    D_i of sum_k |dO_ik| (A |V|)_ik, dS_ij of A_ij (those of dA_ij and D_i), and the
    gradients of c |dS| |K|, c |dS|^T |Q| and A^T |dO|."""
    p = _parts(Q, K, V, dO)
    a = np.abs
    sdA = a(p.dO) @ _swap(a(p.V))
    sD = np.sum(a(p.dO) * (p.A @ a(p.V)), axis=-1, keepdims=True) + \
        np.sum(p.A * sdA, axis=-1, keepdims=True)
    sdS = p.A * (sdA + sD)
    return p.c * (sdS @ a(p.K)), p.c * (_swap(sdS) @ a(p.Q)), _swap(p.A) @ a(p.dO)


#: Said where dS made to sum to 0 by subtracting its row mean shows (st22a: told
#: "compute dS the same way on every row", which it did).
CENTRED_DS = ("dS was changed after dS = A * (dA - D): its row mean was subtracted, "
              "as dS - dS.mean(-1, keepdims=True) does, to make its rows sum to 0, "
              "which they already do up to rounding; here, at scores [40, 0, 0, 0], "
              "the small keys' entries of dS lie below 4e-18, and the row mean (a "
              "rounding of the top key's entry) moves each of them, and dK's rows, "
              "by far more than its own rounding; leave dS = A * (dA - D) as it is")


def _rounded_one_case(fn, Q, K, V, dO):
    """One head, one query whose largest weight is exactly 1.0 in float64 (scores
    [40, 0, 0, 0], d_k = 1): each gradient's entry within ROUNDINGS roundings of the
    size of its terms (_term_sizes): dK's rows of the small keys and dV's relatively,
    dQ and dK's row of the top key, differences of numbers near 1, absolutely."""
    def case():
        try:
            got, dtypes = _call(fn, Q, K, V, dO, None)
        except Rejected as exc:
            return False, str(exc)
        except Exception as exc:
            return False, f"raised {type(exc).__name__}: {exc}{_error_hint(exc)}"
        ref = _gradients(Q, K, V, dO)
        sizes = _term_sizes(Q, K, V, dO)
        for name, g, r, size in zip(NAMES, got, ref, sizes):
            if g.shape != r.shape:
                return False, f"{name} has shape {g.shape}, expected {r.shape}"
            if not np.isfinite(g).all():
                return False, f"{name} contains NaN or inf where the reference is finite"
        bad = [np.abs(g - r) > ROUNDINGS * np.finfo(float).eps * size
               for g, r, size in zip(got, ref, sizes)]
        if not any(b.any() for b in bad):
            wrong = _dtype_rejection(Q.dtype, dict(zip(NAMES, dtypes)))
            return not wrong, wrong
        A = _parts(Q, K, V, dO).A
        small = A[0] < 0.5
        dK = got[1]
        if bad[1][small].any() and np.all(dK[small] == 0):
            return False, SATURATED_ONE.format(
                low=float(A[0][small].max()), dK=float(np.abs(ref[1][small]).max()))
        epsilon = _epsilon_in_dS(got, Q, K, V, dO)
        if epsilon:
            return False, epsilon
        p = _parts(Q, K, V, dO)
        centred = _grads(p, dS=p.dS - p.dS.mean(axis=-1, keepdims=True))
        if all(np.all(np.abs(g - w) <= ROUNDINGS * np.finfo(float).eps * size)
               for g, w, size in zip(got, centred, sizes)):  # (st22a)
            return False, CENTRED_DS
        names = [n for n, b in zip(NAMES, bad) if b.any()]
        return False, (f"{', '.join(names)} {'differs' if len(names) == 1 else 'differ'} "
                       "from the reference by more than a few roundings at scores "
                       "[40, 0, 0, 0], where the largest weight is exactly 1.0 in "
                       "float64 and the others 4.2e-18: the small keys' entries of "
                       "dS (and dK) are exact to a few roundings there; compute dS "
                       "the same way on every row")
    return case


def _dtype_case(fn, Q, K, V, dO, mask=None, *, on_error="", rtol=RTOL_FLOAT16,
                what="", masked_below=None):
    """float16 inputs: float16 gradients, finite, within a relative ``rtol`` of the
    float64 reference (of each gradient's largest entry): at small scores the page's
    steps in float16 come within 8e-4, in float32 and cast back within 3e-4. ``what``
    (the inputs, and the remedy) is added to a failure's message. ``masked_below``, K
    with the masked keys' scores moved below the visible ones: an attempt told the
    shift here that is right there masks after the softmax (st24a)."""
    def case():
        ok, detail = plain()
        return (ok, detail) if ok or not what else (False, detail + what)

    def plain():
        try:
            got, dtypes = _call(fn, Q, K, V, dO, mask)
        except Rejected as exc:
            return False, str(exc)
        except Exception as exc:
            hint = _boolean_index_hint(exc, mask) or on_error or _error_hint(exc)
            return False, f"raised {type(exc).__name__}: {exc}{hint}"
        wrong = _dtype_rejection(Q.dtype, dict(zip(NAMES, dtypes)))
        if wrong:
            return False, wrong
        ref = _gradients(*(np.asarray(x, np.float64) for x in (Q, K, V, dO)), mask)
        if all(_same(g, r, rtol) for g, r in zip(got, ref)):
            return True, ""
        with np.errstate(all="ignore"):
            detail = _diagnose(got, Q, K, V, dO, mask, ref, rtol)
        if masked_below is not None and detail.startswith(SHIFT_SHARED[:40]):
            probe = _gradients(*(np.asarray(x, np.float64)
                                 for x in (Q, masked_below, V, dO)), mask)
            try:
                with np.errstate(all="ignore"):
                    again, _ = _call(fn, Q, masked_below, V, dO, mask)
            except Exception:
                again = None
            if again is not None and all(_same(g, r, rtol) for g, r in zip(again, probe)):
                detail = MASK_AFTER_FAR
        return False, "for float16 inputs: " + detail
    return case


#: Said on the masked float16 case to an attempt told the shift there that is right
#: once the masked keys score below the visible ones (st24a).
MASK_AFTER_FAR = (
    "a row whose masked keys score far above its visible ones gets zero weights, and "
    "the right ones once the masked keys score below: the mask is applied to the "
    "softmax's weights and the weights renormalised (the visible keys' exponentials "
    "underflow to 0 before the mask removes the masked keys); set masked scores to "
    "-inf before the softmax")


#: Added to what an attempt raised on no key at all (T_k = 0) from a reduction with
#: no identity, a plain S.max(axis=-1) (st19a: it passed every case while every case
#: had a key).
NO_KEY_MAX = ("; here T_k = 0 (K of shape {K}, V of shape {V}): with no key at all a "
              "row has no score, and its maximum is -inf, as a fully masked row's is, "
              "but a plain S.max(axis=-1, keepdims=True) has nothing to start from and "
              "raises on the zero-size key axis; take S.max(axis=-1, keepdims=True, "
              "initial=-np.inf) (and shift such a row by 0), as in ex-numpy-attention: "
              "every query then has zero weights and a zero output, and the gradients "
              "are dQ zeros of shape {dQ}, dK of shape {dK} and dV of shape {dV}")
#: Added to anything else an attempt raised on no key at all.
NO_KEY_RAISED = ("; here T_k = 0 (K of shape {K}, V of shape {V}): with no key at all "
                 "no query sees a key, and the gradients are dQ zeros of shape {dQ}, "
                 "dK of shape {dK} and dV of shape {dV}; every step must accept a "
                 "zero-size key axis (a row's maximum taken as S.max(axis=-1, "
                 "keepdims=True, initial=-np.inf))")
#: Said when dQ on no key at all (T_k = 0) is not zero.
NO_KEY_DQ = ("with T_k = 0 (K of shape {K}, V of shape {V}: no key at all) dQ {what}: no "
             "query sees a key, its weights and output are zero, and dQ = c dS K, a "
             "sum over no key, is zeros of shape {dQ}, never NaN (0 / 0 from a row's "
             "zero sum, unguarded); compute it as for any other T_k, from the guarded "
             "forward pass")


#: Said when the gradients on no key at all dropped the leading batch and head axes
#: (st20a: zeros of shape (T_q, d_k), (0, d_k), (0, d_v) passed while no-key inputs
#: were 2-D only).
NO_KEY_LEADING = ("with T_k = 0 (K of shape {K}, V of shape {V}: no key at all) "
                  "{wrong}: the leading batch and head axes {lead} were dropped, as "
                  "zeros of shape (T_q, d_k), (0, d_k) and (0, d_v) built by hand "
                  "drop them; each gradient has the shape of its input, "
                  "np.zeros_like(Q) and so on: compute them as for any other T_k (no "
                  "special case)")
#: Said when the gradients on no key at all are of another dtype (st20a: float32
#: zeros for float16 inputs passed while no-key inputs were float64 and float32 only).
NO_KEY_DTYPE = ("with T_k = 0 (no key at all) {got} for {want} inputs: the gradients "
                "keep the inputs' dtype, and zeros built by hand take the dtype they "
                "are given (np.zeros' default float64, or the float32 of the work for "
                "float16 inputs); compute them as for any other T_k (no special "
                "case), or give them Q.dtype")


#: Said when one key (T_k = 1) passes a gradient for a query whose mask hides it
#: (st21a: no case had T_k = 1, and a shortcut giving it weight 1 passed).
ONE_KEY = ("with one key (T_k = 1, a mask of shape {mask}) a query that sees it gives "
           "it all the weight, A = 1, but a query whose mask hides it sees no key: its "
           "weights and output are zero, and so are its gradients (its dO adds "
           "nothing to dV); a shortcut for T_k = 1 (dQ = dK = 0, dV = dO summed over "
           "the queries) skipped the mask: compute one key as any other T_k, the mask "
           "applied")


def _one_key_case(fn, Q, K2, V2, dO, mask, **how):
    """One key (T_k = 1) and a (T_q, 1) mask that hides it from some query: the usual
    comparison, and, where it fails, ONE_KEY when the gradients are the unmasked ones
    and the same rows masked over two keys come out right (the attempt reaches this
    case only after passing a mask on the same inputs; a finite fill, which gives a
    fully masked row uniform weights, fails on two keys, and is told so). ``K2`` and
    ``V2`` hold two keys; the one key is the first, its V row with one nonzero entry,
    so that dA = D to the last bit, whatever the order of the sums, and dS, dQ and dK
    are exactly 0."""
    K, V = K2[..., :1, :], np.zeros_like(V2[..., :1, :])
    V[..., 0] = V2[..., :1, 0]
    plain = _case(fn, Q, K, V, dO, mask, **how)
    two_keys = _case(fn, Q, K2, V2, dO, _two_key_mask(mask))

    def case():
        ok, text = plain()
        if ok:
            return ok, text
        got, _ = _call(fn, Q, K, V, dO, mask)
        if all(_same(g, r) for g, r in zip(got, _gradients(Q, K, V, dO))):
            two_ok, two_text = two_keys()
            return False, (ONE_KEY.format(mask=np.shape(mask)) if two_ok else
                           f"{two_text} (here on two keys, the query hidden from the "
                           "one key seeing neither: on one key, T_k = 1, your gradients are the unmasked "
                           "ones)")
        return ok, text
    return case


def _no_key_case(fn, Q, K, V, dO, mask=None):
    """No key at all (K and V with T_k = 0, the mask too if given): the gradients must be
    dQ zeros (..., T_q, d_k), dK (..., 0, d_k) and dV (..., 0, d_v), of the inputs'
    dtype (st19a: a plain S.max(axis=-1), which raises there, passed)."""
    def case():
        ref = _gradients(Q, K, V, dO, mask)
        shapes = dict(K=K.shape, V=V.shape, **{n: r.shape for n, r in zip(NAMES, ref)})
        try:
            got, dtypes = _call(fn, Q, K, V, dO, mask)
        except Rejected as exc:
            return False, str(exc)
        except Exception as exc:
            hint = NO_KEY_MAX if "reduction operation maximum" in str(exc) else \
                NO_KEY_RAISED
            return False, f"raised {type(exc).__name__}: {exc}{hint.format(**shapes)}"
        wrong = [f"{n} has shape {g.shape}, expected {r.shape} (the shape of {n[1:]})"
                 for n, g, r in zip(NAMES, got, ref) if g.shape != r.shape]
        lead = Q.shape[:-2]
        if wrong and lead and all(g.shape == r.shape[-2:] for g, r in zip(got, ref)):
            return False, NO_KEY_LEADING.format(wrong="; ".join(wrong), lead=lead,
                                                **shapes)
        if wrong:
            return False, (f"with T_k = 0 (K of shape {K.shape}, V of shape {V.shape}: "
                           f"no key at all) {'; '.join(wrong)}: each gradient has the "
                           "shape of its input; compute them as for any other T_k (no "
                           "special case)")
        if not np.isfinite(got[0]).all():
            return False, NO_KEY_DQ.format(what="contains NaN or inf", **shapes)
        if np.any(got[0]):
            return False, NO_KEY_DQ.format(
                what=f"is not zero (entries up to {float(np.abs(got[0]).max()):.3g})",
                **shapes)
        if any(d != Q.dtype for d in dtypes):
            return False, NO_KEY_DTYPE.format(
                got=", ".join(f"{n} is {d}" for n, d in zip(NAMES, dtypes)), want=Q.dtype)
        return True, ""
    return case


def _inputs(rng, batch=(), T_q=4, T_k=6, d_k=5, d_v=7):
    """Q, K, V, dO whose sizes all differ (and differ from B = 2, H = 3)."""
    return (*_qkv(rng, T_q, T_k, d_k, d_v, batch), rng.standard_normal(batch + (T_q, d_v)))


def check_attention_backward(fn: Callable, verbose: bool = True) -> bool:
    """Check ``fn(Q, K, V, dO, mask=None) -> (dQ, dK, dV)`` against the contract in this
    module's docstring: eleven cases; returns True when all pass. An attempt that runs
    the library's own backward pass, or PyTorch's autograd, fails every case."""
    fn = _refusing_the_library(fn, {**_library_backward(), **_library_attention(),
                                    **_library_softmax(), **_torch_autograd()}, LIBRARY)
    rng = np.random.default_rng(_RNG_SEED + 2)
    seed = _fresh_seed()  # (the sizes drawn afresh)
    Q, K, V, dO = _inputs(rng)
    Qs, Ks, Vs, dOs = _inputs(rng, T_k=4)
    Qb, Kb, Vb, dOb = _inputs(rng, batch=(2, 3))  # (B, H, T, d_k) and so on
    T_q, T_k = Q.shape[-2], K.shape[-2]
    # (B, 1, 1, T_k): keys beyond a length hidden, one length 0 (a broadcast mask whose
    # batch item 1 sees no key: a guard that looks at the mask's own shape shows)
    pad = padding_mask([4, 0], T_k)[:, None]
    empty = rng.random((2, 3, T_q, T_k)) < 0.6  # (B, H, T_q, T_k)
    empty[0, 1, 2] = empty[1, 2, 0] = empty[1, 0, 3] = False  # these queries see no key
    # And an (H, T_q, T_k) mask, one per head, on inputs with B = H = 3 (T_q = 2): NumPy
    # aligns a 3-D mask with the scores' last three axes, so it broadcasts over the
    # batch; read as one per batch item (mask[:, None], PyTorch's habit) it still
    # broadcasts when B = H, to the wrong heads, and shows. (Its own generator: the
    # other cases' draws stay as they were.)
    rng_m = np.random.default_rng(_RNG_SEED + 5)
    Qhh, Khh, Vhh, dOhh = _inputs(rng_m, batch=(3, 3), T_q=2)
    mask_h = rng_m.random((3, 2, T_k)) < 0.5
    mask_h[..., 0] = True  # every query sees key 0; the heads' masks differ
    # Large scores, near 7000 (each key 1000 more in every entry, each query 3 more):
    # the part that differs between keys is unchanged, so the weights stay far from
    # one-hot, but exp() of a score overflows unless the row's maximum is subtracted.
    Q_big, K_big = Q + 3.0, K + 1000.0
    # Query 3 scaled by about -1/7: its scores all lie near -1000, where a shift that
    # is not the row's own maximum (clamped at 0, or applied only when some score is
    # large, or the whole array's or the head's) leaves exp() of every score 0.
    Q_big[3] *= -1000.0 / float(np.mean(Q_big[3] @ K_big.T) / math.sqrt(Q.shape[-1]))
    # A masked key far above the others (as in ex-numpy-attention): key 0 outscores
    # every other by over 1000 for the queries that may not see it; query 0 may see
    # it, and it scores far below that query's other keys.
    Q_far = Q.copy()
    Q_far[:, 0] = np.abs(Q_far[:, 0]) + 1.0
    Q_far[0, 0] = -Q_far[0, 0]
    # Query 2's masked key 0 scores only about 3 above the others: no underflow, so a
    # mask applied after the softmax without renormalising shows apart from one with.
    Q_far[2, 0] = 0.002
    K_far = K.copy()
    K_far[0] = [3000.0, 0.0, 0.0, 0.0, 0.0]
    not_key_0 = np.ones((T_q, T_k), dtype=bool)
    not_key_0[1:, 0] = False
    # And a masked key far from the origin: key 5, masked for every query, scores near
    # +1e300 (near -1e300 for query 2), beyond the finite biases a mask usually adds (-1e4,
    # -1e9, float32's -3.4e38): such a bias leaves it on top, where -inf gives it weight 0.
    Q_far[:, 1] = np.array([1.0, 1.0, -1.0, 1.0]) * (np.abs(Q_far[:, 1]) + 1.0)
    K_far[5] = [0.0, 1e300, 0.0, 0.0, 0.0]
    not_key_0[:, 5] = False
    # And query 1's visible keys (1 to 4) score -1e12 to -1.6e12 (its other entries
    # solved for), below any finite mask value a fill could use (-1e9, float16's
    # -65504): the masked keys would take its weight, which -inf gives to key 1 alone.
    # Then the same with those scores near -1e300 to -1.6e300 (every score still
    # finite), below the finite fills an attempt may tune to the first (-1e15,
    # float32's -3.4e38) and below a row maximum clamped from below (at -1e13, say):
    # a fill gives the masked keys its weight, a clamp exp() of every score 0. The
    # -1e12 row comes first: dK = c dS^T Q carries query 1's large entries into every
    # key, so a tiny error in its dS (a constant in the softmax's normaliser, float32
    # rounding) shows there at a size the diagnosis still names.
    # Its dO row has one nonzero entry, so that its dS row is exactly 0 (dA_11 = D_1
    # to the last bit), whatever the order of the sums, and dK = c dS^T Q exact.
    rest = [0, 2, 3, 4]

    def visible_near(size):
        Q_ = Q_far.copy()
        Q_[1, rest] = np.linalg.solve(
            K_far[1:5][:, rest],
            -math.sqrt(5) * size * np.array([1.0, 1.2, 1.4, 1.6]) - Q_[1, 1] * K_far[1:5, 1])
        return Q_
    Q_far, Q_deep = visible_near(1e12), visible_near(1e300)
    dO_far = dO.copy()
    dO_far[1] = [1.5] + [0.0] * (dO.shape[-1] - 1)
    # And at the edge of float64 (d_k = 1, every score finite): query 0's visible keys
    # near -1e308 and -1.2e308, its masked key near 1.4e308, which even float64's most
    # negative number added to it (np.finfo(np.float64).min) leaves on top; query 1's
    # scores half those, where that bias is enough and an ignored mask is not.
    Q_edge = np.array([[1.0], [0.5]])
    K_edge = np.array([[-1.2e308], [1.4e308], [-1.0e308]])
    V_edge = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, -0.5]])
    dO_edge = np.array([[0.3, -0.7], [1.1, 0.4]])
    mask_edge = np.array([[True, False, True]] * 2)
    # And (d_k = 1) a query whose one visible key scores near -1.79e308 (finite), another
    # whose one visible key scores near -1e20: a finite fill above the first (-1.5e308)
    # gives the masked keys its weight; the row's lowest score minus 1000, which rounds
    # to that score, gives them equal weight in both. (V's key 0 is (1, 0), so that
    # dA and D agree to the last bit and dS is exactly 0, whatever the order of sums.)
    Q_fill, K_fill, V_fill, mask_fill, fill_note = _fill_edge()
    # Other sizes (d_k = 9 among them): an attempt right only at the sizes above shows;
    # 3-D inputs (B, T, d) with a (T_q, T_k) mask: an attempt written for 2-D and 4-D
    # inputs only (X.transpose(0, 1, 3, 2), d_k = Q.shape[3]) shows. (Their own
    # generator: the other cases' draws stay as they were.)
    rng_o = np.random.default_rng(_RNG_SEED + 3)
    Qo, Ko, Vo, dOo = _inputs(rng_o, batch=(3,), T_q=2, T_k=8, d_k=9, d_v=4)
    # and a (B, T_q, T_k) mask, one per batch item, every query seeing key 0: a mask
    # given a head axis (mask[:, None], for 4-D scores) adds an axis, and shows
    mask_o = rng_o.random((3, 2, 8)) < 0.6
    mask_o[..., 0] = True
    # A (T_k,) mask, one flag per key for every query: read as (B,) padding
    # (mask[:, None, None]) it adds an axis, and shows.
    key_mask = np.array([True, False, True, True, False, True])
    # Saturated rows that are not one-hot (d_k = 1: scores [9, 0, 0, 0], [16, 0, 0, 0],
    # [25, 0, 0, 0], [29, 0, 0, 0] and [32, 0, 0, 0], largest weights 1 - 3.7e-4,
    # 1 - 3.4e-7, 1 - 4.2e-11, 1 - 7.6e-13 and 1 - 3.8e-14): their gradients are small
    # but not 0, so a backward pass that skips rows above a threshold on A.max() (even
    # 1 - 1e-13), or flushes weights below 1e-13 (those of [32, 0, 0, 0] are 1.3e-14)
    # or |dS| below 1e-14 to 0, shows, row by row (a flush of the weights moves that
    # row's dQ by sum_j>0 dA_j against 3 dA_0 - sum_j>0 dA_j: 1.2 with this V, as
    # little as 0.1 with others). The last row's dO is drawn apart (a quarter of a
    # standard normal, so that all of that row's dS is below 1e-14), so that every
    # other case's draws stay as they were.
    # A sixth row, [20, 0, 0, 0] (1 - 6.2e-9), keeps T_q from 5, the d_k of most cases
    # (a scale of 1/sqrt(T_q) is named, and would be told a constant 1/sqrt(5)).
    # A long row (st15a; st16a; st17a: 1100 keys let blocks of 2048 or 4096 pass):
    # T_k = 4999, the forward checker's (attention._long_row: each row's maximum
    # grows from each block of 64, up to 4096, keys to the next; row 1 hides every
    # key but its last), and rows 1 and 2 of the first inputs hiding their first 3
    # and 2 keys: an online softmax that forgets to rescale its running sum, or
    # that turns NaN on a fully masked first block (its running maximum started at
    # -inf; or that NaN made zeros), or D summed over the first keys only, shows. (Its own generator: the
    # other cases' draws stay as they were.)
    rng_l = np.random.default_rng(_RNG_SEED + 6)
    Q_l, K_l, V_l, dO_l = _inputs(rng_l, T_q=3, T_k=LONG_T_K)
    mask_l = _long_row(Q_l, K_l, rng_l)
    first_hidden = np.ones((T_q, T_k), dtype=bool)
    first_hidden[1, :3] = first_hidden[2, :2] = False
    long_note = (f"; here a row of {LONG_T_K} keys (T_k = {LONG_T_K}), whose maximum "
                 "grows from key block to key block (of 64 to 4096 keys): the "
                 "softmax's maximum and sum, and D, must run over all T_k keys of "
                 "the row (code working in key blocks rescales its running sum "
                 "whenever the running maximum grows)")
    # A (T_k,) key mask on the square inputs (T_q = T_k): read as one flag per query
    # (mask[:, None]) it broadcasts without an error, and shows; and an all-False
    # (T_k,) mask, an empty sequence: every query sees no key, all gradients zero.
    key_mask_sq = np.array([True, False, True, True])
    no_key = np.zeros(T_k, dtype=bool)
    # And no key at all, T_k = 0 (K (0, d_k), V (0, d_v)), without a mask and with a
    # (T_q, 0) one (in float32 and float16 too, in the dtype case, where a dtype
    # mistake is told; and with batch and head axes, st20a, where zeros of shape
    # (T_q, d_k) built by hand are told): dQ zeros (..., T_q, d_k), dK (..., 0, d_k),
    # dV (..., 0, d_v).
    no_keys = np.zeros((T_q, 0), dtype=bool)
    # And one key, T_k = 1, with a (T_q, 1) mask that hides it from query 1 (st21a: no
    # case had T_k = 1, and dV = dO summed over the queries for one key passed): on
    # (B, H) inputs.
    one_key = np.array([[True], [False], [True], [True]])
    # Five-dimensional inputs (2, 3, 2, T, d): "any leading batch and head
    # dimensions", so code written per ndim (2-, 3- and 4-D only) shows.
    Q5, K5, V5, dO5 = _inputs(np.random.default_rng(_RNG_SEED + 7), batch=(2, 3, 2))
    # Visible scores far above (st16a: np.minimum(S, 1e4), 1e5 or 1e6 passed while
    # none exceeded 9600): at d_k = 2, query 0's scores near 7.1e6, 0.71 apart
    # (weights 0.14, 0.28, 0.58), query 1's 0, 7.1e298 and 1.4e299 (one-hot; V's
    # first column is 1 and its dO (1.5, 0, 0), so that its dS is exactly 0 and dK
    # stays small): scores clipped from above anywhere below them tie, and show.
    Q_top = np.array([[1e4, 1.0], [0.0, 1e299]])
    K_top = np.array([[1e3, 0.0], [1e3, 1.0], [1e3, 2.0]])
    V_top = np.array([[1.0, 0.5, -1.0], [1.0, -0.5, 0.3], [1.0, 1.0, 0.2]])
    dO_top = np.array([[0.3, -0.7, 1.1], [1.5, 0.0, 0.0]])
    Q_sat = np.array([[9.0], [16.0], [20.0], [25.0], [29.0], [32.0]])
    K_sat = np.array([[1.0], [0.0], [0.0], [0.0]])
    V_sat = rng_o.standard_normal((4, 3))
    drawn, apart = rng_o.standard_normal((4, 3)), \
        np.random.default_rng(32).standard_normal((2, 3))
    dO_sat = np.vstack([drawn[:2], apart[1:], drawn[2:], apart[:1] / 4])
    # And a query at [40, 0, 0, 0], whose largest weight is exactly 1.0 in float64
    # and the others 4.2e-18 (st17a: dS zeroed where A.max() == 1.0 passed): its
    # small keys' dS_j, and dK's rows, are exact to a few roundings; its dQ and the
    # top key's dK, differences of numbers near 1, are not (compared absolutely).
    Q_one = np.array([[40.0]])
    dO_one = np.random.default_rng(40).standard_normal((1, 3))
    one_head = [
        _run("one head, no mask (central differences)",
             _case(fn, Q, K, V, dO, numeric=True)),
        _run("one head, causal mask (central differences); a (T_k,) key mask; "
             "an all-False one (an empty sequence); no key at all (T_k = 0); a "
             f"masked row of {LONG_T_K} keys; rows whose first keys are masked",
             _all(_case(fn, Q, K, V, dO, causal_mask(T_q, T_k), numeric=True),
                  _case(fn, Q, K, V, dO, key_mask),
                  _case(fn, Q, K, V, dO, no_key),
                  _no_key_case(fn, Q, K[:0], V[:0], dO),
                  _no_key_case(fn, Q, K[:0], V[:0], dO, no_keys),
                  _case(fn, Q_l, K_l, V_l, dO_l, mask_l, what=long_note),
                  _case(fn, Q, K, V, dO, first_hidden))),
        _run("one head, T_q = T_k, without and with a (T_k,) key mask",
             _all(_case(fn, Qs, Ks, Vs, dOs), _case(fn, Qs, Ks, Vs, dOs, key_mask_sq))),
        _run("one head, large scores (near 7000; one query's near -1000); "
             "saturated rows (scores [9, 0, 0, 0] to [40, 0, 0, 0])",
             _all(_case(fn, Q_big, K_big, V, dO),
                  _saturated_case(fn, Q_sat, K_sat, V_sat, dO_sat),
                  _rounded_one_case(fn, Q_one, K_sat, V_sat, dO_one),
                  # (after the saturated rows: a floor on the weights or an eps
                  # is told there, before query 1's near 1e300 blow dK up)
                  _case(fn, Q_top, K_top, V_top, dO_top))),
        _run("masked keys whose scores are far above the others (near 1e300)",
             _all(_case(fn, Q_far, K_far, V, dO_far, not_key_0),
                  _case(fn, Q_deep, K_far, V, dO_far, not_key_0),
                  _case(fn, Q_edge, K_edge, V_edge, dO_edge, mask_edge),
                  _case(fn, Q_fill, K_fill, V_fill, dO_edge, mask_fill, note=fill_note))),
    ]
    # Said only when the attempt ran on one head: then what it mishandles is the batch.
    batch_hint = "" if one_head[0][2].startswith("raised") else "; " + BATCH_HINT.format(X="X")
    leading_hint = "" if one_head[0][2].startswith("raised") else \
        "; " + LEADING_HINT.format(X="X")
    # float32 with scores from 131 to 260, above 88.7, where float32's exp() overflows
    # (every query 3 more and every key 30 more in each entry): a shift applied only
    # above float64's 709 shows; a float32 computation is within 2e-5 of the inputs'
    # exact gradients, float16's rounding far from them.
    f32 = tuple((x + s).astype(np.float32) for x, s in ((Qb, 3), (Kb, 30), (Vb, 0), (dOb, 0)))
    # float16 inputs: float16 gradients, finite and within a relative 1e-2 of each
    # gradient's largest entry (the right steps in float16 come within 8e-4, in float32
    # cast back within 3e-4); float64 gradients are told so
    f16 = tuple(x.astype(np.float16) for x in (Qb, Kb, Vb, dOb))
    # And float16 scores from 15 to 36 (d_k = 8), above 11.1, where float16's exp()
    # overflows, and near 9600 (d_k = 64), whose raw products Q K^T pass float16's
    # 65504: within 2e-3 of the float64 gradients of the same float16 values, which
    # a computation in float32 cast back meets (2e-4 and 7e-4), and the page's steps
    # in float16 do not (6e-3 with the shift, NaN without it; NaN near 9600).
    # (Their own generator: the other cases' draws stay as they were.)
    rng_h = np.random.default_rng(_RNG_SEED + 4)
    f16_mid = tuple((x + s).astype(np.float16) for x, s in zip(
        _inputs(rng_h, batch=(2, 3), d_k=8), (3.0, 3.0, 0.0, 0.0)))
    f16_high = tuple(x.astype(np.float16) for x in (
        40 + 0.05 * rng_h.standard_normal((T_q, 64)),
        30 + 0.05 * rng_h.standard_normal((T_k, 64)),
        rng_h.standard_normal((T_k, 7)), rng_h.standard_normal((T_q, 7))))
    # And masked float16: queries of 100s, 45s and 7.6s against keys of -82s (one
    # entry 0.0625 or 0.125 less in keys 1 and 2: visible scores near -65600, below
    # float16's -65504, -29500 and -5000) and two masked keys of 0s and 0.01s: a
    # fill of float16's minimum in float32 scores lies above the first query's
    # visible scores and gives the masked keys its weight (the other queries tell
    # it from a fill or bias of -1e4, or the mask ignored).
    K_n = np.full((5, 64), -82.0)
    K_n[1, 0], K_n[2, 0] = -81.9375, -81.875
    K_n[3], K_n[4] = 0.0, 0.01
    f16_masked = tuple(x.astype(np.float16) for x in (
        np.array([[100.0] * 64, [45.0] * 64, [7.6] * 64]), K_n,
        rng_h.standard_normal((5, 3)), rng_h.standard_normal((3, 3))))
    mask_n = np.array([True, True, True, False, False])
    K_below = K_n.copy()  # (the masked keys scoring below the visible ones, -72000 to
    K_below[3:] = -90.0   # -5500: a mask applied after the softmax is right there)
    # And the forward checker's float16 scores above 65504 (finite, and exact, in
    # float32; st16a): a query of 100s against keys of 82s, one entry 0.0625 or
    # 0.125 less in keys 1 and 2 (scores 65600, 65599.2, 65598.4), and a query of
    # 255s (first entry 64) against keys of 255s, one entry 1/8 or 1/4 less
    # (scores 514111.875, 514110.875, 514109.875): scores clipped from above below
    # them (at float16's 65504, 1e5 or 6e5) tie.
    K_c = np.full((3, 64), 82.0)
    K_c[1, 0], K_c[2, 0] = 81.9375, 81.875
    K_x = np.full((3, 64), 255.0)
    K_x[1, 0], K_x[2, 0] = 254.875, 254.75
    Q_x = np.full((1, 64), 255.0)
    Q_x[0, 0] = 64.0
    # (dO near orthogonal to O, D = dO . O near 0: dQ, whose entries but the first
    # cancel to 0, does not amplify float32's rounding, 6e-4 at most)
    V_c = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, -0.5]])
    f16_top = [tuple(x.astype(np.float16) for x in xs) for xs in (
        (np.full((1, 64), 100.0), K_c, V_c, np.array([[1.0, -3.25]])),
        (Q_x, K_x, V_c, np.array([[1.0, -3.625]])))]
    high_note = ("; compute in float32 (as the forward exercise's solution does) and cast "
                 "back: Q.astype(np.float32), the gradients .astype(Q.dtype)")
    return _report(one_head + [
        _run("batch and head dimensions (B, H, T_q, d_k), five-dimensional "
             "(2, 3, 2, T_q, d_k), and (B, H) with no key at all (T_k = 0), no mask",
             _all(_case(fn, Qb, Kb, Vb, dOb, on_error=batch_hint),
                  _case(fn, Q5, K5, V5, dO5, on_error=FIVE_D_HINT if batch_hint else ""),
                  _no_key_case(fn, Qb, Kb[..., :0, :], Vb[..., :0, :], dOb))),
        _run("one (T_q, T_k) causal mask for every batch item and head; and one key "
             "(T_k = 1), a (T_q, 1) mask that hides it from one query",
             _all(_case(fn, Qb, Kb, Vb, dOb, causal_mask(T_q, T_k), on_error=batch_hint),
                  _one_key_case(fn, Qb, Kb[..., :2, :], Vb[..., :2, :], dOb, one_key,
                                on_error=batch_hint))),
        _run("a (B, 1, 1, T_k) padding mask, one sequence empty",
             _case(fn, Qb, Kb, Vb, dOb, pad, on_error=batch_hint)),
        _run("3-D inputs (B, T, d), a (T_q, T_k) causal mask: (3, T_q = 2, d_k = 9), "
             "T_k = 8, d_v = 4; and B = 1, T_q = 1; and a (B, T_q, T_k) mask; and "
             f"{DRAWN_SIZES} sets of sizes drawn afresh",
             _all(_case(fn, Qo, Ko, Vo, dOo, causal_mask(2, 8), on_error=leading_hint),
                  _case(fn, Qo[:1, 1:], Ko[:1], Vo[:1], dOo[:1, 1:], causal_mask(2, 8)[1:],
                        on_error=leading_hint),
                  _case(fn, Qo, Ko, Vo, dOo, mask_o, on_error=leading_hint),
                  _drawn_case(lambda q, k, v, m: _case(fn, q, k, v, _drawn_dO(q, v), m),
                              seed, f"_drawn_inputs({seed}) in attention.checkers.backward "
                              "gives them again, (Q, K, V, dO, mask) at each set of sizes",
                              two_keys=True))),
        _run("a (B, H, T_q, T_k) mask where some queries see no key; an "
             "(H, T_q, T_k) one, B = H = 3",
             _all(_case(fn, Qb, Kb, Vb, dOb, empty, on_error=batch_hint),
                  _case(fn, Qhh, Khh, Vhh, dOhh, mask_h, on_error=batch_hint))),
        _run("float32 inputs, causal mask and none, scores above 100, queries "
             "that see no key, and no key at all (float32 gradients); float16 inputs "
             "give float16 gradients (to a relative 1e-2), some queries seeing no key, "
             "and no key at all",
             _all(_case(fn, *f32, causal_mask(T_q, T_k), on_error=batch_hint),
                  _case(fn, *f32, on_error=batch_hint),
                  # (st18a: empty rows were checked in float64 only, so a finite
                  # fill in float32 with no zeroing of the empty rows passed; at
                  # small scores, where a masked score of 0 is not told apart)
                  _case(fn, *(x.astype(np.float32) for x in (Qb, Kb, Vb, dOb)),
                        empty, on_error=batch_hint),
                  _no_key_case(fn, *(x.astype(np.float32) for x in (Q, K[:0], V[:0], dO)),
                               no_keys),
                  _dtype_case(fn, *f16, on_error=batch_hint),
                  _dtype_case(fn, *f16, empty, on_error=batch_hint),
                  _no_key_case(fn, *(x.astype(np.float16) for x in (Q, K[:0], V[:0], dO))),
                  _dtype_case(fn, *f16_mid, on_error=batch_hint, rtol=RTOL_FLOAT16_HIGH,
                              what=" (scores 15 to 36, d_k = 8)" + high_note),
                  _dtype_case(fn, *f16_high, rtol=RTOL_FLOAT16_HIGH,
                              what=" (scores near 9600, d_k = 64)" + high_note),
                  _dtype_case(fn, *f16_masked, mask_n, rtol=RTOL_FLOAT16_HIGH,
                              masked_below=K_below.astype(np.float16),
                              what=" (masked; visible scores near -65600, "
                                   "-29500 and -5000, d_k = 64: only -inf, or "
                                   "float32's "
                                   "minimum in float32 scores, is below them)"),
                  *(_dtype_case(fn, *xs, rtol=RTOL_FLOAT16_HIGH,
                                what=f" (scores near {top}, above float16's "
                                     "65504, d_k = 64)")
                    for xs, top in zip(f16_top, ("65600", "514000"))))),
    ], verbose)
