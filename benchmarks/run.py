"""`make bench`: every benchmark of the book in one run, each figure beside its goal.

Prints the machine (cores, load, library versions, threads), then
  1. the build: clean and unchanged, and each page's execution time;
  2. the NumPy forward pass against torch's built-in and the machine's matmul rate;
  3. the tiled forward pass against the plain one (time and peak memory);
  4. the backward pass against autograd and against the forward pass;
  5. each page of the built site in headless Chromium (raw and gzipped bytes against the
     400 KB goal, time to first render),
     plus the widget benchmarks (benchmarks/bench_widgets.py) when that file exists,
     and the explorer pages on a phone-class CPU (benchmarks/bench_phone.py: 390 px, CPU
     throttled 4x; slider interaction latency and DOMContentLoaded against their goals);
and writes everything to benchmarks/results.json. A missed goal is printed as MISSED with
its measured figure; the exit status is 1 only when a benchmark could not run.

Options: --skip build,kernels,pages,widgets,phone  to leave sections out;
         --build-dir DIR  (default: a fresh temporary folder) where the book is built.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import ROOT, Goal, heading, load_average  # noqa: E402

SECTIONS = ("build", "kernels", "pages", "widgets", "phone")


def machine() -> dict:
    from common import library_versions

    info = library_versions()
    info["load_average_at_start"] = load_average()
    heading("Machine")
    torch_threads = info.get("torch_threads")
    print(f"  {info['processor']}, {info['cpu_count']} cores, Python {info['python']}")
    print(f"  numpy {info['numpy']} ({info.get('blas')} {info.get('blas_version')}, "
          f"{info.get('blas_threads')} BLAS threads, core {info.get('blas_core')}); "
          f"torch {info['torch']} ({torch_threads} threads)")
    print("  load average (1, 5, 15 min): %.2f %.2f %.2f" % info["load_average_at_start"]
          + ("   (other processes are running: times are slower than on an idle machine)"
             if info["load_average_at_start"][0] > 1.5 else ""))
    return info


def widgets(html: Path) -> dict:
    heading("5b. Widgets (benchmarks/bench_widgets.py)")
    path = HERE / "bench_widgets.py"
    if not path.exists():
        print("  benchmarks/bench_widgets.py does not exist yet: no widget figures in this run")
        return dict(available=False, goals=[])
    spec = importlib.util.spec_from_file_location("bench_widgets", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.run(html)
    goals = []
    weight, redraw = result.get("weight_goal_bytes"), result.get("redraw_goal_ms")
    for name, r in result.get("widgets", {}).items():
        print(f"  {name}: widget bytes {r.get('bytes_widget', float('nan')):,}, redraw median "
              f"{r.get('redraw_ms_median', float('nan')):.2f} ms (p95 {r.get('redraw_ms_p95', float('nan')):.2f} ms); "
              f"kernel interact+matplotlib redraw median {r.get('kernel_redraw_ms_median', float('nan')):.0f} ms")
        if weight is not None and "bytes_widget" in r:
            goals.append(Goal(f"{name}: bytes the widget adds", r["bytes_widget"], weight, "<=", " B"))
        if redraw is not None and "redraw_ms_median" in r:
            goals.append(Goal(f"{name}: browser redraw median", r["redraw_ms_median"], redraw, "<=", " ms",
                              detail=f"(vs {r.get('kernel_redraw_ms_median', float('nan')):.0f} ms with a kernel)"))
    return dict(available=True, result=result, goals=goals)


def phone(html: Path) -> dict:
    import bench_phone

    heading(f"5c. Explorers on a phone-class CPU (benchmarks/bench_phone.py: "
            f"{bench_phone.VIEWPORT['width']} px, CPU {bench_phone.CPU_THROTTLE}x slower)")
    result = bench_phone.run(html)
    return dict(result=result, goals=bench_phone.report(result))


def _jsonable(value):
    if isinstance(value, Goal):
        return value.record()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _jsonable(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item"):  # NumPy scalars
        return value.item()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip", default="", help="comma-separated sections to skip: " + ",".join(SECTIONS))
    parser.add_argument("--build-dir", type=Path, default=None)
    parser.add_argument("--html", type=Path, default=None,
                        help="a built site for the page benchmark when the build is skipped "
                             "(default: the one this run builds, else _build/html)")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS and torch threads for sections 2-4 (default 1: both libraries "
                             "on one core, which a busy machine does not distort; 0 = as "
                             "configured, normally one per core)")
    parser.add_argument("--output", type=Path, default=HERE / "results.json")
    args = parser.parse_args(argv)
    skip = {s for s in args.skip.split(",") if s}
    if skip - set(SECTIONS):
        parser.error(f"unknown sections: {sorted(skip - set(SECTIONS))}")

    start = time.perf_counter()
    results = dict(machine=machine(), sections={}, errors={})
    tmp = None
    build_dir = args.build_dir
    if build_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="bench-build-")
        build_dir = Path(tmp.name) / "book"
    html = args.html.resolve() if args.html else None  # the benchmarks read it from other folders

    def section(name, fn):
        try:
            results["sections"][name] = fn()
        except Exception as exc:  # report and go on: one broken benchmark must not hide the rest
            traceback.print_exc()
            print(f"  !! {name} could not run: {exc!r}")
            results["errors"][name] = repr(exc)

    try:
        if "build" not in skip:
            import bench_build
            section("build", lambda: bench_build.run(build_dir))
            if "build" in results["sections"] and html is None:
                html = Path(results["sections"]["build"]["html"])
        if "kernels" not in skip:
            import bench_kernels
            from attention.measure import threads
            from common import library_versions

            with threads(args.threads or None):
                info = library_versions()
                print(f"\n  sections 2-4 run with {info.get('blas_threads')} BLAS thread(s) and "
                      f"{info.get('torch_threads')} torch thread(s) (--threads; with other processes "
                      "on the cores, threads that wait for each other make small BLAS calls 10-100x slower)")
                results["kernel_threads"] = dict(blas=info.get("blas_threads"), torch=info.get("torch_threads"))
                section("forward", bench_kernels.forward_vs_torch)
                section("tiled", bench_kernels.tiled_vs_plain)
                section("backward", bench_kernels.backward)
        if "pages" not in skip:
            import bench_pages
            section("pages", lambda: bench_pages.run(html or ROOT / "_build" / "html"))
        if "widgets" not in skip:
            section("widgets", lambda: widgets(html or ROOT / "_build" / "html"))
        if "phone" not in skip:
            section("phone", lambda: phone(html or ROOT / "_build" / "html"))
    finally:
        if tmp is not None:
            tmp.cleanup()

    total = time.perf_counter() - start
    goals = [g for s in results["sections"].values() for g in s.get("goals", [])]
    heading("Goals")
    for g in goals:
        print(g.line())
    missed = [g for g in goals if not g.met]
    print(f"\n  {len(goals) - len(missed)} of {len(goals)} goals met; "
          f"{len(results['errors'])} benchmark(s) could not run"
          + (f": {', '.join(results['errors'])}" if results["errors"] else ""))
    results["load_average_at_end"] = load_average()
    results["total_seconds"] = total
    print("  load average at the end (1, 5, 15 min): %.2f %.2f %.2f" % results["load_average_at_end"])
    print(f"  benchmarks took {total:.0f} s; results in {args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output}")
    args.output.write_text(json.dumps(_jsonable(results), indent=1) + "\n")
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
