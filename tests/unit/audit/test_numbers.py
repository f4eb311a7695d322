"""Numbers in certificates read as numbers: no exponent for money, one for a tiny p."""

import math

import pytest

from phantom_assets.audit.numbers import readable


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (32953.1, "32,953"),  # was 3.295e+04 in the certificate's reasons
        (-38253.4, "-38,253"),
        (4496.34, "4,496"),
        (0.108859, "0.1089"),
        (0.00390625, "0.003906"),
        (1.5328e-07, "1.533e-07"),
        (1.5, "1.5"),
        (0.0039, "0.0039"),
        (0.0, "0"),
        (math.inf, "inf"),
        (-math.inf, "-inf"),
    ],
)
def test_readable_keeps_four_significant_digits_without_an_exponent(value, text):
    assert readable(value) == text


def test_readable_takes_more_digits_for_tables():
    assert readable(32953.123, 6) == "32,953.1"


def test_readable_says_nan():
    assert readable(math.nan) == "nan"
