"""The training page's sweep over seeds, scored on held-out data.

Page "Does the scale matter for training?" (``chapters/training.md``, section "The sweep
over seeds") reads the file this module writes and explains it. The page's own in-page
sweep is one seed, scored on its training batches; this one repeats it for several seeds
and scores every run on one large fixed held-out batch, in two designs of width:

* ``"fixed"``: d_model = 32 and d_k from 16 to 4096, the page's design extended. Beyond
  d_k = d_model a wider head does not add capacity (W_Q W_K^T is a d_model x d_model
  matrix of rank at most d_model); it changes only the initial scale of the scores and the
  parametrisation.
* ``"grown"``: d_model = d_k from 16 to 256, as in a transformer, where a head is never
  wider than its input.

Every run is trained with :func:`attention.training.train_retrieval_heads` (the runs of
one width, optimizer and seed at once) and then scored on ``N_HELD_OUT`` fresh examples
(the same ones for every run of a d_model): its mean squared error there and the share of
rows whose largest weight is on a wrong key.

It also holds ``"additive"``: the page's additive head (d_model = 32, d_k =
``ADDITIVE_DK``, Adam at the rates ``ADDITIVE_LRS``) for every seed, scored the same way.

Run ``python -m attention.sweep OUT.json`` (``make sweep``) to recompute the file (it
prints how long that took and stores it as ``"seconds"``). ``python -m attention.sweep
--additive OUT.json`` recomputes only the additive entry of an existing file
(``"additive_seconds"``). Each records what computed it (:func:`machine`: the versions,
the CPU and torch's CPU capability) as ``"machine"`` (``"additive_machine"``).
:func:`sweep_point` and :func:`additive_point` recompute one entry, which is how the tests
check a sample of the file.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

from ._validate import check_choice, check_integer
from .forward import score_scale
from .measure import threads
from .training import RetrievalTask, train_retrieval_heads

__all__ = ["ADDITIVE_DK", "ADDITIVE_LRS", "DATA_PATH", "DESIGNS", "HEADS", "LR_GRID", "N_HELD_OUT", "SEEDS",
           "additive_point", "held_out_scores", "load_sweep", "machine", "scale",
           "sweep_point"]

SEEDS = tuple(range(8))
HEADS = ("scaled", "unscaled", "1/d_k")
LR_GRID = {
    "sgd": [float(10.0 ** e) for e in np.arange(-3.0, 5.1, 0.5)],
    "adam": [float(10.0 ** e) for e in np.arange(-4.0, -0.4, 0.5)],
}
DESIGNS = {
    "fixed": [(32, d_k) for d_k in (16, 64, 256, 1024, 4096)],
    "grown": [(d, d) for d in (16, 32, 64, 128, 256)],
}
ADDITIVE_DK = 256  # the page's additive head: one width, Adam from 1e-3 up
ADDITIVE_LRS = LR_GRID["adam"][2:]
N_HELD_OUT = 8192
HELD_OUT_SEED = 10_000
LAST = 20  # training steps averaged into a run's training loss, as on the page
DATA_PATH = Path(__file__).parent / "data" / "training_sweep.json"  # what the page reads


def scale(head: str, d_k: int) -> float:
    """The score scale c of a head: 1/sqrt(d_k), 1 or 1/d_k."""
    check_choice(head, "head", HEADS)
    if head == "scaled":
        return score_scale(d_k)
    return 1.0 if head == "unscaled" else 1 / check_integer(d_k, "d_k")


def _held_out(task: RetrievalTask, n: int = N_HELD_OUT):
    import torch

    gen = torch.Generator().manual_seed(HELD_OUT_SEED)
    X = torch.randn(n, task.T_k, task.d_model, generator=gen)  # (N, T_k, d_model)
    V = torch.randn(n, task.T_k, task.d_v, generator=gen)  # (N, T_k, d_v)
    j = torch.randint(task.T_k, (n,), generator=gen)  # (N,)
    return X, V, j


def held_out_scores(params: dict, cs, task: RetrievalTask, n: int = N_HELD_OUT):
    """Held-out loss and wrong-key rate of R stacked dot-product heads.

    ``params``: ``W_Q``, ``W_K`` of shape (R, d_model, d_k); ``cs``: R scales. Returns two
    float64 arrays (R,): the mean squared error on the held-out batch and the share of its
    rows whose largest weight is not on the query's own key.
    """
    import torch

    X, V, j = _held_out(task, check_integer(n, "n"))
    rows = torch.arange(n)
    c = torch.tensor([float(x) for x in cs], dtype=X.dtype)
    if params["W_Q"].shape[0] != c.shape[0]:
        raise ValueError("cs must hold one scale per stacked run")
    loss, wrong = [], []
    with torch.no_grad():
        for r in range(c.shape[0]):
            M = c[r] * params["W_Q"][r] @ params["W_K"][r].T  # (d_model, d_model)
            S = torch.einsum("bd,de,bte->bt", X[rows, j], M, X)  # (N, T_k)
            A = torch.softmax(S, dim=-1)
            O = torch.einsum("bt,btv->bv", A, V)
            loss.append(((O - V[rows, j]) ** 2).mean().item())
            wrong.append((A.argmax(dim=-1) != j).double().mean().item())
    return np.array(loss), np.array(wrong)


def additive_point(seed: int) -> dict:
    """The additive head at ``ADDITIVE_DK``, Adam, every rate of ``ADDITIVE_LRS``, scored.

    Returns float64 arrays (rates,): ``train``, ``loss`` and ``wrong`` as
    :func:`sweep_point`'s.
    """
    seed = check_integer(seed, "seed", minimum=0)
    # one thread: results do not depend on the core count (at chaotic rates
    # they do depend on which runs are stacked into the one call)
    with threads(1):
        return _additive_point(seed)


def _additive_point(seed: int) -> dict:
    import torch

    from .training import _scores

    task = RetrievalTask()
    out = train_retrieval_heads(ADDITIVE_DK, lrs=ADDITIVE_LRS, score="additive",
                                optimizer="adam", task=task, seed=seed)
    train = out.losses[:, -LAST:].mean(axis=1)
    X, V, j = _held_out(task)
    rows = torch.arange(N_HELD_OUT)
    loss, wrong = [], []
    with torch.no_grad():
        for r in range(len(ADDITIVE_LRS)):
            p = {k: v[r] for k, v in out.params.items()}
            A = torch.cat([torch.softmax(_scores(p, X[i:i + 1024], j[i:i + 1024], None,
                                                 "additive"), dim=-1)
                           for i in range(0, N_HELD_OUT, 1024)])
            O = torch.einsum("bt,btv->bv", A, V)
            loss.append(((O - V[rows, j]) ** 2).mean().item())
            wrong.append((A.argmax(dim=-1) != j).double().mean().item())
    return {"train": np.asarray(train, dtype=float), "loss": np.array(loss),
            "wrong": np.array(wrong)}


def _additive(data: dict) -> None:
    start = time.perf_counter()
    per_seed = [additive_point(s) for s in SEEDS]
    data["additive"] = {k: [[float(f"{x:.7g}") for x in p[k]] for p in per_seed]
                        for k in ("train", "loss", "wrong")}
    data["additive"].update(d_k=ADDITIVE_DK, lrs=ADDITIVE_LRS)
    data["additive_seconds"] = round(time.perf_counter() - start)


def sweep_point(d_model: int, d_k: int, optimizer: str, seed: int) -> dict:
    """Train every head at every rate of ``LR_GRID[optimizer]`` once; score them.

    Returns float64 arrays (heads, rates): ``train`` (mean training loss over the last
    ``LAST`` steps), ``loss`` and ``wrong`` (held out).
    """
    d_model, d_k = check_integer(d_model, "d_model"), check_integer(d_k, "d_k")
    check_choice(optimizer, "optimizer", tuple(LR_GRID))
    task = RetrievalTask(d_model=d_model)
    lrs = LR_GRID[optimizer]
    runs = [(h, lr) for h in HEADS for lr in lrs]
    cs = [scale(h, d_k) for h, _ in runs]
    # one thread: results do not depend on the core count (at chaotic rates
    # they do depend on which runs are stacked into the one call)
    with threads(1):
        out = train_retrieval_heads(d_k, lrs=[lr for _, lr in runs], cs=cs,
                                    optimizer=optimizer, task=task, seed=seed)
        loss, wrong = held_out_scores(out.params, cs, task)
    train = out.losses[:, -LAST:].mean(axis=1)
    shape = (len(HEADS), len(lrs))
    return {"train": train.reshape(shape), "loss": loss.reshape(shape),
            "wrong": wrong.reshape(shape)}


def machine() -> dict:
    """What computed a sweep: the versions and the CPU the training's float32 sums depend on.

    torch picks its kernels by the CPU's capability (AVX2, AVX-512, ...), and the order of
    a sum changes its last bits; a run started near its edge of stability can then end
    elsewhere. A file recomputed on another machine is compared with this record first.
    """
    import torch

    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f
                          if line.startswith("model name")), "")
    except OSError:
        pass
    return {"python": platform.python_version(), "numpy": np.__version__,
            "torch": torch.__version__, "machine": platform.machine(),
            "cpu": model or platform.processor(),
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "torch_config_sha256": hashlib.sha256(torch.__config__.show().encode()).hexdigest()}


def load_sweep(path=DATA_PATH) -> dict:
    """The file :func:`main` writes, with its arrays as NumPy arrays.

    ``data[design][optimizer][stat]`` has shape (widths, seeds, heads, rates), stat one of
    ``train``, ``loss``, ``wrong``; ``data["widths"][design]`` lists (d_model, d_k).
    ``data["additive"][stat]`` has shape (seeds, rates of ``data["additive"]["lrs"]``).
    """
    with open(path) as f:
        raw = json.load(f)
    for k in ("train", "loss", "wrong"):
        raw["additive"][k] = np.array(raw["additive"][k], dtype=float)
    for design in DESIGNS:
        for opt in LR_GRID:
            raw[design][opt] = {k: np.array(v, dtype=float)
                                for k, v in raw[design][opt].items()}
    return raw


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "--additive":  # only the additive entry
        with open(argv[1]) as f:
            data = json.load(f)
        _additive(data)
        data["additive_machine"] = machine()
        with open(argv[1], "w") as f:
            json.dump(data, f, separators=(",", ":"))
        print(f"updated {argv[1]} in {data['additive_seconds']} s")
        return 0
    if len(argv) != 1:
        print("usage: python -m attention.sweep [--additive] OUT.json",
              file=sys.stderr)
        return 2
    start = time.perf_counter()
    data = {"seeds": list(SEEDS), "heads": list(HEADS), "lr_grid": LR_GRID,
            "n_held_out": N_HELD_OUT, "held_out_seed": HELD_OUT_SEED, "last": LAST,
            "widths": {k: [list(p) for p in v] for k, v in DESIGNS.items()}}
    for design, points in DESIGNS.items():
        data[design] = {}
        for opt in LR_GRID:
            stats = {"train": [], "loss": [], "wrong": []}
            for d_model, d_k in points:
                per_seed = [sweep_point(d_model, d_k, opt, s) for s in SEEDS]
                for k in stats:
                    stats[k].append([[[float(f"{x:.7g}") for x in row]
                                      for row in p[k]] for p in per_seed])
                print(f"{design} {opt} d_model {d_model} d_k {d_k}: "
                      f"{time.perf_counter() - start:.0f} s", flush=True)
            data[design][opt] = stats
    data["seconds"] = round(time.perf_counter() - start)
    data["machine"] = machine()
    _additive(data)
    with open(argv[0], "w") as f:
        json.dump(data, f, separators=(",", ":"))
    print(f"wrote {argv[0]} in {data['seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
