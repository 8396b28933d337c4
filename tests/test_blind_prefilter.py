"""The blindness check's substring prefilter gives exactly the regex's answers, much faster."""

from __future__ import annotations

import re
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from mechaudit.llm.blind import ASCII_CASE_EXTRAS, find_forbidden, fold


def regex_only(text: str, terms: list[str]) -> str | None:
    """Independent reference: the word-boundary regex for every term, no prefilter."""
    for term in terms:
        if re.search(rf"(?<!\w){re.escape(term)}(?!\w)", text, re.IGNORECASE):
            return term
    return None


def test_extra_case_table_is_complete_for_this_python():
    every = "".join(chr(c) for c in range(128, sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    found = {m.group(): m.group() for m in re.finditer("[a-z]", every, re.IGNORECASE)}
    mapped = {c: next(p for p in "abcdefghijklmnopqrstuvwxyz" if re.fullmatch(p, c, re.IGNORECASE))
              for c in found}
    assert mapped == ASCII_CASE_EXTRAS


def test_fold_keeps_every_regex_match_as_substring():
    assert fold("Rısk ſcore \u212aEY İD") == "risk score key id"
    assert find_forbidden("the \u212aey is here", ["key"]) == "key"
    assert find_forbidden("ſcore 7", ["score"]) == "score"
    assert find_forbidden("a rerun", ["run"]) is None


ALPHABET = st.sampled_from(list("abcRSKis -#_.2\u0130\u0131\u017f\u212a\u00df\u00b5\u03bc\u0345"))
TERMS = st.lists(st.text(ALPHABET, min_size=1, max_size=4).filter(str.strip), min_size=1, max_size=5)


@settings(max_examples=600, deadline=None)
@given(text=st.text(ALPHABET, max_size=40), terms=TERMS)
def test_prefilter_matches_regex_on_random_strings(text, terms):
    assert find_forbidden(text, terms) == regex_only(text, terms)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=60), terms=st.lists(st.text(min_size=1, max_size=5).filter(str.strip),
                                                 min_size=1, max_size=4))
def test_prefilter_matches_regex_on_any_unicode(text, terms):
    assert find_forbidden(text, terms) == regex_only(text, terms)


def test_prefilter_matches_regex_on_every_pool_text_and_prompt():
    from mechaudit.tau import ROLES, build_paper_card, build_prompt, build_story_card, make_pool, make_story
    from mechaudit.tau.anchors import select_initial_anchors
    from mechaudit.tau.cards import FORBIDDEN_TERMS

    pool = make_pool(seed=0)
    texts = [p[field] for p in pool.papers for field in ("problem", "method", "contrib") if field in p]
    texts += [build_paper_card(p).render() for p in pool.papers]
    by_id, table = pool.by_id(), pool.table()
    for k, pattern in enumerate(sorted(pool.exemplars)):
        story, _ = make_story(6.0, seed=k)
        cards = [build_paper_card(by_id[pid])
                 for pid in select_initial_anchors(table, pattern, pool.exemplars[pattern])["paper_id"]]
        texts += [t for role in ROLES for t in build_prompt(role, build_story_card(story), cards)]
    hits = [find_forbidden(t, FORBIDDEN_TERMS) for t in texts]
    assert hits == [regex_only(t, list(FORBIDDEN_TERMS)) for t in texts]
    assert any(h is not None for h in hits)  # the raw pool texts do leak: positives are exercised
