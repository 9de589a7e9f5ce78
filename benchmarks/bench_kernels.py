"""Figures 2-4: the NumPy attention against torch, the tiled version against the one that
keeps A, and the backward pass against the forward pass and against autograd.

Speed is judged on the functions written for it, ``attention.blocked_attention`` and
``attention.blocked_attention_backward``; the plain versions that the pages derive
(``scaled_dot_product_attention``, ``attention_backward``) are timed beside them, so that
the table shows what the blocking buys. The functions compared in one table are timed
in turns (one call of each, repeated), so that a change in the machine's load touches
them all alike: each time is the median of its calls, and each ratio the median of the
ratios of calls made in the same turn.

With one BLAS and one torch thread (run.py's default ``--threads 1``), times are the CPU
seconds of this process (``time.process_time``): the wall-clock time of an idle machine,
which other processes' time slices on a busy one do not inflate (their use of the shared
caches still can). With more threads they are wall-clock seconds.
"""

from __future__ import annotations

import time

import numpy as np

from attention import (
    attention_backward,
    blocked_attention,
    blocked_attention_backward,
    measure,
    scaled_dot_product_attention,
    tiled_attention,
)

from common import Goal, heading, mib

FORWARD_NS = (256, 512, 1024, 2048, 4096)
TILED_NS = (1024, 2048, 4096, 8192, 16384)
BACKWARD_NS = (1024, 2048)
HEADS, D = 8, 64
TILED_HEADS = 1
TILED_BLOCK = 512

FLOOR_LIMIT = 1.1  # blocked_attention time / the NumPy floor (issue 24: the library adds at most 10%)
MATMUL_FRACTION = 0.5  # attention flop rate / matmul flop rate
MEMORY_RATIO = 16.0  # peak with A / tiled peak at the longest T
TILED_TIME_RATIO = 1.5  # tiled time / time with A at the longest T
BACKWARD_VS_AUTOGRAD = 1.5  # hand-written backward / autograd backward


class Turns(dict):
    """Seconds of each call, by function name, from :func:`timed_in_turns`."""

    def median(self, name: str) -> float:
        return float(np.median(self[name]))

    def ratio(self, a: str, b: str) -> float:
        """Median over turns of time(a) / time(b), both timed in the same turn."""
        return float(np.median(np.array(self[a]) / np.array(self[b])))


def _clock():
    """CPU time when every library runs one thread, wall-clock time otherwise."""
    import torch
    from threadpoolctl import threadpool_info

    one_thread = torch.get_num_threads() == 1 and all(
        pool.get("num_threads") == 1 for pool in threadpool_info())
    return time.process_time if one_thread else time.perf_counter


def timed_in_turns(fns: dict, repeats: int, warmup: int = 1) -> Turns:
    """Call every function once per turn and keep every call's CPU time. Each turn calls
    them in a new order (a seeded shuffle): a call runs slower after one that left the
    caches full of its own T x T output, so neither a fixed order nor a rotation of it,
    where each function always follows the same neighbour, is fair to all."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    clock = _clock()
    names = list(fns)
    order = np.random.default_rng(0)
    times = Turns({name: [] for name in names})
    for turn in range(repeats):
        for name in order.permutation(names):
            start = clock()
            fns[name]()
            times[name].append(clock() - start)
    return times


def _torch_forward(Q, K, V):
    import torch
    import torch.nn.functional as F

    q, k, v = (torch.from_numpy(x) for x in (Q, K, V))

    def run():
        with torch.inference_mode():
            return F.scaled_dot_product_attention(q, k, v)
    return run


def _matmul_numpy(Q, K):
    """S = Q K^T alone into a preallocated array: NumPy's BLAS at attention's size."""
    K_t = np.ascontiguousarray(np.swapaxes(K, -1, -2))
    S = np.matmul(Q, K_t)
    return lambda: np.matmul(Q, K_t, out=S)


def _matmul_torch(Q, K):
    import torch

    q, k_t = torch.from_numpy(Q), torch.from_numpy(np.ascontiguousarray(np.swapaxes(K, -1, -2)))
    S = torch.matmul(q, k_t)

    def run():
        with torch.inference_mode():
            return torch.matmul(q, k_t, out=S)
    return run


def numpy_products(Q, K, V):
    """NumPy's BLAS doing attention's two products alone (Q K^T and A V) into preallocated
    outputs: a floor under any NumPy forward pass of this size."""
    K_t = np.ascontiguousarray(np.swapaxes(K, -1, -2))
    S = np.matmul(Q, K_t)
    O = np.empty_like(Q)
    return lambda: (np.matmul(Q, K_t, out=S), np.matmul(S, V, out=O))


def numpy_stable_softmax_floor(Q, K, V):
    """The least work a max-shifted NumPy forward pass that returns a new O does, with
    nothing else: the output array, and per head the scale c = 1/sqrt(d_k) applied to Q, the
    two products, each row's maximum, the shift, the exponential and the row sums, on
    preallocated work arrays, without checks. No NumPy version that takes the shift (page
    "Numerical stability") can beat this ratio by much: only by the cache effects of blocking."""
    T_q, T_k, d_k = Q.shape[-2], K.shape[-2], Q.shape[-1]
    Q, K, V = (x.reshape((-1,) + x.shape[-2:]) for x in (Q, K, V))
    K_t = np.ascontiguousarray(np.swapaxes(K, -1, -2))
    c = Q.dtype.type(1 / np.sqrt(d_k))
    Qs = np.empty((T_q, d_k), dtype=Q.dtype)
    S = np.empty((T_q, T_k), dtype=Q.dtype)
    m = np.empty((T_q, 1), dtype=Q.dtype)
    ones = np.ones(T_k, dtype=Q.dtype)

    def run():
        O = np.empty_like(Q)  # a forward pass returns a new array (torch's does too)
        for h in range(Q.shape[0]):
            np.multiply(Q[h], c, out=Qs)
            np.matmul(Qs, K_t[h], out=S)
            np.max(S, axis=-1, keepdims=True, out=m)
            np.subtract(S, m, out=S)
            np.exp(S, out=S)
            total = S @ ones
            np.matmul(S, V[h], out=O[h])
            O[h] /= total[:, None]
        return O
    return run


def forward_vs_torch(repeats: int = 5) -> dict:
    heading(f"2. Forward pass: NumPy vs torch SDPA vs matmul (float32, B=1, H={HEADS}, d={D})")
    print("  numpy = blocked_attention(..., need_weights=False): the output O only, which is all"
          " torch's function computes;")
    print("  +A = blocked_attention returning the T x T weights too; plain = the pages'"
          " scaled_dot_product_attention (it returns the weights too);")
    print("  rates in GFLOP/s counting 4 T^2 d flops per head; mm = one (T x d)(d x T) product")
    print(f"  {'T':>5}  {'numpy':>7} {'torch':>7} {'np/torch':>9} {'+A/torch':>9} {'plain/torch':>11}"
          f"  {'mm numpy':>9} {'mm torch':>9}  {'numpy/mm':>8} {'torch/mm':>8}  {'np products/torch':>17}"
          f"  {'np floor/torch':>14}  {'numpy/floor':>12}")
    rows, goals = [], []
    for T in FORWARD_NS:
        # A call at T = 256 takes about 2 ms, where a scheduler hiccup is a large fraction of
        # it: small sizes take more turns (the median of 80 rather than 5), large ones fewer.
        r = repeats * max(1, 4096 // T) if T <= 2048 else max(3, repeats // 2)
        Q, K, V = measure.random_qkv(T, D, HEADS)
        t = timed_in_turns({
            "numpy": lambda: blocked_attention(Q, K, V, need_weights=False),
            "with_weights": lambda: blocked_attention(Q, K, V),
            "plain": lambda: scaled_dot_product_attention(Q, K, V),
            "torch": _torch_forward(Q, K, V),
            "products": numpy_products(Q, K, V),
            "floor": numpy_stable_softmax_floor(Q, K, V),
            "mm_numpy": _matmul_numpy(Q, K),
            "mm_torch": _matmul_torch(Q, K),
        }, r)
        flops = 4 * T * T * D * HEADS  # two products of 2 T^2 d each, per head
        mm_flops = flops / 2  # one product
        # the machine's best matmul rate at this size: the faster library, turn by turn
        mm_best = [min(a, b) for a, b in zip(t["mm_numpy"], t["mm_torch"])]
        t["mm_best"] = mm_best
        row = dict(T=T, numpy_s=t.median("numpy"), numpy_with_weights_s=t.median("with_weights"),
                   plain_s=t.median("plain"), torch_s=t.median("torch"),
                   numpy_gflops=flops / t.median("numpy") / 1e9,
                   torch_gflops=flops / t.median("torch") / 1e9,
                   matmul_numpy_gflops=mm_flops / t.median("mm_numpy") / 1e9,
                   matmul_torch_gflops=mm_flops / t.median("mm_torch") / 1e9,
                   numpy_vs_torch=t.ratio("numpy", "torch"),
                   numpy_with_weights_vs_torch=t.ratio("with_weights", "torch"),
                   plain_vs_torch=t.ratio("plain", "torch"),
                   # (flops / t_attention) / (mm_flops / t_mm) = 2 t_mm / t_attention
                   numpy_vs_matmul=2 / t.ratio("numpy", "mm_best"),
                   torch_vs_matmul=2 / t.ratio("torch", "mm_best"),
                   numpy_products_s=t.median("products"),
                   numpy_products_vs_torch=t.ratio("products", "torch"),
                   numpy_floor_vs_torch=t.ratio("floor", "torch"),
                   numpy_vs_floor=t.ratio("numpy", "floor"))
        rows.append(row)
        print(f"  {T:>5}  {row['numpy_gflops']:7.1f} {row['torch_gflops']:7.1f} {row['numpy_vs_torch']:8.2f}x"
              f" {row['numpy_with_weights_vs_torch']:8.2f}x {row['plain_vs_torch']:10.2f}x"
              f"  {row['matmul_numpy_gflops']:9.1f} {row['matmul_torch_gflops']:9.1f}"
              f"  {row['numpy_vs_matmul']:8.2f} {row['torch_vs_matmul']:8.2f}"
              f"  {row['numpy_products_vs_torch']:16.2f}x  {row['numpy_floor_vs_torch']:13.2f}x"
              f"  {row['numpy_vs_floor']:12.2f}x", flush=True)
        goals += [
            Goal(f"T={T}: blocked_attention time / NumPy floor time", row["numpy_vs_floor"],
                 FLOOR_LIMIT, "<=", "x"),
            Goal(f"T={T}: NumPy rate / matmul rate", row["numpy_vs_matmul"], MATMUL_FRACTION, ">="),
            Goal(f"T={T}: torch rate / matmul rate", row["torch_vs_matmul"], MATMUL_FRACTION, ">="),
        ]
    print("  'np products/torch': NumPy's two BLAS products alone (Q K^T and A V, no softmax, no"
          " allocation) against torch's whole fused pass: the NumPy version cannot beat this ratio;")
    print("  'np floor/torch': those products plus the row maximum, the shift, exp and the row sums,"
          " one head at a time with no checks: what any NumPy pass that shifts by the maximum pays")
    return dict(rows=rows, goals=goals, exp_vs_exp2=exp_vs_exp2())


def exp_vs_exp2(repeats: int = 20) -> dict:
    """Why attention/blocked.py stays in base e: NumPy's float32 exp and exp2 on one block."""
    from attention.blocked import MIN_BLOCK_ROWS

    S = np.random.default_rng(0).standard_normal((MIN_BLOCK_ROWS, 2048), dtype=np.float32) - 4
    out = np.empty_like(S)
    t = timed_in_turns({"exp": lambda: np.exp(S, out=out),
                        "exp2": lambda: np.exp2(S, out=out)}, repeats)
    print(f"  one block of {S.shape[0]} x {S.shape[1]} float32 scores: exp {t.median('exp') * 1e3:.2f} ms,"
          f" exp2 {t.median('exp2') * 1e3:.2f} ms (blocked.py uses exp)", flush=True)
    return dict(shape=list(S.shape), exp_s=t.median("exp"), exp2_s=t.median("exp2"))


def tiled_vs_plain(repeats: int = 3) -> dict:
    heading(f"3. Tiled forward pass vs one that keeps A (float32, B=1, H={TILED_HEADS}, d={D}, "
            f"block_size={TILED_BLOCK})")
    print("  with A = blocked_attention(Q, K, V), the fastest version that holds the T x T weights;")
    print("  peak memory by tracemalloc (every NumPy allocation during the call, output included)")
    print(f"  {'T':>6}  {'with A s':>8} {'tiled s':>8} {'time x':>7}  {'with A peak':>12}"
          f" {'tiled peak':>12} {'memory /':>9}")
    rows = []
    for T in TILED_NS:
        r = repeats if T <= 8192 else max(2, repeats - 1)
        Q, K, V = measure.random_qkv(T, D, TILED_HEADS)
        fns = {"with_weights": lambda: blocked_attention(Q, K, V),
               "tiled": lambda: tiled_attention(Q, K, V, TILED_BLOCK)}
        t = timed_in_turns(fns, r)
        peak = {name: measure.peak_memory(fn) for name, fn in fns.items()}
        row = dict(T=T, plain_s=t.median("with_weights"), tiled_s=t.median("tiled"),
                   plain_peak_bytes=peak["with_weights"], tiled_peak_bytes=peak["tiled"],
                   time_ratio=t.ratio("tiled", "with_weights"),
                   memory_ratio=peak["with_weights"] / max(1, peak["tiled"]))
        rows.append(row)
        print(f"  {T:>6}  {row['plain_s']:8.3f} {row['tiled_s']:8.3f} {row['time_ratio']:6.2f}x"
              f"  {mib(row['plain_peak_bytes']):>12} {mib(row['tiled_peak_bytes']):>12}"
              f" {row['memory_ratio']:8.1f}x", flush=True)
    last = rows[-1]
    goals = [
        Goal(f"T={last['T']}: peak with A / tiled peak", last["memory_ratio"], MEMORY_RATIO, ">=", "x"),
        Goal(f"T={last['T']}: tiled time / time with A", last["time_ratio"], TILED_TIME_RATIO, "<=", "x"),
    ]
    return dict(block_size=TILED_BLOCK, heads=TILED_HEADS, rows=rows, goals=goals)


def backward_cost(T: int, repeats: int) -> dict:
    """Backward against forward pass, NumPy (blocked and plain) and torch autograd, in seconds.

    Each backward pass starts from what its forward pass kept, as in training: the NumPy
    ones from the O and A that their forward pass returned, autograd from the tensors the
    built-in saved (the graph is kept, so each call is the backward pass alone).
    """
    import torch
    import torch.nn.functional as F

    from attention import torch as attention_torch

    Q, K, V = measure.random_qkv(T, D, HEADS)
    dO = np.random.default_rng(1).standard_normal(Q.shape, dtype=np.float32)
    O, A = blocked_attention(Q, K, V)
    q, k, v = (torch.from_numpy(x.copy()).requires_grad_(True) for x in (Q, K, V))
    do = torch.from_numpy(dO)
    o_builtin = F.scaled_dot_product_attention(q, k, v)
    o_math = attention_torch.scaled_dot_product_attention(q, k, v)
    t = timed_in_turns({
        "numpy_forward": lambda: blocked_attention(Q, K, V),
        "numpy_backward": lambda: blocked_attention_backward(Q, K, V, dO, O=O, A=A),
        "numpy_backward_recompute": lambda: blocked_attention_backward(Q, K, V, dO),
        "plain_backward": lambda: attention_backward(Q, K, V, dO, O=O, A=A),
        "torch_forward": lambda: F.scaled_dot_product_attention(q, k, v),
        "torch_backward": lambda: torch.autograd.grad(o_builtin, (q, k, v), do, retain_graph=True),
        "torch_math_forward": lambda: attention_torch.scaled_dot_product_attention(q, k, v),
        "torch_math_backward": lambda: torch.autograd.grad(o_math, (q, k, v), do, retain_graph=True),
    }, repeats)
    return dict(T=T, d=D, heads=HEADS, **{name: t.median(name) for name in t},
                numpy_ratio=t.ratio("numpy_backward", "numpy_forward"),
                torch_ratio=t.ratio("torch_backward", "torch_forward"),
                torch_math_ratio=t.ratio("torch_math_backward", "torch_math_forward"),
                numpy_vs_autograd=t.ratio("numpy_backward", "torch_backward"),
                numpy_recompute_vs_autograd=t.ratio("numpy_backward_recompute", "torch_backward"),
                plain_vs_autograd=t.ratio("plain_backward", "torch_backward"))


def backward(repeats: int = 3) -> dict:
    heading(f"4. Backward pass: hand-written (NumPy) vs autograd, vs 2x forward (H={HEADS}, d={D})")
    print("  each backward pass starts from what its forward pass kept, as in training:")
    print("  np bwd = blocked_attention_backward(..., O=O, A=A), np fwd = blocked_attention;")
    print("  np recompute = the same backward without O and A; plain = attention_backward(..., O=O, A=A);")
    print("  t bwd = autograd.grad of the built-in SDPA; torch math = autograd through the readable"
          " attention.torch version (unfused)")
    print(f"  {'T':>5}  {'np fwd':>7} {'np bwd':>7} {'bwd/fwd':>7}  {'t fwd':>7} {'t bwd':>7} {'bwd/fwd':>7}"
          f"  {'math bwd/fwd':>12}  {'np bwd / t bwd':>14} {'np recompute / t bwd':>20}"
          f" {'plain / t bwd':>13}")
    rows, goals = [], []
    for T in BACKWARD_NS:
        c = backward_cost(T, repeats)
        rows.append(c)
        print(f"  {T:>5}  {c['numpy_forward']:7.3f} {c['numpy_backward']:7.3f} {c['numpy_ratio']:7.2f}"
              f"  {c['torch_forward']:7.3f} {c['torch_backward']:7.3f} {c['torch_ratio']:7.2f}"
              f"  {c['torch_math_ratio']:12.2f}  {c['numpy_vs_autograd']:13.2f}x"
              f" {c['numpy_recompute_vs_autograd']:19.2f}x {c['plain_vs_autograd']:12.2f}x", flush=True)
        goals.append(Goal(f"T={T}: hand-written backward / autograd backward", c["numpy_vs_autograd"],
                          BACKWARD_VS_AUTOGRAD, "<=", "x"))
    print("  the flop count says 2x the forward pass (four matrix products against two); the"
          " 'bwd/fwd' columns are measured times, which also pay for the elementwise passes")
    return dict(rows=rows, goals=goals)
