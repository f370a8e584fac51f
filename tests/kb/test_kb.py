"""Knowledge base: shipped-data integrity, the query API, rule validation, wheel import and error codes."""
from __future__ import annotations

import re
import shutil
import zipfile
from pathlib import Path

import pytest
import torch

from opassess.errors import KnowledgeBaseError
from opassess.kb.store import KnowledgeBase, load_kb
from opassess.kb.versions import parse_version
from opassess.kb.wheel_import import import_wheel
from opassess.resources import data_path

# ------------------------------------------------------------------ provenance and counts


def test_provenance_names_sources_and_commits(kb):
    p = kb.provenance
    assert set(p["sources"]) == {"kernels", "custom_ops", "apis", "checks", "mstt", "onnx_cann"}
    for source in p["sources"].values():
        assert re.fullmatch(r"[0-9a-f]{64}", source["sha256"]) and source["rows"] > 0
    repos = {u["repository"]: u["commit"] for u in p["upstream"]}
    assert repos["Ascend/op-plugin"] == "517f2e7d0f202f38b76310706cb977ca2388ad21"
    assert all(re.fullmatch(r"[0-9a-f]{40}", c) for c in repos.values()) and len(repos) == 5
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", p["generated_at"])
    # Row counts as the README states them (npu_aten_ops 1579 rows, npu_native_api_support 13133).
    assert p["sources"]["kernels"]["rows"] == 1579 and p["sources"]["apis"]["rows"] == 13133


def test_parsed_and_unparsed_limitations_add_up(kb):
    c = kb.counts()
    assert c["limitation_clauses_parsed"] + c["limitation_clauses_unparsed"] == c["limitation_clauses"]
    assert c["limitation_clauses_unparsed"] > 0  # some prose cannot be structured, and it is counted
    assert c["limitation_clauses_parsed"] / c["limitation_clauses"] > 0.75
    assert sum(c["unparsed_by_tag"].values()) == c["limitation_clauses_unparsed"]


def test_version_and_defaults(kb):
    # API docs stop at 2.13 and the kernel ranges at 2.15: the default is the newest with both.
    assert kb.default_torch_version == "2.13"
    assert kb.torch_versions[0] == "2.1" and kb.torch_versions[-1] == "2.15"
    assert kb.products == ("Atlas A2", "Atlas A3", "Ascend 950", "Atlas training series", "Atlas inference series",
                           "Atlas 200I/500 A2")
    assert kb.api_page_products == ("Atlas A2", "Atlas A3", "Ascend 950DT", "Atlas training")
    assert parse_version("2.7.1") == (2, 7) and parse_version("v2.13") == (2, 13)
    with pytest.raises(KnowledgeBaseError, match="not covered"):
        kb.resolve_version("3.0")
    with pytest.raises(KnowledgeBaseError, match="unknown Ascend product"):
        kb.resolve_product("Atlas 300")


def test_tables_load_lazily(tmp_path):
    kb = load_kb(tmp_path)
    assert "checks" not in kb._cache and "mstt" not in kb._cache  # loading validated rules only
    kb.checks_for("aten::max_pool2d_with_indices")
    assert "checks" in kb._cache


# ------------------------------------------------------------------ kernels


def test_kernel_lookup_forms(kb):
    assert kb.kernel("aten::add.Tensor").name == "add.Tensor"
    assert kb.kernel("add.Tensor") is kb.kernel("aten::add.Tensor")
    assert kb.kernel("aten::convolution").qualified == "aten::convolution"
    assert kb.kernel("aten::relu").structured == "aclnnRelu"  # generated 1:1 from the ATen op
    assert {k.name for k in kb.kernels_for_base("add")} >= {"add.Tensor", "add.Scalar", "add.out"}


def test_lgamma_absent_convolution_present(kb):
    # npu_aten_ops has no lgamma row at all; convolution is [v2.1..newest] on both paths.
    assert kb.kernel("aten::lgamma") is None
    assert not kb.has_kernel("aten::lgamma")
    assert kb.has_kernel("aten::convolution", "2.13") and kb.has_kernel("aten::convolution", "2.1")
    assert kb.kernel_support("aten::convolution", "2.13").fact.paths((2, 13)) == ("aclnn", "aclop")


def test_version_ranges_decide_support(kb):
    # cat.names is [v2.1..v2.12]: there at 2.12, gone at 2.13.
    assert kb.has_kernel("aten::cat.names", "2.12") and not kb.has_kernel("aten::cat.names", "2.13")
    # scaled_dot_product_attention: op_api v2.1..v2.4 listed one by one, then [v2.5..newest].
    assert kb.has_kernel("aten::scaled_dot_product_attention", "2.3")
    assert kb.has_kernel("aten::scaled_dot_product_attention", "2.13")


def test_functional_from_structured_out_kernel(kb):
    # Only gelu.out is listed; PyTorch derives the functional gelu from it (structured_delegate).
    support = kb.kernel_support("aten::gelu", "2.13")
    assert support.supported and support.via == "structured-delegate" and support.fact.name == "gelu.out"


# ------------------------------------------------------------------ native API support


def test_conv2d_dtypes(kb):
    fact = kb.api("torch.nn.Conv2d", "2.13")
    assert fact.doc_version == "2.13.0" and fact.supported("Atlas A2") is True
    assert fact.limitation.allowed_dtypes("Atlas A2") == ("bfloat16", "float16", "float32")


def test_lstm_limits(kb):
    fact = kb.api("torch.nn.LSTM")
    assert fact.supported("Atlas A2") is True and fact.supported("Ascend 950DT") is False
    lim = fact.limitation
    assert lim.allowed_dtypes("Atlas A2") == ("float32",)
    rules = {r.param: r for r in lim.param_rules}
    assert rules["proj_size"].rule == "unsupported" and rules["dropout"].rule == "unsupported"
    assert rules["proj_size"].violated_by(8) and not rules["proj_size"].violated_by(0)
    assert rules["dropout"].violated_by(0.1) and not rules["dropout"].violated_by(0.0)
    assert [(n.param, n.not_) for n in lim.ndim_rules] == [("input", (2,))]


def test_parameter_rules_from_the_docs(kb):
    pool = {r.param: r for r in kb.api("torch.nn.functional.max_pool2d").limitation.param_rules}
    assert pool["dilation"].rule == "equals" and pool["dilation"].value == 1
    assert pool["dilation"].violated_by([2, 2]) and not pool["dilation"].violated_by(1)
    interp = {r.param: r for r in kb.api("torch.nn.functional.interpolate").limitation.param_rules}
    assert interp["scale_factor"].violated_by(2.0) and not interp["scale_factor"].violated_by(None)
    assert interp["mode"].violated_by("nearest-exact") and not interp["mode"].violated_by("bilinear")
    topk = {r.param: r for r in kb.api("torch.topk").limitation.param_rules}
    assert topk["sorted"].violated_by(False) and not topk["sorted"].violated_by(True)
    # The doc says approximate "may only be set to tanh": the default 'none' and 'tanh' both pass.
    gelu = {r.param: r for r in kb.api("torch.nn.functional.gelu").limitation.param_rules}
    assert gelu["approximate"].value == ["tanh"]
    assert not gelu["approximate"].violated_by("none") and not gelu["approximate"].violated_by("tanh")


def test_api_version_selection(kb):
    # torch 2.8 has no doc page set of its own: the nearest one below (2.7.1) answers.
    assert kb.api("torch.nn.Conv2d", "2.8").doc_version == "2.7.1"
    # No alias table: the trace names `x + y` Tensor.add, never operator.add (trace._OPERATOR_METHODS).
    assert kb.api("operator.add") is None
    assert kb.api("torch.lgamma") is None  # not documented = not verified
    assert kb.mstt_status("torch.nn.Conv2d") == "supported"


def test_double_is_cast_to_float32(kb):
    lim = kb.api("Tensor.double").limitation
    assert {"from": "float64", "to": "float32"} in [dict(c) for c in lim.dtype_casts]
    assert lim.cpu_fallback == "may"


# ------------------------------------------------------------------ NPU ops, rules, CANN names


def test_replacements_point_at_real_npu_ops(kb):
    for rep in kb.rules.replacements:
        op = kb.custom_op(rep.npu_op)
        assert op is not None, rep.npu_op
        assert rep.source in kb.rules.third_party or kb.api(rep.source) is not None, rep.source
    deform = kb.replacements_for("torchvision::deform_conv2d")
    assert [r.npu_op for r in deform] == ["npu_deformable_conv2d"] and deform[0].when == "required"
    assert "torchvision::deform_conv2d" in kb.custom_op("torch_npu.npu_deformable_conv2d").replaces
    assert "int[4] dilation" in kb.custom_op("npu_deformable_conv2d").schema
    assert kb.custom_op("npu::npu_nms_v4").deprecated == "(no replacement)"


def test_composites_and_attr_maps_refer_to_kernels(kb):
    for comp in kb.rules.composites:
        assert kb.kernel(comp.aten) is not None, comp.aten
        assert all(kb.api(api) is not None for api in comp.apis)
    for mapping in kb.rules.attr_mappings:
        assert kb.api(mapping.op) is not None and (mapping.aten is None or kb.kernel(mapping.aten) is not None)
    assert kb.cann_op("torch.nn.Conv2d") == "Conv2D"
    assert kb.cann_op("aten::relu") == "aclnnRelu"
    assert kb.onnx_cann("MatMul") == "BatchMatMulV2" and kb.onnx_cann("Conv") is None  # Conv lowers to a subgraph
    fields = {f.source: f.target for f in kb.attr_mapping("torch.nn.Conv2d").fields}
    assert fields["stride"] == "strides" and fields["padding"] == "pads" and fields["dilation"] == "dilations"


def test_everywhere_ops_run_on_every_backend(kb):
    # The [everywhere] list names ops without NPU kernels: each must really be composite in PyTorch.
    for op in sorted(kb.rules.everywhere):
        name = op.split("::")[1]
        keys = [k for k in ("CompositeExplicitAutograd", "CompositeImplicitAutograd",
                            "CompositeExplicitAutogradNonFunctional")
                if torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{name}", k)]
        assert keys, op


def test_checks_keyed_to_aten_ops(kb):
    kinds = {c.kind for c in kb.checks_for("aten::max_pool2d_with_indices")}
    assert "dilation-limit" in kinds
    cdist = kb.checks_for("aten::cdist") + kb.checks_for("aten::_cdist_forward")
    assert any(c.kind == "float64-unsupported" for c in cdist)


def _rules_copy(tmp_path: Path, old: str, new: str) -> KnowledgeBase:
    text = data_path("rules.toml").read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "rules.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return KnowledgeBase(data_path("kb"), path, data_path("error_codes.toml"))


def test_broken_rule_names_file_and_key(tmp_path):
    kb = _rules_copy(tmp_path, 'npu_op = "npu_deformable_conv2d"', 'npu_op = "npu_no_such_op"')
    with pytest.raises(KnowledgeBaseError, match=r"rules\.toml: replacement\[0\]\.npu_op: 'npu_no_such_op'"):
        _ = kb.rules
    kb = _rules_copy(tmp_path, 'source = "torchvision::nms"', 'source = "otherlib::nms"')
    with pytest.raises(KnowledgeBaseError, match=r"replacement\[1\]\.source: 'otherlib::nms'"):
        _ = kb.rules
    kb = _rules_copy(tmp_path, 'aten = "aten::lstm.input"', 'aten = "aten::lstm_no_kernel"')
    with pytest.raises(KnowledgeBaseError, match=r"composite\[1\]\.aten"):
        _ = kb.rules
    kb = _rules_copy(tmp_path, 'aten = "aten::_fused_adamw_"', 'aten = "aten::_fused_adam_"')
    with pytest.raises(KnowledgeBaseError, match=r"fused_step\[0\]\.aten: 'aten::_fused_adam_' has no NPU kernel"):
        _ = kb.rules
    kb = _rules_copy(tmp_path, 'fallback_on = ["910", "310P"]', 'fallback_on = ["910", "910B"]')
    with pytest.raises(KnowledgeBaseError, match=r"composite\[0\]\.fallback_on: '910B' is not a product column"):
        _ = kb.rules
    kb = _rules_copy(tmp_path, 'fallback_on = ["910", "310P"]', 'fallback_on = []')
    with pytest.raises(KnowledgeBaseError, match=r"composite\[0\]\.fallback: a fallback names both"):
        _ = kb.rules
    kb = _rules_copy(tmp_path, "[meta]", "[meta\n")
    with pytest.raises(KnowledgeBaseError, match=r"rules\.toml: TOML syntax error"):
        _ = kb.rules


@pytest.mark.parametrize(("old", "new", "key"), [
    ("[host_ops]", "[host_opps]", "host_opps"),  # a misspelt table: its rules would silently not apply
    ("[category_notes]", "[familly_typo]\nnature = 'direct'\n\n[category_notes]", "familly_typo"),
    ('npu_op = "npu_deformable_conv2d"', 'npu_op = "npu_deformable_conv2d"\nnatur = "x"', "replacement[0].natur"),
    ('{ source = "stride", target', '{ source = "stride", targt = "x", target', "attr_mapping[0].fields[0].targt"),
    ("\ndirect = ", "\ndirekt = ", "category_notes.direkt"),
])
def test_rules_typo_is_refused_naming_file_and_key(tmp_path, old, new, key):
    kb = _rules_copy(tmp_path, old, new)
    with pytest.raises(KnowledgeBaseError) as refused:
        _ = kb.rules
    assert str(refused.value) == f"{tmp_path / 'rules.toml'}: key '{key}': unknown key"


# ------------------------------------------------------------------ error codes


def test_error_codes(kb):
    code = kb.error_code("acl_error_invalid_param")
    assert code.value == 100000 and code.cause and code.remedy
    assert kb.error_code("207001").code == "ACL_ERROR_RT_MEMORY_ALLOCATION"
    composed = kb.error_code("ERR01002")
    assert composed.meaning == "operators (op-plugin kernels): invalid type" and "dtype" in composed.cause
    assert kb.error_code("ERR02100").meaning.startswith("distributed")
    assert kb.error_code("ERR99999").meaning.startswith("UNKNOWN application exception")
    assert kb.error_code("ERR01999") is None and kb.error_code("nonsense") is None
    values = [c.value for c in kb.error_codes.values() if c.value is not None]
    assert len(values) == len(set(values))


@pytest.mark.parametrize(("old", "new", "key"), [
    ("[[acl]]", "[[acll]]", "acll"),
    ("\nremedy = ", '\nremedie = "x"\nremedy = ', "acl[0].remedie"),
])
def test_error_code_typo_is_refused_naming_file_and_key(tmp_path, old, new, key):
    text = data_path("error_codes.toml").read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "error_codes.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    kb = KnowledgeBase(data_path("kb"), data_path("rules.toml"), path)
    with pytest.raises(KnowledgeBaseError) as refused:
        kb.error_code("ACL_ERROR_INVALID_PARAM")
    assert str(refused.value) == f"{path}: key '{key}': unknown key"


# ------------------------------------------------------------------ wheel import


YAML = """\
backend: NPU
cpp_namespace: at_npu::native
official:
- func: gelu(Tensor self, *, str approximate='none') -> Tensor
  impl_ns: acl_op, op_api
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  impl_ns: op_api
- func: lgamma(Tensor self) -> Tensor
  impl_ns: acl_op
custom:
- exposed: true
  func: npu_rms_norm(Tensor self, Tensor gamma, float epsilon=1e-06) -> (Tensor, Tensor)
  impl_ns: acl_op, op_api
- dispatch:
    CompositeExplicitAutograd: empty_with_format
  func: empty_with_format(int[] size, *, ScalarType? dtype=None, int acl_format=2) -> Tensor
supported:
- view
"""


def _wheel(tmp_path: Path, version: str = "2.14.0", yaml: str = YAML) -> Path:
    path = tmp_path / f"torch_npu-{version}-cp311-cp311-manylinux_2_17_aarch64.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"torch_npu-{version}.dist-info/METADATA",
                         f"Metadata-Version: 2.1\nName: torch_npu\nVersion: {version}\n")
        archive.writestr("torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml", yaml)
        archive.writestr("torch_npu/__init__.py", "raise RuntimeError('never imported')\n")
    return path


def test_import_wheel_refreshes_kernel_facts(tmp_path):
    dest = tmp_path / "overlay"
    summary = import_wheel(_wheel(tmp_path), dest)
    assert summary["torch_version"] == "2.14" and summary["kernels"] == 6  # gelu, add.Tensor, lgamma, 2 custom, view
    kb = load_kb(dest)
    assert "2.14" in kb.torch_versions and kb.default_torch_version == "2.14"
    # The wheel is authoritative for its version: listed ops have kernels, unlisted ones do not.
    lgamma = kb.kernel_support("aten::lgamma", "2.14")
    assert lgamma.supported and lgamma.via == "imported-wheel"
    assert not kb.has_kernel("aten::convolution", "2.14")
    assert kb.has_kernel("aten::view", "2.14")
    # Other versions keep the shipped facts.
    assert not kb.has_kernel("aten::lgamma", "2.13") and kb.has_kernel("aten::convolution", "2.13")
    assert kb.kernel("aten::lgamma").paths((2, 14)) == ("aclop",)
    assert kb.imported[(2, 14)]["provenance"]["wheel"].startswith("torch_npu-2.14.0")


def test_imported_wheel_derives_a_functional_op_from_its_out_kernel(tmp_path):
    # As in the shipped facts (test_functional_from_structured_out_kernel): the kernel list names gelu.out
    # only, and PyTorch derives the functional gelu from it; the wheel's list is read the same way.
    yaml = ("official:\n- func: gelu.out(Tensor self, *, str approximate='none', Tensor(a!) out) -> Tensor(a!)\n"
            "  impl_ns: op_api\n")
    dest = tmp_path / "overlay"
    import_wheel(_wheel(tmp_path, yaml=yaml), dest)
    support = load_kb(dest).kernel_support("aten::gelu", "2.14")
    assert support.supported and support.via == "structured-delegate" and "gelu.out" in support.evidence
    assert not load_kb(dest).has_kernel("aten::lgamma", "2.14")  # not listed: still absent


def test_import_rejects_bad_input(tmp_path):
    not_zip = tmp_path / "torch_npu-2.14.0-x.whl"
    not_zip.write_text("plain text")
    with pytest.raises(KnowledgeBaseError, match="not a zip"):
        import_wheel(not_zip, tmp_path / "o")
    empty = tmp_path / "empty"
    empty.mkdir()
    wheel = empty / "torch_npu-2.14.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("torch_npu/__init__.py", "")
    with pytest.raises(KnowledgeBaseError, match="npu_native_functions_by_codegen.yaml"):
        import_wheel(wheel, tmp_path / "o")
    (tmp_path / "bad").mkdir()
    broken = _wheel(tmp_path / "bad", yaml="- func: x() -> Tensor\n")
    with pytest.raises(KnowledgeBaseError, match="list item outside a section"):
        import_wheel(broken, tmp_path / "o")
    occupied = tmp_path / "a-file"
    occupied.write_text("")
    with pytest.raises(KnowledgeBaseError, match="a-file: not a folder"):
        import_wheel(_wheel(tmp_path), occupied)  # --dest names a file, not a folder


def test_overlay_env_variable(tmp_path, monkeypatch):
    dest = tmp_path / "overlay"
    import_wheel(_wheel(tmp_path), dest)
    monkeypatch.setenv("OPASSESS_KB_DIR", str(dest))
    assert "2.14" in load_kb().torch_versions
    monkeypatch.setenv("OPASSESS_KB_DIR", str(tmp_path / "missing"))
    with pytest.raises(KnowledgeBaseError, match="OPASSESS_KB_DIR"):
        load_kb()


def test_full_kb_folder_override(tmp_path):
    copy = tmp_path / "kb"
    shutil.copytree(data_path("kb"), copy)
    kb = load_kb(copy)
    assert kb.directory == copy and kb.overlay is None
    (copy / "kernels.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(KnowledgeBaseError, match="kernels.json: not valid JSON"):
        load_kb(copy)


def test_cann_e_codes_listed_or_composed_from_module_and_class(kb):
    assert kb.error_code("EZ9999").meaning == "Inner Error in an operator"
    assert kb.error_code("ee1001").meaning.startswith("The argument is invalid")
    assert kb.error_code("E39999").code == "E39999"
    composed = kb.error_code("EZ1234")  # not listed: module Z, user class (0000-8999)
    assert composed.meaning.startswith("operators") and composed.meaning.endswith("user-class error")
    assert kb.error_code("EI9100").meaning.endswith("internal error")  # 9000-9999 internal
    assert kb.error_code("EQ0001").meaning == "module Q: user-class error"  # a module the facts do not name


def test_codes_in_text_picks_codes_out_of_a_log_block():
    from opassess.kb.error_codes import codes_in_text
    log = ("[ERROR] 2026-01-01 EZ9999: Inner Error!\nEZ9999 The error from device(chipId:0)\n"
           "RuntimeError: call aclnnAdd failed, error code is 561003\n[ERROR] ERR99999 UNKNOWN application exception"
           "\nACL_ERROR_RT_AICORE_EXCEPTION ret=507015 0xE12345 HEE1001")
    assert codes_in_text(log) == ["EZ9999", "561003", "ERR99999", "ACL_ERROR_RT_AICORE_EXCEPTION", "507015"]
