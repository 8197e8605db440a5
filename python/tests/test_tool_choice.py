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


def test_a_requests_own_tools_as_a_spec():
    """tools_spec maps OpenAI's tool_choice and parallel_tool_calls to the
    format's entries; parse_spec reads the tools back."""
    from tooldec._specs import tools_spec

    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    named = {"type": "function", "function": {"name": "f"}}
    for choice, parallel, entry, tool in [
        ("auto", True, "auto", None),
        ("auto", False, "auto-one", None),
        (None, True, "auto", None),
        ("required", True, "required", None),
        ("required", False, "one", None),
        (named, True, "required", "f"),
        (named, False, "one", "f"),
    ]:
        spec = parse_spec(tools_spec(tools, "qwen3", choice, parallel))
        assert (spec.entry, spec.tool, spec.format, spec.tools) == (entry, tool, "qwen3", tools)
        assert spec.name == "" and spec.max_tokens is None
    assert tools_spec(tools, "qwen3", "none") is None and tools_spec([], "qwen3") is None
    with pytest.raises(ValueError, match="tool_choice"):
        tools_spec(tools, "qwen3", "sometimes")
    for bad, message in [
        ({"tooldec": {"tools": [], "format": "x"}}, "non-empty tool list"),
        ({"tooldec": {"tools": tools}}, "must name a call format"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_spec(bad)


def test_the_engine_budget_is_carried_into_a_spec():
    """with_budget writes the engine's limit into a tooldec spec (the
    smaller of the two wins) and leaves other grammars alone."""
    from tooldec._specs import tools_spec, with_budget

    assert parse_spec(with_budget("tooldec:w/start", 40)) == parse_spec(
        '{"tooldec": "w", "entry": "start", "max_tokens": 40}'
    )
    assert parse_spec(with_budget('{"tooldec": "w", "max_tokens": 20}', 40)).max_tokens == 20
    assert parse_spec(with_budget('{"tooldec": "w", "tool": "f"}', 8)).tool == "f"
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    spec = parse_spec(with_budget(tools_spec(tools, "hermes", "required"), 30))
    assert (spec.tools, spec.format, spec.max_tokens, spec.entry) == (tools, "hermes", 30, "required")
    for other in ['{"type": "object"}', "root ::= x", '{"tooldec": 5}']:
        assert with_budget(other, 10) == other
    assert with_budget("tooldec:w", None) == "tooldec:w"


def test_auto_without_parallel_calls_allows_at_most_one_call():
    """``tool_choice="auto"`` with ``parallel_tool_calls=False`` maps to the
    format's ``auto-one`` entry: text alone or text and one call are
    complete outputs there; a second call is refused, where ``auto``
    takes it."""
    import json
    import pathlib

    from helpers import GreedyTokenizer

    from tooldec._specs import tools_spec

    weather = pathlib.Path(__file__).resolve().parents[2] / "grammars" / "examples" / "weather.json"
    tools = json.loads(weather.read_text())
    spec = parse_spec(tools_spec(tools, "hermes", "auto", False))
    art = tooldec.Compiler.gpt2().compile(spec.tools, format=spec.format)
    tok = GreedyTokenizer(art)
    call = '<tool_call>\n{"name": "get_time", "arguments": {"timezone": "UTC"}}\n</tool_call>'

    def feed(entry, text):
        m = art.matcher(entry=entry)
        return all(m.accept_token(t) for t in tok.encode(text)) and m.is_accepting()

    assert spec.entry == "auto-one"
    assert feed("auto-one", "It is sunny.") and feed("auto-one", "Let me check.\n" + call)
    assert not feed("auto-one", "Let me check.\n" + call + "\n" + call)
    assert feed("auto", "Let me check.\n" + call + "\n" + call)


def test_the_adapters_compile_a_requests_entry_only():
    """``ToolsCompiler`` builds the entry the request starts at, not the
    whole format: its artifact has that entry alone, serves it as the
    whole format's artifact does, and the same tools with another
    ``tool_choice`` are another compile."""
    import json
    import pathlib

    from helpers import GreedyTokenizer

    from tooldec._specs import ToolsCompiler, tools_spec

    weather = pathlib.Path(__file__).resolve().parents[2] / "grammars" / "examples" / "weather.json"
    tools = json.loads(weather.read_text())
    own = ToolsCompiler(tokenizer=None, vocab_size=None, deferred=True)
    own._compiler = tooldec.Compiler.gpt2()
    whole = tooldec.Compiler.gpt2().compile(tools, format="hermes")
    tok = GreedyTokenizer(whole)
    call = '<tool_call>\n{"name": "get_time", "arguments": {"timezone": "UTC"}}\n</tool_call>'
    for choice, parallel, entry in [("auto", False, "auto-one"), ("required", True, "required")]:
        spec = parse_spec(tools_spec(tools, "hermes", choice, parallel))
        assert spec.entry == entry
        art = own.start(spec).wait()
        assert art.entries == [entry] and own.compile(spec).entries == [entry]
        for text in ["Let me check.\n" + call, call, call + "\n" + call]:
            ms = [a.matcher(entry=entry) for a in (art, whole)]
            fed = [all(m.accept_token(t) for t in tok.encode(text)) and m.is_accepting() for m in ms]
            assert fed[0] == fed[1], (entry, text)
    with pytest.raises(ValueError, match="no entry"):
        own.start(parse_spec(json.dumps({"tooldec": {"tools": tools, "format": "hermes"}, "entry": "nope"})))
    assert own.start(parse_spec(tools_spec(tools, "hermes", "auto", True))).wait().entries == ["auto"]
