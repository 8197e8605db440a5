"""Stand-in for the parts of ``sglang.srt.server_args`` the grammar backend
machinery reads (sgl-project/sglang, 2025-2026): the ``--grammar-backend``
choices, the function that extends them, and the ``ServerArgs`` fields that
``create_grammar_backend`` consults."""

from dataclasses import dataclass
from typing import Optional

GRAMMAR_BACKEND_CHOICES = ["xgrammar", "outlines", "llguidance", "none"]
add_grammar_backend_choices = GRAMMAR_BACKEND_CHOICES.extend


@dataclass
class ServerArgs:
    model_path: str = ""
    device: Optional[str] = None
    grammar_backend: Optional[str] = None
    reasoning_parser: Optional[str] = None
    constrained_json_whitespace_pattern: Optional[str] = None
    constrained_json_disable_any_whitespace: bool = False

    def __post_init__(self):
        if self.grammar_backend is None:
            self.grammar_backend = "xgrammar"
        if self.grammar_backend not in GRAMMAR_BACKEND_CHOICES:
            raise ValueError(
                f"argument --grammar-backend: invalid choice: {self.grammar_backend!r} "
                f"(choose from {GRAMMAR_BACKEND_CHOICES})"
            )
