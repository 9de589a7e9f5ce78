"""The checkers wrap their report to 76 columns, a wrapped line continuing on lines
indented by four spaces. The tests read a message as a reader does, whole: this
``capsys`` joins each continuation back onto its line (the printed width is tested
separately, on the raw output, through ``raw_capsys``)."""

from __future__ import annotations

import re
from typing import NamedTuple

import pytest


class _Captured(NamedTuple):
    out: str
    err: str


class _Unwrapping:
    def __init__(self, capsys):
        self._capsys = capsys

    def readouterr(self) -> _Captured:
        out, err = self._capsys.readouterr()
        return _Captured(re.sub(r"\n    ", " ", out), err)


@pytest.fixture
def raw_capsys(capsys):
    return capsys._capsys  # pytest's own, the lines as printed


@pytest.fixture
def capsys(capsys):  # noqa: F811 - pytest's own, unwrapped
    return _Unwrapping(capsys)


class CheckerRun(NamedTuple):
    """One run of a checker on an attempt: its verdict, its report as printed (``out``; the
    same joined as a reader reads it, ``text``) and the warnings it left behind."""

    result: object
    out: str
    warnings: tuple

    @property
    def text(self) -> str:
        return re.sub(r"\n    ", " ", self.out)


_RUNS: dict = {}


def run_once(check, *attempt) -> CheckerRun:
    """``check(*attempt)``, run once per test process (the checkers are deterministic with
    their random draws off): the WRONG tables' attempts are asserted on by several tests
    (the phrase, no other mistake's name, the column width, no warning left), and each
    reads this one run instead of running the attempt again."""
    import contextlib
    import io
    import warnings

    key = (check, attempt)
    if key not in _RUNS:
        printed = io.StringIO()
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(printed):
            warnings.simplefilter("always")
            result = check(*attempt)
        _RUNS[key] = CheckerRun(result, printed.getvalue(), tuple(caught))
    return _RUNS[key]
