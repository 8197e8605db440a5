"""Hugging Face transformers: a ``LogitsProcessor`` that masks every token
that would break the tool call.

    from transformers import AutoModelForCausalLM, AutoTokenizer
    import tooldec
    from tooldec.hf import ToolCallLogitsProcessor

    art = tooldec.Artifact.open("weather-gpt2.tdm")
    proc = ToolCallLogitsProcessor(art, max_tokens=128, tokenizer=tokenizer)
    out = model.generate(**inputs, logits_processor=[proc], max_new_tokens=128,
                         do_sample=True, pad_token_id=tokenizer.eos_token_id)

``tooldec.hf.generate(model, art, **kwargs)`` does the same and gives the
processor ``generate``'s own ``max_new_tokens`` (or the model's generation
config's) as its budget, so it is written once.

One matcher per batch row, created on the first call (when the batch size
is known). Each later call finds, for each row, the matcher of the row that
held its tokens but the last one at the previous call, and accepts that
last token: rows may be reordered and duplicated between steps, as beam
search does (its scores are log-probabilities; masked tokens get ``-inf``
all the same). Rows whose matcher has terminated (EOS accepted) are left
alone: ``generate`` pads finished rows. Works with torch tensors (any
device; the mask is built on the CPU and moved) and with numpy arrays.
Subclasses ``transformers.LogitsProcessor`` when transformers is
importable.
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

__all__ = ["ToolCallLogitsProcessor", "generate"]


def _to_list(row: Any) -> List[int]:
    if hasattr(row, "tolist"):
        return [int(t) for t in row.tolist()]
    return [int(t) for t in row]


def _to_float_list(row: Any) -> List[float]:
    if hasattr(row, "tolist"):
        return [float(t) for t in row.tolist()]
    return [float(t) for t in row]


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
        # Each row's generated tokens at the last call, which the next
        # call's rows extend by one.
        self._rows: List[tuple] = []
        self._start: Optional[int] = None
        self._length: Optional[int] = None
        self._bitmask = None

    def reset(self) -> None:
        """Forget the batch: the next call starts a new generation."""
        self.matchers = []
        self._rows = []
        self._start = None
        self._length = None

    def is_done(self) -> bool:
        """Every row's call is complete and terminated by EOS."""
        return bool(self.matchers) and all(m.is_terminated() for m in self.matchers)

    def _advance(self, input_ids: Any, batch: int, length: int) -> None:
        """Each row's matcher: its parent row's, advanced by its last token."""
        if self._length is None or self._start is None:
            self.matchers = [self._template.copy() for _ in range(batch)]
            self._rows = [() for _ in range(batch)]
            self._start = length
            return
        if length != self._length + 1:
            raise ValueError(
                f"tooldec: expected rows of {self._length + 1} tokens, got {length}: call "
                "reset() between generate() calls"
            )
        by_row = {row: i for i, row in enumerate(self._rows)}
        rows = [tuple(_to_list(r)) for r in input_ids[:, self._start :]]
        parents = []
        for i, row in enumerate(rows):
            p = by_row.get(row[:-1])
            if p is None:
                raise ValueError(
                    f"tooldec: row {i} does not extend any row of the previous step: call "
                    "reset() between generate() calls"
                )
            parents.append(p)
        shared = {p for p in parents if parents.count(p) > 1}
        matchers = []
        for i, (row, p) in enumerate(zip(rows, parents)):
            m = self.matchers[p].copy() if p in shared else self.matchers[p]
            t = row[-1]
            if not m.is_terminated() and not m.accept_token(t):
                raise ValueError(
                    f"tooldec: row {i}: token {t} ({self.artifact.token_bytes(t)!r}) does not "
                    "continue the tool call; was it sampled from the masked scores?"
                )
            matchers.append(m)
        self.matchers, self._rows = matchers, rows

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        batch, length = int(input_ids.shape[0]), int(input_ids.shape[-1])
        self._advance(input_ids, batch, length)
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
        out = apply_token_bitmask(out, self._bitmask)
        self._check_rows(out)
        return out

    def _check_rows(self, scores: Any) -> None:
        """A row with every score ``-inf`` has nothing to sample: the mask
        allowed only tokens another processor had already banned (EOS, by
        ``min_new_tokens`` longer than the call). Said here, instead of
        ``generate`` picking token 0 or sampling NaN."""
        top = scores.max(-1)
        top = top.values if hasattr(top, "values") else top
        dead = [i for i, v in enumerate(_to_float_list(top)) if v == float("-inf")]
        for i in dead:
            if self.matchers[i].is_terminated():
                continue
            only_eos = self.matchers[i].is_accepting()
            raise ValueError(
                f"tooldec: row {i}: every token the call allows here has a score of -inf"
                + (
                    ": the call is complete and only EOS may follow, but EOS is banned "
                    "(min_new_tokens longer than the call?)"
                    if only_eos
                    else " (another logits processor banned them)"
                )
            )


def generate(model: Any, artifact: Any, *args: Any, **kwargs: Any) -> Any:
    """``model.generate(*args, **kwargs)`` with a ``ToolCallLogitsProcessor``
    first among ``logits_processor``, whose budget is the generation's own
    ``max_new_tokens`` (the keyword, or the model's ``generation_config``;
    an ``artifact``'s own budget when neither has one). Keywords for the
    processor: ``entry``, ``tokenizer``, ``tool``. Returns what ``generate``
    returns; the processor is ``kwargs["logits_processor"][0]``."""
    proc_kwargs = {k: kwargs.pop(k) for k in ("entry", "tokenizer", "tool") if k in kwargs}
    max_new = kwargs.get("max_new_tokens")
    if max_new is None:
        config = kwargs.get("generation_config") or getattr(model, "generation_config", None)
        max_new = getattr(config, "max_new_tokens", None)
    proc = ToolCallLogitsProcessor(artifact, max_tokens=max_new, **proc_kwargs)
    processors = list(kwargs.pop("logits_processor", None) or [])
    try:
        from transformers import LogitsProcessorList

        kwargs["logits_processor"] = LogitsProcessorList([proc] + processors)
    except ImportError:
        kwargs["logits_processor"] = [proc] + processors
    return model.generate(*args, **kwargs)
