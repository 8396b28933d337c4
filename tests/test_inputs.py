"""Every input of ``mechaudit execute`` is checked before a kernel starts: design, simulator and
calibration files, sizes with upper bounds, backend names, empty strings, parameter files with
repeated keys or a byte-order mark, the data folder (``MECHAUDIT_DATA`` too, chapter 09 included).

No chapter runs here: the function that would start a kernel (``book.execute.execute_chapter``) is
replaced by one that records its call, so each test proves either that nothing started (a bad input:
one error line, exit 1) or that the chapter would have started with the parameters it shows.
How long each refusal takes is measured by ``benchmarks/bench_preflight.py``, not here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from mechaudit import paths
from mechaudit.book import execute as book_execute
from mechaudit.cli import main
from mechaudit.paths import REPO_ROOT


@pytest.fixture
def kernels(monkeypatch, tmp_path):
    """The chapters that would have started a kernel: ``[(stem, parameters)]``."""
    started: list[tuple[str, dict]] = []

    def fake(chapter, parameters=None, out_dir=None, **_):
        started.append((chapter.stem, dict(parameters or {})))
        return tmp_path / f"{chapter.stem}.ipynb"

    monkeypatch.setattr(book_execute, "execute_chapter", fake)
    return started


def one_error(capsys, argv, *expected):
    """``main(argv)`` exits 1 with one stderr line holding every ``expected`` text."""
    code = main(argv)
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and lines[0].startswith("mechaudit: error: "), lines
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.write_text(text, encoding=encoding)
    return path


DESIGN = "design:\n  instances: {instances}\n  depths: {depths}\n  runs_per_depth: {runs}\n"


def design(tmp_path, instances="all", depths="[0, 1, 5]", runs=5) -> str:
    return str(write(tmp_path / "design.yaml", DESIGN.format(instances=instances, depths=depths, runs=runs)))


# ---------------------------------------------------------------- design, simulator and calibration files


def test_a_missing_design_file(capsys, kernels):
    one_error(capsys, ["execute", "02b_validity", "-p", "design_file", "missing.yaml"],
              "field 'design_file'", "params/missing.yaml does not exist", "paper.yaml")
    assert kernels == []


def test_a_malformed_design_file(capsys, kernels, tmp_path):
    bad = write(tmp_path / "d.yaml", "design: [\n")
    one_error(capsys, ["execute", "02_critique_depth", "-p", "design_file", str(bad)], f"{bad}:", "malformed YAML")
    assert kernels == []


def test_a_design_naming_an_unknown_instance(capsys, kernels, tmp_path):
    path = design(tmp_path, instances="[nope]")
    one_error(capsys, ["execute", "03_critique_engagement", "-p", "design_file", path],
              f"{path}:2: field 'design.instances': unknown instance 'nope'; the benchmark's instances are")
    assert kernels == []


@pytest.mark.parametrize("stem", ["02_critique_depth", "02b_validity", "02c_robustness"])
def test_one_run_per_depth_is_refused_where_runs_of_a_depth_are_compared(capsys, kernels, tmp_path, stem):
    path = design(tmp_path, runs=1)
    one_error(capsys, ["execute", stem, "-p", "design_file", path],
              f"{path}:2: field 'design.runs_per_depth': is 1: {stem} compares runs within a depth")
    assert kernels == []


def test_one_depth_is_refused_where_depths_are_compared(capsys, kernels, tmp_path):
    path = design(tmp_path, depths="[1]")
    one_error(capsys, ["execute", "02b_validity", "-p", "design_file", path], "field 'design.depths': [1]")


@pytest.mark.parametrize(("runs", "ok"), [(2, True), (1, False), (0, False), (2000, True), (2001, False)])
def test_design_runs_per_depth_bounds(capsys, kernels, tmp_path, runs, ok):
    path = design(tmp_path, runs=runs)
    argv = ["execute", "02_critique_depth", "-p", "design_file", path]
    if ok:
        assert main(argv) == 0 and [s for s, _ in kernels] == ["02_critique_depth"]
    else:
        one_error(capsys, argv, "field 'design.runs_per_depth'")
        assert kernels == []


def test_one_run_per_depth_is_fine_where_no_runs_are_compared(kernels, tmp_path):
    path = design(tmp_path, runs=1)
    assert main(["execute", "03_critique_engagement", "-p", "design_file", path]) == 0
    assert kernels == [("03_critique_engagement", {"design_file": path})]


def test_a_bad_simulator_file_names_its_field(capsys, kernels, tmp_path):
    doc = yaml.safe_load((REPO_ROOT / "params" / "simulator.yaml").read_text(encoding="utf-8"))
    doc["simulator"]["p_find"] = 2.0
    bad = write(tmp_path / "sim.yaml", yaml.safe_dump(doc))
    one_error(capsys, ["execute", "02b_validity", "-p", "null_simulator_file", str(bad)],
              f"{bad}:", "field 'simulator.p_find'")
    assert kernels == []


def test_a_missing_calibration_file(capsys, kernels):
    one_error(capsys, ["execute", "02c_robustness", "-p", "calibration_file", "nope.yaml"],
              "field 'calibration_file'", "does not exist")


@pytest.mark.parametrize("name", ["design_file", "simulator_file", "calibration_file"])
def test_an_empty_file_name(capsys, kernels, name):
    one_error(capsys, ["execute", "02_critique_depth", "-p", name, ""], f"field '{name}': must not be empty")


def test_a_cache_dir_that_is_a_file(capsys, kernels, tmp_path):
    cache = tmp_path / "cache"
    cache.write_text("not a folder", encoding="utf-8")
    one_error(capsys, ["execute", "05_perturbations", "-p", "cache_dir", str(cache)],
              f"field 'cache_dir': {cache} is a file")
    assert kernels == []
    assert main(["execute", "05_perturbations", "-p", "cache_dir", str(tmp_path / "new")]) == 0  # made later


# ---------------------------------------------------------------- sizes, names, empty strings


@pytest.mark.parametrize(("stem", "name", "value", "expected"), [
    ("02b_validity", "n_boot", "1000000000000", "field 'n_boot': must be an integer in [1, 100000], got 1000000000000"),
    ("02b_validity", "n_boot", "100001", "in [1, 100000]"),
    ("02b_validity", "n_replications", "0", "in [1, 100000], got 0"),
    ("02_critique_depth", "truth_runs_per_depth", "5000", "in [1, 2000]"),
    ("02c_robustness", "n_resamples", "10000000", "in [1, 1000000]"),
    ("02c_robustness", "power_ladder", "[3, 5, 1000000]", "item 2: must be an integer in [2, 2000]"),
    ("02c_robustness", "power_designs", "[[4, 5], [4, 1]]", "item 1: item 1: must be an integer in [2, 2000]"),
    ("02c_robustness", "power_designs", "[[4, 5, 6]]", "item 0: must be a list of exactly 2 items"),
    ("07_sensitivity", "tfidf_sweep", "[0.05, 0.95, 1000000000]", "item 2: must be an integer in [2, 10000]"),
    ("07_sensitivity", "embedding_sweep", "[0.5, 0.98, 25, 4]", "must be a list of exactly 3 items"),
    ("07_sensitivity", "embedding_sweep", "[0.5, 1.5, 25]", "item 1: must be a number in [0, 1]"),
    ("08_tau_calibration", "n_pairs", "1e9", "field 'n_pairs'"),
    ("08_tau_calibration", "papers_per_pattern", "100000", "in [2, 1000]"),
    ("05_perturbations", "backend", "antropic", "did you mean 'anthropic'?"),
    ("05_perturbations", "judge_model", "", "field 'judge_model': must not be empty"),
    ("05_perturbations", "judge_model", "  ", "field 'judge_model': must not be empty"),
    ("05_perturbations", "data_dir", "", "field 'data_dir': must not be empty"),
    ("05_perturbations", "embedding_model", "", "field 'embedding_model': must not be empty"),
    ("02_critique_depth", "json_retries", "50", "in [0, 20]"),
])
def test_bad_values_fail_in_one_line_before_any_kernel(capsys, kernels, stem, name, value, expected):
    line = one_error(capsys, ["execute", stem, "-p", name, value], "-p: ", expected)
    assert "got None" not in line
    assert kernels == []


@pytest.mark.parametrize(("stem", "name", "value"), [
    ("02b_validity", "n_boot", "100000"),
    ("02c_robustness", "power_designs", "[[2, 2000]]"),
    ("07_sensitivity", "tfidf_sweep", "[0.0, 1.0, 2]"),
    ("05_perturbations", "data_dir", "null"),
])
def test_values_at_the_bounds_pass(kernels, stem, name, value):
    assert main(["execute", stem, "-p", name, value]) == 0
    assert [s for s, _ in kernels] == [stem]


# ---------------------------------------------------------------- parameter files


def test_a_repeated_key_names_both_lines(capsys, kernels, tmp_path):
    params = write(tmp_path / "p.yaml", "common:\n  seed: 1\n  backend: reference\n  seed: 2\n")
    one_error(capsys, ["execute", "01_problem", "--params", str(params)],
              f"{params}:4: field 'seed': duplicate key 'seed': first on line 2, again on line 4")
    assert kernels == []


def test_a_repeated_key_inside_a_value(capsys, kernels, tmp_path):
    params = write(tmp_path / "p.yaml", "02c_robustness:\n  robust_axes:\n    p_find: [0.5]\n    p_find: [0.7]\n")
    one_error(capsys, ["execute", "02c_robustness", "--params", str(params)],
              f"{params}:4: field 'p_find': duplicate key 'p_find': first on line 3, again on line 4")


def test_repeated_sections_are_refused_too(capsys, kernels, tmp_path):
    params = write(tmp_path / "p.yaml", "common:\n  seed: 1\n01_problem:\n  n_runs: 3\ncommon:\n  seed: 2\n")
    one_error(capsys, ["execute", "01_problem", "--params", str(params)], "duplicate key 'common'",
              "first on line 1, again on line 5")


def test_a_parameter_file_with_a_byte_order_mark_is_read(kernels, tmp_path):
    params = tmp_path / "p.yaml"
    params.write_bytes(b"\xef\xbb\xbf" + b"01_problem:\n  n_runs: 3\n")
    assert main(["execute", "01_problem", "--params", str(params)]) == 0
    assert kernels == [("01_problem", {"n_runs": 3})]


def test_data_files_with_a_byte_order_mark_are_read(tmp_path):
    from mechaudit.schema import load_benchmark

    folder = tmp_path / "bom"
    shutil.copytree(paths.EXAMPLE_DIR, folder, ignore=shutil.ignore_patterns("embedding_cache"))
    for name in ("vocabulary.yaml", "instances.yaml", "hypotheses.jsonl"):
        (folder / name).write_bytes(b"\xef\xbb\xbf" + (folder / name).read_bytes())
    reference = load_benchmark(paths.EXAMPLE_DIR)
    bench = load_benchmark(folder)
    assert [h.id for h in bench.hypotheses] == [h.id for h in reference.hypotheses]
    assert bench.hypotheses[0] == reference.hypotheses[0]


def test_a_byte_order_mark_only_at_the_start(tmp_path):
    from mechaudit.schema import DataError, read_jsonl

    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": 1}\n\xef\xbb\xbf{"b": 2}\n')
    with pytest.raises(DataError, match=r"x\.jsonl:2: field '<json>': malformed JSON"):
        list(read_jsonl(path))


# ---------------------------------------------------------------- the data folder and MECHAUDIT_DATA


@pytest.fixture
def data_env(monkeypatch, tmp_path):
    """Point ``MECHAUDIT_DATA`` at ``folder`` (as a new process would read it)."""

    def point(folder: Path) -> Path:
        monkeypatch.setenv(paths.DATA_ENV, str(folder))
        monkeypatch.setattr(paths, "DATA_DIR", folder)
        return folder

    return point


@pytest.mark.parametrize("stem", ["01_problem", "05_perturbations", "09_your_data"])
def test_a_missing_data_env_folder_is_named_as_such(capsys, kernels, data_env, tmp_path, stem):
    missing = data_env(tmp_path / "nowhere")
    line = one_error(capsys, ["execute", stem], f"field '{paths.DATA_ENV}': {missing} does not exist")
    assert "vocabulary.yaml" not in line
    assert kernels == []


def test_chapter_09_reads_the_data_env_folder(kernels, data_env, tmp_path):
    folder = tmp_path / "mine"
    shutil.copytree(paths.EXAMPLE_DIR, folder, ignore=shutil.ignore_patterns("embedding_cache"))
    data_env(folder)
    assert main(["execute", "09_your_data", "01_problem"]) == 0
    assert kernels == [("09_your_data", {"data_dir": str(folder.resolve())}), ("01_problem", {})]


def test_chapter_09_keeps_an_explicit_data_dir(kernels, data_env, tmp_path):
    data_env(tmp_path / "nowhere")
    assert main(["execute", "09_your_data", "-p", "data_dir", str(paths.EXAMPLE_DIR)]) == 0
    assert kernels == [("09_your_data", {"data_dir": str(paths.EXAMPLE_DIR)})]


def test_chapter_09_without_the_variable_audits_the_example(kernels, monkeypatch):
    monkeypatch.delenv(paths.DATA_ENV, raising=False)
    assert main(["execute", "09_your_data"]) == 0
    assert kernels == [("09_your_data", {})]


def test_a_data_env_folder_without_a_benchmark_names_the_missing_file(capsys, kernels, data_env, tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    data_env(folder)
    one_error(capsys, ["execute", "09_your_data"], f"{folder / 'vocabulary.yaml'}: field '{paths.DATA_ENV}': missing")


def test_a_missing_data_env_folder_in_the_other_commands(capsys, data_env, tmp_path):
    missing = data_env(tmp_path / "nowhere")
    one_error(capsys, ["perturb", "--out", str(tmp_path / "s.jsonl")],
              f"field '{paths.DATA_ENV}': {missing} does not exist")


# ---------------------------------------------------------------- perturbation suites: built from these hypotheses


@pytest.fixture
def mine(tmp_path) -> Path:
    """A copy of the example benchmark with both of its suites."""
    folder = tmp_path / "mine"
    shutil.copytree(paths.EXAMPLE_DIR, folder, ignore=shutil.ignore_patterns("embedding_cache"))
    return folder


def _edit_first_statement(folder: Path) -> str:
    from mechaudit.schema import dump_hypotheses, load_hypotheses

    hyps = load_hypotheses(folder / "hypotheses.jsonl")
    h = hyps[0]
    template = h.template.model_copy(update={"statement": h.template.statement + " Edited."})
    hyps[0] = h.model_copy(update={"statement": h.statement + " Edited.", "template": template})
    dump_hypotheses(hyps, folder / "hypotheses.jsonl")
    return hyps[0].id


def test_the_shipped_suites_record_the_hypotheses_they_were_built_from():
    from mechaudit.perturb import hypotheses_sha256, load_suite
    from mechaudit.schema import load_hypotheses

    for folder in (REPO_ROOT / "data", paths.EXAMPLE_DIR):
        source = hypotheses_sha256(load_hypotheses(folder / "hypotheses.jsonl"))
        for name in ("perturbations.jsonl", "perturbations_reworded.jsonl"):
            assert {p["hypotheses_sha256"] for p in load_suite(folder / name)} == {source}, folder / name


@pytest.mark.parametrize(("name", "reworded"), [("perturbations.jsonl", False),
                                                ("perturbations_reworded.jsonl", True)])
def test_a_suite_of_edited_hypotheses_is_refused_with_the_command_that_rebuilds_it(mine, name, reworded):
    from mechaudit.errors import MechauditError
    from mechaudit.perturb import load_suite, rebuild_command

    hid = _edit_first_statement(mine)
    with pytest.raises(MechauditError, match=f"stale perturbation suite: hypothesis '{hid}' was edited") as info:
        load_suite(mine / name)
    command = rebuild_command(mine / name)
    assert f"`{command}`" in str(info.value) and str(mine / name) in str(info.value)
    assert ("--reworded " + str(mine / "perturbations_reworded.yaml") in command) is reworded
    # the command does rebuild it
    assert main(command.split()[1:]) == 0
    assert load_suite(mine / name)


def test_a_stale_suite_stops_execute_before_any_kernel(capsys, kernels, mine):
    _edit_first_statement(mine)
    for stem in ("05_perturbations", "06_rubric_sensitivity", "07_sensitivity"):
        one_error(capsys, ["execute", stem, "-p", "data_dir", str(mine)],
                  f"{mine / 'perturbations.jsonl'}:1: field 'original': stale perturbation suite",
                  "rebuild it with `mechaudit perturb --hypotheses")
    assert kernels == []


def test_an_added_hypothesis_makes_the_suite_stale_by_its_hash(mine):
    from mechaudit.errors import MechauditError
    from mechaudit.perturb import load_suite
    from mechaudit.schema import dump_hypotheses, load_hypotheses

    hyps = load_hypotheses(mine / "hypotheses.jsonl")
    dump_hypotheses([*hyps, hyps[-1].model_copy(update={"id": hyps[-1].id + "_copy"})], mine / "hypotheses.jsonl")
    with pytest.raises(MechauditError, match="hypotheses_sha256 differs"):
        load_suite(mine / "perturbations.jsonl")


def test_a_suite_without_a_record_is_checked_pair_by_pair(mine):
    import json

    from mechaudit.errors import MechauditError
    from mechaudit.perturb import load_suite

    path = mine / "perturbations.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "hypotheses_sha256"}) + "\n"
                            for r in rows), encoding="utf-8")
    assert len(load_suite(path)) == len(rows)  # an older or hand-made suite of these hypotheses: fine
    hid = _edit_first_statement(mine)
    with pytest.raises(MechauditError, match=f"hypothesis '{hid}' was edited"):
        load_suite(path)


def test_a_suite_outside_a_benchmark_folder_is_read_as_it_is(mine, tmp_path):
    from mechaudit.perturb import load_suite

    alone = tmp_path / "alone" / "suite.jsonl"
    alone.parent.mkdir()
    shutil.copy(mine / "perturbations.jsonl", alone)
    _edit_first_statement(mine)
    assert len(load_suite(alone)) == len(load_suite(alone, valid_only=False))


# ---------------------------------------------------------------- mechaudit perturb: the hypotheses' own vocabulary


def test_perturb_checks_hypotheses_against_their_folders_vocabulary(capsys, mine, tmp_path):
    out = tmp_path / "suite.jsonl"
    assert main(["perturb", "--hypotheses", str(mine / "hypotheses.jsonl"), "--out", str(out)]) == 0
    capsys.readouterr()
    (mine / "vocabulary.yaml").rename(tmp_path / "elsewhere.yaml")
    one_error(capsys, ["perturb", "--hypotheses", str(mine / "hypotheses.jsonl"), "--out", str(out)],
              "unknown vocabulary id", "checked against the shipped vocabulary", "--vocabulary FILE")
    assert main(["perturb", "--hypotheses", str(mine / "hypotheses.jsonl"), "--vocabulary",
                 str(tmp_path / "elsewhere.yaml"), "--out", str(out)]) == 0


def test_fix_for_names_the_command_for_a_suite_and_the_format_page_for_a_source(tmp_path):
    from mechaudit.book.preflight import fix_for

    assert fix_for(tmp_path, "perturbations.jsonl") == (
        f"make it with `mechaudit perturb --hypotheses {tmp_path / 'hypotheses.jsonl'} --vocabulary "
        f"{tmp_path / 'vocabulary.yaml'} --out {tmp_path / 'perturbations.jsonl'}`")
    assert fix_for(tmp_path, "hypotheses.jsonl") == "write it as book/data.md describes"
    assert fix_for(tmp_path, "vocabulary.yaml") == "write it as book/data.md describes"


def test_a_design_is_checked_against_the_chapters_own_data_folder(capsys, kernels, tmp_path):
    path = design(tmp_path, instances="[U, N]")  # the example set's instances, not the shipped data's
    assert main(["execute", "03_critique_engagement", "-p", "data_dir", str(paths.EXAMPLE_DIR),
                 "-p", "design_file", path]) == 0
    assert [s for s, _ in kernels] == ["03_critique_engagement"]
    capsys.readouterr()
    one_error(capsys, ["execute", "03_critique_engagement", "-p", "design_file", path],
              f"{path}:2: field 'design.instances': unknown instance 'U'")


def test_one_depth_names_the_designs_line(capsys, kernels, tmp_path):
    path = design(tmp_path, depths="[1]")
    one_error(capsys, ["execute", "02b_validity", "-p", "design_file", path],
              f"{path}:2: field 'design.depths': [1]: 02b_validity compares depths, which needs at least two")


def test_an_output_folder_of_other_files_is_refused_naming_the_field(tmp_path):
    from mechaudit.book.preflight import RUN_MARK, check_out_folder
    from mechaudit.errors import MechauditError

    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(MechauditError) as err:
        check_out_folder(tmp_path, "out_dir")
    assert err.value.field == "out_dir" and str(err.value) == (
        f"field 'out_dir': {tmp_path} exists and holds files mechaudit did not write: a chapter's output folder is "
        "replaced whole after each run, so choose a new or empty folder")
    (tmp_path / RUN_MARK).write_text("")
    check_out_folder(tmp_path, "out_dir")  # a run folder: replaced
    check_out_folder(tmp_path / "new", "out_dir")


def test_needed_files_of_a_chapter_that_rebuilds_its_suite(tmp_path):
    from mechaudit.book.preflight import SOURCE_FILES, needed_files

    assert needed_files("05_perturbations", {"regenerate_suite": True}) == SOURCE_FILES
    assert needed_files("05_perturbations", {"regenerate_suite": False}) == (*SOURCE_FILES, "perturbations.jsonl")
    (tmp_path / "perturbations_reworded.jsonl").write_text("x")
    assert needed_files("06_rubric_sensitivity", {}, tmp_path) == (
        *SOURCE_FILES, "perturbations.jsonl", "perturbations_reworded.jsonl")
    assert needed_files("01_problem", {}, tmp_path) == SOURCE_FILES


def test_an_empty_or_all_excluded_suite_names_the_command_that_rebuilds_it(mine):
    import json

    from mechaudit.book.preflight import _check_file, fix_for
    from mechaudit.errors import MechauditError

    suite = mine / "perturbations.jsonl"
    lines = [json.loads(line) for line in suite.read_text().splitlines() if line.strip()]
    suite.write_text("".join(json.dumps({**line, "valid": False}) + "\n" for line in lines))
    with pytest.raises(MechauditError) as err:
        _check_file(mine, "perturbations.jsonl", "data_dir")
    assert str(err.value) == (f"{suite}: field 'data_dir': no valid perturbation pair (every pair was excluded): "
                              f"{fix_for(mine, 'perturbations.jsonl')}")
    suite.write_text("\n")
    with pytest.raises(MechauditError) as err:
        _check_file(mine, "perturbations.jsonl", "data_dir")
    assert str(err.value) == f"{suite}: field 'data_dir': empty: {fix_for(mine, 'perturbations.jsonl')}"


def test_a_run_folder_is_drawn_into_while_the_chapter_runs_and_then_placed(kernels, tmp_path, monkeypatch, capsys):
    from mechaudit.book.preflight import RUN_MARK
    from mechaudit.report.outputs import DEFER_MARK

    drawn = []

    class Drawer:
        returncode = 0

        def communicate(self):
            return None, ""

    def start(stage):
        drawn.append(stage)
        (stage / DEFER_MARK).touch()
        return Drawer()

    monkeypatch.setattr(book_execute, "_start_drawing", start)
    assert main(["execute", "01_problem", "--out", str(tmp_path / "run")]) == 0
    ((stem, params),) = kernels
    (stage,) = drawn
    assert stem == "01_problem" and params["out_dir"] == str(stage)  # the kernel writes into the stage
    assert stage.name.startswith(".01_problem.partial-") and not stage.exists()
    assert sorted(p.name for p in (tmp_path / "run" / "01_problem").iterdir()) == [RUN_MARK]
    capsys.readouterr()
    assert main(["execute", "01_problem", "--out", str(tmp_path / "run")]) == 0
    assert (f"[1/1] 01_problem: {tmp_path / 'run' / '01_problem'} held an earlier run: replaced whole\n"
            in capsys.readouterr().err)


def test_compare_paper_true_is_checked_against_the_chapters_data_folder(tmp_path):
    from mechaudit.book.preflight import check_compare_paper
    from mechaudit.errors import MechauditError

    check_compare_paper({"compare_paper": True})  # the shipped data
    check_compare_paper({"compare_paper": False, "data_dir": str(paths.EXAMPLE_DIR)})
    with pytest.raises(MechauditError, match=r"^field 'compare_paper': compare_paper is true, but the data folder "):
        check_compare_paper({"compare_paper": True, "data_dir": str(paths.EXAMPLE_DIR)})


def test_a_dry_run_without_an_llm_says_nothing_would_be_sent(kernels):
    import io

    stream = io.StringIO()
    assert book_execute.execute_chapters(["01_problem"], dry_run=True, stream=stream) == []
    assert stream.getvalue() == "no chapter runs an LLM backend: nothing would be sent\n" and kernels == []


def test_confirm_yes_runs_and_no_cancels_after_the_estimate(kernels):
    import io

    from mechaudit.book.account import RunCancelled

    asked = []
    overrides = {"backend": "replay", "rubrics": ["none"], "judge_orders": ["ab"]}
    book_execute.execute_chapters(["06_rubric_sensitivity"], overrides=overrides, stream=io.StringIO(),
                                  confirm=lambda text: asked.append(text) or True)
    assert [s for s, _ in kernels] == ["06_rubric_sensitivity"] and len(asked) == 1
    with pytest.raises(RunCancelled, match="^cancelled after the estimate: nothing was sent$"):
        book_execute.execute_chapters(["06_rubric_sensitivity"], overrides=overrides, stream=io.StringIO(),
                                      confirm=lambda text: False)
    assert len(kernels) == 1


def test_chapters_of_a_one_job_run_execute_in_this_thread_in_order(monkeypatch):
    import threading

    ran = []
    monkeypatch.setattr(book_execute, "_execute_one", lambda i: ran.append((i, threading.current_thread())) or i)
    assert book_execute._execute_all([(1,), (2,), (3,)], 1) == [1, 2, 3]
    assert ran == [(i, threading.main_thread()) for i in (1, 2, 3)]
    ran.clear()
    assert book_execute._execute_all([(1,), (2,)], 2) == [1, 2]
    assert sorted(i for i, _ in ran) == [1, 2]


def test_a_failed_chapters_own_error_is_reported_even_when_its_stage_is_gone(monkeypatch, tmp_path):
    import shutil

    def fails(chapter, parameters=None, out_dir=None, **_):
        shutil.rmtree(parameters["out_dir"])
        raise ValueError("cell 3 raised")

    monkeypatch.setattr(book_execute, "execute_chapter", fails)
    monkeypatch.setattr(book_execute, "_start_drawing", lambda stage: None)
    with pytest.raises(ValueError, match="^cell 3 raised$"):
        book_execute.execute_chapters(["01_problem"], out_dir=tmp_path / "run")
    assert not (tmp_path / "run" / "01_problem").exists()
    assert [p.name for p in (tmp_path / "run").iterdir()] == []


def test_display_path_is_relative_to_the_repository_when_inside_it(tmp_path):
    assert book_execute._display_path(REPO_ROOT / "notebooks" / "01_problem.ipynb") == "notebooks/01_problem.ipynb"
    assert book_execute._display_path(tmp_path / "x.ipynb") == str(tmp_path / "x.ipynb")


# ---------------------------------------------------------------- execute_chapters: what it checks and hands on


@pytest.fixture
def handed_env(monkeypatch, tmp_path):
    """``(stem, parameters, env)`` of each chapter ``execute_chapter`` would have run."""
    started: list[tuple[str, dict, dict]] = []

    def fake(chapter, parameters=None, out_dir=None, *, env=None, **_):
        started.append((chapter.stem, dict(parameters or {}), dict(env or {})))
        return tmp_path / f"{chapter.stem}.ipynb"

    monkeypatch.setattr(book_execute, "execute_chapter", fake)
    return started


def test_the_servers_address_comes_from_the_files_common_section_or_the_override(handed_env, tmp_path):
    params = write(tmp_path / "p.yaml", "common: {llm_base_url: 'http://127.0.0.1:9/v1'}\n")
    book_execute.execute_chapters(["01_problem"], params_file=params)
    book_execute.execute_chapters(["01_problem"], params_file=params,
                                  overrides={"llm_base_url": "http://127.0.0.1:8/v1"})
    prices = REPO_ROOT / "params" / "prices.yaml"
    book_execute.execute_chapters(["01_problem"], prices=prices)
    assert [env.get("OPENAI_BASE_URL") for _, _, env in handed_env] == [
        "http://127.0.0.1:9/v1", "http://127.0.0.1:8/v1", None]
    assert handed_env[2][2] == {"MECHAUDIT_PRICES": str(prices.resolve())}


def test_a_budget_among_the_overrides_is_the_runs_budget(handed_env, capsys):
    import io

    stream = io.StringIO()
    assert book_execute.execute_chapters(["01_problem"], overrides={"max_usd": 1.0}, dry_run=True,
                                         stream=stream) == []
    assert stream.getvalue() == "no chapter runs an LLM backend: nothing would be sent\n"


def test_the_run_total_goes_to_the_progress_stream(handed_env, capsys):
    import io

    stream = io.StringIO()
    book_execute.execute_chapters(["06_rubric_sensitivity"], stream=stream,
                                  overrides={"backend": "replay", "rubrics": ["none"], "judge_orders": ["ab"]})
    assert stream.getvalue().splitlines()[-1].startswith("LLM run total: 0 requests sent (0 by batch) in ")
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(("call", "field", "message"), [
    (lambda: book_execute.check_budget_args(-1, False), "--max-usd", "must be a number in [0, inf], got -1"),
    (lambda: book_execute.check_budget_args(1.0, True), "--allow-unpriced", "cannot be combined with --max-usd"),
    (lambda: book_execute.execute_chapters(["01_problem"], jobs=0), "--jobs", "expected a whole number >= 1, got 0"),
])
def test_run_arguments_are_refused_naming_the_option(call, field, message):
    from mechaudit.book.params import ParameterError

    with pytest.raises(ParameterError) as err:
        call()
    assert err.value.field == field and message in err.value.message


def test_budget_arguments_that_pass():
    assert book_execute.check_budget_args(None, True) is None
    assert book_execute.check_budget_args(2, False) == 2.0 and isinstance(book_execute.check_budget_args(2, False),
                                                                          float)


def test_out_folders_that_cannot_be_used_name_the_option(handed_env, tmp_path, monkeypatch):
    from mechaudit.book.params import ParameterError
    from mechaudit.errors import MechauditError

    afile = write(tmp_path / "afile", "x")
    for out, field, message in ((afile, "--out", f"{afile} exists and is not a folder"),
                                (afile / "sub", "--out", f"cannot create the folder {afile / 'sub'}: ")):
        with pytest.raises(ParameterError) as err:
            book_execute.execute_chapters(["01_problem"], out_dir=out)
        assert err.value.field == field and err.value.message.startswith(message)
    with pytest.raises(ParameterError) as err:  # the same chapter twice: one folder
        book_execute.execute_chapters(["01_problem", "01_problem"], out_dir=tmp_path / "run")
    assert err.value.field == "--out" and "01_problem and 01_problem would write to the same folder" in str(err.value)
    with pytest.raises(ParameterError) as err:
        book_execute.execute_chapters(["01_problem", "03_critique_engagement"],
                                      overrides={"out_dir": str(tmp_path / "same")})
    assert err.value.field == "out_dir"
    mine = tmp_path / "run2" / "01_problem"
    mine.mkdir(parents=True)
    write(mine / "notes.txt", "mine")
    with pytest.raises(MechauditError) as err:
        book_execute.execute_chapters(["01_problem"], out_dir=tmp_path / "run2")
    assert err.value.field == "--out"
    monkeypatch.setattr(paths, "PACKAGED", True)
    with pytest.raises(ParameterError) as err:
        book_execute.execute_chapters(["01_problem"])
    assert str(err.value) == ("field '--out': the chapters come from the installed package: pass --out DIR for the "
                              "executed notebooks")
    assert handed_env == []


def test_data_and_files_are_checked_once_per_run(monkeypatch):
    from mechaudit.book import preflight

    files, settings = [], []
    monkeypatch.setattr(preflight, "_check_file", lambda folder, name, field: files.append(name) or True)
    monkeypatch.setattr(preflight, "_check_param_file", lambda stem, name, path, values: settings.append(name) or True)
    full = {s: {"data_dir": None, "design_file": "paper.yaml", "simulator_file": "simulator.yaml"}
            for s in ("03_critique_engagement", "04_equivalence_rules")}
    plans = [(book_execute.resolve_chapter(s), {}) for s in full]
    preflight.check_plans(plans, full)
    assert files == list(preflight.SOURCE_FILES) and settings == ["design_file", "simulator_file"]
    preflight.check_data("01_problem", {"data_dir": None})  # no memo given: its own
    assert files == list(preflight.SOURCE_FILES) * 2


def test_a_settings_file_parameter_naming_a_folder(tmp_path):
    from mechaudit.book.preflight import check_files
    from mechaudit.errors import MechauditError

    with pytest.raises(MechauditError) as err:
        check_files("03_critique_engagement", {"design_file": str(tmp_path)})
    assert err.value.field == "design_file" and err.value.message.startswith(f"{tmp_path} is a folder: name a file")


def test_the_parallel_engine_is_checked_when_either_setting_is_given():
    from mechaudit.book.preflight import check_parallel
    from mechaudit.errors import MechauditError

    check_parallel({})  # a chapter without a parallel engine
    check_parallel({"parallel_backend": "threading"})
    with pytest.raises(MechauditError) as err:
        check_parallel({"scheduler": "tcp://127.0.0.1:8786"})
    assert str(err.value) == "field 'scheduler': a scheduler is only used with parallel_backend 'dask', not None"
    with pytest.raises(MechauditError) as err:
        check_parallel({"parallel_backend": "fast"})
    assert err.value.field == "parallel_backend"


def test_data_folder_names_the_field_that_chose_it(tmp_path, monkeypatch):
    from mechaudit.book.preflight import data_folder

    monkeypatch.delenv(paths.DATA_ENV, raising=False)
    assert data_folder("01_problem", {"data_dir": str(tmp_path)}) == (tmp_path, "data_dir")
    assert data_folder("01_problem", {"data_dir": None}) == (paths.DATA_DIR, "data_dir")
    assert data_folder("09_your_data", {"data_dir": None}) == (paths.EXAMPLE_DIR, "data_dir")
    assert data_folder("08_tau_calibration", {}) is None
