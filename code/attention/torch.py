"""PyTorch versions: a readable scaled_dot_product_attention that matches the built-in,
and a single-head SelfAttention module (page "Attention in PyTorch").

Tensors are (B, H, T, d_k) as in ``torch.nn.functional.scaled_dot_product_attention``;
any number of leading dimensions works. PyTorch's documentation calls the book's T_q,
T_k, d_k and d_v "L", "S", "E" and "Ev".
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ._validate import check_callable, check_integer, check_positive, check_tensor

__all__ = ["scaled_dot_product_attention", "SelfAttention", "safe_softmax", "peak_allocated"]


def safe_softmax(S: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax in which a row that is entirely -inf gives zeros instead of NaN.

    The policy of the pinned torch's built-in attention on the CPU (MATH and flash) for fully
    masked rows, and of the NumPy :func:`attention.softmax`. An empty ``dim`` (no keys) gives an empty result.
    ``S`` must be a floating-point tensor (TypeError otherwise); NaN or +inf in it raise
    ``ValueError``, -inf (a masked score) is allowed. Computed in float32 at least and
    returned in ``S``'s dtype, as ``torch.softmax`` does: a float16 sum of more than 65,504
    terms near 1 would overflow and give zeros that look like a fully masked row.
    """
    check_tensor(S, "S", allow_neg_inf=True)
    if S.shape[dim] == 0:
        return torch.zeros_like(S)
    work = S.to(torch.promote_types(S.dtype, torch.float32))
    m = work.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isneginf(m), torch.zeros_like(m), m).detach()
    e = torch.exp(work - m)
    total = e.sum(dim=dim, keepdim=True)
    return (e / torch.where(total > 0, total, torch.ones_like(total))).to(S.dtype)


def _check_inputs(q, k, v, attn_mask, dropout_p, is_causal, scale) -> None:
    """Refuse what :func:`scaled_dot_product_attention` cannot compute correctly.

    Kept apart from the function so that its body reads like the page's ten lines.
    """
    for name, x in (("q", q), ("k", k), ("v", v)):
        check_tensor(x, name)
        if x.dim() < 2:
            raise ValueError(f"{name} must have shape (..., length, width), got {tuple(x.shape)}")
    if not q.dtype == k.dtype == v.dtype:
        # The built-in refuses mixed dtypes too; casting silently would hide a bug upstream.
        raise TypeError(f"q, k and v must have the same dtype, got q {q.dtype}, k {k.dtype} "
                        f"and v {v.dtype}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same width d_k: q {tuple(q.shape)}, k {tuple(k.shape)}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same number of keys T_k: k {tuple(k.shape)}, v {tuple(v.shape)}")
    if q.shape[-1] == 0:
        raise ValueError(f"the width d_k of q and k must be at least 1, got q {tuple(q.shape)}")
    try:
        batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(f"the leading dimensions of q {tuple(q.shape)}, k {tuple(k.shape)} "
                         f"and v {tuple(v.shape)} do not broadcast") from None
    if scale is not None:
        check_positive(scale, "scale")
    if attn_mask is not None:
        if not isinstance(attn_mask, torch.Tensor):
            raise TypeError(f"attn_mask must be a torch.Tensor, got {type(attn_mask).__name__}")
        if attn_mask.dtype != torch.bool:
            check_tensor(attn_mask, "attn_mask (an additive float mask)", allow_neg_inf=True)
            if attn_mask.dtype not in (torch.float32, q.dtype):
                # the built-in's rule: a float mask is float32 or the inputs' dtype
                raise TypeError(f"an additive attn_mask must be float32 or the dtype of q, k "
                                f"and v ({q.dtype}), got {attn_mask.dtype}")
        score_shape = tuple(batch) + (q.shape[-2], k.shape[-2])
        try:
            ok = tuple(torch.broadcast_shapes(attn_mask.shape, score_shape)) == score_shape
        except RuntimeError:
            ok = False
        if not ok:
            raise ValueError(f"attn_mask of shape {tuple(attn_mask.shape)} does not broadcast "
                             f"to the scores' shape {score_shape}")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout_p must lie in [0, 1), got {dropout_p}")
    if is_causal and attn_mask is not None:
        raise ValueError("pass either attn_mask or is_causal=True, not both (the built-in's "
                         "documentation forbids it; its MATH kernel raises)")


def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None) -> torch.Tensor:
    """Readable twin of ``torch.nn.functional.scaled_dot_product_attention``.

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) -> (..., T_q, d_v).
    ``attn_mask``: boolean (True = take part) or a float bias added to the scores; it
    broadcasts to (..., T_q, T_k), so a 1-D (T_k,) mask is accepted here, although the
    built-in, left to choose its kernel, rejects one on the CPU (its dispatcher raises
    IndexError; pinned to MATH it broadcasts it as we do). ``is_causal`` keeps keys j <= i, aligned top-left when
    T_q != T_k (as the built-in does). Passing both ``attn_mask`` and ``is_causal=True``
    raises ValueError, as the built-in's documentation says it does (in the pinned torch its
    MATH kernel raises, while its CPU flash kernel silently applies both masks).
    ``scale`` (the book's c) defaults to 1/sqrt(d_k). The scores, the softmax and the
    product with v run in float32 (or float64 for float64 inputs), and the result is cast
    back to the inputs' dtype. A fully masked row gives a zero output, as the built-in's
    CPU kernels (MATH and flash) do in the pinned torch. ``dropout_p`` zeroes weights at random and rescales the rest by
    1/(1 - p) whenever it is positive, exactly like the built-in: pass 0 at evaluation time.

    The body is the page's ten lines with ``safe_softmax`` in place of ``torch.softmax``;
    the checks live in :func:`_check_inputs`. Bad input raises instead of computing a
    wrong answer: non-tensors and non-float tensors (TypeError), q, k and v of different
    dtypes, or an additive mask neither float32 nor of their dtype (TypeError, as the
    built-in refuses them), NaN or inf in q, k, v (ValueError), d_k = 0, mismatched
    shapes, a mask that does not broadcast, NaN or +inf in an additive mask, a
    non-positive scale, ``attn_mask`` together with ``is_causal`` (ValueError). Not detected
    (the body stays the page's ten lines): finite inputs whose scaled scores c q . k
    overflow the working dtype; +inf then raises ValueError from ``safe_softmax``, but a
    row that overflows to -inf passes for a fully masked one and gives zeros. T_q = 0
    gives an empty output; T_k = 0 (no keys) a zero output, like a fully masked row and
    like the built-in.
    """
    _check_inputs(q, k, v, attn_mask, dropout_p, is_causal, scale)
    T_q, T_k = q.shape[-2], k.shape[-2]
    c = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    work = torch.float64 if q.dtype == torch.float64 else torch.float32
    S = c * q.to(work) @ k.to(work).transpose(-2, -1)   # (..., T_q, T_k)
    if is_causal:                                       # keys j <= i
        attn_mask = torch.ones(T_q, T_k, dtype=torch.bool, device=q.device).tril()
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        S = S.masked_fill(~attn_mask, float("-inf"))    # True = may attend
    elif attn_mask is not None:
        S = S + attn_mask.to(work)                      # an additive bias
    A = safe_softmax(S, dim=-1)                         # a row with no key: zeros
    if dropout_p > 0.0:
        A = F.dropout(A, p=dropout_p)   # zero at random, rest times 1/(1-p)
    return (A @ v.to(work)).to(q.dtype)                 # (..., T_q, d_v)


class SelfAttention(nn.Module):
    """One head of self-attention: x (B, T, d_model) -> (B, T, d_model).

    q = x W_q, k = x W_k, v = x W_v (each d_model -> d_k, no bias), then attention, then
    W_o (d_k -> d_model) maps the head's output back to the residual width. ``fused=True``
    calls the built-in; ``fused=False`` the readable version above (same numbers). The
    built-in receives (B, T, d_k) tensors, which are 3-D: its dispatcher then runs the MATH
    kernel, since every fused kernel takes 4-D inputs only (page "Attention in PyTorch").
    ``dropout`` applies to the attention weights in training mode only. An ``attn_mask``
    passed to ``forward`` (boolean or additive, broadcasting to (B, T, T)) combines with
    the causal mask when ``causal=True``: both apply.
    """

    def __init__(self, d_model: int, d_k: int | None = None, causal: bool = False,
                 dropout: float = 0.0, fused: bool = True):
        super().__init__()
        d_k = d_model if d_k is None else d_k
        check_integer(d_model, "d_model")
        check_integer(d_k, "d_k")
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real) or not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be a number in [0, 1), got {dropout!r}")
        self.d_model, self.d_k, self.causal, self.dropout, self.fused = d_model, d_k, causal, dropout, fused
        self.W_q = nn.Linear(d_model, d_k, bias=False)
        self.W_k = nn.Linear(d_model, d_k, bias=False)
        self.W_v = nn.Linear(d_model, d_k, bias=False)
        self.W_o = nn.Linear(d_k, d_model, bias=False)

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        check_tensor(x, "x")
        if x.dim() < 2 or x.shape[-1] != self.d_model:
            raise ValueError(f"x must end in d_model = {self.d_model}, got shape {tuple(x.shape)}")
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)  # (B, T, d_k) each
        sdpa = F.scaled_dot_product_attention if self.fused else scaled_dot_product_attention
        p = self.dropout if self.training else 0.0
        if self.causal and attn_mask is not None:
            # Both must apply; is_causal=True would refuse (or, if dropped, lose) one of them.
            T = x.shape[-2]
            causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            if attn_mask.dtype == torch.bool:
                attn_mask = attn_mask & causal
            else:
                attn_mask = attn_mask.masked_fill(~causal, float("-inf"))
        o = sdpa(q, k, v, attn_mask=attn_mask, dropout_p=p, is_causal=self.causal and attn_mask is None)
        return self.W_o(o)  # (B, T, d_model)


def peak_allocated(fn: Callable[[], object]) -> int:
    """Peak bytes that torch's CPU allocations held at once while ``fn()`` ran.

    Read from the PyTorch profiler's memory accounting (``profile_memory=True``): every
    allocation and free torch makes, replayed in order, the largest running total kept.
    Unlike a resident-size reading it does not move with the machine's load or with
    memory the allocator keeps for reuse: the same call on the same number of threads
    gives the same figure (a kernel may size its scratch by ``torch.get_num_threads()``,
    as the CPU flash kernel does, so its peak grows with the thread count). It counts
    only torch's own allocations (not NumPy's, nor BLAS workspace), on the calling thread
    and its autograd backward pass (page "Attention in PyTorch"). ``fn`` must be callable
    (TypeError otherwise); what it returns is dropped inside the measurement.
    """
    check_callable(fn)
    from torch.profiler import ProfilerActivity, profile

    # The profiler's C++ side prints two status lines per run on the process's stderr;
    # they say nothing about the measurement, so file descriptor 2 is parked meanwhile.
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
                fn()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    events = sorted((e for e in prof.profiler.kineto_results.events()
                     if e.name() == "[memory]"), key=lambda e: e.start_ns())
    held = peak = 0
    for event in events:  # nbytes > 0 allocates, < 0 frees
        held += event.nbytes()
        peak = max(peak, held)
    return peak
