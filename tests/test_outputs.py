"""Tables and figures to disk: ``mechaudit.report.outputs.save`` and ``execute --out`` setting ``out_dir``."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from mechaudit.book.execute import execute_chapters, inject_out_dir
from mechaudit.book.params import Chapter, notebook_parameters  # noqa: E402
from mechaudit.errors import MechauditError  # noqa: E402
from mechaudit.paths import REPO_ROOT  # noqa: E402
from mechaudit.report.outputs import save  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _figure():
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1, 2], [1, 0, 2], label="line")
    ax.set_title("t")
    return fig


def test_table_round_trips(tmp_path):
    table = pd.DataFrame({"kind": ["a", "b"], "pct": [12.5, 1 / 3]})
    assert save("rates", table, tmp_path / "ch") is table, "save returns what it saved (to show it)"
    path = tmp_path / "ch" / "rates.csv"
    back = pd.read_csv(path)
    assert list(back.columns) == ["kind", "pct"], "a default RangeIndex is not written"
    pd.testing.assert_frame_equal(back, table)
    labelled = table.set_index("kind")
    save("rates_by_kind", labelled, tmp_path / "ch")
    path = tmp_path / "ch" / "rates_by_kind.csv"
    pd.testing.assert_frame_equal(pd.read_csv(path, index_col="kind"), labelled)
    save("series", pd.Series([1, 2], index=pd.Index(["x", "y"], name="k"), name="n"), tmp_path)
    path = tmp_path / "series.csv"
    assert path.read_text().splitlines() == ["k,n", "x,1", "y,2"]


def test_figure_png_and_svg_are_reproducible(tmp_path):
    fig = _figure()
    assert save("fig_rates", fig, tmp_path / "a") is fig
    png, svg = tmp_path / "a" / "fig_rates.png", tmp_path / "a" / "fig_rates.svg"
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert ET.parse(svg).getroot().tag.endswith("svg")
    save("fig_rates", _figure(), tmp_path / "b")
    png2, svg2 = tmp_path / "b" / "fig_rates.png", tmp_path / "b" / "fig_rates.svg"
    assert svg.read_bytes() == svg2.read_bytes() and png.read_bytes() == png2.read_bytes()
    assert b"<dc:date>" not in svg.read_bytes()
    plt.close("all")


def test_saving_does_not_change_the_shown_figure(tmp_path):
    """A figure with constrained layout changes a little at each draw: ``save`` must draw a copy."""
    import io

    from mechaudit.plots import divergence_heatmaps

    def book_figure():
        D = np.array([[0, .2, .5, .6], [.2, 0, .4, .5], [.5, .4, 0, .1], [.6, .5, .1, 0]])
        return divergence_heatmaps({"exact": D, "initiator": D / 2}, list("abcd"), n_a=2, caption="Backend: reference")

    def shown(fig):  # what the notebook's inline backend stores
        buf = io.BytesIO()
        fig.savefig(buf, format="png", bbox_inches="tight")
        return buf.getvalue()

    drawn = book_figure()
    shown(drawn)
    assert shown(drawn) != shown(book_figure()), "premise: drawing first changes the next rendering"
    fig = book_figure()
    save("fig", fig, tmp_path)
    assert shown(fig) == shown(book_figure())
    plt.close("all")


def _draw_in_a_new_process(folder):
    """``python -m mechaudit.report.outputs FOLDER`` as ``mechaudit execute`` runs it, standard input closed."""
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "mechaudit.report.outputs", str(folder)], input="",
                          capture_output=True, text=True, timeout=120, env={**os.environ, "MPLBACKEND": "Agg"})


def test_stored_figures_are_drawn_elsewhere_into_the_same_files(tmp_path):
    """In a folder marked DEFER_MARK, ``save`` only stores the figure; another process draws it, under
    the settings in force when it was saved (here a tick size no fresh process has), to the bytes
    ``save`` itself writes."""
    from mechaudit.report.outputs import DEFER_MARK

    with matplotlib.rc_context({"xtick.labelsize": 15, "ytick.labelsize": 6}):
        fig = _figure()
        (tmp_path / "deferred").mkdir()
        (tmp_path / "deferred" / DEFER_MARK).touch()
        assert save("fig", fig, tmp_path / "deferred") is fig
        save("fig", fig, tmp_path / "direct")
    assert sorted(p.name for p in (tmp_path / "deferred").iterdir()) == sorted([DEFER_MARK, ".fig.figure"])
    proc = _draw_in_a_new_process(tmp_path / "deferred")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "deferred").iterdir()) == sorted([DEFER_MARK, "fig.png", "fig.svg"])
    for name in ("fig.png", "fig.svg"):
        assert (tmp_path / "deferred" / name).read_bytes() == (tmp_path / "direct" / name).read_bytes(), name
    plain = tmp_path / "plain"
    save("fig", _figure(), plain)  # the same figure under the default tick sizes: other bytes
    assert (plain / "fig.png").read_bytes() != (tmp_path / "direct" / "fig.png").read_bytes()
    plt.close("all")


def test_a_stored_figure_that_cannot_be_drawn_is_one_line_and_status_1(tmp_path):
    (tmp_path / ".broken.figure").write_bytes(b"not a pickle")
    proc = _draw_in_a_new_process(tmp_path)
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "UnpicklingError" in proc.stderr and not (tmp_path / "broken.png").exists()


def test_no_out_dir_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    table, fig = pd.DataFrame({"a": [1]}), _figure()
    assert save("rates", table, None) is table and save("fig", fig, None) is fig
    assert list(tmp_path.iterdir()) == []
    plt.close("all")


@pytest.mark.parametrize("name, obj, message", [
    ("bad/name", pd.DataFrame(), "not a file stem"),
    ("", pd.DataFrame(), "not a file stem"),
    ("arr", np.zeros(3), "cannot save a ndarray"),
])
def test_bad_input_is_an_error_even_without_out_dir(name, obj, message):
    with pytest.raises(MechauditError, match=message):
        save(name, obj, None)


def test_out_dir_that_is_a_file_is_one_error(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(MechauditError, match=r"field 'out_dir': cannot create the folder"):
        save("t", pd.DataFrame({"a": [1]}), tmp_path / "f" / "sub")


CHAPTER = '''# %% tags=["parameters"]
seed = 0
out_dir = None

# %%
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from mechaudit.report.outputs import save

table = pd.DataFrame({"x": [1, 2, 3], "y": [seed, 2.5, 3.5]})
save("table", table, out_dir)
fig, ax = plt.subplots(figsize=(2, 2))
ax.plot(table.x, table.y)
save("figure", fig, out_dir)
'''


HEADER = """# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---
"""


def _chapter(folder, text=CHAPTER, stem="99_demo"):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}.py"
    path.write_text(HEADER + text)
    return path


def test_execute_out_writes_tables_and_figures_per_chapter(tmp_path):
    src = _chapter(tmp_path / "nb")
    run = tmp_path / "run"
    (executed,) = execute_chapters([src], params_file=None, overrides={"seed": 4}, out_dir=run,
                                   stream=open("/dev/null", "w"))
    assert executed == run / "99_demo.ipynb"
    table = pd.read_csv(run / "99_demo" / "table.csv")
    assert table["y"].tolist() == [4, 2.5, 3.5]
    assert (run / "99_demo" / "figure.png").read_bytes()[:8] == PNG_MAGIC
    assert ET.parse(run / "99_demo" / "figure.svg").getroot().tag.endswith("svg")
    injected = [c for c in nbformat.read(executed, as_version=4).cells
                if "injected-parameters" in c.metadata.get("tags", [])]
    assert "out_dir = " in injected[0].source and "seed = 4" in injected[0].source


def test_out_dir_can_be_kept_off_and_is_only_given_to_chapters_that_define_it(tmp_path):
    src = _chapter(tmp_path / "nb")
    execute_chapters([src], params_file=None, overrides={"out_dir": None}, out_dir=tmp_path / "run",
                     stream=open("/dev/null", "w"))
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["99_demo.ipynb"]
    plain = Chapter(_chapter(tmp_path / "nb", '# %% tags=["parameters"]\nseed = 0\n', stem="98_plain"))
    assert inject_out_dir(plain, {"seed": 1}, tmp_path / "run") == {"seed": 1}
    demo = Chapter(src)
    assert inject_out_dir(demo, {}, None) == {}
    assert inject_out_dir(demo, {}, tmp_path / "run") == {"out_dir": str((tmp_path / "run" / "99_demo").resolve())}


CHAPTERS = sorted((REPO_ROOT / "notebooks").glob("*.py"))


def paper_table_names(code: str) -> list[str]:
    """The file stem of every ``ctx.paper_table(...)`` call in ``code``: its ``name=`` or the default."""
    import ast

    return [next((k.value.value for k in node.keywords if k.arg == "name"), "paper_comparison")
            for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and node.func.attr == "paper_table"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "ctx"]


@pytest.mark.parametrize("source", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_saves_its_figures_and_tables(source):
    """Each chapter takes ``out_dir`` (default None) and saves every figure it shows, under unique names."""
    assert notebook_parameters(source).get("out_dir", "undefined") is None, f"{source.stem} has no out_dir = None"
    lines = source.read_text(encoding="utf-8").splitlines()
    unsaved = [i + 1 for i, line in enumerate(lines) if line == "plt.show()"
               and not re.fullmatch(r'save\("[\w.-]+", fig, out_dir\)', lines[i - 1])]
    assert not unsaved, f"{source.name}: plt.show() without save(..., fig, out_dir) before it, lines {unsaved}"
    text = "\n".join(lines)
    calls = re.findall(r'save\("([\w.-]+)", (fig, )?', text)  # outputs.save: a figure or a table
    calls += [(name, "fig, ") for name in re.findall(r'ctx\.figure\("([\w.-]+)"', text)]
    calls += [(name, "") for name in re.findall(r'ctx\.table\("([\w.-]+)"', text)]
    calls += [(name, "") for name in paper_table_names(text)]
    assert calls, f"{source.stem} saves nothing"
    for kind in ("fig, ", ""):
        names = [name for name, is_fig in calls if is_fig == kind]
        assert len(names) == len(set(names)), f"{source.stem}: a name is saved twice: {sorted(names)}"


def test_save_errors_name_the_field_and_the_folder(tmp_path):
    with pytest.raises(MechauditError, match=r"^field 'name': 'a b' is not a file stem"):
        save("a b", pd.DataFrame({"x": [1]}), tmp_path)
    blocker = tmp_path / "taken"
    blocker.write_text("a file where the folder should go\n")
    with pytest.raises(MechauditError, match=rf"^{re.escape(str(blocker / 'sub'))}: field 'out_dir': cannot create"):
        save("t", pd.DataFrame({"x": [1]}), blocker / "sub")


def _tiny_figure():
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1], [1, 0])
    return fig


def test_pending_figures_are_drawn_in_this_process_and_their_stored_files_removed(tmp_path, monkeypatch, capsys):
    """``write_pending_figures`` and ``_serve`` (the loop of ``python -m mechaudit.report.outputs``), in-process:
    a closed standard input ends the loop after the figures stored so far are drawn."""
    import io

    from mechaudit.report import outputs

    (tmp_path / outputs.DEFER_MARK).touch()
    for name in ("b", "a"):
        save(name, _tiny_figure(), tmp_path)
    assert outputs.write_pending_figures(tmp_path) == ["a", "b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([outputs.DEFER_MARK, "a.png", "a.svg", "b.png",
                                                                 "b.svg"])
    assert (tmp_path / "a.png").read_bytes()[:8] == PNG_MAGIC
    assert outputs.write_pending_figures(str(tmp_path)) == []  # a folder given as text; nothing left
    save("c", _tiny_figure(), tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert outputs._serve(tmp_path) == 0 and (tmp_path / "c.svg").is_file() and not (tmp_path / ".c.figure").exists()
    (tmp_path / ".broken.figure").write_bytes(b"not a pickle")
    assert outputs._serve(tmp_path) == 1
    assert capsys.readouterr().err.startswith("UnpicklingError: ")
    plt.close("all")
