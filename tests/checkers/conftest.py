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
