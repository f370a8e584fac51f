"""isolation/wire.py: a closed vocabulary crosses the wire as its word and is decoded to the enum member; the
parent refuses any other word with its one-line error."""
from __future__ import annotations

import json

import pytest

from opassess.isolation.wire import BadCapture, decode_capture, encode_capture
from opassess.records import Capture, ModelInfo
from opassess.vocabulary import CaptureStep


def _message(step: CaptureStep) -> dict:
    info = ModelInfo(source="m.py", entry="build_model", class_name="M", parameters=0, dtype="float32", inputs=())
    capture = Capture(method="fx", device="meta", device_note=None, attempts=(), nodes=(), step=step)
    return json.loads(json.dumps(encode_capture(info, capture, {"load": 0.1, "trace": 0.2})))


@pytest.mark.parametrize("step", list(CaptureStep))
def test_the_capture_step_crosses_the_wire_as_its_word_and_comes_back_as_the_enum(step):
    message = _message(step)
    assert type(message["capture"]["step"]) is str and message["capture"]["step"] == step.value
    _, capture, _ = decode_capture(message)
    assert type(capture.step) is CaptureStep and capture.step is step
    assert capture.training == (step is CaptureStep.TRAIN)


@pytest.mark.parametrize("word", ["inference", "Train", "", 1, None])
def test_a_step_outside_the_vocabulary_is_refused_in_one_line(word):
    message = _message(CaptureStep.FORWARD)
    message["capture"]["step"] = word
    with pytest.raises(BadCapture, match=r"^malformed capture from the worker at capture\.step: ") as refused:
        decode_capture(message)
    assert "\n" not in str(refused.value)
    if isinstance(word, str):
        assert "not one of forward, train" in str(refused.value)
