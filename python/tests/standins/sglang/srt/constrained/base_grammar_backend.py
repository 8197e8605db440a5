"""Stand-in for ``sglang/srt/constrained/base_grammar_backend.py`` at
SGLang 0.5.23 (the release test-engines.sh installs), without torch.

What a grammar backend is to SGLang:

* ``BaseGrammarObject``: one request's grammar. The scheduler calls
  ``accept_token(token)`` for every sampled token (a rejected token raises
  ``ValueError`` and the request is aborted), ``rollback(k)`` when
  speculative tokens are undone, ``is_terminated()``, and sets ``finished``.
  Before sampling, the first grammar of the batch allocates the vocab mask
  (``allocate_vocab_mask(vocab_size, batch_size, device)``), every grammar
  that is neither finished nor terminated fills its row
  (``fill_vocab_mask(mask, idx)``), the mask is moved to the device
  (``move_vocab_mask``) and applied to the logits (``apply_vocab_mask``).
  ``copy()`` gives the grammar for another request with the same key (the
  base returns ``self``). Jump-forward: ``try_jump_forward(tokenizer)`` ->
  helper or None, ``jump_forward_str_state(helper)`` -> ``(text, state)``,
  ``jump_and_retokenize(old_ids, new_ids, state)``.
* ``BaseGrammarBackend``: compiles keys ``(key_type, key_string)`` with
  ``dispatch_json`` / ``dispatch_regex`` / ``dispatch_ebnf`` /
  ``dispatch_structural_tag`` (unsupported ones warn and give None), caches
  the results, and hands out copies.
* ``register_grammar_backend(name, init_func)``: ``create_grammar_backend``
  calls ``init_func(server_args, tokenizer, vocab_size, eos_token_ids)``
  when ``--grammar-backend`` is ``name``, before the built-in ones.
"""

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from threading import Event
from typing import Dict, List, Optional, Tuple

logger = logging.getLogger(__name__)


@dataclass
class GrammarStats:
    compilation_time: Optional[float] = None
    is_cache_hit: bool = False
    dispatch_type: Optional[str] = None
    tree_traversal_time: List[float] = field(default_factory=list)


class BaseGrammarObject:
    def __init__(self):
        self._finished = False
        self.grammar_stats = None
        self.current_token = None

    def maybe_init_reasoning(self, reasoning: bool):
        pass

    def accept_token(self, token: int) -> None:
        raise NotImplementedError()

    def rollback(self, k: int):
        raise NotImplementedError()

    def is_terminated(self):
        return False

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device):
        raise NotImplementedError()

    def fill_vocab_mask(self, vocab_mask, idx: int) -> None:
        raise NotImplementedError()

    @staticmethod
    def move_vocab_mask(vocab_mask, device):
        raise NotImplementedError()

    @staticmethod
    def apply_vocab_mask(logits, vocab_mask) -> None:
        raise NotImplementedError()

    def copy(self) -> "BaseGrammarObject":
        return self

    @property
    def finished(self):
        return self._finished

    @finished.setter
    def finished(self, finished):
        self._finished = finished

    def try_jump_forward(self, tokenizer) -> Optional[Tuple[List[int], str]]:
        raise NotImplementedError()

    def jump_forward_str_state(self, helper: Tuple[List[int], str]) -> Tuple[str, int]:
        raise NotImplementedError()

    def jump_and_retokenize(
        self, old_output_ids: List[int], new_output_ids: List[int], next_state: int
    ) -> None:
        raise NotImplementedError()


class InvalidGrammarObject(BaseGrammarObject):
    """A grammar that failed to compile, with its message: the scheduler
    aborts the requests that get it (this replaced the module-level
    ``INVALID_GRAMMAR_OBJ`` by SGLang 0.5)."""

    def __init__(self, error_message: str = "Unknown grammar error"):
        super().__init__()
        self.error_message = error_message


@dataclass
class CacheEntry:
    value: BaseGrammarObject
    event: Event


class BaseGrammarBackend:
    def __init__(self):
        self.executor = ThreadPoolExecutor()
        self.cache: Dict[Tuple[str, str], BaseGrammarObject] = {}

    def _not_supported(self, key_type: str, key_string: str) -> None:
        logger.warning(f"Skip unsupported {key_type=}, {key_string=}")

    def dispatch_fallback(self, key_type: str, key_string: str) -> Optional[BaseGrammarObject]:
        raise ValueError(f"Invalid key_type: {key_type}={key_string}")

    def dispatch_json(self, key_string: str) -> Optional[BaseGrammarObject]:
        return self._not_supported("json", key_string)

    def dispatch_regex(self, key_string: str) -> Optional[BaseGrammarObject]:
        return self._not_supported("regex", key_string)

    def dispatch_ebnf(self, key_string: str) -> Optional[BaseGrammarObject]:
        return self._not_supported("ebnf", key_string)

    def dispatch_structural_tag(self, key_string: str) -> Optional[BaseGrammarObject]:
        return self._not_supported("structural_tag", key_string)

    def _init_value_dispatch(
        self, key: Tuple[str, str], require_reasoning: bool
    ) -> Optional[BaseGrammarObject]:
        start = time.perf_counter()
        key_type, key_string = key
        handlers = {
            "json": self.dispatch_json,
            "regex": self.dispatch_regex,
            "ebnf": self.dispatch_ebnf,
            "full_assistant_ebnf": self.dispatch_ebnf,
            "structural_tag": self.dispatch_structural_tag,
        }
        if key_type in handlers:
            grammar = handlers[key_type](key_string)
        else:
            grammar = self.dispatch_fallback(key_type, key_string)
        if grammar is not None and grammar.grammar_stats is not None:
            grammar.grammar_stats.compilation_time = time.perf_counter() - start
        return grammar

    def get_cached_or_future_value(self, key: Tuple[str, str], require_reasoning: bool):
        """``(grammar copy, True)`` on a cache hit, else ``(future, False)``;
        the scheduler polls the future and then calls ``set_cache(key,
        grammar.copy())``. ``require_reasoning``: the request thinks first
        (the reasoner wrapper's business, passed through)."""
        value = self.cache.get(key)
        if value:
            copied = value.copy()
            copied.maybe_init_reasoning(require_reasoning)
            return copied, True
        return self.executor.submit(self._init_value_dispatch, key, require_reasoning), False

    def set_cache(self, key: Tuple[str, str], value: BaseGrammarObject):
        self.cache[key] = value

    def reset(self):
        self.cache.clear()


GRAMMAR_BACKEND_REGISTRY = {}


def register_grammar_backend(name, init_func):
    GRAMMAR_BACKEND_REGISTRY[name] = init_func


def create_grammar_backend(server_args, tokenizer, vocab_size: int, eos_token_ids=None):
    """Registered backends first; the built-in ones (outlines, xgrammar,
    llguidance) are not part of this stand-in. The backend's name comes
    from the published runtime context, as upstream reads it."""
    from sglang.srt.runtime_context import get_exec

    name = get_exec().kernel.grammar_backend
    if name in GRAMMAR_BACKEND_REGISTRY:
        return GRAMMAR_BACKEND_REGISTRY[name](server_args, tokenizer, vocab_size, eos_token_ids)
    if name == "none":
        return None
    raise ValueError(f"Invalid grammar backend: {name} (the stand-in has no built-in backends)")
