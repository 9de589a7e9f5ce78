"""attention.glue.glue writes exactly what myst_nb.glue writes (the build reads it back)."""

from __future__ import annotations

from unittest import mock

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import attention.glue as ours  # noqa: E402


def _captured(glue, *args, **kwargs):
    calls = []
    target = "IPython.display.display" if glue is ours.glue else "myst_nb.ext.glue.ipy_display"
    with mock.patch(target, side_effect=lambda *a, **k: calls.append((a, k))):
        glue(*args, **kwargs)
    return calls


@pytest.mark.parametrize("value", [0.1234, 7, "text", [1, 2], np.arange(3)])
@pytest.mark.parametrize("display", [True, False])
def test_glue_writes_the_same_output_as_myst_nb(value, display):
    from myst_nb import glue as myst_glue

    assert _captured(ours.glue, "x", value, display=display) == _captured(myst_glue, "x", value, display=display)


def test_a_glued_figure_is_the_same_output_as_myst_nb():
    from myst_nb import glue as myst_glue

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    assert _captured(ours.glue, "fig", fig, display=False) == _captured(myst_glue, "fig", fig, display=False)
    plt.close(fig)


def test_the_prefix_is_myst_nbs():
    from myst_nb.ext.glue import GLUE_PREFIX

    assert ours.GLUE_PREFIX == GLUE_PREFIX


@pytest.mark.parametrize("name", ["", None, 3])
def test_a_glue_name_must_be_a_non_empty_string(name):
    with pytest.raises(TypeError, match="glue name"):
        ours.glue(name, 1.0)


@pytest.mark.parametrize("value, plain", [(np.float64(2.5), 2.5), (np.float32(0.25), 0.25), (np.int64(7), 7),
                                          (np.bool_(True), True)])
def test_a_numpy_scalar_is_glued_as_the_python_number_it_holds(value, plain):
    from myst_nb import glue as myst_glue

    mine = _captured(ours.glue, "x", value, display=False)
    assert mine == _captured(myst_glue, "x", plain, display=False)
    assert "np." not in str(mine)
