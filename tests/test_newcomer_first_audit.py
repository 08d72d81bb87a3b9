"""What a newcomer meets first: a device called gpu is one line naming --device, its choices and what to type; a 0-d
array output is named y; a number beyond float64's range in a batched output is named by its type. Each expected line
is written out here."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from audit.cli.main import main
from mechanisms.base import check_batch_output
from mechanisms.errors import MechanismError
from mechanisms.outputs.encoding import output_features
from mechanisms.outputs.limits import OutputNotEncodable, check_output_limits

_AUDIT = ["audit", "--mechanism", "catalog:laplace_sum", "--samples", "400"]


def _only_line(argv, capsys) -> str:
    """The one line a usage error prints (status 2, no usage block)."""
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "usage:" not in err, err
    return err.rstrip("\n")


@pytest.mark.parametrize("device,line", [
    ("gpu", "miaudit audit: error: [audit] device (--device) must be one of auto, cpu, cuda, got 'gpu'; for gpu type "
            "cuda: here --device cuda"),
    ("CPU", "miaudit audit: error: [audit] device (--device) must be one of auto, cpu, cuda, got 'CPU'; for CPU type "
            "cpu: here --device cpu"),
    ("tpu", "miaudit audit: error: [audit] device (--device) must be one of auto, cpu, cuda, got 'tpu'"),
])
def test_a_device_audit_does_not_know_is_one_line_naming_the_flag_and_its_choices(device, line, capsys):
    assert _only_line([*_AUDIT, "--device", device], capsys) == line


def test_the_device_flag_still_sets_the_audit_s_device():
    from audit.cli.audit_command import _flag_config
    from audit.cli.main import build_parser

    argv = [*_AUDIT, "--device", "cpu"]
    parser, _ = build_parser(argv)
    assert _flag_config(parser.parse_args(argv))["audit"]["device"] == "cpu"


def test_a_zero_dimensional_array_is_named_y():
    assert output_features(np.array(3.0)) == {"y.ndim": 0.0, "y": 3.0}
    with pytest.raises(OutputNotEncodable) as error:
        check_output_limits(np.array(Fraction(1, 3), dtype=object))
    # 1/3 as float64 to 17 significant digits, from the float itself.
    assert str(error.value).startswith(f"the output is not encodable: y is a Fraction: 1/3 would be read as float64 "
                                       f"{1 / 3:.17g}, its last digits lost")
    with pytest.raises(OutputNotEncodable) as inner:
        check_output_limits({"k": np.array(Fraction(1, 3), dtype=object)})
    assert str(inner.value).startswith("the output is not encodable: y{'k'} is a Fraction: ")


@pytest.mark.parametrize("value,noun", [(Fraction(10**400, 3), "a Fraction"), (10**400, "an integer"),
                                        (-Fraction(10**400, 7), "a Fraction")])
def test_a_number_beyond_float64_s_range_in_a_batched_output_is_named_by_its_type(value, noun):
    with pytest.raises(MechanismError) as error:
        check_batch_output([[1.0], [value]], 2, "mechanism f")
    assert str(error.value) == f"mechanism f returned {noun} beyond float64's range of about 1.8e308 for database 1"
