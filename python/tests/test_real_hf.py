"""tooldec.hf inside transformers itself (the installed package, on CPU):
``generate()`` on SmolLM2-135M-Instruct (from its GGUF) with the tooldec
logits processor, greedy, sampled, batched with left padding, and beam
search; the budget from ``generate``'s own ``max_new_tokens``
(``tooldec.hf.generate``); ``min_new_tokens`` longer than the call refused
with a clear message.

``python/test-engines.sh`` runs it in transformers' environment; elsewhere
it skips (see ``real_engines``).
"""

import json

import pytest

from conftest import record
from helpers import check_output
from real_engines import EOS, WEATHER, require_engine, smollm2

require_engine("transformers")

import tooldec.hf as thf  # noqa: E402

@pytest.fixture(scope="module")
def art(smollm2_weather):
    return smollm2_weather


@pytest.fixture(scope="module")
def tools():
    with open(WEATHER) as f:
        spec = json.load(f)
    return spec, {t["function"]["name"]: t["function"]["parameters"] for t in spec}


def batch(model, questions, spec):
    """Left-padded prompts, as generate() takes a batch."""
    ids, mask = model.left_padded([model.prompt(q, spec) for q in questions])
    return {"input_ids": ids, "attention_mask": mask}, ids.shape[1]


def outputs(out, n):
    return [[t for t in row[n:].tolist() if t != EOS] for row in out]


def test_generate_greedy_sampled_batched_and_beam_search(art, tools):
    """Every row of every mode ends with a complete, valid call within
    max_new_tokens, which reached the processor without being repeated."""
    model = smollm2()
    spec, schemas = tools
    inputs, n = batch(
        model,
        ["Weather in Lyon for 2 days?", "What time is it in Tokyo?", "Flights from CDG to JFK for 2?"],
        spec,
    )
    modes = {
        "greedy": dict(do_sample=False),
        "sampled": dict(do_sample=True, temperature=0.8, top_k=40),
        "beam search (3 beams)": dict(do_sample=False, num_beams=3),
    }
    rows = 0
    for label, kw in modes.items():
        model.torch.manual_seed(3)
        limit = art.min_tokens + 12
        out = thf.generate(
            model.model, art, **inputs, max_new_tokens=limit, pad_token_id=EOS, **kw
        )
        for row in outputs(out, n):
            assert len(row) <= limit, label
            check_output(art, schemas, row)
            rows += 1
    record(
        f"transformers {__import__('transformers').__version__} generate() on SmolLM2: "
        f"{', '.join(modes)}; {rows} rows, batch of 3 left-padded, max_new_tokens "
        f"{art.min_tokens + 12} (the processor's budget), every row a complete valid call"
    )


def test_min_new_tokens_longer_than_the_call_is_refused_clearly(art, tools):
    model = smollm2()
    spec, _ = tools
    inputs, _ = batch(model, ["What time is it in Tokyo?"], spec)
    with pytest.raises(ValueError, match="min_new_tokens longer than the call"):
        thf.generate(
            model.model,
            art,
            **inputs,
            max_new_tokens=art.min_tokens + 40,
            min_new_tokens=art.min_tokens + 30,
            pad_token_id=EOS,
            do_sample=False,
        )
