"""Checker of Exercise 4, ``ex-score-moments`` (page "The variance argument"): the mean and
variance of a correlated score when the entries are not normal,
``scaled_score_moments(d_k, rho, kurtosis) -> (mean, variance)``.

The specification it checks: with k = rho q + sqrt(1 - rho^2) z, the entries of q and z
independent with mean 0, variance 1 and fourth moment ``kurtosis = E[q_m^4]``, the attempt
returns the scaled score q.k / sqrt(d_k)'s exact mean and variance (the formulas the
exercise's solution derives); for
positive and negative rho (from -1 to 1, small ones down to 3e-8, and 3e-7, 1e-6, 1e-5 and
1e-4 at kurtosis 1e8, and -5e-13, 9e-13, 1e-12, 1e-10, 1e-9, -1e-8 and 1e-7 at kurtosis
1e20, at d_k = 1e15 too, 0.123456 and 0.1234567891 among them, and every 0.05 from -1 to 1
with +-0.96, +-0.97, +-0.98, +-0.99 and +-0.999, so that a rho rounded or clipped short of
+-1, a variance taken as 1 for |rho| below any bound above 5e-13, a mean taken as 0 below
any bound above 5e-13, or a formula wrong only on a band of rho wider than 0.05 (than 0.01
from 0.95 to 1) shows), at widths from 1 to 1e15 (1, 2, 3, 5, 16, 64 and
256 at every setting; 1024 and 4096, past 300, 7, 8, 32, 128 and 8192, off those grids, 2^20
and 10^6 + 3, far past them, and 1e9 + 7, 1e12 and 1e15 at rho = +-1e-4, at a few settings
only, and a width in every quarter decade from 1 to 1e15 and every power of 2 up to 2^20
(GAP_D_KS: 316, 512 and 562 between 256 and 1024, say), so that the normal entries' formula taken for wide heads past any width up to 1e15, or
a formula right only at the widths probed, shows: the formula must hold at every width;
and 1e15 at rho = +-1 with kurtosis 1 and at rho = 0.5, where the second moment's form
E[s^2] - (E s)^2 loses its digits to cancellation even in float64 (with E[s^2] built as
Var + rho^2 d_k, every one at rho = +-1 and all but one at rho = 0.5), and is told so), for
normal entries (kurtosis 3) and others (from 1 to 10,000 and 1e8, one with more than three
decimals, 1.37, 7.7 and 123.4 between the others, and 1e12, 1e15 and 1e20 at a few settings,
and every quarter decade from 1 to 1e20 and every 0.1 from 1 to 3, 2 among them, at two,
so that a variance wrong only on a band of kurtoses wider than a quarter decade, or than
0.1 between 1 and 3, shows, compared to 1e-6 relative and 1e-13 absolute (the variance
near 0 too), so that a kurtosis rounded to a few decimals or to float16,
clipped at any bound up to 1e15 (and, at rho = -0.8 and 0.5 with kurtosis 1e20, up to
1e20), or looked up in a table of the other kurtoses, shows; a rho
clipped short of +-1, even by 1e-9, or taken as +-1 near them (from 1 - 1e-12 on), is
named as such, and a variance set to 0 where it is small (2e-12 at rho = -(1 - 1e-12)
with kurtosis 1, 1e-10 at rho = +-1 with kurtosis 1 + 1e-10) is told so; where the formula
is exactly 0, the variance at rho = +-1 with kurtosis 1, a variance floored at 1e-12
shows);
the answer is a formula (two plain numbers, the same on every call, not an estimate); and it
agrees with sampled scores for random-sign and Laplace entries. The first check calls
the settings of widths up to 4096 alone; the wider ones (d_k from 5623 up: 8192, 2^20 and
the others past 4096 up to 1e15), the far ones (kurtoses from 1e12 up, |rho| from 5e-13
to 1e-7 at kurtosis 1e20) and the grids (rho every 0.05, the kurtoses every quarter decade
and every 0.1 from 1 to 3, rho near +-1) are called only once the answer has been the
same on every call and, at the first check's settings, wrong at fewer than 90% of them
(a sampled estimate, seeded or not, is wrong at nearly all), so that an estimate sampling
d_k entries per score is told it is one before them (10,000 scores of 2^20 entries each
take 78 GiB). After them, a few settings drawn afresh on every call (DRAWN per comparison,
log-uniform: d_k from 1 to 1e15, |rho| uniform on [0, 1] for half of them and log-uniform
from 1e-15 to 1 for the others, with rho^2 d_k at most 1e6, the
kurtosis from 1 to 1e20) add coverage: every mistake the tests name shows on the fixed
settings, and a failure on a drawn one prints it and the seed that draws it again; a right
answer's report is the same on every call. When an attempt fails, the
checker names the usual mistake it matches, if any; otherwise it gives a setting where the
attempt goes wrong, and says on which settings it is right when those form a pattern
("right only at ..."); it says so when a
variance is negative, or when its errors are float32's or float64's rounding of E[s^2] =
Var + rho^2 d_k (the difference E[s^2] - (E s)^2); it calls an answer clipped only when it
is right wherever the formula lies within the bounds and is the bound wherever the formula
lies beyond them; near rho = +-1 (0.99987654321 among them, where a variance rounded to 8
decimals is off by more than the tolerance) a variance rounded to some decimals is told so
when one number of decimals fits every answer there and before, one that is the formula's at
rho = +-1, or at rho rounded to float32, is told so, and one off by float32's rounding
only when it is a float32 number; a kurtosis read as another is told rounded, cut or
clipped only when every kurtosis probed fits that, and a special case when one kurtosis,
or one band of them, is read as one value; a variance the same at every kurtosis is
asked whether the kurtosis is used; a mean or variance
that is the formula times a factor depending on d_k alone, nearer 1 at every wider width
(rho sqrt(d_k - 1), a variance times d_k/(d_k - 1)), or the formula plus a term in 1/d_k,
or a variance that nears the normal entries' one like 1/d_k, is told so; a mean or
variance right everywhere but at rho = +-1 exactly (or at kurtosis 1 exactly), and one
number at all of them, is asked whether a division by 1 - rho^2 (by kurtosis - 1) gave
0/0 there and its NaN was replaced (np.nan_to_num). A result of
another number type (Decimal, Fraction, sympy, a 0-d tensor, a complex number with imaginary
part 0) counts as the float it converts to. Called without ``kurtosis``, the function must
mean normal entries (the default kurtosis=3.0 of the exercise's signature), and one that
raises then fails; one whose signature gives kurtosis
no default, or whose call without it fails for the missing argument (behind a wrapper of
``*args``), is not failed for it. A kurtosis taken only as a keyword (after a ``*``) is told
to be positional. A mean or variance that is the formula's rounded to a number of
decimals, or to float16, everywhere is told so; a mean or variance that is not finite at
a setting past the first check's fails its own row. When the first check fails (no pair of
finite numbers at some setting), the other six are not run, and the report says so and
counts all seven.

An attempt that calls the library's score_moments or scaled_score_moments, in its own
thread or one it starts, fails. Blind spots: the calls are seen with sys.setprofile and
threading.setprofile, so an attempt that switches the profiler off
(sys.setprofile(None)), runs a copy of the function's code object or of its recompiled
source (exec(inspect.getsource(...))), or reaches the library
in a thread already running when the check starts (a thread pool started before it, say)
or in another process is not caught.
"""

from __future__ import annotations

import inspect
import math
import os
import re
import textwrap
from collections.abc import Callable

import numpy as np

from .. import scores
from ..scores import ENTRY_KURTOSIS, sample_score_parts, sample_statistics, score_moments, scores_from_parts
from ._engine import WIDTH, _RNG_SEED, Rejected, _named, _refusing_the_library, _report, _run

#: Said when the attempt runs the library's own answer ({name}: the function's name).
LIBRARY = ("your function calls the library's own {name}, which is this exercise's "
           "answer: derive the mean and variance and return your own formula, without "
           "the library's function")

#: Widths probed at every correlation and kurtosis below.
D_KS = (1, 2, 3, 5, 16, 64, 256)
#: Correlations probed: +-1, where a rho clipped short of them (np.clip(rho, -0.999,
#: 0.999)) shows; small ones (3e-8, 1e-3, 0.05), where a variance taken as 1 for small
#: |rho| shows; 0.123456 and 0.1234567891, with more decimals than one and than six, so
#: that a rho rounded shows (the sampling checks use -0.6 and 0.7).
RHOS = (-1.0, -0.8, -0.3, 0.0, 3e-8, 1e-3, 0.05, 0.123456, 0.1234567891, 0.5, 1.0)
#: Fourth moments probed: the named distributions' (random signs 1, uniform 1.8, normal 3,
#: Laplace 6), values between and beyond them (2.37 has two decimals, 2.3456789 has more,
#: 9 lies past every named one, 25, 400 and 10,000 far past: heavy-tailed entries have any
#: fourth moment), so that a kurtosis rounded (to two or three decimals), clipped (at 9,
#: 20 or 500) or looked up in a table shows; every value is compared to 1e-6 relative.
#: 1.37, 7.7 and 123.4 lie between those, so that a table of the others shows too; 1e8
#: lies far past 1e4, so that a kurtosis clipped at 1e4 or beyond shows (a clip past 1e8
#: shows at the far kurtoses, 1e12, 1e15 and 1e20).
KURTOSES = (1.0, 1.37, 1.8, 2.3456789, 2.37, 2.5, 3.0, 4.5, 6.0, 7.7, 9.0, 25.0, 123.4,
            400.0, 1e4, 1e8)
#: Wide heads, past 300, where an approximation taken for them (the normal entries'
#: formula beyond some width, say) shows: probed at a few correlations and kurtoses
#: only (9 settings each), so that an attempt that samples scores, whose every call
#: costs in proportion to d_k, is quick enough to be told it is an estimate (the
#: widths past 4096 are called after that check).
WIDE_D_KS = (1024, 4096)
WIDE_RHOS = (-0.8, 0.05, 0.5)
WIDE_KURTOSES = (1.0, 3.0, 7.7)
#: Widths off the grids above (7, 8, 32, 128 between them, 8192 past 4096), probed
#: at a few settings (4 each), so that a formula right only at the widths probed
#: elsewhere shows: the formula must hold at every width.
OFF_D_KS = (7, 8, 32, 128, 8192)
OFF_RHOS = (-0.8, 0.5)
OFF_KURTOSES = (1.37, 7.7)
#: Small correlations at the largest kurtosis, where rho^2 kurtosis is 9e-6, 1e-4, 1e-2
#: and 1, all above the tolerance (about 1e-6 at a variance near 1): a variance
#: taken as 1 for |rho| below any bound from about 3e-7 up (1e-5, 1e-4 or 5e-4, say:
#: "a tiny correlation is independence") shows; a bound below 3e-7 shows at kurtosis
#: 1e20, at the TINY_PROBES (|rho| down to 5e-13).
SMALL_RHOS = (3e-7, 1e-6, 1e-5, 1e-4)
SMALL_RHO_PROBES = tuple((d, r, 1e8) for d in (2, 64) for r in SMALL_RHOS)
#: Far wider heads, 2^20 and 10^6 + 3 (not a power of 2), at kurtoses other than 3
#: (called with the far settings, as 8192 is: WIDER_PROBES):
#: the variance does not depend on d_k, so the normal entries' formula taken for wide
#: heads past any width up to about a million ("the central limit theorem") shows.
HUGE_D_KS = (2**20, 10**6 + 3)
HUGE_PROBES = tuple((d, r, k) for d in HUGE_D_KS for r in OFF_RHOS for k in OFF_KURTOSES)
#: Widths in every gap of the grids above and below (st17b: a formula wrong only
#: for 300 < d_k < 1000 passed, no width lying between 256 and 1024): every quarter
#: decade from 1 to 1e15, round(10^(i/4)) (2, 3, 6, 10, 18, 32, 56, 100, 178, 316,
#: 562, 1000, ...), and every power of 2 up to 2^20, those not probed already. Up to
#: 2^20 at OFF_RHOS and OFF_KURTOSES (4 settings each; those past 4096 are called
#: with the far settings, after the check that the answer is the same on every call:
#: WIDER_PROBES); past 2^20, with the far settings too, at rho = +-1e-4 with kurtoses
#: 1e4 and 1e8, as FAR_D_KS are (rho^2 d_k at most 1e7).
GAP_D_KS = tuple(sorted(({round(10 ** (i / 4)) for i in range(61)}
                         | {2**j for j in range(21)})
                        - set(D_KS + WIDE_D_KS + OFF_D_KS + HUGE_D_KS)))
GAP_PROBES = tuple((d, r, k) for d in GAP_D_KS if d <= 2**20 for r in OFF_RHOS
                   for k in OFF_KURTOSES)
FAR_GAP_PROBES = tuple((d, r, k) for d in GAP_D_KS if d > 2**20 for r in (1e-4, -1e-4)
                       for k in (1e4, 1e8))
#: Far settings, run after the check that the answer is the same on every call (a
#: sampled estimate stops there, before a call at d_k = 1e15 that it could not finish),
#: where a formula costs nothing: widths 1e9 + 7, 1e12 and 1e15 at rho = +-1e-4 and
#: kurtoses 1e4 and 1e8 (rho^2 (kurtosis - 3) is 1e-4 and 1, so that the normal
#: entries' formula taken past any width up to 1e15 shows; rho^2 d_k stays at most 1e7
#: there, where float64's rounding of E[s^2] - (E s)^2 stays below the tolerance: the
#: CANCEL_PROBES show that form);
#: kurtoses 1e12 and 1e15 (a kurtosis clipped at any bound up to 1e15 shows); and
#: rho = 1e-9, -1e-8 and 1e-7 at kurtosis 1e20, where rho^2 (kurtosis - 2) is 100, 1e4
#: and 1e6 (a variance of 1 taken for |rho| below any bound from 1e-9 up shows), and
#: at OFF_RHOS, where the kurtosis shows in the variance (st17b: a kurtosis clipped at
#: 1e16 was told a small rho's mistake: at 1e20 only tiny rhos were probed).
FAR_D_KS = (10**9 + 7, 10**12, 10**15)
FAR_KURTOSES = (1e12, 1e15)
TINY_RHOS, TINY_KURTOSIS = (1e-9, -1e-8, 1e-7), 1e20
#: Tinier correlations still at kurtosis 1e20 (st18b: a variance of 1 for |rho| < 5e-10
#: and a mean of 0 for |rho| < 1e-9 passed): rho^2 (kurtosis - 2) is 1 and 1e-4 at
#: rho = +-1e-10 and +-1e-12, above the tolerance, and at d_k = 1e15 the mean
#: rho sqrt(d_k) is 3.2e-3 and 3.2e-5, above its 1e-9; with TINY_RHOS there too.
#: (st25d: a variance of 1 for |rho| < 1e-12, and rho taken as 0 there, passed: the
#: smallest probes were +-1e-12 itself) and at 9e-13 and -5e-13, where rho^2 kurtosis is
#: 8.1e-5 and 2.5e-5, above the tolerance too.
TINIER_RHOS = (1e-10, -1e-10, 1e-12, -1e-12, 9e-13, -5e-13)
TINY_PROBES = tuple((d, r, TINY_KURTOSIS) for d in (2, 64, 10**15)
                    for r in TINY_RHOS + TINIER_RHOS
                    if d == 10**15 or r in TINIER_RHOS)
#: A fine grid of correlations over [-1, 1] (st18b: the normal entries' formula for
#: 0.8 < |rho| < 0.99, and a variance 1% off for 0.55 < |rho| < 0.75, passed: between
#: 0.5 and 1 only -0.8 and the near-one values were probed): every 0.05, both signs,
#: and +-0.99 and +-0.999, those not in RHOS, at kurtoses 1, 1.37, 3 and 7.7 and
#: widths 3 and 64; and +-0.96, +-0.97 and +-0.98 (st25d: the normal entries' formula
#: for 0.96 < |rho| < 0.985 passed).
FINE_RHOS = tuple(sorted(({round(i / 20, 2) for i in range(-20, 21)}
                          | {0.96, -0.96, 0.97, -0.97, 0.98, -0.98}
                          | {0.99, -0.99, 0.999, -0.999}) - set(RHOS)))
FINE_PROBES = tuple((d, r, k) for d in (3, 64) for r in FINE_RHOS
                    for k in (1.0, 1.37, 3.0, 7.7))
#: Kurtoses on a grid with no gap wider than a quarter decade from 1 to 1e20
#: (st18b: a variance 1% off for 10 < kurtosis < 20, or 1e8 < kurtosis < 1e12,
#: passed): every quarter decade, 10^(i/4) to four digits (1.778, 3.162, 5.623, 10,
#: 17.78, ...), those not probed already, at rho = -0.8 (d_k = 3) and 0.5 (d_k = 64);
#: up to 1e8 with the fixed settings, past it with the far ones.
GAP_KURTOSES = tuple(sorted({float(f"{10 ** (i / 4):.4g}") for i in range(1, 81)}
                            - {*KURTOSES, *FAR_KURTOSES, TINY_KURTOSIS}))
GAP_KURTOSIS_PROBES = tuple((d, r, k) for k in GAP_KURTOSES
                            for d, r in ((3, -0.8), (64, 0.5)))
#: And every 0.1 from 1 to 3 (st22d: a kurtosis taken as 2 between 1.85 and 2.3, a
#: variance of 1 for kurtoses within 5% of 2, a kurtosis below 1.3 taken as 1 and a
#: formula wrong at kurtosis 2 alone passed: between 1 and 3 the quarter decades left
#: 1.37, 1.778, 1.8, 2.3456789, 2.37 and 2.5, and 2, the exercise's own part 2, was never
#: probed), those not probed already, at the same two settings.
LINEAR_KURTOSES = tuple(sorted({round(1 + i / 10, 1) for i in range(1, 20)}
                               - {*KURTOSES, *GAP_KURTOSES}))
LINEAR_KURTOSIS_PROBES = tuple((d, r, k) for k in LINEAR_KURTOSES
                               for d, r in ((3, -0.8), (64, 0.5)))
#: And at d_k = 1e15, rho = +-1 with kurtosis 1 (where the variance is exactly 0) and
#: rho = 0.5 at kurtoses 3 and 7.7: there rho^2 d_k is 1e15 and 2.5e14, so that the
#: second moment's form E[s^2] - (E s)^2 loses its digits to cancellation even in
#: float64 (0.125 for 0 at rho = 1, 1.28125 for 1.25 at rho = 0.5), and shows.
CANCEL_PROBES = ((10**15, 1.0, 1.0), (10**15, -1.0, 1.0), (10**15, 0.5, 3.0),
                 (10**15, 0.5, 7.7))
FAR_PROBES = tuple((d, r, k) for d in FAR_D_KS for r in (1e-4, -1e-4) for k in (1e4, 1e8)) \
    + tuple((d, r, k) for d in (2, 64) for r in OFF_RHOS for k in FAR_KURTOSES) \
    + tuple((d, r, TINY_KURTOSIS) for d in (2, 64) for r in TINY_RHOS + OFF_RHOS) \
    + CANCEL_PROBES \
    + FAR_GAP_PROBES
#: Settings drawn afresh on every call, after the far ones, DRAWN of them for each of the
#: three comparisons (the mean; the variance for normal entries; for others): d_k
#: log-uniform from 1 to 1e15, |rho| with either sign, for half of them uniform on
#: [0, 1] and for the others log-uniform from 1e-15 to 1 (but at most 1e3 / sqrt(d_k),
#: so that rho^2 d_k stays at most 1e6: see FAR_PROBES), the
#: kurtosis log-uniform from 1 to 1e20 (3 for normal entries). They only add coverage:
#: every mistake the tests name is seen on the fixed settings; a failure on a drawn one
#: prints the setting and the seed that draws it again.
DRAWN = 4
#: Correlations near +-1 at kurtoses near 1, where the variance (1 - rho^2 at kurtosis
#: 1) is small and 1 - rho^2 is lost to cancellation in float32: a formula computed in float32
#: (np.float32, or torch's default dtype) is off by a relative 2.2e-4 at (16, 0.9999,
#: 1) and gives 0 at rho = 1 - 1e-8 (float32's 1.0), and shows (at 1.37 it is right to
#: the tolerance). Compared after the fixed settings, before the drawn ones, and kept
#: out of the diagnosis of those (their answers are not in ``values``).
#: 0.99987654321, with more digits, so that a variance rounded to 8 decimals shows
#: (off by 1.7e-9 there at kurtosis 1, past the tolerance 1.2e-9; st17b).
#: 1 - 1e-10 and -(1 - 1e-12), where the variance at kurtosis 1 is 2e-10 and 2e-12
#: (st23d: rho taken as +-1 for |rho| > 1 - 1e-8, or when math.isclose(|rho|, 1), and
#: a variance below 1e-9 returned as 0, passed: 1 - 1e-8 was the nearest, and the
#: tolerance near 0 was an absolute 1e-9), and rho = +-1 at kurtosis 1 + 1e-10, where
#: it is 1e-10 at rho = +-1 itself: a small variance set to 0 shows there, a rho
#: taken as +-1 does not.
NEAR_ONE_RHOS, NEAR_ONE_KURTOSES = (0.9999, -0.9999, 1 - 1e-8, 0.99987654321, 1 - 1e-10,
                                    -(1 - 1e-12)), (1.0, 1.37)
NEAR_ONE_PROBES = tuple((16, r, k) for r in NEAR_ONE_RHOS for k in NEAR_ONE_KURTOSES) + \
    ((16, 1.0, 1 + 1e-10), (16, -1.0, 1 + 1e-10))
#: The settings the first check calls, widths up to 4096 (st23d: a sampled estimate of
#: 10,000 scores ran out of memory at d_k = 2^20 before it was told it is an estimate),
#: and the wider ones of the fixed settings (8192, the gaps past 4096, 2^20 and
#: 10^6 + 3), called with the far settings, once the answer has been the same on every
#: call; both are compared as the fixed settings.
FIXED_PROBES = tuple((d, r, k) for d in D_KS for r in RHOS for k in KURTOSES) + \
    tuple((d, r, k) for d in WIDE_D_KS for r in WIDE_RHOS for k in WIDE_KURTOSES) + \
    tuple((d, r, k) for d in OFF_D_KS for r in OFF_RHOS for k in OFF_KURTOSES) + \
    SMALL_RHO_PROBES + HUGE_PROBES + GAP_PROBES
PROBES = tuple(p for p in FIXED_PROBES if p[0] <= 4096)
WIDER_PROBES = tuple(p for p in FIXED_PROBES if p[0] > 4096)
#: The grids of st18b and st22d (FINE_PROBES, GAP_KURTOSIS_PROBES, LINEAR_KURTOSIS_PROBES,
#: TINY_PROBES), called with the
#: far settings and compared once the fixed and far ones agree: an attempt wrong there
#: is diagnosed on them all (one wrong before is told as before, on those alone).
GRID_PROBES = tuple(dict.fromkeys(FINE_PROBES + GAP_KURTOSIS_PROBES + LINEAR_KURTOSIS_PROBES
                                   + TINY_PROBES))


def _d_text(d: int) -> str:
    """A width as the report prints it: 4096, 1048576, 1e9 + 7, 1e15."""
    if d < 10**9:
        return str(d)
    e = len(str(d)) - 1
    if d - 10**e >= 1000:  # (a width off the round ones: all its digits)
        return str(d)
    return f"1e{e}" + (f" + {d - 10**e}" if d > 10**e else "")


def _widths_text(ds) -> str:
    """Widths as a message lists them: all of them up to eight, else the first three
    and the last two, and how many."""
    ds = sorted(ds)
    if len(ds) <= 8:
        return ", ".join(map(_d_text, ds))
    return (", ".join(map(_d_text, ds[:3])) + ", ..., "
            + ", ".join(map(_d_text, ds[-2:])) + f": {len(ds)} widths")


def _fresh_seed() -> int:
    """A seed from the operating system, new on every call."""
    return int.from_bytes(os.urandom(4), "little")


def _draw(seed: int) -> tuple:
    """The settings drawn afresh (see DRAWN): DRAWN at kurtosis 3, then DRAWN at a
    kurtosis drawn too, as (d_k, rho, kurtosis) with d_k an int."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(2 * DRAWN):
        d = max(1, int(10 ** rng.uniform(0, 15)))
        # half of them |rho| uniform on [0, 1], half log-uniform from 1e-15 to 1
        size = rng.uniform(0, 1) if i % 2 else 10 ** rng.uniform(-15, 0)
        size = min(size, 1e3 / math.sqrt(d))
        k = 3.0 if i < DRAWN else float(10 ** rng.uniform(0, 20))
        out.append((d, float(rng.choice((-1.0, 1.0)) * size), k))
    return tuple(out)


def _k_text(k: float) -> str:
    """A kurtosis as the report prints it: 2.3456789, 10000, 1e8."""
    return f"{k:.10g}" if k < 1e6 else f"{k:.4g}".replace("e+0", "e").replace("e+", "e")


# Settings called a second time: a formula gives the same answer, a sampled estimate does not.
REPEATS = ((16, 0.5, 3.0), (64, -0.3, 6.0), (3, 1.0, 1.0))

# The table of mistakes: (0 for the mean or 1 for the variance, the wrong formula as a
# function of d_k, rho and kurtosis, the sentence that names it).
MISTAKES = [(0, *m) for m in [
    (lambda d, r, k: abs(r) * np.sqrt(d),
     "the mean has the sign of rho: a key that points away from its query (rho < 0) gives a "
     "negative mean, E[q.k] = rho d_k; drop the abs()"),
    (lambda d, r, k: r**2 * np.sqrt(d),
     "the mean is linear in rho, not quadratic: E[rho |q|^2] = rho E|q|^2 = rho d_k"),
    (lambda d, r, k: r * d,
     "the mean is not divided by sqrt(d_k): rho d_k is the mean of the raw score q.k; the scaled "
     "score's mean is rho d_k / sqrt(d_k) = rho sqrt(d_k)"),
    (lambda d, r, k: r + 0.0 * d,
     "the mean is divided by d_k instead of sqrt(d_k): the scaled score is q.k / sqrt(d_k), and "
     "E[q.k] = rho d_k"),
    (lambda d, r, k: 0.0 * d,
     "the mean is zero only when rho = 0: the term rho |q|^2 has mean rho d_k"),
    (lambda d, r, k: np.sqrt(d) + 0.0 * r,
     "the mean does not depend on rho: E[q.k] = rho E|q|^2 + sqrt(1 - rho^2) E[q.z] = rho d_k"),
]] + [(1, *m) for m in [
    (lambda d, r, k: 1.0 + 0.0 * r,
     "the variance is 1 only for independent q and k: you forgot the rho^2 term that "
     "rho |q|^2 contributes, rho^2 Var(|q|^2) / d_k"),
    (lambda d, r, k: 1.0 + r**2,
     "1 + rho^2 is the answer for normal entries only (kurtosis 3): which step of its "
     "derivation used E[q_m^4] = 3? Redo that step with E[q_m^4] = kurtosis"),
    (lambda d, r, k: 1.0 + r * (k - 2.0),
     "rho is not squared: Var(rho X) = rho^2 Var(X), so the variance cannot be negative or "
     "odd in rho"),
    (lambda d, r, k: 1.0 + r,
     "rho is not squared: Var(rho X) = rho^2 Var(X), and the variance cannot depend on the "
     "sign of rho"),
    (lambda d, r, k: 1.0 + abs(r) * (k - 2.0),
     "|rho| where rho^2 belongs: Var(rho X) = rho^2 Var(X), so the rho |q|^2 term adds "
     "rho^2 (kurtosis - 1), not |rho| (kurtosis - 1)"),
    (lambda d, r, k: r**2 * (k - 1.0) + np.sqrt(1.0 - r**2),
     "the noise term's coefficient is not squared: Var(c X) = c^2 Var(X), so "
     "sqrt(1 - rho^2) q.z adds (1 - rho^2) to the scaled variance, not sqrt(1 - rho^2)"),
    (lambda d, r, k: 1.0 + r**2 * (k - 2.0) + 2.0 * r * np.sqrt(1.0 - r**2),
     "a covariance term 2 rho sqrt(1 - rho^2) was added: Cov(|q|^2, q.z) = 0, since z "
     "has mean 0 and is independent of q (E[|q|^2 q.z] = sum_l,m E[q_l^2 q_m] E[z_m] = "
     "0), so the variances of rho |q|^2 and sqrt(1 - rho^2) q.z simply add"),
    (lambda d, r, k: d * (1.0 + r**2 * (k - 2.0)),
     "the variance is unscaled: that is Var(q.k); dividing the score by sqrt(d_k) divides its "
     "variance by d_k"),
    (lambda d, r, k: d * (1.0 + r**2),
     "the variance is unscaled and ignores the kurtosis: d_k (1 + rho^2) is Var(q.k) for normal "
     "entries; divide by d_k, and use Var(q_m^2) = kurtosis - 1"),
    (lambda d, r, k: d + 0.0 * r,
     "the variance is unscaled: d_k is Var(q.k) for independent q and k; the scaled score's "
     "variance does not grow with d_k"),
    (lambda d, r, k: np.sqrt(d) * (1.0 + r**2 * (k - 2.0)),
     "the variance is divided by sqrt(d_k) instead of d_k: Var(c X) = c^2 Var(X)"),
    (lambda d, r, k: 1.0 + r**2 * (k - 1.0),
     "one rho^2 too many: Var(q_m^2) was taken as E[q_m^4] (it is E[q_m^4] - 1 = "
     "kurtosis - 1), or the noise term sqrt(1 - rho^2) q.z was given variance d_k (it is "
     "(1 - rho^2) d_k), or the per-term mean E[q_m k_m] = rho was not subtracted "
     "(Var(q_m k_m) = E[q_m^2 k_m^2] - rho^2; the mean is 0 only when rho = 0)"),
    (lambda d, r, k: 1.0 + r**2 * k,
     "two rho^2 too many: Var(q_m^2) is E[q_m^4] - 1 = kurtosis - 1, and the noise term "
     "sqrt(1 - rho^2) q.z has variance (1 - rho^2) d_k"),
    (lambda d, r, k: 1.0 + r**2 * (k - 3.0),
     "kurtosis here is the fourth moment E[q_m^4] (3 for normal entries), not the excess "
     "kurtosis E[q_m^4] - 3; or Var(q_m^2) taken as E[q_m^4] - 2; it is E[q_m^4] - 1"),
    (lambda d, r, k: 1.0 + r**2 * (k + 1.0),
     "kurtosis is already the fourth moment E[q_m^4] (3 for normal entries): it was read as the "
     "excess kurtosis and 3 added to it, E[q_m^4] = kurtosis + 3; use Var(q_m^2) = kurtosis - 1"),
    (lambda d, r, k: (1.0 + r**2) * (k - 1.0) / 2.0,
     "the kurtosis scales the whole variance, but only the term rho |q|^2 involves q_m^2: its "
     "variance becomes rho^2 (kurtosis - 1), while the noise term sqrt(1 - rho^2) q.z keeps "
     "(1 - rho^2) whatever the kurtosis"),
    (lambda d, r, k: r**2 * (k - 1.0),
     "the noise term is missing: sqrt(1 - rho^2) q.z adds (1 - rho^2) to the scaled variance"),
    (lambda d, r, k: np.sqrt(1.0 + r**2 * (k - 2.0)),
     "that is the standard deviation; return the variance, its square"),
    (lambda d, r, k: 1.0 + r**2 * (k - 2.0) + r**2 * d,
     "that is the second moment E[s^2], not the variance: Var(s) = E[s^2] - (E s)^2, "
     "so subtract the mean's square, (rho sqrt(d_k))^2 = rho^2 d_k"),
]]
#: How far a sampled estimate may stray and still count as "close": 15% of the score's standard
#: deviation for a mean, 15% for a variance (five standard errors of a thousand-odd samples).
ESTIMATE_TOL = 0.15


def _ref(which: int):
    return lambda *p: score_moments(*p)[which]


#: How far from the formula an answer may lie where the formula is 0 (the variance at
#: rho = +-1 with kurtosis 1, the mean at rho = 0) or near it (past that, a relative
#: 1e-6): float64's rounding of a right
#: formula written another way (E[s^2] - (E s)^2 leaves about 1e-15 at the widths up
#: to 256; at 1e15 it leaves 0.125, and fails), but not a floor such as
#: max(variance, 1e-12).
ZERO_ATOL = 1e-13


def _eq(got, want):
    """Equal to a relative 1e-6 (float32's rounding of a variance of size 1 included),
    and to ZERO_ATOL where ``want`` is near 0 (or exactly 0). A formula computed in
    float32 is not right: near rho = +-1 at kurtosis near 1 its 1 - rho^2 cancels (NEAR_ONE_PROBES)."""
    want = np.asarray(want, dtype=float)
    # (st23d: an absolute 1e-9 elsewhere let a variance of 2e-10 returned as 0 pass)
    return np.abs(np.asarray(got, dtype=float) - want) <= ZERO_ATOL + 1e-6 * np.abs(want)


def _same(got, want) -> bool:
    return bool(np.all(_eq(got, want)))


def _col(values, which: int, probes, formula=None) -> np.ndarray:
    """The attempt's mean (which = 0) or variance (1) at each probe, or ``formula``'s."""
    return np.array([formula(*p) if formula else values[p][which] for p in probes], float)


def _near(values: dict, which: int, probes, want) -> bool:
    """Whether the attempt is within sampling error of ``want`` at every probe (an estimate)."""
    sd = np.sqrt(np.maximum(np.maximum(_col(values, 1, probes, _ref(1)),
                                       _col(values, 1, probes)), 0.0))  # the larger of the two
    tol = ESTIMATE_TOL * (sd if which == 0 else np.abs(want)) + 0.01
    return bool(np.all(np.abs(_col(values, which, probes) - want) <= tol))


def _number(x, what: str) -> float:
    """One returned value as a float, or an error that says what it is instead. A number
    of another type (Decimal, Fraction, sympy's or mpmath's, a 0-d tensor that requires
    grad, a complex number whose imaginary part is 0) counts as the float it converts
    to (st22d: right answers as Decimal, sympy and cmath were told they were no numbers,
    or square roots of negatives)."""
    if isinstance(x, (bool, np.bool_)):
        raise Rejected(f"the {what} is a bool ({x!r}): return a number")
    if callable(getattr(x, "detach", None)):  # a tensor that requires grad
        x = x.detach()
    try:
        arr = np.asarray(x)
    except Exception:  # an object NumPy cannot read
        arr = None
    shape = arr.shape if arr is not None else tuple(getattr(x, "shape", ()))
    if len(shape) != 0:
        raise Rejected(f"the {what} must be one number, got an array of shape {shape}: "
                        "return the pair as two numbers, `return mean, variance`")
    if arr is not None and arr.dtype.kind in "iuf":
        return float(arr)
    if arr is not None and arr.dtype.kind in "SUV" or isinstance(x, (str, bytes)):
        raise Rejected(f"the {what} must be a number, got {x!r:.60}")
    try:
        value = complex(arr if arr is not None and arr.dtype.kind == "c" else x)
    except Exception:  # noqa: BLE001 - no number: said so below
        try:
            return float(x)
        except Exception:  # noqa: BLE001
            raise Rejected(f"the {what} must be a number, got {x!r:.60}: return a "
                           "float") from None
    if value.imag != 0:
        raise Rejected(f"the {what} is a complex number ({x!r:.60}): a square root of "
                        "something negative? Both moments are real")
    return value.real


def _numbers(fn: Callable, p) -> tuple[float, float] | None:
    """The attempt's pair at ``p`` as two floats, finite or not, or None when the call
    fails or returns no pair of numbers."""
    try:
        result = fn(*p)
        return _number(result[0], "mean"), _number(result[1], "variance")
    except Exception:  # noqa: BLE001 - no pair: None
        return None


def _pair(result) -> tuple[float, float]:
    """The attempt's result as two finite floats, or an error that says what it returned."""
    if result is None:
        raise Rejected("the function returned None: return the pair (mean, variance)")
    if isinstance(result, dict):
        raise Rejected(f"the function returned a dict ({result!r:.60}): return the pair "
                        "(mean, variance) as a tuple, `return mean, variance`")
    shape = getattr(result, "shape", None)
    if shape is not None and tuple(shape) != (2,):
        raise Rejected(f"the function returned an array of shape {tuple(shape)}: return the "
                        "pair (mean, variance) as two numbers, `return mean, variance`")
    if isinstance(result, str) or not hasattr(result, "__len__") or len(result) != 2:
        raise Rejected(f"the function must return a pair (mean, variance), got {result!r:.60}")
    mean, var = _number(result[0], "mean"), _number(result[1], "variance")
    if not (np.isfinite(mean) and np.isfinite(var)):
        raise Rejected(f"the function returned ({mean}, {var}): both must be finite numbers; "
                       "NaN comes from an operation with no answer, such as np.sqrt of a "
                       "negative number or 0/0, and inf from an overflow or a division by 0")
    return mean, var


def _parameters(fn: Callable) -> list | None:
    """The attempt's parameters (inspect.Parameter), or None when Python cannot read
    its signature (a built-in, say)."""
    try:
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None


def _kurtosis_keyword_only(fn: Callable) -> bool:
    """Whether the attempt takes ``kurtosis`` only as a keyword (after a ``*``)."""
    return any(p.name == "kurtosis" and p.kind is p.KEYWORD_ONLY
               for p in _parameters(fn) or ())


#: Said when kurtosis is keyword-only (st23d: told "must take three arguments").
KEYWORD_ONLY = ("your function takes kurtosis only as a keyword (after a `*`), but the "
                "exercise's signature is scaled_score_moments(d_k, rho, kurtosis=3.0), "
                "and it is called with kurtosis as the third positional argument: drop "
                "the `*`")


def _raised_by_the_call(exc: BaseException) -> bool:
    """Whether ``exc`` was raised by calling the attempt itself (its arguments not
    bound), not inside it: the traceback's last frame is the checker's own (st25d: a
    library call of the wrong arity inside the attempt was told that the attempt must
    take three arguments)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    here = os.path.dirname(os.path.abspath(__file__))
    return tb is not None and os.path.dirname(
        os.path.abspath(tb.tb_frame.f_code.co_filename)) == here


def _call(fn: Callable, d_k, rho, kurtosis) -> tuple[float, float]:
    try:
        result = fn(d_k, rho, kurtosis)
    except TypeError as exc:
        if "argument" in str(exc) and _raised_by_the_call(exc):
            if _kurtosis_keyword_only(fn):
                raise TypeError(f"{exc}: {KEYWORD_ONLY}") from None
            raise TypeError(f"{exc}: the function must take three arguments, "
                            "scaled_score_moments(d_k, rho, kurtosis)") from None
        raise
    return _pair(result)


ARGUMENTS_SWAPPED = ("the arguments are in the wrong order: your function is right when "
                     "called as fn(rho, d_k, kurtosis), but the exercise calls "
                     "scaled_score_moments(d_k, rho, kurtosis), the width first (with the "
                     "order swapped a negative rho reaches a square root)")


def _arguments_swapped(fn: Callable) -> bool:
    """Whether the attempt gives the formula when called with d_k and rho swapped (at
    settings where that call is defined: rho from 0 up)."""
    try:
        return all(_same(np.array(_call(fn, r, d, k)), np.array(score_moments(d, r, k)))
                   for d, r, k in PROBES if r >= 0 and d > 1)
    except Exception:  # noqa: BLE001 - the swapped call fails too: not that mistake
        return False


def _small_rho(values: dict, which: int, wrong: list) -> str:
    """A message when the attempt is wrong at small |rho| only (every |rho| it gets
    wrong lies below every other one at which the formula differs from its value at
    rho = 0), or ""."""
    bad_rhos = {abs(r) for _, r, _ in wrong}
    if not bad_rhos or 0.0 in bad_rhos:
        return ""
    telling = {abs(r) for d, r, k in values
               if not _same(_ref(which)(d, r, k), _ref(which)(d, 0.0, k))}
    good_rhos = telling - bad_rhos
    # (right at +-1 only is no pattern of small |rho|: _where_right names that)
    if not good_rhos or max(bad_rhos) >= min(good_rhos) or min(good_rhos) >= 1.0:
        return ""
    small = ", ".join(f"{r:.10g}" for r in sorted(bad_rhos))
    return (f"right at rho = 0 and for |rho| >= {min(good_rhos):.10g}, but wrong for "
            f"small |rho| (|rho| = {small}): the formula holds for every rho, however "
            "small; an approximation for small |rho| is not the exact "
            f"{'mean' if which == 0 else 'variance'}")


def _wide_only(which: int, wrong: list, probes=FIXED_PROBES) -> str:
    """A message when the attempt's mean (which = 0) or variance (1) is wrong only from
    some width past 5 on, right at every setting of every narrower width probed, or ""."""
    wide = sorted({d for d, _, _ in wrong})
    widths = sorted({d for d, _, _ in probes})
    why = WIDTH_WHY[which]
    if wide and wide[0] > 5 and wide == [d for d in widths if d >= wide[0]]:
        return (f"right only at the probed widths up to d_k = "
                f"{_d_text(max(d for d in widths if d < wide[0]))}, wrong at d_k = "
                f"{_widths_text(wide)}: {why}")
    return ""


#: Said when the attempt is the formula times a factor that depends on d_k alone and
#: tends to 1 as d_k grows (st19b: rho sqrt(d_k - 1), a variance times d_k/(d_k - 1)).
FACTOR_IN_D_K = ("your {what} is the formula times a factor depending on d_k that "
                 "tends to 1 (such as (d_k-1)/d_k): the exact moments have none; the "
                 "formula holds exactly at every width")


def _factor_in_d_k(values: dict, which: int) -> str:
    """FACTOR_IN_D_K when the attempt's mean (which = 0) or variance (1), divided by
    the formula's, is one number at each width past 1 (at every setting where the
    formula is not near 0), not 1 at three widths at least, and nearer 1 at every
    wider width, within 1e-3 of 1 at the widest; "" otherwise."""
    ratios: dict = {}
    for (d, r, k), got in values.items():
        want = _ref(which)(d, r, k)
        g = got[which]
        if d < 2 or not np.isfinite(g) or not np.isfinite(want) or abs(want) < 1e-6:
            continue
        ratios.setdefault(d, []).append(g / want)
    if len(ratios) < 3:
        return ""
    far = []  # |ratio - 1| per width, widths in increasing order
    for d in sorted(ratios):
        rs = np.array(ratios[d])
        if np.ptp(rs) > 1e-9 * np.max(np.abs(rs)):  # not one factor at this width
            return ""
        far.append(abs(float(rs[0]) - 1.0))
    if sum(f > 1e-6 for f in far) < 3 or far[-1] > 1e-3:
        return ""
    if any(b > a * (1 + 1e-9) + 1e-15 for a, b in zip(far, far[1:])):
        return ""  # not nearer 1 at every wider width
    return FACTOR_IN_D_K.format(what="mean" if which == 0 else "variance")


def _kurtosis_unused(values: dict) -> str:
    """A message when the attempt's variance is one number at each (d_k, rho) whatever
    the kurtosis, where the formula's is not (st22d: a cache keyed on (d_k, rho) alone,
    told to fix Var(q_m^2), gave every kurtosis the first one's answer), or ""."""
    groups: dict = {}
    for (d, r, k), (_, v) in values.items():
        groups.setdefault((d, r), []).append((k, v))
    telling = []
    for (d, r), kv in groups.items():
        if len(kv) < 2:
            continue
        want = np.array([_ref(1)(d, r, k) for k, _ in kv])
        if _same(want, want[0]):  # (rho = 0, or too small to show the kurtosis)
            continue
        got = np.array([v for _, v in kv])
        if not _same(got, got[0]):
            return ""
        telling.append((d, r, kv))
    if len(telling) < 3:
        return ""
    d, r, kv = telling[0]
    ks = sorted(k for k, _ in kv)
    shown = ", ".join(map(_k_text, ks[:3])) + (", ..." if len(ks) > 3 else "")
    return (f"your variance does not change with the kurtosis (at d_k = {_d_text(d)}, "
            f"rho = {r:g}, it is {kv[0][1]:.6g} at kurtosis {shown}), where the exact one "
            "does: is the kurtosis argument used? A cache keyed on (d_k, rho) alone, or a "
            "value kept from an earlier call, gives every kurtosis one answer")


def _fades_with_d_k(values: dict, which: int) -> str:
    """A message when the attempt's mean (which = 0) or variance (1) differs from the
    formula by c / d_k at every setting, c one number for each (rho, kurtosis) and not
    0 for all (st22d: a variance times (1 + 1/d_k) was told "a width treated apart");
    or, for the variance, when its difference from the normal entries' variance is
    the formula's divided by d_k (the non-normal part fading like 1/d_k, "the central
    limit theorem"); or ""."""
    groups: dict = {}
    for (d, r, k), got in values.items():
        groups.setdefault((r, k), []).append((d, float(got[which]), _ref(which)(d, r, k)))
    normal = lambda r: 1.0 + r**2  # noqa: E731 - the normal entries' variance
    for kind in ("correction", "to normal") if which == 1 else ("correction",):
        moved = 0  # the settings, at widths past 1, where it is wrong
        fits = True
        for (r, k), rows in groups.items():
            if kind == "correction":
                d0, g0, w0 = min(rows)  # c from the narrowest width
                c = (g0 - w0) * d0
                pred = [w + c / d for d, g, w in rows]
            else:
                pred = [normal(r) + (w - normal(r)) / d for d, g, w in rows]
            got = np.array([g for _, g, _ in rows])
            err = np.abs(got - np.array(pred))
            if np.any(err > 1e-12 + 1e-9 * (np.abs(got) + np.abs(np.array(pred)))):
                fits = False
                break
            moved += sum(d > 1 and not _same(g, w) for d, g, w in rows)
        if fits and moved >= 3:
            name = "mean" if which == 0 else "variance"
            if kind == "correction":
                head = (f"your {name} is the formula plus a term that shrinks like 1/d_k "
                        "(its difference from the formula, times d_k, is the same at "
                        "every width for a given rho and kurtosis): a finite-width "
                        "correction? The exact moments have none")
            else:
                head = ("your variance moves from the formula at d_k = 1 toward the normal "
                        "entries' variance as d_k grows (its difference from theirs "
                        "shrinks like 1/d_k)")
            return f"{head}: {WIDTH_WHY[which]}"
    return ""


#: Why a mean (0) or variance (1) does not depend on d_k the way an attempt's does.
WIDTH_WHY = ("the formula rho sqrt(d_k) holds exactly at every width",
             "the scaled variance does not depend on d_k: q.k is a sum of d_k independent "
             "terms q_m k_m, each of one variance at every width (Var(q_m^2) = kurtosis "
             "- 1 at every width), and dividing by sqrt(d_k) divides their sum's variance "
             "by d_k; a wide head makes the score's distribution nearly normal (the "
             "central limit theorem), but not its variance, which keeps the entries' "
             "kurtosis at every width")


def _some_widths(which: int, wrong: list, probes=FIXED_PROBES) -> str:
    """A message when the attempt is right at some widths past 1 (right at d_k = 1
    only is another hint) at every setting, and wrong at others at a setting (rho,
    kurtosis) probed at both, or ""."""
    wide = sorted({d for d, _, _ in wrong})
    why = ("rho sqrt(d_k) holds exactly at every width" if which == 0 else
           "for the variance is Var(q_m k_m), the variance of one term of q.k, which is "
           "the same at every width (Var(q_m^2) = kurtosis - 1 at every width)")
    bad = {(r, k) for _, r, k in wrong}
    right = {d for d, r, k in probes if (r, k) in bad} - set(wide)
    if not wide or not right - {1}:
        return ""
    return (f"right at some widths (d_k = {_widths_text(right)}) and "
            f"wrong at others (d_k = {_widths_text(wide)}) with the same rho "
            f"and kurtosis: is a width treated apart? The formula {why}")


def _digits(x: float, y: float) -> int:
    """The fewest significant digits (6 at least) that print x and y differently."""
    return next((n for n in range(6, 17) if f"{x:.{n}g}" != f"{y:.{n}g}"), 17)


def _where_right(values: dict, which: int, wrong: list) -> str:
    """Which settings the attempt gets right, when they form a pattern that hints at the mistake."""
    right = [p for p in values if p not in wrong]
    if not right:
        return ""
    small = _small_rho(values, which, wrong)
    if small:
        return small
    wide = _factor_in_d_k(values, which) or _wide_only(which, wrong, list(values)) or \
        _some_widths(which, wrong, list(values))
    if wide:
        return wide
    if all(abs(r) not in (0.0, 1.0) for _, r, _ in wrong):
        if which == 0:
            return ("right at rho = 0 and rho = +-1 but not in between: the mean is linear in "
                    "rho, E[q.k] = rho d_k")
        return ("right at rho = 0 and rho = +-1 but not in between: check how each term's "
                "coefficient enters, rho^2 for rho |q|^2 and (1 - rho^2) for sqrt(1 - rho^2) q.z")
    if all(r < 0 for _, r, _ in wrong):
        return "right for rho >= 0 but not for negative rho: mind the sign of rho"
    # (at |rho| < 0.01 the rho^2 term is too small to show a wrong width at most kurtoses)
    if all(d != 1 for d, _, _ in wrong) and all(d == 1 or abs(r) < 0.01 for d, r, _ in right):
        return "right at d_k = 1 only: check how the scaled moments depend on d_k"
    if which == 1 and any(r == 0.0 for _, r, _ in wrong) and \
            all(abs(r) != 1.0 for _, r, _ in wrong):
        return ("right at rho = +-1, where only the term rho |q|^2 is left, but wrong at "
                "rho = 0, where only the noise term sqrt(1 - rho^2) q.z is: its variance "
                "is (1 - rho^2) d_k for any such entries, whatever the kurtosis, since "
                "Var(q_m z_m) = E[q_m^2] E[z_m^2] = 1")
    if which == 1 and any(r == -1.0 for _, r, _ in wrong) and \
            all(r != 1.0 for _, r, _ in wrong):
        return ("right at rho = +1 but wrong at rho = -1: your variance depends on the "
                "sign of rho, and the variance cannot, since rho enters squared (rho^2 "
                "for the term rho |q|^2, 1 - rho^2 for the noise term sqrt(1 - rho^2) "
                "q.z, whose coefficient squared is 1 - rho^2): (1 - rho)^2 where "
                "1 - rho^2 belongs?")
    if which == 1 and any(abs(r) == 1.0 for _, r, _ in wrong) and \
            all(r != 0.0 for _, r, _ in wrong):
        return ("right at rho = 0, where only the noise term is left, but wrong at "
                "rho = +-1, where only the term rho |q|^2 is: its variance is "
                "rho^2 d_k Var(q_m^2), with Var(q_m^2) = E[q_m^4] - 1 = kurtosis - 1")
    if all(k != 3.0 for _, _, k in wrong):
        if which == 0:
            return ("right for normal entries (kurtosis 3) only: the mean does not depend "
                    "on the kurtosis, E[q.k] = rho E|q|^2 = rho d_k whatever the fourth "
                    "moment (only the variance involves E[q_m^4])")
        return ("right for normal entries (kurtosis 3) only: which step of the derivation "
                "used E[q_m^4] = 3? The kurtosis enters there")
    return ""


def _kurtosis_replaced(values: dict) -> str:
    """A message when the attempt's variance is the formula at another kurtosis, the same
    one at every d_k and rho for a given kurtosis (a kurtosis rounded, clipped or looked up
    in a table), or ""."""
    read: dict = {}
    for (d, r, k), (_, v) in values.items():
        if r**2 < 1e-4:  # too little of the kurtosis shows here (none at rho = 0)
            if r == 0.0 and not _same(v, 1.0):
                return ""
            continue
        read.setdefault(k, []).append(2.0 + (v - 1.0) / r**2)  # the kurtosis it used
    as_read = {}
    for k, used in read.items():
        if not np.allclose(used, used[0], rtol=1e-9, atol=1e-9):
            return ""
        as_read[k] = float(used[0])
    changed = {k: u for k, u in as_read.items() if not np.isclose(u, k, rtol=1e-7)}
    if not changed:
        return ""
    pairs = ", ".join(f"{_k_text(k)} as {u:.6g}" for k, u in sorted(changed.items()))
    kept = [k for k in as_read if k not in changed]
    # (a rounding changes every kurtosis it moves: st22d, a kurtosis near 2 taken as 2
    # was told "rounded to a whole number" while 1.37 and 2.37 were used as given)
    rounded = [n for n in (0, 1, 2, 3, 4)
               if all(np.isclose(u, round(k, n), rtol=1e-9) for k, u in changed.items())
               and all(np.isclose(k, round(k, n), rtol=1e-9) for k in kept)]
    above = [u for k, u in changed.items() if k > u]
    below = [u for k, u in changed.items() if k < u]
    places = {0: "to a whole number", 1: "to one decimal", 2: "to two decimals",
              3: "to three decimals", 4: "to four decimals"}
    with np.errstate(over="ignore"):  # (past 65504 a float16 is inf)
        half = {k: float(np.float16(k)) for k in changed}
    if all(np.isclose(u, half[k], rtol=1e-9) for k, u in changed.items()):
        cause = ("the kurtosis was rounded to float16 (np.float16, or "
                 "torch.float16), which keeps about 3 digits")
    elif rounded:
        cause = f"the kurtosis was rounded ({places[rounded[0]]})"
    elif all(u == math.floor(k) for k, u in changed.items()) and \
            all(k == math.floor(k) for k in kept):
        cause = "the kurtosis was cut to a whole number (int() or math.floor)"
    elif all(k < 2 and np.isclose(u, 4.0 - k, rtol=1e-9) for k, u in changed.items()):
        cause = ("every kurtosis below 2 reads as 4 - kurtosis: abs(kurtosis - 2)? "
                 "Var(q_m^2) - 1 = kurtosis - 2 is negative for entries of kurtosis "
                 "below 2 (random signs: -1), and the variance is then below 1")
    elif (not above or _same(np.array(above), above[0])) and \
            (not below or _same(np.array(below), below[0])) and \
            all(k >= max(below, default=-np.inf) for k in as_read if k not in changed) and \
            all(k <= min(above, default=np.inf) for k in as_read if k not in changed):
        bounds = [f"{w} {b[0]:.6g}" for w, b in (("below", below), ("above", above)) if b]
        cause = (f"the kurtosis was clipped ({' and '.join(bounds)} it becomes the bound: "
                 "np.clip, min or max)")
    elif _one_band(as_read, changed):
        lo, hi, u = min(changed), max(changed), next(iter(changed.values()))
        where = (f"kurtosis {_k_text(lo)}" if lo == hi else
                 f"every kurtosis probed from {_k_text(lo)} to {_k_text(hi)}")
        cause = (f"{where} reads as {u:.6g}, the others as given: a special case for "
                 f"the kurtoses near {u:.6g} (math.isclose, or a threshold)?")
    elif len(changed) == 1:
        ((k, u),) = changed.items()
        cause = (f"kurtosis {_k_text(k)} alone reads as {u:.6g}, the others as given: "
                 f"a special case for kurtosis {_k_text(k)} (an if for that value)?")
    # right at 4 kurtoses or more: no formula's slip (a wrong formula in the kurtosis,
    # such as (kurtosis - 1)^2 / 2 for Var(q_m^2), agrees with the right one at a few)
    elif len(as_read) - len(changed) >= 4:
        kept = ", ".join(_k_text(k) for k in sorted(as_read) if k not in changed)
        cause = (f"right only at kurtosis {kept}: was a value looked up per kurtosis, "
                 "or the kurtosis replaced?")
    else:  # Var(q_m^2) wrong, say: the pattern of the settings says more
        return ""
    return (f"your variance is the formula at another kurtosis than the one given "
            f"(kurtosis {pairs}): {cause}; the exercise's kurtosis is any fourth moment "
            "from 1 up, and the formula takes it as given")


def _one_band(as_read: dict, changed: dict) -> bool:
    """Whether the kurtoses ``changed`` (kurtosis -> the one used) are all read as one
    value, form one band of the probed kurtoses (no kurtosis used as given lies between
    them, but that value itself), and that value lies within the band or next to it
    (between the kurtoses used as given on either side of it): a special case for the
    kurtoses near one value."""
    used = set(changed.values())
    if len(used) != 1:
        return False
    (u,) = used
    lo, hi = min(changed), max(changed)
    kept = [k for k in as_read if k not in changed]
    if any(lo < k < hi and not np.isclose(k, u, rtol=1e-9) for k in kept):
        return False
    below = max((k for k in kept if k < lo), default=-np.inf)
    above = min((k for k in kept if k > hi), default=np.inf)
    return below <= u <= above


def _rho_replaced(values: dict) -> str:
    """A message when the attempt's mean and variance are the formula at another rho
    than the one given, the same one at every d_k and kurtosis for a given rho (a rho
    rounded, or clipped short of +-1), or ""."""
    read: dict = {}
    for (d, r, k), (m, v) in values.items():
        u = m / math.sqrt(d)  # the rho its mean used
        if not (abs(u) <= 1 and _same(np.array(score_moments(d, u, k)), np.array((m, v)))):
            return ""
        read.setdefault(r, []).append(u)
    as_read = {}
    for r, used in read.items():
        if not np.allclose(used, used[0], rtol=1e-9, atol=1e-12):
            return ""
        as_read[r] = float(used[0])
    # to a relative 1e-14 (u is read back from the mean, rounding apart): a rho clipped
    # at 1 - 1e-12 is a rho changed, though its variance differs by 2e-12 only
    changed = {r: u for r, u in as_read.items() if not np.isclose(u, r, rtol=1e-14, atol=0)}
    if not changed:
        return ""

    def digits(r, u):  # enough to print u apart from r
        return next((n for n in range(6, 17) if f"{u:.{n}g}" != f"{r:.{n}g}"), 17)

    pairs = ", ".join(f"{r:.10g} as {u:.{digits(r, u)}g}"
                      for r, u in sorted(changed.items()))
    # (a rounding moves every rho it does not leave as it is: st22d, rho near +-1
    # taken as +-1 was told "rounded (to a whole number)")
    rounded = [n for n in range(10)
               if all(np.isclose(u, round(r, n), rtol=1e-14, atol=0)
                      for r, u in changed.items())
               and all(np.isclose(r, round(r, n), rtol=1e-14, atol=0)
                       for r in as_read if r not in changed)]
    if rounded:
        places = {0: "to a whole number", 1: "to one decimal", 2: "to two decimals",
                  3: "to three decimals", 4: "to four decimals", 5: "to five decimals",
                  6: "to six decimals", 7: "to seven decimals", 8: "to eight decimals",
                  9: "to nine decimals"}
        cause = f"rho was rounded ({places[rounded[0]]})"
    elif all(abs(u) < abs(r) for r, u in changed.items()) and \
            _same(np.abs(list(changed.values())), abs(next(iter(changed.values())))) and \
            all(abs(r) <= abs(next(iter(changed.values())))
                for r in as_read if r not in changed):
        bound = abs(next(iter(changed.values())))
        cause = (f"rho was clipped (beyond +-{bound:.{digits(1.0, bound)}g} it becomes the "
                 "bound: np.clip, "
                 "min or max), so the answer is wrong exactly at rho = +-1, where the "
                 "formula is defined like anywhere else (k = +-q, sqrt(1 - rho^2) = 0)")
    elif all(u == math.copysign(1.0, r) for r, u in changed.items()) and \
            all(abs(r) < min(abs(c) for c in changed) for r in as_read
                if r not in changed and abs(r) != 1.0):
        cause = (f"every |rho| probed from {min(abs(c) for c in changed):.10g} up reads "
                 "as 1: was rho replaced by +-1 there (np.isclose, or a threshold, for "
                 "the case k = +-q)?")
    else:
        cause = "was rho changed before the formula?"
    return (f"your mean and variance are the formula at another rho than the one given "
            f"(rho {pairs}): {cause}; the exercise's rho is any correlation from -1 to 1, "
            "and the formula takes it as given")


def _clipped(values: dict, which: int, wrong: list) -> str:
    """A message when the attempt equals the formula except where the formula passes a
    bound, and there returns the bound itself (np.clip, min or max)."""
    got, want = _col(values, which, wrong), _col(values, which, wrong, _ref(which))
    bounds = []
    lo, hi = -np.inf, np.inf
    for side, word in ((want < got, "below"), (want > got, "above")):
        if side.any():
            if not _same(got[side], got[side][0]):
                return ""
            bounds.append(f"{word} {got[side][0]:.6g}")
            lo, hi = (got[side][0], hi) if word == "below" else (lo, got[side][0])
    if not bounds or not lo < hi:  # (one value on both sides is a constant, no clip)
        return ""
    # A clip is wrong exactly where the formula lies outside the bounds (there, above,
    # it is the bound), so right wherever the formula lies inside: a variance of 1 for
    # small |rho| is no clip, since it is right at rho = 0.5 too, where the formula is 2.
    wrong = set(wrong)
    right = [p for p in values if p not in wrong]
    inside = _col(values, which, right, _ref(which))
    if np.any((inside < lo) & ~_eq(inside, lo)) or np.any((inside > hi) & ~_eq(inside, hi)):
        return ""
    name = "mean" if which == 0 else "variance"
    every = (", 0 included (rho = +-1 with kurtosis 1)" if which == 1 else "")
    return (f"your {name} equals the formula except where the formula goes "
            f"{' or '.join(bounds)}, and there it is that bound: clipped (np.clip, min "
            f"or max)? The exact {name} takes every value the formula gives{every}; "
            "return the formula itself")


def _undefined_at(values: dict, which: int, wrong: list) -> str:
    """A message when the attempt is wrong only at rho = +-1 exactly (or only at kurtosis
    1 exactly) and returns one number at every such setting: a formula that divides by
    1 - rho^2 (by kurtosis - 1), 0/0 there, whose NaN is replaced (np.nan_to_num)."""
    # (st25d: a variance NaN at rho = +-1, cleaned to 0, was told its rho |q|^2 term is
    # wrong)
    name = "mean" if which == 0 else "variance"
    for at, where, divisor, aside in (
            (lambda p: abs(p[1]) == 1.0, "rho = +-1", "1 - rho^2 (or by sqrt(1 - rho^2))",
             ""),
            (lambda p: p[2] == 1.0, "kurtosis 1", "kurtosis - 1",
             " (random signs, which the exercise allows)")):
        there = [p for p in values if at(p)]
        fill = {float(values[p][which]) for p in there}
        if not wrong or not all(at(p) for p in wrong) or len(fill) != 1 or \
                len(there) == len(values):
            continue
        fill_text = f"{fill.pop():g}"
        constant = (" Or was the score taken as a constant when k = +-q? It is then "
                    "+-|q|^2 / sqrt(d_k), whose variance is Var(q_m^2) = kurtosis - 1, 0 "
                    "for random signs (kurtosis 1) only." if which == 1 and
                    fill_text == "0" and where == "rho = +-1" else "")
        return (f"right everywhere but at {where} exactly{aside}, where your {name} is "
                f"{fill_text}: does your formula divide by {divisor}, which is 0 there, "
                f"and is the NaN of 0/0 replaced by {fill_text} (np.nan_to_num, or a "
                f"fill value)?{constant} The derivation needs no such division: without "
                f"it the {name} holds at {where} too")
    return ""


def _float16_rounded(values: dict) -> str:
    """"mean" or "variance" when every one of the attempt's answers so far is the
    formula's rounded to float16, and some differ from it; otherwise ""."""
    for which, name in ((1, "variance"), (0, "mean")):
        got = np.array([values[p][which] for p in values])
        want = np.array([score_moments(*p)[which] for p in values])
        with np.errstate(over="ignore"):
            half = want.astype(np.float16).astype(float)
        if got.size and np.array_equal(got, half) and not np.array_equal(half, want):
            return name
    return ""


def _rounded(values: dict, which: int) -> str:
    """A message when every one of the attempt's means (which = 0) or variances (1) is
    the formula's rounded to one number of decimals (from 0 to 12), or to float16, and
    some differ from it (st23d: a mean rounded to 8 decimals was told "an approximation
    for small |rho|"); or ""."""
    name = "mean" if which == 0 else "variance"
    got = np.array([values[p][which] for p in values], float)
    want = np.array([score_moments(*p)[which] for p in values], float)
    if got.size == 0 or np.array_equal(got, want):
        return ""
    with np.errstate(over="ignore"):
        half = want.astype(np.float16).astype(float)
    if np.array_equal(got, half):
        return (f"your {name}s are the formula's rounded to float16 (np.float16, or "
                "torch.float16), which keeps about 3 digits: keep them float64 (Python "
                "floats)")
    for n in range(13):
        if np.allclose(got, np.round(want, n), rtol=1e-12, atol=1e-15):
            return (f"your {name}s are the formula's rounded to {n} decimals: a "
                    "rounding to a fixed number of decimals loses the digits of a small "
                    f"{name}, and the exercise asks for the exact formula; return it "
                    "unrounded")
    return ""


def _negative(values: dict, probes) -> str:
    """What an attempt is told whose variance is negative (beyond rounding) at some of
    ``probes``, or ""."""
    neg = [p for p in probes if values[p][1] < 0 and not _eq(values[p][1], _ref(1)(*p))]
    if not neg:
        return ""
    d, r, k = neg[0]
    return (f"your variance is negative at {len(neg)} of these settings ("
            f"{values[neg[0]][1]:.6g} at d_k = {d}, rho = {r}, kurtosis = {_k_text(k)}), "
            "and a variance never is: it is the mean of a square")


def _float32_cancellation(values: dict, probes, what: str) -> str:
    """What variances are told whose errors stay within the rounding of the second
    moment E[s^2] = Var + rho^2 d_k (float32's, when they are float32 numbers, float64's
    otherwise) but not of the variance: a difference E[s^2] - (E s)^2, which loses
    every digit where rho^2 d_k is large. Otherwise ""."""
    got, want = _col(values, 1, probes), _col(values, 1, probes, _ref(1))
    with np.errstate(over="ignore"):  # (past float32's range: no float32 number)
        single = np.array_equal(got.astype(np.float32).astype(float), got)
    d, r, k = (np.array([p[i] for p in probes], float) for i in range(3))
    second = np.abs(want) + r**2 * d  # E[s^2]
    err = np.abs(got - want)
    eps = float(np.finfo(np.float32 if single else np.float64).eps)
    past = ~_eq(got, want) & (err > 4 * eps * np.abs(want))  # not the variance's rounding
    # (float64's own rounding of a variance near 0, but not a floor at 1e-12)
    slack = 1e-12 if single else 1e-15
    if not past.any() or np.any(err > 4 * eps * second + slack):
        return ""
    i = int(np.argmax(np.where(past, err, -1.0)))
    where = (f"(at d_k = {_d_text(int(d[i]))}, rho = {r[i]:g}, kurtosis = {_k_text(k[i])}, "
             f"E[s^2] is {second[i]:.6g} and the variance {want[i]:.6g})")
    if single:
        return (f"your variances are float32 numbers, off the formula by up to "
                f"{err.max():.2g}, which float32 rounding of the second moment E[s^2] = "
                f"Var + rho^2 d_k explains and rounding of the variance does not {where}: "
                "E[s^2] - (E s)^2 computed in float32? Two numbers of size rho^2 d_k "
                "subtracted lose float32's 7 digits to cancellation; compute the variance "
                "itself, not E[s^2] - (E s)^2 (Var(q_m^2) = kurtosis - 1 at every width)")
    return (f"your variances are off the formula by up to {err.max():.2g}, which float64 "
            "rounding of the second moment E[s^2] = Var + rho^2 d_k explains and "
            f"rounding of the variance does not {where}: E[s^2] - (E s)^2? Subtracting "
            "two numbers near rho^2 d_k loses about as many digits as rho^2 d_k has "
            "before the decimal point (float64 keeps about 16, and "
            f"rho^2 d_k is {second[i]:.2g} here): compute the variance itself, not E[s^2] - "
            "(E s)^2 (Var(q_m^2) = kurtosis - 1 at every width)")


#: Said when the variances are off only by float32's rounding of 1 and rho^2 (kurtosis
#: - 2), wrong near rho = +-1 at kurtosis near 1.
FLOAT32_FORMULA = ("float32 loses the digits of 1 - rho^2 near rho = +-1 (the variance "
                   "is small there at kurtosis near 1, and float32 keeps about 7 "
                   "digits of the terms that cancel: "
                   "np.float32, or a torch tensor of the default dtype?): compute in "
                   "float64 (Python floats)")


def _near_one(near: dict, which: int, what: str, before: dict | None = None
              ) -> tuple[bool, str]:
    """The attempt's mean (which = 0) or variance (1) at NEAR_ONE_PROBES (``near``
    holds its answers there): a variance off by no more than float32's rounding of
    the formula's terms, 1 and rho^2 (kurtosis - 2), is told FLOAT32_FORMULA."""
    # (st22d) a rounding is told only when one number of decimals fits every answer
    # here: rho replaced by +-1 near them gives 0 at 1 - 1e-8, round(2e-8, 7) too
    every = {**(before or {}), **near}  # and the settings compared before
    fits = [n for n in range(13)  # (as _rounded: st25d)
            if all(float(a[which]) == round(score_moments(*p)[which], n)
                   for p, a in every.items())]

    def at(p, rho):  # the formula's answer at another rho
        return score_moments(p[0], rho, p[2])[which]

    for p, answer in near.items():
        got, want = float(answer[which]), score_moments(*p)[which]
        if _same(got, want):
            continue
        d, r, k = p
        n = _digits(got, want)
        detail = (f"{what} at d_k = {d}, rho = {r!r}, kurtosis = {k!r}: got "
                  f"{got:.{n}g}, expected {want:.{n}g}")
        if fits:
            n_text = (f"{fits[0]}" if len(fits) == 1 else
                      f"between {fits[0]} and {fits[-1]}")
            return False, f"{ROUNDED_NEAR_ONE.format(n=n_text)}; {detail}"
        wrong = [q for q, a in near.items() if not _same(float(a[which]), _ref(which)(*q))]
        if all(_same(float(near[q][which]), at(q, math.copysign(1.0, q[1])))
               for q in wrong):
            return False, f"{SNAPPED_TO_ONE.format(what=what)}; {detail}"
        if which == 1 and all(q[2] != 1.0 and _same(float(near[q][1]),
                                                   score_moments(q[0], q[1], 1.0)[1])
                              for q in wrong):
            ks = ", ".join(sorted({repr(q[2]) for q in wrong}))
            return False, (f"near rho = +-1, wherever your variance is wrong (at kurtosis "
                           f"{ks}), it is the formula's at kurtosis 1: was a kurtosis "
                           "near 1 taken as 1 (math.isclose, a threshold, or a "
                           "rounding)? The formula takes every kurtosis as given; "
                           f"{detail}")
        if which == 1 and all(float(near[q][1]) == 0.0 for q in wrong):
            small = max(score_moments(*q)[1] for q in wrong)
            ones = (", at rho = +-1 too, with kurtosis 1 + 1e-10" if
                    any(abs(q[1]) == 1.0 for q in wrong) else "")
            return False, (f"your variance is 0 wherever it is wrong here, where the "
                           f"formula's is small but not 0 (up to {small:.2g}{ones}): "
                           "was a small "
                           "variance set to 0 (a threshold, or a rounding)? The formula "
                           f"holds however small the variance; {detail}")
        if all(_same(float(a[which]), at(q, float(np.float32(q[1]))))
               for q, a in near.items()):
            return False, (f"your {what} here is the formula at rho rounded to float32 "
                           f"({r!r} as {float(np.float32(r))!r}): near rho = +-1 at "
                           "kurtosis near 1 the variance is small, and float32's 7 digits "
                           "of rho leave few of its digits; keep rho a float64 (a Python "
                           f"float); {detail}")
        eps = float(np.finfo(np.float32).eps)
        # (a float32 computation returns a float32 number)
        if which == 1 and abs(got - want) <= 4 * eps * (1 + r**2 * abs(k - 2)) and \
                float(np.float32(got)) == got:
            return False, f"{FLOAT32_FORMULA}; {detail}"
        return False, detail
    return True, ""


#: Said when the answers wrong near rho = +-1 are the formula's at rho = +-1 itself.
SNAPPED_TO_ONE = ("near rho = +-1 your {what} is the formula's at rho = +-1 itself "
                  "wherever it is wrong: was rho replaced by +-1 there "
                  "(np.isclose, or a threshold such as |rho| > 0.999, for the case "
                  "k = +-q)? The formula holds at every rho, however near +-1")

#: Said when an answer near rho = +-1 is the formula's rounded to {n} decimals.
ROUNDED_NEAR_ONE = ("your answer here is the formula's rounded to {n} decimals: near "
                    "rho = +-1 at kurtosis near 1 the variance is small (2e-4 at "
                    "rho = 0.9999 with kurtosis 1), and a rounding to a fixed number of "
                    "decimals keeps few of its digits; return the formula unrounded")


def _diagnose(values: dict, which: int, probes, what: str) -> tuple[bool, str]:
    """``_diagnosed``, and, for a variance, whether it is negative anywhere it is
    compared (``_negative``)."""
    ok, detail = _diagnosed(values, which, probes, what)
    negative = _negative(values, probes) if which == 1 and not ok else ""
    return (ok, f"{detail}; {negative}") if negative else (ok, detail)


def _diagnosed(values: dict, which: int, probes, what: str) -> tuple[bool, str]:
    """Compare the attempt's mean (which = 0) or variance (1) with the formula on ``probes``.

    The table's mistake is named that the attempt equals on every probe at once (a
    formula can agree with a wrong one on part of them: at kurtosis 3, 1 + rho^2
    (kurtosis - 3) is 1), then on ``probes`` alone; then an answer near the formula
    (rounded, or estimated from samples); then the pattern of the settings it gets right.
    Past a mistake named on every probe, the message ends with one setting where it is
    wrong.
    """
    got, want = _col(values, which, probes), _col(values, which, probes, _ref(which))
    wrong = [p for p, ok in zip(probes, _eq(got, want)) if not ok]
    if not wrong:
        return True, ""
    every = list(values)  # each setting evaluated: the fixed ones and the far ones
    if all(_same(_col(values, w, every), _col(values, w, every, _ref(1 - w))) for w in (0, 1)):
        return False, "mean and variance are swapped: return (mean, variance), the mean first"
    formulas = [(m, f) for w, f, m in MISTAKES if w == which]
    named = _named(_col(values, which, every),
                   [(m, lambda f=f: _col(values, which, every, f)) for m, f in formulas], _same)
    if named:
        return False, named
    (d, r, k), i = wrong[0], probes.index(wrong[0])
    n = _digits(got[i], want[i])
    detail = (f"{what} at d_k = {_d_text(d)}, rho = {r}, kurtosis = {k}: got {got[i]:.{n}g}, "
              f"expected {want[i]:.{n}g} (wrong at {len(wrong)} of {len(probes)} settings)")
    named = _named(got, [(m, lambda f=f: _col(values, which, probes, f)) for m, f in formulas],
                   _same)  # a mistake that shows on these settings only
    if named:
        return False, f"on these settings, {named}; {detail}"
    all_wrong = [p for p in every if not _same(values[p][which], _ref(which)(*p))]
    # a variance clipped is named as such before a kurtosis clipped (max(kurtosis - 2, 0)
    # is both)
    # (first: wrong at the far widths only, it would be told a width treated apart)
    cancelled = _float32_cancellation(values, probes, what) if which == 1 else ""
    if cancelled:
        return False, f"{cancelled}; {detail}"
    replaced = _rounded(values, which) or _rho_replaced(values) or \
        _clipped(values, which, all_wrong) or \
        _undefined_at(values, which, all_wrong) or \
        (_kurtosis_replaced(values) if which == 1 else "") or \
        _small_rho(values, which, all_wrong) or _factor_in_d_k(values, which) or \
        _fades_with_d_k(values, which) or _wide_only(which, all_wrong, every)
    if replaced:
        return False, f"{replaced}; {detail}"
    g_w, r_w = _col(values, which, wrong), _col(values, which, wrong, _ref(which))
    # a mistake made on a band of settings only (st18b: the normal entries' formula
    # for 0.8 < |rho| < 0.99), named where it is wrong
    named = _named(g_w, [(m, lambda f=f: _col(values, which, wrong, f))
                         for m, f in formulas], _same)
    if named and not (_wide_only(which, all_wrong, every)
                      or _some_widths(which, all_wrong, every)):  # (widths told below)
        bad = sorted({abs(r) for _, r, _ in wrong})
        return False, (f"right at most settings, but wrong at |rho| from {bad[0]:g} to "
                       f"{bad[-1]:g} (at some of them), and there {named}; {detail}")
    # relative, or within 1e-4 near 0 (a mean rounded to four decimals at rho = 3e-8)
    if np.all(np.abs(g_w - r_w) <= 0.01 * np.abs(r_w) + 1e-4):
        big = np.abs(r_w) >= 0.01
        rel = float(np.max(np.abs(g_w - r_w)[big] / np.abs(r_w[big]), initial=0.0))
        # (every wrong setting near 0: no relative clause)
        elsewhere = f"; by up to a relative {rel:.2g} elsewhere" if big.any() else ""
        return False, (f"within 1% of the formula wherever it differs (within 1e-4 of it "
                       f"near 0{elsewhere}): a rounded value, "
                       "or an estimate from samples? The "
                       f"exercise asks for the exact formula; {detail}")
    # An estimate is near the formula (or near a wrong one) everywhere and on it almost nowhere.
    if len(wrong) >= 0.9 * len(probes):
        if _near(values, which, probes, want):
            return False, ("close to the formula but not equal to it: an estimate from samples? "
                           f"The exercise asks for the exact formula; {detail}")
        for message, f in formulas:
            if _near(values, which, probes, _col(values, which, probes, f)):
                return False, f"close to a wrong formula (an estimate of it?): {message}; {detail}"
    hint = (_kurtosis_unused(values) if which == 1 else "") or \
        _where_right(values, which, all_wrong)
    return False, (f"{hint}; {detail}" if hint else detail)


def _mostly_wrong(values: dict) -> bool:
    """Whether the attempt's mean or variance is wrong at 90% of the first check's
    settings or more, as a sampled estimate is (seeded, it is the same on every call):
    the wider settings are then not called (an estimate's call at d_k = 2^20 could
    take 16 GB)."""
    return any(np.mean(~_eq(_col(values, w, PROBES), _col(values, w, PROBES, _ref(w))))
               >= 0.9 for w in (0, 1))


def _same_on_every_call(fn: Callable, values: dict) -> tuple[bool, str]:
    """A formula returns the same pair every time; a sampled estimate does not."""
    for p in REPEATS:
        again = _call(fn, *p)
        if again != values[p]:
            first = f"({values[p][0]:.4g}, {values[p][1]:.4g})"
            return False, (f"two calls with the same arguments (d_k = {p[0]}, rho = {p[1]}, "
                           f"kurtosis = {p[2]}) gave {first} and then ({again[0]:.4g}, "
                           f"{again[1]:.4g}): that is a sampled estimate, and the exercise asks "
                           "for the exact formula (the checks below compare it with samples "
                           "themselves)")
    return True, ""


def _and_default_is_normal(fn: Callable, outcome: tuple[bool, str], values: dict):
    """``outcome``, and, if it passed, whether a call without ``kurtosis`` means normal entries
    (kurtosis=3.0, as the exercise's signature says). A function that takes no default is
    left alone; one whose default is another number (0, the excess kurtosis of the normal
    distribution, say) fails here."""
    if not outcome[0]:
        return outcome
    d, r = 16, 0.5
    params = _parameters(fn)
    # kurtosis has no default when the third parameter has none (st23d: any TypeError was
    # taken for that, and a default kurtosis=None that fails in the formula passed)
    positional = [p for p in params or () if p.kind in (p.POSITIONAL_ONLY,
                                                         p.POSITIONAL_OR_KEYWORD)]
    required = params is not None and len(positional) >= 3 and \
        positional[2].default is inspect.Parameter.empty
    if required:  # the exercise shows a default, but its lack is no mistake in the formula
        return outcome
    try:
        result = fn(d, r)
    except TypeError as exc:
        # no signature to read, or one that hides the function's (a wrapper taking
        # *args): a TypeError of the call itself is taken for no default
        if params is None or re.search(r"missing \d+ required positional argument|"
                                       r"takes (exactly )?\d+ (positional )?arguments?|"
                                       r"expected \d+ arguments?", str(exc)):
            return outcome
        return False, (f"called without kurtosis, as the exercise's signature allows "
                       f"(scaled_score_moments({d}, {r})), your function raised "
                       f"TypeError: {exc}: the default must be kurtosis=3.0, normal "
                       "entries, a number the formula can use (a default of None must "
                       "be replaced by 3.0 before the formula)")
    except Exception as exc:  # noqa: BLE001 - told as it is
        return False, (f"called without kurtosis (scaled_score_moments({d}, {r})), your "
                       f"function raised {type(exc).__name__}: {exc}: the default must "
                       "be kurtosis=3.0, normal entries")
    got = _pair(result)
    want = values[(d, r, 3.0)]
    if not (_same(got[0], want[0]) and _same(got[1], want[1])):
        return False, (f"called without kurtosis, your function returns ({got[0]:.6g}, "
                       f"{got[1]:.6g}), but with kurtosis=3 ({want[0]:.6g}, {want[1]:.6g}): the "
                       "default must be kurtosis=3.0, normal entries (kurtosis is the fourth "
                       "moment E[q_m^4], 3 for the normal distribution, not the excess "
                       "kurtosis E[q_m^4] - 3)")
    return outcome


def _agrees_with_sampling(fn: Callable, entries: str, d_k: int, rho: float, n: int, seed: int):
    kurtosis = ENTRY_KURTOSIS[entries]
    mean, var = _call(fn, d_k, rho, kurtosis)
    s = scores_from_parts(*sample_score_parts(d_k, n, entries=entries, seed=seed), rho)
    st = sample_statistics(s / np.sqrt(d_k))
    # Five standard errors: the seeds are fixed, so the outcome is the same on every call;
    # with a seed drawn at random a correct formula would fail one of the two tests with
    # probability about 1.2e-6 (5.7e-7 each, the sampled moments near normal).
    ok = (abs(mean - st["mean"]) <= 5 * st["mean_se"] + 1e-12
          and abs(var - st["var"]) <= 5 * st["var_se"] + 1e-12)
    return ok, (f"formula ({mean:.4g}, {var:.4g}) against {n:,} sampled scores: mean "
                f"{st['mean']:.4f} +- {st['mean_se']:.4f}, variance {st['var']:.4f} +- "
                f"{st['var_se']:.4f} (one standard error)")


#: What the report says of the checks after the first when the first fails ({n}: how
#: many): each compares the attempt's pairs.
NOT_RUN = ("✗ the other {n} checks (the same answer on every call, the mean, the "
           "variance for normal and for other entries, the two comparisons with "
           "sampled scores): not run, since each compares the pair of finite "
           "numbers that the first asks for")


def _stopped(first: tuple[str, bool, str], n_later: int, verbose: bool) -> bool:
    """The report when the first check fails: its line, one line for the ``n_later``
    checks not run (NOT_RUN) and the count out of them all, as the engine's report
    prints them (a report of the first check alone would say "0 of 1")."""
    if verbose:
        name, _, detail = first
        for line in (f"✗ {name}: {detail}", NOT_RUN.format(n=n_later)):
            print(textwrap.fill(line, WIDTH, subsequent_indent="    ",
                                break_long_words=True, break_on_hyphens=False))
        print(f"0 of {1 + n_later} checks passed.")
    return False


def check_scaled_score_moments(fn: Callable, verbose: bool = True) -> bool:
    """Check ``fn(d_k, rho, kurtosis) -> (mean, variance)`` of the scaled score q.k / sqrt(d_k)
    with k = rho q + sqrt(1 - rho^2) z and entries of fourth moment ``kurtosis``; an
    attempt that runs the library's own score_moments fails."""
    fn = _refusing_the_library(fn, {"attention.score_moments": scores.score_moments,
                                    "attention.scaled_score_moments":
                                        scores.scaled_score_moments}, LIBRARY)
    values: dict = {}

    def returns_a_pair():
        try:
            for p in PROBES:
                try:
                    values[p] = _call(fn, *p)
                except Rejected as exc:
                    if "must be finite" not in str(exc):
                        raise
                    d, r, k = p
                    where = f" (at d_k = {d}, rho = {r}, kurtosis = {_k_text(k)})"
                    half = float(np.finfo(np.float16).max)
                    rounded = _float16_rounded(values)
                    if rounded:
                        want = score_moments(*p)[rounded == "variance"]
                        where += (f": the {rounded} here is {want:.6g}, past float16's "
                                  "largest number, 65504, where it becomes inf, and "
                                  f"your {rounded}s before it are the formula's "
                                  f"rounded to float16: was the {rounded} rounded to "
                                  "float16 (np.float16, or torch.float16)? Keep it a "
                                  "float64 (a Python float)")
                    elif k > half:
                        where += (f": {_k_text(k)} is past float16's largest number, "
                                  "65504, where it becomes inf: was the kurtosis rounded "
                                  "to float16 (np.float16, or torch.float16)? Keep it a "
                                  "float64 (a Python float)")
                    raise Rejected(f"{exc}{where}") from None
        except Exception:
            if _arguments_swapped(fn):
                raise Rejected(ARGUMENTS_SWAPPED) from None
            raise
        return True, ""

    # The far settings and the drawn ones, called once the answer is known to be the
    # same on every call (not a sampled estimate, which could not finish at d_k = 1e15);
    # a call that fails there fails the first comparison that needs it.
    seed = _fresh_seed()
    drawn = _draw(seed)
    extra: dict = {}  # the drawn settings' answers (kept out of the diagnosis)
    failed: list = []  # (setting, what went wrong, its rows) of a call that failed there
    partial: dict = {}  # the pair returned where one of the two is not finite
    near: dict = {}  # the answers at NEAR_ONE_PROBES (kept out of the diagnosis too)
    grid: dict = {}  # the answers at GRID_PROBES (diagnosed once the others agree)

    def further(stable: bool) -> None:
        # (st25d: a seeded estimate, the same on every call, was called at d_k = 2^20)
        if stable and not failed and not extra and not _mostly_wrong(values):
            far = set(WIDER_PROBES + FAR_PROBES)
            near_one, on_grid = set(NEAR_ONE_PROBES), set(GRID_PROBES)
            for p in WIDER_PROBES + FAR_PROBES + GRID_PROBES + NEAR_ONE_PROBES + drawn:
                try:
                    (values if p in far else grid if p in on_grid
                     else near if p in near_one else extra)[p] = _call(fn, *p)
                except Exception as exc:  # noqa: BLE001 - reported by the comparisons
                    pair = _numbers(fn, p)
                    rows = {0, 1} if pair is None else \
                        {i for i in (0, 1) if not np.isfinite(pair[i])}
                    failed.append((p, exc, rows))
                    if len(rows) == 2:
                        break
                    partial[p] = pair  # (the other row is compared there)

    def compared(which: int, kind, what: str, outcome=None) -> tuple[bool, str]:
        """``_diagnose`` on the fixed and far settings of ``kind`` (a test of the
        kurtosis), then the drawn ones."""
        fixed = [p for p in values if kind(p[2])]
        ok, detail = outcome if outcome else _diagnose(values, which, fixed, what)
        if not ok:
            return ok, detail
        # (st23d: a mean rounded to float16, inf at d_k = 1e15, failed the variance rows)
        mine = [(p, exc) for p, exc, rows in failed if which in rows and kind(p[2])]
        if mine:
            (d, r, k), exc = mine[0]
            text = str(exc) if isinstance(exc, Rejected) else \
                f"raised {type(exc).__name__}: {exc}"
            if (d, r, k) in partial:
                text = (f"your {what} there is {partial[(d, r, k)][which]} (the "
                        f"formula's is {score_moments(d, r, k)[which]:.6g}): it must be a "
                        "finite number")
                if _float16_rounded(values) == ("mean", "variance")[which]:
                    text += (f", and your {what}s before it are the formula's rounded "
                             f"to float16, where past 65504 it becomes inf: keep the "
                             f"{what} a float64 (a Python float)")
            return False, (f"at d_k = {_d_text(d)}, rho = {r!r}, kurtosis = {k!r} (past the "
                           f"settings of the first check), the call failed: {text}")
        for p, pair in partial.items():
            if kind(p[2]) and np.isfinite(pair[which]) and \
                    not _same(pair[which], score_moments(*p)[which]):
                d, r, k = p
                return False, (f"{what} at d_k = {_d_text(d)}, rho = {r!r}, kurtosis = "
                               f"{k!r}: got {pair[which]:.6g}, expected "
                               f"{score_moments(*p)[which]:.6g}")
        if any(len(rows) == 2 for _, _, rows in failed):  # (the calls stopped there)
            (d, r, k), exc, _ = next(f for f in failed if len(f[2]) == 2)
            text = str(exc) if isinstance(exc, Rejected) else \
                f"raised {type(exc).__name__}: {exc}"
            return False, (f"at d_k = {_d_text(d)}, rho = {r!r}, kurtosis = {k!r} (past the "
                           f"settings of the first check), the call failed: {text}")
        ok, detail = _near_one({p: v for p, v in near.items() if kind(p[2])}, which,
                               what, {p: v for p, v in values.items() if kind(p[2])})
        if not ok:
            return ok, detail
        # (after: float32's formula is told so there)
        on_grid = [p for p in grid if kind(p[2])]
        if not _same(_col(grid, which, on_grid), _col(grid, which, on_grid, _ref(which))):
            every = {**values, **grid}
            return _diagnose(every, which, [p for p in every if kind(p[2])], what)
        for p in (p for p in extra if kind(p[2])):
            got, want = extra[p][which], score_moments(*p)[which]
            if not _same(got, want):
                d, r, k = p
                n = _digits(got, want)
                return False, (f"{what} at d_k = {d}, rho = {r!r}, kurtosis = {k!r}, a "
                               f"setting drawn afresh for this call: got {got:.{n}g}, "
                               f"expected {want:.{n}g} (right at every fixed setting; "
                               f"_draw({seed}) in attention.checkers.moments draws these "
                               "settings again): the formula must hold at every d_k, rho "
                               "and kurtosis the exercise allows")
        return True, ""

    def same_answer():
        ok, detail = _same_on_every_call(fn, values)
        further(ok)
        return ok, detail

    def is_normal(k):
        return k == 3.0

    def is_other(k):
        return k != 3.0

    others = ", ".join(_k_text(k) for k in KURTOSES if k != 3.0)
    later = [
        ("the same answer on every call", same_answer),
        ("mean, for positive and negative rho",
         lambda: compared(0, lambda k: True, "mean")),
        ("variance for normal entries (kurtosis 3)",
         lambda: compared(1, is_normal, "variance", _and_default_is_normal(
             fn, _diagnose(values, 1, [p for p in values if p[2] == 3.0], "variance"),
             values))),
        (f"variance for other entries (kurtosis {others}; far past them, "
         f"{_k_text(FAR_KURTOSES[0])}, {_k_text(FAR_KURTOSES[1])} and "
         f"{_k_text(TINY_KURTOSIS)}, and {DRAWN} drawn afresh)",
         lambda: compared(1, is_other, "variance")),
        ("agrees with 40,000 sampled scores, random-sign entries",
         lambda: _agrees_with_sampling(fn, "signs", 16, -0.6, 40_000, _RNG_SEED)),
        ("agrees with 40,000 sampled scores, Laplace entries",
         lambda: _agrees_with_sampling(fn, "laplace", 4, 0.7, 40_000, _RNG_SEED + 1)),
    ]
    first = _run("returns a pair of finite numbers (mean, variance)", returns_a_pair)
    if not first[1]:
        return _stopped(first, len(later), verbose)
    results = [first] + [_run(name, case) for name, case in later]
    return _report(results, verbose)
