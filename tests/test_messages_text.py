"""opassess/messages.py (Text, say): a sentence built from a message id is its English text everywhere (records, JSON,
pickles) and is said in the reader's language by the human formats, its values included."""
from __future__ import annotations

import json
import pickle

from opassess.messages import N_, Text, parsed, say
from opassess.records import Reason
from opassess.report.i18n import translations

ZH = translations("zh-CN").gettext


def test_a_message_is_its_english_text():
    text = Text(N_("cast to %(dtype)s"), {"dtype": "float32"})
    assert text == "cast to float32" and isinstance(text, str)
    assert json.dumps({"m": text}) == '{"m": "cast to float32"}'  # the JSON contract: plain English
    assert {text: 1}["cast to float32"] == 1  # hashes as its text
    assert text.template == "cast to %(dtype)s" and text.params == (("dtype", "float32"),)


def test_a_message_survives_a_pickle_with_what_it_was_built_from():
    inner = Text(N_("cast to %(dtype)s"), {"dtype": "int32"})
    outer = Text(N_("input rank %(ndim)s: %(rule)s"), {"ndim": 5, "rule": inner})
    back = pickle.loads(pickle.dumps(outer))
    assert back == outer == "input rank 5: cast to int32"
    assert say(back, ZH) == say(outer, ZH) == "输入维数 5：转换为 int32"


def test_say_translates_the_template_and_nested_values_but_not_identifiers():
    rule = Text(N_("%(param)s must be %(value)s"), {"param": "dilation", "value": "1"})
    text = Text(N_("%(param)s=%(value)s: %(rule)s on the NPU"), {"param": "dilation", "value": "2", "rule": rule})
    assert say(text) == text == "dilation=2: dilation must be 1 on the NPU"  # English: as built
    assert say(text, ZH) == "dilation=2：dilation 必须为 1（NPU 上的限制）"
    assert say("not a message", ZH) == "not a message"  # plain text not in the catalog reads as written
    assert say("", ZH) == ""  # never the catalog's header


def test_a_reason_built_from_a_message_id_keeps_its_english_message():
    reason = Reason.of("dtype", N_("the NPU kernel of %(op)s rejects float64 input; cast to float32"),
                       {"op": "aten::cumsum"}, "npu_op_check_messages: x.cpp:1 (float64-unsupported)")
    assert reason.message == "the NPU kernel of aten::cumsum rejects float64 input; cast to float32"
    assert isinstance(reason.message, Text)
    assert say(reason.message, ZH) == "aten::cumsum 的 NPU 算子不接受 float64 输入；请转换为 float32"


def test_english_from_the_worker_is_read_back_as_its_message_and_said_with_torch_error_quoted():
    from opassess.report.prose import device_note_text
    from opassess.trace.driver import DEVICE_NOTES

    note = DEVICE_NOTES[0] % {"device": "meta", "op": "torchvision::nms", "error": "RuntimeError: data-dependent (x)"}
    back = parsed(note, DEVICE_NOTES)
    assert back == note and dict(back.params)["op"] == "torchvision::nms"
    assert device_note_text(note, ZH) == ("模型无法在 meta 设备上运行（torchvision::nms 的 meta 实现报错“RuntimeError: "
                                          "data-dependent (x)”，以 CPU 实现为准）；已改为在 CPU 上以真实权重构建并运行")
    assert device_note_text(note, str) == note  # English: as the worker wrote it
    assert parsed("a note no template made", DEVICE_NOTES) == "a note no template made"
    repeated = parsed("(3 - 3) x 0.02", ["(%(n)s - %(n)s) x %(per)s"])
    assert dict(repeated.params) == {"n": "3", "per": "0.02"}
    assert parsed("(3 - 2) x 0.02", ["(%(n)s - %(n)s) x %(per)s"]) == "(3 - 2) x 0.02"  # a repeat must repeat
