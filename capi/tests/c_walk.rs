//! A C program (`tests/c/walk.c`, compiled here with the system C compiler
//! against `libtooldec.a`) walks tool calls token by token through the C
//! ABI; every line it prints is compared with what the Rust API gives for
//! the same operation. It walks artifacts it loads from files, and one it
//! compiles in the process (`tooldec_compiler_compile`), whose bytes must
//! be the Rust compiler's.
//!
//! The Rust side writes the script: seeded walks that pick each token
//! among those the Rust mask allows (half of the time the one that brings
//! the call closest to complete, so walks finish), with validated drafts
//! (valid, and with a disallowed token in the middle), multi-token
//! accepts, rollbacks over several tokens (and past the capacity),
//! clones, batched fills with gaps between rows and rows wider than the
//! mask, forced bytes, budgets, resets, EOS termination, and the error
//! paths. The expected lines come from `tooldec_runtime::Matcher` with a
//! plain `Vec` of saved matchers as the rollback oracle.

mod common;

use std::fmt::Write as _;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Instant;

use common::{compile_c, fnv, run, Rng};
use tooldec_runtime::{Artifact, Grammar, Matcher};

/// One expected output line: exact, or a head and substrings of the
/// message after `" | "`.
enum Want {
    Line(String),
    Msg { head: String, has: Vec<String> },
}

fn msg(head: impl Into<String>, has: &[&str]) -> Want {
    Want::Msg {
        head: head.into(),
        has: has.iter().map(|s| s.to_string()).collect(),
    }
}

/// A matcher of the script and the oracle's rollback history.
#[derive(Clone)]
struct Slot<'g> {
    m: Matcher<'g>,
    /// The matchers before each of the latest accepted tokens.
    hist: Vec<Matcher<'g>>,
    cap: usize,
}

impl<'g> Slot<'g> {
    fn accept(&mut self, t: u32) -> bool {
        let before = self.m;
        if !self.m.accept_token(t) {
            return false;
        }
        if self.cap > 0 {
            self.hist.push(before);
            if self.hist.len() > self.cap {
                self.hist.remove(0);
            }
        }
        true
    }
}

struct Script<'g> {
    g: &'g Grammar<'g>,
    ops: String,
    want: Vec<Want>,
    slots: Vec<Option<Slot<'g>>>,
    /// Tokens accepted through `accept` / `accepts`, masks compared.
    tokens: usize,
    masks: usize,
    completed: usize,
}

impl<'g> Script<'g> {
    fn new(g: &'g Grammar<'g>) -> Script<'g> {
        Script {
            g,
            ops: String::new(),
            want: Vec::new(),
            slots: vec![None; 8],
            tokens: 0,
            masks: 0,
            completed: 0,
        }
    }

    fn op(&mut self, text: String, want: Want) {
        self.ops.push_str(&text);
        self.ops.push('\n');
        self.want.push(want);
    }

    fn slot(&mut self, s: usize) -> &mut Slot<'g> {
        self.slots[s].as_mut().expect("a live slot")
    }

    fn m(&self, s: usize) -> Matcher<'g> {
        self.slots[s].as_ref().expect("a live slot").m
    }

    fn mask_words(&self) -> usize {
        self.g.mask_words()
    }

    /// The mask of `m` in a buffer of `words` words, checked clean here
    /// (no bit at or past the token count).
    fn mask_of(&self, m: &Matcher<'_>, words: usize) -> Vec<u32> {
        let mut buf = vec![0u32; words];
        m.fill_mask(&mut buf);
        let n = self.g.token_count();
        for t in n..words * 32 {
            assert_eq!(buf[t / 32] >> (t % 32) & 1, 0, "padding id {t} allowed");
        }
        buf
    }

    fn allowed(&self, m: &Matcher<'_>) -> Vec<u32> {
        let mask = self.mask_of(m, self.mask_words());
        (0..self.g.mask_width() as u32)
            .filter(|&t| mask[t as usize / 32] >> (t % 32) & 1 == 1)
            .collect()
    }

    // ---- operations ----

    fn new_matcher(&mut self, s: usize, entry: Option<&str>, budget: Option<u32>, cap: usize) {
        let g = self.g;
        // TOOLDEC_NO_BUDGET: the default budget removed by set_budget.
        let unbounded = budget == Some(u32::MAX);
        let made: Result<Matcher<'g>, &str> = match (entry, budget.filter(|_| !unbounded)) {
            (_, _) if entry.is_some_and(|e| g.entry_state(e).is_none()) => Err("entry"),
            (None, None) => Ok(g.matcher()),
            (None, Some(b)) => g.matcher_with_budget(b).map_err(|_| "budget"),
            (Some(e), None) => g.matcher_at(e).ok_or("entry"),
            (Some(e), Some(b)) => g.matcher_at_with_budget(e, b).map_err(|_| "budget"),
        };
        let text = format!(
            "new {s} {} {} {cap}",
            entry.unwrap_or("-"),
            budget.map_or("-".to_string(), |b| b.to_string())
        );
        let made = made.map(|mut m| {
            if unbounded {
                m.set_budget(None).expect("removing the budget");
            }
            m
        });
        match made {
            Ok(m) => {
                self.slots[s] = Some(Slot {
                    m,
                    hist: Vec::new(),
                    cap,
                });
                self.op(text, Want::Line("new 0".into()));
            }
            Err("budget") => {
                self.slots[s] = None;
                self.op(text, msg("new 6", &["too small"]));
            }
            Err(_) => {
                self.slots[s] = None;
                self.op(text, msg("new 5", &["no entry point"]));
            }
        }
    }

    fn clone_slot(&mut self, d: usize, s: usize) {
        self.slots[d] = self.slots[s].clone();
        self.op(format!("clone {d} {s}"), Want::Line("clone 0".into()));
    }

    fn free(&mut self, s: usize) {
        self.slots[s] = None;
        self.op(format!("free {s}"), Want::Line("free".into()));
    }

    fn mask(&mut self, s: usize, words: usize) {
        let m = self.m(s);
        let want = if words < self.mask_words() {
            msg("mask 4 untouched=1", &["smaller than"])
        } else {
            let buf = self.mask_of(&m, words);
            let pop: u32 = buf.iter().map(|w| w.count_ones()).sum();
            self.masks += 1;
            Want::Line(format!("mask 0 {:016x} {pop} clean=1 guard=1", fnv(&buf)))
        };
        self.op(format!("mask {s} {words}"), want);
    }

    fn batch(&mut self, stride: usize, row: usize, slots: &[usize]) {
        let mut text = format!("batch {stride} {row} {}", slots.len());
        let mut line = "batch 0".to_string();
        for &s in slots {
            write!(text, " {s}").unwrap();
            let buf = self.mask_of(&self.m(s), row);
            write!(line, " {:016x}", fnv(&buf)).unwrap();
            self.masks += 1;
        }
        line.push_str(" gaps=1 clean=1");
        self.op(text, Want::Line(line));
    }

    fn accept(&mut self, s: usize, t: u32) -> bool {
        let ok = self.slot(s).accept(t);
        let want = if ok {
            self.tokens += 1;
            Want::Line("accept 0".into())
        } else {
            msg("accept 7", &[&format!("token {t} is not allowed")])
        };
        self.op(format!("accept {s} {t}"), want);
        ok
    }

    fn accepts(&mut self, s: usize, tokens: &[u32]) -> usize {
        let slot = self.slot(s);
        let k = tokens.iter().take_while(|&&t| slot.accept(t)).count();
        self.tokens += k;
        let want = if k == tokens.len() {
            Want::Line(format!("accepts 0 {k}"))
        } else {
            msg(format!("accepts 7 {k}"), &["is not allowed"])
        };
        self.op(
            format!("accepts {s} {} {}", tokens.len(), join(tokens)),
            want,
        );
        k
    }

    fn validate(&mut self, s: usize, tokens: &[u32]) -> usize {
        let mut c = self.m(s);
        let k = tokens.iter().take_while(|&&t| c.accept_token(t)).count();
        self.op(
            format!("validate {s} {} {}", tokens.len(), join(tokens)),
            Want::Line(format!("validate 0 {k}")),
        );
        k
    }

    fn allowed_op(&mut self, s: usize, t: u32) {
        let a = self.m(s).is_allowed(t) as u8;
        self.op(
            format!("allowed {s} {t}"),
            Want::Line(format!("allowed {a}")),
        );
    }

    fn rollback(&mut self, s: usize, n: usize) -> bool {
        let slot = self.slot(s);
        let depth = slot.hist.len();
        let ok = n <= depth;
        if ok && n > 0 {
            slot.m = slot.hist[depth - n];
            slot.hist.truncate(depth - n);
        }
        let want = if ok {
            Want::Line("rollback 0".into())
        } else {
            msg(
                "rollback 8",
                &[&format!(
                    "cannot roll back {n} token{}: only the last {depth} can be",
                    if n == 1 { "" } else { "s" }
                )],
            )
        };
        self.op(format!("rollback {s} {n}"), want);
        ok
    }

    fn forced(&mut self, s: usize, cap: usize) {
        let mut buf = vec![0u8; cap];
        let n = self.m(s).forced_bytes(&mut buf);
        let hex = if n == 0 {
            "-".to_string()
        } else {
            hex(&buf[..n])
        };
        self.op(
            format!("forced {s} {cap}"),
            Want::Line(format!("forced 0 {n} {hex}")),
        );
    }

    fn query(&mut self, s: usize) {
        let slot = self.slots[s].as_ref().expect("a live slot");
        let m = slot.m;
        let left = m
            .tokens_left()
            .map_or("none".to_string(), |n| n.to_string());
        let line = format!(
            "query acc={} term={} left={left} depth={} cap={}",
            m.is_accepting() as u8,
            m.is_terminated() as u8,
            slot.hist.len(),
            slot.cap
        );
        self.op(format!("query {s}"), Want::Line(line));
    }

    fn reset(&mut self, s: usize) {
        let slot = self.slot(s);
        slot.m.reset();
        slot.hist.clear();
        self.op(format!("reset {s}"), Want::Line("reset 0".into()));
    }

    fn reset_to(&mut self, s: usize, entry: &str) {
        let slot = self.slot(s);
        let ok = slot.m.reset_to(entry);
        if ok {
            slot.hist.clear();
        }
        let want = if ok {
            Want::Line("reset_to 0".into())
        } else if self.g.entry_state(entry).is_none() {
            msg("reset_to 5", &["no entry point"])
        } else {
            msg("reset_to 6", &["budget"])
        };
        self.op(format!("reset_to {s} {entry}"), want);
    }

    fn budget(&mut self, s: usize, left: Option<u32>) {
        let r = self.slot(s).m.set_budget(left);
        let want = match r {
            Ok(()) => Want::Line("budget 0".into()),
            Err(_) => msg("budget 6", &["budget"]),
        };
        let arg = left.map_or("-".to_string(), |n| n.to_string());
        self.op(format!("budget {s} {arg}"), want);
    }

    // ---- walks ----

    /// A token to take at `m`: EOS now and then once allowed, else half of
    /// the time one that leaves the call fewest tokens from complete,
    /// else any allowed token.
    fn pick(&self, rng: &mut Rng, m: &Matcher<'g>, eager: bool) -> Option<u32> {
        let allowed = self.allowed(m);
        let (eos, text): (Vec<u32>, Vec<u32>) = allowed.iter().partition(|&&t| self.g.is_eos(t));
        if !eos.is_empty() && (text.is_empty() || eager || rng.below(3) == 0) {
            return Some(eos[rng.below(eos.len())]);
        }
        if text.is_empty() {
            return None;
        }
        if eager || rng.below(2) == 0 {
            // The candidates (all of them, or a sample of a large set) that
            // leave the fewest tokens to a complete call.
            let candidates: Vec<u32> = if text.len() <= 2048 {
                text.clone()
            } else {
                (0..256).map(|_| text[rng.below(text.len())]).collect()
            };
            let dist: Vec<(u32, u32)> = candidates
                .iter()
                .map(|&t| {
                    let mut c = *m;
                    assert!(c.accept_token(t), "an allowed token is accepted");
                    let d = c
                        .state()
                        .and_then(|s| self.g.distance(s))
                        .unwrap_or(u32::MAX);
                    (t, d)
                })
                .collect();
            let best = dist.iter().map(|p| p.1).min().unwrap();
            let closest: Vec<u32> = dist.iter().filter(|p| p.1 == best).map(|p| p.0).collect();
            return Some(closest[rng.below(closest.len())]);
        }
        Some(text[rng.below(text.len())])
    }

    /// Up to `k` tokens a walk from `m` could take.
    fn draft(&self, rng: &mut Rng, m: &Matcher<'g>, k: usize) -> Vec<u32> {
        let mut c = *m;
        let mut out = Vec::new();
        while out.len() < k && !c.is_terminated() {
            let Some(t) = self.pick(rng, &c, false) else {
                break;
            };
            assert!(c.accept_token(t));
            out.push(t);
        }
        out
    }

    /// A token `m` does not allow (padding ids included).
    fn disallowed(&self, rng: &mut Rng, m: &Matcher<'g>) -> u32 {
        let mask = self.mask_of(m, self.mask_words());
        loop {
            let t = rng.below(self.g.mask_width()) as u32;
            if mask[t as usize / 32] >> (t % 32) & 1 == 0 {
                return t;
            }
        }
    }

    /// One walk in slot 0, from `new` to `free`.
    fn walk(&mut self, rng: &mut Rng, entry: Option<&str>, budget: Option<u32>, cap: usize) {
        self.new_matcher(0, entry, budget, cap);
        if self.slots[0].is_none() {
            return;
        }
        let limit = self.m(0).tokens_left().map_or(120, |n| n as usize + 2);
        let mw = self.mask_words();
        for step in 0..limit {
            let words = if rng.below(4) == 0 {
                mw + 1 + rng.below(3)
            } else {
                mw
            };
            self.mask(0, words);
            self.query(0);
            if rng.below(4) == 0 {
                self.forced(0, [64, 3, 1][rng.below(3)]);
            }
            let m = self.m(0);
            if m.is_terminated() {
                break;
            }
            let eager = step * 3 > limit * 2;
            match rng.below(12) {
                // Speculative drafts: a valid one, then one with a bad
                // token in the middle, neither advancing.
                0 | 1 => {
                    let k = 2 + rng.below(4);
                    let mut d = self.draft(rng, &m, k);
                    let k = self.validate(0, &d);
                    assert_eq!(k, d.len());
                    if d.len() >= 2 {
                        let j = 1 + rng.below(d.len() - 1);
                        let mut c = m;
                        assert_eq!(c.accept_tokens(&d[..j]), j);
                        d[j] = self.disallowed(rng, &c);
                        assert_eq!(self.validate(0, &d), j);
                    }
                }
                // Several tokens at once; sometimes a bad one stops them,
                // and the accepted prefix is rolled back.
                2 => {
                    let k = 2 + rng.below(4);
                    let mut d = self.draft(rng, &m, k);
                    if d.len() >= 2 && rng.below(2) == 0 {
                        let j = 1 + rng.below(d.len() - 1);
                        let mut c = m;
                        c.accept_tokens(&d[..j]);
                        d[j] = self.disallowed(rng, &c);
                        assert_eq!(self.accepts(0, &d), j);
                        self.mask(0, mw);
                        if j <= self.slot(0).hist.len() {
                            assert!(self.rollback(0, j));
                            self.mask(0, mw);
                        }
                    } else {
                        self.accepts(0, &d);
                    }
                    continue;
                }
                // A clone that walks on alone, in a batch beside the
                // original: rows wider than the mask, gaps between rows.
                3 => {
                    self.clone_slot(1, 0);
                    if let Some(t) = self.pick(rng, &m, eager) {
                        self.accept(1, t);
                    }
                    let row = mw + rng.below(3);
                    let stride = row + 1 + rng.below(5);
                    self.batch(stride, row, &[0, 1, 0]);
                    self.query(1);
                    self.free(1);
                }
                // A token the mask does not allow: rejected, unchanged.
                4 => {
                    let bad = self.disallowed(rng, &m);
                    assert!(!self.accept(0, bad));
                    self.allowed_op(0, bad);
                    self.mask(0, mw);
                }
                // A new budget from here (enough, or one too few).
                5 if step > 0 => {
                    if let Some(d) = m.state().and_then(|s| self.g.distance(s)) {
                        let left = if rng.below(3) == 0 && d > 0 {
                            d - 1
                        } else {
                            d + rng.below(30) as u32
                        };
                        self.budget(0, Some(left));
                    }
                }
                _ => {}
            }
            let m = self.m(0); // a new budget changes it
            let Some(t) = self.pick(rng, &m, eager) else {
                break;
            };
            self.allowed_op(0, t);
            assert!(self.accept(0, t));
            // Roll back over several tokens now and then (past the depth
            // sometimes), and check the mask is the one from before.
            if rng.below(6) == 0 {
                let depth = self.slot(0).hist.len();
                let n = if rng.below(4) == 0 {
                    depth + 1
                } else {
                    1 + rng.below(depth.max(1))
                };
                // The expected mask afterwards is the saved matcher's.
                if self.rollback(0, n) {
                    self.mask(0, mw);
                }
            }
        }
        let m = self.m(0);
        if m.is_terminated() {
            self.completed += 1;
            // After EOS only EOS: accepting it again is allowed, and one
            // rollback undoes it.
            let eos = self.g.eos_tokens()[0];
            self.accept(0, eos);
            self.query(0);
            self.rollback(0, 1);
            self.query(0);
            self.mask(0, mw);
        }
        self.reset(0);
        self.mask(0, mw);
        self.query(0);
        self.free(0);
    }
}

fn join(tokens: &[u32]) -> String {
    tokens
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The expected lines of walk.c's `errors` operation.
fn error_lines(g: &Grammar<'_>) -> Vec<Want> {
    let l = |s: &str| Want::Line(s.to_string());
    let vocab = g.mask_width();
    assert!(
        g.min_tokens() > 1,
        "the budget error needs a call longer than 1 token"
    );
    vec![
        msg(
            "e open_missing 3 1",
            &["/does/not/exist.tdm", "cannot read artifact"],
        ),
        l("e open_nullpath 1"),
        l("e open_nullout 1"),
        msg("e buffer_garbage 3 1", &["buffer of 64 bytes"]),
        l("e buffer_null 1"),
        l("e buffer_truncated 3"),
        Want::Line(format!("e buffer_ok 0 {vocab}")),
        l("e tiny_buffer 7"),
        l("e new_null_artifact 1 1"),
        msg("e new_no_entry 5", &["no entry point \"nope\""]),
        msg("e new_budget 6", &["token budget 1 is too small"]),
        msg("e new_rollback 2", &["TOOLDEC_MAX_ROLLBACK"]),
        l("e new_nullout 1"),
        msg(
            "e fill_small 4 1",
            &["smaller than the artifact's mask width"],
        ),
        l("e fill_null 1"),
        msg(
            "e rollback_empty 8",
            &["cannot roll back 1 token: only the last 0"],
        ),
        l("e depth_after_3 2"),
        msg(
            "e rollback_deep 8 2",
            &["only the last 2 can be (rollback capacity 2)"],
        ),
        l("e rollback_2 0 0"),
        msg("e accept_rejected 7", &["is not allowed here"]),
        l("e accepts_null 1 0"),
        l("e validate_null 1"),
        l("e validate_empty 0 0"),
        l("e validate_nullout 1"),
        msg("e reset_to_bad 5", &["no entry point \"nope\""]),
        l("e reset_to_null 1"),
        l("e reset 0 0"),
        msg("e budget_zero 6", &["token budget 0 is too small"]),
        l("e forced_null 1"),
        l("e forced_zero 0 0"),
        l("e forced_nullout 1"),
        l("e vocab_ok 0"),
        msg("e vocab_bad 9", &["artifact was compiled for"]),
        l("e vocab_null 1"),
        msg(
            "e logits_narrow 9",
            &[&format!("logits width {} is smaller", vocab - 1)],
        ),
        l("e logits_exact 0"),
        l("e logits_wide 0"),
        msg("e batch_null_entry 1 1", &["matchers[1] is NULL"]),
        msg("e batch_stride 2 1", &["below the row width"]),
        msg(
            "e batch_narrow 4 1",
            &["narrower than the mask of matchers[0]"],
        ),
        l("e batch_null_base 1"),
        l("e batch_null_list 1"),
        l("e batch_empty 0 1"),
        l("e null_matcher 1 1 1 1 1 1 1 1 1 1 1 0 0 0 1 0 0 0 1"),
        l("e null_artifact 0 0 0 1 0 1 0 1 0 1 1 1 1"),
        l("e status_names TOOLDEC_OK TOOLDEC_ERR_ROLLBACK TOOLDEC_UNKNOWN"),
        Want::Line(format!("e version {}", env!("CARGO_PKG_VERSION"))),
    ]
}

/// The expected lines of walk.c's `compile_errors` operation (`g`: the
/// artifact walked, compiled for the built-in GPT-2 vocabulary).
fn compile_error_lines(g: &Grammar<'_>) -> Vec<Want> {
    let l = |s: &str| Want::Line(s.to_string());
    let pointer = "(at /0/function/parameters/properties/x/type)";
    vec![
        msg(
            "ce open_missing 3 1",
            &["/does/not/tokenizer.json", "cannot read it"],
        ),
        l("ce open_null 1"),
        msg("ce gpt2_bad_eos 3 1", &["<|nope|>"]),
        msg("ce gpt2_null_eos 1", &["eos[1] is NULL"]),
        l("ce gpt2_nullout 1"),
        msg(
            "ce text_no_eos 2",
            &["mine: no end-of-sequence token given"],
        ),
        Want::Line(format!(
            "ce compiler {} 1 {} 0 1 cache=0",
            g.token_count(),
            g.eos_tokens()[0]
        )),
        msg("ce bad_type 11 1", &["tools:1:", pointer, "strng"]),
        msg("ce bad_json 11", &["tools:1:", "invalid JSON"]),
        msg("ce not_utf8 2", &["tools is not UTF-8 (at byte 1)"]),
        msg(
            "ce bad_key 2",
            &["options: unknown key \"max-tokens\" (did you mean \"max_tokens\"?)"],
        ),
        msg("ce bad_format 2", &["unknown format \"nope\""]),
        msg("ce budget 6", &["--max-tokens 2 is too small"]),
        msg(
            "ce options_json 2",
            &["options: invalid JSON", "line 1 column"],
        ),
        l("ce null 1 1 1 1"),
        l("ce again 0 1 1 1"),
        l("ce cleared 0 0 1 1"),
        l("ce outlives 0 start"),
        l("ce null_compiler 0 0 1 0 1 1"),
        l("ce status_name TOOLDEC_ERR_COMPILE"),
    ]
}

fn info_line(g: &Grammar<'_>) -> String {
    let eos = g
        .eos_tokens()
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let entries = g.entries().map(|(n, _)| n).collect::<Vec<_>>().join(",");
    format!(
        "info vocab={} words={} tokens={} eos={eos} min={} max={} entries={entries} fp={} meta={}",
        g.mask_width(),
        g.mask_words(),
        g.token_count(),
        g.min_tokens(),
        g.max_tokens().map_or("none".to_string(), |n| n.to_string()),
        hex(g.vocab_fingerprint()),
        g.metadata().len()
    )
}

fn walk_program() -> &'static Path {
    static BUILT: OnceLock<std::path::PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        compile_c(
            "capi-walk",
            &[common::capi_dir().join("tests/c/walk.c")],
            &[],
        )
    })
}

/// What walk.c walks.
enum Source<'a> {
    /// An artifact file it opens.
    File(&'a Path),
    /// A tool list it compiles in the process for the built-in GPT-2
    /// vocabulary with the options JSON `options`; `want` is the payload
    /// the Rust compiler writes for them, which the script's expectations
    /// are computed from and which walk.c's payload must equal.
    Compiled {
        tools: &'a Path,
        options: &'a str,
        want: Vec<u8>,
    },
}

/// Writes the script for `source`, runs walk.c on it and compares.
fn check(source: Source<'_>, seed: u64, walks: usize) {
    let t0 = Instant::now();
    let program = walk_program();
    let compiled = t0.elapsed();
    let art = match &source {
        Source::File(path) => Artifact::open(path),
        Source::Compiled { want, .. } => Artifact::from_bytes(want),
    }
    .expect("the artifact loads");
    let g = art.grammar();
    let mut sc = Script::new(&g);
    let mut rng = Rng::new(seed);

    sc.op("info".into(), Want::Line(info_line(&g)));
    let probes = [
        0,
        198,
        g.eos_tokens()[0],
        g.token_count() as u32 - 1,
        g.mask_width() as u32 - 1,
        g.mask_width() as u32 + 5,
    ];
    for t in probes {
        let want = match g.token_bytes(t) {
            Some(b) => format!("bytes 0 {}", hex(b)),
            None => "bytes 0 -".to_string(),
        };
        sc.op(format!("bytes {t}"), Want::Line(want));
    }
    sc.ops.push_str("errors\n");
    sc.want.extend(error_lines(&g));
    let start_hash = fnv(&sc.mask_of(&g.matcher(), g.mask_words()));
    sc.op(
        "orphan".into(),
        Want::Line(format!("orphan 0 {start_hash:016x}")),
    );

    let entries: Vec<String> = g.entries().map(|(n, _)| n.to_string()).collect();
    for w in 0..walks {
        let entry = match rng.below(3) {
            0 => Some(entries[rng.below(entries.len())].as_str()),
            _ => None,
        };
        let need = entry
            .and_then(|e| g.entry_state(e))
            .unwrap_or(g.start_state());
        let need = g.distance(need).expect("the entry can complete");
        let budget = match rng.below(8) {
            0 => Some(need.saturating_sub(1)), // too small: new fails
            1..=4 => Some(need + rng.below(3 * need as usize + 1) as u32),
            5 => Some(u32::MAX), // TOOLDEC_NO_BUDGET
            _ => None,
        };
        let cap = [0, 1, 2, 5, 8, 16][rng.below(6)];
        if w % 7 == 3 {
            // reset_to another entry before the first token.
            sc.new_matcher(0, None, None, cap);
            let e = entries[rng.below(entries.len())].clone();
            sc.reset_to(0, &e);
            sc.reset_to(0, "no-such-entry");
            sc.mask(0, sc.mask_words());
            sc.free(0);
        }
        sc.walk(&mut rng, entry, budget, cap);
    }

    if let Source::Compiled { .. } = source {
        sc.ops.push_str("compile_errors\n");
        sc.want.extend(compile_error_lines(&g));
    }

    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let name = match &source {
        Source::File(path) => path.file_stem().unwrap().to_string_lossy().into_owned(),
        Source::Compiled { tools, .. } => {
            format!("compiled-{}", tools.file_stem().unwrap().to_string_lossy())
        }
    };
    let script = dir.join(format!("capi-walk-{name}.txt"));
    common::write_file(&script, sc.ops.as_bytes());
    let t1 = Instant::now();
    let out = match &source {
        Source::File(path) => run(program, &[path, &script]),
        Source::Compiled { tools, options, .. } => {
            let options_file = dir.join(format!("capi-walk-{name}-options.json"));
            common::write_file(&options_file, options.as_bytes());
            let payload = dir.join(format!("capi-walk-{name}.payload"));
            run(
                program,
                &[
                    Path::new("--compile"),
                    tools,
                    &options_file,
                    &payload,
                    &script,
                ],
            )
        }
    };
    let ran = t1.elapsed();

    let got: Vec<&str> = out.lines().collect();
    for (i, want) in sc.want.iter().enumerate() {
        let line = *got.get(i).unwrap_or_else(|| {
            panic!(
                "walk.c stopped after {} lines; line {} should be {}",
                got.len(),
                i + 1,
                show(want)
            )
        });
        let ok = match want {
            Want::Line(s) => line == s,
            Want::Msg { head, has } => line
                .split_once(" | ")
                .is_some_and(|(h, m)| h == head && has.iter().all(|s| m.contains(s.as_str()))),
        };
        assert!(
            ok,
            "{name}: line {} differs\n  C:    {line}\n  Rust: {}\n(script {}, line {})",
            i + 1,
            show(want),
            script.display(),
            i + 1
        );
    }
    assert_eq!(got.len(), sc.want.len(), "walk.c printed extra lines");
    if let Source::Compiled { want, .. } = &source {
        let payload = dir.join(format!("capi-walk-{name}.payload"));
        let written = std::fs::read(&payload).expect("walk.c wrote the payload");
        assert!(
            written == *want,
            "the payload compiled through the C ABI ({} bytes) differs from the Rust compiler's \
             ({} bytes)",
            written.len(),
            want.len()
        );
    }
    assert!(sc.completed > 0, "no walk completed a call");
    eprintln!(
        "{name}: {walks} walks ({} complete calls), {} tokens accepted, {} masks and {} lines compared; \
         C compile {:.2?}, C run {:.2?}",
        sc.completed,
        sc.tokens,
        sc.masks,
        sc.want.len(),
        compiled,
        ran
    );
}

fn show(want: &Want) -> String {
    match want {
        Want::Line(s) => s.clone(),
        Want::Msg { head, has } => format!("{head} | ...{}...", has.join("...")),
    }
}

#[test]
fn c_walks_the_golden_artifact() {
    check(Source::File(&common::golden_artifact()), 0x7001_dec0, 40);
}

#[test]
fn c_walks_a_padded_hermes_artifact_with_a_default_budget() {
    let path = common::padded_hermes_artifact();
    let art = Artifact::open(&path).expect("the artifact loads");
    let g = art.grammar();
    assert!(g.mask_width() > g.token_count(), "the mask width is padded");
    assert_eq!(g.max_tokens(), Some(common::HERMES_MAX_TOKENS));
    check(Source::File(&path), 0xba7c_4e55, 30);
}

/// walk.c compiles the weather tools itself (hermes, a padded mask width,
/// a default budget), writes the payload, and walks the compiled artifact:
/// the payload is the one-off compile's, byte for byte, and every line is
/// the Rust API's.
#[test]
fn c_compiles_in_the_process_and_walks_the_artifact() {
    use tooldec_compiler::{compile, spec, vocab::Vocab, CallFormat, Options};
    let tools = common::capi_dir().join("../grammars/examples/weather.json");
    let text = std::fs::read_to_string(&tools).expect("weather.json");
    let set = spec::parse("tools", &text).expect("weather.json parses");
    let opts = Options {
        format: CallFormat::load("hermes").expect("the shipped hermes format"),
        mask_width: Some(50304),
        max_tokens: Some(120),
        zstd_level: None,
        ..Options::default()
    };
    let vocab = Vocab::builtin_gpt2().expect("the built-in GPT-2 vocabulary");
    let want = compile(&set, &vocab, &opts, &mut |_| {})
        .expect("weather.json compiles")
        .artifact;
    check(
        Source::Compiled {
            tools: &tools,
            options: r#"{"format": "hermes", "vocab_size": 50304, "max_tokens": 120}"#,
            want,
        },
        0xc0de_c0de,
        30,
    );
}
