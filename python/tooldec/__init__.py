"""tooldec: syntax-error-free tool calls by construction.

Load a compiled artifact (``tooldec-compile tools.json -o tools.tdm``) and
serve token masks from it::

    import numpy as np
    import tooldec

    art = tooldec.Artifact.open("tools.tdm")
    m = art.matcher(max_tokens=256, max_rollback=8)
    bitmask = tooldec.allocate_token_bitmask(1, art.mask_width)
    m.fill_next_token_bitmask(bitmask, 0)   # row 0: allowed next tokens
    tooldec.apply_token_bitmask(logits, bitmask)
    m.accept_token(int(np.argmax(logits)))

Or compile a tool list in the process, for a tokenizer, without the CLI::

    c = tooldec.Compiler("Qwen2.5-7B-Instruct/tokenizer.json")  # or a tokenizer object
    art = c.compile(tools, format="hermes")   # an OpenAI tools list, or any other dialect

A new tool list's first masks need not wait for its artifact:
``c.start(tools, format="hermes")`` returns a ``Pending`` whose
``matcher()`` serves masks computed on demand (equal to the artifact's)
while the artifact is built on a thread; ``wait()`` returns the artifact.

An artifact only fits the tokenizer it was compiled for:
``tooldec.vocab_fingerprint(tokenizer)`` computes a tokenizer's vocabulary
fingerprint (from a transformers fast tokenizer, a ``tokenizers.Tokenizer``
or a ``tokenizer.json``) and ``art.check_vocabulary(fp)`` refuses a
mismatch; every adapter runs this check at load when it is given the
engine's tokenizer.

Adapters: ``tooldec.hf`` (Hugging Face ``LogitsProcessor``),
``tooldec.sglang`` (SGLang grammar backend), ``tooldec.vllm`` (vLLM v1
structured-output backend). Each imports its engine only when imported.
"""

try:
    from ._tooldec import (
        DEFAULT_MAX_ROLLBACK,
        Artifact,
        Compiler,
        Fingerprint,
        Matcher,
        Pending,
        PendingMatcher,
        __version__,
        fill_next_token_bitmask_batch,
    )
except ImportError as e:  # the source tree, not the installed package
    raise ImportError(
        f"tooldec: the native module tooldec._tooldec is missing ({e}); install the package "
        "with `pip install ./python` from the repository root, and do not import it from the "
        "python/ source directory"
    ) from e
from ._vocab import vocab_fingerprint
from ._bitmask import (
    allocate_token_bitmask,
    apply_token_bitmask,
    bitmask_to_bool,
    get_bitmask_shape,
)

__all__ = [
    "Artifact",
    "Compiler",
    "Fingerprint",
    "Matcher",
    "Pending",
    "PendingMatcher",
    "DEFAULT_MAX_ROLLBACK",
    "fill_next_token_bitmask_batch",
    "allocate_token_bitmask",
    "apply_token_bitmask",
    "bitmask_to_bool",
    "get_bitmask_shape",
    "vocab_fingerprint",
    "__version__",
]
