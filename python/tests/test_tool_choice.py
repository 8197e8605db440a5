"""One-tool matchers: ``Artifact.matcher(tool=...)`` and OpenAI's
``tool_choice`` naming a function, in the request specs the adapters read."""

import random

import numpy as np
import pytest

import tooldec
from tooldec._specs import parse_spec, tool_of


def _walk(art, m, rng, steps=200):
    """A random masked walk; returns the bytes written (EOS ends it)."""
    bm = np.zeros((1, art.mask_words), dtype=np.int32)
    out = b""
    for _ in range(steps):
        if m.is_terminated():
            return out
        m.fill_next_token_bitmask(bm)
        words = bm[0].view(np.uint32)
        allowed = [
            w * 32 + b for w in np.nonzero(words)[0] for b in range(32) if (int(words[w]) >> b) & 1
        ]
        assert allowed, "empty mask"
        t = rng.choice(allowed)
        assert m.accept_token(t)
        if not art.is_eos(t):
            out += art.token_bytes(t)
    if m.is_terminated():
        return out
    raise AssertionError("the walk did not end within the budget")


def test_matcher_for_one_tool(weather_path):
    art = tooldec.Artifact.open(str(weather_path))
    assert art.tools == ["get_weather", "get_time", "search_flights"]
    rng = random.Random(7)
    for tool in art.tools:
        for _ in range(5):
            # Under a budget every masked path ends, complete, within it
            # (80 tokens, then the EOS an accepting state always allows).
            m = art.matcher(max_tokens=80, tool=tool)
            text = _walk(art, m, rng, steps=81).decode()
            assert f"Action: {tool}\n" in text, text
            others = [t for t in art.tools if t != tool]
            assert not any(f"Action: {o}\n" in text for o in others), text


def test_refusals(weather_path):
    art = tooldec.Artifact.open(str(weather_path))
    with pytest.raises(ValueError, match="no tool named"):
        art.matcher(tool="no_such_tool")
    with pytest.raises(ValueError, match="too small"):
        art.matcher(max_tokens=2, tool="search_flights")


def test_tool_choice_in_specs():
    spec = parse_spec(
        '{"tooldec": "w", "tool_choice": {"type": "function", "function": {"name": "get_time"}}}'
    )
    assert spec.tool == "get_time"
    assert parse_spec('{"tooldec": "w", "tool": "get_weather"}').tool == "get_weather"
    assert parse_spec('{"tooldec": "w", "tool_choice": "auto"}').tool is None
    assert parse_spec("tooldec:w/start").tool is None
    assert tool_of({"type": "function", "name": "x"}) == "x"
    with pytest.raises(ValueError):
        tool_of({"type": "function"})
