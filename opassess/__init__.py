"""opassess: assess how hard it is to move a PyTorch model's operators to the Ascend NPU.

The library API is the names in `__all__` (docs/library.md): `ScanOptions` says what to assess, `assess` runs the
pipeline on a model in this process (`assess_sources` on source files alone) and returns the `Assessment`,
`build_view` turns it into the view every report format reads and `render_view` renders that as 'json', 'md',
'html', 'csv', 'terminal', 'sarif' or 'junit'. Each is imported on first use, so `import opassess` stays cheap (the
command's start-up imports this package too). Every other module is internal and may move.
"""

import importlib

__version__ = "0.1.0"
__all__ = ["Assessment", "ScanOptions", "assess", "assess_sources", "build_view", "render_view"]
_HOME = {"Assessment": "opassess.assessment", "ScanOptions": "opassess.options",
         "assess": "opassess.pipeline.assess", "assess_sources": "opassess.pipeline.sources",
         "build_view": "opassess.report", "render_view": "opassess.report"}


def __getattr__(name: str) -> object:
    """The public names, each from its module on first use (PEP 562)."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'opassess' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
