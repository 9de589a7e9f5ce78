"""Shared pieces of the benchmarks: goals, printing, and the machine's load."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

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
