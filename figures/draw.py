"""Redraw every static diagram of the book: runs each figures/src/*.py, which writes SVG into figures/.

Run by `make figures` (and so by `make book`). Each source script is plain matplotlib with
the book's style, deterministic, and writes one or more figures/NAME.svg files.
"""

import os
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    # A figure redrawn to the same bytes gets its old modification time back, so that an
    # incremental `jupyter-book build` does not read its page again for nothing.
    before = {svg: (svg.read_bytes(), svg.stat()) for svg in HERE.glob("*.svg")}
    scripts = sorted((HERE / "src").glob("*.py"))
    for script in scripts:
        print(f"drawing {script.relative_to(HERE.parent)}")
        runpy.run_path(str(script), run_name="__main__")
    unchanged = 0
    for svg, (data, stat) in before.items():
        if svg.exists() and svg.read_bytes() == data:
            os.utime(svg, ns=(stat.st_atime_ns, stat.st_mtime_ns))
            unchanged += 1
    print(f"{len(scripts)} figure scripts run; {unchanged} figures unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
