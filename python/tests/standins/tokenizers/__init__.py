"""Stand-in for the part of Hugging Face ``tokenizers`` that tooldec reads.

Mirrors ``tokenizers.Tokenizer`` (bindings/python, huggingface/tokenizers
v0.22): a tokenizer is built from its ``tokenizer.json`` (``from_file``,
``from_str``) and serializes itself back to that JSON (``to_str``), which is
what ``tooldec.vocab_fingerprint`` reads. The stand-in only holds the JSON:
it does not tokenize.
"""

import json

__version__ = "0.0.0+tooldec-standin"
TOOLDEC_STANDIN = True


class Tokenizer:
    """A tokenizer known by its ``tokenizer.json``."""

    def __init__(self, model=None):
        if model is not None:
            raise NotImplementedError("the tokenizers stand-in only loads tokenizer.json")
        self._json = None

    @staticmethod
    def from_str(json_text):
        t = Tokenizer()
        json.loads(json_text)  # the real one refuses what is not JSON
        t._json = json_text
        return t

    @staticmethod
    def from_file(path):
        with open(path, encoding="utf-8") as f:
            return Tokenizer.from_str(f.read())

    def to_str(self, pretty=False):
        if pretty:
            return json.dumps(json.loads(self._json), indent=2, ensure_ascii=False)
        return self._json
