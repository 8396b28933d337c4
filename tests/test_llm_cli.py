"""``mechaudit judge``: pairs-file parsing, verdict output, errors naming file/line/field."""

from __future__ import annotations

import json

import pytest

from mechaudit.cli import main
from mechaudit.cli.judge import read_pairs


def hyp(hid: str, ids: list[str], statement: str = "A drives B.") -> dict:
    return {"id": hid, "instance": "A", "statement": statement, "explanation": "Because of C.",
            "chain": [{"id": i, "text": f"the {i.lower()} event"} for i in ids]}


ORIGINAL = hyp("h1", ["A", "C", "B"])
LINES = [
    {
        "kind": "wording_only",
        "original": ORIGINAL,
        "variant": hyp("h1w", ["A", "C", "B"], "B follows A."),
        "valid": True,
    },
    {"kind": "first_step_swapped", "original": ORIGINAL, "variant": hyp("h1f", ["X", "C", "B"]), "valid": True},
    {"kind": "middle_step_swapped", "original": ORIGINAL, "variant": hyp("h1m", ["A", "Y", "B"]), "valid": False},
    {"a": ORIGINAL, "b": hyp("h2", ["A", "C", "D", "B"]), "note": "a/b form"},
]


@pytest.fixture
def pairs_file(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in LINES) + "\n\n")
    return path


def test_read_pairs_both_formats_and_validity(pairs_file):
    pairs, info, skipped = read_pairs(pairs_file)
    assert skipped == 1 and len(pairs) == 3
    assert [(i["line"], i["a"], i["b"], i["kind"]) for i in info] == [
        (1, "h1", "h1w", "wording_only"), (2, "h1", "h1f", "first_step_swapped"), (4, "h1", "h2", None)]
    assert pairs[2][1].chain[2].id == "D"
    assert len(read_pairs(pairs_file, include_invalid=True)[0]) == 4


def test_judge_reference_rule_writes_ordered_verdicts(pairs_file, tmp_path, capsys):
    out = tmp_path / "out" / "verdicts.jsonl"
    code = main(["judge", "--pairs", str(pairs_file), "--rule", "reference", "--rubric", "full",
                 "--out", str(out), "--quiet"])
    assert code == 0
    verdicts = [json.loads(line) for line in out.read_text().splitlines()]
    assert [v["same"] for v in verdicts] == [True, False, True]  # wording same, FSS different, detail added
    assert {(v["rule"], v["rubric"], v["backend"]) for v in verdicts} == {("reference", "full", "reference")}
    assert "skipped 1 pair" in capsys.readouterr().err


def test_judge_tfidf_to_stdout_has_similarity(pairs_file, capsys):
    assert main(["judge", "--pairs", str(pairs_file), "--rule", "tfidf", "--quiet"]) == 0
    verdicts = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(verdicts) == 3 and all(0.0 <= v["similarity"] <= 1.0 for v in verdicts)
    assert {v["backend"] for v in verdicts} == {"local"} and verdicts[0]["rubric"] is None


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json\n", "bad.jsonl:1: field '<json>': malformed JSON"),
        (json.dumps({"original": ORIGINAL}) + "\n", "bad.jsonl:1: field 'variant': missing"),
        (json.dumps({"a": ORIGINAL, "b": {**ORIGINAL, "chain": []}}) + "\n", "bad.jsonl:1: field 'b.chain'"),
        ("\n" + json.dumps([1, 2]) + "\n", "bad.jsonl:2: field '<record>': expected a JSON object"),
    ],
)
def test_bad_pairs_file_names_file_line_field(tmp_path, capsys, content, expected):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    assert main(["judge", "--pairs", str(path), "--rule", "reference", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "bad.jsonl" in err and expected in err


def test_judge_llm_replay_miss_is_an_error(pairs_file, tmp_path, capsys):
    code = main(["judge", "--pairs", str(pairs_file), "--rule", "llm", "--backend", "replay",
                 "--cache-dir", str(tmp_path / "empty_cache"), "--quiet"])
    assert code == 1
    err = capsys.readouterr().err
    assert "ReplayMissError" in err and "no recorded response for request" in err
    assert capsys.readouterr().out == ""


def test_tfidf_similarity_is_the_rules_own_to_six_digits(pairs_file, capsys):
    from mechaudit.rules.registry import build

    assert main(["judge", "--pairs", str(pairs_file), "--rule", "tfidf", "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    expected = build("tfidf").similarity(read_pairs(pairs_file)[0])
    assert [json.loads(line)["similarity"] for line in lines] == [round(float(s), 6) for s in expected]
    assert all(isinstance(json.loads(line)["similarity"], float) for line in lines)
    assert all(list(json.loads(line)) == sorted(json.loads(line)) for line in lines)


def test_judge_mechanism_key_rule_and_out_into_an_existing_folder(pairs_file, tmp_path, capsys):
    out = tmp_path / "verdicts.jsonl"  # its folder exists already
    assert main(["judge", "--pairs", str(pairs_file), "--rule", "mechanism_key", "--out", str(out), "--quiet"]) == 0
    verdicts = [json.loads(line) for line in out.read_text().splitlines()]
    assert [v["same"] for v in verdicts] == [True, False, False]  # same chain; first step swapped; step added
    assert {(v["rule"], v["rubric"], v["backend"]) for v in verdicts} == {("mechanism_key", None, "reference")}
    assert "similarity" not in verdicts[0] and capsys.readouterr().out == ""


def test_rule_config_of_each_rule(tmp_path):
    from mechaudit.cli import build_parser
    from mechaudit.cli.judge import rule_config
    from mechaudit.paths import cache_path

    def config(*extra: str) -> dict:
        return rule_config(build_parser().parse_args(["judge", "--pairs", "p.jsonl", *extra]))

    assert config("--rule", "embedding") == {"cache_dir": cache_path("embedding_cache")}
    assert config("--rule", "embedding", "--embedding-cache", str(tmp_path), "--threshold", "0.5") == {
        "cache_dir": tmp_path, "threshold": 0.5}
    assert config("--rule", "embedding", "--no-embedding-cache") == {"cache_dir": None}
    assert config("--rule", "tfidf") == {}
    assert config("--rule", "mechanism_key") == {} and config("--rule", "paper_rates") == {}
    assert config("--rule", "reference", "--rubric", "none") == {"rubric": "none", "jaccard_threshold": 0.5}


class _RecordingRule:
    """A rule that says "same" for every pair and records the ``progress`` it was given."""

    def __init__(self, seen: list) -> None:
        self.seen = seen

    def same(self, pairs, progress=None):
        self.seen.append(progress)
        return [True] * len(pairs)


def test_embedding_rule_gets_the_progress_switch(pairs_file, monkeypatch, capsys):
    seen: list = []
    monkeypatch.setattr("mechaudit.cli.judge.build", lambda name, **config: _RecordingRule(seen))
    assert main(["judge", "--pairs", str(pairs_file), "--rule", "embedding", "--quiet"]) == 0
    assert main(["judge", "--pairs", str(pairs_file), "--rule", "embedding"]) == 0
    assert seen == [False, True]
    assert [json.loads(line)["same"] for line in capsys.readouterr().out.splitlines()] == [True] * 6


@pytest.mark.parametrize(("option", "value", "expected"), [
    ("--poll-interval", "-1", "field '--poll-interval': must be a number in [0, inf], got -1.0"),
    ("--jaccard-threshold", "-0.1", "field '--jaccard-threshold': must be a number in [0, 1], got -0.1"),
    ("--jaccard-threshold", "1.5", "field '--jaccard-threshold': must be a number in [0, 1], got 1.5"),
])
def test_judge_number_options_are_checked(pairs_file, capsys, option, value, expected):
    assert main(["judge", "--pairs", str(pairs_file), "--rule", "reference", option, value, "--quiet"]) == 1
    assert capsys.readouterr().err.strip() == f"mechaudit: error: {expected}"


def test_one_repeated_pair_is_named_without_an_ellipsis(tmp_path, capsys):
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in LINES[:2] + LINES[:1]) + "\n")
    assert main(["judge", "--pairs", str(path), "--rule", "reference", "--quiet"]) == 0
    assert capsys.readouterr().err.strip() == (f"mechaudit: warning: {path}: 1 pair(s) repeat an earlier line "
                                               "(line 3 = line 1); each is judged again")
