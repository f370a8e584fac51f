"""Source findings costed: person-days per site from [source] in the weights, a cell on the risk grid, and the link to
the capture's operators that are the same call (kind "library" at the same file:line), so it is counted once.

Every figure comes from weights.toml; they are assumptions until calibrated.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath

from ..errors import ConfigError
from ..records import Effort, Operator, Risk
from ..source.records import ConfigReach, SourceEstimate, SourceFinding
from ..vocabulary import Confidence
from .weights import SourceRules, Weights

LIBRARY_KIND = "library"  # Operator.kind of a kernel-library call or a Triton launch the capture stood in for
NO_EFFORT = Effort(0.0, 0.0, 0.0)


def _triple(values: tuple[float, float, float], times: float = 1.0) -> Effort:
    return Effort(values[0] * times, values[1] * times, values[2] * times)


def _points(values: tuple[float, float, float]) -> str:
    return "-".join(f"{v:g}" for v in values)


def _source_rules(weights: Weights) -> SourceRules:
    if weights.source_rules is None:
        raise ConfigError(f"{weights.source}: no [source] table: source findings cannot be costed")
    return weights.source_rules


def site_effort(finding: SourceFinding, weights: Weights) -> tuple[Effort, str]:
    """Person-days for one finding and how they were reached.

    A precision note or a no-op: 0. Otherwise the category's triple; a sized kernel (kind in kernel_kinds) adds
    per_kernel x kernels and per_100_lines x lines / 100. Example (shipped weights): a custom-dev Triton kernel of
    7 lines = [1, 2, 5] + 1 x [2, 4, 8] + 0.07 x [1, 2, 4] = [3.07, 6.14, 13.28].
    """
    if finding.effort_free:
        return NO_EFFORT, "a note, not work: 0"
    if finding.built_by:
        return NO_EFFORT, f"in the sources of the extension built at {finding.built_by}: priced there, once"
    rules = _source_rules(weights)
    category = str(finding.category)
    effort = _triple(rules.effort[category])
    basis = f"{category} site {_points(rules.effort[category])}"
    size = finding.size
    if size is not None and finding.kind in rules.kernel_kinds:
        effort = effort + _triple(rules.per_kernel[category], size.kernels) \
            + _triple(rules.per_100_lines[category], size.lines / 100)
        basis += (f" + {size.kernels} kernel(s) x {_points(rules.per_kernel[category])}"
                  f" + {size.lines} lines / 100 x {_points(rules.per_100_lines[category])}")
    return effort, basis


def site_risk(finding: SourceFinding, weights: Weights) -> Risk:
    """The finding's cell and stars: likelihood = the category's base (+ low_confidence when the route is matched by
    name only); impact = [source] impact, kernel_impact for a kernel; stars as for operators (the category's stars,
    +1 at raise_at, -1 at lower_at)."""
    rules, risk = _source_rules(weights), weights.risk
    category = str(finding.category)
    likelihood = risk.likelihood.base[category]
    signals = [f"{category}: base likelihood {likelihood}"]
    if finding.confidence == Confidence.LOW and rules.low_confidence:
        likelihood += rules.low_confidence
        signals.append(f"+{rules.low_confidence} route matched by name only (low confidence)")
    kernel = finding.kind in rules.kernel_kinds
    impact = rules.kernel_impact if kernel else rules.impact
    signals.append(f"{'a kernel' if kernel else 'a source site'}: impact {impact} (share of compute not measured)")
    return risk.cell(category, likelihood, impact, signals)


def _same_site(source: str, file: str, line: int, root: Path | None) -> bool:
    """'/repo/model.py:37' or 'model.py:37' names finding file 'model.py' line 37 (scanned from /repo)."""
    path, _, number = source.rpartition(":")
    if number != str(line) or not path:
        return False
    path = path.replace("\\", "/")
    if path == file or path.endswith("/" + file):
        return True
    return root is not None and Path(path).resolve() == (root / PurePosixPath(file)).resolve()


TRITON_PREFIX = "triton:"  # a Triton launch's operator key (opassess.standins): "triton:<kernel name>"


def _same_file(source: str, file: str, root: Path | None) -> bool:
    return _same_site(f"{source.rpartition(':')[0]}:1", file, 1, root)


def linked_operators(findings: Sequence[SourceFinding], operators: Iterable[Operator], root: str | None = None
                     ) -> tuple[tuple[str, ...], ...]:
    """Per finding, the keys of the capture operators of kind "library" that are the same thing seen by the capture:
    one whose sources (or project sources) name the finding's file and line (a flash_attn_func call), or, for an
    @triton.jit kernel, the launch of that kernel ("triton:<name>", recorded at the launch line, not the definition):
    launched from the kernel's own file, or from anywhere when no other scanned file defines a kernel of that name."""
    libraries = [op for op in operators if op.kind == LIBRARY_KIND]
    base = Path(root) if root else None
    kernels: dict[str, list[str]] = {}
    for f in findings:
        if f.kind == "triton-kernel":
            kernels.setdefault(f.subject, []).append(f.file)
    out = []
    for f in findings:
        linked = [op.key for op in libraries
                  if any(_same_site(s, f.file, f.line, base) for s in (*op.sources, *op.project_sources))]
        if f.kind == "triton-kernel":
            linked += [op.key for op in libraries if op.key == TRITON_PREFIX + f.subject and op.key not in linked
                       and (len(kernels[f.subject]) == 1
                            or any(_same_file(s, f.file, base) for s in (*op.sources, *op.project_sources)))]
        out.append(tuple(linked))
    return tuple(out)


def site_keys(findings: Sequence[SourceFinding]) -> tuple[str, ...]:
    """Line-free names: 'train.py: flash_attn.flash_attn_func (library-call)', '... #2' for the second such site
    in the same file (in line order), so an edit above a site does not rename it in a baseline diff."""
    seen: Counter[str] = Counter()
    keys = []
    for f in findings:
        key = f"{f.file}: {f.subject} ({f.kind})"
        seen[key] += 1
        keys.append(key if seen[key] == 1 else f"{key} #{seen[key]}")
    return tuple(keys)


def covering_operator(finding: SourceFinding, operators: Iterable[Operator], root: str | None = None) -> str | None:
    """The captured operator, other than a library stand-in, that is this call: its key is the finding's subject and
    one of its sources is the finding's file:line (F.scaled_dot_product_attention in the model file, traced as an
    operator the knowledge base classifies). None when the capture did not see it that way."""
    base = Path(root) if root else None
    return next((op.key for op in operators if op.kind != LIBRARY_KIND and op.key == finding.subject
                 and any(_same_site(s, finding.file, finding.line, base) for s in (*op.sources, *op.project_sources))),
                None)


def estimate_sources(findings: Sequence[SourceFinding], operators: Iterable[Operator], weights: Weights,
                     root: str | None = None) -> tuple[SourceEstimate, ...]:
    """Every finding costed, placed on the grid, named and linked to the capture operators that are the same call:
    library stand-ins at its line are counted with the site (`operators`); an ordinary operator that is the call
    carries it instead (`covered_by`, the site then costs 0)."""
    operators = tuple(operators)
    links = linked_operators(findings, operators, root)
    repeats = _repeats(findings, weights)
    kernel_kinds = weights.source_rules.kernel_kinds if weights.source_rules else ()
    efforts: dict[tuple, tuple[Effort, str]] = {}  # a big tree repeats a few kinds of site thousands of times:
    risks: dict[tuple, Risk] = {}  # each costed once per kind (site_effort and site_risk read only these fields)
    repeated: dict[Effort, Effort] = {}  # and each effort's [source] repeat fraction once
    out = []
    for finding, key, linked, nth in zip(findings, site_keys(findings), links, repeats, strict=True):
        covered = None if linked or not operators else covering_operator(finding, operators, root)
        kernel = finding.kind in kernel_kinds
        if covered:
            effort, basis = NO_EFFORT, f"captured as operator {covered}: costed there, once"
        else:
            kind = (finding.effort_free, finding.built_by, str(finding.category), kernel,
                    finding.size if kernel else None)
            if kind not in efforts:
                efforts[kind] = site_effort(finding, weights)
            effort, basis = efforts[kind]
        cell = (str(finding.category), finding.confidence == Confidence.LOW, kernel)
        if cell not in risks:
            risks[cell] = site_risk(finding, weights)
        if nth > 1 and not covered and effort != NO_EFFORT:
            fraction = _source_rules(weights).repeat
            if effort not in repeated:
                repeated[effort] = _triple((effort.low, effort.likely, effort.high), fraction)
            effort = repeated[effort]
            basis += f" x {fraction:g} (the same edit again, site {nth} of its kind: [source] repeat)"
        out.append(SourceEstimate(finding=finding, person_days=effort, risk=risks[cell], basis=basis,
                                  key=key, operators=linked, covered_by=covered))
    return tuple(out)


def _repeats(findings: Sequence[SourceFinding], weights: Weights) -> tuple[int, ...]:
    """Per finding, which occurrence of the same edit it is (1 = first): same subject, kind and category, in scan
    order; sized kernels are each their own work (always 1)."""
    kernel_kinds = weights.source_rules.kernel_kinds if weights.source_rules else ()
    seen: Counter[tuple[str, str, str]] = Counter()
    out = []
    for f in findings:
        if f.kind in kernel_kinds or f.effort_free:
            out.append(1)
            continue
        group = (f.subject, f.kind, str(f.category))
        seen[group] += 1
        out.append(seen[group])
    return tuple(out)


REACHED_BY_LINK = ("triton-kernel", "cuda-kernel")  # a kernel is reached only when the capture launched it


def mark_reached(items: Sequence[SourceEstimate], reached_files: Iterable[str]) -> tuple[SourceEstimate, ...]:
    """`scan MODEL --source DIR`: each site reached by the model or only present in the source.

    Reached: a site the capture saw (a linked operator, or the operator that is the call); a kernel only so
    (triton:<name> launched); an extension when a file the model reaches imports the module it builds (its kernels,
    bindings and runtime calls follow it); any other site when it lies in a file the model reaches (`reached_files`:
    the model file, the project files it imports, and the files the capture's operators were called from, relative to
    the scan root). The rest is present, not reached by this model: costed apart, out of the total.
    """
    files = set(reached_files)
    out: dict[int, SourceEstimate] = {}
    extensions: dict[str, bool] = {}
    for index, item in enumerate(items):
        f = item.finding
        if item.operators or item.covered_by:
            reached = True
        elif f.kind in REACHED_BY_LINK:
            reached = False
        elif f.kind == "cpp-extension":
            reached = f.file in files or any(where.rsplit(":", 1)[0] in files for where in f.links)
            extensions[f"{f.file}:{f.line}"] = reached
        else:
            reached = f.file in files
        out[index] = item if reached else replace(item, reached=False)
    for index, item in out.items():  # what an extension builds follows it
        built = item.finding.built_by
        if built and built in extensions:
            out[index] = replace(item, reached=extensions[built] or bool(item.operators or item.covered_by))
    return tuple(out[i] for i in range(len(items)))


def mark_configured(items: Sequence[SourceEstimate], reach: ConfigReach) -> tuple[SourceEstimate, ...]:
    """`opassess source DIR` on a project with a config class: each site reached by its default configuration
    (source.records.ConfigReach: a Python site in code the default model runs) or only present (costed apart, out of
    the total). An extension is reached when a call of its module is (its import alone when no call is inside a
    function); what it builds follows it; a native file no extension of the tree builds counts as reached (its build
    is not read)."""
    extensions = {f"{item.finding.file}:{item.finding.line}": _extension_reached(item.finding.links, reach)
                  for item in items if item.finding.kind == "cpp-extension"}
    out = []
    for item in items:
        f = item.finding
        if f.kind == "cpp-extension":
            reached = extensions[f"{f.file}:{f.line}"]
        elif f.built_by:
            reached = extensions.get(f.built_by, True)
        else:
            reached = reach.reaches(f.file, f.line) if f.file.endswith(".py") else True
        out.append(item if reached else replace(item, reached=False))
    return tuple(out)


def _extension_reached(links: Iterable[str], reach: ConfigReach) -> bool:
    """Whether the default configuration calls an extension's module: a call in a reached function, or, where every
    use is a module-level import, an import in a loaded file."""
    uses = [reach.inside(file, int(line) if line.isdigit() else 0)
            for file, _, line in (where.rpartition(":") for where in links)]
    return True in uses if any(u is not None for u in uses) else \
        any(reach.reaches(file, int(line) if line.isdigit() else 0)
            for file, _, line in (where.rpartition(":") for where in links))


def captured_calls(findings: Sequence[SourceFinding], operators: Iterable[Operator], root: str | None = None
                   ) -> list[SourceFinding]:
    """A flash-attn call the capture also saw (its library stand-in at the same file:line) rendered again with the
    shapes and dtype it ran on: head_num=4 rather than q.shape[2], the scale as a number, and the op's documented
    constraints (head dim, head counts, dtype) checked (advice/flash.py). Other findings are returned as they are."""
    import ast

    from ..advice import FLASH_CALLS, Constraints, flash_call, notes_of
    from ..source.classify import preferred_library
    from ..source.facts import load_source_facts

    operators = tuple(operators)
    by_key = {op.key: op for op in operators}
    base = Path(root) if root else None
    out = []
    for finding, linked in zip(findings, linked_operators(findings, operators, root), strict=True):
        nodes = [n for key in linked if key in FLASH_CALLS for n in by_key[key].nodes
                 if n.source and _same_site(n.source, finding.file, finding.line, base) and n.input_shapes]
        name = finding.subject.rsplit(".", 1)[-1]
        try:  # the call on the site's line (a call spread over lines is left as the source scan rendered it)
            tree = ast.parse(finding.code) if nodes else None
        except SyntaxError:
            tree = None
        call = next((c for c in ast.walk(tree) if isinstance(c, ast.Call)
                     and ast.unparse(c.func).rsplit(".", 1)[-1] == name), None) if tree else None
        if call is None or finding.subject not in FLASH_CALLS:
            out.append(finding)
            continue
        node = nodes[0]
        facts = load_source_facts()
        lib = preferred_library(facts.library_rows(finding.subject))
        shapes = node.input_shapes
        rendered = flash_call(finding.subject, [ast.unparse(a) for a in call.args],
                              {k.arg: ast.unparse(k.value) for k in call.keywords if k.arg},
                              Constraints(lib.cite, lib.constraints) if lib else None,
                              (shapes[0], shapes[1] if len(shapes) > 1 else None,
                               node.input_dtypes[0] if node.input_dtypes else None))
        kept = [n for n in finding.notes if n.startswith("imported at line")]
        out.append(replace(finding, npu_route=rendered.text(), notes=(*notes_of(rendered), *kept)))
    return out
