"""Long steps show progress on the terminal, never in a notebook: the embedding pass draws a bar by
itself from ``PROGRESS_MIN_TEXTS`` uncached texts, and inside a kernel the bar goes to the kernel
process's original stderr (``mechaudit.report.terminal``), not to ``sys.stderr`` (the notebook's output)."""

from __future__ import annotations

import io
import os
import sys

import numpy as np
import pytest

import mechaudit.rules.embedding as emb
from mechaudit.report import terminal
from mechaudit.rules import EmbeddingRule


class BarModel:
    """Stands in for a SentenceTransformer: records ``show_progress_bar`` and, when set, writes a
    bar line to ``sys.stderr`` as sentence-transformers' tqdm does."""

    def __init__(self):
        self.shown = []

    def encode(self, texts, show_progress_bar=False, **kwargs):
        self.shown.append(show_progress_bar)
        if show_progress_bar:
            print(f"Batches: 100% {len(texts)}/{len(texts)}", file=sys.stderr)
        return np.tile(np.eye(4, dtype=np.float32)[:1], (len(texts), 1))


@pytest.fixture
def model(monkeypatch):
    fake = BarModel()
    monkeypatch.setattr(emb, "load_model", lambda *a, **k: fake)
    return fake


@pytest.fixture
def kernel(monkeypatch):
    """A kernel's streams: ``sys.stderr`` is the notebook's output, ``terminal_copy`` the terminal."""
    notebook, screen = io.StringIO(), io.StringIO()
    screen.close = lambda: None  # read after the block closes it
    monkeypatch.setattr(sys, "stderr", notebook)
    monkeypatch.setattr(emb, "in_kernel", lambda: True)
    monkeypatch.setattr(emb, "terminal_copy", lambda: screen)
    return notebook, screen


def test_a_long_pass_shows_a_bar_on_the_terminal_not_in_the_notebook(model, kernel):
    notebook, screen = kernel
    texts = [f"text {i}" for i in range(emb.PROGRESS_MIN_TEXTS)]
    EmbeddingRule().embed(texts)
    assert model.shown == [True]
    assert screen.getvalue() == f"embedding {len(texts)} texts\nBatches: 100% {len(texts)}/{len(texts)}\n"
    assert notebook.getvalue() == ""


def test_a_short_pass_draws_nothing_unless_asked(model, kernel):
    notebook, screen = kernel
    EmbeddingRule().embed(["a", "b"])
    assert model.shown == [False] and screen.getvalue() == notebook.getvalue() == ""
    EmbeddingRule().embed(["a", "b"], progress=True)
    assert model.shown == [False, True] and "embedding 2 texts" in screen.getvalue()
    assert notebook.getvalue() == ""


def test_outside_a_kernel_the_bar_goes_to_stderr(model, capsys):
    EmbeddingRule().embed(["a", "b"], progress=True)
    assert capsys.readouterr().err == "embedding 2 texts\nBatches: 100% 2/2\n"


def test_terminal_copy_writes_to_the_process_stderr(tmp_path, monkeypatch):
    """The copy writes to the file behind ``sys.stderr``'s descriptor, as a kernel's original stderr."""
    target = open(tmp_path / "fd2.txt", "w+", encoding="utf-8")
    monkeypatch.setattr(sys, "stderr", target)
    with terminal.terminal_copy() as stream:
        print("bar 3/10", file=stream)
    target.flush()
    assert (tmp_path / "fd2.txt").read_text(encoding="utf-8") == "bar 3/10\n" and not target.closed
    target.close()
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # no descriptor: the bar goes nowhere, no error
    with terminal.terminal_copy() as stream:
        assert stream.name == os.devnull
    assert terminal.in_kernel() is False


def test_without_a_stderr_file_the_copy_is_a_utf8_null_stream(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # no fileno()
    with terminal.terminal_copy() as stream:
        assert stream.name == os.devnull and stream.encoding == "utf-8"
        stream.write("α β\n")  # any text, whatever the locale
