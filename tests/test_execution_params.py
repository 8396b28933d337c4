"""Parameter checks of ``mechaudit execute`` (types, ranges, files, overrides): fast, no notebook runs.

Each case names the value a user could pass and the one-line error it must get; the mutation run
(``make mutation``) maps ``mechaudit.book.params``'s parameter checks to this file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mechaudit.book.params import (
    Chapter,
    ParameterError,
    absolutize_paths,
    check_param_file,
    check_value,
    load_param_set,
    parse_override,
    read_param_file,
)


@pytest.mark.parametrize("name, value, default", [
    ("n_runs", True, 5),            # a boolean is not an integer
    ("n_runs", 5, True),            # an integer is not a boolean
    ("n_runs", 2.5, 5),             # a float is not an integer
    ("rate", "0.5", 0.5),           # a string is not a number
    ("rate", False, 0.5),           # a boolean is not a number
    ("sizes", 3, [1, 2]),           # a scalar is not a list
    ("sizes", [1, "b"], [1, 2]),    # list items like the default's
    ("sizes", [1.5], [1, 2]),
    ("weights", ["x"], [1, 0.5]),   # a mixed int/float default: items must be numbers
    ("name", 3, "x"),
    ("opts", [1], {"a": 1}),
])
def test_a_value_of_the_wrong_type_is_rejected(name, value, default):
    with pytest.raises(ParameterError, match=rf"field '{name}': (item \d+: )?must be "):
        check_value(name, value, default)


@pytest.mark.parametrize("name, value, default", [
    ("n_runs", 7, 5), ("rate", 1, 0.5), ("rate", 0.25, 0.5), ("flag", False, True),
    ("sizes", [3, 4, 5], [1, 2]), ("weights", [2, 0.1], [1, 0.5]), ("anything", [1, "a"], [1, "b", 2.0]),
    ("free", {"a": 1}, None), ("name", "y", "x"), ("opts", {"b": 2}, {"a": 1}), ("sizes", [], [1, 2]),
    ("one", [4, 5], [1]),  # a one-item default: items like its only item
])
def test_a_value_of_the_right_type_is_accepted(name, value, default):
    check_value(name, value, default)


def test_the_error_names_the_expected_type_and_the_default():
    with pytest.raises(ParameterError) as err:
        check_value("n_runs", True, 5, file="p.yaml", line=4)
    assert str(err.value) == "p.yaml:4: field 'n_runs': must be an integer like the default 5, got True"
    with pytest.raises(ParameterError) as err:
        check_value("sizes", ["a"], [1, 2])
    assert str(err.value) == "field 'sizes': item 0: must be an integer, got 'a'"
    with pytest.raises(ParameterError, match="must be a number like the default 0.5, got 'x'"):
        check_value("rate", "x", 0.5)
    with pytest.raises(ParameterError, match="must be a string like"):
        check_value("name", 1, "x")
    with pytest.raises(ParameterError, match="must be a boolean .true/false. like"):
        check_value("flag", 1, True)
    with pytest.raises(ParameterError, match="must be a mapping like"):
        check_value("opts", 1, {"a": 1})
    with pytest.raises(ParameterError, match=r"must be a list like the default \[1, 'b'\]"):
        check_value("mixed", 1, [1, "b"])


@pytest.mark.parametrize("name, value, default, ok", [
    ("seed", 0, 0, True), ("seed", -1, 0, False), ("seed", 10**9, 0, True),
    ("alpha", 0.0, 0.05, False), ("alpha", 1.0, 0.05, True), ("alpha", 1.01, 0.05, False),
    ("alpha", -0.01, 0.05, False), ("alpha", float("nan"), 0.05, False),
    ("tie_rate", 1.5, 0.1, False), ("power_level", 0.8, 0.8, True), ("max_usd", -0.5, 1.0, False),
    ("max_usd", 0, 1.0, True), ("max_usd", 0.01, 1.0, True),  # 0: cached answers only
    ("json_retries", -1, 2, False), ("json_retries", 0, 2, True),
    ("tfidf_threshold", 1.2, 0.25, False), ("tfidf_threshold", 1.0, 0.25, True),
    ("tfidf_threshold", 0.0, 0.25, True), ("tfidf_threshold", -0.1, 0.25, False),
    ("other", -5.0, 1.0, True),  # no range for an unlisted name
    ("max_usd", None, None, True),  # None stays allowed where the default is None
])
def test_ranges_of_the_chapters_models(name, value, default, ok):
    stem = {"tie_rate": "08_tau_calibration", "power_level": "02c_robustness", "other": None,
            "alpha": "02b_validity"}.get(name, "02_critique_depth")
    if ok:
        check_value(name, value, default, stem=stem)
    else:
        with pytest.raises(ParameterError, match=f"field '{name}': must be"):
            check_value(name, value, default, stem=stem)


def test_an_integer_default_asks_for_an_integer_in_range():
    with pytest.raises(ParameterError, match=r"field 'seed': must be an integer in \[0, inf\], got -1"):
        check_value("seed", -1, 0, stem="01_problem")
    with pytest.raises(ParameterError, match=r"field 'alpha': must be a number > 0 and <= 1, got 2$"):
        check_value("alpha", 2, 0.05, stem="02b_validity")


def test_a_nullable_parameter_has_a_fixed_type_when_given():
    check_value("compare_paper", None, None, stem="01_problem")
    check_value("compare_paper", False, None, stem="01_problem")
    with pytest.raises(ParameterError, match="field 'compare_paper': must be a boolean"):
        check_value("compare_paper", "yes", None, stem="01_problem")
    check_value("other_nullable", "yes", None)  # a notebook outside the book: any type where the default is None


def test_parse_override_reads_yaml_scalars_and_names_a_malformed_value():
    assert parse_override("7") == 7 and parse_override("0.3") == 0.3 and parse_override("[1, 2]") == [1, 2]
    assert parse_override("true") is True and parse_override("anthropic") == "anthropic"
    with pytest.raises(ParameterError) as err:
        parse_override("[1, 2", name="sizes")
    assert str(err.value).startswith("-p: field 'sizes': malformed value '[1, 2' (YAML syntax)")


def test_read_param_file_lines_and_malformed_files(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("common:\n  seed: 1\nnb:\n  alpha: 0.5\n  beta: 2\n")
    tree, lines = read_param_file(f)
    assert tree == {"common": {"seed": 1}, "nb": {"alpha": 0.5, "beta": 2}}
    assert lines == {"common": 1, ("common", "seed"): 2, "nb": 3, ("nb", "alpha"): 4, ("nb", "beta"): 5}
    f.write_text("")
    assert read_param_file(f) == ({}, {})
    f.write_text("- 1\n- 2\n")
    with pytest.raises(ParameterError, match=r"p.yaml:1: expected a mapping of sections"):
        read_param_file(f)
    f.write_text("common:\n  seed: 1\nnb: 3\n")
    with pytest.raises(ParameterError, match=r"p.yaml:3: field 'nb': a section must map parameter names"):
        read_param_file(f)
    f.write_text("common:\n  seed: [1\nnb: {}\n")
    with pytest.raises(ParameterError) as err:
        read_param_file(f)
    assert str(err.value).endswith("p.yaml:3: malformed YAML: while parsing a flow sequence expected ',' or ']', "
                                   "but got ':'")
    f.write_bytes(b"common:\n  name: caf\xe9\n")
    with pytest.raises(ParameterError, match=r"p.yaml:2: not UTF-8 text"):
        read_param_file(f)


def test_load_param_set_checks_types_and_merges_common(tmp_path):
    f = tmp_path / "p.yaml"
    defined = {"seed": 0, "alpha": 0.05, "n_runs": 5}
    f.write_text("common:\n  seed: 3\n  unused: 1\nnb:\n  n_runs: 4\n")
    assert load_param_set(f, "nb", defined) == {"seed": 3, "n_runs": 4}
    f.write_text("common:\n  seed: 3\nnb:\n  seed: 4\n")
    assert load_param_set(f, "nb", defined) == {"seed": 4}  # the chapter's section wins
    f.write_text("common:\n  seed: 3\nnb:\n  n_runs: true\n")
    with pytest.raises(ParameterError, match=r"p.yaml:4: field 'n_runs': must be an integer"):
        load_param_set(f, "nb", defined)
    f.write_text("common:\n  alpha: 2.0\n")
    with pytest.raises(ParameterError, match=r"p.yaml:2: field 'alpha': must be a number > 0 and <= 1"):
        load_param_set(f, "02b_validity", defined)
    f.write_text("nb:\n  sed: 1\n")
    with pytest.raises(ParameterError, match=r"p.yaml:2: field 'sed': unknown parameter: nb does not define it; "
                                             r"did you mean 'seed'\?"):
        load_param_set(f, "nb", defined)


def _chapter(tmp_path: Path, stem: str, cell: str):
    from mechaudit.book.params import Chapter

    source = tmp_path / f"{stem}.py"
    header = "# ---\n# jupyter:\n#   kernelspec:\n#     display_name: Python 3\n#     language: python\n" \
             "#     name: python3\n# ---\n"
    source.write_text(header + '# %% tags=["parameters"]\n' + cell)
    return Chapter(source)


def test_check_param_file_names_section_parameter_and_value(tmp_path):
    chapters = [_chapter(tmp_path, "01_a", "seed = 0\nbackend = 'reference'\n"),
                _chapter(tmp_path, "02_b", "seed = 0\nn_runs = 5\n")]
    f = tmp_path / "p.yaml"
    f.write_text("common:\n  seed: 2\n02_b:\n  n_runs: 3\ndesign:\n  anything: [1]\n")
    check_param_file(f, chapters)
    cases = [
        ("03_c:\n  seed: 1\n", r"p.yaml:1: field '03_c': unknown section"),
        ("comon:\n  seed: 1\n", r"did you mean 'common'\?"),
        ("common:\n  n_run: 1\n", r"p.yaml:2: field 'n_run': unknown parameter under 'common'.*'n_runs'"),
        ("01_a:\n  n_runs: 1\n", r"p.yaml:2: field 'n_runs': unknown parameter: 01_a does not define it"),
        ("common:\n  seed: -1\n", r"p.yaml:2: field 'seed': must be an integer in"),
        ("02_b:\n  n_runs: true\n", r"p.yaml:2: field 'n_runs': must be an integer like"),
        ("common:\n  backend: gpt\n", r"p.yaml:2: field 'backend': must be one of 'reference', 'anthropic', "
                                        r"'replay', got 'gpt'"),
    ]
    for text, message in cases:
        f.write_text(text)
        with pytest.raises(ParameterError, match=message):
            check_param_file(f, chapters)


def test_absolutize_paths_resolves_folders_and_existing_files_only(tmp_path):
    (tmp_path / "mine.yaml").write_text("x: 1\n")
    out = absolutize_paths({"data_dir": "d", "cache_dir": "/abs/c", "out_dir": "", "design_file": "mine.yaml",
                            "prices_file": "missing.yaml", "seed": 1, "data_file": 3}, tmp_path)
    assert out["data_dir"] == str((tmp_path / "d").resolve()) and out["cache_dir"] == "/abs/c"
    assert out["out_dir"] == "" and out["design_file"] == str((tmp_path / "mine.yaml").resolve())
    assert out["prices_file"] == "missing.yaml" and out["seed"] == 1 and out["data_file"] == 3
    # a name that is a file under params/ stays relative (the chapter reads it from there)
    assert absolutize_paths({"design_file": "paper.yaml"}, tmp_path) == {"design_file": "paper.yaml"}


def test_error_clause_words_list_lengths_and_other_errors():
    from mechaudit.book.params import error_clause

    def clause(kind, got, **ctx):
        return error_clause({"type": kind, "loc": ("x",), "input": got, "ctx": ctx, "msg": "Value error, Bad x"},
                            None, {})

    assert clause("too_short", [1], min_length=2) == "must be a list of at least 2 items, got [1]"
    assert clause("too_short", [], min_length=1) == "must be a list of at least 1 item, got []"
    assert clause("too_long", [1, 2, 3], max_length=2, field_type="List") == (
        "must be a list of at most 2 items, got [1, 2, 3]")
    assert clause("too_long", (1, 2, 3), max_length=2, field_type="Tuple") == (
        "must be a list of exactly 2 items, got [1, 2, 3]")
    assert clause("value_error", 5) == "value error, Bad x, got 5"


# --------------------------------------------------------------------------- guards found by mutation testing


def test_toc_files_walks_parts_chapters_and_sections_in_reading_order(tmp_path):
    from mechaudit.book.params import toc_chapters, toc_files

    toc = tmp_path / "_toc.yml"
    toc.write_text("format: jb-book\nroot: book/intro\nparts:\n  - caption: One\n    chapters:\n"
                   "      - file: notebooks/01_a\n        sections:\n          - file: notebooks/01b_x\n"
                   "          - file: book/app\n      - file: notebooks/02_b\n")
    assert toc_files(toc) == ["book/intro", "notebooks/01_a", "notebooks/01b_x", "book/app", "notebooks/02_b"]
    (tmp_path / "notebooks").mkdir()
    for stem in ("01_a", "02_b"):  # 01b_x has no source: not a chapter
        (tmp_path / "notebooks" / f"{stem}.py").write_text("")
    assert toc_chapters(toc) == [Chapter(tmp_path / "notebooks" / f"{stem}.py") for stem in ("01_a", "02_b")]
    toc.write_text("format: jb-book\nchapters:\n  - file: notebooks/02_b\n")  # no root
    assert toc_files(toc) == ["notebooks/02_b"]


def test_resolve_chapter_by_path_stem_or_prefix_and_the_error_lists_the_chapters(tmp_path):
    from mechaudit.book.params import resolve_chapter

    a, b = Chapter(tmp_path / "01_problem.py"), Chapter(tmp_path / "02b_validity.py")
    assert resolve_chapter("02b_validity", [a, b]) == b and resolve_chapter("01", [a, b]) == a
    a.source.write_text("")
    assert resolve_chapter(str(tmp_path / "01_problem.ipynb"), [b]).source == a.source.resolve()
    with pytest.raises(ParameterError) as err:
        resolve_chapter("02b_valdity", [a, b])
    assert str(err.value) == "field 'notebooks': no chapter '02b_valdity'; did you mean '02b_validity'?"
    with pytest.raises(ParameterError) as err:
        resolve_chapter("zzz", [a, b])
    assert str(err.value) == "field 'notebooks': no chapter 'zzz'; the chapters are 01_problem, 02b_validity"
    assert err.value.field == "notebooks"


def test_resolve_params_file_finds_files_and_shipped_sets_by_name(tmp_path, monkeypatch):
    from mechaudit.book.params import resolve_params_file
    from mechaudit.paths import PARAMS_DIR

    assert resolve_params_file(None) is None
    mine = tmp_path / "mine.yaml"
    mine.write_text("common: {}\n")
    assert resolve_params_file(mine) == mine
    monkeypatch.chdir(tmp_path)
    for name in ("paper", "paper.yaml", "params/paper", "params/paper.yaml"):
        assert resolve_params_file(name) == PARAMS_DIR / "paper.yaml", name
    shipped = sorted(p.stem for p in PARAMS_DIR.glob("*.yaml") if p.name != "prices.yaml")
    assert "paper" in shipped and "prices" not in shipped
    with pytest.raises(ParameterError) as err:
        resolve_params_file("papr")
    assert str(err.value) == (f"field '--params': papr does not exist: give a parameter-set file or the name of a "
                              f"shipped set ({', '.join(shipped)}); did you mean 'paper'?")
    with pytest.raises(ParameterError, match=r"^field '--params': other/paper does not exist"):
        resolve_params_file("other/paper")  # a path elsewhere is not a shipped name
    (tmp_path / "sets").mkdir()
    with pytest.raises(ParameterError, match=r"^field '--params': sets is a folder: give a parameter-set file"):
        resolve_params_file("sets")


def test_resolve_parameters_injects_checked_values_that_differ_from_the_defaults(tmp_path):
    from mechaudit.book.params import full_parameters, resolve_parameters
    from mechaudit.paths import REPO_ROOT

    chapter = Chapter(REPO_ROOT / "notebooks" / "01_problem.py")
    f = tmp_path / "p.yaml"
    f.write_text("common:\n  seed: 3\n01_problem:\n  data_dir: d\n  n_runs: 5\n")
    got = resolve_parameters(chapter, f, {"n_openings": 4, "out_dir": "o", "backend": "reference"}, cwd=tmp_path / "c")
    assert got == {"seed": 3, "data_dir": str((tmp_path / "d").resolve()), "n_openings": 4,
                   "out_dir": str((tmp_path / "c" / "o").resolve())}  # n_runs 5 and backend are the defaults
    assert resolve_parameters(chapter, None, {"seed": 2}) == {"seed": 2}
    with pytest.raises(ParameterError) as err:
        resolve_parameters(chapter, None, {"sed": 1, "zz": 2})
    assert str(err.value).startswith("-p: field 'sed': unknown parameter: 01_problem does not define it; "
                                     "did you mean 'seed'? (it defines: backend, seed, ")
    with pytest.raises(ParameterError) as err:
        resolve_parameters(chapter, None, {"n_runs": "x"})
    assert str(err.value) == "-p: field 'n_runs': must be an integer like the default 5, got 'x'"
    plans = [(chapter, {"seed": 9})]
    assert full_parameters(plans) == {"01_problem": {**notebook_defaults("01_problem"), "seed": 9}}


def notebook_defaults(stem: str) -> dict:
    from mechaudit.book.settings import defaults

    return defaults(stem)


def test_a_choice_error_suggests_the_closest_choice():
    with pytest.raises(ParameterError) as err:
        check_value("backend", "anthropik", "reference")
    assert str(err.value) == ("field 'backend': must be one of 'reference', 'anthropic', 'replay', got 'anthropik'; "
                              "did you mean 'anthropic'?")


def test_a_value_with_a_control_character_is_malformed_yaml_without_a_mark():
    with pytest.raises(ParameterError) as err:
        parse_override("a\x01b", name="label")
    assert str(err.value).startswith("-p: field 'label': malformed value 'a\\x01b' (YAML syntax): "
                                     "unacceptable character #x0001")
    assert parse_override("  ") == "  " and parse_override("null") is None


def test_a_param_file_is_parsed_by_libyaml_when_pyyaml_has_it(tmp_path, monkeypatch):
    import yaml

    used = []

    class Spy(yaml.SafeLoader):
        def __init__(self, stream):
            used.append(stream)
            super().__init__(stream)

    monkeypatch.setattr(yaml, "CSafeLoader", Spy, raising=False)
    f = tmp_path / "spy.yaml"
    f.write_text("common:\n  seed: 4\n")
    assert read_param_file(f) == ({"common": {"seed": 4}}, {"common": 1, ("common", "seed"): 2})
    assert used == ["common:\n  seed: 4\n"]
