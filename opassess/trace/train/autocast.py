"""Mixed precision (--amp) as torch.autocast applies it on an accelerator, emulated where autocast does not reach.

torch.autocast has no meta backend ("unsupported autocast device_type 'meta'"), and CPU autocast leaves meta tensors
alone, so a scan on meta would see a float32 forward. This torch-function mode does what CUDA's (and torch_npu's,
which follows it) autocast does above autograd: it casts the floating inputs of the ops on autocast's lower-precision
list to float16/bfloat16, and those on its float32 list to float32. The casts are ordinary ATen `_to_copy` calls,
recorded with the operator that needs them, and have backward nodes as they do under real autocast.
The lists are torch's "Autocast Op Reference" (torch.amp docs, CUDA ops that can autocast to float16 / to float32),
by operator name as opassess keys them (`torch.nn.functional.linear` -> linear, `Tensor.__matmul__` -> matmul).
"""
from __future__ import annotations

from typing import Any

from ..keys import function_key

LOWER_PRECISION = frozenset({
    "matmul", "addbmm", "addmm", "addmv", "addr", "baddbmm", "bmm", "chain_matmul", "multi_dot", "conv1d", "conv2d",
    "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "linear", "mm", "mv", "prelu",
    "scaled_dot_product_attention", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
})
FLOAT32 = frozenset({
    "pow", "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt",
    "sinh", "tan", "softplus", "layer_norm", "group_norm", "norm", "nuclear_norm", "frobenius_norm",
    "cosine_similarity",
    "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "hinge_embedding_loss", "kl_div", "l1_loss",
    "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss",
    "triplet_margin_loss", "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm",
    "logsumexp", "softmax", "log_softmax", "cross_entropy", "cumprod", "cumsum", "prod", "sum", "normalize",
})
AMP_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


def autocast_mode(amp: str) -> Any:
    """A TorchFunctionMode casting as autocast would with dtype AMP_DTYPES[amp]."""
    import torch
    from torch.overrides import TorchFunctionMode

    lower = getattr(torch, AMP_DTYPES[amp])

    def cast(value: Any, dtype: Any) -> Any:
        if isinstance(value, torch.Tensor):
            eligible = value.is_floating_point() and value.dtype != torch.float64 and value.dtype != dtype
            return value.to(dtype) if eligible else value
        if isinstance(value, (list, tuple)):
            return type(value)(cast(v, dtype) for v in value)
        return value

    class Autocast(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = function_key(func)[0].rsplit(".", 1)[-1].rsplit("::", 1)[-1]
            if name in LOWER_PRECISION:
                dtype = lower
            elif name in FLOAT32:
                dtype = torch.float32
            else:
                return func(*args, **kwargs)
            return func(*cast(args, dtype), **{k: cast(v, dtype) for k, v in kwargs.items()})

    return Autocast()
