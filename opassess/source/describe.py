"""What the source-level facts say about one name, for `opassess kb show`: the verdict a call of it gets (category,
NPU route, evidence rows), the kernel-library rows with their dropped features, transfer_to_npu's patches, and
triton-ascend's limits for a Triton API."""
from __future__ import annotations

from ..kb.routes import load_route_facts
from .classify import classify_sites
from .facts import SourceFacts, load_source_facts
from .records import Site


def describe_source(name: str, facts: SourceFacts | None = None) -> list[str]:
    """Lines for `name` ('flash_attn.flash_attn_func', 'torch.cuda.synchronize', 'tl.atomic_add'); [] when the
    source-level facts do not know it."""
    facts = facts or load_source_facts()
    patches, rule, libraries = facts.patches(name), facts.migration(name), facts.library_rows(name)
    triton = facts.triton_api(name)
    hccl = load_route_facts().hccl(name) if name.startswith("torch.distributed.") else None
    if not (patches or rule or libraries or triton or hccl):
        return []
    lines: list[str] = []
    if hccl is not None:  # a torch.distributed feature: what HCCL does with it (the distributed pre-flight)
        lines.append(f"HCCL fact {hccl.cite}" + (f": {hccl.detail}" if hccl.detail else ""))
        if hccl.dtypes:
            lines.append(f"  dtypes: {', '.join(hccl.dtypes)}")
    if patches or rule or libraries:  # the verdict a call of it gets in `opassess source`
        found = classify_sites([Site("<kb show>", 1, f"{name}()", "api", name, (("use", "call"),))], facts)
        for finding in found:
            lines.append(f"Source-level verdict for a call of {name}: {finding.category} ({finding.kind}, confidence "
                         f"{finding.confidence})")
            lines.append(f"  NPU route: {finding.npu_route}")
            lines += [f"  evidence: {cite}" for cite in finding.evidence]
            lines += [f"  note: {note}" for note in finding.notes]
    for library in libraries:
        lines.append(f"Kernel library row {library.cite}: {library.category} ({library.route_kind}), as of "
                     f"{library.as_of}")
        lines.append(f"  route: {library.route}")
        if library.dropped:
            lines.append(f"  dropped features: {library.dropped}")
        if library.category_note:
            lines.append(f"  category note: {library.category_note}")
    for patch in patches:
        lines.append(f"transfer_to_npu patch {patch.cite}: {patch.effect}")
    if rule is not None:
        lines.append(f"Migration row {rule.cite}: NPU equivalent {rule.npu_equivalent or 'none'}")
    if triton is not None:
        lines.append(f"triton-ascend limits {triton.cite}:")
        if triton.unsupported_dtypes:
            lines.append(f"  dtypes triton-ascend lacks: {', '.join(triton.unsupported_dtypes)}")
        for argument, how, _ in triton.unsupported_args:
            lines.append(f"  unsupported argument: {argument} ({how})")
        if triton.limit:
            lines.append(f"  limit: {triton.limit}")
    return lines


def format_entry_with_source(kb, name: str, torch_version: str | None = None, decompose=None) -> str:
    """`opassess kb show NAME`: the knowledge base's entry (kb.describe.format_entry) and the source-level facts about
    the name; an error only when neither knows it."""
    from ..errors import KnowledgeBaseError
    from ..kb.describe import format_entry

    source = describe_source(name)
    if source and not name.startswith("aten::"):
        decompose = None  # a source fact (a CUDA API, a library symbol) is no composite op: no torch to import for it
    try:
        entry = format_entry(kb, name, torch_version, decompose)
    except KnowledgeBaseError:
        if not source:
            raise
        entry = ""
    return "\n".join(line for line in (entry, *source) if line)
