"""tooldec.Compiler: compiling tool lists in the process.

A compiled artifact must be the one ``tooldec-compile`` writes for the same
tool list and flags (same metadata, same masks on random walks): checked
against the committed golden artifact, the artifacts python/test.sh compiles
with the CLI, and the CLI itself run here with more flags when
``$TOOLDEC_COMPILE`` names it (python/test.sh sets it). It must serve every
``Artifact`` method, come from the cache for a tool list compiled before,
compile from several threads at once, and refuse bad input with a
``ValueError`` naming the place.
"""

import json
import os
import pathlib
import re
import subprocess
import threading
import time

import numpy as np
import pytest

import tokenizers
import transformers
import tooldec
from conftest import ROOT, STANDIN_USED, record
from helpers import assert_same, check_output, random_logits, sample

WEATHER = ROOT / "grammars" / "examples" / "weather.json"
TINY = ROOT / "grammars" / "examples" / "tiny.json"


@pytest.fixture(scope="module")
def gpt2():
    return tooldec.Compiler.gpt2()


@pytest.fixture(scope="module")
def weather_tools():
    with open(WEATHER) as f:
        return json.load(f)


# ---------------------------------------------------------------------------
# The same artifact as the CLI's
# ---------------------------------------------------------------------------


def test_gpt2_compile_equals_the_committed_cli_artifact(gpt2, weather_tools, weather):
    """artifacts/weather-gpt2.tdm is `tooldec-compile weather.json` (react,
    built-in GPT-2 vocabulary; tests/golden.rs keeps it current)."""
    art = gpt2.compile(weather_tools)
    assert art.path is None
    assert art.metadata_json == weather.metadata_json
    assert_same(art, weather)


def test_compile_equals_the_cli_with_flags(gpt2, weather_tools, hermes):
    """python/test.sh compiles weather.json with --format hermes
    --vocab-size 50304 --max-tokens 96."""
    art = gpt2.compile(weather_tools, format="hermes", vocab_size=50304, max_tokens=96)
    assert art.metadata_json == hermes.metadata_json
    assert (art.mask_width, art.max_tokens) == (50304, 96)
    assert_same(art, hermes)


def test_tokenizer_json_compile_equals_the_cli(
    bytes_tokenizer_path, weather_tools, bytes_art, tmp_path
):
    """python/test.sh compiles weather.json with --tokenizer
    tests/fixtures/bytes-tokenizer.json --eos '<|endoftext|>'."""
    c = tooldec.Compiler(bytes_tokenizer_path, eos="<|endoftext|>")
    assert c.vocab_fingerprint == tooldec.vocab_fingerprint(bytes_tokenizer_path)
    assert c.token_count == 260 and c.eos_token_ids == [259]
    art = c.compile(weather_tools)
    assert art.metadata_json == bytes_art.metadata_json
    assert_same(art, bytes_art)
    # A str path with the EOS given by id, and the directory of a
    # tokenizer.json: the same vocabulary (the label names the directory).
    other = tooldec.Compiler(str(bytes_tokenizer_path), eos=259)
    assert other.compile(weather_tools).metadata_json == bytes_art.metadata_json
    (tmp_path / "tokenizer.json").write_bytes(bytes_tokenizer_path.read_bytes())
    other = tooldec.Compiler(tmp_path, eos=[259])
    assert other.vocab_label.startswith(tmp_path.name)
    assert_same(other.compile(weather_tools), bytes_art, walks=2, ignore=("vocab",))


def test_tokenizer_objects_compile_the_same_masks(bytes_tokenizer_path, weather_tools, bytes_art):
    """A tokenizers.Tokenizer, a transformers fast tokenizer (its eos_token
    used) and the tokenizer.json text: the CLI's masks; only the vocabulary
    label in the metadata says where the vocabulary came from."""
    text = bytes_tokenizer_path.read_text(encoding="utf-8")
    tok = tokenizers.Tokenizer.from_file(str(bytes_tokenizer_path))
    with pytest.raises(ValueError, match=r"eos="):
        tooldec.Compiler(tok)  # a tokenizers.Tokenizer does not know its EOS
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|endoftext|>", name_or_path="org/bytes-model"
    )
    forms = {
        "tokenizers.Tokenizer": tooldec.Compiler(tok, eos="<|endoftext|>"),
        "fast tokenizer": tooldec.Compiler(fast),
        "json text": tooldec.Compiler(text, eos=["<|endoftext|>"]),
    }
    assert forms["fast tokenizer"].vocab_label.startswith("bytes-model (260 tokens")
    for name, c in forms.items():
        assert c.vocab_fingerprint == bytes_art.vocab_fingerprint, name
        art = c.compile(weather_tools)
        meta = art.metadata
        assert meta["vocab"].pop("label") != bytes_art.metadata["vocab"]["label"], name
        want = bytes_art.metadata
        want["vocab"].pop("label")
        assert meta == want, name
        assert_same(art, bytes_art, walks=2, ignore=("vocab",))
    record(
        "compiler: tokenizer objects via "
        + ("installed tokenizers" if not STANDIN_USED["tokenizers"] else "the tokenizers stand-in")
    )


TOOLDEC_COMPILE = os.environ.get("TOOLDEC_COMPILE")
needs_cli = pytest.mark.skipif(
    not TOOLDEC_COMPILE, reason="TOOLDEC_COMPILE unset: python/test.sh sets it to the CLI it built"
)


def cli(tools, out, *flags):
    subprocess.run([TOOLDEC_COMPILE, str(tools), "-q", "-o", str(out), *flags], check=True)
    return tooldec.Artifact.open(str(out))


@needs_cli
@pytest.mark.parametrize(
    "tools,flags,kwargs",
    [
        (
            WEATHER,
            "--format hermes --entry call --max-ws 1 --open-objects --any-order 2 "
            "--max-tokens 60 --vocab-size 50400 --no-regions",
            dict(
                format="hermes",
                entry="call",
                max_ws=1,
                open_objects=True,
                any_order=2,
                max_tokens=60,
                vocab_size=50400,
                no_regions=True,
            ),
        ),
        (WEATHER, "--format hermes --whitespace dumps", dict(format="hermes", whitespace="dumps")),
        (
            TINY,
            "--dialect openai --relax --max-depth 8 --max-count 64 --max-recursion 2 "
            "--any-depth 2 --rename-collisions --threads 1 --uncompressed",
            dict(
                dialect="openai",
                relax=True,
                max_depth=8,
                max_count=64,
                max_recursion=2,
                any_depth=2,
                rename_collisions=True,
                threads=1,
            ),
        ),
    ],
    ids=["hermes-call", "hermes-dumps", "tiny-react"],
)
def test_keyword_arguments_are_the_cli_flags(gpt2, tmp_path, tools, flags, kwargs):
    want = cli(tools, tmp_path / "cli.tdm", *flags.split())
    art = gpt2.compile(json.loads(tools.read_text()), **kwargs)
    assert art.metadata_json == want.metadata_json
    assert_same(art, want)


# ---------------------------------------------------------------------------
# The compiled artifact, the cache, threads
# ---------------------------------------------------------------------------


def test_a_compiled_artifact_serves_every_method(tools):
    c = tooldec.Compiler.gpt2()
    with open(WEATHER) as f:
        spec = json.load(f)
    art = c.compile(spec, format="hermes", max_tokens=96)
    del c  # the artifact keeps the grammar alive
    assert art.path is None and "in memory" in repr(art)
    assert art.tools == ["get_weather", "get_time", "search_flights"]
    assert art.metadata["format"] == "hermes" and art.max_tokens == 96
    assert art.is_eos(50256) and art.token_bytes(50256) == b""
    art.check_mask_width(50257)
    art.check_vocabulary(tooldec.Compiler.gpt2().vocab_fingerprint)

    rng = np.random.default_rng(3)
    matchers = [art.matcher(max_rollback=4) for _ in range(4)]
    bm = tooldec.allocate_token_bitmask(4, art.mask_width)
    outs = [[] for _ in matchers]
    while not all(m.is_terminated() for m in matchers):
        tooldec.fill_next_token_bitmask_batch(matchers, bm)
        logits = random_logits(rng, 4, art.mask_width, art.eos_token_ids)
        tooldec.apply_token_bitmask(logits, bm)
        for m, out, t in zip(matchers, outs, sample(rng, logits)):
            if not m.is_terminated():
                assert m.accept_token(t)
                out.append(t)
    for out in outs:
        calls = check_output(art, tools, out)
        parsed = art.parse(out)
        assert [(p["name"], p["arguments"]) for p in parsed] == calls
    m = art.matcher(entry="required", tool="get_time")
    assert m.forced_bytes() == b'<tool_call>\n{"name": "get_time", "arguments": {'
    assert m.artifact.tools == art.tools
    with pytest.raises(ValueError, match="no tool named"):
        art.matcher(tool="nope")


def test_the_same_tools_again_come_from_the_cache(weather_tools):
    c = tooldec.Compiler.gpt2()
    assert c.cache_bytes == 0
    t = time.perf_counter()
    a = c.compile(weather_tools, format="hermes")
    first = time.perf_counter() - t
    held = c.cache_bytes
    assert held > 0
    again = []
    for _ in range(3):
        t = time.perf_counter()
        b = c.compile(weather_tools, format="hermes")
        again.append(time.perf_counter() - t)
    assert c.cache_bytes == held  # nothing compiled, nothing added
    assert b.metadata_json == a.metadata_json
    assert_same(a, b, walks=2)
    assert min(again) * 5 < first, (first, again)
    record(f"compiler: weather.json hermes, GPT-2: {first * 1e3:.1f} ms, again {min(again) * 1e3:.2f} ms")
    # Other options are another artifact; the JSON text of the same list is
    # another input but the same artifact.
    assert c.compile(weather_tools, format="hermes", max_tokens=80).max_tokens == 80
    assert c.cache_bytes > held
    assert c.compile(json.dumps(weather_tools, indent=2), format="hermes").metadata_json == a.metadata_json
    c.clear_cache()
    assert c.cache_bytes == 0
    assert_same(a, c.compile(weather_tools, format="hermes"), walks=2)
    # Nothing kept at all.
    z = tooldec.Compiler.gpt2(cache_bytes=0)
    z.compile(weather_tools)
    assert z.cache_bytes == 0


def test_two_threads_compile_at_once(weather_tools):
    with open(TINY) as f:
        tiny = json.load(f)
    jobs = [(weather_tools, "hermes"), (tiny, "react"), (weather_tools, "react"), (tiny, "hermes")]
    ref = tooldec.Compiler.gpt2()
    want = [ref.compile(t, format=f).metadata_json for t, f in jobs]
    for compiler in (tooldec.Compiler.gpt2(cache_bytes=0), tooldec.Compiler.gpt2()):
        results = {}
        errors = []
        start = threading.Barrier(2)

        def run(k):
            try:
                start.wait()
                for i in range(k, len(jobs) * 2, 2):
                    t, f = jobs[i % len(jobs)]
                    results[i] = compiler.compile(t, format=f)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors, errors
        assert sorted(results) == list(range(len(jobs) * 2))
        for i, art in results.items():
            assert art.metadata_json == want[i % len(jobs)], i


def test_tool_lists_in_any_form(gpt2, weather_tools, tmp_path):
    """A Python list, its JSON text or bytes, a path; other dialects (an
    Anthropic list, an MCP tools/list result) by their shape or named."""
    want = gpt2.compile(weather_tools)
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(weather_tools))
    for form in (json.dumps(weather_tools), json.dumps(weather_tools).encode(), path):
        assert gpt2.compile(form).metadata_json == want.metadata_json
    anthropic = [
        {
            "name": t["function"]["name"],
            "description": t["function"]["description"],
            "input_schema": t["function"]["parameters"],
        }
        for t in weather_tools
    ]
    mcp = {"tools": [{**a, "inputSchema": a.pop("input_schema")} for a in json.loads(json.dumps(anthropic))]}
    for form, dialect in ((anthropic, "auto"), (anthropic, "anthropic"), (mcp, "auto"), (mcp, "mcp")):
        art = gpt2.compile(form, dialect=dialect)
        assert art.tools == want.tools
        assert_same(art, want, walks=2)


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


def test_a_bad_tool_list_is_a_value_error_naming_the_place(gpt2, tmp_path):
    bad = [
        {"type": "function", "function": {"name": "ok", "parameters": {"type": "object"}}},
        {
            "type": "function",
            "function": {
                "name": "f",
                "parameters": {"type": "object", "properties": {"x": {"type": "strng"}}},
            },
        },
    ]
    pointer = "/1/function/parameters/properties/x/type"
    with pytest.raises(ValueError, match=re.escape(pointer)) as e:
        gpt2.compile(bad)
    assert re.search(r"tools:\d+:\d+", str(e.value)) and "strng" in str(e.value)
    # As text, the line and column are the text's.
    text = json.dumps(bad, indent=2)
    line = 1 + text[: text.index('"strng"')].count("\n")
    with pytest.raises(ValueError, match=rf"tools:{line}:\d+ \(at {re.escape(pointer)}\)"):
        gpt2.compile(text)
    # From a file, the file's path.
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(f"{path}:{line}:")):
        gpt2.compile(path)
    with pytest.raises(ValueError, match=r"tools:1:\d+: invalid JSON"):
        gpt2.compile('[{"name": "f",')
    with pytest.raises(ValueError, match="same name|twice|collid|duplicate"):
        other = {"type": "function", "function": {"name": "ok", "parameters": {"type": "string"}}}
        gpt2.compile([bad[0], other])
    with pytest.raises(TypeError, match="json.dumps"):
        gpt2.compile([object()])
    with pytest.raises(FileNotFoundError, match="nope.json"):
        gpt2.compile(tmp_path / "nope.json")


def test_bad_options_are_value_errors(gpt2, weather_tools):
    cases = [
        (dict(format="nope"), "unknown format"),
        (dict(format="hermes", entry="nope"), "no entry"),
        (dict(dialect="nope"), "unknown dialect"),
        (dict(max_tokens=0), "at least 1"),
        (dict(max_tokens=-3), "max_tokens"),
        (dict(max_tokens=2), "too small"),
        (dict(vocab_size=100), "smaller than the tokenizer"),
        (dict(max_ws=-1), "max_ws"),
        (dict(whitespace="tight"), "whitespace 'tight'|whitespace \"tight\""),
        (dict(format=str(ROOT / "nope.tdg")), "nope.tdg"),
        (dict(time_limit=-1.0), "time_limit must be seconds"),
        (dict(vocab_size=2**32 - 1), "beyond the 16777216 token ids"),
        (dict(any_depth=10**8), "--any-depth 100000000 is above its bound"),
    ]
    for kwargs, msg in cases:
        with pytest.raises(ValueError, match=msg):
            gpt2.compile(weather_tools, **kwargs)
    # A compile past its memory budget; a fresh compiler, as a set compiled
    # before comes back from its cache whatever the limits.
    with pytest.raises(ValueError, match="memory budget of 1000 bytes"):
        tooldec.Compiler.gpt2().compile(weather_tools, memory_limit=1000)
    # 0: no limit; the limits decide whether a compile ends, not what it
    # builds (tests/hostile.rs compares the bytes).
    unbounded = gpt2.compile(weather_tools, time_limit=0, memory_limit=0)
    assert unbounded.metadata_json == gpt2.compile(weather_tools, time_limit=60).metadata_json
    with pytest.raises(TypeError):
        gpt2.compile(weather_tools, "hermes")  # options are keywords
    with pytest.raises(FileNotFoundError, match="nope"):
        tooldec.Compiler(ROOT / "nope" / "tokenizer.json")
    with pytest.raises(TypeError, match="cannot read the vocabulary"):
        tooldec.Compiler(42)
    with pytest.raises(ValueError, match="no token"):
        tooldec.Compiler.gpt2(eos="<|nope|>")
    with pytest.raises(ValueError, match="text token"):
        tooldec.Compiler.gpt2(eos="hello")
    with pytest.raises(ValueError, match="cache_bytes"):
        tooldec.Compiler.gpt2(cache_bytes=-1)


# ---------------------------------------------------------------------------
# The README's example
# ---------------------------------------------------------------------------


def test_readme_example_runs(monkeypatch, capsys):
    readme = (ROOT / "python" / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Compiling in Python", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(ROOT)
    scope = {}
    exec(compile(code, "README.md (Compiling in Python)", "exec"), scope)
    out = capsys.readouterr().out
    assert "get_weather" in out
    assert scope["art"].tools == ["get_weather", "get_time", "search_flights"]


# ---------------------------------------------------------------------------
# Real tokenizers ($TOOLDEC_DATA)
# ---------------------------------------------------------------------------


def bfcl_lines(data_dir, n=4):
    path = data_dir / "tools" / "bfcl" / "BFCL_v4_parallel_multiple.json"
    with open(path, encoding="utf-8") as f:
        return [next(f) for _ in range(n)]


def test_qwen_tokenizer_compiles_like_the_cli(data_dir, weather_tools, qwen):
    path = data_dir / "tokenizers" / "qwen2.5" / "tokenizer.json"
    t = time.perf_counter()
    c = tooldec.Compiler(path)
    load = time.perf_counter() - t
    fp = tooldec.vocab_fingerprint(path)
    assert c.vocab_fingerprint == fp
    assert c.eos_token_ids == qwen.eos_token_ids  # from tokenizer_config.json
    art = c.compile(weather_tools, format="hermes", vocab_size=151936)
    assert art.metadata_json == qwen.metadata_json
    assert_same(art, qwen, walks=4)

    # A BFCL question file (JSON Lines, BFCL's type names), as text and as
    # the Python lists of its functions.
    lines = bfcl_lines(data_dir)
    t = time.perf_counter()
    a = c.compile("".join(lines), format="hermes")
    took = time.perf_counter() - t
    funcs = [f for line in lines for f in json.loads(line)["function"]]
    b = c.compile(funcs, format="hermes", dialect="bfcl", rename_collisions=True)
    assert a.vocab_fingerprint == b.vocab_fingerprint == fp
    assert a.tools == b.tools and len(a.tools) > 4
    assert_same(a, b, walks=2)
    record(
        f"compiler: Qwen2.5 tokenizer.json loaded in {load * 1e3:.0f} ms; "
        f"{len(a.tools)} BFCL tools compiled (hermes) in {took * 1e3:.0f} ms"
    )


def test_qwen_tokenizer_objects(data_dir, qwen, weather_tools):
    path = data_dir / "tokenizers" / "qwen2.5" / "tokenizer.json"
    config = json.loads((path.parent / "tokenizer_config.json").read_text(encoding="utf-8"))
    tok = tokenizers.Tokenizer.from_file(str(path))
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token=config["eos_token"], name_or_path=str(path.parent)
    )
    for c in (tooldec.Compiler(tok, eos=config["eos_token"]), tooldec.Compiler(fast)):
        assert c.vocab_fingerprint == tooldec.vocab_fingerprint(path) == qwen.vocab_fingerprint
        assert c.eos_token_ids == qwen.eos_token_ids
        art = c.compile(weather_tools, format="hermes", vocab_size=151936)
        assert_same(art, qwen, walks=2, ignore=("vocab",))
    assert tooldec.Compiler(fast).vocab_label == tooldec.Compiler(path).vocab_label


def test_gguf_model_file(data_dir, weather_tools):
    gguf = data_dir / "models" / "smollm2-135m-instruct-q4_1" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    c = tooldec.Compiler(gguf)
    assert c.vocab_fingerprint == tooldec.vocab_fingerprint(data_dir / "tokenizers" / "smollm2-135m")
    art = c.compile(weather_tools, format="hermes")
    assert art.tools == ["get_weather", "get_time", "search_flights"]
    assert art.vocab_fingerprint == c.vocab_fingerprint


def test_repair_lists_each_repair_and_refuses_without_it():
    """repair=True fixes what has one clear reading and says so in the
    artifact's metadata; without it the same list is refused."""
    tools = [
        {"type": "function", "function": {"name": "search", "parameters": {
            "type": "object",
            "properties": {"limit": {"type": "integer", "maximum": "50"},
                           "market": {"type": "array", "enum": ["US", "FR"]}},
            "required": ["limit", "market"]}}},
        {"type": "function", "function": {"name": "ping"}},
        {"type": "function", "function": {"name": "ping"}},
    ]  # fmt: skip
    c = tooldec.Compiler.gpt2()
    with pytest.raises(ValueError, match="duplicate tool name"):
        c.compile(tools, format="json")
    art = c.compile(tools, format="json", repair=True)
    repaired = art.metadata["repaired"]
    assert len(repaired) == 3, repaired
    assert any('"50" read as the number 50' in r for r in repaired)
    assert any("enum of its items" in r for r in repaired)
    assert art.tools == ["search", "ping"]
    call = '{"name": "search", "arguments": {"limit": 50, "market": ["FR"]}}'
    assert art.parse(call)[0]["arguments"] == {"limit": 50, "market": ["FR"]}
    with pytest.raises(ValueError):
        art.parse('{"name": "search", "arguments": {"limit": 51, "market": ["FR"]}}')
    # A list that needs no repair has no "repaired" entry.
    assert "repaired" not in c.compile(tools[1:2], format="json", repair=True).metadata
