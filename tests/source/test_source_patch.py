"""`--patch FILE.diff` (source/patch.py): the safe rewrites of a GPU project as a unified diff, applied to a copy of
the project with `patch -p1`, then scanned again: fewer non-direct items, nothing new, each hunk commented with the
finding it resolves, and the unsafe sites (a flash-attn call with softcap, a bf16 GradScaler) left as advice."""
from __future__ import annotations

import ast
import shutil
import subprocess
import textwrap

from typer.testing import CliRunner

from opassess.cli import app
from opassess.source import scan_sources

runner = CliRunner()

TRAIN = '''\
import os
import torch
import torch.distributed as dist
from flash_attn import flash_attn_func
from apex.optimizers import FusedAdam


class Block(torch.nn.Module):
    def forward(self, q, k, v):
        return flash_attn_func(q, k, v, causal=True, window_size=(256, 0))


def capped(q, k, v):
    import flash_attn
    return flash_attn.flash_attn_func(q, k, v, softcap=30.0)


def main():
    dist.init_process_group("nccl")
    device = torch.device("cuda:0")
    model = Block().cuda()
    x = torch.randn(2, 16, 4, 8, device="cuda")
    opt = FusedAdam(model.parameters(), lr=1e-3)
    scaler = torch.cuda.amp.GradScaler()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = model(x, x, x)
    scaler.scale(y.sum()).backward()
    opt.step()
'''


def _key(f) -> tuple[str, str, str]:
    return f.file, f.kind, f.subject


def test_the_patch_applies_and_the_rescan_has_fewer_non_direct_items_and_nothing_new(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text(TRAIN)
    (project / "notes.md").write_text("not Python: never touched\n")
    before = scan_sources(project)
    result = runner.invoke(app, ["source", str(project), "--patch", str(tmp_path / "npu.diff"), "-f", "json",
                                 "-o", str(tmp_path / "report.json")])
    assert result.exit_code == 0, result.output
    diff = (tmp_path / "npu.diff").read_text()
    assert diff.startswith("--- a/train.py\n+++ b/train.py\n") and "notes.md" not in diff
    assert "site(s) rewritten" in result.output
    copy = tmp_path / "copy"
    shutil.copytree(project, copy)
    subprocess.run(["patch", "-p1", "--quiet", "-i", str(tmp_path / "npu.diff")], cwd=copy, check=True)
    patched = (copy / "train.py").read_text()
    ast.parse(patched)  # still Python
    assert "import torch_npu  # noqa: F401" in patched and "from flash_attn import" not in patched
    assert 'dist.init_process_group("hccl")' in patched and 'torch.device("npu:0")' in patched
    assert "model = Block().npu()" in patched and 'device="npu")' in patched
    assert "opt = torch_npu.optim.NpuFusedAdam(model.parameters(), lr=1e-3)" in patched
    # the flash-attn call with its mapped arguments and the mask it needs, above it the finding it resolves
    block = patched.split("def forward(self, q, k, v):\n")[1].split("\n\n")[0]
    assert block.splitlines()[0].strip().startswith("# opassess: flash_attn.flash_attn_func -> "
                                                    "torch_npu.npu_fusion_attention (third_party_kernel_libs.tsv:3)")
    assert "atten_mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool, device=q.device), diagonal=1)" in block
    assert "sparse_mode=4, pre_tockens=256, next_tockens=0)[0]" in block
    # unsafe: softcap has no counterpart (the call stays), the bf16 GradScaler needs no NPU scaler (advice)
    assert "flash_attn.flash_attn_func(q, k, v, softcap=30.0)" in patched
    assert "scaler = torch.cuda.amp.GradScaler()" in patched
    after = scan_sources(copy)
    non_direct = [f for f in before.findings if str(f.category) != "direct"]
    non_direct_after = [f for f in after.findings if str(f.category) != "direct"]
    assert len(non_direct_after) < len(non_direct)
    assert {_key(f) for f in non_direct_after} <= {_key(f) for f in non_direct}  # nothing new to do
    # what is new is the same call seen as an API now that its 'nccl' / 'cuda' literal is gone: direct, no work
    assert {(_key(f), str(f.category)) for f in after.findings if _key(f) not in {_key(b) for b in before.findings}} \
        == {(("train.py", "gpu-api", "torch.distributed.init_process_group"), "direct"),
            (("train.py", "gpu-api", "torch.autocast"), "direct")}


def test_a_project_with_nothing_safe_to_rewrite_gets_an_empty_patch(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "k.py").write_text(textwrap.dedent("""\
        import flash_attn
        def f(q, k, v, s):
            return flash_attn.flash_attn_func(q, k, v, softcap=s)
        """))
    result = runner.invoke(app, ["source", str(project), "--patch", str(tmp_path / "p.diff"), "-q",
                                 "-o", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "p.diff").read_text() == ""



def test_a_flash_call_imported_from_the_interface_module_is_rewritten_and_the_file_still_runs(tmp_path):
    """`from flash_attn.flash_attn_interface import flash_attn_func` in a file that never imports torch: the call is
    rewritten, its import goes, and the mask's adapter line finds `torch` bound (the patch imports it)."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "attn.py").write_text(textwrap.dedent("""\
        from flash_attn.flash_attn_interface import flash_attn_func


        def attend(q, k, v):
            return flash_attn_func(q, k, v, causal=True)
        """))
    result = runner.invoke(app, ["source", str(project), "--patch", str(tmp_path / "p.diff"),
                                 "-o", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    assert "1 site(s) rewritten, 0 left as advice" in result.output
    subprocess.run(["patch", "-p1", "--quiet", "-i", str(tmp_path / "p.diff")], cwd=project, check=True)
    patched = (project / "attn.py").read_text()
    tree = ast.parse(patched)
    assert [ast.unparse(n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)] == \
        ["import torch", "import torch_npu"]
    assert "atten_mask = torch.triu(torch.ones(2048, 2048" in patched
    assert "torch_npu.npu_fusion_attention(query=q, key=k, value=v" in patched and "sparse_mode=3" in patched
    assert not scan_sources(project).findings  # nothing left to port in it


ROUTER = '''\
import torch


class Router(torch.nn.Module):
    """Two topk calls with sorted=False: the router's is summed and scattered (its order unused), the ranker's
    first column is read (its order used)."""

    def __init__(self):
        super().__init__()
        self.gate = torch.nn.Linear(16, 8)

    def forward(self, x):
        logits = self.gate(x)
        weights, experts = torch.topk(logits, 2, dim=-1, sorted=False)
        probs = weights / weights.sum(-1, keepdim=True)
        routed = torch.zeros_like(logits).scatter(-1, experts, probs)
        best, _ = logits.topk(3, dim=-1, sorted=False)
        return routed + best[:, 0:1]


def build_model():
    return Router()


def example_inputs():
    return (torch.randn(4, 16),)
'''


def _topk_limits(report: dict) -> dict[str, list[str]]:
    """op -> the source lines of its signatures that still carry sorted=False."""
    return {op["op"]: [s for sig in op["signatures"] if sig["attrs"].get("sorted") is False for s in sig["sources"]]
            for op in report["operators"] if op["op"] in ("torch.topk", "Tensor.topk")}


def test_a_model_scan_patches_the_topk_whose_order_is_unused_and_leaves_the_one_that_reads_it(tmp_path):
    import json

    project = tmp_path / "proj"
    project.mkdir()
    (project / "router.py").write_text(ROUTER)
    result = runner.invoke(app, ["scan", str(project / "router.py"), "--patch", str(tmp_path / "npu.diff"),
                                 "-f", "json", "-o", str(tmp_path / "before.json")])
    assert result.exit_code == 0, result.output
    assert "1 site(s) rewritten, 1 left as advice" in result.output
    before = _topk_limits(json.loads((tmp_path / "before.json").read_text()))
    assert before == {"torch.topk": ["router.py:14"], "Tensor.topk": ["router.py:17"]}
    diff = (tmp_path / "npu.diff").read_text()
    removed = [line[1:] for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    # the proven one: its hunk, commented with the finding and the uses that make the order irrelevant
    assert removed == ["        weights, experts = torch.topk(logits, 2, dim=-1, sorted=False)"]
    assert "        weights, experts = torch.topk(logits, 2, dim=-1, sorted=True)" in added
    comment = next(line for line in added if "torch.topk: sorted=False -> sorted=True" in line)
    assert "(scatter along dim -1, .sum over dim -1)" in comment and "npu_native_api_support: torch.topk" in comment
    # the order-using one (best[:, 0:1] reads the first position): no hunk
    assert not any("logits.topk(3" in line for line in removed + added)
    copy = tmp_path / "copy"
    shutil.copytree(project, copy)
    subprocess.run(["patch", "-p1", "--quiet", "-i", str(tmp_path / "npu.diff")], cwd=copy, check=True)
    assert "best, _ = logits.topk(3, dim=-1, sorted=False)" in (copy / "router.py").read_text()
    rescan = runner.invoke(app, ["scan", str(copy / "router.py"), "-f", "json", "-o", str(tmp_path / "after.json")])
    assert rescan.exit_code == 0, rescan.output
    after = json.loads((tmp_path / "after.json").read_text())
    assert _topk_limits(after) == {"torch.topk": [], "Tensor.topk": ["router.py:18"]}  # one line down: the import
    topk = next(op for op in after["operators"] if op["op"] == "torch.topk")
    assert topk["category"] == "direct" and not any(r["code"] == "param-limit" for r in topk["reasons"])


def test_an_nccl_variable_is_renamed_to_the_one_torch_npu_reads_and_the_rescan_drops_it(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "launch.py").write_text(textwrap.dedent("""\
        import os
        os.environ["NCCL_ASYNC_ERROR_HANDLING"] = "1"
        os.environ["NCCL_SOCKET_IFNAME"] = "eth0"
        """))
    result = runner.invoke(app, ["source", str(project), "--patch", str(tmp_path / "p.diff"), "-q",
                                 "-o", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    diff = (tmp_path / "p.diff").read_text()
    assert '-os.environ["NCCL_ASYNC_ERROR_HANDLING"] = "1"\n' in diff
    assert '+os.environ["TORCH_HCCL_ASYNC_ERROR_HANDLING"] = "1"\n' in diff
    assert "+# opassess: NCCL_ASYNC_ERROR_HANDLING -> TORCH_HCCL_ASYNC_ERROR_HANDLING, the variable torch_npu reads " \
           "(Ascend/pytorch@9e73e708ab9350d203475609f36f8a43f6a0c2ab:docs/zh/api/environment_variable/" \
           "collective_communication/TORCH_HCCL_ASYNC_ERROR_HANDLING.md)" in diff
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert not any("NCCL_SOCKET_IFNAME" in line for line in changed)  # no cited counterpart: advice
    assert "import torch_npu" not in diff  # the new name needs no torch_npu name in the code
    copy = tmp_path / "copy"
    shutil.copytree(project, copy)
    subprocess.run(["patch", "-p1", "--quiet", "-i", str(tmp_path / "p.diff")], cwd=copy, check=True)
    assert [f.subject for f in scan_sources(copy).findings] == ["NCCL_SOCKET_IFNAME"]



def test_a_model_scans_source_folder_beside_the_model_is_patched_as_the_source_command_patches_it(tmp_path):
    # `scan model/m.py --source proj`: the sites' paths are relative to the two folders' common parent, which the
    # report does not keep (no absolute path of this machine); the patch still finds the files there
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "m.py").write_text(textwrap.dedent("""\
        import torch
        def build_model():
            return torch.nn.Linear(4, 4)
        def example_inputs():
            return (torch.randn(2, 4),)
        """))
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "launch.py").write_text('import os\nos.environ["NCCL_ASYNC_ERROR_HANDLING"] = "1"\n')
    result = runner.invoke(app, ["scan", str(tmp_path / "model" / "m.py"), "--source", str(tmp_path / "proj"),
                                 "--patch", str(tmp_path / "p.diff"), "-o", str(tmp_path / "r.json"), "-f", "json"])
    assert result.exit_code == 0, result.output
    assert "1 site(s) rewritten, 0 left as advice" in result.stderr
    diff = (tmp_path / "p.diff").read_text()
    assert diff.startswith("--- a/proj/launch.py\n")
    subprocess.run(["patch", "-p1", "--quiet", "-i", str(tmp_path / "p.diff")], cwd=tmp_path, check=True)
    assert 'os.environ["TORCH_HCCL_ASYNC_ERROR_HANDLING"] = "1"' in (tmp_path / "proj" / "launch.py").read_text()


GATE = '''\
import torch


class Gate(torch.nn.Module):
    """DeepSeek-V3's router as projects vendor it (modeling_deepseek.py): the chosen groups become a mask by
    scatter_ along dim 1 of 2-D scores (order unused); the chosen experts are returned (order may be used)."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 8, bias=False)

    def forward(self, x):
        scores = self.proj(x).sigmoid()
        group_scores = scores.view(-1, 4, 2).topk(2, dim=-1)[0].sum(dim=-1)
        group_idx = torch.topk(group_scores, k=2, dim=-1, sorted=False)[1]
        group_mask = torch.zeros_like(group_scores)
        group_mask.scatter_(1, group_idx, 1)
        score_mask = group_mask.unsqueeze(-1).expand(-1, 4, 2).reshape(-1, 8)
        masked = scores.masked_fill(~score_mask.bool(), 0.0)
        topk_indices = torch.topk(masked, k=2, dim=-1, sorted=False)[1]
        return scores.gather(1, topk_indices), topk_indices


def build_model():
    return Gate()


def example_inputs():
    return (torch.randn(4, 16),)
'''


def test_deepseek_group_routing_is_proven_with_the_captured_rank_and_the_returned_experts_are_not(tmp_path):
    """scatter_(1, group_idx, 1) is along the topk's dim -1 only because the capture saw 2-D group scores (4, 4)."""
    (tmp_path / "gate.py").write_text(GATE)
    result = runner.invoke(app, ["scan", str(tmp_path / "gate.py"), "--patch", str(tmp_path / "npu.diff"), "-q",
                                 "-o", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    diff = (tmp_path / "npu.diff").read_text()
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert len(changed) == 3
    assert changed[0] == "-        group_idx = torch.topk(group_scores, k=2, dim=-1, sorted=False)[1]"
    comment = "+        # opassess: torch.topk: sorted=False -> sorted=True, the NPU's only mode; its order is "
    assert changed[1].startswith(comment + "not used (scatter along dim -1) (npu_native_api_support: torch.topk ")
    assert changed[2] == "+        group_idx = torch.topk(group_scores, k=2, dim=-1, sorted=True)[1]"
