"""What every checker shares: running a case safely, comparing arrays, printing the report."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

_RNG_SEED = 2017


def _report(results: list[tuple[str, bool, str]], verbose: bool) -> bool:
    if verbose:
        for name, ok, detail in results:
            print(f"{'✓' if ok else '✗'} {name}" + ("" if ok else f": {detail}"))
        n_ok = sum(ok for _, ok, _ in results)
        print(f"{n_ok} of {len(results)} checks passed.")
    return all(ok for _, ok, _ in results)


def _run(name: str, case: Callable[[], tuple[bool, str]]) -> tuple[str, bool, str]:
    try:
        ok, detail = case()
    except Exception as exc:  # the reader's code failed: report it, do not crash
        return name, False, f"raised {type(exc).__name__}: {exc}"
    return name, bool(ok), detail


def _close(got: Any, want: np.ndarray, what: str, atol: float = 1e-8) -> tuple[bool, str]:
    """Compare an attempt's array with the reference; the message names what went wrong."""
    if got is None:
        return False, f"{what} is None: return an array of shape {want.shape}"
    got = np.asarray(got, dtype=np.float64)
    if got.shape != want.shape:
        return False, f"{what} has shape {got.shape}, expected {want.shape}"
    if np.isnan(got).any() and not np.isnan(want).any():
        return False, (f"{what} contains NaN where the reference has none: usually exp() of a "
                       f"score that overflowed (inf / inf), or a row whose every score is -inf "
                       f"(-inf - (-inf))")
    if np.isinf(got).any() and not np.isinf(want).any():
        return False, f"{what} contains inf where the reference is finite: an overflow"
    err = float(np.abs(got - want).max(initial=0.0))
    return err <= atol, f"{what} differs from the reference by up to {err:.3g}"


def _qkv(rng, T_q=4, T_k=5, d_k=3, d_v=2, batch=()):
    return (rng.standard_normal(batch + (T_q, d_k)), rng.standard_normal(batch + (T_k, d_k)),
            rng.standard_normal(batch + (T_k, d_v)))
