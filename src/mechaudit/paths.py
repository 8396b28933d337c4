"""Where the book's files live: the project root, its data, parameter sets and notebooks.

The project root is the first of

1. ``MECHAUDIT_ROOT`` in the environment, if set: a folder laid out like the repository;
2. the source checkout, when the package is installed editable from ``src/``;
3. the copy shipped inside the installed package (``mechaudit/_project``: data, parameter sets and
   chapter sources), so every command works from any folder.

``MECHAUDIT_DATA`` in the environment points the loaders at another data folder;
``MECHAUDIT_PRICES`` at another price table than ``params/prices.yaml`` (``prices_path``).

Caches (``llm_cache``, ``embedding_cache``) live where ``cache_path`` says: ``MECHAUDIT_CACHE`` if
set, else the data folder in a checkout, else (an installed, read-only copy) the user cache folder.
"""

from __future__ import annotations

import hashlib
import os
from importlib import resources
from pathlib import Path

from mechaudit.errors import MechauditError

#: environment variable naming an explicit project root
ROOT_ENV = "MECHAUDIT_ROOT"
#: the package folder that holds the shipped copy of data/, params/, notebooks/ and _toc.yml
SHIPPED = "_project"
#: environment variable naming the folder for the LLM response and embedding caches
CACHE_ENV = "MECHAUDIT_CACHE"
#: environment variable naming the data folder the loaders read by default
DATA_ENV = "MECHAUDIT_DATA"
#: environment variable naming the price table (``mechaudit execute --prices`` sets it for kernels)
PRICES_ENV = "MECHAUDIT_PRICES"


class ProjectRootError(MechauditError):
    """No usable project folder (data, params, notebooks); the message names ``MECHAUDIT_ROOT``."""


def is_project(folder: Path) -> bool:
    """True if ``folder`` is laid out like the repository (``params/default.yaml``, ``notebooks/``)."""
    return (folder / "params" / "default.yaml").is_file() and (folder / "notebooks").is_dir()


def shipped_root() -> Path:
    """The project copy inside the installed package (may not exist in a source checkout)."""
    return Path(str(resources.files("mechaudit").joinpath(SHIPPED)))


def find_root(environ: os._Environ | dict[str, str] | None = None) -> Path:
    """The project root (see the module docstring); raises ``ProjectRootError`` if there is none."""
    environ = os.environ if environ is None else environ
    explicit = environ.get(ROOT_ENV)
    if explicit:
        folder = Path(explicit).expanduser().resolve()
        if not is_project(folder):
            raise ProjectRootError(f"{ROOT_ENV}={explicit} is not a mechaudit project folder "
                                   "(it needs params/default.yaml and notebooks/)")
        return folder
    for folder in (Path(__file__).resolve().parents[2], shipped_root()):
        if is_project(folder):
            return folder
    raise ProjectRootError(f"no mechaudit project folder found: set {ROOT_ENV} to a clone of the repository "
                           "(with data/, params/ and notebooks/)")


try:
    REPO_ROOT = find_root()
    ROOT_ERROR: ProjectRootError | None = None
except ProjectRootError as _err:  # reported by require_root() when a command needs the files
    REPO_ROOT, ROOT_ERROR = shipped_root(), _err

#: True when the files come from the installed package (read-only: executed notebooks need --out)
PACKAGED = REPO_ROOT == shipped_root()
DATA_DIR = Path(os.environ.get(DATA_ENV, REPO_ROOT / "data"))
PARAMS_DIR = REPO_ROOT / "params"
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"


def require_root() -> Path:
    """``REPO_ROOT``, or the ``ProjectRootError`` found at import (one line naming ``MECHAUDIT_ROOT``)."""
    if ROOT_ERROR is not None:
        raise ROOT_ERROR
    return REPO_ROOT


def data_path(*parts: str) -> Path:
    """Path of a file under the data folder (``DATA_DIR``). A folder that ``MECHAUDIT_DATA`` names
    but that does not exist is a ``MechauditError`` naming the variable (not a missing file in it)."""
    if os.environ.get(DATA_ENV) and not DATA_DIR.is_dir():
        what = "is not a folder" if DATA_DIR.exists() else "does not exist"
        raise MechauditError(f"{DATA_DIR} {what}: point it at a benchmark folder (book/data.md) or unset it",
                             field=DATA_ENV)
    return DATA_DIR.joinpath(*parts)


def prices_path(environ: os._Environ | dict[str, str] | None = None) -> Path:
    """The price table in use: the file ``MECHAUDIT_PRICES`` names, else ``params/prices.yaml``."""
    environ = os.environ if environ is None else environ
    explicit = environ.get(PRICES_ENV)
    return Path(explicit).expanduser() if explicit else PARAMS_DIR / "prices.yaml"


def user_cache_dir(environ: os._Environ | dict[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/mechaudit``, or ``~/.cache/mechaudit`` when ``XDG_CACHE_HOME`` is unset or empty."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "mechaudit"


def cache_path(name: str, environ: os._Environ | dict[str, str] | None = None, *,
               packaged: bool | None = None) -> Path:
    """Default folder of the cache ``name`` (``"llm_cache"``, ``"embedding_cache"``): under
    ``MECHAUDIT_CACHE`` if set, else under the user cache folder for an installed package
    (``packaged``, default ``PACKAGED``), else under the data folder (see the module docstring)."""
    environ = os.environ if environ is None else environ
    explicit = environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser() / name
    if PACKAGED if packaged is None else packaged:
        return user_cache_dir(environ) / name
    return data_path(name)


def embedding_store(enabled: bool = True) -> Path | None:
    """The embedding store the chapters share (``cache_path("embedding_cache")``), or None when
    ``enabled`` is false (a chapter's ``embedding_cache`` parameter)."""
    return cache_path("embedding_cache") if enabled else None


#: the files of a benchmark folder (``book/data.md``): the three sources, the template-built suite,
#: the rewrites and the reworded suite built from them (``perturb.SUITE_FILES``)
BENCHMARK_FILES = ("vocabulary.yaml", "instances.yaml", "hypotheses.jsonl", "perturbations.jsonl",
                   "perturbations_reworded.yaml", "perturbations_reworded.jsonl")
#: ``sha256sum`` lines of the shipped benchmark's files: the data the paper's numbers belong to
SHIPPED_MANIFEST = "benchmark.sha256"


def file_sha256(path: Path) -> str:
    """sha256 of a text file with line endings normalised to ``\\n`` (a checkout with CRLF endings
    has the same identity)."""
    return hashlib.sha256(Path(path).read_bytes().replace(b"\r\n", b"\n")).hexdigest()


def benchmark_manifest(folder: str | Path) -> str:
    """The ``sha256sum``-style manifest of the benchmark files in ``folder`` (a missing file is left
    out): what ``data/benchmark.sha256`` holds for the shipped data."""
    folder = Path(folder)
    return "".join(f"{file_sha256(folder / name)}  {name}\n" for name in BENCHMARK_FILES
                   if (folder / name).is_file())


def is_shipped_benchmark(data_dir: str | Path | None = None) -> bool:
    """True when ``data_dir`` (None: the default data folder) holds exactly the files of the shipped
    ``data/benchmark.sha256``, with the same contents: only that benchmark gets the paper's numbers."""
    folder = Path(data_dir).expanduser() if data_dir is not None else DATA_DIR
    manifest = REPO_ROOT / "data" / SHIPPED_MANIFEST
    if not folder.is_dir() or not manifest.is_file():
        return False
    return benchmark_manifest(folder) == manifest.read_text(encoding="utf-8")


#: the example data set the tutorial chapter (``notebooks/09_your_data.py``) audits by default
EXAMPLE_DIR = REPO_ROOT / "data" / "examples" / "urate_nitrate"
#: committed embedding vectors of the texts the default chapters embed (read-only; written by
#: ``mechaudit calibrate embeddings``): a fresh clone starts with them instead of encoding them again
EMBEDDING_SEED_DIR = REPO_ROOT / "data" / "embedding_seed"


def data_folder_or(data_dir: str | Path | None, default: Path,
                   environ: os._Environ | dict[str, str] | None = None) -> Path:
    """The data folder a chapter with a default folder of its own reads (chapter 09's example set):
    ``data_dir`` if given, else ``MECHAUDIT_DATA`` if set, else ``default``."""
    environ = os.environ if environ is None else environ
    if data_dir is not None:
        return Path(data_dir)
    return Path(environ[DATA_ENV]).expanduser() if environ.get(DATA_ENV) else default
