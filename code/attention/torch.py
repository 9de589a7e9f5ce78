"""PyTorch versions: a readable scaled_dot_product_attention that matches the built-in,
and a single-head SelfAttention module (page "Attention in PyTorch").

Tensors are (B, H, L, d) as in ``torch.nn.functional.scaled_dot_product_attention``;
any number of leading dimensions works.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["scaled_dot_product_attention", "SelfAttention", "safe_softmax"]


def safe_softmax(S: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax in which a row that is entirely -inf gives zeros instead of NaN.

    The policy of torch 2.13's built-in attention for fully masked rows, and of the
    NumPy :func:`attention.softmax`.
    """
    m = S.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isneginf(m), torch.zeros_like(m), m).detach()
    e = torch.exp(S - m)
    total = e.sum(dim=dim, keepdim=True)
    return e / torch.where(total > 0, total, torch.ones_like(total))


def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None) -> torch.Tensor:
    """Readable twin of ``torch.nn.functional.scaled_dot_product_attention``.

    q (..., L, E), k (..., S, E), v (..., S, Ev) -> (..., L, Ev).
    ``attn_mask``: boolean (True = take part) or a float bias added to the scores; it
    broadcasts to (..., L, S). ``is_causal`` keeps keys j <= i, aligned top-left when L != S
    (as the built-in does). ``scale`` defaults to 1/sqrt(E). The softmax runs in float32
    (or float64 for float64 inputs) and is cast back to the inputs' dtype. A fully masked
    row gives a zero output, as the built-in does in torch 2.13. ``dropout_p`` zeroes
    weights at random and rescales the rest by 1/(1 - p) whenever it is positive, exactly
    like the built-in: pass 0 at evaluation time.
    """
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same last dimension: q {tuple(q.shape)}, k {tuple(k.shape)}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same length S: k {tuple(k.shape)}, v {tuple(v.shape)}")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout_p must lie in [0, 1), got {dropout_p}")
    if is_causal and attn_mask is not None:
        raise ValueError("pass either attn_mask or is_causal=True, not both (the built-in refuses too)")
    L, S, E = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    work = torch.float64 if q.dtype == torch.float64 else torch.float32
    scores = (q.to(work) @ k.to(work).transpose(-2, -1)) * scale  # (..., L, S)
    if is_causal:
        attn_mask = torch.ones(L, S, dtype=torch.bool, device=q.device).tril()
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask.to(work)
    weights = safe_softmax(scores, dim=-1)  # (..., L, S), in float32/64
    if dropout_p > 0.0:
        weights = torch.dropout(weights, dropout_p, train=True)
    return (weights @ v.to(work)).to(q.dtype)  # (..., L, Ev)


class SelfAttention(nn.Module):
    """One head of self-attention: x (B, T, d_model) -> (B, T, d_model).

    q = x W_q, k = x W_k, v = x W_v (each d_model -> d_k, no bias), then attention, then
    W_o (d_k -> d_model) maps the head's output back to the residual width. ``fused=True``
    calls the built-in kernel; ``fused=False`` the readable version above (same numbers).
    ``dropout`` applies to the attention weights in training mode only.
    """

    def __init__(self, d_model: int, d_k: int | None = None, causal: bool = False,
                 dropout: float = 0.0, fused: bool = True):
        super().__init__()
        if d_model < 1:
            raise ValueError(f"d_model must be positive, got {d_model}")
        d_k = d_model if d_k is None else d_k
        if d_k < 1:
            raise ValueError(f"d_k must be positive, got {d_k}")
        self.d_model, self.d_k, self.causal, self.dropout, self.fused = d_model, d_k, causal, dropout, fused
        self.W_q = nn.Linear(d_model, d_k, bias=False)
        self.W_k = nn.Linear(d_model, d_k, bias=False)
        self.W_v = nn.Linear(d_model, d_k, bias=False)
        self.W_o = nn.Linear(d_k, d_model, bias=False)

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        if x.shape[-1] != self.d_model:
            raise ValueError(f"x must end in d_model = {self.d_model}, got shape {tuple(x.shape)}")
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)  # (B, T, d_k) each
        sdpa = F.scaled_dot_product_attention if self.fused else scaled_dot_product_attention
        p = self.dropout if self.training else 0.0
        o = sdpa(q, k, v, attn_mask=attn_mask, dropout_p=p, is_causal=self.causal and attn_mask is None)
        return self.W_o(o)  # (B, T, d_model)
