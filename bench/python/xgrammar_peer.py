#!/usr/bin/env python3
"""XGrammar against tooldec's Python binding, in one Python process.

Both engines get the same tokenizer (Llama-3.2 by default), the same BFCL
tool sets (every line of `multiple` and `parallel_multiple`, as
`tooldec-bench latency` reads them) and the same token sequences, and are
timed from Python the way a server calls them:

- compile: `tooldec.Compiler.compile(tools, format="hermes", entry="start")` against
  XGrammar's `GrammarCompiler` on (i) tooldec's own grammar as one regular
  expression (`tooldec-compile --print-regex`: exactly our language) and
  (ii) the structural tag XGrammar builds for a Hermes/Qwen3 tool call
  (`get_model_structural_tag("qwen_3", ...)`: the language a server using
  XGrammar's own tool-call support would constrain to);
- time to first mask: the compile, a new matcher and its first filled mask;
- serving: one walk per set, a complete tool call drawn from tooldec's
  language (seeded, short), fed token by token to every matcher, timing each
  `fill_next_token_bitmask` and `accept_token`, and comparing tooldec's
  masks with XGrammar's on the regex route, where the languages are equal.

Prints a markdown report (also written to --out). Run it through
run-xgrammar.sh, which installs the pinned packages and builds
tooldec-compile; the figures are a report, never a test.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

clock = time.perf_counter

# The imports are timed: torch's is part of what XGrammar costs a process.
_t = clock()
import numpy as np
import torch
import xgrammar as xgr
from transformers import PreTrainedTokenizerFast

IMPORT_XGRAMMAR_S = clock() - _t
_t = clock()
import tooldec

IMPORT_TOOLDEC_S = clock() - _t

# torch's own kernels are not what is measured; one thread leaves the
# cores to the two engines (run-xgrammar.sh also sets OMP_NUM_THREADS=1).
torch.set_num_threads(1)

CATEGORIES = ("multiple", "parallel_multiple")
FORMAT = "hermes"
#: The entry tooldec compiles: the format's default, alone, as an engine
#: adapter compiles a request's entry (the one `--print-regex` spells).
ENTRY = "start"
# XGrammar's compiled-grammar cache as vLLM sizes it (VLLM_XGRAMMAR_CACHE_MB).
XGRAMMAR_CACHE_BYTES = 512 << 20


# --- BFCL, read as bench/src/workloads.rs and testkit/src/bfcl.rs read it ---


def convert_schema(schema: Any) -> Any:
    """BFCL's schema dialect to JSON Schema, as testkit's `convert_schema`:
    `dict` -> `object`, `float` -> `number`, `tuple` -> `array`, the
    non-standard `optional` key and the type `any` dropped."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for k, v in schema.items():
        if k == "optional" or (k == "type" and v == "any"):
            continue
        if k == "type":
            if isinstance(v, str):
                v = _convert_type(v)
            elif isinstance(v, list):
                v = [_convert_type(t) if isinstance(t, str) else t for t in v]
        elif k == "properties" and isinstance(v, dict):
            v = {n: convert_schema(s) for n, s in v.items()}
        elif k == "items":
            v = [convert_schema(s) for s in v] if isinstance(v, list) else convert_schema(v)
        elif k == "additionalProperties":
            v = convert_schema(v)
        out[k] = v
    return out


def _convert_type(t: str) -> str:
    return {"dict": "object", "float": "number", "tuple": "array"}.get(t, t)


def convert_function(f: dict[str, Any]) -> dict[str, Any]:
    return {k: convert_schema(v) if k == "parameters" else v for k, v in f.items()}


@dataclass
class ToolSet:
    name: str
    tools: list[dict[str, Any]]  # bare {name, description, parameters}


def bfcl_sets(data: Path) -> list[ToolSet]:
    sets = []
    for cat in CATEGORIES:
        path = data / "tools" / "bfcl" / f"BFCL_v4_{cat}.json"
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                v = json.loads(line)
                sets.append(ToolSet(v["id"], [convert_function(f) for f in v["function"]]))
    return sets


# --- tooldec's grammar as a regular expression, in XGrammar's spelling ---


def tooldec_regex(cli: str, tokenizer: Path, s: ToolSet) -> str:
    """`tooldec-compile --print-regex` on the set: the exact language tooldec
    compiles (its first entry, `start` for hermes)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(s.tools, f)
    try:
        out = subprocess.run(
            [cli, f.name, "--format", FORMAT, "--tokenizer", str(tokenizer), "--print-regex", "-q"],
            check=True,
            capture_output=True,
            text=True,
        )
    finally:
        os.unlink(f.name)
    return out.stdout.strip()


def xgrammar_spelling(rx: str) -> str:
    r"""The same regular expression in the escapes XGrammar's regex converter
    reads: regex-syntax's `\x{HEX}` becomes `\u{HEX}` (XGrammar reads `\x`
    as a plain `x`), and the escaped `#`, `&` and `~`, which XGrammar does not
    know but matches as the character itself, are written bare (same
    language, no warning per occurrence). Everything else is kept."""
    out = []
    i, n = 0, len(rx)
    while i < n:
        c = rx[i]
        if c != "\\" or i + 1 == n:
            out.append(c)
            i += 1
            continue
        nxt = rx[i + 1]
        if nxt == "x" and i + 2 < n and rx[i + 2] == "{":
            end = rx.index("}", i + 3)
            out.append("\\u{" + rx[i + 3 : end] + "}")
            i = end + 1
        elif nxt in "#&~":
            out.append(nxt)
            i += 2
        else:
            out.append(rx[i : i + 2])
            i += 2
    return "".join(out)


def structural_tag(s: ToolSet) -> Any:
    """The structural tag XGrammar builds for a Qwen3/Hermes tool call
    (`<tool_call>\\n{"name": "NAME", "arguments": ARGS}\\n</tool_call>`), at
    least one call (tool choice "required", as our `start` entry), no
    reasoning block."""
    tools = [{"type": "function", "function": t} for t in s.tools]
    return xgr.get_model_structural_tag(
        "qwen_3", tools=tools, tool_choice="required", reasoning="disabled"
    )


# --- masks ---


def popcount(words: np.ndarray) -> int:
    return int(np.unpackbits(words.view(np.uint8)).sum())


def allowed_ids(words: np.ndarray, width: int) -> np.ndarray:
    bits = np.unpackbits(words.view(np.uint8), bitorder="little")[:width]
    return np.flatnonzero(bits)


# --- one set ---


@dataclass
class Engine:
    """One engine's times on one set (seconds), or the error that stopped it."""

    compile: float = math.nan
    first: float = math.nan  # compile + new matcher + first mask
    same: float = math.nan  # the same set again, first mask included
    cold: float = math.nan
    # tooldec only: `Compiler.start` and the first mask served early (while
    # the artifact is built on a thread), on a compiler that saw the same
    # sets before as the one `first` is timed on.
    early: float = math.nan
    fills: list[float] = field(default_factory=list)
    accepts: list[float] = field(default_factory=list)
    rejected_at: int | None = None  # walk index of the first token refused
    error: str | None = None


@dataclass
class Agreement:
    """Where tooldec's masks and XGrammar's differ, counted over all tokens
    and over text tokens only: XGrammar reads a special token (one with no
    text for tooldec, such as Llama-3's `<|begin_of_text|>`) as the text of
    its name, so the two counts separate that from a grammar difference."""

    first: int | None = None  # tokens differing in the first mask
    first_text: int | None = None
    steps: int = 0  # walk steps whose masks differ
    steps_text: int = 0
    tokens: int = 0  # differing tokens summed over the walk
    tokens_text: int = 0
    special_only_xgrammar: bool = True  # every special difference: XGrammar allows it
    examples: list[str] = field(default_factory=list)  # text-token differences


@dataclass
class Row:
    name: str
    tools: int
    regex_chars: int
    walk: list[int]
    td: Engine
    xr: Engine  # XGrammar on our regular expression
    xs: Engine  # XGrammar on its structural tag
    agree: Agreement = field(default_factory=Agreement)  # regex route
    # The structural tag's first mask against tooldec's `required` entry
    # (the same tool choice: one or more calls, no text first).
    xs_first: int | None = None
    xs_first_text: int | None = None
    # Tokens where the early first mask differs from the artifact's.
    early_differ: int = 0


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        tok_path = args.tokenizer
        t = clock()
        self.hf = PreTrainedTokenizerFast(tokenizer_file=str(tok_path))
        self.tokenizer_s = clock() - t
        t = clock()
        self.tdc = tooldec.Compiler(str(tok_path))
        self.tooldec_s = clock() - t
        # A second compiler for the early first masks: it sees the sets in
        # the same order, so each set is new to it as it is to `tdc`.
        self.early = tooldec.Compiler(str(tok_path))
        self.width = self.tdc.token_count
        self.eos = list(self.tdc.eos_token_ids)
        # XGrammar stops on the same EOS ids tooldec reads from the
        # tokenizer_config.json beside the tokenizer.
        t = clock()
        self.info = xgr.TokenizerInfo.from_huggingface(
            self.hf, vocab_size=self.width, stop_token_ids=self.eos
        )
        self.gc = xgr.GrammarCompiler(
            self.info,
            max_threads=os.cpu_count() or 1,
            cache_enabled=True,
            cache_limit_bytes=XGRAMMAR_CACHE_BYTES,
        )
        self.xgrammar_s = clock() - t
        self.prefix = self.hf.encode("<tool_call>", add_special_tokens=False)
        # The special added tokens (no text for tooldec), as a bitmask.
        special = np.zeros(self.width, dtype=np.uint8)
        for i, added in self.hf.added_tokens_decoder.items():
            if added.special and i < self.width:
                special[i] = 1
        self.special = np.packbits(special, bitorder="little").view(np.int32)
        self.text = np.bitwise_not(self.special)

    def bitmask(self) -> tuple[torch.Tensor, np.ndarray]:
        """A one-row int32 torch bitmask (what vLLM hands both engines) and
        its numpy view."""
        b = xgr.allocate_token_bitmask(1, self.width)
        return b, b.numpy()[0]

    # tooldec

    def tooldec_first(self, s: ToolSet) -> tuple[float, float, Any, np.ndarray]:
        """compile, compile + first mask, the artifact and the first mask.
        Matchers start at the artifact's default entry, hermes's `start`:
        the entry `--print-regex` spells."""
        b, view = self.bitmask()
        t = clock()
        art = self.tdc.compile(s.tools, format=FORMAT, entry=ENTRY)
        c = clock() - t
        art.matcher().fill_next_token_bitmask(b, 0)
        return c, clock() - t, art, view.copy()

    def tooldec_early(self, s: ToolSet) -> tuple[float, np.ndarray]:
        """`Compiler.start`, a pending matcher and its first mask (computed
        on demand while the artifact is built on a thread), timed; then the
        wait for the artifact, untimed, so that its thread is done before
        anything else is measured."""
        b, view = self.bitmask()
        t = clock()
        pending = self.early.start(s.tools, format=FORMAT, entry=ENTRY)
        pending.matcher().fill_next_token_bitmask(b, 0)
        d = clock() - t
        pending.wait()
        return d, view.copy()

    def walk(self, art: Any, s: ToolSet) -> list[int]:
        """A complete tool call drawn from tooldec's language: `<tool_call>`
        as the tokenizer spells it, then tokens drawn uniformly (seeded by
        the set's name) from a matcher whose budget leaves `--slack` tokens
        over the shortest output, so every draw ends in a complete call and
        EOS within a few dozen tokens."""
        rng = random.Random(f"{self.args.seed}:{s.name}")
        m = art.matcher(max_tokens=art.min_tokens + 1 + self.args.slack)
        b = np.zeros((1, (self.width + 31) // 32), dtype=np.int32)
        seq = []
        for tok in self.prefix:
            if not m.accept_token(tok):
                raise RuntimeError(f"{s.name}: tooldec refuses the <tool_call> prefix")
            seq.append(tok)
        while not m.is_terminated():  # terminated: EOS accepted
            m.fill_next_token_bitmask(b, 0)
            ids = allowed_ids(b[0], self.width)
            tok = int(ids[rng.randrange(len(ids))])
            if not m.accept_token(tok):
                raise RuntimeError(f"{s.name}: tooldec refuses a token its mask allowed")
            seq.append(tok)
        return seq

    # XGrammar

    def xgrammar_first(self, build: Callable[[], Any]) -> tuple[float, float, Any, np.ndarray]:
        b, view = self.bitmask()
        t = clock()
        cg = build()
        c = clock() - t
        xgr.GrammarMatcher(cg).fill_next_token_bitmask(b, 0)
        return c, clock() - t, cg, view.copy()

    # one set

    def run_set(self, s: ToolSet, rx: str) -> Row:
        td, xr, xs = Engine(), Engine(), Engine()
        # tooldec: a set this compiler has never seen (the parts earlier
        # sets left are reused: a server's ordinary case), then the same
        # set again (served from the kept artifact).
        td.early, early_first = self.tooldec_early(s)
        td.compile, td.first, art, td_first = self.tooldec_first(s)
        _, td.same, _, _ = self.tooldec_first(s)
        seq = self.walk(art, s)
        row = Row(s.name, len(s.tools), len(rx), seq, td, xr, xs)
        row.early_differ = popcount(np.bitwise_xor(early_first, td_first))

        xrx = xgrammar_spelling(rx)
        cg_r = cg_s = None
        try:
            xr.compile, xr.first, cg_r, xr_first = self.xgrammar_first(
                lambda: self.gc.compile_regex(xrx)
            )
            _, xr.same, _, _ = self.xgrammar_first(lambda: self.gc.compile_regex(xrx))
            row.agree.first, row.agree.first_text = self.compare(row, -1, td_first, xr_first)
        except Exception as e:  # noqa: BLE001 - reported, not hidden
            xr.error = f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:160]}"
        try:
            xs.compile, xs.first, cg_s, xs_first = self.xgrammar_first(
                lambda: self.gc.compile_structural_tag(structural_tag(s))
            )
            _, xs.same, _, _ = self.xgrammar_first(
                lambda: self.gc.compile_structural_tag(structural_tag(s))
            )
        except Exception as e:  # noqa: BLE001
            xs.error = f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:160]}"
        if cg_s is not None:
            # Our `required` entry, compiled apart (untimed): the tag's
            # language is a call first, no text.
            b, required = self.bitmask()
            ours = self.tdc.compile(s.tools, format=FORMAT, entry="required")
            ours.matcher().fill_next_token_bitmask(b, 0)
            diff = np.bitwise_xor(required, xs_first)
            row.xs_first = popcount(diff)
            row.xs_first_text = popcount(diff & self.text)

        self.serve(row, art, cg_r, cg_s)
        return row

    def serve(self, row: Row, art: Any, cg_r: Any, cg_s: Any) -> None:
        """Feeds the walk to a fresh matcher of each engine, timing every
        fill and accept; an engine that refuses a token stops there."""
        tm = art.matcher()
        xm = xgr.GrammarMatcher(cg_r) if cg_r is not None else None
        sm = xgr.GrammarMatcher(cg_s) if cg_s is not None else None
        tb, tv = self.bitmask()
        xb, xv = self.bitmask()
        sb, _ = self.bitmask()
        live = {"td": True, "xr": xm is not None, "xs": sm is not None}
        for i, tok in enumerate(row.walk):
            t = clock()
            tm.fill_next_token_bitmask(tb, 0)
            row.td.fills.append(clock() - t)
            if live["xr"]:
                t = clock()
                xm.fill_next_token_bitmask(xb, 0)
                row.xr.fills.append(clock() - t)
                n, n_text = self.compare(row, i, tv, xv)
                a = row.agree
                a.steps += n > 0
                a.steps_text += n_text > 0
                a.tokens += n
                a.tokens_text += n_text
            if live["xs"]:
                t = clock()
                sm.fill_next_token_bitmask(sb, 0)
                row.xs.fills.append(clock() - t)

            t = clock()
            ok = tm.accept_token(tok)
            row.td.accepts.append(clock() - t)
            if not ok:  # cannot happen: the walk was drawn from tooldec's masks
                raise RuntimeError(f"{row.name}: tooldec refuses its own walk at {i}")
            for key, m, eng in (("xr", xm, row.xr), ("xs", sm, row.xs)):
                if live[key]:
                    t = clock()
                    ok = m.accept_token(tok)
                    eng.accepts.append(clock() - t)
                    if not ok:
                        eng.rejected_at = i
                        live[key] = False

    def compare(self, row: Row, step: int, ours: np.ndarray, theirs: np.ndarray) -> tuple[int, int]:
        """The tokens where two masks differ, all and text only; keeps a few
        text-token differences to show."""
        diff = np.bitwise_xor(ours, theirs)
        if not diff.any():
            return 0, 0
        special = diff & self.special
        if (special & ours).any():
            row.agree.special_only_xgrammar = False
        text = diff & self.text
        keep = 3 - len(row.agree.examples)
        for tok in allowed_ids(text, self.width)[:keep] if keep > 0 else ():
            tok = int(tok)
            mine = bool(ours[tok >> 5] >> (tok & 31) & 1)
            where = "first mask" if step < 0 else f"step {step}"
            side = "tooldec only" if mine else "XGrammar only"
            row.agree.examples.append(
                f"{where}: token {tok} {self.hf.convert_ids_to_tokens(tok)!r} ({side})"
            )
        return popcount(diff), popcount(text)

    def cold(self, rows: list[Row], sets: dict[str, ToolSet]) -> None:
        """tooldec with its caches emptied before each set: no reused parts,
        no kept artifact (XGrammar's new-set compile is already cold: its
        cache holds whole grammars only)."""
        for row in rows:
            self.tdc.clear_cache()
            _, row.td.cold, _, _ = self.tooldec_first(sets[row.name])


# --- statistics and the report ---


def median(v: Sequence[float]) -> float:
    v = sorted(x for x in v if not math.isnan(x))
    return v[len(v) // 2] if v else math.nan


def quantile(v: Sequence[float], q: float) -> float:
    """As bench/src/lib.rs's stats: the sorted value at round((n-1)q)."""
    v = sorted(v)
    return v[round((len(v) - 1) * q)] if v else math.nan


def ms(s: float) -> str:
    return "—" if math.isnan(s) else f"{s * 1e3:.2f} ms"


def us(s: float) -> str:
    return "—" if math.isnan(s) else f"{s * 1e6:.1f} µs"


def ratio(a: float, b: float) -> str:
    return "—" if math.isnan(a) or math.isnan(b) or b == 0 else f"{a / b:.3g}"


def three(v: Sequence[float]) -> str:
    if not v:
        return "—"
    return f"{us(quantile(v, 0.5))} / {us(quantile(v, 0.99))} / {us(max(v))}"


def git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip()


def commit() -> str:
    c, changes = (
        git("rev-parse", "--short", "HEAD"),
        # The reports and plots a run writes (this one, or the Rust
        # report that runs it after writing LATENCY.md) change no code.
        git(
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--",
            ".",
            ":(exclude)*.md",
            ":(exclude)*.svg",
            ":(exclude)eval/*.jsonl",
        ),
    )
    if c is None:
        return "unknown (not a git checkout)"
    return f"`{c}`" + (" with uncommitted changes" if changes else "")


def machine() -> str:
    """CPU, cores, memory; `nproc` without OMP_NUM_THREADS, which it obeys."""
    cpu = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = int(Path("/proc/meminfo").read_text().split()[1])
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    nproc = subprocess.run(
        ["nproc"], capture_output=True, text=True, env=env, check=False
    ).stdout.strip()
    return f"{cpu}, {nproc} cores (`nproc`), {mem / 1048576:.0f} GiB"


def loadavg() -> str:
    """The 1-minute load average: other work on the machine shows here."""
    return Path("/proc/loadavg").read_text().split()[0]


def versions() -> str:
    from importlib import metadata

    def v(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "?"

    return (
        f"Python {platform.python_version()}, tooldec {tooldec.__version__}, "
        f"xgrammar {v('xgrammar')}, torch {torch.__version__}, transformers {v('transformers')}, "
        f"numpy {np.__version__}"
    )


EXPLAINED = """
One process holds the tokenizer, XGrammar's `TokenizerInfo` (EOS as
tooldec reads it) and `GrammarCompiler` (its cache on, {cache} MiB as vLLM
sizes it, `max_threads` = {threads}, the core count) and one
`tooldec.Compiler` (its cache on, all cores), as a server would. Every time
is taken from Python with `time.perf_counter` around the binding's calls,
their Python overhead included for both engines; bitmasks are one-row CPU
`torch.int32` tensors, the layout both engines share.

- **compile**: tooldec, `Compiler.compile(tools, format="hermes",
  entry="start")` on the tool list as Python objects (the default entry
  alone, as an engine adapter compiles the entry a request starts at); XGrammar, `GrammarCompiler.compile_regex` on
  our grammar's regular expression (`tooldec-compile --print-regex`, its
  `\\x{{..}}` escapes written `\\u{{..}}`; computed before and untimed, so
  XGrammar gets our lowering for free), or `compile_structural_tag` on the
  tag of `get_model_structural_tag("qwen_3", tools,
  tool_choice="required", reasoning="disabled")`, built inside the timer
  as a server builds it per request.
- **first mask**: the compile, a new matcher and its first
  `fill_next_token_bitmask`. *new set*: the first time this process sees
  the set; tooldec's compiler has compiled the sets above it and reuses the
  parts they left (a server's ordinary case). *same set*: the set again at
  once: tooldec's kept artifact, XGrammar's cache hit. *cold*: tooldec with
  its caches emptied before the set (after all other measurements);
  XGrammar's new set is cold already, its cache holding whole grammars.
  *served early*: tooldec's `Compiler.start(tools, format="hermes",
  entry="start")`, a
  pending matcher and its first mask, computed on demand while the
  artifact is built on a thread (what a server that cannot wait for the
  artifact calls), on a second compiler that has seen the same sets
  before (a new set to it too); timed against XGrammar's new-set first
  mask, and checked equal to the artifact's first mask bit for bit.
- **serving**: one walk per set: `<tool_call>` as the tokenizer spells it
  ({prefix} tokens of free text for our grammar), then tokens drawn
  uniformly (seed `{seed}` and the set's name) from tooldec's masks under a
  budget of the shortest output + {slack} tokens, so each walk is a
  complete call and EOS. Every matcher gets the same ids; each step times
  one `fill_next_token_bitmask` and one `accept_token` per engine. *inside
  the call*: the steps after `<tool_call>`.
- **regex route**: exactly our language (tooldec's `start` entry: free text
  without `<tool_call>`, then one or more calls separated by a newline,
  then EOS). Its masks are compared with ours at the first mask and at
  every step; *text tokens* leaves out the {special} special added tokens,
  which tooldec never allows as text and XGrammar reads as the text of
  their names (its `TokenizerInfo` only treats tokens that decode to
  nothing as special).
- **structural tag route**: XGrammar's own Hermes/Qwen3 tool-call language,
  not ours: it starts with a call (no text first), allows any text after
  and between calls (ours: calls separated by one newline, then EOS), any
  amount of whitespace inside the JSON (ours: at most 4 bytes), forbids
  `<think>`/`</think>` in the text, and reads each schema its own way. Its
  first mask is compared with that of tooldec's `required` entry (the same
  tool choice), and it is fed our walks: a refusal is reported.
"""


def report(
    bench: Bench,
    rows: list[Row],
    regex_s: float,
    run_s: float,
    load: tuple[str, str],
    argv: list[str],
) -> str:
    a = bench.args
    out: list[str] = []
    p = out.append
    p("# XGrammar and tooldec in one Python process\n")
    shown = " ".join(argv)
    p(
        f"Generated by `bash bench/python/run-xgrammar.sh{(' ' + shown) if shown else ''}` "
        f"at commit {commit()}.  "
    )
    p(f"{machine()}; load average {load[0]} at the start, {load[1]} at the end.  ")
    p(f"{versions()}.  ")
    p(
        f"Tokenizer `{a.tokenizer.parent.name}/{a.tokenizer.name}` ({bench.width:,} tokens, "
        f"EOS {bench.eos}); format `{FORMAT}`; {len(rows)} BFCL sets "
        f"({' then '.join(CATEGORIES)}, in file order); the run took {run_s:.0f} s.\n"
    )
    p(
        EXPLAINED.format(
            cache=XGRAMMAR_CACHE_BYTES >> 20,
            threads=os.cpu_count(),
            seed=a.seed,
            slack=a.slack,
            prefix=len(bench.prefix),
            special=popcount(bench.special),
        ).strip()
        + "\n"
    )

    p("## Setup\n")
    p("| step | time |")
    p("|---|---:|")
    p(f"| `import torch, xgrammar, transformers` | {ms(IMPORT_XGRAMMAR_S)} |")
    p(f"| `import tooldec` | {ms(IMPORT_TOOLDEC_S)} |")
    p(f"| tokenizer: `PreTrainedTokenizerFast(tokenizer_file=...)` | {ms(bench.tokenizer_s)} |")
    p(
        f"| XGrammar: `TokenizerInfo.from_huggingface` + `GrammarCompiler` | {ms(bench.xgrammar_s)} |"
    )
    p(f"| tooldec: `Compiler(tokenizer.json)` | {ms(bench.tooldec_s)} |")
    p(
        f"| our regular expressions, `tooldec-compile --print-regex` per set "
        f"(2 at a time, outside the race) | {regex_s:.1f} s |"
    )
    p("")

    xr_ok = [r for r in rows if r.xr.error is None]
    xs_ok = [r for r in rows if r.xs.error is None]
    engines = ("td", "xr", "xs")
    inside = len(bench.prefix)

    def med(rs: list[Row], f: Callable[[Row], float]) -> float:
        return median([f(r) for r in rs])

    def per_set(rs: list[Row], f: Callable[[Row], float], g: Callable[[Row], float]) -> float:
        """The median over the sets of f(set) / g(set)."""
        return median([f(r) / g(r) for r in rs if g(r) > 0])

    def pool(key: str, what: str, start: int = 0) -> list[float]:
        return [x for r in rows for x in getattr(getattr(r, key), what)[start:]]

    fills = {k: pool(k, "fills") for k in engines}
    fills_in = {k: pool(k, "fills", inside) for k in engines}
    accepts = {k: pool(k, "accepts") for k in engines}

    p("## Summary\n")
    p(
        "Compile and first mask: medians over the sets, and the median of the per-set "
        "ratios. Fills and accepts: pooled over every step of every walk, and the ratio "
        "of the pooled figures. Ratios are tooldec over XGrammar: below 1, tooldec is "
        "faster.\n"
    )
    p(
        "| | tooldec | XGrammar, regex (our language) | XGrammar, structural tag "
        "| tooldec / regex | tooldec / structural tag |"
    )
    p("|---|---:|---:|---:|---:|---:|")

    def timed_row(
        label: str, f: Callable[[Engine], float], td: Callable[[Engine], float] | None = None
    ) -> None:
        td = td or f
        p(
            f"| {label} | {ms(med(rows, lambda r: td(r.td)))} | {ms(med(xr_ok, lambda r: f(r.xr)))} "
            f"| {ms(med(xs_ok, lambda r: f(r.xs)))} "
            f"| {ratio(per_set(xr_ok, lambda r: td(r.td), lambda r: f(r.xr)), 1)} "
            f"| {ratio(per_set(xs_ok, lambda r: td(r.td), lambda r: f(r.xs)), 1)} |"
        )

    timed_row("compile, new set", lambda e: e.compile)
    timed_row("first mask, new set", lambda e: e.first)
    timed_row("first mask, new set, tooldec served early", lambda e: e.first, lambda e: e.early)
    timed_row("first mask, same set", lambda e: e.same)
    timed_row("first mask, tooldec cold (XGrammar: new set)", lambda e: e.first, lambda e: e.cold)
    for name, pooled in (("all steps", fills), ("inside the call", fills_in)):
        for label, q in (("median", 0.5), ("p99", 0.99), ("max", 1.0)):
            v = {k: quantile(pooled[k], q) for k in engines}
            p(
                f"| fill per token ({name}), {label} | {us(v['td'])} | {us(v['xr'])} | {us(v['xs'])} "
                f"| {ratio(v['td'], v['xr'])} | {ratio(v['td'], v['xs'])} |"
            )
    for label, q in (("median", 0.5), ("p99", 0.99)):
        v = {k: quantile(accepts[k], q) for k in engines}
        p(
            f"| accept_token, {label} | {us(v['td'])} | {us(v['xr'])} | {us(v['xs'])} "
            f"| {ratio(v['td'], v['xr'])} | {ratio(v['td'], v['xs'])} |"
        )
    p(
        f"| walk steps timed | {len(fills['td']):,} | {len(fills['xr']):,} | {len(fills['xs']):,} | | |"
    )
    p("")
    early_same = sum(r.early_differ == 0 for r in rows)
    p(
        f"**Early first masks.** Served by `Compiler.start` before the artifact exists, "
        f"they equal the artifact's first mask on {early_same} of {len(rows)} sets"
        + ("." if early_same == len(rows) else " (the other sets differ: a bug).")
    )
    p("")

    # Agreement, refusals and errors, in words.
    ag = [r.agree for r in xr_ok]
    steps_xr = len(fills["xr"])
    walk_text_same = sum(1 for r in xr_ok if r.agree.steps_text == 0 and r.xr.rejected_at is None)
    p(
        f"**Mask agreement, regex route.** XGrammar compiled our regular expression for "
        f"{len(xr_ok)} of {len(rows)} sets. On text tokens, the first masks are equal for "
        f"{sum(a.first_text == 0 for a in ag)} of {len(ag)} sets, and every mask of the walk "
        f"(every token accepted) for {walk_text_same} of {len(ag)}; "
        f"{sum(a.steps_text for a in ag):,} of {steps_xr:,} steps differ on text tokens "
        f"({sum(a.tokens_text for a in ag):,} token decisions). Counting the special tokens "
        f"too, {sum(a.first == 0 for a in ag)} first masks are equal and "
        f"{sum(a.steps for a in ag):,} steps differ ({sum(a.tokens for a in ag):,} token "
        f"decisions); "
        + (
            "every special-token difference is XGrammar allowing the token as text."
            if all(a.special_only_xgrammar for a in ag)
            else "some special-token differences are tokens tooldec allows."
        )
    )
    xr_rej = [r for r in xr_ok if r.xr.rejected_at is not None]
    if xr_rej:
        p(
            f"XGrammar (regex) refused a token of our walk on {len(xr_rej)} sets: "
            + "; ".join(
                f"{r.name} step {r.xr.rejected_at} {bench.hf.convert_ids_to_tokens(r.walk[r.xr.rejected_at])!r}"
                for r in xr_rej[:6]
            )
            + "."
        )
    ex = [f"{r.name}, {e}" for r in xr_ok for e in r.agree.examples]
    if ex:
        p("Text-token differences, for example: " + "; ".join(ex[:8]) + ".")
    p("")
    xs_rej = [r for r in xs_ok if r.xs.rejected_at is not None]
    p(
        f"**Structural tag route.** Compiled for {len(xs_ok)} of {len(rows)} sets; its first "
        f"mask equals that of tooldec's `required` entry for {sum(r.xs_first == 0 for r in xs_ok)} "
        f"of {len(xs_ok)} sets, on text tokens for {sum(r.xs_first_text == 0 for r in xs_ok)} "
        f"(median {med(xs_ok, lambda r: float(r.xs_first)):.0f} tokens differ, "
        f"{med(xs_ok, lambda r: float(r.xs_first_text)):.0f} text tokens); it accepted our whole "
        f"walk on {len(xs_ok) - len(xs_rej)} of {len(xs_ok)} sets."
    )
    if xs_rej:
        p(
            "Refused (set, step, token): "
            + "; ".join(
                f"{r.name} step {r.xs.rejected_at} {bench.hf.convert_ids_to_tokens(r.walk[r.xs.rejected_at])!r}"
                for r in xs_rej[:6]
            )
            + "."
        )
    errors = [(r.name, "regex", r.xr.error) for r in rows if r.xr.error] + [
        (r.name, "structural tag", r.xs.error) for r in rows if r.xs.error
    ]
    if errors:
        p("")
        p(
            f"**XGrammar errors** ({len(errors)}): "
            + "; ".join(f"{n} ({k}): {e}" for n, k, e in errors[:8])
            + "."
        )
    p("")
    f50 = {k: quantile(fills[k], 0.5) for k in engines}
    p(
        f"`xgrammar-peer: {len(rows)} sets, medians: first mask (new set) tooldec "
        f"{ms(med(rows, lambda r: r.td.first))} (served early {ms(med(rows, lambda r: r.td.early))}), XGrammar regex {ms(med(xr_ok, lambda r: r.xr.first))} "
        f"(tooldec/XGrammar {ratio(per_set(xr_ok, lambda r: r.td.first, lambda r: r.xr.first), 1)}), "
        f"structural tag {ms(med(xs_ok, lambda r: r.xs.first))} "
        f"({ratio(per_set(xs_ok, lambda r: r.td.first, lambda r: r.xs.first), 1)}); fill per token "
        f"tooldec {us(f50['td'])}, regex {us(f50['xr'])} ({ratio(f50['td'], f50['xr'])}), "
        f"structural tag {us(f50['xs'])} ({ratio(f50['td'], f50['xs'])}); regex-route walks equal "
        f"on text tokens {walk_text_same}/{len(xr_ok)}`"
    )
    p("")

    p("## Per set: compile and first mask\n")
    p(
        "| set | tools | regex chars | tooldec compile | tooldec new set | tooldec early | tooldec same set "
        "| tooldec cold | XGr regex compile | XGr regex first mask | XGr regex same set "
        "| XGr tag compile | XGr tag first mask | XGr tag same set | new set / regex | new set / tag |"
    )
    p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        p(
            f"| {r.name} | {r.tools} | {r.regex_chars:,} | {ms(r.td.compile)} | {ms(r.td.first)} "
            f"| {ms(r.td.early)} | {ms(r.td.same)} | {ms(r.td.cold)} | {ms(r.xr.compile)} | {ms(r.xr.first)} "
            f"| {ms(r.xr.same)} | {ms(r.xs.compile)} | {ms(r.xs.first)} | {ms(r.xs.same)} "
            f"| {ratio(r.td.first, r.xr.first)} | {ratio(r.td.first, r.xs.first)} |"
        )
    p("")
    p("## Per set: serving the walk\n")
    p(
        "Fills: median / p99 / max over the walk's steps. *differ*: the regex route's "
        "differences from our masks, text tokens / all tokens (first mask: tokens; walk: "
        "steps). *refused*: the first step whose token an engine refused.\n"
    )
    p(
        "| set | steps | tooldec fill | XGr regex fill | XGr tag fill | tooldec accept "
        "| XGr regex accept | XGr tag accept | first mask differ | steps differ | refused (regex / tag) |"
    )
    p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    dash = lambda v: "—" if v is None else str(v)
    for r in rows:
        g = r.agree
        p(
            f"| {r.name} | {len(r.walk)} | {three(r.td.fills)} | {three(r.xr.fills)} "
            f"| {three(r.xs.fills)} | {us(quantile(r.td.accepts, 0.5))} "
            f"| {us(quantile(r.xr.accepts, 0.5))} | {us(quantile(r.xs.accepts, 0.5))} "
            f"| {dash(g.first_text)} / {dash(g.first)} | {g.steps_text} / {g.steps} "
            f"| {dash(r.xr.rejected_at)} / {dash(r.xs.rejected_at)} |"
        )
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    data = Path(os.environ.get("TOOLDEC_DATA", "../shared/data"))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--tokenizer",
        type=Path,
        default=data / "tokenizers" / "llama-3.2" / "tokenizer.json",
        help="a Hugging Face tokenizer.json (default: $TOOLDEC_DATA/tokenizers/llama-3.2)",
    )
    ap.add_argument("--limit", type=int, default=None, help="the first N sets only (default: all)")
    ap.add_argument("--seed", type=int, default=1, help="the walks' seed (default 1)")
    ap.add_argument(
        "--slack",
        type=int,
        default=16,
        help="tokens a walk may take over the shortest complete call (default 16)",
    )
    ap.add_argument(
        "--tooldec-compile",
        default=os.environ.get("TOOLDEC_COMPILE", "tooldec-compile"),
        help="the tooldec-compile binary (default: $TOOLDEC_COMPILE, else on PATH)",
    )
    ap.add_argument("--out", type=Path, help="also write the markdown report here")
    args = ap.parse_args(argv)
    started, load_start = clock(), loadavg()

    sets = bfcl_sets(data)[: args.limit]
    bench = Bench(args)
    say = lambda m: print(m, file=sys.stderr, flush=True)
    say(f"{len(sets)} sets; tokenizer {args.tokenizer}; computing our regular expressions")

    t = clock()
    with ThreadPoolExecutor(max_workers=2) as pool:
        regexes = list(
            pool.map(lambda s: tooldec_regex(args.tooldec_compile, args.tokenizer, s), sets)
        )
    regex_s = clock() - t

    rows = []
    for i, (s, rx) in enumerate(zip(sets, regexes)):
        row = bench.run_set(s, rx)
        rows.append(row)
        say(
            f"[{i + 1}/{len(sets)}] {s.name}: tooldec {ms(row.td.first)}, XGr regex "
            f"{row.xr.error or ms(row.xr.first)}, tag {row.xs.error or ms(row.xs.first)}; "
            f"{len(row.walk)} steps, {row.agree.steps_text} differ on text tokens"
        )
    say("tooldec cold compiles")
    bench.cold(rows, {s.name: s for s in sets})

    text = report(bench, rows, regex_s, clock() - started, (load_start, loadavg()), argv)
    print(text, end="")
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
