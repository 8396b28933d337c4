"""The public API's signatures, written to ``tests/api_snapshot.json`` and compared by ``test_api_snapshot``.

The public API is ``mechaudit.__all__`` and the ``__all__`` of every module the book's API pages
document (``.. automodule::`` in ``book/api/*.md``). Each public name is recorded as what a caller
depends on: a function's signature, a class's constructor signature, bases and public methods', an enum's
members, and the type of anything else. A deprecated call form kept for one release
does not show here (its wrapper has the new signature); it is listed in
``mechaudit.deprecation.DEPRECATED`` instead.

After a deliberate change of a public signature (with a deprecated path for the old call), write
the snapshot again in the same commit:

    .venv/bin/python tests/snapshot_api.py --update
"""

from __future__ import annotations

import argparse
import enum
import importlib
import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = ROOT / "tests" / "api_snapshot.json"
API_PAGES = ROOT / "book" / "api"


def public_modules() -> list[str]:
    """``mechaudit`` and every module an API page documents, sorted."""
    documented = {m for page in API_PAGES.glob("*.md")
                  for m in re.findall(r"^\.\. automodule:: (\S+)", page.read_text(encoding="utf-8"), re.M)}
    return sorted({"mechaudit"} | documented)


def _signature(obj: Any) -> str:
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(signature not available)"
    text = re.sub(r" at 0x[0-9a-f]+", "", text)  # default values that print their address
    return text.replace(str(ROOT), "<project>")  # a default path inside the checkout, wherever it is


def describe(obj: Any) -> dict[str, Any] | str:
    """What callers of ``obj`` depend on, as JSON-able data."""
    if isinstance(obj, type) and issubclass(obj, enum.Enum):
        return {"enum": [member.name for member in obj]}
    if getattr(obj, "__origin__", None) is not None:  # a type alias such as tuple[Hypothesis, Hypothesis]
        return f"alias {obj!r}"
    if isinstance(obj, type):
        methods = {}
        for name, member in sorted(vars(obj).items()):
            if name.startswith("_"):
                continue
            if isinstance(member, property):
                methods[name] = "property"
            elif isinstance(member, (staticmethod, classmethod)):
                methods[name] = f"{type(member).__name__} {_signature(member.__func__)}"
            elif inspect.isfunction(member):
                methods[name] = _signature(member)
        bases = [f"{b.__module__}.{b.__qualname__}" for b in obj.__bases__ if b is not object]
        return {"class": _signature(obj), "bases": bases, "methods": methods}
    if callable(obj):
        return f"function {_signature(obj)}"
    return f"value of type {type(obj).__name__}"


def snapshot(modules: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """``{module: {public name: describe(object)}}`` for the public modules."""
    out = {}
    for name in modules or public_modules():
        module = importlib.import_module(name)
        out[name] = {n: describe(getattr(module, n)) for n in sorted(getattr(module, "__all__", []))}
    return out


def differences(old: dict, new: dict) -> list[str]:
    """One line per public name that was added, removed or whose description changed."""
    lines = []
    for module in sorted(set(old) | set(new)):
        before, after = old.get(module, {}), new.get(module, {})
        for name in sorted(set(before) | set(after)):
            if name not in after:
                lines.append(f"{module}.{name}: removed (was {before[name]})")
            elif name not in before:
                lines.append(f"{module}.{name}: added ({after[name]})")
            elif before[name] != after[name]:
                lines.append(f"{module}.{name}: {before[name]} -> {after[name]}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help=f"write {SNAPSHOT.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    current = snapshot()
    if args.update:
        SNAPSHOT.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {SNAPSHOT.relative_to(ROOT)}: {sum(map(len, current.values()))} public names")
        return 0
    changed = differences(json.loads(SNAPSHOT.read_text(encoding="utf-8")), current)
    print("\n".join(changed) or "the public API matches the snapshot")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
