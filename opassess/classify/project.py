"""How a project's own operators are judged: a required replacement, a compiled C++ extension, a torch.library op
(registered for every backend or not), a custom autograd.Function (its forward's ATen ops, its backward traced or
not). Called by classify/operators.py once per signature."""
from __future__ import annotations

from collections.abc import Mapping

from ..kb.rules import Replacement
from ..messages import N_, Text
from ..reasons import AUTOGRAD_FUNCTION, CUSTOM_OP, DECOMPOSES, EXTENSION, REGISTER_COMPOSITE, REPLACEMENT, STAND_IN
from ..records import Operator, Reason
from ..vocabulary import Category
from .aten import AtenVerdict
from .decompose import dispatch_kinds
from .judgement import Judgement


def judge_project_op(op: Operator, j: Judgement, verdicts: Mapping[str, AtenVerdict], required: Replacement | None,
                     trained: bool, registered: Mapping[str, tuple[str, ...]] | None = None,
                     reference: Mapping[str, AtenVerdict] | None = None) -> None:
    """One signature of a project's own op (torch.library op, autograd.Function, C++ extension function): `j` is
    the classifier's judgement (its `add`), `verdicts` its ATen verdicts (op -> AtenVerdict), `reference` the
    verdicts of the ATen ops its CPU reference implementation ran (trace/registrations.reference_ops)."""
    if required is not None:
        j.add_message(REPLACEMENT, N_("%(op)s has no NPU kernel; %(api)s replaces it with another signature "
                                        "(%(note)s)"), {"op": op.key, "api": required.api, "note": required.note},
                      required.evidence, category=Category.PARAM_CONVERTED)
        return
    if op.kind == "extension":
        # Compiled code: even when it calls only ATen ops it must be rebuilt against torch_npu, and any
        # device kernels inside it (CUDA) rewritten for the NPU (Ascend C).
        j.add_message(EXTENSION, N_("%(op)s is a function of a compiled C++ extension (it dispatched %(ops)s); it "
                                      "must be rebuilt against torch_npu and its device kernels rewritten in Ascend C")
                      if verdicts else N_("%(op)s is a function of a compiled C++ extension; it must be rebuilt "
                                          "against torch_npu and its device kernels rewritten in Ascend C"),
                      {"op": op.key, "ops": ", ".join(verdicts)},
                      Text(N_("trace: kind extension; no replacement in rules.toml")), category=Category.CUSTOM_DEV)
        return
    if "::" in op.key:
        kinds = dispatch_kinds(op.key) or (registered or {}).get(op.key, ())  # the worker saw the library's
        others = [v for v in verdicts.values() if v.op != op.key]
        if kinds and all(v.supported for v in others):
            how = (Text(N_("a composite of ATen ops")) if "CompositeImplicitAutograd" in kinds else
                   Text(N_("for every backend (a torch.library op without device_types)")))
            inner = (Text(N_("the ATen ops it runs all have NPU kernels")) if others else
                     Text(N_("the ATen ops its Python body runs were not seen by the trace: check them on the NPU")))
            j.add_message(DECOMPOSES, N_("%(op)s is registered %(how)s; %(inner)s"),
                          {"op": op.key, "how": how, "inner": inner},
                          Text(N_("PyTorch dispatcher: %(kinds)s kernel for %(op)s"),
                                  {"kinds": " and ".join(kinds), "op": op.key}), category=Category.DIRECT)
            return
        if reference and all(v.supported for v in reference.values()):
            # composite before custom: F.gelu(x + bias) registered for the CPU only is a registration away from the
            # NPU (the same body for PrivateUse1), not a new kernel; the fused kernel is a performance choice
            j.add_message(REGISTER_COMPOSITE, N_("%(op)s has kernels for other devices only, but its reference "
                                          "implementation runs only ops with NPU kernels (%(ops)s): register that "
                                          "composite for the NPU (PrivateUse1); a fused Ascend C kernel is the "
                                          "performance option, priced apart (custom-dev)"),
                          {"op": op.key, "ops": ", ".join(reference)},
                          Text(N_("its CPU implementation run once on zeros of a captured signature dispatched "
                                  "%(ops)s"), {"ops": ", ".join(reference)}), category=Category.PARAM_CONVERTED)
            return
        j.add_message(CUSTOM_OP, N_("%(op)s is a project-defined operator with kernels for other devices only; "
                                      "it needs an NPU kernel (Ascend C) or a rewrite in supported ops"),
                      {"op": op.key},
                      Text(N_("trace: kind custom, namespace %(namespace)s; no replacement in rules.toml"),
                              {"namespace": op.key.split("::")[0]}), category=Category.CUSTOM_DEV)
        return
    missing = [v for v in verdicts.values() if not v.supported]
    if verdicts and not missing and trained:
        j.add_message(AUTOGRAD_FUNCTION, N_("%(op)s is a custom autograd.Function; its forward dispatches only "
                                              "ATen ops with NPU kernels (%(ops)s); its hand-written backward was "
                                              "traced and is judged as its backward ATen ops"),
                      {"op": op.key, "ops": ", ".join(verdicts)},
                      Text(N_("trace: autograd.Function forward and backward ATen ops; npu_aten_ops")),
                      category=Category.DIRECT)
    elif verdicts and not missing:
        j.add_message(AUTOGRAD_FUNCTION, N_("%(op)s is a custom autograd.Function; its forward dispatches only "
                                              "ATen ops with NPU kernels (%(ops)s), but its hand-written backward was "
                                              "not traced and must be verified on the NPU"),
                      {"op": op.key, "ops": ", ".join(verdicts)},
                      Text(N_("trace: autograd.Function forward ATen ops; npu_aten_ops")),
                      category=Category.PARAM_CONVERTED)
    else:
        ops = ", ".join(v.op for v in missing) or Text(N_("no ATen op seen"))
        j.add_message(CUSTOM_OP, N_("%(op)s is a custom autograd.Function or extension whose kernels do not run on "
                                      "the NPU (%(ops)s)"), {"op": op.key, "ops": ops},
                      Text(N_("trace: kind custom; npu_aten_ops")), category=Category.CUSTOM_DEV)


def unbuilt_reasons(op: Operator, unbuilt: Mapping[str, str]) -> list[Reason]:
    """The stand-in reason of a function of the project's own extension that is not built here (`unbuilt`: module ->
    the setup.py line building it; opassess/standins/project.py), else none."""
    module = op.key.rpartition(".")[0]
    if module not in unbuilt:
        return []
    return [Reason.of(STAND_IN.code, N_("%(module)s is the project's own extension (%(site)s builds it) and is not "
                                        "built here: %(op)s was recorded by a stand-in, not run, so the ATen ops it "
                                        "calls are not known"),
                      {"module": module, "site": unbuilt[module], "op": op.key},
                      Text(N_("trace: stand-in for the project's extension")))]
