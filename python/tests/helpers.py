"""Shared test helpers: random logits, sampling, decoding, call checking,
and comparing two artifacts mask by mask."""

import json
import pathlib
import re

import numpy as np

import tooldec


def random_logits(rng, batch, width, eos_ids=(), eos_boost=3.0):
    """Standard-normal logits; EOS a little more likely (shorter walks)."""
    logits = rng.standard_normal((batch, width)).astype(np.float32)
    for e in eos_ids:
        if e < width:
            logits[:, e] += eos_boost
    return logits


def sample(rng, logits):
    """One token per row from softmax(logits) (Gumbel-max); -inf never wins."""
    g = rng.gumbel(size=logits.shape).astype(np.float32)
    with np.errstate(invalid="ignore"):
        out = np.argmax(logits + g, axis=-1)
    return [int(t) for t in np.atleast_1d(out)]


def specials(artifact):
    """{id: text} of the vocabulary's special tokens (they spell no bytes)."""
    meta = artifact.metadata
    return {int(k): v for k, v in meta.get("vocab", {}).get("specials", {}).items()}


def decode(artifact, tokens, keep_specials=True):
    """The bytes a token sequence spells; special tokens as their text
    (EOS dropped)."""
    sp = specials(artifact) if keep_specials else {}
    out = bytearray()
    for t in tokens:
        if artifact.is_eos(t):
            continue
        b = artifact.token_bytes(t)
        assert b is not None, f"token {t} outside the vocabulary"
        if not b and t in sp:
            b = sp[t].encode()
        out += b
    return bytes(out)


def allowed_ids(bitmask_row, vocab):
    bits = np.unpackbits(
        np.ascontiguousarray(bitmask_row).astype("<u4").view(np.uint8), bitorder="little"
    )
    return np.nonzero(bits[:vocab])[0]


_DECODER = json.JSONDecoder()


def _json_at(text, i):
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return _DECODER.raw_decode(text, i)


def parse_react(text):
    """[(tool, args)] of a ReAct output: "Thought: ...\\nAction: NAME\\nAction
    Input: {json}" with more actions on their own lines (entry parallel)."""
    assert text.startswith("Thought: "), text[:40]
    i = text.index("\nAction: ") + 1
    calls = []
    while True:
        m = re.compile(r"Action: ([^\n]*)\nAction Input: ").match(text, i)
        assert m, f"expected an action at {i}: {text[i:i + 40]!r}"
        args, i = _json_at(text, m.end())
        calls.append((m.group(1), args))
        if i == len(text):
            return calls
        assert text[i] == "\n", f"unexpected {text[i:i + 20]!r} after a call"
        i += 1


def parse_hermes(text):
    """[(tool, args)] of a hermes output: free text, then
    "<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>" calls
    separated by newlines."""
    i = text.index("<tool_call>")
    calls = []
    while True:
        assert text.startswith("<tool_call>\n", i), text[i : i + 30]
        obj, i = _json_at(text, i + len("<tool_call>\n"))
        assert set(obj) == {"name", "arguments"}, obj
        calls.append((obj["name"], obj["arguments"]))
        assert text.startswith("\n</tool_call>", i), text[i : i + 30]
        i += len("\n</tool_call>")
        if i == len(text):
            return calls
        assert text[i] == "\n"
        i += 1


_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def check_value(schema, value, where="arguments"):
    """A small JSON Schema check for the weather tools: type, enum,
    properties (declared ones only), required, items."""
    t = schema.get("type")
    if t is not None:
        assert _TYPES[t](value), f"{where}: {value!r} is not {t}"
    if "enum" in schema:
        assert value in schema["enum"], f"{where}: {value!r} not in {schema['enum']}"
    if t == "object":
        props = schema.get("properties", {})
        for k in schema.get("required", []):
            assert k in value, f"{where}: required {k!r} missing"
        for k, v in value.items():
            assert k in props, f"{where}: undeclared property {k!r}"
            check_value(props[k], v, f"{where}.{k}")
    if t == "array" and "items" in schema:
        for n, v in enumerate(value):
            check_value(schema["items"], v, f"{where}[{n}]")


def check_calls(tools, calls):
    assert calls, "no call"
    for name, args in calls:
        assert name in tools, f"unknown tool {name!r}"
        check_value(tools[name], args, f"{name}(...)")


def check_output(artifact, tools, tokens):
    """The tokens spell a complete call of an existing tool with arguments
    that parse and match its schema; returns the calls."""
    text = decode(artifact, tokens).decode("utf-8")
    fmt = artifact.metadata["format"]
    calls = parse_react(text) if fmt == "react" else parse_hermes(text)
    check_calls(tools, calls)
    return calls


class GreedyTokenizer:
    """Longest-match encoder over an artifact's token bytes: a stand-in for
    the model's tokenizer where an engine re-tokenizes text (SGLang's
    jump-forward). Any tokenization spelling valid bytes is valid."""

    def __init__(self, artifact):
        self.artifact = artifact
        self.ids = {}
        for t in range(artifact.token_count):
            b = artifact.token_bytes(t)
            if b and b not in self.ids:
                self.ids[b] = t
        self.longest = max(len(b) for b in self.ids)

    def encode(self, text):
        data = text.encode("utf-8") if isinstance(text, str) else text
        out, i = [], 0
        while i < len(data):
            for n in range(min(self.longest, len(data) - i), 0, -1):
                t = self.ids.get(data[i : i + n])
                if t is not None:
                    out.append(t)
                    i += n
                    break
            else:
                raise ValueError(f"no token for byte {data[i]:#x}")
        return out

    def decode(self, ids):
        return decode(self.artifact, ids).decode("utf-8", "replace")


def walk(a, b, rng, budget, entry, max_steps):
    """One random walk that follows ``a``'s masks, requiring ``b``'s
    masks to be the same at every step; returns the tokens."""
    width = a.mask_width
    ma = a.matcher(entry=entry, max_tokens=budget)
    mb = b.matcher(entry=entry, max_tokens=budget)
    bm = tooldec.allocate_token_bitmask(2, width)
    tokens = []
    for step in range(max_steps):
        ma.fill_next_token_bitmask(bm, 0)
        mb.fill_next_token_bitmask(bm, 1)
        assert np.array_equal(bm[0], bm[1]), f"masks differ at step {step} after {tokens}"
        if ma.is_terminated():
            assert mb.is_terminated()
            break
        logits = random_logits(rng, 1, width, a.eos_token_ids)
        tooldec.apply_token_bitmask(logits, bm[:1])
        t = sample(rng, logits)[0]
        assert ma.accept_token(t), t
        assert mb.accept_token(t), t
        tokens.append(t)
    return tokens


def assert_same(a, b, walks=6, seed=0, max_steps=160, ignore=()):
    """``a`` and ``b`` are the same artifact: metadata (less the keys in
    ``ignore``), vocabulary, widths, and masks along random walks, half of
    them under a token budget, from every entry."""
    ma, mb = a.metadata, b.metadata
    for k in ignore:
        ma.pop(k, None)
        mb.pop(k, None)
    assert ma == mb
    assert (a.mask_width, a.token_count, a.eos_token_ids, a.vocab_fingerprint) == (
        b.mask_width,
        b.token_count,
        b.eos_token_ids,
        b.vocab_fingerprint,
    )
    assert (a.entries, a.tools, a.min_tokens, a.max_tokens) == (
        b.entries,
        b.tools,
        b.min_tokens,
        b.max_tokens,
    )
    rng = np.random.default_rng(seed)
    entries = a.entries
    for w in range(walks):
        budget = None if w % 2 == 0 else max(a.min_tokens + 24, 48)
        walk(a, b, rng, budget, entries[w % len(entries)], max_steps)


WEATHER_TOOLS = pathlib.Path(__file__).resolve().parent.parent.parent / "grammars" / "examples" / "weather.json"


def own_tools(max_tokens, format="hermes", entry=None):
    """weather.json's tools as a request's own, in a spec with a budget."""
    with open(WEATHER_TOOLS) as f:
        tools = json.load(f)
    spec = {"tooldec": {"tools": tools, "format": format}, "max_tokens": max_tokens}
    if entry is not None:
        spec["entry"] = entry
    return tools, json.dumps(spec)


def own_tools_engine(backend_tools):
    """Points an adapter's ``ToolsCompiler`` at a GPT-2 compiler of its
    own, the rest of each compile deferred: its grammars serve early until
    a call needs the artifact (or the test waits for it)."""
    backend_tools._compiler = tooldec.Compiler.gpt2()
    backend_tools.deferred = True


def serve_then_fail(fill, accept, mask_width, rng, pending, steps=5):
    """Serves ``steps`` tokens sampled under ``fill``'s masks (early, the
    rest of the compile deferred), then runs that compile, which must
    fail; returns its message."""
    import pytest

    bm = np.zeros((1, (mask_width + 31) // 32), dtype=np.int32)
    for _ in range(steps):
        fill(bm)
        logits = random_logits(rng, 1, mask_width, [])
        tooldec.apply_token_bitmask(logits, bm)
        accept(sample(rng, logits)[0])
    with pytest.raises(ValueError) as failed:
        pending.wait()
    return str(failed.value)


def complete_call(art, seed, entry=None, extra=40):
    """The tokens of one complete output (EOS last): at each step a
    seeded random token among those the mask allows, under a budget that
    forces the call to finish."""
    rng = np.random.default_rng(seed)
    m = art.matcher(entry=entry, max_tokens=art.min_tokens + extra)
    bm = tooldec.allocate_token_bitmask(1, art.mask_width)
    tokens = []
    while not m.is_terminated():
        m.fill_next_token_bitmask(bm)
        logits = random_logits(rng, 1, art.mask_width, art.eos_token_ids)
        tooldec.apply_token_bitmask(logits, bm)
        t = sample(rng, logits)[0]
        assert m.accept_token(t), t
        tokens.append(t)
    return tokens
