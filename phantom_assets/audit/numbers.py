"""Numbers as people read them in certificates and reasons: no exponent for money."""

from __future__ import annotations

import math

SMALLEST_PLAIN = 1e-4
"""Below this magnitude a number (a p-value at its floor) keeps its exponent."""


def readable(value: float, digits: int = 4) -> str:
    """`value` with `digits` significant digits, thousands separated and without an exponent
    (32,953 rather than 3.295e+04; 0.1089; 4,496; 1.5, trailing zeros dropped); inf and nan as
    they are; an exponent only for magnitudes below `SMALLEST_PLAIN` (1.533e-07)."""
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    if abs(value) < SMALLEST_PLAIN:
        return f"{value:.{digits - 1}e}"
    magnitude = math.floor(math.log10(abs(value)))
    text = f"{value:,.{max(digits - 1 - magnitude, 0)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
