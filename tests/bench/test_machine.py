"""The benchmarks' description of the machine (benchmarks/common.py): versions, BLAS threads,
and the matrix-product rate the kernels are judged against."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from tests.harness import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import common  # noqa: E402  (benchmarks/common.py: the benchmarks import it by this name)

from attention import measure  # noqa: E402


def test_matmul_rate_is_a_positive_flop_rate():
    assert common.matmul_rate(T=64, d=16, heads=2, repeats=2) > 1e6


def test_matmul_rate_refuses_an_unknown_backend():
    with pytest.raises(ValueError, match="backend"):
        common.matmul_rate(T=8, d=4, heads=1, backend="jax")


def test_library_versions_name_numpy_torch_and_the_blas():
    info = common.library_versions()
    assert info["numpy"] == np.__version__ and "torch" in info
    assert info["blas_threads"] >= 1


def test_library_versions_see_the_thread_count_measure_threads_sets():
    with measure.threads(1):
        info = common.library_versions()
        assert info["blas_threads"] == 1 and info["torch_threads"] == 1
