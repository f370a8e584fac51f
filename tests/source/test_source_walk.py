"""opassess.source.walk: one walk of a parsed file, each node met once, filed with the role the site scanner reads it
in (hand-derived from small sources)."""
from __future__ import annotations

import ast
import textwrap

from opassess.source.walk import CHAIN, DECORATOR, PLAIN, VALUE, walk_file

SOURCE = textwrap.dedent('''\
    import torch
    try:
        import flash_attn as fa
    except ImportError:
        fa = None

    @triton.jit
    def kernel(x) -> torch.cuda.Stream():
        y = x.is_cuda
        torch.cuda.synchronize(device="cuda")
        return lambda z: z + 1
''')


def test_every_node_is_met_once_in_the_scanners_order():
    tree = ast.parse(SOURCE)
    nodes = walk_file(tree, references=True)
    # the calls (the return annotation's among them), in walk order: the decorator before the body, the body before
    # the annotation
    assert [ast.unparse(c.func) for c, _, _, _ in nodes.calls] == ["torch.cuda.synchronize", "torch.cuda.Stream"]
    indexes = [i for _, _, _, i in nodes.calls]
    assert indexes == sorted(indexes) and len(set(indexes)) == len(indexes)
    assert [(type(n).__name__, guarded) for n, guarded, _, _ in nodes.imports] == [("Import", False),
                                                                                  ("Import", True)]
    [(function, flags, _)] = nodes.functions
    assert function.name == "kernel" and flags >> 2 == 1  # a child of the module
    # the lambda is a scope of its own; `fa = None` and `y = x.is_cuda` are assignments of the module and the kernel
    assert [(type(n).__name__, scope) for n, scope, _, _ in nodes.assigns] == [("Assign", 0),
                                                                              ("Assign", id(function))]


def test_roles_say_what_the_enclosing_node_speaks_for():
    nodes = walk_file(ast.parse(SOURCE))
    events = [(type(n).__name__, ast.unparse(n) if not isinstance(n, ast.Import) else "import", role)
              for n, role in nodes.events]
    # the decorator is read as one; an attribute chain's inner nodes and a call's callee are not events (the call
    # speaks for them), but `x.is_cuda` is (an unresolved `.is_cuda` is a site); the annotation is not read at all
    assert ("Attribute", "triton.jit", DECORATOR) in events
    assert ("Attribute", "x.is_cuda", PLAIN) in events
    assert ("Call", "torch.cuda.synchronize(device='cuda')", PLAIN) in events
    assert not any(text.startswith("torch.cuda.Stream") for _, text, _ in events)
    assert not any(role in (CHAIN, VALUE) and name == "Name" for name, _, role in events)
    assert ("Name", "fa", PLAIN) not in events  # an assignment's Name target is not a use of the import


def test_references_keep_each_chain_once_by_its_outermost_node():
    nodes = walk_file(ast.parse("import torch.distributed as dist\ndist.ReduceOp.SUM\nx = 'NCCL_DEBUG'\n"),
                      references=True)
    assert [ast.unparse(n) for n, _, _ in nodes.references] == ["dist.ReduceOp.SUM", "x"]
    assert [c.value for c, _ in nodes.nccl] == ["NCCL_DEBUG"]
    assert walk_file(ast.parse("dist.ReduceOp.SUM\n")).references == []  # only asked for by the distributed scan
