"""The book's one label map: the words a reader sees for the code's names.

:data:`LABELS` maps an identifier or a chapter's column header (``tfidf``, ``extra_pp``) to what a
reader sees ("TF-IDF", "Extra divergence (pp)"); :func:`label` writes an unknown name as words, so no
displayed label carries an underscore. Units follow the glossary: ``%`` for a share or a level,
``pp`` for a difference of two percentages.
"""

from __future__ import annotations

import re
from collections.abc import Hashable

__all__ = ["LABELS", "label", "humanise", "relabel_words", "in_sentence"]

#: identifier or raw header -> displayed label (unit in parentheses); aliases of one label share an entry
LABELS: dict[str, str] = {
    # equivalence rules and judges
    "tfidf": "TF-IDF",
    **dict.fromkeys(("embedding", "embeddings"), "Embedding (MiniLM)"),
    "mechanism_key": "Mechanism key",
    "paper_rates": "Paper-rate judge",
    **dict.fromkeys(("reference", "reference judge"), "Reference judge"),
    "measure": "Truth measure",
    "reference (full)": "Reference judge (full rubric)",
    "reference full": "Reference judge, full rubric",
    "reference step": "Reference judge, step rubric",
    "reference none": "Reference judge, no rubric",
    **dict.fromkeys(("llm", "llm judge"), "LLM judge"),
    "llm full": "LLM judge, full rubric",
    "llm step": "LLM judge, step rubric",
    "llm none": "LLM judge, no rubric",
    "exact": "Exact rule",
    "initiator": "Initiator rule",
    # perturbation kinds
    "wording_only": "Wording only",
    "wording_chain": "Wording and chain",
    "first_step_swapped": "First step swapped",
    "middle_step_swapped": "Middle step swapped",
    # groupings
    "complete": "Complete linkage",
    "components": "Connected components",
    # engagement labels
    "answered": "Answered",
    "conceded": "Conceded",
    "partial": "Partly met",
    "dropped": "Dropped",
    # critique depth tables
    **dict.fromkeys(("extra (pp)", "extra_pp", "extra"), "Extra divergence (pp)"),
    **dict.fromkeys(("exact p", "p_value"), "Exact p"),
    **dict.fromkeys(("ceiling (pp)", "max_extra_pp"), "Ceiling (pp)"),
    **dict.fromkeys(("share of ceiling", "normalised"), "Share of ceiling"),
    **dict.fromkeys(("truth (pp)", "truth_pp"), "Truth (pp)"),
    **dict.fromkeys(("truth SE (pp)", "truth_se_pp"), "Truth SE (pp)"),
    "comparison": "Depths",
    "rule": "Rule",
    "runs from": "Runs from",
    "runs": "Runs",
    "run_pairs": "Run pairs",
    "matched_pairs": "Matched pairs",
    "same-depth": "Same-depth divergence (%)",
    "cross-depth": "Cross-depth divergence",
    # simulator parameters (params/simulator.yaml)
    "p_find": "Find probability per round",
    "p_extra_hypothesis": "Extra-hypothesis probability",
    "extra_hypotheses_max": "Extra hypotheses, at most",
    "p_develop_swap": "Development swap probability",
    "p_weak_supported": "Weak-link probability, named step",
    "p_weak_unsupported": "Weak-link probability, unnamed step",
    "p_challenge_sound": "Challenge probability, sound link",
    "p_repair_partial": "Repair probability after a partial reply",
    "reply_weak": "Replies on weak links",
    "reply_sound": "Replies on sound links",
    "evidence_weight": "Evidence weight",
    "weak_scale": "Weak-link scale",
    "parameter": "Parameter",
    "target value": "Target value",
    # agreement
    **dict.fromkeys(("method a", "method_a"), "Rule A"),
    **dict.fromkeys(("method b", "method_b"), "Rule B"),
    "raw agreement": "Raw agreement",
    "kappa": "Cohen's κ",
    "same rate a": "Share same, rule A",
    "same rate b": "Share same, rule B",
    "% agreement": "Agreement (%)",
    # LLM usage
    "cache_read_input_tokens": "Cached input tokens",
    "cache_creation_input_tokens": "Cache-write input tokens",
    "input_tokens": "Input tokens",
    "output_tokens": "Output tokens",
    **dict.fromkeys(("cost_usd", "usd_plain"), "Cost (USD)"),
    "usd_batch": "Cost with batches (USD)",
    "to_send": "To send",
    "truth_0v1_pp": "Truth 0 v 1 (pp)",
    "truth_0v5_pp": "Truth 0 v 5 (pp)",
    "truth_1v5_pp": "Truth 1 v 5 (pp)",
    "calls_per_pair": "Calls per pair",
    "calls": "Calls",
    "model": "Model",
    "mode": "Mode",
    # tau chapter
    "MAE": "MAE (score points)",
    "RMSE": "RMSE (score points)",
    "score10": "Anchor score (1 to 10)",
    "mle": "Maximum likelihood",
    "grid": "Grid",
    "sd": "SD",
}

#: words inside longer labels that are identifiers (replaced word by word, see :func:`relabel_words`)
_WORDS = {key: value for key, value in LABELS.items() if "_" in key or key in {"tfidf"}}
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def humanise(name: str) -> str:
    """An identifier as words: ``_`` becomes a space and the first letter upper case (other letters
    as written, so "MAE" and "τ" stay)."""
    text = re.sub(r"_+", " ", name).strip()
    return _capital(text)


def _capital(text: str) -> str:
    """``text`` with an ASCII first letter upper-cased ("τ (grid)" stays: "Τ" would be another letter)."""
    return text[:1].upper() + text[1:] if text[:1].isascii() else text


def relabel_words(text: str, unknown: bool = True) -> str:
    """``text`` with every identifier word the map knows replaced by its label in lower case
    ("tfidf 0.25" -> "TF-IDF 0.25", "U-02 wording_only" -> "U-02 wording only"). Other words with
    an ``_`` become words too, unless ``unknown`` is false (then they are kept as written)."""

    def _word(m: re.Match[str]) -> str:
        word = m.group(0)
        if word not in _WORDS:
            return word.replace("_", " ") if unknown else word
        return _lower_first(_WORDS[word])

    return _WORD.sub(_word, text)


def _lower_first(text: str) -> str:
    """``text`` with its first letter lower case, unless it starts with an acronym ("TF-IDF")."""
    return text if text[:2].isupper() else text[:1].lower() + text[1:]


def label(name: Hashable) -> str:
    """The displayed label of ``name``: the map's entry, else its words (:func:`relabel_words`,
    first letter upper case). Numbers and other non-strings are returned as text unchanged."""
    if not isinstance(name, str):
        return str(name)
    if name in LABELS:
        return LABELS[name]
    return _capital(relabel_words(name))


def in_sentence(name: Hashable) -> str:
    """The label of ``name`` inside a sentence: its first letter lower case unless the label starts
    with an acronym ("Paper-rate judge" -> "paper-rate judge", "TF-IDF" stays)."""
    return _lower_first(label(name))
