"""The GitHub Pages workflow (.github/workflows/pages.yml) parses, builds with the README's
command and publishes what that command builds. It cannot run here (no GitHub); this is what
can be checked without running it."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "pages.yml"


def readme_build_command() -> str:
    """The first of the README's two commands (its first ```bash block), comment removed."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    first = next(line for line in block.splitlines() if line.strip())
    return first.split("#", 1)[0].strip()


def load() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def steps(workflow: dict) -> list[dict]:
    return [step for job in workflow["jobs"].values() for step in job["steps"]]


def test_workflow_parses_and_runs_on_pushes_to_main():
    workflow = load()
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "main" in triggers["push"]["branches"]
    assert workflow["permissions"]["contents"] == "write"


def test_workflow_builds_with_the_readme_command_and_publishes_its_output():
    command = readme_build_command()
    assert command == "make book"
    runs = [step for step in steps(load()) if "run" in step]
    assert any(command in step["run"].splitlines() for step in runs), f"no step runs `{command}`"
    # Every action is pinned to a version.
    for step in steps(load()):
        if "uses" in step:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+\.\d+\.\d+", step["uses"]), step["uses"]
    publish = [step for step in steps(load()) if "gh-pages" in step.get("uses", "")]
    assert len(publish) == 1 and publish[0]["with"]["publish_dir"] == "./_build/html"
    # What `make book` builds: the book and its PDF, in _build/html.
    # (make -n prints the commands without running them; the PDF's come from the nested make.)
    import subprocess

    dry = subprocess.run(["make", "-n", "book"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert re.search(r"-m tools\.notebooks --cache _build/\.jupyter_cache --workers \d+$", dry, re.M), dry
    assert re.search(r"/jupyter-book build --all -W -n --keep-going \.$", dry, re.M), dry
    assert re.search(r"_ext/book_pdf\.py --html _build/html --out _build/html/downloads/\S+\.pdf$", dry, re.M), dry


TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def make_book_pip_installs() -> list[str]:
    """The `pip install -r FILE` commands `make book` runs to set up .venv (make -n -B: printed,
    not run, even where .venv is up to date)."""
    import subprocess

    dry = subprocess.run(["make", "-n", "-B", "venv"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    book = subprocess.run(["make", "-n", "-B", "book"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout
    installs = [line for line in dry.splitlines() if re.search(r"-m pip install .*-r \S+", line)]
    assert installs and all(line in book.splitlines() for line in installs), (dry, book)
    return installs


def test_make_books_install_asks_pip_for_pytorchs_cpu_index():
    import shlex
    import subprocess

    installs = make_book_pip_installs()
    assert [re.search(r"-r (\S+)", line).group(1) for line in installs] == ["requirements.txt"]
    # pip itself reads the file (its own options included). --isolated: no pip configuration
    # of this machine (a mirror, a wheel folder) in what it reports; --dry-run in the installed
    # .venv: every pin is satisfied, nothing is fetched.
    command = [arg for arg in shlex.split(installs[0]) if arg not in {"--quiet", "-q"}]
    command += ["--dry-run", "--isolated", "--no-deps", "--retries", "0"]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    looking = re.search(r"^Looking in indexes: (.*)$", proc.stdout, re.M)
    assert looking, proc.stdout[:2000]
    assert TORCH_CPU_INDEX in [url.strip() for url in looking.group(1).split(",")], looking.group(0)
    # The environment make book made holds that index's torch: the CPU build.
    torch = re.search(r"^Requirement already satisfied: torch==(\S+) in .* \((\S+)\)$", proc.stdout, re.M)
    assert torch and torch.group(2) == torch.group(1) + "+cpu", torch and torch.group(0)


def test_the_cpu_index_is_written_once_and_binder_and_the_workflow_read_it_from_requirements():
    requirements = (ROOT / "requirements.txt").read_text().splitlines()
    assert f"--extra-index-url {TORCH_CPU_INDEX}" in requirements
    # Binder installs the book's requirements.txt, the Pages workflow runs make book.
    binder = [line for line in (ROOT / "binder" / "requirements.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    assert binder == ["-r ../requirements.txt"], binder
    assert any("make book" in step.get("run", "") for step in steps(load()))
    # No other place repeats it but site/archive/requirements.txt, which test_archive.py
    # checks against requirements.txt (so it cannot drift).
    elsewhere = [path for path in [WORKFLOW, ROOT / "binder" / "requirements.txt", ROOT / "Makefile",
                                   *sorted((ROOT / "_ext").glob("*.py"))]
                 if "download.pytorch.org" in path.read_text()]
    assert not elsewhere, elsewhere
    assert "PIP_EXTRA_INDEX_URL" not in WORKFLOW.read_text()
