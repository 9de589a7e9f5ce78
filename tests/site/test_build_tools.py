"""The build's own tools: the page runner that executes the book for its build (joining a
cell's printed pieces exactly, caching each page until it or code/ changes, a stock
`jupyter-book build` reading its cache), and the extensions' helpers."""

from __future__ import annotations

import subprocess
import sys

import nbformat

from tests import harness
from tools import notebooks

sys.path.insert(0, str(harness.ROOT / "_ext"))


PRINTING_PAGE = harness.NOTEBOOK_FRONT_MATTER + """
# A page that prints in pieces

```{code-cell} ipython3
import sys, time
print("shapes: dQ", end="")
sys.stdout.flush()
time.sleep(0.5)  # the kernel sends what was printed so far as its own message
print(" (2, 3, 5, 4)")
sys.stderr.write("a warning\\n")
sys.stderr.flush()
time.sleep(0.5)
print("next line")
```
"""


def test_the_runner_joins_a_cells_printed_pieces_exactly(tmp_path):
    # The kernel sent four messages; the page shows one block per stream, as printed.
    page = tmp_path / "page.md"
    page.write_text(PRINTING_PAGE)
    result = notebooks.run_page(page, cwd=tmp_path, out=tmp_path / "run")
    assert result.ok, result.message
    cell = nbformat.read(tmp_path / "run" / "chapters" / "page.ipynb", as_version=4).cells[1]
    assert [(o.output_type, o.name, o.text) for o in cell.outputs] == [
        ("stream", "stdout", "shapes: dQ (2, 3, 5, 4)\nnext line\n"),
        ("stream", "stderr", "a warning\n")]
    assert "execution" not in cell.metadata, "no clock times in an executed notebook"


def test_the_cache_holds_a_page_until_it_or_code_changes(tmp_path, monkeypatch):
    code = tmp_path / "code"
    code.mkdir()
    (code / "helper.py").write_text("X = 1\n")
    monkeypatch.setattr(notebooks, "CODE", code)
    page, cache = tmp_path / "page.md", tmp_path / "cache"
    page.write_text(harness.NOTEBOOK_FRONT_MATTER + "\n```{code-cell} ipython3\nprint(1)\n```\n")
    assert notebooks.stale_pages([page], cache) == [page], "an empty cache holds nothing"
    assert notebooks.run_page(page, cwd=tmp_path, cache=cache).ok
    assert notebooks.stale_pages([page], cache) == [], "the executed page is in the cache"
    (code / "helper.py").write_text("X = 2\n")
    assert notebooks.stale_pages([page], cache) == [page], "code/ changed: run every page again"
    assert notebooks.open_cache(cache).list_cache_records() == [], "and the cache was emptied"
    assert notebooks.run_page(page, cwd=tmp_path, cache=cache).ok
    page.write_text(page.read_text().replace("print(1)", "print(2)"))
    assert notebooks.stale_pages([page], cache) == [page], "the page's code changed"


def test_the_build_reads_the_runners_execution_and_executes_nothing(tmp_path):
    # What make book does: the runner executes and caches, a stock jupyter-book build reads.
    folder = harness.one_page_book(tmp_path / "book", PRINTING_PAGE)
    cache = folder / "_build" / ".jupyter_cache"
    source = folder / "chapters" / "index.md"
    assert notebooks.run_page(source, cwd=source.parent, cache=cache).ok
    built = harness.build_book(folder, timeout=600)
    log = built.stdout + built.stderr
    assert built.returncode == 0, log[-3000:]
    assert "Executing notebook" not in log and "Executed notebook" not in log, log[-3000:]
    html = (folder / "_build" / "html" / "chapters" / "index.html").read_text()
    assert "shapes: dQ (2, 3, 5, 4)\nnext line" in html


def test_every_patch_still_finds_what_it_replaces():
    # book_patches.py names the version each patch was written against; an upgrade that
    # moves or renames what it replaces fails here, not in a build.
    import importlib.metadata

    import sphinxcontrib.katex as katex

    import book_patches

    assert importlib.metadata.version("sphinxcontrib-katex") == book_patches.KATEX_VERSION
    for name in ("STARTUP_TIMEOUT", "RENDER_TIMEOUT", "render_latex", "KaTeXError", "KaTeXServer",
                 "KATEX_DEFAULT_OPTIONS"):
        assert hasattr(katex, name), name
    for name in ("start_server_process", "build_command", "timeout_error", "get"):
        assert hasattr(katex.KaTeXServer, name), name
    assert katex.KATEX_DEFAULT_OPTIONS.get("throwOnError") is False, "patch 3 may be stock now"


def test_no_extension_but_book_patches_assigns_into_another_package():
    # "A patch that must stay lives in one module": an assignment to an attribute of an
    # imported package (module.name = ..., module.Class.name = ...) anywhere else in _ext/.
    import ast

    local = {path.stem for path in (harness.ROOT / "_ext").glob("*.py")}
    found = []
    for path in sorted((harness.ROOT / "_ext").glob("*.py")):
        if path.name == "book_patches.py":
            continue
        tree = ast.parse(path.read_text())
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported |= {(a.asname or a.name).split(".")[0] for a in node.names
                             if a.name.split(".")[0] not in local}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] not in local:
                imported |= {a.asname or a.name for a in node.names}
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
            for target in targets:
                base = target
                while isinstance(base, ast.Attribute):
                    base = base.value
                if target is not base and isinstance(base, ast.Name) and base.id in imported:
                    found.append(f"{path.name}:{node.lineno}: {ast.unparse(target)}")
    assert not found, "patches outside _ext/book_patches.py:\n" + "\n".join(found)


BAD_MATH_PAGE = harness.NOTEBOOK_FRONT_MATTER + r"""
# Bad math

An unfinished fraction $\frac{a}{$ and an unknown command $\foo x$.
"""


def test_a_formula_katex_cannot_render_fails_the_build(tmp_path):
    folder = harness.one_page_book(tmp_path / "book", BAD_MATH_PAGE)
    built = harness.build_book(folder, timeout=600)
    log = built.stdout + built.stderr
    assert built.returncode != 0, log[-3000:]
    assert "KaTeX cannot render '\\\\frac{a}{'" in log, log[-3000:]
    assert "KaTeX cannot render '\\\\foo x'" in log, log[-3000:]

def test_math_characters_are_what_the_formulas_show_not_their_mathml_or_the_page(tmp_path):
    import book_math

    site = tmp_path / "html"
    (site / "chapters").mkdir(parents=True)
    (site / "chapters" / "a.html").write_text(
        '<p>outside</p><span class="katex"><span class="katex-mathml"><math><semantics>'
        '<mi>z</mi><annotation encoding="application/x-tex">\\zeta</annotation></semantics>'
        '</math></span><span class="katex-html"><span class="mord mathnormal">q</span>'
        '<span class="mrel">&lt;</span><span>&#8730;</span></span></span>', encoding="utf-8")
    (site / "b.html").write_text('<span class="katex"><span class="katex-html">K</span></span>',
                                 encoding="utf-8")
    assert book_math.math_characters(site) == {ord("q"), ord("<"), 0x221A, ord("K")}


def test_only_each_formulas_own_markup_is_read_for_its_characters():
    import book_math

    html = ('<p>x<span class="katex"><span class="a"><span>1</span></span><span>2</span></span>'
            ' text <span class="other">y</span><div><span class="katex"><span>3</span></span></div>'
            '<span class="katex"><span>open')
    assert list(book_math._formulas(html)) == [
        '<span class="katex"><span class="a"><span>1</span></span><span>2</span></span>',
        '<span class="katex"><span>3</span></span>',
        '<span class="katex"><span>open',
    ]
    assert list(book_math._formulas("<p>no math</p>")) == []


def test_nothing_outside_the_tests_imports_the_tests():
    # The PDF, the benchmarks and the Sphinx extensions use tools/; tests/ is for the tests.
    import re

    offenders = []
    ROOT = harness.ROOT
    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    assert "_ext/book_pdf.py" in tracked
    for name in tracked:
        path = ROOT / name
        if name.startswith("tests/") or not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"^\s*(from tests\b|import tests\b)|-m tests\.", text, re.M):
            offenders.append(path.relative_to(ROOT).as_posix())
    makefile = (ROOT / "Makefile").read_text()
    if re.search(r"-m tests\.", makefile):
        offenders.append("Makefile")
    assert not offenders, f"these import the test package: {offenders}"


def _check_tests(pages: str) -> list[str]:
    """The test paths the quick loop's first pytest runs for make check PAGES=pages."""
    dry = subprocess.run(["make", "-n", "check", f"PAGES={pages}"], cwd=harness.ROOT,
                         capture_output=True, text=True, check=True).stdout
    line = next(x for x in dry.splitlines() if "pytest -n 2" in x and "tests/lib" in x)
    return [w for w in line.split() if w.startswith("tests/")]


def test_make_check_pages_runs_the_checker_tests_of_the_checkers_those_pages_import():
    shared = ["tests/checkers/test_common.py", "tests/checkers/test_engine.py"]
    assert _check_tests("variance") == ["tests/lib", *shared, "tests/checkers/test_moments.py", "tests/bench"]
    assert _check_tests("backward saturation") == [
        "tests/lib", *shared, "tests/checkers/test_backward.py", "tests/checkers/test_jacobian.py", "tests/bench"]
    # masks and the exercises page both import the attention checker: one run of its tests
    assert _check_tests("masks exercises") == ["tests/lib", *shared, "tests/checkers/test_attention.py", "tests/bench"]
    assert _check_tests("soft-retrieval") == ["tests/lib", *shared, "tests/checkers/test_temperature.py", "tests/bench"]
    assert _check_tests("training") == ["tests/lib", *shared, "tests/bench"]
    # without PAGES, every checker test
    dry = subprocess.run(["make", "-n", "check"], cwd=harness.ROOT, capture_output=True, text=True, check=True).stdout
    assert " tests/lib tests/checkers tests/bench " in dry
