"""Calls of the previous release that still work for one release, each with a warning naming the new call.

A function whose signature changed keeps its new signature (what the API snapshot and page show)
and is wrapped by a decorator below that turns an old call into the new one, warning once per
process and function (``FutureWarning``)::

    percent_different(decisions, kinds)      ->  percent_different(decisions, kinds=kinds)
    rubric_bars(pct, paper, backend="replay")  ->  rubric_bars(pct, paper, caption="Backend: replay")

Every wrapped function is listed in :data:`DEPRECATED` (old call, new call), which the API page
shows. The deprecated forms are removed in the release after the next.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import inspect
import sys
import types
import warnings
from collections.abc import Callable

from mechaudit.backends import caption_text

#: ``"module.function"`` -> ``(old call, new call)`` for every function with a deprecated call form
DEPRECATED: dict[str, tuple[str, str]] = {}
_warned: set[str] = set()


def warn_once(key: str, message: str, stacklevel: int = 3) -> None:
    """A ``FutureWarning`` with ``message``, the first time ``key`` is seen in this process."""
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(message, FutureWarning, stacklevel=stacklevel)


def _register(fn: Callable, old: str, new: str) -> str:
    key = f"{fn.__module__}.{fn.__qualname__.removesuffix('.__init__')}"  # a class by its own name
    DEPRECATED[key] = (old, new)
    return key


def _message(name: str, old: str, new: str) -> str:
    return f"{name}: {old} is deprecated and will be removed in the next release; call {new}"


def _positional_count(fn: Callable) -> int:
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(p.kind in kinds for p in inspect.signature(fn).parameters.values())


def keywords_were_positional(*names: str):
    """For a function whose parameters ``names`` (now keyword-only) used to follow its positional
    parameters, in this order: extra positional arguments are passed by those names, with a warning."""

    def wrap(fn: Callable) -> Callable:
        n = _positional_count(fn)
        shown = ", ".join(list(inspect.signature(fn).parameters)[:n])
        key = _register(fn, f"{fn.__name__}({shown}, {', '.join(names)})",
                        f"{fn.__name__}({shown}, {', '.join(f'{m}={m}' for m in names)})")

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if len(args) > n:
                extra = args[n:]
                if len(extra) > len(names):
                    raise TypeError(f"{fn.__name__}() takes {n} positional arguments and keywords "
                                    f"{', '.join(names)}, but {len(args)} positional arguments were given")
                moved = names[:len(extra)]
                twice = [m for m in moved if m in kwargs]
                if twice:
                    raise TypeError(f"{fn.__name__}() got multiple values for {twice[0]!r}")
                kwargs.update(zip(moved, extra))
                warn_once(key, _message(fn.__name__, f"passing {', '.join(moved)} by position", DEPRECATED[key][1]))
                args = args[:n]
            return fn(*args, **kwargs)

        return wrapper

    return wrap


def reordered(old: str, new: str, convert: Callable[[tuple, dict], tuple[tuple, dict] | None]):
    """For a function whose arguments were reordered: ``convert(args, kwargs)`` returns the call in
    the new order when ``args``/``kwargs`` are an old call (None for a new call); ``old`` and ``new``
    are the two calls in words, for the warning and :data:`DEPRECATED`."""

    def wrap(fn: Callable) -> Callable:
        key = _register(fn, old, new)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            converted = convert(args, kwargs)
            if converted is not None:
                warn_once(key, _message(key.rsplit(".", 1)[1], old, new))
                args, kwargs = converted
            return fn(*args, **kwargs)

        return wrapper

    return wrap


def backend_argument(position: int, extra: bool = False):
    """For a figure function that took ``backend`` (and, with ``extra``, an ``extra`` caption text
    after it) as its parameter number ``position`` and now takes a keyword ``caption``: a call with
    ``backend=`` (or a string at ``position`` where the new signature has no string parameter: the
    old positional form) gets ``caption="Backend: <backend>[. <extra>]"``, the text the old call
    drew, with a warning."""

    def wrap(fn: Callable) -> Callable:
        params = list(inspect.signature(fn).parameters.values())
        new_names = [p.name for p in params[:_positional_count(fn)]]
        old_names = new_names[:position] + ["backend"] + (["extra"] if extra else []) + new_names[position:]
        takes_text = position < len(new_names) and params[position].annotation in ("str", str)
        shown = ", ".join(new_names[:position])
        new = f"{fn.__name__}({shown}, ..., caption={{!r}})"
        key = _register(fn, f"{fn.__name__}({shown}, backend{', extra' if extra else ''}, ...)",
                        new.format("Backend: <backend>" + (". <extra>" if extra else "")))

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            positional = len(args) > position and isinstance(args[position], str) and not takes_text
            if "backend" not in kwargs and not positional:
                return fn(*args, **kwargs)
            names = new_names if "backend" in kwargs else old_names  # backend= keeps the other positions
            if len(args) > len(names):
                raise TypeError(f"{fn.__name__}() takes at most {len(names)} positional arguments "
                                f"({', '.join(names)}), got {len(args)}")
            call = dict(zip(names, args))
            twice = sorted(set(call) & set(kwargs))
            if twice:
                raise TypeError(f"{fn.__name__}() got multiple values for {twice[0]!r}")
            call.update(kwargs)
            backend, text = call.pop("backend"), call.pop("extra", "") if extra else ""
            if "caption" in call:
                raise TypeError(f"{fn.__name__}(): give caption or the deprecated backend, not both")
            caption = caption_text(str(backend), text)
            warn_once(key, _message(fn.__name__, "the backend argument", new.format(caption)))
            return fn(**call, caption=caption)  # every new parameter by name

        return wrapper

    return wrap


def moved_names(module: str, homes: dict[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for names that moved to another module: ``homes`` maps each old name
    to its new module; the first use of each warns and names the new import."""
    for name, home in homes.items():
        DEPRECATED[f"{module}.{name}"] = (f"from {module} import {name}", f"from {home} import {name}")

    def __getattr__(name: str) -> object:
        if name not in homes:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warn_once(f"{module}.{name}", _message(name, f"importing it from {module}", f"from {homes[name]} import "
                                                                                     f"{name}"))
        return getattr(importlib.import_module(homes[name]), name)

    return __getattr__


#: old module path -> new one, for every module that moved into a package (issue 32's layout)
MOVED_MODULES: dict[str, str] = {
    "mechaudit.tables": "mechaudit.report.tables",
    "mechaudit.labels": "mechaudit.report.labels",
    "mechaudit.glue": "mechaudit.report.glue",
    "mechaudit.outputs": "mechaudit.report.outputs",
    "mechaudit.provenance": "mechaudit.report.provenance",
    "mechaudit.terminal": "mechaudit.report.terminal",
    "mechaudit.paramfile": "mechaudit.workflow.paramfile",
    "mechaudit.toy": "mechaudit.workflow.toy",
    "mechaudit.book_api": "mechaudit.sphinxext.api",
    "mechaudit.book_figure": "mechaudit.sphinxext.figure",
    "mechaudit.book_offline": "mechaudit.sphinxext.offline",
    "mechaudit.book_table": "mechaudit.sphinxext.table",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a moved module's old path as a stand-in that forwards every name to the new module
    and warns once; the new module itself is not touched."""

    def find_spec(self, fullname: str, path: object, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED_MODULES:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def exec_module(self, module: types.ModuleType) -> None:
        old, new = module.__name__, MOVED_MODULES[module.__name__]
        warn_once(old, f"{old} is deprecated and will be removed in the next release; import {new}", stacklevel=4)
        target = importlib.import_module(new)
        module.__getattr__ = lambda name: getattr(target, name)
        module.__dir__ = lambda: dir(target)
        module.__doc__ = f"Moved to :mod:`{new}` (this path works for one release)."


def install_moved_modules() -> None:
    """Let the old paths of :data:`MOVED_MODULES` import, once per process."""
    if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
        sys.meta_path.append(_MovedModules())
    for old, new in MOVED_MODULES.items():
        DEPRECATED.setdefault(old, (f"import {old}", f"import {new}"))


__all__ = ["DEPRECATED", "MOVED_MODULES", "warn_once", "keywords_were_positional", "reordered", "backend_argument",
           "moved_names", "install_moved_modules"]
