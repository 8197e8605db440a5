//! The format's rules as a small program, and a backtracking run over an
//! output's bytes that records the tool parts it passes.
//!
//! Each instruction either moves on at one place, or offers several
//! places where it may end (a tool name that is a prefix of another, free
//! text, positional values); the run tries them in order and backtracks.
//! A failed (instruction, position, tool) is remembered and never tried
//! again, so the work is bounded by the program's length times the
//! output's length times the tools met, and a step bound on top of that
//! returns an error instead of running long.

use std::collections::{HashMap, HashSet};

use regex_automata::dfa::{dense, Automaton};
use regex_automata::{Anchored, Input};
use serde_json::{Map, Value};
use tooldec_runtime::layout::reserved;

use crate::table::{Node, Table, Xml};
use crate::values;

/// Most instructions a format may compile to.
const MAX_PROGRAM: usize = 200_000;

/// How an XML value is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XmlMode {
    /// After MID_STRING of the four-argument form: a raw string.
    Raw,
    /// After MID_OTHER of the four-argument form: JSON.
    Json,
    /// The three-argument form: typed by the parameter's kinds.
    Either,
}

#[derive(Debug, Clone)]
enum Inst {
    Bytes(Vec<u8>),
    Regex(usize),
    /// Free text: its triggers, as bytes.
    Text(Vec<Vec<u8>>),
    Split(usize, usize),
    Jmp(usize),
    ToolStart,
    ToolEnd,
    Name,
    NameJson,
    Args,
    Positional,
    Python,
    Gemma(Vec<u8>),
    XmlKey,
    /// An XML value: how it is read and what ends a raw one (CLOSE's tag
    /// as text, and its marker when it is a special token).
    XmlValue(XmlMode, Vec<Vec<u8>>),
    Match,
}

/// What a run passed, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A tool block began.
    Start,
    /// Its tool.
    Tool(usize),
    /// Arguments as an object.
    Object(Map<String, Value>),
    /// Arguments by position.
    Positional(Vec<Value>),
    /// An XML parameter's key.
    XmlKey(String),
    /// An XML parameter's value as written: its bytes' range.
    XmlValue(usize, usize, XmlMode),
    /// The tool block ended.
    End,
}

/// A compiled format: one program per entry rule, sharing nothing.
pub struct Program {
    insts: Vec<Inst>,
    starts: HashMap<String, usize>,
    regexes: Vec<dense::DFA<Vec<u32>>>,
    /// Tool names (bytes) and their index.
    names: Vec<Vec<u8>>,
    by_name: HashMap<String, usize>,
    /// Each tool's parameter names.
    params: Vec<Vec<String>>,
    all_params: Vec<String>,
    /// Every special token's marker and name, for turning text into bytes.
    pub specials: Vec<(Vec<u8>, String)>,
}

/// Why a run did not read the output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    /// No parse: the rules do not describe these bytes.
    NoParse,
    /// The step bound was reached.
    Limit(usize),
}

fn marker(id: u32) -> Vec<u8> {
    reserved::special_marker(id)
        .map(|m| m.to_vec())
        .unwrap_or_default()
}

struct Compiler<'a> {
    table: &'a Table,
    insts: Vec<Inst>,
    regexes: Vec<dense::DFA<Vec<u32>>>,
    regex_ids: HashMap<String, usize>,
    specials: Vec<(Vec<u8>, String)>,
    depth: usize,
}

impl Compiler<'_> {
    fn push(&mut self, i: Inst) -> Result<usize, String> {
        if self.insts.len() >= MAX_PROGRAM {
            return Err(format!(
                "the format compiles to more than {MAX_PROGRAM} instructions"
            ));
        }
        self.insts.push(i);
        Ok(self.insts.len() - 1)
    }

    fn regex(&mut self, src: &str) -> Result<usize, String> {
        if let Some(&i) = self.regex_ids.get(src) {
            return Ok(i);
        }
        let dfa = dense::Builder::new()
            .configure(dense::Config::new().start_kind(regex_automata::dfa::StartKind::Anchored))
            .build(src)
            .map_err(|e| format!("the format's terminal {src:?}: {e}"))?;
        self.regexes.push(dfa);
        self.regex_ids
            .insert(src.to_string(), self.regexes.len() - 1);
        Ok(self.regexes.len() - 1)
    }

    fn trigger(&mut self, n: &Node, out: &mut Vec<Vec<u8>>) -> Result<(), String> {
        match n {
            Node::Lit(s) => out.push(s.as_bytes().to_vec()),
            Node::Special(id, name) => {
                out.push(marker(*id));
                out.push(name.as_bytes().to_vec());
                self.specials.push((marker(*id), name.clone()));
            }
            _ => return Err("text_except takes strings and tokens only".into()),
        }
        Ok(())
    }

    fn node(&mut self, n: &Node) -> Result<(), String> {
        self.depth += 1;
        if self.depth > 200 {
            return Err("the format's rules nest too deeply (recursive?)".into());
        }
        let r = self.node_inner(n);
        self.depth -= 1;
        r
    }

    fn node_inner(&mut self, n: &Node) -> Result<(), String> {
        match n {
            Node::Lit(s) => {
                if !s.is_empty() {
                    self.push(Inst::Bytes(s.as_bytes().to_vec()))?;
                }
            }
            Node::Class(s) | Node::Regex(s) => {
                let i = self.regex(s)?;
                self.push(Inst::Regex(i))?;
            }
            Node::Special(id, name) => {
                self.specials.push((marker(*id), name.clone()));
                self.push(Inst::Bytes(marker(*id)))?;
            }
            Node::Text(triggers) => {
                let mut t = Vec::new();
                for x in triggers {
                    self.trigger(x, &mut t)?;
                }
                self.push(Inst::Text(t))?;
            }
            Node::Tool(body) => {
                self.push(Inst::ToolStart)?;
                self.node(body)?;
                self.push(Inst::ToolEnd)?;
            }
            Node::Name => {
                self.push(Inst::Name)?;
            }
            Node::NameJson => {
                self.push(Inst::NameJson)?;
            }
            Node::Args => {
                self.push(Inst::Args)?;
            }
            Node::ArgsPositional => {
                self.push(Inst::Positional)?;
            }
            Node::ArgsPython => {
                self.push(Inst::Python)?;
            }
            Node::ArgsGemma(q) => {
                let quote = match &**q {
                    Node::Special(id, name) => {
                        self.specials.push((marker(*id), name.clone()));
                        marker(*id)
                    }
                    Node::Lit(s) => s.as_bytes().to_vec(),
                    _ => return Err("args_gemma's quote is a string or a token".into()),
                };
                self.push(Inst::Gemma(quote))?;
            }
            Node::ArgsXml(x) => self.xml(x)?,
            Node::Ref(name) => {
                let body = &self
                    .table
                    .rules
                    .iter()
                    .find(|r| &r.name == name)
                    .ok_or_else(|| format!("unknown rule {name:?}"))?
                    .body;
                self.node(body)?;
            }
            Node::Seq(v) => {
                for x in v {
                    self.node(x)?;
                }
            }
            Node::Alt(v) => {
                // split L1, next; L1: a; jmp end; next: split L2, ...
                let mut jumps = Vec::new();
                for (k, x) in v.iter().enumerate() {
                    if k + 1 == v.len() {
                        self.node(x)?;
                    } else {
                        let split = self.push(Inst::Split(0, 0))?;
                        self.node(x)?;
                        jumps.push(self.push(Inst::Jmp(0))?);
                        let next = self.insts.len();
                        self.insts[split] = Inst::Split(split + 1, next);
                    }
                }
                let end = self.insts.len();
                for j in jumps {
                    self.insts[j] = Inst::Jmp(end);
                }
            }
            Node::Repeat(x, min, max) => {
                for _ in 0..*min {
                    self.node(x)?;
                }
                match max {
                    None => {
                        // L: split body, end; body; jmp L
                        let l = self.push(Inst::Split(0, 0))?;
                        self.node(x)?;
                        self.push(Inst::Jmp(l))?;
                        let end = self.insts.len();
                        self.insts[l] = Inst::Split(l + 1, end);
                    }
                    Some(max) => {
                        let mut splits = Vec::new();
                        for _ in *min..*max {
                            splits.push(self.push(Inst::Split(0, 0))?);
                            self.node(x)?;
                        }
                        let end = self.insts.len();
                        for s in splits {
                            self.insts[s] = Inst::Split(s + 1, end);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// `(OPEN key (MID_S raw | MID_O json) CLOSE)*`.
    fn xml(&mut self, x: &Xml) -> Result<(), String> {
        let mut stop = vec![x.stop.as_bytes().to_vec()];
        fn markers(n: &Node, name: &str, out: &mut Vec<Vec<u8>>) {
            match n {
                Node::Special(id, s) if s == name => out.push(marker(*id)),
                Node::Seq(v) | Node::Alt(v) => v.iter().for_each(|x| markers(x, name, out)),
                _ => {}
            }
        }
        markers(&x.close, &x.stop, &mut stop);
        let l = self.push(Inst::Split(0, 0))?;
        self.node(&x.open)?;
        self.push(Inst::XmlKey)?;
        if x.mid_string == x.mid_other {
            self.node(&x.mid_string)?;
            self.push(Inst::XmlValue(XmlMode::Either, stop))?;
        } else {
            let split = self.push(Inst::Split(0, 0))?;
            self.node(&x.mid_string)?;
            self.push(Inst::XmlValue(XmlMode::Raw, stop.clone()))?;
            let jmp = self.push(Inst::Jmp(0))?;
            let other = self.insts.len();
            self.insts[split] = Inst::Split(split + 1, other);
            self.node(&x.mid_other)?;
            self.push(Inst::XmlValue(XmlMode::Json, stop))?;
            let after = self.insts.len();
            self.insts[jmp] = Inst::Jmp(after);
        }
        self.node(&x.close)?;
        self.push(Inst::Jmp(l))?;
        let end = self.insts.len();
        self.insts[l] = Inst::Split(l + 1, end);
        Ok(())
    }
}

/// One way to go on from an instruction: the position after it and what
/// it read.
type Next = (usize, Option<Event>, Option<usize>);

struct Job {
    pc: usize,
    pos: usize,
    tool: Option<usize>,
    log: usize,
    event: Option<Event>,
}

impl Program {
    /// Compiles `table`'s rules for the tools `names`, one start per entry.
    pub fn new(table: &Table, names: &[String], entries: &[String]) -> Result<Program, String> {
        let mut c = Compiler {
            table,
            insts: Vec::new(),
            regexes: Vec::new(),
            regex_ids: HashMap::new(),
            specials: Vec::new(),
            depth: 0,
        };
        let mut starts = HashMap::new();
        for e in entries {
            if !table.rules.iter().any(|r| &r.name == e) {
                return Err(format!("the entry {e:?} is not a rule of the format"));
            }
            let start = c.insts.len();
            if table.leading_space {
                c.node(&Node::Repeat(Box::new(Node::Lit(" ".into())), 0, Some(1)))?;
            }
            c.node(&Node::Ref(e.clone()))?;
            c.push(Inst::Match)?;
            starts.insert(e.clone(), start);
        }
        let mut specials = c.specials;
        specials.sort();
        specials.dedup();
        // Longest names first, so a name is never read as its prefix.
        specials.sort_by_key(|s| std::cmp::Reverse(s.1.len()));
        let params: Vec<Vec<String>> = (0..names.len())
            .map(|i| {
                table
                    .params
                    .get(i)
                    .map(|ps| ps.iter().map(|p| p.name.clone()).collect())
                    .unwrap_or_default()
            })
            .collect();
        let mut all_params: Vec<String> = params.iter().flatten().cloned().collect();
        all_params.sort();
        all_params.dedup();
        Ok(Program {
            insts: c.insts,
            starts,
            regexes: c.regexes,
            names: names.iter().map(|n| n.as_bytes().to_vec()).collect(),
            by_name: names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), i))
                .collect(),
            params,
            all_params,
            specials,
        })
    }

    /// Reads `input` from entry `entry`: the events of the first parse.
    pub fn run(&self, entry: &str, input: &[u8], max_steps: usize) -> Result<Vec<Event>, RunError> {
        let Some(&start) = self.starts.get(entry) else {
            return Err(RunError::NoParse);
        };
        let mut seen: HashSet<(usize, usize, usize)> = HashSet::new();
        let mut log: Vec<Event> = Vec::new();
        let mut stack = vec![Job {
            pc: start,
            pos: 0,
            tool: None,
            log: 0,
            event: None,
        }];
        let mut steps = 0usize;
        while let Some(job) = stack.pop() {
            log.truncate(job.log);
            log.extend(job.event);
            let (mut pc, mut pos, mut tool) = (job.pc, job.pos, job.tool);
            loop {
                steps += 1;
                if steps > max_steps {
                    return Err(RunError::Limit(max_steps));
                }
                if !seen.insert((pc, pos, tool.map_or(0, |t| t + 1))) {
                    break;
                }
                let nexts: Vec<Next> = match &self.insts[pc] {
                    Inst::Match if pos == input.len() => return Ok(log),
                    Inst::Match => break,
                    Inst::Bytes(b) => {
                        if input[pos..].starts_with(b) {
                            pos += b.len();
                            pc += 1;
                            continue;
                        }
                        break;
                    }
                    Inst::Jmp(t) => {
                        pc = *t;
                        continue;
                    }
                    Inst::Split(a, b) => {
                        stack.push(Job {
                            pc: *b,
                            pos,
                            tool,
                            log: log.len(),
                            event: None,
                        });
                        pc = *a;
                        continue;
                    }
                    Inst::ToolStart => {
                        log.push(Event::Start);
                        tool = None;
                        pc += 1;
                        continue;
                    }
                    Inst::ToolEnd => {
                        log.push(Event::End);
                        tool = None;
                        pc += 1;
                        continue;
                    }
                    Inst::Regex(i) => self
                        .regex_ends(*i, input, pos)
                        .into_iter()
                        .rev()
                        .map(|e| (e, None, tool))
                        .collect(),
                    Inst::Text(triggers) => text_ends(input, pos, triggers)
                        .map(|e| (e, None, tool))
                        .collect(),
                    Inst::Name => self.names_at(input, pos, tool),
                    Inst::NameJson => self.name_json_at(input, pos, tool),
                    Inst::Args => match values::json_value(input, pos) {
                        Some((Value::Object(m), e)) => vec![(e, Some(Event::Object(m)), tool)],
                        _ => break,
                    },
                    Inst::Positional => values::positional(input, pos)
                        .into_iter()
                        .rev()
                        .map(|(v, e)| (e, Some(Event::Positional(v)), tool))
                        .collect(),
                    Inst::Python => values::Python::new(input)
                        .kwargs(pos)
                        .into_iter()
                        .rev()
                        .map(|(m, e)| (e, Some(Event::Object(m)), tool))
                        .collect(),
                    Inst::Gemma(quote) => match values::Gemma::new(input, quote).object(pos, 0) {
                        Some((Value::Object(m), e)) => vec![(e, Some(Event::Object(m)), tool)],
                        _ => break,
                    },
                    Inst::XmlKey => self.xml_keys(input, pos, tool),
                    Inst::XmlValue(mode, stop) => xml_values(input, pos, *mode, stop)
                        .into_iter()
                        .map(|(e, ev)| (e, Some(ev), tool))
                        .collect(),
                };
                steps += nexts.len();
                // The first way goes on here; the others wait on the stack,
                // the second on top.
                let mut it = nexts.into_iter();
                let Some(first) = it.next() else { break };
                let rest: Vec<Next> = it.collect();
                for (e, ev, t) in rest.into_iter().rev() {
                    stack.push(Job {
                        pc: pc + 1,
                        pos: e,
                        tool: t,
                        log: log.len(),
                        event: ev,
                    });
                }
                let (e, ev, t) = first;
                log.extend(ev);
                pos = e;
                tool = t;
                pc += 1;
            }
        }
        Err(RunError::NoParse)
    }

    /// Every end of regex `i` matched from `pos`, shortest first.
    fn regex_ends(&self, i: usize, input: &[u8], pos: usize) -> Vec<usize> {
        let dfa = &self.regexes[i];
        let mut ends = Vec::new();
        let start = Input::new(input).range(pos..).anchored(Anchored::Yes);
        let Ok(mut s) = dfa.start_state_forward(&start) else {
            return ends;
        };
        let mut j = pos;
        loop {
            if dfa.is_match_state(dfa.next_eoi_state(s)) {
                ends.push(j);
            }
            if j == input.len() {
                break;
            }
            s = dfa.next_state(s, input[j]);
            if dfa.is_dead_state(s) || dfa.is_quit_state(s) {
                break;
            }
            j += 1;
        }
        ends
    }

    fn names_at(&self, input: &[u8], pos: usize, tool: Option<usize>) -> Vec<Next> {
        let rest = &input[pos..];
        let mut out: Vec<Next> = self
            .names
            .iter()
            .enumerate()
            .filter(|(i, n)| tool.is_none_or(|t| t == *i) && rest.starts_with(n))
            .map(|(i, n)| (pos + n.len(), Some(Event::Tool(i)), Some(i)))
            .collect();
        // The longest name first.
        out.sort_by_key(|x| std::cmp::Reverse(x.0));
        out
    }

    fn name_json_at(&self, input: &[u8], pos: usize, tool: Option<usize>) -> Vec<Next> {
        let Some((Value::String(name), e)) = values::json_value(input, pos) else {
            return Vec::new();
        };
        match self.by_name.get(&name) {
            Some(&i) if tool.is_none_or(|t| t == i) => vec![(e, Some(Event::Tool(i)), Some(i))],
            _ => Vec::new(),
        }
    }

    fn xml_keys(&self, input: &[u8], pos: usize, tool: Option<usize>) -> Vec<Next> {
        let names: &[String] = match tool {
            Some(t) => &self.params[t],
            None => &self.all_params,
        };
        let mut out: Vec<Next> = names
            .iter()
            .filter(|n| input[pos..].starts_with(n.as_bytes()))
            .map(|n| (pos + n.len(), Some(Event::XmlKey(n.clone())), tool))
            .collect();
        out.sort_by_key(|x| std::cmp::Reverse(x.0));
        out
    }
}

/// Where free text from `pos` may end, longest first: it never contains a
/// trigger, never a reserved byte, and ends on a character boundary.
fn text_ends<'a>(
    input: &'a [u8],
    pos: usize,
    triggers: &[Vec<u8>],
) -> impl Iterator<Item = usize> + 'a {
    let mut limit = input.len();
    if let Some(r) = input[pos..].iter().position(|&b| reserved::is_reserved(b)) {
        limit = pos + r;
    }
    for t in triggers.iter().filter(|t| !t.is_empty()) {
        if let Some(p) = input[pos..limit].windows(t.len()).position(|w| w == &t[..]) {
            // The text may hold all of the trigger but its last byte.
            limit = limit.min(pos + p + t.len() - 1);
        }
    }
    (pos..=limit)
        .rev()
        .filter(move |&e| e == input.len() || (input[e] & 0xC0) != 0x80)
}

/// Where an XML value from `pos` may end, and what it reads: a raw value
/// runs up to (at most) the first `stop`, longest first; a JSON value is
/// one JSON value (or, failing that, read like a raw one).
fn xml_values(input: &[u8], pos: usize, mode: XmlMode, stops: &[Vec<u8>]) -> Vec<(usize, Event)> {
    // Raw text holds no reserved byte and no stop.
    let mut limit = input[pos..]
        .iter()
        .position(|&b| reserved::is_reserved(b))
        .map_or(input.len(), |p| pos + p);
    for stop in stops.iter().filter(|s| !s.is_empty()) {
        if let Some(p) = input[pos..]
            .windows(stop.len())
            .position(|w| w == &stop[..])
        {
            limit = limit.min(pos + p);
        }
    }
    let raw = |e: usize| -> Option<(usize, Event)> {
        let boundary = e == input.len() || (input[e] & 0xC0) != 0x80;
        boundary.then_some((e, Event::XmlValue(pos, e, mode)))
    };
    let mut out = Vec::new();
    if mode == XmlMode::Json {
        if let Some(e) = values::json_end(input, pos) {
            out.extend(raw(e));
        }
    }
    out.extend((pos..=limit).rev().filter_map(raw));
    out
}
