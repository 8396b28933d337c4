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
