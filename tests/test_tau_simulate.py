"""The synthetic pool, the synthetic stories and the simulated judge (:mod:`mechaudit.tau.simulate`) against
the generative model of its docstring: texts, ids, clipping, the judge's answer probabilities (on fixed
draws), its strengths and its content seeds; and the blind cards' list fields and cut."""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pytest

from mechaudit.tau import ROLES, SimulatedJudge, build_paper_card, make_pool, make_story, sample_pairs, simulate_pairs
from mechaudit.tau.cards import ELLIPSIS, FIELD_CAPS, Card
from mechaudit.tau.simulate import _CLAIMS, perception_draw, simulate_judgements


class FixedDraws:
    """An rng stand-in: ``random`` gives n evenly spaced u in (0, 1), so the share of answers below a
    threshold is that threshold to 1/n; ``standard_normal`` gives ``normal`` everywhere."""

    def __init__(self, normal: float = 0.0):
        self.normal = normal

    def random(self, shape):
        n = int(np.prod(shape))
        return ((np.arange(n) + 0.5) / n).reshape(shape)

    def standard_normal(self, shape):
        return np.full(shape, self.normal)


def shares(judgement) -> dict[str, float]:
    return {k: float(np.mean(judgement == k)) for k in ("better", "tie", "worse")}


def expit(x: float) -> float:
    return 1 / (1 + np.exp(-x))


N = 2000


def test_calibrated_judge_answers_with_p_minus_half_the_tie_share():
    # gap 0.5, tau 1: p = expit(0.5); t = 0.3 exp(-0.25), below its cap 2 (1 - p)
    p, t = expit(0.5), 0.3 * np.exp(-0.25)
    got = shares(simulate_judgements(np.full(N, 0.5), 1.0, FixedDraws(), tie_rate=0.3, tie_width=1.0)[0])
    assert got == pytest.approx({"better": p - t / 2, "tie": t, "worse": 1 - p - t / 2}, abs=1 / N)


def test_calibrated_tie_share_is_capped_at_twice_the_smaller_side():
    # gap -3: p = expit(-3) ~ 0.047; a tie probability near 0.9 is cut to 2p, so nothing is "better"
    p = expit(-3.0)
    got = shares(simulate_judgements(np.full(N, -3.0), 1.0, FixedDraws(), tie_rate=0.9, tie_width=100.0)[0])
    assert got == pytest.approx({"better": 0.0, "tie": 2 * p, "worse": 1 - 2 * p}, abs=1 / N)


def test_abstaining_judge_decides_with_p_when_it_does_not_tie():
    p, t = expit(0.5), 0.6 * np.exp(-0.25)
    got = shares(simulate_judgements(np.full(N, 0.5), 1.0, FixedDraws(), tie_rate=0.6, tie_width=1.0,
                                     tie_mode="abstain")[0])
    assert got == pytest.approx({"better": (1 - t) * p, "tie": t, "worse": (1 - t) * (1 - p)}, abs=1 / N)


def test_defaults_tie_30_percent_of_equal_pairs_and_no_tie_width_means_no_ties():
    assert shares(simulate_judgements(np.zeros(N), 1.0, FixedDraws())[0]) == pytest.approx(
        {"better": 0.35, "tie": 0.3, "worse": 0.35}, abs=1 / N)
    assert shares(simulate_judgements(np.zeros(N), 1.0, FixedDraws(), tie_width=0.0)[0]) == pytest.approx(
        {"better": 0.5, "tie": 0.0, "worse": 0.5}, abs=1 / N)


@pytest.mark.parametrize(("gap", "normal", "strength"), [
    (0.4, 1.0, "medium"),   # z = 0.4 + 0.3 = 0.7
    (0.4, -1.0, "weak"),    # z = 0.4 - 0.3 = 0.1
    (1.4, 1.0, "strong"),   # z = 1.7
    (-1.4, -1.0, "medium"),  # |gap| before the noise: z = 1.1
])
def test_strength_is_the_gap_over_tau_plus_its_noise(gap, normal, strength):
    _, got = simulate_judgements(np.array([gap]), 1.0, FixedDraws(normal), strength_noise=0.3)
    assert list(got) == [strength]


def test_simulated_judge_refuses_a_non_positive_tau():
    with pytest.raises(ValueError, match=r"^the simulated judge needs tau > 0, got 0$"):
        simulate_judgements(np.zeros(2), 0, FixedDraws())


def test_compare_draws_from_the_judges_seed_role_and_cards():
    story, a1, a2 = (Card(problem=f"problem {k}", method="m", contrib="c") for k in range(3))
    truth = {story.key: {r: 6.0 for r in ROLES}, a1.key: {r: 5.0 for r in ROLES}, a2.key: {r: 7.5 for r in ROLES}}
    judge = SimulatedJudge(truth, seed=4, tie_rate=0.2, tie_width=0.5, strength_noise=0.1)
    judgement, strength, gap = judge.compare("Novelty", story, [a1, a2])
    assert list(gap) == [1.0, -1.5]
    digest = hashlib.sha256("\x1f".join(["4", "Novelty", story.key, a1.key, a2.key]).encode("utf-8")).hexdigest()
    rng = np.random.default_rng(int(digest[:15], 16))
    expected = simulate_judgements(np.array([1.0, -1.5]), 1.2, rng, 0.2, 0.5, "calibrated", 0.1)
    assert [list(judgement), list(strength)] == [list(expected[0]), list(expected[1])]
    digest = hashlib.sha256("\x1f".join(["7", "Storyteller", "abc"]).encode("utf-8")).hexdigest()
    assert perception_draw(7, "Storyteller", "abc") == np.random.default_rng(int(digest[:15], 16)).standard_normal()


def test_pool_ids_titles_patterns_and_its_default_pattern_count():
    pool = make_pool(papers_per_pattern=1, seed=0)
    assert [p["pattern_id"] for p in pool.papers] == [f"pattern_{k:02d}" for k in range(1, 9)]
    assert [p["paper_id"] for p in pool.papers] == [f"P{k:04d}" for k in range(1, 9)]
    assert [p["title"] for p in pool.papers] == [f"Synthetic study {k}" for k in range(1, 9)]
    assert pool.exemplars == {p["pattern_id"]: [p["paper_id"]] for p in pool.papers}


def test_latent_quality_is_clipped_to_1_5_and_9_8():
    low = make_pool(n_patterns=1, papers_per_pattern=5, pool_mean=-40.0, seed=0)
    high = make_pool(n_patterns=1, papers_per_pattern=5, pool_mean=40.0, seed=0)
    assert [p["quality"] for p in low.papers] == [1.5] * 5
    assert [p["quality"] for p in high.papers] == [9.8] * 5


def test_contributions_are_two_template_claims_with_one_number_from_3_to_59():
    pool = make_pool(n_patterns=2, papers_per_pattern=20, seed=5)
    numbered = 0
    for p in pool.papers:
        first, second = p["contrib"].removesuffix(".").split("; ")
        assert first != second and p["contrib"].endswith(".")
        for part in (first, second):
            assert any(re.fullmatch(re.escape(c).replace(re.escape("{n}"), r"\d+"), part) for c in _CLAIMS), part
        numbers = set(re.findall(r"\d+", p["contrib"]))
        assert len(numbers) <= 1 and all(3 <= int(n) < 60 for n in numbers)
        numbered += bool(numbers)
    assert numbered > 20


def test_story_fields_title_truth_and_default_seed():
    story, truth = make_story(6.5)
    assert (story, truth) == make_story(6.5, seed=0)
    assert list(story) == ["title", "abstract", "problem_framing", "method_skeleton", "innovation_claims",
                           "experiments_plan"]
    assert story["title"] == "Synthetic story 0"
    assert story["abstract"] == story["problem_framing"] + " " + story["method_skeleton"]
    assert story["experiments_plan"] == "Compare against two baselines."
    assert re.fullmatch(r"[^;]+; [^;]+\.", story["innovation_claims"])
    card = build_paper_card({"problem": story["problem_framing"], "method": story["method_skeleton"],
                             "contrib": story["innovation_claims"]})
    assert truth == {card.key: {r: 6.5 for r in ROLES}}
    assert make_story(6.5, seed=1)[0]["title"] == "Synthetic story 1"


def test_simulate_pairs_default_seed_and_an_empty_perception():
    pool = make_pool(n_patterns=2, papers_per_pattern=8, seed=2)
    pairs = sample_pairs(pool.table(), 20, seed=1)
    assert simulate_pairs(pairs, 0.8).equals(simulate_pairs(pairs, 0.8, seed=0))
    assert not simulate_pairs(pairs, 0.8).equals(simulate_pairs(pairs, 0.8, seed=1))
    first = pairs["a"].iloc[0]
    with pytest.raises(KeyError, match=rf"pair 0: no perceived value for paper '{first}'"):
        simulate_pairs(pairs, 0.8, perceived={})


def test_card_joins_a_list_field_and_cuts_before_trailing_spaces():
    card = build_paper_card({"problem": "p", "method": "m", "contrib": ["first claim", "second claim"]})
    assert card.contrib == "first claim; second claim"
    cap = FIELD_CAPS["method"]
    long = "a" * (cap - 2) + " " + "b" * 10  # the cut keeps cap - 1 characters, the last a space
    assert build_paper_card({"problem": "p", "method": long, "contrib": "c"}).method == "a" * (cap - 2) + ELLIPSIS
