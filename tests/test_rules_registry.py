"""The rule registry (``rules.build``), the mechanism-key rule and its fast divergence path, and rule
objects (never a ``None`` stand-in) through the critique-depth analyses."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import mechaudit.workflow
from mechaudit import rules
from mechaudit.cli import main
from mechaudit.divergence import divergence_matrix
from mechaudit.errors import MechauditError
from mechaudit.schema import Hypothesis, Step
from mechaudit.workflow import build_rules, instance_matrices


def hyp(hid: str, ids: list[str], opening: str = "o1") -> Hypothesis:
    return Hypothesis(id=hid, instance="I1", statement=f"{ids[0]} drives {ids[-1]}.",
                      explanation=" then ".join(ids) + ".", chain=[Step(id=i, text=i.lower()) for i in ids],
                      opening_id=opening)


def test_build_makes_each_registered_rule_with_its_config():
    assert rules.NAMES == ("mechanism_key", "reference", "tfidf", "embedding", "llm", "paper_rates")
    tfidf = rules.build("tfidf", threshold=0.3, fit_on="pair")
    assert type(tfidf) is rules.TfidfRule and tfidf.threshold == 0.3 and tfidf.fit_on == "pair"
    judge = rules.build("reference", rubric="none", jaccard_threshold=0.6)
    assert type(judge) is rules.ReferenceJudge and (judge.rubric, judge.jaccard_threshold) == ("none", 0.6)
    assert type(rules.build("mechanism_key")) is rules.MechanismKeyRule
    emb = rules.build("embedding", threshold="match_rate")
    assert type(emb) is rules.EmbeddingRule and emb.threshold == "match_rate"
    llm = rules.build("llm", rubric="step", client=object())
    assert type(llm) is rules.LLMJudge and llm.rubric == "step"


def test_build_errors_name_the_valid_choices():
    with pytest.raises(MechauditError, match="^field 'rule': unknown rule 'tfdif'; choose one of mechanism_key, "
                                             "reference, tfidf, embedding, llm"):
        rules.build("tfdif")
    with pytest.raises(MechauditError, match="field 'thresold': rule 'tfidf' takes no parameter 'thresold'; "
                                             "its parameters: threshold, fit_on"):
        rules.build("tfidf", thresold=0.3)
    with pytest.raises(MechauditError, match="'mechanism_key' takes no parameter 'rubric'; its parameters: none"):
        rules.build("mechanism_key", rubric="full")
    with pytest.raises(ValueError, match="threshold"):  # values are the constructor's to check
        rules.build("tfidf", threshold=2)
    with pytest.raises(MechauditError, match="unknown rule 'cosine'"):
        build_rules(["tfidf", "cosine"])


def test_build_rules_goes_through_the_registry():
    out = build_rules(["mechanism_key", "reference", "tfidf", "embedding"], tfidf_threshold=0.4,
                      embedding_threshold=0.8)
    assert list(out) == ["mechanism_key", "reference", "tfidf", "embedding"]
    assert [type(r).__name__ for r in out.values()] == ["MechanismKeyRule", "ReferenceJudge", "TfidfRule",
                                                        "EmbeddingRule"]
    assert out["tfidf"].threshold == 0.4 and out["embedding"].threshold == 0.8
    assert out["reference"].rubric == "full"
    assert mechaudit.workflow.MechanismKeyRule is rules.MechanismKeyRule
    assert mechaudit.workflow.RULE_NAMES == rules.NAMES


def test_mechanism_key_fast_path_equals_pairwise_divergence():
    a, b, c = ["KRAS", "MEK", "ERK"], ["EGFR", "MEK", "ERK"], ["KRAS", "PI3K", "ERK"]
    runs = [
        [hyp("r0a", a), hyp("r0b", b, "o2")],
        [hyp("r1a", a), hyp("r1b", c, "o2"), hyp("r1c", b, "o2")],
        [hyp("r2a", c), hyp("r2b", b, "o2")],
    ]
    rule = rules.MechanismKeyRule()
    fast = rule.divergence_matrix(runs)
    np.testing.assert_allclose(fast, divergence_matrix(runs, rule.same), atol=1e-12)
    # by hand: runs 0 and 1 match 1 + 2 pairs, of which 1 + 1 are the same -> 1 - 2/3
    assert fast[0, 1] == pytest.approx(1 / 3) and fast[0, 2] == pytest.approx(0.5) and fast[1, 1] == 0.0
    assert rule.same([(runs[0][0], runs[1][0]), (runs[0][0], runs[2][0])]).tolist() == [True, False]
    with pytest.raises(ValueError, match="pairs"):
        rule.same([runs[0][0]])


def test_analyses_take_rule_objects_and_refuse_none():
    runs = mechaudit.workflow.simulate(
        mechaudit.load_benchmark(), mechaudit.workflow.Design(instances=("A",), depths=(0, 1), runs_per_depth=3),
        mechaudit.workflow.load_simulator_params(), seed=1)
    fast = instance_matrices(runs, rules.MechanismKeyRule())
    slow = instance_matrices(runs, rules.MechanismKeyRule().same)
    np.testing.assert_allclose(fast[0].D, slow[0].D, atol=1e-12)
    with pytest.raises(MechauditError, match="a rule is None: pass a rule object.*MechanismKeyRule"):
        instance_matrices(runs, None)


def test_cli_builds_through_the_registry(tmp_path, capsys):
    path = tmp_path / "pairs.jsonl"
    a, b = hyp("a", ["KRAS", "MEK", "ERK"]), hyp("b", ["KRAS", "MEK", "ERK"])
    path.write_text(json.dumps({"a": a.model_dump(mode="json"), "b": b.model_dump(mode="json")}) + "\n")
    assert main(["judge", "--pairs", str(path), "--rule", "mechanism_key", "--quiet"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["same"] is True and verdict["rule"] == "mechanism_key" and verdict["backend"] == "reference"


def test_one_rule_imports_alone():
    code = ("import sys, mechaudit.rules, mechaudit.rules.mechanism_key; "
            "print(sorted({'sklearn', 'torch', 'mechaudit.llm', 'mechaudit.rules.tfidf'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"


def test_each_rule_shows_its_settings():
    assert repr(rules.MechanismKeyRule()) == "MechanismKeyRule()"
    assert repr(rules.ReferenceJudge("none")) == "ReferenceJudge(rubric='none', jaccard_threshold=0.5)"
    assert repr(rules.ReferenceJudge("full")) == "ReferenceJudge(rubric='full')"
    assert repr(rules.TfidfRule()) == "TfidfRule(threshold=0.25, fit_on='compared')"
    assert repr(rules.TfidfRule(fit_on=["a b", "c d", "e"])) == "TfidfRule(threshold=0.25, fit_on=<corpus of 3>)"
    assert repr(rules.EmbeddingRule()) == "EmbeddingRule(model='default all-MiniLM-L6-v2', threshold=0.77)"
    assert repr(rules.EmbeddingRule(model="org/m", threshold=0.5)) == "EmbeddingRule(model='org/m', threshold=0.5)"


def test_a_missing_embedding_package_is_named_with_the_extra_to_install():
    from mechaudit.rules.embedding import _missing_extra

    err = _missing_extra(ModuleNotFoundError("No module named 'torch'", name="torch"))
    assert isinstance(err, MechauditError)
    assert str(err) == ("field 'rule': the embedding rule needs the optional embedding packages (torch is missing): "
                        "pip install 'mechaudit[embeddings]' (for a CPU-only torch see the README)")
