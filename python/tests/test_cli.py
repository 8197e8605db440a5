"""The ``tooldec-compile`` console script the wheel installs.

It must be the Rust CLI (``$TOOLDEC_COMPILE``, the binary python/test.sh
builds): the same artifact bytes, the same output on standard output and
standard error (timings aside), the same exit codes, for successes and for
errors, on the weather example.
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

WEATHER = ROOT / "grammars" / "examples" / "weather.json"
TOOLDEC_COMPILE = os.environ.get("TOOLDEC_COMPILE")
pytestmark = pytest.mark.skipif(
    not TOOLDEC_COMPILE, reason="TOOLDEC_COMPILE unset: python/test.sh sets it to the CLI it built"
)


@pytest.fixture(scope="module")
def script():
    """The installed console script, beside this interpreter (the venv's bin/)."""
    path = shutil.which("tooldec-compile", path=os.path.dirname(sys.executable))
    assert path, f"no tooldec-compile console script next to {sys.executable}"
    return path


def run(program, *args, cwd=ROOT):
    return subprocess.run([program, *map(str, args)], cwd=cwd, capture_output=True, text=True)


# Durations as Rust's `{:.1?}` / `{:.2?}` print them (progress lines, the
# summary's time line): the only part of the output that differs by run.
DURATION = re.compile(r"\d+(\.\d+)?(ns|µs|ms|s)\b")


def same_output(a, b, paths=()):
    """Two runs printed the same, once durations (and each run's own output
    path, ``paths`` = (a's, b's)) are masked."""
    assert a.returncode == b.returncode, (a.stderr, b.stderr)
    out_a, out_b = a.stdout, b.stdout
    if paths:
        out_a = out_a.replace(str(paths[0]), "OUT")
        out_b = out_b.replace(str(paths[1]), "OUT")
    assert DURATION.sub("T", out_a) == DURATION.sub("T", out_b)
    assert DURATION.sub("T", a.stderr) == DURATION.sub("T", b.stderr)


@pytest.mark.parametrize(
    "flags",
    [
        [],
        ["--format", "hermes", "--max-tokens", "96", "--vocab-size", "50304"],
        ["--format", "qwen3", "--entry", "required", "--uncompressed", "--no-regions"],
        ["--tokenizer", "python/tests/fixtures/bytes-tokenizer.json", "--eos", "<|endoftext|>"],
    ],
    ids=["default", "hermes-budget", "qwen3-required-raw", "tokenizer-json"],
)
def test_the_script_writes_the_cli_artifact(script, tmp_path, flags):
    by_cli, by_script = tmp_path / "cli.tdm", tmp_path / "script.tdm"
    want = run(TOOLDEC_COMPILE, WEATHER, "-o", by_cli, *flags)
    got = run(script, WEATHER, "-o", by_script, *flags)
    assert got.returncode == 0, got.stderr
    assert by_script.read_bytes() == by_cli.read_bytes()
    # The summary (vocabulary, fingerprint, states, masks...) and progress.
    assert "fingerprint    sha256" in got.stdout
    same_output(want, got, paths=(by_cli, by_script))


def test_the_default_artifact_is_the_committed_one(script, tmp_path):
    """artifacts/weather-gpt2.tdm is `tooldec-compile weather.json`."""
    out = tmp_path / "w.tdm"
    got = run(script, "grammars/examples/weather.json", "-q", "-o", out)
    assert (got.returncode, got.stdout, got.stderr) == (0, "", "")
    assert out.read_bytes() == (ROOT / "artifacts" / "weather-gpt2.tdm").read_bytes()


@pytest.mark.parametrize(
    "args,code,says",
    [
        (["/does/not/exist.json", "-o", "{out}"], 1, "error: /does/not/exist.json: cannot read: "),
        (["{bad}", "-o", "{out}"], 1, "(at /0/function/parameters/properties/x/type)"),
        ([WEATHER, "--max-tokens", "5", "-o", "{out}"], 1, "--max-tokens 5 is too small"),
        ([WEATHER, "--format", "nope", "-o", "{out}"], 2, 'unknown format "nope"'),
        ([WEATHER, "--bogus"], 2, "unexpected argument '--bogus'"),
        ([WEATHER, "--max-tokens", "0", "-o", "{out}"], 2, "--max-tokens <N>"),
        ([WEATHER], 2, "--output <OUT.tdm>"),
    ],
    ids=["missing-file", "bad-schema", "budget", "format", "flag", "zero-budget", "no-output"],
)
def test_errors_exit_and_say_what_the_cli_says(script, tmp_path, args, code, says):
    bad = tmp_path / "bad.json"
    bad.write_text(
        '[{"type": "function", "function": {"name": "f", "parameters": '
        '{"type": "object", "properties": {"x": {"type": "strng"}}}}}]'
    )
    out = tmp_path / "never.tdm"
    args = [str(a).format(out=out, bad=bad) for a in args]
    want = run(TOOLDEC_COMPILE, *args)
    got = run(script, *args)
    assert got.returncode == code, got.stderr
    assert says in got.stderr, got.stderr
    assert not out.exists()
    same_output(want, got)


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_are_the_cli_s(script, flag):
    want = run(TOOLDEC_COMPILE, flag)
    got = run(script, flag)
    assert got.returncode == 0
    assert got.stdout == want.stdout and got.stdout
    assert got.stderr == want.stderr == ""


def test_regex_output_is_the_cli_s(script):
    want = run(TOOLDEC_COMPILE, WEATHER, "--print-regex", "--format", "hermes")
    got = run(script, WEATHER, "--print-regex", "--format", "hermes")
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout and "get_weather" in got.stdout


def test_the_script_runs_in_any_directory(script, tmp_path):
    """Relative paths are the caller's, as for the binary."""
    pathlib.Path(tmp_path / "tools.json").write_bytes(WEATHER.read_bytes())
    got = run(script, "tools.json", "-q", "-o", "out.tdm", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "out.tdm").read_bytes() == (ROOT / "artifacts" / "weather-gpt2.tdm").read_bytes()


def test_python_dash_m_runs_it_too():
    want = run(TOOLDEC_COMPILE, "--version")
    got = run(sys.executable, "-m", "tooldec._cli", "--version", cwd=pathlib.Path.home())
    assert (got.returncode, got.stdout) == (0, want.stdout)
