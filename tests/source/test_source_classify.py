"""opassess.source.classify: each site kind against the facts, one hand-built Site per rule."""
from __future__ import annotations

import pytest

from opassess.source.classify import Classifier
from opassess.source.facts import clauses, load_source_facts
from opassess.source.records import KernelSize, Site
from opassess.vocabulary import Category


@pytest.fixture(scope="module")
def classify():
    return Classifier(load_source_facts()).classify


def make(kind, subject, *detail, size=None):
    return Site("a.py", 3, "code", kind, subject, tuple(detail), size)


def test_no_op_flags_are_effort_free_notes(classify):
    det = classify(make("assign", "torch.backends.cudnn.deterministic", ("value", "True")))
    assert (det.kind, det.category, det.notes) == ("precision-note", Category.DIRECT, ("set to True",))
    assert "use_deterministic_algorithms" in det.npu_route and det.evidence[0].startswith("cuda_api_migration.tsv:31")
    script = classify(make("api", "torch.jit.script", ("use", "attribute")))
    assert (script.kind, script.category, script.effort_free) == ("no-op", Category.DIRECT, True)


def test_torch_cuda_names_outside_the_swap_keep_cuda(classify):
    found = classify(make("api", "torch.cuda.get_arch_list", ("use", "call")))
    assert (found.category, found.confidence) == (Category.PARAM_CONVERTED, "low")
    assert found.evidence == ("transfer_to_npu_patches.tsv:2 module-swap (transfer_to_npu.py L355)",)


def test_hand_edits_and_their_conditions(classify):
    bare = classify(make("api", "torch.load", ("use", "call")))
    assert (bare.category, bare.evidence[0].split(" ")[0]) == (Category.PARAM_CONVERTED, "cuda_api_migration.tsv:25")
    mapped = classify(make("device", "torch.load", ("literal", "cuda"), ("kwarg", "map_location=cuda")))
    assert mapped.category == Category.DIRECT and "cuda_api_migration.tsv:24" in mapped.evidence[-1]
    nvtx = classify(make("api", "torch.cuda.nvtx.range_push", ("use", "call")))
    assert nvtx.category == Category.PARAM_CONVERTED and "mstx" in nvtx.npu_route
    linalg = classify(make("api", "torch.backends.cuda.preferred_linalg_library", ("use", "call")))
    assert (linalg.category, linalg.confidence) == (Category.CUSTOM_DEV, "medium")  # unsupported, no equivalent


def test_strings_passed_to_calls_transfer_to_npu_does_not_wrap(classify):
    device = classify(make("device", "?.helper", ("literal", "cuda")))
    assert (device.category, device.confidence) == (Category.PARAM_CONVERTED, "low")
    backend = classify(make("backend", "deepspeed.init_distributed", ("literal", "nccl")))
    assert backend.category == Category.PARAM_CONVERTED and backend.evidence[0].startswith("cuda_api_migration.tsv:2 ")
    assert classify(make("device", "torch.device", ("literal", "cuda"))).category == Category.DIRECT
    assert classify(make("compare", "gloo")) is None


def test_libraries_without_a_route(classify):
    xformers = classify(make("api", "xformers.ops.memory_efficient_attention", ("use", "call")))
    assert (xformers.kind, xformers.category) == ("library-call", Category.PARAM_CONVERTED)
    mamba = classify(make("import", "mamba_ssm", ("guarded", "yes")))
    assert (mamba.kind, mamba.category) == ("guarded-import", Category.CUSTOM_DEV)
    amp_c = classify(make("import", "amp_C", ("guarded", "no")))
    assert amp_c.evidence[0].startswith("cuda_api_migration.tsv:13") and amp_c.category == Category.PARAM_CONVERTED
    assert classify(make("import", "triton", ("guarded", "no"))) is None  # kernels are the findings


def test_extensions_and_kernels_are_never_matched_by_name(classify):
    """No match rather than a wrong one: a rotary CUDA kernel is not npu_interleave_rope (nor npu_rotary_mul) because
    its name shares a word with them."""
    rope = classify(make("extension", "torch.utils.cpp_extension.load", ("name", "rotary_cuda"),
                         ("source", "rotary_kernel.cu")))
    assert (rope.category, rope.confidence) == (Category.CUSTOM_DEV, "high")
    assert "npu_" not in rope.npu_route and any("no torch_npu op matched" in n for n in rope.notes)
    kernel = classify(make("cuda-kernel", "apply_rotary_kernel", ("name", "apply_rotary_kernel")))
    assert kernel.category == Category.CUSTOM_DEV and "rope" not in kernel.npu_route
    odd = classify(make("extension", "torch.utils.cpp_extension.CUDAExtension", ("name", "zigzag_ext"),
                        ("source", "zz.cu"), ("link", "ops/zz.py:3"), size=KernelSize(lines=40, kernels=3)))
    assert (odd.category, odd.confidence, odd.size.kernels) == (Category.CUSTOM_DEV, "high", 3)
    assert odd.evidence == ("cuda_api_migration.tsv:45 unsupported (Ascend/pytorch:docs/zh/api/native_api/"
                            "pytorch_2-13-0/torch-utils-cpp_extension.md:L33)",)
    assert any("builds module zigzag_ext, imported or called at ops/zz.py:3" in n for n in odd.notes)


def test_triton_kernels_by_what_they_use(classify):
    size = KernelSize(lines=10, apis=("load", "store"))
    clean = classify(make("triton-kernel", "k", size=size))
    assert (clean.category, clean.confidence, clean.size) == (Category.PARAM_CONVERTED, "medium", size)
    big = classify(make("triton-kernel", "k", ("grid", "70000 programs (launch line 9)"), size=size))
    assert big.category == Category.PARAM_CONVERTED and any("[rule] coreDim" in e for e in big.evidence)
    unknown = classify(make("triton-kernel", "k", ("unknown-api", "mystery (line 4)"), size=size))
    assert unknown.confidence == "low"
    lacking = classify(make("triton-kernel", "k", ("dtype", "dot:float64 (line 5)"), size=size))
    assert lacking.category == Category.CUSTOM_DEV and "triton_ascend_api_limits.tsv:46 triton.language.dot" in \
        lacking.evidence
    config = classify(make("triton-config", "triton.Config", ("kwarg", "num_warps=?")))
    assert config.category == Category.PARAM_CONVERTED and "num_warps" in config.npu_route
    assert classify(make("triton-config", "triton.Config", ("kwarg", "pre_hook=?"))) is None


def test_unknown_site_kind_is_an_error(classify):
    with pytest.raises(ValueError, match="no classification"):
        classify(make("mystery", "x"))


def test_an_elementwise_triton_kernel_gets_the_torch_ops_option(classify):
    """Composite before custom (issue 40): a bias + erf-GELU kernel (loads, an add, erf, a store) is what
    F.gelu(x + bias) computes; a kernel with a tl.dot or a reduction is not offered that option."""
    gelu = classify(make("triton-kernel", "bias_gelu", size=KernelSize(
        lines=10, apis=("program_id", "arange", "load", "math.erf", "store"))))
    assert any("the same computation in torch ops" in note for note in gelu.notes)
    matmul = classify(make("triton-kernel", "mm", size=KernelSize(lines=30, apis=("load", "dot", "store"))))
    softmax = classify(make("triton-kernel", "sm", size=KernelSize(lines=20, apis=("load", "max", "exp", "sum"))))
    assert not any("torch ops" in note for finding in (matmul, softmax) for note in finding.notes)


def test_a_library_call_says_what_the_route_drops_once(classify):
    """One note: the row's dropped-features clauses naming an argument this call passes, then the rest of the row's
    list, each clause once (it used to name the arguments, then repeat the whole list in a second note)."""
    four_bit = classify(make("api", "bitsandbytes.nn.Linear4bit", ("use", "call"),
                             ("kwarg", "compress_statistics=True"), ("kwarg", "compute_dtype=torch.bfloat16")))
    assert four_bit.evidence == ("third_party_kernel_libs.tsv:12 bitsandbytes (4-bit)",)
    assert four_bit.notes == (
        "this call passes what the route drops: compress_statistics (nested/double quant) and gemv_4bit not "
        "implemented in the earlier NPUBackend; the route also drops: fp4 quant_type rejected (\"quant_type must be "
        "nf4 on NPU\"); element count must divide by blocksize",)
    assert four_bit.notes[0].count("compress_statistics") == 1
    assert four_bit.category == Category.PARAM_CONVERTED  # the row's 'direct' does not hold for what it drops
    decode = classify(make("api", "flash_attn.flash_attn_with_kvcache", ("use", "call"),
                           ("kwarg", "cache_batch_idx=idx"), ("kwarg", "softcap=30.0")))
    assert len(decode.notes) == 1 and decode.notes[0].count("cache_batch_idx") == 1
    assert decode.notes[0].startswith("this call passes what the route drops: unknown: no maintained mapping")
    # an argument the row does not name (its decode route says nothing of softcap): the row's list, once
    softcap = classify(make("api", "flash_attn.flash_attn_with_kvcache", ("use", "call"), ("kwarg", "softcap=30.0")))
    assert softcap.notes == ("dropped by the route: unknown: no maintained mapping of rotary_cos/sin, cache_batch_idx "
                             "or the in-place cache append found",)


def test_a_semicolon_in_brackets_stays_in_its_clause():
    assert clauses("a (b; c); d;; ") == ("a (b; c)", "d")
    fla = next(lib for lib in load_source_facts().libraries if lib.library == "flash-linear-attention")
    named, rest = fla.dropped_clauses({"chunk_size": "64"})
    assert named == ("op-specific verifiers reject configs (KDA intra chunk_size only 32/64; KDA bwd chunk_size % 16 "
                     "== 0)",)
    assert "; ".join(named + rest).count(";") == fla.dropped.count(";")  # every clause, each once
