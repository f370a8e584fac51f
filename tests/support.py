"""What tests in every folder share: the repository's paths, a tiny model's source and the C++-toolchain mark."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
MODELS = ROOT / "tests" / "models"


# Building tests/models/cpp_extension.py (torch.utils.cpp_extension) needs a C++ compiler and ninja; the build is
# slow the first time (torch caches it per machine under ~/.cache/torch_extensions, so it runs once per machine).
_no_cpp_toolchain = pytest.mark.skipif(
    not ((shutil.which("c++") or shutil.which("g++")) and shutil.which("ninja")),
    reason="building a C++ extension needs a C++ compiler and ninja")


def needs_cpp_toolchain(test):
    """Skip `test` without a C++ toolchain; mark it slow (`make test-fast` leaves it out)."""
    return pytest.mark.slow(_no_cpp_toolchain(test))


# A two-layer model file (indented: textwrap.dedent it) for the CLI tests of inputs and outputs.
TINY = """
    import torch
    from torch import nn

    def build_model():
        return nn.Sequential(nn.Linear(4, 4), nn.ReLU())

    def example_inputs():
        return (torch.randn(2, 4),)
"""
