"""``--pair`` files (mechanisms.inputs.pair_files): messages that name the right thing (issue 43 §5)."""

import numpy as np
import pytest

from audit.cli.main import main
from estimators.array_files import load_npy_array
from estimators.validation import InputError
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.inputs.pair_files import check_pairs_agree, split_pair_flag


def test_pairs_of_two_relations_are_named_as_such_without_the_presence_column():
    add_remove = NeighbouringPair(np.array([[4.0], [1.0], [1.0]]), np.array([[4.0], [1.0]]))
    replace_one = NeighbouringPair(np.array([[1.0], [1.0], [1.0]]), np.array([[4.0], [1.0], [1.0]]))
    with pytest.raises(InputError) as raised:
        check_pairs_agree([add_remove, replace_one])
    message = str(raised.value)
    assert "pair 1 holds n and n − 1 rows: add or remove one record" in message
    assert "pair 2 two databases of n rows: replace one record" in message
    assert "(3, 2)" not in message  # the presence column the audit adds is not the user's
    wider = NeighbouringPair(np.zeros((3, 2)), np.eye(3, 2)[[0, 2, 2]] * 0 + np.array([[1.0, 0], [0, 0], [0, 0]]))
    with pytest.raises(InputError, match=r"one shape \(n, k\), got \(3, 1\) in pair 1 and \(3, 2\) in pair 2"):
        check_pairs_agree([replace_one, wider])


def test_two_pair_flags_of_two_relations_exit_2_with_the_relations(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    np.save("a.npy", np.array([[4.0], [1.0], [1.0]]))
    np.save("b.npy", np.array([[4.0], [1.0]]))
    np.save("c.npy", np.array([[1.0], [1.0], [1.0]]))
    np.save("d.npy", np.array([[4.0], [1.0], [1.0]]))
    (tmp_path / "noisy_sum.py").write_text("def mech(db, rng):\n    return float(db.sum() + rng.laplace())\n")
    code = main(["audit", "--mechanism", "noisy_sum.py:mech", "--per-database", "--claim", "dp:1", "--relation", "add-remove",
                 "--pair", "a.npy,b.npy", "--pair", "c.npy,d.npy"])
    err = capsys.readouterr().err
    assert code == 2 and "an audit has one neighbouring relation" in err and "(n, k)" not in err


def test_a_pair_flag_whose_file_names_hold_commas_is_split_where_both_files_exist(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save("x,1.npy", np.zeros((2, 1)))
    np.save("b.npy", np.zeros((2, 1)))
    assert split_pair_flag("x,1.npy,b.npy") == ("x,1.npy", "b.npy")  # was refused as three names
    # One file whose name holds a comma is not two files.
    with pytest.raises(InputError, match="one file whose name holds a comma; a pair needs two"):
        split_pair_flag("x,1.npy")
    with pytest.raises(InputError, match="'b.npy': one file; a pair needs two"):
        split_pair_flag("b.npy")
    with pytest.raises(InputError, match=r"2 commas and none of its readings name two existing files \('q' and "
                                         r"'r,s'; 'q,r' and 's'\)"):
        split_pair_flag("q,r,s")
    assert split_pair_flag(" a.npy , b.npy ") == ("a.npy", "b.npy")  # one comma: the files' own checks follow


def test_a_header_declaring_more_than_the_file_holds_reports_the_arrays_size(tmp_path):
    header = np.lib.format.header_data_from_array_1_0(np.zeros((1, 1)))
    header["shape"] = (10**6, 10**6)  # 8 TB of float64
    path = tmp_path / "huge.npy"
    with open(path, "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, header)
        handle.write(b"\0" * 64)
    with pytest.raises(InputError, match=r"'--pair'.*truncated or corrupt: its header declares an array of shape "
                                         r"\(1000000, 1000000\), float64, 8.0 TB, but the file holds 64 bytes"):
        load_npy_array(path, "--pair")
    whole = tmp_path / "whole.npy"
    np.save(whole, np.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(load_npy_array(whole, "--pair"), np.arange(6.0).reshape(3, 2))
