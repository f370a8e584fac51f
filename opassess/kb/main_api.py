"""Which of an op-plugin kernel's aclnn APIs is its main one (the API whose documented dtypes and products decide the
kernel's verdict; kernels.py): the others are branches, reported, not counted.

  - a kernel with APIs of its own: the documented API named like the op (mm -> aclnnMm, index_put_ ->
    aclnnIndexPutImpl, silu_ -> aclnnInplaceSilu or aclnnSilu), else the first documented one that is not a branch
    of another of its APIs: an API named as another one plus a suffix other than a version (aclnnBatchMatMulWeightNz
    = aclnnBatchMatMul + WeightNz, the weight-in-NZ-format branch) serves special inputs, so bmm -> aclnnBatchMatMul;
    a version suffix (aclnnFlashAttentionScoreV4) is a revision of the same API and stays a candidate;
  - a kernel that only delegates to other ops (op_plugin_aten_to_aclnn.tsv `aclnn_source` = delegated, its callees in
    `via`): its APIs are the callees', side work included (zeros, masked_fill, ones, triu); the main API is the main
    API of its principal callee: the first callee that is an op-plugin kernel or a torch_npu op (`op_api::`,
    `custom_ops::`), else the first callee. scaled_dot_product_attention (masked_fill_, ones, triu, logical_not,
    sqrt, custom_ops::npu_fusion_attention, zeros, zero_) -> npu_fusion_attention's API, not
    aclnnInplaceMaskedFillTensor; _weight_norm (Tensor.div) -> div's aclnnDiv, not aclnnDivs (the scalar
    divisor's).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_KERNEL_CALLEES = ("op_api::", "custom_ops::")  # a callee that is an op-plugin kernel or a torch_npu op
_CALLEE_PREFIXES = ("op_api::", "custom_ops::", "at::", "Tensor.")
_VERSION = re.compile(r"V\d+")  # aclnnFlashAttentionScore + V4: a revision, not a branch


def norm(name: str) -> str:
    """'index_put_' -> 'indexput'; 'IndexPutImpl' -> 'indexputimpl' (how an op and an API name are compared)."""
    return name.replace("_", "").lower()


def main_api(base: str, apis: list[str], documented: set[str]) -> tuple[str | None, str]:
    """(main API, why) among a kernel's own APIs: the documented API named like the op `base`, else the first
    documented one."""
    if not apis:
        return None, "the kernel launches no aclnn API itself"
    inplace = base.endswith("_") and not base.startswith("__")
    stem = norm(base)
    candidates = [a for a in apis if a in documented] or apis
    candidates = [a for a in candidates if not is_branch(a, candidates)] or candidates
    names = {a: norm(a.removeprefix("aclnn")) for a in candidates}
    wanted = (f"inplace{stem}", stem) if inplace else (stem,)
    for target in wanted:
        for api in candidates:
            if names[api] == target:
                return api, "named like the op"
    for api in candidates:
        if names[api].startswith(stem) or names[api].startswith(f"inplace{stem}"):
            return api, "named like the op"
    why = "first documented API" if candidates[0] in documented else "first API, none documented"
    return candidates[0], why


def is_branch(api: str, apis: list[str]) -> bool:
    """Whether `api` is another of `apis` plus a suffix that is not a version: aclnnBatchMatMulWeightNz among
    [.., aclnnBatchMatMul, ..] is (the weight-NZ branch); aclnnFlashAttentionScoreV4 beside aclnnFlashAttentionScore
    is not."""
    return any(api != other and api.startswith(other) and not _VERSION.fullmatch(api[len(other):])
               for other in apis)


def principal_callee(via: list[str]) -> str | None:
    """The callee a delegating kernel exists to call, as an op name: ['Tensor.masked_fill_', ...,
    'custom_ops::npu_fusion_attention', 'at::zeros'] -> 'npu_fusion_attention'; ['Tensor.div'] -> 'div'."""
    if not via:
        return None
    callee = next((c for c in via if c.startswith(_KERNEL_CALLEES)), via[0])
    for prefix in _CALLEE_PREFIXES:
        callee = callee.removeprefix(prefix)
    return callee


def delegated_main(base: str, entry: Mapping[str, Any], aten: Mapping[str, Any],
                   documented: set[str]) -> tuple[str | None, str]:
    """(main API, why) of one kernel row (`entry`, of the op `base`); `aten` is every row, by overload."""
    callee = principal_callee(entry.get("via", [])) if entry.get("source") == "delegated" else None
    if callee is None:
        return main_api(base, entry["apis"], documented)
    stem = callee.removesuffix("_out")
    own = [api for name, row in aten.items() if name.partition(".")[0] == stem for api in row["apis"]]
    apis = [api for api in entry["apis"] if api in own] or entry["apis"]
    main, why = main_api(stem, apis, documented)
    return main, f"it delegates to {callee}: {why} of its APIs"


__all__ = ["delegated_main", "is_branch", "main_api", "norm", "principal_callee"]
