"""Measuring attention's cost: time, peak memory, throughput, and backward/forward ratios.

One set of functions for the book's cost sections (pages "Numerical stability and masks",
which compares the tiled and the plain forward pass, and "Attention in PyTorch", which
compares NumPy, torch's built-in and the backward pass) and for ``make bench``
(``benchmarks/run.py``), so the figures the text quotes and the benchmark's come from the
same code. What describes the machine (library versions, BLAS, the CPU, the matrix-product
rate) lives in ``benchmarks/common.py``: no page needs it. Sizes are always the caller's choice: a page uses small ones so it executes in
seconds, the benchmark the sizes its goals name.

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

from .backward import attention_backward
from .forward import scaled_dot_product_attention, tiled_attention

__all__ = [
    "median_time",
    "peak_memory",
    "attention_flops",
    "random_qkv",
    "attention_cost",
    "backward_cost",
    "threads",
]

IMPLEMENTATIONS = ("numpy", "tiled", "torch")  # the default of attention_cost
ALL_IMPLEMENTATIONS = ("numpy", "numpy_no_weights", "tiled", "torch")


def median_time(fn: Callable[[], object], repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` in seconds over ``repeats`` calls, after ``warmup`` calls.

    Uses :func:`time.perf_counter`. The warm-up calls pay one-off costs (first-touch page
    faults, BLAS thread start, torch kernel selection) that the median should not include;
    the median, unlike the mean, ignores a call slowed by another process.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    if warmup < 0:
        raise ValueError(f"warmup must be non-negative, got {warmup}")
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
    if method == "tracemalloc":
        return _peak_tracemalloc(fn)
    if method == "rss":
        return _peak_rss(fn)
    raise ValueError(f"method must be 'tracemalloc' or 'rss', got {method!r}")


# --- attention's cost ------------------------------------------------------------------

def attention_flops(T: int, d: int, heads: int = 1, batch: int = 1) -> int:
    """Floating-point operations of one forward pass: 4 T^2 d per head.

    Two T x T x d matrix products (S = Q K^T and O = A V), each 2 T^2 d multiply-adds
    counted as two flops; the softmax's O(T^2) work is not counted.
    """
    return 4 * T * T * d * heads * batch


def random_qkv(T: int, d: int = 64, heads: int = 8, batch: int = 1, seed: int = 0,
               dtype=np.float32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Standard-normal Q, K, V of shape (batch, heads, T, d), reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((batch, heads, T, d), dtype=np.float32).astype(dtype, copy=False)
                 for _ in range(3))


def _forward(impl: str, Q, K, V, block_size: int) -> Callable[[], object]:
    if impl == "numpy":
        return lambda: scaled_dot_product_attention(Q, K, V)[0]
    if impl == "numpy_no_weights":
        return lambda: scaled_dot_product_attention(Q, K, V, need_weights=False)[0]
    if impl == "tiled":
        return lambda: tiled_attention(Q, K, V, block_size)
    if impl == "torch":
        import torch
        import torch.nn.functional as F
        q, k, v = (torch.from_numpy(x) for x in (Q, K, V))

        def run():
            with torch.inference_mode():
                return F.scaled_dot_product_attention(q, k, v)
        return run
    raise ValueError(f"impl must be one of {ALL_IMPLEMENTATIONS}, got {impl!r}")


def attention_cost(ns, d: int = 64, heads: int = 8, batch: int = 1, block_size: int = 256,
                   repeats: int = 3, impls=IMPLEMENTATIONS, memory: bool = True,
                   seed: int = 0) -> list[dict]:
    """Time and peak memory of one forward pass against sequence length T, per implementation.

    For each T in ``ns`` and each implementation in ``impls``:
    ``"numpy"`` (:func:`attention.scaled_dot_product_attention`, which returns the full
    (batch, heads, T, T) weights), ``"numpy_no_weights"`` (the same with
    ``need_weights=False``: the output only, which is all that torch's function returns),
    ``"tiled"`` (:func:`attention.tiled_attention` with ``block_size``) and ``"torch"``
    (``torch.nn.functional.scaled_dot_product_attention`` on the CPU), on float32 Q, K, V
    of shape (batch, heads, T, d) from :func:`random_qkv`.

    Returns one record (a dict) per (T, impl): ``impl, T, d, heads, batch, block_size,
    seconds`` (median of ``repeats``), ``flops`` (:func:`attention_flops`), ``gflops``
    (flops / seconds / 1e9), and, when ``memory``, ``peak_bytes`` with ``memory_method``:
    tracemalloc for the NumPy versions, rss for torch (see :func:`peak_memory`). The
    inputs and output are not counted, except the output's own buffer.
    """
    records = []
    for T in ns:
        Q, K, V = random_qkv(T, d, heads, batch, seed)
        for impl in impls:
            fn = _forward(impl, Q, K, V, block_size)
            seconds = median_time(fn, repeats)
            flops = attention_flops(T, d, heads, batch)
            record = dict(impl=impl, T=T, d=d, heads=heads, batch=batch, block_size=block_size,
                          seconds=seconds, flops=flops, gflops=flops / seconds / 1e9)
            if memory:
                method = "rss" if impl == "torch" else "tracemalloc"
                record.update(peak_bytes=peak_memory(fn, method), memory_method=method)
            records.append(record)
    return records


def backward_cost(T: int, d: int = 64, heads: int = 8, batch: int = 1, repeats: int = 3,
                  seed: int = 0) -> dict:
    """Backward against forward pass, hand-written (NumPy) and torch autograd, in seconds.

    Q, K, V (batch, heads, T, d) float32 and dO of the output's shape, all from ``seed``.
    Each backward pass starts from what its forward pass kept, as in training. Keys of the
    returned dict (all medians of ``repeats`` calls):

    * ``numpy_forward``: :func:`attention.scaled_dot_product_attention`, returning O and A;
    * ``numpy_backward``: :func:`attention.attention_backward` given that O and A (four
      matrix products); ``numpy_backward_recompute``: the same without them, so that it
      recomputes the forward pass first;
    * ``torch_forward``: the built-in ``F.scaled_dot_product_attention`` with autograd
      recording; ``torch_backward``: ``torch.autograd.grad`` of that output (the graph is
      kept, so each call is the backward pass alone, from what the forward pass saved);
    * ``torch_math_forward`` / ``torch_math_backward``: the same for the readable
      :func:`attention.torch.scaled_dot_product_attention` (unfused, like the NumPy one);
    * ratios: ``numpy_ratio`` = numpy_backward / numpy_forward (the rule of thumb says
      about 2: twice the matrix products), ``torch_ratio``, ``torch_math_ratio``,
      ``numpy_vs_autograd`` = numpy_backward / torch_backward and
      ``numpy_recompute_vs_autograd``.
    """
    import torch
    import torch.nn.functional as F

    from . import torch as attention_torch

    Q, K, V = random_qkv(T, d, heads, batch, seed)
    dO = np.random.default_rng(seed + 1).standard_normal(Q.shape, dtype=np.float32)
    out = dict(T=T, d=d, heads=heads, batch=batch)
    out["numpy_forward"] = median_time(lambda: scaled_dot_product_attention(Q, K, V), repeats)
    O, A = scaled_dot_product_attention(Q, K, V)
    out["numpy_backward"] = median_time(lambda: attention_backward(Q, K, V, dO, O=O, A=A), repeats)
    del O, A
    out["numpy_backward_recompute"] = median_time(lambda: attention_backward(Q, K, V, dO), repeats)

    q, k, v = (torch.from_numpy(x.copy()).requires_grad_(True) for x in (Q, K, V))
    do = torch.from_numpy(dO)
    for name, sdpa in (("torch", F.scaled_dot_product_attention),
                       ("torch_math", attention_torch.scaled_dot_product_attention)):
        out[f"{name}_forward"] = median_time(lambda: sdpa(q, k, v), repeats)
        o = sdpa(q, k, v)
        out[f"{name}_backward"] = median_time(
            lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True), repeats)
        del o
    out["numpy_ratio"] = out["numpy_backward"] / out["numpy_forward"]
    out["torch_ratio"] = out["torch_backward"] / out["torch_forward"]
    out["torch_math_ratio"] = out["torch_math_backward"] / out["torch_math_forward"]
    out["numpy_vs_autograd"] = out["numpy_backward"] / out["torch_backward"]
    out["numpy_recompute_vs_autograd"] = out["numpy_backward_recompute"] / out["torch_backward"]
    return out


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
