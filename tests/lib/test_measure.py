"""The measuring functions of attention.measure, used by the cost sections and make bench."""

from __future__ import annotations

import time

import numpy as np
import pytest

from threadpoolctl import threadpool_info

from attention import measure


def test_median_time_of_a_sleep_is_at_least_the_sleep():
    assert measure.median_time(lambda: time.sleep(0.02), repeats=3, warmup=0) >= 0.02


def test_median_time_runs_warmup_and_repeats_calls():
    calls = []
    measure.median_time(lambda: calls.append(1), repeats=4, warmup=2)
    assert len(calls) == 6


def test_median_time_ignores_one_slow_call(monkeypatch):
    """A clock the calls advance by known durations (a real sleep(0) can take longer than
    the slow call on a loaded machine: it once measured 0.16 s in a loaded make test)."""
    now = [0.0]
    monkeypatch.setattr(measure.time, "perf_counter", lambda: now[0])
    durations = iter([0.01, 5.0, 0.02])

    def call():
        now[0] += next(durations)

    assert measure.median_time(call, repeats=3, warmup=0) == pytest.approx(0.02)


@pytest.mark.parametrize("method", ["tracemalloc", "rss"])
def test_peak_memory_of_a_known_array_is_at_least_its_size(method):
    n_bytes = 64 * 2**20
    peak = measure.peak_memory(lambda: np.ones(n_bytes // 8), method=method)
    assert n_bytes <= peak < 1.5 * n_bytes


def test_peak_memory_counts_a_temporary_freed_before_the_end():
    def make_and_drop():
        big = np.ones(2**23)  # 64 MiB, gone before the function returns
        return float(big.sum())

    assert measure.peak_memory(make_and_drop) >= 2**26


def test_peak_memory_rss_sees_torch_tensors_that_tracemalloc_misses():
    torch = pytest.importorskip("torch")
    n_bytes = 64 * 2**20
    make = lambda: torch.ones(n_bytes // 4, dtype=torch.float32)  # noqa: E731
    assert measure.peak_memory(make, method="rss") >= n_bytes
    assert measure.peak_memory(make, method="tracemalloc") < n_bytes // 100


def test_peak_memory_rejects_an_unknown_method():
    with pytest.raises(ValueError, match="method"):
        measure.peak_memory(lambda: None, method="guess")


def test_threads_sets_and_restores_the_torch_thread_count():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    with measure.threads(1):
        assert torch.get_num_threads() == 1
        blas = [p for p in threadpool_info() if p["user_api"] == "blas"]
        assert blas and all(p["num_threads"] == 1 for p in blas)
    assert torch.get_num_threads() == before
