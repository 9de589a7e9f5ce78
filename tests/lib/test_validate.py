"""attention._validate: every public function validates its arguments once.

Public functions validate and then call unchecked private kernels; an internal call does
not re-validate what is already validated. A counting spy replaces every check of
``attention._validate`` wherever the library has imported it and records, for each
public call, which argument each outermost check looked at: no argument may be looked
at twice.
"""

from __future__ import annotations

import collections
import functools
import inspect
import sys

import numpy as np
import pytest
import torch

import attention
import attention._validate as validate
from attention.backward import tiled_attention_backward
from attention.blocked import blocked_attention_backward

CHECKS = {name: fn for name, fn in vars(validate).items()
          if inspect.isfunction(fn) and fn.__module__ == validate.__name__
          and (name.startswith("check_") or name == "as_float_array")
          and name != "check_no_overflow"}  # it checks computed scores, not an argument
UNNAMED = {"check_qkv": "Q, K, V", "check_mask": "mask", "check_kurtosis": "kurtosis"}


def _what(check: str, args, kwargs) -> str:
    """The argument a check looks at: its ``name`` (or the fixed one of UNNAMED)."""
    if check in UNNAMED:
        return UNNAMED[check]
    bound = inspect.signature(CHECKS[check]).bind(*args, **kwargs)
    bound.apply_defaults()
    if "name_q" in bound.arguments:
        return f"{bound.arguments['name_q']}, {bound.arguments['name_k']}"
    return bound.arguments["name"]


@pytest.fixture
def checked(monkeypatch):
    """A Counter of (check, argument) pairs, counting only the outermost check of a call
    (check_qkv's own as_float_array calls are part of it)."""
    counts = collections.Counter()
    depth = [0]

    def spy(check, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if depth[0] == 0:
                counts[check, _what(check, args, kwargs)] += 1
            depth[0] += 1
            try:
                return fn(*args, **kwargs)
            finally:
                depth[0] -= 1
        return wrapper

    spies = {name: spy(name, fn) for name, fn in CHECKS.items()}
    patched = 0
    for module_name, module in list(sys.modules.items()):
        if module is None or not (module_name == "attention" or module_name.startswith("attention.")):
            continue
        for name, fn in CHECKS.items():
            if getattr(module, name, None) is fn:
                monkeypatch.setattr(module, name, spies[name])
                patched += 1
    assert patched > len(CHECKS)  # the spies sit in the modules that call the checks
    return counts


def _validated_once(counts) -> None:
    seen = collections.Counter()
    for (check, what), n in counts.items():
        seen[what] += n
    twice = {what: n for what, n in seen.items() if n > 1}
    assert not twice, f"validated more than once: {twice} (calls: {dict(counts)})"


def test_the_spy_counts_a_validation_done_twice(checked):
    """The spy can fail: two checks of the same argument are reported."""
    attention.score_scale(4, 2.0)
    attention.score_scale(4, 2.0)
    with pytest.raises(AssertionError, match="validated more than once"):
        _validated_once(checked)


def test_saturation_stats_validates_each_argument_once(checked):
    attention.saturation_stats(8, n_keys=4, n_queries=20, temperature=0.5)
    assert {what for _, what in checked} >= {"d_k", "n_keys", "n_queries", "temperature"}
    assert not any(check in ("as_float_array", "check_weight_rows") for check, _ in checked)
    _validated_once(checked)


def test_attention_rows_and_query_gradient_rms_validate_each_argument_once(checked):
    A = attention.attention_rows(8, n_keys=4, n_queries=20)
    _validated_once(checked)
    checked.clear()
    attention.query_gradient_rms(A, np.ones(4), 0.5, 8)
    assert {what for _, what in checked} == {"d_k", "A", "t", "c"}
    _validated_once(checked)


rng = np.random.default_rng(0)
Q, K, V = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 2))
dO = rng.standard_normal((2, 4, 2))
MASK = attention.causal_mask(4, 5)


@pytest.mark.parametrize("backward", [attention.attention_backward, blocked_attention_backward],
                         ids=["plain", "blocked"])
@pytest.mark.parametrize("saved", [False, True], ids=["forward recomputed", "O and A given"])
def test_the_backward_functions_validate_each_argument_once(checked, backward, saved):
    kwargs = dict(mask=MASK, temperature=0.8)
    if saved:
        O, A = attention.scaled_dot_product_attention(Q, K, V, **kwargs)
        checked.clear()
        kwargs.update(O=O, A=A)
    backward(Q, K, V, dO, **kwargs)
    expected = {"Q, K, V", "dO", "mask", "temperature"} | ({"O", "A"} if saved else set())
    assert {what for _, what in checked} == expected
    _validated_once(checked)


def test_tiled_attention_backward_validates_each_argument_once(checked):
    tiled_attention_backward(Q, K, V, dO, 2, mask=MASK, temperature=0.8)
    assert {what for _, what in checked} == {"Q, K, V", "dO", "mask", "temperature", "block_size"}
    _validated_once(checked)


@pytest.mark.parametrize("forward", [
    lambda **kw: attention.scaled_dot_product_attention(Q, K, V, **kw),
    lambda **kw: attention.blocked_attention(Q, K, V, **kw),
    lambda **kw: attention.tiled_attention(Q, K, V, 2, **kw),
], ids=["plain", "blocked", "tiled"])
def test_the_forward_functions_validate_each_argument_once(checked, forward):
    forward(mask=MASK, temperature=0.8)
    assert {"Q, K, V", "mask", "temperature"} <= {what for _, what in checked}
    _validated_once(checked)


@pytest.mark.parametrize("call", [
    lambda: attention.sample_scores(4, 10, rho=0.5),
    lambda: attention.scaled_score_moments(4, 0.5),
    lambda: attention.prefix_mask(5, 2),
    lambda: attention.gaussian_kernel_weights(Q, K, 0.5),
    lambda: attention.jacobian_frobenius_sq(np.full((3, 4), 0.25)),
], ids=["sample_scores", "scaled_score_moments", "prefix_mask", "gaussian_kernel_weights",
        "jacobian_frobenius_sq"])
def test_other_public_functions_validate_each_argument_once(checked, call):
    call()
    assert checked
    _validated_once(checked)


def test_retrieval_attention_validates_each_tensor_once(checked):
    from attention.training import retrieval_attention

    params = {"W_Q": torch.ones(4, 2), "W_K": torch.ones(4, 2)}
    retrieval_attention(params, torch.ones(2, 3, 4), torch.tensor([0, 2]), c=0.5)
    assert {what for _, what in checked} >= {"params['W_Q']", "params['W_K']", "X", "target", "c"}
    _validated_once(checked)
