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
from typing import Any, Optional

from ._tooldec import Artifact, tokenizer_json_fingerprint

__all__ = ["vocab_fingerprint", "check_vocabulary"]

FINGERPRINT_BYTES = 32


def _tokenizer_json(tokenizer: Any) -> str:
    """The ``tokenizer.json`` text of a tokenizer given in any of the forms
    ``vocab_fingerprint`` takes."""
    if isinstance(tokenizer, (str, os.PathLike)):
        text = os.fspath(tokenizer)
        if isinstance(tokenizer, str) and text.lstrip().startswith("{"):
            return text  # the JSON itself
        path = text
        if os.path.isdir(path):
            path = os.path.join(path, "tokenizer.json")
        with open(path, encoding="utf-8") as f:
            return f.read()
    # transformers' fast tokenizers (what vLLM and SGLang hold) wrap a
    # tokenizers.Tokenizer; a tokenizers.Tokenizer serializes itself.
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and hasattr(backend, "to_str"):
        return backend.to_str()
    if hasattr(tokenizer, "to_str"):
        return tokenizer.to_str()
    raise TypeError(
        f"tooldec: cannot read the vocabulary of a {type(tokenizer).__name__}: pass a "
        "transformers fast tokenizer, a tokenizers.Tokenizer, the path of a tokenizer.json (or "
        "its directory), its text, or a 32-byte fingerprint"
    )


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
