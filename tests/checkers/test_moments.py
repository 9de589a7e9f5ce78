"""The checker of the exercise ``ex-score-moments`` (the moments of a correlated score whose
entries have fourth moment ``kurtosis``): it accepts the right answer and rejects each plausible
wrong attempt with a message that names the mistake."""

from __future__ import annotations

import math

import pytest

import attention
from attention import checkers


def right(d_k, rho, kurtosis=3.0):
    return rho * math.sqrt(d_k), 1 + rho**2 * (kurtosis - 2)


def var(d_k, rho, kurtosis=3.0):
    return right(d_k, rho, kurtosis)[1]


def mean(d_k, rho, kurtosis=3.0):
    return right(d_k, rho, kurtosis)[0]


# (wrong attempt, a word its message must contain)
WRONG = [
    # the mean
    (lambda d_k, rho, kurtosis: (abs(rho) * math.sqrt(d_k), var(d_k, rho, kurtosis)), "sign"),
    (lambda d_k, rho, kurtosis: (rho * d_k, var(d_k, rho, kurtosis)), "not divided by sqrt(d_k)"),
    (lambda d_k, rho, kurtosis: (rho, var(d_k, rho, kurtosis)), "instead of sqrt(d_k)"),
    (lambda d_k, rho, kurtosis: (rho**2 * math.sqrt(d_k), var(d_k, rho, kurtosis)), "linear in rho"),
    (lambda d_k, rho, kurtosis: (0.0, var(d_k, rho, kurtosis)), "zero only when rho = 0"),
    # the variance
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1.0), "forgot the rho^2 term"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho), "not squared"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho * (kurtosis - 2)), "not squared"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), float(d_k)), "unscaled"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), d_k * var(d_k, rho, kurtosis)), "unscaled"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), math.sqrt(d_k) * var(d_k, rho, kurtosis)),
     "instead of d_k"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), math.sqrt(var(d_k, rho, kurtosis))), "standard deviation"),
    # the fourth moment
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2), "normal entries only"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2 * (kurtosis - 1)), "one rho^2 too many"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2 * kurtosis), "two rho^2 too many"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2 * (kurtosis - 3)), "excess kurtosis"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), rho**2 * (kurtosis - 1)), "noise term is missing"),
    # the pair itself
    (lambda d_k, rho, kurtosis: right(d_k, rho, kurtosis)[::-1], "swapped"),
    (lambda d_k, rho: right(d_k, rho), "three arguments"),
    (lambda d_k, rho, kurtosis: None, "returned None"),
    (lambda d_k, rho, kurtosis: mean(d_k, rho), "pair"),
    (lambda d_k, rho, kurtosis: (float("nan"), 1.0), "finite"),
]


@pytest.mark.parametrize("attempt, word", WRONG)
def test_each_plausible_wrong_attempt_is_rejected_with_a_message_that_names_it(attempt, word, capsys):
    assert checkers.check_scaled_score_moments(attempt) is False
    out = capsys.readouterr().out
    assert word in out, out


def test_the_right_formula_passes_every_check(capsys):
    assert checkers.check_scaled_score_moments(right) is True
    assert "6 of 6 checks passed." in capsys.readouterr().out
    assert checkers.check_scaled_score_moments(attention.score_moments, verbose=False) is True


def test_an_attempt_that_is_right_for_normal_entries_passes_those_checks_only(capsys):
    checkers.check_scaled_score_moments(lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2))
    out = capsys.readouterr().out
    assert "✓ variance for normal entries (kurtosis 3)" in out
    assert "✗ variance for other entries" in out and "✗ agrees with 40,000 sampled scores" in out


def test_a_formula_the_samples_refute_fails_the_sampling_checks_with_the_measured_values(capsys):
    checkers.check_scaled_score_moments(lambda d_k, rho, kurtosis: (mean(d_k, rho), 1.5))
    out = capsys.readouterr().out
    assert out.count("sampled scores: mean") == 2 and "one standard error" in out
