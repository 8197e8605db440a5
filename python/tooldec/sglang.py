"""SGLang: a grammar backend serving tooldec artifacts.

Register it in the launching process, at import time (SGLang starts its
scheduler processes with ``spawn``, which re-imports the main module)::

    # serve.py
    import tooldec.sglang
    tooldec.sglang.register()            # name "tooldec", artifacts from TOOLDEC_ARTIFACTS

    if __name__ == "__main__":
        from sglang.launch_server import ...  # then --grammar-backend tooldec

A request selects an artifact through a grammar parameter it already has,
e.g. ``"ebnf": "tooldec:weather"`` or ``"structural_tag": '{"tooldec":
"weather", "entry": "start"}'`` (see ``tooldec._specs``). Any other grammar
(JSON schemas, regexes...) goes to ``fallback``, another backend given at
registration, or is refused.

At creation the backend checks every artifact against the engine's
tokenizer (its vocabulary fingerprint, ``tooldec.vocab_fingerprint``) and
refuses one compiled for another vocabulary.

A request's own tools are started, not compiled (``Compiler.start``): the
dispatched grammar serves masks computed on demand (equal to the
artifact's) until the artifact lands; jump-forward starts then. An error
only the rest of that compile finds makes ``accept_token`` raise
``ValueError``, which SGLang's scheduler turns into that request's abort
(``tooldec._specs.RequestMatcher``).

Interfaces matched (``python/sglang/srt/constrained/base_grammar_backend.py``
at sgl-project/sglang@99e1c51617bf, and ``xgrammar_backend.py`` at
@65cf1ed0b8b1 for the semantics): ``BaseGrammarObject`` (``accept_token``
raising ``ValueError`` on a rejected token, ``rollback``, ``is_terminated``,
``allocate_vocab_mask`` / ``fill_vocab_mask`` / ``move_vocab_mask`` /
``apply_vocab_mask``, ``copy`` returning a fresh grammar for a new request,
the jump-forward trio ``try_jump_forward`` / ``jump_forward_str_state`` /
``jump_and_retokenize``) and ``BaseGrammarBackend`` (``dispatch_*``,
``reset``), registered with ``register_grammar_backend(name, init_func)``
where ``init_func(server_args, tokenizer, vocab_size, eos_token_ids)``.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

from sglang.srt.constrained.base_grammar_backend import (
    BaseGrammarBackend,
    BaseGrammarObject,
    register_grammar_backend,
)

from ._bitmask import allocate_token_bitmask, apply_token_bitmask
from ._specs import (
    ArtifactsLike,
    check_width,
    grammar_source,
    load_artifacts,
    parse_spec,
    RequestMatcher,
    settled,
    Source,
    tools_spec,
    ToolsCompiler,
    with_budget,
    wrap_once,
)
from ._tooldec import Artifact, Matcher
from ._vocab import check_vocabulary, vocab_fingerprint

try:  # SGLang >= 0.5.x: an invalid grammar is an object carrying its message
    from sglang.srt.constrained.base_grammar_backend import InvalidGrammarObject

    def _invalid(message: str) -> Any:
        return InvalidGrammarObject(message)

except ImportError:  # older SGLang: one shared object, or None before that
    try:
        from sglang.srt.constrained.base_grammar_backend import INVALID_GRAMMAR_OBJ
    except ImportError:
        INVALID_GRAMMAR_OBJ = None

    def _invalid(message: str) -> Any:
        return INVALID_GRAMMAR_OBJ

logger = logging.getLogger(__name__)

__all__ = [
    "TooldecGrammar",
    "TooldecGrammarBackend",
    "register",
    "plugin",
    "MAX_ROLLBACK_TOKENS",
]

#: Rollback capacity per request: SGLang's xgrammar backend uses the same
#: (speculative tree verification rolls back one token at a time; jump-forward
#: re-tokenization rolls back to the first changed token). 8 bytes per token.
MAX_ROLLBACK_TOKENS = 200


def _is_torch(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


class TooldecGrammar(BaseGrammarObject):
    """One request's grammar state: a tooldec matcher."""

    def __init__(
        self,
        artifact: Source,
        entry: Optional[str] = None,
        max_tokens: Optional[int] = None,
        max_rollback: int = MAX_ROLLBACK_TOKENS,
        key_string: Optional[str] = None,
        matcher: Optional[Matcher] = None,
        tool: Optional[str] = None,
    ) -> None:
        super().__init__()
        #: An artifact, or a request's own tools still compiling.
        self.artifact = artifact
        self.entry = entry
        self.max_tokens = max_tokens
        self.max_rollback = max_rollback
        self.key_string = key_string
        self.tool = tool
        self.matcher = matcher or RequestMatcher(artifact, entry, max_tokens, max_rollback, tool)

    def accept_token(self, token: int) -> None:
        if self.matcher.is_terminated():
            return  # tokens after EOS change nothing (as with xgrammar)
        self.current_token = token
        if not self.matcher.accept_token(int(token)):
            error = getattr(self.matcher, "error", None)
            if error is not None:
                raise ValueError(f"tooldec: the request's tools did not compile: {error}")
            raise ValueError(
                f"tooldec: token {self.matcher.describe(int(token))} is not "
                f"allowed here (grammar {self.key_string!r})"
            )

    def rollback(self, k: int) -> None:
        self.matcher.rollback(k)

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device: Any) -> Any:
        """All-ones ``int32`` bitmask on the CPU (rows that are not filled
        stay unconstrained); a torch tensor when torch is installed."""
        try:
            import torch
        except ImportError:
            return allocate_token_bitmask(batch_size, vocab_size)
        return torch.full((batch_size, (vocab_size + 31) // 32), -1, dtype=torch.int32)

    def fill_vocab_mask(self, vocab_mask: Any, idx: int) -> None:
        self.matcher.fill_next_token_bitmask(vocab_mask, idx)

    @staticmethod
    def move_vocab_mask(vocab_mask: Any, device: Any) -> Any:
        if _is_torch(vocab_mask):
            return vocab_mask.to(device, non_blocking=True)
        return vocab_mask

    @staticmethod
    def apply_vocab_mask(logits: Any, vocab_mask: Any) -> None:
        if _is_torch(logits) and logits.device.type != "cpu":
            try:  # SGLang depends on xgrammar, whose kernel reads this layout
                from xgrammar import apply_token_bitmask_inplace

                apply_token_bitmask_inplace(logits, vocab_mask.to(logits.device))
                return
            except ImportError:
                pass
        apply_token_bitmask(logits, vocab_mask)

    def copy(self) -> Any:
        """A fresh grammar at the start, for the next request with the same
        key (SGLang caches one grammar per key and copies it): from the
        artifact once the compile has landed (the cached grammar then lets
        the compile's early state go); an invalid grammar, not an
        exception, if that compile failed."""
        self.artifact = settled(self.artifact)
        try:
            return TooldecGrammar(
                self.artifact,
                self.entry,
                self.max_tokens,
                self.max_rollback,
                self.key_string,
                tool=self.tool,
            )
        except ValueError as e:
            logger.error("tooldec: grammar %r: %s", self.key_string, e)
            return _invalid(str(e))

    # Jump-forward: the bytes the grammar forces from here.

    def try_jump_forward(self, tokenizer: Any) -> Optional[Tuple[List[int], str]]:
        forced = self.matcher.forced_bytes()
        if not forced:
            return None
        try:
            text = forced.decode("utf-8")
        except UnicodeDecodeError:
            return None
        return [], text

    def jump_forward_str_state(self, helper: Tuple[List[int], str]) -> Tuple[str, int]:
        _, text = helper
        return text, -1

    def jump_and_retokenize(
        self, old_output_ids: List[int], new_output_ids: List[int], next_state: int
    ) -> None:
        """The engine re-tokenized the output with the forced text appended:
        roll back to the first token that changed and accept the new ones."""
        k = 0
        for old, new in zip(old_output_ids, new_output_ids):
            if old != new:
                break
            k += 1
        if k < len(old_output_ids):
            self.matcher.rollback(len(old_output_ids) - k)
        for i, t in enumerate(new_output_ids[k:], start=k):
            if not self.matcher.accept_token(int(t)):
                raise ValueError(
                    f"tooldec: re-tokenized output token {t} at position {i} is not allowed"
                )

    def __repr__(self) -> str:
        return f"TooldecGrammar({self.key_string!r}, {self.matcher!r})"


class TooldecGrammarBackend(BaseGrammarBackend):
    """Serves requests whose grammar names a tooldec artifact.

    ``artifacts``: a path, an ``Artifact`` or ``{name: path or Artifact}``
    (None: ``TOOLDEC_ARTIFACTS``). ``vocab_size``: the model's logits size
    (checked against each artifact). ``tokenizer``: the engine's tokenizer
    (anything ``tooldec.vocab_fingerprint`` takes; an artifact compiled for
    another vocabulary is refused; None: not checked). ``fallback``: a backend for every other
    grammar (for instance SGLang's xgrammar backend), or None to refuse them.
    """

    def __init__(
        self,
        artifacts: ArtifactsLike = None,
        vocab_size: Optional[int] = None,
        fallback: Optional[BaseGrammarBackend] = None,
        max_rollback: int = MAX_ROLLBACK_TOKENS,
        eos_token_ids: Optional[Any] = None,
        tokenizer: Any = None,
        require_artifacts: bool = True,
    ) -> None:
        super().__init__()
        self.artifacts: Dict[str, Artifact] = load_artifacts(
            artifacts, optional=not require_artifacts
        )
        self.tokenizer = tokenizer
        self._tools = ToolsCompiler(tokenizer, vocab_size)
        self.vocab_size = vocab_size
        self.fallback = fallback
        self.max_rollback = max_rollback
        fingerprint = vocab_fingerprint(tokenizer) if tokenizer is not None else None
        for name, art in self.artifacts.items():
            check_width(art, vocab_size, f"artifact {name!r}")
            check_vocabulary(art, fingerprint, f"artifact {name!r}")
            if eos_token_ids and not set(art.eos_token_ids) & set(eos_token_ids):
                logger.warning(
                    "tooldec: artifact %r ends with EOS %s, the model with %s",
                    name,
                    art.eos_token_ids,
                    sorted(eos_token_ids),
                )

    def _dispatch(self, key_type: str, key_string: str) -> Optional[BaseGrammarObject]:
        try:
            spec = parse_spec(key_string)
        except ValueError as e:
            logger.error("%s", e)
            return _invalid(str(e))
        if spec is None:
            if self.fallback is not None:
                dispatch = getattr(self.fallback, f"dispatch_{key_type}", None)
                if dispatch is None:
                    return self.fallback.dispatch_fallback(key_type, key_string)
                return dispatch(key_string)
            return self._not_supported(key_type, key_string)
        try:
            return TooldecGrammar(
                grammar_source(self._tools, self.artifacts, spec),
                spec.entry,
                spec.max_tokens,
                self.max_rollback,
                key_string=key_string,
                tool=spec.tool,
            )
        except ValueError as e:
            logger.error("tooldec: invalid grammar %r: %s", key_string, e)
            return _invalid(str(e))

    def dispatch_json(self, key_string: str) -> Optional[BaseGrammarObject]:
        return self._dispatch("json", key_string)

    def dispatch_regex(self, key_string: str) -> Optional[BaseGrammarObject]:
        return self._dispatch("regex", key_string)

    def dispatch_ebnf(self, key_string: str) -> Optional[BaseGrammarObject]:
        return self._dispatch("ebnf", key_string)

    def dispatch_structural_tag(self, key_string: str) -> Optional[BaseGrammarObject]:
        return self._dispatch("structural_tag", key_string)

    def reset(self) -> None:
        super().reset()
        if self.fallback is not None:
            self.fallback.reset()


def register(
    name: str = "tooldec",
    artifacts: ArtifactsLike = None,
    fallback: Optional[Callable[..., Optional[BaseGrammarBackend]]] = None,
    max_rollback: int = MAX_ROLLBACK_TOKENS,
    require_artifacts: bool = True,
) -> None:
    """Registers the backend under ``name`` (``--grammar-backend NAME``).

    ``fallback``: a function with ``register_grammar_backend``'s signature
    ``(server_args, tokenizer, vocab_size, eos_token_ids)`` building the
    backend for non-tooldec grammars (e.g. SGLang's xgrammar backend).
    Artifacts are loaded in the scheduler process, when SGLang creates the
    backend.
    """

    def init(server_args: Any, tokenizer: Any, vocab_size: int, eos_token_ids: Any = None):
        fb = fallback(server_args, tokenizer, vocab_size, eos_token_ids) if fallback else None
        return TooldecGrammarBackend(
            artifacts,
            vocab_size=vocab_size,
            fallback=fb,
            max_rollback=max_rollback,
            eos_token_ids=eos_token_ids,
            tokenizer=tokenizer,
            require_artifacts=require_artifacts,
        )

    register_grammar_backend(name, init)
    carry_budget()
    constrain_tools()
    # Newer SGLang checks --grammar-backend against a list of choices.
    for module in ("sglang.srt.server_args", "sglang.srt.arg_groups.choices"):
        try:
            mod = __import__(module, fromlist=["add_grammar_backend_choices"])
        except ImportError:
            continue
        choices = getattr(mod, "GRAMMAR_BACKEND_CHOICES", None)
        add = getattr(mod, "add_grammar_backend_choices", None)
        if add is not None and (choices is None or name not in choices):
            add([name])
        break


#: The request's grammar parameters, in the order SGLang's GrammarManager
#: picks the one that becomes the grammar key.
_GRAMMAR_PARAMS = ("json_schema", "regex", "ebnf", "structural_tag")


def budget_request(req: Any) -> None:
    """Carries ``req.sampling_params.max_new_tokens`` into the request's
    tooldec grammar string (``with_budget``), so that the grammar completes
    the call within the request's own limit. Other grammars are left as
    they are. SGLang keys its grammar cache by that string: requests with
    the same spec and limit share one compiled grammar."""
    sp = getattr(req, "sampling_params", None)
    if sp is None:
        return
    for attr in _GRAMMAR_PARAMS:
        value = getattr(sp, attr, None)
        if value is not None:
            setattr(sp, attr, with_budget(value, getattr(sp, "max_new_tokens", None)))
            return


def carry_budget() -> bool:
    """Wraps SGLang's ``GrammarManager.process_req_with_grammar`` (the one
    place a request's grammar key is made) so that it sees the request's
    ``max_new_tokens`` (see ``budget_request``): SGLang gives a grammar
    backend the grammar string alone. Idempotent; False when this SGLang
    has no such method (then the budget must be in the spec)."""
    try:
        from sglang.srt.constrained.grammar_manager import GrammarManager
    except ImportError:
        return False

    def wrap(original: Any) -> Any:
        def process_req_with_grammar(self: Any, req: Any) -> Any:
            budget_request(req)
            return original(self, req)

        return process_req_with_grammar

    return wrap_once(GrammarManager, "process_req_with_grammar", wrap)


def plugin() -> None:
    """The ``sglang.srt.plugins`` entry point: ``register()`` with its
    defaults (the backend ``tooldec``, artifacts from ``TOOLDEC_ARTIFACTS``
    when SGLang creates it), in every SGLang process, the spawned scheduler
    included, before the server's arguments are parsed. No configured
    artifacts is no error here: the backend may serve only requests' own
    tools (``TOOLDEC_TOOL_FORMAT``)."""
    register(require_artifacts=False)


#: The call format of the served model, for requests' own tools.
TOOL_FORMAT_ENV = "TOOLDEC_TOOL_FORMAT"


def constrain_tools() -> bool:
    """With ``TOOLDEC_TOOL_FORMAT=FORMAT`` set in the server, a chat
    request's own ``tools``, ``tool_choice`` and ``parallel_tool_calls`` are
    constrained in that format (``tools_spec``), compiled by the backend for
    the engine's tokenizer: wraps ``FunctionCallParser.
    get_structure_constraint``, where SGLang's OpenAI server turns a
    request's tools into its grammar, to return the spec as the request's
    ``ebnf`` (the server must run ``--grammar-backend tooldec``).
    Idempotent; False when this SGLang has no such method."""
    try:
        from sglang.srt.function_call.function_call_parser import FunctionCallParser
    except ImportError:
        return False

    def wrap(original: Any) -> Any:
        def get_structure_constraint(
            self: Any, tool_choice: Any, parallel_tool_calls: bool = True, *args: Any, **kwargs: Any
        ) -> Any:
            fmt = os.environ.get(TOOL_FORMAT_ENV, "").strip()
            if fmt and getattr(self, "tools", None):
                spec = tools_spec(self.tools, fmt, tool_choice, parallel_tool_calls)
                return None if spec is None else ("ebnf", spec)
            return original(self, tool_choice, parallel_tool_calls, *args, **kwargs)

        return get_structure_constraint

    return wrap_once(FunctionCallParser, "get_structure_constraint", wrap)
