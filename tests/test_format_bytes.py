"""``format_bytes`` (estimators.memory), which every memory refusal prints: whole bytes below 1 KiB, never
``.3g``'s exponent form (it printed ``1e+03 B`` for 1,000 bytes and ``1e+03 KiB`` for 1,000 KiB). Expected
strings are written by hand from the rule: the largest binary unit whose value rounds below 1,024, three
significant figures below 100, a whole number with thousands separators from 100 on."""

import pytest

from estimators.memory import format_bytes


@pytest.mark.parametrize("count, expected", [
    (0, "0 B"),
    (1, "1 B"),
    (999, "999 B"),
    (1000, "1,000 B"),
    (1023, "1,023 B"),
    (1024, "1 KiB"),
    (1536, "1.5 KiB"),            # 1.5 × 1,024
    (10 * 1024 + 256, "10.2 KiB"),  # 10.25 KiB to three figures
    (100 * 1024, "100 KiB"),
    (1000 * 1024, "1,000 KiB"),
    (1023 * 1024, "1,023 KiB"),
    (1023.7 * 1024, "1 MiB"),     # rounds to 1,024 KiB: the next unit
    (580 * 2**20, "580 MiB"),
    (3 * 2**30 + 2**29, "3.5 GiB"),
    (2**30, "1 GiB"),
    (2**40, "1 TiB"),
    (5000 * 2**50, "5,000 PiB"),  # no unit past PiB
])
def test_sizes_are_written_without_exponents(count, expected):
    assert format_bytes(count) == expected
    assert "e+" not in format_bytes(count)


def test_every_count_from_a_byte_to_a_pebibyte_has_no_exponent():
    counts = [round(1.01**i) for i in range(0, 4150, 7)]  # up to 8e17 bytes, below 1,024 PiB
    assert 2**50 < counts[-1] < 1024 * 2**50
    for count in counts:
        number, unit = format_bytes(count).split(" ")
        assert "e" not in number and unit in {"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
        assert float(number.replace(",", "")) < 1024
