"""The one registry of equivalence rules by name: ``build(name, **config)``.

The command line and the chapters build every rule through it; ``config`` goes to the class's
constructor (``parameters(name)``), and a class is imported only when its name is built.

=================  ===========================================  ==================================
name               class                                        parameters (all keyword)
=================  ===========================================  ==================================
``mechanism_key``  ``rules.mechanism_key.MechanismKeyRule``     none (ground truth, simulator runs)
``reference``      ``rules.reference.ReferenceJudge``           rubric, jaccard_threshold
``tfidf``          ``rules.tfidf.TfidfRule``                    threshold, fit_on
``embedding``      ``rules.embedding.EmbeddingRule``            model, threshold, batch_size, ...
``llm``            ``rules.llm_judge.LLMJudge``                 rubric, model, client, orders, ...
``paper_rates``    ``rules.paper_rates.PaperRateJudge``         first_step, middle_step, ... (simulator)
=================  ===========================================  ==================================
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from mechaudit.errors import MechauditError

#: Rule name -> ``"module:Class"`` of its class.
RULES: dict[str, str] = {
    "mechanism_key": "mechaudit.rules.mechanism_key:MechanismKeyRule",
    "reference": "mechaudit.rules.reference:ReferenceJudge",
    "tfidf": "mechaudit.rules.tfidf:TfidfRule",
    "embedding": "mechaudit.rules.embedding:EmbeddingRule",
    "llm": "mechaudit.rules.llm_judge:LLMJudge",
    "paper_rates": "mechaudit.rules.paper_rates:PaperRateJudge",
}

#: The valid rule names, in the order the chapters list them.
NAMES: tuple[str, ...] = tuple(RULES)


def rule_class(name: str) -> type:
    """The class registered as ``name``; ``MechauditError`` listing the valid names otherwise."""
    if not isinstance(name, str) or name not in RULES:
        raise MechauditError(f"unknown rule {name!r}; choose one of {', '.join(NAMES)}", field="rule")
    module, cls = RULES[name].split(":")
    return getattr(importlib.import_module(module), cls)


def parameters(name: str) -> tuple[str, ...]:
    """The configuration keys ``build(name, ...)`` accepts (the class's keyword parameters)."""
    return tuple(inspect.signature(rule_class(name)).parameters)


def build(name: str, **config: Any) -> Any:
    """A new rule of the class registered as ``name`` with ``config``; ``MechauditError`` for an
    unknown name or a key the rule does not take (the constructor checks the values)."""
    valid = parameters(name)
    unknown = [key for key in config if key not in valid]
    if unknown:
        listed = ", ".join(valid) if valid else "none"
        raise MechauditError(f"rule {name!r} takes no parameter {unknown[0]!r}; its parameters: {listed}",
                             field=unknown[0])
    return rule_class(name)(**config)


__all__ = ["NAMES", "RULES", "build", "parameters", "rule_class"]
