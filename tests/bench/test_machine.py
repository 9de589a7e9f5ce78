"""The benchmarks' description of the machine (benchmarks/common.py): versions and BLAS threads."""

from __future__ import annotations

import sys

import numpy as np

from tests.harness import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import common  # noqa: E402  (benchmarks/common.py: the benchmarks import it by this name)

from attention import measure  # noqa: E402


def test_library_versions_name_numpy_torch_and_the_blas():
    info = common.library_versions()
    assert info["numpy"] == np.__version__ and "torch" in info
    assert info["blas_threads"] >= 1


def test_library_versions_see_the_thread_count_measure_threads_sets():
    with measure.threads(1):
        info = common.library_versions()
        assert info["blas_threads"] == 1 and info["torch_threads"] == 1
