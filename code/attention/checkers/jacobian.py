"""Checker of Exercise 5, ``ex-one-hot-jacobian`` (page "Saturation and the softmax Jacobian"):
``jacobian(a) -> (T_k, T_k)`` and ``vjp(a, g) -> (T_k,)`` for one row of softmax weights ``a``.

The specification it checks: ``jacobian(a)`` is J = diag(a) - a a^T (equation eq-jacobian);
``vjp(a, g)`` is J g in O(T_k) (equation eq-softmax-vjp, in the exercise's solution), a vector of the row's shape;
both give exactly zero for a one-hot row of four keys (no tolerance: the right formulas
give exact zeros there, so a weight clipped away from 0 or an a + 1e-12 shows) and zero
to 1e-12 for the one-key row a = (1.0) (J = [[0]], J g = [0]; there a.g is g's one entry,
which a Decimal a.g rounds); J g is right on a row of 7 keys with one weight exactly 0
(a division by a, its NaN cleaned into zeros, is named there); and J and J g are
right to 1e-12 and to a relative 1e-4 of their largest entry on saturated rows that are
not one-hot (softmax([8, 0, 0, 0]), softmax([3, 0, -0.5]), softmax([20, 0, 0, 0]),
softmax([25, 0, 0, 0]), softmax([29, 0, 0, 0]) and softmax([33, 0, 0, 0]), largest
weights 0.999, 0.926, 1 - 6e-9, 1 - 4e-11, 1 - 8e-13 and 1 - 1.4e-14; at the last two
a relative 1e-3 and 1e-2, which a.g summed in another order needs there), whose J is
small but not 0 (zeros returned above a threshold on a.max(), even 1 - 1e-13, and
weights below 1e-13 flushed to 0 are named); and softmax([40, 0, 0, 0]), whose
largest weight is exactly 1.0 in float64 and whose others are 4.2e-18: there J's
entries -a_i a_j and a_j (1 - a_j) and J g's entries off the top key are
exactly computable in float64 (within a few roundings of the exact ones), and only
the top key's a_1 (1 - a_1) and its J g entry, differences of numbers near 1, are
not, so each entry is compared with ROUNDINGS roundings of the size of the terms it
is the difference of (relatively for the small entries, absolutely for the top
key's): zeros returned where a.max() == 1.0, or above 1 - 1e-15, are named (st17a:
they passed while the rows stopped at 1 - 1.4e-14); and so is softmax([690, 0, 0,
0]), whose small weights are 2.2e-300 (their products underflow to 0 in every right
way), so that weights flushed to 0 below 1e-19 or 1e-20 are named (st18a), and
softmax([700, 0, 0, 0]), whose small weights are 9.9e-305, so that an attempt that
changes weights below 1e-300 in place is told so (st24c). Both return plain
float64 NumPy arrays (not lists, not np.matrix or another subclass, not float32)
and leave their arguments unchanged (and ``vjp`` is finite for a g with zero entries,
or all zero: one that divides by g is named); and ``vjp`` never builds J. That is judged
by how its cost grows, at rows of 64, 100, 512, 1500 and 4096 keys (``SIZES``; its values
there are compared too, and a wrong one is reported as "its values", not as a cost), each
cost against a budget that grows like T_k (``BUDGETS``, ``VJP_WORK_PASSES``), far above
what the O(T_k) product needs; the peak's and PyTorch's below what J needs at every measured
length (J alone is 8 T_k^2 bytes, 32 KiB at 64 keys, where the peak's budget is 28 KiB),
the work count's below a row of J for every key at every measured length, the summed
volume's below it from 495 keys on (not at 64, 65, 99 and 100 keys, where right attempts
allocate more per key than a row of J), so that an attempt that builds J only on short
rows, or only on long ones, shows. At each
length four rows are measured (``ROW_KINDS``): a dense one, a saturated one (one weight
above 0.99), one with masked keys (weights exactly 0) and one both saturated and masked,
so that an attempt that builds J only on one kind of row shows; and with them a dense
row of an odd length (``ODD_SIZES``, one per length in turn: 65, 99, 495, 1001 and 4095,
that is 5 * 13, 3^2 * 11, 3^2 * 5 * 11, 7 * 11 * 13 and 3^2 * 5 * 7 * 13), so that an
attempt that builds J only on odd rows, or only on lengths divisible by 3, 5, 7, 9, 11
or 13, shows. The gradients g are standard normal (of both signs), their absolute
values (all positive) or minus those (all negative) (``GRADIENT_KINDS``), in turn, so
that every length and every kind of row meets each, and an attempt that builds J only
for a gradient of one sign (a common one) shows. Unmeasured calls on rows of 7 keys, one of each kind, come first
(what a library sets up on its first call is not counted); every call after them is
measured, each on a row the vjp has not seen, so a J cached from an earlier call (keyed
on the row's bytes) or built only on a length's first call is built in a measured call.
Each measured call is followed by one in which NumPy's work is counted, on a fresh row
of the same length and kinds.
What remains: an attempt that builds J only on lengths or gradients the checker does not
measure passes it, undetected: only below 64 keys, only above 4096, only on lengths
other than these ten (a prime length, a multiple of 17), only for gradients of another
pattern (constant, integer-valued, of a given norm: gradients with zero entries are
given on four keys only, for the values), or only on a combination of length, kind of
row and kind of gradient that no measured row has.
What the checker sees, in each measured call: the peak of the memory ``tracemalloc``
traces (NumPy's arrays and Python's objects, in every thread) and that memory allocated
line by line, summed (each step between two of the tracer's events, a line or a call,
past its first ``VOLUME_ALLOWANCE``, 512 bytes); the lines of Python run in the calling
thread, outside NumPy's, PyTorch's, the checker's own files and the number types of the standard library written
in Python (``fractions``, ``_pydecimal``, ``numbers``; the attempt's functions they call
back count);
the items ``sum``, ``math.fsum`` and the ``fsum`` that ``statistics`` holds (which
``statistics.fmean`` calls) take, looked up by those names when they are called;
the entries every PyTorch operation touches (a dispatch mode); at one row of 4096 keys,
on Linux, the growth of the resident memory (any library's); and, in the counted call,
the entries NumPy operations touch when they take the arrays it passes as a and g
(a subclass that counts) or what NumPy derives from them (results and views); a copy
counts too when it is made by ``a.astype(float, subok=False)`` or ``a.__array__()``, or
by any public callable of NumPy's namespace (its functions and ufuncs, called directly,
and its float scalar types: ``np.asarray``, ``np.asanyarray``, ``np.array``,
``np.atleast_1d``, ``np.hstack``, ``np.concatenate``, ``np.frombuffer``, ``np.fromiter``,
``np.float64(a.tolist())``) from a counting argument, or holding a, g or a * g at that
moment (``np.empty`` and its kin: always); and those callables take a list or tuple
equal to a, g or a * g (``np.dot(a.tolist(), g.tolist())``) as that row, counting;
``np.einsum`` without ``optimize`` counts one product per combination of its indices.
What it cannot see: O(T_k^2) work that keeps the traced memory and the calling thread's
lines of Python within their budgets and that the counted call does not see: work on a
plain array reached without a copy it replaces (``a.base``, ``a.view(np.ndarray)``,
``asarray`` imported from NumPy before the call, a torch round trip
``torch.from_numpy(a).numpy()``), by a method called unbound (``np.ndarray.dot(a, g)``),
in compiled code (a C extension, Numba, ``np.einsum(..., optimize=True)``) or in another
thread, by a reduction over Python lists it does not count (``functools.reduce``, a
``sum`` bound before the call), on a copy made outside NumPy's namespace
(``np.ndarray(shape, buffer=...)``, the functions of its submodules, as
``np.lib.stride_tricks.as_strided``, a ufunc's methods given lists, ``np.multiply.outer``)
or whose values are not a, g or a * g when it is made (a reversed list copy reversed
back, ``np.array(a.tolist()[::-1])[::-1]``, or a padded one); memory allocated before the
call (a workspace made at import: J written into it is seen only by the count of
NumPy's work, which the copies above escape); J made in pieces of less than 512 bytes a
step (left out of the summed volume; the lines it runs pass their budget at 4096 keys
when each piece is of 64 entries or fewer) or, at 64, 65, 99 and 100 keys, one row of J
for every key (within the summed volume's budget there); and memory outside NumPy and
PyTorch on rows other than that one. Nothing is timed.
Each budget is what it is at every length (``BUDGETS``): an attempt over one is told
the budget it passed, and that it builds J, or grows like T_k^2, only where the checker
has measured that (a peak of 8 T_k^2 bytes or more, J's own size; a count of lines
that grows more than ``QUADRATIC_GROWTH``-fold from 64 keys to 256, or of memory
allocated line by line, summed, from 512 keys to 2048, ``GROWTH_SIZES``).
When an attempt fails, the checker compares it with the usual mistakes and names the one it
matches. Both functions must be written in NumPy: an attempt that runs the library's own
``attention.softmax_jacobian``, ``attention.softmax_vjp`` or one of its backward passes
(``attention_backward``, ``tiled_attention_backward``, ``blocked_attention_backward``,
whose dS is J g row by row) is refused where the profiler of
``_engine._refusing_the_library`` sees the call (its blind spots are listed there);
PyTorch is not refused (a vjp computed by torch's autograd passes if its numbers and its
costs are right).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import math
import re
import sys
import tracemalloc
from collections.abc import Callable

import numpy as np

from ..backward import attention_backward, tiled_attention_backward
from ..blocked import blocked_attention_backward
from ..softmax import softmax, softmax_jacobian, softmax_vjp
from ._engine import _close as _close_any
from . import _engine
from ._engine import (_all, _named, _narrow_precision, _on_copies, _refusing_the_library,
                      _report, _run)

#: Said when the attempt runs one of the library's softmax Jacobian functions.
LIBRARY = ("your function calls the library's own {name}: the exercise is to write it "
           "yourself, in NumPy, without the library's own functions "
           "(J = diag(a) - a a^T, and J g without building J)")


def _library_jacobian() -> dict:
    """The library's functions that compute J or J g, by name: the softmax's own, and the
    backward passes, whose dS = A * (dA - D) is J g row by row (st22c: a vjp read off
    attention_backward's dK passed)."""
    return {"attention.softmax_jacobian": softmax_jacobian,
            "attention.softmax_vjp": softmax_vjp,
            "attention.attention_backward": attention_backward,
            "attention.tiled_attention_backward": tiled_attention_backward,
            "attention.blocked_attention_backward": blocked_attention_backward}

_NAN_CAUSE = ("your function produced NaN, and J and the VJP need only products and differences "
              "of the finite numbers in a and g: NaN comes from an operation with no answer, "
              "such as 0/0, inf - inf or 0 * inf (a division by an entry of a gives 0/0 "
              "where that entry is 0, as in a one-hot row)")


def _close(got, want, what, atol=1e-8):
    """``_engine._close``; and a result whose every entry is a float32 (or float16)
    number where the reference's are not, and that differs from it, is rejected and
    told so, even within the tolerance: computed in that precision and cast back."""
    ok, detail = _close_any(got, want, what, atol=atol, nan_cause=_NAN_CAUSE)
    if got is None or np.shape(got) != want.shape:
        return ok, detail
    with np.errstate(all="ignore"):
        arr = np.asarray(got, dtype=np.float64)
        narrow = _narrow_precision(arr, want) if np.isfinite(arr).all() else ""
        # zeros are numbers of every precision: they say nothing about float16
        if narrow and np.any(arr != 0) and np.abs(arr - want).max() > 0:
            digits = {"float32": "about 7 digits", "float16": "about 3 digits"}[narrow]
            return False, (f"{detail}: every entry is a {narrow} number, so it was "
                           f"computed in {narrow} ({digits}) and cast back; the row a "
                           "is float64: compute in float64 throughout (no .astype)")
        if not ok and np.isfinite(arr).all() and not np.any(arr) and np.any(want):
            of = "J g" if what.startswith("VJP") else "J"
            return False, (f"{detail}: the result is 0 where {of} is not: "
                           + ZERO_WHERE_NOT)
    return ok, detail


#: Said when a result is all zeros on a row whose J (or J g) is not zero.
ZERO_WHERE_NOT = ("a saturated row still has a nonzero Jacobian (its largest "
                  "weight is near 1, not exactly 1), small but not 0; only a "
                  "one-hot row gives exact zeros. Compute J and J g the same "
                  "way on every row, with no threshold on a.max()")


#: Keys of the row on which the VJP's memory and work are measured (the page's example): J
#: would take LONG^2 * 8 bytes = 128 MiB, 64 MiB in float32, 32 MiB in float16.
LONG = 4096
#: Growth of the resident memory allowed (Linux): 16 MiB, half of J even in float16, with room
#: for what a library sets up on its own (thread stacks, caches) beside the attempt's arrays.
VJP_RESIDENT_LIMIT = 16 * 2**20
#: Entries that NumPy operations on a row of n keys may touch, at every measured length: 32
#: passes over it. a * (g - a.g) takes 3; J g row by row about 2 n passes (128 at the
#: shortest row, 64 keys), a.g recomputed for every key n (64 there), J n.
VJP_WORK_PASSES = 32


#: Said when a result is J (or J g) of the row with its tiny weights set to 0.
FLUSHED = ("this is {of} of the row with its smallest weights flushed to 0: a weight "
           "of {low:.1e} is small but not 0, and its entries of {of} are not 0; "
           "use a as it is, with no threshold on its entries")
#: Flushing weights below FLUSH_BELOW (1e-13 and every threshold from 1e-14 up to it
#: flush the same weights of SATURATED_ROWS).
FLUSH_BELOW = 1e-13


def _flushed(a: np.ndarray) -> np.ndarray | None:
    """a with its weights below FLUSH_BELOW set to 0, or None when it has none."""
    low = (a > 0) & (a < FLUSH_BELOW)
    return np.where(low, 0.0, a) if low.any() else None


def _flush_mistakes(mistakes):
    """The mistakes of flushed weights alone (their messages name the flush)."""
    return [(m, x) for m, x in mistakes if m.startswith("this is J") and "flushed" in m]


#: Narrow precisions a part of J or J g may be computed in (st22c: a.g in float32 was told
#: only "differs by 1.3e-08").
_NARROW = ((np.float32, "about 7 digits"), (np.float16, "about 3 digits"))


def _jacobian_mistakes(a: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """Matrices the usual mistakes produce, each with the message that names it."""
    n = len(a)
    outer = np.outer(a, a)
    f = _flushed(a)
    flushed = [] if f is None else [
        (FLUSHED.format(of="J", low=float(a[(a > 0) & (a < FLUSH_BELOW)].max())),
         np.diag(f) - np.outer(f, f))]
    return flushed + [
        ("this is diag(a) alone: the - a a^T term is missing", np.diag(a)),
        ("this is - a a^T alone: the diag(a) term is missing", -outer),
        ("this is a a^T alone: J = diag(a) - a a^T needs both terms, with these signs", outer),
        ("the sign is flipped: this is a a^T - diag(a); J = diag(a) - a a^T has a_i (1 - a_i) "
         "on its diagonal, which is positive", outer - np.diag(a)),
        ("the outer product became a number: for a row vector a, a.T @ a (or a @ a) is the "
         "scalar |a|^2; the matrix a a^T is np.outer(a, a)", np.diag(a) - (a @ a) * np.ones((n, n))),
        ("this is diag(a) - |a|^2 I: the outer product a a^T became the scalar |a|^2; use "
         "np.outer(a, a)", np.diag(a) - (a @ a) * np.eye(n)),
        ("this is diag(a) - a a^T computed with a * a (entry by entry) in place of the outer "
         "product np.outer(a, a)", np.diag(a) - np.diag(a * a)),
        ("the diagonal subtracts a_i^2 twice: diag(a (1 - a)) already holds the - a_i^2 of "
         "a a^T; J = diag(a) - a a^T", np.diag(a * (1 - a)) - outer),
        ("this is I - 1 a^T, the Jacobian of log-softmax (d log a_i / d s_j = delta_ij - a_j); "
         "the softmax's multiplies row i by a_i: diag(a) - a a^T", np.eye(n) - a[None, :]),
        ("this is I - a 1^T, the transpose of log-softmax's Jacobian I - 1 a^T; the "
         "softmax's is diag(a) - a a^T", np.eye(n) - a[:, None]),
        ("the product a_i a_j lost its a_j: this is diag(a) - a 1^T (entries a_i delta_ij - "
         "a_i); J_ij = a_i delta_ij - a_i a_j", np.diag(a) - a[:, None] * np.ones(n)),
        ("the product a_i a_j lost its a_i: this is diag(a) - 1 a^T, the transpose of "
         "diag(a) - a 1^T; J_ij = a_i delta_ij - a_i a_j", np.diag(a) - a[None, :] * np.ones(n)),
        ("this is the two-key formula p (1 - p) [[1, -1], [-1, 1]] spread over T_k keys; it "
         "holds for two keys only: J = diag(a) - a a^T",
         a[0] * a[1] * (2 * np.eye(n) - 1)),
        ("this is the two-key formula p (1 - p) [[1, -1], [-1, 1]] spread over T_k keys; it "
         "holds for two keys only: J = diag(a) - a a^T",
         a[0] * (1 - a[0]) * (2 * np.eye(n) - 1)),
    ] + [(f"a a^T was computed in {t.__name__} ({digits}): the row a is float64: compute "
          "it in float64 too (no np.float32 or .astype)",
          np.diag(a) - np.outer(t(a), t(a)).astype(np.float64)) for t, digits in _NARROW]


def _vjp_mistakes(a: np.ndarray, g: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """Vectors the usual mistakes produce, each with the message that names it."""
    ag = float(a @ g)
    f = _flushed(a)
    flushed = [] if f is None else [
        (FLUSHED.format(of="J g", low=float(a[(a > 0) & (a < FLUSH_BELOW)].max())),
         f * (g - np.dot(f, g)))]
    return flushed + [
        ("this is a * g: the - a (a.g) term is missing", a * g),
        ("this is a * g - a: the term to subtract is a times the number a.g, not a itself",
         a * g - a),
        ("this is g - a.g: the result must be multiplied by a, entry by entry", g - ag),
        ("this subtracts the plain mean of g; J g subtracts the mean of g "
         "weighted by a", a * (g - g.mean())),
        ("the sign is flipped: this is a (a.g) - a * g", a * ag - a * g),
        ("this is a * (g - sum(g)): the number to subtract is the weighted mean a.g",
         a * (g - g.sum())),
        ("this is g * (a - a.g): a and g are swapped", g * (a - ag)),
        ("this is g - a sum(g), the VJP of log-softmax, not the softmax's",
         g - a * g.sum()),
        ("np.mean(a * g) is a.g divided by T_k: the weighted mean is the sum "
         "np.sum(a * g), or a @ g", a * (g - np.mean(a * g))),
        ("this is a (1 - a) g, the diagonal of J alone: the off-diagonal terms - a_i a_j g_j "
         "are missing", a * (1 - a) * g),
        ("this is a * (g - (a.g) a): inside the bracket a.g is multiplied by a a second "
         "time; subtract the number a.g itself", a * (g - ag * a)),
        ("this is a * g - a.g: the number a.g must be multiplied by a, entry by entry",
         a * g - ag),
        ("* and @ bind equally and group left to right: a * a @ g is (a * a) @ g, the "
         "number sum(a_i^2 g_i), subtracted from every entry; the term to subtract is a "
         "times the number a.g: put parentheses around the dot product",
         a * g - (a * a) @ g),
        ("* and @ bind equally and group left to right: a @ a * g is (a @ a) * g, the "
         "number |a|^2 times g; the term to subtract is a times the number a.g: put "
         "parentheses around the dot product", a * g - (a @ a) * g),
    ] + [(f"a.g was computed in {t.__name__} ({digits}): the row a is float64: compute "
          "it in float64 too (no np.float32 or .astype)",
          a * (g - float(t(a) @ t(g)))) for t, digits in _NARROW]


def _diagnose(got, want: np.ndarray, mistakes, what: str, atol: float = 1e-8) -> tuple[bool, str]:
    if want.ndim and (isinstance(got, (float, int, np.generic)) or
                      (isinstance(got, np.ndarray) and got.ndim == 0)):
        return False, (f"{what} is a single number ({type(got).__name__}), not an array of "
                       f"shape {want.shape}: a dot product over the keys ended the "
                       "expression (* and @ bind equally and group left to right: "
                       "a * (g - a) @ g is (a * (g - a)) @ g, a number); the dot product "
                       "a.g is one number inside the expression, which is a vector")
    if got is not None and not isinstance(got, np.ndarray):
        return False, (f"{what} is a {type(got).__name__}, not a NumPy array: return the "
                       "array itself (no .tolist(), list() or list comprehension)")
    if got is not None and type(got) is not np.ndarray:
        return False, (f"{what} is a {type(got).__name__}, a subclass of the NumPy array "
                       "(np.asmatrix or np.matrix make one, on which * and ** are matrix "
                       "operations): return a plain np.ndarray")
    if got is not None and got.dtype != want.dtype:
        kept = ("a float32 or float16 result drops digits (no .astype)"
                if got.dtype.kind == "f" and got.dtype.itemsize < want.dtype.itemsize else
                f"return {want.dtype} as the row is (.astype(np.{want.dtype}) on the "
                "result, if you compute in another dtype)")
        return False, (f"{what} has dtype {got.dtype}, expected {want.dtype}: the row a is "
                       f"{want.dtype}, and {kept}")
    ok, detail = _close(got, want, what, atol=atol)
    if ok or got is None:
        return ok, detail
    arr = np.asarray(got, dtype=np.float64)
    if "cast back" in detail:
        # a result with tiny weights flushed to 0 holds only zeros and differences near
        # 1, float32 numbers too: a mistake it matches exactly is named, not float32
        named = _named(arr, _flush_mistakes(mistakes), lambda x, y: np.array_equal(x, y))
        if named:
            return False, f"{detail.split(': every entry is a ')[0]}: {named}"
        return ok, detail
    if arr.shape != want.shape:
        if arr.shape == (2, 2) and want.shape[0] != 2:
            detail += (": this is the two-key formula's 2 x 2 matrix; J has one row and one "
                       "column per key")
        if arr.size == want.size:
            detail += (f": it holds the right number of entries; return shape {want.shape} "
                       "(np.reshape, or avoid the extra axis)")
        return False, detail
    # a mistake is matched at a tolerance below the row's own size (a saturated row's
    # J g may be near 1e-11, where every small result is within 1e-9 of it)
    match = min(1e-9, 1e-3 * float(np.abs(want).max())) if np.any(want) else 1e-9
    named = _named(arr, mistakes, lambda x, y: np.allclose(x, y, atol=match, rtol=1e-7))
    return False, f"{detail}: {named}" if named else detail


class _Counting(np.ndarray):
    """An ndarray that adds up, in ``_Counting.work``, the entries each NumPy operation on it
    touches (the largest operand or result), and hands back counting arrays too, so that
    what is derived from a and g (a * g, a + 0.0, a * 1.0, their views) keeps counting;
    ``pairs`` counts the operations that take the whole of a and g both, or the whole of
    a * g (a.g, a * g, (a * g).sum(), told by their values: a copy of a is a). NumPy
    functions, ufuncs and the method ``a.dot`` (which bypasses both) are seen."""

    work = 0
    pairs = 0
    einsum = 0  # the part of work done by np.einsum without optimize
    rows: dict = {}  # while the work is counted: a, g and a * g, plain, by name

    @staticmethod
    def _plain(x):
        if isinstance(x, _Counting):
            return x.view(np.ndarray)
        if isinstance(x, (list, tuple)):
            return type(x)(_Counting._plain(y) for y in x)
        return x

    @staticmethod
    def _whole(x) -> set:
        """Which of a, g and a * g the counting arrays among ``x`` hold, by value."""
        if isinstance(x, _Counting):
            plain = x.view(np.ndarray)
            return {name for name, row in _Counting.rows.items()
                    if plain.shape == row.shape and _ARRAY_EQUAL(plain, row)}
        if isinstance(x, (list, tuple, dict)):
            values = x.values() if isinstance(x, dict) else x
            return set().union(*(_Counting._whole(y) for y in values))
        return set()

    @staticmethod
    def _broadcast(x) -> tuple:
        """(names, rows): which of a, g and a * g a stride-0 view among ``x`` repeats
        row after row (np.broadcast_to(a, (n, n)), as_strided), and how many rows it
        has: one operation on it takes that row once per row (st18a: such a view
        times g was told 'one row of J at a time')."""
        if isinstance(x, (list, tuple, dict)):
            values = x.values() if isinstance(x, dict) else x
            found = [_Counting._broadcast(y) for y in values]
            return (set().union(*(f[0] for f in found)),
                    max((f[1] for f in found), default=1))
        if isinstance(x, np.ndarray) and x.ndim == 2 and x.strides[0] == 0 and \
                x.shape[0] > 1:
            plain = x.view(np.ndarray)[0]
            names = {name for name, row in _Counting.rows.items()
                     if plain.shape == row.shape and _ARRAY_EQUAL(plain, row)}
            return names, x.shape[0] if names else 1
        return set(), 1

    @staticmethod
    def _counted(result):
        """``result`` with its plain arrays as counting arrays."""
        if isinstance(result, tuple):
            return tuple(_Counting._counted(r) for r in result)
        return result.view(_Counting) if type(result) is np.ndarray else result

    @staticmethod
    def _count(operands, result, whole: set = frozenset()):
        arrays = [x for x in operands if isinstance(x, np.ndarray)]
        sizes = [x.size for x in arrays]
        results = result if isinstance(result, tuple) else (result,)
        sizes += [r.size for r in results if isinstance(r, np.ndarray)]
        _Counting.work += max(sizes, default=1)
        repeated, rows = _Counting._broadcast(list(operands))
        whole = set(whole) | repeated
        _Counting.pairs += bool({"a", "g"} <= whole or "ag" in whole) * rows

    def astype(self, *args, **kwargs):
        """``a.astype(float, subok=False)``: a plain copy, which counts too (rv41n)."""
        out = np.ndarray.astype(self, *args, **kwargs)
        return out.view(_Counting) if type(out) is np.ndarray else out

    def __array__(self, *args, **kwargs):
        """``a.__array__()``: a plain view, which counts too (rv41n)."""
        out = np.ndarray.__array__(self, *args, **kwargs)
        return out.view(_Counting) if type(out) is np.ndarray else out

    def dot(self, b, out=None):
        """``a.dot(g)``: the method calls no ufunc and no __array_function__."""
        whole = self._whole([self, b])
        plain, b = self.view(np.ndarray), self._plain(b)
        result = plain.dot(b) if out is None else plain.dot(b, self._plain(out))
        self._count([plain, b], result, whole)
        return self._counted(result)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        whole = self._whole(inputs)
        inputs = self._plain(inputs)
        if "out" in kwargs:
            kwargs["out"] = self._plain(kwargs["out"])
        result = getattr(ufunc, method)(*inputs, **kwargs)
        self._count(inputs, result, whole)
        return self._counted(result)

    def __array_function__(self, func, types, args, kwargs):
        whole = self._whole([args, kwargs])
        args, kwargs = self._plain(args), {k: self._plain(v) for k, v in kwargs.items()}
        result = func(*args, **kwargs)
        self._count(list(args) + list(kwargs.values()), result, whole)
        if func is _EINSUM and args and isinstance(args[0], str) \
                and not kwargs.get("optimize"):
            naive = _einsum_naive_work(args[0], args[1:])
            _Counting.work += naive
            _Counting.einsum += naive
        return self._counted(result)


def _einsum_naive_work(subscripts: str, operands) -> int:
    """The products np.einsum computes without ``optimize``: one per combination of its
    indices ('i,j,j->i' over T_k keys: T_k^2, every entry of J times g)."""
    inputs = subscripts.replace(" ", "").split("->")[0].split(",")
    sizes = {}
    for letters, x in zip(inputs, operands):
        if "." in letters or not isinstance(x, np.ndarray) or len(letters) != x.ndim:
            return 0
        sizes.update(zip(letters, x.shape))
    return math.prod(int(k) for k in sizes.values())


#: NumPy's allocators: while the work is counted, the arrays they hand back always count
#: (``np.copyto(np.empty(a.shape), a)`` keeps counting).
_ALLOCATORS = ("empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like",
               "full", "full_like")
#: NumPy's own einsum (while the work is counted, ``np.einsum`` takes lists as below).
_EINSUM = np.einsum
#: NumPy's functions this checker uses while the work is counted, taken before any is
#: wrapped.
_ARRAY_EQUAL, _ASARRAY = np.array_equal, np.asarray
#: Set while this checker's own bookkeeping runs inside a wrapped NumPy callable.
_BOOKKEEPING = [False]


def _is_row(x) -> bool:
    """Whether plain ``x`` holds a, g or a * g of the counted call, by value."""
    return isinstance(x, np.ndarray) and x.ndim == 1 and any(
        x.shape == row.shape and _ARRAY_EQUAL(x, row)
        for row in _Counting.rows.values())


def _holds_counting(x) -> bool:
    if isinstance(x, _Counting):
        return True
    if isinstance(x, (list, tuple)):
        return any(_holds_counting(y) for y in x)
    return False


def _counting_list(x):
    """A list (or tuple) that holds a, g or a * g by value, as that row, counting."""
    if not isinstance(x, (list, tuple)) or not x:
        return x
    try:
        arr = _ASARRAY(x, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return x
    return arr.view(_Counting) if _is_row(arr) else x


def _counting_result(out, given: bool, always: bool = False):
    """``out`` with each plain array in it that holds a, g or a * g by value (or any, when
    an argument counted, ``given``, or ``always``) as a counting array."""
    if isinstance(out, (list, tuple)):
        return type(out)(_counting_result(x, given, always) for x in out) \
            if type(out) in (list, tuple) else out
    if type(out) is np.ndarray and (always or given or _is_row(out)):
        return out.view(_Counting)
    return out


class _CountingCallable:
    """A callable of NumPy's namespace (a function, a ufunc, whose attributes, as
    ``np.multiply.outer``, it passes on) while the work is counted: a list (or tuple) it
    is given that holds a, g or a * g by value is given as that row, counting; and a plain
    array it hands back counts when it holds a, g or a * g by value, or when one of its
    arguments counted (an allocator's, always)."""

    def __init__(self, func: Callable, always: bool = False):
        self._func, self._always = func, always

    def __getattr__(self, name):
        return getattr(self._func, name)

    def __call__(self, *args, **kwargs):
        if _BOOKKEEPING[0]:
            return self._func(*args, **kwargs)
        _BOOKKEEPING[0] = True
        try:
            args = tuple(map(_counting_list, args))
            given = _holds_counting(args) or _holds_counting(list(kwargs.values()))
        finally:
            _BOOKKEEPING[0] = False
        out = self._func(*args, **kwargs)
        _BOOKKEEPING[0] = True
        try:
            return _counting_result(out, given, self._always)
        finally:
            _BOOKKEEPING[0] = False


def _counting_scalar_type(t: type) -> type:
    """NumPy's float scalar type ``t`` (``np.float64(a.tolist())`` makes an array) whose
    calls hand back, as above, a counting array."""
    def __new__(cls, *args, **kwargs):
        return _CountingCallable(t)(*args, **kwargs)
    return type(t.__name__, (t,), {"__new__": __new__, "__module__": "numpy"})


def _counted_namespace() -> dict:
    """Every public callable of NumPy's namespace, by name, with its stand-in while the work
    is counted: its functions and ufuncs, and its float scalar types (its other types and
    its modules are left as they are)."""
    wrapped = {}
    for name in dir(np):
        if name.startswith("_"):
            continue
        f = getattr(np, name, None)
        if isinstance(f, type):
            if issubclass(f, np.floating):
                wrapped[name] = (f, _counting_scalar_type(f))
        elif callable(f) and not isinstance(f, type(np)):
            wrapped[name] = (f, _CountingCallable(f, always=name in _ALLOCATORS))
    return wrapped


def _vjp_work(vjp: Callable, a: np.ndarray, g: np.ndarray, pairs: bool = False):
    """Entries touched by NumPy operations on a and g during one call of vjp (and, with
    ``pairs``, how many of those operations took a and g both, whole)."""
    a, g = a.copy(), g.copy()
    _Counting.work = _Counting.pairs = _Counting.einsum = 0
    _Counting.rows = dict(a=a.copy(), g=g.copy(), ag=a * g)
    wrapped = _counted_namespace()
    try:
        for name, (_, stand_in) in wrapped.items():
            setattr(np, name, stand_in)
        vjp(a.view(_Counting), g.view(_Counting))
    finally:
        for name, (own, _) in wrapped.items():
            setattr(np, name, own)
        _Counting.rows = {}
    return (_Counting.work, _Counting.pairs) if pairs else _Counting.work

def _recomputes_ag(vjp: Callable, a: np.ndarray, g: np.ndarray) -> bool:
    """Whether vjp(a, g) takes a and g together, whole, in an operation (a.g, a @ g,
    np.dot(a, g), a * g) once for every few keys: a.g recomputed inside a loop over
    the keys (an exception the attempt raises here says nothing)."""
    try:
        with np.errstate(all="ignore"):
            _, pairs = _vjp_work(vjp, a, g, pairs=True)
    except Exception:
        return False
    return pairs >= max(16, len(a) // 4)


#: Said of an attempt that recomputes a.g for every key.
_RECOMPUTED = ("it recomputes the number a.g (a @ g, a.dot(g), np.dot(a, g) or "
               "(a * g).sum(): a pass over the whole row) for every key, inside the loop "
               "over the keys (or all at once, on a view of a repeated row by row, "
               "np.broadcast_to(a, (n, n)) @ g), O(T_k^2) work. Compute a.g once, "
               "before any loop: J g needs one dot product and one pass")


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        return int(re.search(rf"^{field}:\s+(\d+) kB", f.read(), flags=re.M).group(1))


def _resident_growth(func: Callable):
    """(growth of the resident memory's high-water mark in bytes during func(), or None where
    the system cannot say, func's result). Linux only: writing 5 to /proc/self/clear_refs
    resets VmHWM to the current VmRSS. Freed memory that the C allocator keeps could be reused
    unseen, so it is handed back to the system first (glibc's malloc_trim)."""
    gc.collect()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        before = _status_kib("VmRSS")
    except (OSError, AttributeError, ValueError):
        return None, func()
    result = func()
    return (_status_kib("VmHWM") - before) * 1024, result


#: Row lengths at which the VJP's cost is measured, far apart: a cost that grows like T_k
#: grows 64-fold from the first to the last, one that grows like T_k^2 4096-fold. A VJP
#: that builds J only on short rows shows at the short ones.
SIZES = (64, 100, 512, 1500, LONG)  # not all powers of two
#: Odd row lengths measured beside SIZES, one near each: 65 = 5 * 13, 99 = 3^2 * 11,
#: 495 = 3^2 * 5 * 11, 1001 = 7 * 11 * 13 and 4095 = 3^2 * 5 * 7 * 13, so that an attempt
#: that builds J only on odd lengths, or only on lengths divisible by 3, 5, 7, 9, 11 or 13,
#: shows (each of those divides at least two of them).
ODD_SIZES = (65, 99, 495, 1001, 4095)
#: Budgets at a row of n keys, each far above what a * (g - a.g) needs (a few vectors, a
#: dozen lines) and below what J needs at every measured length (the peak; PyTorch's
#: entries): the traced memory's peak, 384 bytes per key and 4 KiB (J alone is 8 n^2 bytes,
#: 32 KiB at 64 keys, where the budget is 28 KiB, and 33 KiB at 65, where it is 28.4: the
#: right VJP in PyTorch peaks at 20 KiB there, the dispatch mode's own objects; h22j: at 32
#: KiB more, a J built only up to 65 keys passed; st22c: at 128 bytes per key, a right VJP
#: keeping four Python lists of floats alive, 32 bytes per float, was stopped), the lines
#: of Python run, 32 per key and 2,000 (a loop over the keys runs a few per key, st22c: a
#: helper of 20 lines per key was stopped at 16; a loop in a loop, n^2), the traced memory
#: allocated line by line, summed, each step's first VOLUME_ALLOWANCE bytes left out,
#: VOLUME_PER_KEY bytes per key and 32 KiB, and the entries PyTorch's operations touch,
#: summed (J in blocks of rows: n^2). A row of J made for every key is counted about
#: 8 n^2 - 400 n bytes of volume: from 495 keys on the volume's budget is below that, 1.36
#: times at 495, 1.41 at 512, 2.9 at 1001, 4.5 at 1500 and 12.6 at 4095 and 4096 (st24c:
#: at 512 it was above it, 2,162,688 bytes against 2,097,152); at 64, 65, 99 and 100 keys it
#: is above it (7 KiB at 64 keys, 39 KiB at 100) and only the work count stops J g computed
#: row by row there: right attempts allocate more per key than a row of J there (a vjp
#: that calls np.isclose for every key, 1.7 KiB per key in NumPy's own Python code; an
#: exact Fraction one, 1.4 KiB; st24c: at 4 KiB per key and the first byte of every step
#: counted, the Fraction one was stopped at 1001 keys).
VOLUME_PER_KEY = 2560
BUDGETS = dict(peak=lambda n: 384 * n + 4 * 2**10, lines=lambda n: 32 * n + 2000,
               volume=lambda n: VOLUME_PER_KEY * n + 32 * 2**10, torch=lambda n: 64 * n + 4096,
               summed=lambda n: 16 * n + 2000)
#: Memory allocated between two of the tracer's events (lines, calls) that is not added to
#: the summed volume: Python's small objects (a float, a Decimal, a Fraction's big integers)
#: stay below it, a row of J at 64 keys (624 bytes) does not.
VOLUME_ALLOWANCE = 512
#: Python's reductions whose items are counted (``summed``): a.g recomputed for every key
#: by ``sum(map(operator.mul, al, gl))`` or ``math.fsum`` over Python lists runs one line
#: per key and allocates nothing (st20a: it passed, O(T_k^2)); its sums take T_k^2 items.
#: ``statistics`` holds its own references to fsum (and, where Python has it, sumprod),
#: which ``statistics.fmean(g, weights=a)`` calls (st24c: recomputed for every key it
#: passed): those are counted too.
SUMMING = tuple((m, name) for m, name in (
    ("builtins", "sum"), ("math", "fsum"), ("math", "sumprod"),
    ("statistics", "fsum"), ("statistics", "sumprod"))
    if hasattr(__import__(m), name))


def _untraced() -> tuple:
    """Python files whose lines are not counted (their memory still is, and the attempt's
    own functions they call back are traced): this checker's own and its engine's (the
    wrapper that refuses the library), NumPy's (np.clip or np.isclose run a dozen lines
    or more per call: h22j, a right loop calling one per key was told O(T_k^2)),
    PyTorch's (its dispatch runs Python code on every operation) and the standard
    library's number types written in Python, ``fractions``, ``decimal``'s pure-Python
    ``_pydecimal`` and ``numbers`` (a few dozen lines per operation: st22c, a right vjp in
    exact Fractions was told "a loop inside a loop")."""
    import fractions
    import numbers
    import os
    own = (__file__, _engine.__file__, "<frozen importlib",
           os.path.dirname(np.__file__) + os.sep, fractions.__file__, numbers.__file__,
           os.path.join(os.path.dirname(numbers.__file__), "_pydecimal.py"))
    torch = sys.modules.get("torch")
    return own if torch is None else own + (os.path.dirname(torch.__file__) + os.sep,)


#: The row lengths between which ``_growth`` measures how a cost grows, 4 times apart: for
#: the memory allocated line by line, summed, lengths long enough that a row of J (8 T_k
#: bytes, 4 KiB at 512 keys) outweighs what Python's objects take per key (st24c: between
#: 16 and 64 keys a row of J is the size of a few floats' overhead, and did not show); for
#: the lines of Python, which a row of J in NumPy does not change, shorter ones (a loop
#: inside a loop runs 16 times more lines at 256 keys than at 64, quickly).
GROWTH_SIZES = dict(lines=(64, 256), volume=(512, 2048))
#: How many times more a cost must grow between GROWTH_SIZES to be told it grows like
#: T_k^2 (like T_k: at most 4; like T_k^2: near 16).
QUADRATIC_GROWTH = 6
#: Tracer events (lines, calls) after which a call measured by ``_growth`` is stopped.
GROWTH_EVENTS = 300_000


def _growth(vjp: Callable, what: str) -> dict:
    """How many times more of ``what`` (``lines`` of Python, or traced memory allocated
    line by line, summed, ``volume``: those ``_measured`` counts) vjp takes on a dense
    row of the longer length of GROWTH_SIZES[what] than on one of the shorter, 4 times
    shorter: a cost that grows like T_k grows at most 4-fold (its fixed part only lowers
    that), one that grows like T_k^2 near 16-fold. The longer row is stopped once the
    count is past QUADRATIC_GROWTH + 1 times the shorter's (the growth is then at least
    that); {what: growth}, or {} where it cannot say (an error, or GROWTH_EVENTS passed
    on the shorter row) (st22c: an O(T_k) helper of 20 lines per key was told from one
    length that its count grew like T_k^2, and an exact Fraction vjp that it built J row
    by row)."""
    untraced, rng = _untraced(), np.random.default_rng(7)
    counts, caps = [], [10**12]

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(untraced):
            return None
        cost = counts[-1]
        current, peak = tracemalloc.get_traced_memory()
        cost["volume"] += max(peak - cost["base"] - VOLUME_ALLOWANCE, 0)
        tracemalloc.reset_peak()
        cost["base"] = current
        cost["events"] += 1
        if event == "line":
            cost["lines"] += 1
        if cost[what] > caps[-1] or cost["events"] > GROWTH_EVENTS:
            raise _OverBudget("growth")
        return tracer

    was_tracing, outer = tracemalloc.is_tracing(), sys.gettrace()
    if not was_tracing:
        tracemalloc.start()
    try:
        for n in GROWTH_SIZES[what]:
            a, g = softmax(rng.standard_normal(n)), rng.standard_normal(n)
            tracemalloc.reset_peak()
            counts.append(dict(lines=0, volume=0, events=0,
                               base=tracemalloc.get_traced_memory()[0]))
            sys.settrace(tracer)
            try:
                with np.errstate(all="ignore"):
                    vjp(a, g)
            except _OverBudget:
                if len(counts) == 1 or counts[1][what] <= caps[-1]:
                    return {}
            finally:
                sys.settrace(outer)
            caps.append((QUADRATIC_GROWTH + 1) * max(counts[0][what], 1))
    except Exception:
        return {}
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return {what: counts[1][what] / max(counts[0][what], 1)}


class _OverBudget(Exception):
    """Raised inside the attempt (by the tracer) once one of its costs passes its budget."""


def _measured(vjp: Callable, a: np.ndarray, g: np.ndarray, limits: bool = True) -> dict:
    """The costs of one call vjp(a, g) that this checker can see (the module docstring
    lists them: ``peak``, ``lines``, ``volume``, ``torch``), each stopped by an _OverBudget
    raised inside the attempt as soon as it passes its budget; ``cost["over"]`` names the
    one that did. Without ``limits`` (a warm-up call, in which a library may import and
    set up what it needs) nothing is traced or stopped."""
    n = len(a)
    cost = dict(peak=0, lines=0, volume=0, torch=0, summed=0)
    budgets = {name: budget(n) for name, budget in BUDGETS.items()}
    state = {"base": 0}
    untraced = _untraced()

    def over(name):
        cost["over"] = name
        raise _OverBudget(name)

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(untraced):
            return None  # PyTorch's own Python code, and this checker's: not the attempt's
        current, peak = tracemalloc.get_traced_memory()
        cost["volume"] += max(peak - state["base"] - VOLUME_ALLOWANCE, 0)
        cost["peak"] = max(cost["peak"], peak - state["start"])
        tracemalloc.reset_peak()
        state["base"] = current
        if event == "line":
            cost["lines"] += 1
        for name in ("peak", "lines", "volume"):
            if cost[name] > budgets[name]:
                over(name)
        return tracer

    def summing(reduce):
        """``reduce`` (sum, math.fsum) adding the items it takes from the attempt to
        cost["summed"], stopped past its budget."""
        def add(k):
            cost["summed"] += k
            if cost["summed"] > budgets["summed"]:
                over("summed")

        def items(iterable):
            for x in iterable:
                add(1)
                yield x

        def counted(iterable, *args, **kwargs):
            if sys._getframe(1).f_code.co_filename.startswith(untraced):
                return reduce(iterable, *args, **kwargs)
            try:
                add(len(iterable))
            except TypeError:  # an iterator: counted as it is consumed
                iterable = items(iterable)
            return reduce(iterable, *args, **kwargs)
        return counted

    import builtins
    import math
    import statistics
    modules = dict(builtins=builtins, math=math, statistics=statistics)
    summed = {(m, name): getattr(modules[m], name) for m, name in SUMMING}
    modes = []
    torch = sys.modules.get("torch")
    if torch is not None:
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_flatten

        class Counting(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                sizes = [t.numel() for t in tree_flatten((args, kwargs, out))[0]
                         if isinstance(t, torch.Tensor)]
                cost["torch"] += max(sizes, default=1)
                if limits and cost["torch"] > budgets["torch"]:
                    over("torch")
                return out
        modes.append(Counting())
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    outer = sys.gettrace()
    a, g = a.copy(), g.copy()
    try:
        tracemalloc.reset_peak()
        state["start"] = state["base"] = tracemalloc.get_traced_memory()[0]
        with contextlib.ExitStack() as stack:
            for mode in modes:
                stack.enter_context(mode)
            if limits:
                for (m, name), reduce in summed.items():
                    setattr(modules[m], name, summing(reduce))
                sys.settrace(tracer)
            try:
                cost["result"] = vjp(a, g)
            finally:
                sys.settrace(outer)
                for (m, name), reduce in summed.items():
                    setattr(modules[m], name, reduce)
        current, peak = tracemalloc.get_traced_memory()
        cost["peak"] = max(cost["peak"], peak - state["start"])
        cost["volume"] += max(peak - state["base"] - VOLUME_ALLOWANCE, 0)
        for name in ("peak", "volume"):
            if cost[name] > budgets[name]:
                cost["over"] = name
    except _OverBudget:
        pass
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return cost


#: The kinds of row each length is measured on: an attempt that builds J only on some
#: kind (a saturated row, whose largest weight is above 0.99, or a masked one, with
#: weights exactly 0) shows on that kind.
ROW_KINDS = ("dense", "saturated", "masked", "saturated and masked")
#: The gradients g the rows are measured with: standard normal (of both signs), its
#: absolute value (every entry positive) and minus that (every entry negative): a
#: gradient of one sign is common (the loss lowers, or raises, every weight), and an
#: attempt that builds J only for such a g shows.
GRADIENT_KINDS = ("of both signs", "all positive", "all negative")


def _gradient(rng, n: int, kind: str) -> np.ndarray:
    """A gradient of n entries of ``kind`` (one of GRADIENT_KINDS)."""
    g = rng.standard_normal(n)
    sign = {"of both signs": 0, "all positive": 1, "all negative": -1}[kind]
    return g if sign == 0 else sign * np.abs(g)


def _cost_rows(rng, n: int) -> dict:
    """A row of n keys of each kind in ROW_KINDS: a softmax of standard normal scores,
    one score 20 above the others (its weight above 0.99999 at 4096 keys), a quarter of
    the keys masked (weight 0), and both."""
    s = rng.standard_normal(n)
    top = s.copy()
    top[n // 3] += 20.0
    hidden = rng.random(n) < 0.25
    hidden[n // 3] = False
    return {kind: softmax(np.where(hidden, -np.inf, x) if "masked" in kind else x)
            for kind, x in zip(ROW_KINDS, (s, top, s, top))}


def _row_name(n: int, kind: str = "dense", g_kind: str = GRADIENT_KINDS[0]) -> str:
    """A measured row, as the cost messages name it: its length, its kind unless dense,
    its gradient's kind when of one sign."""
    row = f"{n} keys" + ("" if kind == "dense" else f" ({kind})")
    return row + ("" if g_kind == GRADIENT_KINDS[0] else f", its gradient g {g_kind},")


def _over_message(cost: dict, n: int, kind: str = "dense", recomputed: bool = False,
                  g_kind: str = GRADIENT_KINDS[0], growth: Callable | None = None) -> str:
    """What a cost over its budget at a row of n keys says about the attempt, naming the
    budget it passed, that budget and how far (``recomputed``: it recomputes a.g for
    every key, ``_recomputes_ag``; ``g_kind``: the gradient's, named when it is of one
    sign; ``growth(what)``: how many times more lines or volume it takes on the longer
    row of GROWTH_SIZES than on the shorter, ``_growth``, asked only when it ran past
    the budget of one of those)."""
    J_KiB = n * n * 8 / 2**10
    name = cost["over"]
    found: dict = {}

    def grew(what: str) -> float:
        """How many times more of ``what`` the vjp takes on the longer row of
        GROWTH_SIZES[what] than on the shorter (0: unknown)."""
        if what not in found:
            found[what] = (growth(what) if growth is not None else {}).get(what, 0)
        return found[what]
    row = _row_name(n, kind, g_kind)
    budget = BUDGETS[name](n)
    if name in ("peak", "volume"):
        # in KiB, with as many decimals as it takes to tell the two apart, else in bytes
        digits = next((d for d in (0, 1, 2) if round(cost[name] / 2**10, d) >
                       round(budget / 2**10, d)), None)
        reached, limit = ((f"{cost[name]:,.0f} bytes", f"{budget:,.0f} bytes") if digits is None
                          else (f"{cost[name] / 2**10:,.{digits}f} KiB",
                                f"{budget / 2**10:,.{digits}f} KiB"))
        passed = (f"your vjp's traced memory {'at its peak' if name == 'peak' else 'allocated line by line, summed,'} "
                  f"reached {reached}, past the budget of {limit} at this length"
                  + (" (384 bytes per key and 4 KiB)" if name == "peak" else ""))
    else:
        passed = {"lines": f"your vjp ran more than {budget:,} lines of Python, its budget "
                           "at this length (32 per key and 2,000),",
                  "summed": f"your vjp's sums (sum, math.fsum, statistics.fmean) took more than {budget:,} "
                            "numbers, their budget at this length (16 per key and 2,000),",
                  "torch": f"your vjp's PyTorch operations touched more than {budget:,} "
                           "entries, their budget at this length (64 per key and 4,096),"
                  }[name] + " and it was stopped there"
    passed = f"on a row of {row} {passed}"
    if name == "volume" and recomputed and cost["lines"] <= 8 * n:
        return f"{passed}, though little at once: {_RECOMPUTED}"
    if name == "volume" and cost["lines"] > 8 * n and grew("lines") > QUADRATIC_GROWTH:
        return (f"{passed}, and it ran {cost['lines']:,} lines of Python, more than "
                f"{8 * n:,} (8 per key), a count that grew more than {QUADRATIC_GROWTH}-fold "
                "from 64 keys to 256: a loop inside a loop over the keys (over a.tolist() "
                "or range(len(a))) computes J g entry by entry of J, O(T_k^2) work. Compute "
                "J g from a, g and the number a.g, one dot product a.g and one pass")
    if name == "peak" and cost["peak"] >= 8 * n * n:  # J's own size, in float64
        return (f"{passed}; a {n} x {n} matrix of float64 takes {J_KiB:.0f} KiB: it builds "
                "J, the full T_k x T_k Jacobian (or another T_k x T_k array), at least at "
                "this length. Compute J g from a, g and the number a.g, which needs O(T_k) "
                "memory at every length")
    if name == "peak":  # below J's size: only the budget is known (st24c)
        narrow = next((f", as much as a {n} x {n} matrix of {t} ({k * n * n / 2**10:.0f} "
                       "KiB): J in a narrower precision, or" for k, t in
                       ((4, "float32"), (2, "float16")) if cost["peak"] >= k * n * n), ":")
        return (f"{passed}, more than {cost['peak'] / n:.0f} bytes per key at once, less "
                f"than J in float64 ({J_KiB:.0f} KiB){narrow} many Python objects alive "
                "at once (a Python float held in a list takes 32 bytes, a Decimal or "
                "Fraction more): keep fewer lists alive at once (a.g needs no list of the "
                "products), or work on the arrays; J g needs a, g, the number a.g and the "
                "result")
    if name == "lines":
        if grew("lines") > QUADRATIC_GROWTH:
            return (f"{passed}; and its count grew more than {QUADRATIC_GROWTH}-fold from "
                    "64 keys to 256 (a count that grows like T_k would grow at most "
                    "4-fold): it grows like "
                    "T_k^2, a loop inside a loop over the keys (over a.tolist() or "
                    "range(len(a))) computes J g entry by entry of J, O(T_k^2) work. "
                    "Compute J g from a, g and the number a.g, one dot product a.g and one pass")
        return (f"{passed}: more than {budget / n:.0f} lines per key (a helper of many "
                "lines called for every key, or a loop inside the loop over the keys). "
                "Compute J g on the whole arrays from a, g and the number a.g, one dot "
                "product a.g and one pass")
    if name == "summed":
        return (f"{passed}; more than 16 per key, where a.g takes T_k in all: it "
                "recomputes the number a.g (sum(map(operator.mul, al, gl)), math.fsum, "
                "statistics.fmean(g, weights=a), over "
                "lists or arrays) for every key, inside the loop over the keys, which takes "
                "T_k^2, or sums as much another way. Compute a.g once, before any loop: J g "
                "needs one dot product and one pass")
    if name == "volume" and grew("volume") <= QUADRATIC_GROWTH:
        grown = (f", and the sum grew {grew('volume'):.0f}-fold from 512 keys to 2048, "
                 "not like T_k^2" if grew("volume") else "")
        return (f"{passed} ({VOLUME_PER_KEY:,} bytes per key and 32 KiB, each allocation "
                f"of less than {VOLUME_ALLOWANCE} bytes between two lines left out), "
                "though little at once: more than "
                f"{cost['volume'] / n:,.0f} bytes allocated per key{grown}: many temporary "
                "objects made for every key (exact Fractions or Decimals, whose big "
                "integers are allocated on every operation). "
                "Compute J g on the whole arrays from a, g and the number a.g, one dot "
                "product a.g and one pass")
    if name == "volume":
        return (f"{passed}, though little at once (J is {J_KiB:.0f} KiB): it computes J g "
                "one row of J at a time (or a block of rows), O(T_k^2) work, the full "
                "Jacobian built piece by piece. Compute J g from a, g and the number a.g, "
                "which needs one dot product a.g and one pass")
    return (f"{passed}; more than 64 per key, where the right VJP touches a few per "
            "key: as when it builds J, the full T_k x T_k Jacobian, whole or one row (or "
            "block of rows) at a time, which touches T_k^2. Compute J g from a, g and the "
            "number a.g, one dot product a.g and one pass")


def _vjp_cost(vjp: Callable) -> tuple[bool, str]:
    """_vjp_costs, its failure told as one of its values or one of its costs (st20a: a
    wrong value on a long row was read as a cost under 'the VJP never builds J')."""
    ok, detail = _vjp_costs(vjp)
    if ok or detail.startswith(VALUES):
        return ok, detail
    return ok, COST + detail


#: How _vjp_cost's failures begin: the values on long rows, or the cost.
VALUES, COST = "its values: ", "its cost: "


def _work_message(work: int, pairs: int, einsum: int, n: int, row: str) -> str:
    """What NumPy work past VJP_WORK_PASSES passes over a row of n keys says (``row``:
    the row, as _over_message names it), or "" within the budget."""
    if work <= VJP_WORK_PASSES * n:
        return ""
    touched = (f"on a row of {row} your vjp's NumPy operations touched about "
               f"{work / n:.0f} x {n} entries, past the budget of {VJP_WORK_PASSES} x {n} "
               f"(the right VJP touches 3 x {n})")
    if einsum > work // 2:
        return (f"on a row of {row} your vjp's np.einsum computed about "
                f"{einsum / n:.0f} x {n} products, past the budget of {VJP_WORK_PASSES} x "
                f"{n} entries: without optimize=True, "
                "einsum computes one product for every combination of its "
                "indices ('i,j,j->i' is T_k^2, every entry of J times g), "
                "O(T_k^2) work though little memory. Compute J g from a, g and the number "
                "a.g, which needs one dot product a.g and one pass")
    if pairs >= max(16, n // 4):
        return f"{touched}, and {pairs:,} of them took a and g both: {_RECOMPUTED}"
    return (f"{touched}: it computes J g one row of J at a time, O(T_k^2) work "
            "though little memory (the full Jacobian, built piece by piece). "
            "Compute J g from a, g and the number a.g, which needs one dot "
            "product a.g and one pass")


def _vjp_costs(vjp: Callable) -> tuple[bool, str]:
    """The VJP's costs at row lengths far apart (SIZES, ODD_SIZES), against budgets that
    building J, or computing J g one row of J at a time, would break: on each measured row
    the traced costs (``_measured``), then on a fresh row of the same length and kinds the
    NumPy work (``_vjp_work``; a fresh row, so that an attempt that does its O(T_k^2) work
    only on a row it has seen before, or only on one it has not, shows); then, at the
    longest dense row, the resident memory (which sees every library)."""
    rng, fresh = np.random.default_rng(5), np.random.default_rng(6)
    # what a library sets up on its first call, unmeasured, on a row of 7 keys of each
    # kind (an attempt may reach a library only on some kind): every measured call is
    # then on a row (and a length) the vjp has not seen, so a J cached from an earlier
    # call, or built only on a length's first call, shows
    for a in _cost_rows(rng, 7).values():
        _measured(vjp, a, rng.standard_normal(7), limits=False)
    seen, passes = [], 0
    for i, (n, odd) in enumerate(zip(SIZES, ODD_SIZES)):
        # each kind of row at n keys, then a dense row of an odd length near n (SIZES
        # are even); the k-th row at the i-th length has the gradient kind (i + k) % 3,
        # so that every length, and every kind of row, meets every kind of gradient
        rows = [(n, kind, a, b) for (kind, a), b in
                zip(_cost_rows(rng, n).items(), _cost_rows(fresh, n).values())]
        rows.append((odd, "dense", softmax(rng.standard_normal(odd)),
                     softmax(fresh.standard_normal(odd))))
        for k, (m, kind, a, b) in enumerate(rows):
            g_kind = GRADIENT_KINDS[(i + k) % len(GRADIENT_KINDS)]
            g = _gradient(rng, m, g_kind)
            want = softmax_vjp(a, g)
            cost = _measured(vjp, a, g)
            if "over" in cost:
                recomputed = cost["over"] == "volume" and _recomputes_ag(vjp, a, g)
                return False, _over_message(cost, m, kind, recomputed, g_kind,
                                            lambda what: _growth(vjp, what))
            ok, detail = _close(cost["result"], want,
                                f"VJP on a {kind} row of {m} keys, g {g_kind}")
            if not ok and kind == "masked" and ZERO_WHERE_NOT in detail:
                # zeros everywhere on a row with weights exactly 0: a NaN cleaned away
                detail = detail.replace(ZERO_WHERE_NOT, DIVIDES_BY_A)
            if not ok:
                return ok, VALUES + detail
            if m == n:
                last = cost
            work, pairs = _vjp_work(vjp, b, _gradient(fresh, m, g_kind), pairs=True)
            message = _work_message(work, pairs, _Counting.einsum, m,
                                    _row_name(m, kind, g_kind))
            if message:
                return False, message
            passes = max(passes, work / m)
        seen.append(f"{n}: {last['peak'] / 2**10:.0f} KiB, {last['lines']} lines")
    a = softmax(fresh.standard_normal(LONG))
    g = fresh.standard_normal(LONG)
    resident, _ = _resident_growth(lambda: vjp(a.copy(), g.copy()))
    J_MiB = LONG**2 * 8 / 2**20
    if resident is not None and resident > VJP_RESIDENT_LIMIT:
        used = (f"on a row of {LONG} keys your vjp used {resident / 2**20:.0f} MiB at its "
                f"peak, past the {VJP_RESIDENT_LIMIT // 2**20} MiB allowed (outside NumPy's "
                "arrays: in PyTorch or another library)")
        if resident >= LONG**2 * 8:
            return False, (f"{used}; a {LONG} x {LONG} matrix of float64 takes {J_MiB:.0f} "
                           "MiB: it builds J, the full T_k x T_k Jacobian (or another "
                           "T_k x T_k array). Compute J g from a, g and the number a.g, "
                           "which needs O(T_k) memory")
        return False, (f"{used}, less than J in float64 ({J_MiB:.0f} MiB; {J_MiB / 2:.0f} "
                       f"in float32, {J_MiB / 4:.0f} in float16): J in a narrower "
                       "precision, or another library's memory, kept for the call. Compute "
                       "J g from a, g and the number a.g, which needs O(T_k) memory")
    return True, ("peak memory and lines at T_k = " + "; ".join(seen)
                  + f"; at most {passes:.0f} passes over a row")


def _exactly_zero(got, shape: tuple, what: str, mistakes=(),
                  one_hot=None, confirm=None) -> tuple[bool, str]:
    """A one-hot row's J or VJP: a plain float64 array of zeros, exactly (the right
    formulas multiply by a weight that is exactly 0, or subtract 1 - 1). A result that
    one of the ``mistakes`` (at the one-hot row) gives is named as that mistake; where
    the result differs from 0 by less than 1e-6, a result nonzero only at the key of
    weight 1 (of ``one_hot``) is told a.g or a a^T was scaled, any other a clipping
    or a small number added to a."""
    want = np.zeros(shape)
    ok, detail = _diagnose(got, want, [], what, atol=0.0)
    if ok or "differs from the reference" not in detail:
        return ok, detail
    arr = np.asarray(got, dtype=np.float64)
    named = _named(arr, mistakes, lambda x, y: np.allclose(x, y, atol=1e-9, rtol=1e-7),
                   want)
    if named and confirm is not None and not confirm(named):
        # (st18a: a * (I - a) and a * g - a * a * g.sum() equal diag(a) - 1 a^T and
        # a * (g - sum(g)) at the one-hot row only: a mistake is named here only if
        # it matches a row that is not one-hot too)
        named = ""
    if named:
        return False, f"{detail}: {named}"
    if np.abs(arr).max() >= 1e-6:
        return False, (f"{detail}: at a one-hot row it must be exactly 0, as "
                       "the right J and J g give there")
    if one_hot is not None and arr.shape == shape:
        off = np.asarray(one_hot) != 1  # the keys whose weight is 0
        if not (arr[off].any() or (arr.ndim == 2 and arr[:, off].any())):
            return False, (f"{detail}: at a one-hot row it must be exactly 0, and "
                           "the right J and J g give exact zeros there; yours is "
                           "nonzero only at the weight-1 key: a.g or a a^T was "
                           "scaled (an epsilon in a normaliser?), so that 1 - 1 "
                           "is not 0 there")
    return False, (f"{detail}: at a one-hot row it must be exactly 0, and "
                   "the right J and J g give exact zeros there; "
                   "a small number added to a, or a clipped away from 0, "
                   "leaks gradient through the keys whose weight is 0")


def _untouched_then(func: Callable, args: dict, want: np.ndarray, mistakes, what: str,
                    atol: float = 1e-8):
    """Call func on copies of args (failing if it changed one in place), diagnose its result."""
    return _diagnose(_on_copies(func, args), want, mistakes, what, atol=atol)


#: Saturated rows that are not one-hot (largest weights 0.99899..., 0.92594..., 1 - 6.2e-9,
#: 1 - 4.2e-11, 1 - 7.6e-13 and 1 - 1.4e-14): their J is small but not 0 (entries up to
#: about 1e-3, 7e-2, 6e-9, 4e-11, 8e-13 and 1.4e-14), so a threshold on a.max() that
#: returns zeros shows, even one at 1 - 1e-13, and so does flushing weights below 1e-13
#: to 0 (the small weights of softmax([33, 0, 0, 0]) are 4.7e-15).
SATURATED_ROWS = ((np.array([8.0, 0.0, 0.0, 0.0]), "softmax([8, 0, 0, 0])"),
                  (np.array([3.0, 0.0, -0.5]), "softmax([3, 0, -0.5])"),
                  (np.array([20.0, 0.0, 0.0, 0.0]), "softmax([20, 0, 0, 0])"),
                  (np.array([25.0, 0.0, 0.0, 0.0]), "softmax([25, 0, 0, 0])"),
                  (np.array([29.0, 0.0, 0.0, 0.0]), "softmax([29, 0, 0, 0])"),
                  (np.array([33.0, 0.0, 0.0, 0.0]), "softmax([33, 0, 0, 0])"))
#: Tolerance on a saturated row, relative to the largest entry of J (or J g): right ways
#: of computing them differ from the reference by up to 6e-9 (J, a (1 - a) on its
#: diagonal) and 2.4e-6 (J g, a.g summed in another order or in long double, at
#: softmax([25, 0, 0, 0])), so 1e-9 would reject them; zeros are off by 1.
RTOL_SATURATED = 1e-4
#: The tolerance at softmax([29, 0, 0, 0]) (largest weight 1 - 7.6e-13, above 1 - 1e-12):
#: there a.g summed with math.fsum, or in reverse order, is off by up to 1.3e-4 of J g's
#: largest entry, long double by 2.7e-5; zeros are off by 1.
RTOL_DEEPEST = 1e-3
#: The tolerance at softmax([33, 0, 0, 0]) (largest weight 1 - 1.4e-14): there a.g
#: summed with math.fsum, in reverse order or in long double is off by up to 2e-3 of
#: J g's largest entry; zeros (and weights below 1e-13 flushed to 0) are off by 1.
RTOL_DEEPER = 1e-2


def _rtol(s: np.ndarray) -> float:
    """The relative tolerance on the saturated row softmax(s)."""
    if s[0] > 32:
        return RTOL_DEEPER
    return RTOL_DEEPEST if s[0] > 28 else RTOL_SATURATED


def _saturated(func: Callable, args: dict, want, mistakes, what: str,
               rtol: float = RTOL_SATURATED) -> tuple[bool, str]:
    """func on a saturated row, to 1e-12 and to ``rtol`` of want's largest entry."""
    atol = min(1e-12, rtol * float(np.abs(want).max()))
    return _untouched_then(func, args, want, mistakes, what, atol=atol)


#: A row whose largest weight rounds to exactly 1.0 in float64, its others 4.2e-18
#: (st17a: zeros returned where a.max() == 1.0, or above 1 - 1e-15, passed).
ROUNDED_ONE = (np.array([40.0, 0.0, 0.0, 0.0]), "softmax([40, 0, 0, 0])")
#: And a row whose small weights are 2.2e-300 (st18a: a vjp flushing weights below
#: 1e-19 or 1e-20 to 0 passed, the smallest weight checked being 4.2e-18): its
#: products a_i a_j of two small weights underflow to 0 in every right way.
#: And one whose small weights are 9.9e-305 (st24c: a vjp that set the weights below 1e-300
#: to 0 in place, a[a < 1e-300] = 0, passed: no row had one): it changes its argument.
ROUNDED_ONES = (ROUNDED_ONE, (np.array([690.0, 0.0, 0.0, 0.0]), "softmax([690, 0, 0, 0])"),
                (np.array([700.0, 0.0, 0.0, 0.0]), "softmax([700, 0, 0, 0])"))
#: Tolerance on each entry of J (or J g) at ROUNDED_ONE, in roundings of the terms it
#: is the difference of (a_i delta_ij and a_i a_j; a_i g_i and a_i (a.g)): a small
#: entry, -a_i a_j or a_j (1 - a_j), is then compared relatively, the top key's
#: a_1 (1 - a_1), 1 - 1 in float64, absolutely.
ROUNDINGS = 64
#: Said when J (or J g) at ROUNDED_ONE lost its small entries.
SATURATED_NOT_ZERO = (
    "at {label} the largest weight rounds to exactly 1.0 in float64, but the "
    "other weights are {low:.1e}, not 0: saturated rows are not zero: their "
    "small entries a_j(1-a_j) ~ {low:.0e} must be kept{vjp}; compute {of} the "
    "same way on every row, with no test of a.max() (not even a.max() == 1.0) "
    "and no threshold on the weights")


def _entrywise(func: Callable, args: dict, want, scale, mistakes,
               what: str, of: str, label: str = ROUNDED_ONE[1]) -> tuple[bool, str]:
    """func on ROUNDED_ONE, each entry within ROUNDINGS roundings of the size
    ``scale`` of the terms it is the difference of."""
    got = _on_copies(func, args)
    ok, detail = _diagnose(got, want, [], what, atol=np.inf)
    if not ok:
        return ok, detail
    arr = np.asarray(got, dtype=np.float64)
    err = np.abs(arr - want)
    bad = err > ROUNDINGS * np.finfo(float).eps * scale
    if not bad.any():
        return True, ""
    a = args["a"]
    low = float(a[a < 0.5].max())
    if np.all(arr[bad] == 0):
        return False, (f"{what} is 0 where {of} is not (up to {float(err.max()):.2g}): "
                       + SATURATED_NOT_ZERO.format(
                           label=label, low=low, of=of,
                           vjp="" if of == "J" else ", and J g's a_j (g_j - a.g)"))
    named = _named(arr, mistakes, lambda x, y: np.array_equal(x, y))
    worst = np.unravel_index(np.argmax(np.where(bad, err / scale, 0)), err.shape)
    return False, (f"{what} differs from the reference at entry {list(map(int, worst))} "
                   f"by {float(err[worst]):.2g}, where that entry is "
                   f"{float(want[worst]):.2g}: each entry of a saturated row is "
                   "exact to a few roundings" + (f": {named}" if named else ""))


def _saturated_jacobian(jacobian: Callable) -> tuple[bool, str]:
    """J on each of SATURATED_ROWS (its entries from about 5e-15 to 7e-2), then on
    ROUNDED_ONE entry by entry."""
    for s, label in SATURATED_ROWS:
        a = softmax(s)
        ok, detail = _saturated(jacobian, dict(a=a), softmax_jacobian(a),
                                _jacobian_mistakes(a), f"J of {label}",
                                rtol=_rtol(s))
        if not ok:
            return ok, detail
    for s, label in ROUNDED_ONES:
        a = softmax(s)
        scale = np.diag(a) + np.outer(a, a)
        ok, detail = _entrywise(jacobian, dict(a=a), softmax_jacobian(a), scale,
                                _jacobian_mistakes(a), f"J of {label}", "J", label)
        if not ok:
            return ok, detail
    return True, ""


def _saturated_vjp(vjp: Callable) -> tuple[bool, str]:
    """J g on each of SATURATED_ROWS, then on ROUNDED_ONE entry by entry."""
    g = np.array([0.3, -1.0, 2.0, 0.5])
    for s, label in SATURATED_ROWS:
        a = softmax(s)
        ok, detail = _saturated(vjp, dict(a=a, g=g[:a.size]), softmax_vjp(a, g[:a.size]),
                                _vjp_mistakes(a, g[:a.size]), f"VJP of {label}",
                                rtol=_rtol(s))
        if not ok:
            return ok, detail
    for s, label in ROUNDED_ONES:
        a = softmax(s)
        scale = a * (np.abs(g) + a @ np.abs(g))
        ok, detail = _entrywise(vjp, dict(a=a, g=g), softmax_vjp(a, g), scale,
                                _vjp_mistakes(a, g), f"VJP of {label}", "J g", label)
        if not ok:
            return ok, detail
    return True, ""


#: Gradients with zero entries, and one all zero (h22j: a * g * (1 - a.g / g), which
#: divides by g, passed while no g had a zero entry): J g is finite for every g.
ZERO_GRADIENTS = ((np.array([0.3, 0.0, 2.0, 0.0]), "VJP with g = (0.3, 0, 2, 0)"),
                  (np.zeros(4), "VJP with g = 0"))
#: Said when the VJP is not finite where g is 0.
DIVIDES_BY_G = ("your vjp divides by an entry of g (as "
                "a * g * (1 - a.g / g) does), and a gradient may have zero entries (a "
                "loss that ignores some weights, or none at all): 0/0 is NaN and x/0 "
                "inf there. J g needs no division: products, differences and one dot "
                "product a.g")


def _zero_gradient(vjp: Callable, a: np.ndarray, g: np.ndarray, what: str):
    """vjp(a, g) for a g with zero entries: right, and, where it is not finite only
    where g is 0, told it divides by g."""
    ok, detail = _untouched_then(vjp, dict(a=a, g=g), softmax_vjp(a, g),
                                 _vjp_mistakes(a, g), what)
    if ok:
        return ok, detail
    with np.errstate(all="ignore"):
        got = _on_copies(vjp, dict(a=a, g=g))
    try:
        bad = ~np.isfinite(np.asarray(got, dtype=np.float64))
    except (TypeError, ValueError):
        return ok, detail
    if bad.shape == g.shape and bad.any() and not bad[g != 0].any():
        return False, f"{what} is NaN or inf where g is 0, and only there: {DIVIDES_BY_G}"
    return ok, detail


#: Said when the VJP is 0 everywhere on a row with a masked key (weight exactly 0).
DIVIDES_BY_A = ("this row has a masked key (weight exactly 0), and a division by an "
                "entry of a (as a.g written sum(a * a * g / a)) gives 0/0 = NaN there; a "
                "NaN in a.g spreads to every entry, and cleaned afterwards (np.nan_to_num, "
                "r[np.isnan(r)] = 0) it leaves zeros everywhere. J g needs no division: "
                "products, differences and one dot product a.g")


def _masked_vjp(vjp: Callable, a: np.ndarray, g: np.ndarray, what: str):
    """vjp(a, g) on a short row with a weight exactly 0 (st22c: a NaN from 0/0, cleaned
    into zeros, was found on a masked row of 64 keys only, and blamed on a threshold)."""
    ok, detail = _untouched_then(vjp, dict(a=a, g=g), softmax_vjp(a, g),
                                 _vjp_mistakes(a, g), what)
    if ok:
        return ok, detail
    try:
        with np.errstate(all="ignore"):
            got = np.asarray(_on_copies(vjp, dict(a=a, g=g)), dtype=np.float64)
    except Exception:
        return ok, detail
    if got.shape == a.shape and np.isfinite(got).all() and not got.any():
        return False, f"{what} is 0 everywhere, where J g is not: {DIVIDES_BY_A}"
    return ok, detail


def check_softmax_jacobian(jacobian: Callable, vjp: Callable, verbose: bool = True) -> bool:
    """Check ``jacobian(a) -> (T_k, T_k)`` and ``vjp(a, g) -> (T_k,)`` for softmax weights ``a``.

    Prints a tick or a cross per check and returns True when all pass (see the module
    docstring). An attempt that runs the library's own softmax_jacobian or softmax_vjp
    fails every case.
    """
    library = _library_jacobian()
    jacobian = _refusing_the_library(jacobian, library, LIBRARY)
    vjp = _refusing_the_library(vjp, library, LIBRARY)
    a = softmax(np.array([2.0, 1.0, 0.1, -1.0]))
    g = np.array([0.3, -1.0, 2.0, 0.5])
    one_hot = np.array([0.0, 1.0, 0.0, 0.0])
    # another length, with a weight that is exactly 0 (a masked key): an attempt right
    # only at 4 keys, or one that divides by an entry of a, shows
    a7 = softmax(np.array([0.5, -1.0, -np.inf, 2.0, 0.0, 1.5, -0.3]))
    g7 = np.array([0.3, -1.0, 2.0, 0.5, -0.7, 1.2, 0.4])
    two_keys = np.array([0.8, 0.2])
    one_key = np.array([1.0])  # T_k = 1: J = [[0.]], J g = [0.] (st22c)
    def confirm(func, args, mistakes):
        """Whether func's result on the dense row is the mistake of that message."""
        def matches(message):
            try:
                with np.errstate(all="ignore"):
                    got = np.asarray(func(*(x.copy() for x in args)), dtype=np.float64)
            except Exception:
                return False
            return any(m == message and got.shape == np.shape(v) and
                       np.allclose(got, v, atol=1e-9, rtol=1e-7) for m, v in mistakes)
        return matches

    results = [
        _run("Jacobian matches diag(a) - a a^T",
             _all(lambda: _untouched_then(jacobian, dict(a=a), softmax_jacobian(a),
                                          _jacobian_mistakes(a), "J"),
                  lambda: _saturated_jacobian(jacobian))),
        _run("a one-hot row has the zero Jacobian",
             _all(lambda: _exactly_zero(jacobian(one_hot.copy()), (4, 4), "J at one-hot",
                                        _jacobian_mistakes(one_hot), one_hot,
                                        confirm(jacobian, (a,), _jacobian_mistakes(a))),
                  lambda: _untouched_then(jacobian, dict(a=one_key), np.zeros((1, 1)), (),
                                          "J of the one-key row a = (1.0)", atol=1e-12))),
        _run("VJP matches J g",
             _all(lambda: _untouched_then(vjp, dict(a=a, g=g), softmax_vjp(a, g),
                                          _vjp_mistakes(a, g), "VJP"),
                  lambda: _masked_vjp(vjp, a7, g7, "VJP of 7 keys, one weight 0"),
                  *(lambda g0=g0, label=label: _zero_gradient(vjp, a, g0, label)
                    for g0, label in ZERO_GRADIENTS),
                  lambda: _saturated_vjp(vjp))),
        _run("a one-hot row passes no gradient",
             _all(lambda: _exactly_zero(vjp(one_hot.copy(), g.copy()), (4,), "VJP at one-hot",
                                        _vjp_mistakes(one_hot, g), one_hot,
                                        confirm(vjp, (a, g), _vjp_mistakes(a, g))),
                  lambda: _untouched_then(vjp, dict(a=one_key, g=np.array([0.7])),
                                          np.zeros(1), _vjp_mistakes(one_key, np.array([0.7])),
                                          "VJP of the one-key row a = (1.0)", atol=1e-12))),
        _run("Jacobian of a row of 7 keys, one weight 0",
             lambda: _untouched_then(jacobian, dict(a=a7), softmax_jacobian(a7),
                                     _jacobian_mistakes(a7), "J of 7 keys")),
        _run("a two-key row: J = p (1 - p) [[1, -1], [-1, 1]]",
             lambda: _untouched_then(jacobian, dict(a=two_keys),
                                     0.16 * np.array([[1.0, -1.0], [-1.0, 1.0]]),
                                     _jacobian_mistakes(two_keys), "J of a = (0.8, 0.2)")),
        _run("the VJP on long rows, T_k = " + ", ".join(map(str, SIZES)) + " and "
             + ", ".join(map(str, ODD_SIZES)) + ": its values, and its cost (no sign of J in "
             "what it measures)",
             lambda: _vjp_cost(vjp)),
    ]
    return _report(results, verbose)
