//! Call formats as data: each format is a grammar file in the language of
//! [`syntax`], shipped under `grammars/formats/` or given by path.
//!
//! Lowering a format to an [`Expr`] substitutes, inside `tool { }`, each
//! tool's name and argument machine; resolves `special`/`token` against the
//! vocabulary; and, when there are several entry rules, joins them under
//! reserved selector bytes so one DFA holds them all (see [`ENTRY_ESCAPE`]).

mod shipped;
pub mod stops;
pub mod syntax;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::OnceLock;

use crate::automaton::expr::{self, Expr};
use crate::automaton::region::Tag;
use crate::error::{Error, ErrorKind};
use crate::lower::json::Spelling;
use crate::vocab::{Token, Vocab};
pub use shipped::SHIPPED;
pub use syntax::{Node, Part, Pos, Rules, Xml};

/// First byte of a special token's reserved byte string in the grammar:
/// `0xFF` then the token id as three big-endian bytes. `0xFF` never occurs
/// in UTF-8, and every text part of a grammar is UTF-8, so no text can walk
/// into a special token's path (text tokens containing the byte are never
/// allowed, see `vocab::TokenText`).
pub const SPECIAL_ESCAPE: u8 = 0xFF;
/// First byte of an entry selector: `0xFE` then the entry's index. The
/// DFA's own start state reads a selector and moves to that entry's start.
pub const ENTRY_ESCAPE: u8 = 0xFE;
/// Most entry rules in one format.
pub const MAX_ENTRIES: usize = 64;

/// The reserved byte string of special token `id`; `None` above the ids
/// a marker addresses (a [`Vocab`](crate::vocab::Vocab) holds no more
/// tokens, and lowering refuses such an id, so the grammar's specials all
/// have one).
pub fn special_marker(id: u32) -> Option<[u8; 4]> {
    tooldec_runtime::layout::reserved::special_marker(id)
}

/// A call format: its name and its checked grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallFormat {
    /// Its name (`react`, or a format file's stem).
    pub name: String,
    /// Its checked grammar.
    pub grammar: Rules,
}

impl CallFormat {
    /// A shipped format by name, or a format file by path (anything with a
    /// `/` or a `.tdg` ending, or an existing file).
    pub fn load(name_or_path: &str) -> Result<CallFormat, Error> {
        if let Some(k) = SHIPPED.iter().position(|s| s.0 == name_or_path) {
            return Ok(CallFormat {
                name: SHIPPED[k].0.to_string(),
                grammar: shipped_rules(k)?,
            });
        }
        let path = Path::new(name_or_path);
        if name_or_path.contains('/') || name_or_path.ends_with(".tdg") || path.is_file() {
            return CallFormat::from_file(path);
        }
        Err(Error::new(
            ErrorKind::Usage,
            format!(
                "unknown format {name_or_path:?} (shipped: {}; or give the path of a .tdg file)",
                CallFormat::shipped_names().join(", ")
            ),
        ))
    }

    /// A user's format file; the format is named after the file's stem.
    pub fn from_file(path: &Path) -> Result<CallFormat, Error> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("{shown}: cannot read the format: {e}"),
            )
        })?;
        Ok(CallFormat {
            name: path
                .file_stem()
                .map_or(shown.clone(), |s| s.to_string_lossy().into_owned()),
            grammar: Rules::parse(&shown, &text)?,
        })
    }

    /// The names of the shipped formats.
    pub fn shipped_names() -> Vec<&'static str> {
        SHIPPED.iter().map(|s| s.0).collect()
    }

    /// The same format with `name` as its only entry rule (the others stay
    /// as plain rules), for an artifact that serves just that entry.
    pub fn only_entry(&self, name: &str) -> Result<CallFormat, Error> {
        let mut f = self.clone();
        if !f.grammar.rules.iter().any(|r| r.entry && r.name == name) {
            return Err(Error::new(
                ErrorKind::Usage,
                format!(
                    "format {:?} has no entry {name:?} (entries: {})",
                    self.name,
                    self.entries().join(", ")
                ),
            ));
        }
        for r in &mut f.grammar.rules {
            r.entry = r.name == name;
        }
        Ok(f)
    }

    /// The same format with its default entry as its only one: what a
    /// request that starts there needs, and the language `--print-regex`
    /// spells.
    pub fn only_default_entry(&self) -> CallFormat {
        let mut f = self.clone();
        let mut first = true;
        for r in &mut f.grammar.rules {
            // The checked grammar has an entry; the first is the default.
            r.entry = r.entry && std::mem::take(&mut first);
        }
        f
    }

    /// The entry rule names, the default one first.
    pub fn entries(&self) -> Vec<String> {
        self.grammar.entries().map(|r| r.name.clone()).collect()
    }
}

/// How a tool's arguments are written, other than as a JSON object.
#[derive(Debug, Clone)]
pub(crate) enum Encoding {
    /// `args_positional`.
    Positional,
    /// `args_python`, `args_gemma`, `args_xml(...)`: the arguments object
    /// in another spelling.
    Spelled(Spelling),
}

/// What a tool block needs of one tool.
pub(crate) struct ToolParts<'a> {
    /// The tools' names, in tool order.
    pub names: Vec<String>,
    /// Each tool's group: tools with equal schemas share one group, and so
    /// every argument machine.
    pub groups: Vec<usize>,
    /// Each tool's argument machine as a JSON object.
    pub args: Vec<Expr>,
    /// Tool `i`'s arguments in another encoding, built once per group.
    pub encode: &'a mut dyn FnMut(usize, &Encoding) -> Result<Expr, Error>,
}

/// A lowered format.
pub struct Lowered {
    /// The whole grammar.
    pub expr: Expr,
    /// Entry rule names in the format's order (the selector's), the
    /// default first.
    pub entries: Vec<String>,
    /// Per entry, whether it stops after its first call (see [`stops`]).
    pub stops: Vec<bool>,
    /// The special tokens the grammar uses, by id.
    pub specials: Vec<u32>,
    /// Over-approximations of the schemas (`--relax`), one line each.
    pub relaxed: Vec<String>,
}

struct Lower<'a, 'b> {
    g: &'a Rules,
    tools: &'a mut ToolParts<'b>,
    specials: &'a HashMap<String, u32>,
    eos: &'a [u32],
    used: BTreeSet<u32>,
    rules: HashMap<String, Expr>,
    /// What follows the node being lowered in its sequence, for the stops
    /// of `args_xml` (see [`Xml::stops`]).
    after: Option<Node>,
    /// Encoded arguments by (group, the encoding part's place in the file).
    encoded: HashMap<(usize, Pos), Expr>,
    /// The rule being lowered, for the regions of its free text.
    rule: String,
    /// The repeating rules whose calls' ends are marked (see [`stops`]).
    marked: BTreeSet<String>,
}

/// A vocabulary's special tokens by name: what a format's `<|...|>`
/// names resolve to. A [`crate::Compiler`] builds it once; finding them
/// means reading every token.
#[derive(Debug, Clone, Default)]
pub struct Specials(HashMap<String, u32>);

impl Specials {
    /// The special tokens of `vocab`.
    pub fn of(vocab: &Vocab) -> Specials {
        Specials(
            vocab
                .tokens
                .iter()
                .enumerate()
                .filter_map(|(i, t)| match t {
                    Token::Special(s) => Some((s.clone(), i as u32)),
                    _ => None,
                })
                .collect(),
        )
    }
}

/// Shipped format `k`'s grammar, parsed the first time a process asks
/// for it: bindings and engine adapters load the format by name for every
/// request, and parsing (50-210 µs) would be most of the time a kept
/// artifact takes to come back (tens of µs). A clone is 1-3 µs.
fn shipped_rules(k: usize) -> Result<Rules, Error> {
    static PARSED: OnceLock<Vec<OnceLock<Result<Rules, Error>>>> = OnceLock::new();
    let parsed = PARSED.get_or_init(|| SHIPPED.iter().map(|_| OnceLock::new()).collect());
    let (_, file, text) = SHIPPED[k];
    parsed[k].get_or_init(|| Rules::parse(file, text)).clone()
}

/// Lowers `format` for these tools and this vocabulary; where the
/// vocabulary's decoder drops a leading space (`Vocab::leading_space`),
/// each entry may begin with one.
pub(crate) fn lower(
    format: &CallFormat,
    tools: &mut ToolParts<'_>,
    vocab: &Vocab,
    specials: &Specials,
    stop_entries: bool,
) -> Result<Lowered, Error> {
    let g = &format.grammar;
    let specials = &specials.0;
    let mut l = Lower {
        g,
        tools,
        specials,
        eos: &vocab.eos,
        used: BTreeSet::new(),
        rules: HashMap::new(),
        encoded: HashMap::new(),
        after: None,
        rule: String::new(),
        marked: BTreeSet::new(),
    };
    let all: Vec<&syntax::Rule> = g.entries().collect();
    if all.len() > MAX_ENTRIES {
        return Err(Error::new(
            ErrorKind::CallFormat,
            format!("{}: more than {MAX_ENTRIES} entry rules", g.file),
        ));
    }
    // An entry that stops after its first call is lowered with its call
    // replaced by the repeating rule, whose calls' ends are marked.
    let stops: Vec<stops::Stop> = if stop_entries {
        stops::find(g)
    } else {
        Vec::new()
    };
    l.marked = stops.iter().map(|s| s.repeat.clone()).collect();
    let mut bodies = Vec::new();
    for r in &all {
        let e = match stops.iter().find(|s| s.entry == r.name) {
            Some(s) => l.stopped(s)?,
            None => l.rule(&r.name)?,
        };
        bodies.push(if vocab.leading_space {
            Expr::seq([Expr::opt(Expr::lit(" ")), e])
        } else {
            e
        });
    }
    let expr = if bodies.len() == 1 {
        bodies.pop().unwrap_or(Expr::Empty)
    } else {
        Expr::alt(
            bodies
                .into_iter()
                .enumerate()
                .map(|(k, e)| Expr::seq([Expr::Bytes(vec![ENTRY_ESCAPE, k as u8]), e])),
        )
    };
    Ok(Lowered {
        expr,
        entries: all.iter().map(|r| r.name.clone()).collect(),
        stops: all
            .iter()
            .map(|r| stops.iter().any(|s| s.entry == r.name))
            .collect(),
        specials: l.used.into_iter().collect(),
        relaxed: Vec::new(),
    })
}

impl Lower<'_, '_> {
    fn err(&self, pos: Pos, msg: impl std::fmt::Display) -> Error {
        Error::new(
            ErrorKind::CallFormat,
            format!("{}:{}:{}: {msg}", self.g.file, pos.line, pos.col),
        )
    }

    fn rule(&mut self, name: &str) -> Result<Expr, Error> {
        if let Some(e) = self.rules.get(name) {
            return Ok(e.clone());
        }
        let body = &self.g.rule(name).expect("checked: rules exist").body;
        let outer = std::mem::replace(&mut self.rule, name.to_string());
        let e = match stops::repeats_calls(body) {
            Some((call, sep)) => self.repeated_calls(call, sep, self.marked.contains(name)),
            None => self.node(body, None),
        };
        self.rule = outer;
        let e = Expr::shared(e?);
        self.rules.insert(name.to_string(), e.clone());
        Ok(e)
    }

    /// The special token `name`'s id, if the vocabulary has one.
    fn special(&mut self, name: &str, pos: Pos) -> Result<Option<Expr>, Error> {
        let Some(&id) = self.specials.get(name) else {
            return Ok(None);
        };
        if self.eos.contains(&id) {
            return Err(self.err(
                pos,
                format!("the special token {name:?} is an end-of-sequence token here, so it cannot be part of a call"),
            ));
        }
        let Some(marker) = special_marker(id) else {
            return Err(self.err(
                pos,
                format!("the special token {name:?} has id {id}, beyond the ids an artifact marks"),
            ));
        };
        self.used.insert(id);
        Ok(Some(Expr::Bytes(marker.to_vec())))
    }

    fn node(&mut self, n: &Node, tool: Option<usize>) -> Result<Expr, Error> {
        Ok(match n {
            Node::Lit(s) => Expr::lit(s),
            Node::Class(src, pos) | Node::Regex(src, pos) => expr::from_regex(src)
                .map_err(|m| self.err(*pos, format!("in {src:?}: {m}")))?,
            Node::Special(name, pos) => self.special(name, *pos)?.ok_or_else(|| {
                self.err(
                    *pos,
                    format!("the vocabulary has no special token {name:?} (use token(\"...\") to fall back to text)"),
                )
            })?,
            Node::Token(name, pos) => match self.special(name, *pos)? {
                Some(e) => e,
                None => Expr::lit(name),
            },
            Node::Text(triggers, pos) => {
                let mut texts = Vec::new();
                for t in triggers {
                    match t {
                        Node::Lit(s) => texts.push(s.clone()),
                        // A special token never occurs in text, but its name
                        // spelled as text is excluded too, so that decoded
                        // output is unambiguous: a parser reading the text
                        // cannot tell the token from its spelling.
                        Node::Special(name, p) => {
                            self.special(name, *p)?.ok_or_else(|| {
                                self.err(*p, format!("the vocabulary has no special token {name:?}"))
                            })?;
                            texts.push(name.clone());
                        }
                        Node::Token(name, p) => {
                            self.special(name, *p)?;
                            texts.push(name.clone());
                        }
                        _ => return Err(self.err(*pos, "text_except takes strings and tokens only")),
                    }
                }
                check_overlaps(&texts).map_err(|m| self.err(*pos, m))?;
                Expr::tag(
                    Tag::Text {
                        rule: self.rule.clone(),
                    },
                    expr::text_except(&texts),
                )
            }
            Node::Ref(name, _) => self.rule(name)?,
            Node::Seq(v) => self.seq(&v.iter().collect::<Vec<_>>(), tool)?,
            Node::Alt(v) => {
                let mut parts = Vec::with_capacity(v.len());
                for x in v {
                    parts.push(self.node(x, tool)?);
                }
                Expr::alt(parts)
            }
            Node::Repeat(x, min, max) => Expr::repeat(self.node(x, tool)?, *min, *max),
            Node::Part(part, pos) => {
                let Some(i) = tool else {
                    return Err(self.err(*pos, format!("`{}` outside `tool {{ }}`", part.keyword())));
                };
                match part {
                    Part::Name => {
                        let name = &self.tools.names[i];
                        if name.chars().any(char::is_control) {
                            return Err(self.err(
                                *pos,
                                format!("tool name {name:?} has a control character and cannot be written bare; the format should use name_json"),
                            ));
                        }
                        Expr::lit(name)
                    }
                    Part::NameJson => Expr::Bytes(
                        serde_json::to_string(&self.tools.names[i])
                            .unwrap_or_default()
                            .into_bytes(),
                    ),
                    Part::Args => self.tools.args[i].clone(),
                    Part::ArgsPositional => self.encoded(i, *pos, &Encoding::Positional)?,
                    Part::ArgsInline => {
                        self.encoded(i, *pos, &Encoding::Spelled(Spelling::JsonInline))?
                    }
                    Part::ArgsPython => {
                        self.encoded(i, *pos, &Encoding::Spelled(Spelling::Python))?
                    }
                    Part::ArgsGemma => {
                        let quote_text = "<|\"|>".to_string();
                        let quote = self.node(&Node::Token(quote_text.clone(), *pos), None)?;
                        let gemma = Spelling::Gemma { quote, quote_text };
                        self.encoded(i, *pos, &Encoding::Spelled(gemma))?
                    }
                    Part::ArgsXml => unreachable!("args_xml is a Node::Xml"),
                }
            }
            Node::Xml(x, pos) => {
                let Some(i) = tool else {
                    return Err(self.err(*pos, "`args_xml` outside `tool { }`"));
                };
                let enc = Encoding::Spelled(Spelling::Xml {
                    open: self.node(&x.open, None)?,
                    mid_string: self.node(&x.mid_string, None)?,
                    mid_other: self.node(&x.mid_other, None)?,
                    close: self.node(&x.close, None)?,
                    stops: x.stops(self.after.take().as_ref()),
                });
                self.encoded(i, *pos, &enc)?
            }
            Node::Tool(body, pos) => self.tool_block(body, *pos)?,
        })
    }

    /// Entry `s.entry` as it stops after its first call: its rule with the
    /// call replaced by the repeating rule (see [`stops`]).
    fn stopped(&mut self, s: &stops::Stop) -> Result<Expr, Error> {
        let outer = std::mem::replace(&mut self.rule, s.entry.clone());
        let e = self.node(&s.body, None);
        self.rule = outer;
        e
    }

    /// A repeating rule `C (S C)*` as `C (S C)*` whose two `C`s are one
    /// shared expression continuing to the loop's head, so the NFA holds
    /// one copy of every tool's call: the subset construction and
    /// minimization work on one, not on two that minimization merges
    /// (at 10,000 tools in hermes, every entry: determinize 3.9 -> 2.0 s,
    /// minimize 3.8 -> 2.1 s). With `mark`, each `C` is followed by
    /// [`Expr::CallEnd`] (see [`stops`]).
    fn repeated_calls(&mut self, call: &Node, sep: &[Node], mark: bool) -> Result<Expr, Error> {
        let call = self.node(call, None)?;
        let sep: Vec<&Node> = sep.iter().collect();
        let sep = self.seq(&sep, None)?;
        if !mark {
            return Ok(Expr::seq([
                call.clone(),
                Expr::star(Expr::seq([sep, call])),
            ]));
        }
        // START C END (S APART C END)*, the `C END`s one shared expression.
        let call = Expr::shared(Expr::seq([call, Expr::CallEnd]));
        Ok(Expr::seq([
            Expr::CallStart,
            call.clone(),
            Expr::star(Expr::seq([sep, Expr::Apart, call])),
        ]))
    }

    /// `items` in turn, each knowing what follows it (see `after`).
    fn seq(&mut self, items: &[&Node], tool: Option<usize>) -> Result<Expr, Error> {
        let mut parts = Vec::with_capacity(items.len());
        for (k, x) in items.iter().enumerate() {
            self.after = items.get(k + 1).map(|&n| n.clone());
            parts.push(self.node(x, tool)?);
        }
        Ok(Expr::seq(parts))
    }

    /// Tool `i`'s arguments in `enc`, the encoding part at `pos`: built once
    /// per group of tools with equal schemas.
    fn encoded(&mut self, i: usize, pos: Pos, enc: &Encoding) -> Result<Expr, Error> {
        let group = self.tools.groups[i];
        if let Some(e) = self.encoded.get(&(group, pos)) {
            return Ok(e.clone());
        }
        let tools = (0..self.tools.groups.len())
            .filter(|&j| self.tools.groups[j] == group)
            .map(|j| j as u32)
            .collect();
        let e = Expr::shared(Expr::tag(Tag::Args { tools }, (self.tools.encode)(i, enc)?));
        self.encoded.insert((group, pos), e.clone());
        Ok(e)
    }

    /// For a tool block that can write a call without its arguments, which
    /// a reader takes as `{}`: refuses a tool whose arguments cannot be
    /// `{}` (a required parameter, `minProperties`), whose calls would
    /// read back wrong.
    fn check_no_arguments(&mut self, pos: Pos) -> Result<(), Error> {
        let mut checked: HashMap<usize, bool> = HashMap::new();
        for i in 0..self.tools.names.len() {
            let group = self.tools.groups[i];
            let ok = match checked.get(&group) {
                Some(&ok) => ok,
                None => {
                    let ok = accepts(&self.tools.args[i], b"{}").map_err(|l| {
                        self.err(
                            pos,
                            format!(
                                "checking whether tool {:?} takes no arguments: {l}",
                                self.tools.names[i]
                            ),
                        )
                    })?;
                    checked.insert(group, ok);
                    ok
                }
            };
            if !ok {
                return Err(self.err(
                    pos,
                    format!(
                        "this tool block can write a call of tool {:?} without arguments, which reads back as {{}}, \
                         but its parameters do not accept {{}} (a required parameter?): write the arguments in every \
                         branch, or leave such tools out",
                        self.tools.names[i]
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `tool { body }`: a trie over the tools' names when the body is a
    /// sequence that writes the name before anything else tool-specific;
    /// an alternation over the tools otherwise.
    fn tool_block(&mut self, body: &Node, pos: Pos) -> Result<Expr, Error> {
        let n = self.tools.names.len();
        if n == 0 {
            return Err(self.err(pos, "the tool list is empty"));
        }
        if syntax::may_skip_args(body) {
            self.check_no_arguments(pos)?;
        }
        let items: Vec<&Node> = match body {
            Node::Seq(v) => v.iter().collect(),
            other => vec![other],
        };
        let name_at = items
            .iter()
            .position(|x| matches!(x, Node::Part(Part::Name | Part::NameJson, _)));
        let Some(k) = name_at.filter(|&k| !items[..k].iter().any(|x| syntax::has_parts(x))) else {
            let mut alts = Vec::with_capacity(n);
            for i in 0..n {
                let call = Tag::Call {
                    tools: vec![i as u32],
                };
                alts.push(Expr::tag(call, self.node(body, Some(i))?));
            }
            return Ok(Expr::alt(alts));
        };
        let mut prefix = Vec::new();
        for x in &items[..k] {
            prefix.push(self.node(x, None)?);
        }
        let rest: Vec<&Node> = items[k + 1..].to_vec();
        let rest_names = rest
            .iter()
            .any(|x| syntax::uses(x, |p| matches!(p, Part::Name | Part::NameJson)));
        // Tools whose rest would be identical (equal schemas) share one copy
        // of it.
        let rest_keys: Vec<(usize, usize)> = (0..n).map(|i| (self.tools.groups[i], 0)).collect();
        let mut sharing: HashMap<(usize, usize), Vec<u32>> = HashMap::new();
        for (i, k) in rest_keys.iter().enumerate() {
            sharing.entry(*k).or_default().push(i as u32);
        }
        let mut shared: HashMap<(usize, usize), Expr> = HashMap::new();
        let mut entries = Vec::with_capacity(n);
        for (i, &rest_key) in rest_keys.iter().enumerate() {
            let key = self.node(items[k], Some(i))?;
            let Expr::Bytes(key) = key else {
                unreachable!("a name lowers to bytes")
            };
            let branch = if rest_names {
                Expr::tag(
                    Tag::Call {
                        tools: vec![i as u32],
                    },
                    self.seq(&rest, Some(i))?,
                )
            } else {
                match shared.get(&rest_key) {
                    Some(e) => e.clone(),
                    None => {
                        let e = Expr::shared(Expr::tag(
                            Tag::Call {
                                tools: sharing[&rest_key].clone(),
                            },
                            self.seq(&rest, Some(i))?,
                        ));
                        shared.insert(rest_key, e.clone());
                        e
                    }
                }
            };
            entries.push((key, branch));
        }
        prefix.push(Expr::tag(Tag::Name, Expr::Trie(entries)));
        Ok(Expr::seq(prefix))
    }
}

/// Whether the language of `e` has `text`, walked on a lazy DFA of its
/// NFA (only the states on the text's path are built).
fn accepts(e: &Expr, text: &[u8]) -> Result<bool, crate::error::Limit> {
    const MAX_NFA: usize = 1 << 22;
    let nfa = crate::automaton::nfa::build(e, MAX_NFA)?;
    let Some(mut d) = crate::automaton::lazy::LazyDfa::new(nfa, text.len() + 8) else {
        return Ok(false);
    };
    let s = d.walk(d.start(), text);
    Ok(!d.overflowed() && d.accepts(s))
}

/// Text followed by a trigger must not hide another (or the same) trigger
/// that starts inside the text and runs into the trigger that follows: a
/// parser that splits at the first trigger would split elsewhere. So no
/// trigger `a` may be cut as `a = x y`, with `x` and `y` nonempty, where `y`
/// is a prefix of a trigger `b` or `b` is a prefix of `y`.
fn check_overlaps(triggers: &[String]) -> Result<(), String> {
    for a in triggers {
        for b in triggers {
            let ab = a.as_bytes();
            for cut in 1..ab.len() {
                if !a.is_char_boundary(cut) {
                    continue;
                }
                let y = &a[cut..];
                if b.starts_with(y) || y.starts_with(b.as_str()) {
                    return Err(format!(
                        "the triggers {a:?} and {b:?} overlap: text ending in {:?} followed by {b:?} contains {a:?} \
                         before the trigger, so where the text ends would be ambiguous",
                        &a[..cut]
                    ));
                }
            }
        }
    }
    Ok(())
}
