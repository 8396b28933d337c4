"""Chapter 03's steps (``mechaudit.book.ch03_critique_engagement``): labels, shares, rounds, paper rows."""

from __future__ import annotations

import pandas as pd
import pytest

from mechaudit.backends import Backend
from mechaudit.book import ch03_critique_engagement as ch
from mechaudit.engagement import LABELS
from mechaudit.workflow import workflow_setup


def _labelled() -> pd.DataFrame:
    """Ten demands: round 1 has 4 conceded weak-link demands and 1 answered sound one; round 2 has
    1 conceded, 3 answered and 1 dropped, all on sound links."""
    rows = ([(1, "conceded", True)] * 4 + [(1, "answered", False)]
            + [(2, "conceded", False)] + [(2, "answered", False)] * 3 + [(2, "dropped", False)])
    return pd.DataFrame([{"run_id": f"r{i % 3}", "round": r, "label": lab, "weak_link": weak, "depth": 5}
                         for i, (r, lab, weak) in enumerate(rows)])


def test_shares_table_counts_and_paper_column():
    table = ch.shares_table(_labelled(), {"conceded": 61.0, "answered": 27.0, "partial": 9.0, "dropped": 3.0})
    assert list(table.index) == list(LABELS)
    assert table["demands"].tolist() == [5, 4, 0, 1] and table["demands"].dtype.kind == "i"
    assert table.loc["conceded", "this run (%)"] == 50.0
    assert table["paper (%)"].tolist() == [61.0, 27.0, 9.0, 3.0]
    assert "paper (%)" not in ch.shares_table(_labelled(), None)


def test_round_shares_per_round():
    by_round = ch.round_shares(_labelled())
    assert by_round.index.tolist() == [1, 2] and by_round.index.name == "round"
    assert by_round["demands"].tolist() == [5, 5]
    assert by_round.loc[1, "conceded"] == 80.0 and by_round.loc[2, "answered"] == 60.0
    assert list(by_round.columns) == ["demands", *LABELS]
    assert ch.round_facts(by_round) == ch.RoundFacts(first_round=1, last_round=2, first_round_conceded_pct=80.0,
                                                     last_round_conceded_pct=by_round.loc[2, "conceded"],
                                                     last_round_answered_pct=60.0)


def test_target_table_splits_weak_and_sound_links():
    table = ch.target_table(_labelled())
    assert table.index.name == "demand on"
    assert table.loc["weak link", "conceded"] == 100.0
    assert table.loc["sound link", "answered"] == pytest.approx(66.7)
    llm = ch.target_table(_labelled().assign(weak_link=None))  # LLM runs know no weak links: counts per depth
    assert llm.loc[5].tolist() == [5, 4, 0, 1]


def test_max_gap_and_paper_rows():
    shares = pd.Series({"conceded": 60.0, "answered": 30.0, "partial": 7.0, "dropped": 3.0})
    assert ch.max_gap_pp(shares, {"conceded": 61.0, "answered": 27.0, "partial": 9.0, "dropped": 3.0}) == 3.0
    rows = ch.paper_rows(_labelled(), Backend.REFERENCE)
    assert rows[0] == ("engagement.demands", 10, "simulator log")
    assert ("engagement.conceded_pct", 50.0, "simulator log") in rows
    assert ch.label_source(Backend.ANTHROPIC) == "LLM judge, anthropic"


def test_label_runs_on_simulator_runs_keeps_every_demand():
    setup = workflow_setup(None)
    labelled = ch.label_runs(setup.delivery, "unused-model", json_retries=2)
    assert len(labelled) > 0 and labelled["label"].notna().all()
    assert set(labelled["label"]) <= set(LABELS)
    assert (labelled["label_source"] == "simulator log").all()
    assert ch.judged_only(labelled, setup.delivery, 2) is labelled


def test_engagement_figure_without_the_paper_draws_this_run_only():
    import matplotlib.pyplot as plt

    from mechaudit.engagement import engagement_table
    from mechaudit.plots.workflow import engagement_figure
    from mechaudit.report.labels import label

    labelled = _labelled()
    fig = engagement_figure(engagement_table(labelled), None, caption="Backend: reference",
                            by_round=engagement_table(labelled, by="round"))
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["this run", *(label(lbl) for lbl in LABELS)] and fig.get_size_inches()[0] <= 7.0
    plt.close(fig)


def test_demand_density_and_the_conceded_floor(bench):
    from mechaudit.workflow import Design, load_simulator_params

    design = Design(instances=("A", "B", "C", "D"), depths=(0, 1, 5), runs_per_depth=5)
    assert ch.critique_rounds(design) == 120
    table = ch.density_table(1440, 332, design, hypotheses_per_run=8.0)
    assert table.loc["demands per run and round of critique"].tolist() == [
        12.0, 2.77, "derived here: 332 demands / 120 run-rounds"]  # the book's derivation, named as such
    assert table.loc["demands in the design", "paper's value"] == "reported (§5.1)"
    assert table.loc["demands per hypothesis and round", "this run"] == 1.5
    assert table.loc["demands per hypothesis and round", "paper's value"] == "not reported"
    assert ch.demand_sentence(table) == ("This run raises 4.3 times the paper's demands: 12 demands per run and "
                                         "round of critique, against the 2.77 this book derives from the "
                                         "paper's 332 demands")
    own = ch.density_table(1440, None, design, hypotheses_per_run=8.0)  # on other data: no paper column at all
    assert list(own.columns) == ["this run"]
    assert ch.demand_sentence(own) == "This run raises 12 demands per run and round of critique."
    labelled = _labelled()  # 4 of 10 demands are conceded weak-link demands: a floor of 40 %
    assert ch.conceded_floor_sentence(labelled, 30.0).startswith("they cannot come closer: the conceded demands on "
                                                                  "weak links alone are 40.0 %")
    assert ch.conceded_floor_sentence(labelled, 61.0).endswith("can close the gap")
    assert ch.conceded_floor_sentence(labelled.drop(columns="weak_link"), 61.0).endswith("not known for these runs")
    llm_runs = labelled.assign(weak_link=None)  # an LLM critic's runs: the column is there, empty
    assert not ch.knows_weak_links(llm_runs) and ch.knows_weak_links(labelled)
    assert ch.weak_share_text(llm_runs) == "an unknown share" and "nan" not in ch.weak_share_text(llm_runs)
    assert ch.weak_share_text(labelled) == f"{100 * labelled.weak_link.mean():.0f} %"
    assert ch.conceded_floor_sentence(llm_runs, 61.0).endswith("not known for these runs")
    small = Design(instances=("A",), depths=(0, 1), runs_per_depth=2)
    n, conceded, rounds = ch.simulated_shares(bench, small, load_simulator_params(), seed=3)
    assert n > 0 and 0 <= conceded <= 100 and rounds.index.tolist() == [1]


def test_exercises_simulate_nothing_with_llm_labels():
    labelled = _labelled()
    ex = ch.exercises(None, 0, labelled, ch.shares_table(labelled, None), None, llm=True)
    assert (ex.ex1_n, ex.ex2_seed, ex.ex2_conceded) == (None, None, None)
    assert ex.binomial_se_pp == pytest.approx(100 * (0.5 * 0.5 / 10) ** 0.5)  # 5 of 10 demands conceded


def test_tables_name_their_index_and_keep_integer_counts():
    from mechaudit.workflow import Design

    design = Design(instances=("A", "B"), depths=(0, 1), runs_per_depth=2)
    assert ch.density_table(40, None, design, hypotheses_per_run=5.0).index.name == "quantity"
    assert ch.round_shares(_labelled()).columns.name is None
    counts = ch.target_table(_labelled().assign(weak_link=None))
    assert (counts.dtypes == "int64").all()


def test_judged_only_shows_the_unlabelled_challenges_and_keeps_the_labelled_demands(capsys):
    from mechaudit.workflow.delivery import Delivery

    labelled = _labelled().assign(hypothesis_id="h1", number=range(10), excluded=None)
    labelled.loc[9, ["label", "excluded"]] = [None, "invalid JSON"]
    kept = ch.judged_only(labelled, Delivery([], client=object(), source="llm"), json_retries=1)
    assert len(kept) == 9 and kept["label"].notna().all()
    out = capsys.readouterr().out
    assert "Excluded: 0 hypotheses whose reply stayed invalid after 1 JSON repair request(s)." in out
    assert "Excluded: 1 challenges (engagement judge) whose reply stayed invalid after 1 JSON" in out


def test_paper_engagement_and_run_shares_read_the_paper_and_this_run():
    from mechaudit.book.chapter import headline_provenance
    from mechaudit.engagement import paper_shares
    from mechaudit.paper import reported, show

    paper = ch.paper_engagement()
    assert (paper.demands, paper.conceded_pct, paper.dropped_pct) == (
        reported("engagement.demands"), reported("engagement.conceded_pct"), reported("engagement.dropped_pct"))
    labelled = _labelled()
    shares = ch.shares_table(labelled, None)
    facts = ch.run_shares(labelled, shares, llm=False)
    provenance, verdict = headline_provenance("ch03", False, {"conceded": 50.0})
    assert facts == ch.RunShares(
        n_demands=10, headline_conceded=50.0, headline_provenance=provenance, headline_verdict=verdict,
        max_gap_pp=ch.max_gap_pp(shares["this run (%)"], paper_shares()),
        floor_sentence=ch.conceded_floor_sentence(labelled, reported("engagement.conceded_pct")),
        conceded_pct=50.0, answered_pct=40.0, partial_pct=0.0, dropped_pct=10.0)
    assert facts.floor_sentence.endswith("can close the gap")  # 40 % on weak links, below the paper's 61 %
    show(False)
    try:
        own = ch.run_shares(labelled, shares, llm=True)
    finally:
        show(True)
    assert own.max_gap_pp is None and own.floor_sentence == "no comparison with published numbers"
    assert (own.headline_provenance, own.headline_verdict) == headline_provenance("ch03", True, {"conceded": 50.0})


def test_misfit_reads_the_design_the_density_and_the_simulator():
    from types import SimpleNamespace

    from mechaudit.workflow import Design, load_simulator_params

    design = Design(instances=("A", "B"), depths=(0, 1, 5), runs_per_depth=3)
    sim = load_simulator_params()
    density = ch.density_table(180, 332, design, hypotheses_per_run=6.0)
    setup = SimpleNamespace(design=design, simulator=sim)
    fit = ch.misfit(_labelled(), density, setup, Backend.REFERENCE)
    assert (fit.critique_rounds, fit.n_runs, fit.critiqued_runs) == (36, 18, 12)
    assert fit.demand_sentence == ch.demand_sentence(density) and fit.per_hyp_round == round(180 / 36 / 6.0, 2)
    assert fit.weak_share_pct == "40 %" and fit.misfit_scope.startswith("This run's workflow is the simulator's")
    assert (fit.p_weak_supported, fit.p_weak_unsupported, fit.p_find, fit.reply_sound_conceded) == (
        sim.p_weak_supported, sim.p_weak_unsupported, sim.p_find, sim.reply_sound.conceded)
    llm = ch.misfit(_labelled().assign(weak_link=None), density, setup, Backend.ANTHROPIC)
    assert llm.misfit_scope == ("This run's workflow is an LLM's (backend anthropic): the table counts its demands, "
                                "and the explanation below, which is about the simulator, does not describe them")
    assert llm.weak_share_pct == "an unknown share"


def test_exercises_simulate_the_null_and_another_seed(bench):
    from types import SimpleNamespace

    from mechaudit.workflow import Design, load_simulator_params, null_params

    design = Design(instances=("A",), depths=(0, 1), runs_per_depth=2)
    sim = load_simulator_params()
    setup = SimpleNamespace(bench=bench, design=design, simulator=sim)
    labelled = _labelled()
    n_null, conceded_null, rounds_null = ch.simulated_shares(bench, design, null_params(sim), 4)
    n_other, conceded_other, _ = ch.simulated_shares(bench, design, sim, 5)
    assert (n_null, conceded_null) != (n_other, conceded_other)
    ex = ch.exercises(setup, 4, labelled, ch.shares_table(labelled, None), rounds_null, llm=False)
    se = 100 * (0.5 * 0.5 / 10) ** 0.5
    assert ex == ch.Exercises(n_null, conceded_null, "the same", 5, n_other, conceded_other, pytest.approx(se))
    other = ch.exercises(setup, 4, labelled, ch.shares_table(labelled, None), ch.round_shares(labelled), llm=False)
    assert other.ex1_same_rounds == "different"


def test_plan_asks_one_label_request_per_critique(tmp_path):
    design = tmp_path / "design.yaml"
    design.write_text("design:\n  instances: [A]\n  depths: [0, 1]\n  runs_per_depth: 1\n", encoding="utf-8")
    p = {"design_file": str(design), "generator_model": "claude-sonnet-4-6", "judge_model": "claude-haiku-4-5",
         "cache_dir": str(tmp_path / "cache"), "data_dir": None}
    planned = ch.plan(p)
    labels = [x for x in planned if x.stage == "engagement labels"]
    critiques = [x for x in planned if x.stage == "workflow critique"]
    assert len(labels) == len(critiques) > 0 and planned[-len(labels):] == labels
    assert {x.request.model for x in labels} == {"claude-haiku-4-5"} and not any(x.exact for x in labels)
    assert labels[0].identity == str(("A-k1-r0", 1, "A-k1-r0-A-01-0"))
    assert len({x.identity for x in labels}) == len(labels)
