"""What the real-engine tests share: the engine must be the installed
package (not a stand-in), SmolLM2-135M-Instruct from ``$TOOLDEC_DATA`` as
the model (its real logits, through transformers), a config-only model
directory for the engines' configuration classes, and the weather tools
compiled for SmolLM2's tokenizer in the Hermes format.

``python/test-engines.sh`` runs these tests in the engines' own virtual
environments with ``TOOLDEC_REQUIRE_ENGINES=1``: there a missing engine or
missing data fails instead of skipping.
"""

import json
import os
import pathlib
import shutil

import pytest

from conftest import STANDIN_USED

HERE = pathlib.Path(__file__).resolve().parent
WEATHER = HERE.parent.parent / "grammars" / "examples" / "weather.json"
SMOLLM2_GGUF = "models/smollm2-135m-instruct-q4_1/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_TOKENIZER = "tokenizers/smollm2-135m/tokenizer.json"
VOCAB = 49152
EOS = 2  # <|im_end|>


def missing(what: str, module: bool = False) -> None:
    if os.environ.get("TOOLDEC_REQUIRE_ENGINES") == "1":
        pytest.fail(f"{what} (TOOLDEC_REQUIRE_ENGINES=1)", pytrace=False)
    pytest.skip(what, allow_module_level=module)


def require_engine(name: str) -> None:
    """Skips (fails under TOOLDEC_REQUIRE_ENGINES=1) unless the real
    package ``name`` is installed."""
    if STANDIN_USED.get(name, True):
        missing(
            f"{name} is not installed: python/test-engines.sh runs this test against it",
            module=True,
        )


def data_file(rel: str) -> pathlib.Path:
    data = os.environ.get("TOOLDEC_DATA")
    if not data:
        missing("TOOLDEC_DATA unset: the real-engine tests need SmolLM2 from the data")
    p = pathlib.Path(data) / rel
    if not p.is_file():
        pytest.fail(f"TOOLDEC_DATA={data} has no {rel}")
    return p


def model_dir(tmp: pathlib.Path) -> pathlib.Path:
    """A SmolLM2 model directory without weights: what vLLM's and SGLang's
    configuration classes read (config, tokenizer)."""
    d = tmp / "smollm2-135m-config"
    d.mkdir(exist_ok=True)
    shutil.copy(HERE / "fixtures" / "smollm2-config.json", d / "config.json")
    shutil.copy(data_file(SMOLLM2_TOKENIZER), d / "tokenizer.json")
    (d / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": "<|im_start|>",
                "eos_token": "<|im_end|>",
                "pad_token": "<|im_end|>",
                "unk_token": "<|endoftext|>",
                "model_max_length": 8192,
                "clean_up_tokenization_spaces": False,
            }
        )
    )
    return d


class SmolLM2:
    """SmolLM2-135M-Instruct in transformers (dequantized from the GGUF):
    next-token logits for a batch of token sequences, without a cache."""

    def __init__(self) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.set_num_threads(1)
        gguf = data_file(SMOLLM2_GGUF)
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        self.model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
        )
        self.model.eval()

    def prompt(self, question: str, tools: list) -> list:
        """The chat template's prompt: a short system message naming the
        tools (kept short: the tests run the model without a KV cache) and
        the question."""
        names = ", ".join(t["function"]["name"] for t in tools)
        system = f"Answer with a <tool_call> of one of: {names}."
        msgs = [{"role": "system", "content": system}, {"role": "user", "content": question}]
        text = self.tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
        return self.tokenizer.encode(text, add_special_tokens=False)

    def left_padded(self, seqs: list) -> tuple:
        """``(input_ids, attention_mask)`` of the sequences, padded on the
        left with EOS, as ``generate`` takes a batch."""
        torch = self.torch
        n = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), n), EOS, dtype=torch.long)
        mask = torch.zeros((len(seqs), n), dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, n - len(s) :] = torch.tensor(s)
            mask[i, n - len(s) :] = 1
        return ids, mask

    def logits(self, seqs: list) -> "object":
        """``(len(seqs), VOCAB)`` float32 logits after each sequence (left
        padded, with an attention mask)."""
        torch = self.torch
        ids, mask = self.left_padded(seqs)
        with torch.no_grad():
            out = self.model(input_ids=ids, attention_mask=mask)
        return out.logits[:, -1, :VOCAB].float().clone()

    def logits_tail(self, seq: list, n: int) -> "object":
        """``(n, VOCAB)`` float32 logits after each of the last ``n``
        prefixes of ``seq`` (one forward pass): what a target model
        computes to verify ``n - 1`` draft tokens and sample a bonus one."""
        torch = self.torch
        with torch.no_grad():
            out = self.model(input_ids=torch.tensor([seq]))
        return out.logits[0, -n:, :VOCAB].float().clone()


_MODEL = None


def smollm2() -> SmolLM2:
    """The model, loaded once per test run."""
    global _MODEL
    if _MODEL is None:
        _MODEL = SmolLM2()
    return _MODEL


def weather_smollm2(tools_path: pathlib.Path, **kwargs):
    """The weather tools compiled for SmolLM2's tokenizer, Hermes format,
    its ``calls`` entry (one or more calls, no text) unless ``entry`` says
    otherwise."""
    kwargs.setdefault("entry", "calls")
    import tooldec

    c = tooldec.Compiler(str(data_file(SMOLLM2_TOKENIZER)), eos="<|im_end|>")
    return c.compile(pathlib.Path(tools_path), format="hermes", vocab_size=VOCAB, **kwargs)
