"""One error style (issue 12, items 5 and 6): every expected failure of the command line is one
stderr line ``mechaudit: error: FILE:LINE: field 'x': ...`` with exit code 1 (2 stays for argparse
usage errors), no traceback unless ``--debug``; deliberate choices warn in one line; parameters
are checked before any cell runs; ``infer_score`` is strict; rule configuration is keyword-only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tiny_data import VOCAB

from mechaudit.cli import main
from mechaudit.errors import MechauditError
from mechaudit.paths import REPO_ROOT


def hyp(**over) -> dict:
    rec = {"id": "h1", "instance": "A", "statement": "kinase one acts.", "explanation": "kinase one acts.",
           "chain": [{"id": "K1", "text": "kinase one"}, {"id": "K2", "text": "kinase two"},
                     {"id": "O1", "text": "outcome one"}]}
    rec.update(over)
    return rec


def one_error(capsys, argv: list[str], expected: str) -> str:
    """Run ``main(argv)``: exit 1, exactly one stderr line ``mechaudit: error: ...expected...``."""
    code = main(argv)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 1, err
    assert len(lines) == 1 and lines[0].startswith("mechaudit: error: "), err
    assert expected in lines[0], lines[0]
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    (tmp_path / "vocabulary.yaml").write_text(VOCAB)
    (tmp_path / "h.jsonl").write_text(json.dumps(hyp()) + "\n" + json.dumps(hyp(id="h2")) + "\n")
    return tmp_path


def perturb_args(d: Path, hyps: str = "h.jsonl", *extra: str) -> list[str]:
    return ["perturb", "--hypotheses", str(d / hyps), "--vocabulary", str(d / "vocabulary.yaml"),
            "--out", str(d / "suite.jsonl"), *extra]


# ---------------------------------------------------------------------------------------------
# perturb


def test_perturb_ok_then_every_failure_is_one_line(data, capsys):
    assert main(perturb_args(data)) == 0
    capsys.readouterr()
    one_error(capsys, perturb_args(data, "missing.jsonl"), "missing.jsonl: No such file or directory")
    (data / "dup.jsonl").write_text(json.dumps(hyp()) + "\n" + json.dumps(hyp()) + "\n")
    one_error(capsys, perturb_args(data, "dup.jsonl"), "dup.jsonl:2: field 'id': duplicate hypothesis id 'h1'")
    (data / "cut.jsonl").write_text(json.dumps(hyp()) + "\n" + json.dumps(hyp(id="h2"))[:40])
    one_error(capsys, perturb_args(data, "cut.jsonl"), "cut.jsonl:2: field '<json>': malformed JSON")
    (data / "latin.jsonl").write_bytes(json.dumps(hyp()).encode() + b"\n"
                                       + json.dumps(hyp(id="h2", statement="caf\u00e9")).encode("latin-1")
                                       .replace(b"\\u00e9", b"\xe9") + b"\n")
    one_error(capsys, perturb_args(data, "latin.jsonl"), "latin.jsonl:2: field '<text>': not UTF-8 text")
    (data / "short.jsonl").write_text(json.dumps(hyp(chain=hyp()["chain"][:2])) + "\n")
    one_error(capsys, perturb_args(data, "short.jsonl"), "short.jsonl:1: field 'chain': ")
    unnamed = hyp(chain=[{"id": "K1", "text": "an enzyme"}, *hyp()["chain"][1:]])
    (data / "unnamed.jsonl").write_text(json.dumps(unnamed) + "\n")
    one_error(capsys, perturb_args(data, "unnamed.jsonl"),
              "unnamed.jsonl:1: field 'chain[0].text': does not name its entity 'K1'")
    unknown = hyp(chain=[{"id": "K9", "text": "kinase one"}, *hyp()["chain"][1:]])
    (data / "unknown.jsonl").write_text(json.dumps(unknown) + "\n")
    one_error(
        capsys, perturb_args(data, "unknown.jsonl"), "unknown.jsonl:1: field 'chain[0].id': unknown vocabulary id 'K9'"
    )
    one_error(
        capsys, perturb_args(data, "h.jsonl", "--seed", "-1"), "field '--seed': must be an integer in [0, inf], got -1"
    )
    args = perturb_args(data)
    args[args.index("--out") + 1] = str(data)
    one_error(capsys, args, "field '--out': ")
    (data / "afile").write_text("x")
    args[args.index("--out") + 1] = str(data / "afile" / "suite.jsonl")
    one_error(capsys, args, "field '--out': cannot write")


def test_perturb_empty_input_warns_in_one_line(data, capsys):
    (data / "empty.jsonl").write_text("\n")
    assert main(perturb_args(data, "empty.jsonl")) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"mechaudit: warning: {data / 'empty.jsonl'}: no hypotheses: the suite is empty"]


def test_yaml_errors_name_file_and_line(data, capsys):
    (data / "vocabulary.yaml").write_bytes(VOCAB.encode().replace(b"kinase three", b"kinase thr\xe9e"))
    one_error(capsys, perturb_args(data), "vocabulary.yaml:7: field '<text>': not UTF-8 text")
    (data / "vocabulary.yaml").write_text(VOCAB.replace("{id: K3,", "{id: K3"))
    one_error(capsys, perturb_args(data), "vocabulary.yaml:")


def test_loader_checks_entity_mentions_in_templates(data):
    from mechaudit.schema import DataError, load_hypotheses, load_vocabulary

    vocab = load_vocabulary(data / "vocabulary.yaml")
    template = {"statement": "{^K1} acts.", "explanations": ["{^K1} acts."], "chain": ["{K1}", "{K2}", "{O1}"]}
    capital = {"statement": "Kinase one acts.", "explanation": "Kinase one acts."}
    (data / "t.jsonl").write_text(json.dumps(hyp(template=template, **capital)) + "\n")
    assert load_hypotheses(data / "t.jsonl", vocabulary=vocab)[0].template is not None
    unmarked = {**template, "statement": "Kinase one acts."}  # renders identically, mention not marked
    (data / "t.jsonl").write_text(json.dumps(hyp(template=unmarked, **capital)) + "\n")
    with pytest.raises(DataError, match=r"t.jsonl:1: field 'template.statement': unmarked mention of entity 'K1'"):
        load_hypotheses(data / "t.jsonl", vocabulary=vocab)


def test_instance_docstring_and_data_md_agree_with_the_loader(data):
    """The loader's counts (2 entities per type, >= 1 opening, >= 3 steps) are the documented ones."""
    from mechaudit.schema import DataError, Instance, load_vocabulary

    text = (REPO_ROOT / "book" / "data.md").read_text()
    assert "at least two members" in text and "at least three members" not in text
    assert "exactly five" not in (Instance.__doc__ or "")
    (data / "v.yaml").write_text(VOCAB.replace("  - {id: O2, type: outcome, name: outcome two}\n", ""))
    with pytest.raises(DataError, match="fewer than 2 members"):
        load_vocabulary(data / "v.yaml")


# ---------------------------------------------------------------------------------------------
# execute: parameters checked before any cell runs


@pytest.mark.parametrize(("content", "expected"), [
    ("common:\n  seed: 0\n01_problems:\n  n_runs: 3\n",
     "p.yaml:3: field '01_problems': unknown section: not 'common', 'design' or a chapter"),
    ("common:\n  seeed: 0\n", "p.yaml:2: field 'seeed': unknown parameter under 'common': no chapter defines it; "
                             "did you mean 'seed'?"),
    ("common: 5\n", "p.yaml:1: field 'common': a section must map parameter names to values, got 5"),
    ("common:\n  seed: [0\n", "p.yaml:3: malformed YAML"),
    ("common:\n  tfidf_threshold: 2\n", "p.yaml:2: field 'tfidf_threshold': must be a number in [0, 1], got 2"),
    ("common:\n  backend: antropic\n", "p.yaml:2: field 'backend': must be one of 'reference', 'anthropic', 'replay', "
                                       "got 'antropic'; did you mean 'anthropic'?"),
    ("01_problem:\n  n_runs: five\n", "p.yaml:2: field 'n_runs': must be an integer like the default 5, got 'five'"),
    ("04_equivalence_rules:\n  rules: tfidf\n", "p.yaml:2: field 'rules': must be a list like the default"),
    ("01_problem:\n  n_run: 3\n", "p.yaml:2: field 'n_run': unknown parameter: 01_problem does not define it; "
                                  "did you mean 'n_runs'?"),
    (b"common:\n  seed: 0 # caf\xe9\n", "p.yaml:2: not UTF-8 text"),
])
def test_bad_parameter_files(tmp_path, capsys, content, expected):
    params = tmp_path / "p.yaml"
    params.write_bytes(content if isinstance(content, bytes) else content.encode())
    one_error(capsys, ["execute", "01_problem", "--params", str(params), "--out", str(tmp_path / "out")], expected)
    assert not (tmp_path / "out").exists()  # nothing ran


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("backend", "antropic", "-p: field 'backend': must be one of 'reference', 'anthropic', 'replay', got 'antropic'"),
    ("tfidf_threshold", "2", "-p: field 'tfidf_threshold': must be a number in [0, 1], got 2"),
    ("seed", "-1", "-p: field 'seed': must be an integer in [0, inf], got -1"),
    ("seed", "[1", "-p: field 'seed': malformed value '[1'"),
    ("rules", "[tfidf, 3]", "-p: field 'rules': item 1: must be a string, got 3"),
    ("llm_batch", "1", "-p: field 'llm_batch': must be a boolean"),
    ("tfidf_treshold", "0.3", "-p: field 'tfidf_treshold': unknown parameter: 04_equivalence_rules does not "
                              "define it; did you mean 'tfidf_threshold'?"),
])
def test_bad_overrides(tmp_path, capsys, name, value, expected):
    one_error(capsys, ["execute", "04_equivalence_rules", "-p", name, value, "--out", str(tmp_path / "out")], expected)
    assert not (tmp_path / "out").exists()


def test_execute_out_pointing_at_a_file(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    one_error(capsys, ["execute", "01_problem", "--out", str(tmp_path / "f")],
              f"field '--out': {tmp_path / 'f'} exists and is not a folder")


def test_shipped_parameter_sets_pass_the_whole_file_check():
    from mechaudit.book.params import check_param_file

    for name in ("default.yaml", "paper.yaml"):
        check_param_file(REPO_ROOT / "params" / name)


# ---------------------------------------------------------------------------------------------
# judge


SUITE_LINE = {"kind": "wording_only", "original": hyp(), "variant": hyp(id="h1~w"), "valid": True}


def test_judge_bad_values_and_valid_as_string(tmp_path, capsys):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps(SUITE_LINE) + "\n")
    base = ["judge", "--pairs", str(pairs), "--quiet"]
    one_error(
        capsys,
        base + ["--rule", "tfidf", "--threshold", "5"],
        "field '--threshold': must be a number in [0, 1], got 5.0",
    )
    one_error(
        capsys,
        base + ["--rule", "llm", "--max-concurrency", "0"],
        "field '--max-concurrency': must be an integer in [1, inf], got 0",
    )
    pairs.write_text(json.dumps(SUITE_LINE) + "\n" + json.dumps({**SUITE_LINE, "valid": "false"}) + "\n")
    one_error(capsys, base + ["--rule", "reference"],
              "pairs.jsonl:2: field 'valid': must be true or false (a JSON boolean), got 'false'")


def test_judge_duplicates_warn_and_are_judged(tmp_path, capsys):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text((json.dumps(SUITE_LINE) + "\n") * 3)
    assert main(["judge", "--pairs", str(pairs), "--quiet", "--rule", "reference"]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 3
    assert err.strip().splitlines() == [f"mechaudit: warning: {pairs}: 2 pair(s) repeat an earlier line "
                                        "(line 2 = line 1, ...); each is judged again"]


def test_load_suite_rejects_valid_as_string(tmp_path):
    from mechaudit.perturb import load_suite

    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({**SUITE_LINE, "valid": "false"}) + "\n")
    with pytest.raises(MechauditError, match=r"s.jsonl:1: field 'valid': must be true or false"):
        load_suite(path)


# ---------------------------------------------------------------------------------------------
# infer-score / fit-tau and infer_score's strict mode

ANCHORS = [{"anchor_id": "A1", "score10": 3.0, "weight": 1.0}, {"anchor_id": "A2", "score10": 7.0, "weight": 1.0}]


def test_infer_score_cli_errors(tmp_path, capsys):
    path = tmp_path / "in.json"
    path.write_text(json.dumps({"anchors": ["a", "b"], "comparisons": []}))
    one_error(capsys, ["infer-score", "--input", str(path)], "in.json: field 'anchors[0]': must be a mapping")
    path.write_text(json.dumps({"anchors": ANCHORS, "comparisons": [{"anchor_id": "A1", "judgement": "beter"}]}))
    one_error(capsys, ["infer-score", "--input", str(path)],
              "in.json: field 'comparisons[0].judgement': 'beter' is not better, tie or worse")
    path.write_text('{"anchors": [\n  1,\n')
    one_error(capsys, ["infer-score", "--input", str(path)], "in.json:3: field '<json>': malformed JSON")


def test_fit_tau_cli_errors_name_file_and_line(tmp_path, capsys):
    path = tmp_path / "pairs.jsonl"
    path.write_text('{"delta": 1.0, "y": 1}\n\n{"delta": 0.5, "judgement": "beter"}\n')
    one_error(
        capsys, ["fit-tau", "--pairs", str(path)], "pairs.jsonl:3: field 'judgement': must be better, tie or worse"
    )
    path.write_text('{"delta": "1.0", "y": 1}\n')
    one_error(capsys, ["fit-tau", "--pairs", str(path)], "pairs.jsonl:1: field 'delta': must be a finite number")


def test_infer_score_strict_and_lenient():
    from mechaudit.tau.inference import infer_score

    good = [{"anchor_id": "A1", "judgement": "better", "strength": "strong"},
            {"anchor_id": "A2", "judgement": "worse", "strength": "weak"}]
    score, diag = infer_score(ANCHORS, good, 1.0)
    assert 3.0 < score < 7.0 and "n_unknown_anchor_ids" not in diag
    with pytest.raises(MechauditError, match=r"field 'comparisons\[2\].anchor_id': 'A9' is not one of"):
        infer_score(ANCHORS, good + [{"anchor_id": "A9", "judgement": "better"}], 1.0)
    with pytest.raises(ValueError, match=r"comparisons\[1\].judgement.*'beter'"):
        infer_score(ANCHORS, [good[0], {**good[1], "judgement": "beter"}], 1.0)
    with pytest.raises(ValueError, match=r"comparisons\[0\].strength"):
        infer_score(ANCHORS, [{**good[0], "strength": "strnog"}], 1.0)
    lenient = [good[0], {**good[1], "judgement": "beter"}, {"anchor_id": "A9", "judgement": "better"}]
    s2, d2 = infer_score(ANCHORS, lenient, 1.0, strict=False)
    tie = [good[0], {**good[1], "judgement": "tie"}]
    assert (s2, d2["loss"]) == infer_score(ANCHORS, tie, 1.0)[0:1] + (infer_score(ANCHORS, tie, 1.0)[1]["loss"],)
    assert (d2["n_unknown_anchor_ids"], d2["n_unrecognised_judgements"], d2["n_unrecognised_strengths"]) == (1, 1, 0)


# ---------------------------------------------------------------------------------------------
# rule constructors: keyword-only configuration


def test_rule_configuration_is_keyword_only():
    from mechaudit.rules import EmbeddingRule, LLMJudge, ReferenceJudge, TfidfRule

    with pytest.raises(TypeError):
        EmbeddingRule(0.8)  # used to set the model silently
    with pytest.raises(TypeError):
        TfidfRule(0.3)
    with pytest.raises(TypeError):
        ReferenceJudge("none", 0.3)
    with pytest.raises(TypeError):
        LLMJudge("full", "claude-opus-4-6")
    assert TfidfRule(threshold=0.25).threshold == 0.25  # DESIGN.md's calls
    rule = EmbeddingRule(model=None, threshold=0.77)
    assert rule.threshold == 0.77
    assert ReferenceJudge("step").rubric == "step" and ReferenceJudge(rubric="full").rubric == "full"
    with pytest.raises(MechauditError, match=r"field 'threshold': threshold must be in \[0, 1\]; got 2"):
        TfidfRule(threshold=2)
    with pytest.raises(ValueError, match="must be a number"):
        EmbeddingRule(threshold="0.8")


# ---------------------------------------------------------------------------------------------
# the funnel end to end: a real process, --debug


def test_process_exit_codes_and_debug(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    cmd = [sys.executable, "-m", "mechaudit.cli"]
    missing = str(tmp_path / "nope.jsonl")
    proc = subprocess.run(cmd + ["fit-tau", "--pairs", missing], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr == f"mechaudit: error: {missing}: No such file or directory\n"
    proc = subprocess.run(
        cmd + ["--debug", "fit-tau", "--pairs", missing], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 1 and "Traceback" in proc.stderr and "FileNotFoundError" in proc.stderr
    proc = subprocess.run(
        cmd + ["fit-tau", "--method", "magic", "--pairs", missing], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 2 and "invalid choice" in proc.stderr  # usage errors stay 2


def test_divergence_matrix_takes_a_rule_object_or_its_same():
    from mechaudit.divergence import divergence_matrix
    from mechaudit.workflow import toy

    class Exact:
        def same(self, pairs):
            return toy.same_exact(pairs)

    runs = toy.toy_design(n_openings=4, n_runs=3, seed=1)
    D = divergence_matrix(runs, Exact())
    assert D.shape == (6, 6) and D.any() and (D == divergence_matrix(runs, toy.same_exact)).all()


def test_warning_style_prints_own_warnings_once_and_passes_others_on(monkeypatch, capsys):
    import warnings

    from mechaudit import errors
    from mechaudit.errors import use_warning_style
    from mechaudit.llm.cache import CacheRecoveryWarning

    # "once per process": a test that ran earlier in this process may have shown the same text
    monkeypatch.setattr(errors, "_SHOWN", set())
    seen = []
    monkeypatch.setattr(warnings, "showwarning", lambda *args: seen.append(str(args[0])))
    use_warning_style()
    installed = warnings.showwarning
    use_warning_style()  # a second chapter set-up in the same kernel does not wrap it again
    assert warnings.showwarning is installed
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        for _ in range(3):
            warnings.warn("torn   line\n in cache.jsonl", CacheRecoveryWarning, stacklevel=1)
        warnings.warn("some library's own", UserWarning, stacklevel=1)
    assert capsys.readouterr().err.count("mechaudit: warning: torn line in cache.jsonl\n") == 1
    assert seen == ["some library's own"]  # handed to the hook that was there before


def test_describe_writes_each_kind_of_failure_on_one_line():
    from mechaudit.errors import describe

    assert describe(ValueError("a bad\n  value")) == "a bad value"
    assert describe(ValueError("one line")) == "one line"
    assert describe(ConnectionError("reset by peer")) == "ConnectionError: reset by peer"  # an OSError without file
    assert describe(KeyError("k")) == "KeyError: 'k' (run with --debug for the traceback)"


def test_the_warning_style_hands_other_warnings_on_and_shows_its_own_once(monkeypatch, capsys):
    import warnings as w

    from mechaudit import errors

    seen = []
    monkeypatch.setattr(w, "showwarning", lambda *args: seen.append(args))
    monkeypatch.setattr(errors, "_SHOWN", set())
    errors.use_warning_style()
    styled = w.showwarning
    errors.use_warning_style()  # a second call keeps the one style, not a second layer
    assert w.showwarning is styled and styled.mechaudit_style
    styled("other", UserWarning, "f.py", 3)
    assert seen == [("other", UserWarning, "f.py", 3, None, None)]

    class Own(Warning):
        __module__ = "mechaudit.llm.cache"

    styled("torn\n line", Own, "f.py", 3)
    styled("torn line", Own, "f.py", 4)
    assert capsys.readouterr().err == "mechaudit: warning: torn line\n" and errors._SHOWN == {"torn line"}


def test_check_range_names_the_bounds_it_was_given_and_where_the_value_is(tmp_path):
    from mechaudit.errors import check_range

    with pytest.raises(MechauditError) as info:
        check_range(5, "runs", high=3)
    assert str(info.value) == "field 'runs': must be a number in [-inf, 3], got 5"
    with pytest.raises(MechauditError) as info:
        check_range(-1, "runs", low=0, integer=True)
    assert str(info.value) == "field 'runs': must be an integer in [0, inf], got -1"
    with pytest.raises(MechauditError) as info:
        check_range("a", "runs", where=tmp_path / "p.yaml", line=7)
    err = info.value
    assert str(err) == f"{tmp_path / 'p.yaml'}:7: field 'runs': must be a number, got 'a'"
    assert (err.file, err.line, err.field, err.message) == (str(tmp_path / "p.yaml"), 7, "runs",
                                                            "must be a number, got 'a'")
    check_range(3, "runs", low=0, high=3, integer=True)  # the bounds are inside


def test_an_error_keeps_its_file_as_text_and_a_warning_names_file_line_and_field(tmp_path):
    import io

    from mechaudit.errors import warn

    assert MechauditError("bad", file=tmp_path / "a.yaml").file == str(tmp_path / "a.yaml")
    assert MechauditError("bad").file is None
    stream = io.StringIO()
    warn("unusual", file="a.yaml", line=4, field="seed", stream=stream)
    assert stream.getvalue() == "mechaudit: warning: a.yaml:4: field 'seed': unusual\n"
