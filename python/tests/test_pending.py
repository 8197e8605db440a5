"""tooldec.Compiler.start: masks served before the artifact is there.

A ``PendingMatcher`` must give, at every step of a complete call, the mask
a ``Matcher`` of ``compile()``'s artifact gives for the same tokens, and
accept the same tokens; served early (computed on demand) where it can be,
from the artifact once it moved there. ``wait()`` must give ``compile()``'s
artifact. Errors must be ``compile()``'s, and the bitmask checks
``Matcher``'s.
"""

import json
import re
import threading

import numpy as np
import pytest

import tooldec
from conftest import ROOT
from helpers import assert_same, complete_call, random_logits, sample, serve_then_fail

WEATHER = ROOT / "grammars" / "examples" / "weather.json"
TINY = ROOT / "grammars" / "examples" / "tiny.json"


@pytest.fixture(scope="module")
def gpt2():
    return tooldec.Compiler.gpt2()


@pytest.fixture(scope="module")
def weather_tools():
    with open(WEATHER) as f:
        return json.load(f)


def fresh(tools, **kwargs):
    """A Pending of a compiler of its own, so that no kept artifact makes
    it ready at once, and the rest of the compile deferred, so that only a
    matcher's own need moves it to the artifact."""
    return tooldec.Compiler.gpt2().start(tools, deferred=True, **kwargs)


def same_masks_along(pm, m, tokens, rollback_at=None):
    """Feeds ``tokens`` to ``pm`` and ``m``, requiring equal masks before
    each token and after the last, and both to accept each; at step
    ``rollback_at`` it also rolls one token back and forth. Returns how
    many masks ``pm`` served early, and how many were compared."""
    bm = tooldec.allocate_token_bitmask(2, pm.mask_width)
    early = masks = 0

    def compare(step):
        nonlocal early, masks
        masks += 1
        bm.fill(-1)  # stale bits would hide a row left unwritten
        was_early = pm.is_early()
        pm.fill_next_token_bitmask(bm, 0)
        m.fill_next_token_bitmask(bm, 1)
        assert np.array_equal(bm[0], bm[1]), (
            f"step {step}: the mask served {'early' if was_early else 'after moving'} "
            f"differs from the artifact's after {tokens[:step]}"
        )
        early += was_early and pm.is_early()
        assert (pm.is_accepting(), pm.is_terminated()) == (m.is_accepting(), m.is_terminated())

    for step, t in enumerate(tokens):
        compare(step)
        assert pm.accept_token(t) and m.accept_token(t), f"step {step}: token {t}"
        if step == rollback_at:
            pm.rollback(1)
            m.rollback(1)
            compare(step)
            assert pm.accept_token(t) and m.accept_token(t)
    compare(len(tokens))
    assert pm.is_terminated() and m.is_terminated()
    return early, masks


@pytest.mark.parametrize(
    "tools,kwargs",
    [
        (WEATHER, {}),
        (TINY, {}),
        (WEATHER, dict(format="hermes", vocab_size=50304)),
        (TINY, dict(format="qwen3", entry="required")),
    ],
)
def test_early_masks_are_the_compiled_artifacts(gpt2, tools, kwargs):
    art = gpt2.compile(tools, **kwargs)
    pending = fresh(tools, **kwargs)
    assert pending.mask_width == art.mask_width
    masks = early = served_early = 0
    for seed in range(3):
        entry = art.entries[seed % len(art.entries)]
        tokens = complete_call(art, seed, entry)
        pm = pending.matcher(entry=entry)
        m = art.matcher(entry=entry)
        starts_early = pm.is_early()
        e, n = same_masks_along(pm, m, tokens, rollback_at=seed + 2)
        early, masks = early + e, masks + n
        served_early += n if starts_early else 0
        # Entries that stop after their first call (hermes' `call`, every
        # ReAct entry but `parallel` and `required`) are served early too.
        assert starts_early, entry
    assert masks > 30, f"the walks are too short to say much ({masks} masks)"
    # Without a budget nothing else needs the artifact: every mask of an
    # entry served early was early.
    assert early == served_early
    if served_early == masks:
        assert not pending.is_ready()


def test_budgets_are_served_early_or_from_the_artifact(gpt2, weather_tools):
    """A roomy budget is decided early; a tight one waits for the
    artifact (the deferred compile runs then); the masks are the same."""
    art = gpt2.compile(weather_tools, format="hermes", max_tokens=96)
    pending = fresh(weather_tools, format="hermes", max_tokens=96)
    tokens = complete_call(art, 7, extra=20)
    served = {}
    # Roomy first: once a matcher needs the artifact, later ones start on it.
    for budget in (400, None, len(tokens)):
        pm = pending.matcher(budget=budget)  # None: the compile's max_tokens
        m = art.matcher(max_tokens=budget)
        served[budget] = same_masks_along(pm, m, tokens)
    early, masks = served[400]
    assert early == masks == len(tokens) + 1, served
    early, masks = served[len(tokens)]
    assert early < masks, served
    assert pending.is_ready()


def test_a_started_compile_lands_while_serving(gpt2, weather_tools, weather):
    """On a thread: masks are equal whenever the artifact lands, wait()
    from another thread gives compile()'s artifact, and the compiler keeps
    it (the same list again is ready at once)."""
    c = tooldec.Compiler.gpt2()
    pending = c.start(weather_tools)
    pm = pending.matcher()
    waited = []
    waiter = threading.Thread(target=lambda: waited.append(pending.wait()))
    waiter.start()
    same_masks_along(pm, weather.matcher(), complete_call(weather, 11), rollback_at=4)
    waiter.join()
    assert pending.is_ready()
    art = pending.wait()
    assert art.path is None
    # The CLI's artifact (the committed golden one) and compile()'s.
    assert art.metadata_json == waited[0].metadata_json == weather.metadata_json
    assert_same(art, weather, walks=4)
    assert_same(art, gpt2.compile(weather_tools), walks=2)
    again = c.start(weather_tools)
    assert again.is_ready()
    assert not again.matcher().is_early()


def test_wait_equals_compile_with_options(gpt2, weather_tools, hermes):
    """python/test.sh compiles weather.json with --format hermes
    --vocab-size 50304 --max-tokens 96."""
    kwargs = dict(format="hermes", vocab_size=50304, max_tokens=96)
    art = fresh(weather_tools, **kwargs).wait()
    assert art.metadata_json == hermes.metadata_json
    assert (art.mask_width, art.max_tokens) == (50304, 96)
    assert_same(art, hermes, walks=4)


def test_errors_are_the_compilers(gpt2, weather_tools):
    bad = [
        {
            "type": "function",
            "function": {
                "name": "f",
                "parameters": {"type": "object", "properties": {"x": {"type": "strng"}}},
            },
        },
    ]
    pointer = "/0/function/parameters/properties/x/type"
    with pytest.raises(ValueError, match=re.escape(pointer)) as started:
        gpt2.start(bad)
    with pytest.raises(ValueError) as compiled:
        gpt2.compile(bad)
    assert str(started.value) == str(compiled.value)
    for kwargs, msg in [
        (dict(format="nope"), "unknown format"),
        (dict(max_tokens=0), "at least 1"),
        (dict(vocab_size=100), "smaller than the tokenizer"),
    ]:
        with pytest.raises(ValueError, match=msg):
            gpt2.start(weather_tools, **kwargs)
    with pytest.raises(TypeError):
        gpt2.start(weather_tools, "hermes")  # options are keywords
    # A budget below the shortest call is found by the rest of the compile:
    # the matchers and the wait raise compile's error.
    with pytest.raises(ValueError, match="too small") as compiled:
        gpt2.compile(weather_tools, max_tokens=2)
    late = fresh(weather_tools, max_tokens=2)
    for call in (late.matcher, late.wait):
        with pytest.raises(ValueError) as e:
            call()
        assert str(e.value) == str(compiled.value)
    pending = fresh(weather_tools)
    for kwargs, msg in [
        (dict(entry="nope"), "nope"),
        (dict(budget=-1), "budget"),
        (dict(max_rollback=-1), "max_rollback"),
    ]:
        with pytest.raises(ValueError, match=msg):
            pending.matcher(**kwargs)


def test_the_bitmask_is_checked_as_a_matchers(gpt2, weather_tools, weather):
    pm = fresh(weather_tools).matcher()
    m = weather.matcher()
    short = np.zeros((1, weather.mask_words - 1), dtype=np.int32)
    with pytest.raises(ValueError, match="words per row") as early:
        pm.fill_next_token_bitmask(short)
    with pytest.raises(ValueError) as compiled:
        m.fill_next_token_bitmask(short)
    assert str(early.value) == str(compiled.value)
    bm = tooldec.allocate_token_bitmask(2, weather.mask_width)
    with pytest.raises(IndexError, match="row 2"):
        pm.fill_next_token_bitmask(bm, 2)
    with pytest.raises(TypeError, match="int32"):
        pm.fill_next_token_bitmask(np.zeros((1, weather.mask_words), dtype=np.float32))
    assert pm.is_early()  # nothing above moved it


def test_rollback_limits_and_refused_tokens(weather_tools, weather):
    pm = fresh(weather_tools).matcher(max_rollback=2)
    assert pm.max_rollback == 2
    tokens = complete_call(weather, 5)
    assert not pm.accept_token(-1) and not pm.accept_token(weather.eos_token_ids[0])
    with pytest.raises(ValueError, match="roll back 1"):
        pm.rollback(1)  # nothing accepted yet
    for t in tokens[:3]:
        assert pm.accept_token(t)
    with pytest.raises(ValueError, match="max_rollback=2"):
        pm.rollback(3)
    with pytest.raises(ValueError, match="at least 0"):
        pm.rollback(-1)
    pm.rollback(2)
    m = weather.matcher()
    assert m.accept_token(tokens[0])
    same_masks_along(pm, m, tokens[1:])


def test_qwen_tokenizer_early_masks(data_dir, weather_tools, qwen):
    """A real tokenizer (Qwen2.5, hermes): the same masks, served early."""
    c = tooldec.Compiler(data_dir / "tokenizers" / "qwen2.5" / "tokenizer.json")
    pending = c.start(weather_tools, format="hermes", vocab_size=151936, deferred=True)
    early = masks = 0
    for seed in range(2):
        tokens = complete_call(qwen, seed)
        e, n = same_masks_along(pending.matcher(), qwen.matcher(), tokens)
        early, masks = early + e, masks + n
    assert early == masks
    assert_same(pending.wait(), qwen, walks=2)


def test_drafts_jump_forward_and_reset_answer_as_a_matchers(weather_tools, weather):
    """The rest of ``Matcher``'s methods: a draft's valid prefix and
    ``is_allowed`` decided early as the artifact's matcher decides them,
    without moving; ``accept_tokens`` stopping where it stops; no forced
    bytes before the artifact and the artifact's after; ``reset`` back to
    the start, still early."""
    pending = fresh(weather_tools)
    assert pending.eos_token_ids == weather.eos_token_ids
    tokens = complete_call(weather, 3)
    pm, m = pending.matcher(max_rollback=4), weather.matcher(max_rollback=4)
    rng = np.random.default_rng(5)
    for i, t in enumerate(tokens):
        draft = list(tokens[i : i + 3]) + [int(rng.integers(weather.token_count))]
        assert pm.validate_tokens(draft) == m.validate_tokens(draft), (i, draft)
        assert pm.is_allowed(draft[-1]) == m.is_allowed(draft[-1]), (i, draft)
        assert pm.forced_bytes() == b""
        assert pm.accept_token(t) and m.accept_token(t)
    assert pm.is_early() and pm.is_terminated() and not pending.is_ready()
    pm.reset()
    m.reset()
    assert pm.is_early() and not pm.is_terminated()
    with pytest.raises(ValueError, match="roll back 1"):
        pm.rollback(1)  # a reset forgets the history
    eos = weather.eos_token_ids[0]
    stream = tokens[:4] + [eos] + tokens[4:]  # EOS in the middle of a call
    assert pm.accept_tokens(stream) == m.accept_tokens(stream) == 4
    assert pm.accept_tokens([-1]) == 0  # an invalid id ends the run
    same_masks_along(pm, m, tokens[4:])
    assert pm.is_early() and not pending.is_ready()
    # Once the artifact is there: its forced bytes, step by step.
    pending.wait()
    pm, m = pending.matcher(), weather.matcher()
    forced = 0
    for t in tokens:
        assert pm.forced_bytes() == m.forced_bytes()
        forced += len(m.forced_bytes()) > 0
        assert pm.accept_token(t) and m.accept_token(t)
    assert forced > 0, "the walk never had forced bytes to compare"


def test_a_compile_that_fails_late_ends_the_request_not_the_engine(weather_tools, weather):
    """What the rest of a compile finds after ``start`` (here the DFA
    state bound) reaches an adapter's matcher mid-request: it is kept and
    logged, masks allow only EOS and no token is accepted (both engines
    then end that request with an error), and nothing raises through the
    engine. Other errors stay the caller's."""
    from tooldec._specs import RequestMatcher

    pending = fresh(weather_tools, max_states=30)
    rm = RequestMatcher(pending, max_rollback=2)
    rng = np.random.default_rng(9)
    message = serve_then_fail(
        lambda bm: rm.fill_next_token_bitmask(bm, 0), rm.accept_token, pending.mask_width, rng, pending
    )
    assert "30" in message, message
    bm = tooldec.allocate_token_bitmask(2, pending.mask_width)
    rm.fill_next_token_bitmask(bm, 1)
    assert rm.error == message
    allowed = np.flatnonzero(tooldec.bitmask_to_bool(bm[1], pending.mask_width))
    assert allowed.tolist() == pending.eos_token_ids
    assert not rm.accept_token(weather.eos_token_ids[0]) and not rm.accept_token(0)
    assert rm.validate_tokens([0, 1]) == 0 and rm.forced_bytes() == b""
    assert not rm.is_terminated() and not rm.is_accepting()
    rm.rollback(1)
    rm.reset()
    assert rm.error is not None
    # A compile that succeeds: a bad rollback is still a ValueError.
    ok = RequestMatcher(fresh(weather_tools), max_rollback=1)
    with pytest.raises(ValueError, match="roll back 3"):
        ok.rollback(3)
    assert ok.error is None and ok.is_early()
