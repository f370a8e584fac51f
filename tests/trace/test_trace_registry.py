"""Trace registry: capture methods registered once by name, default orders read from their registered ranks."""
from __future__ import annotations

import pytest

from opassess.errors import TraceError
from opassess.trace import METHODS
from opassess.trace import registry as registry_module
from opassess.trace.dispatch import DispatchCapture, DispatchCompilingCapture
from opassess.trace.export import ExportCapture
from opassess.trace.fx import FxCapture
from opassess.trace.methods import capture_order, check_methods, method_named
from opassess.trace.registry import CaptureMethod, register_capture, registered


def test_each_capture_method_is_registered_once_under_its_name():
    assert registered() == {"fx": FxCapture, "dispatch": DispatchCapture,
                            "dispatch-compiling": DispatchCompilingCapture, "export": ExportCapture}
    assert isinstance(method_named("export"), ExportCapture)


def test_a_second_registration_of_a_name_is_refused_and_the_first_kept():
    with pytest.raises(TraceError, match=r"capture method 'fx' is registered twice "
                                         r"\(opassess\.trace\.fx\.FxCapture and test_trace_registry\..*\.Impostor\)"):
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
