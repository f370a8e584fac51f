"""opassess.score.source_cost and the estimate with source sites: [source] person-days by hand, risk cells, the
same call seen by the capture and the source counted once, the [source] weights' checks, the project import walk."""
from __future__ import annotations

import dataclasses
import textwrap

import pytest

from opassess.errors import ConfigError
from opassess.records import Effort
from opassess.score.criteria import score
from opassess.score.estimate import estimate
from opassess.score.source_cost import estimate_sources, linked_operators, site_effort, site_keys, site_risk
from opassess.score.weights.load import load_weights
from opassess.source import KernelSize, SourceFinding, scan_sources
from opassess.source.imports import project_files
from opassess.vocabulary import Category
from tests.score.records import classified, inventory, node
from tests.source.support import write_project

WEIGHTS = load_weights()


def finding(kind="library-call", category=Category.PARAM_CONVERTED, *, file="train.py", line=37,
            subject="flash_attn.flash_attn_func", size=None, confidence="medium"):
    return SourceFinding(file=file, line=line, code="y = f(q, k, v)", kind=kind, category=category, subject=subject,
                         npu_route="route", evidence=("third_party_kernel_libs.tsv:3 flash_attn",),
                         confidence=confidence, size=size)


def approx(effort, low, likely, high):
    return effort.low == pytest.approx(low) and effort.likely == pytest.approx(likely) \
        and effort.high == pytest.approx(high)


def test_site_effort_by_hand():
    # the shipped [source]: param-converted [0.25, 0.5, 2]; custom-dev [1, 2, 5], per kernel [2, 4, 8], per 100 lines
    # [1, 2, 4]: a 7-line custom-dev Triton kernel = [1 + 2 + 0.07, 2 + 4 + 0.14, 5 + 8 + 0.28]
    assert approx(site_effort(finding(), WEIGHTS)[0], 0.25, 0.5, 2.0)
    kernel = finding("triton-kernel", Category.CUSTOM_DEV, subject="count_kernel", size=KernelSize(lines=7))
    effort, basis = site_effort(kernel, WEIGHTS)
    assert approx(effort, 3.07, 6.14, 13.28)
    assert "1 kernel(s)" in basis and "7 lines" in basis
    # an extension the tree builds is priced once, as its kernels: [1, 2, 5] + 4 x [2, 4, 8] + 3 x [1, 2, 4]
    ext = finding("cpp-extension", Category.CUSTOM_DEV, size=KernelSize(lines=300, kernels=4))
    assert approx(site_effort(ext, WEIGHTS)[0], 12.0, 24.0, 49.0)
    # ... and a kernel in its sources costs nothing of its own
    built = dataclasses.replace(kernel, built_by="setup.py:4")
    assert site_effort(built, WEIGHTS) == (Effort(0.0, 0.0, 0.0), "in the sources of the extension built at "
                                           "setup.py:4: priced there, once")
    note = finding("precision-note", Category.DIRECT, subject="torch.backends.cudnn.benchmark")
    assert site_effort(note, WEIGHTS)[0] == Effort(0.0, 0.0, 0.0)


def test_site_risk_by_hand():
    # custom-dev kernel: likelihood 3, kernel_impact 3, 3 x 3 = 9 between lower_at 4 and raise_at 15: 5 stars
    risk = site_risk(finding("cuda-kernel", Category.CUSTOM_DEV), WEIGHTS)
    assert (risk.likelihood, risk.impact, risk.stars) == (3, 3, 5)
    # matched by name only: one step more likelihood, 2 + 1 = 3, x 3 = 9: the category's 2 stars
    risk = site_risk(finding("cuda-kernel", Category.PARAM_CONVERTED, confidence="low"), WEIGHTS)
    assert (risk.likelihood, risk.impact, risk.stars) == (3, 3, 2)
    # a direct API: 1 x 2 = 2 <= 4: one star less, clamped at 1
    risk = site_risk(finding("gpu-api", Category.DIRECT, subject="torch.cuda.set_device"), WEIGHTS)
    assert (risk.likelihood, risk.impact, risk.stars) == (1, 2, 1)


def test_keys_do_not_carry_line_numbers():
    first, second = finding(line=10), finding(line=90)
    assert site_keys([first, second]) == ("train.py: flash_attn.flash_attn_func (library-call)",
                                          "train.py: flash_attn.flash_attn_func (library-call) #2")


def _library_model(source: str, kind: str = "library"):
    """A model whose capture holds flash_attn_func as an operator (kind `kind`) called from `source`, and a Linear."""
    calls = [dataclasses.replace(node("fa", "flash_attn.flash_attn_func", kind=kind), source=source),
             node("fc", "torch.nn.Linear")]
    inv = inventory(calls)
    ops = [classified(inv.operators[0], Category.PARAM_CONVERTED), classified(inv.operators[1])]
    return inv, score(ops, inv, WEIGHTS)


def test_a_library_operator_at_the_site_s_line_is_counted_once(tmp_path):
    inv, scores = _library_model(f"{tmp_path}/train.py:37")
    sites = estimate_sources([finding()], inv.operators, WEIGHTS, str(tmp_path))
    assert sites[0].operators == ("flash_attn.flash_attn_func",)
    with_site = estimate(scores, inv, WEIGHTS, source=sites)
    alone = estimate(scores, inv, WEIGHTS)
    library = next(op for op in with_site.ops if op.score.classified.operator.key == "flash_attn.flash_attn_func")
    assert library.cost == "source-finding" and library.person_days == Effort(0.0, 0.0, 0.0)
    before = next(op for op in alone.ops if op.score.classified.operator.key == "flash_attn.flash_attn_func")
    # the operator's own range leaves the total; the site's [0.25, 0.5, 2] comes in, once
    assert with_site.total.likely == pytest.approx(alone.total.likely - before.person_days.likely + 0.5)
    assert sites[0].key in {key for row in with_site.risk_matrix for cell in row for key in cell}


def test_a_library_operator_elsewhere_is_not_linked(tmp_path):
    inv, _ = _library_model(f"{tmp_path}/train.py:38")  # another line
    assert estimate_sources([finding()], inv.operators, WEIGHTS, str(tmp_path))[0].operators == ()
    inv, _ = _library_model(f"{tmp_path}/other.py:37")  # another file
    assert estimate_sources([finding()], inv.operators, WEIGHTS, str(tmp_path))[0].operators == ()


def test_an_ordinary_operator_that_is_the_call_carries_it(tmp_path):
    inv, scores = _library_model("train.py:37", kind="function")
    sites = estimate_sources([finding()], inv.operators, WEIGHTS, str(tmp_path))
    assert sites[0].covered_by == "flash_attn.flash_attn_func" and sites[0].person_days == Effort(0.0, 0.0, 0.0)
    result = estimate(scores, inv, WEIGHTS, source=sites)
    assert result.total == estimate(scores, inv, WEIGHTS).total
    assert sites[0].key not in {key for row in result.risk_matrix for cell in row for key in cell}


def test_a_source_scan_alone_totals_its_sites(tmp_path):
    scan = scan_sources(write_project(tmp_path))
    sites = estimate_sources(scan.findings, (), WEIGHTS, scan.root)
    result = estimate((), inventory([]), WEIGHTS, source=sites, model_level=False)
    assert result.activities == ()
    assert result.total.likely == pytest.approx(sum(s.person_days.likely for s in sites))
    assert result.p10 <= result.p50 <= result.p90 <= result.total.high
    custom = sum(s.person_days.likely for s in sites if s.finding.category == Category.CUSTOM_DEV)
    assert result.by_category[Category.CUSTOM_DEV].likely == pytest.approx(custom)
    grid = {key for row in result.risk_matrix for cell in row for key in cell}
    notes = [s.key for s in sites if s.finding.effort_free]
    assert len(notes) == 2 and not grid & set(notes)  # the two precision notes are notes, not risks
    built = [s.key for s in sites if s.finding.built_by]  # the extension's kernels, binding and runtime calls
    assert len(built) == 4 and len(grid) == len(sites) - 2 - 4


@pytest.mark.parametrize(("text", "problem"), [
    ("[source]\ndirect = [0.5, 0.1, 1.0]\n", "low <= likely <= high"),
    ("[source]\nkernel_kinds = ['warp-kernel']\n", "unknown finding kind"),
    ("[source]\nimpact = 9\n", "level from 1 to 5"),
    ("[source.per_kernel]\nmystery = [1, 2, 3]\n", "mystery"),
])
def test_source_weights_are_checked(tmp_path, text, problem):
    path = tmp_path / "w.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=problem) as error:
        load_weights(path)
    assert str(path) in str(error.value)


def test_project_files_follow_the_model_file_s_own_imports(tmp_path):
    files = {
        "model.py": "import torch\nimport helpers\nfrom pkg import layers\nfrom pkg.sub import deep\nimport missing\n",
        "helpers.py": "from . import unused_relative\nimport numpy\n",
        "pkg/__init__.py": "",
        "pkg/layers.py": "from .kernels import k\n",
        "pkg/kernels.py": "k = 1\n",
        "pkg/sub/deep.py": "x = 1\n",
        "pkg/not_imported.py": "import torch\ntorch.cuda.synchronize()\n",
        ".venv/lib/helpers.py": "",
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    found = [p.relative_to(tmp_path).as_posix() for p in project_files(tmp_path / "model.py")]
    assert found == ["model.py", "helpers.py", "pkg/__init__.py", "pkg/layers.py", "pkg/sub/deep.py",
                     "pkg/kernels.py"]


def test_many_sites_with_one_range_are_drawn_as_one_normal_sum():
    from opassess.score.estimate import SUM_AS_NORMAL

    site = Effort(0.25, 0.5, 2.0)  # PERT mean with lambda 4: a = 1 + 4 x 0.25 / 1.75, b = 1 + 4 x 1.5 / 1.75
    a, b = 1 + 4 * 0.25 / 1.75, 1 + 4 * 1.5 / 1.75
    mean = 0.25 + 1.75 * a / (a + b)
    many = [site] * 1000
    items = [dataclasses.replace(estimate_sources([finding()], (), WEIGHTS)[0], person_days=site)] * len(many)
    result = estimate((), inventory([]), WEIGHTS, source=items, model_level=False)
    assert len(many) >= SUM_AS_NORMAL
    assert result.p50 == pytest.approx(1000 * mean, rel=0.01)
    assert 1000 * 0.25 <= result.p10 < result.p50 < result.p90 <= 1000 * 2.0
    assert result.p90 - result.p10 < 0.1 * result.p50  # the sum of 1000 is narrow: spread grows with sqrt(n)


def test_a_triton_launch_is_linked_to_its_kernel_definition(tmp_path):
    kernel = finding("triton-kernel", Category.CUSTOM_DEV, line=19, subject="count_kernel", size=KernelSize(lines=7))
    launch = dataclasses.replace(node("launch", "triton:count_kernel", kind="library"), source="train.py:38")
    inv = inventory([launch])
    assert linked_operators([kernel], inv.operators, str(tmp_path)) == (("triton:count_kernel",),)
    # two files define a kernel of that name: only the one the launch's file defines is linked
    other = dataclasses.replace(kernel, file="other.py")
    assert linked_operators([kernel, other], inv.operators, str(tmp_path)) == (("triton:count_kernel",), ())


def test_gates_and_diffs_see_a_linked_operator_as_its_site(tmp_path):
    from opassess.ci.snapshot import read_snapshot

    document = {"format_version": 1, "model": {"source": "m.py", "class": "M"}, "summary": {},
                "operators": [{"op": "triton:count_kernel", "category": "custom-dev", "cost": "source-finding"},
                              {"op": "torch.nn.Linear", "category": "direct", "cost": "validation-block"}],
                "source_findings": [{"file": "train.py", "line": 19, "kind": "triton-kernel", "subject": "count_kernel",
                                     "category": "param-converted", "key": "train.py: count_kernel (triton-kernel)",
                                     "npu_route": "triton-ascend", "person_days": None}]}
    assert [(o.op, o.category) for o in read_snapshot(document).operators] == [
        ("torch.nn.Linear", "direct"), ("train.py: count_kernel (triton-kernel)", "param-converted")]


def test_the_same_edit_again_costs_the_repeat_fraction():
    # three DataParallel wraps (param-converted [0.25, 0.5, 2]) and one in another kind: the first of each edit in
    # full, the 2nd and 3rd at [source] repeat = 0.2; a sized kernel is its own work however many there are
    wraps = [finding("gpu-api", subject="torch.nn.DataParallel", file=f, line=n)
             for f, n in (("a.py", 3), ("a.py", 9), ("b.py", 4))]
    other = finding("string-compare", subject="torch.nn.DataParallel", file="b.py", line=7)
    kernels = [finding("triton-kernel", Category.CUSTOM_DEV, subject=f"k{i}", line=i, size=KernelSize(lines=7))
               for i in (1, 2)]
    sites = estimate_sources([*wraps, other, *kernels], (), WEIGHTS)
    assert WEIGHTS.source_rules.repeat == 0.2
    assert approx(sites[0].person_days, 0.25, 0.5, 2.0) and approx(sites[3].person_days, 0.25, 0.5, 2.0)
    for site in sites[1:3]:
        assert approx(site.person_days, 0.05, 0.1, 0.4) and "the same edit again" in site.basis
    assert approx(sites[4].person_days, 3.07, 6.14, 13.28) and approx(sites[5].person_days, 3.07, 6.14, 13.28)
    full = dataclasses.replace(WEIGHTS, source_rules=dataclasses.replace(WEIGHTS.source_rules, repeat=1.0))
    assert all(approx(s.person_days, 0.25, 0.5, 2.0) for s in estimate_sources(wraps, (), full))


def test_repeat_above_one_is_refused(tmp_path):
    weights = tmp_path / "w.toml"
    weights.write_text("[source]\nrepeat = 1.5\n")
    with pytest.raises(ConfigError, match=r"repeat.*above 1"):
        load_weights(weights)
