"""Default cache folders: the data folder in a checkout, the user cache folder for an installed
package (never inside site-packages), and ``MECHAUDIT_CACHE`` over both."""

from __future__ import annotations

from pathlib import Path

import pytest

from mechaudit import paths
from mechaudit.errors import MechauditError
from mechaudit.llm import cache


def test_checkout_caches_live_in_the_data_folder():
    assert paths.cache_path("llm_cache", {}, packaged=False) == paths.data_path("llm_cache")


def test_installed_package_caches_go_to_the_user_cache_folder(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    got = paths.cache_path("embedding_cache", env, packaged=True)
    assert got == tmp_path / "xdg" / "mechaudit" / "embedding_cache"
    assert paths.shipped_root() not in got.parents


def test_user_cache_folder_without_xdg_is_under_home(monkeypatch, tmp_path):
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: tmp_path))
    assert paths.user_cache_dir({}) == tmp_path / ".cache" / "mechaudit"
    assert paths.user_cache_dir({"XDG_CACHE_HOME": ""}) == tmp_path / ".cache" / "mechaudit"


def test_environment_variable_wins(tmp_path):
    env = {paths.CACHE_ENV: str(tmp_path / "c"), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    for packaged in (True, False):
        assert paths.cache_path("llm_cache", env, packaged=packaged) == tmp_path / "c" / "llm_cache"


def test_llm_cache_default_follows_the_installed_layout(monkeypatch, tmp_path):
    monkeypatch.delenv(paths.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(paths, "PACKAGED", True)
    assert cache.default_cache_dir() == tmp_path / "mechaudit" / "llm_cache"
    monkeypatch.setattr(paths, "PACKAGED", False)
    assert cache.default_cache_dir() == paths.data_path("llm_cache")
    monkeypatch.setenv(paths.CACHE_ENV, str(tmp_path / "mine"))
    assert cache.default_cache_dir() == tmp_path / "mine" / "llm_cache"


def test_a_chapter_with_its_own_default_folder_reads_mechaudit_data(tmp_path):
    """Chapter 09 defaults to the example set; MECHAUDIT_DATA overrides that default, data_dir overrides both."""
    from mechaudit.paths import DATA_ENV, data_folder_or

    default = tmp_path / "example"
    assert data_folder_or(None, default, environ={}) == default
    assert data_folder_or(None, default, environ={DATA_ENV: str(tmp_path / "mine")}) == tmp_path / "mine"
    assert data_folder_or(tmp_path / "given", default, environ={DATA_ENV: "x"}) == tmp_path / "given"
    assert data_folder_or(None, default, environ={DATA_ENV: ""}) == default  # an empty variable is unset


def test_a_project_folder_has_the_default_parameters_and_the_chapters(tmp_path):
    assert paths.is_project(paths.REPO_ROOT)
    (tmp_path / "params").mkdir()
    (tmp_path / "params" / "default.yaml").write_text("{}\n")
    assert not paths.is_project(tmp_path)  # no notebooks/ yet
    (tmp_path / "notebooks").mkdir()
    assert paths.is_project(tmp_path)


def test_an_explicit_root_is_used_when_it_is_a_project_and_refused_otherwise(tmp_path):
    assert paths.find_root({paths.ROOT_ENV: str(paths.REPO_ROOT)}) == paths.REPO_ROOT.resolve()
    with pytest.raises(paths.ProjectRootError, match=r"MECHAUDIT_ROOT=.* is not a mechaudit project folder"):
        paths.find_root({paths.ROOT_ENV: str(tmp_path)})


def test_the_price_table_is_the_shipped_one_unless_the_variable_names_another(tmp_path):
    assert paths.prices_path({}) == paths.PARAMS_DIR / "prices.yaml"
    assert paths.prices_path({paths.PRICES_ENV: str(tmp_path / "p.yaml")}) == tmp_path / "p.yaml"


def test_a_missing_data_folder_is_named_with_what_is_wrong(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path / "nowhere"))
    monkeypatch.setattr(paths, "DATA_DIR", tmp_path / "nowhere")
    with pytest.raises(MechauditError, match=r"^field 'MECHAUDIT_DATA': .*nowhere does not exist: point it at"):
        paths.data_path("x")
    (tmp_path / "nowhere").write_text("a file\n")
    with pytest.raises(MechauditError, match=r"nowhere is not a folder: point it at"):
        paths.data_path("x")


def test_the_embedding_store_is_the_embedding_cache_folder_unless_turned_off(monkeypatch, tmp_path):
    from mechaudit.paths import cache_path, embedding_store

    monkeypatch.setenv("MECHAUDIT_CACHE", str(tmp_path))
    assert embedding_store() == embedding_store(True) == cache_path("embedding_cache") == tmp_path / "embedding_cache"
    assert embedding_store(False) is None


def test_without_the_variable_a_missing_data_folder_is_only_a_path(tmp_path, monkeypatch):
    monkeypatch.delenv(paths.DATA_ENV, raising=False)
    monkeypatch.setattr(paths, "DATA_DIR", tmp_path / "nowhere")
    assert paths.data_path("a", "b.yaml") == tmp_path / "nowhere" / "a" / "b.yaml"


def test_require_root_returns_the_root_or_raises_the_error_found_at_import(monkeypatch):
    assert paths.require_root() == paths.REPO_ROOT
    error = paths.ProjectRootError("no mechaudit project folder found")
    monkeypatch.setattr(paths, "ROOT_ERROR", error)
    with pytest.raises(paths.ProjectRootError) as raised:
        paths.require_root()
    assert raised.value is error
