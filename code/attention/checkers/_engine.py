"""The checkers' engine: run each case on copies of the inputs (an attempt that changes
one is told so), catch what the attempt raises, compare with tolerance, name the mistake
a failing answer matches (``_named``: the first entry of the exercise's table of
mistakes whose wrong answer it equals) and print one report. Each checker module is its
exercise's cases and its table of named mistakes."""

from __future__ import annotations

import functools
import sys
import textwrap
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

_RNG_SEED = 2017


class Rejected(Exception):
    """What the attempt returned or did breaks the exercise's contract; the message says how
    (reported as it is, not as an exception the attempt raised)."""


class ChangedInPlace(Rejected):
    """The attempt wrote into one of its input arrays (its result may still be right)."""


def _on_copies(fn: Callable, args: dict, kwargs: dict | None = None):
    """Call ``fn(*args.values(), **kwargs)`` with every array argument copied; raise
    ChangedInPlace when the attempt changed one of them, as an augmented assignment such as
    ``Q /= c`` does. Without this an attempt that overwrites the caller's Q passes: each case
    computes its reference before the call, from the very Q it then passes."""
    kwargs = kwargs or {}
    given = {**args, **kwargs}
    copies = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in given.items()}
    result = fn(*(copies[k] for k in args), **{k: copies[k] for k in kwargs})
    for name, x in given.items():
        if isinstance(x, np.ndarray) and not np.array_equal(x, copies[name], equal_nan=True):
            if x.dtype == bool:  # a mask: |= and &= are what change it
                raise ChangedInPlace(
                    f"your function changed its argument {name} in place (an augmented "
                    f"assignment such as {name} |= ... or {name} &= ..., or "
                    f"{name}[...] = ...): the caller's mask is corrupted; compute into a "
                    f"new array, such as {name} = {name} | ...")
            raise ChangedInPlace(
                f"your function changed its argument {name} in place (an augmented "
                f"assignment such as {name} /= ... or {name} *= ..., or {name}[...] = ...): "
                f"the caller's array is corrupted; compute into a new array, such as "
                f"{name} = {name} / c")
    return result


def _results(fn: Callable, args: dict, kwargs: dict | None = None, names=("O", "A")) -> tuple:
    """The attempt's results on copies of its arguments (``_on_copies``, warnings silenced),
    checked to be one per name, none of them None; a TypeError says what came instead."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        result = _on_copies(fn, args, kwargs)
    listed = ", ".join(names)
    if not isinstance(result, (tuple, list)) or len(result) != len(names):
        count = {2: "a pair", 3: "three arrays"}[len(names)]
        raise TypeError(f"the function must return {count} ({listed}), got "
                        f"{type(result).__name__}")
    for name, x in zip(names, result):
        if x is None:
            raise TypeError(f"{name} is None: return ({listed})")
    return tuple(result)


#: Said when an attempt that ran on one head raises on inputs with batch and head dimensions
#: (X the array named: ``BATCH_HINT.format(X="K")``).
BATCH_HINT = ("with leading (batch, head) dimensions every step must act on the last two "
              "axes only: transpose with np.swapaxes({X}, -1, -2) ({X}.T reverses every axis), "
              "multiply with @ (np.dot, and an einsum without '...', do not pair the "
              "batches), and reduce along axis=-1")


#: Said when an attempt that ran on one head raises on 3-D inputs (B, T, d) (X the array
#: named: ``LEADING_HINT.format(X="K")``).
LEADING_HINT = ("the inputs may have any number of leading axes (here one, (B, T, d)): "
                "every step must act on the last two axes whatever comes before them "
                "(np.swapaxes({X}, -1, -2), @, axis=-1, d_k = Q.shape[-1]; a loop runs "
                "over np.ndindex(Q.shape[:-2])), not on axes counted from the front")


def _keepdims_hint(exc: Exception, scores_shape: tuple) -> str:
    """A hint when the attempt broadcast a row reduction that lost its last axis."""
    def numpy_text(shape):  # how NumPy prints a shape in its broadcast errors
        return "(" + ",".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
    text = str(exc)
    if "broadcast" in text and numpy_text(scores_shape) in text and \
            numpy_text(scores_shape[:-1]) in text:
        return ("; a row's maximum or sum, such as S.max(axis=-1), has one axis fewer "
                "than S: keep it with keepdims=True so that it broadcasts along the keys")
    return ""


#: Said when boolean indexing with the mask raised (as ``S[~mask] = -np.inf`` does with
#: a mask that only broadcasts to the scores).
BOOLEAN_INDEX_HINT = ("; S[~mask] = -np.inf needs a mask of the scores' full shape: "
                      "the mask may have fewer dimensions than the scores and must "
                      "broadcast against them as it is, which np.where(mask, S, "
                      "-np.inf) does")


def _boolean_index_hint(exc: Exception, mask) -> str:
    """BOOLEAN_INDEX_HINT when ``exc`` is an IndexError of boolean indexing and a mask
    was given, else ""."""
    if mask is not None and isinstance(exc, IndexError) and "boolean" in str(exc):
        return BOOLEAN_INDEX_HINT
    return ""


WIDTH = 76  # printed lines fit the book's code column


def _report(results: list[tuple[str, bool, str]], verbose: bool) -> bool:
    """Print a tick or a cross per case, with what went wrong beside a cross, wrapped to
    WIDTH columns; when every case failed for the same reason (an unfinished skeleton),
    one line says so. Return whether every case passed."""
    details = {detail for _, ok, detail in results if not ok}
    if verbose and len(results) > 1 and len(details) == 1 and \
            not any(ok for _, ok, _ in results):
        print(textwrap.fill(f"✗ every case: {details.pop()}", WIDTH,
                            subsequent_indent="    "))
        print(f"0 of {len(results)} checks passed.")
    elif verbose:
        for name, ok, detail in results:
            line = f"{'✓' if ok else '✗'} {name}" + ("" if ok else f": {detail}")
            print(textwrap.fill(line, WIDTH, subsequent_indent="    ",
                                break_long_words=True, break_on_hyphens=False))
        n_ok = sum(ok for _, ok, _ in results)
        print(f"{n_ok} of {len(results)} checks passed.")
    return all(ok for _, ok, _ in results)


def _all(*cases):
    """One case made of several: the first that fails is its result."""
    def case():
        for one in cases:
            ok, detail = one()
            if not ok:
                return ok, detail
        return True, ""
    return case


def _run(name: str, case: Callable[[], tuple[bool, str]]) -> tuple[str, bool, str]:
    try:
        ok, detail = case()
    except Rejected as exc:
        return name, False, str(exc)
    except Exception as exc:  # the reader's code failed: report it, do not crash
        return name, False, f"raised {type(exc).__name__}: {exc}"
    return name, bool(ok), detail


_NAN_FROM_SCORES = ("usually exp() of a score that overflowed (inf / inf), or a row whose every "
                    "score is -inf (-inf - (-inf))")


def _close(got: Any, want: np.ndarray, what: str, atol: float = 1e-8,
           nan_cause: str = _NAN_FROM_SCORES) -> tuple[bool, str]:
    """Compare an attempt's array with the reference; the message names what went wrong."""
    if got is None:
        return False, f"{what} is None: return an array of shape {want.shape}"
    got = np.asarray(got, dtype=np.float64)
    if got.shape != want.shape:
        return False, f"{what} has shape {got.shape}, expected {want.shape}"
    if np.isnan(got).any() and not np.isnan(want).any():
        return False, f"{what} contains NaN where the reference has none: {nan_cause}"
    if np.isinf(got).any() and not np.isinf(want).any():
        return False, f"{what} contains inf where the reference is finite: an overflow"
    err = float(np.abs(got - want).max(initial=0.0))
    return err <= atol, f"{what} differs from the reference by up to {err:.3g}"


def _qkv(rng, T_q=4, T_k=5, d_k=3, d_v=2, batch=()):
    return (rng.standard_normal(batch + (T_q, d_k)), rng.standard_normal(batch + (T_k, d_k)),
            rng.standard_normal(batch + (T_k, d_v)))


def _mask_axes_hint(shape: tuple, want: tuple, mask, what: str) -> str:
    """What a result ``what`` of ``shape``, with more axes than the reference's ``want``,
    is told when the mask, given new axes before it broadcast, made it so; else ""."""
    if mask is None or len(shape) <= len(want):
        return ""
    ndim = np.ndim(mask)
    if ndim == 1:
        return (": a (T_k,) mask is one flag per key, for every query and batch item: "
                "its one axis is the keys, the scores' last, and it broadcasts "
                "against them as it is; read as one flag per sequence, (B,), and "
                f"given new axes (mask[:, None, None]), it adds an axis to {what}")
    if ndim == 3 and len(want) == 3:
        return (": a (B, T_q, T_k) mask for 3-D inputs (B, T, d) was given a head "
                "axis (mask[:, None], PyTorch's habit for (B, H, T_q, T_k) scores): "
                "the scores here are (B, T_q, T_k), the mask's own shape, and it "
                "broadcasts against them as it is; add axes only where the scores "
                "have them")
    return (": the mask was given new axes that the scores do not have, and "
            f"broadcasting added them to {what}; np.where(mask, S, -np.inf) with the "
            "mask as given broadcasts it correctly")


def _matching(got: Any, table, same: Callable, want: Any = None):
    """The sentences of the mistakes in ``table`` whose wrong answer ``same`` finds equal to
    ``got`` (and, given ``want``, different from the right answer: a mistake that changes
    nothing on a case names nothing there), in the table's order. ``table`` holds pairs
    (sentence, wrong answer), a wrong answer that is a callable computed only when
    reached; one that raises ValueError or IndexError (a mistake these inputs cannot
    make, such as a broadcast that needs T_q = T_k) is skipped."""
    for sentence, wrong in table:
        try:
            with np.errstate(all="ignore"):
                w = wrong() if callable(wrong) else wrong
        except (ValueError, IndexError):
            continue
        if same(got, w) and (want is None or not same(want, w)):
            yield sentence


def _named(got: Any, table, same: Callable, want: Any = None) -> str:
    """The sentence of the first mistake in ``table`` that ``got`` matches (see
    ``_matching``), or ""."""
    return next(_matching(got, table, same, want), "")


def _softmax(S, axis=-1):
    """The softmax shifted by each row's maximum (a row of -inf gives NaN, as unguarded)."""
    E = np.exp(S - S.max(axis=axis, keepdims=True))
    return E / E.sum(axis=axis, keepdims=True)


def _fitted_scale(A, R, allowed=None, tol: float = 1e-7) -> float | None:
    """The factor c with A = softmax(c R) on the ``allowed`` keys (every key by default),
    if the weights are a softmax of scaled raw scores R: the least-squares slope of the
    row-centred log-weights on the row-centred scores, kept if it reproduces A."""
    allowed = np.ones(A.shape, bool) if allowed is None else np.broadcast_to(allowed, A.shape)
    if not np.all(A[allowed] > 0) or np.any(A[~allowed]) or not allowed.any(-1).all():
        return None
    n = allowed.sum(axis=-1, keepdims=True)
    L = np.where(allowed, np.log(np.where(allowed, A, 1.0)), 0.0)
    L = np.where(allowed, L - L.sum(-1, keepdims=True) / n, 0.0)
    X = np.where(allowed, R, 0.0)
    X = np.where(allowed, X - X.sum(-1, keepdims=True) / n, 0.0)
    if not (X * X).sum() > 0:
        return None
    c = float((L * X).sum() / (X * X).sum())
    return c if np.allclose(_softmax(np.where(allowed, c * R, -np.inf)), A, atol=tol) else None


def _clipped_scores(A: np.ndarray, want: np.ndarray, S: np.ndarray) -> str:
    """What weights ``A`` are told that tie for a row's largest weight, on that row's
    highest scores ``S``, where the softmax ``want`` gives one key the most: the scores
    were clipped before exp(). Otherwise ""."""
    tied = np.abs(A - A.max(axis=-1, keepdims=True)) <= 1e-12
    n_want = (np.abs(want - want.max(axis=-1, keepdims=True)) <= 1e-9).sum(axis=-1)
    more = tied.sum(axis=-1) > n_want
    if not more.any() or np.any(tied.sum(axis=-1) < n_want):
        return ""
    S = np.broadcast_to(S, A.shape)
    lowest_tied = np.where(tied, S, np.inf).min(axis=-1)
    highest_other = np.where(tied, -np.inf, S).max(axis=-1)
    # the other keys keep the softmax's ratios, exp(S_k - S_l): log A - S is one number a row
    with np.errstate(divide="ignore", invalid="ignore"):
        low = np.abs(A - A.min(axis=-1, keepdims=True)) <= 1e-12  # clipped from below too
        rest = ~tied & ~low & (A > 0) & np.isfinite(S)
        L = np.where(rest, np.log(np.where(rest, A, 1.0)) - np.where(rest, S, 0.0), np.nan)
        spread = np.nanmax(L, axis=-1, initial=-np.inf) - np.nanmin(L, axis=-1, initial=np.inf)
    ratios = np.all((spread[more] <= 1e-2) | ~rest[more].any(axis=-1))
    if ratios and np.all(lowest_tied[more] >= highest_other[more]) and \
            np.allclose(A.sum(axis=-1)[more], 1.0, atol=1e-3):
        return ("several keys share a row's largest weight where the softmax gives one "
                "key the most: were the scores clipped (np.clip, or np.minimum) before "
                "exp()? Clipping changes the differences between the scores, and so the "
                "weights; subtract each row's maximum instead, which changes no weight")
    return ""


def _float32_valued(X: np.ndarray, ref: np.ndarray, dtype=np.float32) -> bool:
    """Whether every entry of X is a float32 number (a ``dtype`` number) where the
    reference's are not: the sign of a computation in float32 cast back to float64."""
    def exact(Y):
        with np.errstate(all="ignore"):
            Y = np.asarray(Y, dtype=np.float64)
            return bool(np.array_equal(Y, Y.astype(dtype).astype(np.float64),
                                       equal_nan=True))
    return exact(X) and not exact(ref)


def _narrow_precision(X: np.ndarray, ref: np.ndarray) -> str:
    """"float16" or "float32" when every entry of X is a number of that dtype where
    the reference's are not (``_float32_valued``), otherwise ""."""
    for dtype in (np.float16, np.float32):
        if _float32_valued(X, ref, dtype):
            return np.dtype(dtype).name
    return ""


def _dtype_rejection(want, dtypes: dict) -> str:
    """What results whose dtypes (name -> dtype) are not the inputs' ``want`` are told, or ""."""
    want = np.dtype(want)
    wrong = [n for n, d in dtypes.items() if d != want]
    if not wrong:
        return ""
    kinds = " and ".join(sorted({str(dtypes[n]) for n in wrong}))
    listed = " and ".join(f"{n} of dtype {d}" for n, d in dtypes.items())
    if len(wrong) < len(dtypes):  # the others were cast back
        cause = f": {', '.join(wrong)} was not cast back; cast it with .astype(Q.dtype)"
    elif want.itemsize < 8 and kinds == "float64":
        cause = (": an explicit cast, .astype(np.float64), does that (drop it, or "
                 "cast the results back with .astype(Q.dtype)); so, unseen, does "
                 "np.sqrt(d_k): np.sqrt(d_k) is a NumPy float64 scalar, which turns "
                 f"{want.name} arrays "
                 "into float64 (np.eye and np.ones default to float64 too): use "
                 "math.sqrt(d_k) or d_k ** 0.5 (a Python float), or cast with .astype(Q.dtype)")
    else:
        cause = "; cast the results with .astype(Q.dtype)"
    return (f"{', '.join(wrong)} {'is' if len(wrong) == 1 else 'are'} {kinds} for "
            f"{want.name} inputs ({listed}); the results keep the inputs' dtype{cause}")


def _refusing_the_library(fn: Callable, banned: dict, message: str,
                          builtins: dict | None = None,
                          methods: dict | None = None) -> Callable:
    """``fn``, wrapped so that a call which runs one of the library's functions ``banned``
    (name -> function, or name -> (function, its own message)) raises
    Rejected(message.format(name=...)), and one that calls a built-in of ``builtins``
    (name -> (built-in, message)) raises Rejected(that message), as does one that
    calls a built-in method of ``methods`` (name -> (type, method name, message)),
    such as Tensor.softmax, on an object of that type; so is a call that runs one and
    then raises (the refusal is told, not the library's error).
    What runs is seen by ``sys.setprofile`` while ``fn`` runs, and by
    ``threading.setprofile`` in the threads it starts (both restored after): however
    ``fn`` reaches the function, as itself, under another name, through a lambda or a
    helper of its own, imported inside it or in a thread. A function of the reader's own
    with the same name is not the library's and passes.

    Blind spots: what the profiler cannot see. An attempt that switches the profiler off
    (``sys.setprofile(None)``), runs a copy of the function's code object (a new
    function built from ``f.__code__``) or of its recompiled source
    (``exec(inspect.getsource(f))``), or the library in a thread already running when
    the check starts (a thread pool started before it) or in another process, is not
    caught: the refusal catches the calls an ordinary attempt makes, not deliberate
    circumvention."""
    codes = {}
    for name, f in banned.items():
        f, text = f if isinstance(f, tuple) else (f, message)
        codes[f.__code__] = text.format(name=name)
    calls = {id(f): (f, text) for f, text in (builtins or {}).values()}
    bound = {name: (kind, text) for kind, name, text in (methods or {}).values()}

    @functools.wraps(fn)
    def watched(*args, **kwargs):
        seen = []

        def hook(frame, event, arg):
            if event == "call" and frame.f_code in codes:
                seen.append(codes[frame.f_code])
            elif event == "c_call" and id(arg) in calls and calls[id(arg)][0] is arg:
                seen.append(calls[id(arg)][1])
            elif event == "c_call" and bound and \
                    getattr(arg, "__name__", None) in bound and isinstance(
                        getattr(arg, "__self__", None), bound[arg.__name__][0]):
                seen.append(bound[arg.__name__][1])

        previous, previous_threads = sys.getprofile(), threading.getprofile()
        threading.setprofile(hook)
        sys.setprofile(hook)
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:  # a refused call that then raised: the refusal is told
            if seen:
                raise Rejected(seen[0]) from exc
            raise
        finally:
            sys.setprofile(previous)
            threading.setprofile(previous_threads)
        if seen:
            raise Rejected(seen[0])
        return result

    return watched


def _library_attention() -> dict:
    """The library's functions that compute attention with a temperature (or a scale),
    public and private, by name (attention.torch imported first, so that its function
    is refused even when the attempt imports it only inside)."""
    from .. import backward, blocked, forward
    lib_torch = _library_torch()
    places = [("attention", forward, "scaled_dot_product_attention"),
              ("attention", forward, "tiled_attention"),
              ("attention", blocked, "blocked_attention"),
              ("attention.forward", forward, "_attend"),
              ("attention.blocked", blocked, "_blocked_forward"),
              ("attention.blocked", blocked, "_attention_blocks"),
              ("attention.backward", backward, "_output_and_log_sum_exp"),
              ("attention.torch", lib_torch, "scaled_dot_product_attention")]
    return _python_functions(places)


def _library_torch():
    """The module attention.torch, or None without torch (nothing of it to refuse)."""
    import importlib

    try:
        return importlib.import_module("attention.torch")
    except ImportError:
        return None


def _python_functions(places) -> dict:
    """{"where.name": function} for the (where, module, name) places that exist and are
    Python functions (a module of None, or a missing name, is skipped)."""
    return {f"{where}.{name}": getattr(module, name) for where, module, name in places
            if callable(getattr(module, name, None))
            and hasattr(getattr(module, name), "__code__")}


def _library_softmax() -> dict:
    """The library's softmax functions (and the softmax's Jacobian and VJP), public and
    private, by name (attention.torch imported first, as in ``_library_attention``)."""
    import importlib

    lib_softmax = importlib.import_module("attention.softmax")  # the module, not the
    # function that the package's own name ``attention.softmax`` is
    lib_torch = _library_torch()
    places = [("attention", lib_softmax, "softmax"),
              ("attention.softmax", lib_softmax, "_softmax"),
              ("attention", lib_softmax, "naive_softmax"),
              ("attention", lib_softmax, "softmax_jacobian"),
              ("attention", lib_softmax, "softmax_vjp"),
              ("attention.torch", lib_torch, "safe_softmax")]
    return _python_functions(places)


def _torch_softmax(message: str) -> tuple[dict, dict, dict]:
    """PyTorch's softmax, each with ``message`` (its ``{name}`` the function's): (its
    Python functions, as ``banned`` of ``_refusing_the_library``; its built-ins; its
    Tensor methods), all empty when torch has not been imported."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {}, {}, {}
    functions = {f"torch.nn.functional.{name}": (getattr(torch.nn.functional, name),
                                                 message)
                 for name in ("softmax", "log_softmax")
                 if hasattr(getattr(torch.nn.functional, name, None), "__code__")}
    builtins = {f"torch.{name}": (getattr(torch, name), message.format(name=f"torch.{name}"))
                for name in ("softmax", "log_softmax", "_softmax")
                if getattr(torch, name, None) is not None}
    special = getattr(torch, "special", None)
    for name in ("softmax", "log_softmax"):
        f = getattr(special, name, None)
        if f is not None and not hasattr(f, "__code__"):
            builtins[f"torch.special.{name}"] = (f, message.format(
                name=f"torch.special.{name}"))
    methods = {f"Tensor.{name}": (torch.Tensor, name, message.format(name=f"Tensor.{name}"))
               for name in ("softmax", "log_softmax")}
    return functions, builtins, methods


#: What ``_torch_attention`` refuses of torch, in words (for the checkers' docstrings
#: and messages).
TORCH_ATTENTION_REFUSED = (
    "torch.nn.functional.scaled_dot_product_attention, "
    "torch.nn.functional.multi_head_attention_forward (which nn.MultiheadAttention "
    "runs), torch.nn.attention.flex_attention.flex_attention, and every built-in of "
    "torch, torch._C._nn and torch._C._VariableFunctions and every torch.ops.aten "
    "operator (each overload too) whose name contains 'attention', with aten's "
    "_transformer_encoder_layer_fwd (nn.TransformerEncoderLayer's fast path): "
    "torch.ops.aten._scaled_dot_product_attention_math, "
    "torch._native_multi_head_attention (nn.MultiheadAttention's fast path) and the "
    "flash, efficient and cuDNN kernels among them")


def _torch_attention(message: str) -> tuple[dict, dict]:
    """PyTorch's attention, each with ``message`` (its ``{name}`` the entry point's):
    (its Python functions, as ``banned`` of ``_refusing_the_library``; its built-ins, as
    ``builtins``), both empty when torch has not been imported. What is refused is
    TORCH_ATTENTION_REFUSED: the public functions, and every operator or function whose
    name contains "attention" that torch's dispatcher lists (st25b:
    torch.ops.aten._scaled_dot_product_attention_math and
    F.multi_head_attention_forward passed), so that a kernel added by a later torch
    is refused too."""
    import importlib

    torch = sys.modules.get("torch")
    if torch is None:
        return {}, {}
    F = torch.nn.functional
    functions = {}
    places = [("torch.nn.functional", F, "multi_head_attention_forward")]
    try:
        flex = importlib.import_module("torch.nn.attention.flex_attention")
        places.append(("torch.nn.attention.flex_attention", flex, "flex_attention"))
    except ImportError:
        pass
    for where, name, f in ((w, n, getattr(m, n, None)) for w, m, n in places):
        if hasattr(f, "__code__"):
            functions[f"{where}.{name}"] = (f, message)

    def attention(name):
        return "attention" in name or name == "_transformer_encoder_layer_fwd"

    builtins, seen = {}, set()

    def refuse(name, f):  # (one object under several names: the first name is told)
        if callable(f) and not hasattr(f, "__code__") and id(f) not in seen:
            seen.add(id(f))
            builtins[name] = (f, message.format(name=name))

    refuse("torch.nn.functional.scaled_dot_product_attention",
           getattr(F, "scaled_dot_product_attention", None))
    for where, module in (("torch", torch), ("torch._C._nn", torch._C._nn),
                          ("torch._C._VariableFunctions", torch._C._VariableFunctions)):
        for name in dir(module):
            if attention(name):
                refuse(f"{where}.{name}", getattr(module, name, None))
    try:
        ops = {n.split("::", 1)[1].split(".")[0]
               for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")}
    except AttributeError:  # (an older torch: the public operator at least)
        ops = {"scaled_dot_product_attention"}
    for op in sorted(filter(attention, ops)):
        try:
            packet = getattr(torch.ops.aten, op)
            refuse(f"torch.ops.aten.{op}", packet._op)
            for overload in packet.overloads():
                refuse(f"torch.ops.aten.{op}.{overload}", getattr(packet, overload)._op)
        except (AttributeError, RuntimeError):
            continue
    return functions, builtins


def _fill_edge():
    """(Q, K, V, mask, note) at d_k = 1: query 0's one visible key scores near -1.79e308
    (float64's most negative number is -1.798e308), query 1's near -1e20 (all finite),
    so a finite fill for the masked scores (-1.5e308, -1.75e308, or a row's lowest score
    minus 1000, which rounds to that score) is not below them; np.finfo(np.float64).min
    is. V's key 0 is (1, 0), so that dA and D agree to the last bit and dS is exactly 0
    there."""
    Q = np.array([[1.0], [1e20 / 1.79e308]])
    K = np.array([[-1.79e308], [1.0], [-1.0], [0.5]])
    V = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, -0.5], [2.0, 1.0]])
    mask = np.array([[True, False, False, False]] * 2)
    note = ("; here, at d_k = 1, query 0's one visible key scores near -1.79e308 "
            "and query 1's near -1e20 (both finite): a finite fill for the masked "
            "scores (-1.5e308, -1.75e308, or a row's lowest score minus 1000, which "
            "rounds to that score) is not below them; use -inf, which is below "
            "every finite score (np.finfo(np.float64).min is below these, and ties "
            "only with a visible score of exactly that value)")
    return Q, K, V, mask, note
