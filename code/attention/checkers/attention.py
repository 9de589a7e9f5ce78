"""Checker of Exercise 8, ``ex-numpy-attention`` (page "Masks"): scaled dot-product
attention in NumPy, ``fn(Q, K, V, mask=None) -> (O, A)``.

The contract the exercise states, and this checker tests:

* shapes: Q (..., T_q, d_k), K (..., T_k, d_k), V (..., T_k, d_v), with leading batch
  and head dimensions (none, one as in (B, T, d), two, or three, (2, 7, 2, T, d): code
  written per ndim shows); returns O (..., T_q, d_v) and A (..., T_q, T_k), in that
  order;
* every row counts all its keys: one masked case has T_k = 4999 (prime: not a
  multiple of any block size), each row's maximum growing from each block of 64 (up
  to 4096) keys to the next, so that code working in key blocks runs several (an
  online softmax that does not rescale its running sum when the running maximum
  grows is named, with a block size that gives its answer; a sum over the first
  keys fails); its row 1 hides every key but its last (4998 keys: a first block of
  any size up to 4998 is fully masked there; st21a: with 4200 hidden, blocks of 4201
  to 4998 keys passed), and a short case's rows hide their first 3 and 2 keys, so
  that an online softmax whose running maximum starts at -inf, and turns NaN
  (exp(-inf + inf)) on a fully masked first block, is named, and so is that NaN
  made zeros by np.nan_to_num (st17a: every row of every case saw key 0 or 1, and
  it passed);
* scores Q K^T / sqrt(d_k) (cases at d_k = 10 and 2, not squares: a scale of
  1/int(np.sqrt(d_k)) is named, at d_k = 2, where it is 1, once the large scores at
  d_k = 4 have ruled out no scale at all, st21a); A is their softmax along the keys (each row sums to 1, in
  float64 within 1e-12), computed stably (each row's own maximum subtracted, even when
  it is negative), so that large scores do not overflow and a row whose scores all
  lie far below 0 (one case has a query near -1000) does not underflow (a shift by
  the row maximum of the unscaled scores Q K^T is named, and so, on the far case,
  after it failed the large scores, is a shift by the row's largest |S|); and a
  query whose visible keys all score near -1e300 (finite) gets its weights from them,
  which a finite fill of the masked scores above them (-1e9, -1e15, float32's
  -3.4e38), or a row maximum clamped from below (at -1e13, say), does not give (a
  clamp below -1e300 fails on the rows near -1e308, where it is named first: the
  one-computation mistakes the -1e300 rows reject are not named there); visible
  float64 scores near 7.1e6 (weights 0.14, 0.28, 0.58) and near 1.4e299 (one-hot) at
  d_k = 2, where scores clipped from above before exp() (np.minimum(S, 6e5), 1e6,
  or anywhere below 7e298) tie, and are named (st16a: such clips passed);
* ``mask`` is boolean, True = "may attend", and broadcasts to (..., T_q, T_k) as it is
  (the cases give it as (T_k,), on T_q != T_k and on self-attention, T_q = T_k, where
  read as one flag per query, ``mask[:, None]``, it broadcasts and is named; all-False
  (T_k,), an empty sequence; (T_q, T_k), (B, T_q, T_k) for 3-D inputs,
  (B, 1, 1, T_k), (B, H, T_q, T_k), and (H, T_q, T_k) for 4-D inputs, one per head,
  with B = H = 3: a mask given new axes, as ``mask[:, None]`` for a 3-D one (on 3-D
  inputs it adds an axis; on 4-D ones it reads the mask as (B, T_q, T_k), one per
  batch item) or ``mask[:, None, None]`` for a (T_k,) one, is named); a masked
  key gets weight exactly 0, whatever its score (one case has a masked key scoring near
  1e300, which the usual finite biases added to it, -1e9 or float32's -3.4e38, leave
  on top, and, at d_k = 1, one near 1.4e308 above visible keys near -1e308, which even
  ``np.finfo(np.float64).min`` added to it leaves on top); a finite fill in place of
  the masked scores must lie below every visible one (-1.5e308 and -1.75e308 are not
  below a visible score near -1.79e308; a row's lowest score minus 1000 rounds to that
  score): ``np.finfo(np.float64).min`` as the fill is accepted: it ties only with a
  visible score of exactly that value, which no case has; a query whose every key is
  masked gets all-zero weights and a zero output, never NaN, and so does every query
  when there is no key at all (T_k = 0: K (0, d_k), V (0, d_v), with and without a
  (T_q, 0) mask, in float64, float32 and float16, and with (B, H) axes): O zeros
  (..., T_q, d_v), A of shape (..., T_q, 0) (a plain S.max(axis=-1), which raises
  there, is told initial=-np.inf; zeros built by hand without the leading axes, or
  in float32 for float16 inputs, are named, st20a);
* ``mask=None`` is no mask: one unmasked case is self-attention (T_q = T_k), where a
  causal mask applied by default is named (st20a: it passed);
* one key, T_k = 1, on (B, H) inputs with a (T_q, 1) mask that hides it from one
  query, whose weight and output are zero: a shortcut that gives the one key weight 1
  (A = np.ones(...)) is named where the same rows masked over two keys come out
  right (st21a: no case had T_k = 1, and it passed);
* the outputs have the inputs' shapes, size-1 axes kept (one case has B = 1 and
  T_q = 1: no ``np.squeeze``, which is named, st21a);
* sizes drawn afresh on each call (st21a: every round found a shortcut tuned to a
  size the fixed cases lacked): DRAWN_SIZES sets of (batch, T_q, T_k, d_k, d_v), zero
  to two leading axes of 1 to 4, T_q and T_k from 1 to 9, d_k from 1 to 16, d_v from
  1 to 8, without a mask and with a drawn (T_q, T_k) one; a failure there prints the
  sizes and the seed (``_draw_sizes(seed)`` draws them again);
* float16 inputs computed in float32 and cast back (scores near 3200, whose raw
  products float16 holds but rounds by up to 8: float16 work unless Q K^T overflows
  is named; scores near 65600 and near 514000, above float16's 65504: scores clipped
  below them, at +-65504, +-7e4 or +-1e5, are named; and, masked, visible scores
  near -65600, below which float16's minimum used as the fill of float32 scores
  lies: that fill is named);
* the outputs have the inputs' dtype (float16, float32 or float64), with a mask too
  (a masked float32 and a masked float16 case: a float64 fill or bias, as
  ``np.finfo(np.float64).min``, is named), and float32 ones
  the values of the inputs' exact attention to 1e-5 (with scores above 88.7, where
  float32's exp() overflows, and a fully masked row: a finite fill in float32 that
  leaves it uniform is named, st18a);
* the inputs and the mask are left unchanged (no ``Q /= ...`` on the caller's array);
* O and A are NumPy arrays (not lists, not ``np.ma`` masked arrays, whose hidden
  entries still hold numbers), computed in NumPy: an attempt that runs the
  library's own attention (``attention.scaled_dot_product_attention``,
  ``tiled_attention``, ``blocked_attention``, their helpers, or
  ``attention.torch.scaled_dot_product_attention``: attention.torch is imported before
  the attempt runs, when torch is installed), the library's softmax
  (``attention.softmax``, its private ``_softmax``, ``naive_softmax``,
  ``attention.torch.safe_softmax``, ``softmax_vjp``, ``softmax_jacobian``), any of
  PyTorch's attention (``_engine._torch_attention``, each told by its own name: torch.nn.functional.scaled_dot_product_attention,
  torch.nn.functional.multi_head_attention_forward, which nn.MultiheadAttention runs,
  torch.nn.attention.flex_attention.flex_attention, and every built-in of torch,
  torch._C._nn and torch._C._VariableFunctions and every torch.ops.aten operator, each
  overload too, whose name contains "attention", with aten's
  _transformer_encoder_layer_fwd, nn.TransformerEncoderLayer's fast path: the private
  math kernel torch.ops.aten._scaled_dot_product_attention_math,
  torch._native_multi_head_attention, nn.MultiheadAttention's fast path, and the
  flash, efficient and cuDNN kernels among them; st25b: the math kernel and
  multi_head_attention_forward passed the temperature checker) or PyTorch's softmax
  (``torch.softmax``, ``torch.nn.functional.softmax``, ``Tensor.softmax`` and their
  log-softmax siblings) is refused where the profiler of
  ``_engine._refusing_the_library`` sees the call (its blind spots are listed there);
* float64 inputs give float64 results too (long double ones are told so, and float32
  ones are told their dtype);
* a key far below its row's maximum keeps its own weight: one query's keys lie 40,
  80 and 708 below its maximum (weights 4.2e-18, 1.8e-35, 3.3e-308), compared
  relatively (to 1e-6), so that a floor on the exponent, exp(max(S - m, -c)) with
  c up to 708, or weights flushed to 0, is named (st18a: they passed, and a floor
  that the other cases reject was told float32; float32 is named only when no row
  has a flushed weight or floored ties).

Blind spots: an online softmax whose blocks are at least as long as the longest row
(4999 keys; st18a: blocks of 8192 without the rescale) makes one pass over every row
and looks like the plain softmax, so it passes whether or not it rescales or starts
its running maximum at -inf. Attention
written from PyTorch's other operations (``torch.exp`` of
scores formed from tensors made from the inputs, divided by their sum) is not refused;
an attempt that computes it so and hands back NumPy arrays passes if its numbers are
right. Nor is torch's attention refused where it is reached only inside torch's C++
(through a torch operator of another name that runs it, such as a TorchScript
function).

When an attempt fails a case, the checker compares it with the usual mistakes on the same
inputs and names the one it matches; otherwise it says what differed and what the case
tests. Messages are wrapped to 76 columns.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import math
import os
from collections.abc import Callable

import numpy as np

from ..forward import scaled_dot_product_attention
from ..masks import causal_mask, padding_mask
from ._engine import (_NAN_FROM_SCORES, _RNG_SEED, BATCH_HINT, LEADING_HINT, Rejected,
                      _boolean_index_hint,
                      _clipped_scores, _dtype_rejection, _fitted_scale, _float32_valued,
                      _all, _keepdims_hint, _matching, _qkv, _refusing_the_library,
                      _fill_edge, _library_attention, _library_softmax, _mask_axes_hint,
                      _report, _results, _run, _torch_attention, _torch_softmax)

#: Said when the attempt runs one of the library's attention functions.
LIBRARY = ("your function calls the library's own {name}: the exercise is to write "
           "attention yourself, in NumPy, without the library's own functions or "
           "torch (the scores Q K^T / sqrt(d_k), the mask, their softmax along the "
           "keys and O = A V)")


#: Said when the attempt calls any of torch's attention (``_engine._torch_attention``:
#: its public functions, and every operator and function whose name says attention;
#: {name}: the one called).
TORCH_ATTENTION = ("your function calls {name}, PyTorch's built-in attention: the "
                   "exercise is to write attention yourself, in NumPy (the scores "
                   "Q K^T / sqrt(d_k), the mask, their softmax along the keys and "
                   "O = A V)")
#: Said when the attempt calls torch.nn.functional.scaled_dot_product_attention.
TORCH_SDPA = TORCH_ATTENTION.format(
    name="torch.nn.functional.scaled_dot_product_attention")


#: Said when the attempt calls PyTorch's softmax.
TORCH_SOFTMAX = ("your function calls {name}, PyTorch's softmax: the exercise is to "
                 "write attention yourself, in NumPy, without the library's own "
                 "functions or torch (the scores Q K^T / sqrt(d_k), the mask, their "
                 "softmax along the keys, exp(S - max) / sum, and O = A V)")


#: Said when a 3-D mask on 4-D inputs was given a head axis, as if one per batch item.
PER_BATCH = ("the mask was read as (B, T_q, T_k) with mask[:, None]: a 3-D mask on 4-D "
             "scores broadcasts as (H, T_q, T_k), one per head (NumPy aligns shapes "
             "from the right); use it as it is, np.where(mask, S, -np.inf)")


#: Said when a (T_k,) key mask on self-attention was read as one flag per query.
KEY_PER_QUERY = ("the (T_k,) mask was read as one flag per query (mask[:, None], or "
                 "S[~mask] = -np.inf, which indexes a 2-D S's first axis, the "
                 "queries): a 1-D mask is one flag per key, for every query; its one "
                 "axis is the keys, the scores' last, and it broadcasts against them "
                 "as it is (with "
                 "T_q = T_k, as in self-attention, mask[:, None] broadcasts too, and "
                 "hides queries instead of keys); use np.where(mask, S, -np.inf)")


#: Said when the weights on square inputs without a mask are causal (st20a: no
#: unmasked case had T_q = T_k, and it passed).
CAUSAL_DEFAULT = ("with no mask every key is visible: a causal mask was applied with "
                  "mask=None (here T_q = T_k, as in self-attention), so each query "
                  "lost the keys after it; mask=None means no mask at all: mask the "
                  "scores only when a mask is given, as it is")


#: Said when a result is a NumPy masked array (st15a: its hidden entries hold
#: whatever the computation left there, and np.asarray reads them).
MASKED_ARRAY = ("{name} is a numpy.ma.MaskedArray, not a plain NumPy array: its "
                "masked entries still hold numbers (whatever the computation left "
                "there, which np.asarray and any caller outside np.ma read), so the "
                "masked keys need not weigh exactly 0; return a plain array, such "
                "as A.filled(0.0), and compute O from it")


#: Said when the weights are those of an online softmax whose running sum was not
#: rescaled (st15a: passed every case while the longest row was 7 keys).
ONLINE = ("the running sum was not rescaled when the running maximum grew: an online "
          "softmax over key blocks (a running maximum m and a running sum l) must "
          "multiply l by exp(m_old - m_new) whenever m grows, l = l * exp(m_old - "
          "m_new) + exp(S_block - m_new).sum(-1); without it the earlier blocks "
          "count at their old shift and a row no longer sums to 1")


#: The key-block sizes whose online softmax without the rescale is named: powers of
#: two and round sizes (st16a wrote 300 and 512).
ONLINE_BLOCKS = (2, 4, 8, 10, 16, 32, 50, 64, 100, 128, 200, 256, 300, 500, 512, 1000,
                 1024, 2000, 2048, 4000, 4096)


#: Said when a row whose first key block is fully masked turns NaN in an online
#: softmax (st17a: its running maximum started at -inf, every row of every case
#: saw key 0 or 1, and it passed).
FIRST_BLOCK = ("a row whose first key block is fully masked gives NaN: with the "
               "running maximum m started at -inf, the rescale exp(m_old - m_new) "
               "is exp(-inf + inf) = NaN while every key so far is masked, and the "
               "NaN stays in the running sum; start the running maximum at a finite "
               "value (np.finfo(S.dtype).min) or skip blocks with no visible key")


#: Said when those rows' NaN was made zeros, as by np.nan_to_num (st21a: it passed
#: while no first block longer than 4200 keys was fully masked).
FIRST_BLOCK_ZEROED = (
    "a row whose first key block is fully masked, though it sees a later key, got "
    "zero weights and a zero output: with the running maximum m started at -inf, "
    "the rescale exp(m_old - m_new) is exp(-inf + inf) = NaN while every key so far "
    "is masked, and np.nan_to_num (or another NaN-to-number replacement) turned "
    "that row's NaN into zeros; start the running maximum at a finite value "
    "(np.finfo(S.dtype).min) or skip blocks with no visible key")


def _first_block_rows(mask, shape):
    """For each row threshold b >= 2 (a first visible key at b or later), the rows
    (boolean, of ``shape``, the rows of the scores) that see a key but none of their
    first b: those an online softmax in key blocks of b started at -inf turns NaN."""
    if mask is None:
        return []
    seen = np.broadcast_to(mask, shape)
    has, first = seen.any(axis=-1), np.argmax(seen, axis=-1)
    return [has & (first >= b) for b in sorted({int(f) for f in first[has]}) if b >= 2]


def _first_block_zeroed(A, O, A_ref, O_ref, mask, atol) -> bool:
    """Whether (O, A) is the reference with the rows of one ``_first_block_rows`` set
    zeroed: FIRST_BLOCK's NaN made zeros (np.nan_to_num)."""
    for rows in _first_block_rows(mask, A_ref.shape):
        keep = ~rows[..., None]
        if _same(A, np.where(keep, A_ref, 0.0), atol) and \
                _same(O, np.where(keep, O_ref, 0.0), atol):
            return True
    return False


def _first_block_nan(A, mask, T_k=None) -> bool:
    """Whether the rows of A (..., T_q, T_k), or of dQ (..., T_q, d_k) given T_k, with
    NaN are exactly the rows whose first b keys, b >= 2, are all masked and a later
    one is not (and there is such a row): the NaN of FIRST_BLOCK, an online softmax
    in blocks of b."""
    if mask is None:
        return False
    with np.errstate(all="ignore"):
        nan = np.isnan(A).any(axis=-1)
    if not nan.any():
        return False
    seen = np.broadcast_to(mask, nan.shape + (A.shape[-1] if T_k is None else T_k,))
    has, first = seen.any(axis=-1), np.argmax(seen, axis=-1)
    if not np.all(has[nan]):
        return False
    b = int(first[nan].min())
    return b >= 2 and bool(np.array_equal(nan, has & (first >= b)))


#: Said when an attempt that ran on one head raises on five-dimensional inputs.
FIVE_D_HINT = ("the inputs may have any number of leading axes (here three, "
               "(2, 7, 2, T, d)): every step must act on the last two axes "
               "whatever comes before them (np.swapaxes({X}, -1, -2), @, axis=-1, "
               "d_k = Q.shape[-1]), not on a list of cases per ndim or axes "
               "counted from the front")


#: The long row's keys: above 4096, prime (a multiple of no block size), so that
#: code working in key blocks (of up to 4096) runs several, the last one short.
LONG_T_K = 4999
#: Keys masked at the start of the long case's row 1: all but its last key, so that
#: its first block, of any size up to LONG_T_K - 1, has no visible key (st21a: with
#: 4200 hidden, an online softmax in blocks of 4201 to 4998 keys from -inf, with
#: np.nan_to_num, passed).
LONG_HIDDEN = LONG_T_K - 1


def _long_row(Q, K, rng) -> np.ndarray:
    """Make (Q, K), of LONG_T_K keys, the long case (in place) and return its mask.
    Every key's first entry grows along the row (the queries' first entries 1 to
    2.5, the drawn part scaled by 0.1), so that each row's maximum grows from each
    block of 64 (up to 4096) keys to the next, and the short last block's last key
    (visible) is the highest; a key in three is masked, and row 1 hides its first
    LONG_HIDDEN keys."""
    T_q, T_k = Q.shape[-2], K.shape[-2]
    Q[:, 0] = 1.0 + 1.5 * rng.random(T_q)
    K *= 0.1  # (the drawn part small beside the growth: each block's maximum grows)
    K[:, 0] += np.linspace(0.0, 40.0, T_k)
    K[-1, 0] += 0.5
    mask = rng.random((T_q, T_k)) < 0.7
    mask[:, 0] = mask[:, -1] = True
    mask[1, :LONG_HIDDEN] = False
    return mask


def _torch_builtins() -> tuple[dict, dict]:
    """All of torch's attention (``_engine._torch_attention``, TORCH_ATTENTION_REFUSED),
    each told by its own name: (its Python functions, as ``banned`` of
    ``_refusing_the_library``; its built-ins), both {} without torch. Imports
    attention.torch (and so torch) first, so that its function and torch's are known
    before the attempt runs."""
    try:
        importlib.import_module("..torch", __package__)
    except ImportError:  # torch is not installed: nothing of it to refuse
        return {}, {}
    return _torch_attention(TORCH_ATTENTION)



# --- the usual mistakes, each a few lines that compute the wrong answer it gives ----

def _S(Q, K, c=None):
    """The scores c Q K^T in float64, c = 1/sqrt(d_k) unless given."""
    Q, K = (np.asarray(x, dtype=np.float64) for x in (Q, K))
    return (1.0 / math.sqrt(Q.shape[-1]) if c is None else c) * (Q @ np.swapaxes(K, -1, -2))


def _fill(S, mask, value=-np.inf):
    return S if mask is None else np.where(mask, S, value)


def _soft(S, axis=-1, m=None, total=None, guard=True):
    """exp(S - m) / total, m the maximum and total the sum along ``axis`` unless given
    (``total`` a function of the exponentials); ``guard`` shifts a row whose maximum is
    -inf by 0 and divides a zero sum by 1, so that a fully masked row is all zeros."""
    m = S.max(axis=axis, keepdims=True) if m is None else m
    E = np.exp(S - (np.where(np.isneginf(m), 0.0, m) if guard else m))
    t = E.sum(axis=axis, keepdims=True) if total is None else total(E)
    return E / (np.where(t == 0, 1.0, t) if guard else t)


def _near(x: float) -> str:
    """"near -1000", "near -1e12": a score's size in a message."""
    return (f"near {x:.0e}".replace("e+", "e") if abs(x) >= 1e6
            else f"near {round(x, -2) + 0.0:.0f}")  # (+ 0.0: no "-0")


def _mistakes(Q, K, V, mask) -> list[tuple[str, str, Callable]]:
    """(key, sentence, the wrong (O, A) as a thunk) for every mistake the checker can
    name on these inputs. A key ending in "!" marks a mistake paired with a missing guard
    (its fully masked rows NaN): when the missing guard alone explains an answer, that
    is what is named."""
    d_k, d_v, T_q, T_k = Q.shape[-1], V.shape[-1], Q.shape[-2], K.shape[-2]
    V = np.asarray(V, dtype=np.float64)
    S, M = _S(Q, K), mask is not None
    # the scores in the dtype a float32 attempt works in (float64's otherwise)
    work = np.promote_types(np.asarray(Q).dtype, np.float32)
    S_work = S.astype(work)

    def out(A, scale=1.0):
        return lambda: (scale * (A() @ V), A())

    def soft(S_=S, **how):  # the scores masked, then a softmax done some wrong way
        return out(lambda: _soft(_fill(S_, mask), **how))

    def scaled(c):
        return soft(_S(Q, K, c))

    def filled(value, add=False):
        return out(lambda: _soft(S + np.where(mask, 0.0, value) if add
                                 else _fill(S, mask, value)))

    def after(renormalise):  # the mask applied to the weights, after the softmax
        def A():
            W = np.where(mask, _soft(S), 0.0)
            t = W.sum(axis=-1, keepdims=True)
            return W / {"": 1.0, "plain": t, "guarded": np.where(t == 0, 1.0, t)}[renormalise]
        return out(A)

    def online(block):  # keys in blocks, the running sum never rescaled (st15a)
        def A():
            S_ = _fill(S, mask)
            m = np.full(S_.shape[:-1] + (1,), -np.inf)
            total = np.zeros_like(m)
            for b in range(0, T_k, block):
                m_new = np.maximum(m, S_[..., b:b + block].max(axis=-1, keepdims=True))
                shift = np.where(np.isneginf(m_new), 0.0, m_new)
                total = total + np.exp(S_[..., b:b + block] - shift).sum(
                    axis=-1, keepdims=True)
                m = m_new
            E = np.exp(S_ - np.where(np.isneginf(m), 0.0, m))
            return E / np.where(total == 0, 1.0, total)
        return out(A)

    def row_sum_T(E):  # a row's sum without keepdims: it broadcasts as a row vector
        return E.sum(axis=-1)[..., None, :]

    axis_msg = ("the softmax runs along the wrong axis: the columns of A sum to 1; each "
                "row (one query over all keys) must sum to 1, axis=-1")
    global_max_msg = (
        "the shift is the maximum of the whole array, not of each row: a row whose "
        "scores all lie far below it underflows to 0 / 0; subtract each row's own "
        "maximum, S.max(axis=-1, keepdims=True)")
    nokeep_msg = (
        "a row's maximum or sum lost its last axis (no keepdims=True): with T_q = T_k "
        "it broadcasts without an error, but along the wrong axis; use "
        "S.max(axis=-1, keepdims=True) and E.sum(axis=-1, keepdims=True)")
    nokeep_max = _fill(S, mask).max(axis=-1)[..., None, :]
    allowed = None if mask is None else np.broadcast_to(mask, S.shape)
    seen = M and allowed.any(axis=-1)
    top_masked = M and np.where(allowed, -np.inf, S).max(axis=-1)
    top_visible = M and np.where(allowed, S, -np.inf).max(axis=-1)
    far_rows = M and seen & (top_masked > top_visible + 1e4)
    far = M and bool(np.any(far_rows))
    # the scores of the row whose masked key is highest (st22a: the float16 case's
    # masked keys score 0 and 8, and were told "near 1e300")
    far_row = np.unravel_index(np.argmax(np.where(far_rows, top_masked, -np.inf)),
                               np.shape(far_rows)) if far else None
    far_text = (f"a masked key scores {_near(float(top_masked[far_row]))}, the visible "
                f"ones at most {_near(float(top_visible[far_row]))}") if far else ""
    empty = M and not seen.all()
    bias_msg = (
        "masked scores are shifted by a finite bias, as S + (~mask) * -1e9 does: a finite "
        "mask value (use -inf, np.where(mask, S, -np.inf)) only moves a masked score down"
        + (" by a fixed amount, and a masked key whose score is far above the others (here "
           f"{far_text}) stays on top and takes the weight" if far else "")
        + (("; and" if far else ":") + " a fully masked row is shifted as a whole and "
           "keeps the weights it would have without the mask, where the contract asks "
           "for zero weights and a zero output" if empty else ""))

    def biased(zero_empty, bias):
        def A():
            W = _soft(S + np.where(mask, 0.0, -bias))
            return np.where(allowed.any(axis=-1, keepdims=True), W, 0.0) if zero_empty else W
        return out(A)

    def times_mask():  # exp(S - m) * mask, m the visible maximum (st22a)
        m = _fill(S, mask).max(axis=-1, keepdims=True)
        E = np.exp(S - np.where(np.isneginf(m), 0.0, m)) * allowed
        t = E.sum(axis=-1, keepdims=True)
        return E / np.where(t == 0, 1.0, t)

    def nan_to_num(work, on_exp):  # no shift, the overflow's inf / inf hidden
        def A():
            S_w = _fill(S, mask).astype(work)
            E = np.nan_to_num(np.exp(S_w)) if on_exp else np.exp(S_w)
            t = E.sum(axis=-1, keepdims=True)
            return np.nan_to_num(E / np.where(t == 0, 1, t)).astype(np.float64)
        return out(A)

    def filled_zeroed(value):  # a finite fill, and a fully masked row zeroed by hand
        def A():
            W = _soft(_fill(S, mask, value))
            return np.where(allowed.any(axis=-1, keepdims=True), W, 0.0)
        return out(A)

    row_max = _fill(S, mask).max(axis=-1, keepdims=True)
    with np.errstate(all="ignore"):
        lowest = float(np.where(seen, row_max[..., 0], np.inf).min()) if M else \
            float(row_max.min())
    low_row = lowest < -700  # a row whose every allowed score underflows exp()
    low_text = _near(lowest)
    own_max = ("the shift must be each row's own maximum, even when it is negative: "
               f"a row whose allowed scores all lie far below 0 (here {low_text}) "
               "underflows to 0 / 0 when it is shifted by less")
    no_shift_msg = (
        "the softmax does not subtract each row's maximum before exp(): large scores "
        "overflow to inf and inf / inf is NaN; compute exp(S - S.max(-1)) instead"
        + (f"; and {own_max}, so shift always, not only when a score is large"
           if low_row else ""))
    after_msg = ("the mask is applied after the softmax and the weights renormalised: when "
                 "a masked key's score is far above the allowed ones, their exponentials "
                 "underflow to 0")
    clamp_msg = (f"{own_max}: np.maximum(S.max(-1), 0), or any shift clamped at 0, "
                 "leaves such a row unshifted; subtract S.max(axis=-1, keepdims=True) "
                 "itself (and shift a fully masked row, whose maximum is -inf, by 0)")
    mistakes = [
        *[("causal-default", CAUSAL_DEFAULT,
           out(lambda: _soft(_fill(S, causal_mask(T_q, T_k)))))]
        [:1 if not M and T_q == T_k else 0],
        ("no-shift", no_shift_msg, soft(m=np.zeros(1))),
        *([("no-shift", no_shift_msg, soft(S_work, m=np.zeros(1, work)))]
          if work != np.float64 else []),
        ("clamped-shift", clamp_msg, soft(m=np.maximum(row_max, 0.0))),
        ("clamped-shift!", clamp_msg, soft(m=np.maximum(row_max, 0.0), guard=False)),
        ("unguarded",
         "a fully masked row gives NaN: with every score -inf, the row maximum is -inf "
         "and -inf - (-inf) is NaN, or, the maximum guarded, the row's sum is 0 and "
         "0 / 0 is NaN (masking after the softmax gives 0 / 0 too); such a row must "
         "get zero weights and a zero output: shift it by 0 and divide its zero sum "
         "by 1", soft(guard=False)),
        *([("after-renormalise", f"{after_msg} and the renormalisation divides 0 by 0; set "
            "masked scores to -inf before the softmax", after("plain")),
           ("after-renormalise", f"{after_msg} before the mask removes that key, and the "
            "renormalised row is all zeros; set masked scores to -inf before the softmax",
            after("guarded")),
           ("exp-times-mask",
            "the exponentials are multiplied by the mask, exp(S - m) * mask, with m the "
            "maximum of the visible scores: a masked key's score far above it overflows "
            "exp() to inf, and inf * 0 is NaN; set masked scores to -inf before exp(), "
            "np.where(mask, S, -np.inf)", out(times_mask)),
           ("after-zero",
            "the mask is applied after the softmax without renormalising, so the rows no "
            "longer sum to 1; set masked scores to -inf before the softmax", after("")),
           ("max-unmasked",
            "the row maximum is taken before the mask is applied, so a masked key's score "
            "can set it: when that score is far above the allowed ones, their exponentials "
            "underflow to 0; set masked scores to -inf first, then subtract the maximum of "
            "what is left", soft(m=S.max(axis=-1, keepdims=True))),
           ("inverted",
            "the mask is inverted: True means 'may attend', but your weights are zero where "
            "the mask is True", out(lambda: _soft(_fill(S, ~np.asarray(mask))))),
           *[("transposed-mask", TRANSPOSED_MASK,
              out(lambda: _soft(_fill(S, np.swapaxes(np.asarray(mask), -1, -2)))))]
           [:1 if np.ndim(mask) >= 2 and np.shape(mask)[-1] == np.shape(mask)[-2] > 1
            else 0],
           *[("masked-on-top",
              "the masked keys take the weight, as an ignored or an inverted mask "
              "gives here, and so does a finite bias added to the masked scores "
              "(S + (~mask) * -1e4) that leaves them above the visible ones (here "
              f"{far_text}): set masked scores to -inf before the softmax, "
              "np.where(mask, S, -np.inf)", out(lambda: _soft(S)))][:1 if far else 0],
           ("ignored", "the mask is ignored: masked keys get weight; set masked scores "
            "to -inf before the softmax (np.where(mask, S, -np.inf))",
            out(lambda: _soft(S))),
           *[("key-mask-per-query", KEY_PER_QUERY,
              out(lambda: _soft(_fill(S, np.asarray(mask)[:, None]))))]
           [:1 if np.ndim(mask) == 1 and T_q == T_k else 0],
           *[("mask-per-batch", PER_BATCH,
              out(lambda: _soft(_fill(S, np.asarray(mask)[:, None]))))]
           [:1 if np.ndim(mask) == 3 and S.ndim == 4 and np.shape(mask)[0] == S.shape[0]
            else 0],
           ("zero-fill",
            "masked scores are set to 0 instead of -inf; a score of 0 is an ordinary score "
            "and still gets weight", filled(0.0)),
           *[("large-negative",
              "masked scores are set to a large negative number (such as -1e9) instead "
              "of -inf: a fully masked row then gets uniform weights and averages keys "
              "it must not see; the contract asks for zero weights and a zero output",
              filled(-1e9))][:1 if empty else 0],
           *[("additive", bias_msg, biased(zero_empty, bias))
             for bias, zero_empty in ((1e4, False), (1e4, True), (1e9, False),
                                      (1e9, True), (np.finfo(np.float64).max, True))],
           # (float64's most negative number, np.finfo(np.float64).min, as the bias:
           # it flattens a fully masked row, which such an attempt zeroes by hand)
           *[("fill-below",
              "masked scores are replaced by a finite number (such as -1e9, -1e15, "
              "float16's -65504 or float32's -3.4e38), not -inf, and a finite fill "
              "(or a clamp of the row maximum) above the scores beats them: an allowed "
              "score below it (here a query's visible keys score "
              f"{low_text}) then loses to the masked keys, which take the weight; use "
              "-inf, np.where(mask, S, -np.inf), which is below every finite score",
              fill(value)) for value in (-1e9, -65504.0, -1e4) if lowest < value
             if value != -65504.0 or lowest < -1e9
             for fill in (filled, filled_zeroed)],
           *[("fill-float16",
              "masked scores are replaced by a finite fill, float16's most negative "
              "number (np.finfo(np.float16).min, -65504), not -inf: in float32 "
              "scores that is an ordinary number, and a finite fill (float16's "
              "minimum) above a visible score (here a query's visible keys score "
              f"{low_text}) gives the masked keys the weight; once the scores are "
              "float32, fill with -inf (or float32's own minimum)", fill(-65504.0))
             for fill in (filled, filled_zeroed) if -1e9 <= lowest < -65504.0]]
          if M else []),
        *[("clamped-below", "the row maximum is clamped from below, as "
           "np.maximum(S.max(-1), -1e13) does: a row whose maximum lies far below "
           f"the clamp (here {low_text}) is shifted by less than its maximum, and "
           "exp() of each of its scores underflows to 0; the shift must be each "
           "row's own maximum, even when it is negative: subtract S.max(axis=-1, "
           "keepdims=True) itself (and shift a fully masked row, whose maximum is "
           "-inf, by 0)", soft(m=np.maximum(row_max, bound)))
          for bound in (-1e13, -1e15) if lowest < bound],
        *[("raw-max",
           "the shift is the row maximum of the unscaled scores Q K^T, not of the "
           "scaled ones: exp(S - max(Q K^T)) shifts S = Q K^T / sqrt(d_k) by more "
           "than its own maximum (or less, on a row below 0), so a row underflows "
           "to zero weights or overflows to inf / inf; subtract the maximum of S "
           "itself, S.max(axis=-1, keepdims=True), after scaling",
           soft(S_, m=(row_max * math.sqrt(d_k)).astype(S_.dtype)))
          for S_ in ((S, S_work) if work != np.float64 else (S,))],
        *[("nan-to-num",
           "the softmax does not subtract each row's maximum before exp(): a large score "
           "overflows to inf, and np.nan_to_num (or another NaN-to-number replacement) "
           "hides the NaN of inf / inf, leaving rows of zeros or all weight on one key; "
           "subtract each row's maximum first, exp(S - S.max(-1, keepdims=True))",
           nan_to_num(work, on_exp)) for work in (np.float64, np.float32)
          for on_exp in (False, True)],
        ("abs-max",
         "the shift is the row's largest |S| (its largest magnitude), not its largest "
         "value: on a row whose allowed scores all lie far below 0 (here "
         f"{low_text}) that is far above the maximum, and exp() of every score "
         "underflows to 0; subtract S.max(axis=-1, keepdims=True) itself",
         soft(m=np.where(np.isfinite(_fill(S, mask)), np.abs(_fill(S, mask)),
                         0.0).max(axis=-1, keepdims=True))),
        ("axis", axis_msg, soft(axis=-2)),
        ("axis!", axis_msg, soft(axis=-2, guard=False)),
        ("global-max", global_max_msg, soft(m=_fill(S, mask).max())),
        ("global-max!", global_max_msg, soft(m=_fill(S, mask).max(), guard=False)),
        ("max-axis",
         "the maximum is taken along the wrong axis (one per key, over the queries): "
         "the shift must be the same number for every key of a row, or it changes the "
         "weights; use S.max(axis=-1, keepdims=True)",
         soft(m=_fill(S, mask).max(axis=-2, keepdims=True))),
        ("sum-axis", "the exponentials are divided by a sum along the wrong axis: each row "
                     "(one query over all keys) must sum to 1, E.sum(axis=-1, keepdims=True)",
         soft(total=lambda E: E.sum(axis=-2, keepdims=True))),
        ("sum-all",
         "the exponentials are divided by the sum of the whole array (E.sum() without "
         "an axis): each row (one query over all keys) must sum to 1, "
         "E.sum(axis=-1, keepdims=True)", soft(total=lambda E: E.sum())),
        *[("online", ONLINE + f" (here in key blocks of {block}, or of any size that "
           "splits these rows alike)", online(block))
          for block in ONLINE_BLOCKS
          if block < T_k],
        ("no-keepdims", nokeep_msg, soft(m=nokeep_max, total=row_sum_T)),
        ("no-keepdims", nokeep_msg, soft(m=nokeep_max)),
        ("no-keepdims", nokeep_msg, soft(total=row_sum_T)),
        ("no-scale", "the scores are not scaled: divide Q K^T by sqrt(d_k)", scaled(1.0)),
        ("scale-on-output",
         "the scale divides the output instead of the scores: the weights are "
         "softmax(Q K^T), unscaled; divide Q K^T by sqrt(d_k) before the softmax, and "
         "O = A V", out(lambda: _soft(_fill(_S(Q, K, 1.0), mask)), 1.0 / math.sqrt(d_k))),
        ("d_k", "the scores are divided by d_k instead of sqrt(d_k)", scaled(1.0 / d_k)),
        ("times-sqrt", "the scores are multiplied by sqrt(d_k) instead of divided by it",
         scaled(math.sqrt(d_k))),
        ("d_v", "the scale uses d_v (the width of V) instead of d_k, the width of Q and K",
         scaled(1.0 / math.sqrt(d_v))),
        ("T_k",
         ("the scale uses T_k (the number of keys) instead of d_k, the width of Q and K"
          if T_q != T_k else
          "the scale uses the sequence length (T_q = T_k here) instead of d_k, the "
          "width of Q and K")
         + (" (or d_k + 1, which equals T_k here: divide by sqrt(d_k) itself)"
            if T_k == d_k + 1 else ""), scaled(1.0 / math.sqrt(T_k))),
    ]
    root = math.isqrt(d_k)
    if root * root != d_k:  # (at d_k = 2 and 3 the same as no scale: see ruled_out)
        mistakes.append(("int-sqrt", INT_SQRT.format(root=root, d_k=d_k,
                                                     c=1 / math.sqrt(d_k)),
                         scaled(1.0 / root)))
    if d_k != 4:  # (at d_k = 4, d_k / 2 = sqrt(d_k))
        mistakes.append(("half-power", HALF_POWER.format(d_k=d_k, c=2 / d_k,
                                                         right=1 / math.sqrt(d_k)),
                         scaled(2.0 / d_k)))
    if d_k + 1 not in (T_k, T_q):
        mistakes.append(("d_k+1", "the scores are divided by sqrt(d_k + 1) instead of "
                                  "sqrt(d_k)", scaled(1.0 / math.sqrt(d_k + 1))))
    if T_q != T_k:
        mistakes.append(("T_q", "the scale uses T_q (the number of queries) instead of d_k, "
                                "the width of Q and K", scaled(1.0 / math.sqrt(T_q))))
    for ax in range(Q.ndim - 2):  # a fixed axis that is d_k only for 2-D inputs
        if Q.shape[ax] not in (d_k, d_v, T_k, T_q):
            mistakes.append((
                f"axis-{ax}",
                f"the scale uses Q.shape[{ax}] = {Q.shape[ax]} (a batch or head "
                f"dimension here) instead of d_k = Q.shape[-1], the last axis",
                scaled(1.0 / math.sqrt(Q.shape[ax]))))
    return mistakes


#: Said when the scale is 1/(d_k ** 1/2) = 2/d_k (st24a: told int() truncated it, then
#: to read d_k from the inputs, which it did).
HALF_POWER = ("the scores are divided by d_k ** 1/2, which Python reads as "
              "(d_k ** 1) / 2 = d_k / 2 (** binds tighter than /): at d_k = {d_k} the "
              "scale is 2/d_k = {c:.4g}, where 1/sqrt(d_k) = {right:.4g} (the two agree "
              "only at d_k = 4); write d_k ** 0.5, or math.sqrt(d_k)")

#: Said when a square mask is read transposed (st24a: np.swapaxes(mask, -1, -2) was
#: told only how far its weights were off).
TRANSPOSED_MASK = ("the mask is transposed: mask[..., i, j] says whether query i may "
                   "attend to key j, and it lines up with S = Q K^T as it is; use it "
                   "without np.swapaxes or .T (a square mask's shape cannot show this)")


#: Said when the scale is 1/int(np.sqrt(d_k)) (st21a: at d_k = 2, where that is 1, it
#: was told the scores were not scaled).
INT_SQRT = ("the scale is 1/int(np.sqrt(d_k)) = 1/{root} at d_k = {d_k}, where "
            "1/sqrt(d_k) = {c:.4g}: the scale must be 1/sqrt(d_k) as a float; int() "
            "or // truncates it (int(np.sqrt(d_k)), math.isqrt(d_k) or "
            "np.sqrt(d_k) // 1 is right only when d_k is a square); use "
            "math.sqrt(d_k)")


# --- comparing one attempt with the reference -----------------------------------------

def _same(got: np.ndarray, want: np.ndarray, atol: float) -> bool:
    return got.shape == want.shape and np.allclose(got, want, rtol=0.0, atol=atol,
                                                   equal_nan=True)


def _float16_scores(A, A_ref, Q, K, mask, tol=None, atol=0.0) -> str:
    """What weights ``A`` are told that lie much closer to a softmax of scores rounded
    to float16 (formed in float16 some usual way, or cast to it) than to the reference;
    otherwise "" (and always "" for weights within ``atol`` of the reference: right
    weights are not rounded ones). Given ``tol``, they must lie within it of such a
    softmax."""
    d_k = Q.shape[-1]
    h = [np.asarray(x, dtype=np.float16) for x in (Q, K)]
    c, r = 1.0 / math.sqrt(d_k), d_k ** -0.25
    with np.errstate(all="ignore"):
        ways = [_S(Q, K).astype(np.float16),
                (h[0] @ np.swapaxes(h[1], -1, -2)) * np.float16(c),
                (h[0] * np.float16(c)) @ np.swapaxes(h[1], -1, -2),
                (h[0] * np.float16(r)) @ np.swapaxes(h[1] * np.float16(r), -1, -2)]
        err = float(np.abs(A - A_ref).max())
        if err <= atol:
            return ""
        for S16, work in itertools.product(ways, (np.float64, np.float16)):
            if not np.isfinite(S16).all():  # the softmax in float64 or in float16
                continue
            A16 = _soft(_fill(S16.astype(work), mask)).astype(np.float64)
            if np.abs(A - A16).max() <= (0.5 * err if tol is None else tol):
                return (f"the weights differ from the reference by up to {err:.3g}, "
                        "as a softmax of scores rounded to float16 does (float16 "
                        "keeps about 3 digits: a score near 1000 is off by up to "
                        "0.25): form Q K^T and the softmax in float32, "
                        "Q.astype(np.float32) and so on, and cast O and A back at "
                        "the end")
        if Q.dtype != np.float16:
            # the inputs rounded to float16, the rest in float32 or wider (st14a)
            wide = [x.astype(np.float64) for x in h]
            A16 = _soft(_fill(c * (wide[0] @ np.swapaxes(wide[1], -1, -2)), mask))
            if np.abs(A - A16).max() <= (0.5 * err if tol is None else tol):
                return (f"the weights differ from the reference by up to {err:.3g}, "
                        "as the inputs rounded to float16 give (float16 keeps about "
                        "3 digits; Q.astype(np.float16) and so on, even with the "
                        f"rest in float32): {Q.dtype} inputs need {Q.dtype} work "
                        "or wider from the start; only float16 inputs are cast, "
                        "up to float32")
    return ""


def _call(fn, Q, K, V, mask, on_error=""):
    """The attempt's (O, A) as arrays; what it raises is rejected with a hint."""
    try:
        O, A = _results(fn, dict(Q=Q, K=K, V=V), None if mask is None else dict(mask=mask))
    except Rejected:
        raise
    except Exception as exc:
        shape = np.broadcast_shapes(Q.shape[:-1] + K.shape[-2:-1], np.shape(mask))
        raise Rejected(f"raised {type(exc).__name__}: {exc}"
                       f"{_boolean_index_hint(exc, mask) or _keepdims_hint(exc, shape)}"
                       f"{'' if _boolean_index_hint(exc, mask) else on_error}") from exc
    for name, x in (("O", O), ("A", A)):
        if isinstance(x, np.ma.MaskedArray):
            raise Rejected(MASKED_ARRAY.format(name=name))
        if not isinstance(x, np.ndarray):
            raise Rejected(f"{name} is a {type(x).__name__}, not a NumPy array: return "
                           "the arrays themselves (no .tolist(), list() or list "
                           "comprehension)")
    return np.asarray(O), np.asarray(A)


#: The mistakes in the shift before exp() (``_mistakes``' keys).
SHIFTS = {"no-shift", "clamped-shift", "clamped-below", "nan-to-num", "global-max",
          "abs-max"}


#: The mistakes that are one computation each, with no constant to tune (a fill, a
#: bias or a clamp has one): an attempt that passed inputs on which such a mistake's
#: answer is wrong has not made it (``_ruled_out``).
FIXED = {"no-shift", "no-scale", "int-sqrt", "half-power", "transposed-mask",
         "clamped-shift", "after-renormalise", "after-zero", "max-unmasked", "inverted", "ignored", "zero-fill", "nan-to-num", "raw-max", "axis",
         "global-max", "max-axis", "sum-axis", "sum-all", "no-keepdims"}


def _ruled_out(Q, K, V, mask) -> set:
    """The mistakes of FIXED whose every wrong answer on these inputs differs from the
    reference (or raises): an attempt that passed these inputs made none of them."""
    O_ref, A_ref = scaled_dot_product_attention(Q, K, V, mask=mask)
    wrong_everywhere: dict = {}
    for key, _, wrong in _mistakes(Q, K, V, mask):
        key = key.rstrip("!")
        if key not in FIXED:
            continue
        try:
            with np.errstate(all="ignore"):
                O, A = wrong()
            right = _same(O, O_ref, 1e-8) and _same(A, A_ref, 1e-8)
        except (ValueError, IndexError):
            right = False
        wrong_everywhere[key] = wrong_everywhere.get(key, True) and not right
    return {key for key, wrong in wrong_everywhere.items() if wrong}


#: Said when a result lost size-1 axes (st21a: a forward that calls .squeeze() was told
#: its shapes only).
SQUEEZED = (": a size-1 axis was dropped, as .squeeze() or np.squeeze() does (it "
            "drops every axis of length 1): O and A keep every axis, size-1 ones "
            "too; squeeze nothing")


def _drops_ones(got: tuple, want: tuple) -> bool:
    """Whether shape ``got`` is ``want`` with some of its 1s removed."""
    if len(got) >= len(want):
        return False
    i = 0
    for size in want:
        if i < len(got) and got[i] == size:
            i += 1
        elif size != 1:
            return False
    return i == len(got)


#: Said where a masked key far above the visible ones turned a row NaN, as both the
#: mask applied after the softmax and renormalised, and exp(S - m) * mask, do.
AFTER_OR_TIMES_MASK = (
    "a masked key far above the visible ones turned its row NaN: either the mask is "
    "applied after the softmax and the weights renormalised (the visible keys' "
    "exponentials underflow to 0, and the renormalisation divides 0 by 0), or the "
    "exponentials are multiplied by the mask, exp(S - m) * mask (that key's "
    "overflows to inf, and inf * 0 is NaN); set masked scores to -inf before exp(), "
    "np.where(mask, S, -np.inf)")


#: Mistakes named only on the cases that ask for them (``keys``): on the float16
#: case masked near -65600 an ignored, an inverted and a biased mask give one answer.
ONLY_WHEN_ASKED = {"masked-on-top"}


def _diagnose(O, A, Q, K, V, mask, O_ref, A_ref, atol,
              keys=None, ruled_out=None, prefer_shift=False) -> tuple[str, str]:
    """Say what is wrong with an attempt (O, A) that does not match (O_ref, A_ref).

    Returns (key, message); the key names the matched mistake, "" when none matched.
    With ``keys`` only those mistakes are named; ``ruled_out()`` gives mistakes not
    named (those of inputs the attempt passed before these, ``_ruled_out``).
    """
    if O.shape == A_ref.shape and A.shape == O_ref.shape and O.shape != A.shape:
        return "swapped", "O and A are swapped: return (O, A), the output first"
    if A.shape != A_ref.shape or O.shape != O_ref.shape:
        transposed = A_ref.shape[:-2] + A_ref.shape[:-3:-1]
        hint = (": the weights are transposed; A has one row per query"
                if A.shape == transposed else SQUEEZED
                if _drops_ones(A.shape, A_ref.shape) or _drops_ones(O.shape, O_ref.shape)
                else _mask_axes_hint(A.shape, A_ref.shape, mask, "A"))
        return "shape", (f"shapes O {O.shape}, A {A.shape}; expected O {O_ref.shape}, "
                         f"A {A_ref.shape}{hint}")
    Af, Of = A.astype(np.float64), O.astype(np.float64)
    d_k = Q.shape[-1]
    excluded = ruled_out() if ruled_out else set()
    table = [((key, message), wrong) for key, message, wrong in _mistakes(Q, K, V, mask)
             if (key in keys if keys else key not in ONLY_WHEN_ASKED)
             and key.rstrip("!") not in excluded
             and (key != "abs-max" or prefer_shift)]  # (it looks like every shift)
    pair = lambda x, y: _same(x[0], y[0], atol) and _same(x[1], y[1], atol)  # noqa: E731
    if Q.dtype == np.float16 and not (np.isfinite(Af).all() and np.isfinite(Of).all()):
        with np.errstate(all="ignore"):
            raw = Q @ np.swapaxes(K, -1, -2)  # in float16, as an attempt would
        # (a case's own mistakes first: st22a, exp(S - m) * mask in float32 is NaN
        # on the case masked near -65600, whose Q K^T overflows float16 too)
        if not np.isfinite(raw).all() and not (
                keys and next(_matching((Of, Af), table, pair, (O_ref, A_ref)), "")):
            return "float16-overflow", (
                "the result has NaN or inf: Q K^T was formed in float16, whose "
                "largest number is 65504, and overflowed to inf (a score above "
                f"about {65504 / math.sqrt(d_k):.0f} at d_k = {d_k}); compute in "
                "float32, Q.astype(np.float32) and so on, and cast O and A back "
                "to float16 at the end")
    if A.shape[-1] == A.shape[-2] and _same(np.swapaxes(Af, -1, -2), A_ref, atol):
        # square weights (T_q = T_k): the shape alone cannot show a transpose
        return "transposed", ("the weights are transposed: row i of A must hold query "
                              "i's weights over the keys, A[i, j] = weight of key j")
    finite = np.isfinite(Af).all()
    clipped = _clipped_scores(Af, A_ref, _fill(_S(Q, K), mask)) if finite else ""
    spread = lambda X: np.ptp(X, axis=-1)  # noqa: E731
    if clipped and np.any((spread(Af) == 0) & (spread(A_ref) > 1e-3)):
        # rows made exactly flat (every score clipped): at float16's tolerance a
        # mistake that nearly flattens them would match too, but is not exact; scores
        # rounded to float16 can flatten them too, and are named as such
        half = _float16_scores(Af, A_ref, Q, K, mask, tol=1e-3)
        return ("float16-scores", half) if half else ("clipped", clipped)
    matches = []
    for key, message in _matching((Of, Af), table, pair, want=(O_ref, A_ref)):
        if key.rstrip("!") not in {k.rstrip("!") for k, _ in matches}:
            matches.append((key, message))
    if "unguarded" in {key for key, _ in matches}:
        # Its message names both ways a fully masked row turns NaN; and a mistake
        # paired with a missing guard adds nothing when the guard alone explains it.
        matches = [(k, m) for k, m in matches
                   if k == "unguarded" or (k != "after-renormalise" and not k.endswith("!"))]
    matches = [(k.rstrip("!"), m) for k, m in matches]
    if {"after-renormalise", "exp-times-mask"} <= {k for k, _ in matches}:
        # one NaN row, two ways (st22a): one sentence names both
        matches = [("after-renormalise", AFTER_OR_TIMES_MASK) if k == "after-renormalise"
                   else (k, m) for k, m in matches if k != "exp-times-mask"]
    if prefer_shift and any(k in SHIFTS for k, _ in matches):
        # the attempt's shift already failed on the large scores, without a mask:
        # that explains these zero rows before a mistake in the mask's order (st15a)
        matches = [(k, m) for k, m in matches if k in SHIFTS]
    if len(matches) > 1 and "raw-max" in {k for k, _ in matches} and \
            {k for k, _ in matches} <= SHIFTS | {"raw-max"}:
        # rows of zeros (or all weight on one key) both ways: claim neither
        return "shift", (
            "some rows of weights are zero, or one key takes all the weight, where the "
            "reference spreads it: exp() of the shifted scores underflowed to 0 or "
            "overflowed to inf; the shift must be each row's own maximum of the "
            "scaled scores S = Q K^T / sqrt(d_k), S.max(axis=-1, keepdims=True), "
            "subtracted in every row (not the unscaled Q K^T's maximum, and no "
            "np.nan_to_num to hide what overflows)")
    if len(matches) > 1 and {k for k, _ in matches} <= SHIFTS:
        # on a row whose allowed scores all lie far below 0, every shift but the
        # row's own maximum gives the same zeros: name what they share
        low = _fill(_S(Q, K), mask).max(axis=-1)
        low = low[np.isfinite(low)].min(initial=0.0)
        return "shift", (
            f"a row whose allowed scores all lie far below 0 (here {_near(low)}) gets "
            "zero weights: the shift must be each row's own maximum, even when it is "
            "negative; subtract S.max(axis=-1, keepdims=True) itself, in every row "
            "and always (not 0, not a maximum clamped at 0 or taken over every row, "
            "not only when some score is large, and no np.nan_to_num to hide what "
            "overflows)" + ("; a finite fill (or a clamp of the row maximum) above the "
                            "scores, as np.maximum(S.max(-1), -1e13), fails the same "
                            "way" if low < -1e200 else ""))
    if len(matches) == 1:
        return matches[0]
    if matches:  # this case cannot tell them apart: say so, and name each
        return matches[0][0], ("this case cannot tell which of these it is: "
                               + "; or: ".join(message for _, message in matches))
    half = _float16_scores(Af, A_ref, Q, K, mask, atol=atol) if finite else ""
    if half:
        return "float16-scores", half
    if clipped:
        return "clipped", clipped
    if mask is not None:
        masked = ~np.broadcast_to(mask, A.shape)
        leak = np.abs(Af[masked]).max(initial=0.0)
        if 0.0 < leak < 1e-6:
            return "finite-fill", (f"masked keys get tiny weights (up to {leak:.2g}) instead of exactly "
                    "0: masked scores need -inf, whose exponential is exactly 0")
    if np.isnan(Of).any() and not np.isnan(Af).any() and _same(Af, A_ref, atol):
        return "nan-output", ("the weights are right but the output has NaN: compute "
                              "O = A V from the guarded weights, after the fully masked "
                              "rows are set to zero")
    if mask is not None and np.isnan(Af).all():
        return "nan-arithmetic-mask", (
            "every weight is NaN once there is a mask: was it applied by "
            "arithmetic, as S + (~mask) * -inf? 0 * -inf is NaN, so every allowed "
            "score turns NaN; replace the masked scores instead, "
            "np.where(mask, S, -np.inf)")
    if _first_block_nan(Af, mask):
        return "first-block", FIRST_BLOCK
    if _first_block_zeroed(Af, Of, A_ref, O_ref, mask, atol):
        return "first-block-zeroed", FIRST_BLOCK_ZEROED
    if np.isnan(Af).any() or np.isnan(Of).any():
        return "", f"the result contains NaN where the reference has none: {_NAN_FROM_SCORES}"
    top = float(np.abs(A_ref).max(initial=0.0))
    with np.errstate(all="ignore"):
        row_max = _fill(_S(Q, K), mask).max(axis=-1)
    underflow = bool(np.any(row_max[np.isfinite(row_max)] < -700))  # a shift's zeros
    if top > 0 and not underflow and np.abs(Af).max(initial=0.0) <= 1e-20 * top and \
            np.abs(Of).max(initial=0.0) <= 1e-20 * max(np.abs(O_ref).max(), 1e-300):
        # zeros are float32 numbers too: say what they are (st17a)
        return "near-zero", (
            f"the result is (almost) zero: every weight is at most "
            f"{float(np.abs(Af).max()):.1g} and every output entry at most "
            f"{float(np.abs(Of).max()):.1g}, where the reference's weights reach "
            f"{top:.2g}: were the results multiplied by 0 or by a tiny factor, or "
            "never filled in (np.zeros_like)?")
    err = float(max(np.abs(Af - A_ref).max(), np.abs(Of - O_ref).max()))
    if Q.dtype == np.float64 and not _same(Af, A_ref, 1e-13) and \
            np.abs(Af - _lse_weights(_fill(_S(Q, K), mask))).max() <= 1e-2 * err:
        S_m = np.broadcast_to(_fill(_S(Q, K), mask), Af.shape)
        worst = np.unravel_index(np.argmax(np.abs(Af - A_ref)), Af.shape)[:-1]
        return "log-sum-exp", LOG_SUM_EXP.format(
            top=f"near {float(S_m[worst].max()):.2g}".replace("e+0", "e"),
            sums=float(np.abs(Af.sum(axis=-1) - 1)[
                np.broadcast_to(A_ref.sum(axis=-1) > 0.5, Af.shape[:-1])].max()))
    in_float32 = Q.dtype == np.float64 and _float32_valued(Af, A_ref) and \
        _float32_valued(Of, O_ref) and bool(np.any(Af))  # (0 is every dtype's)
    if in_float32 and _same(Af, A_ref, 1e-3):
        return "float32", (
            f"the weights and the output agree with the reference only to {err:.1e}, "
            "and every entry is a float32 number: they were computed in float32 "
            "(float32 precision, about 7 digits), but float64 inputs need float64 "
            "throughout (something was cast to float32, such as .astype(np.float32) "
            "or torch's .float())")
    seen = np.broadcast_to(A_ref.sum(axis=-1) > 0.5, Af.shape[:-1])
    short = Af.sum(axis=-1)[seen] < 1 - 1e-13  # rows summing to less than 1
    if Q.dtype == np.float64 and _same(Af, A_ref, 1e-5) and _same(Of, O_ref, 1e-5) and \
            not short.all():
        if _floored_or_flushed(Af, A_ref, mask):
            # (st18a: floors on the exponent at -20, -18 or -15, or weights
            # flushed below 1e-9, were told float32 in float64 work)
            return "precision", (
                f"the weights and the output agree with the reference only to "
                f"{err:.1e}, and each row of A sums to 1, but the entries are not "
                "float32 numbers: small weights were floored or flushed, as "
                "exp(np.maximum(S - m, -c)) or np.where(A < eps, 0, A) do; no "
                "floor or threshold is needed, exp() underflows to 0 by itself")
        return "precision", (
            f"the weights and the output agree with the reference only to {err:.1e}, "
            "and each row of A sums to 1: precision was lost on the way, as when a "
            "step (the scores, say) is done in float32; float64 inputs need "
            "float64 throughout")
    if Q.dtype == np.float64 and _same(Af, A_ref, 1e-5) and _same(Of, O_ref, 1e-5):
        eps = _epsilon(Af, Q, K, mask, seen)
        return "epsilon", (
            f"the weights and the output agree with the reference only to {err:.1e}, "
            "and every row of A sums to a little less than 1: a small constant in "
            "the normaliser, such as E / (E.sum() + eps)"
            + (f", here eps = {eps:.0e} or so" if eps else "")
            + "; a row's sum is at least 1 once its maximum is subtracted, and a fully "
            "masked row needs a guard, not a constant")
    if _same(Af, A_ref, atol):
        if mask is not None:
            empty = ~np.broadcast_to(mask, Af.shape).any(axis=-1)
            if empty.any() and _same(Of[~empty], O_ref[~empty], atol):
                return "empty-output", (
                    "the weights are right, but a query that sees no key has a nonzero "
                    "output: its weights are all 0, so its output O = A V is 0 too; "
                    "compute O = A V from the final weights (after a fully masked "
                    "row is zeroed), and set no row of O by hand")
        if _same(Of, (Af @ V.astype(np.float64)) / math.sqrt(d_k), atol):
            return "output-scaled", ("the output is A V divided by sqrt(d_k): the scale belongs on the "
                    "scores, and O = A V")
        err = float(np.abs(Of - O_ref).max())
        return "", f"the weights are right but the output differs by up to {err:.3g}; O = A V"
    err = float(np.abs(Af - A_ref).max())
    c = _fitted_scale(Af, Q.astype(np.float64) @ np.swapaxes(K.astype(np.float64), -1, -2),
                      mask, tol=5e-3 if Q.dtype == np.float16 else 1e-6)
    if c is not None and not np.isclose(c, 1 / math.sqrt(d_k), rtol=1e-3):
        if np.isclose(c, 1 / math.isqrt(d_k), rtol=1e-3):
            return "fitted-scale", INT_SQRT.format(root=math.isqrt(d_k), d_k=d_k,
                                                   c=1 / math.sqrt(d_k))
        if np.isclose(c, 2 / d_k, rtol=1e-3):
            return "fitted-scale", HALF_POWER.format(d_k=d_k, c=2 / d_k,
                                                     right=1 / math.sqrt(d_k))
        return "fitted-scale", (
            f"your weights are softmax(c Q K^T) with c = {c:.4g}, but at d_k = "
            f"{d_k} the factor is 1/sqrt(d_k) = {1 / math.sqrt(d_k):.4g}: read "
            "d_k from the inputs, Q.shape[-1], not a constant or another size")
    return "", (f"the weights differ from the reference by up to {err:.3g}"
                + (" (every entry is a float32 number: float64 inputs need float64 "
                   "throughout)" if in_float32 else ""))


#: Said when float64 weights are exp(S - L), L the log-sum-exp (st17a: told float32).
LOG_SUM_EXP = (
    "the weights are exp(S - L) with L = m + log(sum exp(S - m)), the row's "
    "log-sum-exp: at scores {top} S - L cancels (L is rounded to float64's step "
    "there), so each weight is off by a few of those steps and a row sums to 1 "
    "within {sums:.1e} only: exp(S - logsumexp) loses digits when scores are ~1e6: "
    "subtract the row maximum first, then normalise: E = exp(S - m), and A = E "
    "divided by the row's sum of E")


def _lse_weights(S):
    """exp(S - logsumexp(S)) along the last axis, a row with no visible key 0."""
    m = S.max(axis=-1, keepdims=True)
    m = np.where(np.isneginf(m), 0.0, m)
    with np.errstate(all="ignore"):
        L = m + np.log(np.exp(S - m).sum(axis=-1, keepdims=True))
        return np.where(np.isneginf(L), 0.0, np.exp(S - L))


def _epsilon(A, Q, K, mask, seen) -> float:
    """The constant eps that weights E / (E.sum() + eps) would need to sum as A's rows
    do (E the exponentials shifted by each row's maximum), or 0 if none fits."""
    S = _fill(_S(Q, K), mask)
    m = S.max(axis=-1, keepdims=True)
    total = np.exp(S - np.where(np.isneginf(m), 0.0, m)).sum(axis=-1)
    r = A.sum(axis=-1)
    with np.errstate(all="ignore"):
        eps = np.broadcast_to(total, r.shape)[seen] * (1.0 - r[seen]) / r[seen]
    eps = eps[np.isfinite(eps)]
    return float(np.median(eps)) if eps.size and np.all(eps > 0) else 0.0


#: How far from 1 a float64 row of weights with a visible key may sum: rounding gives
#: about T_k * 1e-16; E / (E.sum() + 1e-9) is off by up to 1e-9, within atol 1e-8.
ROW_SUM_TOL = 1e-12


def _case(fn, Q, K, V, mask=None, *, atol=1e-8, what="", on_error="", notes=None,
          exact_reference=False, only_what=False, keys=None, ruled_out=None,
          prefer_shift=False, what_if_masked_weight=False):
    """One comparison with the library's reference, as a case for ``_run``.

    ``what`` (what the case tests) is added when no known mistake matched, ``on_error``
    when the attempt raised, ``notes[key]`` when the mistake ``key`` matched. With
    ``exact_reference`` the reference is computed in float64 from the inputs (float32
    ones: their exact attention, which a float32 attempt meets to about 1e-6). Float64
    weights must also sum to 1 within ROW_SUM_TOL, row by row. With ``only_what`` a
    wrong result of the right shape is told how far its weights lie and ``what`` alone
    (inputs built for one mistake, where the others' signs would mislead); with
    ``keys`` only the mistakes of those keys are named (inputs built for them), and
    the mistakes of ``ruled_out()`` (a callable, evaluated only on a failure) never.
    """
    def case():
        wide = [x.astype(np.float64) for x in (Q, K, V)] if exact_reference else (Q, K, V)
        O_ref, A_ref = scaled_dot_product_attention(*wide, mask=mask)
        O_ref, A_ref = O_ref.astype(np.float64), A_ref.astype(np.float64)
        O, A = _call(fn, Q, K, V, mask, on_error)
        wrong = _masked_dtype(fn, Q, K, V, O, A, mask)
        if wrong:
            return False, wrong
        exact = mask is None or not np.any(A[~np.broadcast_to(mask, A.shape)]) \
            if A.shape == A_ref.shape else False
        if exact and _same(A.astype(np.float64), A_ref, atol) and \
                _same(O.astype(np.float64), O_ref, atol) and _sums_to_one(A, A_ref):
            # float64 inputs too: long double (or float32) results are not float64
            wrong = _dtype_rejection(Q.dtype, dict(O=O.dtype, A=A.dtype))
            return not wrong, wrong
        if only_what and A.shape == A_ref.shape and O.shape == O_ref.shape:
            with np.errstate(all="ignore"):
                err = np.nan_to_num(np.abs(A.astype(np.float64) - A_ref), nan=np.inf)
            return False, (f"the weights differ from the reference by up to "
                           f"{float(err.max()):.3g}{what}")
        with np.errstate(all="ignore"):
            key, detail = _diagnose(O, A, Q, K, V, mask, O_ref, A_ref, atol, keys,
                                    ruled_out, prefer_shift)
        extra = (notes or {}).get(key, "") if key else what
        if not key and what_if_masked_weight and A.shape == A_ref.shape and \
                not np.any(A[~np.broadcast_to(mask, A.shape)]):
            extra = ""  # a text about the fill, for weights on no masked key
        return False, f"{_other_dtype(Q, O=O, A=A)}{detail}{extra}"
    return case


def _floored_or_flushed(A, A_ref, mask=None) -> bool:
    """Whether some row of weights A has a visible key's weight flushed to 0, or
    several keys whose right weights lie below that row's smallest weight all given
    that weight (a floor), where the reference has no such tie: a floor or flush,
    not float32's rounding (which moves every weight a little)."""
    if A.shape != A_ref.shape:
        return False
    visible = np.ones(A.shape, dtype=bool) if mask is None else \
        np.broadcast_to(mask, A.shape)
    rows, refs = A.reshape(-1, A.shape[-1]), A_ref.reshape(-1, A.shape[-1])
    for a, r, seen in zip(rows, refs, visible.reshape(-1, A.shape[-1])):
        if not seen.any() or not np.isfinite(a).all():
            continue
        if np.any((a == 0) & (r > 0)):
            return True
        floor = a[seen].min()
        low = seen & (r < floor * (1 - 1e-6))
        if np.any(low) and np.all(np.abs(a[low] - floor) <= 1e-9 * floor):
            return True
    return False


#: Said when the weights of keys far below their row's maximum are floored.
FLOORED = ("small weights were floored: exp(max(S - m, -c)) (or a floor on the "
           "weights) gives a key far below its row's maximum more weight than "
           "exp() does (here keys 40, 80 and 708 below the maximum: weights "
           "{want}, yours {got}); no floor is needed, exp() of a very negative "
           "number underflows to 0 by itself")
#: Said when those weights are flushed to 0.
FLUSHED = ("small weights were flushed to 0, as np.where(A < eps, 0, A) does "
           "(here keys 40, 80 and 708 below the maximum: weights {want}, yours "
           "{got}); no threshold is needed, exp() gives each key its own weight")
SMALL_RTOL = 1e-6  # relative, on weights 4.2e-18 to 9.9e-305: rounding is 1e-15


def _small_weights_case(fn):
    """One query whose keys lie 0, 40, 80 and 708 below its maximum (d_k = 1, V = I,
    float64): weights 1, 4.2e-18, 1.8e-35 and 3.3e-308 (the last still a normal
    number), far below the absolute tolerance of the other cases, compared
    relatively (st18a: a floor on the exponent, exp(max(S - m, -25)) and down to
    -700, passed; one at -708 or below changes nothing here)."""
    Q, K, V = np.array([[1.0]]), np.array([[0.0], [-40.0], [-80.0], [-708.0]]), np.eye(4)

    def case():
        plain = _case(fn, Q, K, V)()
        if not plain[0]:
            return plain
        O, A = _call(fn, Q, K, V, None)
        O_ref, A_ref = scaled_dot_product_attention(Q, K, V)
        Af, Of = (np.asarray(x, dtype=np.float64) for x in (A, O))
        if all(np.all(np.abs(x - r) <= SMALL_RTOL * np.abs(r))
               for x, r in ((Af, A_ref), (Of, O_ref))):
            return True, ""
        want, got = (", ".join(f"{v:.2g}" for v in x[0, 1:]) for x in (A_ref, Af))
        if np.any(Af[0, 1:] == 0):
            return False, FLUSHED.format(want=want, got=got)
        if np.any(Af[0, 1:] > (1 + SMALL_RTOL) * A_ref[0, 1:]):
            return False, FLOORED.format(want=want, got=got)
        return False, (f"the small weights (keys 40, 80 and 708 below the row's "
                       f"maximum) are {got}, not {want}: exp(S - m) gives each "
                       "its own weight, compared relatively here")
    return case


def _other_dtype(Q, **results) -> str:
    """"A is float32; the inputs are float64: " when float64 inputs' results (name ->
    array) are of another dtype (say which), else ""."""
    if Q.dtype != np.float64:
        return ""
    other = [f"{name} is {x.dtype}" for name, x in results.items()
             if x.dtype != np.float64]
    return f"{' and '.join(other)}; the inputs are float64: " if other else ""


def _masked_dtype(fn, Q, K, V, O, A, mask) -> str:
    """What float32 or float16 inputs' results (O, A) of another dtype are told ("" for
    float64 inputs, whose float32 results the diagnosis names by their values); when the
    same call without the mask keeps the dtype, that the mask made them so."""
    want = Q.dtype
    if want == np.float64:
        return ""
    wrong = _dtype_rejection(want, dict(O=O.dtype, A=A.dtype))
    if not wrong or mask is None:
        return wrong
    try:
        O1, A1 = _call(fn, Q, K, V, None)
    except Rejected:
        return wrong
    if _dtype_rejection(want, dict(O=O1.dtype, A=A1.dtype)):
        return wrong
    kinds = " and ".join(sorted({str(d) for d in (O.dtype, A.dtype) if d != want}))
    return (f"the mask made the result {kinds}: O of dtype {O.dtype} and A of dtype "
            f"{A.dtype} for {want} inputs, which without the mask keep {want}. A fill "
            "or bias of another dtype promotes the scores: np.where(mask, 0.0, -np.inf) "
            "is a float64 array, np.finfo(np.float64).min a float64 number; "
            "np.where(mask, S, -np.inf) (a Python float) keeps S's dtype, or cast the "
            "results with .astype(Q.dtype)")


def _sums_to_one(A, A_ref) -> bool:
    """Whether each float64 row of A with a visible key sums to 1 within ROW_SUM_TOL."""
    if A.dtype != np.float64:
        return True
    seen = A_ref.sum(axis=-1) > 0.5
    return bool(np.all(np.abs(A.sum(axis=-1)[seen] - 1.0) <= ROW_SUM_TOL))


def _dtype_case(fn, Q, K, V, mask=None, value_case=None):
    """The results' dtype; then, given ``value_case`` (a ``_case`` on the same inputs),
    their values."""
    def case():
        O, A = _call(fn, Q, K, V, mask)
        wrong = _dtype_rejection(Q.dtype, dict(O=O.dtype, A=A.dtype))
        if wrong or value_case is None:
            return not wrong, wrong
        return value_case()
    return case


#: Added to what an attempt raised on no key at all (T_k = 0) from a reduction with
#: no identity, a plain S.max(axis=-1) (st19a: it passed every case while every case
#: had a key).
NO_KEY_MAX = ("; here T_k = 0 (K of shape {K}, V of shape {V}): with no key at all a "
              "row has no score, and its maximum is -inf, as a fully masked row's is, "
              "but a plain S.max(axis=-1, keepdims=True) has nothing to start from and "
              "raises on the zero-size key axis; take S.max(axis=-1, keepdims=True, "
              "initial=-np.inf) on a plain NumPy array (np.ma's max has no initial) "
              "(and shift such a row by 0): every row then gets zero "
              "weights, A of shape {A}, and a zero output, O = A V of shape {O}")
#: Added to anything else an attempt raised on no key at all.
NO_KEY_RAISED = ("; here T_k = 0 (K of shape {K}, V of shape {V}): with no key at all "
                 "every row is fully masked, and the result is A of shape {A} and a "
                 "zero output, O = A V of shape {O}; every step must accept a "
                 "zero-size key axis (a row's maximum taken as S.max(axis=-1, "
                 "keepdims=True, initial=-np.inf))")
#: Said when the results on no key at all (T_k = 0) have the wrong shapes.
NO_KEY_SHAPE = ("shapes O {got_O}, A {got_A}; expected O {O}, A {A}: with T_k = 0 (K of "
                "shape {K}, V of shape {V}: no key at all) A has one row per query and no "
                "column, and O = A V has the width of V, d_v = V.shape[-1]{d_k}; compute "
                "them as for any other T_k (no special case)")
#: Said when those results dropped the leading batch and head axes (st20a: a special
#: case returning np.zeros((T_q, d_v)) passed while no-key inputs were 2-D only).
NO_KEY_LEADING = ("shapes O {got_O}, A {got_A}; expected O {O}, A {A}: with T_k = 0 (K of "
                  "shape {K}, V of shape {V}: no key at all) the leading batch and head "
                  "axes {lead} were dropped, as zeros of shape (T_q, d_v) and (T_q, 0) "
                  "built by hand drop them; the results keep Q's leading axes, O of "
                  "shape Q.shape[:-1] + (d_v,): compute them as for any other T_k (no "
                  "special case)")
#: Said when the results on no key at all are of another dtype (st20a: float32 zeros
#: for float16 inputs passed while no-key inputs were float64 and float32 only).
NO_KEY_DTYPE = ("with T_k = 0 (no key at all) O is {O}, A {A} for {want} inputs: the "
                "results keep the inputs' dtype, and zeros built by hand take the dtype "
                "they are given (np.zeros' default float64, or the float32 of the work "
                "for float16 inputs); compute them as for any other T_k (no special "
                "case), or give them Q.dtype")
#: Said when the output on no key at all (T_k = 0) is not zero.
NO_KEY_OUTPUT = ("with T_k = 0 (K of shape {K}, V of shape {V}: no key at all) O {what}: "
                 "every row is fully masked, its weights are zero (A of shape {A}), and "
                 "O = A V, a sum over no key, is zeros of shape {O}, never NaN (0 / 0 "
                 "from dividing by a row's zero sum afterwards, unguarded); compute "
                 "O = A V from the guarded weights, as for any other T_k")


#: Said when one key (T_k = 1) gets weight 1 from a query whose mask hides it (st21a:
#: no case had T_k = 1, and a shortcut A = np.ones(...) passed).
ONE_KEY = ("with one key (T_k = 1, a mask of shape {mask}) a query that sees it gives "
           "it all the weight, A = 1, but a query whose mask hides it sees no key: its "
           "weights and output are zero, as for any fully masked row; a shortcut for "
           "T_k = 1 (A = np.ones(...), O = V) skipped the mask: compute one key as any "
           "other T_k, the mask applied")


def _two_key_mask(mask):
    """The (T_q, 1) mask of one key made a (T_q, 2) one of two keys: the rows it hides
    see neither, query 0 the first only (a masked key beside a visible one, so that a
    fill of 0 shows apart from a large negative one), the others both."""
    second = np.array(mask)
    second[0] = False
    return np.concatenate([mask, second], axis=-1)


def _one_key_case(fn, Q, K2, V2, mask):
    """One key (T_k = 1) and a (T_q, 1) mask that hides it from some query: the usual
    comparison, and, where it fails, ONE_KEY when the answer is the unmasked one and
    the same rows masked over two keys come out right (the attempt reaches this case
    only after passing a mask on the same inputs; a finite fill, which gives a fully
    masked row uniform weights, fails on two keys, and is told so). ``K2`` and ``V2``
    hold two keys, the first the one key."""
    K, V = K2[..., :1, :], V2[..., :1, :]
    plain = _case(fn, Q, K, V, mask)
    two_keys = _case(fn, Q, K2, V2, _two_key_mask(mask))

    def case():
        ok, text = plain()
        if ok:
            return ok, text
        O, A = _call(fn, Q, K, V, mask)
        O_ref, A_ref = scaled_dot_product_attention(Q, K, V)  # the mask skipped
        with np.errstate(all="ignore"):
            if _same(A.astype(np.float64), A_ref, 1e-8) and \
                    _same(O.astype(np.float64), O_ref, 1e-8):
                two_ok, two_text = two_keys()
                return False, (ONE_KEY.format(mask=np.shape(mask)) if two_ok else
                               f"{two_text} (here on two keys, the query hidden "
                               "from the one key seeing neither: on one key, T_k = 1, your answer is the "
                               "unmasked one)")
        return ok, text
    return case


def _no_key_case(fn, Q, K, V, mask=None):
    """No key at all (K and V with T_k = 0, the mask too if given): the results must be O
    zeros (..., T_q, d_v) and A of shape (..., T_q, 0), of the inputs' dtype, as the
    library gives them (st19a: a plain S.max(axis=-1), which raises there, passed)."""
    def case():
        O_ref, A_ref = scaled_dot_product_attention(Q, K, V, mask=mask)
        shapes = dict(K=K.shape, V=V.shape, A=A_ref.shape, O=O_ref.shape)
        try:
            O, A = _call(fn, Q, K, V, mask)
        except Rejected as exc:
            text = str(exc)
            if not text.startswith("raised "):
                raise
            hint = NO_KEY_MAX if "reduction operation maximum" in text else NO_KEY_RAISED
            raise Rejected(text + hint.format(**shapes)) from exc
        if O.shape == A_ref.shape and A.shape == O_ref.shape:
            return False, "O and A are swapped: return (O, A), the output first"
        lead = Q.shape[:-2]
        if lead and O.shape == O_ref.shape[-2:] and A.shape == A_ref.shape[-2:]:
            return False, NO_KEY_LEADING.format(got_O=O.shape, got_A=A.shape, lead=lead,
                                                **shapes)
        if O.shape != O_ref.shape or A.shape != A_ref.shape:
            d_k = (f", here {V.shape[-1]}, not d_k = {Q.shape[-1]}, the width of Q"
                   if O.shape[-1:] == Q.shape[-1:] else "")
            return False, NO_KEY_SHAPE.format(got_O=O.shape, got_A=A.shape, d_k=d_k,
                                              **shapes)
        with np.errstate(all="ignore"):
            Of = O.astype(np.float64)
        if not np.isfinite(Of).all():
            return False, NO_KEY_OUTPUT.format(what="contains NaN or inf", **shapes)
        if np.any(Of):
            return False, NO_KEY_OUTPUT.format(
                what=f"is not zero (entries up to {float(np.abs(Of).max()):.3g})", **shapes)
        if O.dtype != Q.dtype or A.dtype != Q.dtype:
            return False, NO_KEY_DTYPE.format(O=O.dtype, A=A.dtype, want=Q.dtype)
        return True, ""
    return case


#: Q, K, V with T_q, T_k, d_k, d_v all different, so that a wrong one shows.
_inputs = functools.partial(_qkv, T_q=3, T_k=5, d_k=4, d_v=2)


#: How many sets of sizes are drawn afresh on each call (st21a: every round found a
#: shortcut tuned to one fixed size the cases lacked).
DRAWN_SIZES = 2


def _fresh_seed() -> int:
    """A seed from the operating system, new on every call."""
    return int.from_bytes(os.urandom(4), "little")


def _draw_sizes(seed: int) -> tuple:
    """The sizes drawn afresh (DRAWN_SIZES of them): each (batch, T_q, T_k, d_k, d_v),
    the batch zero to two leading axes of 1 to 4, T_q and T_k from 1 to 9, d_k from
    1 to 16 and d_v from 1 to 8."""
    rng = np.random.default_rng(seed)
    return tuple((tuple(int(b) for b in rng.integers(1, 5, size=rng.integers(0, 3))),
                  *(int(rng.integers(1, top + 1)) for top in (9, 9, 16, 8)))
                 for _ in range(DRAWN_SIZES))


def _drawn_inputs(seed: int, sizes: tuple):
    """Q, K, V (float64) and a (T_q, T_k) mask, about 7 keys in 10 visible (a row may
    see none), of the drawn ``sizes``, from ``seed``."""
    batch, T_q, T_k, d_k, d_v = sizes
    rng = np.random.default_rng([seed, *batch, T_q, T_k, d_k, d_v])
    return (*_qkv(rng, T_q=T_q, T_k=T_k, d_k=d_k, d_v=d_v, batch=batch),
            rng.random((T_q, T_k)) < 0.7)


def _drawn_sets(seed: int, two_keys: bool = False) -> list:
    """(Q, K, V, mask) at each set of sizes drawn from ``seed`` (``_draw_sizes``). With
    ``two_keys`` T_k is at least 2 and query 0 sees keys 0 and 1 (gradients: with one
    visible key in every row, dS is rounding noise and no relative tolerance holds)."""
    sets = []
    for sizes in _draw_sizes(seed):
        if two_keys:
            sizes = (*sizes[:2], max(sizes[2], 2), *sizes[3:])
        Q, K, V, mask = _drawn_inputs(seed, sizes)
        if two_keys:
            mask[0, :2] = True
        sets.append((Q, K, V, mask))
    return sets


def _drawn_case(case, seed: int, again: str, two_keys: bool = False):
    """``case(Q, K, V, mask)`` on each of ``_drawn_sets(seed, two_keys)``, without and
    with the mask; a failure says the sizes and, in ``again``, how to get the inputs
    again."""
    def drawn():
        for Q, K, V, mask in _drawn_sets(seed, two_keys):
            for m in (None, mask):
                ok, detail = case(Q, K, V, m)()
                if not ok:
                    return ok, (f"{detail} (at sizes drawn afresh for this call: Q "
                                f"{Q.shape}, K {K.shape}, V {V.shape}, "
                                + ("no mask" if m is None else f"a mask {m.shape}")
                                + f"; {again})")
        return True, ""
    return drawn


def check_scaled_dot_product_attention(fn: Callable, verbose: bool = True) -> bool:
    """Check ``fn(Q, K, V, mask=None) -> (O, A)`` against the contract in this module's
    docstring: fifteen cases; returns True when all pass. An attempt that runs the
    library's own attention, or any of PyTorch's (``_engine._torch_attention``), fails
    every case."""
    attention_functions, builtins = _torch_builtins()  # first: imports attention.torch
    functions, torch_builtins, methods = _torch_softmax(TORCH_SOFTMAX)
    fn = _refusing_the_library(fn, {**_library_attention(), **_library_softmax(),
                                    **attention_functions, **functions}, LIBRARY,
                               {**builtins, **torch_builtins}, methods)
    rng = np.random.default_rng(_RNG_SEED)
    seed = _fresh_seed()  # (the sizes drawn afresh)
    Q, K, V = _inputs(rng)
    T_q, T_k = Q.shape[-2], K.shape[-2]

    # Large scores: queries 0 and 1, 1000 times longer, put scores beyond float64's exp
    # range. Query 2's scores all lie near -1000, below the range too, where a shift
    # that is not the row's own maximum (clamped at 0, or applied only when some score
    # is large) leaves exp() of every score 0: every key 1000 more in its last entry,
    # which query 2 alone reads (the others' last entry is 0), moves its row as a whole.
    Q_big = 1000.0 * Q
    Q_big[:2, -1] = 0.0
    Q_big[2] = [*Q[2, :-1], -2.0]
    K_big = K.copy()
    K_big[:, -1] += 1000.0

    # A masked key far above the others: key 0's score exceeds every other by > 1000,
    # and key 0 is masked for every query.
    # (Query 0 may see key 0, which scores far *below* its other keys: a mask that is
    # inverted or ignored shows, and no row's scores lie far from the others'.)
    Q_far = Q.copy()
    Q_far[:, 0] = np.abs(Q_far[:, 0]) + 1.0
    Q_far[0, 0] = -Q_far[0, 0]
    # Query 2's masked key 0 scores only about 3 above the others: no underflow,
    # so a mask applied after the softmax without renormalising shows apart
    # from one applied with renormalising (which only underflow defeats).
    Q_far[2, 0] = 0.002
    K_far = K.copy()
    K_far[0] = [3000.0, 0.0, 0.0, 0.0]
    not_key_0 = np.ones((T_q, T_k), dtype=bool)
    not_key_0[1:, 0] = False  # query 0 may see key 0; the others may not
    # And a masked key far from the origin: key 4, masked for every query, scores
    # near +1e300 for queries 0 and 1 (near -1e300 for query 2, whose weights stay
    # as above), beyond the finite biases a mask usually adds (-1e4, -1e9, float32's
    # -3.4e38): such a bias leaves it on top, where -inf gives it weight 0.
    Q_far[:, 1] = np.array([1.0, 1.0, -1.0]) * (np.abs(Q_far[:, 1]) + 1.0)
    K_far[4] = [0.0, 1e300, 0.0, 0.0]
    not_key_0[:, 4] = False
    # And query 1's visible keys (1, 2, 3) score -1e300, -1.2e300 and -1.4e300 (its
    # other entries solved for; every score stays finite), below the finite fills an
    # attempt may use (-1e9, float16's -65504, float32's -3.4e38, -1e15) and below a
    # row maximum clamped from below (at -1e13, say): a fill gives the masked keys its
    # weight, a clamp exp() of every score 0, where -inf gives it to key 1 alone.
    rest = [0, 2, 3]
    Q_far[1, rest] = np.linalg.solve(
        K_far[1:4][:, rest],
        -2e300 * np.array([1.0, 1.2, 1.4]) - Q_far[1, 1] * K_far[1:4, 1])
    far_note = ("; here key 0 outscores every other key by over 1000 for query 1, "
                "which may not see it, masked key 4 scores near 1e300, beyond "
                "float32's range (3.4e38; float64 inputs need float64 throughout), "
                "and query 1's visible keys score near -1e300")

    # And at the edge of float64 (d_k = 1, every score finite): query 0's visible keys
    # near -1e308 and -1.2e308, its masked key near 1.4e308, which even float64's most
    # negative number added to it (np.finfo(np.float64).min, -1.8e308) leaves on top;
    # query 1's scores half those, where that bias is enough and a mask ignored,
    # inverted or filled with 0 is not (so that the bias alone matches both rows).
    Q_edge = np.array([[1.0], [0.5]])
    K_edge = np.array([[-1.2e308], [1.4e308], [-1.0e308]])
    V_edge = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, -0.5]])
    mask_edge = np.array([[True, False, True]] * 2)
    edge_note = ("; here, at d_k = 1, the visible keys score near -1e308 and the "
                 "masked one near 1.4e308 (all finite): a finite bias added to it, "
                 "even np.finfo(np.float64).min, leaves it above them; replace the "
                 "masked scores by -inf instead")

    # And a query whose one visible key scores near -1.79e308 (finite), another whose one
    # visible key scores near -1e20 (d_k = 1): a finite fill above the first (-1.5e308)
    # gives the masked keys its weight; the row's lowest score minus 1000, which rounds
    # to that score itself, gives them equal weight in both rows.
    Q_fill, K_fill, V_fill, mask_fill, fill_note = _fill_edge()

    empty_row = causal_mask(T_q, T_k)
    empty_row[1] = False  # query 1 may attend to nothing

    # (B, H, T, d), B and H unlike T_q, T_k, d_k and d_v, so that a mask broadcast
    # along the wrong axes raises and a scale read from a fixed axis shows
    B, H = 6, 7
    Qb, Kb, Vb = _inputs(rng, batch=(B, H))
    mask_bh = rng.random((B, H, T_q, T_k)) < 0.6
    mask_bh[..., 0] = True  # every row sees key 0 but one: query 1 of head
    mask_bh[1, 2, 1] = False  # (1, 2) sees no key, so a guard along a fixed axis shows
    pad = padding_mask([4, 0, 5, 2, 1, 3], T_k)[:, None]  # (B, 1, 1, T_k); one empty
    # And an (H, T_q, T_k) mask, one per head, on inputs with B = H = 3 (T_q = 2): NumPy
    # aligns a 3-D mask with the scores' last three axes, so it broadcasts over the
    # batch; read as one per batch item (mask[:, None], PyTorch's habit) it still
    # broadcasts when B = H, to the wrong heads, and shows. (Its own generator: the
    # other cases' draws stay as they were.)
    rng_h = np.random.default_rng(_RNG_SEED + 5)
    Q_hh, K_hh, V_hh = _inputs(rng_h, T_q=2, batch=(3, 3))
    mask_h = rng_h.random((3, 2, T_k)) < 0.5
    mask_h[..., 0] = True  # every query sees key 0; the heads' masks differ

    # Other sizes, d_k = 9 among them: a scale right only at d_k = 4 shows; 3-D
    # inputs (B, T, d) with a (T_q, T_k) mask: an attempt written for 2-D and 4-D
    # inputs only (K.transpose(0, 1, 3, 2), d_k = Q.shape[3]) shows. (Their own
    # generator: the other cases' draws stay as they were.)
    rng_o = np.random.default_rng(_RNG_SEED + 1)
    Q_o, K_o, V_o = _inputs(rng_o, T_q=2, T_k=7, d_k=9, d_v=3, batch=(5,))
    # and a (B, T_q, T_k) mask, one per batch item, one row empty: a mask given a
    # head axis (mask[:, None], for 4-D scores) adds an axis to A, and shows
    mask_b = rng_o.random((5, 2, 7)) < 0.6
    mask_b[..., 0] = True
    mask_b[3, 1] = False
    # A (T_k,) mask, one flag per key for every query: read as (B,) padding
    # (mask[:, None, None]) it adds an axis, and shows.
    key_mask = np.array([True, False, True, True, False])

    # Self-attention, T_q = T_k: a square A, whose shape cannot show a transpose; and
    # without a mask, where a causal mask applied by default shows (st20a: it passed).
    Q_sq, K_sq, V_sq = _inputs(rng, T_q=6, T_k=6)

    # float32 with scores from 165 to 186, above 88.7, where float32's exp() overflows
    # (every key and query 3 more in each entry: the weights stay far from one-hot),
    # compared by value with the inputs' exact attention: a shift applied only above
    # float64's 709, or a computation in float16, shows.
    Q32, K32, V32 = ((x + s).astype(np.float32) for x, s in ((Q, 3.0), (K, 30.0), (V, 0)))
    Q16, K16, V16 = (x.astype(np.float16) for x in (Q, K, V))
    # float16 at d_k = 64 with scores near 9600: the raw products Q K^T pass
    # 65504, float16's largest number, so only a computation in float32 (the
    # page's rule) gives finite scores; the weights are far from one-hot.
    Q_h = (40 + 0.05 * rng.standard_normal((T_q, 64))).astype(np.float16)
    K_h = (30 + 0.05 * rng.standard_normal((T_k, 64))).astype(np.float16)
    V_h = rng.standard_normal((T_k, 2)).astype(np.float16)
    # And float16 scores above 65504 (finite in float32): one query of 100s against
    # keys of 82s, one entry 0.0625 or 0.125 less in keys 1 and 2, scores 65600,
    # 65599.2 and 65598.4, weights 0.60, 0.27 and 0.13: clipping the scores (at
    # +-1e4 or at float16's +-65504, "so that float16 cannot overflow") makes them
    # equal, weights 1/3 (no float16 number is needed but A and O).
    Q_c = np.full((1, 64), 100.0, dtype=np.float16)
    K_c = np.full((3, 64), 82.0, dtype=np.float16)
    K_c[1, 0], K_c[2, 0] = 81.9375, 81.875
    V_c = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, -0.5]], dtype=np.float16)
    # And float16 scores far above 1e5 (finite, and exact, in float32): a query of 255s
    # (its first entry 64) against keys of 255s, the first entry 1/8 less (float16's
    # step there) in key 1 and 1/4 less in key 2, scores 514111.875, 514110.875 and
    # 514109.875, weights 0.67, 0.24 and 0.09: clipping the scores anywhere up to
    # about 5e5 (at +-7e4, just above the 65600 of the keys of 82s) makes them equal.
    Q_x = np.full((1, 64), 255.0, dtype=np.float16)
    Q_x[0, 0] = 64.0
    K_x = np.full((3, 64), 255.0, dtype=np.float16)
    K_x[1, 0], K_x[2, 0] = 254.875, 254.75

    # The same query against keys of -82s (visible scores near -65600, below
    # float16's -65504) and two masked keys scoring 0 and 8: a fill of float16's
    # minimum in float32 scores lies above the visible ones and gives the masked
    # keys half the weight each; a second query of 45s (visible scores near
    # -29500) tells it from a fill of -1e4 or 0, which beat those too.
    Q_n = np.concatenate([Q_c, np.full((1, 64), 45.0, dtype=np.float16)])
    K_n = np.concatenate([-K_c, np.zeros((1, 64), dtype=np.float16),
                          np.full((1, 64), 0.01, dtype=np.float16)])
    V_n = np.concatenate([V_c, np.array([[-1.0, 1.0], [1.0, 1.0]],
                                        dtype=np.float16)])
    mask_n = np.array([True, True, True, False, False])
    # And float16 near 20 (scores near 3200): the raw products Q K^T, near 25600,
    # stay below 65504, but float16 rounds them by up to 8, a score by up to 1: a
    # computation in float16 unless Q K^T overflows is off by about 0.2.
    Q_t = (20 + 0.05 * rng_o.standard_normal((2, 64))).astype(np.float16)
    K_t = (20 + 0.05 * rng_o.standard_normal((4, 64))).astype(np.float16)
    V_t = rng_o.standard_normal((4, 2)).astype(np.float16)
    # A non-square d_k = 10 (the others are 1, 4, 9 and 64, squares): a scale of
    # 1/int(np.sqrt(d_k)) = 1/3 shows (and differs from a constant 1/2).
    Q_5, K_5, V_5 = _inputs(rng_o, T_q=6, T_k=6, d_k=10, d_v=2)
    # A long row (st15a; st16a; st17a: 1100 keys let blocks of 2048 or 4096 pass):
    # T_k = 4999 (_long_row), and a short one whose rows 1 and 2 hide their first 3
    # and 2 keys: an online softmax that forgets to rescale its running sum, or that
    # turns NaN on a fully masked first block, or a sum over the first keys only,
    # shows. (Its own generator: the other cases' draws stay as they were.)
    rng_l = np.random.default_rng(_RNG_SEED + 6)
    Q_l, K_l, V_l = _inputs(rng_l, T_q=3, T_k=LONG_T_K)
    mask_l = _long_row(Q_l, K_l, rng_l)
    first_hidden = np.ones((T_q, T_k), dtype=bool)
    first_hidden[1, :3] = first_hidden[2, :2] = False
    # A (T_k,) key mask on self-attention (T_q = T_k): read as one flag per query
    # (mask[:, None]) it broadcasts without an error, and shows; and an all-False
    # (T_k,) mask, an empty sequence: every row fully masked, zero weights.
    key_mask_sq = np.array([True, False, True, True, False, True])
    no_key = np.zeros(T_k, dtype=bool)
    # And no key at all, T_k = 0 (K (0, d_k), V (0, d_v), d_v != d_k), without a mask
    # and with a (T_q, 0) one (in float32 too, in the float32 case, and in float16,
    # where a dtype mistake is told; and with batch and head axes, st20a, where
    # zeros of shape (T_q, d_v) built by hand are told): O zeros (..., T_q, d_v), A
    # of shape (..., T_q, 0).
    no_keys = np.zeros((T_q, 0), dtype=bool)
    # And one key, T_k = 1, with a (T_q, 1) mask that hides it from query 1 (st21a: no
    # case had T_k = 1, and A = np.ones(...) for one key passed): on (B, H) inputs.
    one_key = np.array([[True], [False], [True]])
    long_note = (f"; here a row of {LONG_T_K} keys (T_k = {LONG_T_K}), whose maximum "
                 "grows from key block to key block (of 64 to 4096 keys): the "
                 "maximum and the sum must run over all T_k keys of the row (code "
                 "working in key blocks rescales its running sum whenever the "
                 "running maximum grows)")
    # Visible scores far above (st16a: np.minimum(S, 6e5) or 1e6 passed): at d_k = 2,
    # query 0's scores near 7.1e6, 0.71 apart (weights 0.14, 0.28, 0.58), query 1's
    # 0, 7.1e298 and 1.4e299 (one-hot): scores clipped from above below them tie.
    Q_top = np.array([[1e4, 1.0], [0.0, 1e299]])
    K_top = np.array([[1e3, 0.0], [1e3, 1.0], [1e3, 2.0]])
    V_top = np.array([[1.0, 0.5, -1.0], [1.0, -0.5, 0.3], [1.0, 1.0, 0.2]])
    # Five-dimensional inputs (2, 7, 2, T, d): "any leading batch and head
    # dimensions", so code written per ndim (2-, 3- and 4-D only) shows.
    rng_5 = np.random.default_rng(_RNG_SEED + 7)
    Q_5d, K_5d, V_5d = _inputs(rng_5, batch=(2, 7, 2))

    def batched_error():
        # Said only if the batched case without a mask passed: then the attempt
        # handles batch dimensions, and the mask's shape is what it mishandles.
        if batched_ok:
            return ("; the mask has fewer dimensions than the scores and must broadcast "
                    "against them as it is: np.where(mask, S, -np.inf) does (any new "
                    "axes go in front, mask[None, None])")
        return ""

    results = [
        _run("weights and output, one head, no mask", _case(fn, Q, K, V)),
        _run("large scores (queries 1000 times longer; one near -1000); keys "
             "40 to 708 below their row's maximum", _all(_case(
            fn, Q_big, K_big, V,
            what="; the scores here exceed 700, where exp() overflows float64, and "
                 "query 2's all lie near -1000, where it underflows"),
            # (d_k = 2, where 1/int(np.sqrt(d_k)) is 1: no scale is ruled out by
            # the large scores at d_k = 4, which the attempt passed to get here)
            _case(fn, Q_top, K_top, V_top,
                  ruled_out=functools.partial(_ruled_out, Q_big, K_big, V, None)),
            _small_weights_case(fn))),
        _run(f"a causal mask, a (T_k,) key mask, and a masked row of {LONG_T_K} "
             "keys; rows whose first keys are masked: masked keys get weight "
             "exactly 0",
             _all(_case(fn, Q, K, V, causal_mask(T_q, T_k)),
                  _case(fn, Q, K, V, key_mask),
                  _case(fn, Q_l, K_l, V_l, mask_l, what=long_note),
                  _case(fn, Q, K, V, first_hidden))),
    ]
    ran = not results[0][2].startswith("raised")  # the attempt ran on the first case
    # the large scores (no mask) failed on the shift: the far case's zero rows are
    # told that first
    shift_failed = not results[1][1] and ("shift" in results[1][2]
                                          or "row's maximum" in results[1][2])
    results += [
        _run("masked keys whose scores are far above the others", _all(
            _case(fn, Q_far, K_far, V, not_key_0, what=far_note,
                  on_error=far_note if ran else "", prefer_shift=shift_failed),
            # (reached only when the attempt passed the far inputs above: the
            # one-computation mistakes those reject are not named here, where
            # every mistake that zeroes a row looks alike)
            _case(fn, Q_edge, K_edge, V_edge, mask_edge, what=edge_note,
                  on_error=edge_note if ran else "",
                  ruled_out=functools.partial(_ruled_out, Q_far, K_far, V,
                                              not_key_0)),
            _case(fn, Q_fill, K_fill, V_fill, mask_fill, what=fill_note,
                  on_error=fill_note if ran else "", only_what=True))),
        _run("a fully masked row gets zero weights and a zero output; an "
             "all-False (T_k,) mask (an empty sequence); and no key at all (T_k = 0)",
             _all(_case(fn, Q, K, V, empty_row), _case(fn, Q, K, V, no_key),
                  _no_key_case(fn, Q, K[:0], V[:0]),
                  _no_key_case(fn, Q, K[:0], V[:0], no_keys))),
        _run("self-attention (T_q = T_k) without a mask; with a causal mask, "
             "d_k = 4 and 10; and with a (T_k,) key mask",
             _all(_case(fn, Q_sq, K_sq, V_sq),
                  _case(fn, Q_sq, K_sq, V_sq, causal_mask(6)),
                  _case(fn, Q_5, K_5, V_5, causal_mask(6)),
                  _case(fn, Q_sq, K_sq, V_sq, key_mask_sq))),
        _run("3-D inputs (B, T, d), a (T_q, T_k) causal mask: B = 5, T_q = 2, "
             "T_k = 7, d_k = 9, d_v = 3; and B = 1, T_q = 1; and a (B, T_q, T_k) "
             f"mask; and {DRAWN_SIZES} sets of sizes drawn afresh",
             _all(*(_case(fn, q, k, v, m,
                          on_error="; " + LEADING_HINT.format(X="K") if ran else "")
                    for q, k, v, m in ((Q_o, K_o, V_o, causal_mask(2, 7)),
                                       (Q_o[:1, 1:], K_o[:1], V_o[:1],
                                        causal_mask(2, 7)[1:]),
                                       (Q_o, K_o, V_o, mask_b))),
                  _drawn_case(lambda q, k, v, m: _case(fn, q, k, v, m), seed,
                              f"_draw_sizes({seed}) in attention.checkers.attention "
                              "draws them again"))),
    ]
    flat_ok = results[0][1]  # the same computation without batch dimensions passed
    results += [
        _run("batch and head dimensions (B, H, T, d), five-dimensional "
             "(2, 7, 2, T, d), and (B, H) with no key at all (T_k = 0), no mask", _all(
                 _case(fn, Qb, Kb, Vb,
                       on_error="; " + BATCH_HINT.format(X="K") if flat_ok else ""),
                 _case(fn, Q_5d, K_5d, V_5d,
                       on_error="; " + FIVE_D_HINT.format(X="K") if flat_ok
                       else ""),
                 _no_key_case(fn, Qb, Kb[..., :0, :], Vb[..., :0, :]))),
    ]
    batched_ok = results[-1][1]
    results += [
        _run("one (T_q, T_k) mask for every batch item and head; and one key "
             "(T_k = 1), a (T_q, 1) mask that hides it from one query",
             _all(_case(fn, Qb, Kb, Vb, causal_mask(T_q, T_k),
                        on_error=batched_error()),
                  _one_key_case(fn, Qb, Kb[..., :2, :], Vb[..., :2, :], one_key))),
        _run("a (B, H, T_q, T_k) mask; an (H, T_q, T_k) one, B = H = 3",
             _all(_case(fn, Qb, Kb, Vb, mask_bh), _case(fn, Q_hh, K_hh, V_hh, mask_h))),
        _run("a (B, 1, 1, T_k) padding mask, one sequence empty",
             _case(fn, Qb, Kb, Vb, pad, on_error=batched_error())),
        _run("float32 inputs give float32 results, scores near 180, with and "
             "without a causal mask; a fully masked row; no key at all", _dtype_case(
                 fn, Q32, K32, V32,
                 value_case=_all(
                     _case(fn, Q32, K32, V32, atol=1e-5, exact_reference=True,
                           what="; the scores here exceed 88.7, where float32's "
                                "exp() overflows"),
                     _case(fn, Q32, K32, V32, causal_mask(T_q, T_k), atol=1e-5,
                           exact_reference=True,
                           what="; with a causal mask, scores above 88.7"),
                     # (st18a: no float32 row was fully masked, so a finite
                     # fill in float32 with no zeroing of empty rows passed)
                     _case(fn, *(x.astype(np.float32) for x in (Q, K, V)),
                           empty_row, atol=1e-5, exact_reference=True),
                     _no_key_case(fn, *(x.astype(np.float32) for x in (Q, K[:0], V[:0])),
                                  no_keys)))),
        _run("float16 inputs give float16 results, and with no key at all",
             _all(_dtype_case(fn, Q16, K16, V16),
                  _no_key_case(fn, Q16, K16[:0], V16[:0]))),
        _run("float16, causal mask with a fully masked row", _case(
            fn, Q16, K16, V16, empty_row, atol=5e-3,
            notes={"unguarded": " (in float16, -1e9 also rounds to -inf)"})),
        _run("float16 at d_k = 64, scores near 3200, 9600, 65600 and 514000, "
             "and masked near -65600", _all(_case(
            fn, Q_h, K_h, V_h, atol=5e-3,
            what="; in float16, Q K^T overflows to inf once a raw dot product "
                 "passes 65504 (a score above about 8188 at d_k = 64): compute "
                 "in float32, Q.astype(np.float32), and cast the results back"),
            _case(fn, Q_c, K_c, V_c, atol=5e-3,
                  what="; the scores here (65600, 65599.2 and 65598.4) lie above "
                       "float16's 65504 but are finite in float32: compute in "
                       "float32 and cast only O and A back"),
            _case(fn, Q_x, K_x, V_c, atol=5e-3,
                  what="; the scores here (514111.875, 514110.875 and 514109.875) "
                       "lie far above float16's 65504 but are finite in float32: "
                       "compute in float32 and cast only O and A back"),
            _case(fn, Q_n, K_n, V_n, mask_n, atol=5e-3, what_if_masked_weight=True,
                  keys={"fill-float16", "fill-below", "masked-on-top",
                        "exp-times-mask"},
                  what="; the visible keys here score near -65600, below "
                       "float16's -65504, and the masked keys 0 and 8: only -inf (or "
                       "float32's minimum, in float32 scores) is below them"),
            _case(fn, Q_t, K_t, V_t, atol=5e-3,
                  notes={"float16-scores": "; here Q K^T (near 25600) does not "
                         "overflow, yet float16 rounds it by up to 8: compute "
                         "float16 in float32 always, not only when Q K^T "
                         "overflows"},
                  what="; here Q K^T (near 25600) does not overflow, yet float16 "
                       "rounds it by up to 8: compute float16 in float32 always"))),
    ]
    return _report(results, verbose)
