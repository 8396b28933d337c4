"""``mechaudit infer-score`` and ``mechaudit fit-tau`` on files (in-process, JSON out)."""

from __future__ import annotations

import json

import pytest

from mechaudit.cli import main
from mechaudit.tau import fit_tau_detailed, infer_score, make_pool, sample_pairs, simulate_pairs


def test_infer_score_cli(tmp_path, capsys):
    data = {"anchors": [{"score10": 3.0, "weight": 1.0}, {"score10": 7.0, "weight": 0.5}],
            "comparisons": [{"anchor_id": "A1", "judgement": "better", "strength": "strong"},
                            {"anchor_id": "A2", "judgement": "worse", "strength": "weak"}], "tau": 0.8}
    path = tmp_path / "in.json"
    path.write_text(json.dumps(data))
    assert main(["infer-score", "--input", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    score, diag = infer_score(data["anchors"], data["comparisons"], 0.8)
    assert out["score"] == score and out["ci_low"] == diag["ci_low"] and out["loss"] == pytest.approx(diag["loss"])


def test_infer_score_cli_bad_input(tmp_path, capsys):
    path = tmp_path / "in.json"
    path.write_text(json.dumps({"anchors": {}, "comparisons": []}))
    assert main(["infer-score", "--input", str(path)]) == 1
    assert "in.json: field 'anchors': must be a list, got {}" in capsys.readouterr().err


def test_fit_tau_cli(tmp_path, capsys):
    judged = simulate_pairs(sample_pairs(make_pool(seed=1).table(), 400, seed=1), 0.8, seed=2)
    path = tmp_path / "pairs.jsonl"
    rows = judged[["delta", "judgement", "strength", "weight"]].to_dict("records")
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    for method in ("grid", "mle"):
        assert main(["fit-tau", "--pairs", str(path), "--method", method]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["tau"] == pytest.approx(fit_tau_detailed(rows, method).tau) and out["n_pairs"] == 400
    assert out["se"] > 0
    out_file = tmp_path / "fit.json"
    assert main(["fit-tau", "--pairs", str(path), "--out", str(out_file)]) == 0
    assert json.loads(out_file.read_text())["se"] is None  # grid has no standard error


def test_fit_tau_cli_names_bad_line(tmp_path, capsys):
    path = tmp_path / "pairs.jsonl"
    path.write_text('{"delta": 1.0, "y": 1}\n{"y": 0}\n')
    assert main(["fit-tau", "--pairs", str(path)]) == 1
    assert "pairs.jsonl:2: field 'delta'" in capsys.readouterr().err


@pytest.mark.parametrize(("line", "expected"), [
    ('{"delta": 1.0, "y": 1.5}', "field 'y': must be a number in [0, 1], got 1.5"),
    ('{"delta": 1.0}', "field 'judgement': missing: a pair needs 'y' or 'judgement'"),
    ('{"delta": 1.0, "y": 1, "weight": -1}', "field 'weight': must be a number >= 0, got -1"),
    ('{"delta": 1.0, "y": 1, "weight": "2"}', "field 'weight': must be a number >= 0, got '2'"),
    ('{"delta": 1.0, "y": 1, "strength": "huge"}', "field 'strength': must be weak, medium or strong, got 'huge'"),
])
def test_fit_tau_names_the_bad_field_of_a_pair(tmp_path, capsys, line, expected):
    path = tmp_path / "pairs.jsonl"
    path.write_text('{"delta": 0.5, "y": 0}\n' + line + "\n")
    assert main(["fit-tau", "--pairs", str(path)]) == 1
    assert capsys.readouterr().err.strip() == f"mechaudit: error: {path}:2: {expected}"


def test_fit_tau_json_is_indented_and_sorted(tmp_path, capsys):
    path = tmp_path / "pairs.jsonl"
    path.write_text('{"delta": 1.0, "y": 1}\n{"delta": -1.0, "y": 0}\n{"delta": 0.5, "y": 0}\n')
    assert main(["fit-tau", "--pairs", str(path)]) == 0
    text = capsys.readouterr().out
    fit = json.loads(text)
    assert text == json.dumps(fit, indent=2, sort_keys=True) + "\n" and text.startswith('{\n  "')


@pytest.mark.parametrize(("raw", "expected"), [
    (b'{"anchors": [],\n "comparisons": [],\n "tau": "caf\xe9"}', ":3: field '<json>': not UTF-8 text"),
    (b'[1, 2]', ": field '<record>': expected a JSON object"),
    (b'{"anchors": [], "comparisons": [], "grid_step": 0}', ": field 'grid_step': must be a positive number, got 0"),
])
def test_infer_score_input_errors_name_line_and_field(tmp_path, capsys, raw, expected):
    path = tmp_path / "in.json"
    path.write_bytes(raw)
    assert main(["infer-score", "--input", str(path)]) == 1
    assert capsys.readouterr().err.strip() == f"mechaudit: error: {path}{expected}"
