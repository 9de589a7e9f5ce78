"""Shared pieces of the benchmarks: goals, printing, the machine (load, versions, BLAS,
threads, CPU)."""

from __future__ import annotations

import os
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

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
