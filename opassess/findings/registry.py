"""What patterns.toml is checked against: the detail functions, FLOP formulas, roles and finding kinds the findings
code names (the finding families themselves are registered in families.py).

Each is registered next to its implementation (torch's `register_flop_formula` habit), and a name registered twice
is an error. The pattern validator reads these registries, so a patterns.toml that lacks a role or a finding kind
the code relies on is refused when it is loaded, not when a model happens to reach that code. This module sits
below the graph (graph.py registers the roles it names here), so nothing in it names the graph's type.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..records import OpNode

# A detail function: (the role-annotated findings.graph.Graph, the matched node names) -> extra title fields. The
# graph is typed Any here: graph.py imports this module, so naming its type would close a circle.
Detail = Callable[[Any, Sequence[str]], dict[str, Any]]

# Detail functions a pattern may name (patterns.toml `detail = "..."`): name -> (function, title fields it adds).
DETAILS: dict[str, tuple[Detail, tuple[str, ...]]] = {}
# FLOP formulas by role, for nodes the trace left at 0 (export captures, attention on the CPU).
FLOP_FORMULAS: dict[str, Callable[[OpNode], int | None]] = {}
# Roles and finding kinds the code names -> the module that names them (for the validator's message).
CODE_ROLES: dict[str, str] = {}
CODE_KINDS: dict[str, str] = {}


def _module_path(module: str) -> str:
    return module.replace(".", "/") + ".py"


def uses_kinds(module: str, *kinds: str) -> None:
    """Note that `module`'s code emits these finding kinds: patterns.toml must describe each."""
    for kind in kinds:
        CODE_KINDS.setdefault(kind, _module_path(module))


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


def registered_roles() -> Mapping[str, str]:
    """Every role the code needs, with why: a module names it, or a FLOP formula is keyed to it."""
    needed = {role: f"{module} uses this role" for role, module in CODE_ROLES.items()}
    for role in FLOP_FORMULAS:
        needed.setdefault(role, "a FLOP formula is keyed to it")
    return needed
