"""tools/build_kb.py: the limitation parser, version ranges, and a rebuild from ../shared that reproduces the shipped
data."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import build_kb  # noqa: E402
import kb_devices  # noqa: E402
import kb_gemm  # noqa: E402
import kb_gpus  # noqa: E402
import kb_graph  # noqa: E402
import kb_interconnect  # noqa: E402
import kb_versions  # noqa: E402
from limitations import parse_limitation, split_clauses  # noqa: E402

FACTS = ROOT.parent / "shared" / "reference" / "ascend"
SHIPPED = ROOT / "opassess" / "data" / "kb"


# ------------------------------------------------------------------ versions and names


def test_version_forms():
    assert build_kb.parse_versions("all_version") == [[None, None]]
    assert build_kb.parse_versions("[v2.1..newest]") == [["2.1", None]]
    assert build_kb.parse_versions("[v2.1..v2.12]") == [["2.1", "2.12"]]
    assert build_kb.parse_versions("v2.1,v2.2") == [["2.1", "2.1"], ["2.2", "2.2"]]
    assert build_kb.parse_versions("") == []
    with pytest.raises(ValueError):
        build_kb.parse_versions("2.1")


def test_kernel_file_names_map_to_aten_base_ops():
    bases = {"max_pool2d_with_indices", "adaptive_avg_pool2d", "convolution"}
    assert build_kb.file_to_base_op("aclops/MaxPool2dWithIndicesKernelNpu.cpp", bases) == "max_pool2d_with_indices"
    assert build_kb.file_to_base_op("opapi/AdaptiveAvgPool2dKernelNpuOpApi.cpp", bases) == "adaptive_avg_pool2d"
    assert build_kb.file_to_base_op("aclops/ConvolutionKernelNpu.cpp", bases) == "convolution"
    assert build_kb.file_to_base_op("aclops/NoSuchKernelNpu.cpp", bases) is None


def test_check_messages_are_classified():
    assert build_kb.classify_check("TORCH_CHECK", "TYPE", "npu does not support float64") == "float64-unsupported"
    warn = "TORCH_NPU_WARN_ONCE"
    assert build_kb.classify_check(warn, "", "[Cumsum] Dtype Double will be replaced with Float!") == "float64-cast"
    assert build_kb.classify_check(warn, "", "Bincount cann't support dtype int64, input will be cast to int32.") \
        == "int64-cast-int32"
    assert build_kb.classify_check("TORCH_CHECK", "PARAM", "max_pool2d: dilation must be either a single int") \
        == "dilation-limit"


# ------------------------------------------------------------------ limitation parser


def test_lstm_limitation_becomes_rules():
    # torch.nn.LSTM's cell: fp32 only, no proj_size, no dropout, no 2-D input -> four rules, nothing unparsed.
    parsed = parse_limitation("- `input`仅支持fp32 - 不支持`proj_size`参数 - 不支持`dropout`参数 "
                              "- 入参`input`不支持2维")
    assert parsed["rules"] == [
        {"kind": "dtype", "params": ["input"], "allowed": ["float32"]},
        {"kind": "param", "param": "proj_size", "rule": "unsupported"},
        {"kind": "param", "param": "dropout", "rule": "unsupported"},
        {"kind": "ndim", "param": "input", "not": [2]},
    ]
    assert parsed["unparsed"] == [] and parsed["clauses"] == 4


def test_param_value_rules():
    # max_pool2d: dilation only 1 or (1,1); topk: sorted=False unsupported; gelu: approximate may only be set to tanh.
    assert parse_limitation("`dilation`的值目前在NPU上仅支持设置为1或(1,1)")["rules"] == [
        {"kind": "param", "param": "dilation", "rule": "equals", "value": 1}]
    assert parse_limitation("不支持`sorted=False`场景")["rules"] == [
        {"kind": "param", "param": "sorted", "rule": "equals", "value": True}]
    assert parse_limitation("`approximate`参数仅支持设置为`tanh`")["rules"] == [
        {"kind": "param", "param": "approximate", "rule": "in", "value": ["tanh"]}]
    interp = parse_limitation("- `input`仅支持bf16，fp16 - 支持nearest、bilinear - 不支持`scale_factor`")["rules"]
    assert interp[1:] == [{"kind": "param", "param": "mode", "rule": "in", "value": ["nearest", "bilinear"]},
                          {"kind": "param", "param": "scale_factor", "rule": "unsupported"}]


def test_product_scoped_dtypes_and_fallback():
    parsed = parse_limitation("- <term>Atlas A2 训练系列产品</term>、<term>Atlas A3 训练系列产品</term>："
                              "`self`仅支持bf16，fp32 "
                              "- <term>Ascend 950DT</term>：不支持fp64 - 可能回退至CPU执行")
    assert parsed["rules"] == [
        {"kind": "dtype", "params": ["self"], "allowed": ["bfloat16", "float32"], "products": ["Atlas A2", "Atlas A3"]},
        {"kind": "dtype_excluded", "dtypes": ["float64"], "products": ["Ascend 950DT"]},
        {"kind": "cpu_fallback", "when": "may"},
    ]


def test_unparsed_clause_is_counted_not_kept():
    parsed = parse_limitation("- `input`仅支持fp32 - 两个输入的shape要保持一致")
    assert len(parsed["rules"]) == 1
    assert parsed["unparsed"] == [{"clause": 1, "tag": "shape"}]
    assert split_clauses("- a - b。c") == ["a", "b", "c"]


# ------------------------------------------------------------------ shipped data


def test_shipped_data_has_no_chinese_prose():
    cjk = re.compile(r"[\u4e00-\u9fff]")
    for path in SHIPPED.glob("*.json"):
        assert not cjk.search(path.read_text(encoding="utf-8")), path.name


def test_shipped_data_is_small():
    total = sum(p.stat().st_size for p in SHIPPED.glob("*.json"))
    assert total < 4_000_000, total


@pytest.mark.skipif(not FACTS.is_dir(), reason="../shared/reference/ascend is not beside the checkout")
def test_rebuild_from_facts_reproduces_shipped_data(tmp_path, capsys):
    # the generators `make kb` runs, in its order
    for generator in (build_kb, kb_devices, kb_interconnect, kb_graph, kb_versions):
        assert generator.main(["--facts", str(FACTS), "--out", str(tmp_path)]) == 0
    assert kb_gpus.main(["--facts", str(FACTS.parent / "gpu"), "--out", str(tmp_path)]) == 0
    assert kb_gemm.main(["--out", str(tmp_path)]) == 0  # the repository's own measurements table
    printed = capsys.readouterr().out
    assert "clauses parsed" in printed and "kernels:" in printed
    for shipped in sorted(SHIPPED.glob("*.json")):
        rebuilt = json.loads((tmp_path / shipped.name).read_text(encoding="utf-8"))
        expected = json.loads(shipped.read_text(encoding="utf-8"))
        if shipped.name == "provenance.json":
            rebuilt.pop("generated_at")
            expected.pop("generated_at")
        assert rebuilt == expected, f"{shipped.name} differs: rerun tools/build_kb.py"
