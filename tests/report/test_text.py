"""report/text.py: the one way numbers are written for people."""
from __future__ import annotations

import pytest

from opassess.records import Effort
from opassess.report.text import bounds_range, days, days_detail, days_or, days_range, percent, share, signed_days


def test_days_and_ranges():
    assert days(4.45) == "4.5" and days(0) == "0.0"
    assert days_range(Effort(3.0, 4.0, 6.04)) == "3.0\u20136.0"
    assert days_range(Effort(3.0, 4.0, 6.0), dash="-") == "3.0-6.0"
    assert days_or(None) == "n/a" and days_or(Effort(1, 2.25, 3)) == "2.2"  # round half to even on 2.25
    assert days_detail(12, 10, 16, " person-days") == "12.0 person-days (10.0-16.0)"


@pytest.mark.parametrize(("value", "zero_sign", "text"), [
    (12.0, False, "+12.0"), (-3.5, False, "-3.5"), (0.0, False, "0.0"), (-0.01, False, "0.0"), (0.0, True, "+0.0"),
])
def test_signed_days(value, zero_sign, text):
    assert signed_days(value, zero_sign=zero_sign) == text


def test_percent_share_and_weights_ranges():
    assert percent(0.384) == "38%" and percent(share(1, 0)) == "0%"
    assert bounds_range(3.0, 5.0) == "3-5" and bounds_range(0.5, 1.25) == "0.5-1.25"
