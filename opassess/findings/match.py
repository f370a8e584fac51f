"""The pattern matcher: patterns.toml's chains of roles found along the capture's data-flow edges.

Matching strategy: for each pattern (in file order), every node playing the first step's role is a candidate
start; from it a depth-first search follows data consumers (looking through transparent nodes: views, casts,
eval-mode dropout) step by step, where "role?" may be skipped and "role*" repeats up to _MAX_STAR times, and
keeps the longest complete chain. A node already in a chain of this pattern starts or joins no other. Options
narrow a match: `exclusive` requires every matched node but the last to feed nothing else, `reject_inputs`
refuses a start fed by one of those roles. Then `yields_to` drops a chain that shares a node with a match of a
stronger pattern, and chains with the same operators and detail facts are grouped into one finding with a
count (repeated transformer blocks give one finding, not one per layer).
"""
from __future__ import annotations

from ..messages import Message
from ..records import Finding
from .calls import RENDERERS, call_fields
from .families import Survey, family
from .graph import Graph
from .patterns import Pattern
from .registry import DETAILS

_MAX_STAR = 4  # a repeated step ("scale*") matches at most this many nodes in a row


def match_chain(graph: Graph, pattern: Pattern, start: str) -> list[str] | None:
    """The longest chain of `pattern` starting at `start`, as matched node names (transparent nodes left out)."""
    steps = pattern.steps
    if not graph.plays(start, steps[0].roles):
        return None
    if pattern.reject_inputs and any(graph.plays(p, pattern.reject_inputs)
                                     for p in graph.ancestors_through_transparent(start)):
        return None
    best: list[str] | None = None

    def extend(i: int, current: str, path: list[str], repeats: int) -> None:
        nonlocal best
        if i == len(steps):
            if pattern.partner_from and not _partners_fit(graph, pattern, path):
                return
            if best is None or len(path) > len(best):
                best = list(path)
            return
        step = steps[i]
        if step.quantifier:
            extend(i + 1, current, path, 0)
        if step.quantifier == "*" and repeats >= _MAX_STAR:
            return
        if pattern.exclusive and len(graph.data_consumers(current)) != 1:
            return
        for candidate, via in graph.successors(current):
            if candidate in path or not graph.plays(candidate, step.roles):
                continue
            if pattern.exclusive and any(len(graph.data_consumers(v)) != 1 for v in via):
                continue
            path.append(candidate)
            if step.quantifier == "*":
                extend(i, candidate, path, repeats + 1)
            else:
                extend(i + 1, candidate, path, 0)
            path.pop()

    extend(1, start, [start], 0)
    return best


def _partners_fit(graph: Graph, pattern: Pattern, path: list[str]) -> bool:
    """The last step's operands from outside the chain come from the pattern's `partner_from` roles: silu(a) * b is
    SwiGLU when b is the projection's other half (a Linear, a chunk of one), not when it is Mamba's scan output."""
    others = [p for p in graph.ancestors_through_transparent(path[-1]) if p not in path]
    return bool(others) and all(graph.plays(p, pattern.partner_from) for p in others)


def match_all(graph: Graph) -> dict[str, list[list[str]]]:
    """Pattern id -> its chains, each node in at most one chain per pattern."""
    matches: dict[str, list[list[str]]] = {}
    for pattern in graph.book.patterns:
        used: set[str] = set()
        found = []
        first = frozenset(pattern.steps[0].roles)
        for node in graph.nodes:
            # only nodes playing the first step's role can start a chain (most nodes of a large model do not)
            if node.name in used or graph.roles[node.name].isdisjoint(first):
                continue
            chain = match_chain(graph, pattern, node.name)
            if chain and used.isdisjoint(chain):
                found.append(chain)
                used.update(chain)
        matches[pattern.id] = found
    return matches


@family("patterns", order=10)
def pattern_findings(survey: Survey) -> list[Finding]:
    """One finding per pattern and arrangement (fusion chains, attention, RMSNorm, rotary, SwiGLU, ...)."""
    graph = survey.graph
    book = graph.book
    matches = match_all(graph)
    findings = []
    for pattern in book.patterns:
        stronger = {name for other in pattern.yields_to for chain in matches[other] for name in chain}
        chains = [chain for chain in matches[pattern.id] if stronger.isdisjoint(chain)]
        # One finding per pattern and arrangement: repeated blocks are counted, not listed one by one.
        groups: dict[tuple, list[tuple[list[str], dict]]] = {}
        for chain in chains:
            fields = DETAILS[pattern.detail][0](graph, chain) if pattern.detail else {}
            key = (tuple(graph.node[n].key for n in chain), tuple(sorted(fields.items())))
            groups.setdefault(key, []).append((chain, fields))
        for (ops, _), members in groups.items():
            names = tuple(name for chain, _ in members for name in chain)
            title = Message.of(pattern.title, count=len(members), **members[0][1])
            render = RENDERERS.get(pattern.id)
            call = render(graph, members[0][0], members[0][1]) if render else None
            findings.append(Finding(
                kind=pattern.kind, title=title.text(), message=title, nodes=names, ops=tuple(dict.fromkeys(ops)),
                source=graph.first_source(names), npu_api=call.api if call else pattern.npu_api,
                effect=book.effects[pattern.kind],
                metrics={"occurrences": len(members)}, **call_fields(call)))
    return findings
