"""Stand-in for the part of Hugging Face transformers that tooldec.hf uses.

Mirrors ``transformers.generation.logits_process`` at
huggingface/transformers@aa5108b44996: a logits processor is called with
``(input_ids, scores)`` and returns the processed scores; a
``LogitsProcessorList`` calls its processors in order, passing extra keyword
arguments only to processors whose ``__call__`` takes more than two.

And ``PreTrainedTokenizerFast`` (``tokenization_utils_fast.py``, same
commit), the tokenizer class ``AutoTokenizer`` gives and vLLM and SGLang hand
to grammar backends: built from a ``tokenizers.Tokenizer``
(``tokenizer_object``) or a ``tokenizer.json`` (``tokenizer_file``), it
holds the Rust tokenizer as ``backend_tokenizer``.
"""

import copy
import inspect

import tokenizers

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


class PreTrainedTokenizerFast:
    """A fast tokenizer: ``backend_tokenizer`` is its ``tokenizers.Tokenizer``."""

    def __init__(self, *args, tokenizer_object=None, tokenizer_file=None, **kwargs):
        # PreTrainedTokenizerBase keeps these (tokenization_utils_base.py):
        # the model's name or directory, and the special-token strings
        # given as keyword arguments (from tokenizer_config.json when loaded).
        self.name_or_path = kwargs.get("name_or_path", "")
        self.eos_token = kwargs.get("eos_token")
        if tokenizer_object is not None:
            self._tokenizer = copy.deepcopy(tokenizer_object)
        elif tokenizer_file is not None:
            self._tokenizer = tokenizers.Tokenizer.from_file(tokenizer_file)
        else:
            raise ValueError(
                "Couldn't instantiate the backend tokenizer from one of: (1) a `tokenizers` "
                "library serialization file, (2) a slow tokenizer instance to convert or (3) an "
                "equivalent slow tokenizer class to instantiate and convert."
            )

    @property
    def backend_tokenizer(self):
        return self._tokenizer
