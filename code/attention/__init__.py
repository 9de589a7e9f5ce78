"""Helper library of the chapter "Scaled Dot-Product Attention".

NumPy implementations at the top level; PyTorch ones in :mod:`attention.torch` (imported
on demand, so NumPy-only pages do not pay for torch). Each function's docstring names the
page that derives it.
"""

from .backward import attention_backward, tiled_attention_backward
from .blocked import blocked_attention, blocked_attention_backward
from .forward import scaled_dot_product_attention, score_scale, tiled_attention
from .gradcheck import numerical_gradient, relative_error
from .masks import causal_mask, padding_mask, prefix_mask
from .regression import additive_scores, gaussian_kernel_weights
from .softmax import (
    jacobian_frobenius_sq,
    jacobian_trace,
    naive_softmax,
    softmax,
    softmax_jacobian,
    softmax_vjp,
)
from .scores import (
    SaturationStats,
    attention_rows,
    query_gradient_rms,
    row_score_draws,
    sample_entries,
    sample_score_parts,
    sample_scores,
    sample_statistics,
    saturation_stats,
    scaled_score_moments,
    score_excess_kurtosis,
    score_moments,
    scores_from_parts,
)

__all__ = [
    "SaturationStats",
    "additive_scores",
    "attention_backward",
    "attention_rows",
    "blocked_attention",
    "blocked_attention_backward",
    "causal_mask",
    "gaussian_kernel_weights",
    "jacobian_frobenius_sq",
    "jacobian_trace",
    "naive_softmax",
    "numerical_gradient",
    "padding_mask",
    "prefix_mask",
    "query_gradient_rms",
    "relative_error",
    "row_score_draws",
    "sample_entries",
    "sample_score_parts",
    "sample_scores",
    "sample_statistics",
    "saturation_stats",
    "scaled_dot_product_attention",
    "scaled_score_moments",
    "score_excess_kurtosis",
    "score_moments",
    "score_scale",
    "scores_from_parts",
    "softmax",
    "softmax_jacobian",
    "softmax_vjp",
    "tiled_attention",
    "tiled_attention_backward",
]
