"""The finding families: each kind of finding search registers itself with `@family(name, order, kinds=...)` next to
its implementation, and find_findings runs them in order over one `Survey` of the model."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..records import Finding, Inventory
from .registry import uses_kinds

if TYPE_CHECKING:
    from ..kb.store import KnowledgeBase
    from .graph import Graph


@dataclass(frozen=True)
class Survey:
    """What every finding family reads: the role-annotated graph, the inventory and the scan's options."""

    graph: Graph
    inventory: Inventory
    kb: KnowledgeBase  # only the mixed-precision family asks it anything
    dtype: str | None  # the target dtype; None: no kernel dtype check (float64 is flagged regardless)
    product: str
    torch_version: str | None
    natively: frozenset[str] = frozenset()  # operators the kernel facts say run the target dtype (classify's verdict)


@dataclass(frozen=True)
class Family:
    """One kind of finding search, run in `order` by find_findings."""

    name: str
    order: int
    find: Callable[[Survey], Iterable[Finding]]
    module: str


FAMILIES: dict[str, Family] = {}


def family(name: str, order: int, *, kinds: Sequence[str] = ()) -> Callable:
    """Register a finding family; `kinds` are the finding kinds it emits (patterns.toml must describe each)."""
    def register(fn: Callable[[Survey], Iterable[Finding]]) -> Callable[[Survey], Iterable[Finding]]:
        if name in FAMILIES:
            raise ValueError(f"finding family {name!r} registered twice")
        FAMILIES[name] = Family(name, order, fn, fn.__module__.replace(".", "/") + ".py")
        uses_kinds(fn.__module__, *kinds)
        return fn
    return register


def families() -> Sequence[Family]:
    """The registered families in running order."""
    return sorted(FAMILIES.values(), key=lambda f: f.order)
