"""The loaded knowledge base (generated tables read lazily, curated rules, error codes) and where it is found."""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from opassess.datafile import read_json
from opassess.errors import EXIT_USAGE, KnowledgeBaseError
from opassess.resources import data_path

from . import kernels
from .catalog import DERIVED
from .error_codes import ErrorCode, find_error_code, load_error_codes
from .facts import (
    ApiFact,
    CheckFact,
    CustomOpFact,
    KernelFact,
    KernelSupport,
    Limitation,
    api_fact,
    check_facts,
    custom_op_facts,
    kernel_facts,
    limitation_from_json,
)
from .products import Product, Products, load_products
from .products import shipped as shipped_products
from .rules import AttrMapping, Replacement, Rules, load_rules
from .versions import Version, format_version, parse_version

_PROVENANCE_KEYS = ("generated_at", "sources", "upstream", "counts", "generator_version", "products")


def user_kb_dir() -> Path:
    """Where `opassess kb import` writes refreshed kernel facts by default."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "opassess" / "kb"


class UnknownVersionError(KnowledgeBaseError):
    """A torch version (--torch-npu) the knowledge base in use does not cover: a usage error, exit 2."""

    exit_code = EXIT_USAGE


def _imported_shape_problem(data: Any) -> str | None:
    """What is wrong with the shape of an imported kernel table (wheel_import.py writes it), None when nothing."""
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}, not an object"
    if not isinstance(data.get("torch_version"), str):
        return "'torch_version' is not a string"
    kernels = data.get("kernels")
    if not isinstance(kernels, dict):
        return "'kernels' is not an object"
    for name, entry in kernels.items():
        if not (isinstance(entry, dict) and isinstance(entry.get("paths", []), list)
                and all(isinstance(p, str) for p in entry.get("paths", []))):
            return f"kernel {name!r} is not an object with a list of paths"
    return None


@dataclass(frozen=True)
class KnowledgeBase:
    """The loaded knowledge base; tables are read on first use.

    Layout on disk (opassess/data): kb/*.json, written by tools/build_kb.py from the Ascend fact tables
    (one file per table, loaded on first use so a scan only pays for what it asks), rules.toml
    (hand-curated) and error_codes.toml. An overlay folder (OPASSESS_KB_DIR, or the user folder that
    `opassess kb import` writes) may add kernel facts read from a newer torch-npu wheel.
    """

    directory: Path
    rules_path: Path
    error_codes_path: Path
    overlay: Path | None = None
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    # -------------------------------------------------------------- raw tables

    def _table(self, name: str) -> Any:
        if name not in self._cache:
            path = self.directory / f"{name}.json"
            if not path.exists() and not path.is_symlink():
                raise KnowledgeBaseError(f"{path}: knowledge-base table missing (rebuild with tools/build_kb.py)")
            self._cache[name] = read_json(path, "knowledge-base table", KnowledgeBaseError)
        return self._cache[name]

    @cached_property
    def provenance(self) -> Mapping[str, Any]:
        data = self._table("provenance")
        for key in _PROVENANCE_KEYS:
            if key not in data:
                raise KnowledgeBaseError(f"{self.directory / 'provenance.json'}: missing key {key!r}")
        return data

    @property
    def version(self) -> str:
        """Knowledge-base version: generator version, data date, curated-rules version."""
        date = self.provenance["generated_at"][:10].replace("-", "")
        return f"{self.provenance['generator_version']}+{date}.rules{self.rules.version}"

    @cached_property
    def product_list(self) -> Products:
        """The one product vocabulary (products.toml in the KB folder, else the shipped one)."""
        own = self.directory / "products.toml"
        return load_products(own) if own.is_file() else shipped_products()

    @property
    def products(self) -> tuple[str, ...]:
        """The Ascend products (the `--target` names), the default first."""
        return self.product_list.names

    @property
    def api_page_products(self) -> tuple[str, ...]:
        """The torch_npu API pages' product columns, in the support list's column order."""
        return tuple(self.provenance["products"])

    @property
    def default_product(self) -> str:
        """The product assessed against unless told otherwise (Atlas A2)."""
        return self.product_list.default.name

    @cached_property
    def api_doc_versions(self) -> tuple[str, ...]:
        return tuple(self.provenance["counts"]["api_versions"])

    @cached_property
    def imported(self) -> Mapping[Version, Mapping[str, Any]]:
        """Kernel facts read from torch-npu wheels: version -> {"provenance": ..., "kernels": {name: {...}}}."""
        out: dict[Version, Mapping[str, Any]] = {}
        if self.overlay is None or not self.overlay.is_dir():
            return out
        for path in sorted(self.overlay.glob("kernels-*.json")):
            try:
                data = read_json(path, "imported kernel table", KnowledgeBaseError)
                problem = _imported_shape_problem(data)
                if problem is None:
                    out[parse_version(data["torch_version"])] = data
            except (OSError, ValueError, KnowledgeBaseError) as exc:
                problem = str(exc)
            if problem is not None:
                raise KnowledgeBaseError(f"{path}: not an imported kernel table ({problem}); `opassess kb import` "
                                         f"wrote it into {self.overlay}: remove the file (or import the wheel "
                                         f"again) and scan again")
        return out

    @cached_property
    def verified(self) -> Mapping[str, Mapping[str, Mapping[str, object]]]:
        """Results of the verification harness on the user's hardware (the overlay's verified.json, written by
        `opassess calibrate --verified`; kb/verified.py): op -> signature key -> entry; {} without one."""
        if self.overlay is None or not self.overlay.is_dir():
            return {}
        from .verified import FILE, load_verified

        return load_verified(self.overlay / FILE)

    @cached_property
    def torch_versions(self) -> tuple[str, ...]:
        """Every torch version the facts speak for: 2.1 up to the newest kernel version, plus imported wheels."""
        newest = parse_version(self.provenance.get("kernel_newest_version") or self.api_doc_versions[-1])
        versions = {(2, minor) for minor in range(1, newest[1] + 1)} if newest[0] == 2 else {newest}
        versions |= {parse_version(v) for v in self.api_doc_versions} | set(self.imported)
        return tuple(format_version(v) for v in sorted(versions))

    @property
    def default_torch_version(self) -> str:
        """The newest version with both kernel facts and documented API support (2.13 in the shipped data),
        or a newer imported wheel. Kernel ranges run to 2.15 but the API docs stop at 2.13, and an
        assessment mixing the two would judge APIs against docs of another release."""
        newest_doc = max(parse_version(v) for v in self.api_doc_versions)
        newest = max([newest_doc, *self.imported])
        return format_version(newest)

    def resolve_version(self, torch_version: str | None) -> Version:
        """Validate a requested torch version (None: the default) against the facts."""
        version = parse_version(torch_version or self.default_torch_version)
        if format_version(version) not in self.torch_versions:
            raise UnknownVersionError(
                f"torch version {torch_version} is not covered by the knowledge base "
                f"(known: {', '.join(self.torch_versions)}; import a newer torch-npu wheel with `opassess kb import`)")
        return version

    def resolve_product(self, product: str) -> str:
        """A product name or alias ('910B', 'a2') -> its report name ('Atlas A2'); unknown names list the known."""
        return self.product(product).name

    def product(self, name: str) -> Product:
        """The Product for a name or alias (UnknownProductError, a KnowledgeBaseError, when none matches)."""
        return self.product_list.resolve(name)

    # -------------------------------------------------------------- kernels

    @cached_property
    def kernel_facts(self) -> kernels.KernelFacts:
        """The aclnn kernel facts (aclnn.json) of this knowledge base's folder: per-overload dtype verdicts."""
        return kernels.load(self.directory)

    @cached_property
    def _kernels(self) -> dict[str, KernelFact]:
        return kernel_facts(self._table("kernels"), self.imported)

    @cached_property
    def _kernels_by_base(self) -> dict[str, tuple[KernelFact, ...]]:
        out: dict[str, list[KernelFact]] = {}
        for fact in self._kernels.values():
            out.setdefault(fact.base, []).append(fact)
        return {k: tuple(v) for k, v in out.items()}

    def kernel(self, aten: str) -> KernelFact | None:
        """Kernel fact by 'aten::add.Tensor', 'add.Tensor' or 'add' (the default overload)."""
        return self._kernels.get(kernels.overload_key(aten))

    def kernels_for_base(self, base: str) -> tuple[KernelFact, ...]:
        return self._kernels_by_base.get(kernels.overload_key(base).split(".")[0], ())

    def kernel_support(self, aten: str, torch_version: str | Version | None = None) -> KernelSupport:
        """Whether `aten` has an NPU kernel at the version, and on which evidence."""
        version = torch_version if isinstance(torch_version, tuple) else self.resolve_version(torch_version)
        key = kernels.overload_key(aten)
        qualified = f"aten::{key}"
        if version in self.imported:
            # The wheel for this version is authoritative: listed means present, absent means absent.
            listed = self.imported[version]["kernels"]
            entry = listed.get(key)
            fact = self._kernels.get(key)
            if entry is not None:
                paths = ",".join(entry.get("paths", [])) or "native"
                return KernelSupport(qualified, True, "imported-wheel", fact,
                                     f"torch-npu {format_version(version)} wheel: {key} ({paths})")
            if "." not in key and f"{key}.out" in listed:  # the functional op derived from its out= kernel
                return KernelSupport(qualified, True, "structured-delegate", self._kernels.get(f"{key}.out"),
                                     f"torch-npu {format_version(version)} wheel: {key}.out "
                                     f"({DERIVED % {'op': key, 'out': key + '.out'}})")
            return KernelSupport(qualified, False, "none", fact,
                                 f"torch-npu {format_version(version)} wheel: {key} not listed")
        fact = self._kernels.get(key)
        if fact is not None and fact.supports(version):
            return KernelSupport(qualified, True, "kernel", fact, fact.evidence())
        if fact is None and "." not in key:
            # A functional op whose out= overload is a structured kernel: PyTorch's codegen derives the
            # functional variant from it (structured_delegate), so the kernel covers both (e.g. gelu <- gelu.out).
            out = self._kernels.get(f"{key}.out")
            if out is not None and out.supports(version):
                return KernelSupport(qualified, True, "structured-delegate", out,
                                     f"{out.evidence()} ({DERIVED % {'op': key, 'out': key + '.out'}})")
        if fact is not None:
            return KernelSupport(qualified, False, "none", fact,
                                 f"{fact.evidence()} (not for torch {format_version(version)})")
        return KernelSupport(qualified, False, "none", None, f"npu_aten_ops: no row for {key}")

    def has_kernel(self, aten: str, torch_version: str | None = None) -> bool:
        return self.kernel_support(aten, torch_version).supported

    # -------------------------------------------------------------- native API support

    @cached_property
    def _limitations(self) -> dict[str, Any]:
        return self._table("limitations")

    def limitation(self, lim_id: str) -> Limitation:
        raw = self._limitations.get(lim_id)
        if raw is None:
            raise KnowledgeBaseError(f"{self.directory / 'limitations.json'}: no limitation {lim_id}")
        return limitation_from_json(lim_id, raw)

    def api(self, name: str, torch_version: str | None = None) -> ApiFact | None:
        """The documented support of `name` in the doc version nearest below (or at) the torch version."""
        entry = self._table("apis").get(name)
        if entry is None:
            return None
        version = parse_version(torch_version or self.default_torch_version)
        return api_fact(name, entry, version, self.api_page_products, self.limitation)

    def api_names(self) -> tuple[str, ...]:
        return tuple(self._table("apis"))

    def is_documented_api(self, name: str) -> bool:
        """True when the native-API support list has a row for `name`."""
        return name in self._table("apis")

    def mstt_status(self, api: str, torch_version: str | None = None) -> str | None:
        """The migration analyser's view: 'supported' / 'unsupported' / None (not listed), nearest list version."""
        table = self._table("mstt")
        flags = table["apis"].get(api)
        if flags is None:
            return None
        version = parse_version(torch_version or self.default_torch_version)
        indexes = [i for i, v in enumerate(table["versions"]) if parse_version(v) <= version] or [0]
        mark = flags[indexes[-1]]
        return {"s": "supported", "u": "unsupported"}.get(mark)

    # -------------------------------------------------------------- NPU-only ops and replacements

    @cached_property
    def _custom_ops(self) -> dict[str, CustomOpFact]:
        replaces: dict[str, list[str]] = {}
        for rep in self.rules.replacements:
            replaces.setdefault(rep.npu_op, []).append(rep.source)
        return custom_op_facts(self._table("custom_ops"), replaces)

    @staticmethod
    def _custom_key(name: str) -> str:
        key = name.split("::", 1)[-1]
        return key[len("torch_npu."):] if key.startswith("torch_npu.") else key

    def has_custom_op(self, name: str) -> bool:
        return self._custom_key(name) in self._table("custom_ops")

    def custom_op(self, name: str) -> CustomOpFact | None:
        """NPU-only op by 'npu_rms_norm', 'torch_npu.npu_rms_norm' or 'npu::npu_rms_norm'."""
        return self._custom_ops.get(self._custom_key(name))

    def custom_op_names(self) -> tuple[str, ...]:
        """Every NPU-only op named in custom_ops.json, in file order (the raw table: the rules are not needed)."""
        return tuple(self._table("custom_ops"))

    def replacements_for(self, op: str) -> tuple[Replacement, ...]:
        return tuple(r for r in self.rules.replacements if r.source == op)

    # -------------------------------------------------------------- checks, CANN names, attribute maps

    @cached_property
    def _checks(self) -> dict[str, tuple[CheckFact, ...]]:
        return check_facts(self._table("checks"))

    def checks_for(self, aten: str) -> tuple[CheckFact, ...]:
        """Kernel argument checks keyed to the ATen base op ('aten::max_pool2d_with_indices' -> its checks)."""
        return self._checks.get(kernels.overload_key(aten).split(".")[0], ())

    def attr_mapping(self, op: str) -> AttrMapping | None:
        return next((m for m in self.rules.attr_mappings if m.op == op or op in m.apis or m.aten == op), None)

    def onnx_cann(self, onnx_op: str) -> str | None:
        entry = self._table("onnx_cann").get(onnx_op)
        return entry["cann"] if entry and entry["cann"] != "PartitionedCall" else None

    def cann_op(self, op: str) -> str | None:
        """CANN operator name for an operator key or ATen op: curated mapping, else the 1:1 ACLNN kernel."""
        mapping = self.attr_mapping(op)
        if mapping:
            return mapping.cann_op
        if "::" in op or "." not in op:
            support = self.kernel(op)
            if support and support.structured and support.structured.startswith("aclnn"):
                return support.structured
        return None

    # -------------------------------------------------------------- rules and error codes

    @cached_property
    def rules(self) -> Rules:
        return load_rules(self.rules_path, self)

    @cached_property
    def error_codes(self) -> Mapping[str, ErrorCode]:
        return load_error_codes(self.error_codes_path)

    def error_code(self, code: str) -> ErrorCode | None:
        """Look up 'ACL_ERROR_INVALID_PARAM', '100000', 'ERR01003' or 'EZ9999'-style codes (case-insensitive)."""
        return find_error_code(self.error_codes, code)

    def counts(self) -> Mapping[str, Any]:
        return self.provenance["counts"]


# ------------------------------------------------------------------ entry points


@cache
def _generated(path: Path, what: str) -> Any:
    return read_json(path, what, KnowledgeBaseError)


def generated_table(kb: KnowledgeBase | None, name: str, what: str) -> Any:
    """The generated table kb/`name` of the knowledge base in use (its folder's, else the shipped one), read once."""
    directory = getattr(kb, "directory", None)
    path = Path(directory) / name if directory is not None else data_path(f"kb/{name}")
    return _generated(path if path.is_file() else data_path(f"kb/{name}"), what)


def load_kb(path: Path | None = None) -> KnowledgeBase:
    """Load the knowledge base: the shipped data, or a full KB folder at `path`, with any imported overlay.

    `path` may be a full KB folder (it holds kernels.json and provenance.json; a rules.toml or
    error_codes.toml inside it replaces the shipped one) or an overlay folder written by
    `opassess kb import`. Without `path`, OPASSESS_KB_DIR names the overlay, else the user folder
    (user_kb_dir()) is used when it exists.
    """
    directory, overlay = data_path("kb"), None
    if path is not None:
        path = Path(path)
        if not path.is_dir():
            raise KnowledgeBaseError(f"{path}: knowledge-base folder not found")
        if (path / "kernels.json").is_file() and (path / "provenance.json").is_file():
            directory = path
        else:
            overlay = path
    else:
        env = os.environ.get("OPASSESS_KB_DIR")
        candidate = Path(env) if env else user_kb_dir()
        if env and not candidate.is_dir():
            raise KnowledgeBaseError(f"OPASSESS_KB_DIR={env}: folder not found")
        overlay = candidate if candidate.is_dir() else None
    rules, codes = (directory / name if (directory / name).is_file() else data_path(name)
                    for name in ("rules.toml", "error_codes.toml"))
    key = (directory, rules, codes, overlay)
    signature = _signature(key)
    held = _LOADED.get(key)
    if held is not None and held[0] == signature:
        _LOADED[key] = _LOADED.pop(key)  # the most recently used, kept longest
        return held[1]
    kb = KnowledgeBase(directory, rules, codes, overlay)
    _ = kb.provenance, kb.rules  # fail early on a broken table, and validate the curated rules against the facts
    _LOADED.pop(key, None)
    _LOADED[key] = (signature, kb)
    while len(_LOADED) > KEPT:  # the least recently used goes
        del _LOADED[next(iter(_LOADED))]
    return kb


# The knowledge bases this process has loaded, each with the signature of the files it was read from: a portfolio
# assesses every model against the same one, which took 0.07 s of JSON and TOML to load (3 s for 40 models), so it is
# loaded once and loaded again only when a file it reads has changed (`opassess kb import`, a test's own KB folder).
_LOADED: dict[tuple[Path, Path, Path, Path | None], tuple[tuple, KnowledgeBase]] = {}
KEPT = 4  # knowledge bases kept loaded (a process uses one, a test session a few folders of its own)


def _signature(key: tuple[Path, Path, Path, Path | None]) -> tuple:
    """(name, size, mtime) of every file the knowledge base reads: the folders' files, the rules and the error codes."""
    directory, rules, codes, overlay = key
    found = []
    for path in (directory, overlay):
        if path is not None:
            try:
                with os.scandir(path) as entries:
                    found += sorted((e.path, e.stat().st_size, e.stat().st_mtime_ns) for e in entries if e.is_file())
            except OSError:
                found.append((str(path), -1, -1))
    for path in (rules, codes):
        try:
            stat = path.stat()
            found.append((str(path), stat.st_size, stat.st_mtime_ns))
        except OSError:
            found.append((str(path), -1, -1))
    return tuple(found)
