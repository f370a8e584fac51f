"""The replacement call a flash-attn source site renders: npu_fusion_attention with the call's own arguments, the
adapter lines they need, and the documented constraints of the op it fails (opassess/advice/flash.py)."""
from __future__ import annotations

import ast
import textwrap

from opassess.advice import Constraints, check_attention, flash_call
from opassess.source import scan_sources
from opassess.source.facts import load_source_facts


def _call(route: str) -> tuple[str, list[str], dict[str, str]]:
    """'torch_npu.f(a, b, x=1)[0]' -> ('torch_npu.f', ['a', 'b'], {'x': '1'})."""
    node = ast.parse(route, mode="eval").body
    assert isinstance(node, ast.Subscript) and ast.unparse(node.slice) == "0"  # the op returns a tuple
    call = node.value
    assert isinstance(call, ast.Call)
    return (ast.unparse(call.func), [ast.unparse(a) for a in call.args],
            {k.arg: ast.unparse(k.value) for k in call.keywords if k.arg})


def _scan(tmp_path, code: str):
    (tmp_path / "attn.py").write_text(textwrap.dedent(code))
    return scan_sources(tmp_path)


def test_a_sliding_window_call_renders_band_mode_with_its_window_and_the_mask_it_needs(tmp_path):
    scan = _scan(tmp_path, """\
        import torch
        from flash_attn import flash_attn_func

        def attend(q, k, v):
            return flash_attn_func(q, k, v, causal=True, window_size=(256, 0))
        """)
    assert [(f.line, f.kind) for f in scan.findings] == [(5, "library-call")]  # the import is one item with it
    site = scan.findings[0]
    api, args, kwargs = _call(site.npu_route)
    assert api == "torch_npu.npu_fusion_attention" and args == []
    assert kwargs == {"query": "q", "key": "k", "value": "v", "head_num": "q.shape[2]", "input_layout": "'BSND'",
                      "scale": "q.shape[-1] ** (-0.5)",
                      "atten_mask": "atten_mask", "sparse_mode": "4", "pre_tockens": "256", "next_tockens": "0"}
    assert ("first: atten_mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool, device=q.device), diagonal=1)"
            in site.notes)
    assert "imported at line 2" in site.notes
    assert site.evidence == ("third_party_kernel_libs.tsv:3 flash_attn (direct calls)",)


def test_causal_dropout_scale_and_softcap_map_or_fail_by_name(tmp_path):
    scan = _scan(tmp_path, """\
        import flash_attn as fa

        def attend(query, key, value, p):
            return fa.flash_attn_func(query, key, value, 0.1, 0.125, True, softcap=30.0)
        """)
    site = scan.findings[0]
    _, args, kwargs = _call(site.npu_route)
    assert [kwargs[n] for n in ("query", "key", "value")] == ["query", "key", "value"]
    assert kwargs["head_num"] == "query.shape[2]" and kwargs["keep_prob"] == "0.9" and kwargs["scale"] == "0.125"
    assert kwargs["sparse_mode"] == "3" and "pre_tockens" not in kwargs  # causal: bottom-right, no window
    assert site.notes[0] == "fails: softcap=30.0: npu_fusion_attention has no soft-capping argument"


def test_varlen_and_packed_calls_take_tnd_and_an_unbind(tmp_path):
    scan = _scan(tmp_path, """\
        from flash_attn import flash_attn_varlen_func, flash_attn_qkvpacked_func

        def varlen(q, k, v, cu, n, causal):
            return flash_attn_varlen_func(q, k, v, cu, cu, n, n, causal=causal)

        def packed(qkv):
            return flash_attn_qkvpacked_func(qkv, window_size=(64, 64))
        """)
    varlen, packed = (f for f in scan.findings if f.kind == "library-call")
    _, _, kwargs = _call(varlen.npu_route)
    assert kwargs["input_layout"] == "'TND'" and kwargs["head_num"] == "q.shape[1]"
    assert kwargs["actual_seq_qlen"] == "tuple(cu[1:].cpu().tolist())"
    assert kwargs["sparse_mode"] == "3 if causal else 0"  # causal known at run time only
    assert "imported at line 1" in varlen.notes or "imported at line 1" in packed.notes
    _, args, kwargs = _call(packed.npu_route)
    assert (kwargs["query"], kwargs["key"], kwargs["value"]) == ("q", "k", "v")
    assert "first: q, k, v = qkv.unbind(dim=2)" in packed.notes
    assert (kwargs["sparse_mode"], kwargs["pre_tockens"], kwargs["next_tockens"]) == ("4", "64", "64")


def test_a_guarded_import_stays_its_own_item(tmp_path):
    scan = _scan(tmp_path, """\
        try:
            from flash_attn import flash_attn_func
        except ImportError:
            flash_attn_func = None

        def attend(q, k, v):
            return flash_attn_func(q, k, v)
        """)
    assert [f.kind for f in scan.findings] == ["guarded-import", "library-call"]
    _, _, kwargs = _call(scan.findings[1].npu_route)
    assert "sparse_mode" not in kwargs and "atten_mask" not in kwargs  # plain attention: no mask


def test_the_constraints_come_from_the_route_row_and_name_what_fails():
    row = next(lib for lib in load_source_facts().libraries if lib.row == 3)
    constraints = Constraints(row.cite, row.constraints)
    assert constraints.values("head_dim") == [1, 768] and constraints.values("max_heads") == [256]
    assert "BSND" in constraints.values("layouts") and "bf16" in constraints.values("dtypes")
    assert check_attention(constraints, layout="BSND", head_dim=128, heads=32, kv_heads=8, dtype="bfloat16") == ()
    failures = check_attention(constraints, layout="BSND", head_dim=1024, heads=300, kv_heads=7, dtype="float64")
    assert [f.split(":")[0] for f in failures] == ["dtype float64", "head dim 1024", "300 query heads",
                                                   "300 query heads over 7 key/value heads"]
    assert "head dim 1-768 (third_party_kernel_libs.tsv:3" in failures[1]
    call = flash_call("flash_attn.flash_attn_func", ["q", "k", "v"], {"return_attn_probs": "True"}, constraints)
    assert not call.fits and call.failures[0].startswith("return_attn_probs")


def test_a_call_the_capture_saw_gets_its_head_count_and_scale_as_numbers():
    """tests/models/gpu_only.py: flash_attn_func(q, k, v, causal=True, window_size=(8, 0), softcap=30.0) on q, k, v
    (2, 16, 4, 8): head_num=4 and scale 8 ** -0.5 from the stand-in's shapes, not q.shape[2]."""
    from opassess.options import ScanOptions
    from opassess.pipeline.assess import assess

    assessment = assess(ScanOptions(target="tests/models/gpu_only.py"))
    site = next(f for f in assessment.source_scan.findings if f.kind == "library-call")
    _, _, kwargs = _call(site.npu_route)
    assert (kwargs["head_num"], kwargs["scale"], kwargs["input_layout"]) == ("4", "0.353553", "'BSND'")
    assert (kwargs["sparse_mode"], kwargs["pre_tockens"], kwargs["next_tockens"]) == ("4", "8", "0")
    assert site.notes[0].startswith("fails: softcap=30.0") and "imported at line 8" in site.notes


def test_captured_shapes_are_checked_against_the_documented_constraints():
    row = next(lib for lib in load_source_facts().libraries if lib.row == 3)
    call = flash_call("flash_attn.flash_attn_func", ["q", "k", "v"], {}, Constraints(row.cite, row.constraints),
                      ((1, 128, 32, 1024), (1, 128, 6, 1024), "float64"))
    assert _call(call.text())[2]["head_num"] == "32"
    assert [f.split(":")[0] for f in call.failures] == ["dtype float64", "head dim 1024",
                                                        "32 query heads over 6 key/value heads"]


def test_a_call_imported_from_flash_attn_interface_renders_its_call_and_takes_its_import_with_it(tmp_path):
    """flash_attn/__init__.py re-exports flash_attn_func, flash_attn_varlen_func and flash_attn_qkvpacked_func from
    flash_attn.flash_attn_interface, where they are defined; code importing them from there makes the same call and
    gets the same rendered npu_fusion_attention, not the route's capability list, and no second item for the
    import."""
    scan = _scan(tmp_path, """\
        from flash_attn.flash_attn_interface import flash_attn_func, flash_attn_varlen_func

        def attend(q, k, v, cu, n):
            a = flash_attn_func(q, k, v, causal=True, window_size=(256, 0))
            return a, flash_attn_varlen_func(q, k, v, cu, cu, n, n, causal=True)
        """)
    assert [(f.line, f.kind) for f in scan.findings] == [(4, "library-call"), (5, "library-call")]
    dense, varlen = scan.findings
    _, _, kwargs = _call(dense.npu_route)
    assert (kwargs["head_num"], kwargs["input_layout"]) == ("q.shape[2]", "'BSND'")
    assert (kwargs["sparse_mode"], kwargs["pre_tockens"], kwargs["next_tockens"]) == ("4", "256", "0")
    assert "imported at line 1" in dense.notes
    _, _, kwargs = _call(varlen.npu_route)
    assert (kwargs["input_layout"], kwargs["sparse_mode"]) == ("'TND'", "3")
    assert kwargs["actual_seq_kvlen"] == "tuple(cu[1:].cpu().tolist())"
