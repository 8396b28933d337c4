"""Hand-made hypotheses shared by the rules tests (a helper module, imported by them)."""

from __future__ import annotations

from mechaudit.schema import Hypothesis, Step

NAMES = {
    "KRAS": "KRAS G12D activation",
    "EGFR": "EGFR amplification",
    "MEK": "MEK phosphorylation",
    "ERK": "ERK signalling",
    "PI3K": "PI3K pathway activation",
    "MYC": "MYC overexpression",
    "PROLIF": "increased tumour cell proliferation",
    "CRP": "raised serum CRP",
}


def hyp(hid: str, ids: list[str], statement: str | None = None, explanation: str | None = None,
        instance: str = "I1") -> Hypothesis:
    """A hypothesis with chain ``ids`` and default texts built from the step names."""
    steps = [Step(id=i, text=NAMES[i]) for i in ids]
    return Hypothesis(
        id=hid,
        instance=instance,
        statement=statement or f"{NAMES[ids[0]]} drives {NAMES[ids[-1]]}.",
        explanation=explanation or " then ".join(NAMES[i] for i in ids) + ".",
        chain=steps,
    )
