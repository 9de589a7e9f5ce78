"""Figure 1: how long the book takes to build, clean and unchanged, and each page's run time.

Builds into a temporary folder (never _build, which the tests use), exactly as `make book`
does: `jupyter-book build --all -W -n --keep-going . --path-output TMP`, then the same
without --all (an unchanged rebuild). Each page's execution time is the one myst-nb
recorded in the build environment, the same figure the page "How this book was built"
shows in its execution table.
"""

from __future__ import annotations

import pickle
import shutil
import subprocess
import sys
from pathlib import Path

from common import ROOT, Goal, Stopwatch, heading

CLEAN_BUILD_LIMIT = 120.0  # seconds, on a 2-core machine
REBUILD_LIMIT = 10.0
PAGE_LIMIT = 30.0


def _jupyter_book() -> str:
    return str(Path(sys.executable).with_name("jupyter-book"))


def _build(out: Path, full: bool) -> tuple[float, int, str]:
    cmd = [_jupyter_book(), "build", *(["--all"] if full else []), "-W", "-n", "--keep-going",
           ".", "--path-output", str(out)]
    with Stopwatch() as w:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    return w.seconds, proc.returncode, proc.stdout + proc.stderr


def page_run_times(out: Path) -> dict[str, float]:
    """Seconds each page took to execute, from myst-nb's record in the Sphinx environment."""
    with open(out / "_build" / ".doctrees" / "environment.pickle", "rb") as f:
        env = pickle.load(f)
    times = {}
    for docname, data in sorted(getattr(env, "nb_metadata", {}).items()):
        exec_data = data.get("exec_data")
        if exec_data and exec_data.get("runtime") is not None:
            times[docname] = float(exec_data["runtime"])
    return times


def _warnings(log: str) -> list[str]:
    return [line for line in log.splitlines()
            if ("WARNING" in line or "ERROR" in line) and "IPKernelApp" not in line]


def run(out: Path) -> dict:
    """Build the book twice into ``out``; returns the figures and goals."""
    heading("1. Building the book (clean, then unchanged)")
    if out.exists():
        shutil.rmtree(out)
    clean_s, clean_rc, clean_log = _build(out, full=True)
    rebuild_s, rebuild_rc, rebuild_log = _build(out, full=False)
    pages = page_run_times(out)
    warnings = _warnings(clean_log)
    print(f"  clean build (--all, fresh execution): {clean_s:6.1f} s   exit {clean_rc}")
    print(f"  unchanged rebuild:                    {rebuild_s:6.1f} s   exit {rebuild_rc}")
    print(f"  pages executed: {len(pages)}, summed execution {sum(pages.values()):.1f} s")
    for doc, seconds in sorted(pages.items(), key=lambda kv: -kv[1]):
        print(f"    {seconds:6.1f} s  {doc}")
    if clean_rc != 0:
        print(f"  the clean build FAILED (exit {clean_rc}); {len(warnings)} warning/error lines, first ones:")
        for line in warnings[:8]:
            print("    " + line.strip()[:160])
    slowest_doc, slowest = max(pages.items(), key=lambda kv: kv[1]) if pages else ("-", float("nan"))
    goals = [
        Goal("clean build", clean_s, CLEAN_BUILD_LIMIT, "<=", " s"),
        Goal("unchanged rebuild", rebuild_s, REBUILD_LIMIT, "<=", " s"),
        Goal("slowest page", slowest, PAGE_LIMIT, "<=", " s", detail=f"({slowest_doc})"),
        Goal("warning-free build (exit status)", clean_rc, 0, "<=", ""),
    ]
    return dict(clean_build_s=clean_s, clean_build_exit=clean_rc, rebuild_s=rebuild_s,
                rebuild_exit=rebuild_rc, page_execution_s=pages, warnings=warnings[:50],
                html=str(out / "_build" / "html"), goals=goals)
