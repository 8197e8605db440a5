"""Stand-in for the part of ``sglang.srt.runtime_context`` (SGLang 0.5.23)
that grammar backends read: a process publishes its ``ServerArgs`` once
(``publish(server_args, role=...)``, last publish wins) and readers take
the configuration from there (``get_exec().kernel.grammar_backend``)
instead of from the arguments passed to them."""

from types import SimpleNamespace

_PUBLISHED = None


def publish(server_args, *, role: str, hf_config=None, ranks=None):
    global _PUBLISHED
    _PUBLISHED = server_args
    return server_args


def get_exec():
    if _PUBLISHED is None:
        raise ValueError("config namespace 'exec' not published")
    return SimpleNamespace(kernel=SimpleNamespace(grammar_backend=_PUBLISHED.grammar_backend))
