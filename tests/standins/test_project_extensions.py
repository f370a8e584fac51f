"""The project's own CUDA extension, not built here (opassess/standins/project.py; issue 37, item 6): a model file
importing the module its setup.py builds scans instead of failing with ModuleNotFoundError; each call of it is an
operator of kind extension, custom-dev, saying it is the project's unbuilt extension and which setup.py line builds
it; a call made inside an autograd.Function is an operator of its own (the Function is not judged by the stand-in's
allocation); an import guarded by a fallback and an import nothing in the project builds are left as they are."""
from __future__ import annotations

import sys

import pytest

from opassess.errors import ModelLoadError
from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from opassess.vocabulary import Category
from tests.source.support import DEFORMABLE, ROPE, write_tree


def by_key(assessment) -> dict:
    return {c.operator.key: c for c in assessment.classified}


def test_a_call_of_the_project_s_unbuilt_extension_is_custom_dev_never_a_failed_scan(tmp_path):
    root = write_tree(tmp_path / "rope", ROPE)
    assessment = assess(ScanOptions(target=str(root / "model.py")))
    ops = by_key(assessment)
    rope = ops["rope_cuda.forward"]
    assert rope.operator.kind == "extension" and rope.category == Category.CUSTOM_DEV
    codes = [r.code for r in rope.reasons]
    assert codes == ["stand-in", "extension"]
    assert rope.reasons[0].message == ("rope_cuda is the project's own extension (rope/setup.py:6 builds it) and is "
                                       "not built here: rope_cuda.forward was recorded by a stand-in, not run, so the "
                                       "ATen ops it calls are not known")
    node = rope.operator.nodes[0]
    # q (2, 4, 16) from the Linear, cos and sin (16,) -> an output shaped like q, on which .relu() runs
    assert node.input_shapes == ((2, 4, 16), (16,), (16,)) and node.output_shapes == ((2, 4, 16),)
    assert node.source.endswith("model.py:14")
    assert ops["Tensor.relu"].category == Category.DIRECT
    (stand_in,) = assessment.capture.stand_ins
    assert (stand_in.library, stand_in.symbols, stand_in.built_by) == ("rope_cuda", ("rope_cuda.forward",),
                                                                       "rope/setup.py:6")
    assert "csrc/rope.cu" in stand_in.why
    assert "rope_cuda" not in sys.modules  # the stand-in module left with the scan


def test_an_extension_called_inside_an_autograd_function_is_an_operator_of_its_own(tmp_path):
    """Deformable DETR's layout: setup.py in ops/ builds MultiScaleDeformableAttention; ops/functions imports it and
    its autograd.Function's forward calls it."""
    root = write_tree(tmp_path / "detr", DEFORMABLE)
    ops = by_key(assess(ScanOptions(target=str(root / "model.py"))))
    extension = ops["MultiScaleDeformableAttention.ms_deform_attn_forward"]
    assert extension.operator.kind == "extension" and extension.category == Category.CUSTOM_DEV
    assert "ops/setup.py:19 builds it" in extension.reasons[0].message
    function = ops["ops.functions.ms_deform_attn_func.MSDeformAttnFunction"]
    # not "dispatches only ATen ops with NPU kernels (aten::empty_like)": that allocation was the stand-in's
    assert function.operator.aten == () and function.category != Category.DIRECT


def test_a_guarded_import_keeps_its_fallback_and_an_unbuilt_name_still_fails(tmp_path):
    root = write_tree(tmp_path / "rope", ROPE)
    (root / "guarded.py").write_text((root / "model.py").read_text().replace(
        "import rope_cuda\n", "try:\n    import rope_cuda\nexcept ImportError:\n    rope_cuda = None\n").replace(
        "return rope_cuda.forward(q, self.cos, self.sin).relu()",
        "return (q * self.cos if rope_cuda is None else rope_cuda.forward(q, self.cos, self.sin)).relu()"))
    ops = by_key(assess(ScanOptions(target=str(root / "guarded.py"))))
    assert "rope_cuda.forward" not in ops and "Tensor.mul" in ops  # the fallback ran, as it would on the NPU
    (root / "other.py").write_text((root / "model.py").read_text().replace("rope_cuda", "yarn_cuda"))
    with pytest.raises(ModelLoadError, match="No module named 'yarn_cuda'"):
        assess(ScanOptions(target=str(root / "other.py")))
