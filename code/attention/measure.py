"""Measuring cost: wall time, peak memory, reproducible inputs, thread count.

What the cost cells of the pages need (the stability page's tiled-against-plain memory, the
backward page's timings, the PyTorch page's cost and memory sections) and what ``make bench``
uses for the same figures. What describes the machine (library versions, BLAS, the CPU) lives
in ``benchmarks/common.py``: no page needs it. Sizes are always the caller's choice: a page
uses small ones so it executes in seconds, the benchmark the sizes its goals name.

Conventions: Q, K, V are (B, H, T, d) float32 with a fixed seed; times are seconds (the
median of several calls, :func:`median_time`); memory is bytes above the level before the
call (:func:`peak_memory`).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import statistics
import threading
import time
import tracemalloc
from typing import Callable

import numpy as np

from ._validate import check_callable, check_choice, check_integer

__all__ = [
    "median_time",
    "peak_memory",
    "random_qkv",
    "threads",
]


def median_time(fn: Callable[[], object], repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` in seconds over ``repeats`` calls, after ``warmup`` calls.

    Uses :func:`time.perf_counter`. The warm-up calls pay one-off costs (first-touch page
    faults, BLAS thread start, torch kernel selection) that the median should not include;
    the median, unlike the mean, ignores a call slowed by another process.
    """
    check_callable(fn)
    check_integer(repeats, "repeats")
    check_integer(warmup, "warmup", minimum=0)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# --- peak memory -----------------------------------------------------------------------

def _status_bytes(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024  # the kernel reports kB
    raise OSError(f"/proc/self/status has no {field}")


def _malloc_trim() -> None:
    # glibc keeps freed memory in its arenas; hand it back so the next allocation shows up
    # as new resident pages instead of silently reusing old ones.
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _peak_rss(fn: Callable[[], object]) -> int:
    gc.collect()
    _malloc_trim()
    base = _status_bytes("VmRSS")
    try:
        # Writing 5 resets the process's peak resident size (VmHWM) to the current one.
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        reset = True
    except OSError:
        reset = False
    if reset:
        result = fn()
        peak = _status_bytes("VmHWM")
    else:  # fall back to sampling the resident size every millisecond
        peak = base
        done = threading.Event()

        def sample():
            nonlocal peak
            while not done.is_set():
                peak = max(peak, _status_bytes("VmRSS"))
                time.sleep(0.001)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            result = fn()
        finally:
            done.set()
            sampler.join()
        peak = max(peak, _status_bytes("VmRSS"))
    del result
    return max(0, peak - base)


def _peak_tracemalloc(fn: Callable[[], object]) -> int:
    gc.collect()
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
        del result
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return max(0, peak - base)


def peak_memory(fn: Callable[[], object], method: str = "tracemalloc") -> int:
    """Peak bytes allocated while ``fn()`` runs, above the level before the call.

    ``fn``'s return value counts (it is alive at the end of the call) and is then dropped.

    ``method="tracemalloc"`` (default): exact bytes requested through Python's allocators,
    which NumPy's array buffers use, so it sees every NumPy temporary, byte for byte and
    unaffected by other threads. It does NOT see torch tensors (torch allocates with its
    own C++ allocator) or memory that BLAS allocates internally.

    ``method="rss"``: the growth of the process's peak resident set size (Linux: reset
    ``VmHWM`` through ``/proc/self/clear_refs``, call, read ``VmHWM``; elsewhere, sample
    ``VmRSS`` every millisecond). It sees every allocation, torch's included, but:
    it counts pages (4 KiB granularity) that were actually touched (``np.empty`` never
    written costs nothing); memory freed earlier and kept by malloc can be reused without
    raising the resident size (we call ``malloc_trim`` first to limit this, so small
    allocations below a few MiB may be missed); other threads of the process count too;
    and the sampling fallback can miss short peaks. Use it for torch; compare like with
    like (never a tracemalloc figure with an rss one).
    """
    check_callable(fn)
    check_choice(method, "method", ("tracemalloc", "rss"))
    return _peak_tracemalloc(fn) if method == "tracemalloc" else _peak_rss(fn)


# --- attention's cost ------------------------------------------------------------------

def random_qkv(T: int, d: int = 64, heads: int = 8, batch: int = 1, seed: int = 0,
               dtype=np.float32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Standard-normal Q, K, V of shape (batch, heads, T, d), reproducible from ``seed``.

    The sizes are positive integers and ``seed`` a non-negative one; ``dtype`` a float dtype.
    """
    for name, value in (("T", T), ("d", d), ("heads", heads), ("batch", batch)):
        check_integer(value, name)
    check_integer(seed, "seed", minimum=0)
    if not np.issubdtype(np.dtype(dtype), np.floating):
        raise TypeError(f"dtype must be a float dtype, got {np.dtype(dtype)}")
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((batch, heads, T, d), dtype=np.float32).astype(dtype, copy=False)
                 for _ in range(3))


@contextlib.contextmanager
def threads(n: int | None):
    """Run the block with ``n`` threads in NumPy's BLAS and in torch (None: leave as is).

    Figures measured on a shared or busy machine depend strongly on the thread count
    (BLAS threads that wait for each other slow small products down). ``threadpoolctl``
    sets the BLAS of every loaded library; torch's intra-op pool is set directly.
    """
    if n is None:
        yield
        return
    check_integer(n, "n")
    from threadpoolctl import threadpool_limits

    try:
        import torch
    except ImportError:
        torch = None
    old_torch = torch.get_num_threads() if torch else None
    with threadpool_limits(limits=n):
        if torch:
            torch.set_num_threads(n)
        try:
            yield
        finally:
            if torch:
                torch.set_num_threads(old_torch)
