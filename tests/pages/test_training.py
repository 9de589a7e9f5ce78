"""Does the scale matter for training? Every number the prose quotes, recomputed, and every
claim checked against the glued grid and against the same sweep run with other seeds.

Three kinds of check:

* glued sweep points rerun one at a time by a plain loop written here (``torch.optim``, no
  stacking, no W_Q W_K^T trick), at rates where a run is not chaotic (see
  ``test_the_unscaled_head_amplifies_rounding_near_the_top_of_its_window``);
* every glued summary number recomputed from the glued grid by code independent of the page;
* every statement the prose makes about the one-seed sweep, as a predicate on a grid, checked
  on the page's grid and on the grids of two other seeds, there wherever the runs that decide
  it are settled on the running machine (the slow part);
* every statement about the sweep over seeds, held out, recomputed from the committed file
  (``attention/data/training_sweep.json``), a sample of which is rerun (to 2e-5, where a run
  does not amplify rounding), across all of its seeds as the prose states it.
"""

from __future__ import annotations

import ast
import itertools
import math

import numpy as np
import pytest
import torch

from tests.glue import glued
from tests.pages._common import g, g_bool, g_text

PAGE = "training"
WIDTHS = [16, 64, 256, 1024]
HEADS = ["scaled", "unscaled", "1/d_k"]
SCALE = {"scaled": lambda d: 1 / math.sqrt(d), "unscaled": lambda d: 1.0, "1/d_k": lambda d: 1 / d}
GRID = {"sgd": 10.0 ** np.arange(-2.0, 3.6, 0.5), "adam": 10.0 ** np.arange(-4.0, -0.4, 0.5)}
THRESHOLD = 0.05
D_MODEL, T_K, D_V, BATCH, STEPS = 32, 16, 16, 32, 200
ADD_DK = 256
ADD_SKIP = 2  # the additive head runs at the Adam rates from the third up
ADD_LRS = GRID["adam"][ADD_SKIP:]
N_EVAL = 128  # the fresh batch (seed 1) whose first rows the patterns figure shows
N_SHOW = 12


def glued_list(name):
    return np.array(ast.literal_eval(glued(PAGE)[name].strip()), dtype=float)


@pytest.fixture(scope="module")
def page_grid():
    final = {opt: glued_list(f"tr_final_{opt}") for opt in GRID}
    for opt, F in final.items():
        assert F.shape == (len(HEADS), len(WIDTHS), len(GRID[opt]))
        assert np.isfinite(F).all()
    return final, glued_list("tr_add_final")


# --- the task and the configuration ------------------------------------------------------


def test_configuration_as_the_prose_states_it():
    assert (g(PAGE, "tr_d_model"), g(PAGE, "tr_T_k"), g(PAGE, "tr_d_v")) == (D_MODEL, T_K, D_V)
    assert (g(PAGE, "tr_batch"), g(PAGE, "tr_steps")) == (BATCH, STEPS)
    assert g(PAGE, "tr_uniform_loss") == pytest.approx(1 - 1 / T_K)
    assert g(PAGE, "tr_dk_max") == WIDTHS[-1] and g(PAGE, "tr_n_widths") == len(WIDTHS)
    assert g(PAGE, "tr_n_lr_sgd") == len(GRID["sgd"]) and g(PAGE, "tr_n_lr_adam") == len(GRID["adam"])
    assert g(PAGE, "tr_lr_sgd_min") == pytest.approx(GRID["sgd"][0])
    assert g(PAGE, "tr_lr_sgd_max") == pytest.approx(GRID["sgd"][-1])
    assert g(PAGE, "tr_lr_adam_min") == pytest.approx(GRID["adam"][0])
    assert g(PAGE, "tr_lr_adam_max") == pytest.approx(GRID["adam"][-1])
    # Half a decade apart, as the prose says.
    for lrs in GRID.values():
        np.testing.assert_allclose(np.diff(np.log10(lrs)), 0.5)
    assert g(PAGE, "tr_threshold") == THRESHOLD
    assert g(PAGE, "tr_add_dk") == ADD_DK
    # "a head 256 wide, eight times wider than the model (the fixed design)"
    assert g(PAGE, "tr_add_dk") == 8 * g(PAGE, "tr_d_model")
    assert [g(PAGE, "tr_d_model"), ADD_DK] in held_sweep.load_sweep()["widths"]["fixed"]
    assert g(PAGE, "tr_add_lr_min") == pytest.approx(ADD_LRS[0])
    assert g(PAGE, "tr_check_steps") == 100
    assert g(PAGE, "tr_dk_min") == WIDTHS[0]
    assert g(PAGE, "tr_width_factor") == 4 and all(b == 4 * a for a, b in zip(WIDTHS, WIDTHS[1:]))
    assert g(PAGE, "tr_last") == 20
    # rv24: "one wrong row in 40 is enough" is cut, and its glue with it
    assert "tr_rows_per_mistake" not in glued(PAGE) and "tr_rows_per_mistake" not in SOURCE
    assert g(PAGE, "tr_n_show") == 12


def test_uniform_weights_loss_is_one_minus_one_over_T_k_by_sampling():
    rng = np.random.default_rng(0)
    V = rng.standard_normal((20000, T_K, D_V))
    j = rng.integers(T_K, size=20000)
    O = V.mean(axis=1)  # uniform weights
    loss = np.mean((O - V[np.arange(20000), j]) ** 2)
    assert loss == pytest.approx(1 - 1 / T_K, abs=0.01)


def test_initial_scores_of_the_widest_heads():
    """Recomputed in float64 NumPy from the same torch draws (W_Q, W_K, X, j*)."""
    gen = torch.Generator().manual_seed(0)
    d_k = WIDTHS[-1]
    W_Q = (torch.randn(D_MODEL, d_k, generator=gen) / math.sqrt(D_MODEL)).double().numpy()
    W_K = (torch.randn(D_MODEL, d_k, generator=gen) / math.sqrt(D_MODEL)).double().numpy()
    X = torch.randn(BATCH, T_K, D_MODEL, generator=gen).double().numpy()
    j = torch.randint(T_K, (BATCH,), generator=gen).numpy()
    raw = np.einsum("bk,btk->bt", X[np.arange(BATCH), j] @ W_Q, X @ W_K)
    for name, key in (("scaled", "scaled"), ("unscaled", "unscaled"), ("1/d_k", "dk")):
        S = SCALE[name](d_k) * raw
        assert g(PAGE, f"tr_init_sd_{key}") == pytest.approx(S.std(ddof=1), rel=1e-4)
    top = lambda S: _softmax(S).max(axis=-1).mean()
    assert g(PAGE, "tr_init_top_unscaled") == pytest.approx(top(raw), rel=1e-4)
    assert g(PAGE, "tr_init_top_dk") == pytest.approx(top(raw / d_k), rel=1e-4)
    # The prose: unscaled rows saturated, 1/d_k rows nearly uniform.
    assert g(PAGE, "tr_init_top_unscaled") > 0.9
    assert g(PAGE, "tr_init_top_dk") < 1.2 / T_K
    assert abs(g(PAGE, "tr_init_sd_scaled") - 1) < 0.1


def _softmax(S):
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# --- a plain loop, written here ---------------------------------------------------------------


def plain_run(d_k, lr, c=None, optimizer="sgd", seed=0, score="dot", nudge=0.0, nudge_seed=99):
    """One run, the obvious way: torch.optim, no stacking; the page's documented draws.

    ``nudge``: W_Q's start times (1 + nudge * z), z a standard normal draw (``nudge_seed``): a
    change of rounding size (2**-22, a few float32 ulps) shows whether the run amplifies rounding."""
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(seed)
    W_Q = torch.randn(D_MODEL, d_k, generator=gen) / math.sqrt(D_MODEL)
    if nudge:
        z = torch.randn(W_Q.shape, generator=torch.Generator().manual_seed(nudge_seed))
        W_Q = W_Q * (1 + nudge * z)
    W_Q.requires_grad_()
    W_K = (torch.randn(D_MODEL, d_k, generator=gen) / math.sqrt(D_MODEL)).requires_grad_()
    params = [W_Q, W_K]
    if score == "additive":
        w = (torch.randn(d_k, generator=gen) / math.sqrt(d_k)).requires_grad_()
        b = torch.zeros(d_k, requires_grad=True)
        params += [w, b]
    opt = (torch.optim.SGD if optimizer == "sgd" else torch.optim.Adam)(params, lr=lr)
    rows = torch.arange(BATCH)
    losses = []
    for _ in range(STEPS):
        X = torch.randn(BATCH, T_K, D_MODEL, generator=gen)
        V = torch.randn(BATCH, T_K, D_V, generator=gen)
        j = torch.randint(T_K, (BATCH,), generator=gen)
        q, K = X[rows, j] @ W_Q, X @ W_K
        if score == "dot":
            S = c * (K @ q[:, :, None])[..., 0]
        else:
            S = torch.tanh(q[:, None, :] + K + b) @ w
        O = (torch.softmax(S, dim=-1)[:, None, :] @ V)[:, 0]
        loss = ((O - V[rows, j]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses)


# Points where runs are not chaotic: the best rate of each head at d_k = 16 and 64 (the unscaled
# head's at 64 excepted, see the chaos test), and two at d_k = 256; the 1/d_k head's at 64 one
# grid rate below its best (10^2, the top of its window, amplifies rounding: a 2**-22 nudge of
# W_Q's start moves its final loss by up to 4e-3 relative on an AVX-512 machine, where the stacked
# and the plain run differ by 2.3e-3). The last field: grid rates below the best.
RERUN = [("sgd", "scaled", 16, 0), ("sgd", "unscaled", 16, 0), ("sgd", "1/d_k", 16, 0),
         ("sgd", "scaled", 64, 0), ("sgd", "1/d_k", 64, 1), ("sgd", "scaled", 256, 0),
         ("adam", "scaled", 64, 0), ("adam", "unscaled", 16, 0), ("adam", "1/d_k", 256, 0)]
NUDGE = 2.0 ** -22  # a few float32 ulps of W_Q's start
NOT_CHAOTIC = 1e-4  # a nudged rerun moves RERUN's points by at most 1.5e-5 (AVX-512 machine)


@pytest.mark.slow
@pytest.mark.parametrize("opt, name, d_k, below", RERUN)
def test_glued_sweep_points_equal_a_plain_rerun(page_grid, opt, name, d_k, below):
    final, _ = page_grid
    row = final[opt][HEADS.index(name), WIDTHS.index(d_k)]
    i = int(np.argmin(row)) - below
    assert row[i] < THRESHOLD, "not a working rate"
    got = plain_run(d_k, GRID[opt][i], SCALE[name](d_k), optimizer=opt)[-20:].mean()
    # the premise of the comparison, checked on the machine that runs it: not chaotic here
    nudged = plain_run(d_k, GRID[opt][i], SCALE[name](d_k), optimizer=opt, nudge=NUDGE)[-20:].mean()
    assert nudged == pytest.approx(got, rel=NOT_CHAOTIC), "amplifies rounding: pick another point"
    assert got == pytest.approx(row[i], rel=1e-3)


@pytest.mark.slow
def test_the_1_over_d_k_head_amplifies_rounding_at_its_best_sgd_rate_at_64(page_grid):
    """Why RERUN takes that head's point one rate lower: at 10^2 a rounding-sized nudge grows
    past NOT_CHAOTIC (six nudges: 1.8e-4 to 4e-3 relative on an AVX-512 machine, where at
    RERUN's points they stay below 1.5e-5)."""
    row = page_grid[0]["sgd"][HEADS.index("1/d_k"), WIDTHS.index(64)]
    assert GRID["sgd"][int(np.argmin(row))] == pytest.approx(100)
    plain = plain_run(64, 100.0, 1 / 64)[-20:].mean()
    moved = [plain_run(64, 100.0, 1 / 64, nudge=NUDGE, nudge_seed=z)[-20:].mean() for z in range(99, 105)]
    assert max(abs(x / plain - 1) for x in moved) > NOT_CHAOTIC


@pytest.mark.slow
def test_glued_additive_point_equals_a_plain_rerun(page_grid):
    # The lowest working rate: at the highest one, rounding differences grow by a few per cent.
    _, add = page_grid
    i = int(np.flatnonzero(add < THRESHOLD)[0])
    got = plain_run(ADD_DK, ADD_LRS[i], optimizer="adam", score="additive")[-20:].mean()
    assert got == pytest.approx(add[i], rel=1e-3)


def test_the_page_check_agrees_to_rounding_except_the_chaotic_unscaled_run():
    assert 0 < g(PAGE, "tr_vec_diff") < 1e-4
    # rv18: "float32 rounding, already amplified for the unscaled head: the other two differ by
    # at most 2e-07" (the check's pairs: scaled, unscaled, 1/d_k)
    diffs = glued_list("tr_vec_diffs")
    assert diffs.max() == pytest.approx(g(PAGE, "tr_vec_diff")) and int(diffs.argmax()) == 1
    assert g(PAGE, "tr_vec_diff_other") == pytest.approx(max(diffs[0], diffs[2]))
    assert diffs[1] > 10 * max(diffs[0], diffs[2])  # amplified
    assert max(diffs[0], diffs[2]) < 1e-6  # float32 rounding of a loss near 0.05
    assert g(PAGE, "tr_chaos_lr") == pytest.approx(10 ** -0.5)
    assert g(PAGE, "tr_chaos_diff") > 100 * g(PAGE, "tr_vec_diff")


@pytest.mark.slow
def test_the_unscaled_head_amplifies_rounding_near_the_top_of_its_window():
    """Why the reruns above avoid it: the plain loop and the stacked runs drift apart there."""
    from attention.training import RetrievalTask, train_retrieval_heads

    stacked = train_retrieval_heads(64, [10 ** -0.5, 0.3], [1.0, 1 / 8],
                                    task=RetrievalTask(steps=STEPS)).losses
    unscaled = plain_run(64, 10 ** -0.5, 1.0)
    scaled = plain_run(64, 0.3, 1 / 8)
    assert np.abs(stacked[0] - unscaled).max() > 1e-3  # rounding grows
    assert np.abs(stacked[1] - scaled).max() < 1e-5  # at the scaled head's rate it does not


# --- summary numbers, from the glued grid ------------------------------------------------


def windows(F, lrs):
    """(lowest working rate, highest, decades, best rate, best loss) per (head, width)."""
    out = {}
    for h, name in enumerate(HEADS):
        for w, d in enumerate(WIDTHS):
            row = F[h, w]
            ok = np.flatnonzero(row < THRESHOLD)
            b = int(np.argmin(row))
            out[name, d] = (lrs[ok[0]] if ok.size else None, lrs[ok[-1]] if ok.size else None,
                            0.5 * ok.size, lrs[b], row[b])
    return out


def test_the_chaotic_rate_is_the_unscaled_heads_best_at_64(page_grid):
    """"At learning rate 0.32, its best rate in the sweep below" (d_k = 64, SGD)."""
    best = windows(page_grid[0]["sgd"], GRID["sgd"])["unscaled", 64][3]
    assert g(PAGE, "tr_chaos_lr") == pytest.approx(best) == pytest.approx(10 ** -0.5)


def test_glued_summary_numbers_follow_from_the_glued_grid(page_grid):
    final, add = page_grid
    W = {opt: windows(final[opt], GRID[opt]) for opt in GRID}
    sgd = GRID["sgd"]
    first = int(np.argmin(np.abs(np.log10(sgd) - np.log10(3))))
    low = int(np.argmin(np.abs(np.log10(sgd) + 1)))
    assert g(PAGE, "tr_lr_first") == pytest.approx(sgd[first])
    assert sgd[first] == pytest.approx(10 ** 0.5)
    assert g(PAGE, "tr_lr_low") == pytest.approx(0.1)
    works = final["sgd"] < THRESHOLD
    for name, key in (("scaled", "sc"), ("unscaled", "un")):
        assert g(PAGE, f"tr_sgd_n_{key}_first") == works[HEADS.index(name), :, first].sum()
        assert g(PAGE, f"tr_sgd_n_{key}_low") == works[HEADS.index(name), :, low].sum()
    bracketed = all(W[o][n, d][0] is not None and W[o][n, d][0] > GRID[o][0]
                    and W[o][n, d][1] < GRID[o][-1] for o in GRID for n in HEADS for d in WIDTHS)
    assert g_bool(PAGE, "tr_bracketed") == bracketed
    assert add.shape == (len(ADD_LRS),) and np.isfinite(add).all()


# --- the claims, as predicates on a grid -------------------------------------------------------


def _settle(pred, verdicts):
    """A predicate of some runs' verdicts (True works, False fails, None unsettled): True or
    False if every value the unsettled runs may take gives that answer, None if they decide it."""
    verdicts = list(verdicts)
    free = [i for i, v in enumerate(verdicts) if v is None]
    answers = set()
    for bits in itertools.product((False, True), repeat=len(free)):
        for i, b in zip(free, bits):
            verdicts[i] = b
        answers.add(bool(pred(verdicts)))
        if len(answers) == 2:
            return None
    return answers.pop()


def _all(parts):
    """Three-valued "and": False if a part is False, None if a part is unsettled, else True."""
    parts = list(parts)
    return False if False in parts else None if None in parts else True


def claims(final, add, lo=None, hi=None):
    """Every statement the prose makes about the one-seed sweep; a dict name -> True, False or
    None (decided by runs that amplify rounding). ``lo``/``hi`` bound each run's final loss
    (``sweep_bounds``); without them every run is settled at its value (the page's grid)."""
    lo = lo or (final, add)
    hi = hi or (final, add)
    works = {o: np.where(hi[0][o] < THRESHOLD, True, np.where(lo[0][o] >= THRESHOLD, False, None))
             for o in GRID}
    sgd = GRID["sgd"]
    first = int(np.argmin(np.abs(np.log10(sgd) - np.log10(3))))
    low = int(np.argmin(np.abs(np.log10(sgd) + 1)))
    N = len(WIDTHS)
    rows = [(o, h, w) for o in GRID for h in range(len(HEADS)) for w in range(N)]
    c = {}
    # One column is an anecdote.
    c["unscaled fails at every width at the first edition's rate"] = _settle(
        lambda v: sum(v) == 0, works["sgd"][1, :, first])
    c["scaled works at all widths but at most one there"] = _settle(
        lambda v: sum(v) >= N - 1, works["sgd"][0, :, first])
    c["unscaled works at every width at rate 0.1"] = _settle(lambda v: all(v), works["sgd"][1, :, low])
    c["scaled works at no width at rate 0.1"] = _settle(lambda v: not any(v), works["sgd"][0, :, low])
    # rv18: "On this grid, ... the working rates form a window": no failing rate between two
    # working ones
    c["the working rates of every head and width are contiguous"] = _all(
        _settle(lambda v: np.all(np.diff(np.flatnonzero(v)) == 1), works[o][h, w]) for o, h, w in rows)
    # "every head's working rates, at every width, have failing rates on both sides": no working
    # rate counts as bracketed (as in the held-out check); that there is one, is the next claim
    c["every window has failing rates on both sides"] = _all(
        _settle(lambda v: not v[0] and not v[-1], works[o][h, w]) for o, h, w in rows)
    # the windows figure: "for each width d_k ... and each head, a vertical bar spans the working
    # learning rates"
    c["every head works at some rate at every width"] = _all(
        _settle(any, works[o][h, w]) for o, h, w in rows)
    # Additive at d_k = 256 under Adam.
    w = WIDTHS.index(ADD_DK)
    add_works = np.where(hi[1] < THRESHOLD, True, np.where(lo[1] >= THRESHOLD, False, None))
    c["additive works somewhere"] = _settle(any, add_works)
    c["no dot-product head works at the Adam rates the additive head skips"] = _settle(
        lambda v: not any(v), works["adam"][:, w, :ADD_SKIP].ravel())
    # The additive figure's alt text: its curve, "reaching lower than the unscaled curve's minimum".
    c["additive reaches lower than the unscaled curve's minimum"] = (
        True if hi[1].min() < lo[0]["adam"][1, w].min() else
        False if lo[1].min() >= hi[0]["adam"][1, w].min() else None)
    near = (1 - 1 / T_K) - 0.05, (1 - 1 / T_K) + 0.05
    c["additive near uniform at its smallest rate"] = (
        True if near[0] < lo[1][0] and hi[1][0] < near[1] else
        False if hi[1][0] <= near[0] or lo[1][0] >= near[1] else None)
    c["additive saturated-wrong at its largest rate"] = (
        True if lo[1][-1] > 1.5 else False if hi[1][-1] <= 1.5 else None)
    return c


def test_every_claim_holds_in_the_page_grid(page_grid):
    c = claims(*page_grid)
    failed = [k for k, ok in c.items() if ok is not True]
    assert not failed, failed


def test_the_prose_counts_match_the_words_around_them():
    """'works at 0 of the 4 widths' style sentences: the glued counts say what the words say."""
    assert g(PAGE, "tr_sgd_n_un_first") == 0
    assert g(PAGE, "tr_sgd_n_sc_first") >= g(PAGE, "tr_n_widths") - 1
    # "the verdict flips" at the low rate: the unscaled head works where the scaled one does
    # not. Its runs at d_k = 256 and 1024 there are chaotic (a 2**-22 nudge of W_Q's start
    # moves their final losses from 0.015 to 0.005 and from 0.031 to 0.029, against the
    # threshold 0.05), so on another CPU they may not work: the words say "works at {n}
    # widths", glued, and need only the flip.
    assert g(PAGE, "tr_sgd_n_un_low") > g(PAGE, "tr_sgd_n_sc_low") == 0
    assert g_bool(PAGE, "tr_bracketed")


# --- the sweep itself: rerun it, with the page's seed and with others -------------------------


def sweep(seed):
    """The page's sweep with the library's vectorised trainer: final losses and the runs."""
    from attention.training import RetrievalTask, train_retrieval_heads

    task = RetrievalTask(steps=STEPS)
    final, trained = {}, {}
    for opt, lrs in GRID.items():
        final[opt] = np.empty((len(HEADS), len(WIDTHS), len(lrs)))
        for w, d_k in enumerate(WIDTHS):
            runs = [(n, lr) for n in HEADS for lr in lrs]
            out = train_retrieval_heads(d_k, [lr for _, lr in runs],
                                        [SCALE[n](d_k) for n, _ in runs],
                                        optimizer=opt, task=task, seed=seed)
            final[opt][:, w] = out.losses[:, -20:].mean(axis=1).reshape(len(HEADS), -1)
            trained[opt, d_k] = out
    add = train_retrieval_heads(ADD_DK, list(ADD_LRS), score="additive",
                                optimizer="adam", task=task, seed=seed)
    return final, add.losses[:, -20:].mean(axis=1), trained


@pytest.fixture(scope="module")
def page_sweep():
    return sweep(0)


@pytest.mark.slow
def test_rerunning_the_page_sweep_gives_the_glued_grid_exactly(page_grid, page_sweep):
    final, add = page_grid
    again, again_add, _ = page_sweep
    for opt in GRID:
        np.testing.assert_allclose(again[opt], final[opt], rtol=1e-12)
    np.testing.assert_allclose(again_add, add, rtol=1e-12)


# A run amplifies rounding when a 2**-22 nudge of W_Q's start moves its final loss by more than
# NOT_CHAOTIC; its loss on another machine is then bounded only loosely: within a factor FAR of
# its two values here (the largest move across machines h20hw measured for such a run is a factor
# 9.5, which 10 only just covers: unscaled, Adam, d_k = 256, 10^-2.5, seed 1: 0.00458 in the
# held-out file's training loss, 0.00048 on an AVX-512 machine).
FAR = 10.0


def _nudged(monkeypatch, run):
    """run() with every run's starting W_Q multiplied by (1 + NUDGE z), z a fixed normal draw:
    a change the size of float32 rounding."""
    from attention import training

    initial = training._initial_params

    def nudged(*args, **kwargs):
        params = initial(*args, **kwargs)
        z = torch.randn(params["W_Q"].shape, generator=torch.Generator().manual_seed(99),
                        dtype=params["W_Q"].dtype)
        return {**params, "W_Q": params["W_Q"] * (1 + NUDGE * z)}

    monkeypatch.setattr(training, "_initial_params", nudged)
    out = run()
    monkeypatch.undo()
    return out


def _nudged_sweep(seed, monkeypatch):
    return _nudged(monkeypatch, lambda: sweep(seed))


def sweep_bounds(plain, moved):
    """(lo, hi), each (final, add): a steady run's loss is its value here, a run the nudge moves
    lies within FAR of its plain and nudged values."""
    def bounds(a, b):
        steady = np.abs(b - a) <= NOT_CHAOTIC * np.abs(a)
        return (np.where(steady, a, np.minimum(a, b) / FAR), np.where(steady, a, np.maximum(a, b) * FAR))

    (f, a), (g_, b) = plain, moved
    lo, hi = {}, {}
    for o in GRID:
        lo[o], hi[o] = bounds(f[o], g_[o])
    add_lo, add_hi = bounds(a, b)
    return (lo, add_lo), (hi, add_hi)


def _other_seed_verdicts(plain, moved):
    """The claims at another seed: a claim is False if the runs here that decide it are settled
    (steady, or beyond FAR of the threshold) and contradict it; None if an unsettled run decides it."""
    lo, hi = sweep_bounds(plain, moved)
    return claims(*plain, lo=lo, hi=hi)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_every_claim_holds_for_other_seeds(seed, monkeypatch):
    """The page states the one-seed claims for its seed ("In this seed"), and their generality
    from the held-out file; here each claim is checked at other seeds wherever the runs that
    decide it are steady on the running machine, or are beyond FAR of the threshold. At seeds 1
    and 2 on an AVX-512 machine 6 of the 12 claims are settled and hold; the other 6 (the
    unscaled head at 0.1, the three per-window claims, "reaches lower than the unscaled curve's
    minimum", the additive head's largest rate) are each decided by a run a nudge moves."""
    final, add, _ = sweep(seed)
    moved, moved_add, _ = _nudged_sweep(seed, monkeypatch)
    c = _other_seed_verdicts((final, add), (moved, moved_add))
    failed = [k for k, ok in c.items() if ok is False]
    assert not failed, f"seed {seed}: {failed}"
    # not vacuous: 6 of the 12 claims are settled at seeds 1 and 2 (AVX-512 machine)
    assert sum(ok is True for ok in c.values()) >= 5, c


def test_the_other_seeds_check_rejects_a_wrong_grid(page_grid):
    """The check above, on the page's grid with every run steady, and on wrong grids: a settled
    run that contradicts a claim fails it; the same run amplifying rounding leaves it open."""
    final, add = page_grid
    copy = lambda: ({o: final[o].copy() for o in GRID}, add.copy())
    assert all(ok is True for ok in _other_seed_verdicts((final, add), (final, add)).values())
    sgd = GRID["sgd"]
    first = int(np.argmin(np.abs(np.log10(sgd) - np.log10(3))))
    low = int(np.argmin(np.abs(np.log10(sgd) + 1)))
    w = WIDTHS.index(ADD_DK)
    C, W_, B = ("the working rates of every head and width are contiguous",
                "every window has failing rates on both sides", "additive works somewhere")
    wrongs = []  # (wrong grid, the claims it contradicts: a working rate off the window breaks it)
    F, A = copy(); F["sgd"][1, 2, first] = 0.01  # the unscaled head works at 3.2
    wrongs.append((F, A, {"unscaled fails at every width at the first edition's rate", C}))
    F, A = copy(); F["sgd"][0, :2, first] = 0.2  # the scaled head fails at two widths there
    wrongs.append((F, A, {"scaled works at all widths but at most one there", C}))
    F, A = copy(); F["sgd"][1, 3, low] = 0.06  # the unscaled head fails at 1024 at 0.1
    wrongs.append((F, A, {"unscaled works at every width at rate 0.1"}))
    F, A = copy(); F["sgd"][0, 0, low] = 0.04
    wrongs.append((F, A, {"scaled works at no width at rate 0.1"}))
    F, A = copy(); row = F["adam"][0, 1]; row[np.flatnonzero(row < THRESHOLD)[1]] = 0.5  # a hole
    wrongs.append((F, A, {C}))
    F, A = copy(); F["sgd"][0, 3, -1] = 0.01  # works at the largest rate
    wrongs.append((F, A, {W_, C}))
    F, A = copy(); F["adam"][1, 3] = np.maximum(F["adam"][1, 3], 0.06)  # no working rate
    wrongs.append((F, A, {"every head works at some rate at every width"}))
    F, A = copy(); A[:] = np.maximum(A, 0.06)
    wrongs.append((F, A, {B, "additive reaches lower than the unscaled curve's minimum"}))
    F, A = copy(); F["adam"][2, w, 0] = 0.04  # works at the grid's smallest rate
    wrongs.append((F, A, {"no dot-product head works at the Adam rates the additive head skips", W_, C}))
    F, A = copy(); F["adam"][1, w, np.argmin(F["adam"][1, w])] = A.min() / 2
    wrongs.append((F, A, {"additive reaches lower than the unscaled curve's minimum"}))
    F, A = copy(); A[0] = 0.5
    wrongs.append((F, A, {"additive near uniform at its smallest rate"}))
    F, A = copy(); A[-1] = 1.2
    wrongs.append((F, A, {"additive saturated-wrong at its largest rate"}))
    assert set().union(*(x[2] for x in wrongs)) == set(claims(final, add))  # each claim, rejected
    for F, A, names in wrongs:
        c = _other_seed_verdicts((F, A), (F, A))
        assert {k for k, ok in c.items() if ok is not True} == names, names
        assert all(c[k] is False for k in names), names
        M = ({o: F[o] * (1 + 1e-3) for o in GRID}, A * (1 + 1e-3))
        assert not any(_other_seed_verdicts((F, A), M)[k] is False for k in names), names


# --- what failed runs end with, and the learned patterns ----------------------------------


def test_failed_runs_held_out_as_the_prose_states_them(held):
    """"at the largest SGD rate of the one-seed grid, 3162, every head at every width from 16 to
    1024 puts its largest weight on a wrong key in at least 75% of the held-out rows, in every
    seed"; the runs one grid rate above their window (every seed, head, width and optimizer of
    the fixed design): how many, their wrong-key rates and their loss per wrong row."""
    fixed = [d for _, d in held["widths"]["fixed"]]
    e = np.log10(held["lr_grid"]["sgd"])
    i = int(np.flatnonzero(np.isclose(e, np.log10(GRID["sgd"][-1])))[0])
    E = held["fixed"]["sgd"]["wrong"][[fixed.index(d) for d in WIDTHS]][..., i]  # (w, seeds, heads)
    assert g(PAGE, "ho_fast_lr") == pytest.approx(GRID["sgd"][-1])
    assert g(PAGE, "tr_dk_min") == WIDTHS[0] and g(PAGE, "tr_dk_max") == WIDTHS[-1]
    assert g(PAGE, "ho_fast_wrong_min") == pytest.approx(E.min())
    assert E.min() > 0.5  # "ends on wrong keys" (most rows), every seed, head and width
    wrong, loss = [], []
    for opt, lrs in held["lr_grid"].items():
        L, Wr = held["fixed"][opt]["loss"], held["fixed"][opt]["wrong"]
        for w in range(L.shape[0]):
            for s_ in range(L.shape[1]):
                for h in range(L.shape[2]):
                    ok = [r for r in range(len(lrs)) if L[w, s_, h, r] < THRESHOLD]
                    if ok and max(ok) + 1 < len(lrs):
                        wrong.append(Wr[w, s_, h, max(ok) + 1])
                        loss.append(L[w, s_, h, max(ok) + 1])
                    else:  # no window (the unscaled head at 4096) or none above it
                        assert not ok, (opt, w, s_, h)
    wrong, loss = np.array(wrong), np.array(loss)
    assert g(PAGE, "ho_above_n") == len(wrong)
    assert (g(PAGE, "ho_above_wrong_lo"), g(PAGE, "ho_above_wrong_hi")) == pytest.approx((wrong.min(), wrong.max()))
    assert wrong.max() > 10 * wrong.min()  # "a wrong-key rate that varies widely"
    # rv35: "can fail while right on almost every row" is cut (those runs fail by their
    # wrong rows: a wrong row costs about 2, and 2.8% wrong rows is above the threshold)
    text = " ".join(SOURCE.split())
    assert "right on almost every row" not in text
    assert ("Just above its window a run fails, with a wrong-key rate that varies widely: over "
            "the {glue:text}`ho_above_n` runs one") in text
    # rv19: the loss-to-wrong-rate ratio is cut (a loss against a fraction)
    for name in ("ho_above_per_row_lo", "ho_above_per_row_hi"):
        assert name not in glued(PAGE) and name not in SOURCE, name
    assert "times the wrong-key rate" not in SOURCE
    # rv19: "Above its window a run ends its 200 steps with some rows on wrong keys": every run
    # at any rate above its window, every seed, head, width and optimizer of the fixed design
    for opt in held["lr_grid"]:
        L, Wr = held["fixed"][opt]["loss"], held["fixed"][opt]["wrong"]
        for w, s_, h in np.ndindex(L.shape[:3]):
            ok = np.flatnonzero(L[w, s_, h] < THRESHOLD)
            if ok.size:
                assert np.all(Wr[w, s_, h, ok[-1] + 1:] > 0), (opt, w, s_, h)
    assert ("Above its window a run ends its {glue:text}`tr_steps` steps with some rows on wrong "
            "keys: at") in " ".join(SOURCE.split())
    # rv27: the summary's "a run can fail with its largest weight wrong on as few as 2.8%"
    # followed from where the threshold sits, not from the runs: cut
    flat = " ".join(SOURCE.split())
    assert "a run can fail with its largest weight wrong on as few as" not in flat
    # rv24: rows wrong by their largest weight do not each cost 2 (cut), nor is a few per cent
    # of them said to be "enough" to fail
    assert "a few per cent of wrong rows" not in flat and "is enough to keep" not in flat


def test_one_wrong_row_costs_about_two_by_sampling():
    """"A row whose weight sits on one wrong key costs about 2 (two independent values)"."""
    rng = np.random.default_rng(1)
    V = rng.standard_normal((20000, 2, D_V))
    assert np.mean((V[:, 0] - V[:, 1]) ** 2) == pytest.approx(2, abs=0.03)


def test_the_task_never_penalises_sharpness_on_the_right_key_by_sampling():
    """rv18: "the task's optimum is one-hot ..., so the task never penalises sharpness on the
    right key": all the weight on the right key costs nothing, and moving any of it to the other
    keys, spread or sharp, costs more; on one wrong key a row costs about 2, uniform 1 - 1/T_k."""
    rng = np.random.default_rng(2)
    V = rng.standard_normal((20000, T_K, D_V))
    loss = lambda a: np.mean((np.einsum("t,btv->bv", a, V) - V[:, 0]) ** 2)  # key 0 is right
    one_hot = np.eye(T_K)[0]
    assert loss(one_hot) == 0
    for p_right in (0.99, 0.9, 0.5):
        spread = np.full(T_K, (1 - p_right) / (T_K - 1))
        spread[0] = p_right
        sharp = np.zeros(T_K)
        sharp[0], sharp[1] = p_right, 1 - p_right
        assert loss(spread) > 0 and loss(sharp) > loss(spread)
    assert loss(np.eye(T_K)[1]) == pytest.approx(2, abs=0.03)
    assert loss(np.full(T_K, 1 / T_K)) == pytest.approx(1 - 1 / T_K, abs=0.02)


def _pattern_rows(trained, name, when):
    """The figure's rows (the first 12 of the seed-1 batch of 128), float64 here."""
    gen = torch.Generator().manual_seed(1)
    X = torch.randn(N_EVAL, T_K, D_MODEL, generator=gen).double().numpy()[:N_SHOW]
    j = torch.randint(T_K, (N_EVAL,), generator=gen).numpy()[:N_SHOW]
    d_k = WIDTHS[-1]
    if when == "untrained":
        gen0 = torch.Generator().manual_seed(0)
        W_Q, W_K = ((torch.randn(D_MODEL, d_k, generator=gen0) / math.sqrt(D_MODEL)).double().numpy()
                    for _ in range(2))
    else:
        F = trained["final"]["sgd"][HEADS.index(name), -1]
        r = HEADS.index(name) * len(GRID["sgd"]) + int(np.argmin(F))
        W_Q, W_K = (trained["runs"]["sgd", d_k].params[k][r].double().numpy() for k in ("W_Q", "W_K"))
    A = _softmax(SCALE[name](d_k) * np.einsum("bk,btk->bt", X[np.arange(N_SHOW), j] @ W_Q, X @ W_K))
    return A, j


@pytest.mark.slow
def test_the_patterns_figure_shows_what_its_caption_says(page_sweep):
    """Caption and alt text: the untrained scaled head spreads its weight, the untrained unscaled
    head is nearly one-hot, on other keys in every row shown; after training both put their
    weight on the right key in every row shown."""
    final, _, runs = page_sweep
    trained = {"final": final, "runs": runs}
    A, j = _pattern_rows(trained, "scaled", "untrained")
    # "spreads its weight"; alt text: light grey over many keys in most rows
    assert A.max(axis=1).mean() < 0.3 and (A.max(axis=1) < 0.3).mean() > 0.5
    A, j = _pattern_rows(trained, "unscaled", "untrained")
    assert A.max(axis=1).mean() > 0.9 and np.all(A.argmax(axis=1) != j)
    for name in ("scaled", "unscaled"):
        A, j = _pattern_rows(trained, name, "trained")
        assert np.all(A.argmax(axis=1) == j) and np.all(A[np.arange(N_SHOW), j] > 0.9), name
    assert g_bool(PAGE, "tr_show_trained_all_right")


def test_the_untrained_heads_are_wrong_about_as_often_as_chance_held_out(held):
    """"before any training the largest weight is on a wrong key in 93.9% to 95.9% of the rows,
    for either head: a chance pick among 16 keys misses 93.8% of the time" (d_k = 1024, every
    seed's start, the held-out batch). A positive scale c does not move the argmax, so the
    scaled and unscaled heads agree; recomputed here in float64 NumPy."""
    from attention import sweep as held_sweep

    d_k, n = WIDTHS[-1], held["n_held_out"]
    gen = torch.Generator().manual_seed(held["held_out_seed"])
    X = torch.randn(n, T_K, D_MODEL, generator=gen).double().numpy()
    torch.randn(n, T_K, D_V, generator=gen)  # the values, drawn between
    j = torch.randint(T_K, (n,), generator=gen).numpy()
    wrong = []
    for seed in held["seeds"]:
        g0 = torch.Generator().manual_seed(seed)
        W_Q, W_K = ((torch.randn(D_MODEL, d_k, generator=g0) / math.sqrt(D_MODEL)).double().numpy()
                    for _ in range(2))
        S = np.einsum("bd,de,bte->bt", X[np.arange(n), j], W_Q @ W_K.T, X)
        wrong.append(np.mean(S.argmax(axis=1) != j))
    wrong = np.array(wrong)
    assert (g(PAGE, "ho_start_wrong_lo"), g(PAGE, "ho_start_wrong_hi")) == pytest.approx(
        (wrong.min(), wrong.max()), abs=2 / n)
    assert g(PAGE, "tr_chance_wrong") == pytest.approx(1 - 1 / T_K)
    # rv25: "about as often as a chance pick": within 3 points of it either way (over more
    # seeds some starts are below it, so "or a little more" is cut)
    assert np.all(np.abs(wrong - (1 - 1 / T_K)) < 0.03), wrong
    assert "or a little more" not in " ".join(SOURCE.split())
    assert held_sweep.N_HELD_OUT == n


@pytest.mark.slow
def test_additive_initial_score_spread_recomputed(page_sweep):

    gen = torch.Generator().manual_seed(0)
    W_Q = (torch.randn(D_MODEL, ADD_DK, generator=gen) / math.sqrt(D_MODEL)).double().numpy()
    W_K = (torch.randn(D_MODEL, ADD_DK, generator=gen) / math.sqrt(D_MODEL)).double().numpy()
    w = (torch.randn(ADD_DK, generator=gen) / math.sqrt(ADD_DK)).double().numpy()
    gen = torch.Generator().manual_seed(1)
    X = torch.randn(N_EVAL, T_K, D_MODEL, generator=gen).double().numpy()
    j = torch.randint(T_K, (N_EVAL,), generator=gen).numpy()
    q = X[np.arange(N_EVAL), j] @ W_Q
    S = np.tanh(q[:, None, :] + X @ W_K) @ w
    assert g(PAGE, "tr_add_init_sd") == pytest.approx(S.std(ddof=1), rel=1e-4)
    # rv19: "and would at any width" is cut (one draw of w: 0.74 at 16, 0.81 at 4096)
    assert "and would at any width" not in " ".join(SOURCE.split())


# --- the sweep over seeds, held out (the committed file) ----------------------------------

from attention import sweep as held_sweep  # noqa: E402

SOURCE = (__import__("pathlib").Path(__file__).parents[2] / "chapters" / "training.md").read_text()


@pytest.fixture(scope="module")
def held():
    return held_sweep.load_sweep()


def _held_windows(held):
    """(design, opt, head, d_k) -> per-seed works, lo, hi (log10), and the held-out loss and
    wrong rate at the rate with the lowest *training* loss; written independently of the
    page's cell."""
    out = {}
    for design, points in held["widths"].items():
        for opt, lrs in held["lr_grid"].items():
            e = np.log10(np.array(lrs))
            L, E = held[design][opt]["loss"], held[design][opt]["wrong"]
            T = held[design][opt]["train"]
            for w, (_, d_k) in enumerate(points):
                for h, name in enumerate(HEADS):
                    rows = []
                    for s_ in range(L.shape[1]):
                        ok = np.nonzero(L[w, s_, h] < THRESHOLD)[0]
                        b = int(np.argmin(T[w, s_, h]))
                        rows.append((ok.size > 0, e[ok].min() if ok.size else np.nan,
                                     e[ok].max() if ok.size else np.nan, L[w, s_, h, b],
                                     E[w, s_, h, b]))
                    out[design, opt, name, d_k] = {k: np.array(v) for k, v in zip(
                        ("works", "lo", "hi", "best", "wrong"), zip(*rows))}
    return out


def test_the_held_out_file_has_the_design_the_page_describes(held):
    assert len(held["seeds"]) == g(PAGE, "ho_n_seeds") >= 5
    assert held["n_held_out"] == g(PAGE, "ho_n_held") >= 8192
    assert held["widths"]["fixed"] == [[32, d] for d in (16, 64, 256, 1024, 4096)]
    assert held["widths"]["grown"] == [[d, d] for d in (16, 32, 64, 128, 256)]
    assert g(PAGE, "ho_seconds") == held["seconds"]
    assert g(PAGE, "ho_dk_max_fixed") == 4096 and g(PAGE, "ho_dk_max_grown") == 256
    np.testing.assert_allclose(held["lr_grid"]["adam"], GRID["adam"])
    assert held["lr_grid"]["sgd"][0] == pytest.approx(1e-3) and held["lr_grid"]["sgd"][-1] == pytest.approx(1e5)
    assert g(PAGE, "ho_lr_sgd_min") == pytest.approx(held["lr_grid"]["sgd"][0])
    assert g(PAGE, "ho_lr_sgd_max") == pytest.approx(held["lr_grid"]["sgd"][-1])
    W = _held_windows(held)
    # "so that every window is bracketed": no working rate at either end of the grid
    for key, x in W.items():
        lrs = np.log10(held["lr_grid"][key[1]])
        assert np.nanmin(x["lo"]) > lrs[0] and np.nanmax(x["hi"]) < lrs[-1], key
    assert (pathlib_size := __import__("os").path.getsize(held_sweep.DATA_PATH)) < 1_000_000, pathlib_size


# The file was written on one machine (`make sweep`) and is rerun on others (CI machines vary).
# A run that amplifies rounding reruns differently on another CPU (AVX-512 against the file's:
# up to 22% relative in these samples), so only the entries that a rounding-sized nudge of W_Q's
# start (NUDGE) moves by at most NOT_MOVED on this machine are compared, to FILE_RTOL: measured on an
# AVX-512 machine against the file, those entries (241 of the 396 these tests rerun, three stats)
# agree to 2.7e-6 relative (the file keeps 7 digits), the others by up to 22%.
NOT_MOVED = 1e-5
FILE_RTOL = 2e-5  # a run a nudge moves by 1e-5 can move about as much across machines


def _rerun_with_and_without_a_nudge(monkeypatch, point):
    plain = point()
    return plain, _nudged(monkeypatch, point)


def _assert_the_file_reruns(plain, moved, filed):
    for stat in ("train", "loss", "wrong"):
        again, file = np.asarray(plain[stat]), np.asarray(filed[stat])
        steady = np.abs(np.asarray(moved[stat]) - again) <= NOT_MOVED * np.abs(again) + 1e-12
        # not vacuous: here 3 of the additive head's 6 rates are steady, 16 to 32 of a point's
        # 24 or 51 runs
        assert steady.sum() >= max(3, steady.size // 3), (stat, "too few steady entries")
        np.testing.assert_allclose(again[steady], file[steady], rtol=FILE_RTOL, atol=1e-12,
                                   err_msg=stat)


@pytest.mark.parametrize("d_model, d_k, opt, seed", [(32, 16, "adam", 3), (16, 16, "sgd", 6),
                                                     (32, 64, "sgd", 1)])
def test_a_sample_of_the_held_out_file_reruns(held, monkeypatch, d_model, d_k, opt, seed):
    design = "fixed" if d_model == 32 and d_k != 32 else "grown"
    w = held["widths"][design].index([d_model, d_k])
    s_ = held["seeds"].index(seed)
    plain, moved = _rerun_with_and_without_a_nudge(
        monkeypatch, lambda: held_sweep.sweep_point(d_model, d_k, opt, seed))
    _assert_the_file_reruns(plain, moved, {k: v[w, s_] for k, v in held[design][opt].items()})


def test_held_out_scores_recomputed_with_a_plain_run_and_numpy():
    """One run, trained by the plain torch.optim loop and scored here in NumPy."""
    from attention.training import RetrievalTask, train_retrieval_head

    d_model = d_k = 16
    task = RetrievalTask(d_model=d_model)
    lr = held_sweep.LR_GRID["sgd"][6]  # 1.0: the scaled head's window, not chaotic
    gen = torch.Generator().manual_seed(0)
    # replay the plain run and keep its weights
    torch.manual_seed(0)
    from attention import training as tr

    params = {k: v.requires_grad_() for k, v in
              tr._initial_params(task, d_k, "dot", gen, torch.float32).items()}
    opt = torch.optim.SGD(list(params.values()), lr=lr)
    c = 1 / math.sqrt(d_k)
    for _ in range(task.steps):
        X, V, j = tr._batch(task, gen, torch.float32)
        q = X[torch.arange(task.batch), j] @ params["W_Q"]
        S = c * torch.einsum("bk,btk->bt", q, X @ params["W_K"])
        O = torch.einsum("bt,btv->bv", torch.softmax(S, -1), V)
        loss = ((O - V[torch.arange(task.batch), j]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    losses = train_retrieval_head(d_k, lr, c, task=task, seed=0)
    assert losses[-1] == pytest.approx(loss.item(), rel=1e-5)
    gen = torch.Generator().manual_seed(held_sweep.HELD_OUT_SEED)
    n = held_sweep.N_HELD_OUT
    X = torch.randn(n, task.T_k, d_model, generator=gen).double().numpy()
    V = torch.randn(n, task.T_k, task.d_v, generator=gen).double().numpy()
    j = torch.randint(task.T_k, (n,), generator=gen).numpy()
    WQ, WK = (params[k].detach().double().numpy() for k in ("W_Q", "W_K"))
    q = X[np.arange(n), j] @ WQ
    S = c * np.einsum("bk,btk->bt", q, X @ WK)
    A = _softmax(S)
    O = np.einsum("bt,btv->bv", A, V)
    ho_loss = np.mean((O - V[np.arange(n), j]) ** 2)
    ho_wrong = np.mean(A.argmax(axis=1) != j)
    data = held_sweep.load_sweep()
    w = data["widths"]["grown"].index([16, 16])
    assert data["grown"]["sgd"]["loss"][w, 0, 0, 6] == pytest.approx(ho_loss, rel=1e-3)
    assert data["grown"]["sgd"]["wrong"][w, 0, 0, 6] == pytest.approx(ho_wrong, abs=2 / n)


def test_held_out_glued_numbers_and_the_sentences_around_them(held):
    W = _held_windows(held)
    f = lambda o, n, d: W["fixed", o, n, d]
    gr = lambda o, n, d: W["grown", o, n, d]
    # "Every head works at some rate in every seed, with both optimizers, at every width of
    # the grown design and up to d_k = 1024 in the fixed one"
    # (the words on both machines' files: test_held_out_words_hold_on_both_files)
    assert g_bool(PAGE, "ho_all_work_fixed_256") and g_bool(PAGE, "ho_all_work_grown")
    assert g_bool(PAGE, "ho_others_work_fixed")
    # "At d_k = 4096, at the rate its seed's training loss picks, the unscaled head's held-out
    # loss is 0.042 to 0.075 with SGD and 0.029 to 0.077 with Adam, across the seeds: at the
    # threshold 0.05, on both sides of it" (within a factor 2 either side)
    for opt in GRID:
        x = f(opt, "unscaled", 4096)["best"]
        assert (g(PAGE, f"ho_top_un_{opt}_lo"), g(PAGE, f"ho_top_un_{opt}_hi")) == pytest.approx(
            (x.min(), x.max()))
        assert THRESHOLD / 2 < x.min() < THRESHOLD < x.max() < 2 * THRESHOLD, opt
    # "Its largest weight is on a wrong key in 1.5% to 4.0% of the held-out rows (over the
    # seeds and both optimizers); the scaled head's held-out loss there is 0.0003 to 0.0035,
    # wrong on 0.00% to 0.23% of the rows"
    both = lambda n, k: np.concatenate([f(o, n, 4096)[k] for o in GRID])
    for name, key, stem in (("unscaled", "wrong", "ho_top_un_wrong"), ("scaled", "best", "ho_top_sc"),
                            ("scaled", "wrong", "ho_top_sc_wrong")):
        x = both(name, key)
        assert (g(PAGE, f"{stem}_lo"), g(PAGE, f"{stem}_hi")) == pytest.approx((x.min(), x.max()))
    # the unscaled head is wrong far more often than the scaled one, far less than at its start
    assert both("unscaled", "wrong").min() > 5 * both("scaled", "wrong").max()
    assert both("unscaled", "wrong").max() < 0.1
    assert both("scaled", "best").max() < THRESHOLD / 10
    others = [f(o, n, 4096) for o in GRID for n in ("scaled", "1/d_k")]
    assert all(x["works"].all() for x in others) and g_bool(PAGE, "ho_top_others_all")
    # "over windows of at least 3 rates of the grid" (rates half a decade apart)
    n_rates = [int(round(d / 0.5)) + 1 for x in others for d in x["hi"] - x["lo"]]
    assert g(PAGE, "ho_top_others_min_n") == min(n_rates) >= 2
    # SGD: "the scaled head's lowest working rate is 0.32 at every width and seed"
    lows = np.array([f("sgd", "scaled", d)["lo"] for d in (16, 64, 256, 1024, 4096)])
    assert np.all(lows == lows.flat[0]) and g_bool(PAGE, "ho_sgd_sc_lo_const")
    assert g(PAGE, "ho_sgd_sc_lo_rate") == pytest.approx(10 ** lows.flat[0])
    # "but its highest climbs from d_k = 64 to 1024 in every seed"
    assert np.all(f("sgd", "scaled", 1024)["hi"] > f("sgd", "scaled", 64)["hi"])
    assert g_bool(PAGE, "ho_sgd_sc_hi_climbs")
    # rv18: the unscaled head's edges move with the budget (both of them): no sentence says
    # how they move with width, so none of the cut glues is left
    for name in ("ho_count_64_1024", "ho_sgd_un_hi_half", "ho_sgd_un_lo_half",
                 "ho_sgd_un_lo_rises", "ho_sgd_un_narrower", "ho_sgd_un_never_wider",
                 "ho_adam_un_narrows"):
        assert name not in glued(PAGE) and name not in SOURCE, name
    move = lambda o, n, e, d: f(o, n, d)[e] - f(o, n, 64)[e]
    # "The 1/d_k head's window moves up: from 64 to 4096 its lowest rate rises by 2 decades in
    # every seed, within a grid step of the count's 1.8" (its highest rises too: the table)
    rise = f("sgd", "1/d_k", 4096)["lo"] - f("sgd", "1/d_k", 64)["lo"]
    assert rise.min() == rise.max() == g(PAGE, "ho_sgd_dk_rise_lo") == g(PAGE, "ho_sgd_dk_rise_hi") > 0
    assert abs(rise.min() - math.log10(64)) < 0.5  # one grid step is half a decade
    assert np.all(move("sgd", "1/d_k", "hi", 4096) > 0)
    assert g(PAGE, "ho_count_64_top") == pytest.approx(math.log10(64))
    # Adam, 1/d_k: "lowest working rate 0.0032 at every width from 64 up, in every seed, and its
    # highest moves by at most half a decade"
    a = np.array([f("adam", "1/d_k", d)["lo"] for d in (64, 256, 1024, 4096)])
    assert np.all(a == a.flat[0]) and g_bool(PAGE, "ho_adam_dk_lo_const")
    assert g(PAGE, "ho_adam_dk_lo_rate") == pytest.approx(10 ** a.flat[0])
    hi = np.array([f("adam", "1/d_k", d)["hi"] for d in (64, 256, 1024, 4096)])
    assert hi.max() - hi.min() <= 0.5 + 1e-9 and g_bool(PAGE, "ho_adam_dk_hi_half")
    # Adam, scaled: "its lowest rate falls by 0.5 to 1 decades from 64 to 1024 (the count: 0.6
    # for the whole window), but its highest stays within half a decade at every width from 64
    # up, against the count's 0.9 from 64 to 4096"
    m = -move("adam", "scaled", "lo", 1024)
    assert (g(PAGE, "ho_adam_sc_lo_fall_lo"), g(PAGE, "ho_adam_sc_lo_fall_hi")) == (m.min(), m.max())
    assert m.min() > 0 and g(PAGE, "ho_count_sqrt_64_1024") == pytest.approx(math.log10(16) / 2)
    hi = np.array([f("adam", "scaled", d)["hi"] for d in (64, 256, 1024, 4096)])
    assert hi.max() - hi.min() <= 0.5 + 1e-9 and g_bool(PAGE, "ho_adam_sc_hi_half")
    # rv23: "and its highest by at most half a decade" (64 to 1024, every seed), no comparison
    # with a count below the grid's resolution; the summary: "the scaled head's window moves
    # down, by at most a decade from 64 to 1024"
    hi_move = move("adam", "scaled", "hi", 1024)
    assert np.all((hi_move <= 0) & (hi_move >= -0.5 - 1e-9)), hi_move
    assert m.max() <= 1.0 + 1e-9
    text = " ".join(SOURCE.split())
    assert "against the count's" not in text and "ho_count_sqrt_64_top" not in SOURCE
    # rv31: the summary's sentence on how the windows move with width is cut
    assert "the scaled head's window moves down" not in text
    # rv24: the summary's stricter-threshold parenthesis (a minimum over this grid) is cut
    assert "reaches it at neither size" not in text
    # rv24: the summary's ratio clause is replaced by the unscaled head's own loss
    assert "is larger at {glue:text}`ho_dk_max_grown` than at 64." not in text
    # "How well": rv25 leads with the wrong-key rates at the training-picked rates; rv27 cuts
    # the ratio at each head's best held-out rate (picked on the held-out batch, which the
    # page's protocol never does) in the body and the summary, and the summary quotes the
    # wrong-key rates instead
    assert ("steps, with SGD, each head at the rate its seed's training loss picks, the "
            "unscaled head puts its largest weight on a wrong key in") in text
    assert ("at $d_k = 1024$, with SGD, at the rates training picks, it puts its largest weight "
            "on a wrong key in {glue:text}`ho_sgd_un_wrong_1024_lo:.2%` to "
            "{glue:text}`ho_sgd_un_wrong_1024_hi:.2%` of the held-out rows, the scaled head in "
            "{glue:text}`ho_sgd_sc_wrong_1024_lo:.2%` to {glue:text}`ho_sgd_sc_wrong_1024_hi:.2%`, "
            "over the {glue:text}`ho_n_seeds` seeds.") in text
    for name in ("ho_sgd_ratio_1024_lo", "ho_sgd_ratio_1024_hi", "ho_adam_ratio_1024_lo",
                 "ho_adam_ratio_1024_hi", "ho_sgd_oracle_1024_lo", "ho_sgd_oracle_1024_hi",
                 "ho_adam_oracle_1024_lo", "ho_adam_oracle_1024_hi"):
        assert name not in glued(PAGE) and name not in SOURCE, name
    assert "best held-out rate" not in text
    un, sc = f("sgd", "unscaled", 1024)["wrong"], f("sgd", "scaled", 1024)["wrong"]
    assert un.min() > sc.max()  # "gets less far": every seed's unscaled head above every scaled
    # rv27: the count's ||x||^2 factor is constant only with d_model fixed; Adam's settings
    # rv33: the grown design's ||x||^2 parenthesis is cut (the factor acts only on the example
    # that made the step, never on a loss a run is scored on)
    assert ("which with $d_{\\text{model}}$ fixed does not depend on $d_k$. The SGD change") in text
    assert "(here with torch's defaults and a constant rate)" in text
    assert "training loss is a noisy pick, and at each head's best" not in text
    for opt in GRID:
        # rv36: "the unscaled head's held-out loss exceeds the scaled head's by more at 256 than
        # at 64, and the scaled head's loss is lower at 256 than at 64", at the rates training
        # picks, every seed, both optimizers (the ratio against 16, 32 and 64 is cut: it skipped
        # 128, where with Adam it beats 256 in 2 seeds, and its denominator is tiny)
        diff = {d: gr(opt, "unscaled", d)["best"] - gr(opt, "scaled", d)["best"] for d in (64, 256)}
        assert np.all(diff[256] > diff[64]), opt
        assert np.all(gr(opt, "scaled", 256)["best"] < gr(opt, "scaled", 64)["best"])
    assert g_bool(PAGE, "ho_grown_gap_wider") and g_bool(PAGE, "ho_grown_sc_falls")
    # rv25: "the ratio grows" (read as monotone) is cut; the precise comparison stays
    flat = " ".join(SOURCE.split())
    assert "the ratio grows" not in flat
    assert "the ratio of the unscaled head's held-out loss to the scaled head's" not in flat
    assert ("the unscaled head's held-out loss exceeds the scaled head's by more at "
            "{glue:text}`ho_dk_max_grown` than at 64") in flat
    # rv36: the additive bullet compares with the unscaled head (the Transformer paper's
    # comparison) and does not set additive above scaled on a few rows of one batch
    summary = flat[flat.index("## What we have"):]
    assert ("the unscaled dot product on {glue:text}`ho_add_un_wrong_lo` to "
            "{glue:text}`ho_add_un_wrong_hi`, the scaled one on at most "
            "{glue:text}`ho_add_sc_wrong_max`: a few rows of the {glue:text}`ho_n_held`.") in summary
    assert ("and the scaled head's loss is lower at {glue:text}`ho_dk_max_grown` than at "
            "64. At") in flat
    # the summary's grown-design ratio clause is cut (rv20 cut the unscaled head's own rise
    # from 64, its best width, so neither replaces it)
    summary = flat[flat.index("## What we have"):]
    assert "the gap after {glue:text}`tr_steps` steps is larger at" not in summary
    assert "held-out loss after {glue:text}`tr_steps` steps is higher at" not in flat
    text = " ".join(SOURCE.split())
    assert "the unscaled head's held-out loss after" not in text  # rv20: it starts at its best width
    x = f("sgd", "unscaled", 1024)["wrong"]
    assert (g(PAGE, "ho_sgd_un_wrong_1024_lo"), g(PAGE, "ho_sgd_un_wrong_1024_hi")) == pytest.approx((x.min(), x.max()))
    # rv24, the summary scoped as the body: "At d_k = 1024 the unscaled head starts saturated,
    # on keys wrong about as often as a chance pick, and after 200 SGD steps at the rate
    # training picks, most rows' largest weight is on the right key in all 8 seeds."
    assert np.all(x < 0.5) and g(PAGE, "tr_dk_max") == 1024
    assert g(PAGE, "tr_init_top_unscaled") > 0.9  # saturated, on the page's batch
    summary = " ".join(SOURCE[SOURCE.index("## What we have"):].split())
    assert ("At $d_k =$ {glue:text}`tr_dk_max` the unscaled head starts saturated, on keys "
            "wrong about as often as a chance pick, and after "
            "{glue:text}`tr_steps` SGD steps at the rate training picks, most rows' largest "
            "weight is on the right key in all {glue:text}`ho_n_seeds` seeds.") in summary
    assert "still learns which key should win" not in SOURCE
    y = f("sgd", "scaled", 1024)["wrong"]
    assert (g(PAGE, "ho_sgd_sc_wrong_1024_lo"), g(PAGE, "ho_sgd_sc_wrong_1024_hi")) == pytest.approx((y.min(), y.max()))
    x = gr("sgd", "unscaled", 256)["wrong"]
    assert (g(PAGE, "ho_grown_un_wrong_lo"), g(PAGE, "ho_grown_un_wrong_hi")) == pytest.approx((x.min(), x.max()))
    # "the scaled head on none of the 8192 rows in any seed"
    assert np.all(gr("sgd", "scaled", 256)["wrong"] == 0) and g_bool(PAGE, "ho_grown_sc_wrong_none")


def test_the_windows_table_is_the_held_out_edges_over_the_seeds(held):
    """Each cell of the list-table: log10 of the lowest or highest working rate, one value when
    every seed agrees, else 'min to max' (U+2212 minus signs), and the count's move."""
    W = _held_windows(held)
    cell = lambda x: (lambda a, b: a if a == b else f"{a} to {b}")(
        *(format(v, "+.1f").replace("-", "\u2212") for v in (np.nanmin(x), np.nanmax(x))))
    count = {"sgd": {"scaled": 0, "unscaled": -1, "1/d_k": 1},
             "adam": {"scaled": -0.5, "unscaled": -1, "1/d_k": 0}}  # powers of d_k
    key = {"scaled": "sc", "unscaled": "un", "1/d_k": "dk"}
    text = " ".join(SOURCE.split())
    for opt in GRID:
        for name in HEADS:
            stem = f"ho_t_{opt}_{key[name]}"
            # rv37: the unscaled rows carry the count's prediction too (the prose then says
            # that it fails there, and that its "if" fails at the start)
            want = cell(count[opt][name] * math.log10(16))
            assert g_text(PAGE, f"{stem}_count") == want
            assert f"{{glue:text}}`{stem}_count`" in text
            for e in ("lo", "hi"):
                for d in (64, 1024, 4096):
                    x = W["fixed", opt, name, d]
                    want = cell(x[e])
                    if not x["works"].all():  # rv25: no seed count, no edges
                        want = "at the threshold"
                    assert g_text(PAGE, f"{stem}_{e}{d}") == want, (stem, e, d)
                    assert f"{{glue:text}}`{stem}_{e}{d}`" in text
    # the caption's "the range over the seeds where they differ": some cells are ranges
    assert g_text(PAGE, "ho_t_sgd_un_lo64") == "\u22121.5 to \u22121.0"
    # rv25: at 4096 the unscaled head works in some seeds but not all (which ones is a
    # sample: rounding moves its loss), its picked held-out losses straddle the threshold,
    # and its four cells say "at the threshold" instead of a seed count; no other cell does
    for opt in GRID:
        x = W["fixed", opt, "unscaled", 4096]
        assert 0 < x["works"].sum() < len(held["seeds"]), opt
        assert x["best"].min() < THRESHOLD < x["best"].max(), opt
    at = [k for k in glued(PAGE) if k.startswith("ho_t_") and g_text(PAGE, k) == "at the threshold"]
    assert sorted(at) == sorted(f"ho_t_{o}_un_{e}{d}" for o in GRID for e in ("lo", "hi")
                               for d in (1024, 4096) if not W["fixed", o, "unscaled", d]["works"].all())
    assert not any("seeds)" in g_text(PAGE, k) for k in glued(PAGE) if k.startswith("ho_t_"))
    assert ("at {glue:text}`ho_dk_max_fixed` the unscaled head's held-out losses at the rates "
            "training picks straddle the threshold, see above, so its cells there give no "
            "edges)") in text
    assert "counted in the cell" not in text
    # rv18: the count's column says what it is, and where to compare it; rv25: the count is
    # first-order, so it predicts the lowest rate only, and for the unscaled rows only under
    # its "if"
    assert "  - predicted move of the lowest (decades), 64 to 1024\n" in SOURCE
    assert "  - count, 64 to 1024" not in SOURCE
    # rv37: every row carries the count's prediction; the "if" is checked (at the start)
    # just above the table
    assert "none for the unscaled rows" not in text
    assert ("and the move of the lowest rate from $d_k = 64$ to 1024 that the count "
            "predicts, in decades, to compare with the change from the lowest rate's 64 column "
            "to its 1024 column:") in text
    assert "is not checked for them" not in text  # rv32: it is checked for no head
    # rv33: the count is of the example that made the step, and for the fixed design only
    assert ("The count is of the loss on the example that made the step, and the runs never see "
            "an example twice: reading the lowest working rate off it assumes that a new "
            "example's loss falls in the same proportion, and that the whole run, its rate "
            "rescaled so, is the same run at every width; the count shows neither. It is a "
            "count for the fixed design only.") in text
    assert "in the grown design below, where $d_{\\text{model}}$ grows with $d_k$" not in text
    assert "each edge's change" not in text
    assert ("If the gradient reaching the scores did not change with the width, the lowest "
            "working rate (the slow end of the window) would then stay put for the scaled "
            "head, fall like $1/d_k$ for the unscaled one and grow like $d_k$ for the $1/d_k$ "
            "one. The count is of the loss on the example that made the step") in text
    assert ("It is of first order in the step, so it does not derive the highest working rate "
            "(the fast end).") in text
    assert "the working rates would then stay put" not in text
    assert "for the whole window" not in text


def test_one_column_gives_the_same_verdicts_in_every_seed_held_out(held):
    """"in each of the 8 seeds ..., at the same widths and scored on data no run trained on, the
    unscaled head works at none of them at 3.2 and the scaled head at 3 or more, and at 0.1 the
    unscaled head at all 4 and the scaled head at none"."""
    e = np.log10(held["lr_grid"]["sgd"])
    fixed = [d for _, d in held["widths"]["fixed"]]
    L = held["fixed"]["sgd"]["loss"][[fixed.index(d) for d in WIDTHS]]  # (w, seeds, heads, rates)
    n = lambda name, lr: (L[:, :, HEADS.index(name), int(np.flatnonzero(np.isclose(e, lr))[0])]
                          < THRESHOLD).sum(axis=0)  # widths that work, per seed
    assert np.all(n("unscaled", 0.5) == 0) and g_bool(PAGE, "ho_col_un_first_none")
    assert n("scaled", 0.5).min() == g(PAGE, "ho_col_sc_first_lo") >= 3
    assert np.all(n("unscaled", -1) >= 3) and g_bool(PAGE, "ho_col_un_low_256")
    assert np.all(n("scaled", -1) == 0) and g_bool(PAGE, "ho_col_sc_low_none")
    # rv31: "works" is the loss's verdict: at 0.1, at d_k = 256 and 1024, the scaled head is
    # wrong on fewer held-out rows than the unscaled head, in every seed
    wrong = held["fixed"]["sgd"]["wrong"]
    w_of = {d: i for i, (_, d) in enumerate(held["widths"]["fixed"])}
    i = int(np.argmin(np.abs(np.log10(held["lr_grid"]["sgd"]) + 1)))
    for d in (256, 1024):
        assert np.all(wrong[w_of[d], :, 0, i] < wrong[w_of[d], :, 1, i]), d
    assert g_bool(PAGE, "ho_col_low_sc_fewer_wrong")
    text = " ".join(SOURCE.split())
    # rv37: at d_k = 16 the reverse, in every seed; the "right but not yet sharp" clause is cut
    assert np.all(wrong[w_of[16], :, 0, i] > wrong[w_of[16], :, 1, i])
    assert g_bool(PAGE, "ho_col_low_16_reverse")
    assert "right but not yet sharp" not in text
    assert ("\"Works\" is the loss's verdict, not the wrong-key rate's: at "
            "{glue:text}`tr_lr_low:g`, at $d_k = 256$ and 1024, the scaled head's largest weight "
            "is on a wrong key in fewer held-out rows than the unscaled head's, in every seed, "
            "and at $d_k = 16$ in more, in every seed.") in text
    assert ("(though there, at $d_k = 256$ and 1024, the scaled head's largest weight is on a "
            "wrong key in fewer rows, at 16 in more)") in text
    assert "the ratio of their losses below" not in text  # rv37: the gap is a difference now
    assert math.log10(g(PAGE, "tr_lr_first")) == pytest.approx(0.5)
    assert len(held["seeds"]) == g(PAGE, "ho_n_seeds") and g(PAGE, "tr_n_widths") == len(WIDTHS)
    # rv27: "(within the sweep's 200 steps: that rate lies below the scaled head's window,
    # whose lowest rate is 0.32)": at 0.1 the scaled head fails at the slow end, every seed
    # and width: it works at some rate above 0.1 and at none at or below it
    sc = L[:, :, HEADS.index("scaled")] < THRESHOLD  # (w, seeds, rates)
    assert np.all(sc.any(-1)) and not sc[..., e <= -1 + 1e-9].any()
    assert g(PAGE, "ho_sgd_sc_lo_rate") > g(PAGE, "tr_lr_low")
    text = " ".join(SOURCE.split())
    assert ("the scaled head at none (within the sweep's {glue:text}`tr_steps` steps: that rate "
            "lies below the scaled head's window, whose lowest rate is "
            "{glue:text}`ho_sgd_sc_lo_rate:.2g`).") in text
    assert ("* One learning rate proves nothing about the scale: within {glue:text}`tr_steps` "
            "steps on this retrieval task, one column of the sweep says the unscaled head "
            "cannot get below the loss threshold, another (below the scaled head's window) "
            "that it gets below it where the scaled head does not") in text
    assert "it learns where the scaled head does not" not in text
    # rv28: the unscaled head's per-seed numbers are samples of rounding too (the stacked-run
    # check: its loss moves by tr_chaos_diff, the other heads' by tr_vec_diff_other at most)
    assert g(PAGE, "tr_chaos_diff") > 100 * g(PAGE, "tr_vec_diff_other")
    # rv32: the check ran the scaled and 1/d_k heads at one rate each (near the top of their
    # windows rounding moves them too): no sentence says only the unscaled head is noisy
    assert ("The numbers are samples of rounding too: the check of the stacked runs above shows "
            "float32 rounding alone moving the unscaled head's loss at its best rate, so its "
            "per-seed losses, wrong-key rates and counts of seeds below are samples that another "
            "stacking of its runs could move; that check ran each of the other two heads at one "
            "rate only, so it does not show theirs free of this either, at the other rates of "
            "their windows.") in text
    assert "moved far less" not in text
    assert ("(the check ran each head at one rate: it says nothing of any head's loss at other "
            "rates)") in text
    assert "in every seed at this threshold: the count's factor 1, to a grid step;" in text


def test_the_one_seed_grid_brackets_every_window_held_out_too(held):
    """"wide enough that every head's working rates, at every width, have failing rates on both
    sides": true of the one-seed grid's training losses (tr_bracketed) and, held out, in every
    seed at the page's widths."""
    fixed = [d for _, d in held["widths"]["fixed"]]
    for opt, grid in GRID.items():
        e = np.log10(held["lr_grid"][opt])
        inside = (e > np.log10(grid[0]) + 1e-9) & (e < np.log10(grid[-1]) - 1e-9)
        L = held["fixed"][opt]["loss"][[fixed.index(d) for d in WIDTHS]]
        assert not (L[..., ~inside] < THRESHOLD).any(), opt
        # (that every head works at some rate: held_out_words, up to 256, on both files)


def test_additive_head_held_out_over_seeds(held):
    """The additive paragraph, recomputed from the file: each head at its training-picked rate
    among the additive head's rates, every seed."""
    add = held["additive"]
    assert add["d_k"] == ADD_DK and np.allclose(add["lrs"], ADD_LRS)
    assert add["loss"].shape == (len(held["seeds"]), len(ADD_LRS)) and len(held["seeds"]) >= 5
    w = [d for _, d in held["widths"]["fixed"]].index(ADD_DK)
    D = held["fixed"]["adam"]
    s_ = np.arange(len(held["seeds"]))
    at = lambda L, T: L[s_, np.argmin(T, axis=1)]
    la, ea = at(add["loss"], add["train"]), at(add["wrong"], add["train"])
    ls = at(D["loss"][w, :, 0, ADD_SKIP:], D["train"][w, :, 0, ADD_SKIP:])
    lu = at(D["loss"][w, :, 1, ADD_SKIP:], D["train"][w, :, 1, ADD_SKIP:])
    assert la.shape == ls.shape == lu.shape
    # rv25: retrieval, not the loss: "the additive head puts its largest weight on a wrong key
    # in none of the 8192 rows in any seed, the scaled head on at most 3 and the unscaled head
    # on 26 to 57" (the loss ratios against the scaled head, sharpness on right rows, are cut)
    n_held = held["n_held_out"]
    rows = lambda L, T: np.rint(at(L, T) * n_held).astype(int)
    rs = rows(D["wrong"][w, :, 0, ADD_SKIP:], D["train"][w, :, 0, ADD_SKIP:])
    ru = rows(D["wrong"][w, :, 1, ADD_SKIP:], D["train"][w, :, 1, ADD_SKIP:])
    assert g(PAGE, "ho_add_sc_wrong_max") == rs.max() and 0 < rs.max() <= 5  # "a few"
    assert (g(PAGE, "ho_add_un_wrong_lo"), g(PAGE, "ho_add_un_wrong_hi")) == (ru.min(), ru.max())
    assert ru.min() > 5 * rs.max()
    # the unscaled head's held-out loss is mostly those wrong rows (about 2 each)
    assert np.all(2 * ru / n_held / lu > 0.8), 2 * ru / n_held / lu
    text = " ".join(SOURCE.split())
    for name in ("ho_add_ratio_sc_lo", "ho_add_ratio_sc_hi", "ho_add_ratio_un_lo",
                 "ho_add_ratio_un_hi", "ho_add_loss_lo", "ho_add_loss_hi"):
        assert name not in glued(PAGE) and name not in SOURCE, name
    for phrase in ("times below the *scaled* head's", "whose scale lives in the initialisation",
                   "beats the scaled"):
        assert phrase not in text, phrase
    assert ("Held out, at the rates training picks, the additive head puts its largest weight "
            "on a wrong key in none of the {glue:text}`ho_n_held` rows in any seed, the scaled "
            "head on at most {glue:text}`ho_add_sc_wrong_max` and the unscaled head on "
            "{glue:text}`ho_add_un_wrong_lo` to {glue:text}`ho_add_un_wrong_hi`.") in text
    summary = text[text.index("## What we have"):]
    assert ("* With $d_{\\text{model}} =$ {glue:text}`tr_d_model`, $d_k =$ {glue:text}`tr_add_dk`, "
            "Adam and {glue:text}`tr_steps` steps, at the rates training picks, additive "
            "attention puts its largest weight on a wrong key in none of the "
            "{glue:text}`ho_n_held` held-out rows in any seed, the unscaled dot product on "
            "{glue:text}`ho_add_un_wrong_lo` to") in summary
    assert np.all(ea == 0) and g_bool(PAGE, "ho_add_wrong_none")  # "none of the 8192 rows in any seed"
    n = {k: (L < THRESHOLD).sum(axis=1) for k, L in (
        ("add", add["loss"]), ("sc", D["loss"][w, :, 0, ADD_SKIP:]), ("un", D["loss"][w, :, 1, ADD_SKIP:]))}
    for k, v in n.items():
        assert (g(PAGE, f"ho_{k}_n_works_lo"), g(PAGE, f"ho_{k}_n_works_hi")) == (v.min(), v.max())
    assert n["add"].min() == n["add"].max()  # "at 2 of its 6 rates in every seed"
    assert n["add"].max() <= n["sc"].min() and n["add"].max() <= n["un"].min()  # "no wider than either"
    assert g(PAGE, "ho_add_n_lrs") == len(ADD_LRS)
    assert g(PAGE, "ho_add_seconds") == held["additive_seconds"] > 0
    # "at them, no dot-product head of this width works held out in any seed"
    assert np.all(D["loss"][w, :, :, :ADD_SKIP] >= THRESHOLD) and g_bool(PAGE, "tr_add_skip_none")


def test_a_sample_of_the_additive_entry_reruns(held, monkeypatch):
    plain, moved = _rerun_with_and_without_a_nudge(monkeypatch, lambda: held_sweep.additive_point(4))
    _assert_the_file_reruns(plain, moved, {k: held["additive"][k][4] for k in plain})


def test_the_statements_the_held_out_sweep_refutes_are_gone():
    for phrase in ("stays where it is", "the kind of transfer", "muP is built for",
                   "learned the same thing", "check each statement below", "the unscaled head's stays put",
                   "the mirror image of saturation",
                   # one seed's claims cut rather than rescued (issue 20: held out, over seeds)
                   "every head works at some learning rate at every width",
                   "ended saturated: its mean", "The unscaled head is never spread out",
                   "Both have learned to attend", "a head is never wider",
                   # rv18: the unscaled head's highest edge moves with the budget too
                   "narrows from above", "falls half a decade", "its window narrows in most",
                   "the window narrows in", "slide down whole",
                   # rv18: muP, sharpness, the Transformer's footnote, the softmax's gradient
                   "its code by $8/d$", "one learning rate for every weight",
                   "neither design applies muP", "which is about growing the whole model",
                   "the task never penalises sharpness;", "already points each row",
                   "is where the $1/\\sqrt{d_k}$ came from", "normal-sized gradient",
                   "the learning rates that work form a", "measures that with it",
                   "widens to the right as d_k grows", "reaches higher as d_k grows"):
        assert phrase not in " ".join(SOURCE.split()), phrase


def test_folding_the_scale_into_W_Q_is_a_larger_learning_rate_under_both_optimizers():
    """"its step acts like a learning rate d_k times larger for W_Q under SGD and sqrt(d_k)
    times larger under Adam": one step of each, from the same start, measured as the change
    of the effective query weight W_Q c (folded: the stored weight is already W_Q c)."""
    text = " ".join(SOURCE.split())
    assert "learning rate $d_k$ times larger for $W_Q$ under SGD and $\\sqrt{d_k}$ times larger under Adam" in text
    assert "once Adam takes its first step" not in text
    d_model, d_k, T, lr = 32, 64, 16, 1e-3
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(T, d_model, generator=gen)
    W_Q = torch.randn(d_model, d_k, generator=gen) / math.sqrt(d_model)
    W_K = torch.randn(d_model, d_k, generator=gen) / math.sqrt(d_model)
    V = torch.randn(T, 8, generator=gen)
    c = 1 / math.sqrt(d_k)

    def step(stored, mult, opt):
        P = stored.clone().requires_grad_()
        S = mult * (X @ P) @ (X @ W_K).T
        ((torch.softmax(S, -1) @ V - V) ** 2).mean().backward()
        o = (torch.optim.SGD if opt == "sgd" else torch.optim.Adam)([P], lr=lr)
        o.step()
        return P.detach() - stored  # change of the stored weight

    for opt, factor in (("sgd", d_k), ("adam", math.sqrt(d_k))):
        scaled = c * step(W_Q, c, opt)  # effective query weight c W_Q
        folded = step(c * W_Q, 1.0, opt)  # the stored weight is c W_Q
        ratio = (folded.norm() / scaled.norm()).item()
        assert ratio == pytest.approx(factor, rel=1e-3), opt


def test_round_one_phrases_are_gone_and_the_scope_is_stated():
    text = " ".join(SOURCE.split())
    for phrase in ("the first edition of this chapter", "beyond that it begins to",
                   "mostly no longer does", "so slightly optimistic", "more than ten times the scaled",
                   "the failure at the top of every window", 'ylabel="best final loss"',
                   "on one seed's training loss", "on at most {glue:text}`ho_grown_sc_wrong_rows`"):
        assert phrase not in text, phrase
    assert ("Whether a head \"works\" is a minimum over this grid of a noisy loss against a threshold, "
            "so it depends on both, and the verdict across widths does too: within") in text
    for phrase in ("mostly does not", "stops being true", "each time at a single rate",
                   "every head is still near its start"):
        assert phrase not in text, phrase
    # rv25: after "every head works ... up to 1024", 4096 is said as it is, not "sits at"
    assert "sits at the threshold" not in text
    assert ("From $d_k = 1024$ on the unscaled head is near the threshold, where rounding "
            "decides which seeds get below it (a recomputation on another CPU moves them); at "
            "$d_k =$ {glue:text}`ho_dk_max_fixed` it works in only some seeds within these {glue:text}`tr_steps` steps and on this half-decade grid of "
            "rates, its held-out losses at the rates training picks spanning the threshold.") in text
    assert "no dot-product head works" in text
    # the 200-step scope of every "learns less well" / "the gap widens" sentence
    assert "**How well, within {glue:text}`tr_steps` steps.**" in text
    assert "the gap after {glue:text}`tr_steps` steps is larger at" in text
    assert text.count("held-out loss after {glue:text}`tr_steps` steps is higher at") == 0  # rv20
    assert ("* Within {glue:text}`tr_steps` steps, the sweep's budget, the unscaled head gets less far "
            "than the scaled head at large widths") in text
    # the variance page's conditions for "makes no difference to training" under Adafactor
    assert ("with $W_Q$ its own parameter tensor, a negligible $\\epsilon_1$ and "
            "$\\operatorname{RMS}(W_Q)$ above the floor $\\epsilon_2$, folding the scale") in text
    assert "the scaled head on none of the {glue:text}`ho_n_held` rows in any seed" in text
    # rv18: the scopes, as the prose states them
    assert "the variance page measures that, with $W_Q$ its own parameter tensor," in text
    # rv19: the budget is a scope, not a claim: no cell runs another budget
    assert ("read against the count: these are the fixed design's windows after the sweep's "
            "{glue:text}`tr_steps` steps (this page measures no other budget)") in text
    for phrase in ("depends on the budget", "depend on the budget", "may only be slow",
                   "longer training letting", "shown to see the grid"):
        assert phrase not in text, phrase
    assert "The sweep below is one seed; read it only for the shape of the grid." in text
    assert "On this grid, for each head, width and optimizer, the working rates form a **window**" in text
    assert "never penalises sharpness on the right key" in text
    assert "a gradient of the usual order to its scores" in text
    assert "Beyond its windows above, this page measures no muP transfer" in text
    # the 1/d_k head's rates follow muP's rule for weights of fixed fan-in and growing fan-out
    assert ("muP's learning-rate rule is the count's for that head: an SGD rate that grows like "
            "the fan-out and a constant Adam rate") in text
    # the grown design widens the tokens too: said where it is defined, in the gap sentence
    # and in the summary
    assert "and the random tokens widen with it, so the task changes too" in text
    assert ("where $d_{\\text{model}}$ and the tokens widen with $d_k$ (so the task changes too), "
            "the gap after") in text
    assert "a change of $d_{\\text{model}}$ and $d_k$ together" in text
    # rv24: the summary's grown-design clause (the ratio, moved partly by its denominator)
    # is cut
    assert "the tokens grow with $d_k$ (a changed task)" not in text
    assert "that is why its section 3.2.1 divides the dot products by $\\sqrt{d_k}$" in text
    # rv19: the additive comparison confirms nothing of the paper's: capacity, scoped
    for phrase in ("as the Transformer paper reports", "the observation the Transformer paper cites",
                   "the comparison shows more than the scale", "is not a rescaled dot product"):
        assert phrase not in text, phrase
    # rv20: capacity does not explain it (the dot product can represent a far better head):
    # the page says it does not measure why
    assert "capacity, not the scale" not in text and "capacity grows with" not in text
    assert "This is one setting: $d_{\\text{model}} =$" in text
    assert ("(the fixed design), one optimizer and {glue:text}`tr_steps` steps.") in text
    # rv25: the summary's additive bullet is one scoped sentence with no "why" left to disown
    assert "why, and whether it does when the model is as wide as the head" not in text
    assert "differ by at most {glue:text}`tr_vec_diff:.2g`" in text


def test_the_one_seed_figures_alt_texts_describe_the_glued_grid(page_grid):
    """Alt texts of the heatmaps and the windows figure (one seed, training loss): with SGD the
    scaled head keeps its lowest rate and reaches higher; the unscaled head's band stays within
    the same few columns, widest at the second width; the 1/d_k head's climbs. With Adam the 1/d_k
    head's star is in the same column from the second width up, the other two stars stay put or
    move down. h20hw2: "the unscaled head's band/bar is as narrow/short at the largest width as
    at the smallest (one rate)" is cut: its ends at d_k = 16 and 1024 are runs that amplify
    rounding next to the threshold (one rate on the machine that glued the file, two at d_k = 16
    on an AVX-512 one)."""
    final, _ = page_grid
    W = {opt: windows(final[opt], GRID[opt]) for opt in GRID}
    step = lambda lr: int(round(2 * math.log10(lr)))  # grid index, half decades
    sc = [W["sgd"]["scaled", d] for d in WIDTHS]
    assert len({x[0] for x in sc}) == 1 and sc[-1][1] > sc[0][1]
    un = [W["sgd"]["unscaled", d] for d in WIDTHS]
    cols = [step(x[0]) for x in un] + [step(x[1]) for x in un]
    assert max(cols) - min(cols) <= 3  # a few columns
    dec = [x[2] for x in un]
    assert dec[1] == max(dec) and dec.count(max(dec)) == 1  # widest at 64
    dk = [W["sgd"]["1/d_k", d] for d in WIDTHS]
    assert all(b[0] >= a[0] and b[1] > a[1] for a, b in zip(dk, dk[1:]))
    # "shifts far to the right", "climbs steeply": both edges by 1.5 decades or more
    assert min(step(dk[-1][e]) - step(dk[0][e]) for e in (0, 1)) >= 3
    assert len({W["adam"]["1/d_k", d][3] for d in WIDTHS[1:]}) == 1
    for name in ("scaled", "unscaled"):
        best = [W["adam"][name, d][3] for d in WIDTHS]
        assert all(b <= a * (1 + 1e-9) for a, b in zip(best, best[1:])), name
    text = " ".join(SOURCE.split())
    # rv18: "reaches further right / higher at the largest width than at the smallest" (the band
    # is the same at the first widths: not "as d_k grows"); asserted above as sc[-1] > sc[0]
    assert "band of dots reaches further right at the largest width than at the smallest" in text
    assert "reaches higher at the largest width than at the smallest" in text
    assert "as narrow at the largest width as at the smallest" not in text  # h20hw2: cut
    assert "as short at the largest width as at the smallest" not in text
    assert "(one rate)" not in text
    assert "becomes the narrowest at the largest width" not in text
    assert "bar is the shortest at the largest width" not in text


def test_the_works_verdict_depends_on_the_threshold(held):
    """rv12: "at a threshold five times lower, 0.01, the unscaled head works at d_k = 1024 in
    0 of the 8 seeds with SGD and 0 with Adam, and at d_model = d_k = 256 in 0 and 0, while the
    scaled head works in every seed in both designs with both optimizers"."""
    strict = THRESHOLD / 5
    assert g(PAGE, "ho_strict") == pytest.approx(strict)

    def seeds_working(design, opt, name, d_k, limit):
        w = [k for _, k in held["widths"][design]].index(d_k)
        return int((held[design][opt]["loss"][w, :, HEADS.index(name)] < limit).any(axis=1).sum())

    grown = held["widths"]["grown"][-1][1]
    for name, design, opt, d_k in (("ho_strict_un_1024", "fixed", "sgd", 1024),
                                   ("ho_strict_un_1024_adam", "fixed", "adam", 1024),
                                   ("ho_strict_un_grown", "grown", "sgd", grown),
                                   ("ho_strict_un_grown_adam", "grown", "adam", grown)):
        n = seeds_working(design, opt, "unscaled", d_k, strict)
        assert g(PAGE, name) == n == 0, name  # "fails at both in every seed"
        assert seeds_working(design, opt, "scaled", d_k, strict) == len(held["seeds"])
    assert g_bool(PAGE, "ho_strict_scaled_all")
    flat = " ".join(SOURCE.split())
    # rv24: counts on this grid's rates; the widths named
    assert ("but at a threshold five times lower, {glue:text}`ho_strict:g`, and on this "
            "half-decade grid of rates, the unscaled head works at $d_k = 1024$ in") in flat
    assert ("while the scaled head works in every seed at $d_k = 1024$ (fixed) and "
            "{glue:text}`ho_dk_max_grown` (grown) with both optimizers,") in flat
    assert "at both of these widths" not in flat
    text = SOURCE
    assert "the scale does not decide *whether*" not in text
    assert "Far above its window" not in text and "Pushed far too hard" not in text


def test_the_count_makes_no_prediction_for_the_unscaled_head():
    """rv31: the count's "if" is not checked for the unscaled head, so the page no longer
    compares its window with the count (rv19's "Nor does the count predict ..." is cut with
    it). rv24: the parenthesis on the gradient reaching saturated scores stays cut."""
    text = " ".join(SOURCE.split())
    assert "Nor does the count predict" not in text
    assert "its scores saturate, so the gradient reaching them" not in text  # rv20: cut
    assert "need not hold" not in text  # rv24: cut


def test_a_step_moves_the_score_along_its_key_like_d_k_under_both_optimizers():
    """rv24, the count as the first-order change of the loss: with u = c sum_j g_j k_j the
    gradient of q, an SGD step on q lowers the loss by lr |u|^2 (on W_Q, times |x|^2), an
    Adam-like sign step by lr |u|_1 (on W_Q, times |x|_1); each coordinate of sum_j g_j k_j
    is (sum_j g_j x_j) times one column of W_K. The identities are checked at a c != 1; then
    one step on W_Q (c = 1, one example), the first-order change of the loss,
    -sum_j g_j ds_j, against d_k: 16 times larger at 1024 than at 64, not 4."""
    rng = np.random.default_rng(4)
    lr, n = 1e-3, 400
    for d_k, c in ((64, 1 / 8), (1024, 1 / 32), (256, 1.0), (64, 1 / 64)):
        x = rng.standard_normal(D_MODEL)  # the query token
        X = rng.standard_normal((T_K, D_MODEL))  # the tokens at the keys
        W_K = rng.standard_normal((D_MODEL, d_k)) / math.sqrt(D_MODEL)
        K = X @ W_K  # (T_k, d_k)
        g_ = rng.standard_normal(T_K)  # the gradient reaching the scores
        u = c * (K.T @ g_)  # the gradient of q, s = c q K^T
        # coordinate m of sum_j g_j k_j: (sum_j g_j x_j) . (column m of W_K)
        assert np.allclose(K.T @ g_, [(g_ @ X) @ W_K[:, m] for m in range(d_k)])
        for opt, dq, norm_u in (("sgd", -lr * u, u @ u),
                                ("adam", -lr * np.sign(u), np.abs(u).sum())):
            assert u @ dq == pytest.approx(-lr * norm_u, rel=1e-12), opt
        grad_W_Q = np.outer(x, u)
        for opt, step, factor in (
                ("sgd", -lr * grad_W_Q, (x @ x) * (u @ u)),
                ("adam", -lr * np.sign(grad_W_Q),
                 np.abs(x).sum() * np.abs(u).sum())):
            ds = c * (x @ step) @ K.T  # the scores' first-order change
            assert g_ @ ds == pytest.approx(-lr * factor, rel=1e-10), opt
    gain = {}
    for d_k in (64, 1024):
        out = {"sgd": [], "adam": []}
        for _ in range(n):
            x = rng.standard_normal(D_MODEL)  # the query token
            K = rng.standard_normal((T_K, D_MODEL)) @ (
                rng.standard_normal((D_MODEL, d_k)) / math.sqrt(D_MODEL))  # (T_k, d_k)
            g_ = rng.standard_normal(T_K)  # the gradient reaching the scores
            grad_W_Q = np.outer(x, K.T @ g_)  # s = (x W_Q) K^T
            for opt, step in (("sgd", -lr * grad_W_Q), ("adam", -lr * np.sign(grad_W_Q))):
                ds = (x @ step) @ K.T
                out[opt].append(-(g_ @ ds))
        gain[d_k] = {opt: np.mean(v) for opt, v in out.items()}
    for opt in ("sgd", "adam"):
        ratio = gain[1024][opt] / gain[64][opt]
        assert 12 < ratio < 20, (opt, ratio)  # d_k's 16, far from sqrt(d_k)'s 4
    text = " ".join(SOURCE.split())
    for sentence in (
            "the gradient of the query is $u = c \\sum_j g_j k_j$: it carries the factor $c$",
            "To first order, a step changes the loss by the gradient times the step.",
            "\\text{SGD: } \\Delta L &\\approx -\\eta\\,\\lVert u \\rVert^2 = "
            "-\\eta \\sum_{m=1}^{d_k} u_m^2, \\\\",
            "\\text{Adam: } \\Delta L &\\approx -\\eta\\,\\lVert u \\rVert_1 = "
            "-\\eta \\sum_{m=1}^{d_k} \\lvert u_m \\rvert .",
            "An SGD step on $W_Q$, whose gradient is $x_{j^\\ast}^\\top u$, changes the "
            "loss by the same times $\\lVert x_{j^\\ast} \\rVert^2$, which with "
            "$d_{\\text{model}}$ fixed does not depend on $d_k$",
            "The SGD change is a sum of $d_k$ squares.",
            "Coordinate $m$ of $\\sum_j g_j k_j$ is $\\sum_j g_j x_j$ times column $m$ of "
            "$W_K$, and with $d_{\\text{model}}$ fixed the size of that column does not "
            "depend on $d_k$. So no square's size depends on $d_k$, and their sum grows like "
            "$d_k$. Each square also carries $c^2$: the step carries one $c$, and the step "
            "reaches the loss through the score, where the query is multiplied by $c$ again.",
            "So, for a given gradient reaching the scores, a step lowers the loss by about "
            "the learning rate times $c^2 d_k$: a factor 1 for the scaled head at every "
            "width, $d_k$ for the unscaled head and $1/d_k$ for the $1/d_k$ head.",
            "On $q$ the loss then falls by the learning rate times $\\lVert u \\rVert_1$, as "
            "in {eq}`eq-training-first-order` (on $W_Q$, the same times "
            "$\\lVert x_{j^\\ast} \\rVert_1$), a sum of $d_k$ absolute values.",
            "Each is $c$ times a size that does not depend on $d_k$, so the count becomes "
            "$c\\,d_k$: $\\sqrt{d_k}$ for the scaled head, $d_k$ for the unscaled one, "
            "and 1 for the $1/d_k$ head."):
        assert sentence in text, sentence
    # rv24: the old reasons ("terms of one sign") are gone
    assert "terms of one sign" not in text and "the scores by about" not in text


def test_every_seed_means_the_files_seeds():
    """rv20: "in every seed" is a count over the file's seeds, said where the held-out sweep
    is described, and the summary names how many."""
    text = " ".join(SOURCE.split())
    assert ('Below, "in every seed" means in each of these {glue:text}`ho_n_seeds` seeds: a '
            "count over these samples, not a promise for another seed.") in text
    summary = text[text.index("## What we have"):]
    assert "in every seed" not in summary
    assert summary.count("in all {glue:text}`ho_n_seeds` seeds") == 4  # rv25: two cut
    assert summary.count("in any of the {glue:text}`ho_n_seeds` seeds") == 0
    assert "each training batch is fresh too, so the training loss is not overfit" in text


def test_the_unscaled_head_gets_no_prediction_and_the_moves_are_the_fixed_designs(held):
    """rv31: the count's "if" is not checked for the unscaled head, so neither the table nor
    the prose compares its edges with the count; the windows' moves with width are the fixed
    design's ("no rule for wider heads"): in the grown design the scaled head's lowest SGD
    rate falls from d_k = 64 to the widest, in every seed, where in the fixed one it stays."""
    text = " ".join(SOURCE.split())
    W = _held_windows(held)
    assert "moves less than the count says" not in text
    assert "The table makes no prediction for the unscaled head" not in text
    # rv37: the count's prediction for the unscaled head, against its per-seed moves
    assert ("For the unscaled head the count predicts a fall of "
            "{glue:text}`ho_count_un_fall:.1f` decades, with both optimizers; its lowest rate "
            "moves by {glue:text}`ho_sgd_un_lo_move_lo:+g` to "
            "{glue:text}`ho_sgd_un_lo_move_hi:+g` decades with SGD and "
            "{glue:text}`ho_adam_un_lo_move_lo:+g` to {glue:text}`ho_adam_un_lo_move_hi:+g` "
            "with Adam, per seed where it works at both widths: the count fails for this head, as its \"if\" does, and this "
            "page does not measure what sets its window.") in text
    assert g(PAGE, "ho_count_un_fall") == pytest.approx(math.log10(16))
    for opt in GRID:
        move = W["fixed", opt, "unscaled", 1024]["lo"] - W["fixed", opt, "unscaled", 64]["lo"]
        assert (g(PAGE, f"ho_{opt}_un_lo_move_lo"), g(PAGE, f"ho_{opt}_un_lo_move_hi")) == (
            pytest.approx(np.nanmin(move)), pytest.approx(np.nanmax(move)))
        # "the count fails": every seed's move (where it works at both) is at least two grid
        # steps short of -1.2
        assert np.nanmin(move) > -math.log10(16) + 0.5
    assert ("These moves belong to the fixed design, where a head wider than "
            "$d_{\\text{model}}$ changes how the same $W_Q W_K^\\top$ is parametrised and, for "
            "the unscaled and $1/d_k$ heads, the scores' initial scale; they are no rule for "
            "wider heads. In the grown design (the printed output above) "
            "the windows move otherwise: the scaled head's lowest SGD rate, for one, falls "
            "from $d_k = 64$ to {glue:text}`ho_dk_max_grown` in every seed. The count is not "
            "made for that design, and this page does not explain its moves.") in text
    # rv33: the grown design's fall is not the count's (its ||x||^2 acts only on the example
    # that made the step): no comparison with the count there
    assert "ho_count_grown_64_top" not in SOURCE and "ho_grown_sgd_sc_lo_fall`" not in SOURCE
    big = held["widths"]["grown"][-1][1]
    fall = W["grown", "sgd", "scaled", 64]["lo"] - W["grown", "sgd", "scaled", big]["lo"]
    assert np.all(fall > 0) and g_bool(PAGE, "ho_grown_sgd_sc_lo_falls")
    # rv33: the summary says the verdict depends on the threshold
    summary = text[text.index("## What we have"):]
    assert ("The verdict depends on the threshold: at {glue:text}`ho_strict:g`, within these "
            "{glue:text}`tr_steps` steps (the sweep runs no longer budget), the unscaled head "
            "works at $d_k = 1024$ in {glue:text}`ho_strict_un_1024` seeds with SGD and "
            "{glue:text}`ho_strict_un_1024_adam` with Adam, the scaled head in all of them.") in summary
    assert g_bool(PAGE, "ho_strict_scaled_all")
    assert g(PAGE, "ho_strict_un_1024") < g(PAGE, "ho_n_seeds")
    assert g(PAGE, "ho_strict_un_1024_adam") < g(PAGE, "ho_n_seeds")
    # rv32: "That it learns at all is what the saturation page's measurement allows" is cut
    # (in total the unscaled head gets more gradient than the scaled one, piled in few rows)
    assert "That it learns at all" not in text
    # rv35: the one-seed heatmaps' dots are a training-loss verdict: no reading of their width
    assert "widens or narrows" not in text
    assert ("The dots are this seed's verdict on its training loss; the held-out sweep below, "
            "over all its seeds, is the one to read for how the bands move with width.") in text
    # rv35: Bahdanau's additive score has no bias; the page says the bias is its own
    assert ("the **additive** score of {cite:t}`bahdanau2014neural`, "
            "$s_j = w \\cdot \\tanh(q\\,W_q + k_j W_k)$.") in text
    # rv36: whether Bahdanau's model had biases is not checked here: only how they write it
    assert ("Bahdanau et al. write their score without a bias; this head has one, $b$, and it is "
            "not decoration.") in text
    assert "not Bahdanau's" not in text
    summary = text[text.index("## What we have"):]
    assert ("works in only some seeds within these {glue:text}`tr_steps` steps and on this "
            "half-decade grid of rates") in summary
    assert ("in a saturated head most rows pass almost nothing, and what passes comes through "
            "its rare rows with a near-tie.") in text
    fixed = [W["fixed", "sgd", "scaled", d]["lo"] for d in (64, 1024, 4096)]
    assert all(np.array_equal(x, fixed[0]) for x in fixed)
    summary = text[text.index("## What we have"):]
    assert "how they move with width" not in summary and "stays put" not in summary
    # rv21: a statement about 200 steps, not about where the head ends up
    assert "learns less well" not in text and "fails at both" not in text
    assert "how far more steps would take it, the sweep does not measure" in text


def test_the_windows_table_is_this_grids():
    """rv24: the table's edges and seed counts are those of the half-decade grid (finer rates
    move them: the unscaled head's held-out loss is jagged in the rate); the nits: each
    token's query scores its own key highest; T5 cited beside Adafactor."""
    flat = " ".join(SOURCE.split())
    assert ("```{list-table} Working learning rates ($\\log_{10}$) on the sweep's half-decade "
            "grid, held out, over the seeds") in flat
    assert ("The edges in the table are those of this half-decade grid: the sweep tried no "
            "rate between its points, so they say nothing about such rates.") in flat
    for lrs in held_sweep.load_sweep()["lr_grid"].values():
        assert np.allclose(np.diff(np.log10(lrs)), 0.5)  # "half-decade"
    assert ("so that each token's query scores its own key highest, by a wide margin (the loss "
            "charges for any weight left on the other keys).") in flat
    assert "points along its own key" not in flat
    assert ("T5 itself trained with Adafactor "
            "{cite:p}`raffel2020exploring,shazeer2018adafactor`") in flat
    bib = (__import__("pathlib").Path(__file__).parents[2] / "references.bib").read_text()
    assert "@article{raffel2020exploring," in bib


def test_rv25_wording_says_only_what_the_cells_show():
    """rv25 nits: the stacked gradient is run r's own in exact arithmetic (not in float32: the
    check above shows rounding moving a chaotic run); one held-out batch per d_model; which
    seeds get below the threshold at 4096 is a sample, pointing to that check; the summary's
    climbing edge is scoped to 64 to 1024; the sweep's one-thread comment does not promise
    independence from the stack of runs."""
    text = " ".join(SOURCE.split())
    assert ("Run $r$'s weights affect only loss $r$, so in exact arithmetic the gradient of the "
            "sum with respect to them is run $r$'s own gradient;") in text
    assert "is exactly run $r$'s own gradient" not in text
    assert ("examples that no run trained on (one batch per $d_{\\text{model}}$):") in text
    assert "one fixed held-out batch" not in text
    assert ("on both sides of the threshold {glue:text}`tr_threshold:g`, so which seeds get "
            "below it is a sample too, of this half-decade grid's rates (the sweep tried none "
            "between them) and of rounding (rounding alone moves this head's loss, as the check "
            "of the stacked runs above shows at $d_k = 64$).") in text
    assert g(PAGE, "tr_chaos_diff") > 100 * g(PAGE, "tr_vec_diff")  # what that check shows
    summary = text[text.index("## What we have"):]
    assert "the scaled head's lowest rate stays put" not in summary  # rv31: cut
    sweep_src = (__import__("pathlib").Path(held_sweep.__file__)).read_text()
    assert "they do depend on which runs are stacked into the one call" in sweep_src


def test_the_counts_if_at_the_start_is_the_gradient_reaching_each_rows_scores(held):
    """rv37: the count's "if" (a gradient reaching the scores that does not change with the
    width), measured at the sweep's starting weights on 4096 fresh rows: the norm of
    dL_row/ds for each row, recomputed here in closed form (a (g - a.g) with g = dL/da),
    not by autograd, in float64 (the page forms W_Q W_K^T in float32) from the same draws."""
    text = " ".join(SOURCE.split())
    assert ("At the start, the scaled and $1/d_k$ heads' medians lie between "
            "{glue:text}`ho_if_others_lo:.2f` and {glue:text}`ho_if_others_hi:.2f` at every "
            "width and seed here: for them the \"if\" holds, at the start (this page does not "
            "measure it later in training). For the unscaled head, whose scores grow with the "
            "width, it fails: in every seed its median and its mean both fall from $d_k = 64$ "
            "to 1024 and again to 4096") in text
    n = 4096
    assert g(PAGE, "ho_if_rows") == n
    gen = torch.Generator().manual_seed(5)
    X = torch.randn(n, T_K, D_MODEL, generator=gen)
    V = torch.randn(n, T_K, D_V, generator=gen)
    j = torch.randint(T_K, (n,), generator=gen)
    x_q, v_t = X[torch.arange(n), j].double(), V[torch.arange(n), j].double()
    X, V = X.double(), V.double()
    stats = {}
    for d_k in (64, 1024, 4096):
        for seed in held["seeds"]:
            gen = torch.Generator().manual_seed(seed)
            W_Q = (torch.randn(D_MODEL, d_k, generator=gen) / math.sqrt(D_MODEL)).double()
            W_K = (torch.randn(D_MODEL, d_k, generator=gen) / math.sqrt(D_MODEL)).double()
            M = W_Q @ W_K.T  # (d_model, d_model): q . k_j = x_q M x_j, in float64
            raw = torch.einsum("bd,de,bte->bt", x_q, M, X)  # (n, T_k)
            for name in HEADS:
                a = torch.softmax(SCALE[name](d_k) * raw, dim=-1)
                o = (a[:, :, None] * V).sum(1)
                dA = (2 / D_V) * ((o - v_t)[:, None, :] * V).sum(-1)  # dL_row/da_j
                ds = a * (dA - (a * dA).sum(-1, keepdim=True))
                norm = ds.norm(dim=-1)
                stats.setdefault((name, d_k), []).append((norm.median().item(), norm.mean().item()))
    st = {k: np.array(v) for k, v in stats.items()}  # (seeds, 2)
    others = np.concatenate([st[nm, d][:, 0] for nm in ("scaled", "1/d_k") for d in (64, 1024, 4096)])
    assert g(PAGE, "ho_if_others_lo") == pytest.approx(others.min(), rel=1e-3)
    assert g(PAGE, "ho_if_others_hi") == pytest.approx(others.max(), rel=1e-3)
    assert others.max() < 1.5 * others.min()  # "the 'if' holds": within 50% at every width
    un = {d: st["unscaled", d] for d in (64, 1024, 4096)}
    for d in (64, 1024, 4096):
        # the medians at 4096 are ~1e-10: float32 rounding of the page's scores moves them
        assert g(PAGE, f"ho_if_un_med_{d}") == pytest.approx(un[d][:, 0].max(), rel=0.05)
        assert g(PAGE, f"ho_if_un_mean_{d}") == pytest.approx(un[d][:, 1].max(), rel=1e-2)
    assert np.all(un[1024] < un[64]) and np.all(un[4096] < un[1024])
    assert g_bool(PAGE, "ho_if_un_falls")
    # "the mean more slowly": per seed, the mean falls by less than the median
    assert np.all(un[4096][:, 1] / un[64][:, 1] > un[4096][:, 0] / un[64][:, 0])
    assert ("the median to at most {glue:text}`ho_if_un_med_1024:.1g` at 1024 and "
            "{glue:text}`ho_if_un_med_4096:.1g` at 4096 (at most "
            "{glue:text}`ho_if_un_med_64:.2f` at 64), the mean more slowly, to at most "
            "{glue:text}`ho_if_un_mean_4096:.2f` at 4096.") in text


# --- the held-out words on both machines' files --------------------------------------------

AVX512_PATH = held_sweep.DATA_PATH.with_name("training_sweep_avx512.json")


def held_out_words(sweep):
    """The held-out section's words that do not depend on which CPU computed the sweep (its
    inequalities, counts, "every" and "none"), as claim -> bool, for one loaded sweep."""
    W = _held_windows(sweep)
    f = lambda o, n, d: W["fixed", o, n, d]
    gr = lambda o, n, d: W["grown", o, n, d]
    fixed = [d for _, d in sweep["widths"]["fixed"]]
    grown = [d for _, d in sweep["widths"]["grown"]]
    e = np.log10(sweep["lr_grid"]["sgd"])
    i_low = int(np.argmin(np.abs(e + 1)))
    i_first = int(np.argmin(np.abs(e - 0.5)))
    L = sweep["fixed"]["sgd"]["loss"]
    c = {}
    c["every head works, grown design, every width"] = all(
        gr(o, n, d)["works"].all() for o in GRID for n in HEADS for d in grown)
    c["every head works, fixed design, up to 256"] = all(
        f(o, n, d)["works"].all() for o in GRID for n in HEADS for d in (16, 64, 256))
    c["scaled and 1/d_k work at every fixed width"] = all(
        f(o, n, d)["works"].all() for o in GRID for n in ("scaled", "1/d_k") for d in fixed)
    c["unscaled near the threshold at 1024: lowest loss within a factor 2 in some seed"] = all(
        (sweep["fixed"][o]["loss"][fixed.index(1024), :, 1].min(-1) > THRESHOLD / 2).any()
        for o in GRID)
    c["4096: the unscaled head's picked losses on both sides, within a factor 2"] = all(
        THRESHOLD / 2 < f(o, "unscaled", 4096)["best"].min() < THRESHOLD
        < f(o, "unscaled", 4096)["best"].max() < 2 * THRESHOLD for o in GRID)
    c["4096: the unscaled head works in some seeds, not all"] = all(
        0 < f(o, "unscaled", 4096)["works"].sum() < len(sweep["seeds"]) for o in GRID)
    w = [fixed.index(d) for d in WIDTHS]
    c["at 3.2 the unscaled head works at no width, every seed"] = not (
        L[w, :, 1, i_first] < THRESHOLD).any()
    c["at 3.2 the scaled head works at 3 or more widths, every seed"] = bool(
        ((L[w, :, 0, i_first] < THRESHOLD).sum(0) >= 3).all())
    c["at 0.1 the unscaled head works at every width up to 256, every seed"] = bool(
        (L[[fixed.index(d) for d in (16, 64, 256)], :, 1, i_low] < THRESHOLD).all())
    c["at 0.1 the scaled head works at no width"] = not (L[w, :, 0, i_low] < THRESHOLD).any()
    Wr = sweep["fixed"]["sgd"]["wrong"]
    c["at 0.1 the scaled head wrong on fewer rows at 256 and 1024, more at 16"] = bool(
        all(np.all(Wr[fixed.index(d), :, 0, i_low] < Wr[fixed.index(d), :, 1, i_low])
            for d in (256, 1024))
        and np.all(Wr[fixed.index(16), :, 0, i_low] > Wr[fixed.index(16), :, 1, i_low]))
    for opt, grid in GRID.items():
        ee = np.log10(sweep["lr_grid"][opt])
        inside = (ee > np.log10(grid[0]) + 1e-9) & (ee < np.log10(grid[-1]) - 1e-9)
        Lw = sweep["fixed"][opt]["loss"][w]
        c[f"the one-seed grid brackets every held-out window ({opt})"] = not (
            Lw[..., ~inside] < THRESHOLD).any()
    strict = THRESHOLD / 5
    for design, d in (("fixed", 1024), ("grown", grown[-1])):
        for o in GRID:
            Ls = sweep[design][o]["loss"][[k for _, k in sweep["widths"][design]].index(d)]
            c[f"at 0.01 the unscaled head works in no seed ({design}, {d}, {o})"] = not (
                Ls[:, 1] < strict).any()
            c[f"at 0.01 the scaled head works in every seed ({design}, {d}, {o})"] = bool(
                (Ls[:, 0] < strict).any(-1).all())
    for o in GRID:
        move = f(o, "unscaled", 1024)["lo"] - f(o, "unscaled", 64)["lo"]
        c[f"the count fails for the unscaled head where it works at both ({o})"] = bool(
            np.nanmin(move) > -math.log10(16) + 0.5)
    un, sc = f("sgd", "unscaled", 1024)["wrong"], f("sgd", "scaled", 1024)["wrong"]
    c["1024, SGD: every seed's unscaled head wrong more often than every scaled"] = un.min() > sc.max()
    c["1024, SGD: most rows right for the unscaled head in every seed"] = bool(np.all(un < 0.5))
    c["grown 256, SGD: the scaled head wrong on no row"] = bool(np.all(gr("sgd", "scaled", 256)["wrong"] == 0))
    c["the scaled head's lowest SGD rate is one rate at every fixed width and seed"] = bool(
        len({float(v) for d in fixed for v in f("sgd", "scaled", d)["lo"]}) == 1)
    return c


@pytest.mark.parametrize("path", [held_sweep.DATA_PATH, AVX512_PATH], ids=["main", "avx512"])
def test_held_out_words_hold_on_both_files(path):
    """The page's held-out words hold on the committed sweep and on the same sweep recomputed
    on an AVX-512 CPU (its glued values are the main file's only)."""
    words = held_out_words(held_sweep.load_sweep(path))
    assert [k for k, ok in words.items() if not ok] == []


def test_the_second_machines_file_and_the_count_of_verdicts_it_changes():
    """"changes 9 of the unscaled head's 32 verdicts at d_k = 1024 and 4096 (one per width,
    seed and optimizer: works or not)", recomputed from both files."""
    main, other = held_sweep.load_sweep(), held_sweep.load_sweep(AVX512_PATH)
    assert other["machine"]["torch_cpu_capability"] == "AVX512" and "machine" not in main
    fixed = [d for _, d in main["widths"]["fixed"]]
    w = [fixed.index(d) for d in (1024, 4096)]
    v = lambda s, o: (s["fixed"][o]["loss"][w, :, 1] < THRESHOLD).any(-1)
    differ = sum(int((v(main, o) != v(other, o)).sum()) for o in GRID)
    assert g(PAGE, "ho_cpu_differ") == differ > 0
    assert g(PAGE, "ho_cpu_cases") == 2 * len(GRID) * len(main["seeds"])
    assert ("changes {glue:text}`ho_cpu_differ` of the unscaled head's "
            "{glue:text}`ho_cpu_cases` verdicts at $d_k = 1024$ and") in " ".join(SOURCE.split())
