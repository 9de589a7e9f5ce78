"""Boolean attention masks: True means "this query may attend to this key".

Explained in the page "Masks" (``chapters/masks.md``). Masks combine with logical AND
(``causal_mask(T) & padding_mask(lengths, T)``); the attention functions turn every False
into a score of -inf, so a forbidden key gets weight exactly 0.

Three masks make three kinds of model out of the same attention function: no mask (a
bidirectional encoder), :func:`causal_mask` (a decoder) and :func:`prefix_mask` (a
prefix language model).
"""

from __future__ import annotations

import numpy as np

from ._validate import check_integer

ALIGNMENTS = ("top-left", "bottom-right")


def causal_mask(T_q: int, T_k: int | None = None, *,
                align: str = "top-left") -> np.ndarray:
    """Lower-triangular (T_q, T_k) mask: a query may attend to keys not after it.

    With T_k = T_q (the default) query i sees keys 0..i. With T_k != T_q the triangle
    must be placed, and ``align`` says where:

    * ``"top-left"`` (the default): query i sees keys 0..i, the convention of
      ``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``;
    * ``"bottom-right"``: query i sees keys 0..i + (T_k - T_q), so the last query sees
      every key. This is the mask of decoding with a cache: the T_q new queries are the
      last T_q positions of a sequence of T_k, and the earlier T_k - T_q keys come from
      the cache (torch's ``causal_lower_right``). A row with no visible key (possible
      when T_q > T_k) is fully masked.

    The two agree when T_q = T_k.
    """
    T_q = check_integer(T_q, "T_q", minimum=0)
    T_k = T_q if T_k is None else check_integer(T_k, "T_k", minimum=0)
    if align not in ALIGNMENTS:
        raise ValueError(f"align must be 'top-left' or 'bottom-right', got {align!r}")
    offset = 0 if align == "top-left" else T_k - T_q
    # np.tri compares the row and column indices straight into the boolean output:
    # no (T_q, T_k) temporary besides the mask itself (np.tril of np.ones made two)
    return np.tri(T_q, T_k, k=offset, dtype=bool)


def prefix_mask(T: int, prefix: int) -> np.ndarray:
    """(T, T) mask of a prefix language model: bidirectional over the prefix, causal after.

    Every query may attend to all of the first ``prefix`` positions (the prefix, read in
    both directions, as an encoder reads its input) and, as in :func:`causal_mask`, to
    every key up to its own position. ``prefix=0`` (or 1) is the causal mask and
    ``prefix=T`` the full mask of an encoder.
    """
    T = check_integer(T, "T", minimum=0)
    prefix = check_integer(prefix, "prefix", minimum=0)
    if prefix > T:
        raise ValueError(f"prefix must lie in [0, {T}], got {prefix}")
    in_prefix = np.arange(T) < prefix  # (T,): keys every query may see
    return np.tri(T, T, dtype=bool) | in_prefix[None, :]  # causal_mask(T), or the prefix


def padding_mask(lengths, T: int) -> np.ndarray:
    """Key-padding mask of shape (B, 1, T): in sequence b, keys at positions >= lengths[b] are padding.

    The middle axis of size 1 broadcasts over queries, so the result combines with a
    (T, T) causal mask by ``&`` into (B, T, T). Put a head axis in front of the query axis
    yourself (``mask[:, None]``) for (B, H, T, T) scores.
    """
    T = check_integer(T, "T", minimum=0)
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or not np.issubdtype(lengths.dtype, np.integer):
        raise TypeError(f"lengths must be a 1-D array of integers, got {lengths!r}")
    if (lengths < 0).any() or (lengths > T).any():
        raise ValueError(f"every length must lie in [0, {T}], got {lengths.tolist()}")
    keep = np.arange(T)[None, :] < lengths[:, None]  # (B, T)
    return keep[:, None, :]  # (B, 1, T)
