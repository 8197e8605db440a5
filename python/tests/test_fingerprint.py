"""The vocabulary fingerprint of an engine's tokenizer, and the check every
adapter runs at load.

``tooldec.vocab_fingerprint`` reads a tokenizer (a transformers fast
tokenizer, a ``tokenizers.Tokenizer``, a tokenizer.json path or text) with
the compiler's code and must give the fingerprint ``tooldec-compile
--tokenizer`` writes into the artifact; the HF logits processor, the vLLM
backend and the SGLang backend take the engine's tokenizer as the engines
pass it and refuse an artifact compiled for another vocabulary with the
runtime's message.
"""

import json
from types import SimpleNamespace

import pytest

import tokenizers
import transformers
import tooldec
import tooldec.sglang as tsg
import tooldec.vllm as tv
from conftest import record
from sglang.srt.constrained import base_grammar_backend as bgb
from sglang.srt.runtime_context import publish
from sglang.srt.server_args import ServerArgs
from tooldec.hf import ToolCallLogitsProcessor

REFUSED = "artifact was compiled for vocabulary"


def fast(text):
    """The tokenizer an engine holds: a transformers fast tokenizer."""
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizers.Tokenizer.from_str(text))


@pytest.fixture(scope="module")
def text(bytes_tokenizer_path):
    return bytes_tokenizer_path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def changed(text):
    """The same tokenizer with one token's text changed ("er" -> "es")."""
    tok = json.loads(text)
    vocab = tok["model"]["vocab"]
    vocab["es"] = vocab.pop("er")
    tok["model"]["merges"] = [m for m in tok["model"]["merges"] if m != "e r"] + ["e s"]
    return json.dumps(tok, ensure_ascii=False)


def by_hand():
    """The fixture's fingerprint pushed token by token: ids 0-255 are the
    bytes in order, then " t", " th", "er" and the special <|endoftext|>."""
    f = tooldec.Fingerprint(260)
    for b in range(256):
        f.push_text(bytes([b]))
    for t in (b" t", b" th", b"er"):
        f.push_text(t)
    f.push_special("<|endoftext|>")
    assert (f.tokens, f.pushed) == (260, 260)
    return f.finish()


def test_every_form_of_a_tokenizer_gives_one_fingerprint(text, bytes_tokenizer_path):
    want = by_hand()
    forms = {
        "json text": text,
        "path str": str(bytes_tokenizer_path),
        "pathlib": bytes_tokenizer_path,
        "tokenizers.Tokenizer": tokenizers.Tokenizer.from_file(str(bytes_tokenizer_path)),
        "fast tokenizer": fast(text),
        "fingerprint": want,
    }
    for name, form in forms.items():
        assert tooldec.vocab_fingerprint(form) == want, name


def test_builder_and_reader_refuse_what_they_cannot_use(text):
    f = tooldec.Fingerprint(2)
    f.push_special(b"<s>")
    with pytest.raises(ValueError, match="1 tokens pushed for a vocabulary of 2"):
        f.finish()
    f.push_unused()
    with pytest.raises(ValueError, match="already pushed"):
        f.push_text(b"x")
    assert len(f.finish()) == 32
    with pytest.raises(TypeError, match="cannot read the vocabulary of a object"):
        tooldec.vocab_fingerprint(object())
    with pytest.raises(ValueError, match="32 bytes, got 3"):
        tooldec.vocab_fingerprint(b"abc")
    # The tokenizers-crate reader said "cannot load tokenizer", the
    # compiler's own reader names what is missing.
    with pytest.raises(ValueError, match=r'cannot load tokenizer|no "model"'):
        tooldec.vocab_fingerprint("{}")
    wordpiece = json.loads(text)
    wordpiece["model"] = {
        "type": "WordPiece",
        "unk_token": "!",
        "continuing_subword_prefix": "##",
        "max_input_chars_per_word": 100,
        "vocab": {"!": 0, "a": 1},
    }
    wordpiece["decoder"] = {"type": "WordPiece", "prefix": "##", "cleanup": True}
    with pytest.raises(ValueError, match="WordPiece"):
        tooldec.vocab_fingerprint(json.dumps(wordpiece))


def test_the_artifact_knows_its_tokenizer(bytes_art, weather, text, changed):
    fp = tooldec.vocab_fingerprint(text)
    assert bytes_art.vocab_fingerprint == fp
    bytes_art.check_vocabulary(fp)
    assert tooldec.vocab_fingerprint(changed) != fp
    with pytest.raises(ValueError, match=REFUSED):
        bytes_art.check_vocabulary(tooldec.vocab_fingerprint(changed))
    with pytest.raises(ValueError, match=REFUSED):
        weather.check_vocabulary(fp)


def test_hf_processor_checks_the_tokenizer(bytes_art, weather, text, changed):
    proc = ToolCallLogitsProcessor(bytes_art, tokenizer=fast(text))
    assert proc.artifact is bytes_art
    for art, tok in ((bytes_art, changed), (weather, text)):
        with pytest.raises(ValueError, match=f"the artifact: {REFUSED}"):
            ToolCallLogitsProcessor(art, tokenizer=fast(tok))
    ToolCallLogitsProcessor(weather)  # no tokenizer: nothing to check


def vllm_backend(artifacts, tokenizer, vocab_size):
    tv.configure(artifacts)
    try:
        config = SimpleNamespace(
            speculative_config=None,
            model_config=SimpleNamespace(get_vocab_size=lambda: vocab_size),
        )
        return tv.TooldecBackend(config, tokenizer=tokenizer, vocab_size=vocab_size)
    finally:
        tv.configure(None)


def test_vllm_backend_checks_the_tokenizer(bytes_art, weather_path, text, changed):
    b = vllm_backend({"bytes": bytes_art}, fast(text), 260)
    assert set(b.artifacts) == {"bytes"}
    b.destroy()
    with pytest.raises(ValueError, match=f"artifact 'bytes': {REFUSED}"):
        vllm_backend({"bytes": bytes_art}, fast(changed), 260)
    with pytest.raises(ValueError, match=f"artifact 'weather': {REFUSED}"):
        vllm_backend({"weather": str(weather_path)}, fast(text), 50304)


def sglang_backend(artifacts, tokenizer, vocab_size):
    tsg.register(artifacts=artifacts)
    args = ServerArgs(model_path="m", grammar_backend="tooldec")
    publish(args, role="scheduler")
    return bgb.create_grammar_backend(args, tokenizer=tokenizer, vocab_size=vocab_size, eos_token_ids=None)


def test_sglang_backend_checks_the_tokenizer(bytes_art, weather_path, text, changed):
    b = sglang_backend({"bytes": bytes_art}, fast(text), 260)
    assert isinstance(b, tsg.TooldecGrammarBackend)
    with pytest.raises(ValueError, match=f"artifact 'bytes': {REFUSED}"):
        sglang_backend({"bytes": bytes_art}, fast(changed), 260)
    with pytest.raises(ValueError, match=f"artifact 'weather': {REFUSED}"):
        sglang_backend({"weather": str(weather_path)}, fast(text), 50304)


def test_real_tokenizers_match_their_artifacts(data_dir, qwen, weather):
    """Qwen2.5's tokenizer.json gives the fingerprint tooldec-compile
    --tokenizer wrote (python/test.sh compiled the qwen artifact from it),
    through every form; GPT-2's is the built-in GPT-2 vocabulary's."""
    qwen_json = data_dir / "tokenizers" / "qwen2.5" / "tokenizer.json"
    fp = tooldec.vocab_fingerprint(qwen_json)
    assert fp == qwen.vocab_fingerprint
    assert tooldec.vocab_fingerprint(fast(qwen_json.read_text(encoding="utf-8"))) == fp
    assert tooldec.vocab_fingerprint(qwen_json.parent) == fp
    ToolCallLogitsProcessor(qwen, tokenizer=str(qwen_json))
    b = vllm_backend({"qwen": qwen}, fast(qwen_json.read_text(encoding="utf-8")), 151936)
    b.destroy()
    with pytest.raises(ValueError, match=REFUSED):
        ToolCallLogitsProcessor(weather, tokenizer=qwen_json)
    gpt2 = tooldec.vocab_fingerprint(data_dir / "tokenizers" / "gpt2" / "tokenizer.json")
    assert gpt2 == weather.vocab_fingerprint
    record(f"fingerprint: qwen2.5 tokenizer.json = artifact's sha256 {fp[:8].hex()}...")
