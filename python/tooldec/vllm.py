"""vLLM (v1 engine): the structured-output backend classes, for a vLLM patch
or plugin.

``TooldecBackend`` is a ``StructuredOutputBackend`` (``compile_grammar``,
``allocate_token_bitmask``, ``destroy``) and ``TooldecGrammar`` a
``StructuredOutputGrammar`` (``accept_tokens``, ``validate_tokens``,
``rollback``, ``fill_bitmask``, ``is_terminated``, ``reset``), with the
semantics of vLLM's own xgrammar backend:

* ``accept_tokens(request_id, tokens) -> bool``: advances token by token;
  False (after logging) at the first token the grammar refuses. Tokens after
  an accepted EOS are ignored (True), as speculative decoding can propose
  them.
* ``validate_tokens(tokens) -> list[int]``: the longest valid prefix of a
  draft, without advancing, ending at the first EOS; ``[]`` once
  terminated. ``-1`` padding ends it.
* ``rollback(n)``: undoes the last ``n`` accepted tokens (an EOS too);
  ``n <= 0`` does nothing; more than the capacity raises ``ValueError``.
  The capacity is fixed at creation: the engine's
  ``num_speculative_tokens + 1``.
* ``fill_bitmask(bitmask, idx)``: row ``idx`` of the CPU ``int32`` bitmask
  the backend allocated, ``ceil(vocab_size / 32)`` words of the model's
  logits size; ids past the artifact's vocabulary stay zero.

At creation the backend checks every configured artifact against the
engine's tokenizer (its vocabulary fingerprint, ``tooldec.vocab_fingerprint``)
and refuses one compiled for another vocabulary.

Requests name an artifact through their grammar string (see
``tooldec._specs``): ``structured_outputs={"grammar": "tooldec:weather"}``
or a structural tag ``{"tooldec": "weather", "entry": "start"}``. Other
grammars go to ``fallback`` (a backend class built with the same arguments,
e.g. vLLM's ``XgrammarBackend``) or are refused.

Matched against ``vllm/v1/structured_output/backend_types.py`` at
vllm-project/vllm@d26c81b6ef91 (the abstract classes), ``backend_xgrammar.py``
at @0b940c496a21 and the ``StructuredOutputManager.grammar_bitmask`` of
``vllm/v1/structured_output/__init__.py`` at @8ae7ba4d4db4 (how the engine
calls them).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from vllm.v1.structured_output.backend_types import (
    StructuredOutputBackend,
    StructuredOutputGrammar,
    StructuredOutputOptions,
)

from ._bitmask import allocate_token_bitmask
from ._specs import ArtifactsLike, check_width, load_artifacts, parse_spec, resolve
from ._tooldec import Artifact, Matcher
from ._vocab import check_vocabulary, vocab_fingerprint

logger = logging.getLogger(__name__)

__all__ = ["TooldecBackend", "TooldecGrammar", "configure", "install"]

_CONFIG: Dict[str, Any] = {"artifacts": None, "fallback": None}


def configure(artifacts: ArtifactsLike = None, fallback: Optional[type] = None) -> None:
    """Sets what every ``TooldecBackend`` created afterwards serves:
    ``artifacts`` (a path, an ``Artifact``, ``{name: path or Artifact}``;
    None: ``TOOLDEC_ARTIFACTS``) and the ``fallback`` backend class for
    other grammars."""
    _CONFIG["artifacts"] = artifacts
    _CONFIG["fallback"] = fallback


class TooldecGrammar(StructuredOutputGrammar):
    """One request's grammar: a tooldec matcher with a fixed rollback
    capacity."""

    def __init__(self, matcher: Matcher, vocab_size: int, artifact: Optional[Artifact] = None):
        self.matcher = matcher
        self.vocab_size = vocab_size
        self.artifact = artifact if artifact is not None else matcher.artifact
        self._eos = frozenset(self.artifact.eos_token_ids)
        self.num_processed_tokens = 0

    def accept_tokens(self, request_id: str, tokens: List[int]) -> bool:
        for t in tokens:
            if self.matcher.is_terminated():
                return True  # drafts past EOS: nothing left to constrain
            if not self.matcher.accept_token(int(t)):
                logger.error(
                    "tooldec: request %s: token %s is not allowed after %d tokens",
                    request_id,
                    t,
                    self.num_processed_tokens,
                )
                return False
            self.num_processed_tokens += 1
        return True

    def validate_tokens(self, tokens: List[int]) -> List[int]:
        if self.matcher.is_terminated():
            return []
        valid = list(tokens[: self.matcher.validate_tokens(tokens)])
        for i, t in enumerate(valid):
            if t in self._eos:
                return valid[: i + 1]  # nothing follows an EOS
        return valid

    def rollback(self, num_tokens: int) -> None:
        if num_tokens <= 0:
            return
        self.matcher.rollback(num_tokens)
        self.num_processed_tokens -= num_tokens

    def fill_bitmask(self, bitmask: Any, idx: int) -> None:
        self.matcher.fill_next_token_bitmask(bitmask, idx)

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def reset(self) -> None:
        self.num_processed_tokens = 0
        self.matcher.reset()

    def find_jump_string(self) -> Optional[str]:
        """The text the grammar forces next (jump-forward), or None."""
        forced = self.matcher.forced_bytes()
        try:
            return forced.decode("utf-8") or None
        except UnicodeDecodeError:
            return None


@dataclass
class TooldecBackend(StructuredOutputBackend):
    """Engine-level backend: built by vLLM as
    ``TooldecBackend(vllm_config, tokenizer=..., vocab_size=...)``."""

    def __post_init__(self) -> None:
        self.artifacts: Dict[str, Artifact] = load_artifacts(_CONFIG["artifacts"])
        fingerprint = None
        if self.tokenizer is not None:
            fingerprint = vocab_fingerprint(self.tokenizer)
        elif self.artifacts:
            # vLLM passes None only with skip_tokenizer_init.
            logger.warning("tooldec: no tokenizer: the artifacts' vocabulary is not checked")
        for name, art in self.artifacts.items():
            check_width(art, self.vocab_size, f"artifact {name!r}")
            check_vocabulary(art, fingerprint, f"artifact {name!r}")
        spec = getattr(self.vllm_config, "speculative_config", None)
        self.num_speculative_tokens = int(getattr(spec, "num_speculative_tokens", 0) or 0)
        # Verifying a draft advances through it and rolls it back; the
        # bonus token is one more.
        self.max_rollback = self.num_speculative_tokens + 1
        fallback = _CONFIG["fallback"]
        self.fallback: Optional[StructuredOutputBackend] = (
            fallback(self.vllm_config, tokenizer=self.tokenizer, vocab_size=self.vocab_size)
            if fallback is not None
            else None
        )

    def compile_grammar(
        self, request_type: StructuredOutputOptions, grammar_spec: str, **kwargs: Any
    ) -> StructuredOutputGrammar:
        spec = parse_spec(grammar_spec)
        if spec is None:
            if self.fallback is not None:
                return self.fallback.compile_grammar(request_type, grammar_spec, **kwargs)
            raise ValueError(
                f"tooldec: {request_type} grammar {grammar_spec[:80]!r} does not name a tooldec "
                "artifact ('tooldec:NAME' or {\"tooldec\": \"NAME\"}) and no fallback backend "
                "is configured"
            )
        art = resolve(self.artifacts, spec)
        matcher = art.matcher(
            entry=spec.entry,
            max_tokens=spec.max_tokens,
            max_rollback=self.max_rollback,
            tool=spec.tool,
        )
        return TooldecGrammar(matcher, self.vocab_size, art)

    def allocate_token_bitmask(self, max_num_seqs: int) -> Any:
        """An all-ones CPU ``int32`` bitmask ``(max_num_seqs, ceil(vocab_size
        / 32))``: a torch tensor when torch is installed (as vLLM expects),
        else numpy."""
        try:
            import torch
        except ImportError:
            return allocate_token_bitmask(max_num_seqs, self.vocab_size)
        return torch.full((max_num_seqs, (self.vocab_size + 31) // 32), -1, dtype=torch.int32)

    def destroy(self) -> None:
        if self.fallback is not None:
            self.fallback.destroy()
        self.artifacts = {}


def install(manager: Any, artifacts: ArtifactsLike = None, fallback: Optional[type] = None) -> None:
    """Makes a vLLM ``StructuredOutputManager`` (the engine core's
    ``scheduler.structured_output_manager``) serve structured outputs
    through tooldec: it only creates a backend when it has none, so this
    sets one before the first structured request."""
    if artifacts is not None or fallback is not None:
        configure(artifacts, fallback)
    manager.backend = TooldecBackend(
        manager.vllm_config,
        tokenizer=getattr(manager, "tokenizer", None),
        vocab_size=manager.vllm_config.model_config.get_vocab_size(),
    )
