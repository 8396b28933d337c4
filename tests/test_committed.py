"""Committed expensive computations (mechaudit.workflow.committed): a table is read back only with
exactly the settings that produced it, every float to the last digit."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mechaudit.workflow import committed


def test_round_trip_is_exact_and_settings_must_match(tmp_path):
    rng = np.random.default_rng(1)
    table = pd.DataFrame({"p": [0.1, 0.2, 0.3], "x": rng.random(3) * 100, "ok": [True, False, True]})
    settings = {"grid": {"p": (0.1, 0.2, 0.3)}, "seeds": 4, "design": {"runs": 5}}
    committed.save("demo", table, settings, tmp_path)
    back = committed.load("demo", settings, tmp_path)
    pd.testing.assert_frame_equal(back, table)  # floats written with 17 significant digits
    assert committed.load("demo", {**settings, "seeds": 5}, tmp_path) is None
    assert committed.load("demo", {"seeds": 4, "grid": {"p": [0.1, 0.2, 0.3]}, "design": {"runs": 5}},
                          tmp_path) is not None  # key order and tuple/list do not matter
    assert committed.load("other", settings, tmp_path) is None
    assert committed.recorded("demo", tmp_path) == {"design": {"runs": 5}, "grid": {"p": [0.1, 0.2, 0.3]}, "seeds": 4}
    (tmp_path / "demo.csv").unlink()
    assert committed.load("demo", settings, tmp_path) is None


def test_settings_carry_the_shipped_benchmark():
    with_bench = committed.with_benchmark({"a": 1})
    assert with_bench["a"] == 1 and "hypotheses.jsonl" in with_bench["benchmark"]
    assert committed.canonical({"b": [1, 2], "a": 1}) == committed.canonical({"a": 1, "b": (1, 2)})


def test_calibrate_refuses_other_data_and_keeps_current_tables(monkeypatch, capsys):
    """On other data the command stops in one line; on the shipped data a current table is kept, not
    recomputed (the scan part's simulation is replaced by a function that fails if called)."""
    import mechaudit.paths as paths
    from mechaudit.cli import main
    from mechaudit.workflow import calibrate

    monkeypatch.setattr(paths, "is_shipped_benchmark", lambda data_dir=None: False)
    assert main(["calibrate", "--only", "scan"]) == 1
    assert "field 'MECHAUDIT_DATA'" in capsys.readouterr().err
    monkeypatch.undo()

    def refuse(*args, **kwargs):
        raise AssertionError("the committed scan is current: nothing to simulate")

    monkeypatch.setattr(calibrate, "scan", refuse)
    before = (committed.COMPUTED_DIR / "calibration_scan.csv").read_bytes()
    assert main(["calibrate", "--only", "scan"]) == 0
    out = capsys.readouterr().out
    assert "calibration_scan.csv (81 points): current, kept" in out
    assert "params/simulator.yaml holds every calibrated value" in out
    assert (committed.COMPUTED_DIR / "calibration_scan.csv").read_bytes() == before


def test_cached_reads_a_current_table_and_writes_only_when_asked(tmp_path):
    table = pd.DataFrame({"x": [1.5, 2.5]})
    calls = []

    def compute():
        calls.append(1)
        return table

    got, source = committed.cached("t", {"a": 1}, compute, folder=tmp_path)
    assert source == "computed now" and got is table and list(tmp_path.iterdir()) == []
    got, source = committed.cached("t", {"a": 1}, compute, write=True, folder=tmp_path)
    assert source == "computed now" and committed.recorded("t", tmp_path) == {"a": 1}
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "t.csv"), table)
    got, source = committed.cached("t", {"a": 1}, compute, folder=tmp_path)
    assert source == "committed" and len(calls) == 2
    pd.testing.assert_frame_equal(got, table)
    assert committed.cached("t", {"a": 1}, compute, force=True, folder=tmp_path)[1] == "computed now"
    assert committed.cached("t", {"a": 2}, compute, folder=tmp_path)[1] == "computed now"


def test_canonical_text_and_records_written_only_on_change(tmp_path):
    assert committed.canonical({"b": (1,), "a": 1}) == '{\n "a": 1,\n "b": [\n  1\n ]\n}\n'
    assert committed.write_record("r", {"a": 1}, tmp_path) is True
    assert (tmp_path / "r.json").read_text(encoding="utf-8") == '{\n "a": 1\n}\n'
    assert committed.write_record("r", {"a": 1}, tmp_path) is False
    assert committed.write_record("r", {"a": 2}, tmp_path) is True
    assert committed.recorded("r", tmp_path) == {"a": 2} and committed.recorded("none", tmp_path) is None


def test_summary_says_what_was_written():
    tables = {"scan": pd.DataFrame({"x": [1, 2, 3]}), "map": pd.DataFrame({"x": [1]})}
    assert committed.summary(tables, {"scan": "computed now", "map": "committed"}) == (
        "data/computed/scan.csv (3 rows): written\ndata/computed/map.csv (1 rows): current, kept")
    assert committed.summary(tables, {"scan": "committed", "map": "computed now"}, unit="points") == (
        "data/computed/scan.csv (3 points): current, kept\ndata/computed/map.csv (1 points): written")
