"""Graph-mode sites of one parsed Python file and their NPU route: `torch.compile` calls and decorators (with their
backend and mode) and `torch._dynamo` settings and calls. CUDA graphs (torch.cuda.graph, CUDAGraph) are sites of the
migration facts already (cuda_api_migration.tsv, transfer_to_npu_patches.tsv), routed to NPUGraph.

Routes come from the graph-mode facts (kb/graph_mode.json): torch_npu's inductor for the default back-end,
`mode="reduce-overhead"` as an inductor-only mode on the NPU, `backend="cudagraphs"` to npugraphs. A scan with a
model adds the model's own readiness on that back-end to each site (pipeline: `note_graph_readiness`).
"""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Any

from ..kb.graph_facts import GraphFacts
from ..messages import N_, Text
from ..vocabulary import Category, Confidence
from .facts import SourceFacts
from .records import Site, SourceFinding
from .walk import FileNodes, Resolver

COMPILE = "torch.compile"
DYNAMO = "torch._dynamo."
KINDS = ("graph-compile", "graph-setting")
# The back-end a torch.compile call names, to the NPU graph back-end (opassess.graphmode.BACKENDS) it maps to.
ROUTES = {"inductor": "inductor", "cudagraphs": "npugraph_ex", "npugraphs": "npugraph_ex", "npugraph_ex": "npugraph_ex",
          "aot_eager": "inductor", "eager": "inductor"}


def _literal(node: ast.AST | None) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str | bool | int):
        return str(node.value)
    return "?"


def scan_graph(nodes: FileNodes, scanner: Resolver) -> list[Site]:
    """The graph-mode sites of a file from its walk (`nodes`: walk.FileNodes), with a PythonScanner's alias resolution
    (`qual`, `code`), in breadth-first order (outer nodes first)."""
    found: list[tuple[tuple[int, int], Site]] = []  # ((depth, walk index), site)

    def add(order: tuple[int, int], node: ast.expr | ast.stmt, kind: str, subject: str, detail=(),
            line: int = 0) -> None:
        line = line or node.lineno
        found.append((order, Site(scanner.file, line, scanner.code(line), kind, subject, tuple(detail))))

    for call, _, flags, index in nodes.calls:
        q = scanner.qual(call.func)
        if q == COMPILE:
            add((flags >> 2, index), call, "graph-compile", COMPILE,
                [(k.arg, _literal(k.value)) for k in call.keywords if k.arg in ("backend", "mode", "fullgraph")])
        elif q and q.startswith(DYNAMO):
            add((flags >> 2, index), call, "graph-setting", q)
    for function, flags, index in nodes.functions:
        for deco in function.decorator_list:
            if scanner.qual(deco) == COMPILE:  # a bare @torch.compile (the called form is a Call above)
                add((flags >> 2, index), function, "graph-compile", COMPILE, (("use", "decorator"),), deco.lineno)
    for assign, _, flags, index in nodes.assigns:
        if isinstance(assign, ast.AnnAssign):
            continue
        for target in assign.targets if isinstance(assign, ast.Assign) else [assign.target]:
            q = scanner.qual(target) if isinstance(target, ast.Attribute) else None
            if q and q.startswith(DYNAMO):
                add((flags >> 2, index), assign, "graph-setting", q, (("value", _literal(assign.value)),))
    found.sort(key=lambda item: item[0])
    return [site for _, site in found]


def classify_graph(site: Site, facts: GraphFacts, source_facts: SourceFacts) -> SourceFinding:
    """The finding of one graph-mode site: its NPU route and the fact rows behind it (`facts`: GraphFacts;
    `source_facts`: the migration rows, which name torch.compile(backend='cudagraphs'))."""
    fallback = facts.data["sources"]["inductor_fallback"]["table"]
    inductor = f"{fallback} (torch_npu/_inductor: the NPU inductor and its lowering fallback list)"
    if site.kind == "graph-setting":
        return SourceFinding(site.file, site.line, site.code, site.kind, Category.DIRECT, site.subject,
                             Text(N_("torch._dynamo is device-independent: the setting applies as is to torch_npu's "
                                     "inductor and to torchair's back-ends (which compile through dynamo)")),
                             (inductor,), Confidence.MEDIUM)
    backend, mode = site.get("backend", "inductor"), site.get("mode")
    notes = []
    rule = source_facts.migration(COMPILE, {"backend": backend}) if backend == "cudagraphs" else None
    if backend == "cudagraphs":
        category = Category.PARAM_CONVERTED
        route = Text(N_("%(route)s (aclgraph capture)"),
                     {"route": rule.npu_equivalent if rule else "torch.compile(backend=npugraphs)"})
        evidence = [rule.cite if rule else "", facts.capture_cite("aclnn_only")]
    elif backend in ("inductor", "aot_eager", "eager"):
        category = Category.DIRECT
        route = Text(N_("torch_npu's inductor (import torch_npu; backend 'inductor' compiles for the NPU)"))
        evidence = [inductor]
    elif backend == "?":
        category = Category.DIRECT
        route = Text(N_("the back-end chosen at run time: torch_npu's inductor, npugraph_ex or torchair"))
        evidence = [inductor]
    else:
        category = Category.PARAM_CONVERTED
        route = Text(N_("back-end %(backend)s has no NPU counterpart named in the facts: use torch_npu's inductor, "
                        "npugraph_ex (aclgraph) or torchair's GE"), {"backend": repr(backend)})
        evidence = [inductor, facts.capture_cite("ge_no_fallback")]
    if mode == "reduce-overhead":
        route = Text(N_("%(route)s; mode='reduce-overhead' runs on the NPU inductor only (NPUGraph trees)"),
                     {"route": route})
        evidence.append(facts.capture_cite("reduce_overhead"))
        notes.append(Text(N_("torchair's own reduce-overhead mode is frozen after torch_npu 7.3.0")))
    return SourceFinding(site.file, site.line, site.code, site.kind, category, site.subject, route,
                         tuple(e for e in evidence if e), Confidence.HIGH if backend != "?" else Confidence.MEDIUM,
                         tuple(notes))


def graph_backend_of(finding: SourceFinding) -> str | None:
    """The NPU graph back-end a graph-compile finding routes to (None for other findings)."""
    if finding.kind != "graph-compile":
        return None
    if "npugraphs" in finding.npu_route:
        return "npugraph_ex"
    return "inductor"


def note_graph_readiness(findings: tuple[SourceFinding, ...], graph: Any) -> tuple[SourceFinding, ...]:
    """Each graph-compile finding with the scanned model's readiness on the back-end it routes to (`graph`: the
    GraphMode of the same scan), as a note."""
    if graph is None:
        return findings
    out = []
    for finding in findings:
        backend = graph_backend_of(finding)
        if backend is not None:
            state = graph.backend(backend)
            first = state.breaks[0] if state.breaks else None
            text = (Text(N_("this model on %(backend)s: ready"), {"backend": backend}) if state.ready or first is None
                    else Text(N_("this model on %(backend)s: %(n)s break(s), first %(op)s at %(source)s"),
                              {"backend": backend, "n": len(state.breaks), "op": first.op, "source": first.source})
                    if first.source else
                    Text(N_("this model on %(backend)s: %(n)s break(s), first %(op)s"),
                         {"backend": backend, "n": len(state.breaks), "op": first.op}))
            finding = replace(finding, notes=(*finding.notes, text))
        out.append(finding)
    return tuple(out)
