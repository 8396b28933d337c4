"""The previous release's calls still work for one release, each warning once with the new call
(``mechaudit.deprecation``); the API page lists every deprecated call; the per-kind bar chart of
any rules is back and ``rubric_bars`` refuses columns it cannot place."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import inspect  # noqa: E402
import re  # noqa: E402
import warnings  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

import mechaudit.plots as plots  # noqa: E402
from mechaudit import deprecation  # noqa: E402
from mechaudit.errors import MechauditError  # noqa: E402
from mechaudit.paths import REPO_ROOT  # noqa: E402
from mechaudit.plots import problem, robustness, rubric, rules, tau, workflow  # noqa: E402
from mechaudit.rules.audit import (  # noqa: E402
    paper_percent_different,
    percent_different,
    suite_counts,
    sweep_percent_different,
)

KINDS = ["wording_only", "wording_only", "first_step_swapped", "first_step_swapped", "first_step_swapped"]
DECISIONS = pd.DataFrame({"tfidf": [True, True, True, False, True], "reference": [True, True, False, False, False]})


@pytest.fixture(autouse=True)
def fresh_warnings():
    deprecation._warned.clear()
    yield
    deprecation._warned.clear()


def _future(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` and the FutureWarning messages it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)
    return out, [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]


def test_percent_different_with_positional_kinds_warns_once_and_agrees():
    new = percent_different(DECISIONS, kinds=KINDS, order=["first_step_swapped", "wording_only"])
    old, messages = _future(percent_different, DECISIONS, KINDS, ["first_step_swapped", "wording_only"])
    pd.testing.assert_frame_equal(old, new)
    assert messages == ["percent_different: passing kinds, order by position is deprecated and will be removed in "
                        "the next release; call percent_different(decisions, kinds=kinds, order=order)"]
    assert new.loc["first_step_swapped", "reference"] == 100.0
    assert new.loc["first_step_swapped", "tfidf"] == pytest.approx(100 / 3)
    again, messages = _future(percent_different, DECISIONS, KINDS)
    assert messages == []  # once per process
    with pytest.raises(TypeError, match="multiple values for 'kinds'"):
        percent_different(DECISIONS, KINDS, kinds=KINDS)


def test_suite_counts_and_paper_percent_different_in_the_old_order():
    valid = [True, False, True, True, True]
    new = suite_counts(valid, kinds=KINDS)
    old, messages = _future(suite_counts, KINDS, valid)
    pd.testing.assert_frame_equal(old, new)
    assert new.loc["wording_only"].tolist() == [2, 1, 1]
    assert messages and "call suite_counts(valid, kinds=kinds, order=order)" in messages[0]
    order = ["wording_only", "no_such_kind"]
    pd.testing.assert_frame_equal(_future(suite_counts, KINDS, valid, order)[0],
                                  suite_counts(valid, kinds=KINDS, order=order))
    cols = {"TF-IDF": "tfidf"}
    old, messages = _future(paper_percent_different, cols, ["first_step_swapped"])
    pd.testing.assert_frame_equal(old, paper_percent_different(cols, kinds=["first_step_swapped"]))
    assert "call paper_percent_different(columns, kinds=kinds)" in messages[0]


def test_sweep_percent_different_in_both_old_orders():
    sim = np.array([0.9, 0.8, 0.2, 0.5, 0.1])
    new = sweep_percent_different(sim, [0.3, 0.6], kinds=KINDS)
    first, messages = _future(sweep_percent_different, sim, KINDS, [0.3, 0.6])  # kinds before thresholds
    second, _ = _future(sweep_percent_different, sim, [0.3, 0.6], KINDS)  # kinds last, by position
    pd.testing.assert_frame_equal(first, new)
    pd.testing.assert_frame_equal(second, new)
    assert messages == ["sweep_percent_different: sweep_percent_different(similarity, kinds, thresholds) or "
                        "(similarity, thresholds, kinds) is deprecated and will be removed in the next release; "
                        "call sweep_percent_different(similarity, thresholds, kinds=kinds)"]
    swapped = new.set_index(["threshold", "kind"])["pct_different"]
    assert swapped[(0.3, "first_step_swapped")] == pytest.approx(200 / 3)
    assert swapped[(0.6, "first_step_swapped")] == 100.0 and swapped[(0.6, "wording_only")] == 0.0


def _pct():
    return pd.DataFrame({"reference full": [0.0, 100.0], "llm full": [0.0, 83.0]},
                        index=["wording_only", "first_step_swapped"])


@pytest.mark.parametrize("call", ["keyword", "positional"])
def test_a_figure_called_with_a_backend_draws_the_old_caption(call):
    if call == "keyword":
        fig, messages = _future(plots.rubric_bars, _pct(), None, backend="replay", extra="judge claude")
    else:
        fig, messages = _future(plots.rubric_bars, _pct(), None, "replay", "judge claude")
    assert fig.get_supxlabel() == "Backend: replay. judge claude"
    assert messages == ["rubric_bars: the backend argument is deprecated and will be removed in the next release; "
                        "call rubric_bars(pct, paper, ..., caption='Backend: replay. judge claude')"]
    plt.close(fig)


def test_the_old_positional_backend_keeps_the_other_arguments_in_place():
    table = pd.DataFrame([{"target_pp": 2.0, "truth_pp": 2.1, "n_instances": 4, "role": "ladder",
                           "runs_per_depth": r, "power": 0.1 * r, "power_se": 0.02} for r in (2, 4, 8)])
    old, messages = _future(robustness.power_figure, table, "reference", 0.5)  # (table, backend, level)
    new = robustness.power_figure(table, 0.5, caption="Backend: reference")
    caption = "Backend: reference. open squares: twice the instances"
    assert messages and old.get_supxlabel() == new.get_supxlabel() == caption
    levels = [[tuple(line.get_ydata()) for line in ax.get_lines()] for ax in (old.axes[0], new.axes[0])]
    assert levels[0] == levels[1] and (0.5, 0.5) in levels[0]  # the level line at 0.5 in both
    keyword, _ = _future(robustness.power_figure, table, 0.5, backend="reference")
    assert keyword.get_supxlabel() == new.get_supxlabel()
    with pytest.raises(TypeError, match="caption or the deprecated backend"):
        robustness.power_figure(table, backend="reference", caption="x")
    for fig in (old, new, keyword):
        plt.close(fig)


def test_a_text_parameter_in_the_old_position_keeps_its_new_meaning():
    points = pd.DataFrame({"panel": ["same-depth", "extra"], "label": ["0", "0 v 1"], "instance": ["A"] * 2,
                           "value": [10.0, 30.0]})
    fig, messages = _future(plots.critique_depth_figure, points, "a title")
    assert messages == [] and fig.get_supxlabel() == ""
    plt.close(fig)


def _figure_functions():
    """Every public function of the figure modules (each draws a figure; under ``make mutation`` not
    mutmut's copies of each function, named ``x_<name>__mutmut_<n>``)."""
    modules = (problem, robustness, rubric, rules, tau, workflow)
    return {f"{m.__name__}.{name}" for m in modules for name, fn in vars(m).items()
            if inspect.isfunction(fn) and fn.__module__ == m.__name__ and not name.startswith("_")
            and "__mutmut_" not in name}


def test_every_figure_that_took_a_backend_has_a_deprecated_path():
    figures = _figure_functions()
    assert len(figures) == 24
    assert {k for k in deprecation.DEPRECATED if k.startswith("mechaudit.plots.")} == figures


def test_get_client_with_positional_options_warns_once_and_keeps_them(tmp_path):
    from mechaudit.llm import get_client

    client, messages = _future(get_client, "replay", tmp_path, None, 3)
    assert (client.max_concurrency, client.cache.directory, client.send) == (3, tmp_path, False)
    assert messages == ["get_client: passing http_client, max_concurrency by position is deprecated and will be "
                        "removed in the next release; call get_client(backend, cache_dir, http_client=http_client, "
                        "max_concurrency=max_concurrency)"]
    with pytest.raises(TypeError, match="got multiple values for 'max_concurrency'"):
        get_client("replay", tmp_path, None, 3, max_concurrency=2)


def test_the_api_page_lists_every_deprecated_call():
    import mechaudit.llm.client  # noqa: F401 - each registers its deprecated calls
    import mechaudit.rules.audit  # noqa: F401
    import mechaudit.rules.llm_judge  # noqa: F401

    page = (REPO_ROOT / "book" / "api.md").read_text(encoding="utf-8")
    section = page.split("### Deprecated calls", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`(?:\w+\.)*(\w+)`", section))  # a name, or the last part of a dotted path
    names = {key.rsplit(".", 1)[1] for key in deprecation.DEPRECATED}
    assert names <= listed, f"book/api.md does not list: {sorted(names - listed)}"
    assert len(names) == 47


def test_perturbation_bars_draws_any_rules_per_kind():
    pct = pd.DataFrame({"tfidf": [0.0, 0.0], "embedding": [2.0, 8.0], "reference": [0.0, 100.0],
                        "llm": [np.nan, np.nan]}, index=["wording_only", "first_step_swapped"])
    fig = plots.perturbation_bars(pct, pd.DataFrame({"llm": [0.0, 83.0]}, index=pct.index))
    ax = fig.axes[0]
    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert sorted(round(b.get_width(), 6) for b in bars) == sorted([0.0, 0.0, 2.0, 8.0, 0.0, 100.0, 0.0, 0.0])
    texts = {t.get_text() for t in ax.texts}
    assert {"TF-IDF: 0", "Embedding (MiniLM): 8", "Reference judge: 100", "LLM judge: not run"} <= texts
    diamonds = ax.collections[0].get_offsets()
    assert sorted(np.asarray(diamonds)[:, 0].tolist()) == [0.0, 83.0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["Wording only", "First step swapped"]
    plt.close(fig)


@pytest.mark.parametrize("column", ["tfidf", "embedding", "reference", "llm fuller", "judge full"])
def test_rubric_bars_refuses_a_column_it_cannot_place(column):
    pct = _pct().assign(**{column: [0.0, 8.0]})
    with pytest.raises(MechauditError) as info:
        plots.rubric_bars(pct, None)
    assert str(info.value).startswith(f"field 'pct': rubric_bars cannot place column {column!r}: ")
    assert str(info.value).endswith("draw other rules with perturbation_bars")


def test_moved_modules_import_by_their_old_path_with_one_warning():
    import importlib
    import sys
    import warnings

    for old, new in deprecation.MOVED_MODULES.items():
        sys.modules.pop(old, None)
        deprecation._warned.discard(old)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = importlib.import_module(old)
        target = importlib.import_module(new)
        assert [str(w.message) for w in caught if w.category is FutureWarning] == [
            f"{old} is deprecated and will be removed in the next release; import {new}"]
        public = [name for name in dir(target) if not name.startswith("_")]
        assert public and all(getattr(module, name) is getattr(target, name) for name in public)
        assert target.__name__ == new and target.__spec__.name == new  # the new module is left as it is
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("mechaudit.no_such_module")


def test_the_comparison_names_still_import_from_paper_with_a_warning():
    import warnings

    from mechaudit import paper
    from mechaudit.report import comparison

    deprecation._warned.discard("mechaudit.paper.compare")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert paper.compare is comparison.compare
    assert len(caught) == 1 and "from mechaudit.report.comparison import compare" in str(caught[0].message)
    with pytest.raises(AttributeError):
        paper.no_such_name  # noqa: B018


def test_backend_argument_turns_the_old_backend_into_a_caption_on_a_new_function(monkeypatch):
    """Decorating a fresh function (the shipped ones were decorated at import): ``backend=`` or a
    string where the new signature has none becomes the caption; a string parameter keeps strings."""
    from mechaudit.deprecation import backend_argument

    monkeypatch.setattr(deprecation, "DEPRECATED", {})  # the book's list stays the shipped one

    @backend_argument(1, extra=True)
    def draw(table, title: str = "", *, caption=None):
        return table, title, caption

    @backend_argument(1)
    def plot(table, size=3, *, caption=None):
        return table, size, caption

    assert _future(draw, "t", "a title")[0] == ("t", "a title", None)  # a str parameter: not the old form
    out, messages = _future(draw, "t", backend="replay", extra="note")
    assert out == ("t", "", "Backend: replay. note")
    assert messages == ["draw: the backend argument is deprecated and will be removed in the next release; call "
                        "draw(table, ..., caption='Backend: replay. note')"]
    out, messages = _future(plot, "t", "replay")
    assert out == ("t", 3, "Backend: replay")
    assert messages[0].endswith("call plot(table, ..., caption='Backend: replay')")
    assert _future(plot, "t", 5) == (("t", 5, None), [])
    listed = deprecation.DEPRECATED[f"{draw.__module__}.{draw.__qualname__}"]
    assert listed == ("draw(table, backend, extra, ...)", "draw(table, ..., caption='Backend: <backend>. <extra>')")


def test_keywords_were_positional_and_moved_names_list_the_old_and_the_new_call(monkeypatch):
    from mechaudit.deprecation import keywords_were_positional, moved_names
    from mechaudit.report.comparison import compare

    monkeypatch.setattr(deprecation, "DEPRECATED", {})

    @keywords_were_positional("order")
    def count(a, b, *, order=None):
        return a, b, order

    assert deprecation.DEPRECATED[f"{count.__module__}.{count.__qualname__}"] == ("count(a, b, order)",
                                                                                   "count(a, b, order=order)")
    getattr_ = moved_names("mechaudit.nowhere", {"compare": "mechaudit.report.comparison"})
    found, messages = _future(getattr_, "compare")
    assert found is compare and "mechaudit.nowhere.compare" in deprecation.DEPRECATED
    assert messages == ["compare: importing it from mechaudit.nowhere is deprecated and will be removed in the next "
                        "release; call from mechaudit.report.comparison import compare"]


def test_backend_argument_without_extra_takes_no_extra_text(monkeypatch):
    from mechaudit.deprecation import backend_argument

    monkeypatch.setattr(deprecation, "DEPRECATED", {})

    @backend_argument(1)
    def plot(table, size=3, *, caption=None):
        return table, size, caption

    assert deprecation.DEPRECATED[f"{plot.__module__}.{plot.__qualname__}"] == (
        "plot(table, backend, ...)", "plot(table, ..., caption='Backend: <backend>')")
    assert _future(plot, "t", "replay", 5)[0] == ("t", 5, "Backend: replay")  # the old (table, backend, size)


def test_reordered_turns_an_old_call_into_the_new_one_with_one_warning(monkeypatch):
    from mechaudit.deprecation import reordered

    monkeypatch.setattr(deprecation, "DEPRECATED", {})

    @reordered("swap(b, a)", "swap(a, b)", lambda args, kw: (args[::-1], kw) if isinstance(args[0], str) else None)
    def swap(a, b):
        return a, b

    key = f"{swap.__module__}.{swap.__qualname__}"
    assert deprecation.DEPRECATED[key] == ("swap(b, a)", "swap(a, b)")
    assert _future(swap, 1, "x") == ((1, "x"), [])
    assert _future(swap, "x", 1) == ((1, "x"), ["swap: swap(b, a) is deprecated and will be removed in the next "
                                                "release; call swap(a, b)"])
    assert key in deprecation._warned


def test_warn_once_points_at_the_caller_of_the_deprecated_function(monkeypatch):
    """stacklevel 3: past warn_once and the deprecated function, at the line that called it (the
    warning's frame is checked through the arguments: under mutmut a trampoline adds frames)."""
    from mechaudit.deprecation import warn_once

    sent = []
    monkeypatch.setattr(deprecation.warnings, "warn", lambda *args, **kwargs: sent.append((args, kwargs)))
    warn_once("k", "old call")
    warn_once("k", "old call")  # once per key
    warn_once("other", "moved", stacklevel=4)
    assert sent == [(("old call", FutureWarning), {"stacklevel": 3}), (("moved", FutureWarning), {"stacklevel": 4})]


def test_moved_names_list_the_old_and_the_new_import(monkeypatch):
    from mechaudit.deprecation import moved_names

    monkeypatch.setattr(deprecation, "DEPRECATED", {})
    moved_names("mechaudit.nowhere", {"compare": "mechaudit.report.comparison"})
    assert deprecation.DEPRECATED == {"mechaudit.nowhere.compare": ("from mechaudit.nowhere import compare",
                                                                    "from mechaudit.report.comparison import compare")}


def test_install_moved_modules_adds_its_finder_once(monkeypatch):
    import sys

    others = [f for f in sys.meta_path if not isinstance(f, deprecation._MovedModules)]
    monkeypatch.setattr(sys, "meta_path", list(others))
    deprecation.install_moved_modules()
    deprecation.install_moved_modules()
    assert [type(f) for f in sys.meta_path if f not in others] == [deprecation._MovedModules]
    assert deprecation.DEPRECATED["mechaudit.tables"] == ("import mechaudit.tables", "import mechaudit.report.tables")
