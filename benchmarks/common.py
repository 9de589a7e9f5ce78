"""Shared pieces of the benchmarks: goals, printing, the machine (load, versions, BLAS,
threads, CPU) and its matrix-product rate, the ceiling the kernels are judged against."""

from __future__ import annotations

import os
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from attention import measure

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Goal:
    """A goal a figure is judged by: ``measured`` must be ``<=`` (or ``>=``) ``limit``."""

    name: str
    measured: float
    limit: float
    direction: str  # "<=" or ">="
    unit: str = ""
    detail: str = ""

    @property
    def met(self) -> bool:
        return self.measured <= self.limit if self.direction == "<=" else self.measured >= self.limit

    def line(self) -> str:
        verdict = "met   " if self.met else "MISSED"
        text = f"  [{verdict}] {self.name}: {self.measured:.3g}{self.unit} (goal {self.direction} {self.limit:g}{self.unit})"
        return text + (f"  {self.detail}" if self.detail else "")

    def record(self) -> dict:
        return dict(asdict(self), met=self.met)


def heading(text: str) -> None:
    print(f"\n== {text} " + "=" * max(0, 86 - len(text)), flush=True)


def load_average() -> tuple[float, float, float]:
    """The 1, 5 and 15-minute load averages: on a busy machine every time is slower."""
    try:
        return os.getloadavg()
    except OSError:
        return (float("nan"),) * 3


class Stopwatch:
    """``with Stopwatch() as w: ...`` then ``w.seconds``."""

    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start
        return False


def mib(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:,.1f} MiB"


# --- the machine -----------------------------------------------------------------------

def library_versions() -> dict:
    """Versions and thread counts that the figures depend on (printed beside the figures)."""
    from threadpoolctl import threadpool_info

    info = dict(python=platform.python_version(), numpy=np.__version__,
                cpu_count=os.cpu_count(), machine=platform.machine(), processor=cpu_model())
    try:
        import torch
        info.update(torch=torch.__version__, torch_threads=torch.get_num_threads())
    except ImportError:
        info.update(torch=None)
    blas = [pool for pool in threadpool_info() if pool.get("user_api") == "blas"]
    if blas:  # NumPy's own BLAS is loaded first
        info.update(blas=blas[0].get("internal_api"), blas_version=blas[0].get("version"),
                    blas_threads=blas[0].get("num_threads"), blas_core=blas[0].get("architecture"))
    return info


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def matmul_rate(T: int, d: int = 64, heads: int = 8, batch: int = 1, backend: str = "numpy",
                repeats: int = 5, seed: int = 0) -> float:
    """The machine's matrix-product throughput in flop/s at attention's size.

    Times the batched float32 product (batch, heads, T, d) @ (batch, heads, d, T), i.e.
    S = Q K^T alone, which is 2 T^2 d flops per head, with NumPy (``backend="numpy"``) or
    torch (``"torch"``). An attention pass doing 4 T^2 d flops at half this rate or better
    spends at most half its time outside its two matrix products.
    """
    Q, K, _ = measure.random_qkv(T, d, heads, batch, seed)
    K_t = np.ascontiguousarray(np.swapaxes(K, -1, -2))
    if backend == "numpy":
        out = np.empty((batch, heads, T, T), dtype=np.float32)
        seconds = measure.median_time(lambda: np.matmul(Q, K_t, out=out), repeats)
    elif backend == "torch":
        import torch
        q, k_t = torch.from_numpy(Q), torch.from_numpy(K_t)
        out = torch.empty((batch, heads, T, T), dtype=torch.float32)
        with torch.inference_mode():
            seconds = measure.median_time(lambda: torch.matmul(q, k_t, out=out), repeats)
    else:
        raise ValueError(f"backend must be 'numpy' or 'torch', got {backend!r}")
    return 2 * T * T * d * heads * batch / seconds
