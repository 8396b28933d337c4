"""What the chapter modules (``mechaudit.book.ch*``) and notebooks share; no chapter module imports
another.

- :func:`chapter_settings` and :class:`ChapterContext`: a chapter's parameters, validated once by
  its model (:func:`backend_of` is the one place a backend name is parsed), and what its cells share.
- The status of a chapter's headline (where its numbers come from) and, beside it in the intro's
  results-at-a-glance table, the provenance (how they can relate to the paper's,
  ``mechaudit.report.provenance``) and the verdict; the placeholder a judge-model section shows when it did
  not run; and the judge models a chapter's parameters ask for (its cost plan and its steps agree).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from mechaudit import paper
from mechaudit.backends import Backend, caption_text
from mechaudit.book.params import check_value
from mechaudit.book.settings import CHAPTERS, RunSettings
from mechaudit.errors import use_warning_style
from mechaudit.llm import LLMClient, get_client
from mechaudit.llm.session import LLMSession
from mechaudit.report import provenance
from mechaudit.report.comparison import TOLERANCE, agrees, compare, compare_paper_default  # noqa: F401 (re-exported)
from mechaudit.report.facts import fact
from mechaudit.report.glue import glue_figure
from mechaudit.report.outputs import save
from mechaudit.report.tables import BookTable, book_table, use_book_tables
from mechaudit.schema import Benchmark

#: what the offline (``reference`` backend) numbers are, per kind of chapter
SIMULATED = "simulated (reference backend)"
LOCAL = "computed locally (no LLM)"
REFERENCE_JUDGE = "reference judge (not an LLM)"


def backend_of(params: Mapping[str, Any] | RunSettings) -> Backend:
    """The ``backend`` among ``params`` (a mapping or a chapter's settings; default reference),
    parsed: the one place a backend name becomes a :class:`Backend`; a bad name raises
    ``BackendError`` (one line)."""
    return Backend.parse(dict(params).get("backend", Backend.REFERENCE))


def chapter_settings(params: Mapping[str, Any], chapter: str) -> RunSettings:
    """The settings of ``chapter`` ("02_critique_depth"): its model (``mechaudit.book.settings``)
    with the values ``params`` gives its fields over the defaults. ``params``: a notebook's
    ``globals()``, where papermill put the injected parameters (``mechaudit execute`` rejects a name
    the model lacks before any kernel starts; other names are the notebook's own), or a mapping. A
    value that does not suit its field raises ``ParameterError``, one line naming the field."""
    model = CHAPTERS[chapter]
    given = {k: v for k, v in params.items() if k in model.model_fields}
    for name, value in given.items():
        check_value(name, value, model.model_fields[name].default, stem=chapter)
    return model(**given)


#: what a chapter prints in place of its "paper vs this run" table when it does not compare
PAPER_OFF = "No comparison with published numbers (compare_paper is false, or this is not the shipped data)."


class ChapterContext:
    """What a chapter's cells share, opened once in its set-up cell:
    ``ctx = ChapterContext.open(globals(), "02_critique_depth")``.

    ``settings``: the chapter's parameters, an instance of its model (``mechaudit.book.settings``;
    the cells read ``p = ctx.settings``, ``p.seed``); ``backend``: its backend, parsed; ``session``:
    this chapter's LLM session (budget and batch mode of every request it sends; its usage table);
    ``client``: the chapter's LLM client over that session, or None with the offline backend.
    Library steps take ``ctx.client``. ``out_dir``: the run folder of the chapter's tables and
    figures (None: nothing written); ``show_paper``: whether the chapter shows the paper's numbers
    (only on the shipped benchmark): the one switch every paper reference goes through (:meth:`open`
    sets the process's ``mechaudit.paper.shown`` to it). :meth:`table`, :meth:`figure` and
    :meth:`paper_table` save, number, caption and show in one call each; :meth:`save` only writes.
    """

    def __init__(self, settings: RunSettings, show_paper: bool = False) -> None:
        self.settings = settings
        self.backend = backend_of(settings)
        self.session = LLMSession(max_usd=getattr(settings, "max_usd", None),
                                  batch=getattr(settings, "llm_batch", False))
        self.client: LLMClient | None = None
        self.out_dir = settings.out_dir
        self.show_paper = show_paper

    @classmethod
    def open(cls, params: Mapping[str, Any], chapter: str) -> ChapterContext:
        """The context of ``chapter`` run with ``params`` (its notebook's ``globals()``;
        :func:`chapter_settings`): an LLM backend gets a client over the response cache in
        ``cache_dir``, spending from the chapter's own session."""

        use_warning_style()  # a torn cache line is reported once, as one line
        use_book_tables()  # every table in the book's format: labels, units, rounding
        settings = chapter_settings(params, chapter)
        show_paper = hasattr(settings, "compare_paper") and compare_paper_default(settings.compare_paper,
                                                                                   settings.data_dir)
        ctx = cls(settings, show_paper=show_paper)
        paper.show(show_paper)  # glue and library texts of this kernel follow the chapter's switch
        if ctx.llm:
            ctx.client = get_client(ctx.backend, cache_dir=getattr(settings, "cache_dir", None), session=ctx.session)
        return ctx

    @property
    def llm(self) -> bool:
        """True when the chapter's judges and workflow answer through an LLM (live or recorded)."""
        return self.backend.is_llm

    def status(self, model: str, offline: str) -> str:
        """The headline's status: ``"LLM (<model>, <backend>)"`` for an LLM backend, else ``offline``
        (e.g. ``SIMULATED``)."""
        return f"LLM ({model}, {self.backend.value})" if self.llm else offline

    def caption(self, extra: str = "") -> str:
        """A figure's caption under this chapter's backend: ``"Backend: <backend>"`` and ``extra`` after
        a full stop (``backends.caption_text``)."""
        return caption_text(self.backend.value, extra)

    def table(self, name: str, frame: pd.DataFrame | pd.Series, caption: str | None = None,
              label: str | None = None, shown: pd.DataFrame | pd.Series | None = None,
              **style: Any) -> BookTable:
        """``frame`` written to ``<out_dir>/<name>.csv`` (nothing without a run folder) and returned
        as the book shows it: numbered and captioned with ``caption`` and ``label`` (a ``tbl-...``
        name the prose cites); ``shown``: a reading view of the same numbers to show instead of
        ``frame``; ``style``: ``unit``, ``by_row``, ``classes`` of :func:`book_table`. Without
        :attr:`show_paper` the paper's columns (``mechaudit.paper.is_paper_column``) are left out
        of both."""
        frame, shown = (self._without_paper(f) for f in (frame, shown))
        save(name, frame, self.out_dir)
        return book_table(frame if shown is None else shown, caption=caption, name=label, **style)

    def _without_paper(self, frame: pd.DataFrame | pd.Series | None) -> pd.DataFrame | pd.Series | None:
        """``frame`` without its paper columns when the chapter does not show the paper's numbers."""
        if self.show_paper or not isinstance(frame, pd.DataFrame):
            return frame
        return frame.loc[:, [not paper.is_paper_column(c) for c in frame.columns]]

    def save(self, name: str, obj: Any) -> Any:
        """``obj`` (a table or figure) written to the run folder (:func:`~mechaudit.report.outputs.save`;
        nothing without one) and returned unchanged."""
        return save(name, obj, self.out_dir)

    def figure(self, name: str, fig: Any, glue_as: str | None = None) -> Any:
        """``fig`` written to ``<out_dir>/<name>.png`` and ``.svg``; with ``glue_as``, glued for the
        page under that key (shown, numbered and captioned where the page places it) and closed.
        Returns ``fig``."""
        save(name, fig, self.out_dir)
        return glue_figure(glue_as, fig) if glue_as else fig

    def paper_table(self, rows: Iterable[tuple] | pd.DataFrame, caption: str, label: str,
                    name: str = "paper_comparison", suite: str | None = None) -> BookTable | None:
        """The "paper vs this run" table (:func:`~mechaudit.report.comparison.compare` of ``rows``,
        or a comparison table already built) saved, numbered and captioned, when the chapter shows the
        paper's numbers; otherwise one printed line (:data:`PAPER_OFF`) and None."""
        if not self.show_paper:
            print(PAPER_OFF)
            return None
        table = rows if isinstance(rows, pd.DataFrame) else compare(rows, llm=self.llm, suite=suite)
        return self.table(name, table, caption=caption, label=label)

    def usage(self, pairs: int | None = None) -> pd.DataFrame:
        """The chapter's LLM usage table (:meth:`LLMSession.usage_table`), to be its last cell's
        output; one line saying so when the chapter made no LLM call."""
        table = self.session.usage_table(pairs) if self.llm else pd.DataFrame()
        if table.empty:
            offline = "" if self.llm else " is offline"
            return pd.DataFrame({"LLM usage": [f"no LLM calls (backend {self.backend.value!r}{offline})"]})
        return table

    def close(self) -> None:
        """Close the session (its progress stream)."""
        self.session.close()

    def __enter__(self) -> ChapterContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def axis_placeholder(llm: bool, models: Sequence[str]) -> pd.DataFrame:
    """The one-row table a judge-model section shows when it did not run, and why."""
    why = "offline backend" if not llm else f"one judge model ({models[0]})"
    return pd.DataFrame({"status": [f"not run: {why}"]}, index=pd.Index(["judge models"], name="axis"))


def judge_models(p: Mapping[str, Any]) -> list[str]:
    """The judge models a chapter runs, main judge first: ``judge_model`` (chapters 02, 05, 06)
    followed by ``judge_models`` (the judge-model axis; chapter 07 has only this list), each name once."""
    first = [p["judge_model"]] if "judge_model" in p else []
    return list(dict.fromkeys([*first, *(p.get("judge_models") or [])]))


def simulation_only_note(backend: Backend) -> None:
    """LLM backends only: print that the chapter runs the simulator anyway (it needs the simulator's
    ground truth) and sends no LLM request."""
    if backend.is_llm:
        print(f"backend {backend.value!r}: this chapter is simulation-only (it needs the simulator's ground truth), "
              "so it runs with the simulator and sends no LLM request.")


# --------------------------------------------------------------------------- provenance and verdict

@dataclass(frozen=True)
class Part:
    """One number of a row of the intro's results table: its name in the provenance cell, its key
    (``mechaudit.report.provenance``), the perturbation suite it was measured on (None: not a suite result)
    and whether the row shows it only offline."""

    name: str
    key: str
    suite: str | None = None
    offline_only: bool = False


_FSS = "perturbations.first_step_swapped_pct_different"
#: the numbers of each chapter's row in the intro's results table
HEADLINE_PARTS: dict[str, tuple[Part, ...]] = {
    "ch02": (Part("0 v 1", "critique_depth.extra_divergence_pp.k0_vs_k1"),
             Part("1 v 5", "critique_depth.extra_divergence_pp.k1_vs_k5")),
    "ch02b": (Part("bias and size", "book.validity"),),
    "ch02c": (Part("power", "book.power"),),
    "ch03": (Part("conceded", "engagement.conceded_pct"),),
    "ch04": (Part("distinct mechanisms", "book.diversity.clusters"),),
    "ch05": (Part("text rules on the reworded suite", f"{_FSS}.tfidf", "reworded"),
             Part("LLM judge", f"{_FSS}.llm"),
             Part("reference judge", "book.perturbations.reference_judge"),
             Part("text rules on the template-built suite", f"{_FSS}.tfidf", "template")),
    "ch06": (Part("none", "rubric.first_step_swapped_pct_different.none"),
             Part("full", "rubric.first_step_swapped_pct_different.full"),
             Part("step", "rubric.first_step_swapped_pct_different.step"),
             Part("reference judges", "book.rubric.reference_judges", offline_only=True)),
    "ch07": (Part("agreement", "sensitivity.raw_agreement_pct_low"), Part("κ", "sensitivity.kappa_low")),
    "ch08": (Part("τ error", "book.tau.recovery"),),
}
def headline_provenance(chapter: str, llm: bool, values: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """The intro row of ``chapter`` ("ch02", ...): its provenance cell (``provenance.summary``) and
    its verdict (``provenance.verdict``); ``llm``: whether its numbers came from an LLM backend.
    ``values``: the row's numbers by part name, used to judge agreement with the paper under an LLM
    backend."""
    parts = [p for p in HEADLINE_PARTS[chapter] if not (llm and p.offline_only)]
    found = [(p.name, provenance.of(p.key, llm, suite=p.suite)) for p in parts]
    checks = [agrees(p.key, values.get(p.name)) for p in parts] if values else [None]
    verdict = provenance.verdict([v for _, v in found], llm, all(c is True for c in checks))
    return provenance.summary(found), verdict


def source_note(sources: Mapping[str, str]) -> str:
    """One line for a chapter that reads expensive fixed computations (``workflow.committed.cached``):
    which tables were read from ``data/computed/`` and which were computed now (their settings differ)."""
    read = [n for n, v in sources.items() if v == "committed"]
    now = [n for n, v in sources.items() if v != "committed"]
    if not now:
        return ("Read from data/computed/ (written by `mechaudit calibrate` with these settings; the "
                "test suite re-checks them).")
    return (f"Computed in this run (their settings differ from the committed ones): {', '.join(now)}"
            + (f"; read from data/computed/: {', '.join(read)}." if read else "."))


@dataclass(frozen=True)
class SwapShares:
    """% of a suite's valid first-step swaps each rule calls "different mechanism" (chapter 09 glues
    one per suite: ``ch09_fss_*`` template-built, ``ch09_rw_fss_*`` reworded); ``None``: no such suite."""

    fss_tfidf: float | None = fact(unit="%", digits=0, missing="not run", doc="TF-IDF rule")
    fss_embedding: float | None = fact(unit="%", digits=0, missing="not run", doc="embedding rule")
    fss_reference: float | None = fact(unit="%", digits=0, missing="not run", doc="reference judge")


def swap_shares(pct: pd.DataFrame, suite: str) -> SwapShares:
    """:class:`SwapShares` of ``suite`` from a percent-different table indexed (suite, kind) with the
    rule columns "TF-IDF", "embeddings" and "reference judge" (``rules.percent_different`` per suite)."""
    if (suite, "first_step_swapped") not in pct.index:
        return SwapShares(None, None, None)
    row = pct.loc[(suite, "first_step_swapped")]
    return SwapShares(fss_tfidf=float(row["TF-IDF"]), fss_embedding=float(row["embeddings"]),
                      fss_reference=float(row["reference judge"]))


@dataclass(frozen=True)
class YourData:
    """What chapter 09 says about the folder it audits (glued under ``ch09``)."""

    n_hypotheses: int = fact(unit="hypotheses", doc="hypotheses in the folder")
    data: str = fact(doc='"the example set" or "the folder <name>"')
    questions: str = fact(doc='"<n> question(s)"')
    instances: str = fact(doc="each instance's id and title")


def your_data(bench: Benchmark, folder: Path, own: bool) -> YourData:
    """:class:`YourData` of ``bench``, loaded from ``folder`` (``own``: a folder the reader gave)."""
    n = len(bench.instances)
    return YourData(n_hypotheses=len(bench.hypotheses), data=f"the folder {folder.name}" if own else "the example set",
                    questions=f"{n} question{'' if n == 1 else 's'}",
                    instances="; ".join(f"{i.id}, {i.title}" for i in bench.instances))


def broken_copy(folder: Path, bench: Benchmark) -> Path:
    """A copy of ``folder`` in a new temporary directory (its parent; the caller removes it) whose
    first hypothesis names a misspelt first step: a file that must fail to load."""
    broken = Path(tempfile.mkdtemp()) / "broken"
    shutil.copytree(folder, broken)
    records = [h.model_dump(mode="json") for h in bench.hypotheses]
    records[0]["chain"][0]["id"] += "X"
    (broken / "hypotheses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return broken
