"""Exercise checkers (attention.checkers): a NumPy attempt (or the formula) passes each
checker, and the library's own functions fail the attention, temperature, backward and Jacobian
checkers, which refuse them (the temperature and moments checkers in the attempt's threads
too); typical mistakes fail the matching checker, and a crashing
attempt is reported, not raised."""

from __future__ import annotations

import importlib
import inspect
import math
import sys
import threading

import numpy as np
import pytest

import attention
from attention import checkers


def _sdpa(Q, K, V, mask=None):
    # in NumPy: the checker fails an attempt that calls the library's own attention
    work = np.promote_types(Q.dtype, np.float32)  # float16 computed in float32
    Qw, Kw, Vw = (x.astype(work) for x in (Q, K, V))
    S = Qw @ np.swapaxes(Kw, -1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    m = S.max(axis=-1, keepdims=True, initial=-np.inf)  # T_k = 0 too: -inf
    E = np.exp(S - np.where(np.isneginf(m), 0.0, m))  # a fully masked row: shift 0
    total = E.sum(axis=-1, keepdims=True)
    A = E / np.where(total == 0, 1.0, total)
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def _sdpa_tau(Q, K, V, tau):
    # in NumPy: the checker fails an attempt that calls the library's own attention
    Qw, Kw, Vw = (x.astype(np.float64) for x in (Q, K, V))
    # shifted, then scaled, in float64 (st20b): scaled first in float32, the scores of
    # a small tau, or its factor 1/(tau sqrt(d_k)), are inf, and inf - inf NaN
    R = Qw @ np.swapaxes(Kw, -1, -2)
    E = np.exp((R - R.max(axis=-1, keepdims=True)) / tau / Q.shape[-1] ** 0.5)
    A = E / E.sum(axis=-1, keepdims=True)
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def _sdpa_by_attention_torch(Q, K, V, mask=None):
    # attention.torch's twin of PyTorch's, imported here, inside the attempt
    import torch
    lib_torch = importlib.import_module("attention.torch")
    work = np.promote_types(Q.dtype, np.float32)
    q, k, v = (torch.from_numpy(x.astype(work)) for x in (Q, K, V))
    m = None if mask is None else torch.from_numpy(np.asarray(mask))
    O = lib_torch.scaled_dot_product_attention(q, k, v, attn_mask=m)
    return O.numpy().astype(Q.dtype), _sdpa(Q, K, V, mask)[1]


def _score_moments(d_k, rho, kurtosis=3.0):
    # the formula: the checker fails an attempt that calls attention.score_moments
    return rho * math.sqrt(d_k), 1.0 + rho**2 * (kurtosis - 2.0)


def _backward(Q, K, V, dO, mask=None):
    # in NumPy: the checker fails an attempt that calls the library's own backward
    dtype, work = Q.dtype, np.promote_types(Q.dtype, np.float32)  # float16 in float32
    Q, K, V, dO = (x.astype(work) for x in (Q, K, V, dO))
    c = 1.0 / math.sqrt(Q.shape[-1])
    O, A = _sdpa(Q, K, V, mask)
    dV = np.swapaxes(A, -1, -2) @ dO
    dS = A * (dO @ np.swapaxes(V, -1, -2) - np.sum(dO * O, axis=-1, keepdims=True))
    return tuple(g.astype(dtype) for g in (c * dS @ K, c * np.swapaxes(dS, -1, -2) @ Q, dV))


def _jacobian(a):
    # in NumPy: the checker fails an attempt that calls attention.softmax_jacobian
    return np.diag(a) - np.outer(a, a)


def _vjp(a, g):
    return a * (g - a @ g)


def _raises(*args, **kwargs):
    raise RuntimeError("my attempt crashed")


# Checker name -> (arguments built from the library's reference functions).
REFERENCE = {
    "check_scaled_dot_product_attention": (_sdpa,),
    "check_attention_with_temperature": (_sdpa_tau,),
    "check_attention_backward": (_backward,),
    "check_scaled_score_moments": (_score_moments,),
    "check_softmax_jacobian": (_jacobian, _vjp),
}

# Checker name -> the library's own answers, which it refuses, and what it says.
LIBRARY = {
    "check_scaled_dot_product_attention": [
        ((attention.scaled_dot_product_attention,), "attention.scaled_dot_product_attention"),
        ((attention.blocked_attention,), "attention.blocked_attention"),
        # st7a: attention.torch's, imported inside the attempt (the checker imports it
        # first, so that it is known)
        ((_sdpa_by_attention_torch,), "attention.torch.scaled_dot_product_attention")],
    "check_attention_backward": [
        ((attention.attention_backward,), "attention.attention_backward"),
        ((attention.blocked_attention_backward,), "attention.blocked_attention_backward")],
    "check_softmax_jacobian": [
        ((attention.softmax_jacobian, _vjp), "attention.softmax_jacobian"),
        ((_jacobian, attention.softmax_vjp), "attention.softmax_vjp")],
    # st6b: the private kernels, and the library's function in a thread of the attempt's
    "check_attention_with_temperature": [
        ((lambda Q, K, V, tau: attention.forward._attend(
            Q, K, V, None, 1 / (tau * Q.shape[-1] ** 0.5)),), "attention.forward._attend"),
        ((lambda Q, K, V, tau: _in_a_thread(attention.scaled_dot_product_attention, Q, K, V,
                                            temperature=tau),),
         "attention.scaled_dot_product_attention")],
}


def _in_a_thread(f, *args, **kwargs):
    out = {}

    def run():
        try:
            out["r"] = f(*args, **kwargs)
        except Exception:  # noqa: BLE001 - the attempt fails as it would: None
            pass

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return out.get("r")


@pytest.mark.parametrize("name, attempt", [
    ("check_attention_with_temperature",
     lambda Q, K, V, tau: _in_a_thread(attention.tiled_attention, Q, K, V, block_size=2,
                                       temperature=tau)),
    ("check_scaled_score_moments",
     lambda d_k, rho, kurtosis=3.0: _in_a_thread(attention.score_moments, d_k, rho,
                                                 kurtosis)),
    ("check_scaled_dot_product_attention",
     lambda Q, K, V, mask=None: _in_a_thread(attention.tiled_attention, Q, K, V, 2,
                                             mask=mask)),
    ("check_attention_backward",
     lambda Q, K, V, dO, mask=None: _in_a_thread(attention.attention_backward, Q, K, V,
                                                 dO, mask=mask))])
def test_the_refusal_sees_threads_and_leaves_no_profiler_behind(name, attempt, capsys):
    assert getattr(checkers, name)(attempt) is False
    assert "calls the library's own" in capsys.readouterr().out
    assert sys.getprofile() is None and threading.getprofile() is None


@pytest.mark.parametrize("name, fns, called", [
    (name, fns, called) for name, cases in LIBRARY.items() for fns, called in cases])
def test_the_librarys_own_functions_are_refused(name, fns, called, capsys):
    assert getattr(checkers, name)(*fns) is False
    out = capsys.readouterr().out.replace("\n    ", " ")
    assert f"calls the library's own {called}" in out, out
    assert "in NumPy" in out, out


def test_every_checker_is_covered_by_these_tests():
    public = {n for n, f in inspect.getmembers(checkers, inspect.isfunction)
              if n.startswith("check_") and f.__module__.startswith(checkers.__name__)}
    assert public == set(REFERENCE)


@pytest.mark.parametrize("name", list(REFERENCE))
def test_reference_implementations_pass_their_checker(name, capsys):
    assert getattr(checkers, name)(*REFERENCE[name]) is True
    out = capsys.readouterr().out
    assert "✗" not in out and "checks passed" in out


@pytest.mark.parametrize("name", list(REFERENCE))
def test_an_attempt_that_raises_is_reported_as_failed_not_raised(name, capsys):
    args = tuple(_raises for _ in REFERENCE[name])
    assert getattr(checkers, name)(*args) is False
    assert "raised RuntimeError: my attempt crashed" in capsys.readouterr().out


def _nan_attention(Q, K, V, *args, **kwargs):
    n = np.nan
    return np.full(Q.shape[:-1] + V.shape[-1:], n), np.full(Q.shape[:-1] + K.shape[-2:-1], n)


NAN_ATTEMPTS = {
    "check_scaled_dot_product_attention": (_nan_attention,),
    "check_attention_with_temperature": (_nan_attention,),
    "check_attention_backward": (lambda Q, K, V, dO, mask=None: tuple(np.full_like(x, np.nan) for x in (Q, K, V)),),
    "check_scaled_score_moments": (lambda d_k, rho, kurtosis: (np.nan, np.nan),),
    "check_softmax_jacobian": (lambda a: np.full((a.size, a.size), np.nan), lambda a, g: np.full_like(a, np.nan)),
}


@pytest.mark.parametrize("name", list(REFERENCE))
def test_an_attempt_returning_nan_of_the_right_shape_fails(name):
    assert getattr(checkers, name)(*NAN_ATTEMPTS[name], verbose=False) is False


def test_verbose_false_prints_nothing(capsys):
    assert checkers.check_scaled_score_moments(_score_moments, verbose=False)
    assert capsys.readouterr().out == ""


def book_exercises() -> list[tuple[str, str, str]]:
    """(page, label, title) of every exercise in the book's order: sphinx-exercise numbers the
    exercises in the order of _toc.yml and of each page; the title follows ``{exercise}``."""
    import re

    from tools.notebooks import ROOT, toc_pages

    return [(source.relative_to(ROOT).with_suffix("").as_posix(), label, title.strip())
            for source in toc_pages()
            for title, label in re.findall(r"^`{3,}\{exercise\}(.*)\n:label: (ex-[\w-]+)$",
                                           source.read_text(), flags=re.M)]


def test_every_exercise_has_a_title_and_the_exercises_page_lists_it_with_that_title():
    import re
    from pathlib import Path

    listing = (Path(__file__).resolve().parents[2] / "chapters" / "exercises.md").read_text()
    listed = dict(re.findall(r"\{ref\}`(ex-[\w-]+)`: \*\*(.+?)\.\*\*", listing, flags=re.S))
    exercises = book_exercises()
    assert len(exercises) == 9 and all(title for _, _, title in exercises), exercises
    assert {label: title for _, label, title in exercises} == \
        {label: " ".join(title.split()) for label, title in listed.items()}
    assert list(listed) == [label for _, label, _ in exercises]  # listed in the book's order


def test_each_checker_docstring_numbers_its_exercise_as_the_book_does():
    """sphinx-exercise numbers the exercises in the order of _toc.yml and of each page."""
    import importlib
    import re

    number = {label: i + 1 for i, (_, label, _) in enumerate(book_exercises())}
    for module in ("attention", "backward", "jacobian", "moments", "temperature"):
        doc = importlib.import_module(f"attention.checkers.{module}").__doc__
        label = re.search(r"``(ex-[\w-]+)``", doc).group(1)
        assert doc.startswith(f"Checker of Exercise {number[label]}, ``{label}``"), (module, label)


def test_a_nan_result_is_said_to_be_the_attempts_and_given_a_cause_that_fits_the_exercise(capsys):
    for name in REFERENCE:
        getattr(checkers, name)(*NAN_ATTEMPTS[name])
        out = capsys.readouterr().out.replace("\n    ", " ")
        failed = [line for line in out.splitlines() if line.startswith("✗")]
        assert failed and all("NaN" in line for line in failed[:1]), (name, out)
        assert "raised" not in out, (name, out)  # the attempt returned NaN, it raised nothing
        if name == "check_attention_backward":  # no named mistake for a result that is all NaN
            assert "wrong axis" not in out, out
        if name in ("check_scaled_score_moments", "check_softmax_jacobian"):  # no scores there
            assert "exp()" not in out and "0/0" in out, (name, out)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_every_checker_prints_lines_that_fit_the_book_column(name, raw_capsys):
    # a wrong attempt of every kind of result, so that long messages are printed
    fn = getattr(checkers, name)
    fn(*[_raises] * len(REFERENCE[name]))
    fn(*REFERENCE[name][:-1], lambda *a, **k: "not a result")
    out = raw_capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 76, out
