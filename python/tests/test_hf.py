"""tooldec.hf.ToolCallLogitsProcessor, driven as transformers' generate() does.

``generate_like`` follows ``GenerationMixin._sample`` (transformers
src/transformers/generation/utils.py, huggingface/transformers@aa5108b44996)
with numpy in place of torch: the model's last-position logits go through
the ``LogitsProcessorList``, a token is sampled (or the argmax taken), rows
that already finished get ``pad_token_id`` instead, the token is appended to
``input_ids``, and the EOS and max-length stopping criteria update the
unfinished rows.
"""

import numpy as np
import pytest

import transformers
import tooldec
from conftest import record
from helpers import GreedyTokenizer, check_output, random_logits, sample
from tooldec.hf import ToolCallLogitsProcessor

MODEL_VOCAB = 50304  # GPT-2 with its embedding padded to a multiple of 64


class FakeModel:
    """Random logits; rows with a target text lean strongly toward its
    tokens (a model that knows the answer), the others wander until the
    token budget steers them to a complete call."""

    def __init__(self, rng, targets, eos):
        self.rng, self.targets, self.eos = rng, targets, eos

    def __call__(self, input_ids, step):
        logits = random_logits(self.rng, input_ids.shape[0], MODEL_VOCAB, [self.eos])
        for i, target in enumerate(self.targets):
            if target is not None:
                logits[i, (target + [self.eos])[min(step, len(target))]] += 20.0
        return logits


def generate_like(input_ids, logits_processor, max_new_tokens, eos, pad, rng, do_sample=True, model=None):
    batch, prompt_len = input_ids.shape
    unfinished = np.ones(batch, dtype=np.int64)
    model = model or FakeModel(rng, [None] * batch, eos)
    while True:
        # "model forward": the next-token logits of every row.
        next_token_logits = model(input_ids, input_ids.shape[1] - prompt_len)
        next_token_scores = logits_processor(input_ids, next_token_logits)
        if do_sample:
            next_tokens = np.array(sample(rng, next_token_scores), dtype=np.int64)
        else:
            next_tokens = np.argmax(next_token_scores, axis=-1).astype(np.int64)
        next_tokens = next_tokens * unfinished + pad * (1 - unfinished)
        input_ids = np.concatenate([input_ids, next_tokens[:, None]], axis=-1)
        unfinished = unfinished & (next_tokens != eos)
        if input_ids.shape[1] - prompt_len >= max_new_tokens:
            unfinished[:] = 0
        if unfinished.max() == 0:
            return input_ids


def generated_calls(artifact, tools, sequences, prompt_len, eos, max_tokens):
    lengths = []
    for row in sequences[:, prompt_len:].tolist():
        out = row[: row.index(eos) + 1] if eos in row else row
        check_output(artifact, tools, out)
        # generate() stops before the processor sees the last token: replay.
        m = artifact.matcher(max_tokens=max_tokens)
        assert m.accept_tokens(out) == len(out) and m.is_accepting()
        lengths.append(len(out))
    return lengths


@pytest.mark.parametrize("do_sample", [True, False])
@pytest.mark.parametrize("pad", [50256, 0])
def test_generate_loop(weather, tools, do_sample, pad):
    rng = np.random.default_rng(17 + pad + do_sample)
    eos = weather.eos_token_ids[0]
    proc = ToolCallLogitsProcessor(weather, max_tokens=40)
    assert isinstance(proc, transformers.LogitsProcessor)
    processors = transformers.LogitsProcessorList([proc])
    prompts = rng.integers(0, 50000, size=(4, 7))
    tok = GreedyTokenizer(weather)
    targets = [
        tok.encode('Thought: Paris.\nAction: get_weather\nAction Input: {"city": "Paris"}'),
        tok.encode('Thought: time\nAction: get_time\nAction Input: {"timezone": "UTC"}'),
        None,
        tok.encode("Thought: no idea, rambling on"),  # a model that does not stop
    ]
    model = FakeModel(rng, targets, eos)
    seqs = generate_like(prompts, processors, 40, eos, pad, rng, do_sample, model)
    assert (seqs[:, :7] == prompts).all()
    lengths = generated_calls(weather, tools, seqs, 7, eos, 40)
    assert lengths[0] < 40 and lengths[1] < 40  # finished early, then padded
    assert (seqs[0, 7 + lengths[0] :] == pad).all()
    record(
        f"hf: generate-like loop (do_sample={do_sample}, pad={pad}): 4 rows, "
        f"{seqs.shape[1] - 7} steps, calls of {min(lengths)}-{max(lengths)} tokens, all valid"
    )


def test_processor_masks_and_errors(weather, weather_path):
    rng = np.random.default_rng(1)
    proc = ToolCallLogitsProcessor(str(weather_path), entry="parallel")
    ids = rng.integers(0, 50000, size=(2, 5))
    scores = random_logits(rng, 2, MODEL_VOCAB)
    out = proc(ids, scores)
    assert out is not scores and np.isfinite(scores).all()  # the input is left alone
    allowed = np.isfinite(out)
    assert not allowed[:, weather.token_count :].any()  # padding columns
    m = weather.matcher(entry="parallel")
    assert set(np.nonzero(allowed[0])[0]) == {t for t in range(weather.mask_width) if m.is_allowed(t)}
    # The next call carries the sampled token; anything else is refused.
    t = int(np.nonzero(allowed[0])[0][0])
    bad = int(np.nonzero(~allowed[1, : weather.mask_width])[0][0])
    with pytest.raises(ValueError, match="row 1: token"):
        proc(np.concatenate([ids, [[t], [bad]]], axis=1), scores)
    proc.reset()
    proc(ids, scores)
    with pytest.raises(ValueError, match="call reset"):
        proc(ids, scores)  # a second generate() without reset()
    with pytest.raises(ValueError, match="words per row"):
        ToolCallLogitsProcessor(weather)(ids, scores[:, :1000])  # logits narrower than the vocabulary
    assert not proc.is_done()
