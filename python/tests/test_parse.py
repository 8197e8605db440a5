"""Reading tool calls back: Artifact.parse turns an output the artifact
accepts (text or token ids) into OpenAI-style calls."""

import numpy as np
import pytest

import tooldec
from helpers import allowed_ids, check_output, random_logits, sample


def walk(artifact, rng, entry=None):
    """One masked random walk (EOS included) from `entry`."""
    m = artifact.matcher(entry=entry, max_tokens=96)
    mask = tooldec.allocate_token_bitmask(1, artifact.mask_width)
    tokens = []
    while not m.is_terminated():
        m.fill_next_token_bitmask(mask, 0)
        logits = random_logits(rng, 1, artifact.mask_width, artifact.eos_token_ids)
        tooldec.apply_token_bitmask(logits, mask)
        t = sample(rng, logits)[0]
        assert m.accept_token(t)
        tokens.append(t)
    return tokens


def test_parse_text_and_entries(hermes):
    text = (
        'Let me check.<tool_call>\n{"name": "get_weather", "arguments": '
        '{"city": "Paris \\"15e\\"", "days": 3}}\n</tool_call>'
    )
    want = [{"name": "get_weather", "arguments": {"city": 'Paris "15e"', "days": 3}}]
    assert hermes.parse(text) == want
    assert hermes.parse(text, entry="start") == want
    call = text[len("Let me check.") :]
    assert hermes.parse(call, entry="call") == want
    assert hermes.parse(call + "\n" + call, entry="calls") == want + want


def test_parse_walks_match_the_independent_parser(hermes, tools):
    rng = np.random.default_rng(7)
    for _ in range(20):
        tokens = walk(hermes, rng)
        calls = hermes.parse(tokens)
        assert [(c["name"], c["arguments"]) for c in calls] == check_output(
            hermes, tools, tokens
        )
        # numpy ids read the same.
        assert hermes.parse(np.array(tokens, dtype=np.int64)) == calls


def test_parse_refuses_what_the_artifact_refuses(hermes):
    with pytest.raises(ValueError, match=r"rejected at byte \d+"):
        hermes.parse('<tool_call>\n{"name": "get_weather", "arguments": {"town": "x"}}')
    with pytest.raises(ValueError, match="ends before the call is complete"):
        hermes.parse('<tool_call>\n{"name": "get_weather"')
    with pytest.raises(ValueError, match="no entry 'nope'|no entry \"nope\""):
        hermes.parse("x", entry="nope")


def test_parse_special_tokens_by_id_and_name(qwen, tools):
    """Qwen2.5's <tool_call> is a special token: read from its id, and from
    its name in a decoded text."""
    rng = np.random.default_rng(11)
    meta = qwen.metadata
    specials = {int(k): v for k, v in meta["vocab"]["specials"].items()}
    for _ in range(5):
        tokens = walk(qwen, rng)
        calls = qwen.parse(tokens)
        assert calls and all(c["name"] in tools for c in calls)
        text = b"".join(
            specials[t].encode() if t in specials else qwen.token_bytes(t)
            for t in tokens
            if not qwen.is_eos(t)
        ).decode("utf-8")
        assert qwen.parse(text) == calls
