"""classify/decompose.py: what a composite ATen op calls, as the dispatcher of the torch in use runs it."""
from __future__ import annotations

from opassess.classify.decompose import composite_calls, dispatch_kinds, has_backend_kernel


def names(calls) -> list[str]:
    return [name for name, _, _ in calls]


def test_a_true_composite_calls_what_it_is_made_of():
    # select_backward(grad [4], input_sizes [3, 4], dim 0, index 0): zeros([3, 4]), its row 0, copied from grad
    assert dispatch_kinds("aten::select_backward") == ("CompositeExplicitAutogradNonFunctional",)
    assert not has_backend_kernel("aten::select_backward")
    calls = composite_calls("aten::select_backward", (((4,), "float32"),), (3, 4))
    assert names(calls) == ["aten::zeros", "aten::select.int", "aten::copy_"]
    assert calls[0][2] == (3, 4) and calls[2][1] == (((4,), "float32"), ((4,), "float32"))


def test_a_structured_functional_calls_its_out_variant():
    # softplus_backward's out variant is named grad_input, not out: the dispatcher says which it is
    assert has_backend_kernel("aten::softplus_backward")
    calls = composite_calls("aten::softplus_backward", (((4, 4), "float32"), ((4, 4), "float32")), (4, 4))
    assert names(calls) == ["aten::softplus_backward.grad_input"]
    assert names(composite_calls("aten::lgamma", (((2, 3), "float32"),), (2, 3))) == ["aten::lgamma.out"]


def test_new_ones_fills_and_its_allocation_is_left_out():
    calls = composite_calls("aten::new_ones", (((4, 4), "bfloat16"),), (3, 4))
    assert calls == (("aten::fill_.Scalar", (((3, 4), "bfloat16"),), (3, 4)),)


def test_no_composite_or_no_fitting_example_is_none():
    assert composite_calls("aten::embedding_dense_backward", (((2, 4), "float32"), ((2,), "int64")), (10, 4)) is None
    assert dispatch_kinds("aten::no_such_op") == ()
    assert composite_calls("aten::no_such_op") is None
