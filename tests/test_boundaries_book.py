"""The book's reporting at its edges: small negative numbers in tables, the shipped benchmark
recognised on a CRLF checkout, the provenance class of every row, and chapter 05's suite and
"either threshold" statements.
"""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
import yaml

from mechaudit import paper, paths
from mechaudit.book import ch05_perturbations as ch05
from mechaudit.paths import PARAMS_DIR, REPO_ROOT
from mechaudit.perturb import load_suite, suite_path
from mechaudit.report import provenance
from mechaudit.report.tables import format_column, format_number


def texts(cells):
    return [c.text for c in cells]


# ---------------------------------------------------------------- small negative numbers never read "0"


@pytest.mark.parametrize(("value", "decimals", "expected"), [
    (-0.004, 2, "-0.004"),   # would read -0.00: two significant digits instead
    (0.004, 2, "0.004"),
    (-0.005, 2, "-0.01"),    # rounds to a nonzero number: written as usual
    (-0.0004, 1, "-0.0004"),
    (-1.5e-9, 3, "-1.5e-09"),
    (0.0, 2, "0.00"),
    (-0.0, 2, "0.00"),  # never a signed zero
])
def test_a_nonzero_value_that_would_round_to_zero_keeps_two_significant_digits(value, decimals, expected):
    assert format_number(value, decimals) == expected


@pytest.mark.parametrize(("values", "header", "expected"), [
    ([-0.3, 12.0], "Changed (%)", ["-0.3", "12.0"]),  # a small negative share keeps its decimal
    ([0.3, 12.0], "Changed (%)", ["0.3", "12.0"]),
    ([-0.004], "Mean", ["-0.004"]),
    ([-0.004, -0.2], "Mean", ["-0.004", "-0.200"]),  # the smallest nonzero value keeps a digit, negative too
    ([-1e-7, -3e-6], "Cosine", ["-1e-07", "-3e-06"]),  # the whole column would read 0
    ([-1e-7, 3e-6], "Cosine", ["-1e-07", "3e-06"]),
    ([-0.022, 34.5], "Mean (pp)", ["0.0", "34.5"]),  # beside 34.5 the column keeps one decimal, unsigned
])
def test_columns_with_small_negative_values(values, header, expected):
    assert texts(format_column(values, header)) == expected


# ---------------------------------------------------------------- the shipped benchmark on a CRLF checkout


def _copy_benchmark(dest, crlf: bool):
    dest.mkdir()
    for name in paths.BENCHMARK_FILES:
        raw = (REPO_ROOT / "data" / name).read_bytes()
        (dest / name).write_bytes(raw.replace(b"\n", b"\r\n") if crlf else raw)
    return dest


def test_a_crlf_checkout_of_the_shipped_benchmark_is_the_shipped_benchmark(tmp_path):
    crlf = _copy_benchmark(tmp_path / "crlf", crlf=True)
    assert b"\r\n" in (crlf / "hypotheses.jsonl").read_bytes()
    for name in paths.BENCHMARK_FILES:
        assert paths.file_sha256(crlf / name) == paths.file_sha256(REPO_ROOT / "data" / name)
    assert paths.is_shipped_benchmark(crlf)
    assert paths.is_shipped_benchmark(_copy_benchmark(tmp_path / "lf", crlf=False))


def test_a_crlf_checkout_with_its_own_crlf_manifest_is_the_shipped_benchmark(tmp_path, monkeypatch):
    # a CRLF checkout converts data/benchmark.sha256 too: its lines end in "\r\n" there
    root = tmp_path / "checkout"
    root.mkdir()
    crlf = _copy_benchmark(root / "data", crlf=True)
    manifest = (REPO_ROOT / "data" / paths.SHIPPED_MANIFEST).read_bytes()
    (crlf / paths.SHIPPED_MANIFEST).write_bytes(manifest.replace(b"\n", b"\r\n"))
    monkeypatch.setattr(paths, "REPO_ROOT", root)
    assert paths.is_shipped_benchmark(crlf)


def test_one_changed_word_or_a_missing_file_is_other_data(tmp_path):
    changed = _copy_benchmark(tmp_path / "changed", crlf=True)
    text = (changed / "hypotheses.jsonl").read_text(encoding="utf-8")
    (changed / "hypotheses.jsonl").write_text(text.replace("the", "a", 1), encoding="utf-8", newline="")
    assert not paths.is_shipped_benchmark(changed)
    missing = _copy_benchmark(tmp_path / "missing", crlf=False)
    (missing / "perturbations_reworded.jsonl").unlink()
    assert not paths.is_shipped_benchmark(missing)


def test_a_lone_carriage_return_is_content_not_a_line_ending(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_bytes(b"x\ny\n")
    b.write_bytes(b"x\ry\n")
    assert paths.file_sha256(a) != paths.file_sha256(b)


# ---------------------------------------------------------------- provenance: one class per row

B, F, I, N = provenance.BY_CONSTRUCTION, provenance.FITTED, provenance.INDEPENDENT, provenance.NOT_RUN  # noqa: E741
C = provenance.CONSTRAINED
#: the paper numbers the simulator was set to match (a calibration file of this test, not the shipped one)
FITTED_KEYS = ["critique_depth.extra_divergence_pp.k0_vs_k1", "critique_depth.extra_divergence_pp.k0_vs_k5",
               "design.matched_pairs", "engagement.answered_pct", "engagement.conceded_pct",
               "engagement.dropped_pct", "engagement.partial_pct"]

#: key -> (offline, LLM) on the template suite, and (offline, LLM) on the reworded suite
ROWS = {
    **{f"design.{k}": (B, B, B, B) for k in ("instances", "runs_per_depth", "depths", "opening_hypotheses_per_instance",
                                             "runs", "run_pairs", "partitions_per_instance")},
    "design.matched_pairs": (F, I, F, I),
    "critique_depth.extra_divergence_pp.k0_vs_k1": (F, I, F, I),
    "critique_depth.extra_divergence_pp.k0_vs_k5": (F, I, F, I),
    "critique_depth.extra_divergence_pp.k1_vs_k5": (C, I, C, I),  # offline the fit decides it
    **{f"critique_depth.judge_range_pp.{c}_{e}": (N, I, N, I)
       for c in ("k0_vs_k1", "k0_vs_k5", "k1_vs_k5") for e in ("low", "high")},
    "critique_depth.p_value_bound.k0_vs_k1": (C, I, C, I),
    "critique_depth.p_value_bound.k0_vs_k5": (C, I, C, I),
    "engagement.demands": (I, I, I, I),
    **{f"engagement.{k}_pct": (F, I, F, I) for k in ("conceded", "answered", "partial", "dropped")},
    **{f"perturbations.{k}_pct_different.llm": (N, I, N, I)
       for k in ("first_step_swapped", "middle_step_swapped", "meaning_preserving")},
    **{f"perturbations.{k}_pct_different.{r}": (B, B, I, I)
       for k in ("first_step_swapped", "middle_step_swapped") for r in ("embedding", "tfidf")},
    **{f"perturbations.meaning_preserving_pct_different.{r}": (I, I, I, I) for r in ("embedding", "tfidf")},
    **{f"rubric.first_step_swapped_pct_different.{r}": (N, I, N, I) for r in ("step", "full", "none")},
    **{f"rubric.{k}": (N, I, N, I) for k in ("order_reversal_changed_pct", "order_reversal_changed_per_prompt",
                                             "order_reversal_shared_full_step", "order_reversal_shared_with_none",
                                             "repetition_changed")},
    **{f"sensitivity.{k}": (I, I, I, I) for k in ("raw_agreement_pct_low", "raw_agreement_pct_high", "kappa_low",
                                                  "kappa_high")},
    **{f"sensitivity.{k}": (B, B, B, B) for k in ("tfidf_threshold", "embedding_threshold", "judge_orders")},
    "sensitivity.stability_pairs": (B, B, B, B),  # a setting; offline the rules judge those pairs
    **{f"sensitivity.{k}": (N, I, N, I) for k in ("repeat_changed", "reversal_changed", "reversal_changed_pct",
                                                  "judge_models_agreement_pct_low", "judge_models_agreement_pct_high",
                                                  "judge_models_kappa_low", "judge_models_kappa_high")},
    **{f"models.{k}": (B, B, B, B) for k in ("generator", "judge", "judge_temperature", "embedding",
                                             "perturbation_temperature")},
    "book.diversity.clusters": (I, I, I, I),
    "book.validity": (I, I, I, I),
    "book.power": (I, I, I, I),
    "book.perturbations.reference_judge": (B, B, B, B),
    "book.rubric.reference_judges": (B, B, B, B),
    "book.tau.recovery": (B, B, B, B),
}


@pytest.fixture(scope="module")
def calibration(tmp_path_factory):
    doc = yaml.safe_load((PARAMS_DIR / "calibration.yaml").read_text(encoding="utf-8"))
    doc["calibration"]["fitted"] = {f"param_{i}": [k] for i, k in enumerate(FITTED_KEYS)}
    path = tmp_path_factory.mktemp("calibration") / "calibration.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def test_every_row_has_a_declared_class():
    assert set(ROWS) == set(paper.entries()) | set(provenance.BOOK_RESULTS)


@pytest.mark.parametrize("key", sorted(ROWS))
def test_provenance_class_of_each_row(key, calibration):
    got = (provenance.of(key, False, calibration), provenance.of(key, True, calibration),
           provenance.of(key, False, calibration, suite="reworded"),
           provenance.of(key, True, calibration, suite="reworded"))
    assert got == ROWS[key]


# ---------------------------------------------------------------- chapter 05: every suite keeps its own column


def test_regenerating_the_template_suite_leaves_the_reworded_suite_as_written():
    reworded = ch05.setup(regenerate_suite=True, suite="reworded")
    written = load_suite(suite_path(None, "reworded"))
    assert [(p["original"].id, p["variant"].explanation if p["variant"] else None) for p in reworded.suite] == \
        [(p["original"].id, p["variant"].explanation if p["variant"] else None) for p in written]
    template = ch05.setup(suite="template")
    assert [b.explanation for _, b in reworded.pairs] != [b.explanation for _, b in template.pairs]


NAMES = ch05.RuleSet(rules={}, tfidf="tfidf", embedding="embedding 0.77", matched="embedding matched 0.90",
                     reference="reference (full)", n_matching_pairs=0, target_rate=0.5)
KINDS4 = ["first_step_swapped", "first_step_swapped", "wording_only", "wording_only"]


def _audit(paper_same: list[bool], matched_same: list[bool]) -> ch05.SuiteAudit:
    """Two first-step swaps and two rewordings; the two embedding thresholds call the swaps as given."""
    decisions = pd.DataFrame({"tfidf": [True] * 4, NAMES.embedding: paper_same + [True, True],
                              NAMES.matched: matched_same + [True, True], NAMES.reference: [False, False, True, True],
                              ch05.LLM_COLUMN: pd.array([pd.NA] * 4, dtype="boolean")})
    sims = pd.DataFrame({"tfidf": [0.9, 0.8, 0.95, 0.85], "embedding": [0.9, 0.8, 0.95, 0.85]})
    return ch05.SuiteAudit(ch05.PerturbationSetup(None, [], [], KINDS4), decisions, None, sims)


@pytest.mark.parametrize(("paper_same", "matched_same", "answer"), [
    ([True, True], [True, True], "yes"),     # both thresholds: 0 % different
    ([True, True], [False, False], "no"),    # the matched threshold calls every swap different
    ([False, False], [True, True], "no"),    # the paper's threshold does
    ([True, True], [True, False], "no"),     # 50 % different is not "most the same"
    ([True, False], [True, False], "no"),
])
def test_either_threshold_statement_needs_both_thresholds(paper_same, matched_same, answer):
    audits = {"template": _audit(paper_same, matched_same)}
    table = ch05.conclusions(audits, NAMES, ch05.separation_by_suite(audits))
    assert table.loc["embeddings at either threshold call most first-step swaps the same",
                     "template-built suite"] == answer
    assert table.loc["TF-IDF calls most first-step swaps the same mechanism", "template-built suite"] == "yes"


def test_statement_columns_follow_their_suites():
    audits = {"template": _audit([True, True], [True, True]), "reworded": _audit([True, True], [False, False])}
    table = ch05.conclusions(audits, NAMES, ch05.separation_by_suite(audits))
    row = table.loc["embeddings at either threshold call most first-step swaps the same"]
    assert list(row) == ["yes", "no", "yes"]  # template, reworded, changes with the suite
    assert list(table.columns) == ["template-built suite", "reworded suite", "changes with the suite"]


def test_a_missing_reworded_suite_is_not_filled_with_the_template_one(tmp_path):
    folder = tmp_path / "data"
    shutil.copytree(REPO_ROOT / "data", folder, ignore=shutil.ignore_patterns("llm_cache", "examples"))
    (folder / "perturbations_reworded.jsonl").unlink()
    from mechaudit.perturb import available_suites

    assert available_suites(folder) == ["template"]
    with pytest.raises(FileNotFoundError):
        ch05.setup(folder, suite="reworded")
    assert np.all([k in ch05.KINDS for k in ch05.setup(folder).kinds])


def test_a_root_without_the_shipped_manifest_has_no_shipped_benchmark(tmp_path, monkeypatch):
    data = _copy_benchmark(tmp_path / "data", crlf=False)
    monkeypatch.setattr(paths, "REPO_ROOT", tmp_path / "bare")
    assert paths.is_shipped_benchmark(data) is False
