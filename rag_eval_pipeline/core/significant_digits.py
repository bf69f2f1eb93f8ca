"""Numbers as the Dagster UI shows them: four significant digits. A metric mean such as
0.12055534294415841 carries noise far below its bootstrap interval; 0.1206 is what a reader compares.
The stored tables keep every digit; only what is shown is rounded."""

from __future__ import annotations

import math

SHOWN_DIGITS = 4


def significant(value: float, digits: int = SHOWN_DIGITS) -> float:
    """``value`` rounded to ``digits`` significant digits (0.12055534 -> 0.1206, 1234.56 -> 1235.0 at
    four, 0.000123456 -> 0.0001235); NaN and infinities unchanged."""
    if digits < 1:
        raise ValueError(f"digits must be at least 1, got {digits}")
    if not math.isfinite(value):
        return value
    return float(f"{value:.{digits}g}")


def significant_text(value: float, digits: int = SHOWN_DIGITS) -> str:
    """The shortest text of ``significant(value)``: ``0.77`` (no trailing zeros), ``n/a`` for NaN."""
    if math.isnan(value):
        return "n/a"
    return f"{significant(value, digits):.{digits}g}"
