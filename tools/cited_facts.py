"""Check the curated facts taken from public sources (opassess/data/hccl_env.toml): their form, and their citations
against the cited repositories.

Run:  python tools/cited_facts.py [--mirror DIR]

Always: the file reads strictly (kb/hccl_env.py: every key known, names well formed, each citation
owner/name@<40-hex commit>:path[:Lx-Ly], an https URL). With --mirror DIR (a folder holding bare clones as
DIR/<owner>+<name>/repo, e.g. what a `fetch` of github:Ascend/pytorch leaves under /work/.mirror), each citation's
file is read at its commit with `git show` and its cited lines must name the HCCL variable (or its old name); a
repository not in DIR is reported as unchecked, not as a failure. Exit 1 when a check fails.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from opassess.kb.hccl_env import FILE, read_hccl_env  # noqa: E402

_CITE = re.compile(r"^(?P<repo>[\w.-]+/[\w.-]+)@(?P<commit>[0-9a-f]{40}):(?P<path>[^:\s]+)"
                   r"(:L(?P<first>\d+)(-L(?P<last>\d+))?)?$")


def cited_lines(mirror: Path, cite: str) -> list[str] | None:
    """The cited lines of the file at its commit; None when the repository is not in the mirror folder."""
    match = _CITE.match(cite)
    assert match is not None  # read_hccl_env refused any other form
    git_dir = mirror / match["repo"].replace("/", "+") / "repo"
    if not git_dir.is_dir():
        return None
    shown = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{match['commit']}:{match['path']}"],
                           capture_output=True, text=True, check=False)
    if shown.returncode != 0:
        return []
    lines = shown.stdout.splitlines()
    if match["first"] is None:
        return lines
    first = int(match["first"])
    return lines[first - 1:int(match["last"] or first)]


def check(path: Path, mirror: Path | None) -> tuple[list[str], list[str]]:
    """(failures, unchecked citations) for the facts file at `path`."""
    table = read_hccl_env(path)
    failures: list[str] = []
    unchecked: list[str] = []
    for variable in dict.fromkeys(table.values()):
        for cite in variable.cites if mirror is not None else ():
            lines = cited_lines(mirror, cite)
            if lines is None:
                unchecked.append(cite)
                continue
            text = "\n".join(lines).replace("\\_", "_")  # markdown escapes the underscores of a title
            if not any(name and re.search(rf"\b{name}\b", text) for name in (variable.hccl, variable.old_name)):
                failures.append(f"{cite}: the cited lines do not name {variable.hccl}")
    return failures, unchecked


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=ROOT / "opassess" / "data" / FILE)
    parser.add_argument("--mirror", type=Path, help="folder of bare clones, DIR/<owner>+<name>/repo")
    args = parser.parse_args(argv)
    failures, unchecked = check(args.file, args.mirror)
    for line in unchecked:
        print(f"unchecked (repository not in {args.mirror}): {line}")
    for line in failures:
        print(f"FAIL {line}")
    print(f"{args.file.name}: {'ok' if not failures else f'{len(failures)} failure(s)'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
