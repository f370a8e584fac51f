"""Stand-ins that let a GPU-only model scan on a machine without a GPU (active only while load and capture run).

- A CUDA-only kernel library the model imports but that is not installed (the libraries of
  source_facts.json's third_party_kernel_libs table: flash_attn, xformers, apex, mamba_ssm, ...) is imported as a
  stand-in module (modules.py). An import hook at the end of sys.meta_path answers only for names no installed
  finder knows, so an installed library is never shadowed. Each call of a stand-in function is one operator of
  kind "library"; known entry points return outputs of the right shape on the inputs' device (outputs.py); any
  other call stops the capture with one line naming the symbol, rather than inventing a result.
- The project's own compiled extension, not built here: an import, by the project's code, of a module that a setup.py
  in the importing file's folder or a parent builds (CUDAExtension / cpp_extension.load) is a stand-in module too
  (project.py); each call of it is an operator of kind "extension" (custom-dev), its output shaped like its first
  tensor argument. An import guarded by `except ImportError` keeps its fallback.
- Triton: a launch `kernel[grid](...)` of a @triton.jit function is recorded (key "triton:<kernel>", its tensor
  arguments) and not run: the kernel writes into tensors the model allocated. Without triton installed, a
  stand-in `triton` / `triton.language` lets the file import.
- CUDA devices: `.cuda()`, `.to("cuda")` and `device="cuda"` in factory calls give tensors on the capture's device
  (meta; the CPU in the CPU fallback); torch.cuda.synchronize and torch.cuda.set_device do nothing.
  torch.cuda.is_available() keeps answering False: making it True would send code down paths that query the
  device (capability, memory, streams) and fail anyway.
Everything is undone when a stage ends (session.py): no stand-in module stays in sys.modules, no patch stays.
"""
from __future__ import annotations

from .calls import StandInError
from .session import StandIns

__all__ = ["StandInError", "StandIns"]
