"""Every cause on a line, and advice that agrees with the verdict: a float64 dist.gather gets its dtype cause and the
compatible-implementation switch it still needs after the cast; a GradScaler in a bf16-autocast file is not told to
become the NPU's GradScaler; a bf16 masked_fill the kernel facts run natively gets no 'stay in float32' finding."""
from __future__ import annotations

import textwrap

from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from opassess.source import scan_sources


def _scan(tmp_path, code: str):
    (tmp_path / "train.py").write_text(textwrap.dedent(code))
    return {f.line: f for f in scan_sources(tmp_path).findings}


def test_a_float64_gather_names_both_of_its_causes(tmp_path):
    sites = _scan(tmp_path, """\
        import torch
        import torch.distributed as dist

        def collect(parts):
            x = torch.zeros(3, dtype=torch.float64)
            dist.gather(x, parts, dst=0)
        """)
    gather = sites[6]
    assert "cast to a supported dtype (float32)" in gather.npu_route
    assert any(n.startswith("also: enable the compatible implementation (use_compatible_impl(True))")
               for n in gather.notes)
    assert any(e.startswith("hccl_distributed_support.tsv:9") for e in gather.evidence)


def test_a_bf16_grad_scaler_is_not_told_to_switch(tmp_path):
    bf16 = _scan(tmp_path, """\
        import torch

        scaler = torch.cuda.amp.GradScaler()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            pass
        """)
    assert bf16[3].kind == "no-op" and str(bf16[3].category) == "direct"
    assert bf16[3].npu_route.startswith("not needed under bfloat16 autocast")
    fp16 = _scan(tmp_path, """\
        import torch

        scaler = torch.cuda.amp.GradScaler()
        """)
    assert "GradScaler" in fp16[3].npu_route and fp16[3].kind == "gpu-api"


def test_masked_fill_in_bf16_follows_the_kernel_verdict(tmp_path):
    (tmp_path / "mf.py").write_text(textwrap.dedent("""\
        import torch
        from torch import nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(16, 16)

            def forward(self, x):
                mask = torch.triu(torch.ones(16, 16, dtype=torch.bool), 1)
                return self.lin(x).masked_fill(mask, float("-inf")).softmax(-1)

        def build_model():
            return M()

        def example_inputs():
            return (torch.randn(2, 16, 16),)
        """))
    assessment = assess(ScanOptions(target=str(tmp_path / "mf.py"), dtype="bfloat16", project_scan=False))
    verdict = next(c for c in assessment.classified if c.operator.key == "Tensor.masked_fill")
    assert str(verdict.category) == "direct" and any(r.code == "kernel-dtype" for r in verdict.reasons)
    assert not [f for f in assessment.findings if f.kind == "mixed-precision" and "masked_fill" in f.title]
