"""``-p parallel_backend`` and ``-p scheduler`` are checked before any kernel starts: a typo, a
scheduler that is not an address, or a scheduler without the Dask backend is one line, exit 1.

The chapter here is a copy of 02c's source under its own stem, so the checks see the parameters of
02c's model.
"""

from __future__ import annotations

import shutil
from typing import get_args

import pytest

from mechaudit.book import settings
from mechaudit.book.execute import execute_chapters
from mechaudit.book.params import Chapter, ParameterError, resolve_parameters
from mechaudit.cli import main
from mechaudit.errors import MechauditError
from mechaudit.paths import NOTEBOOKS_DIR
from mechaudit.workflow import parallel


@pytest.fixture
def chapter(tmp_path):
    """02c's source in a folder of its own."""
    path = tmp_path / "nb" / "02c_robustness.py"
    path.parent.mkdir()
    shutil.copy(NOTEBOOKS_DIR / "02c_robustness.py", path)
    shutil.copy(NOTEBOOKS_DIR.parent / "_toc.yml", tmp_path / "_toc.yml")
    return Chapter(path)


def test_backend_names_are_the_librarys_own():
    assert get_args(settings.ParallelBackend) == parallel.BACKENDS


@pytest.mark.parametrize("value, expected", [
    ("dsak", "-p: field 'parallel_backend': must be one of 'loky', 'multiprocessing', 'threading', 'sequential', "
             "'dask', got 'dsak'; did you mean 'dask'?"),
    (3, "-p: field 'parallel_backend': must be a string like the default 'loky', got 3"),
])
def test_a_bad_backend_is_one_line_naming_the_choices(chapter, value, expected):
    with pytest.raises(ParameterError) as info:
        resolve_parameters(chapter, None, {"parallel_backend": value})
    assert str(info.value) == expected


@pytest.mark.parametrize("overrides, expected", [
    ({"parallel_backend": "dask", "scheduler": "scheduler:8786"},
     "field 'scheduler': must be a scheduler address like 'tcp://host:8786' (tcp/tls/ucx/ws/wss), "
     "got 'scheduler:8786'"),
    ({"parallel_backend": "dask", "scheduler": "tcp://scheduler"},
     "field 'scheduler': must be a scheduler address like 'tcp://host:8786' (tcp/tls/ucx/ws/wss), "
     "got 'tcp://scheduler'"),
    ({"scheduler": "tcp://scheduler:8786"},
     "field 'scheduler': a scheduler is only used with parallel_backend 'dask', not 'loky'"),
    ({"parallel_backend": "threading", "scheduler": "tcp://10.0.0.1:8786"},
     "field 'scheduler': a scheduler is only used with parallel_backend 'dask', not 'threading'"),
])
def test_scheduler_problems_stop_before_a_kernel(chapter, tmp_path, overrides, expected, monkeypatch):
    started = []
    monkeypatch.setattr("mechaudit.book.execute._execute_one", lambda *a, **k: started.append(a))
    with pytest.raises(MechauditError) as info:
        execute_chapters([chapter.source], params_file=None, overrides=overrides, out_dir=tmp_path / "out")
    assert str(info.value) == expected
    assert started == [] and not (tmp_path / "out").exists()


def test_the_command_line_prints_one_line(chapter, tmp_path, capsys):
    argv = ["execute", str(chapter.source), "--out", str(tmp_path / "out"), "-p", "scheduler", "tcp://h:8786"]
    assert main(argv) == 1
    assert capsys.readouterr().err.strip() == ("mechaudit: error: field 'scheduler': a scheduler is only used with "
                                               "parallel_backend 'dask', not 'loky'")


def test_dask_without_the_cluster_extra_is_one_line(chapter, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "distributed" else real(name, *a))
    with pytest.raises(MechauditError) as info:
        execute_chapters([chapter.source], params_file=None, overrides={"parallel_backend": "dask"},
                         out_dir=tmp_path / "out")
    assert str(info.value) == ("field 'parallel_backend': the 'dask' backend needs dask.distributed: "
                               "pip install 'mechaudit[cluster]'")


def test_good_settings_pass_the_checks(chapter, tmp_path, monkeypatch):
    """A scheduler with the Dask backend, and the defaults, reach the kernel step."""
    started = []
    monkeypatch.setattr("mechaudit.book.execute._execute_one", lambda *a, **k: started.append(a[3]))
    execute_chapters([chapter.source], params_file=None, out_dir=tmp_path / "out",
                     overrides={"parallel_backend": "dask", "scheduler": "tcp://127.0.0.1:8786"})
    assert started == [{"parallel_backend": "dask", "scheduler": "tcp://127.0.0.1:8786"}]
