"""Cost before calls: the requests a chapter would send, their tokens and their price.

Each LLM chapter's module has a ``plan(params)``, listed in ``PLANS``, that builds the chapter's
requests from its parameters with the request builders the chapter uses, sending nothing. The
counting rules (exact judge and workflow counts, early-stop upper bounds, uncounted repairs,
cached repeats) are documented in ``book/rerun.md``; sizing and prices in :mod:`mechaudit.llm.pricing`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from mechaudit.book import (
    ch02_critique_depth,
    ch03_critique_engagement,
    ch04_equivalence_rules,
    ch05_perturbations,
    ch06_rubric_sensitivity,
    ch07_sensitivity,
    ch08_tau_calibration,
)
from mechaudit.book.chapter import backend_of
from mechaudit.book.params import DEFAULT_PARAMS, notebook_parameters, resolve_chapter, resolve_parameters, toc_chapters
from mechaudit.llm.cache import ResponseCache, default_cache_dir
from mechaudit.llm.ledger import load_prices
from mechaudit.llm.pricing import ESTIMATE_COLUMNS, Planned, load_min_cache_tokens, price_plan
from mechaudit.llm.providers import openai_base_url, with_endpoint

#: chapter stem -> its cost plan ``plan(params) -> list[Planned]``: every chapter that sends LLM
#: requests (01, 02b, 02c and 09 send none)
PLANS: dict[str, Callable[[Mapping[str, Any]], list[Planned]]] = {
    "02_critique_depth": ch02_critique_depth.plan,
    "03_critique_engagement": ch03_critique_engagement.plan,
    "04_equivalence_rules": ch04_equivalence_rules.plan,
    "05_perturbations": ch05_perturbations.plan,
    "06_rubric_sensitivity": ch06_rubric_sensitivity.plan,
    "07_sensitivity": ch07_sensitivity.plan,
    "08_tau_calibration": ch08_tau_calibration.plan,
}


def chapter_params(chapter, params_file=None, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every parameter of ``chapter`` as it would run: the notebook's defaults, the parameter file
    and the overrides (relative ``data_dir``/``cache_dir`` resolve against the working directory)."""
    params = dict(notebook_parameters(chapter.source))
    params.update(resolve_parameters(chapter, params_file, dict(overrides or {})))
    for name in ("data_dir", "cache_dir"):
        if params.get(name) is not None:
            params[name] = str(Path(params[name]).expanduser().resolve())
    params["backend"] = backend_of(params)  # planners compare members
    return params


def estimate_chapters(names: Sequence[str] = (), params_file=None, overrides: Mapping[str, Any] | None = None,
                      prices: Mapping[str, Any] | str | None = None, base_url: str | None = None) -> pd.DataFrame:
    """The estimate table (``ESTIMATE_COLUMNS``) of the named chapters (default: all, TOC order)
    as ``mechaudit execute`` would run them; chapters with an offline backend contribute no row.
    ``base_url``: the custom OpenAI-compatible server the run's OpenAI-routed requests go to (None:
    ``OPENAI_BASE_URL``, if set), which prices them by endpoint."""
    table = load_prices(prices)
    min_cache = load_min_cache_tokens(prices if isinstance(prices, (str, Path)) else None)
    chapters = [resolve_chapter(n) for n in names] or toc_chapters()
    params_file = DEFAULT_PARAMS if params_file is None else params_file
    caches: dict[Path, ResponseCache] = {}
    seen: set[str] = set()
    frames = []
    for chapter in chapters:
        p = chapter_params(chapter, params_file, overrides)
        planner = PLANS.get(chapter.stem)
        if planner is None or not p["backend"].is_llm:
            continue
        folder = Path(p["cache_dir"]) if p.get("cache_dir") else default_cache_dir()
        if folder not in caches:
            caches[folder] = ResponseCache(folder)
        server = openai_base_url(base_url)
        planned = [replace(x, request=with_endpoint(x.request, server)) for x in planner(p)]
        frames.append(price_plan(chapter.stem, planned, table, caches[folder].__contains__, seen, min_cache))
    if not frames:
        return pd.DataFrame(columns=ESTIMATE_COLUMNS)
    return pd.concat(frames, ignore_index=True)


def judge_estimate(stem: str, parameters: Mapping[str, Any]) -> pd.DataFrame:
    """The judge rows of ``mechaudit estimate`` for chapter ``stem`` with backend "anthropic" and
    ``parameters``, as a judge-model axis's offline section shows them (USD NaN: unpriced model)."""
    table = estimate_chapters([stem], overrides={**parameters, "backend": "anthropic"})
    judge = table[table.stage.str.startswith("judge ")]
    return judge[["stage", "model", "requests", "cached", "to_send", "usd_plain", "usd_batch"]].reset_index(drop=True)
