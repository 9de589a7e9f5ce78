"""Figures 2-4: the NumPy attention against torch, the tiled version against the plain one,
and the backward pass against the forward pass and against autograd.

Every figure comes from attention.measure, the module the book's cost sections use, so the
text and the benchmark agree.
"""

from __future__ import annotations

import numpy as np

from attention import measure

from common import Goal, heading, mib

FORWARD_NS = (256, 512, 1024, 2048, 4096)
TILED_NS = (1024, 2048, 4096, 8192, 16384)
BACKWARD_NS = (1024, 2048)
HEADS, D = 8, 64
TILED_HEADS = 1
TILED_BLOCK = 512

NUMPY_VS_TORCH_LIMIT = 1.5  # NumPy time / torch time
MATMUL_FRACTION = 0.5  # attention flop rate / matmul flop rate
MEMORY_RATIO = 16.0  # plain peak / tiled peak at the longest T
TILED_TIME_RATIO = 1.5  # tiled time / plain time at the longest T
BACKWARD_VS_AUTOGRAD = 1.5  # hand-written backward / autograd backward


def numpy_products_seconds(T: int, repeats: int) -> float:
    """Seconds NumPy's BLAS needs for attention's two products alone (Q K^T and A V),
    into preallocated outputs: a floor under any NumPy forward pass of this size."""
    Q, K, V = measure.random_qkv(T, D, HEADS)
    K_t = np.ascontiguousarray(np.swapaxes(K, -1, -2))
    S = np.matmul(Q, K_t)
    O = np.empty_like(Q)
    return measure.median_time(lambda: (np.matmul(Q, K_t, out=S), np.matmul(S, V, out=O)), repeats)


def forward_vs_torch(repeats: int = 5) -> dict:
    heading(f"2. Forward pass: NumPy vs torch SDPA vs matmul (float32, B=1, H={HEADS}, d={D})")
    print("  numpy = scaled_dot_product_attention(..., need_weights=False): the output O only, which"
          " is all torch's function computes;")
    print("  +A = the same call returning the T x T weights too (the book's default), for comparison;"
          " rates in GFLOP/s counting 4 T^2 d flops per head; mm = one (T x d)(d x T) product")
    print(f"  {'T':>5}  {'numpy':>7} {'torch':>7} {'np/torch':>9} {'+A/torch':>9}  {'mm numpy':>9} {'mm torch':>9}"
          f"  {'numpy/mm':>8} {'torch/mm':>8}  {'np products/torch':>17}")
    rows, goals = [], []
    for T in FORWARD_NS:
        r = repeats if T <= 2048 else max(3, repeats // 2)
        numpy_rec, weights_rec, torch_rec = measure.attention_cost(
            [T], d=D, heads=HEADS, repeats=r, impls=("numpy_no_weights", "numpy", "torch"), memory=False)
        mm_numpy = measure.matmul_rate(T, D, HEADS, repeats=r)
        mm_torch = measure.matmul_rate(T, D, HEADS, backend="torch", repeats=r)
        mm = max(mm_numpy, mm_torch)  # the machine's best measured matmul rate at this size
        products = numpy_products_seconds(T, r)
        row = dict(T=T, numpy_s=numpy_rec["seconds"], numpy_with_weights_s=weights_rec["seconds"],
                   torch_s=torch_rec["seconds"],
                   numpy_gflops=numpy_rec["gflops"], torch_gflops=torch_rec["gflops"],
                   matmul_numpy_gflops=mm_numpy / 1e9, matmul_torch_gflops=mm_torch / 1e9,
                   numpy_vs_torch=numpy_rec["seconds"] / torch_rec["seconds"],
                   numpy_with_weights_vs_torch=weights_rec["seconds"] / torch_rec["seconds"],
                   numpy_vs_matmul=numpy_rec["gflops"] * 1e9 / mm,
                   torch_vs_matmul=torch_rec["gflops"] * 1e9 / mm,
                   numpy_products_s=products,
                   numpy_products_vs_torch=products / torch_rec["seconds"])
        rows.append(row)
        print(f"  {T:>5}  {row['numpy_gflops']:7.1f} {row['torch_gflops']:7.1f} {row['numpy_vs_torch']:8.2f}x"
              f" {row['numpy_with_weights_vs_torch']:8.2f}x"
              f"  {row['matmul_numpy_gflops']:9.1f} {row['matmul_torch_gflops']:9.1f}"
              f"  {row['numpy_vs_matmul']:8.2f} {row['torch_vs_matmul']:8.2f}"
              f"  {row['numpy_products_vs_torch']:16.2f}x", flush=True)
        goals += [
            Goal(f"T={T}: NumPy time / torch time", row["numpy_vs_torch"], NUMPY_VS_TORCH_LIMIT, "<=", "x"),
            Goal(f"T={T}: NumPy rate / matmul rate", row["numpy_vs_matmul"], MATMUL_FRACTION, ">="),
            Goal(f"T={T}: torch rate / matmul rate", row["torch_vs_matmul"], MATMUL_FRACTION, ">="),
        ]
    print("  'np products/torch': NumPy's two BLAS products alone (Q K^T and A V, no softmax, no"
          " allocation) against torch's whole fused pass: the NumPy version cannot beat this ratio")
    return dict(rows=rows, goals=goals)


def tiled_vs_plain(repeats: int = 3) -> dict:
    heading(f"3. Tiled vs plain forward pass (float32, B=1, H={TILED_HEADS}, d={D}, "
            f"block_size={TILED_BLOCK})")
    print("  peak memory by tracemalloc (every NumPy allocation during the call, output included)")
    print(f"  {'T':>6}  {'plain s':>8} {'tiled s':>8} {'time x':>7}  {'plain peak':>12} {'tiled peak':>12} {'memory /':>9}")
    rows = []
    for T in TILED_NS:
        r = repeats if T <= 8192 else max(2, repeats - 1)
        plain, tiled = measure.attention_cost([T], d=D, heads=TILED_HEADS, block_size=TILED_BLOCK,
                                              repeats=r, impls=("numpy", "tiled"))
        row = dict(T=T, plain_s=plain["seconds"], tiled_s=tiled["seconds"],
                   plain_peak_bytes=plain["peak_bytes"], tiled_peak_bytes=tiled["peak_bytes"],
                   time_ratio=tiled["seconds"] / plain["seconds"],
                   memory_ratio=plain["peak_bytes"] / max(1, tiled["peak_bytes"]))
        rows.append(row)
        print(f"  {T:>6}  {row['plain_s']:8.3f} {row['tiled_s']:8.3f} {row['time_ratio']:6.2f}x"
              f"  {mib(row['plain_peak_bytes']):>12} {mib(row['tiled_peak_bytes']):>12}"
              f" {row['memory_ratio']:8.1f}x", flush=True)
    last = rows[-1]
    goals = [
        Goal(f"T={last['T']}: plain peak / tiled peak", last["memory_ratio"], MEMORY_RATIO, ">=", "x"),
        Goal(f"T={last['T']}: tiled time / plain time", last["time_ratio"], TILED_TIME_RATIO, "<=", "x"),
    ]
    return dict(block_size=TILED_BLOCK, heads=TILED_HEADS, rows=rows, goals=goals)


def backward(repeats: int = 3) -> dict:
    heading(f"4. Backward pass: hand-written (NumPy) vs autograd, vs 2x forward (H={HEADS}, d={D})")
    print("  each backward pass starts from what its forward pass kept, as in training:")
    print("  np bwd = attention_backward(..., O=O, A=A); np recompute = the same without O and A;")
    print("  t bwd = autograd.grad of the built-in SDPA; torch math = autograd through the readable"
          " attention.torch version (unfused)")
    print(f"  {'T':>5}  {'np fwd':>7} {'np bwd':>7} {'bwd/fwd':>7}  {'t fwd':>7} {'t bwd':>7} {'bwd/fwd':>7}"
          f"  {'math bwd/fwd':>12}  {'np bwd / t bwd':>14} {'np recompute / t bwd':>20}")
    rows, goals = [], []
    for T in BACKWARD_NS:
        c = measure.backward_cost(T, D, HEADS, repeats=repeats)
        rows.append(c)
        print(f"  {T:>5}  {c['numpy_forward']:7.3f} {c['numpy_backward']:7.3f} {c['numpy_ratio']:7.2f}"
              f"  {c['torch_forward']:7.3f} {c['torch_backward']:7.3f} {c['torch_ratio']:7.2f}"
              f"  {c['torch_math_ratio']:12.2f}  {c['numpy_vs_autograd']:13.2f}x"
              f" {c['numpy_recompute_vs_autograd']:19.2f}x", flush=True)
        goals.append(Goal(f"T={T}: hand-written backward / autograd backward", c["numpy_vs_autograd"],
                          BACKWARD_VS_AUTOGRAD, "<=", "x"))
    print("  rule of thumb: the gradients cost about 2x the forward pass (four matrix products"
          " against two); compare the NumPy 'bwd/fwd' column with 2")
    return dict(rows=rows, goals=goals)
