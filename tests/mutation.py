"""``make mutation``: mutmut on every module of the package, one target (a group of modules) at a time,
and the report ``tests/MUTATION.md``.

Usage (from the repository root, with the project's ``.venv``)::

    python tests/mutation.py                       # every target, fresh, then the report
    python tests/mutation.py divergence agreement  # only these targets (others keep their last results)
    python tests/mutation.py --keep divergence     # reuse earlier results (mutmut is incremental)
    python tests/mutation.py --report              # rewrite the report from the results on disk
    python tests/mutation.py --measure cli plots   # a few mutants each: estimate the whole run's time

Each module runs in its own folder ``build/mutation/<module>/``: a ``pyproject.toml`` (the project's,
plus a ``[tool.mutmut]`` table naming the module's files and only the test files mapped to it), and
links to ``src`` and ``tests``. mutmut copies both into ``mutants/``, mutates the module's
functions, records which mapped tests call each function, and runs only those tests for each
mutant (``--max-children``, default 2 = the machine's cores). ``MECHAUDIT_ROOT`` points the copied
package at this repository's data, parameters and chapters.

``--measure`` runs a few mutants of each target in ``build/mutation-measure/<target>/`` and estimates the
whole target's wall time from mutmut's trace of its tests (:func:`estimate`), without the full run.

A per-mutant wall-clock guard: this file is also a pytest plugin (``-p mutation``) in every test run
of mutmut (which also orders a mutant's tests: the map's order of files, shortest first). The clean
run writes its wall time to ``clean_seconds.txt``; each mutant's run arms ``SIGALRM`` (default
action, so the kernel ends the process even when it hangs in C code) at ``GUARD_S + GUARD_FACTOR *
clean seconds``, counted as a timeout. After mutmut's own in-process runs (clean, forced fail,
stats) the plugin shuts joblib's loky pool down, so no idle loky worker is left for mutmut's
``os.wait()`` to reap (a worker exiting after its idle timeout was taken for a mutant's result and
stopped the run) and no forked mutant inherits a pool whose threads did not survive the fork.

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
#: The sample: mutants whose number within its function ends like this glob. mutmut numbers a
#: function's n mutants 1..n, so "1" (1, 11, 21, ...) picks ceil(n / 10) of every function: at least a
#: tenth of each function and so of each module, the same ones on every run while the function is
#: unchanged. ``--sample`` overrides it ("all": every mutant).
SAMPLE = "1"
#: the modules issue 34 names, checked in full (every mutant)
ALL = "all"
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
    """One target: the files mutmut mutates, the tests it runs, and optional mutant globs."""

    files: tuple[str, ...]
    tests: tuple[str, ...]
    mutants: tuple[str, ...] = ()  # mutant-name globs: only these functions (default: every function)
    deselect: tuple[str, ...] = ()  # slow tests left out (each is covered by faster ones)
    sample: str = SAMPLE  # the target's sample glob (see SAMPLE)


def _src(*names: str) -> tuple[str, ...]:
    return tuple(f"src/mechaudit/{n}" for n in names)


def _tests(*names: str) -> tuple[str, ...]:
    return tuple(f"tests/test_{n}.py" for n in names)


#: tests that start a notebook kernel, a subprocess or a server: slow per mutant, and a subprocess
#: imports the package unmutated (no kill power); the steps they drive have in-process tests
_KERNEL_TESTS = (
    "tests/test_local_endpoint.py::test_a_chapter_judges_with_a_local_server_end_to_end",
    # needs the four writer processes to interleave at least 10 times: on a loaded machine it saw 3 and
    # failed mutmut's clean run (the cache log's locking has its own tests)
    "tests/test_llm_cache_store.py::test_four_processes_writing_at_once_lose_and_duplicate_nothing",
)

#: tests that read the package's source files: under mutmut these hold every mutant's copy of each function
_SOURCE_SCANS = ("tests/test_chapter_context.py::test_backend_parse_is_called_once_in_src",
                 "tests/test_backend_compare.py::test_src_compares_no_value_with_a_backend_name")
#: tests that run chapters in kernels or load the embedding model (seconds each): the in-process tests
#: of the same commands and steps stay mapped
_CLI_SLOW = ("tests/test_rules_cli.py::test_embedding_uses_the_disk_store",
             "tests/test_run_safety.py::test_jobs_runs_chapters_at_once_in_order_and_stops_on_a_failure",
             "tests/test_run_safety.py::test_a_good_run_is_quiet_and_an_unknown_folder_is_never_replaced",
             "tests/test_run_safety.py::test_a_failed_chapter_leaves_nothing_that_looks_like_a_result",
             "tests/test_run_safety.py::test_ctrl_c_exits_130_with_one_line_and_keeps_nothing")

#: Target -> files and the fast test files that exercise them (no notebook runs, no book build). Every
#: file of the package is in exactly one target (``tests/test_mutation_map.py``).
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
    "perturb": Target(_src("perturb.py"), _tests("perturb")),
    "tau": Target(_src(*(f"tau/{n}.py" for n in ("__init__", "fitting", "cards", "critic", "realjudge", "rubric",
                                                   "simulate", "studies", "summaries", "taufile"))),
                  _tests("tau_fitting", "tau_judge", "tau_misspec", "tau_mutation_guards", "tau_realjudge",
                         "tau_simulate", "tau_studies", "tau_critic", "boundaries", "ch08_tau_calibration")),
    "llm": Target(_src(*(f"llm/{n}.py" for n in ("__init__", "cache", "cachelog", "cacheindex", "batchstate", "batch",
                                                   "ledger", "jsonout", "blind", "errors", "http", "providers",
                                                   "records", "request", "routing")), "book/account.py"),
                  _tests("llm", "llm_cache_store", "llm_budget_stress", "llm_recovery", "blind_prefilter",
                         "llm_secrets", "cache_paths", "judge_models", "local_endpoint", "boundaries_llm") + tuple(
                      f"tests/test_llm_cost.py::test_{t}" for t in (
                          "budget_below_estimate_stops_before_the_first_request", "budget_hit_midway_then_continue",
                          "ledger_report_and_run_total_agree", "bad_budget_and_cli_estimate",
                          "batch_mode_checks_the_budget_per_batch", "dry_run_and_run_budget_injection")),
                  # the first runs the CLI in a subprocess too (4 s; the package there is not mutated)
                  deselect=("tests/test_llm_secrets.py::test_cli_judge_with_fake_key_leaves_no_trace", *_KERNEL_TESTS)),
    "workflow": Target(_src(*(f"workflow/{n}.py" for n in (
        "__init__", "power", "calibrate", "depth", "simulator", "agents", "committed", "delivery", "design", "measured",
        "parallel", "paramfile", "plan", "records", "rulesets", "toy", "validity"))),
                       _tests("power", "calibrate", "workflow", "simulator_outcomes", "workflow_validity", "toy",
                              "committed", "backend_compare", "workflow_parts"), deselect=_SOURCE_SCANS[1:]),
    "schema": Target(_src("schema.py", "model.py"), _tests("schema", "data")),
    "params": Target(_src("book/params.py"), _tests("execution_params")),
    "paper": Target(_src("paper.py", "paths.py"), _tests("paper", "cache_paths", "paper_gate", "boundaries_book"),
                    # both scan the shared run of every chapter (minutes): the switch itself is tested in-process
                    deselect=("tests/test_paper_gate.py::test_their_data_shows_nothing_of_the_papers",
                              "tests/test_paper_gate.py::test_their_data_gets_no_paper_numbers_through_any_route")),
    "reworded": Target(_src("reworded.py"), _tests("reworded", "boundaries_book")),
    "report": Target(_src(*(f"report/{n}.py" for n in ("__init__", "comparison", "facts", "glue", "labels", "outputs",
                                                       "tables", "terminal"))),
                     _tests("facts", "glue", "tables", "outputs", "csv_outputs", "progress_terminal", "paper",
                            "boundaries_book")),
    "core": Target(_src("__init__.py", "errors.py", "engagement.py", "deprecation.py", "render.py", "backends.py"),
                   _tests("errors", "engagement", "deprecation", "schema", "backend_compare")
                   + ("tests/test_llm_recovery.py::test_an_invalid_engagement_label_reply_is_excluded_and_counted",),
                   # the first runs the CLI in subprocesses, which import the package unmutated (no kill power
                   # here); the second checks a once-per-process warning, already shown by mutmut's trace run
                   deselect=("tests/test_errors.py::test_process_exit_codes_and_debug",
                             "tests/test_errors.py::test_warning_style_prints_own_warnings_once_and_passes_others_on",
                             *_SOURCE_SCANS[1:])),
    "workflow.robustness": Target(_src("workflow/robustness.py"), _tests("robustness", "boundaries_workflow")),
    # the running of chapters: contexts, settings, parameters checked before a kernel, the estimate
    "book": Target(_src(*(f"book/{n}.py" for n in ("__init__", "chapter", "estimate", "execute", "kernel", "preflight",
                                                   "selfserved", "settings"))),
                   _tests("chapter_context", "settings", "execution", "inputs", "inputs_llm", "parallel_params",
                          "outputs", "kernel_count", "selfserved", "llm_cost"),
                   # the last two import benchmarks/local_judge.py, which mutmut's copy of the tree leaves out; the
                   # first reads the session's shared run, made by a subprocess (minutes; the package there is
                   # not mutated)
                   deselect=(*_SOURCE_SCANS[:1],
                             "tests/test_execution.py::test_overrides_go_to_the_run_folder_and_leave_the_committed_"
                             "notebooks_alone",
                             "tests/test_selfserved.py::test_the_front_hands_each_request_to_a_free_server_and_passes_"
                             "replies_through",
                             "tests/test_selfserved.py::test_recheck_sends_the_step_rubrics_schema_in_the_judges_own_order")),
    # the chapter modules, through the in-process tests of their steps
    "chapters": Target(_src("book/ch0*.py"),
                       _tests("ch01_problem", "ch02_critique_depth", "ch02b_validity", "ch02c_robustness",
                              "ch03_critique_engagement", "ch04_equivalence_rules", "ch05_perturbations",
                              "ch06_rubric_sensitivity", "ch07_sensitivity", "ch08_tau_calibration",
                              "judge_model_axis", "committed_tables")),
    # the command line, in-process through main([...])
    "cli": Target(_src("cli/*.py"), _tests("cli_help", "cli_commands", "llm_cli", "tau_cli", "rules_cli", "committed",
                                           "inputs", "inputs_llm", "run_safety", "errors"),
                  deselect=("tests/test_errors.py::test_process_exit_codes_and_debug", *_CLI_SLOW)),
    "plots": Target(_src("plots/*.py"), _tests("plots_style", "plots_caption", "plots_readable", "figure_bytes",
                                               "deprecation"),
                    # draws in a subprocess (6 s), which imports the package unmutated
                    deselect=("tests/test_figure_bytes.py::test_the_same_figure_in_another_process_gives_the_same_bytes",)),
    "sphinxext": Target(_src("sphinxext/*.py"), _tests("sphinxext_build", "book_api", "appendix_sources",
                                                       "book_offline", "settings", "tables")),
    # issue 34's modules checked in full (every mutant): one file each
    "workflow.intervals": Target(_src("workflow/intervals.py"), _tests("intervals", "boundaries_rules"), sample=ALL),
    "llm.pricing": Target(_src("llm/pricing.py"), _tests("boundaries_llm", "local_endpoint", "llm_session") + tuple(
        f"tests/test_llm_cost.py::test_{t}" for t in ("estimate_equals_what_the_server_receives",
                                                      "early_stop_estimate_brackets_what_is_sent",
                                                      "typical_output_sizes_follow_the_planners_demands_per_critique")),
                          deselect=_KERNEL_TESTS[:1], sample=ALL),
    "report.provenance": Target(_src("report/provenance.py"), _tests("provenance", "paper", "boundaries_book"),
                                sample=ALL),
    "tau.anchors": Target(_src("tau/anchors.py"), _tests("tau_anchors", "boundaries", "tau_mutation_guards"),
                          sample=ALL),
    "tau.inference": Target(_src("tau/inference.py"), _tests("tau_inference", "tau_misspec", "boundaries",
                                                              "tau_mutation_guards"), sample=ALL),
    "tau.judge": Target(_src("tau/judge.py"), _tests("tau_judge", "boundaries", "tau_mutation_guards"), sample=ALL),
    "llm.session": Target(_src("llm/session.py"), _tests("llm_session", "llm", "boundaries_llm", "llm_budget_stress"),
                          sample=ALL),
    "llm.client": Target(_src("llm/client.py"), _tests("llm", "boundaries_llm", "llm_budget_stress", "llm_recovery",
                                                       "llm_cache_store", "llm_session", "local_endpoint"),
                         deselect=_KERNEL_TESTS, sample=ALL),
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


def prepare(name: str, fresh: bool, base: Path = WORK) -> Path:
    """The target's work folder (in ``base``) with its config and links to ``src`` and ``tests``."""
    folder = base / name
    if fresh and folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for link in ("src", "tests"):
        if not (folder / link).exists():
            (folder / link).symlink_to(ROOT / link)
    (folder / "pyproject.toml").write_text(_config(MODULES[name]), encoding="utf-8")
    return folder


def selection(name: str, sample: str, only: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Mutant-name globs of one run: the module's functions (default all), and only the mutants whose
    number ends like the glob ``sample`` ("1": ceil(n / 10) of a function's n, "all": every one).
    ``only``: dotted-name prefixes (``mechaudit.book.ch02_critique_depth``) that narrow the run to the
    target's functions under them (``--only``, for working on a part of a target)."""
    globs = MODULES[name].mutants or ("mechaudit.*__mutmut_*",)
    if only:
        globs = tuple(f"{prefix}*__mutmut_*" for prefix in only)
    return globs if sample == ALL else tuple(f"{g}{sample}" for g in globs)


def run_module(name: str, max_children: int, fresh: bool, sample: str, recheck: bool = False,
               base: Path = WORK, only: tuple[str, ...] = (), prefixes: tuple[str, ...] = ()) -> float:
    """Run mutmut for one module; returns the wall time in seconds. ``recheck``: run again only the
    mutants the last run did not kill (after tests were added), keeping the other results. ``only``:
    these mutants (names) instead of the sample (``--measure``). ``prefixes``: only the sample's mutants
    under these dotted names (``--only``)."""
    folder = prepare(name, fresh and not recheck, base)
    if recheck:
        names = tuple(m for m, state in results(name).items() if state not in KILLED | {"not checked"})
        if not names:
            return 0.0
    else:
        names = only or selection(name, sample, prefixes)
        (folder / "selection.json").write_text(json.dumps(selection(name, sample, prefixes)))
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


# --------------------------------------------------------------------------- measuring (no full run)


MEASURE = ROOT / "build" / "mutation-measure"
MEASURE_N = 8  # mutants run per target by --measure, spread over its sample


def planned(name: str, sample: str) -> list[str]:
    """The names of the target's mutants in ``sample``, from mutmut's own mutation of its files
    (nothing is run)."""
    import glob

    from mutmut.mutation.file_mutation import mutate_file_contents
    from mutmut.utils.format_utils import get_mutant_name

    names = []
    for path in sorted({p for pattern in MODULES[name].files for p in glob.glob(str(ROOT / pattern))}):
        mutated = mutate_file_contents(path, Path(path).read_text(encoding="utf-8"))
        rel = Path(path).relative_to(ROOT / "src")
        names += [get_mutant_name(rel, n) for n in mutated.mutant_names]
    globs = selection(name, sample)
    return [n for n in names if any(_fnmatch(n, g) for g in globs)]


def measure(name: str, max_children: int) -> dict:
    """Run ``MEASURE_N`` mutants of the target's sample (spread evenly over it) in ``MEASURE/<name>``
    and estimate the wall time of the whole sample from mutmut's trace (:func:`estimate`)."""
    names = planned(name, MODULES[name].sample)
    step = max(1, len(names) // MEASURE_N)
    seconds = run_module(name, max_children, fresh=True, sample=MODULES[name].sample, base=MEASURE,
                         only=tuple(names[step // 2::step][:MEASURE_N]))
    if not (MEASURE / name / "mutants" / "mutmut-stats.json").exists():
        return {"target": name, "failed": f"see {MEASURE / name / 'mutmut.log'}"}
    found = estimate(name, names, seconds, max_children)
    (MEASURE / name / "estimate.json").write_text(json.dumps(found, indent=1) + "\n")
    return found


def estimate(name: str, names: list[str], seconds: float, workers: int) -> dict:
    """Wall time of a run of ``names`` on ``workers`` cores, from a measuring run that took ``seconds``.

    mutmut's trace (``mutmut-stats.json``) gives each function's tests and each test's duration. A
    mutant costs a per-run part (fork, pytest session, fixtures: the median of wall time less traced
    test time over the measured survivors, which run every test, else the shortest measured run) plus
    a share of its function's traced test time: a killed mutant stops at its first failing test, so
    the share is the measured mutants' wall time beyond the per-run part over their traced time. The
    fixed part (mutant generation, trace, forced-fail run) is the measuring run's time less its mutant
    runs, plus the clean run of every test the sample needs (the measuring run's clean run was smaller)."""
    from mutmut.utils.format_utils import mangled_name_from_mutant_name

    folder = MEASURE / name / "mutants"
    stats = json.loads((folder / "mutmut-stats.json").read_text())
    tests_of, duration = stats["tests_by_mangled_function_name"], stats["duration_by_test"]

    def traced(mutant: str, now: bool = False) -> tuple[set[str], float]:
        """The tests of the mutant's function (``now``: less those deselected since the measuring run)."""
        tests = {t for t in tests_of.get(mangled_name_from_mutant_name(mutant), ())
                 if not (now and t.startswith(MODULES[name].deselect))}
        return tests, sum(duration.get(t, 0.0) for t in tests)

    ran, survived = {}, set()
    for meta in folder.rglob("*.py.meta"):
        data = json.loads(meta.read_text())
        ran.update(data.get("durations_by_key", {}))
        survived |= {m for m, code in data["exit_code_by_key"].items() if code == 0}
    ran = {m: d for m, d in ran.items() if traced(m)[0]}
    full = sorted(d - traced(m)[1] for m, d in ran.items() if m in survived)
    overhead = max(0.0, full[len(full) // 2]) if full else min(ran.values(), default=0.0)
    share = (sum(max(0.0, d - overhead) for d in ran.values()) / total
             if (total := sum(traced(m)[1] for m in ran)) > 0 else 1.0)
    with_tests = [m for m in names if traced(m, now=True)[0]]
    mutant_s = sum(overhead + share * traced(m, now=True)[1] for m in with_tests)

    def clean(mutants: list[str], now: bool = False) -> float:
        return sum(duration.get(t, 0.0) for t in set().union(*(traced(m, now)[0] for m in mutants)))

    fixed = max(0.0, seconds - sum(ran.values()) / workers - clean(list(ran))) + clean(with_tests, now=True)
    return {"target": name, "sample": MODULES[name].sample, "mutants": len(names),
            "no_tests": len(names) - len(with_tests), "measured": len(ran),
            "measured_s_per_mutant": round(sum(ran.values()) / len(ran), 2) if ran else None,
            "per_run_s": round(overhead, 2), "test_share": round(share, 2),
            "est_s_per_mutant": round(mutant_s / len(with_tests), 2) if with_tests else None,
            "fixed_s": round(fixed), "est_wall_s": round(fixed + mutant_s / workers), "measure_run_s": round(seconds),
            "workers": workers}


def reestimate(name: str) -> dict:
    """:func:`estimate` again from a measuring run on disk (after the map or the estimate changed)."""
    old = json.loads((MEASURE / name / "estimate.json").read_text())
    found = estimate(name, planned(name, MODULES[name].sample), old["measure_run_s"], old["workers"])
    (MEASURE / name / "estimate.json").write_text(json.dumps(found, indent=1) + "\n")
    return found


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


def pytest_collection_modifyitems(session, config, items) -> None:
    """In a mutant's run, its tests in the order of the target's test files in the map (the module's
    own unit tests first), shortest first within a file (the durations of mutmut's trace): the run
    stops at the first failure (``-x``), so a mutant a quick test kills costs that test, not the slow
    ones mutmut happened to list before it."""
    stats = Path("mutmut-stats.json")  # mutmut runs the tests from its ``mutants`` folder
    target = MODULES.get(Path(os.environ.get("MECHAUDIT_MUTATION_FOLDER", "")).name)
    if _run_kind() != "mutant" or not stats.exists() or target is None:
        return
    duration = json.loads(stats.read_text())["duration_by_test"]
    files = [t.split("::")[0] for t in target.tests]
    rank = {f: files.index(f) for f in files}
    items.sort(key=lambda item: (rank.get(item.nodeid.split("::")[0], len(files)), duration.get(item.nodeid, 0.0)))


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


def decorated_functions(target: Target) -> int:
    """Functions of the target's files that mutmut leaves alone: it mutates no function with a decorator
    other than a lone ``staticmethod`` or ``classmethod`` (``property``, ``lru_cache``, ...)."""
    import ast
    import glob

    count = 0
    for path in {p for pattern in target.files for p in glob.glob(str(ROOT / pattern))}:
        for node in ast.walk(ast.parse(Path(path).read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.decorator_list:
                lone = node.decorator_list[0]
                count += not (len(node.decorator_list) == 1 and isinstance(lone, ast.Name)
                              and lone.id in ("staticmethod", "classmethod"))
    return count


ESTIMATE_HEADER = ("| target | sample | mutants | no tests | measured | measured s/mutant | est. s/mutant | fixed s "
                   "| est. min | decorated, not mutated |")


def _estimate_row(e: dict) -> str:
    if "failed" in e:
        return f"| {e['target']} | measuring run failed | | | | | | | | |"
    sample = ALL if e["sample"] == ALL else f"`{e['sample']}`"
    return (f"| {e['target']} | {sample} | {e['mutants']} | "
            f"{e['no_tests']} | {e['measured']} | {e['measured_s_per_mutant']} | {e['est_s_per_mutant']} | "
            f"{e['fixed_s']} | {e['est_wall_s'] / 60:.1f} | {decorated_functions(MODULES[e['target']])} |")


def _scaled_row(name: str, scored: str | None, section: list[str]) -> str:
    """The estimate of a target not measured by ``--measure`` from its committed run (same files): that
    run's seconds, scaled by the ratio of sample sizes when it ran another sample (its fixed part too, so
    the scaled estimate is high when the committed sample was small)."""
    target = MODULES[name]
    files = next((line for line in section if line.startswith("Files: ")), "")
    listed = re.findall(r"`([^`]+)`", files.split(". Tests:")[0])
    cells = [c.strip() for c in (scored or "").strip("|").split("|")]
    same = sorted(listed) == sorted(f for f in target.files if not f.endswith("__init__.py"))  # no mutants there
    if scored is None or not same or not cells[9].split(" ")[0].isdigit():
        return f"| {name} | not measured yet | | | | | | | | |"
    seconds, ran = int(cells[9].split(" ")[0]), int(cells[2])
    workers = 1 if "1 worker" in cells[9] else 2
    names = planned(name, target.sample)
    wall = seconds * len(names) / ran * workers / 2
    sample = ALL if target.sample == ALL else f"`{target.sample}`"
    return (f"| {name} | {sample} | {len(names)} | | | {seconds * workers / ran:.2f} (committed run) | | "
            f"| {wall / 60:.1f} | {decorated_functions(target)} |")


def write_report(summaries: list[dict], tested: list[dict[str, str]]) -> None:
    total_s = sum(s["seconds"] or 0 for s in summaries)
    lines = [
        "# Mutation testing of the package",
        "",
        "Written by `make mutation` (`tests/mutation.py`); do not edit by hand. Equivalent mutants and the",
        "tests written for earlier survivors are listed in `tests/mutation_equivalent.yaml`.",
        "",
        "## How the numbers were obtained",
        "",
        f"- Tool: mutmut {mutmut_version()} (PyPI). Each target runs on its own (`build/mutation/<target>/`),",
        "  with only its mapped test files; mutmut runs, for each mutant, the mapped tests that call the",
        "  mutated function (found by tracing one clean run), in forked workers (2 at a time).",
        "- The map: every file of `src/mechaudit` is in exactly one target (`tests/test_mutation_map.py`).",
        "  Chapter modules (`chapters`) run the in-process tests of their steps, `cli` the in-process",
        "  `main([...])` tests, `plots` the tests reading figure contents, `sphinxext` its unit tests.",
        "  Tests that start a kernel, a server or a subprocess are left out (`deselect`): slow per mutant,",
        "  and a subprocess imports the package unmutated.",
        "- A mutant is *killed* when a test fails, errors or times out. *No tests*: no mapped test calls",
        "  the function; it counts as not killed.",
        "- Two traps for a test meant to kill mutants: mutmut credits a function to the tests that called",
        "  it in the trace, so a function called while a module- or session-scoped fixture is built is",
        "  credited to the first test using it only (the checks of a shared build belong in that test, as",
        "  in `tests/test_sphinxext_build.py`); and every mutant run is forked from a process that ran the",
        "  clean tests, so process-wide state they set (Sphinx's docutils registries, matplotlib's",
        "  rcParams) is there whatever the mutant does: tests reset it first.",
        f"- Wall-clock guard: a mutant's test run ends after {GUARD_S:.0f} s + {GUARD_FACTOR:.0f} x the module's clean",
        "  run (SIGALRM, default action), so a hung run cannot stop the module; it counts as a timeout,",
        "  and every timeout is listed under its module. mutmut runs with one OpenMP thread and joblib's",
        "  loky pool is shut after mutmut's own in-process runs (both left forked mutants hanging). Under",
        "  mutmut joblib's default backend is its sequential one: a new loky pool per forked mutant cost",
        "  seconds of worker start-up, and the trace did not see functions run in loky workers (tasks",
        "  carry their own seeds, so the results are the same).",
        "- Score = killed / (mutants - equivalent). The floor is "
        f"{FLOOR:.0%} in every module.",
        "- mutmut mutates code inside functions and methods (not module-level constants or class bodies),",
        "  and no function with a decorator other than a lone `staticmethod` or `classmethod`: the",
        "  *decorated, not mutated* column of the estimate counts them (`property`, `lru_cache`, pydantic",
        "  validators, the plots' `backend_argument`: every figure function of `plots/rules.py` and",
        "  `plots/workflow.py`). No score covers them.",
        "- Sample: the *sample* column is the glob that a mutant's number (within its function) must end",
        f"  with. mutmut numbers a function's n mutants 1..n, so `{SAMPLE}` (1, 11, 21, ...) takes ceil(n / 10)",
        "  of every function: at least a tenth of each function and of each module, the same mutants on",
        "  every run while the function is unchanged. The eight modules issue 34 names run every mutant",
        "  (`all`). A row whose sample is another glob (`0`, `[05]0`) comes from an earlier map with a",
        "  smaller sample (and, for `tau`, `llm`, `workflow` and `core`, fewer files: its section lists",
        "  them): it holds until that target is run again. The *mutants* column counts the sampled",
        "  mutants that were checked; *unchecked* counts sampled mutants a stopped run did not reach",
        "  (left out of the score). mutmut forgets a module's earlier verdicts when its test map or",
        "  sources change, so a `--recheck` after such a change leaves the other sampled mutants",
        "  unchecked: run that module fresh.",
        "- Why mutmut and not cosmic-ray: mutmut 3 compiles every mutant into one copy of the package",
        "  (switched per run), forks each test run from a process that already imported numpy, pandas,",
        "  torch and the tests, and runs only the tests that call the mutated function; cosmic-ray",
        "  rewrites the file and starts a new test process per mutant, which here costs the imports",
        "  (several seconds) for every one of thousands of mutants.",
        "",
        "## Estimated wall time of the whole map",
        "",
        f"`python tests/mutation.py --measure [targets]` runs {MEASURE_N} mutants spread over each target's sample",
        "(`build/mutation-measure/`) and estimates the whole sample from mutmut's trace: each mutant costs a",
        "per-run part (fork, pytest session, fixtures: wall time less traced test time of the measured",
        "survivors, which run every test) plus a share of its function's traced test time (a killed mutant",
        "stops at its first failing test; the share is the measured one); the fixed part is mutant",
        "generation, the trace, the clean run of every test the sample needs and the forced-fail run.",
        "A mutant's tests now run in the map's order of test files (the module's own first), shortest",
        "first within a file; only the `cli` row was measured so: the other rows were measured in",
        "mutmut's order, and a killed mutant now reaches its quickest failing test sooner.",
        "*no tests*: sampled mutants whose function no mapped test calls (they cost nothing and count",
        "as not killed). Measured with 2 workers on this 2-core machine while it also ran other work",
        "(an LLM server at one thread and other test runs): an idle machine is faster. Rows marked",
        "*committed run* were not measured: their time is that of the committed run in the Scores table,",
        "scaled to the current sample.",
        "",
        "Where the time goes: a surviving mutant runs every test of its function, while a killed one stops",
        "at its first failing test, so the functions many tests call (the argument parsers of `cli`, the",
        "cache of `llm`) cost most while their mutants survive: a test that kills them also shortens the",
        "run. Chapter notebooks are not in the map: nbval runs a notebook in a kernel, another process that",
        "imports the installed package rather than mutmut's mutated copy, so it kills no mutant; `chapters`",
        "runs the in-process tests of the chapters' steps, and its *no tests* column counts the sampled",
        "mutants in functions only a notebook calls.",
        "",
        ESTIMATE_HEADER,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    measured = {e["target"]: e for f in sorted(MEASURE.glob("*/estimate.json"))
                if (e := json.loads(f.read_text()))["target"] in MODULES}
    kept_rows, kept_sections, kept_estimates = _previous_report()
    ran = {s["module"]: s for s in summaries if s["seconds"] is not None and not s["unchecked"]}
    est_total, est_missing = 0.0, []
    for n in MODULES:
        if n in ran:  # a complete run of the sample on disk: its own time, not an estimate
            r = ran[n]
            per = r["seconds"] * r["workers"] / max(r["mutants"], 1)  # worker-seconds, as in the measured rows
            row = (f"| {n} | {r['sample']} | {r['mutants']} | | | {per:.2f} (this run) | | | "
                   f"{r['seconds'] * r['workers'] / 2 / 60:.1f} | {decorated_functions(MODULES[n])} |")
        elif n in measured:
            row = _estimate_row(measured[n])
        elif n in kept_estimates:
            row = kept_estimates[n]
        else:
            row = _scaled_row(n, kept_rows.get(n), kept_sections.get(n, []))
        cells = [c.strip() for c in row.strip("|").split("|")]
        if cells[8]:
            est_total += float(cells[8])
        else:
            est_missing.append(n)
        lines.append(row)
    lines += ["", f"Estimated total: {est_total:.0f} min on 2 cores for the whole map (rows *this run*: the "
              "time of the run in the Scores table, scaled to 2 workers; other rows measured or scaled "
              "from an earlier run)" + (f"; no estimate: {', '.join(est_missing)}." if est_missing else "."),
              "",
              "## Scores", "",
              "| module | sample | mutants | killed | equivalent | not killed | score | floor | unchecked | seconds |",
              "|---|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    fresh = {s["module"]: s for s in summaries}
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
        else:  # not run here: the row of the last report (or "not run yet")
            lines.append(kept_rows.get(n, f"| {n} | not run yet | | | | | | | | |"))
    lines += ["", f"Total run time of the rows above: {total_s} s ({total_s / 60:.1f} min) on this machine's 2 cores.",
              "", "## Survivors by module", ""]
    for n in MODULES:
        lines += _module_section(fresh[n], tested) if n in fresh else kept_sections.get(n, [])
    REPORT.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")


def _previous_report() -> tuple[dict[str, str], dict[str, list[str]], dict[str, str]]:
    """The score row, the section and the estimate row of each target in the report on disk, kept for
    the targets that have no results in ``build/mutation`` (a run of some targets keeps the others')."""
    if not REPORT.exists():
        return {}, {}, {}
    rows: dict[str, dict[str, str]] = {"## Scores": {}, "## Estimated wall time of the whole map": {}}
    sections: dict[str, list[str]] = {}
    part, current = None, None
    for line in REPORT.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            part = line.strip()
        if (m := re.match(r"\| (\S+) \| (?!sample)", line)) and m.group(1) in MODULES and part in rows:
            rows[part][m.group(1)] = line
        if line.startswith("### "):
            current = line[4:].strip()
            sections[current] = []
        if current is not None:
            sections[current].append(line)
    return (rows["## Scores"], {n: lines for n, lines in sections.items() if n in MODULES},
            rows["## Estimated wall time of the whole map"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", choices=[[], *MODULES], help="default: every module")
    parser.add_argument("--keep", action="store_true", help="reuse earlier results (incremental)")
    parser.add_argument("--report", action="store_true", help="only rewrite the report")
    parser.add_argument("--recheck", action="store_true",
                        help="run again only the mutants the last run did not kill (after adding tests)")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--sample", default=None, help="glob for the end of the mutant numbers to run, for "
                        f"every module (default: each module's own, {SAMPLE!r}: ceil(n / 10) of a function's n "
                        f"mutants, or {ALL!r}: every mutant)")
    parser.add_argument("--measure", action="store_true",
                        help=f"run {MEASURE_N} mutants of each target's sample and estimate the whole run's wall time "
                             "(build/mutation-measure/<target>/estimate.json; no report)")
    parser.add_argument("--only", nargs="+", default=(), metavar="PREFIX",
                        help="with one target: run only its sampled mutants under these dotted names "
                             "(e.g. mechaudit.book.ch02_critique_depth) and list the open ones; no report")
    args = parser.parse_args(argv)
    names = args.modules or list(MODULES)
    if args.only:
        if len(names) != 1:
            parser.error("--only needs exactly one target")
        (name,) = names
        run_module(name, args.max_children, fresh=not args.keep, sample=args.sample or MODULES[name].sample,
                   recheck=args.recheck, prefixes=tuple(args.only))
        s = summarise(name, load_equivalent_file()["equivalent"])
        print(f"mutation: {name} (only {' '.join(args.only)}): {_score(s).split(' |')[0]} of "
              f"{s['mutants'] - s['equivalent']} non-equivalent mutants killed; not the module's score, no report")
        for row in s["rows"]:
            if row["equivalent"] is None:
                print(f"  {row['mutant']} ({row['status']}): {_one_line(row['changed'])}")
        return 0
    if args.measure:
        for name in names:
            found = measure(name, args.max_children)
            print(f"mutation: {name}: {json.dumps(found)}", flush=True)
        return 0
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
