"""Stand-in for the part of Hugging Face transformers that tooldec.hf uses.

Mirrors ``transformers.generation.logits_process`` at
huggingface/transformers@aa5108b44996: a logits processor is called with
``(input_ids, scores)`` and returns the processed scores; a
``LogitsProcessorList`` calls its processors in order, passing extra keyword
arguments only to processors whose ``__call__`` takes more than two.
"""

import inspect

__version__ = "0.0.0+tooldec-standin"
TOOLDEC_STANDIN = True


class LogitsProcessor:
    """Base class of logits processors (abstract ``__call__``)."""

    def __call__(self, input_ids, scores):
        raise NotImplementedError(
            f"{self.__class__} is an abstract class. Only classes inheriting this class can be "
            "called."
        )


class LogitsProcessorList(list):
    """A list of processors applied one after the other."""

    def __call__(self, input_ids, scores, **kwargs):
        for processor in self:
            params = inspect.signature(processor.__call__).parameters
            if len(params) > 2:
                missing = [p for p in list(params)[2:] if p not in kwargs]
                if missing:
                    raise ValueError(
                        f"Make sure that all the required parameters: {list(params)} for "
                        f"{processor.__class__} are passed to the logits processor."
                    )
                scores = processor(input_ids, scores, **kwargs)
            else:
                scores = processor(input_ids, scores)
        return scores
