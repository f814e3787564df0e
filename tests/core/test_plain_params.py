"""A tool whose input is a `DeclaredInput` (Read) is validated without pydantic when a plain
check can settle it (`coerce.plain_params`). That check must never accept what pydantic refuses,
and must give the values pydantic gives: every case below is run through both, after the same
coercion. A case the plain check declines goes to pydantic, which words the error as before."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from typing import Literal, Optional

from codebelt.coerce import coerce_input, plain_params
from codebelt.tool import DeclaredInput, Param
from codebelt.tools import registry


class EveryKind(DeclaredInput):
    """Every kind of field the plain check models, and some it leaves to pydantic."""

    path: str = Param(description="required")
    count: int | None = Param(None, json_schema_extra={"minimum": 0})
    ratio: float | None = None
    ratio_required: float = Param(2.5)
    flag: bool = False
    mode: Literal["a", "b"] = "a"
    maybe_mode: Optional[Literal["a", "b"]] = None


class Bounded(DeclaredInput):
    """A constraint pydantic checks: the plain check must leave every call of it to pydantic."""

    count: int = Param(1, ge=1)


class _Tool:
    def __init__(self, name, model):
        self.name, self.Input = name, model


DECLARED = [t for profile in ("claude-code", "codex") for t in registry(profile) if issubclass(t.Input, DeclaredInput)]
DECLARED += [_Tool("EveryKind", EveryKind), _Tool("Bounded", Bounded)]

# JSON values and what a library caller may pass instead
POOL = [None, True, False, 0, 1, -1, 7, 2**53, 2**63, 2**70, 1.0, 3.0, 1.5, -0.0, math.nan, math.inf, "", "x", "3",
        " 4 ", "3.0", "1e3", "true", "False", "yes", "null", "[1]", "\ud800", "é", [], ["a"], [1], {}, {"a": 1},
        Path("a"), b"x", ("a",)]


def _typed(value):
    """A value with its type, so that 1 == True == 1.0 do not pass for each other."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_typed(v) for v in value])
    return (type(value).__name__, value)


def _cases(model):
    fields = model.declared_fields()
    base = {name: "a.txt" for name, (tp, p) in fields.items() if p.required}
    yield dict(base)
    yield {}
    yield {**base, "unknown": 1}
    yield {**base, 1: "x"}
    for name in fields:
        for value in POOL:
            yield {**base, name: value}
        yield {k: v for k, v in base.items() if k != name}
    for a in fields:  # every pair of fields set to the same value
        for b in fields:
            if a < b:
                for value in (None, 1, "1", True, "x"):
                    yield {**base, a: value, b: value}


@pytest.mark.parametrize("tool", DECLARED, ids=[t.name for t in DECLARED])
def test_the_plain_check_accepts_only_what_pydantic_accepts_with_the_same_values(tool):
    model = tool.Input
    plain_taken = 0
    for raw in _cases(model):
        data = coerce_input(model, dict(raw))
        plain = plain_params(model, data)
        try:
            expected = model.model().model_validate(data)
        except ValidationError:
            assert plain is None, f"{tool.name}: the plain check took {raw!r}, which pydantic refuses"
            continue
        if plain is None:
            continue  # pydantic's to settle: slower, never wrong
        plain_taken += 1
        assert isinstance(plain, model)
        assert _typed(plain.model_dump()) == _typed(expected.model_dump()), raw
        if not any(isinstance(v, str) and not v.isascii() for v in data.values()):  # pydantic refuses surrogates
            assert plain.model_dump_json(exclude_none=True) == expected.model_dump_json(exclude_none=True)
    if model is Bounded:
        assert plain_taken == 0
    else:
        assert plain_taken > 10, f"{tool.name}: the plain check settled almost nothing ({plain_taken} cases)"


def test_read_is_declared_and_its_usual_input_needs_no_pydantic_model():
    from codebelt.tools.read import Read, ReadInput

    assert Read.Input is ReadInput and issubclass(ReadInput, DeclaredInput)
    params = plain_params(ReadInput, coerce_input(ReadInput, {"file_path": "a.py", "offset": "10", "limit": 5.0}))
    assert params == ReadInput(file_path="a.py", offset=10, limit=5, pages=None, allow_large=None)


def test_a_declared_input_has_the_schema_of_the_model_built_from_it():
    """The declaration forwards what it lacks to its pydantic model: the tool's JSON Schema is
    the model's (the compat tests check it against Claude Code's)."""
    from codebelt.tools.read import ReadInput

    model = ReadInput.model()
    assert model is ReadInput.model() and model.__name__ == "ReadInput"
    assert ReadInput.model_json_schema() == model.model_json_schema()
    assert list(ReadInput.model_fields) == ["file_path", "offset", "limit", "pages", "allow_large"]
    assert model.model_config["strict"] and model.model_config["extra"] == "forbid"


def test_errors_are_pydantics_words(make_session, ws):
    """A call the plain check declines is validated by pydantic: the error is Claude Code's
    InputValidationError text, as for any other tool."""
    (ws / "a.txt").write_text("x\n")
    s = make_session()
    r = s.call("Read", {"file_path": "a.txt", "limit": "many", "extra": 1})
    assert r.is_error
    assert "An unexpected parameter `extra` was provided" in r.text
    assert "The parameter `limit` type is expected as `number` but provided as `string`" in r.text
    assert not s.call("Read", {"file_path": "a.txt", "limit": "1"}).is_error


def test_coercion_while_another_thread_is_still_importing_pydantic(monkeypatch):
    """A session's background start imports modules in threads of its own while the first call
    is coerced: pydantic may be in sys.modules half-imported (no `BaseModel` yet). The call's
    coercion must not fail on it (it did: "partially initialized module 'pydantic' has no
    attribute 'BaseModel'", the README's checkpoints example losing its first Write under load)."""
    import sys
    import types

    from pydantic import BaseModel

    from codebelt.tools.write import WriteInput

    class Inner(BaseModel):
        a: int

    class Outer(BaseModel):
        inner: Inner

    # once imported, a model field still takes JSON text for its object
    assert coerce_input(Outer, {"inner": '{"a": 1}'}) == {"inner": {"a": 1}}
    for name in ("pydantic", "pydantic.main"):
        half = types.ModuleType(name)
        half.__spec__ = types.SimpleNamespace(name=name, _initializing=True)
        monkeypatch.setitem(sys.modules, name, half)
    assert coerce_input(WriteInput, {"file_path": "notes.md", "content": "draft\n"}) == \
        {"file_path": "notes.md", "content": "draft\n"}
    assert coerce_input(EveryKind, {"path": "a", "count": "3", "flag": "true"}) == {"path": "a", "count": 3, "flag": True}
