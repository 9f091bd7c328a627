"""The tail's neighbours of one kind merged as pydantic-ai sends them, in one pass: the same
messages as merging each with the one before it, as pydantic-ai's own history does."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolReturnPart,
    UserPromptPart,
)

from history.agent._tail import merged

from ..conftest import START


def pairwise(pieces: list[ModelMessage]) -> list[ModelMessage]:
    """Each piece merged into the one before it when both are requests, or both responses
    made here (no provider's name or id): tool results first."""
    out: list[ModelMessage] = []
    for piece in pieces:
        last = out[-1] if out else None
        if isinstance(piece, ModelRequest) and isinstance(last, ModelRequest):
            parts = sorted(
                [*last.parts, *piece.parts], key=lambda p: not isinstance(p, ToolReturnPart)
            )
            out[-1] = ModelRequest(parts=parts, run_id=last.run_id or piece.run_id)
        elif (
            isinstance(piece, ModelResponse)
            and isinstance(last, ModelResponse)
            and piece.provider_name is None
            and last.provider_name is None
        ):
            out[-1] = ModelResponse(parts=[*last.parts, *piece.parts], timestamp=piece.timestamp)
        else:
            out.append(piece)
    return out


@st.composite
def piece(draw: st.DrawFn) -> ModelMessage:
    n = draw(st.integers(0, 999))
    at = START + timedelta(seconds=n)
    if draw(st.booleans()):
        part = (
            ToolReturnPart(tool_name="t", content=f"r{n}", tool_call_id=f"c{n}", timestamp=at)
            if draw(st.booleans())
            else UserPromptPart(content=f"u{n}", timestamp=at)
        )
        return ModelRequest(parts=[part], run_id=draw(st.sampled_from([None, f"run{n}"])))
    provider = draw(st.sampled_from([None, "anthropic"]))
    return ModelResponse(parts=[TextPart(content=f"a{n}")], timestamp=at, provider_name=provider)


@pytest.mark.slow
@given(st.lists(piece(), max_size=30))
def test_runs_merged_once_are_what_merging_each_pair_makes(pieces: list[ModelMessage]) -> None:
    assert merged(pieces) == pairwise(pieces)


def test_a_long_run_of_requests_is_one_request_in_its_order() -> None:
    requests = [
        ModelRequest(parts=[UserPromptPart(content=f"u{n}", timestamp=START)]) for n in range(2_000)
    ]
    (one,) = merged(requests)
    assert isinstance(one, ModelRequest)
    assert [p.content for p in one.parts if isinstance(p, UserPromptPart)] == [
        f"u{n}" for n in range(2_000)
    ]
