"""The simulator's model (``simulate_outcome``, ids only) and the text-level runs rendered from its events."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mechaudit.workflow import Design, MechanismKeyRule, instance_matrices, load_simulator_params, null_params, simulate
from mechaudit.workflow.depth import outcome_matrices
from mechaudit.workflow.records import LABELS, run_id
from mechaudit.workflow.simulator import instance_models, render_run, simulate_outcome, simulate_outcomes


@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize("null", [False, True])
def test_outcomes_equal_full_simulation(bench, seed, null):
    params = load_simulator_params()
    params = null_params(params) if null else params
    design = Design(instances=tuple(i.id for i in bench.instances[:2]), depths=(0, 1, 3), runs_per_depth=3)
    fast = simulate_outcomes(bench, design, params, seed=seed)
    quiet = simulate(bench, design, params, seed=seed, log=False)
    logged = simulate(bench, design, params, seed=seed, log=True)
    assert len(fast) == len(quiet) == len(logged) == design.n_runs
    for o, q, r in zip(fast, quiet, logged):
        assert (o.instance, o.depth, o.repetition) == (q.instance, q.depth, q.repetition)
        # delivered chains: identical ids, opening by opening, in both simulate modes
        for run in (q, r):
            assert o.keys == tuple((h.opening_id, tuple(s.id for s in h.chain)) for h in run.delivered)
        # label counts: the replies the logged run records
        labels = [rep.label for rep in r.replies]
        assert o.labels.tolist() == [labels.count(lab) for lab in LABELS]
    assert sum(o.labels.sum() for o in fast) > 0  # the design has critique rounds that raise demands
    for m_fast, m_full in zip(outcome_matrices(fast), instance_matrices(quiet, MechanismKeyRule())):
        assert m_fast.instance == m_full.instance
        np.testing.assert_array_equal(m_fast.depths, m_full.depths)
        np.testing.assert_allclose(m_fast.D, m_full.D, rtol=0, atol=1e-12)


def test_outcomes_change_with_seed(bench):
    """The check above must be able to fail: different seeds give different outcomes."""
    params = load_simulator_params()
    design = Design(instances=(bench.instances[0].id,), depths=(0, 1), runs_per_depth=3)
    a = simulate_outcomes(bench, design, params, seed=0)
    b = simulate_outcomes(bench, design, params, seed=1)
    assert [o.keys for o in a] != [o.keys for o in b]


@pytest.mark.parametrize("p_repair, repaired", [(0.0, False), (1.0, True)])
def test_a_partial_reply_repairs_with_probability_p_repair_partial(bench, p_repair, repaired):
    """Every link weak, every demand answered "partial": with p_repair_partial = 1 every non-terminal
    step of every opening is replaced after one round, with 0 none is (outcomes and rendered runs
    alike). The check above only compares the two, so this pins the direction of the rule."""
    partial = {"conceded": 0.0, "answered": 0.0, "partial": 1.0, "dropped": 0.0}
    params = load_simulator_params().model_copy(update={
        "extra_hypotheses_max": 0, "p_develop_swap": 0.0, "p_weak_supported": 1.0, "p_weak_unsupported": 1.0,
        "p_find": 1.0, "p_challenge_sound": 0.0, "p_repair_partial": p_repair,
        "reply_weak": type(load_simulator_params().reply_weak)(**partial)})
    design = Design(instances=(bench.instances[0].id,), depths=(0, 1), runs_per_depth=2)
    openings = {h.id: tuple(s.id for s in h.chain) for h in bench.openings(bench.instances[0].id)}
    fast = simulate_outcomes(bench, design, params, seed=3)
    full = simulate(bench, design, params, seed=3, log=False)
    for o, run in zip(fast, full):
        keys = [o.keys, tuple((h.opening_id, tuple(s.id for s in h.chain)) for h in run.delivered)]
        for delivered in keys:
            for opening_id, chain in delivered:
                start = openings[opening_id]
                changed = [a != b for a, b in zip(start[:-1], chain[:-1])]
                assert chain[-1] == start[-1]
                assert all(changed) if (repaired and o.depth == 1) else not any(changed), (o.depth, chain)
        if o.depth == 1:
            assert o.labels.tolist() == [0, 0, sum(len(c) - 1 for c in openings.values()), 0]


def test_a_conceded_sound_link_is_hedged_and_links_are_worded_in_several_ways(bench):
    """No weak links, every sound link challenged and conceded: after one round every explanation
    states links with reduced confidence; before critique none does. The development step words
    links with several of the link phrasings (not always the first)."""
    conceded = {"conceded": 1.0, "answered": 0.0, "partial": 0.0, "dropped": 0.0}
    base = load_simulator_params()
    params = base.model_copy(update={
        "extra_hypotheses_max": 0, "p_develop_swap": 0.0, "p_weak_supported": 0.0, "p_weak_unsupported": 0.0,
        "p_challenge_sound": 1.0, "reply_sound": type(base.reply_sound)(**conceded)})
    design = Design(instances=tuple(i.id for i in bench.instances[:2]), depths=(0, 1), runs_per_depth=2)
    runs = simulate(bench, design, params, seed=5, log=False)
    hedge = "is stated with reduced confidence"
    for run in runs:
        texts = [h.explanation for h in run.delivered]
        assert all((hedge in t) == (run.depth == 1) for t in texts), (run.depth, texts[0])
    verbs = {v for run in runs for h in run.delivered for v in ("activates", "leads to", "promotes", "triggers",
                                                                 "results in") if v in h.explanation}
    assert len(verbs) >= 3


@pytest.mark.parametrize("null", [False, True])
def test_a_rendered_run_is_its_outcome_events_in_text_and_draws_nothing(bench, monkeypatch, null):
    """Every record of a rendered run matches an event of its outcome (hypotheses, demands, replies,
    revisions, label counts, delivered ids); rendering draws no random number (numpy's generators
    are disabled while it runs) and gives the same run twice; the events carry the wording."""
    base = load_simulator_params()
    sound = type(base.reply_sound)(conceded=0.5, answered=0.3, partial=0.1, dropped=0.1)
    params = base.model_copy(update={"p_find": 1.0, "p_challenge_sound": 0.5, "p_develop_swap": 0.5,
                                     "reply_sound": sound})
    params = null_params(params) if null else params
    vocab, model = bench.vocabulary, instance_models(bench, params.evidence_weight)[bench.instances[0].id]
    outcome = simulate_outcome(model, vocab, 3, 1, params, seed=4, events=True)
    bare = simulate_outcome(model, vocab, 3, 1, params, seed=4)
    assert (bare.keys, bare.labels.tolist(), bare.exchanges) == (outcome.keys, outcome.labels.tolist(), ())

    def no_draws(*args, **kwargs):
        raise AssertionError("render_run drew a random number")

    with monkeypatch.context() as m:
        for name in ("default_rng", "Generator", "random", "choice", "RandomState"):
            m.setattr(np.random, name, no_draws)
        run, again = render_run(outcome, vocab), render_run(outcome, vocab)
    assert run == again and run.run_id == run_id(model.instance, 3, 1)

    assert [(h.opening_id, [s.id for s in h.chain], [s.text for s in h.chain]) for h in run.developed] == [
        (e.opening, list(e.ids), [vocab[i].names[k] for i, k in zip(e.ids, e.names)]) for e in outcome.developments]
    assert [h.id for h in run.developed] == [f"{run.run_id}-{e.opening}-{e.index}" for e in outcome.developments]
    assert tuple((h.opening_id, tuple(s.id for s in h.chain)) for h in run.delivered) == outcome.keys
    assert [r.label for r in run.replies] == [x.label for x in outcome.exchanges]
    assert outcome.labels.tolist() == [[x.label for x in outcome.exchanges].count(lab) for lab in LABELS]
    assert len(run.demands) == len(outcome.exchanges) > 0
    ids = {h.id: [s.id for s in h.chain] for h in run.developed}  # chain ids, followed event by event
    for demand, x in zip(run.demands, outcome.exchanges):
        assert (demand.round, demand.hypothesis_id, demand.weak_link) == (x.round, run.developed[x.draft].id, x.weak)
        assert demand.target_step == ids[demand.hypothesis_id][x.position]
        if x.replacement:
            ids[demand.hypothesis_id][x.position] = x.replacement[0]
    assert any(x.replacement for x in outcome.exchanges) != null
    assert any(x.hedged for x in outcome.exchanges)
    for rev in run.revisions:
        mine = [x for x in outcome.exchanges if (x.round, run.developed[x.draft].id) == (rev.round, rev.hypothesis_id)]
        assert mine and rev.changed == [x.position for x in mine if x.replacement]
        for x in mine:  # a replaced step is worded as its event says; a downgraded link is hedged
            if x.replacement:
                assert rev.chain[x.position].text == vocab[x.replacement[0]].names[x.replacement[1]]
            if x.hedged and x.position:
                assert f"The link to {rev.chain[x.position].text} is stated with reduced" in rev.explanation
    assert {h.id: [s.id for s in h.chain] for h in run.delivered} == ids

    # the wording comes from the events: another statement form, another statement, nothing else
    first = outcome.developments[0]
    other = replace(first, statement_form=(first.statement_form + 1) % 3)
    reworded = render_run(replace(outcome, developments=(other, *outcome.developments[1:])), vocab)
    assert reworded.developed[0].statement != run.developed[0].statement
    assert reworded.developed[1:] == run.developed[1:] and reworded.demands == run.demands


def test_per_instance_effects_by_hand():
    """Four runs, depths 0, 0, 1, 1: same-depth means and the extra divergence computed by hand (pp)."""
    from mechaudit.workflow.depth import InstanceMatrix, per_instance_effects

    D = np.array([[0, 0.2, 0.6, 0.8], [0.2, 0, 0.4, 0.6], [0.6, 0.4, 0, 0.4], [0.8, 0.6, 0.4, 0]])
    table = per_instance_effects([InstanceMatrix("A", D, np.array([0, 0, 1, 1]))], [(0, 1)])
    assert list(table.columns) == ["instance", "panel", "label", "value"]
    rows = {(r.panel, r.label): r.value for r in table.itertuples()}
    cross, within = (0.6 + 0.8 + 0.4 + 0.6) / 4, (0.2 + 0.4) / 2
    assert rows == pytest.approx({("same-depth", "K=0"): 20.0, ("same-depth", "K=1"): 40.0,
                                  ("extra", "0 v 1"): 100 * (cross - within)})
    assert set(table["instance"]) == {"A"}


def test_the_rendered_texts_name_the_steps_they_are_about(bench):
    """Every statement names its route, sound demands on a later step name the link from the step
    before, and every reply quotes the step it answers (a replacement only when there is one)."""
    import re

    design = Design(instances=("A", "B"), depths=(5,), runs_per_depth=2)
    runs = simulate(bench, design, load_simulator_params(), seed=3)
    demands = [d for r in runs for d in r.demands]
    replies = [x for r in runs for x in r.replies]
    assert any(d.text.startswith("Justify the link from '") for d in demands if not d.weak_link)
    assert any(d.text.endswith("as the initiating event with the evidence.") for d in demands if not d.weak_link)
    forms = {"conceded": r"Accepted: '(.+?)' is withdrawn from this link(; replaced by '.+')?\.",
             "answered": r"The evidence pack supports '(.+?)' directly; the link stands\.",
             "partial": r"Some support exists for '(.+?)'; the link is kept in part(; replaced by '.+')?\.",
             "dropped": r"\(no response to this point\)()"}
    for x in replies:
        match = re.fullmatch(forms[x.label], x.text)
        assert match and match.group(1) != "None", x.text
    for h in (h for r in runs for h in r.delivered if len(h.chain) > 2):
        assert "None" not in h.statement and h.chain[1].text in h.statement, h.statement
