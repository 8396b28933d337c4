"""The count of kernels per chapter that ``make test`` checks at the end (``kernel_count``)."""

from __future__ import annotations

import kernel_count

from mechaudit.book.execute import execute_chapter
from mechaudit.book.params import Chapter

HEADER = ("# ---\n# jupyter:\n#   kernelspec:\n#     display_name: Python 3\n#     language: python\n"
          "#     name: python3\n# ---\n")


def _chapter(folder, stem: str, cells: list[str]):
    path = folder / f"{stem}.py"
    path.write_text(HEADER + "".join(f"\n# %%\n{c}\n" for c in cells))
    return path


def test_kernels_are_attributed_by_the_cells_only_one_chapter_has(tmp_path):
    a = _chapter(tmp_path, "01_a", ["x = 1", "shared = 0", "print('a')"])
    b = _chapter(tmp_path, "02_b", ["y = 2", "shared = 0"])
    prints = kernel_count.chapter_fingerprints([a, b])
    assert sorted(prints.values()) == ["01_a", "01_a", "02_b"]  # "shared = 0" belongs to both: no evidence
    log = tmp_path / "log"
    log.mkdir()
    h = kernel_count.cell_hash
    (log / "kernel-1-x.txt").write_text(f"{h('x = 1')}\n{h('shared = 0')}\n")  # chapter a
    (log / "kernel-2-x.txt").write_text(f"{h('x = 1')}\n")  # chapter a again
    (log / "kernel-3-x.txt").write_text(f"{h('shared = 0')}\n{h('import os')}\n")  # neither: not counted
    (log / "kernel-4-x.txt").write_text(f"{h('y = 2')}\n")
    counts = kernel_count.chapter_counts(log, prints)
    assert counts == {"01_a": 2, "02_b": 1}
    assert kernel_count.too_many(counts, limit=1) == {"01_a": 2}
    assert kernel_count.too_many(counts) == {}


def test_a_kernel_logs_the_cells_it_runs(tmp_path):
    """The startup file in a real kernel: each executed cell's hash lands in one log per kernel."""
    kernel_count.install(tmp_path / "ipython", tmp_path / "log")
    source = _chapter(tmp_path, "03_c", ["z = 3", "print(z)"])
    execute_chapter(Chapter(source), {}, tmp_path / "out", env={"IPYTHONDIR": str(tmp_path / "ipython")})
    (log,) = (tmp_path / "log").glob("kernel-*.txt")
    assert kernel_count.kernel_chapters(tmp_path / "log", kernel_count.chapter_fingerprints([source])) == [{"03_c"}]
    assert log.read_text().split() == [kernel_count.cell_hash("z = 3"), kernel_count.cell_hash("print(z)")]
