# Two commands do everything on a fresh machine: `make book` and `make test`.
# Run `make help` for the rest.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
# The built site (a private folder with HTML=...: `make pdf HTML=/tmp/x/_build/html`).
HTML ?= _build/html
PDF := $(HTML)/downloads/scaled-dot-product-attention.pdf
PORT ?= 8000
# Fixed timestamps and seeds: two builds write the same bytes.
export SOURCE_DATE_EPOCH ?= 1767225600
export PYTHONHASHSEED := 0
export MPLBACKEND := Agg
# One BLAS / OpenMP thread per process: the build and the tests' Run-All execution then do
# the same arithmetic in the same order (a reduction split over threads may round otherwise),
# and two pages executed at once on two cores do not fight over them.
export OPENBLAS_NUM_THREADS := 1
export OMP_NUM_THREADS := 1
CHECK := _build/check
# The build executes nothing itself: tools/notebooks.py runs the pages, JOBS at once, as a
# reader's Run All would (nbclient, a fresh kernel each) and stores them in the jupyter-cache
# that `jupyter-book build` reads (execute_notebooks: cache in _config.yml). --stale runs only
# the pages the cache lacks; the cache is emptied when code/ changes.
JOBS ?= $(shell nproc 2> /dev/null || echo 2)
CACHE := _build/.jupyter_cache
EXECUTE := $(PY) -m tools.notebooks --cache $(CACHE)
BUILD := $(BIN)/jupyter-book build

.PHONY: help book html pdf check test lab serve clean bench assets figures venv test-deps chromium sweep

help:  ## List the targets.
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

# --- set-up --------------------------------------------------------------------------
# requirements.txt names PyTorch's CPU index, and pip asks it about every package. Where that
# index cannot be reached, pip's default five retries, with their pauses, cost about 8 s per
# package (20 minutes for the book's 155); one retry, without a pause, still rides out a
# passing network error.
PIP_INSTALL := $(PY) -m pip install --quiet --retries 1
$(VENV)/.installed: requirements.txt code/pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e code
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (attention book)" > /dev/null
	@touch $@

venv: $(VENV)/.installed  ## Create .venv with the pinned requirements and the helper package.

$(VENV)/.test-installed: $(VENV)/.installed requirements-test.txt
	$(PIP_INSTALL) -r requirements-test.txt
	@touch $@

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --ignore-scripts --no-audit --no-fund

# The build renders math with node_modules/katex and publishes its CSS and fonts itself
# (_ext/book_math.py); the tests load axe-core from node_modules. Nothing is copied by hand.
assets: node_modules/.package-lock.json  ## Install the pinned front-end packages (npm ci: KaTeX, axe-core).

figures: venv  ## Redraw the static diagrams in figures/ from their sources.
	$(PY) figures/draw.py

# --- the book ------------------------------------------------------------------------
book: venv assets figures  ## Execute every page fresh, build the HTML into _build/html, then its PDF.
	rm -rf $(CACHE) _build/jupyter_execute _build/html
	$(EXECUTE) --workers $(JOBS)
	$(BUILD) --all -W -n --keep-going .
	@$(MAKE) --no-print-directory pdf HTML=_build/html
	@echo "The book is built: open $(CURDIR)/_build/html/index.html, or run 'make serve'."

html: venv assets  ## Rebuild only what changed: pages edited (or all, if code/ changed) run again.
	$(EXECUTE) --workers $(JOBS) --stale
	$(BUILD) -W -n --keep-going .

pdf: test-deps  ## Print the built site into one PDF (Playwright and Debian's chromium), linked from every page's download menu.
	@test -f $(HTML)/index.html || { echo "No $(HTML) yet: run 'make book' first."; exit 1; }
	$(PY) _ext/book_pdf.py --html $(HTML) --out $(PDF)

serve:  ## Serve the built book on http://127.0.0.1:$(PORT)/
	@test -d $(HTML) || { echo "No $(HTML) yet: run 'make book' first."; exit 1; }
	$(PY) -m http.server $(PORT) --bind 127.0.0.1 --directory $(HTML)

LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.json

$(LAB_SETTINGS): $(VENV)/.installed
	@mkdir -p $(dir $@)
	@# Open MyST Markdown pages as notebooks (jupytext), not in the text editor.
	@echo '{"@jupyterlab/docmanager-extension:plugin": {"defaultViewers": {"markdown": "Jupytext Notebook", "myst": "Jupytext Notebook"}}}' > $@

lab: venv $(LAB_SETTINGS)  ## Open the chapter's pages as notebooks in JupyterLab (jupytext reads the .md files).
	@# Without the MPLBACKEND=Agg exported above: the kernels draw inline, as in the build.
	cd chapters && env -u MPLBACKEND ../$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1

# --- tests ---------------------------------------------------------------------------
chromium:  ## Install Debian's chromium for the browser tests (apt, as root).
	@if command -v chromium > /dev/null; then :; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver > /dev/null; \
	else echo "The browser tests need Debian's chromium: run 'sudo apt-get install chromium' (or make chromium as root)."; exit 1; fi

test-deps: $(VENV)/.test-installed chromium

# The pages execute (two at a time) while the library and checker tests run; then the page
# tests read the glued values from those executions. Tests marked slow (the training page's
# reruns with other seeds) are left to make test. PAGES="variance masks" executes and tests
# only those pages, with the library tests and the tests of the checkers those pages import
# (tests/checkers/test_MODULE.py for the checkers/MODULE.py that defines each check_*
# function a page imports, and the checkers' shared test_common.py and test_engine.py).
PAGES ?=
CHECK_PAGES := $(foreach p,$(PAGES),chapters/$(p).md)
CHECK_PAGE_TESTS := $(if $(PAGES),$(foreach p,$(PAGES),$(wildcard tests/pages/test_$(subst -,_,$(p)).py)),tests/pages)
PAGE_CHECKERS = $(sort $(foreach f,$(shell grep -ho 'from attention.checkers import check_[a-z_]*' $(CHECK_PAGES) /dev/null | sed 's/.* //'),\
  $(patsubst code/attention/checkers/%,tests/checkers/test_%,$(shell grep -l '^def $(f)\b' code/attention/checkers/*.py))))
CHECK_CHECKER_TESTS = $(if $(PAGES),tests/checkers/test_common.py tests/checkers/test_engine.py $(PAGE_CHECKERS),tests/checkers)

check: $(VENV)/.test-installed  ## The quick loop, no book build: library, checkers and every page's numbers (each page run once; PAGES="a b" for some, with their checkers).
	@for page in $(CHECK_PAGES); do test -f $$page || { echo "no page $$page (PAGES names files in chapters/ without .md)"; exit 2; }; done
	$(BIN)/ruff check --quiet .
	@mkdir -p $(CHECK)
	@$(PY) -m tools.notebooks --out $(CHECK) $(CHECK_PAGES) > $(CHECK)/run-all.log 2>&1 & run_all=$$!; \
	$(BIN)/pytest -n 2 --dist loadfile -m "not slow" -q tests/lib $(CHECK_CHECKER_TESTS) tests/bench --durations=5; lib=$$?; \
	wait $$run_all; echo "Run All of $(if $(PAGES),$(PAGES),every page):"; cat $(CHECK)/run-all.log; \
	grep -q "^FAIL" $(CHECK)/run-all.log && ran=1 || ran=0; pages=0; \
	if [ -n "$(strip $(CHECK_PAGE_TESTS))" ]; then \
	  BOOK_EXECUTED=$(CHECK) $(BIN)/pytest -n 2 --dist loadfile -m "not slow" -q $(CHECK_PAGE_TESTS) --durations=10; pages=$$?; fi; \
	test $$lib = 0 -a $$pages = 0 -a $$ran = 0

RUN_ALL := _build/nbclient

# Every page is executed once, JOBS at a time: into the book's cache (as make book does) and,
# the same execution, into $(RUN_ALL), where the tests read each page's result. Then the build,
# the PDF, then every test, two at a time (pytest-xdist; one test file stays on one worker, so
# its fixtures run once). The determinism tests compare the build's execution with a reader's:
# the archive, installed in a fresh virtual environment, runs every notebook in its own kernel
# (tests/site/test_archive.py).
test: test-deps assets figures  ## Execute every page once, build the book and its PDF, then run every test.
	$(BIN)/ruff check --quiet .
	rm -rf $(CACHE) _build/jupyter_execute _build/html $(RUN_ALL)
	$(EXECUTE) --workers $(JOBS) --out $(RUN_ALL)
	$(BUILD) --all -W -n --keep-going .
	@$(MAKE) --no-print-directory pdf HTML=_build/html
	BOOK_RUN_ALL=$(RUN_ALL) $(BIN)/pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=10

bench: test-deps assets figures  ## Build the book into a temp folder and print every benchmark (benchmarks/results.json).
	$(PY) benchmarks/run.py

sweep: $(VENV)/.installed  ## Recompute the training page's sweep over seeds (about 12 minutes, one thread).
	$(PY) -m attention.sweep code/attention/data/training_sweep.json

clean:  ## Remove every build output (keeps .venv and node_modules).
	rm -rf _build chapters/.ipynb_checkpoints .pytest_cache
