"""tooldec.vllm inside vLLM itself (the installed package, on CPU): the
``vllm.general_plugins`` entry point as vLLM loads it, requests validated
by ``SamplingParams.verify`` (what the API server runs), admitted and
masked by vLLM's own ``StructuredOutputManager`` (``grammar_init``,
``grammar_bitmask``, ``accept_tokens``), the mask applied with the kernel
vLLM applies it with, on SmolLM2's real logits.

``python/test-engines.sh`` runs it in vLLM's environment; elsewhere it
skips (see ``real_engines``).
"""

import json
import time

import pytest

from conftest import record
from helpers import check_output
from real_engines import EOS, VOCAB, WEATHER, model_dir, require_engine, smollm2

require_engine("vllm")

import tooldec.vllm as tvl  # noqa: E402
import torch  # noqa: E402
from vllm.config import DeviceConfig, ModelConfig, StructuredOutputsConfig, VllmConfig  # noqa: E402
from vllm.plugins import load_general_plugins  # noqa: E402
from vllm.sampling_params import SamplingParams, StructuredOutputsParams  # noqa: E402
from vllm.v1.request import Request  # noqa: E402
from vllm.v1.structured_output import StructuredOutputManager  # noqa: E402

@pytest.fixture(scope="module")
def art(smollm2_weather):
    return smollm2_weather


@pytest.fixture(scope="module")
def engine(art, tmp_path_factory):
    """vLLM's configuration for SmolLM2 on the CPU, its tokenizer, and the
    plugin loaded through vLLM's own entry-point loader."""
    from vllm.tokenizers import cached_tokenizer_from_config

    load_general_plugins()
    from vllm.sampling_params import SamplingParams as SP

    assert getattr(SP._validate_structured_outputs, "_tooldec", False), "plugin not loaded"
    tvl.configure({"weather": art})
    d = str(model_dir(tmp_path_factory.mktemp("model")))
    mc = ModelConfig(model=d, tokenizer=d, max_model_len=2048, dtype="float32")
    vc = VllmConfig(
        model_config=mc,
        device_config=DeviceConfig(device="cpu"),
        structured_outputs_config=StructuredOutputsConfig(backend="auto"),
    )
    tok = cached_tokenizer_from_config(model_config=mc)
    return mc, vc, tok


def request(engine, rid, prompt, max_tokens, **structured):
    mc, vc, tok = engine
    sp = SamplingParams(
        max_tokens=max_tokens,
        stop_token_ids=[EOS],
        structured_outputs=StructuredOutputsParams(**structured),
    )
    sp.verify(mc, None, vc.structured_outputs_config, tok)
    return Request(request_id=rid, prompt_token_ids=prompt, sampling_params=sp, pooling_params=None)


def admit(mgr, reqs):
    for r in reqs:
        mgr.grammar_init(r)
    deadline = time.time() + 60
    while not all(r.structured_output_request.is_grammar_ready for r in reqs):
        assert time.time() < deadline, "grammars not ready"
        time.sleep(0.01)


def greedy(mgr, model, r):
    """Greedy decoding of one admitted request, one token a step: vLLM's
    bitmask, applied with the kernel vLLM applies it with, on SmolLM2's
    logits, until EOS or the request's max_tokens."""
    import xgrammar

    out = []
    while not out or (out[-1] != EOS and len(out) < r.max_tokens):
        bitmask = mgr.grammar_bitmask({r.request_id: r}, [r.request_id], {})
        logits = model.logits([r.prompt_token_ids + out])
        xgrammar.apply_token_bitmask_inplace(logits, torch.from_numpy(bitmask))
        out.append(int(logits.argmax(dim=-1)[0]))
        assert mgr.accept_tokens(r, [out[-1]])
    return out


def speculative(engine, k):
    """vLLM's configuration with n-gram speculative decoding of ``k`` draft
    tokens (no draft model: it runs on the CPU)."""
    from vllm.config import ParallelConfig, SpeculativeConfig

    mc, vc, tok = engine
    sc = SpeculativeConfig(
        method="ngram",
        num_speculative_tokens=k,
        prompt_lookup_max=4,
        prompt_lookup_min=1,
        target_model_config=mc,
        target_parallel_config=ParallelConfig(),
    )
    return VllmConfig(
        model_config=mc,
        device_config=DeviceConfig(device="cpu"),
        structured_outputs_config=vc.structured_outputs_config,
        speculative_config=sc,
    )


def test_requests_complete_within_their_own_max_tokens(engine, art):
    """The spec names only the artifact; each request's max_tokens reaches
    the grammar, and greedy decoding on SmolLM2 ends every request with a
    complete, valid call, down to a limit two tokens above the shortest."""
    import xgrammar

    mgr = StructuredOutputManager(engine[1])
    model = smollm2()
    with open(WEATHER) as f:
        spec = json.load(f)
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in spec}
    prompt = model.prompt("What is the weather in Lyon tomorrow?", spec)
    limits = [48, 32, art.min_tokens + 2]
    reqs = [
        request(engine, f"r{i}", prompt, n, grammar="tooldec:weather")
        if i % 2 == 0
        else request(engine, f"r{i}", prompt, n, structural_tag='{"tooldec": "weather"}')
        for i, n in enumerate(limits)
    ]
    admit(mgr, reqs)
    for r, n in zip(reqs, limits):
        g = r.structured_output_request.grammar
        assert isinstance(g, tvl.TooldecGrammar) and g.matcher.tokens_left == n, r.request_id
    outputs = {r.request_id: [] for r in reqs}
    running = list(reqs)
    steps = 0
    while running:
        steps += 1
        ids = [r.request_id for r in running]
        bitmask = mgr.grammar_bitmask({r.request_id: r for r in running}, ids, {})
        logits = model.logits([r.prompt_token_ids + outputs[r.request_id] for r in running])
        xgrammar.apply_token_bitmask_inplace(logits, torch.from_numpy(bitmask))
        for r, t in zip(running, logits.argmax(dim=-1).tolist()):
            outputs[r.request_id].append(t)
            assert mgr.accept_tokens(r, [t])
        running = [
            r
            for r in running
            if outputs[r.request_id][-1] != EOS and len(outputs[r.request_id]) < r.max_tokens
        ]
    for r in reqs:
        out = outputs[r.request_id]
        g = r.structured_output_request.grammar
        assert len(out) <= r.max_tokens and (g.is_terminated() or g.matcher.is_accepting())
        check_output(art, tools, [t for t in out if t != EOS])
    mgr.clear_backend()
    import vllm

    record(
        f"vllm {vllm.__version__} (plugin, real StructuredOutputManager, SmolLM2 logits): "
        f"{len(reqs)} requests, max_tokens {limits}, {steps} steps, every output a complete valid call"
    )


def test_other_stop_tokens_are_masked_until_the_call_ends(engine, art):
    """A request's own stop token (not the artifact's EOS) is masked while
    the call is incomplete, as vLLM's xgrammar backend does."""
    mc, vc, tok = engine
    stop = tok.encode("Hello", add_special_tokens=False)[0]
    backend = tvl.TooldecBackend(vc, tokenizer=tok, vocab_size=VOCAB)
    g = backend.compile_grammar(None, "tooldec:weather", stop_token_ids={stop, EOS})
    plain = backend.compile_grammar(None, "tooldec:weather")
    # Inside the city's string, where "Hello" is text the call may hold.
    prefix = tok.encode('<tool_call>\n{"name": "get_weather", "arguments": {"city": "', add_special_tokens=False)
    assert g.accept_tokens("r", prefix) and plain.accept_tokens("r", prefix)
    bitmask = backend.allocate_token_bitmask(2)
    g.fill_bitmask(bitmask, 0)
    plain.fill_bitmask(bitmask, 1)
    bit = lambda row: (int(bitmask[row, stop >> 5]) >> (stop & 31)) & 1  # noqa: E731
    assert bit(1) == 1 and bit(0) == 0
    # Only that bit differs.
    diff = (bitmask[0] ^ bitmask[1]).nonzero().flatten().tolist()
    assert diff == [stop >> 5]


def test_invalid_requests_are_refused_cleanly(engine):
    """A malformed spec is refused at validation (the API server's 400); a
    spec naming no artifact, or a limit below the shortest call, fails
    that request's grammar alone while the others are served."""
    mgr = StructuredOutputManager(engine[1])
    from vllm.exceptions import VLLMValidationError

    with pytest.raises(VLLMValidationError, match="artifact name must be a string"):
        request(engine, "bad", [1, 2], 16, grammar='{"tooldec": 5}')
    nope = request(engine, "nope", [1, 2], 16, grammar="tooldec:nope")
    short = request(engine, "short", [1, 2], 3, grammar="tooldec:weather")
    good = request(engine, "good", [1, 2], 40, grammar="tooldec:weather")
    for r in (nope, short, good):
        mgr.grammar_init(r)
    for r, pattern in ((nope, "no artifact named 'nope'"), (short, "budget|tokens")):
        with pytest.raises(ValueError, match=pattern):
            r.structured_output_request._grammar.result(timeout=30)  # the compile's Future
    admit(mgr, [good])
    assert isinstance(good.structured_output_request.grammar, tvl.TooldecGrammar)
    # Other grammars keep vLLM's own backend.
    js = request(engine, "json", [1, 2], 16, json={"type": "object"})
    admit(mgr, [js])
    assert not isinstance(js.structured_output_request.grammar, tvl.TooldecGrammar)
    mgr.clear_backend()


def test_a_chat_requests_own_tools(engine, monkeypatch):
    """The OpenAI-server path: a chat request's tools, tool_choice and
    parallel_tool_calls, through vLLM's own hermes parser's adjust_request
    (where the plugin puts the tools in the model's format), compiled in
    the engine for its tokenizer, decoded on SmolLM2 within the request's
    max_tokens, and read back by vLLM's own hermes tool parser."""
    import jsonschema
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.parser.parser_manager import ParserManager
    from vllm.tool_parsers.abstract_tool_parser import ToolParserManager

    mc, vc, tok = engine
    monkeypatch.setenv("TOOLDEC_TOOL_FORMAT", "hermes")
    with open(WEATHER) as f:
        tools = json.load(f)
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    parser_cls = ParserManager.get_parser(tool_parser_name="hermes", enable_auto_tools=True)
    model = smollm2()
    mgr = StructuredOutputManager(vc)
    cases = [
        ("required", True, 64),
        ({"type": "function", "function": {"name": "get_time"}}, False, 40),
    ]
    calls = 0
    for choice, parallel, max_tokens in cases:
        messages = [{"role": "user", "content": "What is the weather in Lyon, and the time there?"}]
        req = ChatCompletionRequest(
            model="smollm2",
            messages=messages,
            tools=tools,
            tool_choice=choice,
            parallel_tool_calls=parallel,
            max_tokens=max_tokens,
        )
        req = parser_cls(tok, req.tools, model_config=mc).adjust_request(req)
        spec = json.loads(req.structured_outputs.structural_tag)
        assert spec["tooldec"]["format"] == "hermes" and len(spec["tooldec"]["tools"]) == len(tools)
        sp = SamplingParams(
            max_tokens=max_tokens, stop_token_ids=[EOS], structured_outputs=req.structured_outputs
        )
        sp.verify(mc, None, vc.structured_outputs_config, tok)
        prompt = model.prompt(messages[0]["content"], tools)
        r = Request(request_id=f"chat{calls}", prompt_token_ids=prompt, sampling_params=sp, pooling_params=None)
        admit(mgr, [r])
        out = greedy(mgr, model, r)
        text = tok.decode([t for t in out if t != EOS])
        parsed = ToolParserManager.get_tool_parser("hermes")(tok, req.tools).extract_tool_calls(text, req)
        assert parsed.tools_called, text
        if not parallel:
            assert len(parsed.tool_calls) == 1 and parsed.tool_calls[0].function.name == "get_time"
        for c in parsed.tool_calls:
            jsonschema.validate(json.loads(c.function.arguments), schemas[c.function.name])
            calls += 1
    mgr.clear_backend()
    record(
        f"vllm: a chat request's own tools (hermes parser, tool_choice required and named): "
        f"{calls} calls read back by vLLM's hermes tool parser, each valid"
    )


def test_speculative_drafts_are_validated_masked_and_rolled_back(engine, art):
    """vLLM's speculative-decoding path with 3 draft tokens a step: the
    scheduler's ``validate_tokens`` cuts a draft at the first token the
    grammar refuses; ``grammar_bitmask`` fills a row per draft position and
    the bonus row (accepting the drafts on the grammar, then rolling them
    back); SmolLM2 verifies the drafts greedily on the masked rows from one
    forward pass; ``accept_tokens`` commits the accepted drafts and the
    bonus token. Greedy verification is lossless, so the output must be
    plain greedy decoding's, token for token, and a complete valid call."""
    import xgrammar
    from vllm.v1.structured_output.utils import strip_speculative_padding

    k = 3
    model = smollm2()
    with open(WEATHER) as f:
        spec = json.load(f)
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in spec}
    prompt = model.prompt("What is the weather in Lyon tomorrow?", spec)
    plain = StructuredOutputManager(engine[1])
    ref = request(engine, "ref", prompt, 48, grammar="tooldec:weather")
    admit(plain, [ref])
    reference = greedy(plain, model, ref)
    plain.clear_backend()

    mgr = StructuredOutputManager(speculative(engine, k))
    r = request(engine, "spec", prompt, 48, grammar="tooldec:weather")
    admit(mgr, [r])
    g = r.structured_output_request.grammar
    assert isinstance(g, tvl.TooldecGrammar) and mgr._tooldec_backend.max_rollback == k + 1
    out: list = []
    cut = refused = accepted = steps = 0
    while not out or (out[-1] != EOS and len(out) < r.max_tokens):
        pos = len(out)
        room = max(0, min(k, r.max_tokens - pos - 1))
        ahead = reference[pos : pos + room]
        # The drafter: the reference's next tokens (an n-gram hit), the same
        # with EOS in the middle of the call (the grammar refuses it), a
        # token the grammar allows but greedy decoding does not pick (the
        # target refuses it), or one token and the -1 padding of rejected
        # draft positions.
        kind = steps % 4
        if kind == 1 and len(ahead) >= 2 and ahead[1] != EOS:
            draft = ahead[:1] + [EOS] + ahead[2:]
        elif kind == 2 and room:
            row = mgr._tooldec_backend.allocate_token_bitmask(1)
            g.fill_bitmask(row, 0)
            words = row[0].tolist()
            allowed = [t for t in range(VOCAB) if (words[t >> 5] >> (t & 31)) & 1]
            draft = [next((t for t in allowed if t != ahead[0]), ahead[0])]
        elif kind == 3 and room:
            draft = ahead[:1] + [-1] * (room - 1)
        else:
            draft = ahead
        valid = mgr.validate_tokens(r, draft)
        cut += len(strip_speculative_padding(draft)) - len(valid)
        scheduled = valid + [-1] * (len(draft) - len(valid)) if kind == 3 else valid
        bitmask = mgr.grammar_bitmask({r.request_id: r}, [r.request_id], {r.request_id: scheduled})
        assert bitmask.shape[0] == k + 1
        rows = len(valid) + 1
        logits = model.logits_tail(prompt + out + valid, rows)
        xgrammar.apply_token_bitmask_inplace(logits, torch.from_numpy(bitmask[:rows]))
        target = logits.argmax(dim=-1).tolist()
        n = 0
        while n < len(valid) and valid[n] == target[n]:
            n += 1
        refused += len(valid) - n
        accepted += n
        new = valid[:n] + [target[n]]
        if EOS in new:
            new = new[: new.index(EOS) + 1]
        assert mgr.accept_tokens(r, new)
        out += new
        steps += 1
    assert out == reference
    check_output(art, tools, [t for t in out if t != EOS])
    assert cut > 0 and refused > 0 and accepted > 0, (cut, refused, accepted)
    mgr.clear_backend()
    record(
        f"vllm: speculative decoding (3 drafts a step, real validate_tokens/grammar_bitmask/"
        f"accept_tokens): {len(out)} tokens in {steps} target passes, {accepted} drafts accepted, "
        f"{cut} cut by the grammar, {refused} refused by the target; output equal to greedy decoding"
    )
