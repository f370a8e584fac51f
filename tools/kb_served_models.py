"""Compile vllm-ascend's supported-models page into opassess/data/vllm_ascend_models.json (the serving check's model
list), from a bare clone of github:vllm-project/vllm-ascend.

Run:  python tools/kb_served_models.py --mirror /work/.mirror            (regenerate from the clone's newest commit)
      python tools/kb_served_models.py --mirror /work/.mirror --check    (the shipped file is the regeneration
                                                                         at its own commit)

The page (docs/source/user_guide/support_matrix/supported_models.md) has one table per model family and hardware tab
(=== "A2/A3", === "Atlas 300I DUO", ...): Model | Support | Note | ... | Supported Hardware. Each row becomes
{model, names, support, hardware, products, section, line}:
- `names`: the model cell's names (a parenthesis left out) folded (lower case, no '-', '_', '.', ' '), one per
  '/'-separated variant, a variant that starts with a digit taking the first one's letters ("Llama2/3/3.1" ->
  llama2, llama3, llama31); a name ending in "-Dense" or "-based" also gives the family name before it
  ("Qwen3-Dense" -> qwen3dense, qwen3): the page uses them for the family's dense models and the models built on it;
- `support`: the legend's word for the cell's mark (✅ supported, 🔵 experimental, ❌ unsupported, 🟡 untested);
- `products`: the opassess products (data/products.toml kernel columns) the hardware cell names, each
  '/'-separated token resolved through the products' aliases ("A2/A3" -> A2, A3; "Atlas 300I DUO" -> 310P;
  "Ascend 950 Products" / "Ascend950" -> 950); a row with an empty cell names none;
- `line`: the row's line in the page, for the citation repo@commit:path:L<line>.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from opassess.kb.products import shipped  # noqa: E402

REPO = "vllm-project/vllm-ascend"
PATH = "docs/source/user_guide/support_matrix/supported_models.md"
OUT = ROOT / "opassess" / "data" / "vllm_ascend_models.json"
MARKS = {"✅": "supported", "🔵": "experimental", "❌": "unsupported", "🟡": "untested"}
FORMAT = 1


def fold(name: str) -> str:
    """'Qwen3-30B-A3B' -> 'qwen330ba3b'; 'DeepSeek V3.1' -> 'deepseekv31'."""
    return re.sub(r"[\s._\-]+", "", name).lower()


def names_of(cell: str) -> list[str]:
    """The folded names a model cell gives (see the module docstring)."""
    found: list[str] = []
    for part in re.split(r"<br>|,", re.sub(r"\(.*?\)", "", cell)):
        variants = [v.strip() for v in part.split("/") if v.strip()]
        stem = re.match(r"^(.*?)[\d.]*$", variants[0]).group(1) if variants else ""  # type: ignore[union-attr]
        for variant in variants:
            full = stem + variant if variant[0].isdigit() and stem else variant
            found.append(fold(full))
            family = re.match(r"^(.*)-(Dense|based)$", full)
            if family:
                found.append(fold(family.group(1)))
    return list(dict.fromkeys(n for n in found if n))


def products_of(cell: str) -> list[str]:
    """The products.toml kernel columns a hardware cell names."""
    products = shipped()
    found = []
    for token in re.sub(r"\(.*?\)", "", cell).split("/"):
        token = token.strip()
        for candidate in (token, token.replace(" Products", ""), re.sub(r"(\D)(\d)", r"\1 \2", token, count=1)):
            try:
                found.append(products.resolve(candidate).kernel)
                break
            except ValueError:
                continue
    return list(dict.fromkeys(found))


def parse(text: str) -> list[dict]:
    """The page's model rows, in page order."""
    rows: list[dict] = []
    section, tab, header = "", "", None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("#"):
            section, tab, header = line.lstrip("# ").strip(), "", None
            continue
        if line.startswith("=== "):
            tab, header = line[4:].strip().strip('"'), None
            continue
        if not line.startswith("|"):
            header = None if not line else header
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set("".join(cells)) <= set("-: "):
            continue
        row = dict(zip(header, cells, strict=False))
        mark = next((m for m in MARKS if m in row.get("Support", "")), None)
        if not row.get("Model") or mark is None:
            continue
        hardware = row.get("Supported Hardware", "")
        rows.append({"model": row["Model"], "names": names_of(row["Model"]), "support": MARKS[mark],
                     "hardware": hardware, "products": products_of(hardware), "section": section, "tab": tab,
                     "line": number})
    return rows


def build(mirror: Path, commit: str | None = None) -> dict:
    """The table from the page at `commit` (default: the clone's newest commit touching it)."""
    git_dir = mirror / REPO.replace("/", "+") / "repo"

    def git(*args: str) -> str:
        return subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True, text=True,
                              check=True).stdout

    commit = commit or git("log", "-1", "--format=%H", "HEAD", "--", PATH).strip()
    date = git("log", "-1", "--format=%cs", commit).strip()
    return {"format": FORMAT, "generator": "tools/kb_served_models.py", "repo": REPO, "path": PATH, "commit": commit,
            "commit_date": date, "url": f"https://github.com/{REPO}/blob/{commit}/{PATH}",
            "rows": parse(git("show", f"{commit}:{PATH}"))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, required=True, help="folder of bare clones, DIR/<owner>+<name>/repo")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="compare with the shipped file instead of writing")
    args = parser.parse_args(argv)
    shipped_commit = json.loads(args.out.read_text(encoding="utf-8"))["commit"] if args.check else None
    built = build(args.mirror, shipped_commit)
    text = json.dumps(built, ensure_ascii=False, indent=1) + "\n"
    if args.check:
        same = args.out.read_text(encoding="utf-8") == text
        print(f"{args.out.name}: {'reproduced' if same else 'differs from a regeneration'}")
        return 0 if same else 1
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}: {len(built['rows'])} rows from {REPO}@{built['commit'][:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
