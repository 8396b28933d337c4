"""The chapter context: a chapter's parameters parsed once into settings, its own LLM session and
client, and the status, caption and usage texts its cells show. Also the two package-wide rules
that come with it: no module-level session in ``mechaudit.llm``, and one ``Backend.parse`` in src/."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import shutil
from pathlib import Path

import pytest

import mechaudit.llm
from mechaudit.backends import Backend, BackendError
from mechaudit.book.chapter import (
    LOCAL,
    SIMULATED,
    ChapterContext,
    backend_of,
    broken_copy,
    chapter_settings,
    your_data,
)
from mechaudit.book.params import ParameterError
from mechaudit.book.settings import PerturbationsSettings
from mechaudit.errors import MechauditError
from mechaudit.llm import LLMClient
from mechaudit.llm.session import LLMSession
from mechaudit.paths import EXAMPLE_DIR
from mechaudit.schema import load_benchmark

SRC = Path(__file__).resolve().parents[1] / "src" / "mechaudit"


def test_settings_are_the_chapters_model_with_the_given_values_over_its_defaults():
    cell_globals = {"backend": "replay", "max_usd": 2, "llm_batch": True, "cache_dir": "/tmp/c", "seed": 7,
                    "judge_model": "m", "__name__": "__main__", "In": [""], "ChapterContext": ChapterContext,
                    "pd": pytest}
    s = chapter_settings(cell_globals, "05_perturbations")
    assert isinstance(s, PerturbationsSettings)
    assert (s.backend, s.max_usd, s.llm_batch, s.cache_dir) == ("replay", 2, True, "/tmp/c")
    assert (s.seed, s.judge_model) == (7, "m")
    assert chapter_settings({}, "05_perturbations") == PerturbationsSettings()
    assert chapter_settings({"power_designs": [[2, 3]]}, "02c_robustness").power_designs == [(2, 3)]


@pytest.mark.parametrize(("params", "message"), [
    ({"backend": "Replay"}, "field 'backend': must be one of 'reference', 'anthropic', 'replay', got 'Replay'; "
                            "did you mean 'replay'?"),
    ({"backend": None}, "field 'backend': must be a string like the default 'reference', got None"),
    ({"max_usd": -1}, "field 'max_usd': must be a number in [0, inf], got -1"),
    ({"max_usd": "5"}, "field 'max_usd'"),
])
def test_bad_parameters_are_one_line_errors(params, message):
    with pytest.raises(ParameterError) as err:
        chapter_settings(params, "05_perturbations")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_backend_of_defaults_to_reference_and_keeps_members():
    assert backend_of({}) is Backend.REFERENCE
    assert backend_of({"backend": Backend.ANTHROPIC}) is Backend.ANTHROPIC
    with pytest.raises(BackendError):
        backend_of({"backend": "gpt"})


def test_offline_context_has_no_client_and_offline_texts():
    with ChapterContext.open({"backend": "reference", "max_usd": 1.5}, "05_perturbations") as ctx:
        assert ctx.client is None and ctx.backend is Backend.REFERENCE and not ctx.llm
        assert ctx.session.max_usd == 1.5 and ctx.session.ledgers == []
        assert ctx.status("claude-x", SIMULATED) == "simulated (reference backend)"
        assert ctx.caption() == "Backend: reference"
        assert ctx.caption("Toy design, no LLM") == "Backend: reference. Toy design, no LLM"
        assert ctx.usage().iloc[0, 0] == "no LLM calls (backend 'reference' is offline)"


def test_llm_context_client_spends_from_the_chapters_own_session(tmp_path):
    ctx = ChapterContext.open({"backend": "replay", "max_usd": 0.5, "llm_batch": True, "cache_dir": str(tmp_path)},
                              "05_perturbations")
    assert isinstance(ctx.client, LLMClient) and ctx.client.backend is Backend.REPLAY
    assert ctx.client.session is ctx.session and ctx.session.ledgers == [ctx.client._ledger]
    assert (ctx.session.max_usd, ctx.session.batch) == (0.5, True)
    assert ctx.client.cache.directory == tmp_path
    assert ctx.status("claude-x", LOCAL) == "LLM (claude-x, replay)"
    assert ctx.caption("x") == "Backend: replay. x"
    assert ctx.usage().iloc[0, 0] == "no LLM calls (backend 'replay')"
    other = ChapterContext.open({"backend": "replay", "cache_dir": str(tmp_path)}, "05_perturbations")
    assert other.session is not ctx.session and other.session.max_usd is None  # nothing shared between runs
    assert ctx.session.ledgers == [ctx.client._ledger]


def test_llm_package_holds_no_session_at_module_level():
    """A session is made by whoever runs a chapter; no module of ``mechaudit.llm`` keeps one."""
    names = [m.name for m in pkgutil.iter_modules(mechaudit.llm.__path__, "mechaudit.llm.")]
    assert "mechaudit.llm.session" in names and "mechaudit.llm.usage" not in names
    for name in names:
        module = importlib.import_module(name)
        held = [attr for attr, value in vars(module).items() if isinstance(value, LLMSession)]
        assert held == [], f"{name} holds a session at module level: {held}"


def backend_parse_calls(path: Path) -> list[int]:
    """Line numbers of ``Backend.parse(...)`` calls in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "parse"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "Backend"]


def test_backend_parse_is_called_once_in_src():
    found = {str(p.relative_to(SRC)): lines for p in sorted(SRC.rglob("*.py")) if (lines := backend_parse_calls(p))}
    assert list(found) == ["book/chapter.py"] and len(found["book/chapter.py"]) == 1, found


def test_the_parse_count_sees_a_planted_call(tmp_path):
    planted = tmp_path / "m.py"
    planted.write_text("x = Backend.parse(name)\ny = Backend.llm(name)\nz = other.parse(name)\n", encoding="utf-8")
    assert backend_parse_calls(planted) == [1]


def test_a_backend_name_where_a_client_belongs_is_one_line(bench_and_design):
    """The library takes a client: passing the old backend string fails at the entry, in one line."""
    from mechaudit.engagement import label_demands
    from mechaudit.rules import LLMJudge
    from mechaudit.rules.llm_judge import judge_each_model
    from mechaudit.tau.judge import BlindJudge
    from mechaudit.workflow import build_rules, deliver

    bench, design = bench_and_design
    calls = [lambda: deliver(bench, design, "reference"), lambda: build_rules(["llm"], "replay"),
             lambda: label_demands([], "replay"), lambda: judge_each_model([], ["m"], "anthropic"),
             lambda: LLMJudge(client="replay"), lambda: BlindJudge(client="replay")]
    for call in calls:
        with pytest.raises(TypeError, match=r"^field 'client': got the name '\w+', not an LLM client; pass") as err:
            call()
        assert "\n" not in str(err.value)


@pytest.fixture
def bench_and_design():
    from mechaudit.schema import load_benchmark
    from mechaudit.workflow import load_design

    bench = load_benchmark()
    return bench, load_design()


def test_figure_caption_is_the_one_caption_format():
    from mechaudit.book import ch08_tau_calibration as ch08
    from mechaudit.book.settings import RunSettings

    assert ChapterContext(RunSettings(backend="replay")).caption() == "Backend: replay"
    assert ChapterContext(RunSettings()).caption("x") == "Backend: reference. x"
    assert ch08.SIMULATED_CAPTION == "Backend: reference"  # the simulated figures, under every backend


def test_the_context_saves_numbers_and_shows_tables_and_figures(tmp_path, capsys):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from mechaudit.report.tables import BookTable

    ctx = ChapterContext.open({"out_dir": str(tmp_path), "compare_paper": None, "data_dir": None}, "05_perturbations")
    assert ctx.out_dir == str(tmp_path) and ctx.show_paper  # the shipped data: the paper is shown
    shown = ctx.table("rates", pd.DataFrame({"x (%)": [12.345]}), caption="Rates.", label="tbl-x")
    assert isinstance(shown, BookTable) and "tbl-x" in shown._repr_markdown_()
    assert pd.read_csv(tmp_path / "rates.csv")["x (%)"].tolist() == [12.345]
    view = ctx.table("raw", pd.DataFrame({"tau": [0.81234]}), shown=pd.DataFrame({"tau": ["0.81"]}))
    assert "0.81" in view._repr_html_() and "0.81234" not in view._repr_html_()
    assert pd.read_csv(tmp_path / "raw.csv")["tau"].tolist() == [0.81234]  # the numbers, not the view
    fig, _ = plt.subplots()
    assert ctx.figure("curve", fig) is fig
    assert (tmp_path / "curve.png").stat().st_size > 0 and (tmp_path / "curve.svg").exists()
    paper = ctx.paper_table([("design.runs", 60)], caption="Paper and run.", label="tbl-paper")
    assert paper is not None and "tbl-paper" in paper._repr_markdown_()
    saved = pd.read_csv(tmp_path / "paper_comparison.csv", index_col=0)
    assert saved["this run"].tolist() == [60] and saved["provenance"].notna().all()


def test_the_context_keeps_the_paper_off_other_data(tmp_path, capsys):
    from mechaudit.book.chapter import PAPER_OFF

    other = tmp_path / "mine"
    other.mkdir()
    for params, chapter in (({"compare_paper": False}, "05_perturbations"),
                            ({"compare_paper": None, "data_dir": str(other)}, "05_perturbations"),
                            ({}, "08_tau_calibration")):  # a chapter without compare_paper
        ctx = ChapterContext.open(params, chapter)
        assert not ctx.show_paper
        assert ctx.paper_table([("design.runs", 60)], caption="c", label="tbl-c") is None
        assert capsys.readouterr().out.strip() == PAPER_OFF


def test_chapter_09_broken_copy_fails_to_load_and_names_the_data():
    bench = load_benchmark(EXAMPLE_DIR)
    broken = broken_copy(EXAMPLE_DIR, bench)
    try:
        with pytest.raises(MechauditError) as err:
            load_benchmark(broken)
        assert Path(err.value.file).name == "hypotheses.jsonl" and err.value.line == 1
    finally:
        shutil.rmtree(broken.parent)
    facts = your_data(bench, EXAMPLE_DIR, own=False)
    assert facts.data == "the example set" and facts.n_hypotheses == len(bench.hypotheses)
    assert your_data(bench, EXAMPLE_DIR, own=True).data == f"the folder {EXAMPLE_DIR.name}"
    assert facts.questions.startswith(f"{len(bench.instances)} question")


def test_the_paper_columns_stay_when_the_paper_is_shown_and_series_pass_through(tmp_path):
    import pandas as pd

    from mechaudit.book.settings import RunSettings

    frame = pd.DataFrame({"this run": [1.0], "paper": [2.0]})
    shown = ChapterContext(RunSettings(out_dir=str(tmp_path)), show_paper=True).table("both", frame)
    assert list(pd.read_csv(tmp_path / "both.csv").columns) == ["this run", "paper"]
    assert "<th>Paper</th>" in shown._repr_html_()
    hidden = ChapterContext(RunSettings(out_dir=str(tmp_path)))
    hidden.table("mine", frame)
    assert list(pd.read_csv(tmp_path / "mine.csv").columns) == ["this run"]
    series = pd.Series([1.0, 2.0], name="paper")
    assert hidden._without_paper(series) is series and hidden._without_paper(None) is None


def test_save_writes_under_its_name_and_figure_glues_under_the_key(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from mechaudit.book.settings import RunSettings

    ctx = ChapterContext(RunSettings(out_dir=str(tmp_path)))
    frame = pd.DataFrame({"x": [3]})
    assert ctx.save("counts", frame) is frame
    assert pd.read_csv(tmp_path / "counts.csv")["x"].tolist() == [3]
    glued = []
    monkeypatch.setattr("mechaudit.book.chapter.glue_figure", lambda *args: glued.append(args) or "stored")
    fig, _ = plt.subplots()
    assert ctx.figure("glued", fig, glue_as="fig_key") == "stored"
    assert glued == [("fig_key", fig)] and (tmp_path / "glued.png").exists()
    plt.close(fig)


def test_axis_placeholder_says_why_the_axis_did_not_run():
    from mechaudit.book.chapter import axis_placeholder

    offline = axis_placeholder(False, ["m1"])
    assert offline.to_dict() == {"status": {"judge models": "not run: offline backend"}}
    assert offline.index.name == "axis"
    assert axis_placeholder(True, ["m1", "m2"])["status"].tolist() == ["not run: one judge model (m1)"]


def test_headline_provenance_of_a_row_offline_and_under_an_llm():
    from mechaudit import paper
    from mechaudit.book.chapter import headline_provenance

    assert headline_provenance("ch02", False) == (
        "fitted to the paper: 0 v 1; constrained by the fit: 1 v 5", "fitted, not a test")
    # the offline-only part leaves the row under an LLM backend
    assert headline_provenance("ch06", False) == (
        "true by construction: reference judges; not run offline (LLM only): none, full, step",
        "not testable offline")
    assert headline_provenance("ch06", True) == ("independent computation", "qualified")
    conceded = paper.reported("engagement.conceded_pct")
    assert headline_provenance("ch03", True, {"conceded": conceded}) == ("independent computation", "reproduced")
    assert headline_provenance("ch03", True, {"conceded": conceded + 30}) == ("independent computation", "qualified")
    assert headline_provenance("ch03", True) == ("independent computation", "qualified")


def test_simulation_only_note_is_printed_for_llm_backends_only(capsys):
    from mechaudit.book.chapter import simulation_only_note

    simulation_only_note(Backend.REFERENCE)
    assert capsys.readouterr().out == ""
    simulation_only_note(Backend.REPLAY)
    assert capsys.readouterr().out == ("backend 'replay': this chapter is simulation-only (it needs the simulator's "
                                       "ground truth), so it runs with the simulator and sends no LLM request.\n")


def test_source_note_names_what_was_read_and_what_computed():
    from mechaudit.book.chapter import source_note

    assert source_note({"scan": "committed", "maps": "committed"}) == (
        "Read from data/computed/ (written by `mechaudit calibrate` with these settings; the test suite re-checks "
        "them).")
    assert source_note({"scan": "committed", "maps": "computed", "fit": "committed", "reps": "computed"}) == (
        "Computed in this run (their settings differ from the committed ones): maps, reps; read from "
        "data/computed/: scan, fit.")
    assert source_note({"maps": "computed"}) == (
        "Computed in this run (their settings differ from the committed ones): maps.")


def test_swap_shares_of_a_suite_and_of_a_missing_one():
    import pandas as pd

    from mechaudit.book.chapter import SwapShares, swap_shares

    index = pd.MultiIndex.from_tuples([("template", "first_step_swapped"), ("template", "wording_only")],
                                      names=["suite", "kind"])
    pct = pd.DataFrame({"TF-IDF": [40.0, 5.0], "embeddings": [30.0, 2.0], "reference judge": [100.0, 0.0]},
                       index=index)
    assert swap_shares(pct, "template") == SwapShares(40.0, 30.0, 100.0)
    assert swap_shares(pct, "reworded") == SwapShares(None, None, None)
