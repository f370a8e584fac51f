"""Trace registry: capture methods registered once by name, default orders read from their registered ranks."""
from __future__ import annotations

import pytest

from opassess.errors import TraceError
from opassess.trace import METHODS
from opassess.trace import registry as registry_module
from opassess.trace.dispatch import DispatchCapture, DispatchCompilingCapture
from opassess.trace.export import ExportCapture
from opassess.trace.fx import FxCapture
from opassess.trace.methods import capture_methods, capture_order, check_methods, method_named
from opassess.trace.registry import CaptureMethod, register_capture, registered
from opassess.trace.train import TrainCapture, TrainCompilingCapture, TrainOptions


def test_each_capture_method_is_registered_once_under_its_name():
    assert registered() == {"fx": FxCapture, "dispatch": DispatchCapture,
                            "dispatch-compiling": DispatchCompilingCapture, "export": ExportCapture,
                            "train": TrainCapture, "train-compiling": TrainCompilingCapture}
    assert isinstance(method_named("export"), ExportCapture)


def test_the_training_step_is_the_registered_methods_of_its_step_never_in_a_forward_order():
    """--train tries train, then train-compiling, each running the step it was given; --capture cannot name them."""
    assert capture_order(10, "train") == capture_order(10**10, "train") == ("train", "train-compiling")
    assert not set(capture_order(10, "train")) & set(METHODS)
    amp = TrainOptions(amp="bf16")
    step = capture_methods(10, ("fx",), amp)  # with a training step, the forward methods asked for do not apply
    assert [type(m) for m in step] == [TrainCapture, TrainCompilingCapture] and step[0].options is amp
    # what differs from the forward is said by the methods' attributes, which trace_model reads
    assert (step[0].eager, step[0].reported_as, step[0].step) == (True, "dispatch", "train")
    assert (step[1].eager, step[1].reported_as, step[1].step) == (False, "dispatch-compiling", "train")
    assert [type(m) for m in capture_methods(10)] == [FxCapture, DispatchCapture, DispatchCompilingCapture,
                                                      ExportCapture]
    with pytest.raises(TraceError, match="unknown capture method 'train'"):
        check_methods(("train",))


def test_a_second_registration_of_a_name_is_refused_and_the_first_kept():
    with pytest.raises(TraceError, match=r"capture method 'fx' is registered twice "
                                         r"\(opassess\.trace\.fx\.FxCapture and "
                                         r"tests\.trace\.test_trace_registry\..*\.Impostor\)"):
        @register_capture("fx", small=0, large=0)
        class Impostor(CaptureMethod):
            pass
    assert registered()["fx"] is FxCapture and FxCapture.rank_small == 1


def test_default_orders_for_small_and_large_models_are_the_registered_ranks():
    assert METHODS == ("fx", "dispatch", "dispatch-compiling", "export")
    assert capture_order(1_000_000_000) == METHODS  # the limit itself is still a small model
    assert capture_order(1_000_000_001) == ("dispatch", "dispatch-compiling", "fx", "export")


def test_a_newly_registered_method_takes_its_ranked_place_in_both_orders(monkeypatch):
    monkeypatch.setattr(registry_module, "_REGISTRY", dict(registry_module._REGISTRY))

    @register_capture("probe", small=0, large=9)
    class Probe(CaptureMethod):
        pass

    assert capture_order(10) == ("probe", "fx", "dispatch", "dispatch-compiling", "export")
    assert capture_order(10**10) == ("dispatch", "dispatch-compiling", "fx", "export", "probe")
    check_methods(("probe",))


def test_an_unknown_method_is_refused_naming_the_known_ones():
    with pytest.raises(TraceError, match=r"unknown capture method 'jit'; expected one of "
                                         r"fx, dispatch, dispatch-compiling, export"):
        check_methods(("fx", "jit"))
