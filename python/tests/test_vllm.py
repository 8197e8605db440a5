"""tooldec.vllm, driven as vLLM's v1 engine drives a structured-output
backend, with speculative decoding.

``engine_step`` follows vLLM (vllm-project/vllm, vllm/v1/): the scheduler
trims each request's draft with ``grammar.validate_tokens``
(core/sched/scheduler.py ``update_draft_token_ids``);
``StructuredOutputManager.grammar_bitmask`` (structured_output/__init__.py
@8ae7ba4d4db4) fills one bitmask row per draft position plus one for the
bonus token, advancing the grammar through the draft with
``accept_tokens`` and rolling it back afterwards (a full mask for
terminated grammars); the model samples every position under its row and
keeps the drafts up to the first disagreement plus one token; the
scheduler's ``update_from_output`` then calls ``accept_tokens`` with the
new tokens.
"""

import json
from types import SimpleNamespace

import numpy as np
import pytest

import tooldec
import tooldec.vllm as tv
from conftest import record
from helpers import GreedyTokenizer, allowed_ids, assert_same, check_output, decode, random_logits, sample
from helpers import complete_call, own_tools, own_tools_engine, serve_then_fail
from vllm.v1.structured_output.backend_types import (
    StructuredOutputBackend,
    StructuredOutputGrammar,
    StructuredOutputOptions,
)

MODEL_VOCAB = 50304
EOS = 50256
K = 3  # num_speculative_tokens


def vllm_config(num_spec=K):
    spec = SimpleNamespace(num_speculative_tokens=num_spec) if num_spec else None
    return SimpleNamespace(
        speculative_config=spec,
        model_config=SimpleNamespace(get_vocab_size=lambda: MODEL_VOCAB),
        scheduler_config=SimpleNamespace(max_num_seqs=8),
    )


@pytest.fixture
def backend(weather_path, hermes):
    tv.configure({"weather": str(weather_path), "hermes": hermes})
    b = tv.TooldecBackend(vllm_config(), tokenizer=None, vocab_size=MODEL_VOCAB)
    assert isinstance(b, StructuredOutputBackend)
    assert b.max_rollback == K + 1
    yield b
    b.destroy()
    tv.configure(None)


class Request:
    def __init__(self, rid, grammar, max_tokens, art, target=None):
        self.request_id, self.grammar, self.max_tokens = rid, grammar, max_tokens
        self.artifact, self.target = art, target
        self.output = []
        self.spec_token_ids = []
        self.finished = False


class Engine:
    """The parts of vLLM's scheduler, structured-output manager and model
    runner that talk to the grammar."""

    def __init__(self, backend, rng, tok):
        self.backend, self.rng, self.tok = backend, rng, tok
        self.bitmask = None
        self.stats = dict(steps=0, drafted=0, draft_valid=0, draft_kept=0, manager_rollbacks=0)

    def target_token(self, req, position):
        """The token a model that knows the answer would write next."""
        if req.target is None:
            return None
        done = self.tok.decode(req.output + req.spec_token_ids[:position])
        if not req.target.startswith(done):
            return None
        rest = req.target[len(done) :]
        return self.tok.encode(rest)[0] if rest else EOS

    def propose_drafts(self, req):
        """A draft model: K guesses, usually the target's tokens or tokens
        the grammar allows, sometimes garbage; the scheduler keeps the
        prefix the grammar accepts (update_draft_token_ids)."""
        if req.grammar.is_terminated():
            req.spec_token_ids = []
            return
        guess = req.grammar.matcher.copy()
        draft = []
        for j in range(K):
            t = None
            if req.target is not None:
                req.spec_token_ids = draft
                t = self.target_token(req, j)
            if t is None or self.rng.random() < 0.15:
                row = np.zeros((1, req.artifact.mask_words), dtype=np.int32)
                guess.fill_next_token_bitmask(row, 0)
                logits = random_logits(self.rng, 1, req.artifact.mask_width, [EOS])
                tooldec.apply_token_bitmask(logits, row)
                t = sample(self.rng, logits)[0]
            if self.rng.random() < 0.1:
                t = int(self.rng.integers(0, 50257))  # a wild guess
            draft.append(t)
            guess.accept_token(t)
        valid = req.grammar.validate_tokens(draft)
        assert valid == draft[: len(valid)]
        self.stats["drafted"] += len(draft)
        self.stats["draft_valid"] += len(valid)
        req.spec_token_ids = valid

    def grammar_bitmask(self, reqs):
        """StructuredOutputManager.grammar_bitmask with speculative tokens."""
        if self.bitmask is None:
            self.bitmask = self.backend.allocate_token_bitmask(8 * (1 + K))
        index = 0
        for req in reqs:
            g = req.grammar
            before = (g.matcher.state, g.num_processed_tokens, g.is_terminated())
            advanced = 0
            apply = True
            for token in list(req.spec_token_ids) + [-1]:
                if apply and not g.is_terminated():
                    g.fill_bitmask(self.bitmask, index)
                    row = tooldec.bitmask_to_bool(np.asarray(self.bitmask[index]), MODEL_VOCAB)
                    assert row.any() and not row[req.artifact.token_count :].any()
                else:
                    self.bitmask[index] = -1  # full mask
                if token == -1:
                    apply = False
                if apply and not g.is_terminated():
                    assert g.accept_tokens(req.request_id, [token])
                    advanced += 1
                index += 1
            if advanced:
                g.rollback(advanced)
                self.stats["manager_rollbacks"] += 1
            assert (g.matcher.state, g.num_processed_tokens, g.is_terminated()) == before
        return np.asarray(self.bitmask[:index])

    def step(self, reqs):
        self.stats["steps"] += 1
        bitmask = self.grammar_bitmask(reqs)
        row = 0
        for req in reqs:
            spec = req.spec_token_ids
            new = []
            for j in range(len(spec) + 1):
                logits = random_logits(self.rng, 1, MODEL_VOCAB, [EOS])
                t = self.target_token(req, j) if j <= len(spec) else None
                if t is not None:
                    logits[0, t] += 20.0
                elif j < len(spec) and self.rng.random() < 0.7:
                    logits[0, spec[j]] += 20.0  # the model agrees with the draft
                tooldec.apply_token_bitmask(logits, bitmask[row + j])
                t = sample(self.rng, logits)[0]
                new.append(t)
                if j == len(spec) or t != spec[j]:
                    break
            self.stats["draft_kept"] += len(new) - 1
            row += len(spec) + 1
            if EOS in new:
                new = new[: new.index(EOS) + 1]  # the request stops at EOS
            # Scheduler.update_from_output
            assert req.grammar.accept_tokens(req.request_id, new)
            req.output.extend(new)
            req.finished = EOS in new or len(req.output) >= req.max_tokens + 1
            req.spec_token_ids = []
        for req in reqs:
            if not req.finished:
                self.propose_drafts(req)


def test_engine_loop_with_speculative_decoding(backend, weather, hermes, tools):
    rng = np.random.default_rng(41)
    tok = GreedyTokenizer(weather)
    G, S = StructuredOutputOptions.GRAMMAR, StructuredOutputOptions.STRUCTURAL_TAG
    specs = [
        (S, {"tooldec": "weather", "max_tokens": 48}, weather, 48,
         'Thought: Paris\nAction: get_weather\nAction Input: {"city": "Paris", "unit": "celsius"}'),
        (S, {"tooldec": "weather", "entry": "parallel", "max_tokens": 56}, weather, 56, None),
        (G, "tooldec:hermes/calls", hermes, 96, None),
        (G, "tooldec:hermes/call", hermes, 96,
         '<tool_call>\n{"name": "search_flights", "arguments": {"from": "NCE", "to": "OSL"}}\n</tool_call>'),
        (S, {"tooldec": "weather", "max_tokens": 30}, weather, 30, None),
    ]
    reqs = []
    for i, (kind, spec, art, budget, target) in enumerate(specs):
        text = spec if isinstance(spec, str) else json.dumps(spec)
        g = backend.compile_grammar(kind, text)
        assert isinstance(g, StructuredOutputGrammar) and g.matcher.max_rollback == K + 1
        reqs.append(Request(f"req-{i}", g, budget, art, target))
    engine = Engine(backend, rng, tok)
    running = list(reqs)
    while running:
        engine.step(running)
        running = [r for r in running if not r.finished]
        assert engine.stats["steps"] < 500
    for req in reqs:
        assert req.grammar.is_terminated() and req.output[-1] == EOS
        assert req.grammar.num_processed_tokens == len(req.output)
        assert len(req.output) - 1 <= req.max_tokens
        check_output(req.artifact, tools, req.output)
        if req.target is not None:
            assert decode(req.artifact, req.output).decode() == req.target
    s = engine.stats
    assert s["draft_kept"] > 0 and s["draft_valid"] < s["drafted"]
    record(
        f"vllm: engine-like loop, {len(reqs)} requests, num_speculative_tokens={K}, "
        f"{s['steps']} steps, {s['drafted']} draft tokens ({s['draft_valid']} valid, "
        f"{s['draft_kept']} kept by the model), {s['manager_rollbacks']} bitmask rollbacks, "
        f"all valid calls"
    )


def test_grammar_semantics(backend, weather):
    tok = GreedyTokenizer(weather)
    g = backend.compile_grammar(StructuredOutputOptions.GRAMMAR, "tooldec:weather")
    call = tok.encode('Thought: t\nAction: get_time\nAction Input: {"timezone": "UTC"}')
    assert g.validate_tokens(call[:3] + [-1, 5]) == call[:3]
    assert g.validate_tokens([0]) == []  # "!" cannot start
    assert g.num_processed_tokens == 0
    assert g.accept_tokens("r", call)
    assert g.num_processed_tokens == len(call)
    assert g.validate_tokens([EOS, EOS]) == [EOS]  # nothing follows an EOS
    # EOS then drafts past it: accepted up to EOS, the rest ignored.
    assert g.accept_tokens("r", [EOS, 11, 12]) and g.is_terminated()
    assert g.num_processed_tokens == len(call) + 1
    assert g.validate_tokens([EOS]) == [] and g.accept_tokens("r", [13])
    g.rollback(0)
    g.rollback(-1)
    assert g.is_terminated()
    g.rollback(1)  # undo the EOS
    assert not g.is_terminated() and g.num_processed_tokens == len(call)
    with pytest.raises(ValueError, match="max_rollback=4"):
        g.rollback(K + 2)
    assert not g.accept_tokens("r", [0])  # refused (logged), state unchanged
    assert g.num_processed_tokens == len(call)
    g.reset()
    assert g.num_processed_tokens == 0 and g.matcher.state == weather.matcher().state
    assert g.find_jump_string() == "Thought: "
    bm = backend.allocate_token_bitmask(3)
    assert np.asarray(bm).shape == (3, (MODEL_VOCAB + 31) // 32) and (np.asarray(bm) == -1).all()
    g.fill_bitmask(bm, 2)
    row = tooldec.bitmask_to_bool(np.asarray(bm)[2], MODEL_VOCAB)
    assert row.sum() == 3 and not row[weather.mask_width :].any()  # "T", "Th", "Though"


def test_backend_configuration(weather_path, weather):
    class Fallback(StructuredOutputBackend):
        def compile_grammar(self, request_type, grammar_spec, **kwargs):
            return ("fallback", request_type, grammar_spec, kwargs)

        def allocate_token_bitmask(self, max_num_seqs):
            return None

        def destroy(self):
            self.destroyed = True

    tv.configure(str(weather_path), fallback=Fallback)
    try:
        b = tv.TooldecBackend(vllm_config(0), tokenizer=None, vocab_size=MODEL_VOCAB)
        assert b.max_rollback == 1  # no speculation: the bonus token only
        j = StructuredOutputOptions.JSON
        assert b.compile_grammar(j, '{"type": "object"}', stop_token_ids={EOS})[0] == "fallback"
        g = b.compile_grammar(StructuredOutputOptions.STRUCTURAL_TAG, '{"tooldec": ""}')
        assert isinstance(g, tv.TooldecGrammar)
        with pytest.raises(ValueError, match="no artifact named 'nope'"):
            b.compile_grammar(StructuredOutputOptions.GRAMMAR, "tooldec:nope")
        fb = b.fallback
        b.destroy()
        assert fb.destroyed
        tv.configure(str(weather_path))
        b = tv.TooldecBackend(vllm_config(), tokenizer=None, vocab_size=MODEL_VOCAB)
        with pytest.raises(ValueError, match="no fallback"):
            b.compile_grammar(StructuredOutputOptions.JSON, '{"type": "object"}')
        with pytest.raises(ValueError, match="logits width 50000 is smaller"):
            tv.TooldecBackend(vllm_config(), tokenizer=None, vocab_size=50000)
        manager = SimpleNamespace(vllm_config=vllm_config(), tokenizer=None, backend=None)
        tv.install(manager)
        assert isinstance(manager.backend, tv.TooldecBackend)
        assert manager.backend.vocab_size == MODEL_VOCAB
    finally:
        tv.configure(None)


def test_artifacts_from_environment(weather_path, monkeypatch):
    monkeypatch.setenv("TOOLDEC_ARTIFACTS", f"w={weather_path}")
    b = tv.TooldecBackend(vllm_config(), tokenizer=None, vocab_size=MODEL_VOCAB)
    assert sorted(b.artifacts) == ["w"]
    monkeypatch.setenv("TOOLDEC_ARTIFACTS", str(weather_path))
    b = tv.TooldecBackend(vllm_config(), tokenizer=None, vocab_size=MODEL_VOCAB)
    assert sorted(b.artifacts) == ["weather-gpt2"]
    monkeypatch.delenv("TOOLDEC_ARTIFACTS")
    with pytest.raises(ValueError, match="TOOLDEC_ARTIFACTS"):
        tv.TooldecBackend(vllm_config(), tokenizer=None, vocab_size=MODEL_VOCAB)


def test_a_requests_own_tools_are_served_before_their_artifact(backend):
    """A request's own tools: ``compile_grammar`` starts the compile and
    returns at once. With the rest of the compile deferred, a whole
    request runs on masks computed on demand (drafts validated, tokens
    accepted and rolled back as the manager does), every mask the
    compiled artifact's; the artifact is built only when waited for, and
    a reset then serves from it."""
    own_tools_engine(backend._tools)
    tools, spec = own_tools(400, entry="required")
    g = backend.compile_grammar(StructuredOutputOptions.STRUCTURAL_TAG, spec)
    assert isinstance(g.matcher.inner, tooldec.PendingMatcher) and g.matcher.is_early()
    ref = tooldec.Compiler.gpt2().compile(
        tools, format="hermes", entry="required", vocab_size=MODEL_VOCAB, repair=True
    )
    m = ref.matcher(entry="required", max_tokens=400, max_rollback=K + 1)
    rng = np.random.default_rng(3)
    bm = np.zeros((2, ref.mask_words), dtype=np.int32)
    steps = 0
    for t in complete_call(ref, 3, entry="required"):
        g.fill_bitmask(bm, 0)
        m.fill_next_token_bitmask(bm, 1)
        assert np.array_equal(bm[0], bm[1]), f"step {steps}"
        draft = [t] + [int(x) for x in rng.integers(0, 50257, K - 1)]
        want = draft[: m.validate_tokens(draft)]
        assert g.validate_tokens(draft) == (want[: want.index(EOS) + 1] if EOS in want else want)
        assert g.accept_tokens("own", [t]) and m.accept_token(t)
        g.rollback(1)
        m.rollback(1)
        assert g.accept_tokens("own", [t]) and m.accept_token(t)
        steps += 1
    assert g.is_terminated() and m.is_terminated()
    assert steps > 10 and g.matcher.is_early() and not g.artifact.is_ready()
    assert g.find_jump_string() is None  # jump-forward waits for the artifact
    own = g.artifact.wait()
    assert own.entries == ["required"]  # the request's entry only
    assert_same(own, ref, walks=2)
    g.reset()  # back to the request's entry, not the grammar's default
    m.reset("required")
    g.fill_bitmask(bm, 0)
    m.fill_next_token_bitmask(bm, 1)
    assert np.array_equal(bm[0], bm[1]) and not g.matcher.is_early()
    assert g.find_jump_string() == (m.forced_bytes().decode() or None)
    record(f"vllm: a request's own tools served before their artifact: {steps} steps, every mask equal")


def test_a_late_compile_error_ends_the_request_not_the_engine(backend):
    """An error the rest of a request's compile finds (the DFA state
    bound) after its grammar served: masks allow only EOS, nothing is
    accepted (vLLM then finishes the request with FINISHED_ERROR) and no
    call raises into the engine."""
    tools, _ = own_tools(64)
    pending = tooldec.Compiler.gpt2().start(
        tools, format="hermes", vocab_size=MODEL_VOCAB, max_states=30, deferred=True
    )
    g = tv.TooldecGrammar(tv.RequestMatcher(pending, max_rollback=K + 1), MODEL_VOCAB)
    rng = np.random.default_rng(4)
    message = serve_then_fail(
        lambda bm: g.fill_bitmask(bm, 0), lambda t: g.accept_tokens("late", [t]), MODEL_VOCAB, rng, pending
    )
    bm = np.zeros((1, (MODEL_VOCAB + 31) // 32), dtype=np.int32)
    g.fill_bitmask(bm, 0)
    assert allowed_ids(bm[0], MODEL_VOCAB).tolist() == [EOS] and g.matcher.error == message
    assert not g.accept_tokens("late", [EOS])
    assert g.validate_tokens([EOS]) == [] and g.find_jump_string() is None
    assert not g.is_terminated()
    g.rollback(1)
    g.reset()


def test_reset_returns_to_the_requests_entry(backend, hermes):
    """A grammar made for an entry resets to that entry, as vLLM's
    xgrammar grammar resets to its own start (a plain ``Matcher.reset()``
    goes to the format's default entry, whose first mask differs)."""
    g = backend.compile_grammar(StructuredOutputOptions.GRAMMAR, "tooldec:hermes/calls")
    tok = GreedyTokenizer(hermes)
    assert g.accept_tokens("r", tok.encode('<tool_call>\n{"name": "'))
    g.reset()
    bm = np.zeros((3, (MODEL_VOCAB + 31) // 32), dtype=np.int32)
    g.fill_bitmask(bm, 0)
    hermes.matcher(entry="calls").fill_next_token_bitmask(bm, 1)
    hermes.matcher().fill_next_token_bitmask(bm, 2)
    assert np.array_equal(bm[0], bm[1]) and not np.array_equal(bm[1], bm[2])
    assert g.num_processed_tokens == 0
