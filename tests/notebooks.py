"""Moved to :mod:`tools.notebooks`; this name stays for ``python -m tests.notebooks``."""

import sys

from tools.notebooks import *  # noqa: F401,F403
from tools.notebooks import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
