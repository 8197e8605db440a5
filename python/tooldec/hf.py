"""Hugging Face transformers: a ``LogitsProcessor`` that masks every token
that would break the tool call.

    from transformers import AutoModelForCausalLM, AutoTokenizer
    import tooldec
    from tooldec.hf import ToolCallLogitsProcessor

    art = tooldec.Artifact.open("weather-gpt2.tdm")
    proc = ToolCallLogitsProcessor(art, max_tokens=128, tokenizer=tokenizer)
    out = model.generate(**inputs, logits_processor=[proc], max_new_tokens=128,
                         do_sample=True, pad_token_id=tokenizer.eos_token_id)

One matcher per batch row, created on the first call (when the batch size
is known). From the second call on, the last token of each row is the one
sampled after the previous call, and is accepted. Rows whose matcher has
terminated (EOS accepted) are left alone: ``generate`` pads finished rows.
Greedy and sampling decoding; beam search reorders rows between steps and
is not supported. Works with torch tensors (any device; the mask is built on
the CPU and moved) and with numpy arrays. Subclasses
``transformers.LogitsProcessor`` when transformers is importable.
"""

from __future__ import annotations

from typing import Any, List, Optional

from ._bitmask import apply_token_bitmask
from ._specs import tool_of
from ._tooldec import Artifact, Matcher, fill_next_token_bitmask_batch
from ._vocab import check_vocabulary, vocab_fingerprint

try:  # the real transformers (or a test's stand-in of it)
    from transformers import LogitsProcessor as _LogitsProcessor
except ImportError:  # usable without transformers: any callable list works
    _LogitsProcessor = object  # type: ignore[assignment,misc]

__all__ = ["ToolCallLogitsProcessor"]


def _to_list(row: Any) -> List[int]:
    if hasattr(row, "tolist"):
        return [int(t) for t in row.tolist()]
    return [int(t) for t in row]


class ToolCallLogitsProcessor(_LogitsProcessor):  # type: ignore[misc,valid-type]
    """Masks the logits of tokens that would not continue a valid tool call.

    ``artifact``: an ``Artifact`` or the path of a ``.tdm`` file.
    ``entry``: the format's entry point (default: its first).
    ``max_tokens``: complete the call within this many generated tokens, EOS
    included (pass ``generate``'s ``max_new_tokens``); default: the
    artifact's own, else none.
    ``tokenizer``: the model's tokenizer (anything ``tooldec.vocab_fingerprint``
    takes): the artifact is refused (``ValueError``) unless it was compiled
    for that vocabulary. A logits processor never sees the tokenizer
    otherwise, so without it nothing is checked.
    ``tool``: the one tool the calls may name (a tool's name, or an OpenAI
    ``tool_choice`` naming a function), from the same artifact.
    """

    def __init__(
        self,
        artifact: Any,
        entry: Optional[str] = None,
        max_tokens: Optional[int] = None,
        tokenizer: Any = None,
        tool: Any = None,
    ) -> None:
        self.artifact = artifact if isinstance(artifact, Artifact) else Artifact.open(artifact)
        if tokenizer is not None:
            check_vocabulary(self.artifact, vocab_fingerprint(tokenizer), "the artifact")
        self.entry = entry
        self.max_tokens = max_tokens
        # Validate the arguments now rather than on the first step.
        self.tool = tool if tool is None or isinstance(tool, str) else tool_of(tool)
        self._template = self.artifact.matcher(
            entry=entry, max_tokens=max_tokens, max_rollback=0, tool=self.tool
        )
        self.matchers: List[Matcher] = []
        self._length: Optional[int] = None
        self._bitmask = None

    def reset(self) -> None:
        """Forget the batch: the next call starts a new generation."""
        self.matchers = []
        self._length = None

    def is_done(self) -> bool:
        """Every row's call is complete and terminated by EOS."""
        return bool(self.matchers) and all(m.is_terminated() for m in self.matchers)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        batch, length = int(input_ids.shape[0]), int(input_ids.shape[-1])
        if self._length is None:
            self.matchers = [self._template.copy() for _ in range(batch)]
        else:
            if batch != len(self.matchers) or length != self._length + 1:
                raise ValueError(
                    f"tooldec: expected {len(self.matchers)} rows of {self._length + 1} tokens, "
                    f"got {batch} rows of {length}: call reset() between generate() calls "
                    "(beam search is not supported)"
                )
            last = _to_list(input_ids[:, -1])
            for i, (m, t) in enumerate(zip(self.matchers, last)):
                if m.is_terminated():
                    continue  # a finished row: generate() pads it
                if not m.accept_token(t):
                    raise ValueError(
                        f"tooldec: row {i}: token {t} ({self.artifact.token_bytes(t)!r}) does not "
                        "continue the tool call; was it sampled from the masked scores?"
                    )
        self._length = length

        import numpy as np

        vocab = int(scores.shape[-1])
        words = (vocab + 31) // 32
        if self._bitmask is None or self._bitmask.shape != (batch, words):
            self._bitmask = np.zeros((batch, words), dtype=np.int32)
        fill_next_token_bitmask_batch(self.matchers, self._bitmask)
        if type(scores).__module__.split(".")[0] == "torch":
            out = scores.clone()
        else:
            out = np.array(scores, copy=True)
        return apply_token_bitmask(out, self._bitmask)
