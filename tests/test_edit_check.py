"""Self-test of ``tests/edit_check.py`` on a planted two-file project: a caught edit, a surviving
one and one whose text moved are each reported as such, and the source is restored every time."""

from __future__ import annotations

import edit_check
import pytest


@pytest.fixture
def planted(tmp_path, monkeypatch):
    (tmp_path / "limit.py").write_text("def ok(n):\n    return n <= 25\n", encoding="utf-8")
    (tmp_path / "test_limit.py").write_text(
        "from limit import ok\n\n\ndef test_at_the_limit():\n    assert ok(25) and not ok(26)\n", encoding="utf-8")
    monkeypatch.setattr(edit_check, "ROOT", tmp_path)
    monkeypatch.setattr(edit_check, "BACKUP", tmp_path / "build" / "orig.json")
    return tmp_path


@pytest.mark.parametrize(("old", "new", "status"), [
    ("n <= 25", "n < 25", "caught"),
    ("n <= 25", "n <= 25 or n == 30", "SURVIVED"),  # an edit the test does not look at
    ("n < 26", "n <= 26", "old text found 0 times"),
])
def test_each_outcome_is_reported_and_the_source_restored(planted, old, new, status):
    before = (planted / "limit.py").read_text(encoding="utf-8")
    edit = {"id": "x", "what": "limit", "file": "limit.py", "old": old, "new": new, "tests": ["test_limit.py"]}
    row = edit_check.check(edit, timeout=60)
    assert row["status"] == status
    if status == "caught":
        assert row["test"] == "test_limit.py::test_at_the_limit" and row["line"] == 2
    assert (planted / "limit.py").read_text(encoding="utf-8") == before
    assert not edit_check.BACKUP.exists()
