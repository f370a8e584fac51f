"""opassess.source.python: alias resolution, the GPU-specific sites of a file, Triton kernels and their flags."""
from __future__ import annotations

import textwrap

import pytest

from opassess.source.facts import load_source_facts
from opassess.source.python import scan_python


def sites(source: str):
    return scan_python(textwrap.dedent(source), "m.py", load_source_facts())


def kinds(source: str):
    return [(s.line, s.kind, s.subject) for s in sites(source)]


def test_import_aliases_resolve_to_qualified_names():
    assert kinds("""\
        import flash_attn as fa
        from torch.cuda.amp import GradScaler as GS
        import torch.distributed as dist
        def f(q):
            fa.flash_attn_func(q, q, q)
            GS()
            dist.init_process_group(backend="nccl")
        """) == [(5, "api", "flash_attn.flash_attn_func"),  # the import is one item with its call (join_imports)
                 (6, "api", "torch.cuda.amp.GradScaler"), (7, "backend", "torch.distributed.init_process_group")]


def test_unimported_names_are_not_guessed():
    # `torch` is never imported here, so torch.cuda.set_device is a local object, not the API.
    assert kinds("torch = object()\ntorch.cuda.set_device(0)\n") == []


def test_guarded_import_is_marked():
    found = sites("""\
        try:
            from flash_attn import flash_attn_func
        except (ImportError, RuntimeError):
            flash_attn_func = None
        import xformers.ops
        """)
    assert [(s.subject, s.get("guarded"), s.all("name")) for s in found] == [
        ("flash_attn", "yes", ("flash_attn_func",)), ("xformers.ops", "no", ())]


def test_device_strings_and_comparisons():
    assert kinds("""\
        import torch
        x = torch.zeros(2, device="cuda:0")
        y = x.to("cuda")
        z = helper(x, device="cuda")
        if x.device.type == "cuda" or backend in ("gloo", "nccl"):
            pass
        torch.zeros(2)
        """) == [(2, "device", "torch.zeros"), (3, "device", "torch.Tensor.to"), (4, "device", "?.helper"),
                 (5, "compare", "cuda"), (5, "compare", "nccl")]


def test_flag_assignments_and_attribute_uses():
    found = sites("""\
        import torch
        torch.backends.cudnn.benchmark = True
        scaler_cls = torch.cuda.amp.GradScaler
        """)
    assert [(s.kind, s.subject, s.get("value") or s.get("use")) for s in found] == [
        ("assign", "torch.backends.cudnn.benchmark", "True"), ("api", "torch.cuda.amp.GradScaler", "attribute")]


def test_cpp_extension_load_lists_its_sources():
    (found,) = sites("""\
        from torch.utils.cpp_extension import load
        ext = load(name="fused_rope", sources=["rope.cpp", "rope_kernel.cu"], verbose=True)
        """)
    assert (found.kind, found.get("name"), found.all("source")) == ("extension", "fused_rope",
                                                                   ("rope.cpp", "rope_kernel.cu"))


KERNEL = """\
    import triton
    import triton.language as tl
    N = 1 << 20
    BLOCK = 8

    @triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=4)], key=["n"])
    @triton.jit
    def k(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        x = tl.load(x_ptr + pid, padding_option="zero")
        d = tl.dot(x.to(tl.float64), x)
        tl.atomic_add(acc_ptr, x, sem="relaxed")
        tl.mystery(x)

    def run(x, acc):
        k[(triton.cdiv(N, BLOCK),)](x, acc, N)
        k[lambda meta: (triton.cdiv(N, meta["BLOCK"]),)](x, acc, N)
    """


def test_triton_kernel_size_apis_and_flags():
    found = sites(KERNEL)
    kernel = next(s for s in found if s.kind == "triton-kernel")
    assert (kernel.line, kernel.size.lines) == (8, 8)
    assert kernel.size.apis == ("atomic_add", "cast", "dot", "load", "mystery", "program_id")
    assert kernel.all("dtype") == ("dot:float64 (line 11)", "cast:float64 (line 11)")
    assert kernel.all("arg") == ("load:padding_option (line 10)", "atomic_add:sem=relaxed (line 12)")
    assert kernel.all("unknown-api") == ("mystery (line 13)",)
    # N / BLOCK = 131072 programs: over the 65535 coreDim bound; the lambda grid is not visible.
    assert kernel.all("grid") == ("131072 programs (launch line 16)",)
    config = next(s for s in found if s.kind == "triton-config" and s.subject == "triton.Config")
    assert config.all("kwarg") == ("num_warps=?",)


def test_atomic_pointer_dtype_is_not_guessed():
    kernel = next(s for s in sites("""\
        import triton
        import triton.language as tl
        @triton.jit
        def k(p, v):
            tl.atomic_add(p.to(tl.pointer_type(tl.int64)), v)
        """) if s.kind == "triton-kernel")
    assert kernel.all("dtype") == ()


def test_syntax_error_propagates_with_its_line():
    with pytest.raises(SyntaxError) as info:
        sites("x = (\n")
    assert info.value.lineno == 1


def test_a_guard_and_its_call_are_one_site():
    """One call site is one site (issue 40): `if flash_attn_func is not None:` before the call, and a FusedAdam both
    tested and called on one line, each came to two sites; a reference the file never calls stays a site."""
    found = sites("""
        import apex
        from flash_attn import flash_attn_func, flash_attn_varlen_func

        def attend(q, k, v):
            if flash_attn_func is not None:
                return flash_attn_func(q, k, v)

        def make(model):
            return apex.optimizers.FusedAdam(model.parameters()) if apex.optimizers.FusedAdam else None

        HANDLERS = {"varlen": flash_attn_varlen_func}
    """)
    api = [(s.line, s.subject) for s in found if s.kind == "api"]
    assert api == [(7, "flash_attn.flash_attn_func"), (10, "apex.optimizers.FusedAdam"),
                   (12, "flash_attn.flash_attn_varlen_func")]
