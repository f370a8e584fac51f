"""The view model: numbers worked out by hand on the hand-built ResNet-18 assessment (tests/report/support.py).

ResNet-18's 8 operator types, with report_support's tables:
  custom-dev       AdaptiveAvgPool2d                              12.0 (10-16)  risk L5 x I4
  param-converted  BatchNorm2d, MaxPool2d                      2 x 4.0 (3-5)    risk L3 x I3
  direct           Conv2d, ReLU, Tensor.add, flatten, Linear   5 x 1.5 (1-2)    risk L1 x I2
  total likely 12 + 8 + 7.5 = 27.5, low 10 + 6 + 5 = 21, high 16 + 10 + 10 = 36.
  Pareto (largest first until 80% of 27.5 = 22 is reached): 12, 16, 20, 21.5, 23 -> 5 operators, 23/27.5 = 84%.
"""
from __future__ import annotations

import textwrap
from dataclasses import replace
from types import SimpleNamespace

import pytest

from opassess.options import ScanOptions
from opassess.pipeline.sources import assess_sources
from opassess.report.charts import _nice_step
from opassess.report.charts import pareto_chart as _pareto_chart
from opassess.report.view import build_view, heat, short_name
from tests.report.support import synthetic_example


@pytest.fixture(scope="module")
def view():
    return build_view(synthetic_example("resnet_like"))


def test_operators_are_ordered_by_effort_then_first_occurrence(view):
    ops = [op["op"] for op in view.document["operators"]]
    assert ops == ["torch.nn.AdaptiveAvgPool2d", "torch.nn.BatchNorm2d", "torch.nn.MaxPool2d", "torch.nn.Conv2d",
                   "torch.nn.ReLU", "Tensor.add", "torch.flatten", "torch.nn.Linear"]
    assert [op.rank for op in view.display.operators] == list(range(1, 9))


def test_summary_totals_and_pareto(view):
    summary = view.document["summary"]
    assert summary["categories"] == {"direct": 5, "param-converted": 2, "custom-dev": 1}
    assert summary["operator_types"] == 8
    assert summary["occurrences"] == 69  # 20 conv + 20 bn + 17 relu + 8 add + maxpool, avgpool, flatten, fc
    assert summary["person_days"] == {"low": 21.0, "likely": 27.5, "high": 36.0}
    assert summary["pareto"]["ops"] == ["torch.nn.AdaptiveAvgPool2d", "torch.nn.BatchNorm2d", "torch.nn.MaxPool2d",
                                        "torch.nn.Conv2d", "torch.nn.ReLU"]
    assert summary["pareto"]["share_of_effort"] == 0.8364  # 23 / 27.5
    assert summary["pareto"]["share_of_types"] == 0.625  # 5 / 8
    assert summary["unknown"] == 1
    display = view.display
    assert display.totals.likely_text == "27.5" and display.totals.range_text == "21.0\u201336.0"
    assert display.pareto_statement == "5 of 8 operator types (62%) carry 84% of the operators' estimated effort"


def test_category_rows_are_formatted(view):
    rows = {c.name: c for c in view.display.categories}
    # custom-dev 12 / 27.5 = 43.6% ; param-converted 8 / 27.5 = 29.1% ; direct 7.5 / 27.5 = 27.3%
    assert (rows["custom-dev"].share_text, rows["custom-dev"].bar_pct) == ("44%", "43.6")
    assert (rows["param-converted"].likely_text, rows["param-converted"].range_text) == ("8.0", "6.0\u201310.0")
    assert (rows["direct"].types, rows["direct"].occurrences) == (5, 47)
    assert [(p.label, p.value) for p in view.display.pie] == [("direct", 5), ("param-converted", 2),
                                                                          ("custom-dev", 1)]


def test_risk_matrix_in_json_and_grid_rows_top_down(view):
    matrix = view.document["risk_matrix"]
    assert matrix[4][3] == ["torch.nn.AdaptiveAvgPool2d"]  # likelihood 5, impact 4
    assert matrix[2][2] == ["torch.nn.BatchNorm2d", "torch.nn.MaxPool2d"]
    assert len(matrix[0][1]) == 5
    assert sum(len(cell) for row in matrix for cell in row) == 8
    grid = view.display.risk_grid
    assert [row.likelihood for row in grid.rows] == [5, 4, 3, 2, 1]
    top_row = grid.rows[0].cells
    assert list(top_row[3].shorts) == ["nn.AdaptiveAvgPool2d"] and top_row[3].heat == "critical"  # 5 x 4 = 20


@pytest.mark.parametrize(("likelihood", "impact", "band"), [
    (1, 4, "low"), (2, 2, "low"), (1, 5, "moderate"), (3, 3, "moderate"), (2, 5, "high"), (3, 4, "high"),
    (3, 5, "critical"), (5, 5, "critical"),
])
def test_heat_bands(likelihood, impact, band):
    assert heat(likelihood, impact) == band


@pytest.mark.parametrize(("maximum", "step"), [(12, 5), (37.5, 10), (4, 1), (0.3, 0.1), (180, 50)])
def test_nice_axis_step(maximum, step):
    assert _nice_step(maximum) == pytest.approx(step)


def _bar_op(name, likely):
    """What the Pareto chart reads of an operator row (display.records.OperatorRow): a direct, estimated one."""
    return SimpleNamespace(op=name, short=name, likely=likely, category="direct", estimated=True)


def test_pareto_chart_geometry_worked_example():
    ops = [_bar_op(f"op{i}", v) for i, v in enumerate([10.0, 6.0, 4.0])]
    chart = _pareto_chart(ops, 20.0)
    # Plot: top 16, height 330 - 16 - 120 = 194, baseline 210; cumulative 50%, 80%, 100% ->
    # y = 16 + 194 * 0.5 = 113.0, 16 + 194 * 0.2 = 54.8, 16.0. Axis max: step 5 (10/4 = 2.5 -> 5), 10 -> max 10.
    assert chart.line.split() == ["164.0,113.0", "380.0,54.8", "596.0,16.0"]  # x: 56 + 216 * (i + 0.5)
    assert [b.height for b in chart.bars] == ["194.0", "116.4", "77.6"]  # 194 * 10/10, 6/10, 4/10
    assert chart.ref_y == "54.8"  # the 80% line meets the second point
    assert [t.text for t in chart.left_ticks] == ["0", "5", "10"]


def test_pareto_chart_groups_the_tail_into_others():
    ops = [_bar_op(f"op{i}", 1.0) for i in range(25)]
    chart = _pareto_chart(ops, 25.0)
    assert len(chart.bars) == 21 and chart.bars[-1].label == "5 others"
    assert chart.line.split()[-1].endswith(",16.0")  # the cumulative line ends at 100%


def test_module_rows_in_tree_order_largest_first(view):
    rows = view.display.modules
    paths = [r.path for r in rows]
    assert paths[:4] == ["(model)", "avgpool", "maxpool", "layer2"]
    # layer2 = 5 of 20 Conv2d (5 x 1.5/20) + 5 of 20 BatchNorm2d (5 x 4/20) + 4 of 17 ReLU (4 x 1.5/17)
    #          + 2 of 8 Tensor.add (2 x 1.5/8) = 0.375 + 1.0 + 0.353 + 0.375 = 2.10
    layer2 = rows[3]
    assert (layer2.likely_text, layer2.class_, layer2.depth) == ("2.1", "Sequential", 1)
    # the two BasicBlocks of layer2 are one row for their type, with their summed effort
    assert paths.index("layer2.[0-1]") == 4 and "layer2.[0-1].downsample" in paths
    assert "layer2.0" not in paths and "layer2.1" not in paths
    assert rows[4].class_ == "x2 (BasicBlock)" and rows[4].likely_text == "2.1"
    # Leaf conv/bn/relu modules each carry < 1% of 27.5 and are left to the JSON.
    assert "layer1.0.conv1" not in paths and view.display.modules_hidden > 0
    assert view.document["by_module"]["layer1.0.conv1"]["likely"] == 0.08  # 1.5 / 20 = 0.075


def test_model_strings_stay_plain_for_the_template_to_escape():
    assessment = synthetic_example("resnet_like")
    evil = replace(assessment, model=replace(assessment.model, class_name="<b>x</b>"))
    assert build_view(evil).display.model.class_name == "<b>x</b>"


def test_without_estimate_numbers_are_absent_not_zero():
    view = build_view(replace(synthetic_example("resnet_like"), estimate=None))
    assert view.document["summary"]["person_days"] is None
    assert view.document["operators"][0]["person_days"] is None
    assert view.document["operators"][0]["op"] == "torch.nn.Conv2d"  # inventory order: first occurrence
    assert view.display.pareto_chart is None and view.display.risk_grid is None


def test_short_names():
    assert short_name("torch.nn.functional.scaled_dot_product_attention") == "F.scaled_dot_product_attention"
    assert short_name("torch.nn.Conv2d") == "nn.Conv2d"
    assert short_name("mylib::fused") == "mylib::fused"


def test_a_long_pareto_list_names_the_largest_and_counts_the_rest():
    # 25 direct operators of 1.5 person-days each (report_support's tables): 80% of 37.5 = 30 needs 20 of them.
    # The summary sentence names the first TOP_OPERATORS (10) and counts the other 10; the JSON lists all 20.
    from opassess.report import render
    from tests.report.support import synthetic_assessment
    from tests.score.records import call, inventory, node

    nodes = [node(f"n{i}", f"mylib.op_{i:02d}", f"m{i}", kind="function", aten=[call("aten::relu")])
             for i in range(25)]
    assessment = synthetic_assessment(inventory(nodes))
    view = build_view(assessment)
    assert len(view.document["summary"]["pareto"]["ops"]) == 20
    pareto = view.display.pareto
    assert (len(pareto.shown), pareto.more) == (10, 10)
    statement = next(line for line in render(assessment, "md").splitlines() if line.startswith("> **20/80:**"))
    assert statement.endswith("`mylib.op_09` and 10 more.") and "op_10" not in statement


def test_a_crowded_risk_cell_names_thirty_operators_and_counts_the_rest():
    # 40 direct operators all land in cell L1 x I2 (report_support's tables). The HTML heat map and the Markdown
    # grid name CELL_OPS (30) of them and say "+10 more"; the JSON matrix keeps all 40.
    from opassess.report import render
    from tests.report.support import synthetic_assessment
    from tests.score.records import call, inventory, node

    nodes = [node(f"n{i}", f"mylib.op_{i:02d}", f"m{i}", kind="function", aten=[call("aten::relu")])
             for i in range(40)]
    assessment = synthetic_assessment(inventory(nodes))
    view = build_view(assessment)
    assert len(view.document["risk_matrix"][0][1]) == 40
    cell = view.display.risk_grid.rows[-1].cells[1]
    assert (len(cell.shown), cell.more, cell.count) == (30, 10, 40)
    assert cell.shown[0].context() == {"op": "mylib.op_00", "short": "mylib.op_00"}
    html = render(assessment, "html")
    assert html.count('class="chip"') == 30 and ">+10 more</span>" in html
    row = next(line for line in render(assessment, "md").splitlines() if line.startswith("| **1** rare"))
    assert row.count("`mylib.op_") == 30 and "+10 more" in row


def test_pareto_chart_labels_are_cut_to_fit_under_the_axis():
    # 120 px under the axis holds about 30 characters of 11 px text rotated by 40 degrees: a longer name is cut
    # with an ellipsis (its bar's tooltip keeps the whole name).
    long = "mylib.fused_" + "x" * 40
    ops = [_bar_op(long, 2.0), _bar_op("F.scaled_dot_product_attention", 1.0)]
    bars = _pareto_chart(ops, 3.0).bars
    assert bars[0].label == long[:29] + "\u2026" and bars[0].title.startswith(long + ":")
    assert bars[1].label == "F.scaled_dot_product_attention"  # 30 characters: whole


def test_module_rows_past_the_cap_are_the_smallest_not_the_last_in_tree_order():
    # 45 direct operators (1.5 each) in a.b0 .. a.b44 and a custom-dev one (12) in z: total 79.5. Tree order puts
    # a (67.5) and its 45 children before z (12, 15% of the effort). With MODULE_ROWS = 40 the rows shown are the 40
    # largest, in tree order: (model), a, z and 37 of a's children; the 8 left out each carry 1.5 / 79.5 = 1.9%,
    # over MODULE_MIN_SHARE, so the HTML says they are past the rows shown, not that they are under 1%.
    from opassess.report import render
    from tests.report.support import synthetic_assessment
    from tests.score.records import call, inventory, node

    nodes = [node(f"n{i}", f"mylib.op_{i:02d}", f"a.b{i}", kind="function", aten=[call("aten::relu")])
             for i in range(45)]
    nodes.append(node("z", "torch.nn.AdaptiveAvgPool2d", "z", aten=[call("aten::_adaptive_avg_pool2d")]))
    assessment = synthetic_assessment(inventory(nodes))
    display = build_view(assessment).display
    paths = [row.path for row in display.modules]
    assert len(paths) == 40 and paths[:2] == ["(model)", "a"] and paths[-1] == "z"
    assert (display.modules_hidden, display.modules_small, display.modules_cut) == (8, 0, 8)
    assert "8 more modules, each smaller than every module shown" in render(assessment, "html")


def test_the_header_says_which_evidence_decided(view):
    assert view.display.evidence_order == ("Verdicts from: kernel facts (CANN aclnn docs) for Atlas A2, then "
                                                 "the torch_npu API page, then the dispatcher.")


def test_the_view_and_its_records_are_read_by_attribute_only(view):
    """No string keys: `view.display.model.class_name`, never `view["display"]["model"]["class_name"]`, so a
    renamed field is an AttributeError (and a mypy error) at its reader, not a KeyError in one format."""
    for value, key in ((view, "display"), (view.display, "model"), (view.display.model, "class_name"),
                       (view.display.operators[0], "op"), (view.display.categories[0], "name")):
        with pytest.raises(TypeError, match="not subscriptable"):
            value[key]
    assert view.display.modules[0].class_ == getattr(view.display.modules[0], "class")  # templates write row.class


def test_a_source_scan_counts_the_same_sites_in_its_cards_and_its_section(tmp_path):
    """A GradScaler under bf16 autocast is a note (no loss to scale), as the cuDNN flag is: the summary cards and the
    source section both leave the notes out of the sites and of the direct count (the cards used to count them)."""
    (tmp_path / "train.py").write_text(textwrap.dedent("""\
        import torch

        torch.backends.cudnn.benchmark = True


        def train(model, batches):
            model = model.cuda()
            scaler = torch.cuda.amp.GradScaler()
            for x in batches:
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = model(x.to("cuda")).sum()
                scaler.scale(loss).backward()
            torch.cuda.synchronize()
        """))
    assessment = assess_sources((str(tmp_path),), ScanOptions(target=str(tmp_path)))
    kinds = {f.line: f.kind for f in assessment.source_scan.findings}
    assert (kinds[3], kinds[8]) == ("precision-note", "no-op")  # the flag and the bf16 GradScaler: the two notes
    work = [line for line, kind in kinds.items() if kind not in ("precision-note", "no-op")]
    assert len(work) >= 3  # .cuda(), .to("cuda"), torch.cuda.synchronize
    display = build_view(assessment).display
    cards = {card.label: card for card in display.cards}
    assert cards["Source sites"].value == str(len(work))
    direct = sum(1 for f in assessment.source_scan.findings if f.line in work and str(f.category) == "direct")
    assert f"{direct} direct" in cards["Custom development"].detail
    assert display.source.summary.startswith(f"{len(work)} sites in 1 files")
    assert f": {direct} direct, " in display.source.summary and "; 2 notes" in display.source.summary
    assert [row.line for row in display.source.notes] == [3, 8]
