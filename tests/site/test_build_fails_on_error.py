"""A cell that raises fails the book's build: nothing is published with an error in it."""

from tests import harness

PAGE = harness.NOTEBOOK_FRONT_MATTER + """
# A page with a broken cell

```{code-cell} ipython3
raise ValueError("this cell is broken on purpose")
```
"""


def test_a_cell_that_raises_fails_the_build_with_the_book_configuration(tmp_path):
    book = harness.one_page_book(tmp_path / "book", PAGE)
    result = harness.build_book(book, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode != 0, "a raising cell must fail the build:\n" + output[-3000:]
    assert "this cell is broken on purpose" in output
