"""tooldec.sglang, driven as SGLang's scheduler drives a grammar backend.

The loops below follow SGLang (sgl-project/sglang, python/sglang/srt/):
``GrammarManager.process_req_with_grammar`` / ``get_ready_grammar_requests``
(constrained/grammar_manager.py: cache lookup, future, ``set_cache(key,
grammar.copy())``, invalid grammars abort), ``SamplingBatchInfo.
update_regex_vocab_mask`` (sampling/sampling_batch_info.py: the first
grammar allocates, unfinished rows fill, move, apply), the scheduler's
``process_batch_result`` (``accept_token`` per sampled token, ``finished``),
EAGLE's ``traverse_tree`` (speculative/eagle_utils.py: accept, fill, recurse,
rollback(1) over a draft tree) and the jump-forward path of
``ScheduleBatch.check_for_jump_forward`` / ``Req.jump_forward_and_retokenize``
(managers/schedule_batch.py, SGLang 0.4.x).
"""

import json
import pathlib
import shutil

import numpy as np
import pytest

import tooldec
import tooldec.sglang as tsg
from conftest import record
from helpers import GreedyTokenizer, allowed_ids, check_output, decode, random_logits, sample
from helpers import complete_call, own_tools, own_tools_engine, serve_then_fail
from sglang.srt.constrained import base_grammar_backend as bgb
from sglang.srt.runtime_context import publish
from sglang.srt.server_args import GRAMMAR_BACKEND_CHOICES, ServerArgs

MODEL_VOCAB = 50304
EOS = 50256


class Req:
    def __init__(self, rid, key, max_new_tokens, target=None):
        self.rid, self.key, self.max_new_tokens = rid, key, max_new_tokens
        self.target = target  # text the fake model leans toward
        self.output_ids = []
        self.grammar = None
        self.finished_reason = None

    def finished(self):
        return self.finished_reason is not None


class FallbackGrammar(bgb.BaseGrammarObject):
    """What another backend (xgrammar) would return for a JSON schema."""

    def __init__(self, key_string):
        super().__init__()
        self.key_string = key_string


class FallbackBackend(bgb.BaseGrammarBackend):
    def dispatch_json(self, key_string):
        return FallbackGrammar(key_string)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    """A model directory holding only a config: what the real ``ServerArgs``
    reads (offline) before a grammar backend is created; the vocabulary
    size the backend serves is passed to it separately."""
    d = tmp_path_factory.mktemp("model")
    shutil.copy(pathlib.Path(__file__).parent / "fixtures" / "smollm2-config.json", d / "config.json")
    return str(d)


@pytest.fixture
def backend(weather_path, hermes, model_path):
    tsg.register(
        artifacts={"weather": str(weather_path), "hermes": hermes},
        fallback=None,
    )
    assert "tooldec" in GRAMMAR_BACKEND_CHOICES and "tooldec" in bgb.GRAMMAR_BACKEND_REGISTRY
    args = ServerArgs(model_path=model_path, grammar_backend="tooldec", device="cpu")
    publish(args, role="scheduler")
    b = bgb.create_grammar_backend(args, tokenizer=None, vocab_size=MODEL_VOCAB, eos_token_ids={EOS})
    assert isinstance(b, tsg.TooldecGrammarBackend)
    return b


def admit(backend, reqs):
    """GrammarManager: cache hit -> a copy; miss -> a future, then the
    compiled grammar, cached as a copy; invalid -> aborted."""
    queue = []
    for req in reqs:
        if req.key is None:
            continue  # a request without a grammar
        value, hit = backend.get_cached_or_future_value(req.key, False)
        req.grammar = value
        if not hit:
            queue.append(req)
        elif isinstance(value, bgb.InvalidGrammarObject):
            req.finished_reason = "abort: invalid grammar (cached)"
    for req in queue:
        req.grammar = req.grammar.result()
        backend.set_cache(req.key, req.grammar.copy())
        if isinstance(req.grammar, bgb.InvalidGrammarObject):
            req.finished_reason = "abort: invalid grammar"
    return [r for r in reqs if not r.finished()]


def fake_logits(rng, batch, tok):
    """Random logits; a request with a target leans toward the token that
    continues it (a model that knows the answer)."""
    logits = random_logits(rng, len(batch), MODEL_VOCAB, [EOS])
    for i, req in enumerate(batch):
        if req.target is not None:
            done = tok.decode(req.output_ids)
            if req.target.startswith(done):
                rest = req.target[len(done) :]
                logits[i, tok.encode(rest)[0] if rest else EOS] += 20.0
    return logits


def decode_step(rng, batch, tok):
    """One decode step: update_regex_vocab_mask, sample with the mask
    applied, process_batch_result. Returns the vocab mask."""
    grammars = [r.grammar for r in batch]
    first = next((g for g in grammars if g), None)
    logits = fake_logits(rng, batch, tok)
    vocab_mask = None
    if first is not None:
        vocab_mask = first.allocate_vocab_mask(
            vocab_size=MODEL_VOCAB, batch_size=len(batch), device="cpu"
        )
        for i, g in enumerate(grammars):
            if g and not g.finished and not g.is_terminated():
                g.fill_vocab_mask(vocab_mask, i)
        vocab_mask = first.move_vocab_mask(vocab_mask, "cpu")
        first.apply_vocab_mask(logits, vocab_mask)
    for req, t in zip(batch, sample(rng, logits)):
        req.output_ids.append(t)
        if t == EOS:
            req.finished_reason = "stop"
        elif len(req.output_ids) >= req.max_new_tokens:
            req.finished_reason = "length"
        if req.grammar is not None:
            try:
                req.grammar.accept_token(t)
            except ValueError:
                req.finished_reason = "abort: grammar rejected a token"
            req.grammar.finished = req.finished()
    return None if vocab_mask is None else np.asarray(vocab_mask)


def test_scheduler_loop(backend, weather, hermes, tools):
    rng = np.random.default_rng(23)
    tok = GreedyTokenizer(weather)
    weather40 = ("structural_tag", json.dumps({"tooldec": "weather", "max_tokens": 40}))
    reqs = [
        Req("a", weather40, 64, 'Thought: sun?\nAction: get_weather\nAction Input: {"city": "Lyon", "days": 3}'),
        Req("b", ("structural_tag", '{"tooldec": "weather", "entry": "parallel", "max_tokens": 48}'), 64),
        Req("c", ("ebnf", "tooldec:hermes/calls"), 128),  # the artifact's default budget: 96
        Req("d", weather40, 64),  # same key: a cache hit, a fresh copy
        Req("e", None, 12),  # no grammar: unconstrained
        Req("f", ("ebnf", "tooldec:nope"), 12),  # no such artifact: aborted
        Req("g", ("ebnf", "tooldec:hermes/call"), 128, '<tool_call>\n{"name": "get_time", "arguments": {"timezone": "UTC"}}\n</tool_call>'),
    ]
    running = admit(backend, reqs)
    assert reqs[5].finished_reason.startswith("abort") and reqs[5] not in running
    assert reqs[4].grammar is None
    assert reqs[3].grammar is not reqs[0].grammar
    steps = 0
    while running:
        steps += 1
        mask = decode_step(rng, running, tok)
        for i, req in enumerate(running if mask is not None else []):
            if req.grammar is None:
                assert (mask[i] == -1).all()  # an unconstrained row
            elif not req.grammar.finished:
                assert not tooldec.bitmask_to_bool(mask[i], MODEL_VOCAB)[50257:].any()
        running = [r for r in running if not r.finished()]  # filter_batch
    for req in reqs:
        if req.grammar is None or isinstance(req.grammar, bgb.InvalidGrammarObject):
            continue
        art = weather if "weather" in req.key[1] else hermes
        assert req.finished_reason == "stop", (req.rid, req.finished_reason)
        assert req.grammar.is_terminated()
        check_output(art, tools, req.output_ids)
    assert len(reqs[0].output_ids) < 40 and len(reqs[6].output_ids) < 40  # followed their target
    record(
        f"sglang: scheduler-like loop, {len(reqs)} requests (1 unconstrained, 1 invalid), "
        f"{steps} steps, every constrained request a valid call"
    )


def test_cache_copy_and_reset(backend, weather):
    key = ("ebnf", "tooldec:weather")
    g1, hit = backend.get_cached_or_future_value(key, False)
    g1 = g1.result()
    backend.set_cache(key, g1.copy())
    tok = GreedyTokenizer(weather)
    for t in tok.encode("Thought: x\nAction: "):
        g1.accept_token(t)
    g2, hit = backend.get_cached_or_future_value(key, False)
    assert hit and g2.matcher.state == weather.matcher().state != g1.matcher.state
    backend.reset()
    assert backend.get_cached_or_future_value(key, False)[1] is False
    with pytest.raises(ValueError, match="not allowed"):
        g1.accept_token(tok.encode("Thought")[0])


def test_fallback_backend(weather_path, model_path):
    tsg.register(
        "tooldec-fb", artifacts=str(weather_path), fallback=lambda *args: FallbackBackend()
    )
    args = ServerArgs(model_path=model_path, grammar_backend="tooldec-fb", device="cpu")
    publish(args, role="scheduler")
    b = bgb.create_grammar_backend(args, None, MODEL_VOCAB, {EOS})
    g, _ = b.get_cached_or_future_value(("json", '{"type": "object"}'), False)
    assert isinstance(g.result(), FallbackGrammar)
    g, _ = b.get_cached_or_future_value(("regex", "tooldec:"), False)  # the only artifact
    assert isinstance(g.result(), tsg.TooldecGrammar)
    with pytest.raises(ValueError, match="artifact .weather-gpt2.: the model.s logits width 1000 is smaller"):
        tsg.TooldecGrammarBackend(str(weather_path), vocab_size=1000)


def traverse_tree(next_token, next_sibling, draft_tokens, grammar, bitmask):
    """EAGLE's tree walk: each draft node the grammar allows is accepted,
    its mask filled into its row, its children visited, then rolled back."""
    bitmask[:] = 0

    def dfs(curr, parent):
        if curr == 0:
            accepted = True
        else:
            t = draft_tokens[curr]
            accepted = (int(bitmask[parent][t // 32]) >> (t % 32)) & 1 == 1
        if accepted:
            if curr != 0:
                grammar.accept_token(draft_tokens[curr])
            if not grammar.is_terminated():
                grammar.fill_vocab_mask(bitmask, curr)
                if next_token[curr] != -1:
                    dfs(next_token[curr], curr)
            if curr != 0:
                grammar.rollback(1)
        if next_sibling[curr] != -1:
            dfs(next_sibling[curr], parent)

    dfs(0, -1)


def test_eagle_tree_verification(backend, weather):
    """Two requests' draft trees verified against their grammars: every
    allowed node gets the mask of the state after its path, refused
    branches stay empty, and the grammars end where they started."""
    tok = GreedyTokenizer(weather)
    grammars = []
    for prefix in ("Thought: rain\nAction: get_", "Thought: x"):
        g, _ = backend.get_cached_or_future_value(("ebnf", "tooldec:weather"), False)
        g = g.result() if hasattr(g, "result") else g
        for t in tok.encode(prefix):
            g.accept_token(t)
        grammars.append(g)
    # Tree (node: token): 0 root; children of 0: 1 "weather", 2 "time",
    # 3 "!!" (refused); child of 1: 4 "\n"; child of 4: 5 "Action".
    words = {w: tok.encode(w)[0] for w in ("weather", "time", "\n", "Action")}
    draft = [0, words["weather"], words["time"], tok.encode("!!")[0], words["\n"], words["Action"]]
    next_token = [1, 4, -1, -1, 5, -1]
    next_sibling = [-1, 2, 3, -1, -1, -1]
    n = len(draft)
    allocated = grammars[0].allocate_vocab_mask(MODEL_VOCAB, n * len(grammars), "cpu")
    for r, g in enumerate(grammars):
        before = g.matcher.state
        rows = allocated[r * n : (r + 1) * n]  # a view, as EAGLE passes it
        traverse_tree(next_token, next_sibling, draft, g, rows)
        assert g.matcher.state == before
        paths = {0: [], 1: [1], 2: [2], 3: [3], 4: [1, 4], 5: [1, 4, 5]}
        for node, path in paths.items():
            m = weather.matcher()
            m.accept_tokens(tok.encode("Thought: rain\nAction: get_" if r == 0 else "Thought: x"))
            if m.accept_tokens([draft[p] for p in path]) == len(path):
                ref = np.zeros((1, allocated.shape[1]), dtype=np.int32)
                m.fill_next_token_bitmask(ref, 0)
                assert (np.asarray(rows[node]) == ref[0]).all(), (r, node)
            else:
                assert not np.asarray(rows[node]).any(), (r, node)
    # The first request's tree: "weather" and "time" continue "get_"; "!!"
    # does not. The second (in the thought) allows them all.
    assert np.asarray(allocated[3]).sum() == 0 and np.asarray(allocated[1]).any()
    assert np.asarray(allocated[n + 3]).any()


def test_jump_forward_and_retokenize(backend, weather, tools):
    """Each step first asks the grammar for forced text; when there is
    some, the output is re-tokenized with it appended and the grammar rolls
    back to the first changed token and accepts the new ones."""
    rng = np.random.default_rng(31)
    tok = GreedyTokenizer(weather)
    targets = [
        'Thought: I should look at flights.\nAction: search_flights\nAction Input: {"from": "CDG", "to": "JFK", "passengers": 2}',
        "Thought: Time in Tokyo?\nAction: get_time\nAction Input: {\"timezone\": \"Asia/Tokyo\", \"format24\": true}",
    ]
    reqs = [
        Req(f"j{i}", ("structural_tag", json.dumps({"tooldec": "weather", "max_tokens": 80})), 100, t)
        for i, t in enumerate(targets)
    ]
    running = admit(backend, reqs)
    jumps = jumped_bytes = rolled = 0
    while running:
        for req in running:
            g = req.grammar
            helper = g.try_jump_forward(tok)
            if helper is None:
                continue
            text, state = g.jump_forward_str_state(helper)
            old = list(req.output_ids)
            new = tok.encode(tok.decode(old) + text)
            g.jump_and_retokenize(old, new, state)
            k = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
            rolled += len(old) - k
            req.output_ids = new
            jumps += 1
            jumped_bytes += len(text.encode())
            replay = weather.matcher(max_tokens=80)
            assert replay.accept_tokens(new) == len(new)
            assert replay.state == g.matcher.state
        decode_step(rng, running, tok)
        running = [r for r in running if not r.finished()]
    for req, target in zip(reqs, targets):
        assert req.finished_reason == "stop"
        assert decode(weather, req.output_ids).decode() == target
        check_output(weather, tools, req.output_ids)
    assert jumps >= 4
    record(
        f"sglang: jump-forward, {len(reqs)} requests, {jumps} jumps over {jumped_bytes} forced "
        f"bytes, {rolled} tokens rolled back by re-tokenization"
    )


def test_a_requests_own_tools_start_and_copies_move_to_the_artifact(backend):
    """A request's own tools: the dispatched grammar serves at once (the
    rest of the compile deferred), masks equal to the compiled artifact's,
    no jump-forward before the artifact; copies made before it lands start
    early too, and the first copy after it lands serves from the artifact
    and lets the cached grammar drop the compile's early state."""
    own_tools_engine(backend._tools)
    tools, spec = own_tools(400, entry="required")
    g = backend.dispatch_ebnf(spec)
    assert isinstance(g, tsg.TooldecGrammar) and isinstance(g.artifact, tooldec.Pending)
    early_copy = g.copy()
    assert g.matcher.is_early() and early_copy.matcher.is_early()
    ref = tooldec.Compiler.gpt2().compile(
        tools, format="hermes", entry="required", vocab_size=MODEL_VOCAB, repair=True
    )
    m = ref.matcher(entry="required", max_tokens=400)
    vm = g.allocate_vocab_mask(MODEL_VOCAB, 2, "cpu")
    steps = 0
    for t in complete_call(ref, 6, entry="required"):
        g.fill_vocab_mask(vm, 0)
        m.fill_next_token_bitmask(vm, 1)
        assert np.array_equal(np.asarray(vm[0]), np.asarray(vm[1])), f"step {steps}"
        assert g.try_jump_forward(None) is None
        g.accept_token(t)
        assert m.accept_token(t)
        steps += 1
    assert g.is_terminated()
    assert steps > 10 and g.matcher.is_early() and not g.artifact.is_ready()
    assert g.artifact.wait().entries == ["required"]  # the request's entry only
    late_copy = g.copy()
    assert isinstance(g.artifact, tooldec.Artifact) and isinstance(late_copy.artifact, tooldec.Artifact)
    assert isinstance(late_copy.matcher.inner, tooldec.Matcher)
    assert early_copy.matcher.is_early()  # moves to the artifact on its next call
    early_copy.fill_vocab_mask(vm, 0)
    assert not early_copy.matcher.is_early()


def test_a_late_compile_error_aborts_the_request_not_the_scheduler(backend):
    """An error the rest of a request's compile finds (the DFA state
    bound) after its grammar served: masks allow only EOS, ``accept_token``
    raises ``ValueError`` with the compile's message (SGLang aborts that
    request), and the cached grammar's copy is an invalid grammar."""
    tools, _ = own_tools(64)
    pending = tooldec.Compiler.gpt2().start(
        tools, format="hermes", vocab_size=MODEL_VOCAB, max_states=30, deferred=True
    )
    g = tsg.TooldecGrammar(pending, key_string="late")
    rng = np.random.default_rng(8)
    message = serve_then_fail(lambda bm: g.fill_vocab_mask(bm, 0), g.accept_token, MODEL_VOCAB, rng, pending)
    vm = g.allocate_vocab_mask(MODEL_VOCAB, 1, "cpu")
    g.fill_vocab_mask(vm, 0)
    assert allowed_ids(np.asarray(vm[0]), MODEL_VOCAB).tolist() == [EOS] and g.matcher.error == message
    with pytest.raises(ValueError, match="did not compile"):
        g.accept_token(EOS)
    assert g.try_jump_forward(None) is None and not g.is_terminated()
    assert isinstance(g.copy(), bgb.InvalidGrammarObject)
