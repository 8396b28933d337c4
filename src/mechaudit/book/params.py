"""The book's chapters and their parameters: the table of contents, parameter defaults and parameter-set files.

A book chapter's parameters and their defaults are its model's (``mechaudit.book.settings``); a
notebook outside the book declares them in its cell tagged ``parameters``. Values come from a
parameter-set file (``params/default.yaml``): its ``common`` section is offered to every notebook
(a notebook takes the names it defines), and the section named after the notebook's stem must only
hold names that notebook defines. Overrides
(``-p NAME VALUE``) must name a defined parameter too: unlike plain papermill, an unknown name is
an error. Only values that differ from the notebook's own defaults are injected, so executing with
the defaults leaves the notebook's cells exactly those of its source.
"""

from __future__ import annotations

import ast
import copy
import difflib
import functools
import importlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError, create_model

from mechaudit.book.settings import CHAPTERS, RunSettings, allowed, defaults, schema_at
from mechaudit.errors import MechauditError
from mechaudit.paths import PARAMS_DIR, REPO_ROOT

DEFAULT_PARAMS = PARAMS_DIR / "default.yaml"


class ParameterError(MechauditError):
    """A parameter that a notebook does not define, or a malformed parameters cell or file."""


@dataclass(frozen=True)
class Chapter:
    """One notebook of the book: its jupytext source and its paired executed notebook."""

    source: Path

    @property
    def stem(self) -> str:
        return self.source.stem

    @property
    def ipynb(self) -> Path:
        return self.source.with_suffix(".ipynb")


def toc_files(toc: Path = REPO_ROOT / "_toc.yml") -> list[str]:
    """Every page of the book's table of contents, the root first, in reading order (paths relative
    to the book root, without suffix: ``book/intro``, ``notebooks/01_problem``, ...)."""
    with open(toc, encoding="utf-8") as fh:
        tree = yaml.safe_load(fh)

    def walk(node: Any) -> Iterable[str]:
        if isinstance(node, dict):
            if isinstance(node.get("file"), str):
                yield node["file"]
            node = list(node.values())
        for child in node if isinstance(node, list) else ():
            yield from walk(child)

    return ([tree["root"]] if isinstance(tree.get("root"), str) else []) + list(walk(tree))


def toc_chapters(toc: Path = REPO_ROOT / "_toc.yml") -> list[Chapter]:
    """The notebooks listed in the book's table of contents, in reading order."""
    root = toc.parent
    return [Chapter(root / f"{f}.py") for f in toc_files(toc)
            if f.startswith("notebooks/") and (root / f"{f}.py").exists()]


def resolve_chapter(name: str | Path, chapters: Iterable[Chapter] | None = None) -> Chapter:
    """A chapter from a path (``notebooks/01_problem.py`` or ``.ipynb``) or a stem (``01_problem``);
    an unknown name is a ``ParameterError`` listing the chapters, with the closest as "did you mean"."""
    path = Path(name)
    if path.suffix in {".py", ".ipynb"} and path.with_suffix(".py").exists():
        return Chapter(path.with_suffix(".py").resolve())
    chapters = list(chapters) if chapters is not None else toc_chapters()
    for chapter in chapters:
        if chapter.stem == path.stem or chapter.stem.startswith(f"{path.stem}_"):
            return chapter
    stems = [c.stem for c in chapters]
    hint = _hint(path.stem, stems) or "; the chapters are " + ", ".join(stems)
    raise ParameterError(f"no chapter {str(name)!r}{hint}", field="notebooks")


#: folders searched for a parameter set named without a path (``--params paper``)
PARAMS_SUFFIXES = (".yaml", ".yml")


def resolve_params_file(value: str | Path | None) -> Path | None:
    """The parameter-set file ``--params`` names: an existing file as given, else a set shipped in
    ``params/`` by name (``paper``, ``paper.yaml``, ``params/paper.yaml``), so the shipped sets work
    from any folder. Anything else is a ``ParameterError`` listing the shipped sets."""
    if value is None:
        return None
    path = Path(value).expanduser()
    if path.is_file():
        return path
    name = path.name if path.parent in (Path("."), Path("params")) else None
    if name is not None:
        for candidate in (PARAMS_DIR / name, *(PARAMS_DIR / f"{name}{s}" for s in PARAMS_SUFFIXES)):
            if candidate.is_file():
                return candidate
    shipped = sorted(p.stem for p in PARAMS_DIR.glob("*.yaml") if p.name != "prices.yaml")
    what = "is a folder" if path.is_dir() else "does not exist"
    raise ParameterError(f"{value} {what}: give a parameter-set file or the name of a shipped set "
                         f"({', '.join(shipped)}){_hint(path.stem, shipped)}", field="--params")


def notebook_parameters(source: Path) -> dict[str, Any]:
    """Names and default values of a notebook's parameters: a book chapter's from its model
    (``mechaudit.book.settings``; no book tools needed, so ``mechaudit estimate`` runs without them),
    any other notebook's from its cell tagged ``parameters``, which may hold only assignments of
    literals (numbers, strings, None, lists, dicts), read with jupytext."""
    source = Path(source)
    if source.stem in CHAPTERS:
        return defaults(source.stem)
    return copy.deepcopy(_notebook_parameters(source, source.stat().st_mtime_ns))


def book_tools(names: tuple[str, ...] = ("jupytext", "nbformat", "papermill")) -> tuple[Any, ...]:
    """The notebook tools chapter execution needs (``jupytext``, ``nbformat``, ``papermill``; or only
    ``names``), or a one-line ``MechauditError`` naming the extra that installs them
    (``mechaudit[book]``)."""
    try:
        return tuple(importlib.import_module(name) for name in names)
    except ImportError as err:
        raise MechauditError(f"running chapters needs the book tools ({err.name} is missing): "
                             "pip install 'mechaudit[book]'") from None


def _literal_assignments(source_name: str, cell_source: str) -> dict[str, Any]:
    params: dict[str, Any] = {}
    tree = ast.parse(cell_source, filename=source_name)
    for node in tree.body:
        where = f"{source_name}: parameters cell line {node.lineno}"
        if not (isinstance(node, (ast.Assign, ast.AnnAssign))):
            raise ParameterError(f"{where}: only assignments allowed")
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if not isinstance(target, ast.Name):
                raise ParameterError(f"{where}: assign to a plain name")
            try:
                params[target.id] = ast.literal_eval(node.value)
            except ValueError as err:
                raise ParameterError(f"{where}: {target.id} is not a literal") from err
    return params


@functools.lru_cache(maxsize=64)
def _notebook_parameters(source: Path, mtime_ns: int) -> dict[str, Any]:
    (jupytext,) = book_tools(("jupytext",))  # papermill is imported only to execute

    nb = jupytext.read(source)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    if len(tagged) != 1:
        raise ParameterError(f"{source.name}: expected exactly one cell tagged 'parameters', found {len(tagged)}")
    return _literal_assignments(source.name, tagged[0].source)


#: Sections of a parameter-set file besides ``common`` and chapter stems (read by chapters
#: themselves: ``design`` by ``mechaudit.workflow.load_design``).
EXTRA_SECTIONS = ("design",)


def _yaml_problem(err: yaml.YAMLError) -> tuple[int | None, str]:
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    problem = " ".join(filter(None, [getattr(err, "context", None), getattr(err, "problem", None)]))
    return (mark.line + 1 if mark is not None else None), (problem or str(err).splitlines()[0])


def read_param_file(path: Path) -> tuple[dict[str, Any], dict[Any, int]]:
    """``(sections, lines)`` of a parameter-set file (``lines``: section and ``(section, name)`` ->
    1-based line), parsed once per version on disk; malformed YAML, a repeated key or a section that is
    not a mapping raise ``ParameterError`` with file and line."""
    path = Path(path)
    stat = path.stat()
    return copy.deepcopy(_read_param_file(path.resolve(), stat.st_mtime_ns, stat.st_size, path))


@functools.lru_cache(maxsize=16)
def _read_param_file(resolved: Path, mtime_ns: int, size: int, path: Path) -> tuple[dict[str, Any], dict[Any, int]]:
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")  # a byte-order mark (Windows editors) is not part of the text
    except UnicodeDecodeError as err:
        raise ParameterError("not UTF-8 text", file=path, line=raw[:err.start].count(b"\n") + 1) from None
    try:
        tree, node = _tree_and_node(text)
    except yaml.YAMLError as err:
        line, problem = _yaml_problem(err)
        raise ParameterError(f"malformed YAML: {problem}", file=path, line=line) from None
    from mechaudit.schema import repeated_key  # defers the pydantic data model: fast `mechaudit --help`

    repeated = repeated_key(node) if node is not None else None
    if repeated is not None:
        key, first, again = repeated
        raise ParameterError(f"duplicate key {key!r}: first on line {first}, again on line {again.start_mark.line + 1} "
                             "(YAML would keep only the last)", file=path, line=again.start_mark.line + 1, field=key)
    lines: dict[Any, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            lines[str(key.value)] = key.start_mark.line + 1
            if isinstance(value, yaml.MappingNode):
                for name, _ in value.value:
                    lines[(str(key.value), str(name.value))] = name.start_mark.line + 1
    tree = {} if tree is None else tree
    if not isinstance(tree, dict):
        raise ParameterError("expected a mapping of sections (common, chapter stems)", file=path, line=1)
    tree = {str(k): v for k, v in tree.items()}
    for name, section in tree.items():
        if section is not None and not isinstance(section, dict):
            raise ParameterError(f"a section must map parameter names to values, got {section!r}",
                                 file=path, line=lines.get(name), field=name)
    return tree, lines


def _tree_and_node(text: str) -> tuple[Any, yaml.Node | None]:
    """The value and the node tree of one YAML document, parsed once (by libyaml when PyYAML has
    it); a malformed text raises the pure-Python parser's error, worded the same on every machine."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        return (None if node is None else loader.construct_document(node)), node
    except yaml.YAMLError:
        yaml.safe_load(text)
        raise
    finally:
        loader.dispose()


def _type_of(default: Any) -> Any:
    """The type a notebook outside the book asks for with ``default``: its own; a list's items like
    the default's (ints and floats mixed: numbers; other mixes: anything); anything for None."""
    if default is None:
        return Any
    if isinstance(default, list):
        kinds = {type(d) for d in default}
        kind = float if kinds == {int, float} else (kinds.pop() if len(kinds) == 1 else Any)
        return list[kind]
    return type(default)


#: a pydantic error type as a clause: what the value must be
_MUST = {"int_type": "an integer", "float_type": "a number", "bool_type": "a boolean (true/false)",
         "string_type": "a string", "list_type": "a list", "tuple_type": "a list", "dict_type": "a mapping",
         "finite_number": "a finite number"}
#: the pydantic errors of a value out of range
_BOUNDS = ("greater_than_equal", "less_than_equal", "greater_than", "less_than")


def error_clause(err: Mapping[str, Any], default: Any, schema: Mapping[str, Any]) -> str:
    """One pydantic error of a value of the JSON ``schema`` (a field's) as one clause without the
    field name: ``item 1: must be an integer in [2, 2000], got 1``; ``default`` is quoted when the
    type is wrong."""
    kind, ctx, got = err["type"], err.get("ctx") or {}, err["input"]
    got = list(got) if isinstance(got, tuple) else got  # a YAML list made a tuple
    where = "".join(f"item {step}: " for step in err["loc"][1:])
    if kind == "literal_error" and not isinstance(got, str):
        kind = "string_type"  # every choice is a string
    if kind in _MUST:
        like = f" like the default {default!r}" if default is not None and not where and kind != "finite_number" else ""
        return f"{where}must be {_MUST[kind]}{like}, got {got!r}"
    if kind in _BOUNDS:
        return f"{where}must be {allowed(schema_at(dict(schema), err['loc'][1:]))}, got {got!r}"
    if kind == "literal_error":
        choices = re.findall(r"'([^']*)'", ctx["expected"])
        return f"{where}must be one of {', '.join(map(repr, choices))}, got {got!r}{_hint(str(got), choices)}"
    if kind == "too_short":
        n = ctx["min_length"]
        return f"{where}must be a list of at least {n} item{'s' if n != 1 else ''}, got {got!r}"
    if kind == "too_long":
        fixed = "exactly" if ctx.get("field_type") == "Tuple" else "at most"
        return f"{where}must be a list of {fixed} {ctx['max_length']} items, got {got!r}"
    if kind == "string_pattern_mismatch":
        return f"{where}must not be empty"
    if kind == "missing":
        return f"{where}is missing"
    return f"{where}{err['msg'][0].lower()}{err['msg'][1:]}, got {got!r}"


def check_value(name: str, value: Any, default: Any, *, file: str | Path | None = None,
                line: int | None = None, field: str | None = None, stem: str | None = None) -> None:
    """Raise ``ParameterError`` unless ``value`` suits parameter ``name`` of chapter ``stem`` (its field
    in ``mechaudit.book.settings``); outside the book, ``RunSettings`` and otherwise the type of the
    notebook's ``default``."""
    model = CHAPTERS.get(stem, RunSettings) if stem is not None else RunSettings
    if name not in model.model_fields:
        model = create_model("Notebook", __base__=RunSettings, **{name: (_type_of(default), default)})
    try:
        model.__pydantic_validator__.validate_assignment(model.model_construct(), name, value)
    except ValidationError as err:
        why = error_clause(err.errors()[0], default, model.model_json_schema()["properties"][name])
        raise ParameterError(why, file=file, line=line, field=field or name) from None


def _hint(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def check_param_file(path: Path, chapters: Iterable[Chapter] | None = None) -> None:
    """Check a whole parameter-set file before any cell runs: every section is ``common``, one of
    ``EXTRA_SECTIONS`` or a chapter stem, every name is defined by its chapter(s) and every value suits
    its parameter; ``ParameterError`` names file, line and field."""
    tree, lines = read_param_file(path)
    defined = {c.stem: notebook_parameters(c.source) for c in (chapters if chapters is not None else toc_chapters())}
    for section, values in tree.items():
        if section != "common" and section not in EXTRA_SECTIONS and section not in defined:
            raise ParameterError(
                f"unknown section: not 'common', {', '.join(repr(s) for s in EXTRA_SECTIONS)} or a chapter "
                f"({', '.join(defined)}){_hint(section, [*defined, 'common'])}",
                file=path, line=lines.get(section), field=section)
        if section in EXTRA_SECTIONS:
            continue
        scope = defined if section == "common" else {section: defined[section]}
        for name, value in (values or {}).items():
            if section == "common" and name in RUN_PARAMETERS:
                continue  # checked by run_settings
            owners = [(stem, d) for stem, d in scope.items() if name in d]
            line, fld = lines.get((section, str(name))), str(name)
            if not owners:
                names = sorted({n for d in scope.values() for n in d})
                who = ("unknown parameter under 'common': no chapter defines it" if section == "common"
                       else f"unknown parameter: {section} does not define it")
                raise ParameterError(f"{who}{_hint(str(name), names)}",
                                     file=path, line=line, field=fld)
            for stem, d in owners:
                check_value(name, value, d[name], file=path, line=line, field=fld, stem=stem)


def load_param_set(path: Path, stem: str, defined: dict[str, Any]) -> dict[str, Any]:
    """Parameters for notebook ``stem`` from a parameter-set file (``common`` + its section); an unknown
    name or a bad value raises ``ParameterError`` with file and line."""
    tree, lines = read_param_file(path)
    common = tree.get("common") or {}
    section = tree.get(stem) or {}
    for name in section:
        if name not in defined:
            raise ParameterError(f"unknown parameter: {stem} does not define it{_hint(str(name), defined)}",
                                 file=path, line=lines.get((stem, str(name))), field=str(name))
    values = {k: v for k, v in common.items() if k in defined}
    values.update(section)
    for name, value in values.items():
        where = stem if name in section else "common"
        check_value(name, value, defined[name], file=path, line=lines.get((where, str(name))), stem=stem)
    return values


def parse_override(value: str, name: str | None = None) -> Any:
    """A ``-p NAME VALUE`` value in YAML syntax (``7`` -> 7, ``[1, 2]``, ``anthropic``); a blank value
    stays that string (``null`` is None); malformed YAML raises ``ParameterError`` naming the parameter."""
    if not value.strip():
        return value
    try:
        return yaml.safe_load(value)
    except yaml.YAMLError as err:
        raise ParameterError(f"malformed value {value!r} (YAML syntax): {_yaml_problem(err)[1]}",
                             file="-p", field=name) from None


#: Parameters naming a folder: a relative value resolves against the caller's working directory
#: (``-p``) or the parameter file's folder (file values), never against ``notebooks/``.
DIR_PARAMETERS = ("data_dir", "cache_dir", "out_dir")
#: Parameters naming a file under ``params/`` by default (``design_file = "paper.yaml"``): a relative
#: value that is not a file there but exists relative to the caller (or the parameter file) is made
#: absolute the same way.
PARAMS_FILE_SUFFIX = "_file"


def absolutize_paths(values: dict[str, Any], base: Path) -> dict[str, Any]:
    """``values`` with relative folder/file parameters made absolute against ``base`` (see
    ``DIR_PARAMETERS``); other values unchanged."""
    out = dict(values)
    for name, value in values.items():
        is_dir, is_file = name in DIR_PARAMETERS, name.endswith(PARAMS_FILE_SUFFIX)
        if not (is_dir or is_file) or not isinstance(value, str) or not value:
            continue
        path = Path(value).expanduser()
        if path.is_absolute():
            out[name] = str(path)
        elif is_dir or (not (PARAMS_DIR / path).is_file() and (base / path).is_file()):
            out[name] = str((base / path).resolve())
    return out


def resolve_parameters(chapter: Chapter, params_file: Path | None = DEFAULT_PARAMS,
                       overrides: dict[str, Any] | None = None, cwd: Path | None = None) -> dict[str, Any]:
    """The parameters to inject: file values and overrides that differ from the notebook's defaults,
    checked (``check_value``), with relative folder/file values made absolute (overrides against ``cwd``,
    file values against the file's folder)."""
    defined = notebook_parameters(chapter.source)
    values = load_param_set(params_file, chapter.stem, defined) if params_file else {}
    if params_file:
        values = absolutize_paths(values, Path(params_file).resolve().parent)
    overrides = overrides or {}
    unknown = sorted(set(overrides) - set(defined))
    if unknown:
        raise ParameterError(
            f"unknown parameter: {chapter.stem} does not define it{_hint(unknown[0], defined)} "
            f"(it defines: {', '.join(defined)})", file="-p", field=unknown[0])
    for name, value in overrides.items():
        check_value(name, value, defined[name], file="-p", stem=chapter.stem)
    values.update(absolutize_paths(overrides, Path(cwd) if cwd is not None else Path.cwd()))
    return {k: v for k, v in values.items() if not (defined[k] == v and type(defined[k]) is type(v))}


def full_parameters(plans: Iterable[tuple[Chapter, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Every parameter of each planned chapter by stem: its notebook defaults with the injected
    values (``plans``: ``[(chapter, injected parameters)]``) over them."""
    return {chapter.stem: {**notebook_parameters(chapter.source), **params} for chapter, params in plans}


#: parameters of the whole run, accepted by ``-p`` (and under ``common`` in a parameter file) for
#: every chapter: ``llm_base_url`` names an OpenAI-compatible server (set as ``OPENAI_BASE_URL`` in
#: the chapters' kernels)
RUN_PARAMETERS = ("llm_base_url",)
