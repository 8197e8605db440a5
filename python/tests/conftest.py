"""Fixtures: the test artifacts, the weather tools, and engine stand-ins.

The engine packages (transformers, tokenizers, SGLang, vLLM) are used when installed;
otherwise ``tests/standins`` provides their interfaces (appended to
``sys.path``, so an installed package always wins). The header of the pytest
run says which were used.
"""

import importlib.util
import json
import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
STANDINS = HERE / "standins"

ENGINES = ("transformers", "tokenizers", "sglang", "vllm")
STANDIN_USED = {name: importlib.util.find_spec(name) is None for name in ENGINES}
if any(STANDIN_USED.values()):
    sys.path.append(str(STANDINS))

# Figures the tests record for the end-of-run summary.
FIGURES = []


def record(line: str) -> None:
    FIGURES.append(line)


def pytest_report_header(config):
    used = ", ".join(
        f"{n}={'stand-in (tests/standins)' if s else 'installed'}" for n, s in STANDIN_USED.items()
    )
    return [f"tooldec engines: {used}"]


def pytest_terminal_summary(terminalreporter):
    if FIGURES:
        terminalreporter.section("tooldec figures")
        for line in FIGURES:
            terminalreporter.write_line(line)


def _artifact_path(env: str, default=None):
    p = os.environ.get(env) or default
    return pathlib.Path(p) if p else None


@pytest.fixture(scope="session")
def weather_path():
    p = _artifact_path("TOOLDEC_WEATHER_TDM", ROOT / "artifacts" / "weather-gpt2.tdm")
    assert p.is_file(), f"missing test artifact {p}"
    return p


@pytest.fixture(scope="session")
def weather(weather_path):
    import tooldec

    return tooldec.Artifact.open(str(weather_path))


@pytest.fixture(scope="session")
def hermes():
    """weather.json in the hermes format, GPT-2 vocabulary, logits size
    50304 (47 padding ids), default budget 96: compiled by python/test.sh."""
    import tooldec

    p = _artifact_path("TOOLDEC_HERMES_TDM")
    if p is None or not p.is_file():
        pytest.skip("TOOLDEC_HERMES_TDM unset: run python/test.sh, which compiles it")
    return tooldec.Artifact.open(str(p))


@pytest.fixture(scope="session")
def qwen():
    """weather.json, hermes format, Qwen2.5 tokenizer (<tool_call> an added token that is text),
    logits size 151936: compiled by python/test.sh when $TOOLDEC_DATA is set."""
    import tooldec

    p = _artifact_path("TOOLDEC_QWEN_TDM")
    if p is None or not p.is_file():
        pytest.skip("TOOLDEC_DATA unset: the Qwen2.5-tokenizer tests need it (see python/test.sh)")
    return tooldec.Artifact.open(str(p))


@pytest.fixture(scope="session")
def tools():
    """{tool name: JSON Schema of its arguments} from weather.json."""
    with open(ROOT / "grammars" / "examples" / "weather.json") as f:
        spec = json.load(f)
    return {t["function"]["name"]: t["function"]["parameters"] for t in spec}


@pytest.fixture(scope="session")
def bytes_tokenizer_path():
    """A byte-level BPE tokenizer.json of 260 tokens (the 256 bytes, three
    merges, ``<|endoftext|>``), committed under tests/fixtures."""
    return HERE / "fixtures" / "bytes-tokenizer.json"


@pytest.fixture(scope="session")
def bytes_art():
    """weather.json compiled for tests/fixtures/bytes-tokenizer.json (by
    python/test.sh): an artifact whose tokenizer the tests hold."""
    import tooldec

    p = _artifact_path("TOOLDEC_BYTES_TDM")
    if p is None or not p.is_file():
        pytest.skip("TOOLDEC_BYTES_TDM unset: run python/test.sh, which compiles it")
    return tooldec.Artifact.open(str(p))


@pytest.fixture(scope="session")
def data_dir():
    """$TOOLDEC_DATA (python/test.sh makes it absolute), or skip."""
    d = os.environ.get("TOOLDEC_DATA")
    if not d:
        pytest.skip("TOOLDEC_DATA unset: the real-tokenizer tests need it (see python/test.sh)")
    return pathlib.Path(d)


@pytest.fixture(scope="module")
def smollm2_weather():
    """The weather tools compiled for SmolLM2 (Hermes format, its ``calls``
    entry), for the real-engine tests (see ``real_engines``)."""
    from real_engines import WEATHER, weather_smollm2

    return weather_smollm2(WEATHER)
