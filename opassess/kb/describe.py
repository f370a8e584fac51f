"""The text `opassess kb`, `kb show`, `kb import` and `explain` print, built from the knowledge base."""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from opassess.errors import KnowledgeBaseError

from . import kernels
from .error_codes import ErrorCode, blamed_operators, codes_in_text, listed_codes, messages_in_text
from .facts import ApiFact, Limitation
from .store import KnowledgeBase

_MARK = {"y": "✔", "n": "✘"}
Decompose = Callable[[str], "tuple[str, ...] | None"]


def format_summary(kb: KnowledgeBase) -> str:
    """Version, provenance and counts of the knowledge base."""
    p, c = kb.provenance, kb.counts()
    pct = 100.0 * c["limitation_clauses_parsed"] / max(1, c["limitation_clauses"])
    lines = [
        f"opassess knowledge base {kb.version}",
        f"  data folder      {kb.directory}",
        f"  generated        {p['generated_at']} by {p.get('generator', 'tools/build_kb.py')} "
        f"v{p['generator_version']}",
        f"  rules            {kb.rules.source} (version {kb.rules.version})",
        f"  torch versions   {', '.join(kb.torch_versions)} (default {kb.default_torch_version}; API docs for "
        f"{', '.join(kb.api_doc_versions)})",
        f"  products         {', '.join(kb.products)}",
        "",
        "Upstream sources:",
    ]
    lines += [f"  {u['repository']} @ {u['commit'][:12]}  ({u['read']})" for u in p["upstream"]]
    lines += ["", "Tables:"]
    lines += [f"  {s['table']:<34} {s['rows']:>6} rows  sha256 {s['sha256'][:16]}" for s in p["sources"].values()]
    lines += [
        "",
        "Counts:",
        f"  ATen overloads with an NPU kernel   {c['kernel_overloads']} ({c['structured_codegen']} generated 1:1)",
        f"  NPU-only ops                        {c['custom_ops']}",
        f"  documented native APIs              {c['apis']}",
        f"  limitation clauses parsed           {c['limitation_clauses_parsed']} / {c['limitation_clauses']} "
        f"({pct:.1f}%); "
        f"unparsed {c['limitation_clauses_unparsed']}",
        f"  kernel argument checks              {c['check_rows']} in {c['check_files']} files",
        f"  ONNX ops with a CANN name           {c['onnx_ops_named']} / {c['onnx_ops']}",
        f"  curated replacements                {len(kb.rules.replacements)}",
        f"  error codes                         {len(kb.error_codes)}",
    ]
    for _version, data in sorted(kb.imported.items()):
        prov = data["provenance"]
        lines.append(f"  imported wheel {prov['wheel']} -> torch {data['torch_version']}: "
                     f"{len(data['kernels'])} kernels")
    return "\n".join(lines)


def _limitation_lines(lim: Limitation, product: str) -> list[str]:
    lines = []
    dtypes = lim.allowed_dtypes(product)
    if dtypes is not None:
        lines.append(f"    dtypes ({product}): {', '.join(dtypes)}")
    for rule in lim.dtype_rules:
        if rule.products or rule.when or not set(rule.params) & {"input", "self"}:
            scope = f" on {', '.join(rule.products)}" if rule.products else ""
            when = f" when {rule.when}" if rule.when else ""
            lines.append(f"    dtypes of {', '.join(rule.params)}{scope}{when}: {', '.join(rule.allowed)}")
    for param in lim.param_rules:
        scope = f" ({', '.join(param.products)})" if param.products else ""
        lines.append(f"    param: {param.describe()}{scope}{' [changed silently]' if param.auto_fixed else ''}")
    for ndim in lim.ndim_rules:
        lines.append(f"    shape: {ndim.describe()}")
    for cast in lim.dtype_casts:
        lines.append(f"    cast: {cast['from']} becomes {cast['to']}")
    if lim.cpu_fallback:
        lines.append(f"    cpu fallback: {lim.cpu_fallback}")
    for flag in ("cpu_only", "inference_only", "no_sparse", "no_packed_sequence"):
        if getattr(lim, flag):
            lines.append(f"    {flag.replace('_', ' ')}")
    if lim.use_instead:
        lines.append(f"    use instead: {', '.join(lim.use_instead)}")
    if lim.notes:
        lines.append(f"    notes: {', '.join(lim.notes)}")
    if lim.unparsed:
        lines.append(f"    unparsed clauses: {len(lim.unparsed)} of {lim.clauses} ({', '.join(lim.unparsed)})")
    return lines


def _api_lines(kb: KnowledgeBase, fact: ApiFact) -> list[str]:
    lines = [f"Native API {fact.api}"]
    for doc in kb.api_doc_versions:
        f = kb.api(fact.api, doc)
        if f is None or f.doc_version != doc:
            continue
        marks = "  ".join(f"{p}: {'✔' if v else '✘' if v is False else '-'}" for p, v in f.support.items())
        lines.append(f"  torch {doc}: {marks}")
    if fact.limitation:
        lines.append(f"  limitation {fact.limitation.id} (torch {fact.doc_version}), in English from its parsed facts:")
        lines.append(f"    original (Chinese) clause: Ascend/pytorch docs/zh/api/native_api/pytorch_"
                     f"{fact.doc_version.replace('.', '-')}, page {fact.doc_module}, row {fact.api} "
                     "(npu_native_api_support.tsv limitations_zh; the prose itself is not shipped)")
        lines += _limitation_lines(fact.limitation, kb.default_product)
    called = kb.rules.calls.get(fact.api)
    if called:
        called_fact = kb.api(called)
        lines.append(f"  calls {called}: its parameter limits apply too")
        if called_fact is not None and called_fact.limitation is not None:
            lim = called_fact.limitation
            lines += [f"    param: {r.describe()}" for r in lim.param_rules]
            lines += [f"    shape: {r.describe()}" for r in lim.ndim_rules]
    status = kb.mstt_status(fact.api)
    if status:
        lines.append(f"  migration analyser (mstt): {status}")
    for rep in kb.replacements_for(fact.api):
        lines.append(f"  replacement ({rep.when}): {rep.api} - {rep.note}")
    mapping = kb.attr_mapping(fact.api)
    if mapping:
        lines.append(f"  CANN operator: {mapping.cann_op}")
        lines += [f"    {f.source} -> {f.target}: {f.transform}" for f in mapping.fields]
    family = kb.rules.nature(fact.api)
    if family:
        lines.append(f"  nature: {family.nature} ({family.evidence})")
    composite = kb.rules.composite_for_api(fact.api)
    if composite:
        lines.append(f"  taken whole by torch_npu as {composite.aten}; CPU decompositions not judged")
    return lines


def aten_candidates(name: str) -> tuple[str, ...]:
    """The ATen base names an API name may dispatch to: aten::mm -> mm; torch.nn.Linear -> linear;
    torch.nn.SiLU -> silu, si_lu; torch.nn.functional.silu / Tensor.neg / torch.matmul -> silu / neg / matmul."""
    if name.startswith("aten::"):
        return (name.removeprefix("aten::"),)
    last = name.rsplit(".", 1)[-1]
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", last).lower()
    return tuple(dict.fromkeys((snake, last.lower())))


def _row_lines(kb: KnowledgeBase, facts: kernels.KernelFacts, row: str) -> list[str]:
    """One op-plugin row: the aclnn APIs it calls, each with its input dtypes and per-product rows."""
    entry = facts.aten_entry(row) or {}
    verdict = facts.judge(row, kb.product(kb.default_product).kernel, ())
    main = verdict.main_api.api if verdict and verdict.main_api else None
    paths = "; falls back to aclop when CANN lacks the API" if entry.get("fallback") else ""
    lines = [f"Kernel facts: aten::{row} calls {', '.join(entry.get('apis', ())) or 'no aclnn API'} "
             f"(main {main or 'none documented'}{paths})"]
    for api in entry.get("apis", ()):
        doc = facts.api_entry(api)
        if doc is None:
            lines.append(f"  {api}: no CANN doc read")
            continue
        repo, path, _commit, date = doc["doc"]
        lines.append(f"  {api} ({repo} {path}, {date})")
        inputs = [p for p in doc["params"] if p.get("dtypes") and p["io"].startswith(("input", "inout"))]
        lines += [f"    {param['name']}: {', '.join(param['dtypes'])}" for param in inputs]
        for product in kb.product_list.items:
            mark = _MARK.get(doc["support"][kernels.PRODUCTS.index(product.kernel)], "-")
            if mark == "✘" or not inputs:
                lines.append(f"    {product.name}: {mark}")
                continue
            excluded = inputs[0].get("excluded", {}).get(product.kernel, [])
            taken = [d for d in inputs[0]["dtypes"] if d not in excluded]
            without = f" (not {', '.join(excluded)})" if excluded else ""
            lines.append(f"    {product.name}: {mark} {inputs[0]['name']} {', '.join(taken)}{without}")
    return lines


def _kernel_lines(kb: KnowledgeBase, name: str, decompose: Decompose | None) -> list[str]:
    """The aclnn APIs the op's NPU kernel calls and their dtype rows per product (kernel facts, aclnn.json); for a
    composite with no kernel of its own, those of the ops `decompose` says it dispatches."""
    facts = kb.kernel_facts
    candidates = aten_candidates(name)
    for base in candidates:
        found = facts.lookup(base)
        if found is not None:
            return _row_lines(kb, facts, found[0])
    for base in candidates:
        parts = decompose(base) if decompose is not None else None
        if parts:
            lines = [f"Kernel facts: aten::{base} is composite (no NPU kernel of its own); on a 2-D example with "
                     f"every optional tensor given it dispatches {', '.join(parts)}"]
            for part in parts:
                found = facts.lookup(part)
                if found is not None:
                    lines += ["  " + line for line in _row_lines(kb, facts, found[0])]
            return lines
    return [f"Kernel facts: no op-plugin kernel named {' or '.join(candidates)}; a composite op is judged "
            "through the ops it decomposes into (a scan shows them)"]


def format_entry(kb: KnowledgeBase, name: str, torch_version: str | None = None,
                 decompose: Decompose | None = None) -> str:
    """Everything the knowledge base knows about one name: native API, ATen op, NPU op, third-party op.
    `decompose` (base ATen name -> the ATen ops it dispatches, or None) lets a composite show its ops' kernels."""
    version = kb.resolve_version(torch_version)
    lines: list[str] = []
    fact = kb.api(name, torch_version)
    if fact is not None:
        lines += _api_lines(kb, fact)
    if name.startswith("aten::") or (fact is None and "::" not in name and kb.kernels_for_base(name)):
        support = kb.kernel_support(name, version)
        variants = kb.kernels_for_base(name)
        if support.supported or variants or support.fact:
            lines.append(f"ATen {support.op}: {'has' if support.supported else 'no'} NPU kernel for torch "
                         f"{kb.default_torch_version if torch_version is None else torch_version} ({support.via})")
            lines.append(f"  evidence: {support.evidence}")
            if support.fact and support.fact.deprecated:
                lines.append(f"  deprecated, use {support.fact.deprecated}")
            others = [v.name for v in variants if v.name != (support.fact.name if support.fact else None)]
            if others:
                lines.append(f"  other overloads with kernels: {', '.join(sorted(others)[:12])}")
            checks = kb.checks_for(name)
            if checks:
                kinds = sorted({c.kind for c in checks})
                lines.append(f"  kernel checks: {len(checks)} ({', '.join(kinds)})")
            cann = kb.cann_op(name)
            if cann:
                lines.append(f"  CANN operator: {cann}")
        else:
            lines.append(f"ATen {support.op}: no NPU kernel in the facts ({support.evidence}); "
                         f"without a decomposition it falls back to the CPU")
    custom = kb.custom_op(name)
    if custom is not None:
        lines.append(f"NPU op {custom.python_name}")
        lines.append(f"  schema: {custom.schema}")
        lines.append(f"  evidence: {custom.evidence()}")
        if custom.deprecated:
            lines.append(f"  deprecated, use {custom.deprecated}")
        if custom.replaces:
            lines.append(f"  replaces: {', '.join(custom.replaces)}")
    if lines and (fact is not None or name.startswith("aten::")):
        lines += _kernel_lines(kb, name, decompose)
    third = kb.rules.third_party.get(name)
    if third is not None:
        lines.append(f"Third-party op {third.op}: {third.schema or '(pattern)'}")
        lines.append(f"  evidence: {third.evidence}")
        for rep in kb.replacements_for(name):
            lines.append(f"  replacement ({rep.when}): {rep.api} - {rep.note}")
    if not lines:
        raise KnowledgeBaseError(f"{name!r} is not in the knowledge base (not a documented API, ATen op with a "
                                 f"kernel, NPU op or declared third-party op)")
    return "\n".join(lines)


def format_error_code(kb: KnowledgeBase, code: str) -> str:
    """What `opassess explain CODE` prints: meaning, cause, remedy and source."""
    entry = kb.error_code(code)
    if entry is None:
        raise KnowledgeBaseError(f"unknown error code {code!r} (try an ACL_ERROR_* name, its number, ERRxxyyy, "
                                 f"an E-code such as EZ9999, or --list)")
    value = f" = {entry.value}" if entry.value is not None else ""
    return "\n".join([f"{entry.code}{value}: {entry.meaning}", f"  cause:  {entry.cause}",
                      f"  remedy: {entry.remedy}", f"  source: {entry.evidence}"])


def format_errors_in_text(kb: KnowledgeBase, text: str) -> str:
    """`opassess explain` on a pasted log line or block: every code found in it, explained or said unknown, what the
    message after it says (out of memory, HCCL timeouts), and the operator the log blames."""
    single = text.strip()
    if single and not any(ch.isspace() for ch in single) and kb.error_code(single) is not None:
        return format_error_code(kb, single)
    found = codes_in_text(text)
    messages = messages_in_text(kb.error_codes, text)
    if not found and not messages:
        if single and not any(ch.isspace() for ch in single):
            return format_error_code(kb, single)  # raises: one word that is not a known code
        raise KnowledgeBaseError("no error code found in the text (looked for ACL_ERROR_*, ERRxxyyy, E-codes such "
                                 "as EZ9999, and the number after 'error code')")
    known = [kb.error_code(code) for code in found]
    if not messages and all(entry is None for entry in known):
        raise KnowledgeBaseError(f"unknown error code(s) {', '.join(found)} (try `opassess explain --list`)")
    blocks = [format_error_code(kb, code) if entry is not None else f"{code}: not in opassess's error-code facts"
              for code, entry in zip(found, known, strict=True)]
    blocks += [_message_block(entry) for entry in messages]
    blamed = blamed_operators(text)
    return "\n\n".join([*blocks, *([_blame(kb, blamed)] if blamed else [])])


def _message_block(entry: ErrorCode) -> str:
    return "\n".join([f"the message says: {entry.meaning}", f"  cause:  {entry.cause}", f"  remedy: {entry.remedy}",
                      f"  source: {entry.evidence}"])


def _blame(kb: KnowledgeBase, names: list[str]) -> str:
    """The operators the log names, with the ATen ops whose NPU kernel calls an aclnn API (the op-plugin map)."""
    callers: dict[str, set[str]] = {}
    for overload, entry in kb.kernel_facts.data["aten"].items():
        for api in entry.get("apis") or ():
            callers.setdefault(api, set()).add(overload.partition(".")[0])
    parts, seen = [], set()
    for name in names:
        api = name if name.startswith("aclnn") else f"aclnn{name}"
        if api in seen:  # "aclnnFlashAttentionScore" and its kernel "FlashAttentionScore_1_mix_aiv": one operator
            continue
        seen.add(api)
        atens = sorted(callers.get(api, ()))
        parts.append(name + (f" (called by aten::{', aten::'.join(atens)})" if atens else ""))
    return ("the log blames: " + "; ".join(parts) + "\n  check its inputs against `opassess kb show OP` (shapes, "
            "dtypes, layout); with ASCEND_LAUNCH_BLOCKING=1 the operator reported is the one that failed")


def format_error_list(kb: KnowledgeBase) -> str:
    """`opassess explain --list`: every concrete code with its meaning, then the families composed on lookup."""
    codes = kb.error_codes
    lines = [f"{c.code:<40} {c.value if c.value is not None else '':>7}  {c.meaning}" for c in listed_codes(codes)]
    families = sorted(c.code for c in codes.values() if c.module is not None)
    lines += ["", "Families (any code of the form is explained from its module and kind): "
              "ERRxxyyy with xx in " + ", ".join(f[3:] for f in families if f.startswith("ERR"))
              + "; E-codes Emnnnn with m in " + ", ".join(f[1:] for f in families if not f.startswith("ERR"))]
    return "\n".join(lines)


def format_import(summary: Mapping[str, Any]) -> str:
    """One line saying what `opassess kb import` wrote."""
    return (f"imported torch-npu {summary['torch_npu_version']} (torch {summary['torch_version']}): "
            f"{summary['kernels']} kernels -> {summary['path']}")
