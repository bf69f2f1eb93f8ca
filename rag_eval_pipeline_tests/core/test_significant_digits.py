import math

import pytest

from rag_eval_pipeline.core.significant_digits import significant, significant_text


@pytest.mark.parametrize(
    ("value", "rounded", "text"),
    [
        (0.12055534294415841, 0.1206, "0.1206"),  # the mean the UI showed raw
        (0.7700000001, 0.77, "0.77"),  # no trailing zeros in the text
        (0.000123456, 0.0001235, "0.0001235"),  # small values keep four digits, not four decimals
        (1234.56, 1235.0, "1235"),
        (9.99996, 10.0, "10"),  # a carry adds a digit
        (-0.123456, -0.1235, "-0.1235"),
        (0.0, 0.0, "0"),
        (1.0, 1.0, "1"),
    ],
)
def test_four_significant_digits(value: float, rounded: float, text: str) -> None:
    assert significant(value) == rounded
    assert significant_text(value) == text
    assert significant(rounded) == rounded  # rounding twice changes nothing


def test_other_digits_nan_and_infinities() -> None:
    assert significant(0.123456, 2) == 0.12 and significant_text(0.8567, 3) == "0.857"
    assert math.isnan(significant(math.nan)) and significant_text(math.nan) == "n/a"
    assert significant(math.inf) == math.inf
    with pytest.raises(ValueError, match="digits must be at least 1"):
        significant(0.5, 0)
