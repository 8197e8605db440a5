"""Bitmask helpers in numpy (and torch, when the arrays are torch tensors).

The layout is the one vLLM, SGLang, XGrammar and llguidance share: a row of
``ceil(vocab_size / 32)`` 32-bit words per sequence, bit ``t % 32`` of word
``t // 32`` set when token ``t`` is allowed.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple


def get_bitmask_shape(batch_size: int, vocab_size: int) -> Tuple[int, int]:
    """``(batch_size, ceil(vocab_size / 32))``."""
    return (batch_size, (vocab_size + 31) // 32)


def allocate_token_bitmask(batch_size: int, vocab_size: int):
    """A numpy ``int32`` bitmask of shape ``(batch_size, ceil(vocab_size / 32))``
    with every bit set (every token allowed), as XGrammar allocates it: rows
    that are never filled leave their sequence unconstrained.

    ``vocab_size`` is the model's logits size (it may exceed the artifact's).
    """
    import numpy as np

    return np.full(get_bitmask_shape(batch_size, vocab_size), -1, dtype=np.int32)


def _is_torch(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def bitmask_to_bool(bitmask, vocab_size: int):
    """Unpacks a numpy bitmask of shape ``(batch, words)`` (or ``(words,)``)
    into booleans of shape ``(batch, vocab_size)`` (or ``(vocab_size,)``):
    True where the token is allowed. Columns beyond ``words * 32`` are False.
    """
    import numpy as np

    b = np.asarray(bitmask)
    one_row = b.ndim == 1
    if one_row:
        b = b[None, :]
    if b.dtype.itemsize != 4 or b.dtype.kind not in "iu":
        raise TypeError(f"tooldec: the bitmask must hold 32-bit integers, got {b.dtype}")
    words = np.ascontiguousarray(b).astype("<u4", copy=False)
    bits = np.unpackbits(words.view(np.uint8), axis=-1, bitorder="little").astype(bool)
    if bits.shape[1] >= vocab_size:
        out = bits[:, :vocab_size]
    else:
        out = np.zeros((bits.shape[0], vocab_size), dtype=bool)
        out[:, : bits.shape[1]] = bits
    return out[0] if one_row else out


def _bool_mask_torch(bitmask, vocab_size: int, device):
    import torch  # only reached with torch tensors

    b = bitmask.to(device=device, dtype=torch.int32)
    one_row = b.dim() == 1
    if one_row:
        b = b.unsqueeze(0)
    shifts = torch.arange(32, device=device, dtype=torch.int32)
    bits = ((b.unsqueeze(-1) >> shifts) & 1).bool().reshape(b.shape[0], -1)
    if bits.shape[1] >= vocab_size:
        out = bits[:, :vocab_size]
    else:
        out = torch.zeros((bits.shape[0], vocab_size), dtype=torch.bool, device=device)
        out[:, : bits.shape[1]] = bits
    return out[0] if one_row else out


def apply_token_bitmask(logits, bitmask, indices: Optional[Sequence[int]] = None):
    """Sets the logits of disallowed tokens to ``-inf``, in place, and returns
    ``logits``.

    ``logits``: ``(batch, vocab)`` or ``(vocab,)`` floats (numpy, or torch on
    any device); ``bitmask``: ``(batch, words)`` or ``(words,)`` int32.
    Columns of ``logits`` beyond ``words * 32`` are disallowed. ``indices``:
    the rows of ``logits`` to mask, row ``i`` of the bitmask for
    ``indices[i]`` (default: all, row for row).
    """
    if _is_torch(logits):
        vocab = logits.shape[-1]
        if _is_torch(bitmask):
            allowed = _bool_mask_torch(bitmask, vocab, logits.device)
        else:
            import torch

            allowed = torch.from_numpy(bitmask_to_bool(bitmask, vocab)).to(logits.device)
        if indices is None:
            logits.masked_fill_(~allowed, float("-inf"))
        else:
            idx = torch.as_tensor(list(indices), device=logits.device, dtype=torch.long)
            logits[idx] = logits[idx].masked_fill(~allowed[: len(idx)], float("-inf"))
        return logits

    import numpy as np

    if not isinstance(logits, np.ndarray):
        raise TypeError(
            f"tooldec: logits must be a numpy array or a torch tensor, got {type(logits).__name__}"
        )
    if _is_torch(bitmask):
        bitmask = bitmask.cpu().numpy()
    vocab = logits.shape[-1]
    allowed = bitmask_to_bool(bitmask, vocab)
    if indices is None:
        if logits.ndim == 2 and allowed.ndim == 2 and allowed.shape[0] != logits.shape[0]:
            raise ValueError(
                f"tooldec: {logits.shape[0]} rows of logits but {allowed.shape[0]} bitmask rows"
            )
        np.putmask(logits, ~allowed, -np.inf)
    else:
        idx = np.asarray(list(indices), dtype=np.intp)
        rows = logits[idx]
        np.putmask(rows, ~allowed[: len(idx)], -np.inf)
        logits[idx] = rows
    return logits
