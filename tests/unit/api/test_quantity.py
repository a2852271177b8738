from fractions import Fraction

import pytest

from volcanolib.api.quantity import milli_value, parse_quantity, value
from volcanolib.errors import QuantityError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", Fraction(1)),
        ("500m", Fraction(1, 2)),
        ("1.5", Fraction(3, 2)),
        ("2Ki", Fraction(2048)),
        ("1Mi", Fraction(2**20)),
        ("3Gi", Fraction(3 * 2**30)),
        ("1Ti", Fraction(2**40)),
        ("1k", Fraction(1000)),
        ("2M", Fraction(2 * 10**6)),
        ("4G", Fraction(4 * 10**9)),
        ("1e3", Fraction(1000)),
        ("1E-3", Fraction(1, 1000)),
        ("100n", Fraction(1, 10**7)),
        ("5u", Fraction(5, 10**6)),
        (".5", Fraction(1, 2)),
        ("+2", Fraction(2)),
        ("-1", Fraction(-1)),
        (3, Fraction(3)),
        (0.25, Fraction(1, 4)),
    ],
)
def test_parse_quantity(text: object, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "1Gb", "1.2.3", "--1", "1 Gi", "e3", True, None, [1], "1e999"])
def test_invalid_quantity_names_the_text(text: object) -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity(text)
    assert repr(text) in str(info.value) or str(text) in str(info.value)


def test_milli_value_rounds_up() -> None:
    assert milli_value("0.0001") == 1
    assert milli_value("1.5") == 1500
    assert milli_value("100m") == 100
    assert milli_value("1") == 1000


def test_value_rounds_up() -> None:
    assert value("1.2") == 2
    assert value("1Gi") == 2**30
    assert value("500m") == 1
