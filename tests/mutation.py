"""``make mutation``: mutmut on the core modules, one module at a time, and the report ``tests/MUTATION.md``.

Usage (from the repository root, with the project's ``.venv``)::

    python tests/mutation.py                       # every module, fresh, then the report
    python tests/mutation.py divergence agreement  # only these modules (others keep their last results)
    python tests/mutation.py --keep divergence     # reuse earlier results (mutmut is incremental)
    python tests/mutation.py --report              # rewrite the report from the results on disk

Each module runs in its own folder ``build/mutation/<module>/``: a ``pyproject.toml`` (the project's,
plus a ``[tool.mutmut]`` table naming the module's files and only the test files mapped to it), and
links to ``src`` and ``tests``. mutmut copies both into ``mutants/``, mutates the module's
functions, records which mapped tests call each function, and runs only those tests for each
mutant (``--max-children``, default 2 = the machine's cores). ``MECHAUDIT_ROOT`` points the copied
package at this repository's data, parameters and chapters.

A per-mutant wall-clock guard: this file is also a pytest plugin (``-p mutation``) in every test run
of mutmut. The clean run writes its wall time to ``clean_seconds.txt``; each mutant's run arms
``SIGALRM`` (default action, so the kernel ends the process even when it hangs in C code) at
``GUARD_S + GUARD_FACTOR * clean seconds``, counted as a timeout. After mutmut's own in-process runs
(clean, forced fail, stats) the plugin shuts joblib's loky pool down, so no idle loky worker is left
for mutmut's ``os.wait()`` to reap (a worker exiting after its idle timeout was taken for a mutant's
result and stopped the run) and no forked mutant inherits a pool whose threads did not survive the fork.

Surviving mutants listed in ``tests/mutation_equivalent.yaml`` (function, the mutated line, a
reason) are equivalent: they cannot change any behaviour. The score of a module is
killed / (mutants - equivalent); "no tests" and survivors count as not killed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "mutation"
REPORT = ROOT / "tests" / "MUTATION.md"
EQUIVALENT = ROOT / "tests" / "mutation_equivalent.yaml"
FLOOR = 0.95
#: The default sample: mutants whose number (within its function) ends like this glob (about 10 %).
#: A module whose mapped tests are slow sets a smaller one (``Target.sample``) so that the whole run
#: stays near half an hour on 2 cores; ``--sample`` overrides every module's.
SAMPLE = "0"
SMALL_SAMPLE = "[05]0"  # about 2 %
KILLED = {"killed", "timeout", "segfault", "caught by type check"}
#: the per-mutant wall-clock guard: seconds = GUARD_S + GUARD_FACTOR * the clean run's seconds
GUARD_S, GUARD_FACTOR = 60.0, 3.0
#: every test run under mutmut sends joblib's default-backend tasks through joblib's sequential backend:
#: a fresh loky pool in every forked mutant spent seconds starting workers that import the package
#: again, and the trace of the clean run did not see the functions that ran in those workers (their
#: mutants had "no tests"). Every task carries its own seed, so the results are those of the pool (a
#: call naming its backend keeps it). Off: MECHAUDIT_MUTATION_LOKY=1.
SEQUENTIAL_JOBLIB = os.environ.get("MECHAUDIT_MUTATION_LOKY") != "1"


@dataclass(frozen=True)
class Target:
    """One core module: the files mutmut mutates, the tests it runs, and optional mutant globs."""

    files: tuple[str, ...]
    tests: tuple[str, ...]
    mutants: tuple[str, ...] = ()  # mutant-name globs: only these functions (default: every function)
    deselect: tuple[str, ...] = ()  # slow tests left out (each is covered by faster ones)
    sample: str = SAMPLE  # the module's fixed sample glob (see SAMPLE)


def _src(*names: str) -> tuple[str, ...]:
    return tuple(f"src/mechaudit/{n}" for n in names)


def _tests(*names: str) -> tuple[str, ...]:
    return tuple(f"tests/test_{n}.py" for n in names)


#: Module -> files and the fast test files that exercise them (no notebook runs, no book build).
MODULES: dict[str, Target] = {
    "divergence": Target(_src("divergence.py"), _tests("divergence") + tuple(
        f"tests/test_power.py::test_{t}" for t in ("monte_carlo_matches_exact_on_paper_design",
                                                   "monte_carlo_matches_exact_unequal_and_single_instance",
                                                   "monte_carlo_is_seeded_and_valid", "monte_carlo_bad_input",
                                                   "monte_carlo_size_under_the_null", "exact_feasibility"))),
    "agreement": Target(_src("agreement.py"), _tests("agreement", "judge_models")
                        + ("tests/test_csv_outputs.py::test_an_undefined_kappa_gets_its_reason",)),
    "diversity": Target(_src("diversity.py"), _tests("diversity", "components_streaming"), deselect=(
        "tests/test_components_streaming.py::test_embedding_streaming_groups_equal_pairwise_verdicts",)),
    "rules": Target(_src("rules/*.py"), _tests("rules_audit", "rules_llm_judge", "rules_reference",
                                               "rules_registry", "rules_similarity", "rules_suite",
                                               "rules_paper_rates", "judge_models", "judge_model_axis",
                                               "components_streaming", "boundaries_rules")
                    + ("tests/test_deprecation.py::test_suite_counts_and_paper_percent_different_in_the_old_order",)),
    "perturb": Target(_src("perturb.py"), _tests("perturb"), sample=SMALL_SAMPLE),
    "tau": Target(_src("tau/inference.py", "tau/fitting.py", "tau/anchors.py", "tau/cards.py", "tau/judge.py"),
                  _tests("tau_inference", "tau_fitting", "tau_anchors", "tau_judge", "tau_misspec",
                         "tau_mutation_guards"), sample=SMALL_SAMPLE),
    "llm": Target(_src("llm/cache.py", "llm/cachelog.py", "llm/cacheindex.py", "llm/batchstate.py",
                       "llm/client.py", "llm/ledger.py", "llm/session.py", "book/account.py", "llm/jsonout.py",
                       "llm/blind.py"),
                  _tests("llm", "llm_cache_store", "llm_budget_stress", "llm_recovery", "blind_prefilter",
                         "llm_secrets", "cache_paths", "judge_models") + tuple(
                      f"tests/test_llm_cost.py::test_{t}" for t in (
                          "budget_below_estimate_stops_before_the_first_request", "budget_hit_midway_then_continue",
                          "ledger_report_and_run_total_agree", "bad_budget_and_cli_estimate",
                          "batch_mode_checks_the_budget_per_batch", "dry_run_and_run_budget_injection")) + tuple(
                      f"tests/test_local_endpoint.py::test_{t}" for t in (
                          "price_table_declares_a_price_per_endpoint",
                          "an_endpoint_row_prices_cache_tokens_at_its_input_price",
                          "cache_spend_prices_a_local_answer_at_its_endpoint")),
                  # needs the four writer processes to interleave at least 10 times: on a loaded machine
                  # it saw 3 and failed mutmut's clean run (the cache log's locking has its own tests)
                  deselect=("tests/test_llm_cache_store.py::test_four_processes_writing_at_once_lose_and_duplicate_nothing",),
                  sample=SMALL_SAMPLE),
    "workflow": Target(_src("workflow/power.py", "workflow/calibrate.py", "workflow/depth.py",
                            "workflow/simulator.py"),
                       _tests("power", "calibrate", "workflow", "simulator_outcomes")),
    "schema": Target(_src("schema.py", "model.py"), _tests("schema", "data"), sample=SMALL_SAMPLE),
    "params": Target(_src("book/params.py"), _tests("execution_params"),
                        mutants=tuple(f"mechaudit.book.params.x_{f}__mutmut_*" for f in (
                            "_type_of", "error_clause", "check_value", "_hint", "check_param_file", "load_param_set",
                            "parse_override", "absolutize_paths", "read_param_file", "_yaml_problem"))),
    "paper": Target(_src("paper.py", "paths.py"), _tests("paper", "cache_paths", "paper_gate", "boundaries_book"),
                    # both scan the shared run of every chapter (minutes): the switch itself is tested in-process
                    deselect=("tests/test_paper_gate.py::test_their_data_shows_nothing_of_the_papers",
                              "tests/test_paper_gate.py::test_their_data_gets_no_paper_numbers_through_any_route")),
    "reworded": Target(_src("reworded.py"), _tests("reworded", "boundaries_book")),
    "report": Target(_src(*(f"report/{n}.py" for n in ("comparison", "facts", "glue", "labels", "outputs", "tables",
                                                       "terminal"))),
                     _tests("facts", "glue", "tables", "outputs", "csv_outputs", "progress_terminal", "paper",
                            "boundaries_book")),
    "core": Target(_src("errors.py", "engagement.py", "deprecation.py", "render.py"),
                   _tests("errors", "engagement", "deprecation", "schema")
                   + ("tests/test_llm_recovery.py::test_an_invalid_engagement_label_reply_is_excluded_and_counted",),
                   # the first runs the CLI in subprocesses, which import the package unmutated (no kill power
                   # here); the second checks a once-per-process warning, already shown by mutmut's trace run
                   deselect=("tests/test_errors.py::test_process_exit_codes_and_debug",
                             "tests/test_errors.py::test_warning_style_prints_own_warnings_once_and_passes_others_on")),
    "workflow.robustness": Target(_src("workflow/robustness.py"), _tests("robustness", "boundaries_workflow")),
    # issue 34's modules checked in full (every mutant): one file each
    "workflow.intervals": Target(_src("workflow/intervals.py"), _tests("intervals", "boundaries_rules"), sample="all"),
    "llm.pricing": Target(_src("llm/pricing.py"), _tests("boundaries_llm", "local_endpoint", "llm_session") + tuple(
        f"tests/test_llm_cost.py::test_{t}" for t in ("estimate_equals_what_the_server_receives",
                                                      "early_stop_estimate_brackets_what_is_sent",
                                                      "typical_output_sizes_follow_the_planners_demands_per_critique")),
                          deselect=("tests/test_local_endpoint.py::test_a_chapter_judges_with_a_local_server_end_to_end",),
                          sample="all"),
    "report.provenance": Target(_src("report/provenance.py"), _tests("provenance", "paper", "boundaries_book"),
                                sample="all"),
    "tau.anchors": Target(_src("tau/anchors.py"), _tests("tau_anchors", "boundaries", "tau_mutation_guards"),
                          sample="all"),
    "tau.inference": Target(_src("tau/inference.py"), _tests("tau_inference", "tau_misspec", "boundaries",
                                                              "tau_mutation_guards"), sample="all"),
    "tau.judge": Target(_src("tau/judge.py"), _tests("tau_judge", "boundaries", "tau_mutation_guards"), sample="all"),
    "llm.session": Target(_src("llm/session.py"), _tests("llm_session", "llm", "boundaries_llm", "llm_budget_stress"),
                          sample="all"),
    "llm.client": Target(_src("llm/client.py"), _tests("llm", "boundaries_llm", "llm_budget_stress", "llm_recovery",
                                                       "llm_cache_store", "llm_session", "local_endpoint"),
                         deselect=("tests/test_local_endpoint.py::test_a_chapter_judges_with_a_local_server_end_to_end",
                                   "tests/test_llm_cache_store.py::"
                                   "test_four_processes_writing_at_once_lose_and_duplicate_nothing"),
                         sample="all"),
}


# --------------------------------------------------------------------------- running


def _config(target: Target) -> str:
    """The project's pyproject.toml plus the module's ``[tool.mutmut]`` table."""
    table = {
        "source_paths": ["src"],
        "only_mutate": list(target.files),
        "pytest_add_cli_args_test_selection": list(target.tests),
        # this file as the wall-clock guard plugin; off: pytest plugins that cost time in every forked
        # mutant run (the unraisable-exception check runs gc.collect() over a heap holding torch, about
        # 3 s per run; nbval and anyio are not used here)
        "pytest_add_cli_args": ["-p", "mutation", "-p", "no:cacheprovider", "-p", "no:unraisableexception",
                                "-p", "no:nbval", "-p", "no:anyio",
                                *(a for t in target.deselect for a in ("--deselect", t))],
        "use_git_change_detection": False,
    }
    lines = ["", "[tool.mutmut]"] + [f"{k} = {json.dumps(v)}" for k, v in table.items()]
    return (ROOT / "pyproject.toml").read_text(encoding="utf-8") + "\n".join(lines) + "\n"


def prepare(name: str, fresh: bool) -> Path:
    """The module's work folder with its config and links to ``src`` and ``tests``."""
    folder = WORK / name
    if fresh and folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for link in ("src", "tests"):
        if not (folder / link).exists():
            (folder / link).symlink_to(ROOT / link)
    (folder / "pyproject.toml").write_text(_config(MODULES[name]), encoding="utf-8")
    return folder


def selection(name: str, sample: str) -> tuple[str, ...]:
    """Mutant-name globs of one run: the module's functions (default all), and only the mutants whose
    number ends like the glob ``sample`` ("0": about 10 %, "[02468]0": about 5 %, "all": every one)."""
    globs = MODULES[name].mutants or ("mechaudit.*__mutmut_*",)
    return globs if sample == "all" else tuple(f"{g}{sample}" for g in globs)


def run_module(name: str, max_children: int, fresh: bool, sample: str, recheck: bool = False) -> float:
    """Run mutmut for one module; returns the wall time in seconds. ``recheck``: run again only the
    mutants the last run did not kill (after tests were added), keeping the other results."""
    folder = prepare(name, fresh and not recheck)
    if recheck:
        names = tuple(m for m, state in results(name).items() if state not in KILLED | {"not checked"})
        if not names:
            return 0.0
    else:
        names = selection(name, sample)
        (folder / "selection.json").write_text(json.dumps(names))
    (folder / "clean_seconds.txt").unlink(missing_ok=True)
    env = {**os.environ, "MECHAUDIT_ROOT": str(ROOT), "MECHAUDIT_MUTATION_FOLDER": str(folder),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "tests"), os.environ.get("PYTHONPATH")])),
           # one OpenMP/MKL thread: a process that ran torch's thread pool and then forks a mutant
           # leaves the child waiting forever on the pool's lock (seen in rules.embedding)
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false", "PYTHONHASHSEED": "0"}
    mutmut = Path(sys.executable).with_name("mutmut")
    cmd = [str(mutmut), "run", "--max-children", str(max_children), *names]
    start = time.monotonic()
    with open(folder / "mutmut.log", "w", encoding="utf-8") as log:
        proc = subprocess.run(cmd, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
    seconds = time.monotonic() - start
    if recheck and (folder / "seconds.txt").exists():  # a stopped run wrote no time
        seconds += int((folder / "seconds.txt").read_text())
    (folder / "seconds.txt").write_text(f"{seconds:.0f}\n")
    (folder / "workers.txt").write_text(f"{max_children}\n")
    if proc.returncode != 0:
        print(f"mutation: mutmut failed for {name} (exit {proc.returncode}); see {folder / 'mutmut.log'}",
              file=sys.stderr)
    return seconds


# --------------------------------------------------------------------------- the guard (a pytest plugin)


_session_start = [0.0]  # monotonic seconds at the start of the current pytest session


def _run_kind() -> str:
    """``"mutant"`` in a forked mutant run, ``"clean"`` in mutmut's clean run, else ``"other"``."""
    name = os.environ.get("MUTANT_UNDER_TEST")
    return "mutant" if name and "__mutmut_" in name else "clean" if name == "" else "other"


def guard_seconds(folder: Path) -> float:
    """The wall-clock limit of one mutant's test run (see the module docstring)."""
    clean = folder / "clean_seconds.txt"
    return GUARD_S + GUARD_FACTOR * (float(clean.read_text()) if clean.exists() else GUARD_S)


def pytest_configure(config) -> None:
    folder = os.environ.get("MECHAUDIT_MUTATION_FOLDER")
    if folder is None:
        return
    if _run_kind() == "mutant":
        import signal

        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.setitimer(signal.ITIMER_REAL, guard_seconds(Path(folder)))
    if SEQUENTIAL_JOBLIB:
        from joblib import parallel_config

        parallel_config(backend="sequential")  # this thread's default from here on (no context needed)
    _session_start[0] = time.monotonic()


def pytest_unconfigure(config) -> None:
    folder = os.environ.get("MECHAUDIT_MUTATION_FOLDER")
    if folder is None or _run_kind() == "mutant":
        return
    if _run_kind() == "clean":
        (Path(folder) / "clean_seconds.txt").write_text(f"{time.monotonic() - _session_start[0]:.1f}\n")
    loky = sys.modules.get("joblib.externals.loky.reusable_executor")
    if loky is not None and loky._executor is not None:
        loky._executor.shutdown(wait=True, kill_workers=True)


# --------------------------------------------------------------------------- results


STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped",
          36: "timeout", -14: "timeout", -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout", -11: "segfault",
          -9: "segfault", 37: "caught by type check", None: "not checked"}


def results(name: str) -> dict[str, str]:
    """Mutant name -> status for one module's last run (only the selected mutants)."""
    folder = WORK / name / "mutants"
    globs = json.loads((WORK / name / "selection.json").read_text())
    out = {}
    for meta in sorted(folder.rglob("*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        for key, code in codes.items():
            if not any(_fnmatch(key, g) for g in globs):
                continue
            out[key] = STATUS.get(code, "suspicious")
    return out


def _fnmatch(name: str, pattern: str) -> bool:
    import fnmatch

    return fnmatch.fnmatchcase(name, pattern)


_DIFFS = """
import json, sys
from mutmut.mutation.diff_apply import find_mutant, get_diff_for_mutant
out = {}
for name in json.load(sys.stdin):
    try:
        text = get_diff_for_mutant(name, path=find_mutant(name).path)
    except Exception as exc:  # the source changed since the run: the module must be run again
        out[name] = ["+? (" + type(exc).__name__ + ": rerun this module)"]
        continue
    out[name] = [line for line in text.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
print(json.dumps(out))
"""


def diffs(name: str, mutants: list[str]) -> dict[str, list[str]]:
    """Mutant -> its changed lines (``-`` original, ``+`` mutated), read with mutmut in one process."""
    if not mutants:
        return {}
    proc = subprocess.run([sys.executable, "-c", _DIFFS], cwd=WORK / name, input=json.dumps(mutants),
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def function_of(mutant: str) -> str:
    """``mechaudit.x.x_f__mutmut_3`` -> ``mechaudit.x.f`` (methods: ``mechaudit.x.Class.f``)."""
    base = mutant.rsplit("__mutmut_", 1)[0]
    module, _, func = base.rpartition(".")
    func = func.replace("xǁ", "").replace("ǁ", ".")
    return f"{module}.{func[2:] if func.startswith('x_') else func}"


def classify(mutant: str, changed: list[str], equivalent: list[dict[str, str]]) -> str | None:
    """The reason if ``mutant`` is listed as equivalent (same function, same mutated line)."""
    added = " ".join(line[1:].strip() for line in changed if line.startswith("+"))
    for entry in equivalent:
        if entry["function"] == function_of(mutant) and _squash(entry["mutated"]) == _squash(added):
            return entry["reason"]
    return None


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def summarise(name: str, equivalent: list[dict[str, str]]) -> dict:
    status = results(name)
    unchecked = sum(state == "not checked" for state in status.values())  # a run stopped before them
    status = {m: state for m, state in status.items() if state != "not checked"}
    rows = []
    open_mutants = sorted((m for m, state in status.items() if state not in KILLED), key=_natural)
    timeouts = sorted((m for m, state in status.items() if state == "timeout"), key=_natural)
    changes = diffs(name, open_mutants + timeouts)
    for mutant in open_mutants:
        state, changed = status[mutant], changes[mutant]
        reason = classify(mutant, changed, equivalent) if state == "survived" or state == "no tests" else None
        rows.append({"mutant": mutant, "status": state, "changed": changed, "equivalent": reason})
    killed = sum(s in KILLED for s in status.values())
    n_equiv = sum(r["equivalent"] is not None for r in rows)
    scored = len(status) - n_equiv
    seconds_file, workers_file = WORK / name / "seconds.txt", WORK / name / "workers.txt"
    tail = json.loads((WORK / name / "selection.json").read_text())[0].rsplit("__mutmut_*", 1)[-1]
    return {"module": name, "sample": f"`{tail}`" if tail else "all", "mutants": len(status), "killed": killed,
            "equivalent": n_equiv, "unchecked": unchecked,
            "score": killed / scored if scored else None, "rows": rows,
            "timeouts": {m: changes[m] for m in timeouts},
            "seconds": int(seconds_file.read_text()) if seconds_file.exists() else None,
            "workers": int(workers_file.read_text()) if workers_file.exists() else None}


def _natural(key: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", key))


# --------------------------------------------------------------------------- the report


def mutmut_version() -> str:
    from importlib.metadata import version

    return version("mutmut")


def _module_section(s: dict, tested: list[dict[str, str]]) -> list[str]:
    target = MODULES[s["module"]]
    out = [f"### {s['module']}", "",
           f"Files: {', '.join(f'`{f}`' for f in target.files)}"
           + (f" (functions: {', '.join(f'`{g}`' for g in target.mutants)})" if target.mutants else "")
           + f". Tests: {', '.join(f'`{t}`' for t in target.tests)}.", ""]
    open_rows = [r for r in s["rows"] if r["equivalent"] is None]
    equiv_rows = [r for r in s["rows"] if r["equivalent"] is not None]
    if open_rows:
        out += ["Not killed and not equivalent:", ""]
        out += [f"- `{r['mutant']}` ({r['status']}): `{_one_line(r['changed'])}`" for r in open_rows]
        out.append("")
    if s["timeouts"]:
        out += ["Timed out (stopped by the wall-clock guard or mutmut's CPU limit; counted as killed):", ""]
        out += [f"- `{m}`: `{_one_line(changed)}`" for m, changed in s["timeouts"].items()]
        out.append("")
    if equiv_rows:
        out += ["Equivalent (cannot change behaviour):", ""]
        out += [f"- `{r['mutant']}`: `{_one_line(r['changed'])}`: {r['equivalent']}" for r in equiv_rows]
        out.append("")
    mine = [t for t in tested if t["function"].startswith(_prefixes(target))]
    if mine:
        out += ["Survivors of an earlier run, each now killed by a test:", ""]
        out += [f"- `{t['function']}`: `{_squash(t['mutated'])}`: `{t['test']}`" for t in mine]
        out.append("")
    return out


def _prefixes(target: Target) -> tuple[str, ...]:
    return tuple("mechaudit." + f[len("src/mechaudit/"):].removesuffix(".py").replace("/", ".").replace("*", "")
                 for f in target.files)


def _one_line(changed: list[str]) -> str:
    minus = " / ".join(line[1:].strip() for line in changed if line.startswith("-"))
    plus = " / ".join(line[1:].strip() for line in changed if line.startswith("+"))
    text = f"{minus} -> {plus}".replace("`", "'")
    return text if len(text) <= 160 else text[:157] + "..."


def _score(s: dict) -> str:
    """``score | floor`` cells: "-" and "not run" when no sampled mutant was checked."""
    if s["score"] is None:
        return "- | not run"
    return f"{s['score']:.1%} | {'ok' if s['score'] >= FLOOR else 'BELOW'}"


def write_report(summaries: list[dict], tested: list[dict[str, str]]) -> None:
    total_s = sum(s["seconds"] or 0 for s in summaries)
    lines = [
        "# Mutation testing of the core",
        "",
        "Written by `make mutation` (`tests/mutation.py`); do not edit by hand. Equivalent mutants and the",
        "tests written for earlier survivors are listed in `tests/mutation_equivalent.yaml`.",
        "",
        "## How the numbers were obtained",
        "",
        f"- Tool: mutmut {mutmut_version()} (PyPI). Each module runs on its own (`build/mutation/<module>/`),",
        "  with only its mapped test files; mutmut runs, for each mutant, the mapped tests that call the",
        "  mutated function (found by tracing one clean run), in forked workers (2 at a time).",
        "- A mutant is *killed* when a test fails, errors or times out. *No tests*: no mapped test calls",
        "  the function; it counts as not killed.",
        f"- Wall-clock guard: a mutant's test run ends after {GUARD_S:.0f} s + {GUARD_FACTOR:.0f} x the module's clean",
        "  run (SIGALRM, default action), so a hung run cannot stop the module; it counts as a timeout,",
        "  and every timeout is listed under its module. mutmut runs with one OpenMP thread and joblib's",
        "  loky pool is shut after mutmut's own in-process runs (both left forked mutants hanging). Under",
        "  mutmut joblib's default backend is its sequential one: a new loky pool per forked mutant cost",
        "  seconds of worker start-up, and the trace did not see functions run in loky workers (tasks",
        "  carry their own seeds, so the results are the same).",
        "- Score = killed / (mutants - equivalent). The floor is "
        f"{FLOOR:.0%} in every module.",
        "- mutmut mutates code inside functions and methods (not module-level constants or class bodies).",
        "- Sample: the *sample* column is the glob that a mutant's number (within its function) must end",
        f"  with. `make mutation` uses each module's own: `{SAMPLE}` (a tenth of each function's mutants,",
        "  rounded down, so 5-9 % of a module's: rules 163 of 2141, workflow 204 of 2397; the same ones on",
        "  every run while the function is unchanged) where the mapped tests are fast enough,",
        f"  `{SMALL_SAMPLE}` (about 2 %) where they are slow, and every mutant (`all`) in the one-file modules",
        "  that issue 34 names (`tau.anchors`, `llm.pricing`, ...), which also appear, sampled, in `tau` and `llm`;",
        "  `python tests/mutation.py --sample all` runs every mutant (about 13,600: hours on 2 cores).",
        "  The *mutants* column counts the sampled mutants that were checked; *unchecked* counts sampled",
        "  mutants a stopped run did not reach (left out of the score). mutmut forgets a module's earlier",
        "  verdicts when its test map or sources change, so a `--recheck` after such a change leaves the",
        "  other sampled mutants unchecked: run that module fresh.",
        "- Why mutmut and not cosmic-ray: mutmut 3 compiles every mutant into one copy of the package",
        "  (switched per run), forks each test run from a process that already imported numpy, pandas,",
        "  torch and the tests, and runs only the tests that call the mutated function; cosmic-ray",
        "  rewrites the file and starts a new test process per mutant, which here costs the imports",
        "  (several seconds) for every one of thousands of mutants.",
        "",
        "## Scores",
        "",
        "| module | sample | mutants | killed | equivalent | not killed | score | floor | unchecked | seconds |",
        "|---|---|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    fresh = {s["module"]: s for s in summaries}
    kept_rows, kept_sections = _previous_report()
    kept = [n for n in MODULES if n not in fresh and n in kept_rows]
    total_s += sum(int(m.group(1)) for n in kept if (m := re.search(r"\| (\d+)[^|]*\|$", kept_rows[n])))
    for n in MODULES:
        if n in fresh:
            s = fresh[n]
            open_n = s["mutants"] - s["killed"] - s["equivalent"]
            workers = f" ({s['workers']} worker{'s' * (s['workers'] != 1)})" if s["workers"] not in (None, 2) else ""
            lines.append(f"| {n} | {s['sample']} | {s['mutants']} | {s['killed']} | {s['equivalent']} | "
                         f"{open_n} | {_score(s)} | "
                         f"{s['unchecked']} | {s['seconds'] or '-'}{workers if s['seconds'] else ''} |")
        else:  # not run here: the row of the last report (or "not run")
            lines.append(kept_rows.get(n, f"| {n} | not run | | | | | | | | |"))
    lines += ["", f"Total run time: {total_s} s ({total_s / 60:.1f} min) on this machine's 2 cores.", "",
              "## Survivors by module", ""]
    for n in MODULES:
        lines += _module_section(fresh[n], tested) if n in fresh else kept_sections.get(n, [])
    REPORT.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")


def _previous_report() -> tuple[dict[str, str], dict[str, list[str]]]:
    """The score row and the section of each module in the report on disk, kept for the modules that
    have no results in ``build/mutation`` (a run of some modules keeps the others' last results)."""
    if not REPORT.exists():
        return {}, {}
    text = REPORT.read_text(encoding="utf-8").splitlines()
    rows = {m.group(1): line for line in text
            if (m := re.match(r"\| (\S+) \| (?!sample)", line)) and m.group(1) in MODULES}
    sections: dict[str, list[str]] = {}
    current = None
    for line in text:
        if line.startswith("### "):
            current = line[4:].strip()
            sections[current] = []
        if current is not None:
            sections[current].append(line)
    return rows, {n: lines for n, lines in sections.items() if n in MODULES}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", choices=[[], *MODULES], help="default: every module")
    parser.add_argument("--keep", action="store_true", help="reuse earlier results (incremental)")
    parser.add_argument("--report", action="store_true", help="only rewrite the report")
    parser.add_argument("--recheck", action="store_true",
                        help="run again only the mutants the last run did not kill (after adding tests)")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--sample", default=None, help="glob for the end of the mutant numbers to run, for "
                        f"every module (default: each module's own, {SAMPLE!r} about 10 %% or {SMALL_SAMPLE!r} "
                        "about 2 %%); 'all' runs every mutant (hours on 2 cores)")
    args = parser.parse_args(argv)
    names = args.modules or list(MODULES)
    if not args.report:
        for name in names:
            print(f"mutation: {name} ...", flush=True)
            seconds = run_module(name, args.max_children, fresh=not args.keep,
                                 sample=args.sample or MODULES[name].sample,
                                 recheck=args.recheck)
            print(f"mutation: {name} done in {seconds:.0f} s", flush=True)
    listed = load_equivalent_file()
    done = [n for n in MODULES if (WORK / n / "mutants").is_dir()]
    summaries = [summarise(n, listed["equivalent"]) for n in done]
    write_report(summaries, listed["given_a_test"])
    below = [s["module"] for s in summaries if s["score"] is None or s["score"] < FLOOR]
    for s in summaries:
        print(f"mutation: {s['module']:<11} {_score(s).split(' |')[0]} of {s['mutants'] - s['equivalent']} "
              f"non-equivalent mutants killed")
    print(f"mutation: report written to {REPORT.relative_to(ROOT)}")
    return 1 if below else 0


def load_equivalent_file() -> dict[str, list[dict[str, str]]]:
    data = yaml.safe_load(EQUIVALENT.read_text(encoding="utf-8")) if EQUIVALENT.exists() else None
    data = data or {}
    return {"equivalent": data.get("equivalent") or [], "given_a_test": data.get("given_a_test") or []}


if __name__ == "__main__":
    sys.exit(main())
