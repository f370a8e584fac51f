"""The capture's data-flow graph, built once per assessment: the findings walk it, the scores take its main path.

`DataFlow` is the plain graph over the capture's OpNode records and (producer, consumer) edges; `Graph` adds
what patterns.toml says each node does (its roles) and the look-through rules the matcher needs.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..records import Capture, OpNode
from .patterns import PatternBook
from .registry import uses_roles

_MAX_LOOK_THROUGH = 6  # transparent nodes looked through between two steps

uses_roles(__name__, "view")


class DataFlow:
    """Nodes in capture (execution) order with their producers and consumers, read-only."""

    def __init__(self, nodes: Sequence[OpNode], edges: Iterable[tuple[str, str]]) -> None:
        self.nodes = tuple(nodes)
        self.order = {node.name: i for i, node in enumerate(self.nodes)}
        self.node = {node.name: node for node in self.nodes}
        producers: dict[str, list[str]] = {name: [] for name in self.order}
        consumers: dict[str, list[str]] = {name: [] for name in self.order}
        for producer, consumer in edges:
            # Capture order is execution order; an edge pointing backwards is not data flow.
            if producer in self.order and consumer in self.order and self.order[producer] < self.order[consumer]:
                producers[consumer].append(producer)
                consumers[producer].append(consumer)
        sort = self.order.__getitem__  # every name here is in the order (checked above)
        self.producers = {k: tuple(sorted(set(v), key=sort)) for k, v in producers.items()}
        self.consumers = {k: tuple(sorted(set(v), key=sort)) for k, v in consumers.items()}

    @classmethod
    def of(cls, capture: Capture) -> DataFlow:
        """The data-flow graph of one capture."""
        return cls(capture.nodes, capture.edges)

    def descendants(self, names: Iterable[str]) -> set[str]:
        """Every node downstream of `names` (not counting them)."""
        start = set(names)
        found: set[str] = set()
        stack = list(start)
        while stack:
            for c in self.consumers[stack.pop()]:
                if c not in found:
                    found.add(c)
                    stack.append(c)
        return found - start

    def main_path(self) -> frozenset[str]:
        """Nodes on a longest path (by node count) through the graph; empty when it has no edge.

        Forward pass: depth[n] = 1 + max depth of its producers; backward pass: height[n] = 1 + max height of its
        consumers. A node lies on a longest path iff depth + height - 1 equals the longest depth. Example:
        a -> b -> d, a -> c: depth a1 b2 d3 c2, height a3 b2 d1 c1, longest 3: a (1+3-1), b (2+2-1), d (3+1-1) are
        on it, c is not.
        """
        if not any(self.producers.values()):
            return frozenset()
        names = [node.name for node in self.nodes]
        depth: dict[str, int] = {}
        for name in names:
            depth[name] = 1 + max((depth[p] for p in self.producers[name]), default=0)
        height: dict[str, int] = {}
        for name in reversed(names):
            height[name] = 1 + max((height[c] for c in self.consumers[name]), default=0)
        longest = max(depth.values())
        return frozenset(name for name in names if depth[name] + height[name] - 1 == longest)


class Graph:
    """A DataFlow with each node's roles (from the pattern book) and look-through rules, read-only."""

    def __init__(self, flow: DataFlow, book: PatternBook) -> None:
        self.flow = flow
        self.book = book
        self.nodes, self.order, self.node = flow.nodes, flow.order, flow.node
        self.producers, self.consumers = flow.producers, flow.consumers
        self.roles = {node.name: book.roles_of(node) for node in self.nodes}
        self.transparent = frozenset(book.transparent)

    def plays(self, name: str, roles: Iterable[str]) -> bool:
        return not self.roles[name].isdisjoint(roles)

    def is_transparent(self, name: str) -> bool:
        return self.plays(name, self.transparent)

    def first_source(self, names: Iterable[str]) -> str | None:
        """The source line of the first of `names` that has one."""
        return next((self.node[n].source for n in names if self.node[n].source), None)

    def data_consumers(self, name: str) -> tuple[str, ...]:
        """Consumers that take this node's values. FX records an edge from x's producer to `view(b, t, c)` when the
        sizes came from x.shape; a view with more producers than tensor operands took sizes, not values."""
        out = []
        for c in self.consumers[name]:
            node = self.node[c]
            if self.plays(c, ("view",)) and len(self.producers[c]) > len(node.input_shapes):
                continue
            out.append(c)
        return tuple(out)

    def successors(self, name: str) -> Iterable[tuple[str, tuple[str, ...]]]:
        """(consumer, transparent nodes passed on the way), looking through transparent nodes."""
        stack: list[tuple[str, tuple[str, ...]]] = [(c, ()) for c in reversed(self.data_consumers(name))]
        while stack:
            c, via = stack.pop()
            if self.is_transparent(c) and len(via) < _MAX_LOOK_THROUGH:
                stack.extend((n, via + (c,)) for n in reversed(self.data_consumers(c)))
                # a transparent node may itself be a step (a cast that is also a role): offer it too
            yield c, via

    def ancestors_through_transparent(self, name: str) -> tuple[str, ...]:
        """Producers of `name`, looking back through transparent nodes."""
        out, stack, seen = [], list(self.producers[name]), set()
        while stack:
            p = stack.pop()
            if p in seen:
                continue
            seen.add(p)
            if self.is_transparent(p):
                stack.extend(self.producers[p])
            else:
                out.append(p)
        return tuple(out)
