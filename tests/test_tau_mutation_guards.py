"""Tau behaviours that survived the mutation run (``make mutation``) after fidelity-tau's tests: the
standard error of a weakly informed fit, the strict comparison messages, the prompt guard naming
where a forbidden term was found, the judge's prompts word for word and what it passes to the LLM
client, and score inference's input checks, diagnostics and tie order."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mechaudit.errors import MechauditError
from mechaudit.llm import BlindnessError
from mechaudit.tau import fit_tau_detailed, score_grid
from mechaudit.tau.inference import observations, unrecognised
from mechaudit.tau.judge import build_prompt


def test_standard_error_of_a_fit_with_little_information_is_finite():
    """Four light pairs: the observed information is below 1 but positive, so the standard error
    is 1 / sqrt(information), computed here by finite differences of the weighted likelihood."""
    delta, y, w = np.array([0.5, -0.4, 1.0, 0.2]), np.array([1.0, 0.0, 1.0, 0.0]), np.full(4, 0.04)
    pairs = pd.DataFrame({"delta": delta, "y": y, "strength": "weak", "weight": w})
    fit = fit_tau_detailed(pairs, method="mle")

    def nll(tau: float) -> float:
        p = 1 / (1 + np.exp(-delta / tau))
        return float(-np.sum(w * (y * np.log(p) + (1 - y) * np.log(1 - p))))

    step = 1e-4
    info = (nll(fit.tau + step) - 2 * nll(fit.tau) + nll(fit.tau - step)) / step**2
    assert 0 < info < 1
    assert fit.se == pytest.approx(1 / np.sqrt(info), rel=1e-3)


def test_strict_observations_name_the_bad_judgement_and_what_is_expected():
    anchors = [{"anchor_id": "A1", "score10": 6.0}]
    with pytest.raises(MechauditError, match=r"comparisons\[0\]\.judgement': 'maybe' is not better, tie or worse "
                                             r"\(strict=False counts it as a tie\)"):
        observations(anchors, [{"anchor_id": "A1", "judgement": "maybe", "strength": "weak"}])


def test_prompt_guard_names_the_role_and_the_prompt_that_leaked():
    from mechaudit.tau.cards import Card

    leaky = Card(problem="its score is high", method="m", contrib="c")
    with pytest.raises(BlindnessError, match="found in the Novelty user prompt; the prompt was not sent"):
        build_prompt("Novelty", leaky, [leaky])


def test_a_fit_stopped_at_the_lower_bound_with_negative_curvature_has_no_standard_errors():
    """Two pairs answered exactly by the sign of tiny score gaps: the likelihood still rises at the
    lower bound (its curvature there is negative), so neither standard error exists."""
    delta = np.array([0.01, -0.01])
    pairs = pd.DataFrame({"delta": delta, "y": [1.0, 0.0], "strength": "weak", "weight": 1.0})
    fit = fit_tau_detailed(pairs, method="mle")
    assert fit.at_bound and fit.tau == pytest.approx(0.1, abs=1e-6)
    assert np.isnan(fit.se) and np.isnan(fit.se_robust)


@pytest.mark.parametrize("field", ["score10", "weight"])
def test_a_non_numeric_anchor_value_is_named_by_its_field(field):
    anchors = [{"anchor_id": "A1", "score10": 6.0, "weight": 1.0}, {"anchor_id": "A2", field: "high"}]
    with pytest.raises(MechauditError) as err:
        observations(anchors, [])
    assert err.value.field == f"anchors[1].{field}" and "must be a number, got 'high'" in str(err.value)


# --------------------------------------------------------------------------- the blind judge's prompts and calls

_INSTRUCTIONS = (
    "You are the Novelty reviewer in a blind comparison of research ideas. You see short cards with three "
    "fields: problem, method, contribution. Judge only what the cards say; ignore their length and style of "
    "formatting.\nCriterion (Novelty): {rubric}\nFor every comparison give a judgement (better, tie or worse: "
    "is the CANDIDATE better than, level with, or worse than the reference on this criterion), a strength "
    "(weak, medium or strong) and a rationale of at most 25 words. Never mention names, sources or numeric "
    "ratings in a rationale. Reply with one JSON object and nothing else.")


def _card(tag: str):
    from mechaudit.tau.cards import Card

    return Card(problem=f"problem {tag}", method=f"method {tag}", contrib=f"contribution {tag}")


def test_role_prompts_are_pinned_word_for_word():
    """The prompts are part of every cached answer's key: any edit re-asks (and re-pays) every call."""
    from mechaudit.tau import RUBRIC_VERSION, get_rubric

    system, user = build_prompt("Novelty", _card("s"), [_card("a"), _card("b")])
    instructions = _INSTRUCTIONS.format(rubric=get_rubric("Novelty"))
    assert system == (
        instructions + "\nJSON format, one entry per reference card A1..A2:\n"
        '{"rubric_version": "' + RUBRIC_VERSION + '", "comparisons": [{"anchor_id": "A1", "judgement": '
        '"better|tie|worse", "strength": "weak|medium|strong", "rationale": "at most 25 words"}]}')
    assert user == ("CANDIDATE\nProblem: problem s\nMethod: method s\nContribution: contribution s\n\n"
                    "REFERENCE A1\nProblem: problem a\nMethod: method a\nContribution: contribution a\n\n"
                    "REFERENCE A2\nProblem: problem b\nMethod: method b\nContribution: contribution b")
    from mechaudit.tau.judge import build_pair_prompt

    pair_system, pair_user = build_pair_prompt("Novelty", _card("x"), _card("y"))
    assert pair_system == (
        instructions + '\nJSON format:\n{"rubric_version": "' + RUBRIC_VERSION + '", "judgement": '
        '"better|tie|worse", "strength": "weak|medium|strong", "rationale": "at most 25 words"}')
    assert pair_user == ("CANDIDATE\nProblem: problem x\nMethod: method x\nContribution: contribution x\n\n"
                         "REFERENCE\nProblem: problem y\nMethod: method y\nContribution: contribution y")


def test_prompt_guards_name_the_prompt_a_leaking_rubric_or_card_reached(monkeypatch):
    from mechaudit.tau import judge

    leaky = _card("s").model_copy(update={"method": "the title says it all"})  # render() reads the new field
    with pytest.raises(BlindnessError, match="^forbidden term 'title' found in the Novelty user prompt; "):
        judge.build_pair_prompt("Novelty", _card("x"), leaky)
    monkeypatch.setattr(judge, "get_rubric", lambda role: "prefer the higher score")
    for build in (lambda: judge.build_prompt("Novelty", _card("s"), [_card("a")]),
                  lambda: judge.build_pair_prompt("Novelty", _card("x"), _card("y"))):
        with pytest.raises(BlindnessError, match="^forbidden term 'score' found in the Novelty system prompt; "):
            build()


def test_rationale_limit_and_forbidden_term_messages():
    from mechaudit.tau.judge import valid_rationale

    assert valid_rationale("w " * 25) == "w " * 25  # 25 words: at the limit
    with pytest.raises(ValueError, match="^rationale has 26 words; at most 25$"):
        valid_rationale("w " * 26)
    with pytest.raises(ValueError) as caught:
        valid_rationale("a higher score")
    assert str(caught.value) == ("the rationale contains the forbidden term 'score'; rationales must not mention "
                                 "identifiers, titles, links or ratings")


def test_reply_schemas_drop_every_string_title_and_keep_a_field_named_title():
    from typing import Literal

    from mechaudit.tau.judge import BlindModel, judge_schema

    class Note(BlindModel):
        title: str
        tags: list[Literal["a", "b"]] | None = None

    assert Note.model_json_schema() == {
        "additionalProperties": False, "type": "object", "required": ["title"],
        "properties": {"title": {"type": "string"},
                       "tags": {"anyOf": [{"items": {"enum": ["a", "b"], "type": "string"}, "type": "array"},
                                          {"type": "null"}], "default": None}}}
    # the keyword and positional arguments of pydantic's model_json_schema still apply
    by_keyword = judge_schema(1).model_json_schema(ref_template="#/components/{model}")
    assert by_keyword["properties"]["comparisons"]["items"] == {"$ref": "#/components/Comparison"}
    by_position = judge_schema(1).model_json_schema(True, "#/c/{model}")
    assert by_position["properties"]["comparisons"]["items"] == {"$ref": "#/c/Comparison"}


def test_judge_request_carries_every_setting():
    from mechaudit.tau.judge import judge_request

    request = judge_request("sys", "usr", "v9", model="m-1", temperature=0.5, max_tokens=7)
    assert (request.model, request.system, request.temperature, request.max_tokens, request.version) == (
        "m-1", "sys", 0.5, 7, "v9")
    assert [(m.role, m.text()) for m in request.messages] == [("user", "usr")]


class _StubClient:
    """An LLM client reduced to ``complete_many``: records each call's arguments and answers
    ``replies`` (one dict or None = invalid per request, in order)."""

    def __init__(self, replies):
        from mechaudit.backends import Backend

        self.backend, self.replies, self.calls = Backend.ANTHROPIC, replies, []

    def complete_many(self, requests, schema=None, progress=False, **kw):
        from mechaudit.llm.jsonout import JSONResult

        self.calls.append({"requests": list(requests), "schema": schema, **kw})
        return [JSONResult(value=None, invalid=True, error="still not JSON", response=None, attempts=3)
                if r is None else JSONResult(value=schema.model_validate(r), invalid=False, error=None,
                                             response=None, attempts=1)
                for r in self.replies[:len(requests)]]


def test_judge_pairs_sends_the_pair_requests_leniently_and_keeps_judgement_and_strength():
    from mechaudit.tau import RUBRIC_VERSION
    from mechaudit.tau.judge import BlindJudge, PairReply, pair_requests

    answer = {"rubric_version": RUBRIC_VERSION, "judgement": "worse", "strength": "strong", "rationale": "thin"}
    client = _StubClient([answer, None])
    judge = BlindJudge(client=client, model="m-2", json_retries=0, strict=True, temperature=0.25, max_tokens=64)
    pairs = [(_card("x"), _card("y")), (_card("y"), _card("x"))]
    assert judge.judge_pairs("Novelty", pairs) == [{"judgement": "worse", "strength": "strong"}, None]
    (call,) = client.calls
    assert call["schema"] is PairReply and call["json_retries"] == 0 and call["strict"] is False
    assert [r.key for r in call["requests"]] == [r.key for r in pair_requests("Novelty", pairs, "m-2", 0.25, 64)]


def test_judge_roles_passes_the_judges_settings_and_keeps_error_backend_and_prompt():
    from mechaudit.backends import Backend
    from mechaudit.tau import RUBRIC_VERSION
    from mechaudit.tau.judge import BlindJudge, judge_schema

    good = {"rubric_version": RUBRIC_VERSION,
            "comparisons": [{"anchor_id": "A1", "judgement": "tie", "strength": "weak", "rationale": "alike"}]}
    client = _StubClient([good, None])
    judge = BlindJudge(client=client, model="m-3", json_retries=1, strict=False, temperature=0.5, max_tokens=33)
    story, anchors = _card("s"), [_card("a")]
    first, second = judge.judge_roles(["Novelty", "Methodology"], story, anchors)
    (call,) = client.calls
    assert call["schema"] is judge_schema(1) and call["json_retries"] == 1 and call["strict"] is False
    request = call["requests"][0]
    assert (request.model, request.temperature, request.max_tokens) == ("m-3", 0.5, 33)
    assert first.comparisons == good["comparisons"] and first.backend == Backend.ANTHROPIC
    assert first.prompt == build_prompt("Novelty", story, anchors) and not first.invalid
    assert second.invalid and second.comparisons == [] and second.error == "still not JSON"
    assert second.attempts == 3 and second.prompt == build_prompt("Methodology", story, anchors)


def test_offline_judge_checks_its_prompt_keeps_it_and_answers_only_judgement_and_strength():
    from mechaudit.backends import Backend
    from mechaudit.tau import ROLES, BlindJudge, SimulatedJudge, make_pool
    from mechaudit.tau.cards import Card, build_paper_card

    pool = make_pool(seed=0)
    judge = BlindJudge(simulator=SimulatedJudge(pool.truth()))
    cards = [build_paper_card(p) for p in pool.papers[:3]]
    outcome = judge.judge(ROLES[0], cards[0], cards[1:])
    assert outcome.prompt == build_prompt(ROLES[0], cards[0], cards[1:]) and outcome.backend == Backend.REFERENCE
    leaky = Card(problem=cards[0].problem, method="the title says it all", contrib=cards[0].contrib)
    with pytest.raises(BlindnessError, match="user prompt"):
        judge.judge(ROLES[0], leaky, cards[1:])
    answers = judge.judge_pairs(ROLES[0], [(cards[0], cards[1]), (cards[2], cards[0])])
    assert [set(a) for a in answers] == [{"judgement", "strength"}] * 2


def test_a_judge_with_neither_or_both_backends_names_what_it_takes():
    from mechaudit.tau.judge import BlindJudge

    with pytest.raises(ValueError) as caught:
        BlindJudge()
    assert str(caught.value) == ("BlindJudge needs exactly one of client (an LLM client) or simulator "
                                 "(mechaudit.tau.simulate.SimulatedJudge)")


def test_judge_sampled_pairs_adds_judgement_and_strength_and_drops_invalid_pairs():
    from mechaudit.tau.judge import judge_sampled_pairs

    class Answers:
        def judge_pairs(self, role, cards):
            assert role == "Novelty" and len(cards) == 3
            return [{"judgement": "better", "strength": "weak"}, None, {"judgement": "tie", "strength": "strong"}]

    papers = {p: {"problem": f"problem {p}", "method": "m", "contrib": "c"} for p in ("p", "q", "r")}
    pairs = pd.DataFrame({"a": ["p", "q", "r"], "b": ["q", "r", "p"], "delta": [1.0, 2.0, 3.0]})
    judged = judge_sampled_pairs(pairs, papers, Answers(), "Novelty")
    expected = pd.DataFrame({"a": ["p", "r"], "b": ["q", "p"], "delta": [1.0, 3.0],
                             "judgement": ["better", "tie"], "strength": ["weak", "strong"]})
    pd.testing.assert_frame_equal(judged, expected)


# ---------------------------------------------------------------- score inference: inputs, messages, diagnostics

_ANCHORS = [{"anchor_id": "X7", "score10": 3.0}, {"score10": 7.0}]  # the second anchor's id is A2


def test_inference_is_strict_by_default():
    from mechaudit.tau import infer_score

    bad = [{"anchor_id": "X7", "judgement": "beter", "strength": "weak"}]
    with pytest.raises(MechauditError, match=r"comparisons\[0\]\.judgement"):
        infer_score(_ANCHORS, bad, 1.0)
    score, diag = infer_score(_ANCHORS, bad, 1.0, strict=False)
    assert diag["n_unrecognised_judgements"] == 1


def test_strict_messages_name_the_field_the_value_and_what_is_expected():
    with pytest.raises(MechauditError) as caught:
        observations(_ANCHORS, [{"anchor_id": "A9", "judgement": "tie"}])
    assert caught.value.field == "comparisons[0].anchor_id"
    assert "'A9' is not one of the anchors' ids X7, A2 (strict=False counts it as ignored)" in str(caught.value)
    with pytest.raises(MechauditError) as caught:
        observations(_ANCHORS, [{"anchor_id": "A2", "judgement": "tie"}, {"anchor_id": "X7", "judgement": "maybe"}])
    assert caught.value.field == "comparisons[1].judgement"
    assert "'maybe' is not better, tie or worse (strict=False counts it as a tie)" in str(caught.value)
    with pytest.raises(MechauditError) as caught:
        observations(_ANCHORS, [{"anchor_id": "A2", "judgement": "tie", "strength": "huge"}])
    assert caught.value.field == "comparisons[0].strength"
    assert "'huge' is not weak, medium or strong (strict=False counts it as weight 1)" in str(caught.value)


@pytest.mark.parametrize(("anchors", "comparisons", "field"), [
    ([5], [], "anchors[0]"),
    ([{"score10": 5.0}], [{"anchor_id": "A1"}, "better"], "comparisons[1]"),
])
def test_an_item_that_is_not_a_mapping_is_named(anchors, comparisons, field):
    with pytest.raises(MechauditError) as caught:
        observations(anchors, comparisons)
    assert caught.value.field == field
    bad = (anchors + comparisons)[-1]
    assert f"must be a mapping (JSON object), got {bad!r}" in str(caught.value)


def test_observations_align_by_the_anchors_own_ids_and_default_ones():
    comparisons = [{"anchor_id": "A2", "judgement": "worse"},
                   {"anchor_id": "X7", "judgement": "better", "strength": "strong"}]
    score10, y, sw, aw = observations(_ANCHORS, comparisons)
    assert score10.tolist() == [3.0, 7.0] and y.tolist() == [1.0, 0.0]
    assert sw.tolist() == [3.0, 1.0] and aw.tolist() == [1.0, 1.0]


def test_lenient_inference_counts_each_kind_of_unrecognised_comparison():
    from mechaudit.tau import infer_score

    comparisons = [{"anchor_id": "X7", "judgement": "better", "strength": "vast"},  # own id: known
                   {"anchor_id": "A2", "judgement": "??", "strength": "huge"},
                   {"anchor_id": "A1", "judgement": "nope", "strength": "tiny"},  # A1 is X7's, not a default
                   {"anchor_id": "A3", "judgement": "tie"}]
    assert unrecognised(comparisons, ["X7", "A2"]) == {"unknown_anchor_id": [2, 3], "judgement": [1, 2],
                                                       "strength": [0, 1, 2]}
    scored = [{"anchor_id": "X7", "judgement": "better", "strength": "vast"},  # the first anchor's own id
              {"anchor_id": "A2", "judgement": "??", "strength": "huge"},  # the second's default id
              {"anchor_id": "A9", "judgement": "nope", "strength": "tiny"}]
    _, diag = infer_score(_ANCHORS, scored, 1.0, strict=False)
    assert (diag["n_unknown_anchor_ids"], diag["n_unrecognised_judgements"], diag["n_unrecognised_strengths"]) == (
        1, 2, 3)
    _, strict_diag = infer_score(_ANCHORS, [{"anchor_id": "X7", "judgement": "tie"}], 1.0)
    assert not {"n_unknown_anchor_ids", "n_unrecognised_judgements", "n_unrecognised_strengths"} & set(strict_diag)


def test_a_missing_or_null_strength_is_not_unrecognised():
    comparisons = [{"anchor_id": "A1", "judgement": "tie"}, {"anchor_id": "A1", "judgement": "tie", "strength": None},
                   {"anchor_id": "A1", "judgement": "tie", "strength": " Strong "}]
    assert unrecognised(comparisons, ["A1"]) == {"unknown_anchor_id": [], "judgement": [], "strength": []}


@pytest.mark.parametrize(("value", "label", "weight"), [
    ("better", 1.0, 1.0), (" Better\n", 1.0, 1.0), ("WORSE", 0.0, 1.0), ("tie", 0.5, 1.0), (None, 0.5, 1.0),
    ("meh", 0.5, 1.0), ("weak", 0.5, 1.0), (" Medium ", 0.5, 2.0), ("STRONG", 0.5, 3.0), (3, 0.5, 1.0),
])
def test_labels_and_strength_weights_ignore_case_and_spaces(value, label, weight):
    from mechaudit.tau.inference import label_of, strength_weight

    assert label_of(value) == label and strength_weight(value) == weight


def test_inference_refuses_no_anchors_and_non_finite_values():
    from mechaudit.tau import infer_score

    with pytest.raises(ValueError) as caught:
        infer_score([], [], 1.0)
    assert str(caught.value) == "infer_score needs at least one anchor; got none"
    message = "^anchor weights must be finite and >= 0 and score10 finite$"
    for anchors in ([{"score10": float("inf")}], [{"score10": 5.0, "weight": float("nan")}],
                    [{"score10": 5.0, "weight": -1.0}]):
        with pytest.raises(ValueError, match=message):
            infer_score(anchors, [], 1.0)


def test_kish_scale_is_total_over_sum_of_squares_and_one_without_weight():
    from mechaudit.tau.inference import kish_scale

    w = np.array([0.5, 0.25])  # sum of squares 0.3125 < 1
    assert kish_scale(w) == pytest.approx(w.sum() ** 2 / (w**2).sum() / w.sum())
    assert kish_scale(np.array([0.5, 0.5])) == 2.0
    assert kish_scale(np.zeros(3)) == 1.0


def test_monotonic_violations_keep_the_order_of_tied_scores():
    """Many tied anchor scores: the count follows a stable sort (Python's ``sorted``), as in the original."""
    from mechaudit.tau.inference import monotonic_violations

    rng = np.random.default_rng(0)
    score10, y = rng.integers(1, 4, 200).astype(float), rng.choice([0.0, 0.5, 1.0], 200)
    ys = [y[i] for i in sorted(range(200), key=lambda i: score10[i])]
    expected = sum(b > a + 0.1 for a, b in zip(ys, ys[1:]))
    assert monotonic_violations(score10, y) == expected


def test_default_grid_step_and_ten_decimals():
    from mechaudit.tau import infer_score

    grid = score_grid()
    assert len(grid) == 901 and grid[1] == 1.01
    third = score_grid(1 / 3)
    assert third[1] == 1.3333333333 and third[-1] == 10.0  # rounded to 10 decimals
    score, _ = infer_score([{"score10": 1.4}], [{"anchor_id": "A1", "judgement": "tie"}], 1.0, grid_step=1 / 3)
    assert score == 1.3333333333
