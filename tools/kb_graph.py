"""Compile the five graph-mode Ascend tables into opassess/data/kb/graph_mode.json.

Run:  python tools/kb_graph.py --facts ../shared/reference/ascend --out opassess/data/kb
(`make kb` runs it after tools/build_kb.py.)

What each back-end needs, per ATen overload, from the facts:
- the NPU inductor: `inductor_fallback` (torch_npu's lowering fallback list: ops it runs as eager kernels inside
  the compiled graph, with the list and condition), `verified` (APIs torch_npu states work inside a graph);
- aclgraph (npugraphs / npugraph_ex): `capture` (ops needing a replay update handler, the aclnn-only rule, no
  backward and no RNG capture, the re-capture limit), each with its row;
- torchair GE: `ge_converters` (converter status per overload: a text heuristic upstream, shipped as such, with
  its declared dtypes and the converter's own restriction message) and `ge_apis` (the documented GE API list with
  forward/backward dtypes and constraints; `attr=value` constraints structured as `checks`).
Every entry carries its TSV line number (`row`, header = line 1 after the `#` source line) so a report can cite
"torchair_ge_converter_status.tsv:6". `generated_at` is kept when an identical rebuild would change only it.
"""
from __future__ import annotations

import re
from pathlib import Path

from tables import missing, numbered_rows, run, sources, sources_summary, write_stamped

GENERATOR_VERSION = "1.0"
FORMAT = 1
OUTPUT = "graph_mode.json"

TABLES = {
    "ge_converters": "torchair_ge_converter_status.tsv",
    "ge_apis": "torchair_ge_aten_api_list.tsv",
    "inductor_fallback": "torch_npu_inductor_fallback_list.tsv",
    "verified": "torch_npu_graph_verified_apis.tsv",
    "capture": "graph_mode_capture_facts.tsv",
}
# The converter table has no `#` source line: its upstream is the torchair row of the README's provenance table.
CONVERTER_UPSTREAM = "Ascend/torchair"
GE_STATUSES = {"implemented", "implemented_with_restrictions", "not_implemented", "not_supported",
               "not_supported_redundant_out_variant", "unknown"}
DTYPE_TAGS = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "F64": "float64", "I8": "int8",
              "I16": "int16", "I32": "int32", "I64": "int64", "U8": "uint8", "BOOL": "bool"}
_SHA = re.compile(r"@\s*([0-9a-f]{40})")


def aten_key(name: str) -> str | None:
    """'torch.ops.aten.add.Tensor' / 'aten.add.Tensor' -> 'aten::add.Tensor'; '.default' is dropped (the name the
    capture's AtenCall.qualified uses); 'aten.__and__' (every overload) -> 'aten::__and__'; other namespaces
    ('torch.ops.npu.x.default', 'prims.x') -> 'npu::x', 'prims::x'."""
    name = name.removeprefix("torch.ops.")
    parts = name.split(".")
    if len(parts) < 2 or not all(parts):
        return None
    namespace, base, overload = parts[0], parts[1], ".".join(parts[2:])
    qualified = f"{namespace}::{base}"
    return qualified if overload in ("", "default") else f"{qualified}.{overload}"


def dtype_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


# ------------------------------------------------------------------ tables


def build_ge_converters(rows) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for number, row in rows:
        key = aten_key(row["op_overload"])
        status = row["status(heuristic)"]
        if key is None or "::" not in key:
            continue  # symbolic helpers (operator.add, math.floor, sym_sqrt): not operators of a capture
        if status not in GE_STATUSES:
            raise SystemExit(f"kb_graph: {TABLES['ge_converters']}:{number}: unknown status {status!r}")
        tags = [t.strip() for t in row["declare_supported_dtype_tags"].split(",") if t.strip()]
        entry = {"status": status, "row": number, "file": row[next(k for k in row if k.startswith("file"))]}
        dtypes = [DTYPE_TAGS[t] for t in tags if t in DTYPE_TAGS]
        if dtypes:
            entry["dtypes"] = sorted(set(dtypes))
        if status in ("implemented_with_restrictions", "unknown") and row["raise_messages"]:
            # The converter's own error text (English, from its source): what the restriction is.
            entry["restriction"] = row["raise_messages"].split(" | ")[0].replace(row["op_overload"], "").strip()[:160]
        out[key] = entry
    return dict(sorted(out.items()))


def constraint_checks(text: str) -> tuple[list[dict], list[str]]:
    """'track_running_stats=True; kernel_size<=255' -> ([{param, equals}], ['kernel_size<=255']): the `attr=value`
    tokens a captured signature's attributes can be checked against, and the rest as stated."""
    checks, stated = [], []
    for token in (t.strip() for t in text.split(";")):
        if not token:
            continue
        m = re.fullmatch(r"([A-Za-z_]+)=(True|False)", token)
        if m:
            checks.append({"param": m.group(1), "equals": m.group(2) == "True"})
        else:
            stated.append(token)
    return checks, stated


def build_ge_apis(rows) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for number, row in rows:
        checks, stated = constraint_checks(row["constraints"])
        entry = {"row": number, "dtypes_forward": dtype_list(row["dtypes_forward"]),
                 "dtypes_backward": dtype_list(row["dtypes_backward"])}
        if checks:
            entry["checks"] = checks
        if stated:
            entry["constraints"] = stated
        for name in api_names(row["api"]):
            out.setdefault(name, entry)
    return dict(sorted(out.items()))


def api_names(api: str) -> list[str]:
    """The names a capture knows a documented API by: 'torch.Tensor.expand' -> Tensor.expand and aten::expand;
    'torch.addmm' -> torch.addmm and aten::addmm; 'torch.ops.aten.slice.Tensor' -> aten::slice.Tensor."""
    if api.startswith("torch.ops."):
        key = aten_key(api)
        return [key] if key else []
    if api.startswith("torch.Tensor."):
        return [api.removeprefix("torch."), f"aten::{api.rsplit('.', 1)[1]}"]
    if re.fullmatch(r"torch\.[a-z_][a-z0-9_]*", api):
        return [api, f"aten::{api.split('.', 1)[1]}"]
    if api.startswith("torch.nn.") and api.count(".") == 2 and api[9:10].islower():
        return [api.replace("torch.nn.avgpool2d", "torch.nn.AvgPool2d")]
    return [api]


def build_inductor_fallback(rows) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for number, row in rows:
        key = aten_key(row["op"]) or row["op"]
        entry = {"row": number, "list": row["list"]}
        if row["condition"] != "always":
            entry["condition"] = row["condition"]
        out.setdefault(key, entry)
    return dict(sorted(out.items()))


def build_verified(rows) -> dict[str, int]:
    return dict(sorted((row["api"], number) for number, row in rows))


def handler_ops(scope: str) -> list[str]:
    """'npu_fused_infer_attention_score(.default/.out), _v2' -> ['npu::npu_fused_infer_attention_score',
    'npu::npu_fused_infer_attention_score_v2']: a leading '_v2' extends the name before it."""
    names: list[str] = []
    for part in (p.strip() for p in scope.split(",")):
        base = re.sub(r"\(.*?\)", "", part).split(".")[0].strip()
        if base.startswith("_v") and names:
            base = names[-1].split("::")[1] + base
        if base:
            names.append(f"npu::{base}")
    return names


def build_capture(rows, table: str) -> dict:
    """The capture facts as rules keyed by what they decide; a row the parser does not place fails the build."""
    out: dict = {"update_handlers": {}}
    for number, row in rows:
        fact, scope = row["fact"], row["op_or_scope"]
        cite = {"row": number, "path": row["path"]}
        if fact == "capture with update handler":
            for op in handler_ops(scope):
                out["update_handlers"][op] = cite
        elif fact.startswith("aclgraph capture requires aclnn"):
            out["aclnn_only"] = cite
        elif fact.startswith("npugraph_ex: no backward capture"):
            out["no_backward"] = cite
            out["no_rng"] = cite
            out["no_sync"] = cite  # the same row: stream sync and dynamic control flow are unsupported
        elif fact == "recapture limit":
            m = re.search(r"default (\d+)", row["detail"])
            if not m:
                raise SystemExit(f"kb_graph: {table}:{number}: no default limit in {row['detail']!r}")
            out["recapture_limit"] = {**cite, "value": int(m.group(1))}
        elif fact == "capture_error_mode":
            out["capture_error_mode"] = cite
        elif fact.startswith("multi-inplace ops"):
            out["multi_inplace"] = {**cite, "ops": [f"npu::{n.split('.')[-1].strip()}" for n in scope.split(",")]}
        elif scope == 'mode="reduce-overhead"':
            out["reduce_overhead"] = {**cite, "backend": "inductor"}
        elif scope.startswith("TorchAir GE"):
            out["ge_no_fallback"] = cite
        else:
            raise SystemExit(f"kb_graph: {table}:{number}: capture fact {fact!r} has no rule here")
    return out


# ------------------------------------------------------------------ provenance and output


def upstream(sources: dict[str, str | None], readme: Path) -> dict[str, dict]:
    """Per table: its `#` source line's repository path and commit; the converter table from the README row."""
    out = {}
    for key, line in sources.items():
        if line:
            m = _SHA.search(line)
            out[key] = {"source": line.split(";")[0], "commit": m.group(1) if m else None}
    text = readme.read_text(encoding="utf-8")
    m = re.search(r"^\|\s*" + re.escape(CONVERTER_UPSTREAM) + r"\s*\|\s*([0-9a-f]{40})\s*\|([^|\n]*)", text, re.M)
    if not m:
        raise SystemExit(f"kb_graph: {readme}: no {CONVERTER_UPSTREAM} row in the provenance table")
    out["ge_converters"] = {"source": f"{CONVERTER_UPSTREAM} python/torchair/_ge_concrete_graph/ge_converter/",
                            "commit": m.group(1), "note": m.group(2).strip()}
    return dict(sorted(out.items()))


def build(facts: Path, out: Path) -> dict:
    """Read the five tables under `facts`, write `out`/graph_mode.json, return its provenance part."""
    missing(facts, (*TABLES.values(), "README.md"), "kb_graph")
    read = {key: numbered_rows(facts / name) for key, name in TABLES.items()}
    rows = {key: table for key, (_, table) in read.items()}
    content = {
        "format": FORMAT,
        "generator": "tools/kb_graph.py",
        "generator_version": GENERATOR_VERSION,
        "upstream": upstream({key: next(iter(comments), None) for key, (comments, _) in read.items()},
                             facts / "README.md"),
        "sources": sources(facts, TABLES, {key: len(table) for key, table in rows.items()}),
        "ge_converters": build_ge_converters(rows["ge_converters"]),
        "ge_apis": build_ge_apis(rows["ge_apis"]),
        "inductor_fallback": build_inductor_fallback(rows["inductor_fallback"]),
        "verified": build_verified(rows["verified"]),
        "capture": build_capture(rows["capture"], TABLES["capture"]),
    }
    return write_stamped(content, out, OUTPUT, ("generator", "generated_at", "sources", "upstream"))


def main(argv: list[str] | None = None) -> int:
    return run(__doc__, lambda facts, out: f"graph-mode facts: {sources_summary(build(facts, out)['sources'])}", argv)


if __name__ == "__main__":
    raise SystemExit(main())
