"""The README a newcomer reads in minutes, the reference in docs/: README.md at most 250 lines, no path outside the
repository in either, and every relative link (file and #anchor) leading somewhere that exists."""
from __future__ import annotations

import re
from pathlib import Path

from tests.support import ROOT

README_MAX_LINES = 250
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces to '-'."""
    found, fence = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and (m := re.match(r"#{1,6} (.+)", line)):
            found.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return found


def prose(page: Path) -> str:
    """A page without its code: fenced blocks and `inline spans` (a `kernel[grid](...)` there is no link)."""
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    return re.sub(r"`[^`]*`", "", text)


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(prose(page)):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{page.name}: {target} (no such file)")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{page.name}: {target} (no such heading)")
    return broken


def test_the_readme_is_short_and_the_reference_is_in_docs():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= README_MAX_LINES
    assert {"how-it-works.md", "ci.md", "reports.md", "reasons.md", "development.md"} <= {p.name for p in PAGES}


def test_no_path_outside_the_repository():
    outside = [f"{page.name}: {line.strip()}" for page in PAGES
               for line in page.read_text(encoding="utf-8").splitlines() if "../" in line or "/work/" in line]
    assert not outside, "\n".join(outside)


def test_every_relative_link_resolves():
    broken = [link for page in PAGES for link in broken_links(page)]
    assert not broken, "\n".join(broken)


def test_a_broken_link_is_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [gone](missing.md) [nowhere](#no-such)\n")
    assert broken_links(page) == ["page.md: missing.md (no such file)", "page.md: #no-such (no such heading)"]


def test_the_readme_exit_codes_are_the_ones_the_code_exits_with():
    """The exit-code table states opassess.errors' codes, each once; the command line (cli/, __main__.py) exits with
    those constants, never with a bare number, so the table and the code move together."""
    import ast

    from opassess import errors

    package = ROOT / "opassess"
    for path in [package / "__main__.py", *sorted((package / "cli").rglob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("Exit", "_exit", "exit") and node.args \
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, int):
                raise AssertionError(f"{path.relative_to(ROOT)}:{node.lineno}: exits with a bare {node.args[0].value}")

    text = (ROOT / "README.md").read_text(encoding="utf-8").split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    first = [re.findall(r"\d+", row.split("|")[1]) for row in text.splitlines() if re.match(r"\| \d", row)]
    stated = [int(code) for codes in first for code in codes]
    constants = [errors.EXIT_OK, errors.EXIT_ERROR, errors.EXIT_USAGE, errors.EXIT_POLICY, errors.EXIT_INTERRUPTED]
    assert stated[:5] == constants and len(set(stated)) == len(stated)
