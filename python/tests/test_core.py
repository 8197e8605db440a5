"""The core binding: artifacts, matchers, batched bitmasks, rollback, errors."""

import threading

import numpy as np
import pytest

import tooldec
from conftest import record
from helpers import (
    allowed_ids,
    check_output,
    decode,
    random_logits,
    sample,
    specials,
)


def test_artifact_properties(weather, weather_path, tools):
    assert weather.mask_width == 50257
    assert weather.token_count == 50257
    assert weather.mask_words == (weather.mask_width + 31) // 32 == 1571
    assert weather.eos_token_ids == [50256]
    assert weather.is_eos(50256) and not weather.is_eos(0) and not weather.is_eos(-1)
    assert weather.entries == ["start", "parallel", "auto", "required", "one", "auto-one"]
    assert weather.max_tokens is None
    assert 0 < weather.min_tokens < 40
    meta = weather.metadata
    assert meta["format"] == "react"
    assert sorted(meta["tools"]) == sorted(tools)
    assert isinstance(weather.metadata_json, str)
    assert weather.path == str(weather_path)
    assert len(weather.vocab_fingerprint) == 32
    weather.check_vocabulary(weather.vocab_fingerprint)
    with pytest.raises(ValueError, match="compiled for"):
        weather.check_vocabulary(bytes(32))
    with pytest.raises(ValueError, match="32 bytes"):
        weather.check_vocabulary(b"short")
    weather.check_mask_width(50257)
    weather.check_mask_width(151936)
    with pytest.raises(ValueError, match="logits width 50000"):
        weather.check_mask_width(50000)
    assert weather.token_bytes(0) == b"!"
    assert weather.token_bytes(50256) == b""  # EOS spells nothing
    assert weather.token_bytes(-1) is None and weather.token_bytes(50257) is None
    same = tooldec.Artifact.from_bytes(weather_path.read_bytes())
    assert same.path is None and same.metadata == meta
    assert "weather-gpt2.tdm" in repr(weather)


def test_batched_walks_with_speculative_rollback(weather, tools):
    """8 matchers fill one batched numpy bitmask (as wide as a model's
    logits, 50304 columns); random logits are masked with it, sampled and
    accepted; now and then a row rolls back up to its draft length + 1
    tokens, as a rejected speculation would, and samples again. Every row
    ends with a valid call within its token budget."""
    rng = np.random.default_rng(20240611)
    batch, draft = 8, 3
    width = 50304  # the model's logits: 47 columns past the vocabulary
    words = (width + 31) // 32
    budgets = [int(b) for b in rng.integers(weather.min_tokens + 2, weather.min_tokens + 40, batch)]
    entries = ["start" if i % 2 == 0 else "parallel" for i in range(batch)]
    matchers = [
        weather.matcher(entry=e, max_tokens=b, max_rollback=draft + 1)
        for e, b in zip(entries, budgets)
    ]
    bitmask = np.full((batch, words), -1, dtype=np.int32)
    outputs = [[] for _ in range(batch)]
    # (state, tokens_left) after each accepted token, to check rollbacks.
    history = [[(m.state, m.tokens_left)] for m in matchers]
    rollbacks_left = [4] * batch
    steps = rollbacks = rolled_back = checked = 0
    while not all(m.is_terminated() for m in matchers):
        steps += 1
        assert steps < 2000
        tooldec.fill_next_token_bitmask_batch(matchers, bitmask)
        # Padding ids (>= token_count) and columns past the vocabulary: never.
        assert not bitmask[:, weather.mask_words :].any()
        if weather.mask_width % 32:
            last = bitmask[:, weather.mask_words - 1].view(np.uint32)
            assert not (last >> (weather.mask_width % 32)).any()
        if steps % 6 == 1:
            # Every bit agrees with accept_token, over the whole vocabulary.
            i = steps % batch
            m = matchers[i]
            allowed = set(allowed_ids(bitmask[i], width).tolist())
            assert allowed, "an empty mask"
            for t in range(weather.mask_width):
                assert m.is_allowed(t) == (t in allowed), (i, t)
            for t in list(allowed)[:20]:
                c = m.copy()
                assert c.accept_token(t)
            checked += 1
        logits = random_logits(rng, batch, width, weather.eos_token_ids)
        tooldec.apply_token_bitmask(logits, bitmask)
        for i, t in enumerate(sample(rng, logits)):
            m = matchers[i]
            if m.is_terminated():
                # A finished row's mask allows EOS only.
                assert allowed_ids(bitmask[i], width).tolist() == weather.eos_token_ids
                continue
            assert m.accept_token(t), (i, t)
            outputs[i].append(t)
            history[i].append((m.state, m.tokens_left))
            if rollbacks_left[i] and m.rollback_depth and rng.random() < 0.2:
                r = int(rng.integers(1, min(m.rollback_depth, draft + 1) + 1))
                m.rollback(r)
                del outputs[i][-r:]
                del history[i][-r:]
                assert (m.state, m.tokens_left) == history[i][-1]
                rollbacks_left[i] -= 1
                rollbacks += 1
                rolled_back += r
    lengths = []
    for i, m in enumerate(matchers):
        assert m.is_accepting() and m.is_terminated()
        assert outputs[i][-1] in weather.eos_token_ids
        # Complete by the budget's last token; EOS may follow (DESIGN.md §5).
        assert len(outputs[i]) - 1 <= budgets[i]
        calls = check_output(weather, tools, outputs[i])
        if entries[i] == "start":
            assert len(calls) == 1
        lengths.append(len(outputs[i]))
    record(
        f"core: {batch} matchers, {steps} batched fills, {rollbacks} rollbacks "
        f"({rolled_back} tokens), {checked} full-vocabulary mask/accept checks, "
        f"outputs of {min(lengths)}-{max(lengths)} tokens, all valid calls"
    )


def test_mask_agrees_with_accept_token_everywhere(weather):
    """At the start, mid-call, in an accepting state and after EOS: bit t of
    the mask is set exactly when accept_token(t) succeeds."""
    rng = np.random.default_rng(3)
    m = weather.matcher(max_tokens=30)
    row = np.zeros((1, weather.mask_words), dtype=np.int32)
    seen_accepting = False
    while True:
        m.fill_next_token_bitmask(row, 0)
        allowed = set(allowed_ids(row[0], weather.mask_width).tolist())
        for t in range(weather.mask_width):
            assert m.is_allowed(t) == (t in allowed)
        seen_accepting |= m.is_accepting()
        if m.is_terminated():
            assert allowed == set(weather.eos_token_ids)
            break
        t = int(rng.choice(sorted(allowed)))
        assert m.accept_token(t)
    assert seen_accepting


def test_padded_vocabulary_never_allows_padding(hermes, tools):
    """An artifact compiled for a model whose logits (50304) exceed the
    tokenizer (50257): padding ids stay clear, in the artifact's own words
    and in a still wider bitmask."""
    assert hermes.mask_width == 50304 and hermes.token_count == 50257
    assert hermes.mask_words == 1572
    assert hermes.max_tokens == 96
    rng = np.random.default_rng(11)
    batch = 4
    matchers = [hermes.matcher(entry=e) for e in ("start", "calls", "call", "start")]
    assert all(m.tokens_left == 96 for m in matchers)
    bitmask = np.full((batch, 1600), -1, dtype=np.int32)
    outputs = [[] for _ in range(batch)]
    steps = 0
    while not all(m.is_terminated() for m in matchers):
        steps += 1
        tooldec.fill_next_token_bitmask_batch(matchers, bitmask)
        allowed = tooldec.bitmask_to_bool(bitmask, 1600 * 32)
        assert not allowed[:, hermes.token_count :].any()
        logits = random_logits(rng, batch, 50304, hermes.eos_token_ids)
        tooldec.apply_token_bitmask(logits, bitmask)
        for i, t in enumerate(sample(rng, logits)):
            if not matchers[i].is_terminated():
                assert matchers[i].accept_token(t)
                outputs[i].append(t)
    for out in outputs:
        assert len(out) - 1 <= 96
        check_output(hermes, tools, out)
    record(f"padded hermes: {batch} walks in {steps} steps, padding ids never allowed")


def test_qwen_special_tokens_and_padding(qwen, tools):
    """Qwen2.5's tokenizer (151665 tokens) under 151936 logits; <tool_call>
    is an added token that is not special, so it is text: the format
    matches it (or any other spelling of the tag) as text."""
    assert qwen.mask_width == 151936 and qwen.token_count < qwen.mask_width
    sp = {v: k for k, v in specials(qwen).items()}
    assert "<tool_call>" not in sp
    rng = np.random.default_rng(5)
    batch = 4
    matchers = [qwen.matcher(entry="calls", max_tokens=64) for _ in range(batch)]
    bitmask = np.zeros((batch, qwen.mask_words), dtype=np.int32)
    outputs = [[] for _ in range(batch)]
    while not all(m.is_terminated() for m in matchers):
        tooldec.fill_next_token_bitmask_batch(matchers, bitmask)
        assert not tooldec.bitmask_to_bool(bitmask, qwen.mask_width)[:, qwen.token_count :].any()
        logits = random_logits(rng, batch, qwen.mask_width, qwen.eos_token_ids)
        tooldec.apply_token_bitmask(logits, bitmask)
        for i, t in enumerate(sample(rng, logits)):
            if not matchers[i].is_terminated():
                assert matchers[i].accept_token(t)
                outputs[i].append(t)
    for out in outputs:
        check_output(qwen, tools, out)


def test_accept_validate_and_counts(weather):
    m = weather.matcher()
    text = "Thought: I will check.\nAction: get_time\nAction Input: {\"timezone\": \"UTC\"}"
    tok = _GreedyCache.get(weather)
    ids = tok.encode(text)
    assert m.validate_tokens(ids) == len(ids)
    assert m.state == weather.matcher().state  # validate does not advance
    assert m.validate_tokens(ids + [0]) == len(ids)  # "!" cannot follow "}"
    assert m.validate_tokens([-1] + ids) == 0  # -1 (an engine's padding) ends a draft
    assert m.accept_tokens(ids[:5]) == 5
    assert m.accept_tokens(ids[5:] + [0, 1]) == len(ids) - 5
    assert m.is_accepting() and not m.is_terminated()
    assert not m.accept_token(-1) and not m.accept_token(2**40)
    with pytest.raises(TypeError, match="integers"):
        m.validate_tokens([1, "x"])
    long = tok.encode("Thought: " + "word " * 80 + "\nAction: get_time")
    assert len(long) > 64  # past the inline buffer
    fresh = weather.matcher()
    assert fresh.validate_tokens(long) == len(long) == fresh.accept_tokens(long + [-1, 5])
    assert fresh.validate_tokens(np.array([0, 1], dtype=np.int64)) == 0
    assert m.accept_token(50256) and m.is_terminated()
    assert m.forced_bytes() == b""
    assert decode(weather, ids).decode() == text


def test_rollback_depth_is_fixed_at_creation(weather):
    tok = _GreedyCache.get(weather)
    ids = tok.encode("Thought: a b c d e f\nAction: get_time")
    m = weather.matcher(max_rollback=4)
    assert m.max_rollback == 4 and m.rollback_depth == 0
    states = [m.state]
    for t in ids[:6]:
        assert m.accept_token(t)
        states.append(m.state)
    assert m.rollback_depth == 4  # only the last 4 are remembered
    with pytest.raises(ValueError, match="cannot roll back 5 tokens: only the last 4"):
        m.rollback(5)
    assert m.state == states[6]  # unchanged by the refused rollback
    m.rollback(3)
    assert m.state == states[3] and m.rollback_depth == 1
    m.rollback(0)
    m.rollback(1)
    assert m.state == states[2]
    with pytest.raises(ValueError):
        m.rollback(1)
    with pytest.raises(ValueError, match="at least 0"):
        m.rollback(-1)
    none = weather.matcher(max_rollback=0)
    assert none.accept_token(ids[0])
    with pytest.raises(ValueError, match="max_rollback=0"):
        none.rollback(1)
    # EOS can be rolled back too (a rejected speculative EOS).
    done = weather.matcher(max_rollback=2)
    text = "Thought: x\nAction: get_time\nAction Input: {\"timezone\": \"UTC\"}"
    assert done.accept_tokens(tok.encode(text)) == len(tok.encode(text))
    assert done.accept_token(50256) and done.is_terminated()
    done.rollback(1)
    assert not done.is_terminated() and done.is_accepting()


def test_copy_reset_budget_and_entries(weather):
    tok = _GreedyCache.get(weather)
    ids = tok.encode("Thought: go\nAction: get_weather")
    m = weather.matcher(max_tokens=40, max_rollback=8)
    assert m.tokens_left == 40
    m.accept_tokens(ids)
    assert m.tokens_left == 40 - len(ids)
    c = m.copy()
    assert c.state == m.state and c.rollback_depth == m.rollback_depth
    c.rollback(2)
    assert c.state != m.state  # independent
    import copy

    assert copy.copy(m).state == m.state and copy.deepcopy(m).state == m.state
    m.reset()
    assert m.tokens_left == 40 and m.rollback_depth == 0
    assert m.state == weather.matcher().state
    m.reset("parallel")
    assert m.state == weather.matcher(entry="parallel").state
    with pytest.raises(ValueError, match="no such entry"):
        m.reset("nope")
    m.set_budget(None)
    assert m.tokens_left is None
    with pytest.raises(ValueError):
        m.set_budget(3)  # too few for any complete call
    assert m.tokens_left is None
    assert m.mask_width == weather.mask_width and m.mask_words == weather.mask_words
    assert m.artifact.mask_width == weather.mask_width
    assert "tokens_left=None" in repr(m)


def test_forced_bytes_jump_forward(weather):
    m = weather.matcher()
    forced = m.forced_bytes()
    assert forced == b"Thought: "
    assert m.forced_bytes(4) == b"Thou"
    tok = _GreedyCache.get(weather)
    assert m.accept_tokens(tok.encode(forced.decode())) == len(tok.encode(forced.decode()))
    assert m.forced_bytes() == b""  # free text: a choice
    m.accept_tokens(tok.encode("x\nAction: get_weather"))
    forced = m.forced_bytes()
    assert forced.startswith(b"\nAction Input: ")
    ids = tok.encode(forced.decode())
    assert m.accept_tokens(ids) == len(ids)


def test_errors_are_clear_exceptions(weather, tmp_path):
    missing = tmp_path / "nope" / "missing.tdm"
    with pytest.raises(FileNotFoundError, match="missing.tdm"):
        tooldec.Artifact.open(str(missing))
    junk = tmp_path / "junk.tdm"
    junk.write_bytes(b"not an artifact at all" * 10)
    with pytest.raises(ValueError, match="junk.tdm"):
        tooldec.Artifact.open(junk)
    with pytest.raises(ValueError, match="cannot load artifact"):
        tooldec.Artifact.from_bytes(b"\x00" * 64)

    m = weather.matcher()
    with pytest.raises(ValueError, match=r"10 words per row.*needs ceil\(50257 / 32\) = 1571"):
        m.fill_next_token_bitmask(np.zeros((2, 10), dtype=np.int32), 0)
    with pytest.raises(TypeError, match="32-bit integers"):
        m.fill_next_token_bitmask(np.zeros((2, 1571), dtype=np.int64), 0)
    with pytest.raises(TypeError, match="32-bit integers"):
        m.fill_next_token_bitmask(np.zeros((2, 1571), dtype=np.float32), 0)
    ro = np.zeros((2, 1571), dtype=np.int32)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        m.fill_next_token_bitmask(ro, 0)
    with pytest.raises(ValueError, match="contiguous"):
        m.fill_next_token_bitmask(np.zeros((2, 3142), dtype=np.int32)[:, ::2], 0)
    with pytest.raises(IndexError, match="row 2 is out of range"):
        m.fill_next_token_bitmask(np.zeros((2, 1571), dtype=np.int32), 2)
    with pytest.raises(IndexError):
        m.fill_next_token_bitmask(np.zeros((2, 1571), dtype=np.int32), -1)
    with pytest.raises(ValueError, match="3 dimensions"):
        m.fill_next_token_bitmask(np.zeros((1, 2, 1571), dtype=np.int32), 0)
    with pytest.raises(TypeError, match="got list"):
        m.fill_next_token_bitmask([0] * 1571, 0)
    with pytest.raises(ValueError, match="entries"):
        weather.matcher(entry="nope")
    with pytest.raises(ValueError, match="18|tokens"):
        weather.matcher(max_tokens=5)
    with pytest.raises(ValueError, match="max_rollback"):
        weather.matcher(max_rollback=-1)
    bm = np.zeros((2, 1571), dtype=np.int32)
    with pytest.raises(IndexError, match="3 matchers but the bitmask has 2 rows"):
        tooldec.fill_next_token_bitmask_batch([m, m.copy(), m.copy()], bm)
    with pytest.raises(TypeError, match="Matcher"):
        tooldec.fill_next_token_bitmask_batch([m, "x"], bm)
    with pytest.raises(ValueError, match="row 1 is given to two matchers"):
        tooldec.fill_next_token_bitmask_batch([m, m.copy()], bm, indices=[1, 1])


def test_one_dimensional_uint32_and_row_slices(weather):
    m = weather.matcher()
    ref = np.zeros((1, weather.mask_words), dtype=np.int32)
    m.fill_next_token_bitmask(ref, 0)
    flat = np.zeros(weather.mask_words, dtype=np.uint32)
    m.fill_next_token_bitmask(flat)
    assert (flat.view(np.int32) == ref[0]).all()
    big = np.full((6, weather.mask_words + 3), -1, dtype=np.int32)
    m.fill_next_token_bitmask(big[2:5], 1)  # a row slice, as EAGLE verification passes
    assert (big[3, : weather.mask_words] == ref[0]).all() and not big[3, weather.mask_words :].any()
    assert (big[[0, 1, 2, 4, 5]] == -1).all()
    import array

    arr = array.array("i", [0] * weather.mask_words)  # any buffer exporter
    m.fill_next_token_bitmask(arr)
    assert list(arr) == ref[0].tolist()


class FakeTensor:
    """A numpy-backed object with the torch.Tensor attributes the binding
    reads: data_ptr(), shape, stride() (in elements), dtype, device."""

    class _DType:
        def __init__(self, name):
            self.name = name

        def __str__(self):
            return f"torch.{self.name}"

    class _Device:
        def __init__(self, kind):
            self.type = kind

        def __str__(self):
            return self.type

    def __init__(self, array, device="cpu", dtype=None):
        self.array = array
        self.shape = tuple(array.shape)
        self.dtype = self._DType(dtype or str(array.dtype))
        self.device = self._Device(device)

    def data_ptr(self):
        return self.array.ctypes.data

    def stride(self):
        return tuple(s // self.array.itemsize for s in self.array.strides)


def test_torch_data_pointer_path(weather):
    tok = _GreedyCache.get(weather)
    matchers = [weather.matcher() for _ in range(3)]
    matchers[1].accept_tokens(tok.encode("Thought: hm\nAction: "))
    ref = np.zeros((3, weather.mask_words), dtype=np.int32)
    tooldec.fill_next_token_bitmask_batch(matchers, ref)
    backing = np.full((3, weather.mask_words + 5), -1, dtype=np.int32)
    t = FakeTensor(backing)
    for i, m in enumerate(matchers):
        m.fill_next_token_bitmask(t, i)
    assert (backing[:, : weather.mask_words] == ref).all() and not backing[:, weather.mask_words :].any()
    backing[:] = -1
    tooldec.fill_next_token_bitmask_batch(matchers, t)
    assert (backing[:, : weather.mask_words] == ref).all()
    with pytest.raises(ValueError, match="device 'cuda'.*CPU"):
        matchers[0].fill_next_token_bitmask(FakeTensor(backing, device="cuda"), 0)
    with pytest.raises(TypeError, match="torch.int64"):
        matchers[0].fill_next_token_bitmask(FakeTensor(backing.astype(np.int64)), 0)
    with pytest.raises(ValueError, match="words per row"):
        matchers[0].fill_next_token_bitmask(FakeTensor(backing[:, :100]), 0)
    with pytest.raises(ValueError, match="contiguous"):
        matchers[0].fill_next_token_bitmask(FakeTensor(backing.T.copy().T), 0)


def test_batch_fill_with_none_rows_and_indices(weather):
    tok = _GreedyCache.get(weather)
    a, b = weather.matcher(), weather.matcher()
    b.accept_tokens(tok.encode("Thought: x\nAction: get_"))
    ref = np.zeros((2, weather.mask_words), dtype=np.int32)
    a.fill_next_token_bitmask(ref, 0)
    b.fill_next_token_bitmask(ref, 1)
    bm = np.full((4, weather.mask_words), -1, dtype=np.int32)
    tooldec.fill_next_token_bitmask_batch([b, None, a], bm, indices=[3, 0, 1])
    assert (bm[3] == ref[1]).all() and (bm[1] == ref[0]).all()
    assert (bm[0] == -1).all() and (bm[2] == -1).all()  # None and unused rows untouched


def test_batch_fill_releases_the_gil(weather):
    """Threads filling their own bitmasks concurrently get the same masks."""
    tok = _GreedyCache.get(weather)
    texts = ["", "Thought: ", "Thought: x\nAction: ", "Thought: x\nAction: get_time\nAction Input: {"]
    matchers = []
    for s in texts:
        m = weather.matcher()
        m.accept_tokens(tok.encode(s))
        matchers.append(m)
    ref = np.zeros((len(texts), weather.mask_words), dtype=np.int32)
    tooldec.fill_next_token_bitmask_batch(matchers, ref)
    errors = []

    def work(seed):
        own = [m.copy() for m in matchers]
        bm = np.zeros_like(ref)
        for _ in range(200):
            bm[:] = seed
            tooldec.fill_next_token_bitmask_batch(own, bm)
            if not (bm == ref).all():
                errors.append(seed)
                return

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_apply_token_bitmask_numpy(weather):
    bm = np.zeros((2, 2), dtype=np.int32)
    bm[0, 0] = 0b1010
    bm[1, 1] = np.int32(-(2**31))  # bit 31 of word 1: token 63
    logits = np.zeros((2, 70), dtype=np.float32)
    tooldec.apply_token_bitmask(logits, bm)
    assert np.isfinite(logits[0]).nonzero()[0].tolist() == [1, 3]
    assert np.isfinite(logits[1]).nonzero()[0].tolist() == [63]  # 64..69: past the bitmask
    one = np.zeros(40, dtype=np.float64)
    tooldec.apply_token_bitmask(one, bm[0])
    assert np.isfinite(one).nonzero()[0].tolist() == [1, 3]
    rows = np.zeros((3, 64), dtype=np.float32)
    tooldec.apply_token_bitmask(rows, bm[:1], indices=[2])
    assert np.isfinite(rows[:2]).all() and np.isfinite(rows[2]).nonzero()[0].tolist() == [1, 3]
    assert tooldec.get_bitmask_shape(4, 50257) == (4, 1571)
    assert (tooldec.allocate_token_bitmask(2, 33) == -1).all()


class _GreedyCache:
    """One GreedyTokenizer per artifact (building one walks the vocabulary)."""

    _cache = {}

    @classmethod
    def get(cls, artifact):
        from helpers import GreedyTokenizer

        key = id(artifact)
        if key not in cls._cache:
            cls._cache[key] = GreedyTokenizer(artifact)
        return cls._cache[key]
