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
    assert re.search(r"_ext/book_build\.py --jobs \d+ build --all -W -n --keep-going \.$", dry, re.M), dry
    assert re.search(r"_ext/book_pdf\.py --html _build/html --out _build/html/downloads/\S+\.pdf$", dry, re.M), dry
