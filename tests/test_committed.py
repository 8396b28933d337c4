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
