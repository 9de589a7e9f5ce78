"""The reference kernels the forward benchmark prints beside the library's (benchmarks/
bench_kernels.py): a floor is only evidence if it computes what attention computes."""

from __future__ import annotations

import sys

import numpy as np

from tests.harness import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_kernels  # noqa: E402

from attention import measure, scaled_dot_product_attention  # noqa: E402


def test_the_stable_softmax_floor_computes_softmax_of_the_scores_times_v():
    Q, K, V = measure.random_qkv(48, 8, 3)
    K = K * 6.0  # scores up to a few dozen: without its shift the float32 exp would be off
    floor = bench_kernels.numpy_stable_softmax_floor(Q, K, V)
    expected, _ = scaled_dot_product_attention(Q, K, V)  # the scale included
    first, second = floor(), floor()
    np.testing.assert_allclose(first.reshape(expected.shape), expected, rtol=2e-5, atol=2e-6)
    assert first is not second and not np.shares_memory(first, second)  # a new O, as a pass returns


def test_the_products_floor_computes_both_products():
    Q, K, V = measure.random_qkv(16, 4, 2)
    S, O = bench_kernels.numpy_products(Q, K, V)()
    np.testing.assert_allclose(S, Q @ np.swapaxes(K, -1, -2), rtol=1e-6)
    np.testing.assert_allclose(O, S @ V, rtol=1e-5)


def test_turns_call_every_function_once_per_turn_and_vary_its_neighbour():
    """A call is slower after one that filled the caches; with a fixed order (or a rotation
    of it) each function would always follow the same neighbour, so the order is shuffled."""
    calls = []
    names = "abcde"
    fns = {name: (lambda name=name: calls.append(name)) for name in names}
    times = bench_kernels.timed_in_turns(fns, 40, warmup=0)
    assert all(len(times[name]) == 40 for name in names)
    turns = [calls[i:i + len(names)] for i in range(0, len(calls), len(names))]
    assert all(sorted(turn) == list(names) for turn in turns)
    for name in names:  # every function follows more than one neighbour
        before = {turn[turn.index(name) - 1] for turn in turns if turn.index(name)}
        assert len(before) > 2, (name, before)
    again = []
    fns_again = {name: (lambda name=name: again.append(name)) for name in names}
    bench_kernels.timed_in_turns(fns_again, 40, warmup=0)
    assert again == calls  # seeded: two runs call in the same order


def test_the_widget_benchmark_finds_the_loader_the_page_loads(tmp_path):
    """The widget bytes count the loader file the page's own <script src> names (the bench
    once looked in a folder the loader had left, and the widget section could not run)."""
    import pytest

    import bench_widgets

    page = tmp_path / "chapters" / "variance.html"
    page.parent.mkdir()
    text = '<script defer src="../_static/attn-widgets-loader.js?v=f7d41f1f"></script>'
    assert bench_widgets.loader_file(page, text) == (tmp_path / "_static" / "attn-widgets-loader.js")
    with pytest.raises(ValueError, match="loads no attn-widgets-loader.js"):
        bench_widgets.loader_file(page, "<p>no widgets</p>")
