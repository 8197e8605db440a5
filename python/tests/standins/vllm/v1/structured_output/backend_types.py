"""Stand-in for ``vllm/v1/structured_output/backend_types.py`` at
vllm-project/vllm@d26c81b6ef91 (without torch).

A structured-output backend has two levels:

* ``StructuredOutputBackend`` (a dataclass of ``vllm_config``,
  ``tokenizer``, ``vocab_size``; one per engine): ``compile_grammar(
  request_type, grammar_spec)`` returns a request's grammar,
  ``allocate_token_bitmask(max_num_seqs)`` the batch bitmask (the engine
  allocates ``max_num_seqs * (1 + num_speculative_tokens)`` rows, one per
  position a token may be sampled at), ``destroy()`` cleans up.
* ``StructuredOutputGrammar`` (one per request): ``accept_tokens(request_id,
  tokens) -> bool`` (advance; False if the grammar refuses),
  ``validate_tokens(tokens) -> list[int]`` (the accepted prefix of a draft,
  without advancing), ``rollback(num_tokens)`` (undo, counters included),
  ``fill_bitmask(bitmask, batch_index)`` (write one row),
  ``is_terminated()``, ``reset()``.
"""

import enum
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any


class StructuredOutputOptions(enum.Enum):
    JSON = enum.auto()
    JSON_OBJECT = enum.auto()
    REGEX = enum.auto()
    GRAMMAR = enum.auto()
    CHOICE = enum.auto()
    STRUCTURAL_TAG = enum.auto()


StructuredOutputKey = tuple  # tuple[StructuredOutputOptions, str]


class StructuredOutputGrammar(ABC):
    """Request-level backend for structured output requests."""

    @abstractmethod
    def accept_tokens(self, request_id: str, tokens: list) -> bool:
        """Advance over ``tokens``; True when all were accepted."""

    @abstractmethod
    def validate_tokens(self, tokens: list) -> list:
        """The prefix of ``tokens`` the grammar accepts, without advancing."""

    @abstractmethod
    def rollback(self, num_tokens: int) -> None:
        """Undo the last ``num_tokens`` tokens and the processed-token count."""

    @abstractmethod
    def fill_bitmask(self, bitmask: Any, batch_index: int) -> None:
        """Write the allowed-token mask into row ``batch_index``."""

    @abstractmethod
    def is_terminated(self) -> bool:
        """Whether the grammar has reached its end (EOS accepted)."""

    @abstractmethod
    def reset(self):
        """Back to the initial state."""


@dataclass
class StructuredOutputBackend(ABC):
    """Engine-level backend for structured output requests."""

    vllm_config: Any
    tokenizer: Any
    vocab_size: int

    @abstractmethod
    def compile_grammar(
        self, request_type: StructuredOutputOptions, grammar_spec: str
    ) -> StructuredOutputGrammar:
        """Compile a grammar specification into a request's grammar."""

    @abstractmethod
    def allocate_token_bitmask(self, max_num_seqs: int) -> Any:
        """Allocate the batch's token bitmask."""

    @abstractmethod
    def destroy(self):
        """Backend-specific cleanup."""
