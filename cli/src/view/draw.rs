//! `draw`: a compiled machine as a Graphviz graph, at the level a person
//! reads it.
//!
//! The overview is a quotient of the DFA, walked from the served entry
//! states (never from the entry selector):
//! - text the format writes (its literals and what a call writes after the
//!   tool's name) is cut into straight runs, each one box labelled by the
//!   bytes it spells (special tokens by name);
//! - free text (`text_except`) is one node per rule, its exits labelled by
//!   the bytes every path out of it ends with (ReAct's `\nAction: `);
//! - the tool names are a trie whose edges are tokens: each name split by
//!   the tokenizer (or by longest match over the artifact's token bytes),
//!   each token an edge between the DFA states it walks between, so names
//!   share nodes where the minimized DFA shares states;
//! - each argument machine is a cluster with one node per top-level
//!   parameter; the bytes between members (`{`, `,`, `}`, whitespace) are
//!   passed through, so the nodes connect in the orders the machine
//!   allows, optional members can be skipped, and a parameter every path
//!   passes is marked required;
//! - parts reached from different sets of entries are drawn apart (the
//!   machine keeps them apart: what may follow differs);
//! - a node after which the output may end has a double border and an edge
//!   to the `EOS` node.
//!
//! With `--tool NAME`, that tool's argument machine state by state: every
//! DFA state in its arguments region, edges labelled by their bytes.
//!
//! Everything here is a description read from the artifact's region table
//! (see [`tooldec_compiler::automaton::region`]); output is deterministic.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt::Write as _;

use super::{Tokenizer, View};
use tooldec_compiler::automaton::region::Tag;
use tooldec_compiler::error::{Error, ErrorKind};

/// What to draw.
pub struct DrawOptions<'a> {
    /// Expand this tool's argument machine state by state (None: the collapsed overview).
    /// `TOOL.PARAM` expands one top-level parameter of it (for machines too large to draw whole).
    pub tool: Option<&'a str>,
    /// The tokenizer for the token labels of the name trie; None: longest match over the artifact's own token bytes (say so in the graph's label).
    pub tokenizer: Option<&'a Tokenizer>,
}

/// The most nodes, or edges, an overview may have: beyond that a picture
/// is no longer read.
pub const MAX_DRAWN: usize = 2000;

/// The most edges a state-by-state drawing (`--tool`) may have: deep
/// machines beyond that are no longer read, and Graphviz takes minutes to
/// lay them out; one parameter (`TOOL.PARAM`) is drawn instead.
pub const MAX_STATE_EDGES: usize = 300;

/// How long [`svg`] lets `dot` run.
pub const DOT_SECONDS: u64 = 120;

/// Bytes of a literal box or an edge label shown before it is cut.
const LABEL_CHARS: usize = 40;

/// The entry selector byte (FORMAT.md "Reserved bytes"): never drawn.
const SELECT: u8 = 0xFE;
/// The first byte of a special token's byte string.
const SPECIAL: u8 = 0xFF;

/// The DOT text. Deterministic: the same artifact and options give the same bytes.
pub fn dot(view: &View<'_>, opts: &DrawOptions<'_>) -> Result<String, Error> {
    if view.no_regions {
        return Err(Error::new(
            ErrorKind::Artifact,
            "the artifact has no region table (it was compiled by an older release or with \
             --no-regions), so its parts cannot be told apart; recompile it with this release's \
             tooldec-compile",
        ));
    }
    let selected = match opts.tool {
        None => None,
        Some(name) => Some(select(view, name)?),
    };
    let m = Machine::new(view);
    let rg = Regions::new(view);
    let st = States::new(view, &m, &rg);
    let blocks = Blocks::new(&m, &st);
    let cx = Ctx {
        view,
        m: &m,
        rg: &rg,
        st: &st,
        blocks: &blocks,
        memo: RefCell::new(HashMap::new()),
    };
    match selected {
        Some((tool, param)) => cx.expanded(tool, param),
        None => cx.overview(opts.tokenizer),
    }
}

/// `--tool`'s argument: a tool's name, or `TOOL.PARAM` (split at the last
/// dot that leaves a tool's name before it).
fn select<'n>(view: &View<'_>, name: &'n str) -> Result<(&'n str, Option<&'n str>), Error> {
    if view.tools.iter().any(|t| t == name) {
        return Ok((name, None));
    }
    if let Some((tool, param)) = name.rsplit_once('.') {
        if view.tools.iter().any(|t| t == tool) {
            return Ok((tool, Some(param)));
        }
    }
    Err(Error::new(
        ErrorKind::Usage,
        format!(
            "no tool `{name}` in this artifact; its tools: {}",
            view.tool_names(&(0..view.tools.len() as u32).collect::<Vec<_>>())
        ),
    ))
}

/// Renders DOT to SVG with the `dot` program; Ok(None) when `dot` is not installed (not on PATH); an Error when it is installed and fails (with its stderr).
pub fn svg(dot: &str) -> Result<Option<String>, Error> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let mut child = match Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::new(ErrorKind::Io, format!("cannot run `dot`: {e}"))),
    };
    let Some(mut stdin) = child.stdin.take() else {
        return Err(Error::new(ErrorKind::Io, "cannot write to `dot`"));
    };
    let input = dot.as_bytes().to_vec();
    // Written and read from other threads: `dot` may fill its output pipe
    // before it has read all of its input.
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let reader = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let stdout = reader(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let stderr = reader(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(DOT_SECONDS);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::new(
                    ErrorKind::Limit,
                    format!(
                        "`dot -Tsvg` did not finish in {DOT_SECONDS} s: the graph is too large to lay \
                         out; draw less of it"
                    ),
                ));
            }
            Err(e) => return Err(Error::new(ErrorKind::Io, format!("`dot -Tsvg`: {e}"))),
        }
    };
    let written = writer.join();
    let out_bytes = stdout.join().unwrap_or_default();
    let err_bytes = stderr.join().unwrap_or_default();
    if !status.success() {
        return Err(Error::new(
            ErrorKind::Io,
            format!(
                "`dot -Tsvg` failed ({status}): {}",
                String::from_utf8_lossy(&err_bytes).trim()
            ),
        ));
    }
    match written {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(Error::new(ErrorKind::Io, format!("writing to `dot`: {e}"))),
        Err(_) => return Err(Error::new(ErrorKind::Io, "writing to `dot` failed")),
    }
    String::from_utf8(out_bytes)
        .map(Some)
        .map_err(|_| Error::new(ErrorKind::Io, "`dot -Tsvg` wrote output that is not UTF-8"))
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Whether `b` can be a byte of a value or key in a state where one may
/// begin: neither whitespace nor a byte the structure around values reads
/// (`}` `]` `,` `:` `)`, which never begin a value).
fn is_value_byte(b: u8) -> bool {
    !is_ws(b) && !matches!(b, b'}' | b']' | b',' | b':' | b')')
}

/// Bytes `lo..=hi` lead from one state to `to`.
#[derive(Clone, Copy, Debug)]
struct Run {
    lo: u8,
    hi: u8,
    to: u32,
}

impl Run {
    fn bytes(self) -> std::ops::RangeInclusive<u8> {
        self.lo..=self.hi
    }

    fn single(self) -> Option<u8> {
        (self.lo == self.hi).then_some(self.lo)
    }
}

/// The served part of the DFA: the states the entries reach, their moves
/// as byte runs, and which entries reach each.
struct Machine {
    n: usize,
    order: Vec<u32>,
    runs: Vec<Vec<Run>>,
    /// Per state: `(predecessor, lo, hi)` over reached predecessors.
    preds: Vec<Vec<(u32, u8, u8)>>,
    accepting: Vec<bool>,
    /// Per state: the id of the set of entries that reach it.
    reach: Vec<u32>,
    /// Per reach id: the entries (indices into `entries`).
    reach_sets: Vec<Vec<usize>>,
    entries: Vec<(String, u32)>,
}

impl Machine {
    fn new(view: &View<'_>) -> Machine {
        let g = &view.g;
        let n = g.state_count();
        let mut entries: Vec<(String, u32)> = g
            .entries()
            .filter(|&(_, s)| s != 0 && (s as usize) < n)
            .map(|(name, s)| (name.to_string(), s))
            .collect();
        if entries.is_empty() {
            let s = g.start_state();
            if s != 0 && (s as usize) < n {
                entries.push(("start".into(), s));
            }
        }
        let mut reached = vec![false; n];
        let mut runs: Vec<Vec<Run>> = vec![Vec::new(); n];
        let mut queue: VecDeque<u32> = VecDeque::new();
        for &(_, s) in &entries {
            if !reached[s as usize] {
                reached[s as usize] = true;
                queue.push_back(s);
            }
        }
        while let Some(s) = queue.pop_front() {
            let mut r: Vec<Run> = Vec::new();
            for b in 0..=255u8 {
                if b == SELECT {
                    continue;
                }
                let t = g.next_state(s, b);
                if t == 0 || t as usize >= n {
                    continue;
                }
                if let Some(last) = r.last_mut() {
                    if last.to == t && u16::from(last.hi) + 1 == u16::from(b) {
                        last.hi = b;
                        continue;
                    }
                }
                r.push(Run {
                    lo: b,
                    hi: b,
                    to: t,
                });
                if !reached[t as usize] {
                    reached[t as usize] = true;
                    queue.push_back(t);
                }
            }
            runs[s as usize] = r;
        }
        let order: Vec<u32> = (0..n as u32).filter(|&s| reached[s as usize]).collect();
        let mut preds: Vec<Vec<(u32, u8, u8)>> = vec![Vec::new(); n];
        for &s in &order {
            for r in &runs[s as usize] {
                preds[r.to as usize].push((s, r.lo, r.hi));
            }
        }
        let accepting = (0..n as u32).map(|s| g.is_accepting_state(s)).collect();

        // Which entries reach each state.
        let words = entries.len().div_ceil(64).max(1);
        let mut bits = vec![0u64; n * words];
        for (k, &(_, s)) in entries.iter().enumerate() {
            let (w, bit) = (k / 64, 1u64 << (k % 64));
            let mut queue = VecDeque::from([s]);
            bits[s as usize * words + w] |= bit;
            while let Some(u) = queue.pop_front() {
                for r in &runs[u as usize] {
                    let slot = &mut bits[r.to as usize * words + w];
                    if *slot & bit == 0 {
                        *slot |= bit;
                        queue.push_back(r.to);
                    }
                }
            }
        }
        let mut ids: HashMap<Vec<u64>, u32> = HashMap::new();
        let mut reach_sets: Vec<Vec<usize>> = Vec::new();
        let mut reach = vec![0u32; n];
        for &s in &order {
            let key = bits[s as usize * words..(s as usize + 1) * words].to_vec();
            let id = *ids.entry(key.clone()).or_insert_with(|| {
                reach_sets.push(
                    (0..entries.len())
                        .filter(|&k| key[k / 64] >> (k % 64) & 1 == 1)
                        .collect(),
                );
                reach_sets.len() as u32 - 1
            });
            reach[s as usize] = id;
        }
        Machine {
            n,
            order,
            runs,
            preds,
            accepting,
            reach,
            reach_sets,
            entries,
        }
    }

    /// The one byte and state `s` moves on, if it has exactly one move.
    fn single_out(&self, s: u32) -> Option<(u8, u32)> {
        match self.runs[s as usize].as_slice() {
            [r] => r.single().map(|b| (b, r.to)),
            _ => None,
        }
    }

    fn is_entry(&self, s: u32) -> bool {
        self.entries.iter().any(|&(_, e)| e == s)
    }

    /// Entries, for labels: "entry `start`".
    fn entries_label(&self, entries: &BTreeSet<usize>) -> String {
        let names: Vec<String> = entries
            .iter()
            .map(|&k| format!("`{}`", self.entries[k].0))
            .collect();
        match names.len() {
            0 => "no entry".into(),
            1 => format!("entry {}", names[0]),
            _ => format!("entries {}", names.join(", ")),
        }
    }
}

/// A top-level parameter of an argument machine.
struct Param {
    args: u32,
    /// Empty for the stand-in of an argument machine with no parameters.
    name: String,
    ty: String,
}

/// The region tree, read for drawing: which argument machine and which
/// top-level parameter each region is in.
struct Regions {
    args_of: Vec<Option<u32>>,
    param_of: Vec<Option<u32>>,
    params: Vec<Param>,
}

impl Regions {
    fn new(view: &View<'_>) -> Regions {
        let n = view.regions.len();
        let mut args_of = vec![None; n];
        let mut param_of: Vec<Option<u32>> = vec![None; n];
        let mut params: Vec<Param> = Vec::new();
        let mut index: HashMap<(u32, String), u32> = HashMap::new();
        let mut intern = |params: &mut Vec<Param>, a: u32, name: &str| -> u32 {
            *index.entry((a, name.to_string())).or_insert_with(|| {
                params.push(Param {
                    args: a,
                    name: name.to_string(),
                    ty: String::new(),
                });
                params.len() as u32 - 1
            })
        };
        for i in 1..n {
            let r = &view.regions[i];
            let p = r.parent as usize;
            if matches!(r.tag, Some(Tag::Args { .. })) {
                args_of[i] = Some(i as u32);
                continue;
            }
            let Some(a) = args_of.get(p).copied().flatten() else {
                continue;
            };
            args_of[i] = Some(a);
            if p as u32 == a {
                let name = match &r.tag {
                    Some(Tag::Key { name }) | Some(Tag::Value { name, .. }) => name.as_str(),
                    _ => "?",
                };
                let id = intern(&mut params, a, name);
                if let Some(Tag::Value { ty, .. }) = &r.tag {
                    if params[id as usize].ty.is_empty() {
                        params[id as usize].ty = ty.clone();
                    }
                }
                param_of[i] = Some(id);
            } else {
                param_of[i] = param_of[p];
            }
        }
        // An argument machine with no parameters (`{}` only) is one node.
        for (i, region) in view.regions.iter().enumerate().skip(1) {
            if matches!(region.tag, Some(Tag::Args { .. }))
                && !params.iter().any(|p| p.args == i as u32)
            {
                param_of[i] = Some(intern(&mut params, i as u32, ""));
            }
        }
        Regions {
            args_of,
            param_of,
            params,
        }
    }
}

/// What a state is part of, from its most specific regions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    /// Not reached from an entry.
    Off,
    /// No moves: the output ends here.
    End,
    /// In the tool names.
    Name,
    /// In an argument machine.
    Args,
    /// In free text (an interned set of text regions).
    Text(u32),
    /// Text the format writes, or a call writes after its name.
    Lit,
}

struct States {
    class: Vec<Class>,
    /// The parameters the next byte may be part of (Args states).
    ps: Vec<Vec<u32>>,
    /// The argument machines the state is in (Args states).
    args: Vec<Vec<u32>>,
    /// The parameters a byte of which has been read to get here (or the
    /// one parameter every next byte is part of). Where the machines of
    /// several tools end alike, the minimized DFA shares their states: one
    /// state may then be in one parameter of each.
    committed: Vec<Vec<u32>>,
    /// The text regions of each interned text class.
    texts: Vec<Vec<u32>>,
    /// Per state: its piece, the least state connected to it by moves
    /// within argument machines (or within one free text). Machines that
    /// differ in what follows them (one call, or one of several) are
    /// separate pieces, drawn apart.
    piece: Vec<u32>,
    /// Each parameter's argument machine.
    param_args: Vec<u32>,
}

impl States {
    fn new(view: &View<'_>, m: &Machine, rg: &Regions) -> States {
        let n = m.n;
        let mut class = vec![Class::Off; n];
        let mut ps: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut args: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut texts: Vec<Vec<u32>> = Vec::new();
        let mut text_ids: HashMap<Vec<u32>, u32> = HashMap::new();
        let tag = |r: u32| view.regions.get(r as usize).and_then(|r| r.tag.as_ref());
        for &s in &m.order {
            let su = s as usize;
            if m.runs[su].is_empty() {
                class[su] = Class::End;
                continue;
            }
            let labels = view.labels.get(su).map(Vec::as_slice).unwrap_or(&[]);
            let leaves = view.leaves(labels);
            if leaves.iter().any(|&r| matches!(tag(r), Some(Tag::Name))) {
                class[su] = Class::Name;
                continue;
            }
            let mut a: Vec<u32> = leaves
                .iter()
                .filter_map(|&r| rg.args_of.get(r as usize).copied().flatten())
                .collect();
            a.sort_unstable();
            a.dedup();
            if !a.is_empty() {
                let mut p: Vec<u32> = leaves
                    .iter()
                    .filter_map(|&r| rg.param_of.get(r as usize).copied().flatten())
                    .collect();
                p.sort_unstable();
                p.dedup();
                class[su] = Class::Args;
                ps[su] = p;
                args[su] = a;
                continue;
            }
            let mut t: Vec<u32> = leaves
                .iter()
                .copied()
                .filter(|&r| matches!(tag(r), Some(Tag::Text { .. })))
                .collect();
            t.sort_unstable();
            if !t.is_empty() {
                let id = *text_ids.entry(t.clone()).or_insert_with(|| {
                    texts.push(t);
                    texts.len() as u32 - 1
                });
                class[su] = Class::Text(id);
                continue;
            }
            class[su] = Class::Lit;
        }

        // Commitment: a state is in parameter P (of argument machine A)
        // once a byte of P was read to get there: it follows a move that P
        // makes (a value byte from a state that expects P, alone or among
        // others, into a state that of A's parameters expects P alone), or
        // any move from a state already in P that P goes on in; a state
        // whose every next byte in A is P's is in P too.
        let param_args: Vec<u32> = rg.params.iter().map(|p| p.args).collect();
        let in_args = |s: usize, a: u32| -> Vec<u32> {
            ps[s]
                .iter()
                .copied()
                .filter(|&p| param_args[p as usize] == a)
                .collect()
        };
        let pure = |s: usize, a: u32, p: u32| -> bool {
            view.labels
                .get(s)
                .map(Vec::as_slice)
                .unwrap_or(&[])
                .iter()
                .all(|&r| {
                    let r = r as usize;
                    rg.param_of.get(r).copied().flatten() == Some(p)
                        || matches!(rg.args_of.get(r).copied().flatten(), Some(b) if b != a)
                })
        };
        let mut committed: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut work: Vec<(u32, u32)> = Vec::new();
        let commit = |committed: &mut Vec<Vec<u32>>, work: &mut Vec<(u32, u32)>, s: u32, p: u32| {
            if !committed[s as usize].contains(&p) {
                committed[s as usize].push(p);
                work.push((s, p));
            }
        };
        for &s in &m.order {
            let su = s as usize;
            if class[su] != Class::Args {
                continue;
            }
            for &a in &args[su] {
                if let [p] = in_args(su, a)[..] {
                    if pure(su, a, p) {
                        commit(&mut committed, &mut work, s, p);
                    }
                }
            }
            for r in &m.runs[su] {
                let v = r.to as usize;
                if class[v] != Class::Args || !r.bytes().any(is_value_byte) {
                    continue;
                }
                for &a in &args[v] {
                    if let [p] = in_args(v, a)[..] {
                        if ps[su].contains(&p) {
                            commit(&mut committed, &mut work, r.to, p);
                        }
                    }
                }
            }
        }
        while let Some((s, p)) = work.pop() {
            for r in &m.runs[s as usize] {
                let v = r.to as usize;
                if class[v] == Class::Args && ps[v].contains(&p) {
                    commit(&mut committed, &mut work, r.to, p);
                }
            }
        }
        for c in &mut committed {
            c.sort_unstable();
        }

        // Pieces: connected parts of the argument machines and of each
        // free text, named by their least state.
        let mut up: Vec<u32> = (0..n as u32).collect();
        fn find(up: &mut [u32], mut s: u32) -> u32 {
            while up[s as usize] != s {
                up[s as usize] = up[up[s as usize] as usize];
                s = up[s as usize];
            }
            s
        }
        for &s in &m.order {
            let c = class[s as usize];
            if !matches!(c, Class::Args | Class::Text(_)) {
                continue;
            }
            for r in &m.runs[s as usize] {
                if class[r.to as usize] == c {
                    let (a, b) = (find(&mut up, s), find(&mut up, r.to));
                    up[a.max(b) as usize] = a.min(b);
                }
            }
        }
        let piece: Vec<u32> = (0..n as u32).map(|s| find(&mut up, s)).collect();
        States {
            class,
            ps,
            args,
            committed,
            texts,
            piece,
            param_args,
        }
    }

    /// The parameters of `s` in argument machine `ctx` (all: `None`).
    fn ps_in(&self, s: u32, ctx: Option<u32>) -> Vec<u32> {
        self.ps[s as usize]
            .iter()
            .copied()
            .filter(|&p| ctx.is_none_or(|a| self.param_args[p as usize] == a))
            .collect()
    }

    fn committed_in(&self, s: u32, ctx: Option<u32>) -> Vec<u32> {
        self.committed[s as usize]
            .iter()
            .copied()
            .filter(|&p| ctx.is_none_or(|a| self.param_args[p as usize] == a))
            .collect()
    }

    /// An argument-machine state in no parameter (of machine `ctx`) yet:
    /// between members, or before one (drawn as the edges it lets through).
    fn passthrough(&self, s: u32, ctx: Option<u32>) -> bool {
        self.class[s as usize] == Class::Args && self.committed_in(s, ctx).is_empty()
    }
}

/// Straight runs of literal states: each starts where a literal is entered
/// from elsewhere, joins or branches, or may end the output, and goes on
/// while one byte leads to the next literal state.
struct Blocks {
    /// Per state: the first state of its block (`u32::MAX`: none).
    of: Vec<u32>,
    list: BTreeMap<u32, Vec<u32>>,
}

impl Blocks {
    fn new(m: &Machine, st: &States) -> Blocks {
        let lit = |s: u32| st.class[s as usize] == Class::Lit;
        let starts: Vec<bool> = (0..m.n as u32)
            .map(|s| {
                if !lit(s) {
                    return false;
                }
                let preds = &m.preds[s as usize];
                let ins: usize = preds
                    .iter()
                    .map(|&(_, lo, hi)| usize::from(hi - lo) + 1)
                    .sum();
                m.is_entry(s)
                    || m.accepting[s as usize]
                    || ins != 1
                    || !lit(preds[0].0)
                    || m.single_out(preds[0].0).is_none()
            })
            .collect();
        // A state between argument members with one way in and one byte
        // out (the `{` that opens the arguments) reads as part of the
        // literal before it.
        let forced_glue = |s: u32| {
            let su = s as usize;
            st.class[su] == Class::Args
                && st.ps[su].is_empty()
                && st.committed[su].is_empty()
                && m.single_out(s).is_some()
                && !m.accepting[su]
                && !m.is_entry(s)
                && matches!(m.preds[su].as_slice(), [(_, lo, hi)] if lo == hi)
        };
        let mut of = vec![u32::MAX; m.n];
        let mut list = BTreeMap::new();
        let chain_from = |s: u32, of: &mut Vec<u32>| {
            let mut chain = vec![s];
            of[s as usize] = s;
            let mut cur = s;
            while let Some((_, to)) = m.single_out(cur) {
                let goes_on = (lit(to) && !starts[to as usize]) || forced_glue(to);
                if !goes_on || of[to as usize] != u32::MAX {
                    break;
                }
                of[to as usize] = s;
                chain.push(to);
                cur = to;
            }
            chain
        };
        for &s in &m.order {
            if starts[s as usize] {
                let chain = chain_from(s, &mut of);
                list.insert(s, chain);
            }
        }
        // Literal states on no chain from a start (a cycle entered only
        // through itself cannot be reached; kept for safety).
        for &s in &m.order {
            if lit(s) && of[s as usize] == u32::MAX {
                let chain = chain_from(s, &mut of);
                list.insert(s, chain);
            }
        }
        Blocks { of, list }
    }
}

/// A node of the overview.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Node {
    Entry(usize),
    Block(u32),
    Trie(u32),
    /// A text class and a piece.
    Text(u32, u32),
    /// A parameter and a piece.
    Param(u32, u32),
    /// The end of the output, per reach set (each part of the drawing
    /// ends at its own).
    End(u32),
}

impl Node {
    fn id(&self) -> String {
        match self {
            Node::Entry(k) => format!("entry{k}"),
            Node::Block(s) => format!("b{s}"),
            Node::Trie(s) => format!("t{s}"),
            Node::Text(t, r) => format!("x{t}_{r}"),
            Node::Param(p, r) => format!("p{p}_{r}"),
            Node::End(r) => format!("end{r}"),
        }
    }
}

/// Where edges go, with a label each (empty: none).
type Targets = Vec<(Node, String)>;

struct Ctx<'a, 'g> {
    view: &'a View<'g>,
    m: &'a Machine,
    rg: &'a Regions,
    st: &'a States,
    blocks: &'a Blocks,
    memo: RefCell<HashMap<(u32, Option<u32>), Targets>>,
}

impl Ctx<'_, '_> {
    /// The nodes a move into `x` reaches when `x` is in a drawn part;
    /// `ctx`: the argument machine the move is made in, if any.
    fn direct(&self, x: u32, ctx: Option<u32>) -> Targets {
        let xu = x as usize;
        let r = self.m.reach[xu];
        let piece = self.st.piece[xu];
        let mut out = Vec::new();
        match self.st.class[xu] {
            Class::Off => {}
            Class::End => out.push((Node::End(r), String::new())),
            Class::Name => {
                out.push((Node::Trie(x), String::new()));
                if self.m.accepting[xu] {
                    out.push((Node::End(r), String::new()));
                }
            }
            Class::Lit => {
                let b = self.blocks.of[xu];
                out.push((Node::Block(b), String::new()));
                if self.m.accepting[xu] && b == x {
                    out.push((Node::End(r), String::new()));
                }
            }
            Class::Text(t) => out.push((Node::Text(t, piece), String::new())),
            Class::Args => {
                for p in self.st.committed_in(x, ctx) {
                    out.push((Node::Param(p, piece), String::new()));
                }
            }
        }
        out
    }

    /// The nodes a move into `v` reaches: through the states between
    /// parameters to the parameters, literals or end they lead to. A move
    /// out into a literal or the end on one byte that is not whitespace
    /// (`}`, `)`) labels its edge.
    fn targets(&self, v: u32, ctx: Option<u32>) -> Targets {
        if !self.st.passthrough(v, ctx) {
            return self.direct(v, ctx);
        }
        if let Some(t) = self.memo.borrow().get(&(v, ctx)) {
            return t.clone();
        }
        let mut out: BTreeSet<(Node, String)> = BTreeSet::new();
        let mut seen: HashSet<u32> = HashSet::from([v]);
        let mut queue = VecDeque::from([v]);
        while let Some(w) = queue.pop_front() {
            let wu = w as usize;
            if self.m.accepting[wu] {
                out.insert((Node::End(self.m.reach[wu]), String::new()));
            }
            let expects = self.st.ps_in(w, ctx);
            for &p in &expects {
                out.insert((Node::Param(p, self.st.piece[wu]), String::new()));
            }
            for r in &self.m.runs[wu] {
                // A byte of the parameter this state expects: that
                // parameter's node (above) goes on from here.
                if !expects.is_empty() && r.bytes().all(is_value_byte) {
                    continue;
                }
                if self.st.passthrough(r.to, ctx) {
                    if seen.insert(r.to) {
                        queue.push_back(r.to);
                    }
                    continue;
                }
                let label = self.exit_label(*r);
                for (t, l) in self.direct(r.to, ctx) {
                    out.insert((t, if l.is_empty() { label.clone() } else { l }));
                }
            }
        }
        let out: Targets = out.into_iter().collect();
        self.memo.borrow_mut().insert((v, ctx), out.clone());
        out
    }

    /// The label of a move out of an argument machine: its byte when it is
    /// one byte that closes something (`}`, `)`) into a literal or the end.
    fn exit_label(&self, r: Run) -> String {
        match (r.single(), self.st.class[r.to as usize]) {
            (Some(b), Class::Lit | Class::End) if !is_ws(b) && !is_value_byte(b) => {
                self.show_bytes(&[b])
            }
            _ => String::new(),
        }
    }

    /// Bytes for display as [`View::show_text`] shows them (special
    /// tokens by name), cut to [`LABEL_CHARS`].
    fn show_bytes(&self, bytes: &[u8]) -> String {
        let shown = self.view.show_text(bytes);
        // Without the backticks around it, which are ASCII.
        let body = &shown[1..shown.len() - 1];
        format!("`{}`", cut(body, LABEL_CHARS))
    }

    /// The bytes every path that ends with the move `u --byte-->` ends with,
    /// within the same free text: the literal that closes the text (ReAct's
    /// `\nAction: `). Walks back while every move into the state carries
    /// one same byte and, to go on, comes from one state.
    fn forced_suffix(&self, u: u32, byte: u8) -> Vec<u8> {
        let mut out = vec![byte];
        let mut cur = u;
        let mut seen = HashSet::from([u]);
        let class = self.st.class[u as usize];
        while out.len() < 2 * LABEL_CHARS && !self.m.is_entry(cur) {
            let preds = &self.m.preds[cur as usize];
            let Some(&(p0, b0, _)) = preds.first() else {
                break;
            };
            if preds.iter().any(|&(_, lo, hi)| lo != hi || lo != b0) {
                break;
            }
            out.push(b0);
            if preds.iter().any(|&(p, ..)| p != p0)
                || self.st.class[p0 as usize] != class
                || !seen.insert(p0)
            {
                break;
            }
            cur = p0;
        }
        out.reverse();
        out
    }

    /// A parameter node may lead to another argument machine's nodes only
    /// through what lies between (a merged tail of two machines would
    /// otherwise link one's members to the other's).
    fn keep(&self, from: &Node, to: &Node) -> bool {
        if from == to {
            return false;
        }
        match (from, to) {
            (Node::Param(a, _), Node::Param(b, _)) => {
                self.rg.params[*a as usize].args == self.rg.params[*b as usize].args
            }
            _ => true,
        }
    }

    fn overview(&self, tokenizer: Option<&Tokenizer>) -> Result<String, Error> {
        let view = self.view;
        let m = self.m;
        let st = self.st;
        let mut nodes: BTreeSet<Node> = BTreeSet::new();
        let mut edges: BTreeMap<(Node, Node), BTreeSet<String>> = BTreeMap::new();
        let mut add = |from: &Node, to: Node, label: String| {
            if self.keep(from, &to) {
                edges.entry((from.clone(), to)).or_default().insert(label);
            }
        };

        for (k, &(_, s)) in m.entries.iter().enumerate() {
            nodes.insert(Node::Entry(k));
            for (t, l) in self.targets(s, None) {
                add(&Node::Entry(k), t, l);
            }
        }

        // Literal boxes: their last state's moves.
        for (&start, chain) in &self.blocks.list {
            let from = Node::Block(start);
            nodes.insert(from.clone());
            let last = *chain.last().unwrap_or(&start);
            if let Some((_, to)) = m.single_out(last) {
                for (t, l) in self.targets(to, None) {
                    add(&from, t, l);
                }
                continue;
            }
            for (to, set) in by_target(&m.runs[last as usize]) {
                let label = byte_set(&set);
                for (t, l) in self.targets(to, None) {
                    let l = if l.is_empty() {
                        label.clone()
                    } else {
                        format!("{label} … {l}")
                    };
                    add(&from, t, l);
                }
            }
        }

        // Free text: its exits, labelled by the literal that ends it.
        // Argument machines: each parameter's moves out of it.
        for &s in &m.order {
            let su = s as usize;
            let r = m.reach[su];
            let piece = st.piece[su];
            match st.class[su] {
                Class::Text(t) => {
                    let from = Node::Text(t, piece);
                    nodes.insert(from.clone());
                    if m.accepting[su] {
                        add(&from, Node::End(r), String::new());
                    }
                    for run in &m.runs[su] {
                        let x = run.to as usize;
                        if st.class[x] == Class::Text(t) && st.piece[x] == piece {
                            continue;
                        }
                        let label = match run.single() {
                            Some(b) => self.show_bytes(&self.forced_suffix(s, b)),
                            None => String::new(),
                        };
                        for (to, l) in self.targets(run.to, None) {
                            add(&from, to, if l.is_empty() { label.clone() } else { l });
                        }
                    }
                }
                Class::Args => {
                    for &p in &st.committed[su] {
                        let ctx = Some(st.param_args[p as usize]);
                        let from = Node::Param(p, piece);
                        nodes.insert(from.clone());
                        if m.accepting[su] {
                            add(&from, Node::End(r), String::new());
                        }
                        for run in &m.runs[su] {
                            if st.committed[run.to as usize].contains(&p) {
                                continue;
                            }
                            let label = self.exit_label(*run);
                            for (to, l) in self.targets(run.to, ctx) {
                                add(&from, to, if l.is_empty() { label.clone() } else { l });
                            }
                        }
                    }
                    // A state expecting one parameter of a machine and not
                    // in it yet: that parameter's bytes from here are its
                    // moves.
                    for &a in &st.args[su] {
                        let ctx = Some(a);
                        let [p] = st.ps_in(s, ctx)[..] else { continue };
                        if !st.committed_in(s, ctx).is_empty() {
                            continue;
                        }
                        let from = Node::Param(p, piece);
                        for run in &m.runs[su] {
                            if !run.bytes().all(is_value_byte)
                                || st.committed[run.to as usize].contains(&p)
                            {
                                continue;
                            }
                            let label = self.exit_label(*run);
                            for (to, l) in self.targets(run.to, ctx) {
                                add(&from, to, if l.is_empty() { label.clone() } else { l });
                            }
                        }
                    }
                }
                _ => {}
            }
        }

        // The name trie: each tool's name from each state where names
        // begin, one edge per token.
        let roots: Vec<u32> = m
            .order
            .iter()
            .copied()
            .filter(|&s| {
                st.class[s as usize] == Class::Name
                    && (m.is_entry(s)
                        || m.preds[s as usize]
                            .iter()
                            .any(|&(p, ..)| st.class[p as usize] != Class::Name))
            })
            .collect();
        let mut trie: BTreeSet<u32> = roots.iter().copied().collect();
        let mut token_edges: BTreeSet<(u32, Node, String, String)> = BTreeSet::new();
        // Per trie node, the first bytes of the tokens drawn from it.
        let mut token_first: HashMap<u32, HashSet<u8>> = HashMap::new();
        let mut splitter = Splitter::new(view, tokenizer);
        let mut unsplit = 0usize;
        for &root in &roots {
            for name in &view.tools {
                let quoted = serde_json::to_string(name).unwrap_or_default();
                let forms = [name.as_bytes(), quoted.as_bytes()];
                let Some(form) = forms.iter().find(|f| view.g.walk(root, f).is_some()) else {
                    continue;
                };
                let pieces = splitter.split(root, form);
                if pieces.iter().any(|p| p.1.is_none()) {
                    unsplit += 1;
                }
                let mut cur = root;
                for (bytes, tok) in pieces {
                    let Some(next) = view.g.walk(cur, &bytes) else {
                        break;
                    };
                    token_first
                        .entry(cur)
                        .or_default()
                        .extend(bytes.first().copied());
                    let (label, tip) = match tok {
                        Some(t) => (view.token(t), format!("token {t}")),
                        None => (
                            self.show_bytes(&bytes),
                            "bytes no single token spells".into(),
                        ),
                    };
                    if st.class[next as usize] == Class::Name {
                        trie.insert(next);
                        token_edges.insert((cur, Node::Trie(next), label, tip));
                    } else {
                        for (t, _) in self.targets(next, None) {
                            token_edges.insert((cur, t, label.clone(), tip.clone()));
                        }
                    }
                    cur = next;
                }
            }
        }
        for &s in &trie {
            let from = Node::Trie(s);
            nodes.insert(from.clone());
            if m.accepting[s as usize] {
                add(&from, Node::End(m.reach[s as usize]), String::new());
            }
            // A name that is a prefix of another ends inside the trie.
            let drawn = token_first.get(&s);
            for run in &m.runs[s as usize] {
                if drawn.is_some_and(|d| run.bytes().all(|b| d.contains(&b))) {
                    continue;
                }
                if st.class[run.to as usize] != Class::Name {
                    let label = match run.single() {
                        Some(b) => self.show_bytes(&[b]),
                        None => byte_set(&by_target(&[*run])[&run.to]),
                    };
                    for (t, l) in self.targets(run.to, None) {
                        add(&from, t, if l.is_empty() { label.clone() } else { l });
                    }
                }
            }
        }

        for (from, to) in edges.keys() {
            nodes.insert(from.clone());
            nodes.insert(to.clone());
        }
        for (_, to, ..) in &token_edges {
            nodes.insert(to.clone());
        }
        let n_edges = edges.len() + token_edges.len();
        if nodes.len() > MAX_DRAWN || n_edges > MAX_DRAWN {
            return Err(Error::new(
                ErrorKind::Limit,
                format!(
                    "the overview would have {} nodes and {n_edges} edges, more than the {MAX_DRAWN} a \
                     drawing is read with; draw one tool's arguments with --tool NAME",
                    nodes.len()
                ),
            ));
        }

        // Edges that go back along a walk from the entries (a loop to
        // the next call) do not rank their target: the drawing reads
        // from left to right.
        let mut succ: BTreeMap<&Node, Vec<&Node>> = BTreeMap::new();
        for (from, to) in edges.keys() {
            succ.entry(from).or_default().push(to);
        }
        let trie_nodes: Vec<(Node, &Node)> = token_edges
            .iter()
            .map(|(from, to, ..)| (Node::Trie(*from), to))
            .collect();
        for (from, to) in &trie_nodes {
            succ.entry(from).or_default().push(to);
        }
        let (back, order) = back_edges(&succ, &nodes);
        // Nodes and edges are written in the order a walk from the entries
        // meets them: Graphviz then lays the first entry's part out first.
        let rank: HashMap<&Node, usize> = order.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let rank_of = |n: &Node| rank.get(n).copied().unwrap_or(usize::MAX);

        let ends: BTreeSet<&Node> = edges
            .keys()
            .filter(|(_, to)| matches!(to, Node::End(_)))
            .map(|(from, _)| from)
            .collect();
        let required = self.required(&nodes);

        // The drawing.
        let mut out = String::new();
        out.push_str("digraph tooldec {\n  rankdir=LR;\n  newrank=true;\n");
        let mut legend = vec![format!(
            "{} format, {} {}, vocabulary {}",
            view.meta_str("/format"),
            view.tools.len(),
            if view.tools.len() == 1 {
                "tool"
            } else {
                "tools"
            },
            view.meta_str("/vocab/label"),
        )];
        legend.push(match tokenizer {
            Some(_) => {
                "tool names: one edge per token, each name split by the tokenizer on its own".into()
            }
            None => {
                "tool names: one edge per token, by longest match over the artifact's token bytes \
                     (not necessarily the tokenizer's split; pass the tokenizer for that)"
                    .into()
            }
        });
        if unsplit > 0 {
            legend.push(format!(
                "{unsplit} name walks have bytes that no token spells from there (shown as bytes)"
            ));
        }
        legend.push(
            "boxes: text the format writes; dashed: free text; ellipses: parameters (dashed: optional)"
                .into(),
        );
        legend.push("double border: the output may end after it (edge to EOS)".into());
        if m.reach_sets.len() > 1 {
            legend.push("parts that different entries reach are drawn apart".into());
        }
        let _ = writeln!(
            out,
            "  graph [fontname=\"Helvetica\", fontsize=10, labelloc=t, labeljust=l, label={}];",
            dot_label_left(&legend)
        );
        out.push_str("  node [fontname=\"Helvetica\", fontsize=11];\n");
        out.push_str("  edge [fontname=\"Courier\", fontsize=10];\n");

        let peripheries = |n: &Node| {
            if ends.contains(n) {
                ", peripheries=2"
            } else {
                ""
            }
        };
        let mut clusters: BTreeMap<(u32, u32), Vec<&Node>> = BTreeMap::new();
        for &node in &order {
            let extra = peripheries(node);
            let id = dot_id(&node.id());
            match node {
                Node::Entry(k) => {
                    let _ = writeln!(
                        out,
                        "  {id} [label={}, shape=box, style=\"rounded,filled\", fillcolor=\"#e8e8e8\"{extra}];",
                        dot_label(&[format!("entry {}", m.entries[*k].0)])
                    );
                }
                Node::Block(s) => {
                    let text = self.block_text(*s);
                    if text.is_empty() {
                        let _ =
                            writeln!(out, "  {id} [label=\"\", shape=point, width=0.1{extra}];");
                    } else {
                        let _ = writeln!(
                            out,
                            "  {id} [label={}, shape=box, fontname=\"Courier\", tooltip={}{extra}];",
                            dot_label(&[self.show_bytes(&text)]),
                            dot_label(&[self.view.describe_state(*s)])
                        );
                    }
                }
                Node::Trie(s) => {
                    if roots.contains(s) {
                        let _ = writeln!(
                            out,
                            "  {id} [label=\"name\", shape=circle, fontsize=9, tooltip=\"where tool names begin\"{extra}];"
                        );
                    } else {
                        let _ =
                            writeln!(out, "  {id} [label=\"\", shape=point, width=0.1{extra}];");
                    }
                }
                Node::Text(t, _) => {
                    let rules: Vec<String> = st.texts[*t as usize]
                        .iter()
                        .map(|&r| match &view.regions[r as usize].tag {
                            Some(Tag::Text { rule }) => format!("`{rule}`"),
                            _ => "?".into(),
                        })
                        .collect();
                    let _ = writeln!(
                        out,
                        "  {id} [label={}, shape=box, style=\"rounded,dashed\"{extra}];",
                        dot_label(&["free text".to_string(), rules.join(", ")])
                    );
                }
                Node::Param(p, r) => {
                    clusters
                        .entry((self.rg.params[*p as usize].args, *r))
                        .or_default()
                        .push(node);
                }
                Node::End(_) => {
                    let _ = writeln!(
                        out,
                        "  {id} [label=\"EOS\", shape=doublecircle, fontsize=9];"
                    );
                }
            }
        }
        if m.entries.len() > 1 {
            let ids: Vec<String> = (0..m.entries.len())
                .map(|k| dot_id(&Node::Entry(k).id()))
                .collect();
            // In entry order from the top (an invisible chain).
            let _ = writeln!(
                out,
                "  {{ rank=source; {}; {} [style=invis]; }}",
                ids.join("; "),
                ids.join(" -> ")
            );
        }
        // The entries that reach each piece, to tell copies apart.
        let mut piece_entries: HashMap<u32, BTreeSet<usize>> = HashMap::new();
        for &s in &m.order {
            if st.class[s as usize] == Class::Args {
                piece_entries
                    .entry(st.piece[s as usize])
                    .or_default()
                    .extend(m.reach_sets[m.reach[s as usize] as usize].iter().copied());
            }
        }
        let copy_label = |a: u32, piece: u32| -> Option<String> {
            let same: Vec<u32> = clusters
                .keys()
                .filter(|(b, _)| *b == a)
                .map(|k| k.1)
                .collect();
            if same.len() < 2 {
                return None;
            }
            let entries = |p: u32| piece_entries.get(&p).cloned().unwrap_or_default();
            let mine = entries(piece);
            let twins: Vec<u32> = same
                .iter()
                .copied()
                .filter(|&p| entries(p) == mine)
                .collect();
            let mut label = m.entries_label(&mine);
            if twins.len() > 1 {
                let k = twins.iter().position(|&p| p == piece).unwrap_or(0) + 1;
                let _ = write!(label, ", copy {k} of {}", twins.len());
            }
            Some(format!("({label})"))
        };
        let mut listed: Vec<(&(u32, u32), &Vec<&Node>)> = clusters.iter().collect();
        listed.sort_by_key(|(_, members)| members.first().map_or(usize::MAX, |n| rank_of(n)));
        for (&(a, r), members) in listed {
            let tools: &[u32] = match &view.regions[a as usize].tag {
                Some(Tag::Args { tools }) => tools,
                _ => &[],
            };
            let mut title = vec![format!("arguments of {}", view.tool_names(tools))];
            if tools.len() > 1 {
                title[0].push_str(" (one shared machine)");
            }
            title.extend(copy_label(a, r));
            let _ = writeln!(
                out,
                "  subgraph {} {{\n    label={};\n    style=\"rounded\";\n    color=\"#999999\";",
                dot_id(&format!("cluster_a{a}_{r}")),
                dot_label(&title)
            );
            for node in members {
                let Node::Param(p, _) = node else { continue };
                let param = &self.rg.params[*p as usize];
                let id = dot_id(&node.id());
                let extra = peripheries(node);
                if param.name.is_empty() {
                    let _ = writeln!(
                        out,
                        "    {id} [label=\"{{}}\\nno parameters\", shape=ellipse{extra}];"
                    );
                    continue;
                }
                let req = required.contains(node);
                let mut second = param.ty.clone();
                if !second.is_empty() {
                    second.push_str(", ");
                }
                second.push_str(if req { "required" } else { "optional" });
                let _ = writeln!(
                    out,
                    "    {id} [label={}, shape=ellipse{}{extra}];",
                    dot_label(&[param.name.clone(), second]),
                    if req { "" } else { ", style=dashed" }
                );
            }
            out.push_str("  }\n");
        }
        let mut lines: Vec<(usize, usize, String)> = Vec::new();
        for ((from, to), labels) in &edges {
            let labels: Vec<&str> = labels
                .iter()
                .map(String::as_str)
                .filter(|l| !l.is_empty())
                .collect();
            let mut line = format!("  {} -> {}", dot_id(&from.id()), dot_id(&to.id()));
            let mut attrs = Vec::new();
            if !labels.is_empty() {
                attrs.push(format!(
                    "label={}",
                    dot_label(&[cut(&labels.join(" | "), LABEL_CHARS)])
                ));
            }
            if back.contains(&(from.clone(), to.clone())) {
                attrs.push("constraint=false".into());
            }
            if !attrs.is_empty() {
                let _ = write!(line, " [{}]", attrs.join(", "));
            }
            line.push_str(";\n");
            lines.push((rank_of(from), rank_of(to), line));
        }
        for (from, to, label, tip) in &token_edges {
            let from = Node::Trie(*from);
            let line = format!(
                "  {} -> {} [label={}, tooltip={}, class=\"token\", color=\"#3060a0\", fontcolor=\"#3060a0\"{}];\n",
                dot_id(&from.id()),
                dot_id(&to.id()),
                dot_label(std::slice::from_ref(label)),
                dot_label(std::slice::from_ref(tip)),
                if back.contains(&(from.clone(), to.clone())) {
                    ", constraint=false"
                } else {
                    ""
                }
            );
            lines.push((rank_of(&from), rank_of(to), line));
        }
        // Stable: equal ranks keep the (deterministic) order above.
        lines.sort_by_key(|l| (l.0, l.1));
        for (_, _, line) in lines {
            out.push_str(&line);
        }
        out.push_str("}\n");
        Ok(out)
    }

    /// The bytes a literal box spells: each state's one byte, the last
    /// one's too when it has one move.
    fn block_text(&self, start: u32) -> Vec<u8> {
        let chain = self
            .blocks
            .list
            .get(&start)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        chain
            .iter()
            .filter_map(|&s| self.m.single_out(s).map(|(b, _)| b))
            .collect()
    }

    /// The parameter nodes every path through their argument machine
    /// passes: with the states in the parameter taken away (and its own
    /// bytes from states that expect it alone), no path from where the
    /// machine is entered leads out of it.
    fn required(&self, nodes: &BTreeSet<Node>) -> BTreeSet<Node> {
        let m = self.m;
        let st = self.st;
        let mut members: BTreeMap<(u32, u32), Vec<u32>> = BTreeMap::new();
        for &s in &m.order {
            if st.class[s as usize] == Class::Args {
                for &a in &st.args[s as usize] {
                    members
                        .entry((a, st.piece[s as usize]))
                        .or_default()
                        .push(s);
                }
            }
        }
        let mut out = BTreeSet::new();
        for node in nodes {
            let Node::Param(p, r) = *node else { continue };
            let a = self.rg.params[p as usize].args;
            let Some(states) = members.get(&(a, r)) else {
                continue;
            };
            let inside: HashSet<u32> = states.iter().copied().collect();
            // Entered from outside every argument machine (a tail that
            // two machines share is entered from the other one too).
            let starts: Vec<u32> = states
                .iter()
                .copied()
                .filter(|&s| {
                    m.is_entry(s)
                        || m.preds[s as usize]
                            .iter()
                            .any(|&(q, ..)| st.class[q as usize] != Class::Args)
                })
                .collect();
            if starts.is_empty() {
                continue;
            }
            // Entered in the parameter itself: every path passes it.
            let starts: Vec<u32> = starts
                .into_iter()
                .filter(|&s| !st.committed[s as usize].contains(&p))
                .collect();
            let mut seen: HashSet<u32> = starts.iter().copied().collect();
            let mut queue: VecDeque<u32> = starts.into_iter().collect();
            let mut leaves = false;
            'bfs: while let Some(u) = queue.pop_front() {
                if m.accepting[u as usize] {
                    leaves = true;
                    break;
                }
                let alone = st.ps_in(u, Some(a)) == [p];
                for run in &m.runs[u as usize] {
                    if alone && run.bytes().all(is_value_byte) {
                        continue;
                    }
                    if !inside.contains(&run.to) {
                        leaves = true;
                        break 'bfs;
                    }
                    if !st.committed[run.to as usize].contains(&p) && seen.insert(run.to) {
                        queue.push_back(run.to);
                    }
                }
            }
            if !leaves {
                out.insert(node.clone());
            }
        }
        out
    }

    /// One tool's argument machine, state by state.
    fn expanded(&self, name: &str, param: Option<&str>) -> Result<String, Error> {
        let view = self.view;
        let m = self.m;
        let st = self.st;
        let idx = view
            .tools
            .iter()
            .position(|t| t == name)
            .unwrap_or(usize::MAX) as u32;
        let mine: Vec<u32> = (0..view.regions.len() as u32)
            .filter(|&r| {
                matches!(&view.regions[r as usize].tag, Some(Tag::Args { tools }) if tools.contains(&idx))
            })
            .collect();
        if mine.is_empty() {
            return Err(Error::new(
                ErrorKind::Artifact,
                format!("tool `{name}` has no argument machine in this artifact's region table"),
            ));
        }
        let all: Vec<u32> = m
            .order
            .iter()
            .copied()
            .filter(|&s| {
                st.class[s as usize] == Class::Args
                    && st.args[s as usize].iter().any(|a| mine.contains(a))
            })
            .collect();
        // Where what follows the arguments differs (one call, or one of
        // several; per entry), the machine has copies, equal inside: the
        // first that the first entry reaches is drawn.
        let entries_of = |s: u32| &m.reach_sets[m.reach[s as usize] as usize];
        let chosen_piece = all
            .iter()
            .map(|&s| {
                (
                    entries_of(s).first().copied().unwrap_or(usize::MAX),
                    st.piece[s as usize],
                )
            })
            .min()
            .map_or(0, |(_, p)| p);
        let (set, rest): (Vec<u32>, Vec<u32>) = all
            .iter()
            .partition(|&&s| st.piece[s as usize] == chosen_piece);
        let mut set: BTreeSet<u32> = set.into_iter().collect();
        let others: BTreeSet<usize> = rest
            .iter()
            .flat_map(|&s| entries_of(s).iter().copied())
            .collect();
        let other_pieces: BTreeSet<u32> = rest.iter().map(|&s| st.piece[s as usize]).collect();
        // The tool's top-level parameters, in the order the schema's
        // regions list them.
        let params: Vec<u32> = (0..self.rg.params.len() as u32)
            .filter(|&p| {
                let p = &self.rg.params[p as usize];
                mine.contains(&p.args) && !p.name.is_empty()
            })
            .collect();
        let param_list = || {
            // Regions are numbered as the NFA is built, right to left:
            // reversed, the parameters come in declared order.
            let mut names: Vec<String> = params
                .iter()
                .rev()
                .map(|&p| format!("`{name}.{}`", self.rg.params[p as usize].name))
                .collect();
            names.dedup();
            names.join(", ")
        };
        let what = match param {
            None => format!("the arguments of `{name}`"),
            Some(pn) => {
                let chosen: Vec<u32> = params
                    .iter()
                    .copied()
                    .filter(|&p| self.rg.params[p as usize].name == pn)
                    .collect();
                if chosen.is_empty() {
                    return Err(Error::new(
                        ErrorKind::Usage,
                        format!(
                            "tool `{name}` has no parameter `{pn}`; its parameters: {}",
                            param_list()
                        ),
                    ));
                }
                set.retain(|&s| st.ps[s as usize].iter().any(|p| chosen.contains(p)));
                format!("parameter `{pn}` of `{name}`")
            }
        };
        let too_large = |edges: usize| {
            Error::new(
                ErrorKind::Limit,
                format!(
                    "{what}: {} states and {edges} edges, more than the {MAX_STATE_EDGES} edges a \
                     state-by-state drawing is read (and laid out) with{}",
                    set.len(),
                    if param.is_none() && !params.is_empty() {
                        format!("; draw one parameter at a time: --tool {}", param_list())
                    } else {
                        String::new()
                    }
                ),
            )
        };
        if set.len() > MAX_STATE_EDGES {
            return Err(too_large(
                set.iter()
                    .map(|&s| by_target(&m.runs[s as usize]).len())
                    .sum(),
            ));
        }

        // Clusters: per argument machine, per parameter.
        type Cluster = (BTreeMap<u32, Vec<u32>>, Vec<u32>);
        let mut clusters: BTreeMap<u32, Cluster> = BTreeMap::new();
        for &s in &set {
            let su = s as usize;
            let a = *st.args[su]
                .iter()
                .find(|a| mine.contains(a))
                .unwrap_or(&mine[0]);
            let c = clusters.entry(a).or_default();
            match st.ps_in(s, Some(a))[..] {
                [p] if !self.rg.params[p as usize].name.is_empty() => {
                    c.0.entry(p).or_default().push(s)
                }
                _ => c.1.push(s),
            }
        }

        // Edges inside, out to what follows, in from what precedes.
        let mut outside: Vec<(String, String)> = Vec::new(); // (id, label)
        let mut outside_ids: HashMap<String, String> = HashMap::new();
        let mut node_for =
            |kind: &str, label: String, outside: &mut Vec<(String, String)>| -> String {
                let key = format!("{kind}\u{0}{label}");
                outside_ids
                    .entry(key)
                    .or_insert_with(|| {
                        let id = format!("{kind}{}", outside.len());
                        outside.push((id.clone(), label));
                        id
                    })
                    .clone()
            };
        let mut edges: BTreeMap<(String, String), [bool; 256]> = BTreeMap::new();
        let mut order_keys: Vec<(String, String)> = Vec::new();
        let mut add = |from: String, to: String, run: Option<Run>| {
            let key = (from, to);
            let e = edges.entry(key.clone()).or_insert_with(|| {
                order_keys.push(key);
                [false; 256]
            });
            for b in run.into_iter().flat_map(Run::bytes) {
                e[b as usize] = true;
            }
        };
        for &u in &set {
            for run in &m.runs[u as usize] {
                let to = if set.contains(&run.to) {
                    format!("s{}", run.to)
                } else {
                    node_for("after", self.describe_after(run.to), &mut outside)
                };
                add(format!("s{u}"), to, Some(*run));
            }
        }
        for &v in &set {
            if m.is_entry(v) {
                let names: Vec<&str> = m
                    .entries
                    .iter()
                    .filter(|e| e.1 == v)
                    .map(|e| e.0.as_str())
                    .collect();
                let id = node_for(
                    "before",
                    format!("entry {}", names.join(", ")),
                    &mut outside,
                );
                add(id, format!("s{v}"), None);
            }
            for &(p, lo, hi) in &m.preds[v as usize] {
                if !set.contains(&p) {
                    let id = node_for("before", self.describe_before(p), &mut outside);
                    add(id, format!("s{v}"), Some(Run { lo, hi, to: v }));
                }
            }
        }
        if edges.len() > MAX_STATE_EDGES {
            return Err(too_large(edges.len()));
        }

        let mut out = String::new();
        out.push_str("digraph tooldec {\n  rankdir=LR;\n  newrank=true;\n");
        let mut legend = vec![format!(
            "{what}, state by state ({} format, vocabulary {})",
            view.meta_str("/format"),
            view.meta_str("/vocab/label")
        )];
        legend.push("circles: DFA states (their numbers); double circle: accepting; edges: the bytes they read".into());
        legend.push(format!("boxes: what comes before and after {what}"));
        if !other_pieces.is_empty() {
            let drawn: BTreeSet<usize> = set
                .iter()
                .flat_map(|&s| entries_of(s).iter().copied())
                .collect();
            legend.push(format!(
                "drawn: the copy reached from {}; not drawn: {} more {} reached from {} ({} states)",
                m.entries_label(&drawn),
                other_pieces.len(),
                if other_pieces.len() == 1 { "copy" } else { "copies" },
                m.entries_label(&others),
                rest.len()
            ));
        }
        let _ = writeln!(
            out,
            "  graph [fontname=\"Helvetica\", fontsize=10, labelloc=t, labeljust=l, label={}];",
            dot_label_left(&legend)
        );
        out.push_str("  node [fontname=\"Helvetica\", fontsize=10, shape=circle];\n");
        out.push_str("  edge [fontname=\"Courier\", fontsize=9];\n");
        for (id, label) in &outside {
            let _ = writeln!(
                out,
                "  {} [label={}, shape=box, style=\"rounded,dotted\", fontname=\"Courier\"];",
                dot_id(id),
                dot_label(std::slice::from_ref(label))
            );
        }
        let state = |s: u32| -> String {
            format!(
                "{} [label=\"{s}\"{}, tooltip={}]",
                dot_id(&format!("s{s}")),
                if m.accepting[s as usize] {
                    ", shape=doublecircle"
                } else {
                    ""
                },
                dot_label(&[view.describe_state(s)])
            )
        };
        for (&a, (params, glue)) in &clusters {
            let tools: &[u32] = match &view.regions[a as usize].tag {
                Some(Tag::Args { tools }) => tools,
                _ => &[],
            };
            let mut title = vec![format!("arguments of {}", view.tool_names(tools))];
            if tools.len() > 1 {
                title.push(format!(
                    "one machine shared by {} tools with equal schemas",
                    tools.len()
                ));
            }
            let _ = writeln!(
                out,
                "  subgraph {} {{\n    label={};\n    style=\"rounded\";\n    color=\"#999999\";",
                dot_id(&format!("cluster_a{a}")),
                dot_label(&title)
            );
            for &s in glue {
                let _ = writeln!(out, "    {};", state(s));
            }
            for (&p, states) in params {
                let param = &self.rg.params[p as usize];
                let mut title = param.name.clone();
                if !param.ty.is_empty() {
                    let _ = write!(title, " ({})", param.ty);
                }
                let _ = writeln!(
                    out,
                    "    subgraph {} {{\n      label={};\n      style=\"rounded,dashed\";\n      color=\"#bbbbbb\";",
                    dot_id(&format!("cluster_a{a}_p{p}")),
                    dot_label(&[title])
                );
                for &s in states {
                    let _ = writeln!(out, "      {};", state(s));
                }
                out.push_str("    }\n");
            }
            out.push_str("  }\n");
        }
        let key_order: BTreeMap<&(String, String), usize> =
            order_keys.iter().enumerate().map(|(i, k)| (k, i)).collect();
        let mut listed: Vec<(&(String, String), &[bool; 256])> = edges.iter().collect();
        listed.sort_by_key(|(k, _)| key_order.get(k).copied().unwrap_or(usize::MAX));
        for ((from, to), set) in listed {
            let label = byte_set(set);
            let _ = write!(out, "  {} -> {}", dot_id(from), dot_id(to));
            if !label.is_empty() {
                let _ = write!(out, " [label={}]", dot_label(&[label]));
            }
            out.push_str(";\n");
        }
        out.push_str("}\n");
        Ok(out)
    }

    /// What a state outside an argument machine that the machine leads to
    /// is, in a few words.
    fn describe_after(&self, x: u32) -> String {
        let xu = x as usize;
        let what = match self.st.class[xu] {
            Class::End => return "end of output (EOS)".into(),
            Class::Lit => {
                let text = self.block_text(self.blocks.of[xu]);
                if text.is_empty() {
                    self.view.describe_state(x)
                } else {
                    self.show_bytes(&text)
                }
            }
            Class::Name => "a tool name".into(),
            _ => self.view.describe_state(x),
        };
        if self.m.accepting[xu] {
            format!("{what} (or EOS)")
        } else {
            what
        }
    }

    /// What a state outside an argument machine that leads into it is.
    fn describe_before(&self, p: u32) -> String {
        let pu = p as usize;
        match self.st.class[pu] {
            Class::Lit => {
                // The literal up to `p` (the edge shows `p`'s own bytes).
                let chain = self
                    .blocks
                    .list
                    .get(&self.blocks.of[pu])
                    .map(Vec::as_slice)
                    .unwrap_or(&[]);
                let text: Vec<u8> = chain
                    .iter()
                    .take_while(|&&s| s != p)
                    .filter_map(|&s| self.m.single_out(s).map(|(b, _)| b))
                    .collect();
                if text.is_empty() {
                    self.view.describe_state(p)
                } else {
                    self.show_bytes(&text)
                }
            }
            Class::Name => "a tool name".into(),
            _ => self.view.describe_state(p),
        }
    }
}

/// Splits a tool name into the tokens a model would write it with.
struct Splitter<'a, 'v, 'g> {
    view: &'v View<'g>,
    tokenizer: Option<&'a Tokenizer>,
    /// The artifact's tokens by their bytes (built on first use).
    by_bytes: Option<(HashMap<&'g [u8], u32>, usize)>,
}

impl<'a, 'v, 'g> Splitter<'a, 'v, 'g> {
    fn new(view: &'v View<'g>, tokenizer: Option<&'a Tokenizer>) -> Self {
        Splitter {
            view,
            tokenizer,
            by_bytes: None,
        }
    }

    /// `form`'s pieces from `start`, each a token (or bytes no token
    /// spells), every one walking on from where the previous ended.
    fn split(&mut self, start: u32, form: &[u8]) -> Vec<(Vec<u8>, Option<u32>)> {
        let g = &self.view.g;
        if let (Some(tok), Ok(text)) = (self.tokenizer, std::str::from_utf8(form)) {
            if let Ok(ids) = tok.encode(text) {
                let mut cur = Some(start);
                let mut pieces = Vec::new();
                for &t in &ids {
                    let bytes = g.token_bytes(t).unwrap_or(&[]);
                    cur = cur.and_then(|s| {
                        if bytes.is_empty() {
                            None
                        } else {
                            g.walk(s, bytes)
                        }
                    });
                    pieces.push((bytes.to_vec(), Some(t)));
                }
                if cur.is_some()
                    && pieces
                        .iter()
                        .flat_map(|p| p.0.iter().copied())
                        .eq(form.iter().copied())
                {
                    return pieces;
                }
            }
        }
        let (map, longest) = self.by_bytes.get_or_insert_with(|| {
            let mut map: HashMap<&'g [u8], u32> = HashMap::new();
            let mut longest = 0;
            for t in 0..g.token_count() as u32 {
                if let Some(b) = g.token_bytes(t) {
                    if b.first() != Some(&SPECIAL) {
                        longest = longest.max(b.len());
                        map.entry(b).or_insert(t);
                    }
                }
            }
            (map, longest)
        });
        let mut pieces = Vec::new();
        let mut cur = start;
        let mut i = 0;
        while i < form.len() {
            let rest = &form[i..];
            let found = (1..=rest.len().min(*longest)).rev().find_map(|l| {
                let t = *map.get(&rest[..l])?;
                Some((l, t, g.walk(cur, &rest[..l])?))
            });
            match found {
                Some((l, t, next)) => {
                    pieces.push((rest[..l].to_vec(), Some(t)));
                    cur = next;
                    i += l;
                }
                None => {
                    // No token spells the rest from here: its bytes.
                    pieces.push((rest.to_vec(), None));
                    break;
                }
            }
        }
        pieces
    }
}

/// The edges a depth-first walk from the entries (then from any node not
/// reached yet, in node order) finds going back to a node on its path.
/// Also returns every node in the order the walk meets them.
fn back_edges<'n>(
    succ: &BTreeMap<&'n Node, Vec<&'n Node>>,
    nodes: &'n BTreeSet<Node>,
) -> (HashSet<(Node, Node)>, Vec<&'n Node>) {
    let mut back = HashSet::new();
    let mut order: Vec<&Node> = Vec::new();
    // 0: not seen, 1: on the path, 2: done.
    let mut mark: HashMap<&Node, u8> = HashMap::new();
    let empty: Vec<&Node> = Vec::new();
    let roots = nodes
        .iter()
        .filter(|n| matches!(n, Node::Entry(_)))
        .chain(nodes.iter());
    for root in roots {
        if mark.get(root).copied().unwrap_or(0) != 0 {
            continue;
        }
        mark.insert(root, 1);
        order.push(root);
        let mut stack: Vec<(&Node, usize)> = vec![(root, 0)];
        while let Some(top) = stack.last_mut() {
            let (node, i) = *top;
            let next = succ.get(node).unwrap_or(&empty);
            if i == next.len() {
                mark.insert(node, 2);
                stack.pop();
                continue;
            }
            top.1 += 1;
            let to = next[i];
            match mark.get(to).copied().unwrap_or(0) {
                0 => {
                    mark.insert(to, 1);
                    order.push(to);
                    stack.push((to, 0));
                }
                1 => {
                    back.insert((node.clone(), to.clone()));
                }
                _ => {}
            }
        }
    }
    (back, order)
}

/// The runs of a state grouped by target, as byte sets, in target order.
fn by_target(runs: &[Run]) -> BTreeMap<u32, [bool; 256]> {
    let mut out: BTreeMap<u32, [bool; 256]> = BTreeMap::new();
    for r in runs {
        let set = out.entry(r.to).or_insert([false; 256]);
        for b in r.bytes() {
            set[b as usize] = true;
        }
    }
    out
}

/// One byte as an edge label shows it.
fn show_byte(b: u8) -> String {
    match b {
        b' ' => "' '".into(),
        b'\t' => "\\t".into(),
        b'\n' => "\\n".into(),
        b'\r' => "\\r".into(),
        0x21..=0x7E => (b as char).to_string(),
        _ => format!("\\x{b:02x}"),
    }
}

/// Sorted bytes as ranges: `a-z 0-9 _`.
fn ranges(bytes: &[u8]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let mut j = i;
        while j + 1 < bytes.len() && bytes[j + 1] == bytes[j] + 1 {
            j += 1;
        }
        match j - i {
            0 => parts.push(show_byte(bytes[i])),
            1 => {
                parts.push(show_byte(bytes[i]));
                parts.push(show_byte(bytes[j]));
            }
            _ => parts.push(format!("{}-{}", show_byte(bytes[i]), show_byte(bytes[j]))),
        }
        i = j + 1;
    }
    parts.join(" ")
}

/// A set of bytes, compactly: ranges, or "ASCII but ..." for most of
/// ASCII; bytes above ASCII (UTF-8 lead and continuation bytes) in hex.
fn byte_set(set: &[bool; 256]) -> String {
    let ascii: Vec<u8> = (0..128u8).filter(|&b| set[b as usize]).collect();
    let high: Vec<u8> = (128..=255u8).filter(|&b| set[b as usize]).collect();
    let mut parts = Vec::new();
    if ascii.len() > 64 {
        let rest: Vec<u8> = (0..128u8).filter(|&b| !set[b as usize]).collect();
        parts.push(if rest.is_empty() {
            "any ASCII".to_string()
        } else {
            format!("ASCII but {}", ranges(&rest))
        });
    } else if !ascii.is_empty() {
        parts.push(ranges(&ascii));
    }
    if !high.is_empty() {
        parts.push(ranges(&high));
    }
    parts.join(" ")
}

/// `s` cut to `max` characters, with an ellipsis when cut.
fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Text escaped for a DOT quoted string: `\` and `"` (and a newline, as a
/// line break).
fn dot_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// A quoted DOT ID.
fn dot_id(s: &str) -> String {
    format!("\"{}\"", dot_escape(s))
}

/// A quoted label of centred lines.
fn dot_label(lines: &[String]) -> String {
    let lines: Vec<String> = lines.iter().map(|l| dot_escape(l)).collect();
    format!("\"{}\"", lines.join("\\n"))
}

/// A quoted label of left-justified lines.
fn dot_label_left(lines: &[String]) -> String {
    let mut out = String::from("\"");
    for l in lines {
        out.push_str(&dot_escape(l));
        out.push_str("\\l");
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sets_read_compactly() {
        let mut set = [false; 256];
        for b in b'a'..=b'z' {
            set[b as usize] = true;
        }
        set[b'_' as usize] = true;
        set[b' ' as usize] = true;
        assert_eq!(byte_set(&set), "' ' _ a-z");
        let mut set = [true; 256];
        set[b'"' as usize] = false;
        set[b'\\' as usize] = false;
        for b in set.iter_mut().take(0x20) {
            *b = false;
        }
        assert_eq!(byte_set(&set), "ASCII but \\x00-\\x1f \" \\ \\x80-\\xff");
    }

    #[test]
    fn labels_escape_quotes_and_backslashes() {
        assert_eq!(
            dot_label(&["{\"a\": \\n".into(), "x".into()]),
            "\"{\\\"a\\\": \\\\n\\nx\""
        );
        assert_eq!(cut("abcdef", 4), "abc…");
    }
}
