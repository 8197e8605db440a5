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

A request's own tools are started, not compiled (``Compiler.start``):
``compile_grammar`` returns after lowering, its grammar serves masks
computed on demand (equal to the artifact's) until the artifact lands.
An error only the rest of that compile finds makes ``accept_tokens``
return False, which vLLM's scheduler turns into ``FINISHED_ERROR`` for that
request (``tooldec._specs.RequestMatcher``).

Matched against ``vllm/v1/structured_output/backend_types.py`` at
vllm-project/vllm@d26c81b6ef91 (the abstract classes), ``backend_xgrammar.py``
at @0b940c496a21 and the ``StructuredOutputManager.grammar_bitmask`` of
``vllm/v1/structured_output/__init__.py`` at @8ae7ba4d4db4 (how the engine
calls them).
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Union

from vllm.v1.structured_output.backend_types import (
    StructuredOutputBackend,
    StructuredOutputGrammar,
    StructuredOutputOptions,
)

from ._bitmask import allocate_token_bitmask
from ._specs import (
    ArtifactsLike,
    check_width,
    grammar_source,
    load_artifacts,
    parse_spec,
    RequestMatcher,
    tools_spec,
    ToolsCompiler,
    with_budget,
    wrap_once,
)
from ._tooldec import Artifact, Matcher
from ._vocab import check_vocabulary, vocab_fingerprint

logger = logging.getLogger(__name__)

__all__ = ["TooldecBackend", "TooldecGrammar", "configure", "install", "plugin"]

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

    def __init__(
        self,
        matcher: Union[Matcher, RequestMatcher],
        vocab_size: int,
        artifact: Optional[Artifact] = None,
        stop_token_ids: Optional[Iterable[int]] = None,
    ):
        self.matcher = matcher
        self.vocab_size = vocab_size
        if artifact is None:
            # A request's own tools may still be compiling: what the
            # matcher serves from (an artifact, or the pending compile).
            artifact = matcher.source if isinstance(matcher, RequestMatcher) else matcher.artifact
        self.artifact = artifact
        self._eos = frozenset(artifact.eos_token_ids)
        # The request's other stop tokens end generation wherever they are
        # sampled: like vLLM's xgrammar backend, keep them masked until
        # the call is complete (the artifact's EOS ends it then).
        self._stops = sorted(
            t for t in set(stop_token_ids or ()) - self._eos if 0 <= t < vocab_size
        )
        self.num_processed_tokens = 0

    def accept_tokens(self, request_id: str, tokens: List[int]) -> bool:
        for t in tokens:
            if self.matcher.is_terminated():
                return True  # drafts past EOS: nothing left to constrain
            if not self.matcher.accept_token(int(t)):
                error = getattr(self.matcher, "error", None)
                if error is None:
                    logger.error(
                        "tooldec: request %s: token %s is not allowed after %d tokens",
                        request_id,
                        t,
                        self.num_processed_tokens,
                    )
                else:  # logged where it was found
                    logger.error("tooldec: request %s ends: its tools did not compile", request_id)
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
        for t in self._stops:
            word = int(bitmask[idx, t >> 5]) & ~(1 << (t & 31)) & 0xFFFFFFFF
            bitmask[idx, t >> 5] = word - (1 << 32) if word >> 31 else word

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

    #: False: no configured artifacts is no error (the plugin's backend,
    #: which may serve only requests' own tools).
    require_artifacts: bool = True

    def __post_init__(self) -> None:
        self.artifacts: Dict[str, Artifact] = load_artifacts(
            _CONFIG["artifacts"], optional=not self.require_artifacts
        )
        self._tools = ToolsCompiler(self.tokenizer, self.vocab_size)
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
        self,
        request_type: StructuredOutputOptions,
        grammar_spec: str,
        stop_token_ids: Optional[Iterable[int]] = None,
        **kwargs: Any,
    ) -> StructuredOutputGrammar:
        if stop_token_ids is not None:
            kwargs["stop_token_ids"] = stop_token_ids  # for the fallback
        spec = parse_spec(grammar_spec)
        if spec is None:
            if self.fallback is not None:
                return self.fallback.compile_grammar(request_type, grammar_spec, **kwargs)
            raise ValueError(
                f"tooldec: {request_type} grammar {grammar_spec[:80]!r} does not name a tooldec "
                "artifact ('tooldec:NAME' or {\"tooldec\": \"NAME\"}) and no fallback backend "
                "is configured"
            )
        source = grammar_source(self._tools, self.artifacts, spec)
        matcher = RequestMatcher(source, spec.entry, spec.max_tokens, self.max_rollback, spec.tool)
        return TooldecGrammar(matcher, self.vocab_size, stop_token_ids=stop_token_ids)

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


# The plugin: vLLM has no registry of structured-output backends (its
# backend name is a closed set, chosen by if/elif in the request validation
# and in StructuredOutputManager.grammar_init), so the entry point wraps the
# two functions that decide, in every vLLM process that loads plugins.


def plugin() -> None:
    """The ``vllm.general_plugins`` entry point (``tooldec``): requests whose
    structured-output grammar names a tooldec artifact (``"tooldec:NAME"``
    or ``{"tooldec": ...}`` as ``grammar``, ``structural_tag`` or ``json``)
    pass vLLM's validation and are compiled by a ``TooldecBackend`` with the
    request's own ``max_tokens`` and stop tokens; every other request keeps
    vLLM's backend. Artifacts come from ``configure`` or
    ``TOOLDEC_ARTIFACTS``. With ``TOOLDEC_TOOL_FORMAT=FORMAT`` (a shipped
    format's name or a format file) set in the API server, a chat request's
    own ``tools``, ``tool_choice`` and ``parallel_tool_calls`` are
    constrained in that format, compiled in the engine for its tokenizer
    (``tools_spec``). Disable with ``VLLM_PLUGINS`` (vLLM's filter)."""
    _accept_specs()
    _route_specs()
    _constrain_tools()


def _spec_string(params: Any) -> Optional[Any]:
    """The tooldec spec among a ``StructuredOutputsParams``' grammars."""
    for field in ("grammar", "structural_tag", "json"):
        value = getattr(params, field, None)
        if value is not None and parse_spec(value) is not None:
            return value
    return None


def _accept_specs() -> None:
    from vllm.sampling_params import SamplingParams

    def wrap(original: Any) -> Any:
        def _validate_structured_outputs(self: Any, model_config: Any, config: Any, tokenizer: Any) -> None:
            params = self.structured_outputs
            if config is None or params is None:
                return original(self, model_config, config, tokenizer)
            try:
                spec = _spec_string(params)
            except ValueError as e:
                from vllm.exceptions import VLLMValidationError

                raise VLLMValidationError(str(e)) from None
            if spec is None:
                return original(self, model_config, config, tokenizer)
            # The engine builds vLLM's own backend for the other requests:
            # the configured one, or xgrammar under "auto".
            if config.backend == "auto":
                params._backend = "xgrammar"
                params._backend_was_auto = True
            else:
                params._backend = config.backend
            return None

        return _validate_structured_outputs

    wrap_once(SamplingParams, "_validate_structured_outputs", wrap)


_BACKEND_LOCK = threading.Lock()


def _route_specs() -> None:
    from vllm.v1.structured_output import StructuredOutputManager

    def wrap(original: Any) -> Any:
        def _create_grammar(self: Any, request: Any) -> StructuredOutputGrammar:
            request_type, grammar_spec = request.structured_output_request.structured_output_key
            try:
                spec = parse_spec(grammar_spec)
            except ValueError:
                spec = None
            if spec is None:
                return original(self, request)
            with _BACKEND_LOCK:  # grammars compile on vLLM's thread pool
                backend = getattr(self, "_tooldec_backend", None)
                if backend is None:
                    backend = TooldecBackend(
                        self.vllm_config,
                        tokenizer=self.tokenizer,
                        vocab_size=self.vllm_config.model_config.get_vocab_size(),
                        require_artifacts=False,
                    )
                    self._tooldec_backend = backend
            sampling = request.sampling_params
            return backend.compile_grammar(
                request_type,
                with_budget(grammar_spec, getattr(request, "max_tokens", None)),
                stop_token_ids=sampling.all_stop_token_ids if sampling is not None else None,
            )

        return _create_grammar

    wrap_once(StructuredOutputManager, "_create_grammar", wrap)


#: The call format of the served model, for requests' own tools.
TOOL_FORMAT_ENV = "TOOLDEC_TOOL_FORMAT"


def constrain_request(request: Any, format: Optional[str] = None) -> Any:
    """Sets a chat request's structured output to its own tools in
    ``format`` (default: ``TOOLDEC_TOOL_FORMAT``), replacing the constraint
    vLLM's tool parser derived from them; a request without tools, with
    ``tool_choice="none"``, or with no format configured is left as is."""
    fmt = format or os.environ.get(TOOL_FORMAT_ENV, "").strip()
    tools = getattr(request, "tools", None)
    if not fmt or not tools:
        return request
    spec = tools_spec(
        tools,
        fmt,
        getattr(request, "tool_choice", "auto"),
        getattr(request, "parallel_tool_calls", True),
    )
    if spec is None:
        return request
    from vllm.sampling_params import StructuredOutputsParams

    request.structured_outputs = StructuredOutputsParams(structural_tag=spec)
    if hasattr(request, "response_format"):
        request.response_format = None
    return request


def _constrain_tools() -> None:
    """Wraps the chat parser's ``adjust_request`` (where vLLM turns a
    request's tools into its own constraint) with ``constrain_request``."""
    try:
        from vllm.parser.abstract_parser import DelegatingParser
    except ImportError:
        return
    def wrap(original: Any) -> Any:
        def adjust_request(self: Any, request: Any) -> Any:
            return constrain_request(original(self, request))

        return adjust_request

    wrap_once(DelegatingParser, "adjust_request", wrap)
