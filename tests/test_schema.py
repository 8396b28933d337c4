"""mechaudit.schema: models, loaders and their error messages (file, line and field)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tiny_data import INSTANCES, VOCAB

from mechaudit.render import find_mentions, name_index, placeholders, render, swap_ids, templatize
from mechaudit.schema import (
    DataError,
    Hypothesis,
    Step,
    dump_hypotheses,
    hypothesis_text,
    load_hypotheses,
    load_instances,
    load_vocabulary,
    mechanism_key,
)


def record(**over) -> dict:
    rec = {"id": "h1", "instance": "A", "statement": "s.", "explanation": "e.",
           "chain": [{"id": "K1", "text": "kinase one"}, {"id": "K2", "text": "kinase two"},
                     {"id": "O1", "text": "outcome one"}]}
    rec.update(over)
    return rec


@pytest.fixture
def files(tmp_path: Path):
    (tmp_path / "vocabulary.yaml").write_text(VOCAB)
    (tmp_path / "instances.yaml").write_text(INSTANCES)
    return tmp_path


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def load(files: Path, lines: list[str]):
    path = write_jsonl(files / "h.jsonl", lines)
    vocab = load_vocabulary(files / "vocabulary.yaml")
    insts = load_instances(files / "instances.yaml", vocabulary=vocab)
    return load_hypotheses(path, vocabulary=vocab, instances=insts)


def assert_names(exc: DataError, file: str, line: int | None, field: str) -> None:
    msg = str(exc)
    assert file in msg
    if line is not None:
        assert f":{line}:" in msg, msg
    assert f"field '{field}'" in msg, msg
    assert exc.line == line and exc.field == field


def test_valid_file_loads_and_round_trips(files, tmp_path):
    hs = load(files, [json.dumps(record()), "", json.dumps(record(id="h2"))])
    assert [h.id for h in hs] == ["h1", "h2"]
    out = tmp_path / "out.jsonl"
    dump_hypotheses(hs, out)
    assert load_hypotheses(out) == hs


def test_malformed_json(files):
    with pytest.raises(DataError) as ei:
        load(files, [json.dumps(record()), '{"id": "h2", "instance": '])
    assert_names(ei.value, "h.jsonl", 2, "<json>")
    assert "malformed JSON" in str(ei.value)


def test_missing_field(files):
    rec = record(id="h2")
    del rec["statement"]
    with pytest.raises(DataError) as ei:
        load(files, [json.dumps(record()), json.dumps(rec)])
    assert_names(ei.value, "h.jsonl", 2, "statement")
    assert "missing" in str(ei.value)


def test_empty_chain(files):
    with pytest.raises(DataError) as ei:
        load(files, [json.dumps(record(chain=[]))])
    assert_names(ei.value, "h.jsonl", 1, "chain")
    assert "empty" in str(ei.value)


def test_chain_shorter_than_three(files):
    short = record(chain=[{"id": "K1", "text": "kinase one"}, {"id": "O1", "text": "outcome one"}])
    with pytest.raises(DataError) as ei:
        load(files, [json.dumps(record(id="h0")), json.dumps(short)])
    assert_names(ei.value, "h.jsonl", 2, "chain")
    assert "at least 3" in str(ei.value)


def test_unknown_step_id(files):
    rec = record(chain=[{"id": "K1", "text": "a"}, {"id": "NOPE", "text": "b"}, {"id": "O1", "text": "c"}])
    with pytest.raises(DataError) as ei:
        load(files, [json.dumps(rec)])
    assert_names(ei.value, "h.jsonl", 1, "chain[1].id")
    assert "'NOPE'" in str(ei.value)


def test_duplicate_hypothesis_id(files):
    with pytest.raises(DataError) as ei:
        load(files, [json.dumps(record()), json.dumps(record(id="x")), json.dumps(record())])
    assert_names(ei.value, "h.jsonl", 3, "id")
    assert "duplicate" in str(ei.value) and "line 1" in str(ei.value)


def test_unknown_instance_id(files):
    with pytest.raises(DataError) as ei:
        load(files, [json.dumps(record(instance="Z"))])
    assert_names(ei.value, "h.jsonl", 1, "instance")
    assert "'Z'" in str(ei.value)


def test_error_is_a_value_error(files):
    with pytest.raises(ValueError):
        load(files, ["not json"])


def test_template_must_render_to_stored_text(files):
    tmpl = {"statement": "{K1} acts.", "explanations": ["{K1} acts.", "{^K1} works."],
            "chain": ["{K1}", "{K2}", "{O1}"]}
    good = record(statement="kinase one acts.", explanation="kinase one acts.", template=tmpl)
    assert load(files, [json.dumps(good)])[0].template is not None
    bad = dict(good, statement="kinase two acts.")
    with pytest.raises(DataError) as ei:
        load(files, [json.dumps(bad)])
    assert_names(ei.value, "h.jsonl", 1, "template.statement")


def test_yaml_errors_name_entry_line_and_field(tmp_path):
    bad = VOCAB.replace("  - {id: K3, type: kinase, name: kinase three}\n",
                        "  - {id: K3, type: kinase}\n")
    path = tmp_path / "v.yaml"
    path.write_text(bad)
    with pytest.raises(DataError) as ei:
        load_vocabulary(path)
    assert_names(ei.value, "v.yaml", 7, "entities[2].name")


def test_vocabulary_rejects_duplicate_ids_shared_names_and_lonely_types(tmp_path):
    path = tmp_path / "v.yaml"
    path.write_text(VOCAB + "  - {id: K1, type: kinase, name: other}\n")
    with pytest.raises(DataError, match=r"entities\[5\]\.id.*duplicate entity id 'K1'"):
        load_vocabulary(path)
    path.write_text(VOCAB + "  - {id: K4, type: kinase, name: k4, aliases: [K-2]}\n")
    with pytest.raises(DataError, match="'K-2' is also a name of 'K2'"):
        load_vocabulary(path)
    path.write_text(VOCAB.replace("  - {id: O2, type: outcome, name: outcome two}\n", ""))
    with pytest.raises(DataError, match="'outcome' has fewer than 2 members"):
        load_vocabulary(path)


def test_instances_unknown_terminal_and_duplicate(files):
    vocab = load_vocabulary(files / "vocabulary.yaml")
    path = files / "i.yaml"
    path.write_text(INSTANCES.replace("terminal_id: O1", "terminal_id: Q"))
    with pytest.raises(DataError) as ei:
        load_instances(path, vocabulary=vocab)
    assert_names(ei.value, "i.yaml", 2, "instances[0].terminal_id")
    path.write_text(INSTANCES + INSTANCES.split("\n", 1)[1])
    with pytest.raises(DataError, match="duplicate instance id 'A'"):
        load_instances(path)


def test_mechanism_key_and_text():
    h = Hypothesis(**record(chain=[{"id": "K1", "text": "a"}, {"id": "K2", "text": "b"},
                                   {"id": "K3", "text": "c"}, {"id": "O1", "text": "d"}]))
    assert mechanism_key(h) == ("K1", ("K2", "K3"), "O1")
    assert hypothesis_text(h) == "s.\ne.\na -> b -> c -> d"


def test_render_and_find_mentions_round_trip():
    index = name_index([("IL6", ["IL-6", "interleukin-6"]), ("IL6R", ["IL-6 receptor"]),
                        ("INS", ["insulin"])])
    t = "{^INS} and the {IL6R} bind {IL6}; {INS} again."
    assert placeholders(t) == ["INS", "IL6R", "IL6", "INS"]
    for names in ({"INS": "insulin", "IL6R": "IL-6 receptor", "IL6": "IL-6"},
                  {"INS": "insulin", "IL6R": "IL-6 receptor", "IL6": "interleukin-6"}):
        text = render(t, names)
        assert text.startswith("Insulin and the IL-6 receptor bind")
        assert find_mentions(text, index) == placeholders(t)
        assert placeholders(templatize(text, index)) == placeholders(t)
    assert swap_ids(t, "INS", "IL6") == "{^IL6} and the {IL6R} bind {IL6}; {IL6} again."
    assert find_mentions("insulinoma and IL-6R", index) == []
    with pytest.raises(KeyError, match="'IL6'"):
        render("{IL6}", {})


def test_step_and_hypothesis_models_reject_extra_fields_and_short_chains():
    with pytest.raises(ValueError):
        Step(id="K1", text="x", extra=1)
    with pytest.raises(ValueError, match="at least 3"):
        Hypothesis(**record(chain=[{"id": "K1", "text": "a"}]))


def test_benchmark_cross_checks_openings_and_terminal(files):
    from mechaudit.schema import load_benchmark

    lines = [json.dumps(record()), json.dumps(record(id="h2"))]
    write_jsonl(files / "hypotheses.jsonl", lines)
    bench = load_benchmark(files)
    assert [h.id for h in bench.openings("A")] == ["h1"] and len(bench.by_instance("A")) == 2
    wrong_end = record(id="h2", chain=[{"id": "K1", "text": "kinase one"}, {"id": "K2", "text": "kinase two"},
                                       {"id": "O2", "text": "outcome two"}])
    write_jsonl(files / "hypotheses.jsonl", ["", json.dumps(record()), json.dumps(wrong_end)])
    with pytest.raises(DataError) as ei:
        load_benchmark(files)
    assert_names(ei.value, "hypotheses.jsonl", 3, "chain[-1].id")
    write_jsonl(files / "hypotheses.jsonl", [json.dumps(record(id="h9"))])
    with pytest.raises(DataError, match=r"instances\[0\]\.openings\[0\].*'h1'"):
        load_benchmark(files)


def test_benchmark_rejects_an_opening_that_belongs_to_another_instance(files):
    """Instance A lists as its opening a hypothesis that exists but belongs to instance B."""
    from mechaudit.schema import load_benchmark

    two = INSTANCES + INSTANCES.split("\n", 1)[1].replace("id: A", "id: B").replace("O1", "O2").replace(
        "[h1]", "[hb]")
    (files / "instances.yaml").write_text(two)
    hb = record(id="hb", instance="B", chain=[{"id": "K1", "text": "kinase one"}, {"id": "K2", "text": "kinase two"},
                                               {"id": "O2", "text": "outcome two"}])
    write_jsonl(files / "hypotheses.jsonl", [json.dumps(record()), json.dumps(hb)])
    assert [h.id for h in load_benchmark(files).openings("B")] == ["hb"]  # the valid layout loads
    (files / "instances.yaml").write_text(two.replace("[h1]", "[hb]", 1))
    with pytest.raises(DataError, match=r"instances\[0\]\.openings\[0\].*'hb' is not a hypothesis of instance 'A'"):
        load_benchmark(files)


def test_a_jsonl_line_that_is_not_an_object_names_file_line_and_what_was_expected(tmp_path):
    from mechaudit.schema import read_jsonl

    path = write_jsonl(tmp_path / "h.jsonl", ['{"a": 1}', "", "[1, 2]"])
    with pytest.raises(DataError, match=r"h\.jsonl:3: field '<record>': expected a JSON object$"):
        list(read_jsonl(path))
    path.write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(DataError, match=r"h\.jsonl:2: field '<json>': malformed JSON: Expecting value \(column \d+\)"):
        list(read_jsonl(path))


def test_templatize_marks_a_capitalised_mention_and_names_starting_with_a_digit():
    from mechaudit import render as render_module

    render_module._scanner.cache_clear()  # build the patterns here, not from an earlier call's cache
    index = name_index([("IL6", ["interleukin 6"]), ("P53", ["5-hydroxy p53"])])
    assert templatize("Interleukin 6 and interleukin 6 rise", index) == "{^IL6} and {IL6} rise"
    assert find_mentions("a 5-hydroxy p53 step", index) == ["P53"]


# --------------------------------------------------------------------------- guards found by mutation testing


def test_template_errors_name_the_field_and_the_entity(files):
    def tmpl(**over):
        base = {"statement": "{K1} acts.", "explanations": ["{K1} acts.", "{K1} works."],
                "chain": ["{K1}", "{K2}", "{O1}"]}
        return {**base, **over}

    good = dict(record(statement="kinase one acts.", explanation="kinase one acts."))
    cases = [
        (dict(good, template=tmpl(explanations=["{K1} acts.", "{ZZ} works."])), "template.explanations[1]",
         "unknown vocabulary id 'ZZ' in template"),
        (dict(good, chain=[{"id": "K1", "text": "kinase one"}, {"id": "K2", "text": "kinase one again"},
                           {"id": "O1", "text": "outcome one"}], template=tmpl(chain=["{K1}", "{K1} again", "{O1}"])),
         "template.chain[1]", "step template does not mark its own entity 'K2'"),
        # a name written next to a placeholder is still a mention
        (dict(good, statement="kinase one and kinase twooutcome one.",
              template=tmpl(statement="{K1} and kinase two{O1}.")), "template.statement",
         "unmarked mention of entity 'K2' (one of 'kinase two', 'K-2'): write it as {K2}"),
    ]
    for rec, field, message in cases:
        with pytest.raises(DataError) as ei:
            load(files, [json.dumps(record(id="h0")), json.dumps(rec)])
        assert str(ei.value) == f"{files / 'h.jsonl'}:2: field '{field}': {message}"


def test_a_step_text_without_its_entity_names_file_line_and_field(files):
    rec = record(chain=[{"id": "K1", "text": "kinase one"}, {"id": "K2", "text": "a kinase"},
                        {"id": "O1", "text": "outcome one"}])
    with pytest.raises(DataError) as ei:
        load(files, [json.dumps(record(id="h0")), json.dumps(rec)])
    assert str(ei.value) == (f"{files / 'h.jsonl'}:2: field 'chain[1].text': does not name its entity 'K2' "
                             "(one of 'kinase two', 'K-2')")


def test_bytes_that_are_not_utf8_name_the_line_and_the_byte(tmp_path):
    from mechaudit.schema import read_jsonl, read_yaml

    path = tmp_path / "v.yaml"
    path.write_bytes(b"\nkey: 1\nname: caf\xe9\n")
    with pytest.raises(DataError) as ei:
        read_yaml(path)
    assert str(ei.value) == (f"{path}:3: field '<text>': not UTF-8 text (byte 10 of the line: "
                             "invalid continuation byte)")
    path.write_bytes("\ufeffkey: [1]\n".encode())  # a byte-order mark is dropped
    assert read_yaml(path) == {"key": [1], "__line__": 1}
    path = tmp_path / "h.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"a": "caf\xe9"}\n')
    with pytest.raises(DataError) as ei:
        list(read_jsonl(path))
    assert str(ei.value) == (f"{path}:3: field '<text>': not UTF-8 text (byte 11 of the line: "
                             "invalid continuation byte)")


def test_malformed_and_repeated_yaml_names_the_line(tmp_path):
    from mechaudit.schema import read_yaml

    path = tmp_path / "v.yaml"
    path.write_text("a: 1\nb: [1\nc: 2\n")
    with pytest.raises(DataError) as ei:
        read_yaml(path)
    assert (ei.value.line, ei.value.field) == (3, "<yaml>")
    assert str(ei.value).startswith(f"{path}:3: field '<yaml>': malformed YAML: while parsing a flow sequence")
    path.write_text("entities:\n  - id: K1\n    name: x\n    id: K2\n")
    with pytest.raises(DataError) as ei:
        read_yaml(path)
    assert (ei.value.line, ei.value.field) == (4, "<yaml>")
    assert str(ei.value).startswith(f"{path}:4: field '<yaml>': malformed YAML: duplicate key 'id' "
                                    "(first on line 2)")


def test_repeated_key_finds_a_repeat_in_a_nested_mapping():
    import yaml

    from mechaudit.schema import repeated_key

    node = yaml.compose("a: 1\nb:\n  - x: 1\n  - y: 1\n    z: 2\n    y: 3\n")
    key, first, again = repeated_key(node)
    assert (key, first, again.start_mark.line + 1) == ("y", 4, 6)
    assert repeated_key(yaml.compose("a: 1\nb: [{x: 1}, {x: 2}]\n")) is None


def test_yaml_files_of_the_wrong_shape_name_file_line_and_field(tmp_path):
    path = tmp_path / "d.yaml"
    for text in ("- 1\n- 2\n", "instances: 3\n"):
        path.write_text(text)
        with pytest.raises(DataError) as ei:
            load_instances(path)
        assert str(ei.value) == f"{path}:1: field 'instances': expected a mapping with an 'instances' list"
    for text in ("- 1\n", "entities: {a: 1}\n"):
        path.write_text(text)
        with pytest.raises(DataError) as ei:
            load_vocabulary(path)
        assert str(ei.value) == f"{path}:1: field 'entities': expected a mapping with an 'entities' list"
    path.write_text("instances:\n  - 5\n  - {id: B}\n")
    with pytest.raises(DataError) as ei:
        load_instances(path)
    assert str(ei.value).startswith(f"{path}: field 'instances[0].<record>': ")
    path.write_text("instances:\n  - {id: B, title: t, finding: f, terminal_id: O1, evidence: [e], openings: [h]}\n"
                    "  - {id: C}\n")
    with pytest.raises(DataError) as ei:
        load_instances(path)
    assert str(ei.value) == f"{path}:3: field 'instances[1].title': missing required field"
    path.write_text(INSTANCES + INSTANCES.split("\n", 1)[1])
    with pytest.raises(DataError) as ei:
        load_instances(path)
    assert str(ei.value) == f"{path}:8: field 'instances[1].id': duplicate instance id 'A' (first on line 2)"


def test_vocabulary_keeps_type_descriptions_and_names_entry_lines(tmp_path):
    path = tmp_path / "v.yaml"
    path.write_text(VOCAB)
    assert load_vocabulary(path).types == {"kinase": "protein kinase", "outcome": "finding"}
    path.write_text(VOCAB + "  - {id: E1, type: enzyme, name: enzyme one}\n")
    with pytest.raises(DataError) as ei:
        load_vocabulary(path)
    assert str(ei.value) == f"{path}:10: field 'entities[5].type': undeclared type 'enzyme'"
    path.write_text(VOCAB + "  - {id: K4, type: kinase, name: k4, aliases: [K-2]}\n")
    with pytest.raises(DataError) as ei:
        load_vocabulary(path)
    assert str(ei.value) == f"{path}:10: field 'entities[5].aliases': name 'K-2' is also a name of 'K2'"


def test_the_benchmark_loads_as_utf8_whatever_the_locale_encoding(files):
    import locale

    from mechaudit.schema import load_benchmark

    write_jsonl(files / "hypotheses.jsonl", [json.dumps(record(explanation="e \u2014 caf\u00e9."), ensure_ascii=False)])
    before = locale.setlocale(locale.LC_CTYPE)
    try:
        locale.setlocale(locale.LC_CTYPE, "C")  # open() without an encoding would read ASCII here
        assert [h.explanation for h in load_benchmark(files).hypotheses] == ["e \u2014 caf\u00e9."]
    finally:
        locale.setlocale(locale.LC_CTYPE, before)
