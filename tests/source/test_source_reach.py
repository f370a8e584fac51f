"""Tests for opassess.source.reach (issue 40, item 4): a source-only scan of a state-spaces/mamba-style library prices
what its default configuration runs. The tree, built here: a MambaConfig dataclass; MambaLMHeadModel picks its mixer
from `{"Mamba1": Mamba, "Mamba2": Mamba2}[ssm_cfg.pop("layer", "Mamba1")]`; Mamba's fast path (use_fast_path=True)
calls two CUDA extensions setup.py builds (selective_scan fwd/bwd in fp16/bf16/fp32, real and complex weights;
causal_conv1d); Mamba2 calls a Triton SSD path of its own; fused_add_norm=True takes a Triton layer norm; tests/
runs both. The default config reaches Mamba1: the SSD kernels, Mamba2 and the tests are present, not priced, and the
selective-scan extension is sized by its float32 sources (the 2026 clone: 191.7 person-days before, 58.2 after)."""
from __future__ import annotations

import ast
import textwrap

import pytest

from opassess.options import ScanOptions
from opassess.pipeline.sources import assess_sources
from opassess.score.source_cost import estimate_sources, site_effort
from opassess.score.weights.load import load_weights
from opassess.source import scan_sources
from opassess.source.reach.values import UNKNOWN, Config, Scope, evaluate
from tests.source.support import write_tree

WEIGHTS = load_weights()
KERNEL = '''\
    #pragma once
    template <typename input_t, typename weight_t>
    __global__ void {name}(input_t* u, weight_t* A, int n) {{
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) {{
        u[i] = u[i] * A[i % 16] + (i > 0 ? u[i - 1] : input_t(0));
      }}
    }}
    '''
TRITON = textwrap.dedent('''\
    @triton.jit
    def {name}(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(x_ptr + offs, x * 2, mask=offs < n)


    ''')
DTYPES = {"fp32": "float", "fp16": "at::Half", "bf16": "at::BFloat16"}
SCAN = {**{f"csrc/selective_scan/selective_scan_fwd_{d}.cu":
           f'#include "selective_scan_fwd_kernel.cuh"\n\ntemplate void selective_scan_fwd_cuda<{t}, float>'
           f"(SSMParamsBase &params, cudaStream_t stream);\n" for d, t in DTYPES.items()},
        **{f"csrc/selective_scan/selective_scan_bwd_{d}_{w}.cu":
           f'#include "selective_scan_bwd_kernel.cuh"\n\ntemplate void selective_scan_bwd_cuda<{t}, '
           f"{'complex_t' if w == 'complex' else 'float'}>(SSMParamsBwd &params, cudaStream_t stream);\n"
           for d, t in DTYPES.items() for w in ("real", "complex")}}
MAMBA_LIKE = {
    "setup.py": f'''\
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension

        setup(name="mamba_like", packages=["mamba_like"], cmdclass={{"build_ext": BuildExtension}},
              ext_modules=[CUDAExtension(name="selective_scan_cuda", sources={["csrc/selective_scan/selective_scan.cpp",
                                                                                *sorted(SCAN)]!r}),
                           CUDAExtension(name="causal_conv1d_cuda",
                                         sources=["csrc/causal_conv1d/causal_conv1d.cpp",
                                                  "csrc/causal_conv1d/causal_conv1d_fwd.cu"])])
        ''',
    "csrc/selective_scan/selective_scan.cpp": '''\
        #include <torch/extension.h>
        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
          m.def("fwd", &selective_scan_fwd);
          m.def("bwd", &selective_scan_bwd);
        }
        ''',
    "csrc/selective_scan/selective_scan_fwd_kernel.cuh": KERNEL.format(name="selective_scan_fwd_kernel"),
    "csrc/selective_scan/selective_scan_bwd_kernel.cuh": KERNEL.format(name="selective_scan_bwd_kernel"),
    **SCAN,
    "csrc/causal_conv1d/causal_conv1d.cpp": '''\
        #include <torch/extension.h>
        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("fwd", &causal_conv1d_fwd); }
        ''',
    "csrc/causal_conv1d/causal_conv1d_fwd.cu": KERNEL.format(name="causal_conv1d_fwd_kernel"),
    "mamba_like/__init__.py": '''\
        from mamba_like.modules.mamba_simple import Mamba
        from mamba_like.modules.mamba2 import Mamba2
        from mamba_like.models.lm import MambaLMHeadModel
        ''',
    "mamba_like/models/__init__.py": "",
    "mamba_like/models/config.py": '''\
        from dataclasses import dataclass, field


        @dataclass
        class MambaConfig:
            d_model: int = 2560
            n_layer: int = 64
            ssm_cfg: dict = field(default_factory=dict)
            rms_norm: bool = True
            fused_add_norm: bool = True
        ''',
    "mamba_like/models/lm.py": '''\
        import torch.nn as nn

        from mamba_like.models.config import MambaConfig
        from mamba_like.modules.mamba2 import Mamba2
        from mamba_like.modules.mamba_simple import Mamba
        from mamba_like.ops.triton.layer_norm import layer_norm_fn


        def create_block(d_model, ssm_cfg=None, layer_idx=None):
            ssm_cfg = dict(ssm_cfg or {})
            ssm_layer = ssm_cfg.pop("layer", "Mamba1")
            ssm_layer_map = {"Mamba1": Mamba, "Mamba2": Mamba2}
            return ssm_layer_map[ssm_layer](d_model, layer_idx=layer_idx, **ssm_cfg)


        class MambaLMHeadModel(nn.Module):
            def __init__(self, config: MambaConfig):
                super().__init__()
                self.fused_add_norm = config.fused_add_norm
                self.layers = nn.ModuleList(create_block(config.d_model, config.ssm_cfg, i)
                                            for i in range(config.n_layer))

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                if not self.fused_add_norm:
                    return nn.functional.layer_norm(x, x.shape[-1:])
                return layer_norm_fn(x)
        ''',
    "mamba_like/modules/__init__.py": "",
    "mamba_like/modules/mamba_simple.py": '''\
        import torch.nn as nn

        from mamba_like.ops.selective_scan_interface import mamba_inner_fn, selective_scan_ref


        class Mamba(nn.Module):
            def __init__(self, d_model, layer_idx=None, use_fast_path=True):
                super().__init__()
                self.use_fast_path = use_fast_path

            def forward(self, x):
                if self.use_fast_path:
                    return mamba_inner_fn(x)
                return selective_scan_ref(x)
        ''',
    "mamba_like/modules/mamba2.py": '''\
        import torch.nn as nn

        from mamba_like.ops.triton.ssd_combined import mamba_chunk_scan_combined


        class Mamba2(nn.Module):
            def __init__(self, d_model, layer_idx=None, chunk_size=256):
                super().__init__()
                self.chunk_size = chunk_size

            def forward(self, x):
                return mamba_chunk_scan_combined(x.to("cuda"), self.chunk_size)
        ''',
    "mamba_like/ops/__init__.py": "",
    "mamba_like/ops/selective_scan_interface.py": '''\
        import torch

        import causal_conv1d_cuda
        import selective_scan_cuda


        class MambaInnerFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return selective_scan_cuda.fwd(causal_conv1d_cuda.fwd(x))

            @staticmethod
            def backward(ctx, dout):
                return selective_scan_cuda.bwd(dout)


        def mamba_inner_fn(x):
            return MambaInnerFn.apply(x)


        def selective_scan_ref(x):
            return torch.cumsum(x, 1)
        ''',
    "mamba_like/ops/triton/__init__.py": "",
    "mamba_like/ops/triton/layer_norm.py": "import triton\nimport triton.language as tl\n\n\n"
                                           + TRITON.format(name="_layer_norm_fwd_1pass_kernel")
                                           + "def layer_norm_fn(x):\n"
                                             "    _layer_norm_fwd_1pass_kernel[(4,)](x, x.numel(), BLOCK=128)\n"
                                             "    return x\n",
    "mamba_like/ops/triton/ssd_combined.py": "import triton\nimport triton.language as tl\n\n\n"
                                             + "".join(TRITON.format(name=n) for n in (
                                                 "_chunk_cumsum_fwd_kernel", "_chunk_state_fwd_kernel",
                                                 "_state_passing_fwd_kernel", "_chunk_scan_fwd_kernel"))
                                             + "def mamba_chunk_scan_combined(x, chunk_size):\n"
                                               "    for kernel in (_chunk_cumsum_fwd_kernel,\n"
                                               "                   _chunk_state_fwd_kernel,\n"
                                               "                   _state_passing_fwd_kernel,\n"
                                               "                   _chunk_scan_fwd_kernel):\n"
                                               "        kernel[(4,)](x, chunk_size, BLOCK=64)\n"
                                               "    return x\n",
    "tests/test_mamba2.py": '''\
        import torch

        from mamba_like.modules.mamba2 import Mamba2
        from mamba_like.models.config import MambaConfig


        def test_mamba2_runs():
            config = MambaConfig(ssm_cfg={"layer": "Mamba2"})
            x = torch.randn(2, 64, device="cuda")
            torch.cuda.synchronize()
            assert Mamba2(config.d_model)(x).shape == x.shape
        ''',
}
SSD = {"_chunk_cumsum_fwd_kernel", "_chunk_state_fwd_kernel", "_state_passing_fwd_kernel", "_chunk_scan_fwd_kernel"}


@pytest.fixture
def mamba_like(tmp_path):
    return write_tree(tmp_path / "mamba_like_repo", MAMBA_LIKE)


def _priced(root):
    """The source-only assessment and its priced sites, reached or not."""
    assessment = assess_sources((str(root),), ScanOptions(target=str(root)))
    return assessment, assessment.estimate.source


def test_the_default_config_reaches_mamba1_and_its_kernels_not_the_mamba2_ssd_path(mamba_like):
    assessment, sites = _priced(mamba_like)
    reach = assessment.source_scan.reach
    assert reach.config == "mamba_like/models/config.py: MambaConfig"
    assert reach.roots == ("mamba_like/models/lm.py: MambaLMHeadModel",)
    kernels = {s.finding.subject: s.reached for s in sites if s.finding.kind == "triton-kernel"}
    # the layer norm fused_add_norm takes is reached; the four SSD kernels only Mamba2 launches are not
    assert kernels == {"_layer_norm_fwd_1pass_kernel": True, **dict.fromkeys(SSD, False)}
    # Mamba's fast path calls both modules
    assert [s.reached for s in sites if s.finding.kind == "cpp-extension"] == [True, True]
    # the test file's device strings and CUDA calls run no part of the default model
    assert {s.reached for s in sites if s.finding.file.startswith("tests/")} == {False}
    assert {s.reached for s in sites if s.finding.file == "mamba_like/modules/mamba2.py"} == {False}


def test_the_selective_scan_extension_is_sized_by_its_float32_real_sources(mamba_like):
    scan = scan_sources(mamba_like, configured=True)
    ext = next(f for f in scan.findings if f.kind == "cpp-extension" and "selective_scan.cpp" in f.notes[0])
    other = sorted(f.rsplit("/", 1)[1] for f in scan.reach.variants)
    assert other == ["selective_scan_bwd_bf16_complex.cu", "selective_scan_bwd_bf16_real.cu",
                     "selective_scan_bwd_fp16_complex.cu", "selective_scan_bwd_fp16_real.cu",
                     "selective_scan_bwd_fp32_complex.cu", "selective_scan_fwd_bf16.cu", "selective_scan_fwd_fp16.cu"]
    assert any(n.startswith("built for other dtypes than the default configuration's float32, not sized: ")
               for n in ext.notes)
    # fwd and bwd kernels (6 lines each, __global__ to its brace) + the two float32 real instantiation files (3 lines
    # each); unsized, all nine instantiation files would count: 6 + 6 + 9 x 3
    assert (ext.size.kernels, ext.size.lines) == (2, 6 + 6 + 2 * 3)
    unsized = next(f for f in scan_sources(mamba_like).findings if f.kind == "cpp-extension"
                   and "selective_scan.cpp" in f.notes[0])
    assert unsized.size.lines == 6 + 6 + 9 * 3


def test_the_total_is_the_reached_sites_and_the_rest_is_present(mamba_like):
    assessment, sites = _priced(mamba_like)
    reached = [s for s in sites if s.reached]
    present = [s for s in sites if not s.reached]
    # hand-derived from weights.toml [source] (likely): the selective-scan extension, custom-dev 2 + 2 kernels x 4 +
    # 18 lines / 100 x 2 = 10.36; causal_conv1d 2 + 1 x 4 + 6 / 100 x 2 = 6.12; the layer-norm Triton kernel,
    # param-converted 0.5 + 1 x 1 + 5 / 100 x 0.25 = 1.5125. Present: four SSD kernels at 1.5125, three direct sites
    # at 0.05. Summed whole, as before, the tree was 10.78 (39 lines) + 6.12 + 5 x 1.5125 + 3 x 0.05 = 24.61
    assert assessment.estimate.total.likely == pytest.approx(10.36 + 6.12 + 1.5125)
    assert assessment.estimate.present.likely == pytest.approx(4 * 1.5125 + 3 * 0.05)
    assert assessment.estimate.total.likely == pytest.approx(sum(s.person_days.likely for s in reached))
    assert assessment.estimate.present.likely == pytest.approx(sum(s.person_days.likely for s in present))
    ssd = [s for s in present if s.finding.subject in SSD]
    assert len(ssd) == 4 and all(s.person_days == site_effort(s.finding, WEIGHTS)[0] for s in ssd)
    # the same tree summed whole, as before: every variant priced
    scan = scan_sources(mamba_like)
    whole = sum(s.person_days.likely for s in estimate_sources(scan.findings, (), WEIGHTS, scan.root))
    assert whole == pytest.approx(10.78 + 6.12 + 5 * 1.5125 + 3 * 0.05)
    assert assessment.estimate.total.likely < whole - sum(s.person_days.likely for s in ssd)


def test_a_config_that_defaults_to_mamba2_reaches_the_ssd_path_instead(mamba_like):
    config = mamba_like / "mamba_like/models/config.py"
    config.write_text(config.read_text().replace("field(default_factory=dict)",
                                                 'field(default_factory=lambda: {"layer": "Mamba2"})'))
    _, sites = _priced(mamba_like)
    kernels = {s.finding.subject: s.reached for s in sites if s.finding.kind == "triton-kernel"}
    assert kernels == {"_layer_norm_fwd_1pass_kernel": True, **dict.fromkeys(SSD, True)}
    # nothing calls the CUDA extensions any more: both are present only
    assert [s.reached for s in sites if s.finding.kind == "cpp-extension"] == [False, False]


def test_a_bfloat16_config_sizes_the_bfloat16_sources(mamba_like):
    config = mamba_like / "mamba_like/models/config.py"
    config.write_text(config.read_text().replace("    d_model: int = 2560", '    dtype: str = "bfloat16"\n'
                                                                             "    d_model: int = 2560"))
    scan = scan_sources(mamba_like, configured=True)
    assert scan.reach.dtype == "bfloat16"
    assert {f.rsplit("/", 1)[1] for f in scan.reach.variants} >= {"selective_scan_fwd_fp32.cu",
                                                                  "selective_scan_bwd_fp32_real.cu"}
    assert "selective_scan_fwd_bf16.cu" not in {f.rsplit("/", 1)[1] for f in scan.reach.variants}


def test_a_project_without_a_config_class_prices_every_site_as_before(mamba_like):
    (mamba_like / "mamba_like/models/config.py").write_text("MAMBA_DEFAULTS = {'d_model': 2560}\n")
    assessment, sites = _priced(mamba_like)
    assert assessment.source_scan.reach is None and all(s.reached for s in sites)
    assert any(s.finding.subject in SSD for s in sites)


def test_code_nested_past_python_s_limit_prices_every_site_without_a_traceback(mamba_like):
    # a sum of 20,000 terms is 20,000 levels deep: the scan lists the file as skipped, the walk (whose root lies in
    # it) cannot start, so the reach is not told and every other site counts, as without a config
    deep = mamba_like / "mamba_like/models/lm.py"
    deep.write_text(deep.read_text() + "\n\ndef total(x):\n    return " + " + ".join(["x"] * 20000) + "\n"
                    "\n\nclass Uses:\n    def f(self, config: MambaConfig):\n        return total(config)\n")
    assessment, sites = _priced(mamba_like)
    assert [s.file for s in assessment.source_scan.skipped] == ["mamba_like/models/lm.py"]
    assert assessment.source_scan.reach is None and all(s.reached for s in sites)


@pytest.mark.parametrize("expression, value", [
    ("self.use_fast_path", True), ("not self.use_fast_path", False), ("self.use_fast_path and x", UNKNOWN),
    ("not self.use_fast_path and x", False), ("self.use_fast_path or x", True),
    ("cfg.pop('layer', 'Mamba1')", "Mamba1"),
    ("cfg.get('norm', 'rms') == 'rms'", True), ("config.fused_add_norm", True), ("config.n_layer > 2", UNKNOWN),
    ("layer_idx in [1, 2]", UNKNOWN), ("mode in ('a', 'b')", True)])
def test_the_defaults_decide_what_they_can_and_leave_the_rest_open(expression, value):
    config = Config("config.py", "MambaConfig", {"fused_add_norm": True, "n_layer": 64, "ssm_cfg": {}})
    scope = Scope(names={"mode": "a"}, attrs={"use_fast_path": True}, configs={"config": config}, lookups=(config,))
    assert evaluate(ast.parse(expression, mode="eval").body, scope) == value
