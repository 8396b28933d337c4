"""Nothing of the paper's on other data (issue 34): every paper reference a chapter shows goes through
``ChapterContext.show_paper``, which is on only for the shipped benchmark, recognised by content.

The shared fake-API run (``shared_run``: every chapter but 01 on a copy of the example data) is scanned
output by output: CSV headers and cells, SVG text, notebook outputs (glued values with their keys,
tables with their captions, printed lines). The word "paper", a glue key naming the paper, or one of
the paper's distinctive numbers (:func:`paper_numbers`) in text fails the test. The shipped data with
one word changed turns the switch off; chapter 01 (not in the shared run) is checked in-process.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from mechaudit.book.chapter import PAPER_OFF, ChapterContext
from mechaudit.book.settings import RunSettings
from mechaudit.paths import BENCHMARK_FILES, REPO_ROOT, is_shipped_benchmark
from mechaudit.report.comparison import compare_paper_default

#: keys of data/paper_reported.yaml that are settings the run itself uses (its design, thresholds,
#: model names), not results of the paper
SETTINGS = ("design.", "models.", "sensitivity.tfidf_threshold", "sensitivity.embedding_threshold",
            "sensitivity.judge_orders", "sensitivity.stability_pairs")
#: the word "paper" as a reader reads it; the paper-rate rule's name is a rule, and chapter 08's
#: "reviews per paper" counts the reviewed papers of its synthetic pool: neither refers to the paper
PAPER_WORD = re.compile(r"(?<!per )\bpaper(?!-rate)\b", re.IGNORECASE)
#: a glue key that names the paper (``ch03_paper_demands``; ``ch02_ex1_paper_rates_pp`` is the rule's)
PAPER_KEY = re.compile(r"(^|_)paper(?!_rates)(_|$)")
#: a piece of text that is one number (a table cell, a tick label, a glued number): data, not prose
NUMBER = re.compile(r"^[-+−]?\d[\d,]*(\.\d+)?\s*%?$")


def _leaves(doc: dict, prefix: str = ""):
    for key, value in doc.items():
        if isinstance(value, dict) and "value" in value:
            yield prefix + key, value["value"]
        elif isinstance(value, dict):
            yield from _leaves(value, f"{prefix}{key}.")


def paper_numbers() -> set[str]:
    """The paper's results that a run of other data would not print by chance, as written: numbers
    with three or more significant digits (34.5, 332, 0.59 is left out: two digits)."""
    doc = yaml.safe_load((REPO_ROOT / "data" / "paper_reported.yaml").read_text(encoding="utf-8"))
    out = set()
    for key, value in _leaves(doc):
        if key.startswith(SETTINGS) or isinstance(value, (bool, str, list)):
            continue
        text = f"{value:g}"
        if len(text.replace(".", "").lstrip("0")) >= 3:
            out.add(text)
    return out


def _number_pattern() -> re.Pattern:
    numbers = "|".join(re.escape(n) for n in sorted(paper_numbers(), key=len, reverse=True))
    return re.compile(rf"(?<![\d.])({numbers})(?!\d|\.\d)")


def _pieces(text: str) -> list[str]:
    """The reader's pieces of ``text``: HTML tags and table rules split it, each line is a piece."""
    text = re.sub(r"<[^>]*>", "\n", text)
    return [p.strip() for line in text.splitlines() for p in re.split(r"\s{2,}|\|", line) if p.strip()]


def _hits(text: str, where: str, numbers: re.Pattern) -> list[str]:
    found = []
    for piece in _pieces(text):
        m = PAPER_WORD.search(piece) or (None if NUMBER.match(piece) else numbers.search(piece))
        if m:
            found.append(f"{where}: {m.group(0)!r} in {piece[:140]!r}")
    return found


def _svg_text(svg: str) -> str:
    """The text of a matplotlib SVG: its glyphs are paths, each text kept as a comment."""
    return "\n".join(re.findall(r"<!-- (.*?) -->", svg))


def _output_texts(output: dict) -> list[tuple[str, str]]:
    """``(label, text)`` per readable part of a notebook output: the glue key, printed text, HTML (or
    else markdown, else plain text), SVG text; images and JSON payloads are left out."""
    key = output.get("metadata", {}).get("scrapbook", {}).get("name")
    texts = [("glue key", key)] if key else []
    if "text" in output:
        texts.append(("text", "".join(output["text"])))
    data = {m.rsplit("/", 2)[-2] + "/" + m.rsplit("/", 1)[-1]: "".join(v) if isinstance(v, list) else v
            for m, v in output.get("data", {}).items()}
    for mime in ("text/html", "text/markdown", "text/plain"):
        if isinstance(data.get(mime), str):
            texts.append((mime, data[mime]))
            break
    if isinstance(data.get("image/svg+xml"), str):
        texts.append(("svg", _svg_text(data["image/svg+xml"])))
    return texts


def paper_mentions(out: Path) -> list[str]:
    """Every mention of the paper under a run folder ``out``: its CSV files (header and cells), SVG
    figures and executed notebooks (every output)."""
    numbers, found = _number_pattern(), []
    for path in sorted(out.rglob("*.csv")):
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        cells = [*map(str, frame.columns), *frame.to_numpy().ravel().tolist()]
        found += _hits("\n".join(cells), str(path.relative_to(out)), numbers)
    for path in sorted(out.rglob("*.svg")):
        found += _hits(_svg_text(path.read_text(encoding="utf-8")), str(path.relative_to(out)), numbers)
    for nb in sorted(out.glob("*.ipynb")):
        for i, cell in enumerate(json.loads(nb.read_text(encoding="utf-8"))["cells"]):
            for output in cell.get("outputs", []):
                for label, text in _output_texts(output):
                    where = f"{nb.name} cell {i} {label}"
                    if label == "glue key":
                        found += [f"{where}: {text!r}"] if PAPER_KEY.search(text) else []
                    else:
                        found += _hits(text, where, numbers)
    return found


def test_the_scan_finds_every_kind_of_mention_and_not_the_runs_own_numbers(tmp_path):
    """The scan can fail: a paper column, a caption, a figure legend, a glued paper number under its
    key, a paper number in a sentence; and it passes the run's own numbers, the paper-rate rule's
    name and the switch's own line."""
    pd.DataFrame({"this run": [1], "paper": [332]}).to_csv(tmp_path / "a.csv", index=False)
    pd.DataFrame({"rule": ["paper_rates"], "value": ["43.3"]}).to_csv(tmp_path / "ok.csv", index=False)
    (tmp_path / "f.svg").write_text("<svg><!-- consistent with the observed effects --><!-- 34.5 -->"
                                    "<!-- targets 34.5 pp and 39.8 pp --></svg>")
    outputs = [{"output_type": "display_data", "metadata": {"scrapbook": {"name": "ch03_paper_demands"}},
                "data": {"application/papermill.record/text/plain": "332"}},
               {"output_type": "display_data", "metadata": {},
                "data": {"text/html": "<table><caption>This run beside the Paper.</caption></table>",
                         "text/plain": "x"}},
               {"output_type": "stream", "name": "stdout", "text": [PAPER_OFF, "\npaper-rate judge\n43.3\n"]}]
    nb = {"cells": [{"cell_type": "code", "source": "", "outputs": outputs}], "metadata": {}, "nbformat": 4,
          "nbformat_minor": 5}
    (tmp_path / "n.ipynb").write_text(json.dumps(nb))
    found = paper_mentions(tmp_path)
    assert [f.split(":")[0] for f in found] == ["a.csv", "f.svg", "n.ipynb cell 0 glue key",
                                                "n.ipynb cell 0 text/html"], found
    assert "'34.5' in 'targets 34.5 pp and 39.8 pp'" in found[1]
    assert {"34.5", "39.8", "332", "96.1"} <= paper_numbers() and "0.25" not in paper_numbers()


def test_their_data_shows_nothing_of_the_papers(shared_run):
    """Every output of every chapter the shared run executed on the example data."""
    assert len(list(shared_run.out_dir.glob("*.ipynb"))) == len(shared_run.stems)
    assert paper_mentions(shared_run.out_dir) == []


# ------------------------------------------------------------------------------------- the switch


@pytest.fixture
def shipped_copy(tmp_path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    for name in BENCHMARK_FILES:
        shutil.copy(REPO_ROOT / "data" / name, folder / name)
    return folder


def _open(data_dir: Path) -> ChapterContext:
    return ChapterContext.open({"compare_paper": None, "data_dir": str(data_dir)}, "05_perturbations")


def test_one_changed_word_of_the_shipped_data_turns_the_switch_off(shipped_copy):
    assert is_shipped_benchmark(shipped_copy) and _open(shipped_copy).show_paper
    path = shipped_copy / "hypotheses.jsonl"
    text = path.read_text(encoding="utf-8")
    word = re.search(r'"statement": "(\w+)', text).group(1)
    path.write_text(text.replace(word, word.upper(), 1), encoding="utf-8")
    assert not is_shipped_benchmark(shipped_copy)
    assert not _open(shipped_copy).show_paper
    assert compare_paper_default(None, shipped_copy) is False
    path.write_text(text.replace("\n", "\r\n"), encoding="utf-8")  # a CRLF checkout is the same data
    assert _open(shipped_copy).show_paper


def test_a_context_without_the_parameter_shows_nothing_of_the_papers(shipped_copy):
    """The switch is off unless the chapter declares ``compare_paper``, whatever the data."""
    assert not ChapterContext.open({"data_dir": str(shipped_copy)}, "09_your_data").show_paper


# ------------------------------------------------------------------ every reference through the switch

#: what reads the paper's numbers or text in a chapter's cells
PAPER_SOURCES = re.compile(r"\breported\(|\bentry\(|\bch\.paper_\w+\(|\bpaper_values\(|\bpaper_counts\b"
                           r"|glue_facts\(\"ch\d+\w*_paper")


def _gated(tree: ast.Module, source: list[str]) -> list[int]:
    """Lines of a chapter's code reached only with ``ctx.show_paper`` true: inside ``if ctx.show_paper``,
    in a conditional expression on it, or in ``ctx.paper_table(...)``."""
    lines: set[int] = set()

    def on(test: ast.expr) -> bool:
        return "ctx.show_paper" in ast.unparse(test) and not ast.unparse(test).startswith("not ")

    for node in ast.walk(tree):
        if isinstance(node, ast.If) and on(node.test):
            lines.update(range(node.body[0].lineno, node.body[-1].end_lineno + 1))
        elif isinstance(node, ast.IfExp) and on(node.test):
            lines.update(range(node.body.lineno, node.body.end_lineno + 1))
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "ctx.paper_table":
            lines.update(range(node.lineno, node.end_lineno + 1))
    return sorted(lines)


def ungated_paper_reads(source: str) -> list[str]:
    """The code lines of a chapter (py:percent text) that read the paper outside the switch."""
    code = "\n".join(line if not line.startswith("#") else "" for line in source.splitlines())
    gated = set(_gated(ast.parse(code), code.splitlines()))
    return [f"{i}: {line.strip()}" for i, line in enumerate(code.splitlines(), 1)
            if PAPER_SOURCES.search(line) and i not in gated and not line.lstrip().startswith(("from ", "import "))]


def test_the_static_check_finds_a_paper_read_outside_the_switch():
    bad = ("x = reported('a.b')\nif ctx.show_paper:\n    y = reported('c')\n"
           "z = reported('d') if ctx.show_paper else None\n")
    assert ungated_paper_reads(bad) == ["1: x = reported('a.b')"]
    assert ungated_paper_reads("if not ctx.show_paper:\n    print(ch.paper_shares())\n") == [
        "2: print(ch.paper_shares())"]


@pytest.mark.parametrize("path", sorted((REPO_ROOT / "notebooks").glob("*.py")), ids=lambda p: p.stem)
def test_every_paper_read_in_a_chapter_goes_through_the_switch(path):
    assert ungated_paper_reads(path.read_text(encoding="utf-8")) == []


# -------------------------------------------- the chapters' paper-bearing outputs follow the switch


@pytest.fixture(params=[True, False], ids=["shipped", "other data"])
def switch(request) -> bool:
    """The process's switch as a chapter's context sets it (reset after the test by ``conftest``)."""
    from mechaudit import paper

    paper.show(request.param)
    return request.param


def test_glue_stores_a_paper_key_only_with_the_switch_on(switch, monkeypatch):
    import myst_nb

    from mechaudit.report.glue import glue

    stored = []
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display: stored.append(name))
    glue("ch03_paper_demands", 332)
    glue("ch02_ex1_paper_rates_pp", 1.5)  # the paper-rate rule's result on this run: always stored
    glue("ch03_n_demands", 10)
    assert stored == (["ch03_paper_demands"] if switch else []) + ["ch02_ex1_paper_rates_pp", "ch03_n_demands"]


def test_a_chapter_table_leaves_out_the_papers_columns_without_the_switch(tmp_path):
    frame = pd.DataFrame({"this run (%)": [1.0], "paper (%)": [61.0], "paper's value": ["reported"],
                          "paper-rate judge (%)": [2.0]}, index=pd.Index(["conceded"], name="label"))
    for show in (True, False):
        ChapterContext(RunSettings(out_dir=str(tmp_path / str(show))), show_paper=show).table("t", frame)
        header = (tmp_path / str(show) / "t.csv").read_text().splitlines()[0]
        assert ("paper (%)" in header and "paper's value" in header) is show, header
        assert "paper-rate judge (%)" in header


def test_each_chapters_texts_and_labels_follow_the_switch(switch):
    """Chapter 02's pattern sentence and judge ranges, 02c's sentences and figure labels, 03's
    shares, 05's threshold labels and 06's answer: the paper only with the switch on."""
    from types import SimpleNamespace

    from mechaudit.book import ch02_critique_depth as ch02
    from mechaudit.book import ch02c_robustness as ch02c
    from mechaudit.book import ch03_critique_engagement as ch03
    from mechaudit.book import ch05_perturbations as ch05
    from mechaudit.book import ch06_rubric_sensitivity as ch06

    texts = []
    runs = pd.DataFrame({"rule": ["reference"] * 2, "comparison": ["0 v 1", "1 v 5"], "p_value": [0.001, 0.5],
                         "extra_pp": [30.0, 1.0]})
    texts.append(ch02.pattern_sentence(runs))
    ranges = ch02.judge_model_ranges(pd.DataFrame({"0 v 1": [30.0, 36.0]}, index=["a", "b"]))
    texts += [str(c) for c in ranges.columns] + [str(v) for v in ranges.to_numpy().ravel()]
    truths = pd.DataFrame({"p_find": [0.1, 0.5], "raw": ["fails", "holds"], "consistent": [False, True],
                           "truth_0v1_pp": [5.0, 30.0]})
    texts += [ch02c.outside_sentence(truths), ch02c.targets_name(switch)]
    labelled = pd.DataFrame({"run_id": ["r1", "r2"], "round": [1, 1], "label": ["conceded", "answered"],
                             "weak_link": [True, False], "depth": [1, 1]})
    shares = ch03.run_shares(labelled, ch03.shares_table(labelled, None), llm=False)
    texts += [shares.floor_sentence, str(shares.max_gap_pp)]
    rules = {"t": SimpleNamespace(threshold=0.25), "e": SimpleNamespace(threshold=0.77),
             "m": SimpleNamespace(threshold_=0.6)}
    labels = ch05.thresholds_in_use(SimpleNamespace(rules=rules, tfidf="t", embedding="e", matched="m"))
    texts += [label for by in labels.values() for label in by]
    texts.append(ch06.answer(pd.DataFrame(), llm_run=False))
    found = [t for t in texts if PAPER_WORD.search(t) or re.search(r"\b(34\.5|37\.3|61|38 / 83 / 96)\b", t)]
    if switch:
        assert len(found) == 11, found  # each producer above names the paper or shows its numbers
    else:
        assert found == [] and shares.max_gap_pp is None


def _paper_traces(out: Path) -> list[str]:
    """Paper comparison files, calibration files and paper markers under a run folder. A figure's
    markers of the paper's reported values carry a legend entry starting with "paper" ("paper",
    "paper (LLM judge)", "paper's runs per depth"), which matplotlib's SVG keeps as a text comment;
    a threshold the run uses that the paper chose ("threshold 0.25 (paper)") and the name of the
    paper-rate rule ("paper_rates", a rule the run applies; its legend label "paper-rate judge") are
    settings, not paper numbers."""
    paper_tables = ("paper_comparison", "calibration_fit", "calibration_scan")
    found = [p.name for p in out.rglob("*.csv") if p.stem in paper_tables]
    for svg in out.rglob("*.svg"):
        found += [f"{svg.name}: {m}" for m in re.findall(r"<!-- (.*?) -->", svg.read_text())
                  if re.match(r"paper\b(?!-rate judge)", m.lower())]
    for nb in out.glob("*.ipynb"):
        if "paper-compare" in nb.read_text():
            found.append(f"{nb.name}: a paper-vs-run table")
    return found


def test_the_trace_finder_sees_paper_markers_and_tables(tmp_path):
    """The check below can fail: a figure with the paper's values and a paper table are found."""
    from mechaudit.book.ch02_critique_depth import paper_values
    from mechaudit.plots.workflow import critique_depth_figure
    from mechaudit.report.outputs import save

    points = pd.DataFrame({"panel": ["same-depth", "extra"], "label": ["0", "0 v 1"], "instance": ["A", "A"],
                           "value": [10.0, 30.0]})
    save("depth", critique_depth_figure(points, caption="Backend: reference", paper=paper_values([(0, 1)])), tmp_path)
    save("paper_comparison", pd.DataFrame({"a": [1]}), tmp_path)
    assert sorted(_paper_traces(tmp_path)) == ["depth.svg: paper", "paper_comparison.csv"]


def test_their_data_gets_no_paper_numbers_through_any_route(shared_run):
    """The shared run on the example data: chapter 02 chose it through ``MECHAUDIT_DATA``, chapter
    05 through ``-p data_dir`` and the others through ``data_dir`` in the parameter file. No paper
    comparison, no calibration, no paper markers anywhere; and chapter 05's reused run folder holds
    none of an earlier run's files."""
    out = shared_run.out_dir
    assert _paper_traces(out) == []
    assert (out / "02_critique_depth" / "extra_divergence.csv").exists()
    assert (out / "05_perturbations" / "percent_different.csv").exists()
    assert not (out / "05_perturbations" / "paper_comparison.csv").exists()  # the earlier run's file is gone
    err = shared_run.stderr["05_perturbations"]
    assert "05_perturbations: " in err and "held an earlier run: replaced whole" in err
    for stem in ("02_critique_depth", "05_perturbations"):
        assert "No comparison with published numbers" in shared_run.notebook(stem).read_text(), stem
    assert "No calibration to published numbers" in shared_run.notebook("02_critique_depth").read_text()
