"""Compile the route tables (HCCL, ONNX -> CANN, inference quantisation) into opassess/data/kb/route_facts.json.

Run:  python tools/kb_routes.py --facts ../shared/reference/ascend --out opassess/data/kb
(tools/build_kb.py calls `build` too, so `make kb` refreshes it with the rest of the knowledge base.)

Three routes a migration takes besides eager training on one device:
- hccl_distributed_support.tsv: each torch.distributed feature (reduce op, collective, hook, helper) with its HCCL
  status, the dtypes the row lists, and the product generation a dtype needs ("uint64,float64 only on Ascend 950+");
- msit_onnx_to_cann_op_map.tsv: per ONNX opset, the CANN operator ATC converts each ONNX op to;
- ascend_inference_quant_support.tsv: per serving engine and quantisation scheme, its status on A2, A3 and the 950
  generation (A5) as the table states it (`TBD` kept as such: not yet stated, never read as support).

Every entry carries its row's line number in its file (`row`; the header is the line after the `#` source line, or
line 1), so a finding cites e.g. "hccl_distributed_support.tsv:7". Only structured fields and the tables' short
English status texts are shipped. `generated_at` is kept across identical rebuilds; SOURCE_DATE_EPOCH overrides it.
"""
from __future__ import annotations

import re
from pathlib import Path

from tables import missing, numbered_rows, run, sources, sources_summary, write_stamped

GENERATOR_VERSION = "1.0"
FORMAT = 1
OUTPUT = "route_facts.json"

TABLES = {
    "hccl": "hccl_distributed_support.tsv",
    "onnx": "msit_onnx_to_cann_op_map.tsv",
    "quant": "ascend_inference_quant_support.tsv",
}

# Where the short names of hccl_distributed_support.tsv live in torch (a parsing aid, not a fact: which names a row
# speaks about still comes from the row). A row's first word picks the module its names are qualified with.
MODULES = {
    "ReduceOp": "torch.distributed",
    "DDP": "torch.distributed.algorithms.ddp_comm_hooks",
    "FSDP": "torch.distributed.fsdp.FullyShardedDataParallel",
    "tensor": "torch.distributed",
    "torch": "",
    "rpc": "torch.distributed",
    "ZeroRedundancyOptimizer": "torch.distributed.optim",
    "context_parallel": "torch.distributed.tensor.experimental",
    "elastic": "torch.distributed.elastic",
    "FSDP2": "torch.distributed.fsdp",
}
COLLECTIVE_MODULE = "torch.distributed"
# Rows whose feature text is not a list of torch names: the names they speak about (again a parsing aid). A row about
# a property (the reduce-op dtypes, the timeouts) or a mode of a call (recv from any source) names no API.
NAMES = {
    "FSDP (FullyShardedDataParallel), fully_shard (FSDP2)": ["torch.distributed.fsdp.FullyShardedDataParallel",
                                                             "torch.distributed.fsdp.fully_shard"],
    "context_parallel (experimental)": ["torch.distributed.tensor.experimental.context_parallel"],
    "elastic EtcdServer": ["torch.distributed.elastic.rendezvous.etcd_server.EtcdServer"],
    "DDP comm hooks (allreduce_hook, fp16_compress_hook, noop_hook, GradBucket)": [
        "torch.distributed.algorithms.ddp_comm_hooks.allreduce_hook",
        "torch.distributed.algorithms.ddp_comm_hooks.fp16_compress_hook",
        "torch.distributed.algorithms.ddp_comm_hooks.noop_hook", "torch.distributed.GradBucket"],
    "recvAnysource": [], "collective dtypes (reduce ops)": [], "HCCL default op wait timeout": [],
}
# Table dtype spellings -> torch dtype names.
DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "fp64": "float64", "bool": "bool",
          **{n: n for n in ("int8", "int16", "int32", "int64", "uint8", "uint64", "float16", "float32", "float64",
                            "bfloat16")}}
GENERATIONS = {"Ascend 950": "950"}  # "only on Ascend 950+" -> the products.toml kernel column of that generation
QUANT_PRODUCTS = {"A2": "A2", "A3": "A3", "A5": "950"}  # table column -> products.toml kernel column


def dtype_list(text: str) -> list[str]:
    """'bf16,fp16,fp32,int8' -> ['bfloat16', 'float16', 'float32', 'int8']; [] unless every item is a dtype."""
    items = [t.strip() for t in re.split(r"[,/]", text) if t.strip()]
    return [DTYPES[t] for t in items] if items and all(t in DTYPES for t in items) else []


def hccl_names(feature: str) -> list[str]:
    """Qualified torch names a row speaks about: 'ReduceOp.BAND/BOR/BXOR' -> torch.distributed.ReduceOp.BAND, ...;
    'DDP comm hooks (allreduce_hook, ...)' -> names under ddp_comm_hooks; 'all_to_all / all_to_all_single' ->
    torch.distributed.all_to_all, ...; a row about a property (dtypes, timeouts) names nothing."""
    if feature in NAMES:
        return NAMES[feature]
    head = feature.split()[0].split(".")[0].rstrip(",")
    listed = re.search(r"\(([^)]*)\)", feature)
    if listed and head in MODULES:
        words = [w.strip() for w in listed.group(1).split(",") if re.fullmatch(r"\w+", w.strip())]
        return [f"{MODULES[head]}.{w}" for w in words]
    bare = re.sub(r"\s*\([^)]*\)", "", feature)
    parts = [p.strip() for p in bare.split("/")]
    if head == "ReduceOp":
        return [f"{COLLECTIVE_MODULE}.ReduceOp.{p.removeprefix('ReduceOp.')}" for p in parts]
    if head in MODULES:
        first = parts[0]
        prefix = MODULES[head]
        names = [f"{prefix}.{first}".lstrip(".")]
        base = names[0].rsplit(".", 1)[0]
        return names + [f"{base}.{p}" for p in parts[1:] if re.fullmatch(r"\w+", p)]
    if all(re.fullmatch(r"\w+", p) for p in parts):
        return [f"{COLLECTIVE_MODULE}.{p}" for p in parts]
    return []


def detail_dtypes(detail: str) -> list[str]:
    """The dtype list a detail text gives: the whole text, 'dtypes bf16,fp16', or 'input fp32 only' (not 'X only on
    <generation>', which gates a dtype by product instead)."""
    candidates = (detail, *detail.split(";"), *re.findall(r"dtypes ([\w,]+)", detail),
                  *re.findall(r"([\w,]+) only\b(?! on)", detail))
    for candidate in candidates:
        if dtype_list(candidate):
            return dtype_list(candidate)
    return []


def build_hccl(rows) -> list[dict]:
    """One entry per row: names, status word, documented-only flag, dtypes, generation-gated dtypes, detail."""
    entries = []
    for row_no, row in rows:
        status, detail = row["status"], row["detail"]
        gated = re.fullmatch(r"([\w,]+) only on (.+?)\+?", detail)
        only_from = {}
        if gated and dtype_list(gated.group(1)):
            generation = GENERATIONS.get(gated.group(2).rstrip("+").strip())
            if generation is None:
                raise ValueError(f"row {row_no}: unknown generation {gated.group(2)!r}: add it to GENERATIONS")
            only_from = {"dtypes": dtype_list(gated.group(1)), "product": generation}
        word = "dtype-list" if dtype_list(status) else re.match(r"[a-z-]+", status)
        if not word:  # a value (the timeouts): kept with its remark as the detail
            detail = f"{status} ({detail})" if detail else status
        entry = {
            "row": row_no, "feature": row["api_or_feature"], "names": hccl_names(row["api_or_feature"]),
            "status": word if isinstance(word, str) else word.group(0) if word else "value",
            "documented": "(doc" in status,
            "dtypes": dtype_list(status) or detail_dtypes(detail),
            "only_from": only_from, "detail": detail, "source": row["source"].split(" (file last changed")[0],
        }
        entries.append({k: v for k, v in entry.items() if v not in ([], {}, "")})
    return entries


def build_onnx(rows) -> dict:
    """{opset: {onnx op: [cann op, row]}} for the ai.onnx domain; other domains under their own name."""
    opsets: dict[str, dict[str, list]] = {}
    domains: dict[str, dict[str, list]] = {}
    for row_no, row in rows:
        domain, opset, op, cann = row["domain"], row["opset"], row["source_op"], row["cann_op"]
        if not op or not cann or not domain:
            continue  # the table's three continuation lines carry no domain
        if domain == "ai.onnx" and opset.isdigit():
            opsets.setdefault(opset, {})[op] = [cann, row_no]
        else:
            domains.setdefault(domain, {})[op] = [cann, row_no]
    return {"opsets": dict(sorted(opsets.items(), key=lambda kv: int(kv[0]))), "domains": domains}


def build_quant(rows) -> list[dict]:
    """One entry per scheme row: engine, scheme, layer, per-product status as stated (yes / no / TBD / WIP / ...)."""
    entries = []
    for row_no, row in rows:
        support = {product: row[column] for column, product in QUANT_PRODUCTS.items() if row[column]}
        entry = {"row": row_no, "engine": row["engine"], "scheme": row["scheme"], "quant_type": row["quant_type_json"],
                 "scheme_class": row["scheme_class"], "layer": row["layer"], "support": support,
                 "diffusion": row["diffusion"], "source": row["source"]}
        entries.append({k: v for k, v in entry.items() if v not in ({}, "")})
    return entries


def build(facts: Path, out: Path) -> dict:
    """Read the three tables under `facts`, write `out`/route_facts.json, return its provenance part."""
    missing(facts, TABLES.values(), "kb_routes")
    read = {key: numbered_rows(facts / name) for key, name in TABLES.items()}
    content = {
        "format": FORMAT,
        "generator": "tools/kb_routes.py",
        "generator_version": GENERATOR_VERSION,
        "upstream": {key: comments for key, (comments, _) in read.items() if comments},
        "sources": sources(facts, TABLES, {key: len(rows) for key, (_, rows) in read.items()}),
        "hccl": build_hccl(read["hccl"][1]),
        "onnx": build_onnx(read["onnx"][1]),
        "quant": build_quant(read["quant"][1]),
    }
    return write_stamped(content, out, OUTPUT, ("generator", "generated_at", "sources", "upstream"))


def main(argv: list[str] | None = None) -> int:
    return run(__doc__, lambda facts, out: f"route facts: {sources_summary(build(facts, out)['sources'])}", argv,
               facts_help="folder with the Ascend fact tables")


if __name__ == "__main__":
    raise SystemExit(main())
