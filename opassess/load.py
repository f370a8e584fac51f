"""Load stage: a model file or `module:factory` target -> an nn.Module with example inputs, built on the meta device."""
from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import sys
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from .datafile import check_regular
from .errors import ModelLoadError
from .huggingface import HFSettings, config_file
from .huggingface import resolve as resolve_config
from .options import ScanOptions
from .records import ModelInfo

DTYPES = {
    "float32": "float32",
    "fp32": "float32",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float64": "float64",
    "fp64": "float64",
    "int64": "int64",
    "long": "int64",
    "int32": "int32",
    "int": "int32",
}


@dataclass(frozen=True)
class LoadRequest:
    """What to load and how to make inputs for it."""

    target: str  # path to a model file, or "package.module:factory"
    entry: str | None = None  # factory function name (default build_model)
    inputs_entry: str = "example_inputs"
    input_shapes: tuple[tuple[int, ...], ...] = ()
    input_dtype: str = "float32"
    dtype: str | None = None  # assess as mixed precision: "float16" / "bfloat16"
    device: str = "meta"
    hf: HFSettings = HFSettings()  # a Hugging Face folder or config.json: its task, sequence length, batch size

    @classmethod
    def of(cls, options: ScanOptions, device: str | None = None) -> LoadRequest:
        """What a scan's options ask to load (on `device` instead of --device: the ONNX export builds on the CPU)."""
        return cls(target=options.target, entry=options.entry, input_shapes=options.input_shapes,
                   input_dtype=options.input_dtype, dtype=options.dtype, device=device or options.device,
                   hf=HFSettings(options.task, options.seq_len, options.batch_size, options.trust_remote_code))


@dataclass(frozen=True)
class LoadedModel:
    """A built model, its example inputs, and how to rebuild both on another device."""

    module: Any  # torch.nn.Module
    args: tuple
    kwargs: dict
    info: ModelInfo
    device: str
    rebuild: Callable[[str], LoadedModel] = field(repr=False, compare=False)
    # the imported model file (or module), where a training step finds loss_fn() and build_optimizer()
    namespace: Any = field(default=None, repr=False, compare=False)
    # the stand-ins for GPU-only libraries and CUDA calls (opassess/standins), installed again while capturing
    standins: Any = field(default=None, repr=False, compare=False)


def parse_shape(text: str) -> tuple[int, ...]:
    """'1,3,224,224' -> (1, 3, 224, 224); raises ModelLoadError on anything else."""
    try:
        dims = tuple(int(part) for part in text.replace("x", ",").split(",") if part.strip())
    except ValueError as exc:
        raise ModelLoadError(f"--input-shape {text!r}: expected comma-separated integers such as 1,3,224,224") from exc
    if not dims or any(d < 0 for d in dims):
        raise ModelLoadError(f"--input-shape {text!r}: expected comma-separated non-negative integers")
    return dims


def normalise_dtype(name: str, *, option: str) -> str:
    """'fp16' -> 'float16'; raises ModelLoadError naming the option for unknown names."""
    key = name.lower().removeprefix("torch.")
    if key not in DTYPES:
        raise ModelLoadError(f"{option} {name!r}: expected one of {', '.join(sorted(set(DTYPES.values())))}")
    return DTYPES[key]


@functools.lru_cache(maxsize=1024)
def display_path(target: str) -> str:
    """A path relative to the working directory when it lies below it (cached: called for every operator)."""
    path = Path(target)
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


# Internal module name of an imported model file -> the file's stem, for operator keys in reports.
MODULE_DISPLAY_NAMES: dict[str, str] = {}


def display_module(name: str) -> str:
    """'opassess_model_custom_12345' -> 'custom' (the model file's stem); other module names unchanged."""
    return MODULE_DISPLAY_NAMES.get(name, name)


@contextlib.contextmanager
def _as_script(argv0: str, directory: Path | None):
    """While the model's code runs, it sees what `python model.py` would: sys.argv of its own (a script parsing
    its flags at import gets its defaults, not opassess's command line) and the modules beside it importable."""
    entry = str(directory.resolve()) if directory is not None else None
    added = entry is not None and entry not in sys.path
    argv, sys.argv = sys.argv, [argv0]
    if added and entry is not None:
        sys.path.insert(0, entry)
    try:
        yield
    finally:
        sys.argv = argv
        if added and entry is not None:
            with contextlib.suppress(ValueError):
                sys.path.remove(entry)


def _import_file(path: Path) -> ModuleType:
    # The module is named after the file (classes then read "custom_op_model.FakeQuantizeSTE" in reports),
    # unless that name is taken by another module.
    name = "".join(c if c.isalnum() else "_" for c in path.stem)
    taken = sys.modules.get(name)
    if (taken is not None and getattr(taken, "__file__", None) != str(path)) or not name.isidentifier():
        name = f"opassess_model_{name}_{abs(hash(str(path.resolve()))) % 10**8}"
    MODULE_DISPLAY_NAMES[name] = "".join(c if c.isalnum() else "_" for c in path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ModelLoadError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    try:
        with _as_script(str(path), path.parent):
            spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        if exc.lineno is None:  # e.g. null bytes: the file is not Python source at all
            raise ModelLoadError(f"{path}: not Python source ({exc.msg})") from exc
        raise ModelLoadError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from exc
    except (Exception, SystemExit) as exc:  # a script's sys.exit() is the model's error, not opassess's exit
        sys.modules.pop(name, None)
        raise ModelLoadError(f"{path}: importing the file raised {describe_error(exc, path)}") from exc
    return module


def describe_error(exc: BaseException, within: object = None) -> str:
    """'ValueError: bad thing (at model.py:12)' naming the innermost frame outside torch and opassess; '(at line 12)'
    when that frame is in `within`, the file the message already names."""
    where = user_frame(traceback.extract_tb(exc.__traceback__))
    text = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}".rstrip(": ")
    if where and within is not None:
        file, _, line = where.rpartition(":")
        if file == str(within) or file == display_path(str(within)):
            where = f"line {line}"
    return f"{text} (at {where})" if where else text


def user_frame(frames: Sequence[traceback.FrameSummary]) -> str | None:
    """The innermost frame that is not inside torch or opassess, as 'file:line'."""
    for frame in reversed(frames):
        if not is_library_file(frame.filename):
            return f"{display_path(frame.filename)}:{frame.lineno}"
    return None


_MARKERS = ("<frozen ", "/contextlib.py", "<eval_with_key>", "/importlib/")
OPASSESS_DIR = str(Path(__file__).resolve().parent) + "/"


@functools.cache
def _library_dirs() -> tuple[str, ...]:
    import torch

    return (str(Path(torch.__file__).parent) + "/", str(Path(torch.__file__).resolve().parent) + "/", OPASSESS_DIR)


def is_library_file(filename: str) -> bool:
    """True for torch's, opassess's and the interpreter's own frames (not the user's model code)."""
    return filename.startswith(_library_dirs()) or any(marker in filename for marker in _MARKERS)


def _split_target(req: LoadRequest) -> tuple[str, str]:
    """(file or module, factory name) of FILE, FILE:FUNC, package.module:FUNC or --entry FILE:FUNC."""
    target, entry = req.target, req.entry
    if entry and ":" in entry:  # --entry FILE:FUNC
        target, entry = entry.rsplit(":", 1)
    path_part, _, func_part = (target.rpartition(":") if ":" in target and not Path(target).exists()
                               else (target, "", ""))
    return path_part, entry or func_part or "build_model"


def named_source(req: LoadRequest) -> tuple[str, str] | None:
    """(source, entry) as a load of `req` reports them, found without running anything, for the process that never
    imports the model to name the scanned file itself (a worker's own word is a claim); None for a Hugging Face
    folder or config, whose entry only the load finds."""
    path_part, entry = _split_target(req)
    if config_file(path_part) is not None:
        return None
    if path_part.endswith(".py") or Path(path_part).exists() or "/" in path_part:
        return display_path(path_part), entry
    return f"{path_part}:{entry}", entry


def _resolve_factory(req: LoadRequest) -> tuple[Any, str, str, Callable[[], Any], Path | None]:
    """Find the factory: FILE, FILE:FUNC, or package.module:FUNC; with the model file's directory, if any."""
    path_part, entry = _split_target(req)
    config = config_file(path_part)
    if config is not None:  # a Hugging Face model folder, or its config.json: built from the config
        check_regular(config, "config file", ModelLoadError)
        namespace, folder, config_entry, build, config_dir = resolve_config(config, req.hf)
        return namespace, display_path(folder), config_entry, build, config_dir
    if path_part.endswith(".py") or Path(path_part).exists() or "/" in path_part:
        path = Path(path_part)
        if not path.exists():
            raise ModelLoadError(f"{path}: no such model file")
        if path.is_dir():
            raise ModelLoadError(f"{path}: is a directory without a config.json, expected a model file or a Hugging "
                                 "Face model folder")
        check_regular(path, "model file", ModelLoadError)  # a FIFO or device would hang the import
        module = _import_file(path)
        source = display_path(str(path))
        directory = path.parent
    else:
        try:
            module = importlib.import_module(path_part)
        except (Exception, SystemExit) as exc:
            raise ModelLoadError(f"{path_part}: cannot import module: {describe_error(exc)}") from exc
        source = f"{path_part}:{entry}"
        directory = None
    factory = getattr(module, entry, None)
    if factory is None or not callable(factory):
        raise ModelLoadError(f"{source}: defines no {entry}() "
                             "(a model file must define build_model() returning an nn.Module)")
    return module, source, entry, factory, directory


def _device_context(device: str):
    import torch

    return torch.device(device) if device != "cpu" else contextlib.nullcontext()


# Parameter initialisers and the in-place random fills they end in. On the meta device they write nothing (a meta
# tensor has no data), yet each call costs: a random fill on meta runs a decomposition guarded by
# torch._disable_dynamo, which imports torch._dynamo (seconds) the first time. While a model is built on meta they
# return their tensor untouched; the shapes, dtypes and the graph the capture sees are the same (tests/test_load.py).
_INIT_FUNCTIONS = ("uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_",
                   "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_")
_RANDOM_FILLS = ("normal_", "uniform_", "random_", "exponential_", "geometric_", "log_normal_", "cauchy_",
                 "bernoulli_")


@contextlib.contextmanager
def skip_init_on_meta(device: str):
    """While the model is built on `device`: torch.nn.init and random fills of meta tensors are no-ops (else as is)."""
    if device != "meta":
        yield
        return
    import torch

    def skipping(original: Callable) -> Callable:
        @functools.wraps(original)
        def skip(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(tensor, torch.Tensor) and tensor.is_meta:
                return tensor
            return original(tensor, *args, **kwargs)
        return skip

    patched = [(torch.nn.init, name) for name in _INIT_FUNCTIONS] + [(torch.Tensor, name) for name in _RANDOM_FILLS]
    originals = [(owner, name, owner.__dict__.get(name)) for owner, name in patched]  # None: inherited (TensorBase)
    for owner, name, _ in originals:
        setattr(owner, name, skipping(getattr(owner, name)))
    try:
        yield
    finally:
        for owner, name, original in originals:
            if original is None:
                delattr(owner, name)
            else:
                setattr(owner, name, original)


def load_model(req: LoadRequest) -> LoadedModel:
    """Import the model file, build the model and its example inputs on req.device (meta by default)."""
    import torch

    from .standins import StandIns

    assess_dtype = normalise_dtype(req.dtype, option="--dtype") if req.dtype else None
    input_dtype = normalise_dtype(req.input_dtype, option="--input-dtype")
    standins = StandIns()  # a GPU-only library the file imports, .cuda() in build_model: see opassess/standins
    with standins.active(req.device):
        module, source, entry, factory, directory = _resolve_factory(req)  # runs the model file's code

    def build(device: str) -> LoadedModel:
        with standins.active(device):
            return _build(device)

    def _build(device: str) -> LoadedModel:
        with _device_context(device), skip_init_on_meta(device), _as_script(source, directory):
            try:
                model = factory()
            except (Exception, SystemExit) as exc:
                raise ModelLoadError(f"{source}: {entry}() raised {describe_error(exc, source)}") from exc
            if not isinstance(model, torch.nn.Module):
                raise ModelLoadError(f"{source}: {entry}() returned {type(model).__name__}, expected a torch.nn.Module")
            args, kwargs, described = _make_inputs(module, source, req, input_dtype)
        model = model.to(device)
        args, kwargs = _move(args, device), _move(kwargs, device)
        if assess_dtype:
            target_dtype = getattr(torch, assess_dtype)
            model = model.to(target_dtype)
            args, kwargs = _cast_floats(args, target_dtype), _cast_floats(kwargs, target_dtype)
        model.eval()
        params = sum(p.numel() for p in model.parameters())
        dtype = assess_dtype or _dominant_dtype(model, args, kwargs)
        info = ModelInfo(source=source, entry=entry, class_name=type(model).__name__, parameters=params,
                         dtype=dtype, inputs=described)
        return LoadedModel(model, args, kwargs, info, device, build, module, standins)

    return build(req.device)


def _make_inputs(module: ModuleType, source: str, req: LoadRequest,
                 input_dtype: str) -> tuple[tuple, dict, tuple[str, ...]]:
    import torch

    if req.input_shapes:
        dtype = getattr(torch, input_dtype)
        if dtype.is_floating_point:
            args = tuple(torch.randn(shape, dtype=dtype) for shape in req.input_shapes)
        else:
            args = tuple(torch.zeros(shape, dtype=dtype) for shape in req.input_shapes)
        return args, {}, tuple(_describe_value(a) for a in args)
    maker = getattr(module, req.inputs_entry, None)
    if maker is None:
        raise ModelLoadError(
            f"{source}: defines no {req.inputs_entry}(); add one returning a tuple of tensors or a dict of keyword "
            "arguments, or pass --input-shape"
        )
    try:
        value = maker()
    except (Exception, SystemExit) as exc:
        raise ModelLoadError(f"{source}: {req.inputs_entry}() raised {describe_error(exc, source)}") from exc
    if isinstance(value, dict):
        return (), dict(value), tuple(f"{k}={_describe_value(v)}" for k, v in value.items())
    if isinstance(value, torch.Tensor):
        value = (value,)
    if isinstance(value, list):
        value = tuple(value)
    if not isinstance(value, tuple):
        raise ModelLoadError(
            f"{source}: {req.inputs_entry}() returned {type(value).__name__}, expected a tuple of tensors or a dict"
        )
    return value, {}, tuple(_describe_value(v) for v in value)


def _repr(value: Any) -> str:
    """repr() of a model's object, or what it is when its __repr__ raises (the model's bug, not a reason to stop)."""
    try:
        return repr(value)
    except Exception as exc:  # noqa: BLE001 - any exception of the model's code
        return f"<{type(value).__name__} whose repr raised {type(exc).__name__}>"


def _describe_value(value: Any) -> str:
    """'float32[1,3,224,224]' for a tensor, also inside lists, tuples, dicts, namedtuples and dataclasses; repr else."""
    import dataclasses

    import torch

    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).removeprefix('torch.')}[{','.join(str(d) for d in value.shape)}]"
    fields: Iterable[tuple[str, Any]]
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        fields = zip(value._fields, value, strict=False)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = ((f.name, getattr(value, f.name)) for f in dataclasses.fields(value))
    elif isinstance(value, (list, tuple)):
        inner = ", ".join(_describe_value(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    elif isinstance(value, dict):
        return "{" + ", ".join(f"{_repr(k)}: {_describe_value(v)}" for k, v in value.items()) + "}"
    else:
        return _repr(value)
    return f"{type(value).__name__}({', '.join(f'{k}={_describe_value(v)}' for k, v in fields)})"


def _move(value: Any, device: str) -> Any:
    """Every tensor inside value (tuples, lists, dicts) on `device`."""
    import torch
    from torch.utils import _pytree as pytree

    return pytree.tree_map_only(torch.Tensor, lambda t: t if t.device.type == device else t.to(device), value)


def _cast_floats(value: Any, dtype: Any) -> Any:
    """Every floating tensor inside value cast to `dtype` (integer ids and masks keep theirs)."""
    import torch
    from torch.utils import _pytree as pytree

    return pytree.tree_map_only(torch.Tensor, lambda t: t.to(dtype) if t.is_floating_point() else t, value)


def _dominant_dtype(model: Any, args: tuple, kwargs: dict) -> str:
    """The floating dtype most parameters (else inputs) have; float32 when there are none."""
    import torch

    counts: dict[str, int] = {}
    for p in model.parameters():
        if p.is_floating_point():
            key = str(p.dtype).removeprefix("torch.")
            counts[key] = counts.get(key, 0) + p.numel()
    if not counts:
        for v in list(args) + list(kwargs.values()):
            if isinstance(v, torch.Tensor) and v.is_floating_point():
                key = str(v.dtype).removeprefix("torch.")
                counts[key] = counts.get(key, 0) + 1
    return max(counts, key=counts.__getitem__) if counts else "float32"


def on_device(loaded: LoadedModel, device: str) -> LoadedModel:
    """The same model rebuilt on another device (the CPU fallback when meta cannot run it)."""
    rebuilt = loaded.rebuild(device)
    return replace(rebuilt, info=replace(rebuilt.info, dtype=loaded.info.dtype))
