"""Re-running a chapter writes the same figure bytes: the SVG a chapter glues into its notebook is
IPython's inline rendering without the date and software stamp (which names the matplotlib version),
fonts are matplotlib's own, drawn as outlines, and the bytes do not change from one rendering to the
next."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import hashlib  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
from IPython.core.pylabtools import print_figure  # noqa: E402

from mechaudit.paths import REPO_ROOT  # noqa: E402
from mechaudit.plots.style import RC, caption, new_figure  # noqa: E402
from mechaudit.report.glue import StoredFigure  # noqa: E402
from mechaudit.report.outputs import save  # noqa: E402


def _figure():
    fig, ax = new_figure()
    ax.plot([0, 1, 2], [0.1, 0.7, 0.4], label="τ and κ")
    ax.set_title("Pairs judged different (%)")
    ax.legend()
    caption(fig, "Backend: reference")
    return fig


def test_the_glued_svg_is_the_inline_rendering_without_date_or_software_stamp():
    fig = _figure()
    stored = StoredFigure(fig)._repr_svg_()
    inline = print_figure(fig, "svg")  # what IPython's inline backend would store
    assert "<dc:date>" in inline and "Matplotlib v" in inline
    assert "<dc:date>" not in stored and "Matplotlib v" not in stored
    strip = re.compile(r"\s*<metadata>.*?</metadata>", re.S)
    assert strip.sub("", inline) == strip.sub("", stored)  # the same drawing, no stamp
    assert "<text" not in stored and "scale(0.11 -0.11)" in stored  # 11 pt text as glyph outlines
    assert repr(StoredFigure(fig)) == repr(fig) and repr(fig).startswith("<Figure size 900x540")
    plt.close(fig)


def test_rendering_twice_gives_the_same_bytes(tmp_path):
    fig = _figure()
    assert StoredFigure(fig)._repr_svg_() == StoredFigure(fig)._repr_svg_()
    save("a", fig, tmp_path / "one")
    save("a", fig, tmp_path / "two")
    for suffix in ("png", "svg"):
        assert (tmp_path / "one" / f"a.{suffix}").read_bytes() == (tmp_path / "two" / f"a.{suffix}").read_bytes()
    assert b"<dc:date>" not in (tmp_path / "one" / "a.svg").read_bytes()
    plt.close(fig)


def test_the_same_figure_in_another_process_gives_the_same_bytes():
    """Two fresh processes with different hash seeds draw the bytes this one draws."""
    code = ("import matplotlib; matplotlib.use('Agg'); import sys, hashlib; sys.path.insert(0, 'tests'); "
            "from test_figure_bytes import _figure; from mechaudit.report.glue import StoredFigure; "
            "print(hashlib.sha256(StoredFigure(_figure())._repr_svg_().encode()).hexdigest())")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                           cwd=REPO_ROOT, env={**os.environ, "PYTHONHASHSEED": seed}).stdout.strip()
            for seed in ("1", "2")]
    fig = _figure()
    assert runs[0] == runs[1] == hashlib.sha256(StoredFigure(fig)._repr_svg_().encode()).hexdigest()
    plt.close(fig)


def test_text_uses_matplotlibs_own_font():
    from matplotlib import font_manager

    fig = _figure()
    title = fig.axes[0].title
    assert RC["font.family"] == ["DejaVu Sans"] and title.get_fontfamily() == ["DejaVu Sans"]
    assert font_manager.findfont(title.get_fontproperties()).startswith(matplotlib.get_data_path())
    plt.close(fig)
