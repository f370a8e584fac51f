"""What the findings code registers and patterns.toml is checked against: finding families, detail functions,
FLOP formulas and the roles the code names.

Each is registered next to its implementation (torch's `register_flop_formula` habit): a new family is one module
with one decorator, and a name registered twice is an error. The pattern validator reads these registries, so a
patterns.toml that lacks a role or a finding kind the code relies on is refused when it is loaded, not when a
model happens to reach that code.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..records import Finding, Inventory, OpNode

if TYPE_CHECKING:
    from .graph import Graph


@dataclass(frozen=True)
class Survey:
    """What every finding family reads: the role-annotated graph, the inventory and the scan's options."""

    graph: Graph
    inventory: Inventory
    kb: Any  # the knowledge base (only the mixed-precision family asks it anything)
    dtype: str | None  # the target dtype; None: no kernel dtype check (float64 is flagged regardless)
    product: str
    torch_version: str | None


@dataclass(frozen=True)
class Family:
    """One kind of finding search, run in `order` by find_findings."""

    name: str
    order: int
    find: Callable[[Survey], Iterable[Finding]]
    module: str


Detail = Callable[["Graph", Sequence[str]], dict[str, Any]]

FAMILIES: dict[str, Family] = {}
# Detail functions a pattern may name (patterns.toml `detail = "..."`): name -> (function, title fields it adds).
DETAILS: dict[str, tuple[Detail, tuple[str, ...]]] = {}
# FLOP formulas by role, for nodes the trace left at 0 (export captures, attention on the CPU).
FLOP_FORMULAS: dict[str, Callable[[OpNode], int | None]] = {}
# Roles and finding kinds the code names -> the module that names them (for the validator's message).
CODE_ROLES: dict[str, str] = {}
CODE_KINDS: dict[str, str] = {}


def _module_path(module: str) -> str:
    return module.replace(".", "/") + ".py"


def family(name: str, order: int, *, kinds: Sequence[str] = ()) -> Callable:
    """Register a finding family; `kinds` are the finding kinds it emits (patterns.toml must describe each)."""
    def register(fn: Callable[[Survey], Iterable[Finding]]) -> Callable[[Survey], Iterable[Finding]]:
        if name in FAMILIES:
            raise ValueError(f"finding family {name!r} registered twice")
        FAMILIES[name] = Family(name, order, fn, _module_path(fn.__module__))
        for kind in kinds:
            CODE_KINDS.setdefault(kind, _module_path(fn.__module__))
        return fn
    return register


def detail(name: str, fields: tuple[str, ...]) -> Callable[[Detail], Detail]:
    """Register a detail function: (graph, matched node names) -> extra title fields."""
    def register(fn: Detail) -> Detail:
        if name in DETAILS:
            raise ValueError(f"detail function {name!r} registered twice")
        DETAILS[name] = (fn, fields)
        return fn
    return register


def flop_formula(role: str) -> Callable:
    """Register the FLOP formula of the nodes playing `role`."""
    def register(fn: Callable[[OpNode], int | None]) -> Callable[[OpNode], int | None]:
        if role in FLOP_FORMULAS:
            raise ValueError(f"FLOP formula for role {role!r} registered twice")
        FLOP_FORMULAS[role] = fn
        return fn
    return register


def uses_roles(module: str, *roles: str) -> None:
    """Note that `module`'s code refers to these roles by name: patterns.toml must define them."""
    for role in roles:
        CODE_ROLES.setdefault(role, _module_path(module))


def families() -> Sequence[Family]:
    """The registered families in running order."""
    return sorted(FAMILIES.values(), key=lambda f: f.order)


def registered_roles() -> Mapping[str, str]:
    """Every role the code needs, with why: a module names it, or a FLOP formula is keyed to it."""
    needed = {role: f"{module} uses this role" for role, module in CODE_ROLES.items()}
    for role in FLOP_FORMULAS:
        needed.setdefault(role, "a FLOP formula is keyed to it")
    return needed
