"""Readable API signatures (``mechaudit.sphinxext.api``): pydantic's ``Annotated`` metadata and module
paths are dropped, quoted defaults are kept."""

from __future__ import annotations

import pytest

from mechaudit.sphinxext.api import readable_signature, strip_annotated


@pytest.mark.parametrize(("raw", "shown"), [
    ("(*, id: Annotated[str, MinLen(min_length=1)], text: Annotated[str, MinLen(min_length=1)])",
     "(*, id: str, text: str)"),
    ("(*, id: ~typing.Annotated[str, _PydanticGeneralMetadata(pattern='^[A-Za-z0-9_]+$')], n: int = 3)",
     "(*, id: str, n: int = 3)"),
    ("(m: ~typing.Annotated[list[~mechaudit.llm.request.Message], ~annotated_types.MinLen(min_length=1)])",
     "(m: list[Message])"),
    ("(t: ~types.Annotated[float | None, ~annotated_types.Ge(ge=0.0), ~annotated_types.Le(le=1.0)] = 0.0)",
     "(t: float | None = 0.0)"),
    ("(papers: ~collections.abc.Sequence[~collections.abc.Mapping[str, ~typing.Any]], model: str = 'a.b-c')",
     "(papers: Sequence[Mapping[str, Any]], model: str = 'a.b-c')"),
    (None, None), ("", ""),
])
def test_readable_signature(raw, shown):
    assert readable_signature(raw) == shown


def test_nested_annotated_and_unbalanced_input():
    assert strip_annotated("Annotated[list[Annotated[int, Ge(ge=0)]], MinLen(min_length=1)]") == "list[int]"
    with pytest.raises(ValueError, match="unbalanced"):
        strip_annotated("Annotated[str, MinLen(")
