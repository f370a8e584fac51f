"""source/patch/order.py: whether a topk(sorted=False) call's order is read, on small functions whose answer is
derived by hand (each comment says which use decides it)."""
from __future__ import annotations

import ast
import textwrap

import pytest

from opassess.source.patch.order import order_unused

PROVEN = {
    # a sum over the topk dimension (-1, the default) of values and indices
    "sum": ("v, i = torch.topk(x, 2, dim=-1, sorted=False)\nreturn v.sum(-1), i.float().sum(-1)",
            (".sum over dim -1",)),
    # the MoE router: a mask and a combine built by scatter along the topk dimension, index and source paired
    "scatter": ("w, e = torch.topk(x, 2, dim=-1, sorted=False)\np = w / w.sum(-1, keepdim=True)\n"
                "return torch.zeros_like(x).scatter(-1, e, p), torch.zeros_like(x).scatter(-1, e, 1.0)",
                ("scatter along dim -1", ".sum over dim -1")),
    "mean of values": ("return torch.topk(x, 3, sorted=False).values.mean()", (".mean over all",)),
    # a sort afterwards: its values are fixed by the set; its positions are not read
    "sort": ("v, i = x.topk(3, sorted=False)\ns, _ = torch.sort(v)\nreturn s, i.sum()",
             ("sort's values", ".sum over all")),
    "max values": ("v, i = x.topk(3, sorted=False)\nreturn v.max(-1).values", (".max over dim -1",)),
    "set": ("v, i = x.topk(3, sorted=False)\nreturn set(i.tolist())", ("a set",)),
    "indexed store": ("v, i = x.topk(3, sorted=False)\nm = torch.zeros_like(x, dtype=torch.bool)\nm[i] = True\n"
                      "return m", ("an indexed store of a constant",)),
    # gathered by the indices: the gather follows their order, the product pairs it with the values, then a sum
    "gather": ("v, i = x.topk(3, dim=-1, sorted=False)\ng = y.gather(-1, i)\nreturn (g * v).sum(-1)",
               (".sum over dim -1",)),
    "one_hot": ("v, i = x.topk(2, dim=-1, sorted=False)\nreturn F.one_hot(i, 8).sum(-2), v.sum(-1)",
                (".sum over dim -2", ".sum over dim -1")),
    "unused": ("v, i = x.topk(2, sorted=False)\nreturn x", ()),
}
USED = {
    "first position": "v, i = x.topk(3, sorted=False)\nreturn v[:, 0]",
    "returned": "v, i = x.topk(3, sorted=False)\nreturn i",
    "sum over another dim": "v, i = x.topk(3, dim=1, sorted=False)\nreturn v.sum(-1)",
    "normalised and returned": "w, e = torch.topk(x, 2, dim=-1, sorted=False)\nw = w / w.sum(-1, keepdim=True)\n"
                               "return w",
    "sort positions": "v, i = x.topk(3, sorted=False)\ns, p = torch.sort(v)\nreturn s, p",
    "argmax": "v, i = x.topk(3, sorted=False)\nreturn v.max(-1)",
    "weighted by a parameter": "v, i = x.topk(3, dim=-1, sorted=False)\nreturn (v * self.w).sum(-1)",
    "elementwise with a tensor": "v, i = x.topk(2, dim=-1, sorted=False)\nreturn v.mul(y).sum(-1)",
    "an unknown function": "v, i = x.topk(3, sorted=False)\nreturn f(v).sum()",
    "assigned twice": "v, i = x.topk(3, sorted=False)\nv = v + 1\nreturn v.sum()",
    "scatter of another source": "v, i = x.topk(2, dim=-1, sorted=False)\nreturn torch.zeros_like(x).scatter(-1, i, y)",
    "a closure": "v, i = x.topk(2, sorted=False)\ng = lambda: v[0]\nreturn g",
}


def _check(body: str, rank: int | None = None):
    tree = ast.parse("def f(self, x, y):\n" + textwrap.indent(body, "    ") + "\n")
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("topk"))
    return order_unused(tree.body[0], call, rank)


@pytest.mark.parametrize("name", sorted(PROVEN))
def test_an_order_free_use_is_proven_with_its_reason(name):
    body, uses = PROVEN[name]
    assert sorted(_check(body) or ()) == sorted(uses) and _check(body) is not None


@pytest.mark.parametrize("name", sorted(USED))
def test_a_use_that_may_read_the_order_is_not_proven(name):
    assert _check(USED[name]) is None


# DeepSeek-V3's group routing (transformers' DeepseekV3TopkRouter, vendored by projects as modeling_deepseek.py): the
# chosen groups only become a 0/1 mask by scatter_ along dim 1, the topk's dim -1 when the scores are 2-D
GROUPS = ("group_idx = torch.topk(x, k=2, dim=-1, sorted=False)[1]\ngroup_mask = torch.zeros_like(x)\n"
          "group_mask.scatter_(1, group_idx, 1)\nreturn group_mask")


def test_with_the_captured_rank_a_positive_dim_is_the_same_as_the_topk_dim_counted_from_the_end():
    assert _check(GROUPS, rank=2) == ("scatter along dim -1",)
    assert _check(GROUPS) is None  # rank unknown: dim 1 and dim -1 may differ
    assert _check(GROUPS, rank=3) is None  # dim 1 of a 3-D tensor is not its last
    assert _check("v, i = x.topk(3, dim=1, sorted=False)\nreturn v.sum(-1)", rank=2) == (".sum over dim -1",)
