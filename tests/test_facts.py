"""Typed facts (``mechaudit.report.facts``): rounding per field, nested keys, keys from the class equal to the
keys glued, and records the helpers refuse."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from mechaudit.errors import MechauditError
from mechaudit.report import facts as facts_module
from mechaudit.report.facts import fact, fact_keys, glue_facts


@dataclass(frozen=True)
class Pair:
    low_pp: float = fact(unit="pp", digits=1)
    high_pp: float = fact(unit="pp", digits=2)


@dataclass(frozen=True)
class Chapter:
    n_runs: int = fact(unit="runs")
    share_pct: float = fact(unit="%", digits=1)
    power: float | None = fact(digits=2, missing="not in this design")
    status: str = fact(doc="how the number was made", default="simulated")
    raw: float | None = fact(default=None)
    gap: Pair = Pair(0.0, 0.0)


@pytest.fixture
def glued(monkeypatch):
    """Replace myst-nb's glue with a recorder of (name, stored value)."""
    seen: dict[str, object] = {}
    monkeypatch.setattr("myst_nb.glue", lambda name, value, display=False: seen.__setitem__(name, value))
    return seen


def test_glue_facts_rounds_each_field_to_its_digits_and_nests_keys(glued):
    glue_facts("ch99", Chapter(n_runs=np.int64(60), share_pct=41.27, power=0.8449, gap=Pair(1.25, 3.14159)))
    assert glued == {"ch99_n_runs": 60, "ch99_share_pct": 41.3, "ch99_power": 0.84, "ch99_status": "simulated",
                     "ch99_raw": None, "ch99_gap_low_pp": 1.2, "ch99_gap_high_pp": 3.14}
    assert type(glued["ch99_n_runs"]) is int  # a numpy integer is stored as a Python int


def test_a_none_value_is_glued_as_its_declared_text(glued):
    glue_facts("ch99", Chapter(n_runs=1, share_pct=2.0, power=None))
    assert glued["ch99_power"] == "not in this design" and glued["ch99_raw"] is None


def test_keys_from_the_class_equal_the_keys_glued(glued):
    glue_facts("ch99", Chapter(n_runs=1, share_pct=2.0, power=0.5))
    assert fact_keys("ch99", Chapter) == list(glued) == [
        "ch99_n_runs", "ch99_share_pct", "ch99_power", "ch99_status", "ch99_raw", "ch99_gap_low_pp",
        "ch99_gap_high_pp"]


def test_a_number_that_cannot_be_rounded_is_refused(glued):
    with pytest.raises(MechauditError, match="ch99_share_pct"):
        glue_facts("ch99", Chapter(n_runs=1, share_pct=float("nan"), power=None))


def test_a_text_value_in_a_field_with_digits_is_refused(glued):
    with pytest.raises(TypeError, match="ch99_power"):
        glue_facts("ch99", Chapter(n_runs=1, share_pct=2.0, power="n/a"))


def test_what_is_not_a_frozen_record_of_facts_is_refused(monkeypatch):
    monkeypatch.setattr(facts_module, "glue", lambda *a, **k: pytest.fail("glued a bad record"))

    @dataclass
    class Thawed:
        x: int = fact()

    @dataclass(frozen=True)
    class Undeclared:
        x: int = 0

    @dataclass(frozen=True)
    class TextWithDigits:
        x: str = fact(digits=1)

    @dataclass(frozen=True)
    class OptionalTextWithDigits:
        x: str | None = fact(digits=0)

    for bad, why in ((dict, "not a dataclass"), (Thawed, "not frozen"), (Undeclared, "declared with fact"),
                     (TextWithDigits, "text but declares digits=1"), (OptionalTextWithDigits, "text but")):
        with pytest.raises(TypeError, match=why):
            fact_keys("ch99", bad)
    with pytest.raises(TypeError, match="not a dataclass"):
        glue_facts("ch99", {"x": 1})
    with pytest.raises(TypeError, match="not the class"):
        glue_facts("ch99", Chapter)
    with pytest.raises(TypeError, match="ch99_gap is 3"):
        glue_facts("ch99", Chapter(n_runs=1, share_pct=2.0, power=None, gap=3))
    for digits in (-1, 1.5, True):
        with pytest.raises(ValueError, match="digits"):
            fact(digits=digits)


def test_chapter_09_swap_shares_per_suite_and_not_run_for_a_missing_suite(glued):
    import pandas as pd

    from mechaudit.book.chapter import swap_shares

    index = pd.MultiIndex.from_tuples([("reworded suite", "first_step_swapped"), ("reworded suite", "wording_only")])
    pct = pd.DataFrame({"TF-IDF": [12.5, 0.0], "embeddings": [37.5, 0.0], "reference judge": [100.0, 0.0]}, index)
    glue_facts("ch09_rw", swap_shares(pct, "reworded suite"))
    glue_facts("ch09", swap_shares(pct, "template-built suite"))
    assert glued == {"ch09_rw_fss_tfidf": 12, "ch09_rw_fss_embedding": 38, "ch09_rw_fss_reference": 100,
                     "ch09_fss_tfidf": "not run", "ch09_fss_embedding": "not run", "ch09_fss_reference": "not run"}


def test_a_fact_without_a_default_must_be_given():
    @dataclass(frozen=True)
    class Pair:
        needed: float = fact(unit="pp")
        optional: float | None = fact(unit="pp", default=None)

    with pytest.raises(TypeError, match="needed"):
        Pair()
    assert Pair(needed=1.0).optional is None


def test_a_fact_declares_no_unit_digits_doc_or_missing_text_unless_given():
    field = fact(default=None)  # made here, not at import: the test sees the fact() it calls
    assert field.default is None
    assert field.metadata["mechaudit.fact"] == facts_module.FactSpec(unit="", digits=None, doc="", missing=None)
