"""The values a project's defaults give, read from the syntax tree: a config class's field defaults, a constructor's
flag defaults no call overrides, `cfg.pop("layer", "Mamba1")`; anything else is unknown (both ways stay open).

Example: `use_fast_path=True` in Mamba.__init__ with `self.use_fast_path = use_fast_path`: `self.use_fast_path` is
True wherever no call in the project passes use_fast_path=...; `not self.use_fast_path and x` is then False.
"""
from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

UNKNOWN: Any = type("Unknown", (), {"__repr__": lambda self: "UNKNOWN"})()
DICT_LOOKUPS = ("pop", "get")  # cfg.pop("layer", "Mamba1"): the default config's dict gives the default


@dataclass(frozen=True)
class Config:
    """A config class of the project (a dataclass or a class named *Config) and its field defaults."""

    file: str
    name: str
    fields: Mapping[str, Any]

    def lookup(self, key: str) -> Any:
        """A key of one of its dict fields' defaults (`ssm_cfg = {"layer": "Mamba2"}`), UNKNOWN when none holds it."""
        for value in self.fields.values():
            if isinstance(value, dict) and key in value:
                return value[key]
        return UNKNOWN


@dataclass
class Scope:
    """What is known inside one function: trusted parameter defaults and single assignments (`names`), the class's
    `self.X` set once in __init__ (`attrs`), the names holding a config (`configs`)."""

    names: dict[str, Any] = field(default_factory=dict)
    attrs: Mapping[str, Any] = field(default_factory=dict)
    configs: Mapping[str, Config] = field(default_factory=dict)
    lookups: tuple[Config, ...] = ()  # every config: where a dict lookup's key may have a default


def literal(node: ast.AST | None) -> Any:
    """A constant, a list/tuple/dict of constants, `field(default=...)` / `field(default_factory=dict)`; UNKNOWN."""
    if node is None:
        return UNKNOWN
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List | ast.Tuple):
        items = tuple(literal(e) for e in node.elts)
        return UNKNOWN if UNKNOWN in items else items
    if isinstance(node, ast.Dict):
        keys, values = [literal(k) for k in node.keys], [literal(v) for v in node.values]
        return UNKNOWN if UNKNOWN in keys else dict(zip(keys, values, strict=True))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "field":
        for keyword in node.keywords:
            if keyword.arg == "default":
                return literal(keyword.value)
            if keyword.arg == "default_factory":
                made = keyword.value
                if isinstance(made, ast.Name) and made.id in ("dict", "list", "tuple"):
                    return {} if made.id == "dict" else ()
                if isinstance(made, ast.Lambda):
                    return literal(made.body)
    return UNKNOWN


def config_fields(node: ast.ClassDef) -> dict[str, Any]:
    """A config class's defaults: its annotated fields with a value, then its __init__'s parameter defaults."""
    fields: dict[str, Any] = {}
    for statement in node.body:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value:
            fields[statement.target.id] = literal(statement.value)
        elif isinstance(statement, ast.FunctionDef) and statement.name == "__init__":
            fields.update(parameter_defaults(statement))
    return {k: v for k, v in fields.items() if v is not UNKNOWN}


def parameter_defaults(node: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, Any]:
    """Parameter name -> its literal default (positional and keyword-only)."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    return {a.arg: literal(d) for a, d in pairs if literal(d) is not UNKNOWN}


def evaluate(node: ast.AST, scope: Scope) -> Any:
    """The value `node` has under the defaults, or UNKNOWN."""
    if isinstance(node, ast.Constant | ast.List | ast.Tuple | ast.Dict):
        return literal(node)
    if isinstance(node, ast.Name):
        return scope.names.get(node.id, UNKNOWN)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.value.id == "self":
            return scope.attrs.get(node.attr, UNKNOWN)
        config = scope.configs.get(node.value.id)
        return config.fields.get(node.attr, UNKNOWN) if config else UNKNOWN
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in DICT_LOOKUPS \
            and len(node.args) == 2 and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        for config in scope.lookups:
            value = config.lookup(node.args[0].value)
            if value is not UNKNOWN:
                return value
        return evaluate(node.args[1], scope)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        value = evaluate(node.operand, scope)
        return UNKNOWN if value is UNKNOWN else not value
    if isinstance(node, ast.BoolOp):
        return _bool_op(node, scope)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return _compare(node.ops[0], evaluate(node.left, scope), evaluate(node.comparators[0], scope))
    return UNKNOWN


def _bool_op(node: ast.BoolOp, scope: Scope) -> Any:
    """`a and b`: False when any part is known false, True when all are known true; `or` the other way round."""
    values = [evaluate(v, scope) for v in node.values]
    decisive = isinstance(node.op, ast.Or)  # the value that settles it: True for `or`, False for `and`
    if any(v is not UNKNOWN and bool(v) is decisive for v in values):
        return decisive
    return UNKNOWN if UNKNOWN in values else not decisive


def _compare(op: ast.cmpop, left: Any, right: Any) -> Any:
    if left is UNKNOWN or right is UNKNOWN:
        return UNKNOWN
    try:
        if isinstance(op, ast.Eq | ast.Is):
            return left == right
        if isinstance(op, ast.NotEq | ast.IsNot):
            return left != right
        if isinstance(op, ast.In):
            return left in right
        if isinstance(op, ast.NotIn):
            return left not in right
    except TypeError:
        return UNKNOWN
    return UNKNOWN


def function_scope(node: ast.FunctionDef | ast.AsyncFunctionDef, overridden: frozenset[str], attrs: Mapping[str, Any],
                   configs: Mapping[str, Config], lookups: tuple[Config, ...]) -> Scope:
    """The scope of one function: parameter defaults no call in the project overrides (a keyword of that name passed
    anywhere), names annotated with or named after a config class holding its defaults, then the names assigned once
    in its body whose value is known."""
    assigned: dict[str, int] = {}
    for statement in ast.walk(node):
        if isinstance(statement, ast.Assign | ast.AugAssign | ast.AnnAssign):
            for target in (statement.targets if isinstance(statement, ast.Assign) else [statement.target]):
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        assigned[name.id] = assigned.get(name.id, 0) + 1
    scope = Scope(names={k: v for k, v in parameter_defaults(node).items() if k not in overridden | set(assigned)},
                  attrs=attrs, lookups=lookups)
    holders: dict[str, Config] = {}
    for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
        hint = arg.annotation
        named = hint.id if isinstance(hint, ast.Name) else hint.attr if isinstance(hint, ast.Attribute) else ""
        if named in configs:
            holders[arg.arg] = configs[named]
        elif arg.arg == "config" and len(configs) == 1:  # `def __init__(self, config)` in a project with one config
            holders[arg.arg] = next(iter(configs.values()))
    scope.configs = holders
    singles = sorted((s for s in ast.walk(node) if isinstance(s, ast.Assign)), key=lambda s: s.lineno)
    for statement in singles:  # names assigned once in the body, to a known value
        if len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name) and assigned.get(statement.targets[0].id) == 1:
            value = evaluate(statement.value, scope)
            if value is not UNKNOWN:
                scope.names[statement.targets[0].id] = value
    return scope


def init_attrs(node: ast.ClassDef, overridden: frozenset[str], configs: Mapping[str, Config],
               lookups: tuple[Config, ...]) -> dict[str, Any]:
    """`self.X` a class's __init__ sets once to a known value (`self.use_fast_path = use_fast_path`)."""
    init = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    if init is None:
        return {}
    scope = function_scope(init, overridden, {}, configs, lookups)
    counts: dict[str, int] = {}
    values: dict[str, Any] = {}
    for statement in ast.walk(init):
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id == "self":
                    counts[target.attr] = counts.get(target.attr, 0) + 1
                    values[target.attr] = evaluate(statement.value, scope)
    return {k: v for k, v in values.items() if counts[k] == 1 and v is not UNKNOWN}
