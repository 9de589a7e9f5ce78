"""Soft retrieval: every number the prose quotes, recomputed independently."""

from __future__ import annotations

import math
import re
import runpy
import shutil
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attention
from attention import checkers, measure
from attention.checkers import (
    check_attention_with_temperature,
    check_scaled_score_moments,
    check_softmax_jacobian,
)
from tests.glue import executed_notebook, glued, glued_number
from tests.harness import HTML, ROOT
from tests.pages._common import (
    CHAPTERS,
    g,
    g_bool,
    g_text,
    page_cell,
    softmax_rows,
    solution_namespace,
    torch_softmax_attention,
)


# --- page 1: soft retrieval ------------------------------------------------------------

def test_worked_example_weights_match_the_hand_calculation():
    gap = 0.5 * (3.0 - 0.1)  # c (q_2 - q_1) with c = 1/sqrt(4)
    a2 = 1.0 / (1.0 + 2.0 * math.exp(-gap))
    a1 = math.exp(-gap) / (1.0 + 2.0 * math.exp(-gap))
    assert g("soft-retrieval", "ex_a2") == pytest.approx(a2, rel=1e-12)
    assert g("soft-retrieval", "ex_a1") == pytest.approx(a1, rel=1e-12)
    assert g("soft-retrieval", "ex_a3") == pytest.approx(a1, rel=1e-12)
    assert g("soft-retrieval", "ex_e145") == pytest.approx(math.exp(-1.45), rel=1e-12)
    # the brief's rounded figures
    assert round(a2, 3) == 0.681 and round(a1, 2) == 0.16


def test_worked_example_output_is_20_20_by_symmetry():
    assert g("soft-retrieval", "ex_o1") == pytest.approx(20.0, abs=1e-12)
    assert g("soft-retrieval", "ex_o2") == pytest.approx(20.0, abs=1e-12)


def test_sharpened_query_gives_hard_retrieval_in_the_limit():
    gap = 0.5 * (30.0 - 0.1)
    assert g("soft-retrieval", "ex_sharp_a2") == pytest.approx(1.0 / (1.0 + 2.0 * math.exp(-gap)), rel=1e-12)
    assert g("soft-retrieval", "ex_sharp_a1") == pytest.approx(math.exp(-gap) / (1.0 + 2.0 * math.exp(-gap)), rel=1e-9)
    assert g("soft-retrieval", "ex_sharp_a2") > 0.9999


@pytest.mark.parametrize("name, tau", [("tau_cold_a2", 0.05), ("tau_hot_a2", 50.0)])
def test_temperature_limits_on_the_worked_example(name, tau):
    s = np.array([0.1, 3.0, 0.1]) / (tau * 2.0)
    assert g("soft-retrieval", name) == pytest.approx(softmax_rows(s)[1], rel=1e-12)


def test_cold_temperature_is_nearly_one_hot_and_hot_is_nearly_uniform():
    assert g("soft-retrieval", "tau_cold_a2") > 0.999
    assert abs(g("soft-retrieval", "tau_hot_a2") - 1 / 3) < 0.01
