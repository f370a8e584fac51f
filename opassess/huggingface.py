"""A Hugging Face model folder (a `config.json`, with weights that are never read) or a `config.json` itself as a scan
target: the model built from its config through transformers' classes, with example inputs made from the config.

The parent reads the config as data (`read_config`: its dtype, its architecture) before any model code runs; the
worker builds the model (`resolve`), so a folder's own modelling code (`trust_remote_code`) runs only there, and only
when the user said `--trust-remote-code`."""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .errors import ModelLoadError
from .options import ScanOptions
from .vocabulary import HF_TASKS as TASKS

CONFIG_NAME = "config.json"
CONFIG_LIMIT = 4 * 1024 * 1024  # bytes: a model's config.json is a few KiB; anything near this is not one

DEFAULT_SEQ_LEN = 2048  # tokens of the example inputs when --seq-len is not given (capped by the config's maximum)
AUDIO_SAMPLES = 16000  # one second at 16 kHz: a speech encoder's raw input when --seq-len is not given


@dataclass(frozen=True)
class HFSettings:
    """How to build a Hugging Face model and its inputs (--task, --seq-len, --batch-size, --trust-remote-code)."""

    task: str | None = None
    seq_len: int | None = None
    batch_size: int = 1
    trust_remote_code: bool = False


def config_file(target: str) -> Path | None:
    """The config.json a target names: a folder holding one, or a `.json` file; None for anything else."""
    path = Path(target)
    if path.is_dir():
        return path / CONFIG_NAME if (path / CONFIG_NAME).is_file() else None
    if path.suffix == ".json" and path.is_file():
        return path
    return None


def is_model_folder(target: str) -> bool:
    """True for a folder holding a config.json (one model), not a folder of model files (a portfolio)."""
    path = Path(target)
    return path.is_dir() and (path / CONFIG_NAME).is_file()


def read_config(path: Path) -> dict[str, Any]:
    """The config as a dict, read as data (no model code runs): a one-line ModelLoadError when it is not a model's."""
    try:
        if path.stat().st_size > CONFIG_LIMIT:
            raise ModelLoadError(f"{path}: {path.stat().st_size} bytes is too large for a model's config.json")
        with path.open("rb") as handle:
            raw = json.loads(handle.read())
    except OSError as exc:
        raise ModelLoadError(f"{path}: cannot read the config: {exc.strerror or exc}") from exc
    except (ValueError, RecursionError) as exc:
        raise ModelLoadError(f"{path}: not a JSON config ({str(exc).splitlines()[0] if str(exc) else 'bad JSON'})") \
            from exc
    if not isinstance(raw, dict) or not isinstance(raw.get("model_type"), str):
        raise ModelLoadError(f"{path}: not a Hugging Face model config (no \"model_type\")")
    return raw


def config_dtype(config: dict[str, Any]) -> str | None:
    """The half-precision dtype the checkpoint is published in ('bfloat16'), which a scan assesses by default."""
    value = config.get("dtype", config.get("torch_dtype"))
    if not isinstance(value, str):
        value = (config.get("text_config") or {}).get("dtype") if isinstance(config.get("text_config"), dict) else None
    return value.removeprefix("torch.") if isinstance(value, str) and value.removeprefix("torch.") in (
        "bfloat16", "float16") else None


def with_config_defaults(options: ScanOptions) -> ScanOptions:
    """A scan of a Hugging Face model without --dtype assesses it in the half-precision dtype its config names (the
    one it is published and served in), as --dtype would; anything else is left as given. Read in the parent."""
    path = config_file(options.target)
    if path is None or options.dtype is not None or options.input_shapes:
        return options
    dtype = config_dtype(read_config(path))
    return replace(options, dtype=dtype) if dtype else options


def architecture(config: dict[str, Any]) -> str:
    """The class the config names ('Qwen3ForCausalLM'), else its model type ('qwen3')."""
    names = config.get("architectures")
    if isinstance(names, list) and names and isinstance(names[0], str):
        return names[0]
    return str(config["model_type"])


def _transformers() -> Any:
    try:
        import transformers
    except ImportError as exc:
        raise ModelLoadError("scanning a Hugging Face model folder needs transformers: pip install transformers "
                             "(a version that knows the model's architecture)") from exc
    return transformers


def _load_config(path: Path, settings: HFSettings) -> Any:
    raw = read_config(path)
    transformers = _transformers()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a config names no hub file to fetch: nothing is downloaded
    if "auto_map" in raw and not settings.trust_remote_code:
        if raw["model_type"] not in transformers.CONFIG_MAPPING:
            raise ModelLoadError(f"{path}: model type {raw['model_type']!r} is defined by the folder's own code "
                                 "(auto_map): pass --trust-remote-code to run it (in the worker)")
    try:
        return transformers.AutoConfig.from_pretrained(str(path), trust_remote_code=settings.trust_remote_code)
    except (ValueError, KeyError) as exc:
        if raw["model_type"] not in transformers.CONFIG_MAPPING:
            raise ModelLoadError(f"{path}: model type {raw['model_type']!r} is unknown to the installed transformers "
                                 f"{transformers.__version__} (upgrade it, or pass --trust-remote-code when the folder "
                                 "ships its modelling code)") from exc
        raise ModelLoadError(f"{path}: transformers cannot read the config: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:300]}" if text else type(exc).__name__


def _model_class(config: Any, settings: HFSettings) -> tuple[Any, str]:
    """The class to build and how it was chosen: --task's Auto class, else the config's architecture, else AutoModel."""
    transformers = _transformers()
    if settings.task:
        return getattr(transformers, TASKS[settings.task]), TASKS[settings.task]
    for name in getattr(config, "architectures", None) or ():
        cls = getattr(transformers, name, None)
        if cls is not None:
            return cls, name
        if settings.trust_remote_code and name in (getattr(config, "auto_map", None) or {}).get("AutoModel", ""):
            break
    auto_map = getattr(config, "auto_map", None) or {}
    if settings.trust_remote_code and auto_map:
        for key in ("AutoModelForCausalLM", "AutoModelForImageTextToText", "AutoModel"):
            if key in auto_map:
                return getattr(transformers, key), key
    return transformers.AutoModel, "AutoModel"


def _build(config: Any, settings: HFSettings, path: Path) -> Any:
    cls, chosen = _model_class(config, settings)
    try:
        if chosen.startswith("Auto"):
            return cls.from_config(config, trust_remote_code=settings.trust_remote_code)
        return cls._from_config(config) if hasattr(cls, "_from_config") else cls(config)
    except ValueError as exc:
        if settings.task and "Unrecognized configuration class" in str(exc):
            raise ModelLoadError(f"{path}: --task {settings.task} does not apply to a "
                                 f"{type(config).__name__} ({_first_line(exc)[:160]})") from exc
        raise


def _sub(config: Any, name: str) -> Any:
    return getattr(config, name, None) or config


def _size(value: Any, default: int) -> int:
    if isinstance(value, (list, tuple)) and value:
        value = value[0]
    if isinstance(value, dict):
        value = value.get("height") or value.get("shortest_edge")
    return int(value) if isinstance(value, int) and value > 0 else default


def _seq_len(config: Any, settings: HFSettings) -> int:
    if settings.seq_len:
        return settings.seq_len
    text = _sub(config, "text_config")
    limit = getattr(text, "max_position_embeddings", None)
    return min(DEFAULT_SEQ_LEN, limit) if isinstance(limit, int) and limit > 0 else DEFAULT_SEQ_LEN


def _token_ids(config: Any, batch: int, length: int, avoid: int | None = None) -> Any:
    import torch

    vocab = getattr(_sub(config, "text_config"), "vocab_size", None) or getattr(config, "vocab_size", None) or 32000
    high = avoid if avoid is not None and avoid >= 2 else vocab
    return torch.randint(0, min(high, vocab), (batch, length))


def _pixels(config: Any, batch: int) -> Any:
    import torch

    vision = _sub(config, "vision_config")
    size = _size(getattr(vision, "image_size", None), 224)
    channels = getattr(vision, "num_channels", None) or 3
    return torch.randn(batch, channels, size, size)


def _image_tokens(config: Any) -> int:
    """How many placeholder tokens one image takes in a vision-language model's text (as its processor would put)."""
    for owner, name in ((config, "image_seq_length"), (config, "mm_tokens_per_image"),
                        (_sub(config, "text_config"), "num_image_tokens")):
        value = getattr(owner, name, None)
        if isinstance(value, int) and value > 0:
            return value
    vision = _sub(config, "vision_config")
    size, patch = _size(getattr(vision, "image_size", None), 224), _size(getattr(vision, "patch_size", None), 14)
    return (size // patch) ** 2


def make_inputs(model: Any, config: Any, settings: HFSettings) -> dict[str, Any]:
    """Example inputs from the config, by what the model's forward takes: token ids, pixels, audio, or an image
    with its placeholder tokens in the text (no cache, so a forward is one step of training or a prefill)."""
    import inspect

    import torch

    batch = settings.batch_size
    accepted = inspect.signature(model.forward).parameters
    main = getattr(model, "main_input_name", "input_ids")
    inputs: dict[str, Any] = {}
    image_token = getattr(config, "image_token_id", None) or getattr(config, "image_token_index", None)
    if "pixel_values" in accepted and "input_ids" in accepted and isinstance(image_token, int):  # vision-language
        count = _image_tokens(config)
        text = _token_ids(config, batch, _seq_len(config, settings), avoid=image_token)
        inputs["input_ids"] = torch.cat([torch.full((batch, count), image_token, dtype=text.dtype), text], dim=1)
        inputs["pixel_values"] = _pixels(config, batch)
    elif main == "pixel_values":
        inputs["pixel_values"] = _pixels(config, batch)
    elif main == "input_values":  # raw audio (wav2vec2, HuBERT)
        inputs["input_values"] = torch.randn(batch, settings.seq_len or AUDIO_SAMPLES)
    elif main == "input_features":  # log-mel frames (Whisper: twice the encoder's positions)
        frames = 2 * (getattr(config, "max_source_positions", None) or 1500)
        inputs["input_features"] = torch.randn(batch, getattr(config, "num_mel_bins", None) or 80, frames)
    else:
        inputs["input_ids"] = _token_ids(config, batch, _seq_len(config, settings))
    if "decoder_input_ids" in accepted and getattr(config, "is_encoder_decoder", False):
        inputs["decoder_input_ids"] = _token_ids(config, batch, min(_seq_len(config, settings), 448))
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())
    if "use_cache" in accepted or (takes_any and hasattr(_sub(config, "text_config"), "use_cache")):
        inputs["use_cache"] = False
    return inputs


def resolve(path: Path, settings: HFSettings) -> tuple[SimpleNamespace, str, str, Callable[[], Any], Path]:
    """What the load stage needs of a model file, for a config: a namespace with build_model() and example_inputs()
    (the inputs made for the model last built), the source and entry names, the factory, and the model's folder."""
    config = _load_config(path, settings)
    built: dict[str, Any] = {}

    def build_model() -> Any:
        built["model"] = _build(config, settings, path)
        return built["model"]

    def example_inputs() -> dict[str, Any]:
        return make_inputs(built["model"], config, settings)

    namespace = SimpleNamespace(build_model=build_model, example_inputs=example_inputs, __name__=path.parent.name)
    source = str(path if path.name != CONFIG_NAME else path.parent)
    return namespace, source, CONFIG_NAME, build_model, path.parent
