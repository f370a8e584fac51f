"""Whether a `topk(..., sorted=False)` call's order is used: a small, conservative data flow over one function.

The NPU returns topk's result sorted (sorted=False is not taken), so `sorted=False -> sorted=True` changes nothing
where nothing reads the order along the topk dimension. The check follows the result (its values and indices, by
name or by `.values` / `.indices` / `[0]` / `[1]`) through the function that calls it and proves that every use is
one of these:
- order-free: a reduction over the topk dimension or over everything (sum, mean, max, min, amax, amin, prod, ...),
  the values of a sort on that dimension, torch.unique, bincount, isin's test elements, a set, metadata (.shape);
  a scatter along that dimension whose index and source come from the same topk (or a constant source), and an
  indexed store of a constant (`mask[idx] = True`): each writes one element per (index, value) pair, in any order;
- order-following: elementwise ops and casts (`v.float()`, `v * 2`, `softmax`), a binary op with a constant, with the
  same topk's values or indices, or with a keepdim reduction of them; a gather by the indices; F.one_hot; whose
  result is followed in turn.
Anything else (returned, stored, passed to a function the check does not know, indexed by position, a name assigned
twice) is not proven: the call stays advice. Worked example, the MoE router

    weights, experts = torch.topk(logits, 2, dim=-1, sorted=False)
    weights = ...                       # a second assignment: not proven
    mask = torch.zeros_like(logits).scatter(-1, experts, 1.0)  # a set of experts: order-free
    load = weights.sum(-1)              # a sum over the topk dimension: order-free

proves the order unused when `weights` is assigned once.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

# methods and torch functions whose result follows the order of their tensor argument element by element
ELEMENTWISE = frozenset((
    "float", "half", "bfloat16", "double", "int", "long", "bool", "to", "type", "type_as", "detach", "clone",
    "contiguous", "cpu", "npu", "cuda", "exp", "log", "log1p", "sigmoid", "tanh", "relu", "abs", "neg", "sqrt", "rsqrt",
    "reciprocal", "clamp", "clamp_min", "clamp_max", "clip", "softmax", "log_softmax", "square", "pow", "mul", "div",
    "add", "sub", "masked_fill", "nan_to_num", "sign", "floor", "ceil", "round", "requires_grad_", "mul_", "div_",
    "add_", "sub_", "clamp_", "float_power"))
REDUCTIONS = frozenset(("sum", "mean", "prod", "amax", "amin", "logsumexp", "norm", "all", "any", "nansum", "nanmean",
                        "count_nonzero", "std", "var"))
ARG_REDUCTIONS = frozenset(("max", "min"))  # with a dim they also return positions: only their values are free
SCATTERS = frozenset(("scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce", "scatter_reduce_"))
METADATA = frozenset(("shape", "dtype", "device", "ndim", "size", "numel", "dim", "is_cuda", "requires_grad"))


@dataclass(frozen=True)
class Flow:
    """A tracked value: its topk dimension (None when a reshape or an index lost it) and its rank when known (the
    captured input's: then every dimension is compared counted from the end, 1 of a rank-2 tensor being -1)."""

    axis: int | None
    rank: int | None = None

    def dim(self, value: int | None) -> int | None:
        """A dimension as the axis is held: counted from the end when the rank is known."""
        return value - self.rank if value is not None and value >= 0 and self.rank is not None else value

    def __post_init__(self) -> None:
        object.__setattr__(self, "axis", self.dim(self.axis))


def topk_dim(call: ast.Call) -> int | None:
    """The topk call's dimension: dim= or its third (torch.topk) / second (Tensor.topk) argument; -1 by default."""
    method = isinstance(call.func, ast.Attribute) and not _is_torch(call.func.value)
    position = 1 if method else 2
    node = next((k.value for k in call.keywords if k.arg == "dim"), call.args[position] if len(call.args) > position
                else None)
    return -1 if node is None else _int(node)


def _int(node: ast.AST | None) -> int | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int(node.operand)
        return None if inner is None else -inner
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def _is_torch(node: ast.AST) -> bool:
    """torch / torch.nn.functional / F as written (an import alias of another name is not followed)."""
    text = ast.unparse(node)
    return text in ("torch", "F", "torch.nn.functional", "nn.functional", "torch.special")


def _constant(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp):
        return _constant(node.operand)
    return isinstance(node, ast.Constant) and isinstance(node.value, int | float | bool)


class OrderCheck:
    """One topk call in its scope (the function holding it, else the module)."""

    def __init__(self, scope: ast.AST, call: ast.Call, rank: int | None = None):
        self.scope, self.call, self.rank = scope, call, rank
        self.parents = {child: node for node in ast.walk(scope) for child in ast.iter_child_nodes(node)}
        self.tracked: dict[str, Flow] = {}  # names bound to the topk's values / indices (or what follows them)
        self.visited: set[str] = set()  # the names whose uses this pass has followed
        self.uses: list[str] = []  # why each use is order-free, for the patch's comment

    # ------------------------------------------------------------------ the result of the call

    def unused(self) -> bool:
        """True when every use of the call's result is proven order-free. A pass learns the names that follow the
        topk (g = y.gather(-1, idx)); one that meets such a name before it was learnt (v * g) is run again."""
        for _ in range(4):
            known = len(self.tracked)
            self.visited, self.uses = set(), []
            if self._pass():
                return True
            if len(self.tracked) == known:
                return False
        return False

    def _pass(self) -> bool:
        axis = topk_dim(self.call)
        parent = self.parents.get(self.call)
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1:
            target = parent.targets[0]
            if isinstance(target, ast.Tuple) and len(target.elts) == 2 \
                    and all(isinstance(e, ast.Name) for e in target.elts):
                names = [e.id for e in target.elts]  # type: ignore[attr-defined]
                if not all(self._assigned_once(n) for n in names):
                    return False
                self.tracked.update((n, Flow(axis, self.rank)) for n in names)  # each may meet the other (vals * idx)
                self.visited.update(names)
                return all([self._flow(load, Flow(axis, self.rank)) for n in names for load in self._loads(n)])
            if isinstance(target, ast.Name):
                return self._named_result(target.id, axis)
            return False
        return self._part(self.call, axis)

    def _part(self, node: ast.AST, axis: int | None) -> bool:
        """`call.values` / `call.indices` / `call[0]` / `call[1]`, followed; anything else of the pair is a use."""
        parent = self.parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.attr in ("values", "indices"):
            return self._flow(parent, Flow(axis, self.rank))
        if isinstance(parent, ast.Subscript) and parent.value is node and _int(parent.slice) in (0, 1):
            return self._flow(parent, Flow(axis, self.rank))
        return False

    def _named_result(self, name: str, axis: int | None) -> bool:
        if not self._assigned_once(name):
            return False
        return all(self._part(load, axis) for load in self._loads(name))

    # ------------------------------------------------------------------ names

    def _assigned_once(self, name: str) -> bool:
        stores = [n for n in ast.walk(self.scope) if isinstance(n, ast.Name) and n.id == name
                  and isinstance(n.ctx, ast.Store | ast.Del)]
        nested = any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) and n is not self.scope
                     and any(isinstance(m, ast.Name) and m.id == name for m in ast.walk(n))
                     for n in ast.walk(self.scope))
        declared = any(isinstance(n, ast.Global | ast.Nonlocal) and name in n.names for n in ast.walk(self.scope))
        return len(stores) == 1 and not nested and not declared

    def _loads(self, name: str) -> Iterator[ast.Name]:
        return (n for n in ast.walk(self.scope) if isinstance(n, ast.Name) and n.id == name
                and isinstance(n.ctx, ast.Load))

    def _name(self, name: str, flow: Flow) -> bool:
        if name in self.tracked and self.tracked[name] != flow:
            return False
        if name in self.visited:
            return True
        if not self._assigned_once(name):
            return False
        self.tracked[name] = flow
        self.visited.add(name)
        return all([self._flow(load, flow) for load in self._loads(name)])  # every use: each may name another

    def _same_origin(self, node: ast.AST, flow: Flow) -> bool:
        """A name already tracked with the same known dimension (the same topk's values or indices, or what follows
        them element by element)."""
        return flow.axis is not None and isinstance(node, ast.Name) and self.tracked.get(node.id) == flow

    def _harmless(self, node: ast.AST, flow: Flow) -> bool:
        """An argument that cannot bring an order of its own: a constant, a dtype or device, the same topk's."""
        if _constant(node) or isinstance(node, ast.Constant) and isinstance(node.value, str):
            return True
        if isinstance(node, ast.Attribute) and (node.attr in ("dtype", "device") or _is_torch(node.value)):
            return not self._mentions(node.value) or node.attr in ("dtype", "device")
        return self._same_origin(node, flow) or self._free_reduction(node, flow)

    def _free_reduction(self, node: ast.AST, flow: Flow) -> bool:
        """`x.sum(dim, keepdim=True)` of a tracked x over its topk dimension: the same for every order, broadcasts."""
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in REDUCTIONS and self._same_origin(node.func.value, flow) \
            and self._dim_is(node, 0, flow) is True

    # ------------------------------------------------------------------ one use

    def _dim_is(self, call: ast.Call, position: int, flow: Flow, default: int | None = None) -> bool | None:
        """Whether the call's dim (dim= or its argument at `position`) is the topk dimension: True, False (another),
        None (no dim: every dimension when `default` is None)."""
        node = next((k.value for k in call.keywords if k.arg == "dim"), call.args[position]
                    if len(call.args) > position else None)
        if node is None:
            return None if default is None else (flow.axis is not None and default == flow.axis)
        if isinstance(node, ast.Tuple):
            dims = [flow.dim(_int(e)) for e in node.elts]
            return flow.axis is not None and flow.axis in dims
        return flow.axis is not None and flow.dim(_int(node)) == flow.axis

    def _free(self, why: str) -> bool:
        self.uses.append(why)
        return True

    def _flow(self, node: ast.AST, flow: Flow) -> bool:
        """True when what `node` (a tracked tensor) flows into never reads its order."""
        parent = self.parents.get(node)
        if isinstance(parent, ast.Expr):
            return True  # the value is dropped
        if isinstance(parent, ast.Assign) and parent.value is node and len(parent.targets) == 1 \
                and isinstance(parent.targets[0], ast.Name):
            return self._name(parent.targets[0].id, flow)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return self._method(parent, flow)
        if isinstance(parent, ast.keyword):
            parent = self.parents.get(parent)
        if isinstance(parent, ast.Call) and parent.func is not node:
            return self._argument(parent, node, flow)
        if isinstance(parent, ast.BinOp):
            other = parent.right if parent.left is node else parent.left
            return self._harmless(other, flow) and not isinstance(other, ast.Attribute) and self._flow(parent, flow)
        if isinstance(parent, ast.UnaryOp):
            return self._flow(parent, flow)
        if isinstance(parent, ast.Compare) and len(parent.comparators) == 1:
            other = parent.comparators[0] if parent.left is node else parent.left
            return (_constant(other) or self._same_origin(other, flow)) and self._flow(parent, flow)
        if isinstance(parent, ast.Subscript) and parent.slice is node:
            return self._subscript(parent, flow)
        outer = self.parents.get(parent) if isinstance(parent, ast.Tuple) else None
        if isinstance(outer, ast.Subscript) and outer.slice is parent:
            return self._subscript(outer, flow)
        return False

    def _method(self, attribute: ast.Attribute, flow: Flow) -> bool:
        name = attribute.attr
        if name in METADATA:
            return True
        call = self.parents.get(attribute)
        if not isinstance(call, ast.Call) or call.func is not attribute:
            return False
        arguments = (*call.args, *(k.value for k in call.keywords))
        if name in ELEMENTWISE and all(self._harmless(a, flow) for a in arguments):
            return self._flow(call, flow)
        if name in REDUCTIONS:
            return self._reduced(call, 0, flow, f".{name}")
        if name in ARG_REDUCTIONS:
            return self._arg_reduced(call, 0, flow, f".{name}")
        if name == "sort":
            return self._sorted(call, 0, flow)
        if name == "unique":
            return self._unique(call)
        if name == "tolist":
            outer = self.parents.get(call)
            return isinstance(outer, ast.Call) and ast.unparse(outer.func) in ("set", "frozenset") \
                and self._free("a set")
        return False

    def _mentions(self, node: ast.AST) -> bool:
        return any(isinstance(n, ast.Name) and n.id in self.tracked for n in ast.walk(node)) \
            or any(n is self.call for n in ast.walk(node))

    def _reduced(self, call: ast.Call, position: int, flow: Flow, what: str) -> bool:
        dim = self._dim_is(call, position, flow)
        if dim is None:
            return self._free(f"{what} over all")
        return dim and self._free(f"{what} over dim {flow.axis}")

    def _arg_reduced(self, call: ast.Call, position: int, flow: Flow, what: str) -> bool:
        dim = self._dim_is(call, position, flow)
        if dim is None:
            return self._free(f"{what} over all")
        outer = self.parents.get(call)
        values = isinstance(outer, ast.Attribute) and outer.attr == "values" or (
            isinstance(outer, ast.Subscript) and _int(outer.slice) == 0)
        return dim and values and self._free(f"{what} over dim {flow.axis}")

    def _sorted(self, call: ast.Call, position: int, flow: Flow) -> bool:
        """Only a sort's values are order-free (its indices are positions in the topk order)."""
        if self._dim_is(call, position, flow, default=-1) is not True:
            return False
        outer = self.parents.get(call)
        if isinstance(outer, ast.Attribute) and outer.attr == "values" or (
                isinstance(outer, ast.Subscript) and _int(outer.slice) == 0):
            return self._free("sort's values")
        if isinstance(outer, ast.Assign) and isinstance(outer.targets[0], ast.Tuple) \
                and len(outer.targets[0].elts) == 2 and all(isinstance(e, ast.Name) for e in outer.targets[0].elts):
            positions = outer.targets[0].elts[1].id  # type: ignore[attr-defined]
            return next(self._loads(positions), None) is None and self._free("sort's values")
        return False

    def _unique(self, call: ast.Call) -> bool:
        unsorted = any(k.arg == "sorted" and isinstance(k.value, ast.Constant) and k.value.value is False
                       for k in call.keywords)
        return not unsorted and self._free("unique")

    def _argument(self, call: ast.Call, node: ast.AST, flow: Flow) -> bool:
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        torch_call = isinstance(func, ast.Attribute) and _is_torch(func.value)
        index = next((i for i, a in enumerate(call.args) if a is node), None)
        keyword = next((k.arg for k in call.keywords if k.value is node), None)
        if torch_call and index == 0:
            if name in ELEMENTWISE and all(self._harmless(a, flow) for a in (*call.args[1:],
                                                                             *(k.value for k in call.keywords))):
                return self._flow(call, flow)
            if name in REDUCTIONS:
                return self._reduced(call, 1, flow, f"torch.{name}")
            if name in ARG_REDUCTIONS:
                return self._arg_reduced(call, 1, flow, f"torch.{name}")
            if name == "sort":
                return self._sorted(call, 1, flow)
            if name == "unique":
                return self._unique(call)
            if name == "bincount":
                return self._free("bincount")
            if name == "one_hot":
                return self._flow(call, Flow(None if flow.axis is None else flow.axis - 1 if flow.axis < 0
                                             else flow.axis, None if flow.rank is None else flow.rank + 1))
        if torch_call and name == "isin" and (index == 1 or keyword == "test_elements"):
            return self._free("isin's test elements")
        if name in ("set", "frozenset") and isinstance(func, ast.Name):
            return self._free("a set")
        if name == "gather" and (keyword == "index" or index == (2 if torch_call else 1)):
            source = call.args[0] if torch_call and call.args else func.value if isinstance(func, ast.Attribute) \
                else None
            return source is not None and not self._mentions(source) and self._flow(call, flow)
        if name in SCATTERS:
            return self._scatter(call, torch_call, flow)
        return False

    def _scatter(self, call: ast.Call, torch_call: bool, flow: Flow) -> bool:
        """A scatter along the topk dimension whose index and source are the same topk's (or the source a
        constant): one element per pair, in any order."""
        args = call.args[1:] if torch_call else call.args
        named = {k.arg: k.value for k in call.keywords}
        dim = named.get("dim", args[0] if args else None)
        index = named.get("index", args[1] if len(args) > 1 else None)
        source = named.get("src", named.get("value", args[2] if len(args) > 2 else None))
        target = call.args[0] if torch_call and call.args else call.func.value  # type: ignore[attr-defined]
        if dim is None or index is None or source is None or flow.axis is None or flow.dim(_int(dim)) != flow.axis \
                or self._mentions(target):
            return False
        if not self._same_origin(index, flow) or not (_constant(source) or self._same_origin(source, flow)):
            return False
        return self._free(f"scatter along dim {flow.axis}")

    def _subscript(self, subscript: ast.Subscript, flow: Flow) -> bool:
        """`out[idx] = constant` writes a set; `x[idx]` (a load) follows the indices with the dimension unknown."""
        if self._mentions(subscript.value):
            return False
        outer = self.parents.get(subscript)
        if isinstance(subscript.ctx, ast.Store):
            return isinstance(outer, ast.Assign) and _constant(outer.value) and self._free("an indexed store of a "
                                                                                          "constant")
        return isinstance(subscript.ctx, ast.Load) and self._flow(subscript, Flow(None))  # rank and axis unknown


def order_unused(scope: ast.AST, call: ast.Call, rank: int | None = None) -> tuple[str, ...] | None:
    """The order-free uses of the topk call's result when every use is one (an empty tuple: none is read at all);
    None when one use may read the order, or the check cannot tell. `rank`: the topk input's, when the capture knows
    it (then `scatter_(1, idx, 1)` after a topk on dim -1 of a 2-D tensor is along the same dimension)."""
    check = OrderCheck(scope, call, rank)
    try:
        return tuple(dict.fromkeys(check.uses)) if check.unused() else None
    except RecursionError:
        return None
