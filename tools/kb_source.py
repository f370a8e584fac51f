"""Compile the four source-level Ascend tables into opassess/data/kb/source_facts.json.

Run:  python tools/kb_source.py --facts ../shared/reference/ascend --out opassess/data/kb
(tools/build_kb.py calls `build` too, so `make kb` refreshes it with the rest of the knowledge base.)

Every entry comes from one table row and carries that row's line number in its TSV file (`row`, header =
line 1), so a finding can cite "cuda_api_migration.tsv:30". The tables' free-text columns are turned into
structured fields: qualified API names (with `*` wildcards) from `pattern`/`match`, the import module and
qualified symbols of each kernel library, dtype lists and argument constraints of each Triton API. English
route texts are kept short and verbatim; the tables' prose notes and any Chinese text are not shipped.

`generated_at` is the time the content was first generated: an identical rebuild keeps the date already
shipped (so rebuilding is idempotent and leaves git clean); SOURCE_DATE_EPOCH overrides it.
"""
from __future__ import annotations

import re
from pathlib import Path

from tables import missing, numbered_rows, provenance_rows, run, sources, sources_summary, write_stamped

GENERATOR_VERSION = "1.0"
FORMAT = 1
OUTPUT = "source_facts.json"

TABLES = {
    "patches": "transfer_to_npu_patches.tsv",
    "migration": "cuda_api_migration.tsv",
    "libraries": "third_party_kernel_libs.tsv",
    "triton": "triton_ascend_api_limits.tsv",
}

# The import name(s) of each library the `library` column names by its distribution or project name.
# A parsing aid, not a fact: every library entry still comes from its row. `bnb` is bitsandbytes'
# conventional alias, used in the `symbols` column.
IMPORT_NAMES = {
    "flash_attn": ("flash_attn",), "xformers": ("xformers",), "apex": ("apex", "amp_C"),
    "bitsandbytes": ("bitsandbytes",), "mamba_ssm": ("mamba_ssm",), "causal_conv1d": ("causal_conv1d",),
    "flash-linear-attention": ("fla",), "liger_kernel": ("liger_kernel",), "deepspeed": ("deepspeed",),
    "megatron-core": ("megatron.core", "transformer_engine"), "vllm": ("vllm",), "triton": ("triton",),
    "sageattention": ("sageattention",), "torchao": ("torchao",), "natten": ("natten",), "spconv": ("spconv",),
    "MinkowskiEngine": ("MinkowskiEngine",), "pytorch3d": ("pytorch3d",), "torch_scatter": ("torch_scatter",),
    "torch_sparse": ("torch_sparse", "torch_cluster", "torch_spline_conv", "pyg_lib"),
    "DCNv3": ("ops_dcnv3", "DCNv3", "DCNv4"), "torch": ("torch",),
}
SYMBOL_ALIASES = {"bnb": "bitsandbytes"}

_CJK = re.compile(r"[\u3000-\u9fff\uff00-\uffef]")
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.(?:[A-Za-z_*<][A-Za-z0-9_*<>]*))+")
_IDENT = re.compile(r"^[A-Za-z_*<][A-Za-z0-9_*<>]*$")


def english(text: str) -> str:
    """Drop parenthesised remarks that carry Chinese text (citations keep their file and line)."""
    text = re.sub(r"\s*[(（][^()（）]*[\u3000-\u9fff][^()（）]*[)）]", "", text)
    if _CJK.search(text):
        raise ValueError(f"Chinese text left in {text!r}")
    return text.strip()


def split_list(text: str, separators: str = ",/") -> list[str]:
    """Split on top-level separators (not inside parentheses or brackets)."""
    parts, depth, current = [], 0, []
    for char in text:
        depth += char in "([{"
        depth -= char in ")]}"
        if depth == 0 and char in separators:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def wildcard(name: str) -> str:
    """'torch.cuda.<Type>Tensor' -> 'torch.cuda.*Tensor'; a trailing '(...)' call is dropped."""
    name = re.sub(r"<[^>]*>", "*", name)
    return name.split("(")[0].rstrip(".")


def qualify(parts: list[str], root: str | None = None, modules: tuple[str, ...] = ()) -> list[str]:
    """Dotted names from a list of alternatives; a bare one-word name inherits the module of the dotted name before it.

    With `modules` (a library's import names) a dotted name rooted elsewhere is taken as relative to the first
    one: 'amp.scale_loss' in the apex row is 'apex.amp.scale_loss'.
    """
    names, prefix = [], root
    for part in parts:
        part = re.sub(r"\([^)]*\)", "", part).strip()
        part = re.sub(r"^(?:(?:call|attribute|assignment to|decorator|or|and)\s+)+", "", part)
        words = part.split()
        if not words:
            continue
        head = words[0].split("=")[-1]
        if _DOTTED.fullmatch(head) and not head.endswith(".py"):
            first, _, rest = head.partition(".")
            first = SYMBOL_ALIASES.get(first, first)
            head = f"{first}.{rest}"
            if modules and first not in modules and first != "torch" and not head.startswith(modules):
                head = f"{modules[0]}.{head}"
            names.append(wildcard(head))
            prefix = wildcard(head).rsplit(".", 1)[0]
        elif prefix and len(words) == 1 and _IDENT.match(head) and head not in ("True", "False", "None"):
            names.append(wildcard(f"{prefix}.{head}"))
    return names


# ------------------------------------------------------------------ transfer_to_npu patches


def build_patches(rows) -> dict[str, list]:
    """api -> [[kind, source_line, effect, row], ...] in table order (the later statement wins at run time)."""
    table: dict[str, list] = {}
    for row_no, row in rows:
        line = int(row["source_line"]) if row["source_line"].isdigit() else None
        table.setdefault(row["api"], []).append([row["kind"], line, english(row["effect"]), row_no])
    return dict(sorted(table.items()))


# ------------------------------------------------------------------ cuda_api_migration


def match_form(match: str) -> str:
    """How a scanner sees the construct: call, attribute, assignment, decorator, import or string."""
    text = match.lower()
    for form, words in (("string", ("string literal",)), ("assignment", ("assignment to",)),
                        ("decorator", ("decorator",)), ("import", ("import statement",)),
                        ("setup", ("setup.py",)), ("call", ("call",)), ("attribute", ("attribute",))):
        if any(text.startswith(w) or f" {w}" in text[:25] for w in words):
            return form
    return "other"


def match_condition(match: str) -> dict[str, str]:
    """'call torch.load without map_location' -> {'absent': 'map_location'}; "with backend='x'" -> kwarg and value."""
    if re.search(r"where <name> is in", match):
        return {"patched": "module-swap"}  # only the names the torch.cuda module swap installs
    found = re.search(r"\bwithout (\w+)", match)
    if found:
        return {"absent": found.group(1)}
    found = re.search(r"\bwith (?:a cuda )?(\w+)(?:='([^']*)')?", match)
    if found and found.group(1) not in ("the",):
        condition = {"present": found.group(1)}
        if found.group(2):
            condition["value"] = found.group(2)
        return condition
    return {}


def build_migration(rows) -> list[dict]:
    rules = []
    for row_no, row in rows:
        form = match_form(row["match"])
        names: list[str] = []
        for column in ("match", "pattern"):
            chunk = re.split(r"\s+(?:together with|where|in a|with|without|on the result of)\s+", row[column])[0]
            for name in qualify(split_list(chunk, "/")):
                if name not in names:
                    names.append(name)
        literals = re.findall(r"string literal (?:exactly )?'([^']+)'", row["match"])
        literals += re.findall(r"string literal '([^']+)' compared", row["match"])
        imports = re.findall(r"import statement of module (\w+)", row["match"])
        rule = {"row": row_no, "pattern": english(row["pattern"]), "form": form, "apis": names,
                "literals": sorted(set(literals)), "imports": imports, "condition": match_condition(row["match"]),
                "handling": row["handling"], "npu_equivalent": english(row["npu_equivalent"]),
                "gpu2ascend": row["handling_gpu2ascend"],
                "evidence": [english(e) for e in row["evidence"].split(" | ") if e.strip()]}
        rules.append({k: v for k, v in rule.items() if v not in ([], {}, "")})
    return rules


# ------------------------------------------------------------------ third-party kernel libraries


def library_modules(library: str) -> tuple[str, tuple[str, ...], str]:
    """'flash_attn (direct calls)' -> ('flash_attn', ('flash_attn',), 'direct calls')."""
    head = re.split(r"\s*\(|\s+/\s+|\s+", library, maxsplit=1)[0]
    context = re.search(r"\(([^)]*)\)\s*$", library)
    if head not in IMPORT_NAMES:
        raise ValueError(f"library {library!r}: add its import name to IMPORT_NAMES")
    return head, IMPORT_NAMES[head], context.group(1) if context else ""


# The documented constraints a route text states, each kept with the words it was read from ("head dim 1-768"):
# what a replacement call is checked against (opassess/advice). Only what the row says: a row without them has none.
CONSTRAINT_PATTERNS = {
    "layouts": r"\blayouts ([A-Z]+(?:/[A-Z]+)+)",
    "dtypes": r"\bdtypes ([a-z0-9]+(?:/[a-z0-9]+)+)",
    "head_dim": r"\bhead dim (\d+)-(\d+)",
    "max_heads": r"\bNq<=(\d+)",
}


def route_constraints(route: str) -> dict:
    """'layouts BSH/BNSD, dtypes fp16/bf16, head dim 1-768 (Dq=Dk>=Dv), Nq<=256 with Nq/Nkv integer (GQA)' ->
    {"layouts": {"values": ["BSH", "BNSD"], "text": "layouts BSH/BNSD"}, "head_dim": {"values": [1, 768], ...}, ...}."""
    found = {}
    for name, pattern in CONSTRAINT_PATTERNS.items():
        match = re.search(pattern, route)
        if match is None:
            continue
        values = [int(v) if v.isdigit() else v for v in match.groups()]
        if len(values) == 1 and isinstance(values[0], str):
            values = values[0].split("/")
        found[name] = {"values": values, "text": match.group(0)}
    if "Nq/Nkv integer" in route:
        found["gqa_ratio"] = {"values": [], "text": "Nq/Nkv integer"}
    return found


def build_libraries(rows) -> list[dict]:
    libraries = []
    for row_no, row in rows:
        head, modules, context = library_modules(row["library"])
        parts = [p for chunk in split_list(row["symbols"].replace("...", ""), ",;") for p in split_list(chunk, "/")]
        symbols: list[str] = []
        for name in qualify(parts, modules[0], modules):
            if name not in symbols and not name.endswith("*"):
                symbols.append(name)
        category, _, reason = row["suggested_category"].partition(":")
        category = re.match(r"[a-z-]*", category.strip()).group(0)
        libraries.append({
            "row": row_no, "library": head, "context": english(context), "modules": list(modules),
            "symbols": symbols, "route": english(row["npu_route"]), "route_kind": row["route_kind"],
            "dropped": english(row["dropped_features"]), "category": category,
            "category_note": english(row["suggested_category"]), "as_of": english(row["as_of"]),
            "evidence": [english(e) for e in row["evidence"].split(" | ") if e.strip() and e.strip() != "-"],
            **({"constraints": found} if (found := route_constraints(row["npu_route"])) else {}),
        })
    return libraries


# ------------------------------------------------------------------ triton-ascend


def dtypes(text: str) -> list[str]:
    return [d for d in (t.strip() for t in text.split(",")) if re.fullmatch(r"[a-z0-9]+", d)]


def arg_constraints(text: str) -> list[list[str]]:
    """'sem!=acq_rel; scope!=gpu; padding_option' -> [['sem', '!=', 'acq_rel'], ..., ['padding_option', 'set', '']]."""
    out = []
    for clause in (c.strip() for c in text.split(";") if c.strip()):
        found = re.fullmatch(r"(\w+)\s*!=\s*(\w+)", clause)
        if found:
            out.append([found.group(1), "!=", found.group(2)])
        elif re.fullmatch(r"\w+", clause):
            out.append([clause, "set", ""])
        else:
            out.append([clause, "note", ""])
    return out


def triton_names(api: str) -> list[str]:
    """'tl.atomic_add' -> ['triton.language.atomic_add']; operator pages keep their tl.* alias if any."""
    names = []
    for token in re.findall(r"(?:tl|triton)(?:\.\w+)+", api):
        name = "triton.language." + token[3:] if token.startswith("tl.") else token
        if name not in names:
            names.append(name)
    return names


def build_triton(rows) -> dict:
    apis, rules, aliases = {}, [], []
    for row_no, row in rows:
        entry = {"row": row_no, "unsupported_dtypes": dtypes(row["unsupported_dtypes"]),
                 "unsupported_args": arg_constraints(row["unsupported_args"]), "limit": english(row["limit"]),
                 "ascend_dtypes": dtypes(row["ascend_supported_dtypes"]),
                 "gpu_only_dtypes": dtypes(row["gpu_only_dtypes"])}
        if row["row_type"] == "rule":
            entry.update(name=row["api"].removeprefix("[rule] "), citations=row["path"].split(" | "),
                         unsupported_text=english(row["unsupported_dtypes"]))
            rules.append({k: v for k, v in entry.items() if v not in ([], "")})
            continue
        entry.update(page=row["api"], path=row["path"],
                     doc_line=int(row["dtype_table_line"]) if row["dtype_table_line"].isdigit() else None)
        entry = {k: v for k, v in entry.items() if v not in ([], "", None)}
        if row["api"].startswith(("tl.", "triton.")):
            for name in triton_names(row["api"]):
                apis[name] = entry
        else:  # an operator page ('unary - (tl.neg)'): its own key; the tl.* alias unless a page of its own exists
            apis[row["api"]] = entry
            aliases.extend((name, entry) for name in triton_names(row["api"]))
    for name, entry in aliases:
        apis.setdefault(name, entry)
    return {"apis": dict(sorted(apis.items())), "rules": rules}


# ------------------------------------------------------------------ provenance and output


def parse_upstream(readme: Path) -> list[dict[str, str]]:
    """The provenance table under the README's 'Migration-route facts' section."""
    return [{"repository": cells[0], "commit": cells[1], "commit_date": english(cells[2])}
            for cells in provenance_rows(readme, "### Provenance", within="## Migration-route facts")]


def build(facts: Path, out: Path) -> dict:
    """Read the four tables under `facts`, write `out`/source_facts.json, return its provenance part."""
    missing(facts, (*TABLES.values(), "README.md"), "kb_source")
    rows = {key: numbered_rows(facts / name)[1] for key, name in TABLES.items()}
    content = {
        "format": FORMAT,
        "generator": "tools/kb_source.py",
        "generator_version": GENERATOR_VERSION,
        "upstream": parse_upstream(facts / "README.md"),
        "sources": sources(facts, TABLES, {key: len(table) for key, table in rows.items()}),
        "patches": build_patches(rows["patches"]),
        "migration": build_migration(rows["migration"]),
        "libraries": build_libraries(rows["libraries"]),
        "triton": build_triton(rows["triton"]),
    }
    return write_stamped(content, out, OUTPUT, ("generator", "generated_at", "sources", "upstream"))


def main(argv: list[str] | None = None) -> int:
    return run(__doc__, lambda facts, out: f"source facts: {sources_summary(build(facts, out)['sources'])}", argv)


if __name__ == "__main__":
    raise SystemExit(main())
