"""Print the opassess package as a tree, one line per module: its path and the first line of its docstring.

`python tools/module_tree.py` (from the repository root) is the closing note's tree of the layout issue; the package
overview in docs/development.md is the maintained, shorter one.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "opassess"


def first_line(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def tree() -> list[str]:
    """'classify/operators.py  Classify stage: ...' for every module, packages first by path."""
    paths = sorted(ROOT.rglob("*.py"), key=lambda p: (p.relative_to(ROOT).parts[:-1], p.name != "__init__.py", p.name))
    width = max(len(str(p.relative_to(ROOT))) for p in paths) + 2
    return [f"{str(p.relative_to(ROOT)):<{width}}{first_line(p)}" for p in paths]


def main() -> int:
    sys.stdout.write("\n".join(tree()) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
