"""The checker of the exercise ``ex-score-moments`` (the moments of a correlated score whose
entries have fourth moment ``kurtosis``): it accepts the right answer and rejects each plausible
wrong attempt with a message that names the mistake."""

from __future__ import annotations

import cmath
import decimal
import math

import numpy as np
import pytest

import attention
from attention import checkers
from tests.checkers.conftest import run_once


def right(d_k, rho, kurtosis=3.0):
    return rho * math.sqrt(d_k), 1 + rho**2 * (kurtosis - 2)


def var(d_k, rho, kurtosis=3.0):
    return right(d_k, rho, kurtosis)[1]


def mean(d_k, rho, kurtosis=3.0):
    return right(d_k, rho, kurtosis)[0]


def sampled(d_k, rho, kurtosis=3.0, n=4_000, seed=None):
    """A Monte Carlo estimate with normal entries (whatever the kurtosis), as a reader might
    try: n scores q.(rho q + sqrt(1 - rho^2) z) / sqrt(d_k), each drawn as its two parts
    (|q|^2 is chi-square with d_k degrees of freedom, and q.z given q is normal with
    variance |q|^2: the same scores as from n x d_k entries, quick at d_k = 4096)."""
    rng = np.random.default_rng(seed)
    q2 = rng.chisquare(d_k, n)  # |q|^2
    qz = np.sqrt(q2) * rng.standard_normal(n)  # q.z
    s = (rho * q2 + math.sqrt(1 - rho**2) * qz) / math.sqrt(d_k)
    return float(s.mean()), float(s.var())


def sampled_with_the_kurtosis(d_k, rho, kurtosis=3.0, n=4_000):
    """A seeded estimate whose entries have the asked fourth moment: a symmetric three-point
    distribution, 0 with probability 1 - 1/kurtosis, +-sqrt(kurtosis) otherwise (mean 0,
    variance 1, E[x^4] = kurtosis). Drawn as counts, the same scores as from the entries:
    |q|^2 is kurtosis times the number of nonzero q_m, and q.z a sum of +-kurtosis, one
    per m where q_m and z_m are both nonzero."""
    rng = np.random.default_rng(0)
    p = 1 / kurtosis
    nonzero_q = rng.binomial(d_k, p, n)
    both = rng.binomial(nonzero_q, p)
    q2 = kurtosis * nonzero_q
    qz = kurtosis * (2 * rng.binomial(both, 0.5) - both)
    s = (rho * q2 + math.sqrt(1 - rho**2) * qz) / math.sqrt(d_k)
    return float(s.mean()), float(s.var())


def second_moment_form(d_k, rho, kurtosis=3.0, dtype=np.float64):
    """The variance as E[s^2] - (E s)^2, computed in ``dtype``: right in float64 while
    rho^2 d_k is small (to about 1e-15 where the variance is 0 at the widths up to 256),
    cancelled in float32, and in float64 too at d_k = 1e15 (0.125 for 0 at rho = 1)."""
    f = dtype
    m = f(rho) * np.sqrt(f(d_k))
    second = f(1) + f(rho) ** 2 * (f(kurtosis) - f(2)) + f(rho) ** 2 * f(d_k)
    return float(m), float(second - m * m)


# (wrong attempt, a word its message must contain)
def _in_a_thread(f, *args):
    import threading

    out = {}

    def run():
        try:
            out["r"] = f(*args)
        except Exception:  # noqa: BLE001 - the library refuses a swapped call: None
            pass

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return out.get("r")


def _half(x):
    """x rounded to float16 (inf past 65504), as a Python float."""
    with np.errstate(over="ignore"):
        return float(np.float16(x))


#: The float64 cancellation's name (st15b: E[s^2] - (E s)^2 in float64 passed).
CANCELLED = ("E[s^2] - (E s)^2? Subtracting two numbers near rho^2 d_k loses about as "
             "many digits as rho^2 d_k has before the decimal point")
def formula_in_float32(d_k, rho, kurtosis=3.0):
    # st16b: np.float32 throughout: 1 - rho^2 cancels near rho = +-1
    r, k = np.float32(rho), np.float32(kurtosis)
    return r * np.sqrt(np.float32(d_k)), np.float32(1) + r * r * (k - np.float32(2))


def formula_in_torchs_default_dtype(d_k, rho, kurtosis=3.0):
    # st16b: torch.tensor(rho) is float32 by default
    import torch

    r, k = torch.tensor(rho), torch.tensor(kurtosis)
    return r * math.sqrt(d_k), 1 + r**2 * (k - 2)


def rho_squared_in_float32(d_k, rho, kurtosis=3.0):
    # st16b: rho^2 rounded to float32, the rest in float64
    r2 = float(np.float32(rho) ** 2)
    return rho * math.sqrt(d_k), 1 + r2 * (kurtosis - 2)


#: The float32 formula's name (st16b: it passed, no probe lay near rho = +-1 at a
#: kurtosis near 1).
FLOAT32_LOSES = "float32 loses the digits of 1 - rho^2"
def normal_formula_between(lo, hi):
    """st17b: the normal entries' formula for lo < d_k < hi only ("wide heads are
    normal"), wrong only between widths probed before."""
    def attempt(d_k, rho, kurtosis=3.0):
        return (mean(d_k, rho), 1 + rho**2) if lo < d_k < hi else right(d_k, rho, kurtosis)
    attempt.__name__ = f"normal_formula_between_{lo}_and_{hi}"
    return attempt


#: Bands of widths that held no probe before st17b, and each one's message.
BANDS = [((300, 1000), "wrong at others (d_k = 316, 512, 562) with the same rho and "
          "kurtosis: is a width treated apart?"),
         ((400, 900), "wrong at others (d_k = 512, 562) with the same rho and kurtosis"),
         ((5000, 8000), "wrong at others (d_k = 5623) with the same rho and kurtosis"),
         ((9000, 10**6), "wrong at others (d_k = 10000, 16384, 17783, ..., 524288, "
          "562341: 14 widths)"),
         ((10**6 + 4, 10**9), "wrong at others (d_k = 1048576, 1778279, 3162278, ..., "
          "316227766, 562341325: 12 widths)"),
         ((10**9 + 8, 10**12), "and wrong at others (d_k = 1778279410, 3162277660, "
          "5623413252"),
         ((10**12 + 1, 10**15), "and wrong at others (d_k = 1778279410039, "
          "3162277660168, 5623413251903")]


def _band(what, lo, hi, factor=1.01, of=None):
    """st18b: right except where ``of(d_k, rho, kurtosis)`` lies between lo and hi
    (|rho| by default), where the mean (what = 0) or variance (1) is ``factor`` off."""
    of = of or (lambda d_k, rho, kurtosis: abs(rho))

    def attempt(d_k, rho, kurtosis=3.0):
        pair = list(right(d_k, rho, kurtosis))
        if lo < of(d_k, rho, kurtosis) < hi:
            pair[what] *= factor
        return tuple(pair)
    return attempt


def _kurtosis(d_k, rho, kurtosis):
    return kurtosis


WRONG = [
    # found by the student round st18b: wrong only on a band of rho, of the kurtosis or
    # of tiny rho that no fixed probe hit (each passed 30 calls of 30, or nearly)
    (lambda d_k, rho, kurtosis=3.0: (mean(d_k, rho), 1 + rho**2)
     if 0.8 < abs(rho) < 0.99 else right(d_k, rho, kurtosis),
     "right at most settings, but wrong at |rho| from 0.85 to 0.98 (at some of them), "
     "and there 1 + rho^2 is the answer for normal entries only"),
    (_band(1, 0.55, 0.75), "within 1% of the formula wherever it differs"),
    (_band(1, 0.8, 0.99), "within 1% of the formula wherever it differs"),
    (_band(0, 0.55, 0.75), "within 1% of the formula wherever it differs"),
    (_band(1, 10, 20, of=_kurtosis), "variance at d_k = 3, rho = -0.8, kurtosis = "
     "17.78: got 11.2102, expected 11.0992"),
    (_band(1, 1e8, 1e12, of=_kurtosis), "your variance is the formula at another "
     "kurtosis than the one given (kurtosis 1.778e8 as 1.79578e+08"),
    (lambda d_k, rho, kurtosis=3.0: (mean(d_k, rho), 1.0 if abs(rho) < 5e-10
                                     else var(d_k, rho, kurtosis)),
     "right at rho = 0 and for |rho| >= 1e-09, but wrong for small |rho| (|rho| = "
     "5e-13, 9e-13, 1e-12, 1e-10): the formula holds for every rho, however small"),
    (lambda d_k, rho, kurtosis=3.0: (0.0 if abs(rho) < 1e-9 else mean(d_k, rho),
                                     var(d_k, rho, kurtosis)),
     "right at rho = 0 and for |rho| >= 1e-09, but wrong for small |rho| (|rho| = "
     "5e-13, 9e-13, 1e-12, 1e-10): the formula holds for every rho, however small; an approximation "
     "for small |rho| is not the exact mean"),
    # found by the student round st17b: right except for widths between the ones
    # probed (300 < d_k < 1000 passed), caught by the fixed probes alone
    *((normal_formula_between(*band), word) for band, word in BANDS),
    # the kurtosis clipped at 1e16 (was told "small |rho|": at 1e20 only tiny rhos were
    # probed), the answers rounded to 6 decimals (was told float32) and the variance
    # to 8 (passed)
    (lambda d_k, rho, kurtosis: right(d_k, rho, min(kurtosis, 1e16)),
     "(kurtosis 1e20 as 1e+16): the kurtosis was clipped (above 1e+16 it becomes the "
     "bound"),
    (lambda d_k, rho, kurtosis: tuple(round(x, 6) for x in right(d_k, rho, kurtosis)),
     "your answer here is the formula's rounded to 6 decimals: near "
     "rho = +-1 at kurtosis near 1 the variance is small"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), round(var(d_k, rho, kurtosis), 8)),
     "your answer here is the formula's rounded to 8 decimals"),
    # found by the student round st16b
    (formula_in_float32, FLOAT32_LOSES),
    (formula_in_torchs_default_dtype, FLOAT32_LOSES),
    (rho_squared_in_float32, FLOAT32_LOSES),
    # found by the student round st15b: E[s^2] - (E s)^2 in float64, and the second
    # moment written out as E[rho^2 |q|^4 + (1 - rho^2) (q.z)^2] / d_k
    (second_moment_form, CANCELLED),
    (lambda d_k, rho, kurtosis: (rho * math.sqrt(d_k), (rho**2 * (d_k * kurtosis + d_k
     * (d_k - 1)) + (1 - rho**2) * d_k) / d_k - rho**2 * d_k), CANCELLED),
    # the mean
    (lambda d_k, rho, kurtosis: (abs(rho) * math.sqrt(d_k), var(d_k, rho, kurtosis)), "sign"),
    (lambda d_k, rho, kurtosis: (rho * d_k, var(d_k, rho, kurtosis)), "not divided by sqrt(d_k)"),
    (lambda d_k, rho, kurtosis: (rho, var(d_k, rho, kurtosis)), "instead of sqrt(d_k)"),
    (lambda d_k, rho, kurtosis: (rho**2 * math.sqrt(d_k), var(d_k, rho, kurtosis)), "linear in rho"),
    (lambda d_k, rho, kurtosis: (0.0, var(d_k, rho, kurtosis)), "zero only when rho = 0"),
    # the variance
    # a variance looked up per kurtosis, right only at the checker's own kurtoses
    (lambda d_k, rho, kurtosis: (rho * math.sqrt(d_k), {1.0: 1 - rho**2, 1.8: 1 - 0.2 * rho**2,
     3.0: 1 + rho**2, 6.0: 1 + 4 * rho**2}.get(kurtosis, 1 + rho**2)),
     "right only at kurtosis 1, 1.8, 3, 6: was a value looked up per kurtosis"),
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
    # found by the student round st11b: Var(q_m^2) taken as E[q_m^4] - 2 (the same formula)
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2 * (kurtosis - 2) - rho**2),
     "or Var(q_m^2) taken as E[q_m^4] - 2; it is E[q_m^4] - 1"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), rho**2 * (kurtosis - 1)), "noise term is missing"),
    # kurtosis read as the excess kurtosis (E[q^4] = kurtosis + 3)
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2 * (kurtosis + 1)), "read as the excess"),
    # the kurtosis applied to the noise term too
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), (1 + rho**2) * (kurtosis - 1) / 2), "whatever the kurtosis"),
    # right only at rho in {0, +-1}
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + abs(rho) * (kurtosis - 2)), "|rho| where rho^2"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), rho**2 * (kurtosis - 1) + math.sqrt(1 - rho**2)),
     "coefficient is not squared"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**4 * (kurtosis - 2)), "not in between"),
    (lambda d_k, rho, kurtosis: (rho**3 * math.sqrt(d_k), var(d_k, rho, kurtosis)), "linear in rho"),
    # right for rho >= 0 only
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), var(d_k, rho, kurtosis) if rho >= 0 else 1 - rho**2),
     "negative rho"),
    # right for normal entries only, and ignoring the argument it was given
    (lambda d_k, rho, kurtosis: right(d_k, rho), "normal entries only"),
    # (right for kurtosis >= 2: the variance clipped at 1 below)
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2 * max(kurtosis - 2, 0)),
     "goes below 1, and there it is that bound: clipped"),
    # clipped variances and a clipped mean
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), min(var(d_k, rho, kurtosis), 2.0)),
     "goes above 2, and there it is that bound: clipped"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), float(np.clip(var(d_k, rho, kurtosis), 0.5, 3))),
     "goes below 0.5 or above 3"),
    (lambda d_k, rho, kurtosis: (max(mean(d_k, rho), -1.0), var(d_k, rho, kurtosis)),
     "your mean equals the formula except where the formula goes below -1"),
    # tuned to the checker's former widths: right at d_k = 1, 3, 16, 64, 256 only
    (lambda d_k, rho, kurtosis: (mean(d_k, rho) if d_k in (1, 3, 16, 64, 256) else 0.0,
                                 var(d_k, rho, kurtosis)), "mean at d_k = 2"),
    # estimates instead of the formula
    (lambda d_k, rho, kurtosis: sampled(d_k, rho, kurtosis), "sampled estimate"),
    (lambda d_k, rho, kurtosis: sampled(d_k, rho, kurtosis, seed=0), "estimate of it"),
    (lambda d_k, rho, kurtosis: sampled_with_the_kurtosis(d_k, rho, kurtosis), "estimate from samples"),
    (lambda d_k, rho, kurtosis: tuple(round(x, 2) for x in right(d_k, rho, kurtosis)), "rounded"),
    # the pair itself
    (lambda d_k, rho, kurtosis: right(d_k, rho, kurtosis)[::-1], "swapped"),
    (lambda d_k, rho: right(d_k, rho), "three arguments"),
    (lambda d_k, rho, kurtosis: None, "returned None"),
    (lambda d_k, rho, kurtosis: mean(d_k, rho), "pair"),
    (lambda d_k, rho, kurtosis: (float("nan"), 1.0), "finite"),
    (lambda d_k, rho, kurtosis: np.array(right(d_k, rho, kurtosis)).reshape(2, 1), "shape (2, 1)"),
    (lambda d_k, rho, kurtosis: [[m] for m in right(d_k, rho, kurtosis)], "one number"),
    (lambda d_k, rho, kurtosis: dict(zip(("mean", "variance"), right(d_k, rho, kurtosis))), "dict"),
    # (st22d: a complex number whose imaginary part is 0 counts as its real part)
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), cmath.sqrt(1 + rho**2 * kurtosis - 2)),
     "the variance is a complex number (0.5999999999999999j): a square root of something "
     "negative?"),
    # the default kurtosis taken as the excess kurtosis (0 for normal entries)
    (lambda d_k, rho, kurtosis=0.0: right(d_k, rho, kurtosis), "default must be kurtosis=3.0"),
    # math.isqrt for the square root: right at d_k = 1, 16, 64, 256 only
    (lambda d_k, rho, kurtosis: (rho * math.isqrt(d_k), var(d_k, rho, kurtosis)), "mean at d_k = 2"),
    # the variance divided by d_k once more: right at d_k = 1 only
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2 * (kurtosis - 2) / d_k),
     "right at d_k = 1 only"),
    # the kurtosis handled before the formula: right at the checker's former kurtoses
    # (1, 1.8, 2.5, 3, 4.5, 6), wrong at 2.37 or at 9
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), var(d_k, rho, round(kurtosis, 1))),
     "the kurtosis was rounded (to one decimal)"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), var(d_k, rho, min(max(kurtosis, 1), 6))),
     "the kurtosis was clipped (above 6 it becomes the bound"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), var(d_k, rho, min(kurtosis, 6.0))),
     "(kurtosis 7.7 as 6, 9 as 6, 25 as 6, 123.4 as 6, 400 as 6, 10000 as 6, 1e8 as 6, 1e12 as 6, 1e15 as 6, 1e20 as 6): the kurtosis was clipped"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), var(d_k, rho, round(kurtosis))),
     "the kurtosis was rounded (to a whole number)"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), var(d_k, rho, int(kurtosis))),
     "cut to a whole number"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2 * {
        1.0: -1, 1.8: -0.2, 2.5: 0.5, 3.0: 1, 4.5: 2.5, 6.0: 4}.get(kurtosis, 1)),
     "(kurtosis 1.37 as 3, 2.3456789 as 3, 2.37 as 3, 7.7 as 3, 9 as 3, 25 as 3, 123.4 as 3, "
     "400 as 3, 10000 as 3, 1e8 as 3, 1e12 as 3, 1e15 as 3, 1e20 as 3): right only at kurtosis 1, 1.8, 2.5, 3, 4.5, 6: "
     "was a value looked up per kurtosis"),
    # found by the student round st5b: right at every kurtosis of two decimals, or up to 9
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), var(d_k, rho, round(kurtosis, 2))),
     "(kurtosis 2.3456789 as 2.35): the kurtosis was rounded (to two decimals)"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), var(d_k, rho, min(kurtosis, 9.0))),
     "(kurtosis 25 as 9, 123.4 as 9, 400 as 9, 10000 as 9, 1e8 as 9, 1e12 as 9, 1e15 as 9, 1e20 as 9): the kurtosis was clipped (above 9 it "
     "becomes the bound"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), var(d_k, rho, round(kurtosis, 3))),
     "(kurtosis 2.3456789 as 2.346): the kurtosis was rounded (to three decimals)"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), var(d_k, rho, min(kurtosis, 20.0))),
     "(kurtosis 25 as 20, 123.4 as 20, 400 as 20, 10000 as 20, 1e8 as 20, 1e12 as 20, 1e15 as 20, 1e20 as 20): the kurtosis was clipped "
     "(above 20"),
    # the kurtosis given to the noise term: right at rho = +-1 only, where it vanishes
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), rho**2 * (kurtosis - 1)
                                 + (1 - rho**2) * kurtosis / 3),
     "wrong at rho = 0, where only the noise term sqrt(1 - rho^2) q.z is"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), rho**2 * (kurtosis - 1)
                                 + (1 - rho**2) * (kurtosis - 2)),
     "whatever the kurtosis, since Var(q_m z_m) = E[q_m^2] E[z_m^2] = 1"),
    # Var(q_m^2) taken as (kurtosis - 1)^2 / 2 (2 at kurtosis 3): right at rho = 0 only
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), rho**2 * (kurtosis - 1) ** 2 / 2
                                 + 1 - rho**2),
     "wrong at rho = +-1, where only the term rho |q|^2 is"),
    # tuned to the checker's grid of widths and correlations: the sampled scores, at
    # d_k = 4 and rho = -0.6, lie off that grid
    (lambda d_k, rho, kurtosis: (mean(d_k, rho) if d_k in (1, 2, 3, 5, 16, 64, 256)
                                 else rho * d_k / math.sqrt(d_k + 1), var(d_k, rho, kurtosis)),
     "Laplace entries: formula (1.252"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), var(d_k, rho, kurtosis)
                                 if rho in (-1.0, -0.8, -0.3, 0.0, 0.123456, 0.5, 1.0)
                                 else 1 + abs(rho) * (kurtosis - 2)),
     "random-sign entries: formula (-2.4, 0.4)"),
    # found by the student round st4b: a mean that depends on the kurtosis (right at 3)
    (lambda d_k, rho, kurtosis: (mean(d_k, rho) * (kurtosis - 1) / 2, var(d_k, rho, kurtosis)),
     "the mean does not depend on the kurtosis"),
    # E[s^2] for the variance: the mean's square not subtracted
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), var(d_k, rho, kurtosis) + mean(d_k, rho) ** 2),
     "second moment E[s^2], not the variance"),
    # the same, term by term: E[(q.k)^2] / d_k
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), (rho**2 * (d_k * kurtosis + d_k * (d_k - 1))
                                                  + (1 - rho**2) * d_k) / d_k),
     "second moment E[s^2], not the variance"),
    # the arguments swapped, math.sqrt (a ValueError) and np.sqrt (NaN)
    (lambda rho, d_k, kurtosis: (rho * math.sqrt(d_k), 1 + rho**2 * (kurtosis - 2)),
     "the arguments are in the wrong order"),
    (lambda rho, d_k, kurtosis: (rho * np.sqrt(d_k), 1 + rho**2 * (kurtosis - 2)),
     "the arguments are in the wrong order"),
    # the mean rounded to four decimals for printing
    (lambda d_k, rho, kurtosis: (round(mean(d_k, rho), 4), var(d_k, rho, kurtosis)),
     "your means are the formula's rounded to 4 decimals"),
    # found by the student round st6b
    # Var(q_m k_m) taken as E[q_m^2 k_m^2], the per-term mean rho not subtracted
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), rho**2 * kurtosis + 1 - rho**2),
     "or the per-term mean E[q_m k_m] = rho was not subtracted"),
    # the kurtosis clipped at 500 (past every kurtosis probed before 10,000)
    (lambda d_k, rho, kurtosis: right(d_k, rho, min(kurtosis, 500.0)),
     "(kurtosis 10000 as 500, 1e8 as 500, 1e12 as 500, 1e15 as 500, 1e20 as 500): the kurtosis was clipped (above 500"),
    # rho rounded to one decimal (every rho probed before 0.123456 had one)
    (lambda d_k, rho, kurtosis: right(d_k, round(rho, 1), kurtosis),
     "0.123456 as 0.1, 0.1234567891 as 0.1): rho was rounded (to one decimal)"),
    # rho clipped short of +-1 "so that sqrt(1 - rho^2) stays positive"
    (lambda d_k, rho, kurtosis: right(d_k, float(np.clip(rho, -0.999, 0.999)), kurtosis),
     "(rho -1 as -0.999, 1 as 0.999): rho was clipped (beyond +-0.999 it becomes the bound"),
    # found by the student round st7b
    # the kurtosis clipped at 1e4 (the largest probed before 1e8)
    (lambda d_k, rho, kurtosis: right(d_k, rho, min(kurtosis, 1e4)),
     "(kurtosis 1e8 as 10000, 1e12 as 10000, 1e15 as 10000, 1e20 as 10000): the kurtosis was clipped (above 10000 it becomes the bound"),
    # rho clipped 1e-9 short of +-1: the variance moves by 2e-9 only, and was told clipped
    (lambda d_k, rho, kurtosis: right(d_k, float(np.clip(rho, -1 + 1e-9, 1 - 1e-9)), kurtosis),
     "(rho -1 as -0.999999999, 1 as 0.999999999): rho was clipped (beyond +-0.999999999"),
    # the kurtosis rounded to float16: inf at 1e8
    (lambda d_k, rho, kurtosis: right(d_k, rho, _half(kurtosis)),
     "1e8 is past float16's largest number, 65504, where it becomes inf: was the kurtosis "
     "rounded to float16"),
    # the same, kept where float16 is finite
    (lambda d_k, rho, kurtosis: right(d_k, rho, _half(kurtosis) if kurtosis < 6e4
                                      else kurtosis),
     "(kurtosis 1.37 as 1.37012, 1.8 as 1.7998, 2.3456789 as 2.3457, 2.37 as 2.36914, "
     "7.7 as 7.69922, 123.4 as 123.375): the kurtosis was "
     "rounded to float16"),
    # found by the student round st8b
    # a variance of 1 for small |rho| (passed while 0.123456 was the smallest |rho| > 0)
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1.0 if abs(rho) < 0.12
                                 else var(d_k, rho, kurtosis)),
     "right at rho = 0 and for |rho| >= 0.123456, but wrong for small |rho| (|rho| = "
     "1e-09, 1e-08, 1e-07, 3e-07, 1e-06, 1e-05, 0.0001, 0.001, 0.05): the formula holds for every rho"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1.0 if abs(rho) < 0.1
                                 else var(d_k, rho, kurtosis)),
     "right at rho = 0 and for |rho| >= 0.123456, but wrong for small |rho| (|rho| = "
     "1e-09, 1e-08, 1e-07, 3e-07, 1e-06, 1e-05, 0.0001, 0.001, 0.05)"),
    # the same below 0.2 was told it clipped the variance at 1 (it is right at rho = 0.5,
    # where the formula is 2); test_a_variance_of_1_for_small_rho_is_not_told_it_clipped
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1.0 if abs(rho) < 0.2
                                 else var(d_k, rho, kurtosis)),
     "right at rho = 0 and for |rho| >= 0.3, but wrong for small |rho| (|rho| = "
     "1e-09, 1e-08, 1e-07, 3e-07, 1e-06, 1e-05, 0.0001, 0.001, 0.05, 0.123456, 0.1234567891)"),
    # rho rounded to six or seven decimals (0.123456 has six)
    (lambda d_k, rho, kurtosis: right(d_k, round(rho, 6), kurtosis),
     "(rho -1e-08 as -0, 1e-09 as 0, 3e-08 as 0, 1e-07 as 0, 3e-07 as 0, 0.1234567891 as 0.123457): rho was rounded (to six "
     "decimals)"),
    (lambda d_k, rho, kurtosis: right(d_k, round(rho, 7), kurtosis),
     "(rho -1e-08 as -0, 1e-09 as 0, 3e-08 as 0, 0.1234567891 as 0.1234568): rho was rounded (to seven decimals)"),
    # the normal entries' formula for wide heads, "the central limit" (passed beyond 300,
    # past every width probed; from 64 up it was told of rho = +-1)
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2 if d_k > 300
                                 else var(d_k, rho, kurtosis)),
     "right only at the probed widths up to d_k = 256, wrong at d_k = 316, 512, 562, "
     "..., 562341325190349, 1e15: 65 widths: the scaled variance does not "
     "depend on d_k: q.k is a sum of d_k independent terms q_m k_m"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2 if d_k > 300
                                 else var(d_k, rho, kurtosis)),
     "a wide head makes the score's distribution nearly normal (the central "
     "limit theorem), but not its variance"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2 if d_k >= 64
                                 else var(d_k, rho, kurtosis)),
     "right only at the probed widths up to d_k = 56, wrong at d_k = 64, 100, 128, "
     "..., 562341325190349, 1e15: 70 widths"),
    # a kurtosis looked up in a table of the kurtoses probed before (and 2)
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), var(d_k, rho, kurtosis if kurtosis in (
        1.0, 1.8, 2.0, 2.3456789, 2.37, 2.5, 3.0, 4.5, 6.0, 9.0, 25.0, 400.0, 1e4, 1e8)
        else 3.0)),
     "(kurtosis 1.37 as 3, 7.7 as 3, 123.4 as 3, 1e12 as 3, 1e15 as 3, 1e20 as 3): right only at kurtosis 1, 1.8, "
     "2.3456789, 2.37, 2.5, 3, 4.5, 6, 9, 25, 400, 10000, 1e8: was a value looked up "
     "per kurtosis"),
    # a mean right at the widths probed before (and at the sampling checks' 4) only
    (lambda d_k, rho, kurtosis: (mean(d_k, rho) if d_k in (1, 2, 3, 4, 5, 16, 64, 256)
                                 else rho * d_k / math.sqrt(d_k + 1), var(d_k, rho, kurtosis)),
     # (at 10^6 + 3 and 2^20, rho d_k / sqrt(d_k + 1) is rho sqrt(d_k) to 5e-7)
     "right at some widths (d_k = 1, 2, 3, ..., 1048576, 1e15: 14 widths) and "
     "wrong at others "
     "(d_k = 6, 7, 8, ..., 262144, 316228: 33 widths) with the same rho and kurtosis"),
    # the library's own answer in a thread of the attempt's
    (lambda d_k, rho, kurtosis: _in_a_thread(attention.score_moments, d_k, rho, kurtosis),
     "calls the library's own attention.score_moments"),
    # found by the student round st10b
    # a covariance of the two terms added (was told "check how each term's coefficient
    # enters"); negative at kurtosis 1, rho = -0.8
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), var(d_k, rho, kurtosis)
                                 + 2 * rho * math.sqrt(1 - rho**2)),
     "a covariance term 2 rho sqrt(1 - rho^2) was added: Cov(|q|^2, q.z) = 0, since z "
     "has mean 0"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), var(d_k, rho, kurtosis)
                                 + 2 * rho * math.sqrt(1 - rho**2)),
     "your variance is negative at 60 of these settings (-0.6 at d_k = 1, rho = -0.8, "
     "kurtosis = 1), and a variance never is"),
    # the precedence slip 1 + rho^2 kurtosis - 2: negative wherever rho^2 kurtosis < 1
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2 * kurtosis - 2),
     "your variance is negative at 61 of these settings (-0.73 at d_k = 1, rho = -0.3, "
     "kurtosis = 3), and a variance never is"),
    # the variance floored at 1e-12 (passed: the variance was compared to 1e-9 at 0)
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), max(var(d_k, rho, kurtosis), 1e-12)),
     "your variance equals the formula except where the formula goes below 1e-12, and "
     "there it is that bound: clipped"),
    # E[s^2] - (E s)^2 in float32 (was told "a rounded value, or an estimate")
    (lambda d_k, rho, kurtosis: second_moment_form(d_k, rho, kurtosis, np.float32),
     "E[s^2] - (E s)^2 computed in float32? Two numbers of size rho^2 d_k subtracted "
     "lose float32's 7 digits to cancellation"),
    # the variance rounded to float16, inf at kurtosis 1e8 (was told "was the kurtosis
    # rounded to float16?")
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), _half(var(d_k, rho, kurtosis))),
     "the variance here is 1e+08, past float16's largest number, 65504, where it "
     "becomes inf, and your variances before it are the formula's rounded to float16: "
     "was the variance rounded to float16"),
    # found by the student round st12b
    # a variance of 1 for |rho| < 5e-4 or 1e-4 (passed: at rho = 3e-8 the term is
    # below the tolerance even at kurtosis 1e8, and 1e-3 lies above the cut-off)
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1.0 if abs(rho) < 5e-4
                                 else var(d_k, rho, kurtosis)),
     "right at rho = 0 and for |rho| >= 0.001, but wrong for small |rho| (|rho| = "
     "1e-09, 1e-08, 1e-07, 3e-07, 1e-06, 1e-05, 0.0001)"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1.0 if abs(rho) < 1e-4
                                 else var(d_k, rho, kurtosis)),
     "right at rho = 0 and for |rho| >= 0.0001, but wrong for small |rho| (|rho| = "
     "1e-09, 1e-08, 1e-07, 3e-07, 1e-06, 1e-05)"),
    # the normal formula at widths off the probed grid (passed: never probed)
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2)
     if d_k in (6, 7, 8, 32, 128, 512, 2048) else right(d_k, rho, kurtosis),
     "wrong at others (d_k = 6, 7, 8, 32, 128, 512, 2048) with the same rho and "
     "kurtosis: is a width treated apart?"),
    # the normal formula past 4096 (passed: the widest width probed was 4096)
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2) if d_k > 4096
     else right(d_k, rho, kurtosis),
     "right only at the probed widths up to d_k = 4096, wrong at d_k = 5623, 8192, "
     "10000, ..., 562341325190349, 1e15: 56 widths"),
    # rho clipped at 1 - 1e-12 (was told the variance was clipped at 2e-12)
    (lambda d_k, rho, kurtosis: right(d_k, float(np.clip(rho, -1 + 1e-12, 1 - 1e-12)),
                                      kurtosis),
     "rho was clipped (beyond +-0.999999999999 it becomes the bound"),
    # abs(kurtosis - 2) (was told "a value looked up per kurtosis")
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2 * abs(kurtosis - 2)),
     "every kurtosis below 2 reads as 4 - kurtosis: abs(kurtosis - 2)?"),
    # found by the student round st13b
    # "a tiny correlation: independent", a variance of 1 for |rho| < 1e-5 (passed: the
    # small rhos probed at kurtosis 1e8 were 1e-5 and 1e-4, and 3e-8 is below the
    # tolerance there)
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1.0 if abs(rho) < 1e-5
                                 else var(d_k, rho, kurtosis)),
     "right at rho = 0 and for |rho| >= 1e-05, but wrong for small |rho| (|rho| = "
     "1e-09, 1e-08, 1e-07, 3e-07, 1e-06): the formula holds for every rho, however small"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1.0 if abs(rho) < 9.9e-6
                                 else var(d_k, rho, kurtosis)),
     "right at rho = 0 and for |rho| >= 1e-05, but wrong for small |rho| (|rho| = "
     "1e-09, 1e-08, 1e-07, 3e-07, 1e-06)"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1.0 if abs(rho) < 5e-7
                                 else var(d_k, rho, kurtosis)),
     "right at rho = 0 and for |rho| >= 1e-06, but wrong for small |rho| (|rho| = "
     "1e-09, 1e-08, 1e-07, 3e-07)"),
    # "wide heads are normal (the central limit theorem)": the normal entries' formula
    # past d_k = 10,000 (passed: the widest width probed was 8192)
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2 if d_k > 10_000
                                 else var(d_k, rho, kurtosis)),
     "right only at the probed widths up to d_k = 10000, wrong at d_k = 16384, "
     "17783, 31623, ..., 562341325190349, 1e15: 53 widths: the scaled variance does "
     "not depend on d_k: "
     "q.k is a sum of d_k independent terms q_m k_m, each of one variance at every "
     "width (Var(q_m^2) = kurtosis - 1 at every width), and dividing by sqrt(d_k) "
     "divides their sum's variance by d_k; a wide "
     "head makes the score's distribution nearly normal (the central limit theorem), "
     "but not its variance, which keeps the entries' kurtosis at every width"),
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2 if d_k > 10**6
                                 else var(d_k, rho, kurtosis)),
     "right only at the probed widths up to d_k = 1000000, wrong at d_k = 1000003, "
     "1048576, 1778279, ..., 562341325190349, 1e15: 39 widths: the scaled variance "
     "does not depend on d_k"),
    # the same past 2^20 only at powers of 2 ("head widths are powers of 2")
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2
                                 if d_k > 10_000 and not d_k & (d_k - 1)
                                 else var(d_k, rho, kurtosis)),
     "wrong at others (d_k = 16384, 32768, 65536, 131072, 262144, 524288, 1048576) "
     "with the same rho and kurtosis: is a width treated apart?"),
    # found by the student round st14b (each passed: the fixed settings stopped at
    # d_k = 10^6 + 3, 2^20, kurtosis 1e8 and, there, |rho| = 3e-7)
    # the normal entries' formula past d_k = 2e6
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2 if d_k > 2_000_000
                                 else var(d_k, rho, kurtosis)),
     "right only at the probed widths up to d_k = 1778279, wrong at d_k = 3162278, "
     "5623413, 10000000, ..., 562341325190349, 1e15: 36 widths: the scaled variance "
     "does not depend on d_k"),
    # a variance of 1 for |rho| < 2e-7
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), 1.0 if abs(rho) < 2e-7
                                 else var(d_k, rho, kurtosis)),
     "right at rho = 0 and for |rho| >= 3e-07, but wrong for small |rho| (|rho| = "
     "1e-09, 1e-08, 1e-07): the formula holds for every rho, however small"),
    # the kurtosis clipped at 1e9
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), var(d_k, rho, min(kurtosis, 1e9))),
     "(kurtosis 1e12 as 1e+09, 1e15 as 1e+09, 1e20 as 1e+09): the kurtosis was clipped (above 1e+09 it "
     "becomes the bound"),
    # exact at the checker's own kurtoses, the normal entries' formula at any other
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), var(d_k, rho, kurtosis) if kurtosis in (
        1.0, 1.37, 1.8, 2.3456789, 2.37, 2.5, 3.0, 4.5, 6.0, 7.7, 9.0, 25.0, 123.4, 400.0,
        1e4, 1e8) else 1 + rho**2),
     "(kurtosis 1e12 as 3, 1e15 as 3, 1e20 as 3): right only at kurtosis 1, 1.37, 1.8, 2.3456789, "
     "2.37, 2.5, 3, 4.5, 6, 7.7, 9, 25, 123.4, 400, 10000, 1e8: was a value looked up"),
    # (1 - rho)^2 for the noise term's 1 - rho^2 (was told to fix the rho |q|^2 term)
    (lambda d_k, rho, kurtosis: (mean(d_k, rho), rho**2 * (kurtosis - 1) + (1 - rho)**2),
     "right at rho = +1 but wrong at rho = -1: your variance depends on the sign of "
     "rho, and the variance cannot"),
]


# Found by the student round st19b: a factor depending on d_k that tends to 1 was told
# "a width treated apart" (right at the widest widths, to 1e-6).
def mean_with_sqrt_of_d_k_minus_1(d_k, rho, kurtosis=3.0):
    return (rho * math.sqrt(d_k - 1) if d_k > 1 else rho), var(d_k, rho, kurtosis)


def variance_times_d_k_over_d_k_minus_1(d_k, rho, kurtosis=3.0):
    return mean(d_k, rho), var(d_k, rho, kurtosis) * (d_k / (d_k - 1) if d_k > 1 else 1)


def mean_off_by_1e_5_near_0_only(d_k, rho, kurtosis=3.0):
    # st19b: "by up to a relative 0 elsewhere" when every wrong setting lies near 0
    m = mean(d_k, rho)
    return (m + 1e-5 if abs(m) < 1e-2 else m), var(d_k, rho, kurtosis)


# Found by the student round st22d.
def kurtosis_near_2_taken_as_2(d_k, rho, kurtosis=3.0):
    # "at kurtosis 2 the variance is 1": a band around 2 (passed: no kurtosis probed
    # between 1.8 and 2.3456789)
    return right(d_k, rho, 2.0 if 1.85 <= kurtosis < 2.3 else kurtosis)


def kurtosis_below_1_3_taken_as_random_signs(d_k, rho, kurtosis=3.0):
    return right(d_k, rho, 1.0 if kurtosis < 1.3 else kurtosis)


def rho_near_1_snapped(d_k, rho, kurtosis=3.0):
    # the case k = +-q: np.isclose(|rho|, 1) taken as rho = +-1 (was told "rounded")
    return right(d_k, float(np.sign(rho)) if np.isclose(abs(rho), 1.0) else rho, kurtosis)


def rho_past_0_9999_snapped(d_k, rho, kurtosis=3.0):
    return right(d_k, math.copysign(1.0, rho) if abs(rho) > 0.9999 else rho, kurtosis)


_CACHE: dict = {}


def cached_without_the_kurtosis(d_k, rho, kurtosis=3.0):
    # a memo keyed on (d_k, rho): every kurtosis gets the first one's answer (was told
    # to fix Var(q_m^2), which the formula inside has right)
    if (d_k, rho) not in _CACHE:
        _CACHE[(d_k, rho)] = right(d_k, rho, kurtosis)
    return _CACHE[(d_k, rho)]


NEAR_1 = ("near rho = +-1 your variance is the formula's at rho = +-1 itself wherever "
          "it is wrong: was rho replaced by +-1 there")
WIDTH_WHY = ("the scaled variance does not depend on d_k: q.k is a sum of d_k "
             "independent terms q_m k_m")

WRONG += [
    (kurtosis_near_2_taken_as_2, "your variance is the formula at another kurtosis than "
     "the one given (kurtosis 1.9 as 2, 2.1 as 2, 2.2 as 2): every kurtosis probed from "
     "1.9 to 2.2 reads as 2, the others as given: a special case for the kurtoses near 2"),
    (lambda d_k, rho, kurtosis=3.0: (mean(d_k, rho), 1.0 if math.isclose(
        kurtosis, 2.0, rel_tol=0.05) else var(d_k, rho, kurtosis)),
     "(kurtosis 2.1 as 2): kurtosis 2.1 reads as 2, the others as given: a special "
     "case for the kurtoses near 2"),
    # (was told "the kurtosis was rounded (to a whole number)": 1.37 and 2.37 are used
    # as given)
    (lambda d_k, rho, kurtosis=3.0: (mean(d_k, rho), 1.0 if math.isclose(
        kurtosis, 2.0, rel_tol=0.1) else var(d_k, rho, kurtosis)),
     "(kurtosis 1.8 as 2): kurtosis 1.8 reads as 2, the others as given: a special "
     "case for the kurtoses near 2"),
    (lambda d_k, rho, kurtosis=3.0: (mean(d_k, rho), 1 + rho**2 if kurtosis == 2.0
                                     else var(d_k, rho, kurtosis)),
     "(kurtosis 2 as 3): kurtosis 2 alone reads as 3, the others as given: a special "
     "case for kurtosis 2"),
    # (st23d: told of kurtosis 1 + 1e-10, at rho = +-1, before 1.1 and 1.2 are)
    (kurtosis_below_1_3_taken_as_random_signs, "near rho = +-1, wherever your variance "
     "is wrong (at kurtosis 1.0000000001), it is the formula's at kurtosis 1: was a "
     "kurtosis near 1 taken as 1"),
    (rho_near_1_snapped, NEAR_1),
    (rho_past_0_9999_snapped, NEAR_1),
    (lambda d_k, rho, kurtosis=3.0: (mean(d_k, rho), kurtosis - 1.0 if abs(rho) > 0.999
                                     else var(d_k, rho, kurtosis)), NEAR_1),
    # the same past 0.95, where the grid's +-0.99 and +-0.999 show it (was told "rho
    # was rounded (to a whole number)", though 0.123456 is used as given)
    (lambda d_k, rho, kurtosis=3.0: right(d_k, math.copysign(1.0, rho) if abs(rho) > 0.95
                                          else rho, kurtosis),
     "0.98 as 1, 0.99 as 1, 0.999 as 1): every |rho| probed from "
     "0.96 up reads as 1: was rho replaced by +-1 there"),
    (lambda d_k, rho, kurtosis=3.0: right(d_k, math.copysign(1.0, rho) if abs(rho) > 0.95
                                          else rho, kurtosis),
     "near rho = +-1 your mean is the formula's at rho = +-1 itself wherever it is wrong"),
    # rho cast to float32 first (was told a bare got and expected)
    (lambda d_k, rho, kurtosis=3.0: right(d_k, float(np.float32(rho)), kurtosis),
     "your variance here is the formula at rho rounded to float32 (0.9999 as "
     "0.9998999834060669)"),
    (cached_without_the_kurtosis, "your variance does not change with the kurtosis (at "
     "d_k = 1, rho = -1, it is 0 at kurtosis 1, 1.37, 1.8, ...), where the exact one "
     "does: is the kurtosis argument used?"),
    # a finite-width correction (was told "is a width treated apart?")
    (lambda d_k, rho, kurtosis=3.0: (mean(d_k, rho), 1 + rho**2 * (kurtosis - 2)
                                     * (1 + 1 / d_k)),
     "your variance is the formula plus a term that shrinks like 1/d_k"),
    # "the non-normal part fades like 1/d_k" (was told of the rho |q|^2 term, not of
    # the central limit theorem)
    (lambda d_k, rho, kurtosis=3.0: (mean(d_k, rho), 1 + rho**2 * (1 + (kurtosis - 3)
                                                                   / d_k)),
     "your variance moves from the formula at d_k = 1 toward the normal entries' "
     f"variance as d_k grows (its difference from theirs shrinks like 1/d_k): {WIDTH_WHY}"),
    (lambda d_k, rho, kurtosis=3.0: (mean(d_k, rho), 1 + rho**2 * (1 + (kurtosis - 3)
                                                                   / d_k)),
     "a wide head makes the score's distribution nearly normal (the central limit "
     "theorem), but not its variance"),
]

WRONG += [
    (mean_with_sqrt_of_d_k_minus_1, "your mean is the formula times a factor "
     "depending on d_k that tends to 1 (such as (d_k-1)/d_k): the exact moments have "
     "none"),
    (variance_times_d_k_over_d_k_minus_1, "your variance is the formula times a "
     "factor depending on d_k that tends to 1"),
    (mean_off_by_1e_5_near_0_only, "within 1% of the formula wherever it differs "
     "(within 1e-4 of it near 0): a rounded value"),
]


# Found by the student round st23d.
def default_none_used_as_is(d_k, rho, kurtosis=None):
    # a default that fails when used (passed: any TypeError was taken for "no default")
    return rho * math.sqrt(d_k), 1 + rho**2 * (kurtosis - 2)


def kurtosis_keyword_only(d_k, rho, *, kurtosis=3.0):
    # (was told "the function must take three arguments")
    return right(d_k, rho, kurtosis)


def rho_snapped_past_1_minus_1e_8(d_k, rho, kurtosis=3.0):
    # passed: 1 - 1e-8 itself was the nearest rho probed to 1
    return right(d_k, math.copysign(1.0, rho) if abs(rho) > 1 - 1e-8 else rho, kurtosis)


def rho_isclose_to_1_snapped(d_k, rho, kurtosis=3.0):
    # math.isclose (rel_tol 1e-9): passed
    if math.isclose(abs(rho), 1.0):
        return math.copysign(math.sqrt(d_k), rho), kurtosis - 1
    return right(d_k, rho, kurtosis)


def small_variance_set_to_0(d_k, rho, kurtosis=3.0):
    # passed: the tolerance near 0 was an absolute 1e-9
    m, v = right(d_k, rho, kurtosis)
    return m, (0.0 if v < 1e-9 else v)


def mean_in_float16(d_k, rho, kurtosis=3.0):
    # inf past 65504 (at d_k = 1e15): the variance rows were failed for it
    return _half(mean(d_k, rho)), var(d_k, rho, kurtosis)


def mean_overflows_at_1e15(d_k, rho, kurtosis=3.0):
    return (math.inf if d_k >= 10**15 else mean(d_k, rho)), var(d_k, rho, kurtosis)


ZEROED = ("your variance is 0 wherever it is wrong here, where the formula's is small "
          "but not 0 (up to 2e-10, at rho = +-1 too, with kurtosis 1 + 1e-10): was a "
          "small variance set to 0")
WRONG += [
    (default_none_used_as_is, "called without kurtosis, as the exercise's signature "
     "allows (scaled_score_moments(16, 0.5)), your function raised TypeError: "
     "unsupported operand type(s) for -: 'NoneType' and 'int': the default must be "
     "kurtosis=3.0"),
    (kurtosis_keyword_only, "your function takes kurtosis only as a keyword (after a "
     "`*`), but the exercise's signature is scaled_score_moments(d_k, rho, "
     "kurtosis=3.0)"),
    (rho_snapped_past_1_minus_1e_8, NEAR_1),
    (rho_isclose_to_1_snapped, NEAR_1),
    (small_variance_set_to_0, ZEROED),
    # the mean rounded to 8 decimals (was told "an approximation for small |rho|")
    (lambda d_k, rho, kurtosis=3.0: (round(mean(d_k, rho), 8), var(d_k, rho, kurtosis)),
     "your means are the formula's rounded to 8 decimals"),
    (lambda d_k, rho, kurtosis=3.0: tuple(round(x, 8) for x in right(d_k, rho, kurtosis)),
     "your means are the formula's rounded to 8 decimals"),
    (mean_in_float16, "your means are the formula's rounded to float16"),
    (mean_overflows_at_1e15, "at d_k = 1e15, rho = 0.0001, kurtosis = 10000.0 (past the "
     "settings of the first check), the call failed: your mean there is inf (the "
     "formula's is 3162.28): it must be a finite number"),
]


def _wrapped_without_wraps(f):
    """f behind a decorator of the reader's own that hides its signature."""
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)
    return wrapper


@pytest.mark.parametrize("attempt", [mean_in_float16, mean_overflows_at_1e15])
def test_a_mean_not_finite_at_a_far_setting_fails_the_mean_row_alone(attempt):
    # st23d: a mean rounded to float16 (inf at d_k = 1e15) failed both variance rows,
    # "the call failed: the function returned (inf, 0.0)", where the variance is right
    run = run_once(_check_on_the_fixed_settings, attempt)
    assert run.result is False
    assert "✗ mean, for positive and negative rho" in run.text, run.text
    assert "✓ variance for normal entries" in run.text, run.text
    assert "✓ variance for other entries" in run.text, run.text


def test_a_variance_wrong_at_a_setting_where_the_mean_is_not_finite_fails_its_row(capsys):
    def wrong_there(d_k, rho, kurtosis=3.0):
        if d_k >= 10**15:
            return math.inf, 2.0
        return right(d_k, rho, kurtosis)

    assert checkers.check_scaled_score_moments(wrong_there) is False
    out = " ".join(capsys.readouterr().out.split())
    assert "✗ variance for normal entries (kurtosis 3): variance at d_k = 1e15, rho = " \
           "0.5, kurtosis = 3.0: got 2, expected 1.25" in out, out
    assert "✗ variance for other entries" in out, out


@pytest.mark.parametrize("attempt", [
    lambda d_k, rho, kurtosis=None: right(d_k, rho, 3.0 if kurtosis is None else kurtosis),
    lambda d_k, rho, kurtosis: right(d_k, rho, kurtosis),  # no default
    lambda d_k, rho, kurtosis=3: right(d_k, rho, kurtosis),  # an int default
    _wrapped_without_wraps(lambda d_k, rho, kurtosis: right(d_k, rho, kurtosis)),
    # 1 - rho^2 as (1 - rho)(1 + rho): right to rounding near rho = +-1
    lambda d_k, rho, kurtosis=3.0: (mean(d_k, rho), rho**2 * (kurtosis - 1)
                                    + (1 - rho) * (1 + rho)),
    lambda d_k, rho, kurtosis=3.0: (mean(d_k, rho), rho**2 * (kurtosis - 1)
                                    + math.sqrt(1 - rho**2) ** 2),
], ids=["None default replaced", "no default", "int default",
        "no default, behind a wrapper of *args", "(1 - rho)(1 + rho)",
        "sqrt(1 - rho^2)^2"])
def test_the_right_formula_passes_with_any_default_handling_and_near_rho_1(attempt):
    # st23d: the default is read from the signature (a TypeError inside the formula
    # is no missing default), and the tolerance near 0 is 1e-13
    run = run_once(_check_on_the_fixed_settings, attempt)
    assert run.result is True, run.text


def test_variances_near_0_are_compared_to_1e_13_and_probed_below_1e_9():
    # st23d: a variance of 2e-10 returned as 0 passed (an absolute 1e-9 near 0)
    from attention.checkers import moments

    assert moments._same(2e-10 + 5e-14, 2e-10) and not moments._same(0.0, 2e-10)
    assert not moments._same(0.0, 2e-12) and not moments._same(1e-12, 0.0)
    near = [var(*p) for p in moments.NEAR_ONE_PROBES]
    assert min(v for v in near if v > 0) < 1e-11
    assert any(abs(p[1]) == 1.0 and var(*p) > 0 for p in moments.NEAR_ONE_PROBES)


def test_an_error_near_0_only_is_told_no_relative_error_elsewhere():
    run = run_once(_check_on_the_fixed_settings, mean_off_by_1e_5_near_0_only)
    assert run.result is False
    assert "(within 1e-4 of it near 0)" in run.text
    assert "by up to a relative" not in run.text, run.text


def test_a_factor_that_does_not_tend_to_1_is_not_told_it_does():
    # the variance divided by d_k: a factor 1/d_k, far from 1 at every width
    run = run_once(_check_on_the_fixed_settings, lambda d_k, rho, kurtosis=3.0: (
        mean(d_k, rho), var(d_k, rho, kurtosis) / d_k))
    assert run.result is False
    assert "tends to 1" not in run.text, run.text


def _check_on_the_fixed_settings(attempt):
    """The checker on its fixed settings alone (the ones drawn afresh on each call only add
    coverage): what each wrong attempt must fail."""
    from attention.checkers import moments

    drawn, moments._draw = moments._draw, lambda seed: ()
    try:
        return checkers.check_scaled_score_moments(attempt)
    finally:
        moments._draw = drawn


@pytest.mark.parametrize("attempt, word", WRONG)
def test_each_plausible_wrong_attempt_is_rejected_with_a_message_that_names_it(attempt, word):
    run = run_once(_check_on_the_fixed_settings, attempt)  # see conftest
    assert run.result is False
    assert word in run.text, run.text


def test_the_right_formula_passes_every_check(capsys):
    assert checkers.check_scaled_score_moments(right) is True
    assert "7 of 7 checks passed." in capsys.readouterr().out


def test_the_second_moment_form_in_float64_is_right_to_rounding_at_the_narrow_widths():
    # st10b: the variance is compared to ZERO_ATOL where the formula is exactly 0 (a
    # floor at 1e-12 passed at 1e-9); float64's rounding of E[s^2] - (E s)^2 at the
    # widths up to 256 is within it. (st15b: at d_k = 1e15 the same form loses every
    # digit and fails: it no longer passes the checker, see WRONG.)
    from attention.checkers import moments

    assert moments.ZERO_ATOL < 1e-12
    off = [abs(second_moment_form(d, 1.0, 1.0)[1]) for d in moments.D_KS]
    assert 0 < max(off) <= moments.ZERO_ATOL  # (at d_k = 2, 3, 5: sqrt(d_k)^2 != d_k)
    for p in moments.FIXED_PROBES:
        assert moments._same(second_moment_form(*p)[1], var(*p)), p
    assert second_moment_form(10**15, 1.0, 1.0)[1] == 0.125
    assert checkers.check_scaled_score_moments(second_moment_form, verbose=False) is False


def score_moments(d_k, rho, kurtosis=3.0):
    """The reader's own formula under the library's name."""
    return right(d_k, rho, kurtosis)


def test_a_function_of_the_librarys_name_that_is_the_readers_own_passes():
    assert checkers.check_scaled_score_moments(lambda d, r, k=3.0: score_moments(d, r, k),
                                               verbose=False) is True


def test_the_librarys_own_answer_is_rejected_as_such(capsys):
    # st5b: attention.score_moments passed every check of the exercise it answers
    from attention.scores import scaled_score_moments as normal_only

    for attempt, name in (
            (attention.score_moments, "attention.score_moments"),
            (lambda d, r, k=3.0: attention.score_moments(d, r, k), "attention.score_moments"),
            # the library for normal entries, a formula of one's own for the others
            (lambda d, r, k=3.0: normal_only(d, r) if k == 3.0 else right(d, r, k),
             "attention.scaled_score_moments")):
        assert checkers.check_scaled_score_moments(attempt) is False
        out = capsys.readouterr().out
        assert f"your function calls the library's own {name}, which is this " \
               "exercise's answer" in out, out


@pytest.mark.parametrize("form", [
    lambda m, v: np.array([m, v]),  # an array of shape (2,)
    lambda m, v: [m, v],
    lambda m, v: (np.float32(m), np.float32(v)),  # the formula's results as float32
    lambda m, v: (np.asarray(m), np.asarray(v)),  # 0-d arrays
], ids=["array (2,)", "list", "float32", "0-d arrays"])
def test_the_right_formula_passes_in_any_reasonable_container(form):
    assert checkers.check_scaled_score_moments(lambda d, r, k: form(*right(d, r, k)), verbose=False)


def _decimal_formula(d_k, rho, kurtosis=3.0):
    D = decimal.Decimal
    r, k = D(rho), D(kurtosis)
    return r * D(d_k).sqrt(), 1 + r * r * (k - 2)


def _sympy_formula(d_k, rho, kurtosis=3.0):
    import sympy

    r, k = sympy.Float(rho, 30), sympy.Float(kurtosis, 30)
    return r * sympy.sqrt(sympy.Integer(d_k)), 1 + r**2 * (k - 2)


def _torch_formula_that_requires_grad(d_k, rho, kurtosis=3.0):
    import torch

    r = torch.tensor(rho, dtype=torch.float64, requires_grad=True)  # to check d/drho
    return r * math.sqrt(d_k), 1 + r**2 * (kurtosis - 2)


def test_a_library_call_from_a_thread_running_before_the_check_is_a_stated_blind_spot():
    # st22d: a thread pool started before the check runs attention.score_moments
    # unseen (threading.setprofile reaches only the threads started during it); the
    # docstrings say so, and this test keeps them true
    import concurrent.futures

    from attention.checkers import _engine, moments

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(lambda: 0).result()  # its thread is running now
        assert checkers.check_scaled_score_moments(
            lambda d_k, rho, kurtosis=3.0: pool.submit(attention.score_moments, d_k, rho,
                                                       kurtosis).result(), verbose=False)
    for doc in (moments.__doc__, _engine._refusing_the_library.__doc__):
        assert "a thread already running when" in " ".join(doc.split())


@pytest.mark.parametrize("attempt", [
    _decimal_formula, _sympy_formula, _torch_formula_that_requires_grad,
    lambda d_k, rho, kurtosis=3.0: (rho * cmath.sqrt(d_k), var(d_k, rho, kurtosis)),
    lambda d_k, rho, kurtosis=3.0: (mean(d_k, rho), complex(var(d_k, rho, kurtosis))),
], ids=["Decimal", "sympy", "torch requires_grad", "cmath.sqrt", "complex"])
def test_the_right_formula_passes_in_other_number_types(attempt):
    # st22d: these were told "must be a number" or "a square root of something
    # negative?"; each converts to the right float
    run = run_once(_check_on_the_fixed_settings, attempt)
    assert run.result is True and not run.warnings, run.text


def test_the_normal_entries_formula_is_pointed_at_the_step_not_given_it(capsys):
    # st22d: 1 + rho^2 was told "Var(q_m^2) = E[q_m^4] - 1 = kurtosis - 1", part 1's
    # answer
    checkers.check_scaled_score_moments(lambda d_k, rho, kurtosis: (mean(d_k, rho),
                                                                    1 + rho**2))
    out = " ".join(capsys.readouterr().out.split())
    assert "which step of its derivation used E[q_m^4] = 3?" in out, out
    assert "kurtosis - 1" not in out and "Var(q_m^2) =" not in out, out


def test_the_kurtoses_from_1_to_3_are_probed_every_0_1_and_2_among_them():
    # st22d: a kurtosis near 2 taken as 2, and one below 1.3 taken as 1, passed
    from attention.checkers import moments

    ks = {k for *_, k in moments.FIXED_PROBES + moments.GRID_PROBES}
    assert {round(1 + i / 10, 1) for i in range(21)} <= ks and 2.0 in ks
    # each at a rho where a kurtosis 0.1 off moves the variance far past the tolerance
    for k in moments.LINEAR_KURTOSES:
        assert any(kk == k and abs(r) >= 0.5 for _, r, kk in moments.GRID_PROBES), k


def test_the_page_and_the_module_do_not_hand_over_the_answer():
    # st22d: the page called attention.score_moments the function "which answers this
    # exercise", and the module's docstring stated the formula
    import re

    from attention.checkers import moments
    from tests.pages._common import CHAPTERS

    page = " ".join((CHAPTERS / "variance.md").read_text().split())
    exercise = page.split(":label: ex-score-moments")[1].split("{solution-start}")[0]
    assert "answers this exercise" not in exercise
    assert "`attention.score_moments`" not in exercise
    # st25d item 8: a cell above the exercise called attention.scaled_score_moments, the
    # normal entries' case of the library's answer (score_moments, one `??` away); the
    # cell now computes what the page has derived, eq-correlated-moments
    above = page.split(":label: ex-score-moments")[0]
    assert "score_moments" not in above
    assert not re.search(r"rho\^2 \(kurtosis - 2\)", " ".join(moments.__doc__.split()))


def test_the_page_states_the_tolerances_the_checker_uses():
    # st25d item 12: the exercise did not say how near the reference an answer must be
    from attention.checkers import moments
    from tests.pages._common import CHAPTERS

    page = " ".join((CHAPTERS / "variance.md").read_text().split())
    assert ("within $10^{-13} + 10^{-6}\\,|\\text{reference}|$ of it (a relative $10^{-6}$, "
            "and an absolute $10^{-13}$ where the reference is 0 or near it)") in page
    assert "within five standard errors of their mean and variance" in page
    assert moments.ZERO_ATOL == 1e-13
    want = np.array([0.0, 1e-12, 2.0, 1e15])
    assert moments._eq(want + 0.99 * (1e-13 + 1e-6 * want), want).all()
    assert not moments._eq(want + 1.01 * (1e-13 + 1e-6 * want), want).any()


def test_an_attempt_that_is_right_for_normal_entries_passes_those_checks_only(capsys):
    checkers.check_scaled_score_moments(lambda d_k, rho, kurtosis: (mean(d_k, rho), 1 + rho**2))
    out = capsys.readouterr().out
    assert "✓ variance for normal entries (kurtosis 3)" in out
    assert "✗ variance for other entries" in out and "✗ agrees with 40,000 sampled scores" in out


def test_a_formula_the_samples_refute_fails_the_sampling_checks_with_the_measured_values(capsys):
    checkers.check_scaled_score_moments(lambda d_k, rho, kurtosis: (mean(d_k, rho), 1.5))
    out = capsys.readouterr().out
    assert out.count("sampled scores: mean") == 2 and "one standard error" in out


def test_a_function_without_a_default_kurtosis_is_not_failed_for_it():
    # The exercise shows kurtosis=3.0, but leaving the default out is no mistake in the formula.
    assert checkers.check_scaled_score_moments(lambda d_k, rho, kurtosis: right(d_k, rho, kurtosis),
                                               verbose=False)


def test_the_d_k_1_hint_is_not_given_to_a_mean_right_at_other_widths_too(capsys):
    checkers.check_scaled_score_moments(lambda d_k, rho, kurtosis: (rho * math.isqrt(d_k), 1.0))
    assert "right at d_k = 1 only" not in capsys.readouterr().out


def test_the_probed_kurtoses_are_not_all_round_and_reach_past_every_named_one():
    # A kurtosis rounded to one decimal, or clipped to the named distributions' range
    # [1, 6], passed while every probed kurtosis was such a number.
    from attention.checkers.moments import KURTOSES

    assert any(round(k, 1) != k for k in KURTOSES)
    assert max(KURTOSES) > 6 and min(KURTOSES) == 1
    # st5b: a kurtosis rounded to two decimals, or clipped at 9, passed as well
    assert any(round(k, 3) != k for k in KURTOSES)
    assert sum(k > 15 for k in KURTOSES) >= 2
    # st6b: a kurtosis clipped at 500 passed while 400 was the largest; st7b: at 1e4
    assert 1e4 in KURTOSES and max(KURTOSES) >= 1e8


def test_the_pages_say_the_range_of_kurtoses_the_checker_probes():
    # st10b: the variance page said "kurtoses from 1 to 10,000" where the checker
    # probes 1e8 (and exercises.md said 10^8)
    from pathlib import Path

    from attention.checkers.moments import KURTOSES

    chapters = Path(__file__).resolve().parents[2] / "chapters"
    from attention.checkers.moments import DRAWN, FAR_PROBES
    from attention.checkers.moments import FIXED_PROBES as PROBES

    assert (min(KURTOSES), max(KURTOSES)) == (1.0, 1e8)
    # st14b: the far settings reach kurtosis 1e20 and width 1e15
    every = PROBES + FAR_PROBES
    assert min(k for _, _, k in every) == 1.0 and max(k for _, _, k in every) == 1e20
    assert max(d for d, _, _ in every) == 10**15 and DRAWN > 0
    variance = " ".join((chapters / "variance.md").read_text().split())
    exercises = " ".join((chapters / "exercises.md").read_text().split())
    assert "a width in every quarter decade from 1 to $10^{15}$ and kurtoses from 1 to " \
           "$10^{20}$ among them (and a few drawn afresh on each call)" in variance
    assert "10,000" not in variance.split(":label: ex-score-moments")[1].split(
        "{solution-start}")[0]
    assert "kurtoses from 1 to $10^{20}$ and a width in every quarter decade from 1 to " \
           "$10^{15}$ among them, a few drawn afresh on each call" in exercises
    # (st17b) a width in every quarter decade, the fixed settings alone
    for i in range(60):
        lo, hi = round(10 ** (i / 4)), round(10 ** ((i + 1) / 4))
        assert any(lo <= d <= hi for d, _, _ in every), (lo, hi)


def test_the_probed_correlations_are_not_all_of_one_decimal_and_reach_plus_minus_1():
    # st6b: rho rounded to one decimal, or clipped at +-0.999, passed
    from attention.checkers.moments import FIXED_PROBES as PROBES
    from attention.checkers.moments import RHOS

    assert any(round(r, 1) != r for r in RHOS)
    assert {-1.0, 1.0} <= set(RHOS) and {r for _, r, _ in PROBES} == set(RHOS) | {
        3e-7, 1e-6, 1e-5, 1e-4}
    # st8b: a variance of 1 for |rho| < 0.12, or rho rounded to six decimals, passed
    assert min(abs(r) for r in RHOS if r) < 1e-7 and any(round(r, 6) != r for r in RHOS)
    assert sum(0 < abs(r) < 0.1 for r in RHOS) >= 3


def test_the_probed_widths_reach_past_300_and_the_kurtoses_lie_between_round_ones():
    # st8b: the normal formula for d_k > 300, and a table of the kurtoses probed then,
    # passed
    from attention.checkers.moments import FIXED_PROBES as PROBES
    from attention.checkers.moments import KURTOSES

    widths = {d for d, _, _ in PROBES}
    assert {1024, 4096} <= widths and sum(d > 300 for d in widths) >= 2
    assert {1.37, 7.7, 123.4} <= set(KURTOSES)
    # wide heads are probed with and without the normal kurtosis, at rho != 0
    assert {(r != 0, k == 3.0) for d, r, k in PROBES if d > 300} >= {(True, True),
                                                                  (True, False)}


def test_a_variance_of_1_for_small_rho_is_not_told_it_clipped(capsys):
    # st8b: 1 for |rho| < 0.2 was told "equals the formula except where it goes below 1
    # or above 1 ... clipped": it is right at rho = 0.5, where the formula is 2
    for bound in (0.12, 0.2):
        checkers.check_scaled_score_moments(
            lambda d_k, rho, kurtosis, b=bound: (mean(d_k, rho), 1.0 if abs(rho) < b
                                                 else var(d_k, rho, kurtosis)))
        out = capsys.readouterr().out
        assert "clipped" not in out and "wrong for small |rho|" in out, out
    # a true clip still is: right wherever the formula lies between 0.5 and 3
    checkers.check_scaled_score_moments(
        lambda d_k, rho, kurtosis: (mean(d_k, rho), min(max(var(d_k, rho, kurtosis), 0.5),
                                                        3.0)))
    assert "below 0.5 or above 3, and there it is that bound: clipped" in \
        capsys.readouterr().out


def test_a_first_check_that_fails_reports_the_other_six_as_not_run_out_of_seven(capsys):
    # st8b: the report of the first check alone said "0 of 1 checks passed."
    for attempt in (lambda d_k, rho, kurtosis: None,
                    lambda d_k, rho, kurtosis: (float("nan"), 1.0)):
        assert checkers.check_scaled_score_moments(attempt) is False
        out = capsys.readouterr().out
        assert "0 of 1" not in out and out.endswith("0 of 7 checks passed.\n"), out
        assert "✗ the other 6 checks (the same answer on every call, the mean, the " \
               "variance for normal and for other entries, the two comparisons with " \
               "sampled scores): not run" in out, out


def test_the_variance_is_compared_far_tighter_than_a_rounding_of_the_kurtosis():
    # a kurtosis rounded to three decimals moves the variance by a relative 1e-4 at most
    from attention.checkers import moments

    assert moments._same(1.0 + 0.09 * 0.3456789, 1.0 + 0.09 * 0.3456789 * (1 + 1e-7))
    assert not moments._same(1.0 + 0.09 * 0.3456789, 1.0 + 0.09 * 0.346)
    assert not moments._same(1.0, 1.0 + 1e-5)


def test_a_mean_wrong_off_kurtosis_3_is_not_told_of_var_q_squared(capsys):
    # st4b: a mean rho sqrt(d_k) (kurtosis - 1) / 2 was told "the kurtosis must enter
    # through Var(q_m^2)", a sentence about the variance.
    checkers.check_scaled_score_moments(
        lambda d_k, rho, kurtosis: (mean(d_k, rho) * (kurtosis - 1) / 2, var(d_k, rho, kurtosis)))
    out = capsys.readouterr().out
    assert "the mean does not depend on the kurtosis" in out
    assert "Var(q_m^2)" not in out


def test_tiny_correlations_at_the_largest_kurtosis_and_widths_past_a_million_are_probed():
    # st13b: a variance of 1 for |rho| < 1e-5, and the normal entries' formula past
    # d_k = 10,000, passed: the smallest rho probed at kurtosis 1e8 was 1e-5, the widest
    # width 8192
    from attention.checkers import moments

    small = [(d, r, k) for d, r, k in moments.FIXED_PROBES if 0 < abs(r) < 1e-5]
    # the rho^2 (kurtosis - 2) term is above the tolerance (about 1e-6 here) at each
    tells = [r**2 * (k - 2) for d, r, k in small if r**2 * (k - 2) > 5e-6]
    assert {abs(r) for d, r, k in small if r**2 * (k - 2) > 5e-6} == {3e-7, 1e-6}
    assert len(tells) >= 4 and not moments._same(1.0, 1.0 + min(tells))
    assert max(moments.KURTOSES) == 1e8  # within the range the pages quote
    wide = {d for d, _, _ in moments.FIXED_PROBES if d > 10_000}
    assert {2**20, 10**6 + 3} <= wide and max(wide) == 2**20
    # at kurtoses other than 3 and rho != 0, where the normal formula is wrong
    for d in wide:
        settings = [(r, k) for dd, r, k in moments.FIXED_PROBES if dd == d]
        assert settings and all(r != 0 and k != 3.0 for r, k in settings)
        assert not any(moments._same(1 + r**2, var(d, r, k)) for r, k in settings)


def test_the_settings_drawn_afresh_lie_in_the_stated_ranges_and_the_right_forms_pass_there():
    # st14b: a fixed public grid let threshold shortcuts step past each edge; the drawn
    # settings must never fail a right answer (float64, float32, or E[s^2] - (E s)^2)
    from attention.checkers import moments

    for seed in range(300):
        drawn = moments._draw(seed)
        assert len(drawn) == 2 * moments.DRAWN
        assert [k for _, _, k in drawn[:moments.DRAWN]] == [3.0] * moments.DRAWN
        for d, r, k in drawn:
            assert isinstance(d, int) and 1 <= d <= 10**15 and 1.0 <= k <= 1e20
            assert 1e-15 <= abs(r) <= 1.0 and r**2 * d <= 1e6 * (1 + 1e-12)
            want = np.array(moments.score_moments(d, r, k))
            for form in (right(d, r, k), second_moment_form(d, r, k),
                         tuple(np.float32(x) for x in right(d, r, k))):
                assert moments._same(np.array(form, float), want), (seed, d, r, k)
    assert moments._draw(1) == moments._draw(1) != moments._draw(2)
    # st18b: half of the correlations drawn are uniform on [-1, 1] (ordinary ones, 0.8 <
    # |rho| < 0.99 among them), the others log-uniform down to 1e-15
    rhos = [abs(r) for seed in range(300) for d, r, _ in moments._draw(seed) if d < 1e6]
    assert min(rhos) < 1e-12 and sum(0.8 < r < 0.99 for r in rhos) > 20


def test_the_far_settings_reach_1e15_and_1e20_and_only_the_cancel_probes_cancel():
    from attention.checkers import moments

    widths = {d for d, _, _ in moments.FAR_PROBES}
    assert max(widths) == 10**15 and 10**9 + 7 in widths
    assert max(k for _, _, k in moments.FAR_PROBES) == 1e20
    tiny = [(d, r, k) for d, r, k in moments.FAR_PROBES if abs(r) < 3e-7]
    assert min(abs(r) for _, r, _ in tiny) == 1e-9
    assert all(r**2 * (k - 2) >= 100 for _, r, k in tiny)  # far above the tolerance
    # (st15b) E[s^2] - (E s)^2 in float64 stays right at every far setting but the
    # CANCEL_PROBES, at d_k = 1e15 with rho = +-1 and 0.5, where it loses its digits
    cancel = moments.CANCEL_PROBES
    assert {(d, r) for d, r, _ in cancel} == {(10**15, 1.0), (10**15, -1.0), (10**15, 0.5)}
    assert (10**15, 1.0, 1.0) in cancel and var(10**15, 1.0, 1.0) == 0.0
    assert {k for _, _, k in cancel} >= {1.0, 3.0} and set(cancel) <= set(moments.FAR_PROBES)
    for p in moments.FAR_PROBES:
        assert moments._same(second_moment_form(*p)[1], var(*p)) == (p not in cancel), p


def test_no_message_prints_the_variances_closed_form():
    # st15b: a wrong attempt was handed the answer, "1 + rho^2 (kurtosis - 2)"; the
    # messages name a step (Var(q_m^2) = kurtosis - 1) instead
    import ast
    import re

    from attention.checkers import moments

    closed = re.compile(r"rho\^2 \(kurtosis - 2\)|rho\*\*2 \* \(k(urtosis)? - 2")
    tree = ast.parse(open(moments.__file__).read())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr)}
    texts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
             and isinstance(n.value, str) and id(n) not in docs]
    assert texts and not [t for t in texts if closed.search(" ".join(t.split()))]
    for attempt, _ in WRONG:
        out = " ".join(run_once(_check_on_the_fixed_settings, attempt).out.split())
        assert "1 + rho^2 (kurtosis - 2)" not in out and not closed.search(out), out


def test_a_mistake_seen_only_on_a_drawn_setting_prints_it_and_the_seed(capsys, monkeypatch):
    from attention.checkers import moments

    fixed = ((5, 0.3, 3.0), (3, -0.2, 3.0), (12345, 2e-5, 77.7), (7, 0.4, 77.7))
    monkeypatch.setattr(moments, "DRAWN", 2)
    monkeypatch.setattr(moments, "_draw", lambda seed: fixed)
    monkeypatch.setattr(moments, "_fresh_seed", lambda: 42)
    assert checkers.check_scaled_score_moments(
        lambda d, r, k=3.0: (mean(d, r), 1 + r**2 if k == 77.7 else var(d, r, k))) is False
    out = " ".join(capsys.readouterr().out.split())
    # (at rho = 2e-5 the two formulas agree to the tolerance: the first setting told is
    # the one where they differ)
    assert "variance at d_k = 7, rho = 0.4, kurtosis = 77.7, a setting drawn afresh " \
           "for this call: got 1.16, expected 13.112" in out, out
    assert "_draw(42) in attention.checkers.moments draws these settings again" in out
    assert "6 of 7 checks passed." in out


def test_the_right_answer_prints_the_same_report_on_every_call(capsys):
    reports = []
    for _ in range(3):
        assert checkers.check_scaled_score_moments(right) is True
        reports.append(capsys.readouterr().out)
    assert reports[0] == reports[1] == reports[2] and "drawn" not in reports[0].split(
        "variance for other entries")[0]
    assert reports[0].endswith("7 of 7 checks passed.\n")


def test_a_sampled_estimate_stops_before_the_far_widths(capsys):
    # a sampling attempt fails the "same answer on every call" check, and is never
    # called past d_k = 4096 (st23d: 10,000 scores drawn as n x d_k entries ran out of
    # memory at 2^20, 78 GiB, before the estimate was named; at 1e15 it could not finish)
    from attention.checkers import moments

    widths = []

    def estimate(d_k, rho, kurtosis=3.0):
        widths.append(d_k)
        return sampled(min(d_k, 10**7), rho, kurtosis, n=200)

    assert checkers.check_scaled_score_moments(estimate) is False
    out = " ".join(capsys.readouterr().out.split())
    assert "✓ returns a pair of finite numbers" in out and "that is a sampled estimate" in out
    assert max(widths) == 4096 and max(d for d, _, _ in moments.FAR_PROBES) == 10**15
    assert max(d for d, _, _ in moments.FIXED_PROBES) == 2**20
    assert sum(d for d, _, _ in moments.PROBES) < 2e5  # 10,000 x d_k floats: 16 GB in all


def test_a_call_that_fails_at_a_far_setting_is_reported_with_that_setting(capsys):
    def finite_below_1e9(d_k, rho, kurtosis=3.0):
        if d_k >= 10**9:
            raise OverflowError("too wide")
        return right(d_k, rho, kurtosis)

    assert checkers.check_scaled_score_moments(finite_below_1e9) is False
    out = " ".join(capsys.readouterr().out.split())
    assert "✗ mean, for positive and negative rho: at d_k = 1e9 + 7, rho = 0.0001, " \
           "kurtosis = 10000.0 (past the settings of the first check), the call failed: raised " \
           "OverflowError: too wide" in out, out


def test_near_rho_1_at_kurtosis_1_float32_is_off_and_float64_is_not():
    # st16b: a formula computed in float32 passed: at (16, 0.9999, 1) it is off by a
    # relative 2.2e-4, at rho = 1 - 1e-8 it gives 0; float64 is right, and the
    # float64 results returned as float32 numbers are right too
    from attention.checkers import moments

    assert not set(moments.NEAR_ONE_PROBES) & set(moments.FIXED_PROBES)  # compared apart
    want = var(16, 0.9999, 1.0)
    got = float(formula_in_float32(16, 0.9999, 1.0)[1])
    assert abs(got - want) / want == pytest.approx(2.2e-4, rel=0.05)
    assert float(formula_in_float32(16, 1 - 1e-8, 1.0)[1]) == 0.0
    for p in moments.NEAR_ONE_PROBES:
        want = var(*p)
        assert moments._same(right(*p)[1], want)
        assert moments._same(float(np.float32(right(*p)[1])), want)
    wrong = [p for p in moments.NEAR_ONE_PROBES
             if not moments._same(float(formula_in_float32(*p)[1]), var(*p))]
    assert {p[2] for p in wrong} == {1.0, 1 + 1e-10} and len(wrong) == 8
    # (st17b) at 0.99987654321, kurtosis 1, a variance rounded to 8 decimals is off
    # by more than the tolerance
    p = (16, 0.99987654321, 1.0)
    assert p in moments.NEAR_ONE_PROBES
    assert not moments._same(round(var(*p), 8), var(*p))


def test_the_page_says_the_checker_probes_rho_near_1():
    # st16b: the variance page's checker paragraph names the probes near +-1
    from attention.checkers import moments
    from tests.pages._common import CHAPTERS

    page = " ".join((CHAPTERS / "variance.md").read_text().split())
    assert ("some nearer $\\pm 1$, where a formula computed in `float32` loses its "
            "digits") in page
    assert min(1 - abs(r) for r in moments.NEAR_ONE_RHOS) < 1e-7
    assert checkers.check_scaled_score_moments(formula_in_float32, verbose=False) is False


def test_every_quarter_decade_of_widths_and_every_power_of_2_holds_a_fixed_probe():
    # st17b: a formula wrong only for 300 < d_k < 1000 passed 33 of 40 calls (no fixed
    # width lay between 256 and 1024; only a drawn one could catch it)
    from attention.checkers import moments

    widths = {d for d, _, _ in moments.FIXED_PROBES + moments.FAR_PROBES}
    for i in range(60):  # [10^(i/4), 10^((i+1)/4)] from 1 to 1e15
        lo, hi = round(10 ** (i / 4)), round(10 ** ((i + 1) / 4))
        assert any(lo <= d <= hi for d in widths), (lo, hi)
    assert {2**j for j in range(21)} <= widths
    # each gap width at settings where the normal formula, and 1, are wrong
    for d, r, k in moments.GAP_PROBES + moments.FAR_GAP_PROBES:
        assert not moments._same(var(d, r, k), 1 + r**2) and not moments._same(
            var(d, r, k), 1.0)
    # the widths a sampled estimate could not finish are called after the check that
    # the answer is the same on every call
    assert max(d for d, _, _ in moments.FIXED_PROBES) == 2**20
    # and the second moment's form is right there (rho^2 d_k at most 1e7)
    for p in moments.FAR_GAP_PROBES:
        assert moments._same(second_moment_form(*p)[1], var(*p)), p


def test_the_page_says_the_correlations_the_checker_probes():
    # st18b: the variance page says rho every 0.05 from -1 to 1 and as small as 1e-12
    from pathlib import Path

    from attention.checkers import moments

    page = " ".join((Path(__file__).resolve().parents[2] / "chapters"
                     / "variance.md").read_text().split())
    assert ("$\\rho$ (every 0.05 from $-1$ to 1, some nearer $\\pm 1$, where a formula "
            "computed in `float32` loses its digits, and some as small as $10^{-12}$)") in page
    every = {r for _, r, _ in moments.FIXED_PROBES + moments.GRID_PROBES}
    assert all(round(i / 20, 2) in every for i in range(-20, 21))
    assert min(abs(r) for r in every if r) == 5e-13 <= 1e-12
    # and the kurtoses leave no gap wider than a quarter decade from 1 to 1e20
    ks = sorted({k for *_, k in moments.FIXED_PROBES + moments.FAR_PROBES + moments.GRID_PROBES})
    assert ks[0] == 1 and ks[-1] == 1e20
    assert max(np.diff(np.log10(ks))) <= 0.25 + 1e-3


# Found by the student round st25d.
def variance_1_below_1e_12(d_k, rho, kurtosis=3.0):
    # passed 60 of 60 calls: the smallest |rho| probed was 1e-12 itself
    return mean(d_k, rho), 1.0 if abs(rho) < 1e-12 else var(d_k, rho, kurtosis)


def rho_0_below_1e_12(d_k, rho, kurtosis=3.0):
    # passed 35 of 60 calls (only the drawn settings caught it)
    return right(d_k, 0.0 if abs(rho) < 1e-12 else rho, kurtosis)


def library_call_of_the_wrong_arity(d_k, rho, kurtosis=3.0):
    # was told "the function must take three arguments", which it does
    return attention.scaled_score_moments(d_k, rho, kurtosis)


def sqrt_of_two_arguments(d_k, rho, kurtosis=3.0):
    return rho * math.sqrt(d_k, 2), var(d_k, rho, kurtosis)


WRONG += [
    (variance_1_below_1e_12, "right at rho = 0 and for |rho| >= 1e-12, but wrong for "
     "small |rho| (|rho| = 5e-13, 9e-13): the formula holds for every rho, however small"),
    (rho_0_below_1e_12, "your mean and variance are the formula at another rho than the "
     "one given (rho -5e-13 as 0, 9e-13 as 0)"),
    # passed 60 of 60 calls: 0.95 and 0.99 were the nearest probes
    (lambda d_k, rho, kurtosis=3.0: (mean(d_k, rho), 1 + rho**2 if 0.96 < abs(rho) < 0.985
                                     else var(d_k, rho, kurtosis)),
     "wrong at |rho| from 0.97 to 0.98 (at some of them), and there 1 + rho^2 is the "
     "answer for normal entries only"),
    # the variance rounded to 10 or 11 decimals (was told "rho replaced by +-1")
    (lambda d_k, rho, kurtosis=3.0: (mean(d_k, rho), round(var(d_k, rho, kurtosis), 10)),
     "your answer here is the formula's rounded to 10 decimals"),
    (lambda d_k, rho, kurtosis=3.0: (mean(d_k, rho), round(var(d_k, rho, kurtosis), 11)),
     "your answer here is the formula's rounded to 11 decimals"),
    (lambda d_k, rho, kurtosis=3.0: tuple(round(x, 10) for x in right(d_k, rho, kurtosis)),
     "your answer here is the formula's rounded to 10 decimals"),
    (library_call_of_the_wrong_arity, "raised TypeError: scaled_score_moments() takes "
     "from 1 to 2 positional arguments but 3 were given"),
    (sqrt_of_two_arguments, "raised TypeError: math.sqrt() takes exactly one argument"),
]


# Found by the student round st25d (item 7): a formula that divides by 1 - rho^2 is
# NaN (0/0) at rho = +-1, and np.nan_to_num makes that 0; it was told its term rho |q|^2
# is wrong, which is right at every other rho.
def variance_nan_at_one_cleaned(d_k, rho, kurtosis=3.0):
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = np.float64(rho) ** 2  # Var = (1 - rho^2) (1 + rho^2 (kurtosis - 1) / (1 - rho^2))
        variance = (1 - r2) * (1 + r2 * (kurtosis - 1) / (1 - r2))
    return mean(d_k, rho), float(np.nan_to_num(variance))


def variance_nan_at_one_filled_with_1(d_k, rho, kurtosis=3.0):
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.sqrt(1 - np.float64(rho) ** 2)  # the noise coefficient, divided out
        variance = 1 + rho**2 * (kurtosis - 2) * c / c
    return mean(d_k, rho), float(np.nan_to_num(variance, nan=1.0))


def mean_nan_at_one_cleaned(d_k, rho, kurtosis=3.0):
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.sqrt(1 - np.float64(rho) ** 2)
        m = rho * c * math.sqrt(d_k) / c
    return float(np.nan_to_num(m)), var(d_k, rho, kurtosis)


def variance_nan_at_kurtosis_1_cleaned(d_k, rho, kurtosis=3.0):
    with np.errstate(divide="ignore", invalid="ignore"):
        k1 = np.float64(kurtosis) - 1  # rho^2 Var(q_m^2), written (kurtosis - 1)^2 / (kurtosis - 1)
        variance = 1 - rho**2 + rho**2 * k1**2 / k1
    return mean(d_k, rho), float(np.nan_to_num(variance))


WRONG += [
    (variance_nan_at_one_cleaned, "right everywhere but at rho = +-1 exactly, where your "
     "variance is 0: does your formula divide by 1 - rho^2 (or by sqrt(1 - rho^2)), which "
     "is 0 there, and is the NaN of 0/0 replaced by 0 (np.nan_to_num, or a fill value)? Or "
     "was the score taken as a constant when k = +-q?"),
    (variance_nan_at_one_filled_with_1, "right everywhere but at rho = +-1 exactly, where "
     "your variance is 1: does your formula divide by 1 - rho^2 (or by sqrt(1 - rho^2)), "
     "which is 0 there, and is the NaN of 0/0 replaced by 1"),
    (mean_nan_at_one_cleaned, "right everywhere but at rho = +-1 exactly, where your mean "
     "is 0: does your formula divide by 1 - rho^2"),
    (variance_nan_at_kurtosis_1_cleaned, "right everywhere but at kurtosis 1 exactly "
     "(random signs, which the exercise allows), where your variance is 0: does your "
     "formula divide by kurtosis - 1, which is 0 there"),
]


@pytest.mark.parametrize("attempt", [variance_nan_at_one_cleaned,
                                     variance_nan_at_one_filled_with_1,
                                     mean_nan_at_one_cleaned])
def test_a_nan_cleaned_at_rho_one_is_not_told_a_term_is_wrong(attempt):
    # st25d item 7: "wrong at rho = +-1, where only the term rho |q|^2 is" named a term
    # that is right at every other rho, and "the variance is 1 only for independent q
    # and k" (the fill value 1) a term that is there
    run = run_once(_check_on_the_fixed_settings, attempt)
    assert run.result is False
    assert "where only the term rho |q|^2 is" not in run.text, run.text
    assert "you forgot the rho^2 term" not in run.text, run.text
    assert "the mean is zero only when rho = 0" not in run.text, run.text


@pytest.mark.parametrize("attempt", [library_call_of_the_wrong_arity, sqrt_of_two_arguments])
def test_a_type_error_inside_the_function_is_not_told_it_must_take_three_arguments(attempt):
    # st25d: the hint is for a call of the attempt itself that fails (two parameters)
    run = run_once(_check_on_the_fixed_settings, attempt)
    assert run.result is False and "raised TypeError" in run.text, run.text
    assert "must take three arguments" not in run.text, run.text
    two = run_once(_check_on_the_fixed_settings, lambda d_k, rho: right(d_k, rho))
    assert "must take three arguments" in two.text, two.text


def test_a_seeded_estimate_is_not_called_past_the_first_checks_widths(capsys):
    # st25d: a seeded estimate is the same on every call; it passed that check (told
    # "a formula, not an estimate") and was then called at d_k = 2^20 (16.8 GB for
    # 2000 scores as n x d_k entries)
    from attention.checkers import moments

    widths = []

    def seeded(d_k, rho, kurtosis=3.0):
        widths.append(d_k)
        return sampled(min(d_k, 10**7), rho, kurtosis, n=200, seed=0)

    assert checkers.check_scaled_score_moments(seeded) is False
    out = " ".join(capsys.readouterr().out.split())
    assert "✓ the same answer on every call ✗ mean, for positive and negative rho: close " \
           "to the formula but not equal to it: an estimate from samples?" in out, out
    assert "not an estimate" not in out and max(widths) == 4096
    assert moments._mostly_wrong({p: right(*p) for p in moments.PROBES}) is False


def test_recompiled_library_source_is_a_stated_blind_spot():
    # st25d: exec(inspect.getsource(score_moments)) runs new code objects, which the
    # profiler does not know: the docstrings say so
    import inspect

    from attention import scores
    from attention.checkers import _engine, moments

    namespace = dict(vars(scores))
    exec(inspect.getsource(scores.score_moments), namespace)  # noqa: S102
    assert checkers.check_scaled_score_moments(
        lambda d, r, k=3.0: namespace["score_moments"](d, r, k), verbose=False) is True
    for doc in (moments.__doc__, _engine._refusing_the_library.__doc__):
        assert "recompiled source" in " ".join(doc.split()), doc
