"""The serving check of `scan --route vllm-ascend`: the model's architecture and a quantisation scheme (`--quant`)
against the serving facts (ascend_inference_quant_support.tsv) for the target chip.

The facts state per engine and scheme whether it runs on A2, A3 and the 950 generation (A5); `TBD` / `WIP` cells are
risks (not yet stated), never support. The architecture is checked against vllm-ascend's supported-models page
(data/vllm_ascend_models.json, kb/served_models.py) by name: the model's class name without its Hugging Face head
(Qwen3ForCausalLM -> qwen3) against the page's names for the product's rows; a name the page does not give is
reported as not checked, with the reason.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import UsageError
from ..kb.routes import QUANT_TABLE, QuantScheme, RouteFacts
from ..kb.served_models import ServedModels, architecture_key
from ..messages import N_, Text
from .records import ServingCheck, ServingItem

ENGINE = "vllm-ascend"
SUPPORTED_CELLS = ("yes", "functional")
UNSUPPORTED_CELLS = ("no", "incompatible")
# a scheme word -> the compute data type it needs, as the device figures name it (peak.cube.<dtype>)
LOW_PRECISION = {"fp8": "float8", "fp4": "fp4"}
# that data type as CANN's aclnn docs name its element types (cann_aclnn_dtypes.tsv; float8_e8m0 is a scale type)
KERNEL_DTYPES = {"float8": ("float8_e4m3fn", "float8_e5m2"), "fp4": ("float4_e2m1", "float4_e1m2")}
AclnnFacts = Mapping[str, Any]  # the kernel facts' data (kb/kernels.py KernelFacts.data: products, aclnn)


def _scheme_key(text: str) -> str:
    """'W8A8 (quantization "ascend", ...)' / 'W8A8 static' / 'W8A8_DYNAMIC' -> 'w8a8'; 'W4A8, W4A4' -> 'w4a8,w4a4'."""
    return ",".join(re.findall(r"w\d+a\d+|mxfp8|gguf|awq|gptq", text.lower()))


def _named(scheme: QuantScheme, quant: str) -> bool:
    """Whether `quant` is a variant this row names: its quant_type ('W8A8_DYNAMIC'), or its scheme text with '_' as
    a space ('w8a8_dynamic' in 'compressed-tensors W8A8 dynamic')."""
    text = quant.lower()
    if "_" not in text:  # 'w8a8' is the scheme family (the sglang quant_type W8A8 is its static variant only)
        return False
    return text == scheme.quant_type.lower() or text.replace("_", " ") in scheme.scheme.lower()


def _matches(scheme: QuantScheme, quant: str) -> bool:
    """'w8a8' names every row whose scheme text says W8A8 (static and dynamic, not MXFP8, whose quant_type
    W8A8_MXFP8 only shares the prefix)."""
    wanted = _scheme_key(quant) or quant.lower()
    return wanted in _scheme_key(scheme.scheme).split(",") or quant.lower() == scheme.scheme.lower()


def quant_names(facts: RouteFacts) -> tuple[str, ...]:
    """The --quant values the serving facts name: each scheme family ('w8a8', 'awq') and each row's quant_type
    ('w8a8_dynamic'), sorted."""
    names = {key for s in facts.quant_schemes for key in _scheme_key(s.scheme).split(",") if key}
    return tuple(sorted(names | {s.quant_type.lower() for s in facts.quant_schemes if s.quant_type}))


def check_quant(quant: str, facts: RouteFacts) -> None:
    """UsageError (exit 2) naming the choices when no row of the serving facts names `quant`: a typo ('w8a9') would
    otherwise be checked as 'no facts', exit 0."""
    if quant and not any(_named(s, quant) or _matches(s, quant) for s in facts.quant_schemes):
        raise UsageError(f"{quant!r}: no row of {QUANT_TABLE} names this scheme; expected one of "
                         f"{', '.join(quant_names(facts))}", option="--quant")


def _status(cell: str) -> str:
    if not cell:
        return N_("no facts")
    word = cell.split()[0].lower()
    if word in SUPPORTED_CELLS:
        return N_("supported")
    if word in UNSUPPORTED_CELLS:
        return N_("unsupported")
    return N_("risk")  # TBD, WIP, "in feature matrix": stated as not settled


def _matmul_marks(wanted: str, kernel: str, aclnn: AclnnFacts) -> list[tuple[str, str, str]]:
    """(api, product mark y/n/'', its doc) of each aclnn matmul API with an input that lists one of the data type's
    element types not excluded for the product (cann_aclnn_dtypes.tsv, via the kernel facts)."""
    if kernel not in aclnn.get("products", ()):
        return []
    column = aclnn["products"].index(kernel)
    marks = []
    for api, entry in sorted(aclnn.get("aclnn", {}).items()):
        if "matmul" not in api.lower():
            continue
        inputs = [p for p in entry.get("params", ()) if p.get("io", "").startswith("input")]
        takes = any(d in KERNEL_DTYPES[wanted] and d not in (p.get("excluded") or {}).get(kernel, ())
                    for p in inputs for d in p.get("dtypes", ()))
        if takes:
            doc = entry.get("doc") or ["", "", "", ""]
            marks.append((api, entry["support"][column].replace("-", ""), f"{doc[0]}@{doc[2][:8]}:{doc[1]}"))
    return marks


def _hardware(quant: str, product: str, cube: Mapping[str, str] | None, kernel: str = "",
              aclnn: AclnnFacts | None = None) -> ServingItem | None:
    """An FP8/FP4 scheme on a chip that has no such data type: unsupported (not "no facts"). By the device figures
    first (`cube`: dtype -> the figure's cite, None when the tables give no figures for the product); without
    figures, by the kernel facts: every aclnn matmul API that takes the data type marked unsupported on the product
    (910A: all 29 that take float8_e4m3fn / float8_e5m2 are ✘ for Atlas training series)."""
    wanted = next((d for word, d in LOW_PRECISION.items() if word in quant.lower()), None)
    if wanted is None or cube is not None and wanted in cube:
        return None
    subject = Text(N_("%(quant)s needs %(dtype)s compute"), {"quant": quant, "dtype": wanted})
    if cube is not None:
        return ServingItem(subject, "unsupported",
                           Text(N_("%(product)s's cube has no %(dtype)s (its device figures list %(dtypes)s)"),
                                {"product": product, "dtype": wanted, "dtypes": ", ".join(sorted(cube))}),
                           "; ".join(dict.fromkeys(c.rsplit(":", 1)[0] for c in cube.values())))
    marks = _matmul_marks(wanted, kernel, aclnn or {})
    if not marks or any(mark != "n" for _, mark, _ in marks):
        return None  # no figures and no kernel-level statement against it: no claim
    return ServingItem(subject, "unsupported",
                       Text(N_("no aclnn matmul kernel for %(product)s takes %(dtype)s: all %(n)s matmul APIs that "
                               "take %(types)s are documented as unsupported on it (%(apis)s, ...)"),
                            {"product": product, "dtype": wanted, "n": len(marks),
                             "types": " / ".join(KERNEL_DTYPES[wanted]),
                             "apis": ", ".join(api for api, _, _ in marks[:3])}),
                       f"cann_aclnn_dtypes.tsv: support:{kernel} = ✘ for {len(marks)} of {len(marks)} matmul APIs "
                       f"taking {' / '.join(KERNEL_DTYPES[wanted])} (e.g. {marks[0][2]})")


def _engine_verdict(quant: str, kernel: str, product: str, own: list[QuantScheme], others: list[str]) -> ServingItem:
    """The scheme on the engine asked, from that engine's rows alone: the weakest of their statuses on the chip (a
    row that is not settled is a risk for the scheme), or "no facts" when none of its rows names the scheme (other
    engines' rows are listed after it, as theirs)."""
    subject = Text(N_("%(quant)s on %(engine)s"), {"quant": quant, "engine": ENGINE})
    if not own:
        return ServingItem(subject, "no facts",
                           Text(N_("no %(engine)s row names this scheme; the rows below are %(others)s's"),
                                {"engine": ENGINE, "others": ", ".join(others)}), f"{QUANT_TABLE}: no {ENGINE} row")
    order = ("unsupported", "risk", "no facts", "supported")
    statuses = [_status(s.status(kernel)) for s in own]
    status = min(statuses, key=order.index)
    cells = "; ".join(s.status(kernel) or f"no cell for {product}" for s in own)
    return ServingItem(subject, status, cells, "; ".join(s.cite for s in own))


# the page's legend -> the check's status: experimental and untested rows are risks, never support
MODEL_STATUS = {"supported": "supported", "experimental": "risk", "unsupported": "unsupported", "untested": "risk"}


def _architecture(architecture: str, kernel: str, product: str, models: ServedModels | None) -> ServingItem:
    """The architecture against vllm-ascend's model list for the product (its first row there that names it)."""
    subject = Text(N_("architecture %(name)s"), {"name": architecture or "(unknown)"})
    if models is None or not architecture:
        return ServingItem(subject, "no facts",
                           Text(N_("the serving facts list quantisation schemes, not architectures: not checked")),
                           f"{QUANT_TABLE}: no architecture column")
    rows = models.named(architecture)
    here = [r for r in rows if kernel in r.products or not r.hardware]  # no hardware named: the row speaks for all
    if here:
        row = here[0]
        return ServingItem(subject, MODEL_STATUS[row.support],
                           Text(N_("listed by %(engine)s as %(model)s: %(support)s on %(hardware)s") if row.hardware
                                else N_("listed by %(engine)s as %(model)s: %(support)s"),
                                {"engine": ENGINE, "model": row.model, "support": row.support,
                                 "hardware": row.hardware} if row.hardware
                                else {"engine": ENGINE, "model": row.model, "support": row.support}),
                           models.cite(row.line))
    if rows:
        return ServingItem(subject, "no facts",
                           Text(N_("listed by %(engine)s as %(model)s for %(hardware)s, not for %(product)s"),
                                {"engine": ENGINE, "model": rows[0].model, "hardware": rows[0].hardware,
                                 "product": product}), models.cite(rows[0].line))
    return ServingItem(subject, "no facts",
                       Text(N_("%(engine)s's supported-models page gives no model named %(key)s: not checked"),
                            {"engine": ENGINE, "key": architecture_key(architecture)}),
                       f"{models.cite()}: no row named {architecture_key(architecture)}")


def check_serving(architecture: str, quant: str, kernel: str, product: str, facts: RouteFacts,
                  cube: Mapping[str, str] | None = None, aclnn: AclnnFacts | None = None,
                  models: ServedModels | None = None) -> ServingCheck:
    """Architecture and scheme against the chip's column ("A2", "A3", "950"); vllm-ascend rows first, then the
    other engines' rows for the same scheme (a second opinion on the chip)."""
    items = [_architecture(architecture, kernel, product, models)]
    if quant:
        typed = [s for s in facts.quant_schemes if _named(s, quant)]  # W8A8_DYNAMIC: that variant only
        rows = typed or [s for s in facts.quant_schemes if _matches(s, quant)]
        rows.sort(key=lambda s: (s.engine != ENGINE, s.row))
        hardware = _hardware(quant, product, cube, kernel, aclnn)
        if hardware is not None:
            items.append(hardware)
        if rows:  # the verdict for the engine asked reads its own rows only
            items.append(_engine_verdict(quant, kernel, product, [s for s in rows if s.engine == ENGINE],
                                         sorted({s.engine for s in rows if s.engine != ENGINE})))
        for scheme in rows:
            cell = scheme.status(kernel)
            detail = cell or Text(N_("no cell for %(product)s"), {"product": product})
            if scheme.engine != ENGINE:
                detail = Text(N_("another engine's row (%(engine)s), not %(asked)s's support: %(cell)s"),
                              {"engine": scheme.engine, "asked": ENGINE, "cell": detail})
            layer = scheme.layer or Text(N_("any layer"))
            items.append(ServingItem(Text("%(quant)s (%(engine)s %(scheme)s, %(layer)s)",
                                          {"quant": quant, "engine": scheme.engine, "scheme": scheme.scheme,
                                           "layer": layer}), _status(cell), detail, scheme.cite))
        if not rows:
            items.append(ServingItem(quant, "no facts", Text(N_("no row names this scheme")), f"{QUANT_TABLE}: no row"))
    return ServingCheck(engine=ENGINE, product=product, architecture=architecture, quant=quant, items=tuple(items))
