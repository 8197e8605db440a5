"""The vocabulary fingerprint of an engine's tokenizer, and the check every
adapter runs at load.

An artifact records the SHA-256 fingerprint of the vocabulary it was
compiled for (``Artifact.vocab_fingerprint``). ``vocab_fingerprint``
computes the same hash from the tokenizer an engine serves with, reading its
``tokenizer.json`` with the compiler's own code, so a tokenizer and
``tooldec-compile --tokenizer`` never disagree about what the tokens are.
An artifact compiled for another tokenizer would allow the wrong token ids:
the adapters refuse it with the runtime's message (the artifact's vocabulary
and both fingerprints).
"""

from __future__ import annotations

import os
from typing import Any, Optional, Tuple

from ._tooldec import Artifact, tokenizer_json_fingerprint

__all__ = ["vocab_fingerprint", "check_vocabulary"]

FINGERPRINT_BYTES = 32


def _tokenizer_path(tokenizer: Any) -> Optional[str]:
    """The file a tokenizer given as a path names (a directory stands for
    the ``tokenizer.json`` in it), or None when it is not a path (a
    tokenizer object, or a ``str`` holding the JSON itself)."""
    if not isinstance(tokenizer, (str, os.PathLike)):
        return None
    text = os.fspath(tokenizer)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if isinstance(tokenizer, str) and text.lstrip().startswith("{"):
        return None  # the JSON itself
    if os.path.isdir(text):
        text = os.path.join(text, "tokenizer.json")
    return text


def _tokenizer_json(tokenizer: Any, what: str = "a 32-byte fingerprint") -> str:
    """The ``tokenizer.json`` text of a tokenizer given in any of the forms
    ``vocab_fingerprint`` takes."""
    path = _tokenizer_path(tokenizer)
    if path is not None:
        with open(path, encoding="utf-8") as f:
            return f.read()
    if isinstance(tokenizer, str):
        return tokenizer  # the JSON itself
    # transformers' fast tokenizers (what vLLM and SGLang hold) wrap a
    # tokenizers.Tokenizer (``backend_tokenizer``, stored as ``_tokenizer``);
    # a tokenizers.Tokenizer serializes itself.
    for attr in ("backend_tokenizer", "_tokenizer"):
        backend = getattr(tokenizer, attr, None)
        if backend is not None and hasattr(backend, "to_str"):
            return backend.to_str()
    if hasattr(tokenizer, "to_str"):
        return tokenizer.to_str()
    raise TypeError(
        f"tooldec: cannot read the vocabulary of a {type(tokenizer).__name__}: pass a "
        "transformers fast tokenizer, a tokenizers.Tokenizer, the path of a tokenizer.json (or "
        f"its directory), its text, or {what}"
    )


def _tokenizer_source(tokenizer: Any) -> Tuple[str, str, Optional[str], str]:
    """How ``tooldec.Compiler`` reads a tokenizer: ``("path", file, None,
    file)`` for a path (a ``tokenizer.json`` or a GGUF file; the
    end-of-sequence token then comes from the ``tokenizer_config.json``
    beside it, or the GGUF metadata), else ``("json", text, eos_token,
    name)``: the ``tokenizer.json`` text, the tokenizer's own
    ``eos_token`` (transformers tokenizers have one; None otherwise) and a
    name for the artifact's metadata."""
    path = _tokenizer_path(tokenizer)
    if path is not None:
        return ("path", path, None, path)
    text = _tokenizer_json(tokenizer, what="the path of a GGUF file")
    eos = getattr(tokenizer, "eos_token", None)
    eos = None if eos is None else str(eos)
    name = getattr(tokenizer, "name_or_path", None) or ""
    name = os.path.basename(str(name).rstrip("/\\"))
    if not name:
        name = "tokenizer.json" if isinstance(tokenizer, str) else type(tokenizer).__name__
    return ("json", text, eos, name)


def vocab_fingerprint(tokenizer: Any) -> bytes:
    """The 32-byte vocabulary fingerprint of ``tokenizer``, as
    ``tooldec-compile`` records it for that tokenizer.

    ``tokenizer``: a transformers fast tokenizer (``PreTrainedTokenizerFast``,
    what ``AutoTokenizer`` gives and vLLM and SGLang pass to their grammar
    backends), a ``tokenizers.Tokenizer``, the path of a ``tokenizer.json``
    or of the directory holding it, the JSON text itself, or a fingerprint
    computed before (32 bytes, returned as is). Raises ``TypeError`` for
    anything else (a slow tokenizer has no ``tokenizer.json``) and
    ``ValueError`` for a tokenizer tooldec cannot map to bytes.
    """
    if isinstance(tokenizer, (bytes, bytearray, memoryview)):
        fp = bytes(tokenizer)
        if len(fp) != FINGERPRINT_BYTES:
            raise ValueError(
                f"tooldec: a vocabulary fingerprint is {FINGERPRINT_BYTES} bytes, got {len(fp)}"
            )
        return fp
    return bytes(tokenizer_json_fingerprint(_tokenizer_json(tokenizer)))


def check_vocabulary(artifact: Artifact, fingerprint: Optional[bytes], who: str) -> None:
    """Refuses ``artifact`` (``ValueError`` naming ``who``, the artifact's
    vocabulary and both fingerprints) unless it was compiled for the
    vocabulary with this fingerprint; nothing to check when it is None."""
    if fingerprint is None:
        return
    try:
        artifact.check_vocabulary(fingerprint)
    except ValueError as e:
        raise ValueError(
            f"tooldec: {who}: {str(e).removeprefix('tooldec: ')}; compile it with "
            "tooldec-compile --tokenizer for the model's tokenizer.json"
        ) from None
