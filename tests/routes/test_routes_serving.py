"""`scan --route vllm-ascend` (routes/serving.py): a quantisation scheme against the chip's column of
ascend_inference_quant_support.tsv, the 950 generation's TBD/WIP cells as risks (never support), and the architecture
reported as unchecked (the facts have no architecture column)."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from opassess.cli import app
from opassess.kb.routes import load_route_facts
from opassess.routes import check_serving

runner = CliRunner()
MODEL = """
import torch
from torch import nn


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(32, 8)
        self.head = nn.Linear(8, 32)

    def forward(self, ids):
        return self.head(self.embed(ids))


def build_model():
    return TinyLM()


def example_inputs():
    return (torch.randint(0, 32, (1, 4)),)
"""


def _items(check):
    return {(i.subject.split(" (")[1].split(",")[0] if " (" in i.subject else i.subject): i for i in check.items}


def test_w8a8_runs_on_a2_by_the_vllm_ascend_row():
    check = check_serving("TinyLM", "w8a8", "A2", "Atlas A2", load_route_facts())
    first, verdict, vllm = check.items[0], check.items[1], check.items[2]
    assert first.status == "no facts" and "not checked" in first.detail  # no architecture column in the facts
    assert (verdict.subject, verdict.status) == ("w8a8 on vllm-ascend", "supported")  # its own row decides
    assert vllm.evidence.startswith("ascend_inference_quant_support.tsv:19 vllm-ascend")
    assert (vllm.status, vllm.detail) == ("supported", "functional")
    assert not any("MXFP8" in i.subject for i in check.items)  # W8A8_MXFP8 only shares the prefix


def test_the_950_generation_shows_risks_not_support():
    check = check_serving("TinyLM", "w8a8", "950", "Ascend 950", load_route_facts())
    statuses = {i.evidence.split()[0]: (i.status, i.detail) for i in check.items[2:]}
    assert statuses["ascend_inference_quant_support.tsv:4"] == (  # sglang W8A8 static: TBD on A5
        "risk", "another engine's row (sglang), not vllm-ascend's support: TBD")
    assert check.items[1].status == "no facts"  # vllm-ascend's own row has no A5 cell
    assert statuses["ascend_inference_quant_support.tsv:19"][0] == "no facts"  # vllm-ascend states no A5 cell
    assert all(status != "supported" for status, _ in statuses.values())


def test_a_quant_type_names_its_rows_and_an_unknown_scheme_has_no_facts():
    facts = load_route_facts()
    dynamic = check_serving("M", "W8A8_DYNAMIC", "A3", "Atlas A3", facts)
    assert {i.evidence.split()[0] for i in dynamic.items[2:]} == {
        "ascend_inference_quant_support.tsv:5", "ascend_inference_quant_support.tsv:9",
        "ascend_inference_quant_support.tsv:16"}  # compressed-tensors W8A8 dynamic
    mxfp8 = check_serving("M", "mxfp8", "A2", "Atlas A2", facts)
    assert {i.status for i in mxfp8.items[2:]} == {"unsupported"}
    assert check_serving("M", "fp4-magic", "A2", "Atlas A2", facts).items[-1].status == "no facts"


def test_the_cli_route_writes_the_serving_part_and_section(tmp_path):
    model = tmp_path / "lm.py"
    model.write_text(MODEL)
    result = runner.invoke(app, ["scan", str(model), "--route", "vllm-ascend", "--quant", "w8a8", "--target", "950",
                                 "-f", "json", "-o", "-", "-q"])
    assert result.exit_code == 0, result.output
    serving = json.loads(result.stdout)["serving"]
    assert (serving["engine"], serving["target"], serving["architecture"], serving["quant"]) == (
        "vllm-ascend", "Ascend 950", "TinyLM", "w8a8")
    assert "risk" in {i["status"] for i in serving["items"]}
    md = runner.invoke(app, ["scan", str(model), "--route", "vllm-ascend", "--quant", "w8a8", "-f", "md", "-o", "-",
                             "-q"]).stdout.replace("\\_", "_")  # Markdown escapes underscores
    assert "## Serving" in md and "ascend_inference_quant_support.tsv:19" in md
    refused = runner.invoke(app, ["scan", str(model), "--quant", "w8a8", "-q"])
    assert refused.exit_code == 2 and "--route vllm-ascend" in refused.output


def test_a_scheme_no_row_names_is_bad_usage_naming_the_choices(tmp_path):
    """--quant w8a9 (a typo) was checked as 'no facts', exit 0; every name the error offers is one a row names."""
    from opassess.errors import EXIT_USAGE, UsageError
    from opassess.routes.serving import check_quant, quant_names

    facts = load_route_facts()
    names = quant_names(facts)
    assert {"w8a8", "w8a8_dynamic", "w4a16", "mxfp8", "awq"} <= set(names)
    for name in (*names, "W8A8 static"):  # and a row's scheme text, as the table writes it
        check_quant(name, facts)
        assert "no row" not in check_serving("M", name, "A2", "Atlas A2", facts).items[-1].evidence
    with pytest.raises(UsageError, match="w8a8_dynamic") as info:
        check_quant("w8a9", facts)
    assert info.value.option == "--quant" and info.value.exit_code == EXIT_USAGE
    model = tmp_path / "lm.py"
    model.write_text(MODEL)
    result = runner.invoke(app, ["scan", str(model), "--route", "vllm-ascend", "--quant", "bogus", "-q"])
    assert result.exit_code == 2 and "Invalid value for '--quant'" in result.output, result.output
    assert "'bogus'" in result.output and "w8a8_dynamic" in result.output and "Traceback" not in result.output


def test_the_serving_section_reads_in_chinese_and_the_json_stays_english():
    from opassess.report.i18n import translations
    from opassess.report.parts import decode
    from opassess.report.sections.routes import ServingPart, routes_doc, serving_section

    check = check_serving("TinyLM", "w8a8", "950", "Ascend 950", load_route_facts())

    class Scanned:  # the two fields routes_doc reads
        onnx, serving = None, check

    document = routes_doc(Scanned())  # type: ignore[arg-type]
    part = decode(ServingPart, document["serving"])
    zh = serving_section(part, translations("zh-CN").gettext)
    assert zh.rows[0].subject == "架构 TinyLM" and zh.rows[0].status == "无事实依据"
    assert zh.rows[0].detail == "服务化事实表列的是量化方案而非模型架构：未检查"
    assert {r.status for r in zh.rows} <= {"支持", "不支持", "风险", "无事实依据"}
    assert json.loads(json.dumps(document))["serving"]["items"][0]["subject"] == "architecture TinyLM"
    assert serving_section(part, str).rows[0].status == "no facts"


def test_the_engine_asked_is_judged_by_its_own_rows_only():
    """--route vllm-ascend --quant w4a16 reported "supported" from sglang's AWQ/GPTQ rows: vllm-ascend's rows name no
    W4A16, so its verdict is "no facts", and the sglang rows are listed as another engine's."""
    check = check_serving("M", "w4a16", "A2", "Atlas A2", load_route_facts())
    verdict = check.items[1]
    assert (verdict.subject, verdict.status) == ("w4a16 on vllm-ascend", "no facts")
    assert verdict.detail == "no vllm-ascend row names this scheme; the rows below are sglang's"
    others = check.items[2:]
    assert others and all(i.detail.startswith("another engine's row (sglang)") for i in others)


def test_a_chip_without_the_data_type_is_unsupported_not_unknown():
    """mxfp8 on Atlas A2: the device figures list no float8 for its cube, so the scheme is unsupported whatever a
    table cell says; the 950 generation's figures list float8 (no such line); with neither figures nor kernel facts
    nothing is claimed (910A without its kernel facts: see the next test)."""
    facts = load_route_facts()
    a2 = {"bfloat16": "ascend_hw_figures.tsv:4:peak", "float16": "ascend_hw_figures.tsv:5:peak",
          "float32": "ascend_hw_figures.tsv:3:peak", "int8": "ascend_hw_figures.tsv:6:peak"}
    line = check_serving("M", "mxfp8", "A2", "Atlas A2", facts, a2).items[1]
    assert (line.subject, line.status) == ("mxfp8 needs float8 compute", "unsupported")
    assert line.detail == "Atlas A2's cube has no float8 (its device figures list bfloat16, float16, float32, int8)"
    assert line.evidence.startswith("ascend_hw_figures.tsv")
    a5 = dict(a2, float8="ascend_hw_figures.tsv:48:peak")
    assert not any("needs float8" in i.subject for i in check_serving("M", "mxfp8", "950", "Ascend 950", facts,
                                                                        a5).items)
    assert not any("needs" in i.subject for i in check_serving("M", "mxfp8", "910", "Atlas training series",
                                                               facts).items)


def test_910a_has_no_fp8_matmul_kernel_so_mxfp8_is_unsupported_with_the_kernel_evidence(tmp_path):
    """910A (Atlas training series) has no device figures, so its kernel facts decide: cann_aclnn_dtypes.tsv lists
    29 aclnn matmul APIs with a float8_e4m3fn / float8_e5m2 input, and each one's product table marks Atlas training
    series ✘ (aclnnQuantMatmulV5, aclnnGroupedMatmulV4, ... ✘ on 910). Atlas A2's kernel facts mark some of them ✔, so
    they alone claim nothing there (its device figures do, in the test above)."""
    from opassess.kb.kernels import load

    facts, aclnn = load_route_facts(), load().data
    rows = [(api, e["support"][aclnn["products"].index("910")]) for api, e in aclnn["aclnn"].items()
            if "matmul" in api.lower() and any(d in ("float8_e4m3fn", "float8_e5m2") for p in e["params"]
                                               if p["io"].startswith("input") for d in p.get("dtypes", ()))]
    assert len(rows) == 29 and {mark for _, mark in rows} == {"n"} and ("aclnnQuantMatmulV5", "n") in rows
    line = check_serving("M", "mxfp8", "910", "Atlas training series", facts, None, aclnn).items[1]
    assert (line.subject, line.status) == ("mxfp8 needs float8 compute", "unsupported")
    assert line.detail.startswith("no aclnn matmul kernel for Atlas training series takes float8: all 29 matmul APIs "
                                  "that take float8_e4m3fn / float8_e5m2 are documented as unsupported on it")
    assert line.evidence.startswith("cann_aclnn_dtypes.tsv: support:910 = ✘ for 29 of 29 matmul APIs")
    assert not any("needs" in i.subject for i in check_serving("M", "mxfp8", "A2", "Atlas A2", facts, None,
                                                               aclnn).items)
    model = tmp_path / "lm.py"
    model.write_text(MODEL)
    result = runner.invoke(app, ["scan", str(model), "--route", "vllm-ascend", "--quant", "mxfp8", "--target", "910A",
                                 "-f", "json", "-o", "-", "-q"])
    assert result.exit_code == 0, result.output
    serving = json.loads(result.stdout)["serving"]
    fp8 = next(i for i in serving["items"] if i["subject"] == "mxfp8 needs float8 compute")
    assert fp8["status"] == "unsupported" and fp8["evidence"].startswith("cann_aclnn_dtypes.tsv: support:910 = ✘")


def test_the_architecture_is_checked_against_vllm_ascends_model_list_by_name():
    """data/vllm_ascend_models.json (vllm-ascend@2c8e27ab's supported_models.md): Qwen3ForCausalLM is the page's
    'Qwen3-Dense' (line 36: ✅ on A2/A3; line 54: ✅ on Atlas 300I DUO, which products.toml calls 310P); Mistral is
    🔵 experimental (a risk); Llama4 is ❌ with no hardware named (unsupported everywhere); DeepSeek V3 is listed for
    A2/A3 only (on the 950 'no facts'); LlamaForCausalLM matches no name (the page says Llama2/3/3.1/3.2)."""
    from opassess.kb.served_models import load_served_models

    facts, models = load_route_facts(), load_served_models()

    def line(architecture, kernel, product):
        return check_serving(architecture, "", kernel, product, facts, models=models).items[0]

    page = "vllm-project/vllm-ascend@2c8e27aba65c:docs/source/user_guide/support_matrix/supported_models.md"
    qwen = line("Qwen3ForCausalLM", "A2", "Atlas A2")
    assert (qwen.status, qwen.detail, qwen.evidence) == (
        "supported", "listed by vllm-ascend as Qwen3-Dense: supported on A2/A3", f"{page}:L36")
    assert line("Qwen3ForCausalLM", "310P", "Atlas 300I").evidence == f"{page}:L54"
    assert line("MistralForCausalLM", "A3", "Atlas A3").status == "risk"
    llama4 = line("Llama4ForConditionalGeneration", "A2", "Atlas A2")
    assert (llama4.status, llama4.detail) == ("unsupported", "listed by vllm-ascend as Llama4: unsupported")
    deepseek = line("DeepseekV3ForCausalLM", "950", "Ascend 950")
    assert (deepseek.status, deepseek.detail) == ("no facts", "listed by vllm-ascend as DeepSeek V3/3.1 for A2/A3, "
                                                              "not for Ascend 950")
    llama = line("LlamaForCausalLM", "A2", "Atlas A2")
    assert (llama.status, llama.evidence) == ("no facts", f"{page}: no row named llama")
    assert "not checked" in llama.detail


def test_the_cli_checks_the_architecture_of_a_real_model_class(tmp_path):
    model = tmp_path / "lm.py"
    model.write_text(MODEL.replace("TinyLM", "Qwen2ForCausalLM"))  # the page's 'Qwen2' row (🔵 on A2/A3)
    result = runner.invoke(app, ["scan", str(model), "--route", "vllm-ascend", "--target", "A3", "-f", "json",
                                 "-o", "-", "-q"])
    assert result.exit_code == 0, result.output
    first = json.loads(result.stdout)["serving"]["items"][0]
    assert first == {"subject": "architecture Qwen2ForCausalLM", "status": "risk",
                     "detail": "listed by vllm-ascend as Qwen2: experimental on A2/A3",
                     "evidence": "vllm-project/vllm-ascend@2c8e27aba65c:docs/source/user_guide/support_matrix/"
                                 "supported_models.md:L63"}
