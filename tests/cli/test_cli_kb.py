"""`opassess kb`, `kb show`, `kb import` and `explain` through typer's CliRunner (on a local app, as the cli package
registers them)."""
from __future__ import annotations

import shutil

import pytest
import typer
from typer.testing import CliRunner

from opassess.cli.kb import explain, kb_app
from opassess.resources import data_path
from tests.kb.test_kb import _wheel

app = typer.Typer()
app.add_typer(kb_app, name="kb")
app.command("explain")(explain)
runner = CliRunner()


def run(*args: str, env: dict | None = None):
    return runner.invoke(app, list(args), env=env)


def test_kb_summary_shows_version_provenance_and_counts(tmp_path):
    result = run("kb", "--kb-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "opassess knowledge base" in result.output
    assert "Ascend/op-plugin @ 517f2e7d0f20" in result.output
    assert "limitation clauses parsed" in result.output and "npu_aten_ops.tsv" in result.output


@pytest.mark.parametrize(("name", "old", "new", "key"), [
    ("rules.toml", "[[family]]", "[[familly_typo]]", "familly_typo"),
    ("error_codes.toml", "\ncause = ", '\ncaus = "x"\ncause = ', "acl[0].caus"),
])
def test_kb_dir_with_a_typo_in_a_curated_file_fails_in_one_line(tmp_path, name, old, new, key):
    # A full knowledge-base folder may carry its own rules.toml and error_codes.toml; a typo in either is refused.
    folder = tmp_path / "kb"
    shutil.copytree(data_path("kb"), folder)
    text = data_path(name).read_text(encoding="utf-8")
    assert old in text
    (folder / name).write_text(text.replace(old, new, 1), encoding="utf-8")
    result = run("kb", "--kb-dir", str(folder))
    assert result.exit_code == 1
    assert result.output == f"opassess: error: {folder / name}: key '{key}': unknown key\n"


def test_kb_show_native_api():
    result = run("kb", "show", "torch.nn.Conv2d")
    assert result.exit_code == 0, result.output
    assert "dtypes (Atlas A2): bfloat16, float16, float32" in result.output
    assert "CANN operator: Conv2D" in result.output and "padding -> pads" in result.output


def test_kb_show_module_lists_its_functional_limits():
    # nn.MaxPool2d's own row has no dilation limit; the max_pool2d functional it calls does.
    result = run("kb", "show", "torch.nn.MaxPool2d")
    assert "calls torch.nn.functional.max_pool2d" in result.output and "dilation must be 1" in result.output


def test_kb_show_aten_and_npu_ops():
    lgamma = run("kb", "show", "aten::lgamma")
    assert lgamma.exit_code == 0 and "no NPU kernel" in lgamma.output
    conv = run("kb", "show", "aten::convolution")
    assert "has NPU kernel" in conv.output and "[v2.1..newest]" not in conv.output  # ranges shown as v2.1..newest
    fa = run("kb", "show", "npu_fusion_attention")
    assert "torch_npu.npu_fusion_attention" in fa.output
    assert "torch.nn.functional.scaled_dot_product_attention" in fa.output


def test_kb_show_lists_the_aclnn_apis_and_their_dtype_rows_per_product():
    mm = run("kb", "show", "aten::mm").output
    assert "aten::mm calls aclnnMatmulWeightNz, aclnnMm (main aclnnMm" in mm
    assert "Atlas A2: ✔ self bfloat16, float16, float32" in mm
    assert "Atlas training series: ✔ self float16, float32 (not bfloat16)" in mm
    silu = run("kb", "show", "torch.nn.functional.silu").output
    assert "aten::silu calls aclnnSilu" in silu and "Atlas A2: ✔ self float16, float32, bfloat16" in silu
    linear = run("kb", "show", "torch.nn.Linear").output  # composite: the kernels of the ops it dispatches
    assert "aten::linear is composite" in linear and "dispatches aten::t, aten::addmm" in linear
    assert "aten::addmm calls aclnnAddmmWeightNz, aclnnAddmm (main aclnnAddmm" in linear
    conv = run("kb", "show", "torch.nn.functional.conv2d").output  # the 2-D example does not fit conv2d
    assert "no op-plugin kernel named conv2d" in conv


def test_kb_show_renders_the_limitation_in_english_and_points_to_the_chinese_clause():
    out = run("kb", "show", "torch.nn.functional.silu").output
    assert "in English from its parsed facts" in out and "dtypes (Atlas A2): float16, float32" in out
    assert "pytorch_2-13-0, page torch-nn-functional, row torch.nn.functional.silu" in out


def test_kb_show_unknown_name_is_an_error():
    result = run("kb", "show", "mylib::nothing")
    assert result.exit_code == 1
    assert "not in the knowledge base" in result.output


def test_kb_import_then_show(tmp_path):
    dest = tmp_path / "overlay"
    result = run("kb", "import", str(_wheel(tmp_path)), "--dest", str(dest))
    assert result.exit_code == 0, result.output
    assert "torch 2.14" in result.output and "6 kernels" in result.output
    shown = run("kb", "show", "aten::lgamma", "--torch-npu", "2.14", "--kb-dir", str(dest))
    assert "has NPU kernel" in shown.output and "imported-wheel" in shown.output
    # --kb-dir before the subcommand means the same
    assert run("kb", "--kb-dir", str(dest), "show", "aten::lgamma", "--torch-npu", "2.14").output == shown.output
    assert run("kb", "--kb-dir", str(dest), "import", str(_wheel(tmp_path))).exit_code == 2


def test_explain():
    result = run("explain", "ACL_ERROR_RT_AICORE_EXCEPTION")
    assert result.exit_code == 0 and "507015" in result.output and "remedy:" in result.output
    assert "invalid type" in run("explain", "ERR01002").output
    unknown = run("explain", "XYZ")
    assert unknown.exit_code == 1 and "unknown error code" in unknown.output


def test_explain_answers_cann_e_codes_and_pasted_logs():
    result = run("explain", "EZ9999")
    assert result.exit_code == 0 and result.output.startswith("EZ9999: Inner Error in an operator")
    log = "EZ9999: Inner Error!\ncall aclnnAdd failed, error code is 561003\n[ERROR] ERR99999 UNKNOWN\nEQ99"
    pasted = runner.invoke(app, ["explain"], input=log)  # nothing on the command line: read standard input
    assert pasted.exit_code == 0, pasted.output
    blocks = pasted.output.split("\n\n")
    assert [b.split(":")[0] for b in blocks] == ["EZ9999", "ACLNN_ERR_INNER_FIND_KERNEL_ERROR = 561003", "ERR99999",
                                                 "the log blames"]
    assert blocks[-1].startswith("the log blames: aclnnAdd (called by aten::add")
    assert run("explain", "RuntimeError: error code is 999999 EQ0").exit_code == 1
    assert "no error code found" in run("explain", "nothing to see here").output


def test_explain_answers_the_vector_core_family_the_message_after_a_code_and_the_blamed_operator():
    """507034-507036 (raised in aclnn kernels such as FlashAttentionScore) are explained as themselves; the message
    after an E-code whose module says little is read (out of memory; HCCL connect and execution timeouts, naming
    HCCL_CONNECT_TIMEOUT / HCCL_EXEC_TIMEOUT); the operator a log blames is picked out, with the ATen ops calling it."""
    for value, name in ((507034, "VECTOR_CORE_TIMEOUT"), (507035, "VECTOR_CORE_EXCEPTION"),
                        (507036, "VECTOR_CORE_TRAP_EXCEPTION")):
        result = run("explain", str(value))
        assert result.exit_code == 0 and result.output.startswith(f"ACL_ERROR_RT_{name} = {value}:"), result.output
    assert "Vector Core kernel raised an exception" in run("explain", "507035").output

    memory = run("explain", "EL0004 Failed to allocate memory")
    assert memory.exit_code == 0 and "the message says: Device memory ran out" in memory.output
    assert "PYTORCH_NPU_ALLOC_CONF" in memory.output
    connect = run("explain", "EJ0001 HCCL init failed: connect timeout")
    assert "HCCL could not connect the ranks in time" in connect.output and "HCCL_CONNECT_TIMEOUT" in connect.output
    assert "HCCL_EXEC_TIMEOUT" not in connect.output
    execute = run("explain", "EI9999 HCCL execute timeout: notify wait timeout")
    assert "collective waited too long" in execute.output and "raise HCCL_EXEC_TIMEOUT" in execute.output

    log = ("[ERROR] RuntimeError: call aclnnFlashAttentionScore failed, error code is 507035\n"
           "[ERROR] fault kernel_name=FlashAttentionScore_1_mix_aiv, func_name=FlashAttentionScore")
    result = run("explain", log)
    assert result.exit_code == 0 and "ACL_ERROR_RT_VECTOR_CORE_EXCEPTION = 507035" in result.output
    blame = result.output.split("\n\n")[-1]
    assert blame.startswith("the log blames: aclnnFlashAttentionScore (called by aten::")
    assert "scaled_dot_product_attention" in blame and blame.count("FlashAttentionScore") == 1


def test_explain_list_shows_every_concrete_code_and_the_families():
    result = run("explain", "--list")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert any(line.startswith("EZ9999 ") for line in lines)
    assert any(line.startswith("ACL_ERROR_INVALID_PARAM ") and "100000" in line for line in lines)
    assert not any(line.startswith(("ERR**", "E**")) for line in lines)
    assert "E-codes Emnnnn with m in 1, 3, E, I, Z" in result.output


def test_explain_and_kb_show_of_a_source_fact_do_not_import_torch():
    import subprocess
    import sys

    for args in (["explain", "EZ9999"], ["kb", "show", "torch.cuda.synchronize"]):
        code = ("import sys; from opassess.cli import main; sys.argv = ['opassess', *sys.argv[1:]]\n"
                "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
                "print('torch' in sys.modules)")
        out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True).stdout
        assert out.strip().splitlines()[-1] == "False", args


def test_diff_and_calibrate_do_not_import_torch(tmp_path):
    """Commands that read reports and tables only (issue 29): no torch import, whatever the tables name."""
    import json
    import subprocess
    import sys

    report = {"format_version": 1, "model": {"source": "m.py", "class_name": "M"}, "operators": [],
              "effort": {"total": {"low": 1.0, "likely": 2.0, "high": 3.0}}}
    (tmp_path / "a.json").write_text(json.dumps(report))
    (tmp_path / "actuals.csv").write_text("operator,category,person_days\ntorch.nn.LSTM,param-converted,5\n"
                                          "torch.topk,param-converted,9\ntorch.nn.Linear,direct,2\n")
    code = ("import sys; from opassess.cli import main; sys.argv = ['opassess', *sys.argv[1:]]\n"
            "try:\n    main()\nexcept SystemExit as e:\n    print('exit', e.code)\n"
            "print('torch' in sys.modules)")
    for args in (["diff", str(tmp_path / "a.json"), str(tmp_path / "a.json")],
                 ["calibrate", str(tmp_path / "actuals.csv"), "-o", str(tmp_path / "w.toml")]):
        done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
        lines = done.stdout.strip().splitlines()
        assert lines[-1] == "False", (args, done.stdout, done.stderr)
        assert lines[-2] in ("exit 0", "exit None"), (args, done.stdout, done.stderr)
