"""The CI recipe the README points to runs as pasted: the README links docs/ci.md, whose GitHub Actions job's step
commands are parsed and run on a repository made here with two commits of a model file (so the test fails when the
recipe drifts from what works, or the README stops leading to it)."""
from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

BLOCKS = '''"""Blocks of the model: a sibling module, imported as the model's own folder makes it importable."""
from torch import nn


def block(channels):
    return nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU())
'''
NET = '''import torch
from torch import nn

from blocks import block


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = block(4)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        y = self.body(x).mean(dim=(2, 3))
        return self.head(y)


def build_model():
    return Net()


def example_inputs():
    return (torch.randn(1, 4, 8, 8),)
'''


def recipe_page() -> Path:
    """The page the README's CI paragraph links to (docs/ci.md), followed from README.md."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[\w.-]+\.md)\)", readme[readme.index("In CI,"):])
    assert links, "the README's CI paragraph links no page under docs/"
    page = ROOT / links[0]
    assert page.is_file() and "### A GitHub Actions job" in page.read_text(encoding="utf-8")
    return page


def github_steps(readme: str) -> dict[str, str]:
    """The `run:` script of each named step of the README's GitHub Actions job, by step name."""
    section = readme[readme.index("### A GitHub Actions job"):]
    block = section[section.index("```yaml") + len("```yaml"):]
    block = block[:block.index("```")]
    steps: dict[str, str] = {}
    name = None
    lines = block.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"\s*- name: (.+)", line)
        if m:
            name = m.group(1).strip()
        m = re.match(r"(\s*)run: (.*)", line)
        if m and name is not None:
            if m.group(2).strip() == "|":
                indent, script = None, []
                i += 1
                while i < len(lines) and (not lines[i].strip() or indent is None
                                          or lines[i].startswith(" " * indent)):
                    if indent is None:
                        indent = len(lines[i]) - len(lines[i].lstrip())
                    script.append(lines[i][indent:])
                    i += 1
                steps[name] = "\n".join(script).strip() + "\n"
                name = None
                continue
            steps[name] = m.group(2).strip() + "\n"
            name = None
        i += 1
    return steps


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repository(tmp_path, monkeypatch):
    """origin (bare) with main = the model; work = a clone on a pull-request branch that adds a GELU."""
    for key, value in (("GIT_AUTHOR_NAME", "t"), ("GIT_AUTHOR_EMAIL", "t@t"), ("GIT_COMMITTER_NAME", "t"),
                       ("GIT_COMMITTER_EMAIL", "t@t")):
        monkeypatch.setenv(key, value)
    seed = tmp_path / "seed"
    (seed / "models").mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=seed)
    (seed / "models" / "blocks.py").write_text(BLOCKS)
    (seed / "models" / "net.py").write_text(NET)
    git("add", ".", cwd=seed)
    git("commit", "-q", "-m", "model", cwd=seed)
    git("clone", "-q", "--bare", str(seed), str(tmp_path / "origin.git"), cwd=tmp_path)
    work = tmp_path / "work"
    git("clone", "-q", f"file://{tmp_path / 'origin.git'}", str(work), cwd=tmp_path)
    git("checkout", "-q", "-b", "pr", cwd=work)
    (work / "models" / "net.py").write_text(NET.replace("head(y)", "head(nn.functional.gelu(y))"))
    git("commit", "-q", "-am", "a GELU before the head", cwd=work)
    return work


def test_the_github_actions_recipe_runs_as_pasted(repository, tmp_path):
    steps = github_steps(recipe_page().read_text(encoding="utf-8"))
    run = [name for name, script in steps.items() if "opassess" in script and "pip install" not in script]
    assert run == ["Baseline from the target branch", "Gate new custom operators", "Comment for the pull request"]
    bin_dir = tmp_path / "bin"  # `opassess` on PATH: this checkout's package under the test's interpreter
    bin_dir.mkdir()
    launcher = bin_dir / "opassess"
    launcher.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m opassess "$@"\n')
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    runner_temp = tmp_path / "runner"
    runner_temp.mkdir()
    summary = tmp_path / "summary.md"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "GITHUB_BASE_REF": "main",
           "GITHUB_WORKSPACE": str(repository), "RUNNER_TEMP": str(runner_temp), "GITHUB_STEP_SUMMARY": str(summary)}
    env.pop("PYTHONPATH", None)
    for name in run:
        done = subprocess.run(["bash", "-e", "-c", steps[name]], cwd=repository, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, f"{name}:\n{done.stdout}\n{done.stderr}"
    assert (runner_temp / "base" / "models" / "net.py").read_text() == NET  # the base, in place
    comment = (repository / "comment.md").read_text()
    assert "another model" not in comment
    assert "torch.nn.functional.gelu" in comment and "1 added" in comment
    assert (repository / "opassess.sarif").exists() and "opassess" in summary.read_text()
