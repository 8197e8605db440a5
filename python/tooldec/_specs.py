"""How engine requests name a tooldec artifact, and how adapters load them.

An engine request asks for tooldec through the grammar string it already
carries (vLLM's ``structured_outputs``, SGLang's ``ebnf``/``json_schema``/
``structural_tag`` sampling parameter), in one of two forms:

* ``"tooldec:NAME"`` or ``"tooldec:NAME/ENTRY"``;
* a JSON object ``{"tooldec": "NAME", "entry": "ENTRY", "max_tokens": N,
  "tool": "TOOL"}`` (``entry``, ``max_tokens`` and ``tool`` optional), where
  ``"tooldec"`` may also be the request's own tools, ``{"tools": [...],
  "format": "FORMAT"}``, which the adapter compiles in the process (see
  ``tools_spec``). ``tool``
  restricts the calls to that one tool, from the same artifact; OpenAI's
  ``"tool_choice": {"type": "function", "function": {"name": "TOOL"}}`` is
  read the same way (the string choices ``auto``/``required``/``none`` are
  entries of the format, so they are left to ``entry``).

``NAME`` is a key of the artifacts the adapter was configured with; it may be
left empty when there is exactly one. Artifacts are configured in code (a
path, an ``Artifact``, or a dict of them) or, for engine processes that
start on their own, with ``TOOLDEC_ARTIFACTS="name=path.tdm,other=o.tdm"``
(a bare path is named after its file stem).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Union

from ._tooldec import Artifact, Compiler, Matcher, Pending, PendingMatcher

PREFIX = "tooldec:"
ENV = "TOOLDEC_ARTIFACTS"

logger = logging.getLogger("tooldec")

ArtifactsLike = Union[None, str, "os.PathLike[str]", Artifact, Mapping[str, Any]]


@dataclass(frozen=True)
class Spec:
    """A request for a tooldec matcher."""

    name: str
    entry: Optional[str] = None
    max_tokens: Optional[int] = None
    tool: Optional[str] = None
    #: A request's own tool list (any dialect ``tooldec.Compiler`` reads)
    #: and the call format to compile it with, instead of a named artifact.
    tools: Optional[Any] = None
    format: Optional[str] = None


def tool_of(tool_choice: Any) -> Optional[str]:
    """The tool an OpenAI ``tool_choice`` names (``{"type": "function",
    "function": {"name": ...}}``, or the flat ``{"type": "function", "name":
    ...}`` of the Responses API), or None for the string choices."""
    if tool_choice is None or isinstance(tool_choice, str):
        return None
    if isinstance(tool_choice, Mapping):
        fn = tool_choice.get("function")
        name = fn.get("name") if isinstance(fn, Mapping) else tool_choice.get("name")
        if isinstance(name, str) and name:
            return name
    raise ValueError(
        "tooldec: tool_choice must be a string or {\"type\": \"function\", \"function\": "
        f"{{\"name\": ...}}}}, got {tool_choice!r}"
    )


def parse_spec(spec: Any) -> Optional[Spec]:
    """The tooldec request in a grammar string, or None when the string is
    not addressed to tooldec (another backend's JSON schema, regex...)."""
    obj: Any = spec
    if isinstance(spec, (bytes, bytearray)):
        spec = spec.decode("utf-8", "replace")
    if isinstance(spec, str):
        s = spec.strip()
        if s.startswith(PREFIX):
            name, _, entry = s[len(PREFIX) :].partition("/")
            return Spec(name.strip(), entry.strip() or None)
        if not s.startswith("{") or '"tooldec"' not in s:
            return None
        try:
            obj = json.loads(s)
        except ValueError:
            return None
    if not isinstance(obj, Mapping) or "tooldec" not in obj:
        return None
    name = obj["tooldec"]
    entry = obj.get("entry")
    max_tokens = obj.get("max_tokens")
    tools = fmt = None
    if isinstance(name, Mapping):
        tools, fmt, name = name.get("tools"), name.get("format"), ""
        if not isinstance(tools, (list, Mapping)) or not tools:
            raise ValueError(f"tooldec: \"tools\" must be a non-empty tool list, got {tools!r:.80}")
        if not isinstance(fmt, str) or not fmt:
            raise ValueError(f"tooldec: \"format\" must name a call format, got {fmt!r}")
    if not isinstance(name, str):
        raise ValueError(f"tooldec: the artifact name must be a string, got {name!r}")
    if entry is not None and not isinstance(entry, str):
        raise ValueError(f"tooldec: entry must be a string, got {entry!r}")
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 0):
        raise ValueError(f"tooldec: max_tokens must be a non-negative integer, got {max_tokens!r}")
    tool = obj.get("tool")
    if tool is None:
        tool = tool_of(obj.get("tool_choice"))
    if tool is not None and not isinstance(tool, str):
        raise ValueError(f"tooldec: tool must be a tool's name, got {tool!r}")
    return Spec(name, entry, max_tokens, tool, tools, fmt)


def tools_spec(
    tools: Any,
    format: str,
    tool_choice: Any = "auto",
    parallel_tool_calls: Optional[bool] = True,
    max_tokens: Optional[int] = None,
) -> Optional[str]:
    """The spec that constrains a chat request's own ``tools`` with the
    model's call ``format``, as OpenAI's ``tool_choice`` and
    ``parallel_tool_calls`` say: ``"auto"`` text or calls (entry ``auto``;
    ``auto-one``, at most one call, without parallel calls), ``"required"``
    one or more calls (``required``; ``one`` without parallel calls), a
    named function that tool alone; ``"none"`` (or no tools) constrains
    nothing: None. Every shipped format has these entries."""
    if not tools or tool_choice == "none":
        return None
    if isinstance(tools, (list, tuple)):
        tools = [t.model_dump(exclude_none=True) if hasattr(t, "model_dump") else t for t in tools]
    single = parallel_tool_calls is False
    tool = tool_of(tool_choice.model_dump() if hasattr(tool_choice, "model_dump") else tool_choice)
    if tool is not None or tool_choice == "required":
        entry = "one" if single else "required"
    elif tool_choice in (None, "auto"):
        entry = "auto-one" if single else "auto"
    else:
        raise ValueError(f"tooldec: tool_choice {tool_choice!r} is not auto, required, none or a function")
    out: Dict[str, Any] = {"tooldec": {"tools": tools, "format": format}, "entry": entry}
    if tool is not None:
        out["tool"] = tool
    if max_tokens is not None:
        out["max_tokens"] = max_tokens
    return json.dumps(out, sort_keys=True)


def with_budget(grammar: Any, max_tokens: Optional[int]) -> Any:
    """``grammar`` with the engine's token limit for the request carried in,
    when it names a tooldec artifact: the spec's own ``max_tokens`` if
    smaller, else ``max_tokens``. Any other grammar (or a malformed spec,
    which the backend then refuses with its message) comes back as is."""
    if max_tokens is None or isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        return grammar
    try:
        spec = parse_spec(grammar)
    except ValueError:
        return grammar
    if spec is None:
        return grammar
    budget = max(0, max_tokens)
    if spec.max_tokens is not None:
        budget = min(budget, spec.max_tokens)
    name: Any = spec.name
    if spec.tools is not None:
        name = {"tools": spec.tools, "format": spec.format}
    out: Dict[str, Any] = {"tooldec": name, "max_tokens": budget}
    if spec.entry is not None:
        out["entry"] = spec.entry
    if spec.tool is not None:
        out["tool"] = spec.tool
    return json.dumps(out, sort_keys=True)


def _stem(path: str) -> str:
    base = os.path.basename(os.fspath(path))
    return base[:-4] if base.endswith(".tdm") else base


def _load_one(value: Any) -> Artifact:
    if isinstance(value, Artifact):
        return value
    if isinstance(value, (str, os.PathLike)):
        return Artifact.open(os.fspath(value))
    raise TypeError(f"tooldec: expected an Artifact or a path, got {type(value).__name__}")


def load_artifacts(artifacts: ArtifactsLike = None, optional: bool = False) -> Dict[str, Artifact]:
    """``{name: Artifact}`` from a path, an Artifact, a mapping of either,
    or (when None) the ``TOOLDEC_ARTIFACTS`` environment variable; with
    ``optional``, none at all is ``{}`` rather than an error (a backend
    that may serve only requests' own tools)."""
    if artifacts is None:
        env = os.environ.get(ENV, "").strip()
        if not env and optional:
            return {}
        if not env:
            raise ValueError(
                f"tooldec: no artifacts configured: pass artifacts=... or set {ENV}="
                "'name=path.tdm[,name2=other.tdm]'"
            )
        out: Dict[str, Artifact] = {}
        for item in filter(None, (p.strip() for p in env.split(","))):
            name, sep, path = item.partition("=")
            if not sep:
                name, path = _stem(item), item
            out[name.strip()] = Artifact.open(path.strip())
        return out
    if isinstance(artifacts, Artifact):
        return {_stem(artifacts.path) if artifacts.path else "default": artifacts}
    if isinstance(artifacts, (str, os.PathLike)):
        return {_stem(os.fspath(artifacts)): _load_one(artifacts)}
    if isinstance(artifacts, Mapping):
        return {str(k): _load_one(v) for k, v in artifacts.items()}
    raise TypeError(
        f"tooldec: artifacts must be a path, an Artifact or a dict of them, got "
        f"{type(artifacts).__name__}"
    )


def resolve(artifacts: Mapping[str, Artifact], spec: Spec) -> Artifact:
    """The artifact a spec names (an empty name: the only one)."""
    if spec.name in artifacts:
        return artifacts[spec.name]
    if not spec.name and len(artifacts) == 1:
        return next(iter(artifacts.values()))
    raise ValueError(
        f"tooldec: no artifact named {spec.name!r} (configured: {sorted(artifacts)})"
    )


def check_width(artifact: Artifact, vocab_size: Optional[int], who: str) -> None:
    """The model's logits must be at least as wide as the artifact's masks."""
    if vocab_size is None:
        return
    try:
        artifact.check_mask_width(vocab_size)
    except ValueError as e:
        raise ValueError(f"tooldec: {who}: {str(e).removeprefix('tooldec: ')}") from None


class ToolsCompiler:
    """Compiles requests' own tools for an engine's tokenizer: one
    ``tooldec.Compiler``, built on first use and shared by the backend's
    threads (its cache returns the artifact of a tool list seen before at
    once), within the compiler's default time and memory limits, repairing
    what has one clear reading (``repair=True``: a sloppy tool list should
    not fail a request).

    A request compiles only its own entry (``spec.entry``; the whole
    format when it names none): a request never leaves the entry it starts
    at (``RequestMatcher.reset`` returns to it), and the other entries of a
    format are about as much again to build (the one-call entries repeat
    every argument machine). The kept artifacts are keyed by the entry
    too, so an agent that sends the same tools with the same
    ``tool_choice`` gets its artifact back at once.

    ``deferred``: ``start`` runs the rest of a compile on the first call
    that needs the artifact instead of on a thread (tests that must see
    masks served early)."""

    def __init__(self, tokenizer: Any, vocab_size: Optional[int], deferred: bool = False):
        self.tokenizer = tokenizer
        self.vocab_size = vocab_size
        self.deferred = deferred
        self._compiler: Optional[Compiler] = None
        self._lock = threading.Lock()

    def _get(self) -> Compiler:
        with self._lock:
            if self._compiler is None:
                if self.tokenizer is None:
                    raise ValueError("tooldec: a request's own tools need the engine's tokenizer")
                self._compiler = Compiler(self.tokenizer)
            return self._compiler

    def compile(self, spec: Spec) -> Artifact:
        return self._get().compile(
            spec.tools, format=spec.format, entry=spec.entry, vocab_size=self.vocab_size, repair=True
        )

    def start(self, spec: Spec) -> Pending:
        """Starts the compile: errors in the tools raise here, and the
        ``Pending``'s matchers serve masks at once (computed on demand,
        equal to the artifact's) while the artifact is built on a thread.
        A tool list the compiler has kept comes back ready."""
        return self._get().start(
            spec.tools,
            format=spec.format,
            entry=spec.entry,
            vocab_size=self.vocab_size,
            repair=True,
            deferred=self.deferred,
        )


#: What a request's matchers come from.
Source = Union[Artifact, Pending]


def grammar_source(tools: ToolsCompiler, artifacts: Mapping[str, Artifact], spec: Spec) -> Source:
    """A request's own tools, started so that its first mask does not
    wait for the whole artifact; compiled outright when the request names
    one tool (a one-tool matcher needs the artifact's tool tables); else
    the configured artifact the spec names."""
    if spec.tools is None:
        return resolve(artifacts, spec)
    if spec.tool is not None:
        return tools.compile(spec)
    return tools.start(spec)


def source_matcher(
    source: Source,
    entry: Optional[str],
    max_tokens: Optional[int],
    max_rollback: int,
    tool: Optional[str] = None,
) -> Union[Matcher, PendingMatcher]:
    """A matcher at the start of ``entry`` with the request's budget: the
    artifact's, or a pending compile's (early while the artifact is not
    there; both have the methods the engine adapters call)."""
    if isinstance(source, Pending):
        if tool is not None:  # grammar_source compiles such requests outright
            raise ValueError(f"tooldec: tool {tool!r}: a one-tool matcher needs the artifact")
        return source.matcher(entry=entry, budget=max_tokens, max_rollback=max_rollback)
    return source.matcher(entry=entry, max_tokens=max_tokens, max_rollback=max_rollback, tool=tool)


def settled(source: Source) -> Source:
    """The artifact once a pending compile has landed (so that what
    engines keep does not hold the compile's early state), else
    ``source`` (also when the compile failed: its matchers say so)."""
    if isinstance(source, Pending) and source.is_ready():
        try:
            return source.wait()
        except ValueError:
            return source
    return source


def compile_error(source: Source) -> Optional[str]:
    """The error of a pending compile that landed failed, else None."""
    if not isinstance(source, Pending) or not source.is_ready():
        return None
    try:
        source.wait()
    except ValueError as e:
        return str(e)
    return None


class RequestMatcher:
    """One request's matcher as the engine adapters drive it: from an
    artifact, or from a pending compile (served early, then from its
    artifact). Other attributes are the matcher's own (``state``,
    ``tokens_left``...).

    ``start`` raised every error the tool list itself shows; what the rest
    of the compile can still find (the DFA state bound, a time or memory
    limit) cannot be raised through an engine's batch mask fill, so it is
    kept in ``error`` and logged: masks then allow only EOS and no token is
    accepted, which vLLM (``accept_tokens`` false) and SGLang
    (``accept_token`` raising) turn into the request's end with an error,
    the engine going on."""

    def __init__(
        self,
        source: Source,
        entry: Optional[str] = None,
        max_tokens: Optional[int] = None,
        max_rollback: int = 0,
        tool: Optional[str] = None,
    ) -> None:
        self.source = source
        self.entry = entry
        self.max_rollback = max_rollback
        self.eos_token_ids = list(source.eos_token_ids)
        self.error: Optional[str] = None
        self.inner = source_matcher(source, entry, max_tokens, max_rollback, tool)

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet: __init__ failed
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _failed(self) -> bool:
        """Whether the pending compile failed (kept in ``error``, logged
        once); a ``ValueError`` raised otherwise is the caller's."""
        if self.error is None:
            self.error = compile_error(self.source)
            if self.error is not None:
                logger.error("tooldec: the request's tools did not compile: %s", self.error)
        return self.error is not None

    def _guarded(self, failed: Any, method: str, *args: Any) -> Any:
        """The matcher's ``method(*args)``, or ``failed`` once the compile
        failed."""
        if self.error is None:
            try:
                return getattr(self.inner, method)(*args)
            except ValueError:
                if not self._failed():
                    raise
        return failed

    def fill_next_token_bitmask(self, bitmask: Any, index: int = 0) -> None:
        if self._guarded(False, "fill_next_token_bitmask", bitmask, index) is not False:
            return
        bitmask[index] = 0  # the compile failed: EOS only
        for t in self.eos_token_ids:
            word = int(bitmask[index, t >> 5]) & 0xFFFFFFFF | 1 << (t & 31)
            bitmask[index, t >> 5] = word - (1 << 32) if word >> 31 else word

    def accept_token(self, token_id: int) -> bool:
        return self._guarded(False, "accept_token", token_id)

    def validate_tokens(self, tokens: Any) -> int:
        return self._guarded(0, "validate_tokens", tokens)

    def forced_bytes(self) -> bytes:
        return self._guarded(b"", "forced_bytes")

    def rollback(self, num_tokens: int) -> None:
        self._guarded(None, "rollback", num_tokens)

    def reset(self) -> None:
        """Back to the start of the request's entry with its budget (a
        ``Matcher``'s own ``reset()`` goes to the grammar's default entry;
        a ``PendingMatcher``'s to the one it was made for)."""
        named = self.entry is not None and isinstance(self.inner, Matcher)
        self._guarded(None, "reset", *((self.entry,) if named else ()))

    def is_terminated(self) -> bool:
        return self.error is None and self.inner.is_terminated()

    def is_accepting(self) -> bool:
        return self.error is None and self.inner.is_accepting()

    def describe(self, token: int) -> str:
        """``token`` and, when the artifact is there, its bytes."""
        art = settled(self.source)
        if isinstance(art, Artifact):
            return f"{token} ({art.token_bytes(token)!r})"
        return str(token)


def wrap_once(owner: Any, name: str, wrap: Callable[[Any], Any]) -> bool:
    """Replaces ``owner.name`` (an engine's method) by ``wrap(original)``,
    marked ``_tooldec`` so that a second call (the engines load plugins in
    every process, sometimes twice) leaves it alone. False when the engine
    has no such attribute."""
    original = getattr(owner, name, None)
    if original is None:
        return False
    if not getattr(original, "_tooldec", False):
        wrapped = wrap(original)
        wrapped._tooldec = True  # type: ignore[attr-defined]
        setattr(owner, name, wrapped)
    return True
