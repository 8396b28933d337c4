"""How a number of this book can relate to the paper's: a closed vocabulary, derived in code.

Every row of a "paper vs this run" table (``mechaudit.report.comparison.compare``) and of the intro's results
table carries one of five values (``VOCABULARY``), decided here from the row's key and the backend,
never typed per chapter. The rules, in this order:

1. **not run offline (LLM only)** (``NOT_RUN``): the quantity needs an LLM (``LLM_ONLY``) and the
   backend is offline.
2. **true by construction** (``BY_CONSTRUCTION``): the design, a setting, or the way the data or a
   deterministic judge are built fix the number (``CONSTRUCTIONS``, each with its reason).
3. **fitted to the paper** (``FITTED``, offline only): a simulator parameter was set to match it
   (``calibration.fitted`` of ``params/calibration.yaml``: parameter -> paper keys).
4. **constrained by the fit** (``CONSTRAINED``, offline only): over every simulator setting consistent
   with the fitted targets, its expected value varies by less than one design's sampling SD (or an
   exact p stays below the paper's bound); the keys, derived by
   ``mechaudit.workflow.robustness.constrained_by_fit``, are in ``data/computed/constrained_by_fit.json``.
5. **independent computation** (``INDEPENDENT``): anything else.

Keys are the dotted keys of ``data/paper_reported.yaml``, or ids of the book's own results that
have no paper counterpart (``BOOK_RESULTS``, prefix ``book.``). Patterns in ``LLM_ONLY`` and
``CONSTRUCTIONS`` use shell-style wildcards (``fnmatch``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from pathlib import Path

import yaml

from mechaudit.errors import MechauditError
from mechaudit.paths import PARAMS_DIR, REPO_ROOT

FITTED = "fitted to the paper"
CONSTRAINED = "constrained by the fit"
BY_CONSTRUCTION = "true by construction"
INDEPENDENT = "independent computation"
NOT_RUN = "not run offline (LLM only)"
#: the closed vocabulary, in the order a reader should weigh agreement with the paper (least first)
VOCABULARY = (FITTED, CONSTRAINED, BY_CONSTRUCTION, NOT_RUN, INDEPENDENT)

CALIBRATION_PATH = PARAMS_DIR / "calibration.yaml"
SIMULATOR_PATH = PARAMS_DIR / "simulator.yaml"
#: the keys the fit constrains, with the reason (written by ``mechaudit calibrate``)
CONSTRAINED_PATH = REPO_ROOT / "data" / "computed" / "constrained_by_fit.json"

#: the book's own results without a paper number (rows of the intro's results table)
BOOK_RESULTS = {
    "book.diversity.clusters": "distinct mechanisms per run under each rule (chapter 04)",
    "book.validity": "bias of the extra-divergence estimate and size of the exact test (chapter 02b)",
    "book.power": "power of the paper's design to detect a 1 v 5 effect (chapter 02c)",
    "book.perturbations.reference_judge": "first-step swaps the full-rubric reference judge calls different (ch. 05)",
    "book.rubric.reference_judges": "first-step swaps each rubric's reference judge calls different (chapter 06)",
    "book.tau.recovery": "fitted tau against the simulated judge's known tau (chapter 08)",
}

#: quantities only an LLM can measure: offline they are not run
LLM_ONLY = (
    "critique_depth.judge_range_pp.*",
    "perturbations.*.llm",
    "rubric.*",
    "sensitivity.repeat_changed",
    "sensitivity.reversal_changed",
    "sensitivity.reversal_changed_pct",
    "sensitivity.judge_models_*",
)

_DESIGN = "params/paper.yaml copies the paper's design"
_SETTING = "a setting of this run, chosen (not measured)"
_TEMPLATE = ("the swap variants of data/perturbations.jsonl re-render one template with one entity changed, "
             "so a text rule sees almost the same words")
#: results fixed by how the design, a setting, the data or a deterministic judge are built: key -> reason
CONSTRUCTIONS = {
    "design.instances": _DESIGN,
    "design.runs_per_depth": _DESIGN,
    "design.depths": _DESIGN,
    "design.opening_hypotheses_per_instance": _DESIGN,
    "design.runs": _DESIGN,
    "design.run_pairs": _DESIGN,
    "design.partitions_per_instance": "5 + 5 runs per instance have C(10, 5) = 126 splits",
    "sensitivity.tfidf_threshold": _SETTING,
    "sensitivity.embedding_threshold": _SETTING,
    "sensitivity.judge_orders": _SETTING,
    "sensitivity.stability_pairs": _SETTING,
    "models.*": _SETTING,
    "book.perturbations.reference_judge": "the reference judge compares step ids, and every swap replaces one",
    "book.rubric.reference_judges": ("the full and step judges compare step ids (every swap replaces one); the "
                                     "no-rubric judge's overlap rule cannot flag one swap in a chain of 3+ steps"),
    "book.tau.recovery": "the simulated blind judge draws its verdicts from the logistic model the fit assumes",
}


#: results built in on one perturbation suite only (names of ``perturb.SUITE_FILES``): suite -> {key: reason};
#: the same keys measured on another suite (the reworded one, a user's) are independent computations
SUITE_CONSTRUCTIONS = {
    "template": {
        "perturbations.first_step_swapped_pct_different.tfidf": _TEMPLATE,
        "perturbations.first_step_swapped_pct_different.embedding": _TEMPLATE,
        "perturbations.middle_step_swapped_pct_different.tfidf": _TEMPLATE,
        "perturbations.middle_step_swapped_pct_different.embedding": _TEMPLATE,
    },
}
#: the suite a row without one was measured on (the paper-vs-run tables' first column)
DEFAULT_SUITE = "template"


def _matches(key: str, patterns: Iterable[str]) -> bool:
    return any(fnmatchcase(key, p) for p in patterns)


def fitted_targets(path: str | Path = CALIBRATION_PATH) -> dict[str, tuple[str, ...]]:
    """``calibration.fitted`` of ``path``: fitted simulator parameter -> the paper keys it was set to match."""
    with open(path, encoding="utf-8") as fh:  # read on every call: a small file, and edits show at once
        doc = yaml.safe_load(fh) or {}
    section = (doc.get("calibration") or {}).get("fitted") or {}
    if not isinstance(section, Mapping) or not all(
            isinstance(v, list) and v and all(isinstance(k, str) for k in v) for v in section.values()):
        raise MechauditError("must map each fitted simulator parameter to a non-empty list of paper keys",
                             file=path, field="calibration.fitted")
    return {str(name): tuple(keys) for name, keys in section.items()}


def fitted_keys(path: str | Path = CALIBRATION_PATH) -> set[str]:
    """Every paper key some fitted parameter targets."""
    return {key for keys in fitted_targets(path).values() for key in keys}


def constrained_keys(path: str | Path = CONSTRAINED_PATH) -> dict[str, str]:
    """Paper keys the fit constrains -> the reason (empty when the file is missing)."""
    path = Path(path)
    if not path.is_file():
        return {}
    found = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(found, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in found.items()):
        raise MechauditError("must map paper keys to reasons (text)", file=path)
    return found


def of(key: str, llm: bool, calibration: str | Path = CALIBRATION_PATH, suite: str | None = None,
       constrained: str | Path = CONSTRAINED_PATH) -> str:
    """The provenance of the number under ``key`` produced with an LLM backend (``llm``) or offline
    (module docstring); ``suite``: the perturbation suite it was measured on (default
    ``DEFAULT_SUITE``); ``calibration``, ``constrained``: the files rules 3 and 4 read."""
    if not llm and _matches(key, LLM_ONLY):
        return NOT_RUN
    if _matches(key, CONSTRUCTIONS) or _matches(key, SUITE_CONSTRUCTIONS.get(suite or DEFAULT_SUITE, {})):
        return BY_CONSTRUCTION
    if not llm and key in fitted_keys(calibration):
        return FITTED
    if not llm and key in constrained_keys(constrained):
        return CONSTRAINED
    return INDEPENDENT


def summary(values: Iterable[tuple[str, str]]) -> str:
    """One cell for a row with several numbers: ``values`` is ``(name, provenance)`` per number. One
    value when all agree ("fitted to the paper"), else the values with their numbers' names, in
    ``VOCABULARY`` order ("fitted to the paper: 0 v 1; independent computation: 1 v 5")."""
    groups: dict[str, list[str]] = {}
    for name, value in values:
        if value not in VOCABULARY:
            raise ValueError(f"provenance values must be among {VOCABULARY}, got {value!r}")
        groups.setdefault(value, []).append(name)
    if len(groups) == 1:
        return next(iter(groups))
    return "; ".join(f"{value}: {', '.join(groups[value])}" for value in VOCABULARY if value in groups)


REPRODUCED = "reproduced"
FITTED_NOT_A_TEST = "fitted, not a test"
BUILT_IN_NOT_A_TEST = "built in, not a test"
NOT_TESTABLE = "not testable offline"
QUALIFIED = "qualified"
#: a real LLM's number that is not the paper's model (the self-served judge): whatever it measures,
#: it neither reproduces nor contradicts the paper's judge
ANOTHER_MODEL = "another model, not a test"
#: the verdicts of the intro's results table
VERDICTS = (REPRODUCED, QUALIFIED, FITTED_NOT_A_TEST, BUILT_IN_NOT_A_TEST, NOT_TESTABLE, ANOTHER_MODEL)


def verdict(values: Iterable[str], llm: bool, agrees: bool | None = None) -> str:
    """The verdict of a row whose numbers have the provenance ``values``: without an independent
    number, why it is not a test; with one, "reproduced" only when every number is an independent
    computation under an LLM backend and ``agrees`` (each within tolerance of the paper's), else
    "qualified"."""
    found = set(values)
    unknown = found - set(VOCABULARY)
    if not found or unknown:
        raise ValueError(f"provenance values must be among {VOCABULARY}, got {sorted(found)}")
    if INDEPENDENT not in found:
        if NOT_RUN in found:
            return NOT_TESTABLE
        return FITTED_NOT_A_TEST if found & {FITTED, CONSTRAINED} else BUILT_IN_NOT_A_TEST
    if found == {INDEPENDENT} and llm and agrees:
        return REPRODUCED
    return QUALIFIED


_MARK = re.compile(r"^\s*#.*\bFITTED\b")
_PARAM = re.compile(r"^\s+([A-Za-z_]\w*):")


def fitted_marks(path: str | Path = SIMULATOR_PATH) -> list[str]:
    """The parameters of a simulator file marked FITTED: a ``FITTED`` comment block right above the
    parameter, or ``FITTED`` in the parameter's own line comment (the header above ``simulator:``
    is not searched)."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("simulator:")), len(lines))
    out, marked = [], False
    for line in lines[start + 1:]:
        if _MARK.match(line):
            marked = True
            continue
        param = _PARAM.match(line)
        if param:
            comment = line.split("#", 1)[1] if "#" in line else ""
            if marked or re.search(r"\bFITTED\b", comment):
                out.append(param.group(1))
            marked = False
        elif line.strip() and not line.lstrip().startswith("#"):
            marked = False
    return out


def unlabelled(fitted_params: Iterable[str], known_keys: Iterable[str],
               calibration: str | Path = CALIBRATION_PATH) -> list[str]:
    """Fitted parameters whose paper numbers are not labelled: missing from ``calibration.fitted``
    or naming a key outside ``known_keys`` (those of ``data/paper_reported.yaml``). Empty when
    every fitted parameter's rows will read "fitted to the paper"."""
    targets, known = fitted_targets(calibration), set(known_keys)
    return sorted({p for p in fitted_params if p not in targets or not set(targets[p]) <= known})


__all__ = ["FITTED", "CONSTRAINED", "BY_CONSTRUCTION", "INDEPENDENT", "NOT_RUN", "VOCABULARY", "BOOK_RESULTS",
           "LLM_ONLY", "CONSTRUCTIONS", "SUITE_CONSTRUCTIONS", "DEFAULT_SUITE", "REPRODUCED", "FITTED_NOT_A_TEST",
           "BUILT_IN_NOT_A_TEST", "NOT_TESTABLE", "QUALIFIED", "ANOTHER_MODEL", "VERDICTS", "verdict",
           "fitted_targets", "fitted_keys", "constrained_keys", "of", "summary", "fitted_marks", "unlabelled"]
