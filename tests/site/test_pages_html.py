"""What a reader sees on every built page: the anchors other pages link to, quoted numbers
formatted (no raw NumPy reprs, no unrendered glue roles), and none of the book's
bookkeeping: no ``glue(`` call in any code cell (glue lives in cells tagged ``remove-cell``)."""

from __future__ import annotations

import re

import pytest

from tests import harness

CHAPTERS = [p for p in harness.book_pages() if p.startswith("chapters/")] if (harness.HTML / "index.html").exists() \
    else ["chapters/index.html"]
CODE = re.compile(r'<div class="highlight[^"]*"><pre>(.*?)</pre>', re.S)
TAG = re.compile(r"<[^>]+>")


def html(page: str) -> str:
    return (harness.HTML / page).read_text(encoding="utf-8")


@pytest.mark.parametrize("page", CHAPTERS)
def test_no_glue_call_is_visible_on_the_page(page):
    code = [TAG.sub("", block) for block in CODE.findall(html(page))]
    shown = [block.strip().splitlines()[0] for block in code if re.search(r"\bglue\(", block)]
    assert not shown, f"{page} shows glue( in code cells starting: {shown}"


@pytest.mark.parametrize("page", CHAPTERS)
def test_quoted_numbers_are_formatted(page):
    text = TAG.sub("", html(page))
    assert "np.float64(" not in text and "np.float32(" not in text and "np.int64(" not in text, page
    assert "glue:text" not in text and "glue:figure" not in text, page


@pytest.mark.parametrize("page, ids", [
    ("soft-retrieval", ["soft-retrieval", "ex-qkv-roles", "ex-convex-hull", "ex-temperature"]),
    ("why-dot-product", ["why-dot-product"]),
    ("variance", ["variance", "ex-score-moments"]),
    ("saturation", ["saturation", "ex-raw-vs-scaled", "ex-one-hot-jacobian"]),
    ("training", ["training", "fig-training-heatmaps", "fig-training-windows", "fig-training-patterns",
                  "fig-training-additive"]),
    ("stability", ["stability", "fig-online-softmax", "fig-tiled-memory"]),
    ("masks", ["masks", "masks-failures", "ex-mask-inf", "ex-numpy-attention", "fig-mask-patterns",
               "fig-mask-models"]),
    ("backward", ["backward", "ex-backward", "fig-backward-graph"]),
    ("pytorch", ["pytorch", "fig-attention-cost"]),
])
def test_pages_carry_the_anchors_other_pages_link_to(page, ids):
    text = html(f"chapters/{page}.html")
    missing = [anchor for anchor in ids if f'id="{anchor}"' not in text]
    assert not missing, f"{page}: no element with id {missing}"


STREAM = re.compile(r'<div class="output (stream|stderr)[^"]*"')
CELL_OUTPUT = re.compile(r'<div class="cell_output docutils container">(.*?)\n</div>\n</div>', re.S)


@pytest.mark.parametrize("page", CHAPTERS)
def test_each_cell_prints_one_block_per_stream(page):
    # The kernel sends a cell's printed text in as many messages as it flushed its buffer
    # (timing: a loaded machine splits one print mid-line). The build joins them exactly
    # (_ext/book_markup.py), so the reader sees what was printed, in one block.
    for output in CELL_OUTPUT.findall(html(page)):
        kinds = STREAM.findall(output)
        assert len(kinds) == len(set(kinds)), f"{page}: a cell shows its printed text in {len(kinds)} blocks"
