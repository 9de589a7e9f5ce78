"""Checker of Exercise 3, ``ex-temperature`` (page "Soft retrieval"): attention with a
temperature, ``attention_with_temperature(Q, K, V, tau) -> (O, A)``.

The specification it checks: the scores are ``Q K^T / (tau sqrt(d_k))``, ``A`` is their
softmax along the key axis and ``O = A V``; on (T_q, d_k) inputs and on inputs with leading
batch and head dimensions (..., T_q, d_k), two of them and three (an einsum with a fixed
number of axes shows), at tau = 2 and, cold, at 1e-3 (one maximum for all the heads leaves
rows underflowed there); at several temperatures (0.3 among them, which
float32 cannot hold, so that a tau or a factor rounded to float32 shows); cold, at
tau = 1e-3 and, on rows of 4096 keys with values of size 1000, at 1e-2, compared with the
reference at 1e-8 like every other case (a floor on the shifted scores, np.clip(S, -L, 0),
moves the weights past that for L up to about 26 and the output for L up to about 34;
beyond, it moves neither by 1e-8 at these sizes and is not seen); at 1e-3 on rows whose
best scaled score leads the next two by 14.5, 16 and 18.5, 1e-6 to 2e-8 from one-hot (a
row snapped to one-hot once its lead passes a bound up to 18, or its largest weight
1 - 1e-7, shows), and on rows of 4096 keys (values of size 1000) whose best leads every
other by 20, 25 and 30 to half a unit more, where the many small weights add up (4095
e^-25 is 4e-8): a row snapped to one-hot once its lead passes a bound, or exponentials
set to 0 below a bound, shows for a bound up to 30 and is named so (beyond 30 it is not
seen), and so does a row snapped once its largest weight passes 1 - 1e-9 (the rest's
3e-10 moves the output by 3e-7 there); at 1e-3 on a row of 16411 keys (a prime
above 2^14: no block size divides it) whose scaled scores rise along it from -12 to 0,
so that an online softmax in blocks whose running sum and output are not rescaled when
the maximum grows shows, for blocks of up to 16384 keys (a block at least as long as
the longest row is one pass, exact, and is not seen), and is named so, also when it
fails first on a shorter row (its weights or output are compared with those of such
a softmax in blocks of 16 to 16384 keys, powers of two); two keys with equal scores at
tau = 1e-3 and 1e-12; at 1e-12 a best key and a lower but positive one whose scaled
scores are about 7e15 and 3.5e15, and at 1e-300 the same keys, whose scaled scores are
about 7e303 and 3.5e303, finite (clipping the scaled scores at any bound below 3.5e303,
np.clip(S, -L, L), ties them); at tau = 1e-9, 1e-15 and 1e-18 two keys whose scores differ by
tau sqrt(d_k), which the softmax gives e/(1 + e) and 1/(1 + e) and which a tau clamped
from below (at 1e-16, or at the machine epsilon), an epsilon added to it or a temperature
applied as a power of the exponentials does not give; at tau = 1e-100, 1e-300 and 1e-310 (a
float64 subnormal), 1e100, 1e300 and 1e306 on a query scaled by tau, whose scaled scores
stay near 1 (its raw products are about tau: at 1e-310 subnormal, at 1e306 about 3.6e306,
float64 numbers both), so that a shortcut taken beyond a threshold of tau (uniform
weights, an expansion of exp(), a clamp, an argmax) shows wherever the threshold lies,
up to 1e306 and down to 1e-310 (st25b: min(tau, 1e300) and max(tau,
np.finfo(Q.dtype).tiny) passed; a clamp at a bound of the inputs' dtype is named so);
at 1e-310 the factor 1/(tau sqrt(d_k)) is past float64's largest number (the reference
is the softmax of the query divided by tau, at tau = 1), so that a factor computed
first is inf there and named so; a shortcut taken only on a window of tau that holds
none of the temperatures probed (between 1e-299 and 1e-101, or 1e101 and 1e299, say),
or only beyond 1e306 or below 1e-310, is not seen; hot, at tau = 100, 1e3, 1500, 2200, 3300, 4000, 3e4, 1e6 and 1e7 on the checker's
inputs (an expansion of exp() to first order, taken beyond some tau or wherever a
row's scaled scores spread by less than some bound, shows wherever it moves the output
by more than 1.25e-8), at 1e7 the weights still differing from 1/T_k by about 3e-8,
and at 1e8 and 1e10 on scores of about 1e4 (entries of
size 30, d_k = 64), where they differ by about 3e-6 and 3e-8 (exactly uniform weights
from about tau = 1e11 on are right to the tolerance there, and wrong at 1e300 on the
scaled query); values of size 1000 at other sizes and tau = 0.7, so that an epsilon of 1e-9 in the row sums shows,
and there at 50 temperatures of many digits, every eighth of a decade from 1e-3 to 1e3
with 0.123456789 and 3.4567891 (BETWEEN_TAUS), and at 3 drawn afresh on every call,
log-uniform over the same range (a failure there prints the seed that draws them
again), so that an attempt right only at the temperatures probed elsewhere, or one that
rounds tau to a few significant digits (told so, unless it sets to 0 a weight the
softmax at the rounded tau does not: rows snapped to one-hot are named as such),
shows (one wrong only on a band of tau narrower than an eighth of a decade is seen
only when a drawn tau falls in it; one
wrong only between the temperatures probed from 1e3 to 1e6, or between 1e-9 and 1e-3,
where the weights of these inputs are nearly uniform or one-hot, is not seen); with Q, K and V left unchanged;
and, cold, on two further queries whose scores lie far apart, on a query whose best
scaled scores lie near -740 (exp() of them is subnormal in float64: a shift made only
where exp() would overflow or underflow on every key is off by about 4e-3 there), and
on a query whose every scaled score lies below -1000 (a shift by max(row maximum, 0),
or one made only when the scores are large, gives 0/0 there), and on one whose every
scaled score lies near -1e5 (a floor on the shift, np.maximum(row maximum, -700) or
-300, gives 0/0 there, and scores clipped at any bound below 1e5 give uniform weights,
named as a clip, or, when the same row near +1e5 is not uniform too, as a clip from
below or NaN replaced by 1/T_k), on one whose scaled scores lie near-equal just under
float64's exp() limit, 708.7 to 708.9 (exp() of each is finite, their sum is not: a
shift made only where exp() of the row maximum would overflow gives weights of 0
there, and is named so), and on one whose every scaled score lies near -1e300,
finite (any floor on the scores or on the shift, down to -1e300, gives uniform or
NaN weights there, and is named so); the query at -1000 and one whose
scaled scores reach 800 also at tau = 2 and 1e6, built for each tau (a shift made only
when tau is small, or only when it is not large, gives inf/inf or 0/0 there).
The inputs are float64 and the answers are compared to 1e-8, so an attempt that computes
in float32 or float16 fails (and is told so, whether it returns that dtype or casts its
results back to float64), and results of a wider float (np.longdouble), right to the
tolerance, fail too: float64 inputs give float64 results; float32 inputs give float32 results, with tau a Python float
and a NumPy float64 scalar alike, and float16 inputs float16 results (compared to 5e-3;
computing in float64 and casting back is right, float32 results are not), at tau = 0.7,
at 0.01 (float32 inputs at 1.5 and 0.01, and at 1.5 a float32 query whose every
scaled score lies near -200, where a floor on the shift in float32 shows), where the scaled scores reach about 150 and
370, past float32's exp() limit (88.72) and below float64's (709.78), so that a shift
made only past float64's limit overflows in the float32 work (and is told so), at 1e-5, where the float16 inputs' scaled scores reach about 1.5e5, past float16's largest
number (65504): computed in float16 they overflow before the shift, in float32 they fit;
and at 1e-9, where the factor 1/(tau sqrt(d_k)), about 4e8, is past it too, and tau and
tau sqrt(d_k) lie below float16's smallest positive number: a factor, a tau or a divisor
made a float16 (the rest computed in float32, or the raw scores shifted in float16 before
they are divided) is inf or 0 there, and the weights NaN; and at tau = 1 on float16
entries of size 30 at d_k = 128 with K = Q, whose raw products Q K^T, near 1.2e5, pass
65504 though the scaled scores fit, and of size 20 at d_k = 64, whose raw products near
25,600 float16 rounds to multiples of 16 (two keys 2.5 apart there tie): Q @ K^T
computed in float16 is inf or rounded whatever is done after it (the textbook line
Q @ K.T / (tau * np.sqrt(d_k)), whose division is float64, included), and is named so.
Hot, float32 inputs are run at tau = 1e39 too, past float32's largest number (3.4e38),
on entries of size 1e19 whose scaled scores lie near 0.07 (the factor 1/(tau sqrt(d_k)),
about 7e-40, is a float32 subnormal, and right to 5e-8): a tau (or tau sqrt(d_k)) rounded
to float32 (w.type(tau)) is inf there and the weights uniform, and is named so.
Cold, the entries of size 1e19 are run at tau = 0.1 and 1e-3, the float32 inputs at
1e-30 and 1e-40 and the float16 inputs at 1e-40: scores scaled in float32 (the float16
inputs' work too) before the shift are inf once |q . k| / (tau sqrt(d_k)) passes 3.4e38,
which the raw scores' size decides as much as tau (those of about 1e38 pass it at 0.1),
and at 1e-40 the factor 1/(tau sqrt(d_k)) itself passes it, so that a factor made a
float32 is inf, shift or no shift; the NaN is named so. Last, float32 inputs of size 3e19
at 1e39, whose raw products, about 9e38, pass 3.4e38 though the scaled scores (about
0.64) fit, and a cold near tie, two keys whose raw scores differ by 2e-6 at tau = 1e-6
and 3e-7 (float16 inputs: one float16 step, 6e-8, at 1.5e-8), where the raw products
rounded to float32 move the weights by 5e-3 to 0.38: raw scores computed in float32 are
inf or wrong there, whatever is done after the product, and are named so (an attempt
right on float64 copies of the near tie is told its raw products were rounded, one
whose weights there are the softmax's at a tau more than twice as warm a clamp; st23b:
the recipe the hints gave, raw scores in float32, passed). The raw scores computed in
float64, shifted by their row maximum, then divided by tau and sqrt(d_k), are right at
every tau these cases run, and so are they divided first and then shifted (in float64
the order does not matter where the scaled scores fit). Float16 weights that are NaN, and NaN on float64 copies of the
same inputs too, are told the shift, not float16 (st23b). After them, float32 inputs
of size 1e-20 at tau = 1e-40, below float32's smallest normal number (raw products
about 1e-40, scaled scores from -0.71 to 1.41: the softmax tells the keys apart), where
a tau clamped at np.finfo(np.float32).tiny gives near-uniform weights (st25b: on the
entries of size 1 it gave the right one-hot ones, and passed); a clamp at a bound of
the inputs' dtype is named so there and at the float16 near tie (st25b: it was told
its raw products were computed in float32; inputs whose raw products no precision
rounds, q = 1 at d_k = 1, tell the two apart). When an attempt fails, the checker
compares it with the usual mistakes and names the one it matches (told apart, when hot, by how far their
weights lie from uniform; a temperature applied as a power of the weights at tau = 1,
whose rows underflow to 0/0 when cold, is named before the NaN's usual causes; at the
extreme temperatures an attempt right at 1e150 and 1e-150 and wrong at 1e300 and
1e-300 (or raising ZeroDivisionError or OverflowError there) is told that tau * tau
overflows or underflows float64 there, and one whose
weights at 1e300 are those of a colder tau that tau was clamped from above; rows made
uniform one by one are named as such). The cases' titles say what is run, not what comes out: the
exercise asks what the limits give.

In most cases every size differs from every other (T_q = 3, T_k = 4, d_k = 7, d_v = 2,
batch (5, 6)), so a transpose, a width read from the wrong axis or a softmax along the
wrong axis shows; with the case at other sizes run two whose sizes agree, T_q = T_k = 5
with Q = K = V (d_k = 4), so that a causal mask applied when T_q = T_k shows, and
T_k = d_k = 4, so that K used as it is when its shape allows it (taken as given
transposed) shows, each named when the weights are that mistake's, and one key with
values of width 1 (T_q = 3, T_k = 1, d_k = 4, d_v = 1, at 0.7 and 1e-3), so that code that
needs two keys (np.partition(S, -2)) or squeezes an axis of size 1 shows; and at
the ordinary temperatures (0.3, 2 and 5, 2 on the batches, 0.7 at the other sizes) no two
of the usual scale mistakes give the same scores (at 0.8 = d_k / T_q, there, tau
sqrt(T_q) and sqrt(tau d_k) agree).

The library's attention is refused, not run: an attempt that calls one of its functions
that compute attention (the public ones, the private kernels forward._attend,
blocked._blocked_forward and _attention_blocks, backward._output_and_log_sum_exp, and
attention.torch's), or any of PyTorch's attention (``_engine._torch_attention``:
F.scaled_dot_product_attention and F.multi_head_attention_forward, which
nn.MultiheadAttention runs, flex_attention, and every built-in of torch, torch._C._nn
and torch._C._VariableFunctions and every torch.ops.aten operator, each overload too,
whose name contains "attention", with aten's _transformer_encoder_layer_fwd: the
private math kernel torch.ops.aten._scaled_dot_product_attention_math and
torch._native_multi_head_attention among them; st25b: those two passed), in its own
thread or in one it starts, fails every case (the exercise is NumPy). Blind spots: the
calls are seen with sys.setprofile and threading.setprofile, so an attempt that switches
the profiler off (sys.setprofile(None)), runs a copy of a function's code object, or
reaches the library in another process is not caught; nor is a copy of its source, nor
torch's attention reached only inside torch's C++ (a torch operator of another name
that runs it, such as a TorchScript function).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import numpy as np

from ..forward import scaled_dot_product_attention
from ._engine import (_NAN_FROM_SCORES, _RNG_SEED, BATCH_HINT, Rejected, _all,
                      _clipped_scores, _close, _dtype_rejection, _fitted_scale,
                      _float32_valued, _keepdims_hint, _library_attention, _named,
                      _narrow_precision, _refusing_the_library,
                      _torch_attention, _qkv, _report, _results, _run, _softmax)

#: Temperatures of the ordinary cases (none is 1, where multiplying and dividing agree;
#: 0.3 is not a float32 number, so that a tau or a factor rounded to float32 shows).
TAUS = (0.3, 2.0, 5.0)
COLD, HOT = 1e-3, 1e6
#: A hotter temperature, checked with the hot case: the exact weights still differ from
#: 1/T_k by about 3e-8 there, above the tolerance 1e-8, so that exactly uniform weights
#: taken for tau > 1e6 show (from about tau = 1e8 on, 1/T_k is right to that tolerance on
#: the checker's inputs, and a shortcut to it is right too).
HOTTER = 1e7
#: Temperatures between TAUS and HOT, checked with the hot cases (weights and output): an
#: expansion of exp() to first order (A = (1 + S - mean S)/T_k), off by about 1e-5 at
#: 100 and 1e-7 at 1e3 in the weights, shows; and, a factor of 1.5 apart up to 4000
#: (st22b: one taken only where the row's scaled scores spread by less than 1e-3, which
#: they do from tau = 1240 on, passed), so does one taken wherever the row's spread lies
#: below a bound: its error falls as 1/tau^2 (4e-8 in the weights and 9e-8 in the
#: output at 1500, 1.2e-8 in the output at 4000, 2e-10 at 3e4), so one that moves the
#: output by more than 1.25e-8 shows (one taken beyond about 4400 only, where the
#: output is off by under 1e-8, is right to the tolerance).
WARM = (100.0, 1e3, 1500.0, 2200.0, 3300.0, 4000.0, 3e4)
#: A second, far colder temperature for the tie: an argmax taken below some threshold shows.
COLDEST = 1e-12
#: The temperature of a near tie (a scaled score gap of 1), far below COLD: rounding in the
#: raw scores (about 1e-16) moves its weights by about 1e-7 only.
NEAR = 1e-9
#: Far colder near ties, on small scores: a clamp or an epsilon below NEAR shows, down to
#: 1e-18 (a clamp at 1e-16 or at the machine epsilon 2.2e-16 included; one below 1e-18 is
#: not seen).
NEAREST = 1e-15
COLDER = 1e-18
#: The sizes of the checker's inputs: all different, so that no mix-up of axes can hide.
T_Q, T_K, D_K, D_V, BATCH = 3, 4, 7, 2, (5, 6)
#: A cold case on a long row (T_q = 2, T_k = 4096, d_k = 8, d_v = 3 at tau = 0.01, values
#: of size V_SIZE): a floor on the shifted scores (np.clip(S, -L, 0)) gives each of the
#: thousands of keys far below the best e^-L, which moves the weights by more than 1e-8
#: for L up to about 26 and the output for L up to about 34; on 4 keys it moves no weight
#: by 1e-8.
LONG, LONG_TAU = (2, 4096, 8, 3), 0.01
#: Hot cases on large scores (entries of size 30, d_k = 64: scores of about 1e4), where
#: the weights at tau = 1e8 and 1e10 still differ from 1/T_k by more than the tolerance.
BIG, BIG_TAUS = 30.0, (1e8, 1e10)
#: The leads of a row's best scaled score over its next two (a fourth key lies 60
#: below), run at COLD: the softmax gives each of the next two e^-14.5, e^-16 and
#: e^-18.5 of the best's weight, 1e-6 to 2e-8 off one-hot in all, so that a row
#: snapped to one-hot once its lead passes a bound (14 to 18), or once its largest
#: weight passes 1 - 1e-6 or 1 - 1e-7, shows (one snapped only where the rest of the
#: row weighs below the tolerance 1e-8 is right on these four keys; the LONG_LEADS rows
#: show it).
GAPS = (14.5, 16.0, 18.5)
#: Cold rows of LONG_LEADS_T keys (d_k = 8, values of size V_SIZE, run at COLD), each
#: a best key leading every other by a lead from LONG_LEADS to half a unit more in the
#: scaled scores: one key e^-20 of the best's weight is no matter, but 4095 of them add
#: up, so that a row snapped to one-hot once its lead passes a bound, or exponentials
#: set to 0 below a bound (np.where(S - max < -L, 0, ...)), shows for a bound up to
#: 30 (in the weights up to about 25, in the output up to 30; the GAPS rows' four keys
#: show it below 18.5 only); beyond 30 it is not seen.
LONG_LEADS, LONG_LEADS_T = (20.0, 25.0, 30.0), 4096
#: How far below a row's best its nearest key set to 0 must lie, at least and at most,
#: to be named a snap to one-hot or a zeroing (a weight of e^-10, 5e-5, may look
#: negligible; one of e^-40, about 4e-18, still counts on a long row); a row one-hot
#: with a key nearer, or with every other key farther, is told an argmax.
SNAP_GAPS = (10.0, 40.0)
#: The extreme temperatures, on a query scaled by tau (its scaled scores stay near 1, so
#: that a shortcut taken beyond any threshold of tau shows): hot 1e300 (Q K^T about
#: 1e300, finite in float64) and cold 1e-300.
EXTREME_HOT, EXTREME_COLD = 1e300, 1e-300
#: Beyond them, still on the query scaled by tau, run after every other hot or cold
#: case (st25b: a clamp min(tau, 1e300), or max(tau, np.finfo(Q.dtype).tiny), passed):
#: hot 1e306 (Q K^T about 3.6e306, finite in float64) and cold 1e-310, a float64
#: subnormal (Q's entries and Q K^T about 1e-310, subnormal, their 13 digits or so
#: enough; the scaled scores near 1). At 1e-310 the factor 1/(tau sqrt(d_k)), about
#: 4e309, is past float64's largest number (the library's function raises there, and
#: the reference is the softmax of (tau Q) / tau at tau = 1): a factor computed first
#: is inf, where the raw scores divided by tau, then by sqrt(d_k), are finite.
BEYOND_HOT, BEYOND_COLD = 1e306, 1e-310
#: Per extreme temperature, one as far out whose square fits float64 (1e300 and 1e-300
#: squared overflow to inf and underflow to 0): an attempt right there and wrong at the
#: extreme squared tau (np.sqrt(tau * tau * d_k)), and is told so.
SQUARE_FITS = {EXTREME_HOT: 1e150, EXTREME_COLD: 1e-150}
#: The case at other sizes: (batch, T_q, T_k, d_k, d_v) and its temperature, at which no
#: two scale mistakes agree (at 0.8 = d_k / T_q, tau^2 T_q = tau d_k: d_k read from the
#: axis of T_q looked like tau inside the square root).
OTHER, OTHER_TAU = ((2,), 5, 3, 4, 6), 0.7
#: Temperatures between the others, run at the other sizes after them, so that an
#: attempt right only at the temperatures probed elsewhere shows (st17b: one wrong only
#: for 2 < tau < 5, or 0.01 < tau < 0.3, passed).
#: st18b: every tau was a decimal of one or two digits, so that tau rounded to 2 to 4
#: significant digits passed, and so did tau ignored for 0.35 < tau < 0.5 or 6 < tau < 9:
#: now every eighth of a decade from 1e-3 to 1e3, 10^((i + 0.123456789) / 8) (no two
#: neighbours farther apart than an eighth of a decade, none of them a short decimal:
#: 0.0010334, 0.0012289, ...), and 0.123456789 and 3.4567891.
BETWEEN_TAUS = tuple(10 ** ((i + 0.123456789) / 8) for i in range(-24, 24)) \
    + (0.123456789, 3.4567891)
#: Temperatures drawn afresh on every call, log-uniform from 1e-3 to 1e3, run at the
#: other sizes after BETWEEN_TAUS: they only add coverage (every mistake the tests name
#: shows on the fixed temperatures); a failure at a drawn one prints it and the seed
#: that draws it again.
DRAWN_TAUS = 3
#: The extreme temperatures' neighbours, on the query scaled by tau too (st18b: an argmax
#: taken only for 1e-299 < tau < 1e-19 passed): 1e-100 and 1e100.
FAR_TAUS = (1e-100, 1e100)
#: Sizes that allow a mistake: T_q = T_k = SQUARE (Q = K = V, of width SQUARE_D), where
#: a causal mask applied to square scores shows, and T_k = d_k = SQUARE_D (T_q = 3,
#: d_v = 2), where K used as it is (as if given transposed) shows.
SQUARE, SQUARE_D = 5, 4
#: One key, and values of width 1 (T_q, T_k, d_k, d_v), run with the other sizes at
#: OTHER_TAU and COLD (st23b: the statement promises T_k >= 1, and a shortcut through
#: the second-best score, np.partition(S, -2), passed): every weight is 1 and O = V.
ONE_KEY = (3, 1, 4, 1)
#: A batch of three leading axes (8, 5, 6, T, d), beside BATCH's two: an einsum with a
#: fixed number of axes shows.
BATCH5 = (8, 5, 6)
#: The clipping probe, at tau = COLDEST and EXTREME_COLD: one query and three keys
#: whose scaled scores are about 7.1e15, 3.5e15 and -7.1e15 at 1e-12, and 7.1e303,
#: 3.5e303 and -7.1e303 at 1e-300 (finite in float64); the softmax gives the first key
#: all the weight, and clipping the scaled scores at any L below 3.5e15 (at 1e-12) or
#: 3.5e303 (at 1e-300; 1e17, 1e30 and 1e200 among them) gives the first two 1/2 each.
CLIP_Q, CLIP_K = ((1e4, 0.0),), ((1.0, 0.0), (0.5, 0.0), (-1.0, 0.0))
CLIP_TAUS = (COLDEST, EXTREME_COLD)
#: How the case names the size of the clipping probe's scaled scores, per tau.
CLIP_SIZES = {COLDEST: "1e16", EXTREME_COLD: "1e304"}
#: The values of the case at other sizes are of size 1000, so that an output off by a
#: relative 1e-9 (an epsilon of 1e-9 in the row sums) shows.
V_SIZE = 1e3

#: The scaled scores (Q K^T / (tau sqrt(d_k))) of a query whose every score is far below
#: 0: without the shift by its own maximum exp() underflows to 0 on every key (below about
#: -745 in float64), and 0/0 is NaN.
NEGATIVE = (-1000.0, -1001.0, -1002.5, -1005.0)
#: The same far lower, near -1e5, so that a floor on the shift
#: (np.maximum(S.max(axis=-1, keepdims=True), -700), say) leaves exp() of every
#: score underflowed to 0 there (at -1000 a floor at -300 or -700 leaves them
#: within float64's range).
NEGATIVE_FAR = (-1e5, -1e5 - 1.0, -1e5 - 2.5, -1e5 - 5.0)
#: The float32 inputs' all-negative row (scaled scores at tau = 1.5, three keys of
#: their own), near -200: past float32's exp() range (below about -103 it is 0), so
#: that a floor on the shift at -80 or -100 shows in float32; the gaps are wide, so
#: that float32's rounding of scores of size 200 moves the weights by far less
#: than the float32 tolerance.
NEGATIVE32 = (-200.0, -210.0, -230.0)
#: Said of a row whose weights are NaN where every scaled score lies far below 0.
FLOOR_HINT = (": the shift must be each row's own maximum, however far below 0 it "
              "lies: here every scaled score lies near {low}, and a floor on the shift "
              "(np.maximum(S.max(axis=-1, keepdims=True), {floor}), say) leaves exp() of "
              "every score underflowed to 0 (and 0/0 is NaN) or subnormal (with few "
              "digits left); always subtract "
              "S.max(axis=-1, keepdims=True), with no bound")
#: Said when the weights of the row near -1e5 are exactly uniform: its scaled scores
#: were clipped from below.
CLIPPED_BELOW = ("your weights are all equal, where the softmax tells the keys "
                 "apart: every scaled score here lies near -1e5, 1 to 5 apart, and "
                 "clipping the scores (np.clip(S, -L, L), with L below 1e5, so that "
                 "nothing overflows or underflows; your weights near +1e5 are all equal "
                 "too) makes them all -L, and exp() gives every key the same weight: "
                 "were the scores clipped before exp()? Clipping changes the "
                 "differences between the scores, and so the weights; subtract each "
                 "row's maximum instead, which changes no weight")
#: Said when the weights of the row near -1e5 are exactly uniform, and those of the
#: same row mirrored (near +1e5) are not.
UNIFORM_FAR_BELOW = ("your weights are all equal, where the softmax tells the keys apart: "
                     "every scaled score here lies near -1e5, 1 to 5 apart (on the same "
                     "row near +1e5 your weights are not all equal). Were the scores "
                     "clipped from below (np.maximum(S, -L) with L below 1e5, which makes "
                     "them all -L), or were NaN weights replaced by 1/T_k (np.nan_to_num(A, "
                     "nan=1 / T_k), or np.where(np.isnan(A), 1 / T_k, A)) after a floor on the shift "
                     "(np.maximum(S.max(axis=-1, keepdims=True), -700), say) left exp() "
                     "of every score 0? Subtract each row's own maximum, with no bound, "
                     "and neither clip the scores nor replace NaN")
#: The scaled scores of a query whose best scores lie near 800: exp() of them overflows
#: (above about 709.8 in float64) without the shift. With NEGATIVE, run at SHIFT_TAUS
#: too (an ordinary temperature and a hot one, the query built for each), so that a shift
#: made only when tau is small, or only when it is not large, shows.
LARGE = (800.0, 799.0, 790.0, 0.0)
#: The scaled scores of a query whose best scores lie between -745 and -708, run at
#: COLD: exp() of them is subnormal in float64 (below about 2.2e-308, with few digits
#: left), so that a shift made only where exp() would overflow, or underflow on every
#: key, moves the weights by about 4e-3 there.
SUBNORMAL = (-740.0, -741.0, -742.0, -760.0)
SHIFT_TAUS = (2.0, 1e6)
#: The scaled scores of a query whose best scores lie just under float64's exp()
#: limit (709.78), near-equal, run at COLD: exp() of each is finite, but their sum
#: overflows to inf (4 e^708.9 is about 2.7e308), so that a shift made only where the
#: row maximum would overflow exp() (max > 709, np.isinf(np.exp(max))) gives weights
#: of 0 there (st17b).
NEAR_OVERFLOW = (708.9, 708.85, 708.8, 708.7)
#: Said when an attempt's weights are exp() of the unshifted scores over their
#: overflowed sum.
SUM_OVERFLOWS = ("the sum of exp overflows even when each exp does not: always "
                 "subtract the row maximum (here every scaled score lies just under "
                 "709.78, where exp() of each is finite, but four of them sum past "
                 "float64's largest number, 1.8e308, and E / inf is 0); subtract "
                 "S.max(axis=-1, keepdims=True) on every row, not only where exp() of "
                 "the maximum would overflow")
#: The scaled scores of a query whose every score lies near -1e300 (finite, distinct;
#: the softmax gives the first key all the weight), run at COLD: any floor on the
#: scores (np.maximum(S, -L), L below 1e300) makes them all -L and the weights
#: uniform, and any floor on the shift (np.maximum(row maximum, -L)) leaves exp() of
#: every score 0 and the weights NaN (st17b).
VERY_NEGATIVE = (-1e300, -1.1e300, -1.2e300, -1.5e300)
#: Said when the weights of the row near -1e300 are uniform or NaN.
FLOORED_FAR = ("clipping the scores (or the shift) changes rows of very negative "
               "scores: softmax is shift-invariant, no floor is needed (here every "
               "scaled score lies near -1e300, finite; a floor on the scores, "
               "np.maximum(S, -L), makes them all -L and the weights uniform, and a "
               "floor on the shift, np.maximum(S.max(axis=-1, keepdims=True), -L), "
               "leaves exp() of every score 0 and 0/0 NaN); subtract each row's own "
               "maximum, with no bound")


def _long_lead_row(g, tau):
    """A query (1, 8), LONG_LEADS_T keys and values of size V_SIZE: the first key's
    scaled score is 0 and every other's lies from g to g + 0.5 below it (each key
    moved along q to its score)."""
    rng = np.random.default_rng(_RNG_SEED + 8)
    d_k = 8
    q = rng.standard_normal((1, d_k))
    K = rng.standard_normal((LONG_LEADS_T, d_k))
    V = V_SIZE * rng.standard_normal((LONG_LEADS_T, 3))
    scaled = -(g + 0.5 * rng.uniform(size=LONG_LEADS_T))
    scaled[0] = 0.0
    K += ((scaled * tau * np.sqrt(d_k) - K @ q[0]) / (q[0] @ q[0]))[:, None] * q[0]
    return q, K, V


#: A cold row of RISING_T keys (prime: no block size divides it; d_k = 8, values of
#: size V_SIZE, run at COLD) whose scaled scores rise along the row from -RISE to 0
#: (a little noise on a ramp), so that the running maximum of an online softmax grows
#: in every block: one that does not rescale its running sum and output by
#: exp(m_old - m_new) when the maximum grows shows, for blocks of up to 16384 keys (a
#: prime above 2^14; the other rows have at most 4096 keys). A block at least as long
#: as the row is one pass, exact: an attempt in such blocks is right and not seen.
RISING_T, RISE = 16411, 12.0

#: The block sizes an attempt is compared with when it fails on a long row: an online
#: softmax whose running sum and output are not rescaled in blocks of these many keys.
RESCALE_BLOCKS = tuple(2 ** p for p in range(4, 15))


#: Said when an attempt right on every other cold row is wrong on the rising one.
RESCALE = (f"right on every row before, up to {LONG_LEADS_T} keys, wrong on this row of "
           f"{RISING_T}, whose maximum grows along it: an online softmax in blocks "
           "(of 4096, 8192 or 16384 keys, say) whose running sum and output are not rescaled by exp(m_old - m_new) when "
           "the maximum grows (or a maximum taken over one block only)? Rescale both "
           "whenever the running maximum changes, or take the row's own maximum over "
           "all its keys")
#: Said when an attempt's weights or output are those of an online softmax whose
#: running sum and output are not rescaled (the block size is added).
RESCALE_MATCH = ("an online softmax in blocks whose running sum and output are not "
                 "rescaled by exp(m_old - m_new) when the running maximum grows")
RESCALE_FIX = ("rescale both whenever the running maximum changes, or take the row's "
               "own maximum over all its keys")


def _unrescaled_online(Q, K, V, tau, block):
    """(O, A) of an online softmax in blocks of ``block`` keys whose running sum and
    output are not rescaled when the running maximum grows (A from the final maximum
    and that sum)."""
    d_k = Q.shape[-1]
    S = (Q @ np.swapaxes(K, -1, -2)) / (tau * np.sqrt(d_k))
    m = l = O = None
    for s in range(0, S.shape[-1], block):
        S_b = S[..., s:s + block]
        m_b = S_b.max(axis=-1, keepdims=True)
        m = m_b if m is None else np.maximum(m, m_b)
        E = np.exp(S_b - m)
        part = E @ V[..., s:s + block, :]
        l = E.sum(axis=-1, keepdims=True) if l is None else l + E.sum(-1, keepdims=True)
        O = part if O is None else O + part
    return O / l, np.exp(S - m) / l


def _rescale_named(fn, Q, K, V, tau) -> str:
    """RESCALE_MATCH with the block size when the attempt's weights or output on a
    long row are those of an online softmax not rescaled in blocks of one of
    RESCALE_BLOCKS keys, and those lie far from the reference; "" otherwise."""
    if K.shape[-2] <= RESCALE_BLOCKS[0]:
        return ""
    pair, _ = _attempt(fn, Q, K, V, tau)
    if pair is None:
        return ""
    try:
        got = [None if x is None else np.asarray(x, dtype=float) for x in pair]
    except (TypeError, ValueError):
        return ""
    want = scaled_dot_product_attention(Q, K, V, temperature=tau)
    blocks = []  # the block sizes whose results the attempt's match (several may)
    for block in RESCALE_BLOCKS:
        if block >= K.shape[-2]:
            break
        wrong = _unrescaled_online(Q, K, V, tau, block)
        # (where the maximum does not grow, the unrescaled results are right: a match
        # there names nothing)
        if any(g is not None and g.shape == w.shape and np.isfinite(g).all()
               and np.allclose(g, w, rtol=1e-6, atol=1e-8)
               and not np.allclose(w, r, rtol=1e-4, atol=1e-6)
               for g, w, r in zip(got, wrong, want)):
            blocks.append(block)
    if not blocks:
        return ""
    sizes = ", ".join(map(str, blocks[:-1])) + f" or {blocks[-1]}" if blocks[1:] \
        else str(blocks[0])
    return (f"{RESCALE_MATCH}, in blocks of {sizes} keys? "
            f"{RESCALE_FIX[0].upper()}{RESCALE_FIX[1:]}")


def _rising_row(tau):
    """A query (1, 8), RISING_T keys and values of size V_SIZE: the scaled scores rise
    from -RISE to 0 along the keys, to 0.1 (each key moved along q to its score)."""
    rng = np.random.default_rng(_RNG_SEED + 9)
    d_k = 8
    q = rng.standard_normal((1, d_k))
    K = rng.standard_normal((RISING_T, d_k))
    V = V_SIZE * rng.standard_normal((RISING_T, 3))
    scaled = np.linspace(-RISE, 0.0, RISING_T) - 0.1 * rng.uniform(size=RISING_T)
    scaled[-1] = 0.0
    K += ((scaled * tau * np.sqrt(d_k) - K @ q[0]) / (q[0] @ q[0]))[:, None] * q[0]
    return q, K, V


def _fresh_seed() -> int:
    """A seed from the operating system, new on every call."""
    return int.from_bytes(os.urandom(4), "little")


def _draw_taus(seed: int) -> tuple:
    """The temperatures drawn afresh (DRAWN_TAUS of them, log-uniform from 1e-3 to 1e3,
    with every digit a float64 holds)."""
    rng = np.random.default_rng(seed)
    return tuple(float(10 ** rng.uniform(-3, 3)) for _ in range(DRAWN_TAUS))


def _tau_rounded(fn, Q, K, V, tau) -> str:
    """What an attempt is told whose answer at ``tau`` is the softmax at tau rounded to
    a few significant digits (st18b: "%.3g" of tau, say), or ""."""
    pair, _ = _attempt(fn, Q, K, V, tau)
    if pair is None:
        return ""
    try:
        A = np.asarray(pair[1], dtype=np.float64)
    except (TypeError, ValueError):
        return ""
    for n in range(1, 8):
        t = float(f"{tau:.{n}g}")
        if t == tau:
            return ""
        O_n, A_n = scaled_dot_product_attention(Q, K, V, temperature=t)
        # (st23b: a row snapped to one-hot near 1 - 1e-10 matched the softmax at a
        # rounded tau to 1e-8 too: a softmax sets no weight to 0 that it does not
        # underflow)
        if A.shape == A_n.shape and _close(pair[1], A_n, "")[0] and \
                _close(pair[0], O_n, "")[0] and np.array_equal(A == 0, A_n == 0):
            return (f"your answer is the softmax at tau = {t:.{n}g}, tau rounded to {n} "
                    f"significant digit{'s' if n > 1 else ''} (tau = {tau:.10g} here): "
                    "use tau as given, unrounded")
    return ""


def _snapped_rows(fn, Q, K, V, tau) -> str:
    """What an attempt is told some of whose rows of weights at ``tau`` are one-hot
    where the softmax gives the other keys weight (a row snapped once its largest
    weight passes a bound), the other rows right; "" otherwise."""
    pair, _ = _attempt(fn, Q, K, V, tau)
    if pair is None:
        return ""
    try:
        A = np.asarray(pair[1], dtype=np.float64)
    except (TypeError, ValueError):
        return ""
    want = scaled_dot_product_attention(Q, K, V, temperature=tau)[1]
    if A.shape != want.shape or not np.isfinite(A).all():
        return ""
    hot = np.all((A == 0) | (A == 1), axis=-1) & (A.sum(axis=-1) == 1)
    rows = hot & ~np.all((want == 0) | (want == 1), axis=-1)
    if not rows.any() or not np.allclose(A[~rows], want[~rows], rtol=0, atol=1e-8):
        return ""
    rest = float((1 - want.max(axis=-1))[rows].max())
    some = "every row" if rows.all() else "some rows"
    are = "is" if rows.all() else "are"
    return (f"{some} of your weights ({int(rows.sum())} of {rows.size}) {are} one-hot, "
            "1 on the best key and 0 on every other, where the softmax gives those "
            f"others up to {rest:.2g} in all (the other rows are right): was a row "
            "snapped to one-hot (once its largest weight, 1 - 1e-10 say, or its lead "
            "passed a bound, or an argmax), or were the exponentials below a bound set "
            "to 0? The values are large, and those weights move O; compute the "
            "softmax on every row")


def _scaled_scores_row(K, scaled, tau):
    """A query (1, d_k) whose scores against the keys K (T_k <= d_k of them), divided by
    tau sqrt(d_k), are ``scaled`` (the least-norm solution of K q = scores)."""
    target = np.asarray(scaled) * tau * np.sqrt(K.shape[-1])
    return np.linalg.lstsq(K, target, rcond=None)[0][None, :]


#: Said when the attempt runs the library's own attention ({name}: the function's name).
LIBRARY = ("your function calls the library's own {name}, which takes a temperature "
           "already: the exercise is to write attention with a temperature yourself, "
           "without the library's function (the scores Q K^T / (tau sqrt(d_k)), their "
           "softmax along the keys and O = A V, in NumPy)")


#: Said when the attempt calls torch's built-in attention.
TORCH_SDPA = ("your function calls torch.nn.functional.scaled_dot_product_attention, "
              "PyTorch's built-in attention: the exercise is to write attention with a "
              "temperature yourself, in NumPy (the scores Q K^T / (tau sqrt(d_k)), their "
              "softmax along the keys and O = A V)")
#: Said when the attempt calls any of torch's attention (``_engine._torch_attention``:
#: its public functions, and every operator and function whose name says attention;
#: {name}: the one called).
TORCH_ATTENTION = TORCH_SDPA.replace("torch.nn.functional.scaled_dot_product_attention",
                                     "{name}", 1)


def _builtin_attention() -> dict:
    """torch's built-in attention, as sys.setprofile reports its calls ("c_call"), if
    torch is installed (the attention checker's refusal; this one refuses all of
    torch's attention, ``_engine._torch_attention``)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {}
    f = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    return {"torch.nn.functional.scaled_dot_product_attention": (f, TORCH_SDPA)} if f else {}


def _apart(x: float, y: float) -> int:
    """The fewest significant digits (3 at least) that print x and y differently."""
    return next((n for n in range(3, 16) if f"{x:.{n}g}" != f"{y:.{n}g}"), 16)


def _allclose(got, want) -> bool:
    return got.shape == want.shape and np.allclose(got, want, atol=1e-7)


def _raw_scores(Q, K):
    return Q @ np.swapaxes(K, -1, -2)  # (..., T_q, T_k)


def _attempt(fn: Callable, Q, K, V, tau) -> tuple[tuple | None, str]:
    """Call the attempt; on an exception return (None, a message with a hint if one fits)."""
    try:
        return _results(fn, dict(Q=Q, K=K, V=V, tau=tau)), ""
    except Rejected as exc:  # it changed an input in place, or called the library
        return None, str(exc)
    except Exception as exc:  # the reader's code failed: say why, do not crash
        message = f"raised {type(exc).__name__}"
        # the shape and the batch hint only for an error about shapes or axes (st22b:
        # the page's skeleton, a NameError, was told to act on the last two axes, and
        # its report was no single line)
        batch = np.ndim(Q) > 2 and _shape_error(exc)
        if batch:
            lead = ", ".join(str(n) for n in np.shape(Q)[:-2])
            message += f" on inputs of shape ({lead}, T, d)"
        message += f": {exc}" + _keepdims_hint(exc, np.shape(Q)[:-1] + np.shape(K)[-2:-1])
        hints = [BATCH_HINT.format(X="K")] if batch else []
        return None, "; ".join([message] + hints)


#: Words of an error about shapes or axes (NumPy's and torch's).
_SHAPE_WORDS = ("shape", "broadcast", "dimension", "axis", "axes", "mismatch", "operand",
                "subscript", "align", "size", "index")


def _shape_error(exc: Exception) -> bool:
    """Whether ``exc`` is an error about shapes or axes (a broadcast, a matmul, an einsum
    or an index that does not fit), which the batch hint may explain."""
    return isinstance(exc, (ValueError, IndexError, RuntimeError)) and \
        any(word in str(exc).lower() for word in _SHAPE_WORDS)


_PRECISION = "keeps only about"
#: Per low precision: the decimal digits it keeps, and how far an answer computed in it
#: may lie from the float64 reference and still be told it is a matter of precision.
_LOW = {"float32": (7, 1e-4), "float16": (3, 1e-2)}


def _low_precision(got, want) -> str:
    """The precision an attempt's array was computed in, if lower than float64: its dtype,
    or, for a float64 array, float16 or float32 when every entry is such a number and the
    reference's are not (a computation in it cast back); "" otherwise."""
    dtype = getattr(got, "dtype", None)
    if dtype is None or np.dtype(dtype).kind != "f":
        return ""
    if np.dtype(dtype).itemsize < 8:
        return "float16" if np.dtype(dtype).itemsize < 4 else "float32"
    if not _float32_valued(got, want):
        return ""
    with np.errstate(all="ignore"):
        X = np.asarray(got, dtype=np.float64)
        half = np.array_equal(X, X.astype(np.float16).astype(np.float64), equal_nan=True)
        # numbers of a few bits (1/4, 1/2, 0, 1: uniform or one-hot weights) are float16
        # numbers too, and no sign of a computation in it
        m = np.frexp(X[np.isfinite(X)])[0] * 2.0**8
    if np.all(m == np.round(m)):
        return ""
    return "float16" if half else "float32"


def _compare(got, want, what: str, atol: float) -> tuple[bool, str]:
    """``_close``, and a word about precision when an attempt computed in float32 or
    float16 (and returned that dtype, or cast its results back to float64)."""
    ok, detail = _close(got, want, what, atol=atol)
    low = "" if ok or got is None else _low_precision(got, want)
    if (low and np.shape(got) == np.shape(want)
            and np.all(np.isfinite(np.asarray(got, dtype=np.float64)))
            and np.abs(np.asarray(got, dtype=np.float64) - want).max() < _LOW[low][1]):
        dtype = np.dtype(getattr(got, "dtype"))
        held = (f"your array is {dtype.name}" if dtype.itemsize < 8 else
                f"your array holds {low} numbers only (computed in {low}, then cast "
                "back to float64?)")
        detail += (f": {held} while the inputs are float64, so it {_PRECISION} "
                   f"{_LOW[low][0]} digits; compute in the inputs' precision (for example "
                   "torch.as_tensor(Q) keeps float64, where .float() or dtype=torch.float32 "
                   "rounds)")
    return ok, detail


def _weight_mistakes(Q, K, V, tau) -> list[tuple[str, np.ndarray]]:
    """Weights that the usual mistakes produce, each with the message that names it."""
    d_k = Q.shape[-1]
    R = _raw_scores(Q, K)
    tau = np.float64(tau)  # tau**2 at tau = 1e300 is inf, not an OverflowError
    with np.errstate(all="ignore"):
        return _weight_mistakes_at(Q, K, V, tau, d_k, R)


def _weight_mistakes_at(Q, K, V, tau, d_k, R) -> list[tuple[str, np.ndarray]]:
    mistakes = [
        ("tau multiplies the scores; it must divide them: Q K^T / (tau sqrt(d_k))",
         _softmax(tau * R / np.sqrt(d_k))),
        ("the scores are divided by tau but not by sqrt(d_k): the temperature comes on top of "
         "the usual scale, Q K^T / (tau sqrt(d_k))", _softmax(R / tau)),
        ("the scores are divided by tau d_k instead of tau sqrt(d_k)", _softmax(R / (tau * d_k))),
        ("the scores are divided by sqrt(tau d_k); tau belongs outside the square root",
         _softmax(R / np.sqrt(tau * d_k))),
        ("tau is ignored: these are the weights at tau = 1", _softmax(R / np.sqrt(d_k))),
        ("the scores are divided by tau twice, tau^2 sqrt(d_k) (dividing both Q and K by tau "
         "does that): divide Q, or K, or the scores by tau once",
         _softmax(R / (tau**2 * np.sqrt(d_k)))),
        ("the scores are multiplied by sqrt(d_k); they must be divided by it: "
         "Q K^T / (tau sqrt(d_k))", _softmax(R * np.sqrt(d_k) / tau)),
    ]
    with np.errstate(all="ignore"):
        P = np.exp(R / np.sqrt(d_k) - (R / np.sqrt(d_k)).max(axis=-1, keepdims=True))
        P = P ** (1 / tau)
        mistakes.append(("the temperature was applied as a power of the exponentials at "
                         "tau = 1, np.exp(S) ** (1 / tau): equal in exact arithmetic, but "
                         "exp() underflows to 0, or rounds, before the power (which "
                         "multiplies its rounding by 1/tau); divide the scores by tau before "
                         "exp()", P / P.sum(axis=-1, keepdims=True)))
        S = R / (tau * np.sqrt(d_k))
        E = np.exp(S - S.max(axis=-2, keepdims=True))
        mistakes.append(("the scores were shifted by each column's maximum, S.max(axis=-2) "
                         "(the largest score over the queries): the shift must be one "
                         "number per row, each query's own largest score, "
                         "S.max(axis=-1, keepdims=True)", E / E.sum(axis=-1, keepdims=True)))
    sizes = set(np.shape(Q)[:-1]) | set(np.shape(K)) | set(np.shape(V))
    for m in sorted(sizes - {d_k, 1}):
        mistakes.append((f"the scores are divided by tau sqrt({m}), but {m} is not the width "
                         f"d_k = {d_k} of the queries and keys: read d_k from the last axis, "
                         "Q.shape[-1]", _softmax(R / (tau * np.sqrt(m)))))
    # a mistake whose factor left float64's range (tau^2 at tau = 1e300) gives NaN or
    # uniform weights: it names nothing there
    T_k = R.shape[-1]
    return [(m, w) for m, w in mistakes
            if np.all(np.isfinite(w)) and not np.all(w == 1 / T_k)]


def _uniform_rows(A, want, tau) -> str:
    """What weights are told of which some rows, not all, are exactly 1/T_k where the
    softmax's are not, the others the softmax's (a row made uniform when its scaled
    scores lie close together), or ""."""
    T_k = A.shape[-1]
    rows = np.all(A == 1 / T_k, axis=-1) & ~np.all(want == 1 / T_k, axis=-1)
    if not rows.any() or rows.all() or \
            not np.allclose(A[~rows], want[~rows], rtol=0, atol=1e-8):
        return ""
    return (f"some rows of your weights ({int(rows.sum())} of {rows.size}) are exactly "
            f"1/T_k, uniform, where at tau = {tau:g} the softmax still tells their "
            "keys apart (the other rows are right): was a row made uniform when its scaled scores "
            "lie close together (their spread below some small number)? However close, "
            "the softmax of different scores is not uniform; compute it on every row")


def _tied_far_apart(A, S) -> bool:
    """Whether some row's keys of equal largest weight have scores that differ by more
    than a relative 1e-5 (np.isclose's rtol): a tie no tolerance on the scores makes,
    as clipping does."""
    tied = np.abs(A - A.max(axis=-1, keepdims=True)) <= 1e-12
    S = np.broadcast_to(S, A.shape)
    with np.errstate(all="ignore"):
        top = np.where(tied, S, -np.inf).max(axis=-1)
        low = np.where(tied, S, np.inf).min(axis=-1)
        far = (tied.sum(axis=-1) > 1) & (top - low > 1e-5 * np.abs(top))
    return bool(far.any())


def _shortcut(A, want, tau, S) -> str:
    """What an attempt did that took a limit instead of computing the softmax."""
    T_k = A.shape[-1]
    if np.all(A == 1 / T_k) and not np.all(want == 1 / T_k) and tau < 1:
        return (f"your weights are all equal, where at tau = {tau:g} the softmax still "
                "tells the keys apart (the scores, divided by tau sqrt(d_k), lie near 1 "
                "here): was tau clamped from below (max(tau, ...)), or an epsilon added "
                "to it? Or was the temperature applied as a power, np.exp(S) ** (1 / "
                "tau), where exp() rounds every tiny score to 1? Divide the scores by "
                "tau itself, before exp(), at every tau")
    if np.all(A == 1 / T_k) and not np.all(want == 1 / T_k):
        return (f"your weights are exactly 1/T_k, uniform, where at tau = {tau:g} the "
                "softmax still tells the keys apart: the limit tau -> infinity is "
                "approached, never reached; compute the softmax at every tau")
    if np.all((A == 0) | (A == 1)) and np.all(A.sum(axis=-1) == 1) and \
            not np.all((want == 0) | (want == 1)):  # (rows of zeros are no argmax)
        return (f"your weights are exactly one-hot (an argmax?), where at tau = {tau:g} "
                "the softmax still gives several keys weight: the limit tau -> 0+ is "
                "approached, never reached; compute the softmax at every tau")
    uniform = _uniform_rows(A, want, tau)
    if uniform:
        return uniform
    clipped = _clipped_scores(A, want, S)
    if clipped and _tied_far_apart(A, S):  # no rounding ties scores so far apart
        return clipped
    best = A.max(axis=-1, keepdims=True)
    shares = (A == 0) | (A == best)
    if np.all(shares) and np.all(np.isclose(best * (A > 0).sum(axis=-1, keepdims=True), 1)) \
            and not np.allclose(want, A, atol=1e-6):
        return (f"your weights are equal shares of a row's best keys (an argmax that "
                f"shares ties, found with np.isclose or a tolerance?), where at "
                f"tau = {tau:g} the softmax still tells those keys apart: the limit "
                "tau -> 0+ is approached, never reached; compute the softmax at every tau")
    return _clipped_scores(A, want, S)


def _first_order(A, want, Q, K, tau) -> str:
    """What weights are told that are the softmax's expansion to first order,
    (1 + S - mean S) / T_k with S the scaled scores, where the softmax differs."""
    with np.errstate(all="ignore"):
        S = _raw_scores(Q, K) / (tau * np.sqrt(Q.shape[-1]))
        lin = (1 + S - S.mean(axis=-1, keepdims=True)) / S.shape[-1]
    if not (np.allclose(A, lin, rtol=0, atol=1e-12) and not np.allclose(want, lin, rtol=0,
                                                                        atol=1e-8)):
        return ""
    spread = float(np.abs(S - S.mean(axis=-1, keepdims=True)).max())
    return (f"your weights are the softmax's expansion to first order, (1 + S - mean S) "
            f"/ T_k, right only while the scaled scores S lie close together: at "
            f"tau = {tau:g} here they spread by up to {spread:.3g}; compute the softmax "
            "at every tau")


def _floored(A, want) -> str:
    """What weights are told whose smallest entries in a row are all one number, above the
    softmax's, the other keys keeping the softmax's ratios: a floor on the shifted scores."""
    with np.errstate(all="ignore"):
        low = A.min(axis=-1, keepdims=True)
        floor = np.isclose(A, low, rtol=1e-9, atol=0.0)
        n_want = np.isclose(want, want.min(axis=-1, keepdims=True), rtol=1e-9,
                            atol=0.0).sum(axis=-1)
        if not (np.all(low > 0) and np.any(floor.sum(axis=-1) > np.maximum(n_want, 1))):
            return ""
        if not np.all(np.where(floor, want <= low * (1 + 1e-9), True)):
            return ""
        ratio = np.where(floor, np.nan, A / want)
        if np.isnan(ratio).all(axis=-1).any():  # a row all at the floor: no ratio left
            return ""
        spread = np.nanmax(ratio, axis=-1) / np.nanmin(ratio, axis=-1)
        if not np.all(np.isfinite(spread) & (np.abs(spread - 1) < 1e-6)):
            return ""
        L = float(np.log(A.max(axis=-1) / low[..., 0]).ravel()[0])
    return (f"the smallest weights of a row are all one number, e^-{L:.3g} times the "
            "largest, where the softmax gives those keys less: was there a floor on the "
            f"shifted scores (np.clip(S, -{L:.3g}, 0) or np.maximum(S, -{L:.3g}))? A key "
            "far below the best gets the weight e^(S - max) however small it is, "
            "underflowing to 0 without harm; drop the floor")


def _zeroed(A, want, S) -> str:
    """What weights are told that are 0 on keys the softmax gives weight, the nearest
    of them 10 to 40 below the row's best in the scaled scores ``S`` (SNAP_GAPS), with the
    keys kept keeping the softmax's ratios and lying above every key set to 0: a row
    snapped to one-hot, or exponentials set to 0 below a bound; "" otherwise."""
    if A.shape != want.shape or not (np.isfinite(A).all() and np.isfinite(want).all()):
        return ""
    S = np.broadcast_to(S, A.shape)
    zero = (A == 0) & (want > 0)
    rows = zero.any(axis=-1)
    if not rows.any():
        return ""
    kept = A > 0
    with np.errstate(all="ignore"):
        ratio = A / want
        spread = (np.where(kept, ratio, -np.inf).max(axis=-1)
                  / np.where(kept, ratio, np.inf).min(axis=-1))
        low_kept = np.where(kept, S, np.inf).min(axis=-1)
        high_zero = np.where(zero, S, -np.inf).max(axis=-1)
    if not (np.all(kept.any(axis=-1)) and np.all(np.abs(spread[rows] - 1) < 1e-6)
            and np.all(high_zero[rows] < low_kept[rows])):
        return ""
    best = S.max(axis=-1)
    gaps = np.where(rows, best - high_zero, np.inf)
    i = np.unravel_index(int(np.argmin(gaps)), gaps.shape)
    gap = float(gaps[i])
    if not SNAP_GAPS[0] <= gap < SNAP_GAPS[1]:
        return ""
    n, total = int(zero[i].sum()), float(want[i][zero[i]].sum())
    where = (f"the {n} key{'s' if n > 1 else ''} of a row you set to 0 get "
             f"{total:.2g} in all from the softmax (the nearest lies {gap:.3g} below the "
             f"best in the scaled scores, e^-{gap:.3g} of its weight)")
    if int(kept[i].sum()) == 1:
        head = (f"your weights are exactly one-hot, where {where}: was the row snapped "
                "to one-hot (once its lead passed a bound, or an argmax), or were the "
                "exponentials below a bound set to 0")
    else:
        head = (f"your weights are the softmax's with some keys set to 0, where {where}: "
                "were the exponentials below a bound set to 0")
    return (f"{head} (np.where(S - max < -L, 0, ...))? e^(S - max) is no 0 until it "
            "underflows (below about -745), and on a long row the many small weights "
            "add up; compute the softmax at every tau")


def _epsilon_in_sum(A) -> str:
    """What weights are told whose rows fall short of 1 by a tiny amount and are otherwise a
    softmax: an epsilon added to the row sums."""
    with np.errstate(all="ignore"):
        short = 1 - np.asarray(A, dtype=np.float64).sum(axis=-1)
    if not (np.all(short > 1e-13) and np.all(short < 1e-6)):
        return ""
    return (f"the rows sum to 1 minus up to {short.max():.2g}, not 1: an epsilon added "
            "to the row sums, E / (E.sum(axis=-1, keepdims=True) + eps)? After the shift "
            "by the row's maximum every sum is at least 1, so no epsilon is needed; "
            "divide by the sum itself")


def _one_row_scale(A, Q, K, tau):
    """For one query (no ground to fit a scale on), the factor c of a rounding to float32
    that ``_float32_scale`` names whose softmax(c Q K^T) gives ``A`` to 1e-12 where the
    right factor does not (st25b: np.float32(1 / np.sqrt(d_k)) was named on the other
    rows, and not on the query whose scores all lie below -1000); None otherwise."""
    d_k = Q.shape[-1]
    f32 = lambda x: float(np.float32(x))
    with np.errstate(all="ignore"):
        tau32 = f32(tau)
        R = _raw_scores(Q, K)
        right = 1 / (tau * np.sqrt(d_k))
        if np.abs(_softmax(right * R) - A).max() <= 1e-12:
            return None
        for c in (1 / (tau32 * np.sqrt(d_k)), 1 / f32(tau32 * np.sqrt(d_k)), f32(right),
                  1 / f32(tau * np.sqrt(d_k)), f32(1 / np.sqrt(d_k)) / tau,
                  1 / (tau * f32(np.sqrt(d_k))), f32(1 / tau) / np.sqrt(d_k)):
            if np.isfinite(c) and c != right and \
                    np.abs(_softmax(c * R) - A).max() <= 1e-12:
                return c
    return None


def _float32_scale(c, tau, d_k) -> str:
    """What weights are told that are softmax(c Q K^T) with c the right factor rounded to
    float32 (or built from a tau rounded to float32), or, with c as near the factor but
    none of those roundings (st22b: tau + 1e-8 was blamed on float32), the softmax at a
    nearby tau (an epsilon added to tau, or a clamp); "" otherwise."""
    right = 1 / (tau * np.sqrt(d_k))
    # (a right attempt's fitted c lies within about 1e-13 of the factor: rounding)
    if not (abs(c / right - 1) < 2.0**-22 and abs(c / right - 1) > 1e-10):
        return ""
    tau32, f32 = float(np.float32(tau)), lambda x: float(np.float32(x))
    causes = [
        (1 / (tau32 * np.sqrt(d_k)), f"tau was rounded to float32 ({tau:g} is "
         f"{tau32:.10g} there: np.float32(tau), or torch.tensor(tau), whose default dtype "
         "is float32)"),
        (1 / f32(tau32 * np.sqrt(d_k)), "tau and the divisor tau sqrt(d_k) were rounded "
         "to float32 (torch.tensor(tau), whose default dtype is float32?)"),
        (f32(right), "the factor 1/(tau sqrt(d_k)) was rounded to float32 (np.float32(c), "
         "or a float32 scalar)"),
        (1 / f32(tau * np.sqrt(d_k)), "the divisor tau sqrt(d_k) was rounded to float32"),
        # (st25b: np.float32(1 / np.sqrt(d_k)) was told no rounding gives the factor)
        (f32(1 / np.sqrt(d_k)) / tau, "1/sqrt(d_k) was rounded to float32 "
         "(np.float32(1 / np.sqrt(d_k)), or a float32 constant), tau in float64"),
        (1 / (tau * f32(np.sqrt(d_k))), "sqrt(d_k) was rounded to float32 "
         "(np.float32(np.sqrt(d_k)), or np.sqrt of a float32 d_k), tau in float64"),
        (f32(1 / tau) / np.sqrt(d_k), "1/tau was rounded to float32 (np.float32(1 / tau)), "
         "sqrt(d_k) in float64"),
    ]
    matched = [text for value, text in causes if np.isclose(c, value, rtol=2e-11, atol=0)]
    cause = " or ".join(matched) + (f" (at tau = {tau:g} these give the same factor)"
                                    if len(matched) > 1 else "")
    if not cause:  # no float32 rounding gives c: name the tau it is the factor of
        fitted = 1 / (c * np.sqrt(d_k))
        n = max(10, _apart(c, right))
        m = max(4, _apart(fitted, tau))
        return (f"your weights are softmax(c Q K^T) with c = {c:.{n}g}, where "
                f"1/(tau sqrt(d_k)) = {right:.{n}g}: they are the softmax at tau = "
                f"{fitted:.{m}g}, {abs(fitted - tau):.2g} {'above' if fitted > tau else 'below'} "
                f"tau = {tau:g} (no rounding to float32 gives that factor): was an epsilon "
                "added to tau (tau + eps, so as not to divide by 0), or tau changed on the "
                "way? Divide the scores by tau itself")
    if all("tau in float64" in text for text in matched):  # a constant of d_k alone
        keep = ("keep every number in float64, never rounded to float32 (np.sqrt(d_k) "
                "is a float64 scalar; made a float32, it keeps about 7 digits)")
    else:
        keep = ("keep tau and the factor in float64, never rounded to float32 (a factor "
                "made a float32 is also inf below tau of about 2.9e-39 / sqrt(d_k))")
    return (f"your weights are softmax(c Q K^T) with c = {c:.10g}, where 1/(tau sqrt(d_k)) = "
            f"{right:.10g}, float32's precision apart: {cause}; {keep}: shift the raw "
            "scores R by their row maximum, then divide them by tau and by np.sqrt(d_k), "
            "(R - R.max(axis=-1, keepdims=True)) / tau / np.sqrt(d_k), in float64")


#: Said when the weights are uniform at a tau past float32's range (about 3.4e38).
_TAU_INF_IN_FLOAT32 = ("your weights are all equal, where at tau = {tau:g} the softmax "
                       "still tells the keys apart (the scores, divided by tau sqrt(d_k), "
                       "lie near 1 here): was tau, or the factor, rounded to float32, "
                       "where {tau:g} is inf (np.float32(tau), or torch.tensor(tau))? "
                       "Keep tau and the factor in float64")


_POWER = "a power of the weights at tau = 1"


def _power_of_the_weights(A, Q, K, tau) -> str:
    """What weights with NaN are told that are the softmax at tau = 1 raised to the power
    1/tau and renormalised (NaN where every power underflowed, 0/0), or ""."""
    d_k = Q.shape[-1]
    R = _raw_scores(Q, K)
    S = R / (tau * np.sqrt(d_k))

    def normalised(E):
        return E / E.sum(axis=-1, keepdims=True)

    def reproduces(X):  # NaN where A has NaN, and A's finite weights
        nan = np.isnan(A)
        return bool(np.array_equal(nan, np.isnan(X))
                    and np.allclose(A[~nan], X[~nan], rtol=0, atol=1e-8))

    with np.errstate(all="ignore"):
        P = normalised(_softmax(R / np.sqrt(d_k)) ** (1 / np.float64(tau)))
        # the shift's mistakes give NaN rows too: one maximum for the whole array, a
        # shift by max(row maximum, 0), none
        shifts = [normalised(np.exp(S - m)) for m in
                  (S.max(), np.maximum(S.max(axis=-1, keepdims=True), 0), 0.0)]
    # a row of finite weights at least (a row all NaN fits too many mistakes)
    if not (np.isnan(A).any() and np.isfinite(A).all(axis=-1).any() and reproduces(P)
            and not any(reproduces(X) for X in shifts)):
        return ""
    return (f"your weights are {_POWER}, softmax(Q K^T / sqrt(d_k)) ** (1 / tau), "
            f"renormalised: equal in exact arithmetic, but at tau = {tau:g} the power "
            "1/tau underflows every weight of a row to 0 (a weight below 1 raised to "
            f"{1 / tau:.6g}), and 0/0 is NaN; divide the scores by tau before exp()")


#: Said when the weights are exp() of the scaled scores not shifted, over their sums
#: (NaN, where exp() overflowed or a row underflowed, kept, made 0 by an epsilon in the
#: sums, or replaced by 1/T_k).
NOT_SHIFTED = ("the exponentials were not shifted by each row's own maximum: exp() "
               "of a scaled score past 709.78 "
               "overflows to inf (and inf/inf is NaN), and where every score of a row "
               "lies below about -745 exp() underflows to 0 on every key (0/0)")
_NOT_SHIFTED_HOW = {
    "eps": ("; an epsilon in the row sums, E / (E.sum(axis=-1, keepdims=True) + eps), "
            "makes the 0/0 rows zeros and leaves inf/inf NaN"),
    "uniform": ("; replacing the NaN weights by 1/T_k (np.where(np.isnan(A), 1 / T_k, "
                "A), or np.nan_to_num(A, nan=1 / T_k)) gives keys whose exp() overflowed "
                "1/T_k each and rows that do not sum to 1"),
    "eps_or_zero": ("; an epsilon in the row sums, E / (E.sum(axis=-1, keepdims=True) "
                    "+ eps), makes the 0/0 rows zeros (as does replacing NaN by 0, "
                    "np.nan_to_num(A) or A[np.isnan(A)] = 0)"),
    # (st22b: plain np.nan_to_num(A), or A[np.isnan(A)] = 0, was told only that its
    # rows do not sum to 1)
    "zero": ("; replacing the NaN weights by 0 (np.nan_to_num(A), whose default is "
             "nan=0, or A[np.isnan(A)] = 0) leaves the keys whose exp() overflowed, and "
             "the rows whose exp() underflowed on every key, with weight 0, and those "
             "rows do not sum to 1"),
}
_NOT_SHIFTED_FIX = ("; subtract S.max(axis=-1, keepdims=True) on every row first: then "
                    "no exp() overflows, every row sum is at least 1, and neither an "
                    "epsilon nor a replacement of NaN is needed")


def _not_shifted(A, Q, K, tau) -> str:
    """What weights are told that are exp() of the scaled scores, not shifted, over
    their row sums, where that gives NaN somewhere (kept NaN, or made 0 on rows whose
    sum underflowed to 0, or replaced by 1/T_k); "" otherwise."""
    with np.errstate(all="ignore"):
        S = _raw_scores(Q, K) / (tau * np.sqrt(Q.shape[-1]))
        E = np.exp(S)
        total = E.sum(axis=-1, keepdims=True)
        U = E / total
    A = np.asarray(A, dtype=np.float64)
    bad = ~np.isfinite(U)
    if A.shape != U.shape or not bad.any() or not np.allclose(
            A[~bad], U[~bad], rtol=1e-9, atol=1e-12):
        return ""
    rest, zero_row = A[bad], np.broadcast_to(total == 0, U.shape)[bad]
    if np.all(np.isnan(rest)):  # (any other shift gives that NaN too: not told)
        return ""
    if np.all(rest == 0) and not zero_row.all():  # (overflowed keys made 0 too)
        how = "zero"
    elif zero_row.all() and np.all(rest == 0):  # (no key overflowed: either fits)
        how = "eps_or_zero"
    elif zero_row.any() and np.all(np.where(zero_row, rest == 0, np.isnan(rest))):
        how = "eps"
    elif np.all(rest == 1 / A.shape[-1]):
        how = "uniform"
    else:
        return ""
    return NOT_SHIFTED + _NOT_SHIFTED_HOW[how] + _NOT_SHIFTED_FIX


def _check_weights(got, want, Q, K, V, tau, what: str, atol: float = 1e-8,
                   shortcuts: bool = False) -> tuple[bool, str]:
    """Compare an attempt's weights with ``want`` and name the mistake if there is one;
    with ``shortcuts`` (the attempt passed at the ordinary temperatures, so its scale is
    right) a limit taken instead of the softmax is named first."""
    ok, detail = _compare(got, want, what, atol)
    if ok or got is None or _PRECISION in detail:
        return ok, detail
    A = np.asarray(got, dtype=np.float64)
    if A.shape != want.shape:
        if A.shape == want.shape[:-2] + want.shape[:-3:-1]:
            detail += ": the weights are transposed; A has one row per query, (..., T_q, T_k)"
        return False, detail
    if not np.isfinite(A).all():
        power = _power_of_the_weights(A, Q, K, tau) if shortcuts else ""
        if not power and _not_shifted(A, Q, K, tau):
            return False, f"{detail}: {_not_shifted(A, Q, K, tau)}"
        return False, (f"{what}: {power}" if power else detail)
    if np.all(A == 1 / A.shape[-1]) and tau > float(np.finfo(np.float32).max) and not shortcuts:
        return False, f"{detail}: {_TAU_INF_IN_FLOAT32.format(tau=tau)}"
    # the power of the exponentials first: where exp() underflowed to 0 before the power
    # it gives exactly one-hot weights, which are no argmax
    # and a shift by each column's maximum, which leaves rows of tied largest weights
    # that the clipping test below would otherwise take for clipped scores
    power = [(m, w) for m, w in _weight_mistakes(Q, K, V, tau)
             if "as a power" in m or "each column's maximum" in m]
    named = _named(A, power, lambda got, w: got.shape == w.shape and np.allclose(
        got, w, rtol=1e-9, atol=0.0), want) if shortcuts else ""
    if named:
        return False, f"{detail}: {named}"
    with np.errstate(all="ignore"):
        scaled = _raw_scores(Q, K) / (tau * np.sqrt(Q.shape[-1]))
    shortcut = _zeroed(A, want, scaled) if shortcuts else ""
    shortcut = shortcut or (_shortcut(A, want, tau, _raw_scores(Q, K)) if shortcuts else "")
    shortcut = shortcut or (_first_order(A, want, Q, K, tau) if shortcuts else "")
    shortcut = shortcut or _floored(A, want) or _epsilon_in_sum(A)
    if shortcut:
        return False, f"{detail}: {shortcut}"
    if not np.allclose(A.sum(axis=-1), 1.0, atol=1e-6):
        why = _not_shifted(A, Q, K, tau) or _why_rows_do_not_sum_to_one(A, want, tau)
        return False, detail + ": " + why
    # Mistakes are told apart by how far their weights lie from uniform: when hot, every
    # softmax lies within 1e-7 of 1/T_k, and a fixed tolerance would name the first.
    # (and a mistake's weights are reproduced to rounding, relative too: two mistakes
    # that both give nearly one-hot weights when cold, on thousands of keys, differ by
    # far less than 1e-7 in the smallest weights, but not by a relative 1e-6)
    spread = float(np.abs(want - want.mean(axis=-1, keepdims=True)).max())
    atol = min(1e-10, 1e-3 * spread)
    named = _named(A, _weight_mistakes(Q, K, V, tau),
                   lambda got, w: got.shape == w.shape and
                   np.allclose(got, w, rtol=0.0, atol=atol) and
                   np.allclose(got, w, rtol=1e-6, atol=1e-300), want)
    if named:
        return False, f"{detail}: {named}"
    # one query's weights (T_q = 1) are no ground to fit a scale on: a softmax along the
    # wrong axis, or a shift by the wrong maximum, gives them c = 0
    with np.errstate(all="ignore"):  # (scores of 1e300 overflow their squares)
        c = _fitted_scale(A, _raw_scores(Q, K)) if Q.shape[-2] > 1 else \
                _one_row_scale(A, Q, K, tau)
    d_k = Q.shape[-1]
    with np.errstate(over="ignore"):  # (inf at a subnormal tau)
        right = 1 / (tau * np.sqrt(d_k))
    # a softmax of scaled scores is reproduced to rounding; weights that are only near
    # one (a series for exp(), weights rounded, a softmax in float32) are not, and
    # their fitted c is no mistake, nor a factor rounded to float32
    residual = _scale_residual(A, c, Q, K)
    rounded = _float32_scale(c, tau, d_k) if c is not None and residual <= 1e-12 else ""
    if rounded:
        return False, f"{detail}: {rounded}"
    if c is not None and (not np.isclose(c, right, rtol=1e-6) or residual > 1e-12):
        digits = max(4, _apart(c, right))
        if residual > 1e-12 and np.isclose(c, right, rtol=1e-3):
            return False, f"{detail}: {NEARLY}"
        return False, (f"{detail}: your weights are softmax(c Q K^T) with c = "
                       f"{c:.{digits}g}, but at tau = {tau:g} and d_k = {d_k} the factor "
                       f"is 1/(tau sqrt(d_k)) = {right:.{digits}g}")
    return False, detail


#: Said when the weights are near, but not to rounding, the softmax at the right scale.
NEARLY = ("your weights are nearly, not exactly, the softmax of Q K^T / (tau sqrt(d_k)): "
          "the scale is right, so exp() or the normalisation was approximated (a series "
          "for exp(), an epsilon in the sum, a rounding, a softmax in a lower "
          "precision?); compute np.exp(S - S.max(axis=-1, keepdims=True)) and divide by "
          "its row sums")


def _scale_residual(A, c, Q, K) -> float:
    """How far weights A lie from softmax(c Q K^T) (inf without a fitted c)."""
    if c is None:
        return float("inf")
    with np.errstate(all="ignore"):
        r = float(np.abs(_softmax(c * _raw_scores(Q, K)) - A).max())
    return r if np.isfinite(r) else float("inf")


def _sums_text(A) -> str:
    """The first row sums of A that are not 1, each printed with the digits that tell it
    from 1 (so that a sum off by 1e-5 does not print as 1.)."""
    sums = A.sum(axis=-1).ravel()
    off = [float(x) for x in sums if not np.isclose(x, 1.0, rtol=0.0, atol=1e-6)][:3]
    text = ", ".join(f"{x:.{_apart(x, 1.0)}g}" for x in off)
    return text + (", ..." if len(off) < np.count_nonzero(
        ~np.isclose(sums, 1.0, rtol=0.0, atol=1e-6)) else "")


def _why_rows_do_not_sum_to_one(A, want, tau) -> str:
    sums = _sums_text(A)
    for axis in range(A.ndim - 1):
        if np.allclose(A.sum(axis=axis), 1.0, atol=1e-6):
            if axis == A.ndim - 2:
                return ("the columns sum to 1, not the rows: the softmax ran along the query "
                        "axis; run it along the keys, axis=-1")
            return (f"the weights sum to 1 along axis {axis}, a batch or head axis: run the "
                    "softmax along the keys, axis=-1")
    for factor, how in ((tau, "divided"), (1 / tau, "multiplied")):
        if np.allclose((A * factor).sum(axis=-1), 1.0, atol=1e-6):
            return (f"the weights are a softmax {how} by tau: tau was applied after the "
                    "softmax; it must divide the scores before the softmax")
    with np.errstate(over="ignore"):
        if np.all(A <= 0) and np.allclose(np.exp(A), want, atol=1e-7):
            return ("these are the logarithms of the weights (a log-softmax): return the "
                    "weights themselves")
    if np.all(A >= 0) and np.all(A.sum(axis=-1) > 0):
        if np.allclose(A / A.sum(axis=-1, keepdims=True), want, atol=1e-7):
            # (unnormalised exponentials exp(S - max) have a largest entry of exactly 1)
            if np.allclose(A.sum(axis=-1), 1.0, rtol=0.0, atol=1e-3) and \
                    not np.all(A.max(axis=-1) == 1.0):
                return (f"some rows sum to {sums}, not 1, though each row is the softmax "
                        "times one number: a log-sum-exp added to a large row maximum "
                        "before it is subtracted? exp(S - (m + log(sum exp(S - m)))) "
                        "rounds m + log(...) to the precision of m (about 1e-4 when the "
                        "scores are near 1e12); subtract m first, "
                        "exp((S - m) - log(sum exp(S - m))), or divide the exponentials "
                        "by their row sums")
            return (f"some rows sum to {sums}, not 1: divide the exponentials by their "
                    "row sums, A = E / E.sum(axis=-1, keepdims=True)")
    return f"some rows sum to {sums}, not 1: each query's weights must sum to 1"


def _check_output(pair, Q, K, V, tau, want_O, what: str, atol: float = 1e-8,
                  shortcuts: bool = False) -> tuple[bool, str]:
    """Compare an attempt's output with ``want_O`` and say what is wrong with it (with
    ``shortcuts``, as in ``_check_weights``: the attempt's scale is right)."""
    O = pair[0]
    ok, detail = _compare(O, want_O, what, atol)
    if ok or O is None or _PRECISION in detail:
        return ok, detail
    O = np.asarray(O, dtype=np.float64)
    if O.shape == want_O.shape[:-1] + V.shape[:-2] + V.shape[-1:] and V.ndim > 2:
        return False, (f"{detail}: np.dot (or np.tensordot) pairs every batch of A with every "
                       "batch of V; A @ V (np.matmul) pairs each batch with its own")
    if O.shape == want_O.shape and not np.isfinite(O).all() and shortcuts and \
            np.shape(pair[1]) == want_O.shape[:-1] + V.shape[-2:-1]:
        power = _power_of_the_weights(np.asarray(pair[1], dtype=np.float64), Q, K, tau)
        if power:
            return False, f"{what}: {power}"
    if O.shape != want_O.shape or not np.isfinite(O).all():
        return False, detail
    if not O.any():
        return False, f"{detail}: the output is all zeros; return O = A V, the weighted values"
    mean = np.broadcast_to(V.mean(axis=-2, keepdims=True), O.shape)
    if np.allclose(O, mean, rtol=0.0, atol=1e-13) and tau > float(np.finfo(np.float32).max) and \
            not shortcuts:
        return False, f"{detail}: {_TAU_INF_IN_FLOAT32.format(tau=tau)}"
    if np.allclose(O, mean, rtol=0.0, atol=1e-13) and not np.allclose(want_O, mean, rtol=0.0,
                                                                       atol=1e-13) and tau < 1:
        return False, (f"{detail}: your output averages the values evenly, as uniform "
                       f"weights give, where at tau = {tau:g} the softmax still tells the "
                       "keys apart (the scores, divided by tau sqrt(d_k), lie near 1 "
                       "here): was tau clamped from below (max(tau, ...)), or an epsilon "
                       "added to it? Divide the scores by tau itself, at every tau")
    if np.allclose(O, mean, rtol=0.0, atol=1e-13) and not np.allclose(want_O, mean, rtol=0.0,
                                                                       atol=1e-13):
        return False, (f"{detail}: your output is the plain mean of the values, the limit as "
                       f"tau -> infinity, which is approached, never reached: at tau = {tau:g} "
                       "the weights still differ from 1/T_k; return O = A V at every tau")
    A = np.asarray(pair[1], dtype=np.float64)
    if A.shape == want_O.shape[:-1] + V.shape[-2:-1] and np.isfinite(A).all():
        with np.errstate(all="ignore"):
            c = _fitted_scale(A, _raw_scores(Q, K)) if Q.shape[-2] > 1 else \
                _one_row_scale(A, Q, K, tau)
        with np.errstate(all="ignore"):
            want_A = _softmax(_raw_scores(Q, K) / (tau * np.sqrt(Q.shape[-1])))
        floored = _floored(A, want_A) if np.isfinite(want_A).all() else ""
        if shortcuts:
            with np.errstate(all="ignore"):
                scaled = _raw_scores(Q, K) / (tau * np.sqrt(Q.shape[-1]))
            floored = _zeroed(A, want_A, scaled) or floored
        uniform = _uniform_rows(A, want_A, tau) if shortcuts and \
            np.isfinite(want_A).all() else ""
        named = uniform or floored or _epsilon_in_sum(A) or \
            (_float32_scale(c, tau, Q.shape[-1])
             if c and _scale_residual(A, c, Q, K) <= 1e-12 else "")
        with np.errstate(over="ignore"):  # (inf at a subnormal tau)
            right = 1 / (tau * np.sqrt(Q.shape[-1]))
        if not named and c and np.isclose(c, right, rtol=1e-3) and \
                _scale_residual(A, c, Q, K) > 1e-12 and _allclose(O, A @ V):
            named = NEARLY
        if named:
            return False, f"{detail}: {named}"
    if A.shape == want_O.shape[:-1] + V.shape[-2:-1]:
        named = _named(O, [(f"the output is A V {name}; tau belongs only in the scores, "
                            "O = A V", f * (A @ V)) for f, name in
                           ((1 / tau, "divided by tau"), (tau, "multiplied by tau"))], _allclose)
        if named or not _allclose(O, A @ V):
            return False, f"{detail}: {named or 'the output is not A V of your own weights A'}"
    return False, detail


def _tau_squared(fn, Q, K, V, tau, A) -> str:
    """What an attempt is told whose weights ``A`` at an extreme tau (on ``tau * Q``;
    ``Q`` is given unscaled) are uniform (hot) or not finite (cold), or which raised
    ZeroDivisionError or OverflowError there (``A`` None), and which is right at
    SQUARE_FITS[tau], where tau^2 fits float64: tau * tau overflowed, or underflowed, on
    the way. Otherwise ""."""
    hot = tau > 1
    if tau not in SQUARE_FITS:  # (at 1e100 and 1e-100 tau * tau fits float64)
        return ""
    if A is not None:
        A = np.asarray(A, dtype=np.float64)
        if not (np.all(A == 1 / A.shape[-1]) if hot else not np.isfinite(A).all()):
            return ""
    mid = SQUARE_FITS[tau]
    pair, _ = _attempt(fn, mid * Q, K, V, mid)
    if pair is None:
        return ""
    O_m, A_m = scaled_dot_product_attention(mid * Q, K, V, temperature=mid)
    if not (_close(pair[1], A_m, "")[0] and _close(pair[0], O_m, "")[0]):
        return ""
    square, edge = ("overflows float64", "is past its largest number, about 1.8e308, "
                    "so it is inf") if hot else \
        ("underflows float64", "is below its smallest positive number, about "
         "5e-324, so it is 0")
    scores = "0" if hot else "inf"
    other = "underflows to 0" if hot else "overflows to inf"
    got = "an error" if A is None else "uniform" if hot else "NaN"
    if A is not None:
        then = f"and the scores {scores}"
    elif hot:
        then = "or, as tau ** 2 of a Python float, raises OverflowError"
    else:
        then = "and a Python float divided by it raises ZeroDivisionError"
    return (f"right at tau = {mid:g} (on Q scaled by tau), but "
            f"{got} at {tau:g}, as when tau * tau {square} at "
            f"tau = {tau:g} ({tau:g} squared {edge}), so a divisor built from it, "
            f"such as np.sqrt(tau * tau * d_k), is {'inf' if hot else '0'} {then} "
            f"(and 1 / (tau * tau) {other}); divide the scores by "
            "tau sqrt(d_k), with tau itself, not its square (code that forms no "
            f"square of tau has a special case {'above' if hot else 'below'} some tau "
            f"instead, {'uniform weights' if hot else 'a guard'} that no tau > 0 "
            "calls for: the weights follow the scores at every tau)")


def _colder_than_asked(Q, K, V, tau, A, colder) -> str:
    """What an attempt is told whose weights ``A`` at the extreme hot tau (on
    ``tau * Q``) are the softmax at a colder temperature: at ``colder`` (the hottest it
    passed, which there gives the weights of any tau far below ``tau``), or at the tau a
    fitted scale gives (tau clamped from above). Otherwise ""."""
    A = np.asarray(A, dtype=np.float64)
    Qx = tau * Q
    if A.shape != (Qx @ np.swapaxes(K, -1, -2)).shape or not np.isfinite(A).all():
        return ""
    A_cold = scaled_dot_product_attention(Qx, K, V, temperature=colder)[1]
    at = ""
    if np.allclose(A, A_cold, rtol=0, atol=1e-12):
        at = (f"the softmax at tau = {colder:g} gives them here, as does any tau far "
              f"below {tau:g}")
    else:
        with np.errstate(all="ignore"):
            c = _fitted_scale(A, _raw_scores(Qx, K)) if Q.shape[-2] > 1 else None
        warm = 1 / (c * np.sqrt(Q.shape[-1])) if c else None
        if warm is None or not (0 < warm < tau * (1 - 1e-6)):
            return ""
        at = f"they are the softmax at tau = {warm:.3g}"
    return (f"your weights are those of a colder temperature than tau = {tau:g} ({at}): "
            "was tau clamped from above (min(tau, ...), so as not to divide by a huge "
            "number)? Divide the scores by tau itself, at every tau")


def _warmer_at_the_extreme(Q, K, tau, A) -> str:
    """What an attempt is told whose weights ``A`` at an extreme cold tau (on
    ``tau * Q``; ``Q`` given unscaled) are the softmax at a warmer temperature, one
    fitted to them (st22b: max(tau, 2.2e-298) gave weights near uniform at 1e-300, and
    no name); "" otherwise."""
    A = np.asarray(A, dtype=np.float64)
    R = _raw_scores(Q, K)  # (the scores over tau: those of tau * Q underflow squared)
    if A.shape != R.shape or not np.isfinite(A).all() or Q.shape[-2] < 2:
        return ""
    with np.errstate(all="ignore"):
        c = _fitted_scale(A, R)
    if not c or c <= 0:
        return ""
    warm = tau / (c * np.sqrt(Q.shape[-1]))
    if not (np.isfinite(warm) and warm > tau * (1 + 1e-6)):
        return ""
    return (f"your weights are the softmax at tau = {warm:.3g}, warmer than tau = "
            f"{tau:g}: was tau clamped from below (max(tau, ...), so as not to divide "
            "by a tiny number), or an epsilon added to it? Divide the scores by tau "
            "itself, at every tau")


#: Said when the weights are NaN at BEYOND_COLD, where the factor 1/(tau sqrt(d_k)) is
#: inf in float64 though the raw products and scaled scores are float64 numbers.
FACTOR_INF = ("at tau = {tau:g} the factor 1/(tau sqrt(d_k)) is inf in float64 (about "
              "{factor}, past its largest number, about 1.8e308), though the raw "
              "products Q K^T (about 1e-310 here, subnormal) and the scaled scores (near "
              "1) are float64 numbers: a factor computed first makes the scaled scores "
              "inf, and inf - inf or 0 * inf NaN; divide the raw scores by tau, then by "
              "np.sqrt(d_k), (R - R.max(axis=-1, keepdims=True)) / tau / np.sqrt(d_k)")


def _extreme_case(fn, Q, K, V, tau, what, want_A=None, want_O=None, shortcuts=False,
                  colder=None) -> tuple[bool, str]:
    """``_case`` at an extreme tau on ``tau * Q`` (``Q`` given unscaled), naming, when it
    fails, a tau squared on the way (``_tau_squared``) and, hot, a tau clamped from
    above (``_colder_than_asked``, at ``colder``) before the usual mistakes."""
    ok, detail = _case(fn, tau * Q, K, V, tau, want_A=want_A, want_O=want_O, what=what,
                       shortcuts=shortcuts)
    if ok:
        return ok, detail
    with np.errstate(over="ignore"):
        factor = 1 / (tau * np.sqrt(Q.shape[-1]))
    if tau == BEYOND_COLD and " contains NaN " in detail and np.isinf(factor):
        # (last of the cold cases: a tau rounded to float32 failed at 1e-300 before)
        e = -np.log10(tau) - np.log10(Q.shape[-1]) / 2  # (the factor's size, in decades)
        return ok, (detail.replace(": " + _NAN_FROM_SCORES, "") + ": " + FACTOR_INF.format(
            tau=tau, factor=f"{10 ** (e - np.floor(e)):.2g}e{int(np.floor(e))}"))
    if 0 < tau <= 2.0**-150 and " contains NaN " in detail:  # (0 in float32)
        # (st22b: np.float32(tau) at 1e-100 was told only the NaN's usual causes)
        detail += (f"; or was tau, or the factor 1/(tau sqrt(d_k)), rounded to float32, "
                   f"where {tau:g} is 0, below its smallest positive number, about "
                   "1.4e-45, and the factor inf (np.float32(tau), or torch.tensor(tau), "
                   "whose default dtype is float32)? Keep tau and the factor in float64")
    if not shortcuts:
        return ok, detail
    pair, _ = _attempt(fn, tau * Q, K, V, tau)
    if pair is None and detail.startswith(("raised ZeroDivisionError",
                                           "raised OverflowError")):
        # (a divisor built from tau * tau in Python floats raises instead)
        hint = _tau_squared(fn, Q, K, V, tau, None)
        return (False, f"{detail}: {hint}") if hint else (ok, detail)
    if pair is None or np.shape(pair[1]) != _raw_scores(tau * Q, K).shape:
        return ok, detail
    hint = _tau_squared(fn, Q, K, V, tau, pair[1])
    if not hint and colder is not None:
        hint = _colder_than_asked(Q, K, V, tau, pair[1], colder)
    if not hint and tau == BEYOND_COLD:  # (below float64's tiny, built to show it)
        hint = _dtype_clamp(pair[1], tau * Q, K, V, tau, 1e-8)
    if not hint and tau < 1:
        hint = _warmer_at_the_extreme(Q, K, tau, pair[1])
    return (False, f"{detail.split(': ', 1)[0]}: {hint}") if hint else (ok, detail)


def _case(fn, Q, K, V, tau, want_A=None, want_O=None, what="", atol=1e-8, hint="",
          shortcuts=False):
    """Run the attempt once and compare its weights (if ``want_A``) and output (if ``want_O``)."""
    pair, error = _attempt(fn, Q, K, V, tau)
    if pair is None:
        return False, error
    if want_A is not None:
        ok, detail = _check_weights(pair[1], want_A, Q, K, V, tau, f"weights {what}", atol,
                                    shortcuts)
        if not ok:
            if hint and pair[1] is not None and np.isnan(np.asarray(pair[1], dtype=float)).any() \
                    and _POWER not in detail:
                # (the case's own hint names a shift made only on some rows, or a
                # floor on it, better than "not shifted"; not so the hint that
                # presumes a shift by another maximum)
                if NOT_SHIFTED not in detail or OWN_MAXIMUM not in hint:
                    detail = detail.split(": " + NOT_SHIFTED)[0] + hint
            return False, detail
    if want_O is not None:
        ok, detail = _check_output(pair, Q, K, V, tau, want_O, f"output {what}", atol,
                                   shortcuts)
        if not ok:
            return ok, detail
    wider = _wider_than_float64(pair, Q)
    return not wider, wider


def _not_arrays(pair, Q) -> str:
    """What results are told that are no arrays (a list, a number): they have no dtype
    to keep the inputs' (st25b: a list O was told "O is None"); "" otherwise."""
    names = [(n, type(x).__name__) for n, x in zip("OA", pair)
             if not isinstance(x, (np.ndarray, np.generic)) and not hasattr(x, "dtype")]
    if not names:
        return ""
    said = " and ".join(f"{n} is a {kind}" for n, kind in names)
    return (f"{said}, not an array: return NumPy arrays of the inputs' dtype "
            f"({np.asarray(Q).dtype.name} here), as np.asarray(...).astype(Q.dtype) "
            "makes them")


def _wider_than_float64(pair, Q) -> str:
    """What results for float64 inputs are told that are NumPy arrays of a wider float
    (np.longdouble), right to the tolerance but not of the inputs' dtype, or no arrays
    (``_not_arrays``); "" otherwise (float16 and float32 inputs have cases of their
    own)."""
    if np.asarray(Q).dtype != np.float64:
        return ""
    if _not_arrays(pair, Q):
        return _not_arrays(pair, Q)
    dtypes = {n: x.dtype for n, x in zip("OA", pair) if isinstance(x, np.ndarray)}
    if all(d.kind != "f" or d == np.float64 for d in dtypes.values()):
        return ""
    return _dtype_rejection(np.float64, dtypes)


#: Said when the weights are those of a causal mask on a square score matrix.
CAUSAL = ("the weights are those of a causal mask: a causal mask when T_q = T_k (each "
          "query kept from the keys after it) is no part of this function; a square "
          "score matrix is no sign of self-attention, so mask nothing")
#: Said when the weights are those of K used untransposed on a square K (T_k = d_k).
UNTRANSPOSED = ("the weights are softmax(Q K / (tau sqrt(d_k))), with K not "
                "transposed: was K transposed because its shape allowed it, and left "
                "as it is when K^T has its shape too? Here T_k = d_k, so K and K^T have "
                "the same shape; K is always (..., T_k, d_k): always use its "
                "transpose, np.swapaxes(K, -1, -2), whatever its shape")


def _one_key_case(fn, rng) -> tuple[bool, str]:
    """ONE_KEY's sizes at OTHER_TAU and COLD: a single key gets every weight."""
    T_q, T_k, d_k, d_v = ONE_KEY
    Q, K, V = _qkv(rng, T_q=T_q, T_k=T_k, d_k=d_k, d_v=d_v)
    for tau in (OTHER_TAU, COLD):
        O, A = scaled_dot_product_attention(Q, K, V, temperature=tau)
        what = f"with one key (T_k = 1) and d_v = 1 at tau = {tau:g}"
        ok, detail = _case(fn, Q, K, V, tau, want_A=A, want_O=O, what=what)
        if not ok:
            # (an error says nothing of the sizes it met)
            return ok, detail if detail.startswith(("weights", "output")) else \
                f"{what}: {detail}"
    return True, ""


def _shape_trap_case(fn, Q, K, V, tau, what, wrong_A, message) -> tuple[bool, str]:
    """``_case`` on inputs whose shapes allow a mistake (a square score matrix, a square
    K), naming it when the attempt's weights are ``wrong_A``, the mistake's weights."""
    O, A = scaled_dot_product_attention(Q, K, V, temperature=tau)
    ok, detail = _case(fn, Q, K, V, tau, want_A=A, want_O=O, what=what)
    if ok:
        return ok, detail
    pair, _ = _attempt(fn, Q, K, V, tau)
    got = None if pair is None else pair[1]
    if got is not None and np.shape(got) == np.shape(wrong_A):
        with np.errstate(all="ignore"):
            if np.allclose(np.asarray(got, dtype=float), wrong_A, atol=1e-7):
                return False, f"weights {what}: {message}"
    return False, detail


def _float32_case(fn, Q, K, V, tau, limit: bool = True) -> tuple[bool, str]:
    """float32 in, float32 out, and the values right to float32 precision, with tau a
    Python float and then the same tau as a NumPy float64 scalar (as np.linspace or an
    array's entry gives it), which turns float32 arrays it multiplies into float64."""
    ok, detail, _ = _float32_at(fn, Q, K, V, float(tau), limit)
    if not ok:
        return ok, detail
    ok, detail, dtypes = _float32_at(fn, Q, K, V, np.float64(tau), limit)
    promoted = [n for n, d in dtypes.items() if d == np.float64]
    if not ok and promoted and "for float32 inputs" in detail:
        detail = (f"with tau = np.float64({tau:g}), a NumPy float64 scalar (as np.linspace "
                  f"or an array's entry gives it), {' and '.join(promoted)} "
                  f"{'is' if len(promoted) == 1 else 'are'} float64 for float32 inputs, "
                  f"where with tau = {tau:g}, a Python float, they were float32: a NumPy "
                  "float64 scalar turns the float32 arrays it meets into float64 (NumPy "
                  "2's promotion rules); compute in " + _WORK + ", and cast the "
                  "results back with .astype(Q.dtype)")
    return ok, detail


#: The float16 inputs' cold temperature: their scaled scores reach about 1e5 there,
#: past float16's largest number (65504), so that scores computed in float16 overflow
#: before the shift (in float32, as np.promote_types(Q.dtype, np.float32) computes, they
#: fit).
COLD16 = 1e-5
#: A far colder temperature for the float16 inputs: there the factor 1/(tau sqrt(d_k))
#: (about 4e8) is past float16's largest number and tau and tau sqrt(d_k) lie below its
#: smallest positive number (about 6e-8), so that a factor, a tau or a divisor made a
#: float16 (Q.dtype.type(...), np.float16(tau), or a float16 array divided by a Python
#: float, which NumPy 2 does in float16) shows; at COLD16 all three fit float16 (the
#: factor there is about 4e4).
COLDEST16 = 1e-9
#: float16 inputs whose raw products Q K^T leave float16 behind, run at tau = 1
#: (their scaled scores fit float16): entries of size WIDE16[0] at d_k = WIDE16[1]
#: with K = Q, whose products |q|^2, near 1.15e5, pass float16's largest number
#: (65504: inf in float16), and entries of size ROUND16[0] at d_k = ROUND16[1], whose
#: products near 25,600 float16 rounds to a multiple of 16 (by up to 8, a scaled
#: score by up to 1: two keys 2.5 apart there, a scaled gap of 0.3125, tie).
WIDE16, ROUND16 = (30.0, 128), (20.0, 64)
#: How to compute in a precision of at least float32, said in the dtype hints.
_WORK = ("float64: cast Q, K and V with .astype(np.float64) before the product (raw "
         "scores computed in float32 overflow, or round a near tie wrong, where "
         "float64's do not), shift the raw scores R = Q @ np.swapaxes(K, -1, -2) by "
         "their row maximum, then divide them by tau and by sqrt(d_k), "
         "(R - R.max(axis=-1, keepdims=True)) / tau / np.sqrt(d_k)")
#: How far the results for float32 and for float16 inputs may lie from the float64
#: reference of the same inputs (right attempts in float16 are off by under 1e-3 there).
_LOW_ATOL = {"float32": 1e-5, "float16": 5e-3}
#: An ordinary temperature at which the float32 inputs' scaled scores reach about 370
#: and the float16 inputs' about 150: past float32's exp() limit (about 88.72), below
#: float64's (about 709.78), so that a shift made only past float64's limit shows.
TAU32 = 0.01
#: exp() overflows past these, in float32 and in float64.
_EXP_MAX = {"float32": float(np.log(np.finfo(np.float32).max)),
            "float64": float(np.log(np.finfo(np.float64).max))}


#: Said when a row's weights are NaN for a shift by another maximum than its own.
OWN_MAXIMUM = ("was each row shifted by its own maximum (not its mean or minimum, "
               "not the unscaled scores' maximum subtracted from the scaled scores, not "
               "one maximum for the whole array)? "
               "Any other shift can leave a row whose scaled scores all lie far below "
               "it with every exponential underflowed to 0 (or above it, overflowed to "
               "inf), and 0/0 or inf/inf is NaN; subtract S.max(axis=-1, keepdims=True) "
               "of the scaled scores S")


def _exp_limit_hint(got, Q, K, tau, limit: bool = True) -> str:
    """Said when an attempt's weights ``got`` are not finite for float32 or float16
    inputs: a shift by one maximum for the whole array (or head) if they are NaN where
    it gives NaN, or else, where the scaled scores pass float32's exp() limit but not
    float64's, that limit (with ``limit``: the attempt shifted the float64 rows
    right); "" otherwise."""
    if _one_maximum_in_float32(got, Q, K, tau):
        return ": " + OWN_MAXIMUM
    if not limit:
        return ""
    top = float(np.abs(_raw_scores(*(x.astype(np.float64) for x in (Q, K)))).max()
                / (tau * np.sqrt(Q.shape[-1])))
    if not _EXP_MAX["float32"] < top < _EXP_MAX["float64"]:
        return ""
    return (f": the scaled scores reach about {top:.3g} here, and the work is in "
            "float32 (for float32 and float16 inputs alike): float64's exp limit "
            f"(709.78) is not float32's ({_EXP_MAX['float32']:.2f}); exp() of a score "
            "not shifted overflows float32 past 88.72, and inf/inf is NaN; subtract "
            "S.max(axis=-1, keepdims=True) always, not only past some bound")


def _one_maximum_in_float32(got, Q, K, tau) -> bool:
    """Whether weights ``got`` for float16 inputs are NaN exactly where scores computed
    in float32 and shifted by one maximum for the whole array (or head) give NaN."""
    w = np.float32
    with np.errstate(all="ignore"):
        S = Q.astype(w) @ np.swapaxes(K.astype(w), -1, -2) * w(1 / (tau * np.sqrt(
            Q.shape[-1])))
        if not np.isfinite(S).all():
            return False
        E = np.exp(S - S.max(axis=(-2, -1), keepdims=True))
        A = E / E.sum(axis=-1, keepdims=True)
    nan = np.isnan(np.asarray(got, dtype=np.float64))
    return bool(np.isnan(A).any()) and np.array_equal(nan, np.isnan(A))


#: Said when float16 inputs' weights are NaN where the raw products Q K^T (not the
#: scaled scores) pass float16's largest number.
RAW16_OVERFLOW = ("compute float16 in float64: the raw products Q K^T reach about "
                  "{raw:.2g} here, past float16's largest number, 65504, though the "
                  "scaled scores (about {top:.2g}) fit: computed in float16, Q @ K^T "
                  "is inf before it is divided by tau sqrt(d_k) (dividing afterwards, "
                  "even in float64, comes too late), and inf - inf is NaN; compute in "
                  "{work}, and cast O and A back with .astype(Q.dtype)")
#: Said when float16 inputs' weights are those of raw products rounded to float16.
RAW16_ROUNDED = ("compute float16 in float64: the raw products Q K^T reach about "
                 "{raw:.3g} here, where float16's numbers lie {gap:g} apart, so "
                 "Q @ K^T computed in float16 is rounded by up to {half:g}, and the "
                 "scaled scores by up to {moved:.3g} (your weights are those of the "
                 "rounded products); compute in {work}, and cast O and A back with "
                 ".astype(Q.dtype)")


def _raw_top(Q, K) -> float:
    """The largest raw product |Q K^T| of float16 inputs, computed in float64."""
    return float(np.abs(_raw_scores(*(x.astype(np.float64) for x in (Q, K)))).max())


def _rounded_in_float16(got, want, Q, K, tau) -> bool:
    """Whether float16 inputs' weights ``got``, finite and wrong, are those of the raw
    products Q K^T computed in float16 (the rest in float64), where those products
    pass 2048 (from there float16 rounds integers)."""
    if got is None or np.shape(got) != want.shape or _raw_top(Q, K) <= 2048:
        return False
    A = np.asarray(got, dtype=np.float64)
    if not np.isfinite(A).all():
        return False
    with np.errstate(all="ignore"):
        R16 = _raw_scores(Q.astype(np.float16), K.astype(np.float16))
        if not np.isfinite(R16).all():
            return False
        A16 = _softmax(R16.astype(np.float64) / (tau * np.sqrt(Q.shape[-1])))
    atol = _LOW_ATOL["float16"]
    return bool(np.abs(A16 - want).max() > atol and np.abs(A - A16).max() <= atol)


def _wide_float16_inputs():
    """The float16 inputs of WIDE16 and ROUND16: (Q, K, V) of each, six arrays."""
    rng = np.random.default_rng(_RNG_SEED + 7)
    size, d_k = WIDE16
    Qw = (size * rng.standard_normal((4, d_k))).astype(np.float16)
    Vw = rng.standard_normal((4, 3)).astype(np.float16)
    size, d_k = ROUND16
    # q . k1 = 25,600 and q . k2 = 25,597.5 (one entry 1/8 smaller), both
    # 25,600 in float16; the second query's 25,602.5 and 25,600 too; k3 = -k1
    q = np.full(d_k, size)
    k2 = q.copy()
    k2[0] -= 0.125
    q2 = q.copy()
    q2[1] += 0.125
    Qr = np.stack([q, q2]).astype(np.float16)
    Kr = np.stack([q, k2, -q]).astype(np.float16)
    Vr = rng.standard_normal((3, 2)).astype(np.float16)
    return Qw, Qw.copy(), Vw, Qr, Kr, Vr


def _nan_in_float64_too(fn, Q, K, V, tau) -> str:
    """What an attempt is told whose weights for float16 inputs are not finite, and
    whose weights on float64 copies of the same inputs are not finite either: the NaN
    does not come from float16 (st23b: a shift by the row mean, in float64, was told
    to compute in float32); "" otherwise."""
    pair, _ = _attempt(fn, *(x.astype(np.float64) for x in (Q, K, V)), tau)
    if pair is None or pair[1] is None:
        return ""
    with np.errstate(all="ignore"):
        try:
            A = np.asarray(pair[1], dtype=np.float64)
        except (TypeError, ValueError):
            return ""
        top = float(np.abs(_raw_scores(*(x.astype(np.float64) for x in (Q, K)))).max()
                    / (tau * np.sqrt(Q.shape[-1])))
    if np.isfinite(A).all():
        return ""
    head = "your weights on float64 copies of these inputs contain NaN too, so float16 "
    R = _raw_scores(*(x.astype(np.float64) for x in (Q, K)))
    if A.shape == R.shape:
        with np.errstate(all="ignore"):
            P = _softmax(R / np.sqrt(Q.shape[-1])) ** (1 / np.float64(tau))
            P = P / P.sum(axis=-1, keepdims=True)
        nan = np.isnan(A)
        if np.array_equal(nan, np.isnan(P)) and np.allclose(A[~nan], P[~nan], rtol=0,
                                                            atol=1e-8):
            # (st23b: a power of the weights was told the shift)
            return (f"{head}is not its cause: were the weights {_POWER}, "
                    "softmax(Q K^T / sqrt(d_k)) ** (1 / tau), renormalised? At "
                    f"tau = {tau:g} the power 1/tau underflows every weight of a row to "
                    "0, and 0/0 is NaN; divide the scores by tau before exp()")
    return (f"{head}is not its cause, the shift is (the scaled scores reach about "
            f"{top:.2g} here, at tau = {tau:g}): {OWN_MAXIMUM}, at every tau")


def _float16_case(fn, Q, K, V, tau, limit: bool = True) -> tuple[bool, str]:
    """float16 in, float16 out, to float16's precision (computing in float64 and casting
    the results back is right too; in float32 not at a cold near tie, TIE16)."""
    pair, error = _attempt(fn, Q, K, V, tau)
    if pair is None:
        return False, error
    want_O, want_A = scaled_dot_product_attention(*(x.astype(np.float64) for x in (Q, K, V)),
                                                  temperature=tau)
    dtypes = {n: getattr(x, "dtype", None) for n, x in zip("OA", pair)}
    for name, got, want in (("A", pair[1], want_A), ("O", pair[0], want_O)):
        ok, detail = _close(got, want, f"{name} for float16 inputs at tau = {tau:g}",
                            atol=_LOW_ATOL["float16"])
        if not ok:
            if got is not None and np.shape(got) == want.shape and \
                    not np.isfinite(np.asarray(got, dtype=np.float64)).all():
                top = float(np.abs(_raw_scores(*(x.astype(np.float64) for x in (Q, K))))
                            .max() / (tau * np.sqrt(Q.shape[-1])))
                factor = 1 / (tau * np.sqrt(Q.shape[-1]))
                overflow = _float32_overflow_hint(Q, K, tau)
                shift = _nan_in_float64_too(fn, Q, K, V, tau)
                if shift:
                    detail += ": " + shift
                elif overflow:
                    detail = detail.replace(": " + _NAN_FROM_SCORES, "") + ": " + overflow
                elif factor > float(np.finfo(np.float16).max):
                    # (not the NaN's usual causes: the scores are finite in float32)
                    detail = detail.replace(": " + _NAN_FROM_SCORES, "")
                    detail += (f": the factor 1/(tau sqrt(d_k)) is about {factor:.2g} "
                               "here, past float16's largest number, 65504, and tau "
                               f"and tau sqrt(d_k) (about {1 / factor:.2g}) lie below "
                               "its smallest positive number (about 6e-08), where they "
                               "round to 0: a factor, a tau or a divisor made a float16 "
                               "(Q.dtype.type(...), np.float16(tau), or a float16 array "
                               "divided by a Python float, which NumPy does in float16) "
                               "is inf or 0, and the scores inf or NaN; keep the factor "
                               f"out of float16 and compute in {_WORK}, and cast O and A "
                               "back with .astype(Q.dtype)")
                elif top > float(np.finfo(np.float16).max) and \
                        _one_maximum_in_float32(got, Q, K, tau):
                    detail += ": " + OWN_MAXIMUM
                elif top > float(np.finfo(np.float16).max):
                    detail += (f": the scaled scores reach about {top:.2g} here, past "
                               "float16's largest number, 65504: computed in float16, "
                               "c Q K^T (or Q K^T / (tau sqrt(d_k))) is inf before the "
                               "shift, and inf - inf is NaN; compute in "
                               f"{_WORK}, and cast O and A back with .astype(Q.dtype)")
                elif _raw_top(Q, K) > float(np.finfo(np.float16).max):
                    detail = detail.replace(": " + _NAN_FROM_SCORES, "")
                    detail += ": " + RAW16_OVERFLOW.format(
                        raw=_raw_top(Q, K), top=top, work=_WORK)
                else:
                    detail += _exp_limit_hint(pair[1], Q, K, tau, limit)
            elif name == "A" and _rounded_in_float16(got, want, Q, K, tau):
                raw = _raw_top(Q, K)
                gap = float(np.spacing(np.float16(raw)))
                detail += ": " + RAW16_ROUNDED.format(
                    raw=raw, gap=gap, half=gap / 2,
                    moved=gap / 2 / (tau * np.sqrt(Q.shape[-1])), work=_WORK)
            return ok, detail
    wrong = {n: d for n, d in dtypes.items() if d != np.float16}
    if wrong and all(d == np.float32 for d in wrong.values()):
        which = " and ".join(wrong)
        return False, (f"float16 scores gave float32 weights: {which} "
                       f"{'is' if len(wrong) == 1 else 'are'} float32 for float16 inputs "
                       "(computed in float32, as np.result_type(Q.dtype, np.float32) or "
                       "a float32 constant makes it?); the results keep the inputs' "
                       "dtype: compute in float64 (float32 rounds a cold near tie wrong) "
                       "and cast the results back with .astype(Q.dtype)")
    wrong = _not_arrays(pair, Q) or _dtype_rejection(np.float16, dtypes)
    return not wrong, wrong


def _float32_at(fn, Q, K, V, tau, limit: bool = True) -> tuple[bool, str, dict]:
    pair, error = _attempt(fn, Q, K, V, tau)
    if pair is None:
        return False, error, {}
    want_O, want_A = scaled_dot_product_attention(*(x.astype(np.float64) for x in (Q, K, V)),
                                                  temperature=tau)
    dtypes = {n: getattr(x, "dtype", None) for n, x in zip("OA", pair)}
    for name, got, want in (("A", pair[1], want_A), ("O", pair[0], want_O)):
        ok, detail = _close(got, want, f"{name} for float32 inputs",
                            atol=_LOW_ATOL["float32"])
        if not ok:
            d = dtypes[name]
            if got is not None and np.shape(got) == want.shape and \
                    not np.isfinite(np.asarray(got, dtype=np.float64)).all():
                overflow = _float32_overflow_hint(Q, K, tau)
                if overflow:
                    return ok, (detail.replace(": " + _NAN_FROM_SCORES, "") + ": "
                                + overflow), dtypes
                return ok, detail + _exp_limit_hint(pair[1], Q, K, tau, limit), dtypes
            near = (got is not None and np.shape(got) == want.shape and np.abs(
                np.asarray(got, dtype=np.float64) - want).max() < _LOW["float16"][1])
            if d is not None and np.dtype(d).kind == "f" and np.dtype(d).itemsize < 4 and \
                    near:
                detail += (f": your array is {np.dtype(d).name}, which keeps only about "
                           f"{_LOW['float16'][0]} digits; compute in the inputs' precision")
            elif near and _narrow_precision(got, want) == "float16":
                detail += (": your array holds float16 numbers only (computed in float16, "
                           "then cast back to float32?), which keeps only about "
                           f"{_LOW['float16'][0]} digits; compute in the inputs' precision")
            return ok, detail, dtypes
    wrong = _not_arrays(pair, Q) or _dtype_rejection(np.float32, dtypes)
    return not wrong, wrong, dtypes


#: The float32 inputs' hot temperature, past float32's largest number (about 3.4e38),
#: on entries of size 1e19 (raw products up to 1e38, finite in float32) whose scaled
#: scores lie near 0.07 and 0.02 (d_k = 2): the softmax still tells the keys apart,
#: while tau, or tau sqrt(d_k), rounded to float32 is inf and the weights uniform (the
#: factor 1/(tau sqrt(d_k)), about 7e-40, is a float32 subnormal, right to 5e-8).
HOT32 = 1e39
HOT32_Q = ((1e19, 0.0), (3e18, 1e18))
HOT32_K = ((1e19, 0.0), (-1e19, 0.0), (0.0, 1e19))
HOT32_V = ((1.0, 0.0), (0.0, 1.0), (5.0, 5.0))
#: Said when the float32 weights at HOT32 are uniform.
TAU_INF_IN_FLOAT32 = ("tau (or tau sqrt(d_k)) rounded to float32 is inf past 3.4e38: "
                      "cast Q, K and V to float64 before the product, shift the raw "
                      "scores R by their row maximum, then divide them by tau and by "
                      "sqrt(d_k), (R - R.max(axis=-1, keepdims=True)) / tau / "
                      "np.sqrt(d_k), and cast O and A back with .astype(Q.dtype)")
#: The HOT32 inputs' cold temperatures: their raw scores, about 1e38, scaled by
#: 1/(tau sqrt(d_k)) pass float32's largest number (3.4e38) there, so that scores scaled
#: in float32 before the shift are inf, and inf - inf NaN (row 0 at 0.1, both at 1e-3).
COLD32_ON_HOT32 = (0.1, 1e-3)
#: The float32 inputs' far colder temperatures, and the float16 inputs' coldest: at
#: 1e-30 the factor 1/(tau sqrt(d_k)), about 6e29, fits float32; at 1e-40, about 6e39,
#: it does not, so that a factor made a float32 is inf (and 0 * inf, or inf - inf, NaN)
#: even after a shift, whatever the size of the scores.
COLD32 = (1e-30, 1e-40)
#: float32 inputs whose raw products Q K^T, up to 9e38, pass float32's largest number
#: (3.4e38) while their scaled scores at HOT32 fit (about 0.64, d_k = 2): computed in
#: float32, Q @ K^T is inf before any shift or division (st23b: raw scores computed in
#: float32, then shifted and divided in float64, passed every case).
WIDE32_Q = ((3e19, 0.0), (1e19, 2e19))
WIDE32_K = ((3e19, 0.0), (0.0, 3e19), (-1e19, 1e19))
#: A cold near tie for float32 inputs (q = (1, 1, 1, 1); the second key is the first with
#: 2e-6 added to its first entry, the third the first negated), run at TIE32_TAUS, where
#: the raw gap of 2e-6 is a scaled gap of 1 and 3.3: the raw scores, near 1.9, rounded
#: to float32 (by up to 6e-8) move the weights by about 9e-3 and 5e-3, past the
#: tolerance 1e-5; computed in float64 they are exact (st23b).
TIE32_K0 = (0.3, 0.7, 1.1, -0.2)
TIE32_TAUS = (1e-6, 3e-7)
#: The same for float16 inputs: the second key is the first one float16 step (6e-8)
#: larger in its last entry, and at TIE16_TAU the scaled gap is 2: the raw scores,
#: near 2, rounded to float32 tie the two keys, which the softmax gives 0.12 and 0.88
#: (st23b: float32 work passed, said right by this docstring).
TIE16_K0 = (1.0, 0.3333, 0.7, 6.1e-5)
TIE16_TAU = 1.5e-8
#: Said when an attempt's weights at a near tie are wrong for float32 (or float16)
#: inputs and right on float64 copies of them: the raw products were rounded.
PRODUCTS_ROUNDED = ("your weights are right on float64 copies of these inputs and wrong "
                    "on {name} ones: were the raw products Q K^T computed in {work}? "
                    "{work} rounds the raw scores here (near {raw:.2g}) by up to about "
                    "{err:.1g}, and divided by tau sqrt(d_k) = {div:.2g} that rounding "
                    "moves the scaled scores by up to about {moved:.2g}, where the two "
                    "best keys' scaled scores lie {gap:.2g} apart; cast Q, K and V to "
                    "float64 before the product (a shift or a division after it comes "
                    "too late), and cast O and A back with .astype(Q.dtype)")
#: Said when an attempt's weights at a near tie are the softmax at a far warmer tau.
TIE_WARMER = ("the softmax gives the two best keys {want0:.3g} and {want1:.3g} at this "
              "tau; yours are {got0:.3g} and {got1:.3g}, {which}: was tau clamped from "
              "below (max(tau, ...), so as not to divide by a tiny number), or an epsilon "
              "added to it? Divide the scores by tau itself, at every tau")


def _tie_inputs(dtype):
    """(Q, K, V) of the cold near tie of float32 (TIE32_K0) or float16 (TIE16_K0) inputs."""
    if dtype == np.float32:
        k0 = np.array(TIE32_K0, dtype=np.float32)
        k1 = k0.copy()
        k1[0] += np.float32(2e-6)
    else:
        k0 = np.array(TIE16_K0, dtype=np.float16)
        k1 = k0.copy()
        k1[-1] = np.nextafter(k1[-1], np.float16(1))
    Q = np.ones((1, len(k0)), dtype=dtype)
    K = np.stack([k0, k1, -k0])
    V = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]], dtype=dtype)
    return Q, K, V


def _exact_products_tie(dtype, tau):
    """(Q, K, V) of ``dtype`` at d_k = 1, q = 1: the raw products are the keys
    themselves, exact in every precision; the two best one step of the dtype apart near
    tau / eps (a scaled gap of 0.5 to 4 at ``tau``), so that weights a clamp of tau
    gives there are told from raw products rounded."""
    k0 = dtype(2.0 ** np.floor(np.log2(tau / float(np.finfo(dtype).eps))))
    K = np.array([[k0], [np.nextafter(k0, dtype(np.inf))], [-k0]], dtype=dtype)
    return (np.ones((1, 1), dtype=dtype), K,
            np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]], dtype=dtype))


def _tie_named(fn, Q, K, V, tau, name) -> str:
    """What an attempt wrong at a near tie of ``name`` (float32 or float16) inputs is
    told: PRODUCTS_ROUNDED when it is right on float64 copies of them, TIE_WARMER when
    its weights are the softmax at a tau more than twice as warm; "" otherwise."""
    copies = tuple(x.astype(np.float64) for x in (Q, K, V))
    want_O, want = scaled_dot_product_attention(*copies, temperature=tau)
    pair, _ = _attempt(fn, Q, K, V, tau)
    if pair is None or np.shape(pair[1]) != want.shape:
        return ""
    with np.errstate(all="ignore"):
        A = np.asarray(pair[1], dtype=np.float64)
        d_k = Q.shape[-1]
        R = _raw_scores(*copies[:2])
        top = np.sort(R, axis=-1)[0]
        gap = float(top[-1] - top[-2])
    if not np.isfinite(A).all():
        return ""
    # a clamp at a bound of the dtype is right on float64 copies too (st25b): told so
    # when it is a clamp on inputs whose raw products no precision rounds as well
    # (the tie's weights are those of every bound from far below it: the probe tells
    # the bound)
    if _clamp_bounds(A, Q, K, V, tau, _LOW_ATOL[name], told=False):
        exact = _exact_products_tie(Q.dtype.type, tau)
        probe, _ = _attempt(fn, *exact, tau)
        bounds = [] if probe is None else \
            _clamp_bounds(probe[1], *exact, tau, _LOW_ATOL[name])
        clamp = _dtype_clamp(A, Q, K, V, tau, _LOW_ATOL[name],
                             [attr for attr, _ in bounds], told=False)
        if clamp:
            return clamp
    pair64, _ = _attempt(fn, *copies, tau)
    if pair64 is not None and _close(pair64[1], want, "")[0] and \
            _close(pair64[0], want_O, "")[0]:
        work = np.float32
        raw = float(np.abs(R).max())
        err = float(np.spacing(work(raw))) / 2
        div = tau * np.sqrt(d_k)
        return PRODUCTS_ROUNDED.format(name=name, work=np.dtype(work).name, raw=raw,
                                       err=err, div=div, moved=err / div, gap=gap / div)
    # the tau whose softmax gives the attempt's two best keys their ratio
    best = np.argsort(want[0])[-2:]
    a0, a1 = (float(A[0, i]) for i in best)
    ratio = np.log(a1 / a0) if a0 > 0 and a1 > 0 else np.nan
    if not (np.isfinite(ratio) and ratio >= 0):
        return ""
    warm = gap / (np.sqrt(d_k) * ratio) if ratio > 0 else np.inf
    if not warm > 2 * tau:
        return ""
    which = ("equal, as at a far warmer tau" if ratio == 0 else
             f"the softmax's at tau = {warm:.2g}, warmer than tau = {tau:g}")
    return TIE_WARMER.format(want0=float(want[0, best[1]]), want1=float(want[0, best[0]]),
                             got0=a1, got1=a0, which=which)


def _float32_wide_and_tied_cases(fn) -> tuple[bool, str]:
    """float32 inputs whose raw products pass 3.4e38 (WIDE32, at HOT32) and a cold near
    tie (TIE32_TAUS): raw scores computed in float32 are inf or rounded there."""
    Q, K, V = (np.array(x, dtype=np.float32) for x in (WIDE32_Q, WIDE32_K, HOT32_V))
    ok, detail = _float32_case(fn, Q, K, V, HOT32)
    if not ok:
        return ok, detail.replace("for float32 inputs", "for float32 inputs of size 3e19 "
                                  f"at tau = {HOT32:g}", 1)
    Q, K, V = _tie_inputs(np.float32)
    for tau in TIE32_TAUS:
        ok, detail = _float32_case(fn, Q, K, V, tau)
        if not ok:
            return ok, _tie_detail(fn, Q, K, V, tau, detail, "float32")
    return True, ""


def _tie_detail(fn, Q, K, V, tau, detail, name) -> str:
    """``detail`` of a failed near-tie case, named by its inputs and tau, with
    PRODUCTS_ROUNDED when the weights are those of products in a lower precision."""
    detail = detail.replace(f"for {name} inputs at tau = {tau:g}", f"for {name} inputs",
                            1).replace(f"for {name} inputs", f"for {name} inputs at a "
                                       f"near tie at tau = {tau:g}", 1)
    named = _tie_named(fn, Q, K, V, tau, name)
    return f"{detail.split(': ', 1)[0]}: {named}" if named else detail


def _float16_tied_case(fn) -> tuple[bool, str]:
    """float16 inputs at a cold near tie (TIE16_TAU): raw scores computed in float32 tie
    the two keys."""
    Q, K, V = _tie_inputs(np.float16)
    ok, detail = _float16_case(fn, Q, K, V, TIE16_TAU)
    return (ok, detail) if ok else (ok, _tie_detail(fn, Q, K, V, TIE16_TAU, detail,
                                                    "float16"))


def _float32_overflow_hint(Q, K, tau) -> str:
    """What float32 (or float16) inputs' weights that are not finite are told where the
    factor 1/(tau sqrt(d_k)), or the scaled scores, pass float32's largest number: that
    they are inf when computed in float32, and how to avoid it; "" elsewhere."""
    big = float(np.finfo(np.float32).max)
    factor = 1 / (float(tau) * np.sqrt(Q.shape[-1]))
    top = _raw_top(Q, K) * factor
    work = "float32" if Q.dtype == np.float32 else "float32, the work for float16 inputs,"
    remedy = ("cast Q, K and V to float64 before the product, shift the raw scores R "
              "by their row maximum before scaling (a positive divisor keeps the "
              "maximum where it is), then divide them by tau and by sqrt(d_k), "
              "(R - R.max(axis=-1, keepdims=True)) / tau / np.sqrt(d_k); cast O and A "
              "back with .astype(Q.dtype)")
    if factor > big:
        return (f"in {work} the factor 1/(tau sqrt(d_k)) is inf at tau = {float(tau):g} "
                f"(about {factor:.2g}, past float32's largest number, 3.4e38): made a "
                "float32 (w.type(...), or a Python float multiplied into a float32 "
                "array, which NumPy 2 casts to float32) it makes the scaled scores inf, "
                f"and 0 * inf or inf - inf NaN, shifted or not; {remedy}")
    if top <= big and Q.dtype == np.float32 and _raw_top(Q, K) > big:
        return (f"in float32 the raw products Q K^T overflow to inf: they reach about "
                f"{_raw_top(Q, K):.2g} here, past float32's largest number, 3.4e38, "
                f"though the scaled scores (about {top:.2g}, at tau = {float(tau):g}) "
                "fit: Q @ K^T computed in float32 is inf before it is shifted or "
                "divided (doing either afterwards, even in float64, comes too late), "
                f"and inf - inf is NaN; {remedy}")
    if top > big:
        return (f"in {work} the scaled scores overflow to inf when |q . k| / (tau "
                "sqrt(d_k)) passes float32's largest number, 3.4e38 (here they reach "
                f"about {top:.2g}, at tau = {float(tau):g}): scaled before the shift, "
                f"a row's maximum is inf, and inf - inf is NaN; {remedy}")
    return ""


def _floored_in_float32(A, Q, K, tau) -> bool:
    """Whether weights ``A`` of float32 inputs are those of a shift floored at some
    bound from -199 to -60 (np.maximum(row maximum, F)), exp() taken in float32."""
    with np.errstate(all="ignore"):
        S = _raw_scores(Q.astype(np.float64), K.astype(np.float64)) / (
            tau * np.sqrt(Q.shape[-1]))
        m = S.max(axis=-1, keepdims=True)
        for F in np.arange(-199.0, -59.0):
            E = np.exp((S - np.maximum(m, F)).astype(np.float32)).astype(np.float64)
            if np.allclose(A, E / E.sum(axis=-1, keepdims=True), rtol=0, atol=1e-6,
                           equal_nan=True):
                return True
    return False


#: The bounds of np.finfo(dtype) a tau clamped from below at a bound of the inputs'
#: dtype may be clamped at (st25b: max(tau, np.finfo(Q.dtype).tiny) passed float32 and
#: was told "raw products computed in float32" on float16 inputs).
_FINFO_BOUNDS = ("tiny", "smallest_subnormal", "eps", "resolution")
#: Said when the weights are the softmax at a bound of the inputs' dtype.
DTYPE_CLAMP = ("your weights are the softmax at tau = {bound}, warmer than tau = {tau:g} "
               "(the softmax at tau gives {want}; yours {got}): was tau clamped from "
               "below at a bound of the inputs' dtype (max(tau, {code}), so as not to "
               "divide by a tiny number)? No bound is needed: at every tau whose raw "
               "products and scaled scores float64 can hold, the raw scores computed in "
               "float64, shifted by their row maximum and divided by tau and by "
               "np.sqrt(d_k), are finite; divide by tau itself")


def _reference_A(Q, K, V, tau):
    """The weights at ``tau`` of float64 ``Q``, ``K``, ``V``: the library's, or, where
    its factor 1/(tau sqrt(d_k)) is inf (a subnormal tau), those of Q / tau at tau = 1."""
    with np.errstate(all="ignore"):
        try:
            return scaled_dot_product_attention(Q, K, V, temperature=tau)[1]
        except ValueError:
            return scaled_dot_product_attention(Q / tau, K, V)[1]


def _clamp_bounds(A, Q, K, V, tau, atol: float, among=_FINFO_BOUNDS,
                  told: bool = True) -> list:
    """The bounds b of np.finfo(Q.dtype) (of ``among``), as (name, value), such that
    weights ``A`` of ``Q``, ``K``, ``V`` at ``tau`` are the softmax (on float64
    copies) at max(tau, b) where the softmax at tau differs from it; with ``told``,
    only a bound these inputs tell from twice it (st25b: tau + 1e-12, uniform weights
    where the softmax at float32's eps is uniform too, was told a clamp at eps)."""
    if A is None:
        return []
    copies = tuple(np.asarray(x, dtype=np.float64) for x in (Q, K, V))
    with np.errstate(all="ignore"):
        A = np.asarray(A, dtype=np.float64)
    want = _reference_A(*copies, tau)
    if A.shape != want.shape or not np.isfinite(A).all():
        return []
    info = np.finfo(np.asarray(Q).dtype)
    found = []
    for attr in among:
        bound = float(getattr(info, attr))
        if not tau < bound:
            continue
        at = scaled_dot_product_attention(*copies, temperature=bound)[1]
        if told and np.allclose(at, scaled_dot_product_attention(
                *copies, temperature=2 * bound)[1], rtol=0, atol=atol):
            continue
        if np.allclose(A, at, rtol=0, atol=atol) and \
                not np.allclose(want, at, rtol=0, atol=atol):
            found.append((attr, bound))
    return found


def _dtype_clamp(A, Q, K, V, tau, atol: float, among=_FINFO_BOUNDS,
                 told: bool = True) -> str:
    """What weights ``A`` of ``Q``, ``K``, ``V`` at ``tau`` are told that are the
    softmax at max(tau, b) for a bound b of np.finfo(Q.dtype) (``_clamp_bounds``; every
    bound that gives them is named); "" otherwise."""
    found = _clamp_bounds(A, Q, K, V, tau, atol, among, told)
    if not found:
        return ""
    name = np.asarray(Q).dtype.name
    A = np.asarray(A, dtype=np.float64)
    want = _reference_A(*(np.asarray(x, dtype=np.float64) for x in (Q, K, V)), tau)
    bound = " or ".join(f"{b:.3g}, np.finfo({name}).{attr}" for attr, b in found)
    code = " or ".join(f"np.finfo(Q.dtype).{attr}" for attr, _ in found)
    rows = [X.reshape(-1, X.shape[-1]) for X in (want, A)]
    row = int(np.abs(rows[1] - rows[0]).max(axis=-1).argmax())  # the row most off
    want_row, got_row = ("(" + ", ".join(f"{x:.3g}" for x in X[row]) + ")" for X in rows)
    return DTYPE_CLAMP.format(bound=bound, tau=tau, code=code, want=want_row, got=got_row)


#: float32 inputs of size 1e-20 (d_k = 2), run at TINY32, below float32's smallest
#: normal number (np.finfo(np.float32).tiny, about 1.2e-38): their raw products, about
#: 1e-40, and scaled scores, from -0.71 to 1.41, are float64 numbers, and the softmax
#: tells the keys apart, so that a tau clamped at a bound of the dtype
#: (max(tau, np.finfo(Q.dtype).tiny)) shows (st25b: on the ordinary float32 inputs at
#: 1e-40, entries of size 1, it gave the same one-hot weights, and passed).
TINY32 = 1e-40
TINY32_Q = ((1e-20, 0.0), (3e-21, 1e-20))
TINY32_K = ((2e-20, 0.0), (0.0, 1e-20), (-1e-20, 1e-20))


#: Said when the weights at TINY32 are uniform.
TINY32_UNIFORM = (f"your weights are all equal, where at tau = {TINY32:g} the softmax "
                  "still tells the keys apart (the scores, divided by tau sqrt(d_k), lie "
                  "from -0.71 to 1.41 here): was tau clamped from below (max(tau, ...)), "
                  "or an epsilon added to it? Divide the scores by tau itself, at every "
                  "tau, in float64")


def _float32_tiny_case(fn) -> tuple[bool, str]:
    """float32 inputs of size 1e-20 at TINY32; weights that are the softmax at a bound
    of float32 (a clamp) are named so."""
    Q, K, V = (np.array(x, dtype=np.float32) for x in (TINY32_Q, TINY32_K, HOT32_V))
    ok, detail = _float32_cold_case(fn, Q, K, V, TINY32, "of size 1e-20 ")
    if ok:
        return ok, detail
    pair, _ = _attempt(fn, Q, K, V, TINY32)
    named = "" if pair is None else _dtype_clamp(pair[1], Q, K, V, TINY32,
                                                 _LOW_ATOL["float32"])
    if not named and pair is not None and np.shape(pair[1]) == (2, 3):
        with np.errstate(all="ignore"):
            A = np.asarray(pair[1], dtype=np.float64)
        if np.all(np.abs(A - 1 / 3) <= 1e-6):  # (a clamp far above the dtype's bounds)
            named = TINY32_UNIFORM
    return ok, f"{detail.split(': ', 1)[0]}: {named}" if named else detail


def _float32_hot_case(fn) -> tuple[bool, str]:
    """float32 inputs at HOT32: right to float32 precision, and uniform weights named
    as tau, or tau sqrt(d_k), rounded to float32."""
    Q, K, V = (np.array(x, dtype=np.float32) for x in (HOT32_Q, HOT32_K, HOT32_V))
    ok, detail = _float32_case(fn, Q, K, V, HOT32)
    if ok:
        return ok, detail
    pair, _ = _attempt(fn, Q, K, V, HOT32)
    A = None if pair is None else pair[1]
    if A is not None and np.shape(A) == (2, 3):
        with np.errstate(all="ignore"):
            A = np.asarray(A, dtype=np.float64)
        if np.allclose(A, 1 / 3, rtol=0, atol=1e-7):
            detail = (f"{detail.split(': ', 1)[0]} at tau = {HOT32:g}: your weights "
                      f"are all equal: {TAU_INF_IN_FLOAT32}")
    return ok, detail


def _float32_cold_case(fn, Q, K, V, tau, inputs: str) -> tuple[bool, str]:
    """``_float32_case`` at a cold ``tau``, its message naming the inputs and tau."""
    ok, detail = _float32_case(fn, Q, K, V, tau)
    return ok, detail.replace("for float32 inputs", f"for float32 inputs {inputs}at "
                              f"tau = {tau:g}", 1)


def _float32_cold_cases(fn, Q32, K32, V32) -> tuple[bool, str]:
    """float32 inputs cold: the HOT32 inputs at COLD32_ON_HOT32, whose scaled scores pass
    float32's largest number, and the ordinary ones at COLD32, where at 1e-40 the factor
    1/(tau sqrt(d_k)) does."""
    Q, K, V = (np.array(x, dtype=np.float32) for x in (HOT32_Q, HOT32_K, HOT32_V))
    for tau in COLD32_ON_HOT32:
        ok, detail = _float32_cold_case(fn, Q, K, V, tau, "of size 1e19 ")
        if not ok:
            return ok, detail
    for tau in COLD32:
        ok, detail = _float32_cold_case(fn, Q32, K32, V32, tau, "")
        if not ok:
            return ok, detail
    return True, ""


def check_attention_with_temperature(fn: Callable, verbose: bool = True) -> bool:
    """Check ``fn(Q, K, V, tau) -> (O, A)``: scores Q K^T / (tau sqrt(d_k)), A their softmax
    along the keys, O = A V, for (T_q, d_k) and (..., T_q, d_k) inputs and in both limits;
    an attempt that runs the library's own attention fails every case."""
    library = _library_attention()  # first: it imports attention.torch, and so torch
    functions, builtins = _torch_attention(TORCH_ATTENTION)
    fn = _refusing_the_library(fn, {**library, **functions}, LIBRARY, builtins)
    rng = np.random.default_rng(_RNG_SEED + 1)
    Q, K, V = _qkv(rng, T_q=T_Q, T_k=T_K, d_k=D_K, d_v=D_V)
    results = []

    def returns_a_pair_output_first():
        pair, error = _attempt(fn, Q, K, V, 2.0)
        if pair is None:
            return False, error
        O, A = pair
        if np.shape(O) == (T_Q, T_K) and np.shape(A) == (T_Q, D_V):
            return False, "the pair is in the wrong order: return (O, A), the output first"
        return True, ""

    results.append(_run("returns the pair (O, A)", returns_a_pair_output_first))

    for tau in TAUS:
        O_ref, A_ref = scaled_dot_product_attention(Q, K, V, temperature=tau)
        results.append(_run(f"weights at tau = {tau}", lambda t=tau, A=A_ref: _case(
            fn, Q, K, V, t, want_A=A, what=f"at tau = {t}")))
        results.append(_run(f"output at tau = {tau}", lambda t=tau, O=O_ref: _case(
            fn, Q, K, V, t, want_O=O, what=f"at tau = {t}")))

    ordinary_ok = all(ok for _, ok, _ in results[1:])  # the scale is right

    # Cold, compared with the reference as tightly as every other case, on the checker's
    # inputs and on a long row (a floor on the shifted scores shows there).
    extra = np.random.default_rng(_RNG_SEED + 2)  # inputs of their own: the others keep theirs
    T_q, T_k, d_k, d_v = LONG
    Ql, Kl, Vl = _qkv(extra, T_q=T_q, T_k=T_k, d_k=d_k, d_v=d_v)
    Vl = V_SIZE * Vl
    cold = [(Q, K, V, COLD, f"at tau = {COLD:g}"),
            (Ql, Kl, Vl, LONG_TAU, f"at tau = {LONG_TAU:g} on {T_k} keys"),
            (FAR_TAUS[0] * Q, K, V, FAR_TAUS[0],
             f"at tau = {FAR_TAUS[0]:g} on Q scaled by tau"),
            (EXTREME_COLD * Q, K, V, EXTREME_COLD,
             f"at tau = {EXTREME_COLD:g} on Q scaled by tau")]
    # and rows whose best scaled score leads the next two by 14.5, 16 and 18.5 (a fourth
    # key far below): their weights lie 1e-6 to 2e-8 from one-hot, so that snapping a
    # row to one-hot once its lead, or its largest weight, passes some bound shows
    cold += [(_scaled_scores_row(K, (0.0, -g, -g, -60.0), COLD), K, V, COLD,
              f"at tau = {COLD:g} with a lead of {g:g} in the scaled scores")
             for g in GAPS]
    # and rows of 4096 keys, each key but the best 20 to 30.5 below it: thousands of
    # weights of e^-20 to e^-30 add up, so that a snap or a zeroing at a bound up to
    # 30 shows
    cold += [(*_long_lead_row(g, COLD), COLD,
              f"at tau = {COLD:g} on {LONG_LEADS_T} keys led by {g:g} in the scaled "
              "scores") for g in LONG_LEADS]
    # and a row of RISING_T keys whose scaled scores rise along it (a running maximum
    # not rescaled shows, in blocks of up to 16384 keys)
    cold.append((*_rising_row(COLD), COLD,
                 f"at tau = {COLD:g} on {RISING_T} keys whose scaled scores rise "
                 "along the row"))
    cold = [(q, k, v, t, w, *scaled_dot_product_attention(q, k, v, temperature=t))
            for q, k, v, t, w in cold]
    # last, beyond the extreme: at a subnormal tau (the reference as (tau Q) / tau at
    # tau = 1, since the factor is inf there)
    cold.append((BEYOND_COLD * Q, K, V, BEYOND_COLD,
                 f"at tau = {BEYOND_COLD:g} on Q scaled by tau",
                 *scaled_dot_product_attention(BEYOND_COLD * Q / BEYOND_COLD, K, V)))

    def cold_case(weights: bool):
        for q, k, v, t, what, O, A in cold:
            wanted = dict(want_A=A if weights else None, want_O=None if weights else O,
                          what=what, shortcuts=ordinary_ok)
            if t in (EXTREME_COLD, FAR_TAUS[0], BEYOND_COLD):  # (q is Q scaled by tau)
                ok, detail = _extreme_case(fn, Q, k, v, t, **wanted)
            else:
                ok, detail = _case(fn, q, k, v, t, **wanted)
            if not ok and k.shape[-2] == RISING_T:  # (last: right on every row before)
                # the rescale's hint when the results are those of an online softmax
                # not rescaled, or when nothing else is named (st22b)
                named = _rescale_named(fn, q, k, v, t)
                head, _, rest = detail.partition(": ")
                if named or not rest or rest == _NAN_FROM_SCORES:
                    detail = f"{head}: {named or RESCALE}"
            elif not ok and t not in (EXTREME_COLD, FAR_TAUS[0], BEYOND_COLD):
                named = _rescale_named(fn, q, k, v, t)
                if named:
                    detail = f"{detail.split(': ', 1)[0]}: {named}"
                elif detail.endswith(_NAN_FROM_SCORES):
                    # (st23b: a shift by the row mean, or the raw scores' maximum
                    # subtracted from the scaled scores, was told only the usual causes)
                    detail += "; or " + OWN_MAXIMUM
            if not ok:
                return ok, detail
        return True, ""

    leads = ", ".join(f"{g:g}" for g in GAPS[:-1]) + f" and {GAPS[-1]:g}"
    long_leads = ", ".join(f"{g:g}" for g in LONG_LEADS[:-1]) + f" and {LONG_LEADS[-1]:g}"
    cold_title = (f"at tau = {COLD:g} (also on rows whose scaled scores lead by "
                  f"{leads}, on rows of {LONG_LEADS_T} keys led by {long_leads}, "
                  f"and on a row of {RISING_T} keys rising along it), "
                  f"at {LONG_TAU:g} on {T_k} keys, and at {FAR_TAUS[0]:g}, "
                  f"{EXTREME_COLD:g} and {BEYOND_COLD:g} on Q scaled by tau")
    results.append(_run(f"weights {cold_title}", lambda: cold_case(True)))
    results.append(_run(f"output {cold_title}", lambda: cold_case(False)))

    # Cold, with one row's scores far below another's: a single maximum for the whole array
    # leaves every exponential of the low row underflowed to 0, and 0/0 is NaN.
    top = float(np.max(Q[0] @ K.T))  # positive for the checker's seed
    Q_far = np.stack([Q[0], 1e-3 * Q[0]]) * (5.0 / top)  # (2, d_k)
    # the first row's best score is 5 / (COLD sqrt(d_k)), about 1900; the second row's all
    # lie within about 2 of 0: exp() of them minus 1900 is 0 in float64
    O_far, A_far = scaled_dot_product_attention(Q_far, K, V, temperature=COLD)
    far_hint = ": " + OWN_MAXIMUM
    # Cold, with every score of a row far below 0 (from -1000 to -1005 once divided by
    # tau sqrt(d_k)): a shift by max(row maximum, 0), or one made only when the scores are
    # large (above about 700, where exp() overflows), leaves that row's exponentials all
    # underflowed to 0, and 0/0 is NaN.
    Q_neg = _scaled_scores_row(K, NEGATIVE, COLD)
    O_neg, A_neg = scaled_dot_product_attention(Q_neg, K, V, temperature=COLD)
    Q_far_neg = _scaled_scores_row(K, NEGATIVE_FAR, COLD)
    Q_far_pos = _scaled_scores_row(K, [-s for s in NEGATIVE_FAR], COLD)  # near +1e5
    O_far_neg, A_far_neg = scaled_dot_product_attention(Q_far_neg, K, V, temperature=COLD)
    Q_sub = _scaled_scores_row(K, SUBNORMAL, COLD)
    O_sub, A_sub = scaled_dot_product_attention(Q_sub, K, V, temperature=COLD)
    sub_hint = (": the shift is needed on every row, not only where exp() would "
                "overflow or underflow on every key: here the scaled scores lie near "
                f"{SUBNORMAL[0]:g}, where exp() does not underflow to 0 but is subnormal "
                "(below about 2.2e-308, with only a few digits left), so the "
                "exponentials not shifted round to a few digits; always subtract "
                "S.max(axis=-1, keepdims=True)")

    def subnormal_case():
        ok, detail = _case(fn, Q_sub, K, V, COLD, want_A=A_sub, want_O=O_sub,
                           what=f"with scaled scores near {SUBNORMAL[0]:g}",
                           hint=neg_hint, shortcuts=ordinary_ok)
        if ok or not ordinary_ok or "NaN" in detail:
            return ok, detail
        pair, _ = _attempt(fn, Q_sub, K, V, COLD)
        with np.errstate(all="ignore"):
            E = np.exp(Q_sub @ K.T / (COLD * np.sqrt(D_K)))
            unshifted = E / E.sum(axis=-1, keepdims=True)
        if pair is not None and np.shape(pair[1]) == unshifted.shape and np.allclose(
                np.asarray(pair[1], dtype=np.float64), unshifted, rtol=0, atol=1e-12):
            return False, detail.split(": ", 1)[0] + sub_hint
        return ok, detail
    def far_negative_case():
        ok, detail = _case(fn, Q_far_neg, K, V, COLD, want_A=A_far_neg, want_O=O_far_neg,
                           what="with every score near -1e5",
                           hint=FLOOR_HINT.format(low="-1e5", floor="-700"))
        if ok or "NaN" in detail:
            return ok, detail
        # every score clipped from below (np.clip(S, -L, L) with L below 1e5) is -L:
        # exactly uniform weights, where the softmax's are not; so are NaN weights
        # replaced by 1/T_k, told apart on the same row mirrored (near +1e5), which a
        # clip makes uniform too and a floor on the shift leaves right
        def uniform(q):
            pair, _ = _attempt(fn, q, K, V, COLD)
            if pair is None or np.shape(pair[1]) != A_far_neg.shape:
                return False
            with np.errstate(all="ignore"):
                A = np.asarray(pair[1], dtype=np.float64)
            return bool(np.all(A == 1 / A.shape[-1]))

        if uniform(Q_far_neg):
            head = detail.split(": ", 1)[0]
            if uniform(Q_far_pos):
                return False, f"{head}: {CLIPPED_BELOW}"
            return False, f"{head}: {UNIFORM_FAR_BELOW}"
        return ok, detail

    Q_over = _scaled_scores_row(K, NEAR_OVERFLOW, COLD)
    O_over, A_over = scaled_dot_product_attention(Q_over, K, V, temperature=COLD)
    # (built at scores of size 1 and scaled: lstsq squares its target)
    Q_vneg = 1e300 * _scaled_scores_row(K, [s / 1e300 for s in VERY_NEGATIVE], COLD)
    O_vneg, A_vneg = scaled_dot_product_attention(Q_vneg, K, V, temperature=COLD)

    def far_rows_case():
        ok, detail = _case(fn, Q_far, K, V, COLD, want_A=A_far, want_O=O_far,
                           what="with rows far apart", hint=far_hint,
                           shortcuts=ordinary_ok)
        if ok or "contains NaN" not in detail:
            return ok, detail
        # NaN as exp() not shifted gives it, and zeros on the row whose every
        # exponential underflows (0/0 without an epsilon in the sums): an epsilon
        # added to the sums instead of the shift
        pair, _ = _attempt(fn, Q_neg, K, V, COLD)
        with np.errstate(all="ignore"):
            A = None if pair is None or np.shape(pair[1]) != A_neg.shape else \
                np.asarray(pair[1], dtype=np.float64)
        if A is not None and np.all(A == 0):
            return False, (f"{detail.split(': ', 1)[0]}: {NOT_SHIFTED}"
                           f"{_NOT_SHIFTED_HOW['eps']} (your weights are 0 on every "
                           f"key of a row whose scaled scores all lie below "
                           f"{NEGATIVE[0]:g}){_NOT_SHIFTED_FIX}")
        return ok, detail

    reached = []  # (the rows before were right: the shift is right on them)

    def sum_overflow_case():
        reached.append(True)
        ok, detail = _case(fn, Q_over, K, V, COLD, want_A=A_over, want_O=O_over,
                           what="with scaled scores just under 709.78",
                           shortcuts=ordinary_ok)
        if ok:
            return ok, detail
        pair, _ = _attempt(fn, Q_over, K, V, COLD)
        with np.errstate(all="ignore"):
            E = np.exp(Q_over @ K.T / (COLD * np.sqrt(D_K)))
            unshifted = E / E.sum(axis=-1, keepdims=True)
            A = None if pair is None or np.shape(pair[1]) != unshifted.shape else \
                np.asarray(pair[1], dtype=np.float64)
        if A is not None and (np.array_equal(A, unshifted, equal_nan=True)
                              or not np.isfinite(A).all() or not A.any()):
            return False, f"{detail.split(': ', 1)[0]}: {SUM_OVERFLOWS}"
        return ok, detail

    def very_negative_case():
        ok, detail = _case(fn, Q_vneg, K, V, COLD, want_A=A_vneg, want_O=O_vneg,
                           what="with every score near -1e300", shortcuts=ordinary_ok)
        if ok:
            return ok, detail
        pair, _ = _attempt(fn, Q_vneg, K, V, COLD)
        with np.errstate(all="ignore"):
            A = None if pair is None or np.shape(pair[1]) != A_vneg.shape else \
                np.asarray(pair[1], dtype=np.float64)
        if A is not None and (not np.isfinite(A).all() or np.all(A == 1 / T_K)):
            return False, f"{detail.split(': ', 1)[0]}: {FLOORED_FAR}"
        return ok, detail

    neg_hint = (": the shift must be each row's own maximum, also when every score is "
                "negative: here every scaled score lies below -1000, so exp() of a score "
                "not shifted (a shift by max(S.max(axis=-1, keepdims=True), 0), or one made "
                "only when the scores are large) underflows to 0 on every key, and 0/0 is "
                "NaN; always subtract S.max(axis=-1, keepdims=True)")
    # The same rows at ordinary and hot temperatures (the query built for each tau): a
    # shift made only when tau is small leaves exp() of scaled scores near 800 to
    # overflow, and of scores all below -1000 to underflow, where the shift is needed
    # just as much.
    def at_every_tau(tau):
        Q_big, Q_low = (_scaled_scores_row(K, row, tau) for row in (LARGE, NEGATIVE))
        hint = (f": the shift is needed at every temperature: here tau = {tau:g} and the "
                "scaled scores {reach}, so exp() of the scores not shifted {goes}, and "
                "inf/inf or 0/0 is NaN; subtract S.max(axis=-1, keepdims=True) whatever "
                "tau is")
        runs = [(Q_big, f"reach {LARGE[0]:g}", "overflows to inf", "reaching 800"),
                (Q_low, f"all lie below {NEGATIVE[0]:g}", "underflows to 0 on every key",
                 "all below -1000")]
        cases = []
        for q, reach, goes, what in runs:
            O_t, A_t = scaled_dot_product_attention(q, K, V, temperature=tau)
            cases.append(lambda q=q, O_t=O_t, A_t=A_t, reach=reach, goes=goes, what=what:
                         _case(fn, q, K, V, tau, want_A=A_t, want_O=O_t,
                               what=f"at tau = {tau:g} with scaled scores {what}",
                               hint=hint.format(reach=reach, goes=goes),
                               shortcuts=ordinary_ok))
        return cases

    results.append(_run(f"two further queries (tau = {COLD:g}), queries whose scaled "
                        f"scores lie near {SUBNORMAL[0]:g} (tau = {COLD:g}) or all "
                        f"below -1000 (tau = {COLD:g}, "
                        f"{SHIFT_TAUS[0]:g}, {SHIFT_TAUS[1]:g}) or near -1e5 (tau = "
                        f"{COLD:g}) or reach 800 (tau = "
                        f"{SHIFT_TAUS[0]:g}, {SHIFT_TAUS[1]:g}) or lie just under "
                        f"709.78 or near -1e300 (tau = {COLD:g})",
                        _all(far_rows_case,
                             lambda: _case(fn, Q_neg, K, V, COLD, want_A=A_neg, want_O=O_neg,
                                           what="with every score below -1000",
                                           hint=neg_hint, shortcuts=ordinary_ok),
                             far_negative_case,
                             subnormal_case,
                             *(c for t in SHIFT_TAUS for c in at_every_tau(t)),
                             # (last: attempts that fail the others are told those)
                             sum_overflow_case, very_negative_case)))
    # (float32's exp() limit is named for float32 and float16 inputs only to an attempt
    # that shifted the float64 rows right)
    shift_ok = results[-1][1] or bool(reached)

    # A tie for the best score: the two tied keys share the weight, however cold.
    q_tie = Q[:1]
    K_tie = K.copy()
    j = int(np.argmax(q_tie @ K.T))
    other = (j + 1) % T_K
    K_tie[other] = K_tie[j]  # two identical keys: exactly equal scores
    def near_tie_inputs(tau):
        """A query and keys whose best two scores differ by tau sqrt(d_k), a scaled gap of
        1: the query is scaled by tau 1e9, so that its scores (about tau 1e9) round to
        about 1e-7 of the gap, and a clamp, an added epsilon or an argmax at this tau
        shows."""
        q_n = (tau * 1e9) * q_tie
        K_n = K.copy()
        K_n[other] = K[j] - (tau * np.sqrt(D_K) / (q_n[0] @ q_n[0])) * q_n[0]
        return tau, q_n, K_n

    near_ties = [near_tie_inputs(tau) for tau in (NEAR, NEAREST, COLDER)]
    Q_clip, K_clip, V_clip = np.array(CLIP_Q), np.array(CLIP_K), V[:len(CLIP_K)]
    clips = [(t, *scaled_dot_product_attention(Q_clip, K_clip, V_clip, temperature=t))
             for t in CLIP_TAUS]

    def tied_keys_share_the_weight():
        # at COLD and far colder, so that an argmax taken below some small tau shows too
        for tau in (COLD, COLDEST):
            pair, error = _attempt(fn, q_tie, K_tie, V, tau)
            if pair is None:
                return False, error
            O, A = pair
            O_tie, tie = scaled_dot_product_attention(q_tie, K_tie, V, temperature=tau)
            ok, detail = _check_weights(A, tie, q_tie, K_tie, V, tau,
                                        f"weights at tau = {tau:g} with two tied best keys",
                                        shortcuts=ordinary_ok)
            # every row one-hot (its largest weight 1), not only some weight somewhere
            one_hot = (A is not None and np.shape(A) == tie.shape
                       and bool(np.all(np.isclose(np.asarray(A, dtype=np.float64).max(
                           axis=-1), 1.0, atol=1e-6))))
            if not ok and one_hot:
                detail = detail.split(": your weights are exactly one-hot")[0]
                detail += (": two keys tied for the best score should get 1/2 each, however "
                           "small tau is; an argmax picks only one of them")
            if ok:
                ok, detail = _compare(O, O_tie, f"output at tau = {tau:g} with two tied best "
                                      "keys", 1e-8)
            if not ok:
                return ok, detail
        # A near tie: the second key scores tau sqrt(d_k) below the best at tau = NEAR, so
        # the softmax gives the two e/(1 + e) and 1/(1 + e); a tau clamped from below
        # (max(tau, 1e-3)), which the cases above cannot see (their weights are one-hot
        # at 1e-3 already), shows here.
        # A lower but positive score beside the best, both far above 1e15 once scaled:
        # clipping the scaled scores (np.clip(S, -L, L), L up to 3.5e15) ties the two;
        # the same at 1e-300, where they are about 7e303 and 3.5e303 (any L below).
        # (Before the near ties, where clipping and an argmax with np.isclose ties give
        # the same weights: here only clipping ties scores so far apart.)
        for tau, O_clip, A_clip in clips:
            ok, detail = _case(fn, Q_clip, K_clip, V_clip, tau, want_A=A_clip,
                               want_O=O_clip, what=f"at tau = {tau:g} with scores of "
                               f"about {CLIP_SIZES[tau]}",
                               shortcuts=ordinary_ok)
            if not ok:
                return ok, detail
        for tau, q_n, K_n in near_ties:
            ok, detail = near_tie(tau, q_n, K_n)
            if not ok:
                return ok, detail
        return True, ""

    def near_tie(tau, q_tie, K_near):
        O_near, A_near = scaled_dot_product_attention(q_tie, K_near, V, temperature=tau)
        pair, error = _attempt(fn, q_tie, K_near, V, tau)
        if pair is None:
            return False, error
        what = f"at tau = {tau:g} with two keys whose scores differ by tau sqrt(d_k)"
        ok, detail = _check_weights(pair[1], A_near, q_tie, K_near, V, tau, f"weights {what}",
                                    atol=1e-6, shortcuts=ordinary_ok)
        named = detail != _compare(pair[1], A_near, f"weights {what}", 1e-6)[1]
        if not ok and ordinary_ok and not named:  # the scale is right, and nothing named
            detail += _warmer_than_asked(pair[1], A_near, q_tie, K_near, tau)
        return (ok, detail) if not ok else _compare(pair[0], O_near, f"output {what}", 1e-6)

    def _warmer_than_asked(A, A_near, q_n, K_n, tau) -> str:
        """What weights are told that are the softmax at a warmer temperature than tau,
        the same one on every key (tau clamped from below, or an epsilon added)."""
        if A is None or np.shape(A) != A_near.shape:
            return ""
        A = np.asarray(A, dtype=np.float64)
        with np.errstate(all="ignore"):
            gap = np.log(A[0, j] / A[0, other])  # the scaled gap 1, at the attempt's tau
        if not (np.isfinite(gap) and 0 < gap < 1 - 1e-6):
            return ""
        warmer = tau / gap
        A_warm = scaled_dot_product_attention(q_n, K_n, V, temperature=warmer)[1]
        if not np.allclose(A, A_warm, atol=1e-6):
            return ""
        n = _apart(A[0, j], A_near[0, j])
        return (f": the softmax gives these two keys {A_near[0, j]:.{n}g} and "
                f"{A_near[0, other]:.{n}g} at this tau; yours are {A[0, j]:.{n}g} and "
                f"{A[0, other]:.{n}g}, the softmax at tau = "
                f"{warmer:.{_apart(warmer, tau)}g}: was tau clamped "
                "from below (max(tau, ...), so as not to divide by a tiny number), or "
                "an epsilon added to it? Or was the temperature applied as a power, "
                "np.exp(S) ** (1 / tau) (equal in exact arithmetic, but the power "
                "multiplies exp()'s rounding by 1/tau)? Divide the scores by tau "
                "itself, before exp(), at every tau")

    results.append(_run(f"two keys with equal scores (tau = {COLD:g}, {COLDEST:g}), scores "
                        f"of about 1e16 at {COLDEST:g} and 1e304 at {EXTREME_COLD:g}, and two keys whose scaled scores "
                        f"differ by 1 (tau = {NEAR:g}, {NEAREST:g}, {COLDER:g})",
                        tied_keys_share_the_weight))

    # tau -> infinity: nearly uniform weights, and the output nearly the plain average
    # of the values; compared with the reference as tightly as every other case (the
    # weights differ from 1/T_k by about 1e-7 here), so that a shortcut to exactly
    # uniform weights at large tau shows.
    O_hot, A_hot = scaled_dot_product_attention(Q, K, V, temperature=HOT)
    O_hotter, A_hotter = scaled_dot_product_attention(Q, K, V, temperature=HOTTER)
    # and on large scores (about 1e4), where even tau = 1e10 leaves the weights off uniform
    Qg, Kg, Vg = _qkv(extra, T_q=2, T_k=5, d_k=64, d_v=3)
    Qg, Kg = BIG * Qg, BIG * Kg
    big = [(t, *scaled_dot_product_attention(Qg, Kg, Vg, temperature=t)) for t in BIG_TAUS]
    Qx = EXTREME_HOT * Q  # Q K^T about 1e300: finite, and the scaled scores near 1
    O_x, A_x = scaled_dot_product_attention(Qx, K, V, temperature=EXTREME_HOT)
    O_f, A_f = scaled_dot_product_attention(FAR_TAUS[1] * Q, K, V, temperature=FAR_TAUS[1])
    far_hot = f"at tau = {FAR_TAUS[1]:g} on Q scaled by tau"
    extreme = f"at tau = {EXTREME_HOT:g} on Q scaled by tau"
    O_b, A_b = scaled_dot_product_attention(BEYOND_HOT * Q, K, V, temperature=BEYOND_HOT)
    beyond = f"at tau = {BEYOND_HOT:g} on Q scaled by tau"

    def nearly_uniform_weights():
        # first at WARM temperatures between TAUS and HOT, where an expansion of exp()
        # to first order in 1/tau is still off by more than the tolerance
        for tau in WARM:
            A = scaled_dot_product_attention(Q, K, V, temperature=tau)[1]
            ok, detail = _case(fn, Q, K, V, tau, want_A=A, what=f"at tau = {tau:g}",
                               shortcuts=ordinary_ok)
            if not ok:
                return ok, detail
        for tau, A in ((HOT, A_hot), (HOTTER, A_hotter)):
            ok, detail = _case(fn, Q, K, V, tau, want_A=A, what=f"at tau = {tau:g}",
                               shortcuts=ordinary_ok)
            if not ok:
                return ok, detail
        for tau, _, A in big:
            ok, detail = _case(fn, Qg, Kg, Vg, tau, want_A=A,
                               what=f"at tau = {tau:g} on scores of about 1e4",
                               shortcuts=ordinary_ok)
            if not ok:
                return ok, detail
        ok, detail = _extreme_case(fn, Q, K, V, FAR_TAUS[1], far_hot, want_A=A_f,
                                   shortcuts=ordinary_ok, colder=BIG_TAUS[-1])
        if not ok:
            return ok, detail
        ok, detail = _extreme_case(fn, Q, K, V, EXTREME_HOT, extreme, want_A=A_x,
                                   shortcuts=ordinary_ok, colder=BIG_TAUS[-1])
        if not ok:
            return ok, detail
        return _extreme_case(fn, Q, K, V, BEYOND_HOT, beyond, want_A=A_b,
                             shortcuts=ordinary_ok, colder=BIG_TAUS[-1])

    def output_near_the_mean():
        for tau in WARM:
            O = scaled_dot_product_attention(Q, K, V, temperature=tau)[0]
            ok, detail = _case(fn, Q, K, V, tau, want_O=O, what=f"at tau = {tau:g}",
                               shortcuts=ordinary_ok)
            if not ok:
                return ok, detail
        for tau, O in ((HOT, O_hot), (HOTTER, O_hotter)):
            ok, detail = _case(fn, Q, K, V, tau, want_O=O, what=f"at tau = {tau:g}",
                               shortcuts=ordinary_ok)
            if not ok:
                return ok, detail
        for tau, O, _ in big:
            ok, detail = _case(fn, Qg, Kg, Vg, tau, want_O=O,
                               what=f"at tau = {tau:g} on scores of about 1e4",
                               shortcuts=ordinary_ok)
            if not ok:
                return ok, detail
        ok, detail = _extreme_case(fn, Q, K, V, FAR_TAUS[1], far_hot, want_O=O_f,
                                   shortcuts=ordinary_ok, colder=BIG_TAUS[-1])
        if not ok:
            return ok, detail
        ok, detail = _extreme_case(fn, Q, K, V, EXTREME_HOT, extreme, want_O=O_x,
                                   shortcuts=ordinary_ok, colder=BIG_TAUS[-1])
        if not ok:
            return ok, detail
        return _extreme_case(fn, Q, K, V, BEYOND_HOT, beyond, want_O=O_b,
                             shortcuts=ordinary_ok, colder=BIG_TAUS[-1])

    hot = (f"to {BIG_TAUS[-1]:g}, on small and on large scores, and at "
           f"{FAR_TAUS[1]:g}, {EXTREME_HOT:g} and {BEYOND_HOT:g} on Q scaled by tau")
    results.append(_run(f"weights at tau = {WARM[0]:g} {hot}", nearly_uniform_weights))
    results.append(_run(f"output at tau = {WARM[0]:g} {hot}", output_near_the_mean))

    # Other sizes and another temperature: an attempt right only at the checker's
    # d_k = 7 or at its temperatures shows here.
    lead, T_q, T_k, d_k, d_v = OTHER
    Qo, Ko, Vo = _qkv(rng, T_q=T_q, T_k=T_k, d_k=d_k, d_v=d_v, batch=lead)
    Vo = V_SIZE * Vo
    O_o, A_o = scaled_dot_product_attention(Qo, Ko, Vo, temperature=OTHER_TAU)
    # and sizes that allow two mistakes (inputs of their own: the others keep theirs):
    # T_q = T_k with Q = K = V (a causal mask when the scores are square shows) and
    # T_k = d_k (K used as it is when its shape allows, as if given transposed, shows)
    own = np.random.default_rng(_RNG_SEED + 5)
    Qs = own.standard_normal((SQUARE, SQUARE_D))
    Qt, Kt, Vt = _qkv(own, T_q=3, T_k=SQUARE_D, d_k=SQUARE_D, d_v=2)
    with np.errstate(all="ignore"):
        S_s = Qs @ Qs.T / (OTHER_TAU * np.sqrt(SQUARE_D))
        causal_A = _softmax(np.where(np.tri(SQUARE, dtype=bool), S_s, -np.inf))
        flat_A = _softmax(Qt @ Kt / (OTHER_TAU * np.sqrt(SQUARE_D)))
    between = [(t, *scaled_dot_product_attention(Qo, Ko, Vo, temperature=t))
               for t in BETWEEN_TAUS]
    seed = _fresh_seed()
    drawn = [(t, *scaled_dot_product_attention(Qo, Ko, Vo, temperature=t))
             for t in _draw_taus(seed)]

    def between_the_taus():
        for t, O_t, A_t in between:
            ok, detail = _case(fn, Qo, Ko, Vo, t, want_A=A_t, want_O=O_t,
                               what=f"at other sizes at tau = {t:.10g}",
                               shortcuts=ordinary_ok)
            if not ok:
                rounded = _tau_rounded(fn, Qo, Ko, Vo, t) or \
                    _snapped_rows(fn, Qo, Ko, Vo, t)
                return ok, (f"{detail.split(': ', 1)[0]}: {rounded}" if rounded
                            else detail)
        for t, O_t, A_t in drawn:
            ok, detail = _case(fn, Qo, Ko, Vo, t, want_A=A_t, want_O=O_t,
                               what=f"at other sizes at tau = {t!r}, drawn afresh for "
                               "this call", shortcuts=ordinary_ok)
            if not ok:
                return ok, (f"{detail} (right at every fixed temperature; "
                            f"_draw_taus({seed}) in attention.checkers.temperature "
                            "draws it again): the softmax must hold at every tau")
        return True, ""

    results.append(_run(f"other sizes ({lead[0]}, T_q = {T_q}, d_k = {d_k}), T_k = {T_k}, "
                        f"d_v = {d_v}, values of size {V_SIZE:g}, tau = {OTHER_TAU:g}; "
                        f"T_q = T_k = {SQUARE} with Q = K = V, T_k = d_k = {SQUARE_D}, and "
                        f"T_k = d_v = 1 (also at {COLD:g}); "
                        f"and there {len(BETWEEN_TAUS)} taus from "
                        f"{min(BETWEEN_TAUS):.3g} to {max(BETWEEN_TAUS):.3g}, between "
                        f"the others, and {DRAWN_TAUS} drawn afresh",
                        _all(lambda: _case(fn, Qo, Ko, Vo, OTHER_TAU, want_A=A_o, want_O=O_o,
                                           what="at other sizes", shortcuts=ordinary_ok),
                             lambda: _shape_trap_case(fn, Qs, Qs, Qs, OTHER_TAU,
                                                      "with T_q = T_k (Q = K = V)",
                                                      causal_A, CAUSAL),
                             lambda: _shape_trap_case(fn, Qt, Kt, Vt, OTHER_TAU,
                                                      "with T_k = d_k", flat_A,
                                                      UNTRANSPOSED),
                             lambda: _one_key_case(fn, np.random.default_rng(_RNG_SEED + 10)),
                             # (last: attempts that fail the others are told those)
                             between_the_taus)))

    # float32 inputs: float32 results, to float32 precision.
    Q32, K32, V32 = (x.astype(np.float32) for x in _qkv(rng, T_q=4, T_k=6, d_k=3, d_v=5))
    # and float16 inputs: float16 results, to float16 precision (inputs of their own).
    Q16, K16, V16 = (x.astype(np.float16) for x in _qkv(np.random.default_rng(_RNG_SEED + 3),
                                                        T_q=3, T_k=5, d_k=6, d_v=4))
    # and a float32 query whose scaled scores at tau = 1.5 all lie near -200 (keys of
    # its own, three of them in d_k = 3)
    n_rng = np.random.default_rng(_RNG_SEED + 6)
    Kn32 = n_rng.standard_normal((len(NEGATIVE32), 3))
    Qn32 = _scaled_scores_row(Kn32, NEGATIVE32, 1.5).astype(np.float32)
    Kn32 = Kn32.astype(np.float32)
    Vn32 = n_rng.standard_normal((len(NEGATIVE32), 5)).astype(np.float32)

    # and float16 inputs whose raw products Q K^T float16 cannot hold, at tau = 1
    Qw16, Kw16, Vw16, Qr16, Kr16, Vr16 = _wide_float16_inputs()

    def float32_negative():
        # (run after the other float32 cases, which it differs from by its row only)
        ok, detail = _float32_case(fn, Qn32, Kn32, Vn32, 1.5, limit=False)
        if ok or "floor on the shift" in detail:
            return ok, detail
        detail = detail.replace("for float32 inputs",
                                "for float32 inputs with every score near -200", 1)
        # the floor's hint only for the weights of a floor on the shift, NaN or keys
        # set to 0 where exp() in float32 underflowed (st22b: K untransposed when
        # square was told it too)
        pair, _ = _attempt(fn, Qn32, Kn32, Vn32, 1.5)
        A = None if pair is None or np.shape(pair[1]) != (1, len(NEGATIVE32)) else \
            np.asarray(pair[1], dtype=np.float64)
        # (and only for weights that are wrong: the right ones are a floor's at -199
        # too, and an output of the wrong shape was told a floor)
        want_n = scaled_dot_product_attention(*(x.astype(np.float64) for x in (
            Qn32, Kn32, Vn32)), temperature=1.5)[1]
        if A is not None and not _close(A, want_n, "", atol=_LOW_ATOL["float32"])[0] \
                and _floored_in_float32(A, Qn32, Kn32, 1.5):
            detail = detail.split(": ", 1)[0] + FLOOR_HINT.format(
                low="-200 (in float32, exp() is 0 below about -103)", floor="-80")
        return ok, detail

    cold32 = " and ".join(f"{t:g}" for t in COLD32_ON_HOT32)
    results.append(_run("float32 inputs give float32 results, float16 inputs float16 "
                        f"(tau = 1.5, {TAU32:g}, {COLD32[0]:g}, {COLD32[1]:g} and "
                        f"{HOT32:g}, and {cold32} on entries of size 1e19, {HOT32:g} on entries of "
                        f"size 3e19, {TINY32:g} on entries of size 1e-20 and "
                        f"{TIE32_TAUS[0]:g} and {TIE32_TAUS[1]:g} at a near tie; 0.7, "
                        f"{TAU32:g}, {COLD16:g}, {COLDEST16:g} and {COLD32[1]:g}, and 1 on "
                        f"entries of size {WIDE16[0]:g} at d_k = {WIDE16[1]} and "
                        f"{ROUND16[0]:g} at d_k = {ROUND16[1]}, and {TIE16_TAU:g} at a near "
                        "tie)",
                        _all(lambda: _float32_case(fn, Q32, K32, V32, 1.5),
                             lambda: _float32_case(fn, Q32, K32, V32, TAU32, shift_ok),
                             float32_negative,
                             lambda: _float16_case(fn, Q16, K16, V16, 0.7),
                             lambda: _float16_case(fn, Q16, K16, V16, TAU32, shift_ok),
                             lambda: _float16_case(fn, Q16, K16, V16, COLD16),
                             lambda: _float16_case(fn, Q16, K16, V16, COLDEST16),
                             lambda: _float16_case(fn, Qw16, Kw16, Vw16, 1.0),
                             lambda: _float16_case(fn, Qr16, Kr16, Vr16, 1.0),
                             # (last: attempts that fail the others are told those)
                             lambda: _float32_hot_case(fn),
                             lambda: _float32_cold_cases(fn, Q32, K32, V32),
                             lambda: _float16_case(fn, Q16, K16, V16, COLD32[-1]),
                             lambda: _float32_wide_and_tied_cases(fn),
                             lambda: _float16_tied_case(fn),
                             lambda: _float32_tiny_case(fn))))

    # Leading batch and head dimensions, (B, H, T, d), as in a real model.
    Qb, Kb, Vb = _qkv(rng, T_q=T_Q, T_k=T_K, d_k=D_K, d_v=D_V, batch=BATCH)
    O_b, A_b = scaled_dot_product_attention(Qb, Kb, Vb, temperature=2.0)
    # and cold, where one maximum for all the heads (a shift right on one head only) leaves
    # the rows of the others underflowed
    O_bc, A_bc = scaled_dot_product_attention(Qb, Kb, Vb, temperature=COLD)
    # and three leading axes (inputs of their own: the others keep theirs)
    Q5, K5, V5 = _qkv(np.random.default_rng(_RNG_SEED + 4), T_q=T_Q, T_k=T_K, d_k=D_K,
                      d_v=D_V, batch=BATCH5)
    O_5, A_5 = scaled_dot_product_attention(Q5, K5, V5, temperature=2.0)
    lead5 = ", ".join(map(str, BATCH5))
    results.append(_run(f"leading batch and head dimensions (5, 6, T, d) and "
                        f"({lead5}, T, d), tau = 2 and {COLD:g}",
                        _all(lambda: _case(fn, Qb, Kb, Vb, 2.0, want_A=A_b, want_O=O_b,
                                           what="with batch dimensions"),
                             lambda: _case(fn, Qb, Kb, Vb, COLD, want_A=A_bc, want_O=O_bc,
                                           what=f"with batch dimensions at tau = {COLD:g}",
                                           hint=far_hint, shortcuts=ordinary_ok),
                             lambda: _case(fn, Q5, K5, V5, 2.0, want_A=A_5, want_O=O_5,
                                           what=f"with batch dimensions ({lead5})"))))
    return _report(results, verbose)
