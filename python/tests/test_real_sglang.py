"""tooldec.sglang inside SGLang itself (the installed package, on CPU):
registered as SGLang registers a backend, admitted by SGLang's own
``GrammarManager`` (its cache, futures and abort path), masked through
``fill_vocab_mask_batched``/``move_vocab_mask``/``GrammarMask.apply`` on
SmolLM2's real logits, and verified by EAGLE's own ``traverse_tree``.

``python/test-engines.sh`` runs it in SGLang's environment; elsewhere it
skips (see ``real_engines``).
"""

import json
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import record
from helpers import check_output
from real_engines import EOS, VOCAB, WEATHER, model_dir, require_engine, smollm2

require_engine("sglang")

import tooldec.sglang as tsg  # noqa: E402
from sglang.srt.constrained import base_grammar_backend as bgb  # noqa: E402
from sglang.srt.constrained.grammar_manager import GrammarManager  # noqa: E402
from sglang.srt.runtime_context import get_parallel, publish  # noqa: E402
from sglang.srt.sampling.sampling_params import SamplingParams  # noqa: E402
from sglang.srt.server_args import ServerArgs  # noqa: E402

class Req:
    """The fields of SGLang's ``Req`` that the grammar path reads."""

    def __init__(self, rid, sampling_params, prompt):
        self.rid = rid
        self.sampling_params = sampling_params
        self.origin_input_ids = prompt
        self.require_reasoning = False
        self.grammar = None
        self.grammar_key = None
        self.grammar_wait_ct = 0
        self.output_ids = []
        self.finished_reason = None

    def finished(self):
        return self.finished_reason is not None

    def set_finish_with_abort(self, message):
        self.finished_reason = "abort: " + message


@pytest.fixture(scope="module")
def art(smollm2_weather):
    return smollm2_weather


@pytest.fixture(scope="module")
def manager(art, tmp_path_factory):
    """SGLang's GrammarManager with the tooldec backend, as the scheduler
    builds it (``--grammar-backend tooldec``)."""
    tsg.register(artifacts={"weather": art})
    d = model_dir(tmp_path_factory.mktemp("model"))
    args = ServerArgs(model_path=str(d), grammar_backend="tooldec", device="cpu")
    publish(args, role="scheduler")
    # One scheduler process, no pipeline (what building the groups states).
    get_parallel().override_permanently(pp_rank=0)
    from transformers import AutoTokenizer

    scheduler = SimpleNamespace(
        server_args=args,
        tokenizer=AutoTokenizer.from_pretrained(str(d)),
        model_config=SimpleNamespace(vocab_size=VOCAB, hf_eos_token_id={EOS}, think_end_ids=None),
        dp_tp_cpu_group=None,
        dp_tp_group=SimpleNamespace(world_size=1, first_rank=0, is_first_rank=True),
        pp_group=None,
    )
    gm = GrammarManager(scheduler)
    assert isinstance(gm.grammar_backend, tsg.TooldecGrammarBackend)
    return gm


def admit(gm, reqs):
    """The scheduler's admission: process_req_with_grammar, then poll
    get_ready_grammar_requests until no grammar is pending."""
    for r in reqs:
        gm.process_req_with_grammar(r)
    for _ in range(200):
        if not gm.grammar_queue:
            break
        gm.get_ready_grammar_requests()
    assert not gm.grammar_queue


def decode(gm, reqs, model, sample_seed=None):
    """SGLang's decode loop on SmolLM2: the batch's vocab mask from the
    first grammar, filled for the unfinished rows, applied to the logits;
    then each sampled token is accepted (a ValueError aborts)."""
    torch = model.torch
    gen = torch.Generator().manual_seed(sample_seed) if sample_seed is not None else None
    running = [r for r in reqs if not r.finished()]
    steps = 0
    while running:
        steps += 1
        logits = model.logits([r.origin_input_ids + r.output_ids for r in running])
        first = next(r.grammar for r in running if r.grammar is not None)
        mask = first.allocate_vocab_mask(vocab_size=VOCAB, batch_size=len(running), device="cpu")
        rows = [
            bgb.GrammarRow(row=i, grammar=r.grammar)
            for i, r in enumerate(running)
            if r.grammar is not None and not r.grammar.finished and not r.grammar.is_terminated()
        ]
        first.fill_vocab_mask_batched(rows, mask)
        mask = first.move_vocab_mask(mask, "cpu")
        bgb.GrammarMask(first, mask).apply(logits)
        if gen is None:
            picked = logits.argmax(dim=-1).tolist()
        else:
            picked = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=gen)[:, 0].tolist()
        for r, t in zip(running, picked):
            r.output_ids.append(t)
            if t == EOS:
                r.finished_reason = "stop"
            elif len(r.output_ids) >= r.sampling_params.max_new_tokens:
                r.finished_reason = "length"
            try:
                r.grammar.accept_token(t)
            except ValueError as e:
                r.finished_reason = f"abort: {e}"
            r.grammar.finished = r.finished()
        running = [r for r in running if not r.finished()]
    return steps


def test_requests_complete_within_their_own_max_new_tokens(manager, art):
    """The budget comes from each request's max_new_tokens (the spec names
    only the artifact): greedy and sampled requests end with a complete,
    valid call even when the limit is a few tokens above the shortest."""
    model = smollm2()
    with open(WEATHER) as f:
        tools = {t["function"]["name"]: t["function"]["parameters"] for t in json.load(f)}
    with open(WEATHER) as f:
        prompt = model.prompt("What is the weather in Paris for the next 3 days?", json.load(f))
    limits = [48, 32, art.min_tokens + 2]
    reqs = [
        Req(f"r{n}", SamplingParams(max_new_tokens=n, ebnf="tooldec:weather"), prompt) for n in limits
    ]
    admit(manager, reqs)
    for r, n in zip(reqs, limits):
        spec = json.loads(r.sampling_params.ebnf)
        assert spec == {"tooldec": "weather", "max_tokens": n}, spec
        assert isinstance(r.grammar, tsg.TooldecGrammar) and r.grammar.max_tokens == n
    steps = decode(manager, reqs, model)
    sampled = [
        Req(f"s{n}", SamplingParams(max_new_tokens=n, structural_tag='{"tooldec": "weather"}'), prompt)
        for n in (40, art.min_tokens + 4)
    ]
    admit(manager, sampled)
    steps += decode(manager, sampled, model, sample_seed=7)
    for r in reqs + sampled:
        # Ended by EOS, or cut at the limit with the call complete.
        assert r.finished_reason in ("stop", "length"), (r.rid, r.finished_reason)
        assert len(r.output_ids) <= r.sampling_params.max_new_tokens
        assert r.grammar.matcher.is_accepting() or r.grammar.is_terminated(), r.rid
        check_output(art, tools, [t for t in r.output_ids if t != EOS])
    record(
        f"sglang {__import__('sglang').__version__} (real GrammarManager, SmolLM2 logits): "
        f"{len(reqs) + len(sampled)} requests, max_new_tokens "
        f"{[r.sampling_params.max_new_tokens for r in reqs + sampled]}, {steps} decode "
        f"steps, every output a complete valid call"
    )


def test_an_invalid_request_is_refused_not_the_scheduler(manager):
    """A spec naming no artifact, or malformed, aborts that request with
    SGLang's InvalidGrammarObject message; the next request is served."""
    prompt = [1, 2, 3]
    bad = [
        Req("nope", SamplingParams(max_new_tokens=16, ebnf="tooldec:nope"), prompt),
        Req("malformed", SamplingParams(max_new_tokens=16, ebnf='{"tooldec": 5}'), prompt),
        Req("short", SamplingParams(max_new_tokens=3, ebnf="tooldec:weather"), prompt),
    ]
    good = Req("good", SamplingParams(max_new_tokens=32, ebnf="tooldec:weather"), prompt)
    admit(manager, bad + [good])
    for r in bad:
        assert r.finished_reason and r.finished_reason.startswith("abort"), (r.rid, r.finished_reason)
    assert "no artifact named 'nope'" in bad[0].finished_reason
    assert "budget" in bad[2].finished_reason or "tokens" in bad[2].finished_reason, bad[2].finished_reason
    assert isinstance(good.grammar, tsg.TooldecGrammar) and not good.finished()
    # The cached invalid grammar aborts a repeat at once (the cache path).
    again = Req("nope2", SamplingParams(max_new_tokens=16, ebnf="tooldec:nope"), prompt)
    manager.process_req_with_grammar(again)
    assert again.finished_reason and "no artifact" in again.finished_reason


def test_eagle_tree_verification(manager, art):
    """SGLang's own traverse_tree over a draft tree: allowed nodes get the
    mask after their path, refused branches stay empty, and the grammar
    ends where it started."""
    import torch
    from sglang.srt.speculative.spec_utils import traverse_tree

    model = smollm2()
    tok = model.tokenizer
    r = Req("eagle", SamplingParams(max_new_tokens=64, ebnf="tooldec:weather"), [1])
    admit(manager, [r])
    g = r.grammar
    prefix = tok.encode('<tool_call>\n{"name": "get_', add_special_tokens=False)
    for t in prefix:
        g.accept_token(t)
    word = lambda w: tok.encode(w, add_special_tokens=False)[0]  # noqa: E731
    # 0 root; children of 0: 1 "weather", 2 "time", 3 "!!" (refused);
    # child of 1: 4 '",'.
    draft = [0, word("weather"), word("time"), word("!!"), word('",')]
    next_token = torch.tensor([1, 4, -1, -1, -1])
    next_sibling = torch.tensor([-1, 2, 3, -1, -1])
    before = g.matcher.state
    mask = g.allocate_vocab_mask(VOCAB, len(draft), "cpu")
    mask.zero_()
    traverse_tree(next_token, next_sibling, torch.tensor(draft), g, mask)
    assert g.matcher.state == before
    paths = {0: [], 1: [1], 2: [2], 3: [3], 4: [1, 4]}
    for node, path in paths.items():
        m = art.matcher()
        m.accept_tokens(prefix)
        if m.accept_tokens([draft[p] for p in path]) == len(path):
            ref = np.zeros((1, mask.shape[1]), dtype=np.int32)
            m.fill_next_token_bitmask(ref, 0)
            assert (mask[node].numpy() == ref[0]).all(), node
        else:
            assert not mask[node].numpy().any(), node
    assert mask[3].sum() == 0 and mask[1].any()


def test_a_chat_requests_own_tools(manager, monkeypatch):
    """The OpenAI-server path: with TOOLDEC_TOOL_FORMAT, SGLang's own
    FunctionCallParser turns a request's tools and tool_choice into a
    tooldec spec; the backend compiles it for the engine's tokenizer; the
    output on SmolLM2, within max_new_tokens, is read back by SGLang's own
    qwen25 (Hermes-style) detector as valid calls."""
    import jsonschema
    from sglang.srt.entrypoints.openai.protocol import Tool, ToolChoice
    from sglang.srt.function_call.function_call_parser import FunctionCallParser

    monkeypatch.setenv("TOOLDEC_TOOL_FORMAT", "hermes")
    with open(WEATHER) as f:
        spec_tools = json.load(f)
    tools = [Tool(**t) for t in spec_tools]
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in spec_tools}
    model = smollm2()
    prompt = model.prompt("What time is it in Tokyo?", spec_tools)
    named = ToolChoice(type="function", function={"name": "get_time"})
    reqs = []
    for i, (choice, parallel, limit) in enumerate([("required", True, 56), (named, False, 36)]):
        kind, grammar = FunctionCallParser(tools, "qwen25").get_structure_constraint(
            choice, parallel_tool_calls=parallel
        )
        assert kind == "ebnf" and json.loads(grammar)["tooldec"]["format"] == "hermes"
        reqs.append(Req(f"chat{i}", SamplingParams(max_new_tokens=limit, ebnf=grammar), prompt))
    admit(manager, reqs)
    assert all(isinstance(r.grammar, tsg.TooldecGrammar) for r in reqs), [r.finished_reason for r in reqs]
    decode(manager, reqs, model)
    calls = 0
    for r in reqs:
        assert r.grammar.matcher.is_accepting() or r.grammar.is_terminated(), r.rid
        text = model.tokenizer.decode([t for t in r.output_ids if t != EOS])
        _, parsed = FunctionCallParser(tools, "qwen25").parse_non_stream(text)
        assert parsed, text
        for c in parsed:
            jsonschema.validate(json.loads(c.parameters), schemas[c.name])
            calls += 1
    assert [c.name for c in FunctionCallParser(tools, "qwen25").parse_non_stream(
        model.tokenizer.decode([t for t in reqs[1].output_ids if t != EOS]))[1]] == ["get_time"]
    record(
        f"sglang: a chat request's own tools (FunctionCallParser, tool_choice required and "
        f"named): {calls} calls read back by SGLang's qwen25 detector, each valid"
    )
