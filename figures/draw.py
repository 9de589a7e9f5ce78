"""Redraw every static diagram of the book: runs each figures/src/*.py, which writes SVG into figures/.

Run by `make figures` (and so by `make book`). Each source script is plain matplotlib with
the book's style, deterministic, and writes one or more figures/NAME.svg files.
"""

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    scripts = sorted((HERE / "src").glob("*.py"))
    for script in scripts:
        print(f"drawing {script.relative_to(HERE.parent)}")
        runpy.run_path(str(script), run_name="__main__")
    print(f"{len(scripts)} figure scripts run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
