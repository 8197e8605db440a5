//! The format language: parsing (`tdg.pest`), checking and printing.
//!
//! A format file is a list of rules, `name = expression ;`. Rules marked
//! `entry` are the entry points an engine can start (or restart) a matcher
//! at; the first one is where a fresh matcher starts. Expressions:
//!
//! | syntax | meaning |
//! |---|---|
//! | `"text"` | the literal text (escapes `\n \t \r \" \\ \0 \/ \u{HEX}`) |
//! | `[a-z_]` | one character of a class (regex-syntax class syntax) |
//! | `/regex/` | a regular expression (regex-syntax, Unicode mode, no look-around) |
//! | `a b`, `a \| b`, `( )` | sequence, alternation, grouping |
//! | `x?`, `x*`, `x+`, `x{n}`, `x{m,n}`, `x{m,}` | repetition |
//! | `rule` | another rule (rules may not be recursive: formats are regular) |
//! | `special("<T>")` | the special token named `<T>`, by id only; never its text |
//! | `token("<tool_call>")` | the special token if the vocabulary has one by that name, else the text |
//! | `text()`, `text_except(t, ...)` | free text; with triggers (strings, `special`, `token`), text that contains none of them (for a special token, not its name spelled as text either, so decoded output stays unambiguous) |
//! | `tool { ... }` | one tool of the list; inside, `name`, `name_json` and the argument encodings below are that tool's |
//!
//! Rule names are identifiers that may have inner hyphens (`think-auto`).
//!
//! Inside `tool { }`: `name` is the tool name as is, `name_json` the name as
//! a JSON string; the arguments are written in one of these encodings, each
//! holding every constraint of the tool's JSON Schema:
//!
//! | part | the arguments as |
//! |---|---|
//! | `args` | a JSON object |
//! | `args_inline` | a JSON object with no line break between its tokens (for parsers whose regular expression stops at one) |
//! | `args_positional` | comma-separated JSON values (required parameters first, each group in the schema's order; trailing optional ones may be left out) |
//! | `args_python` | Python keyword arguments `k=V, k2=V2` of Python literals: strings `'...'` or `"..."` with Python's escapes, `True`/`False`/`None`, lists, dicts with string keys |
//! | `args_gemma` | Gemma 4's object `{k:V,k2:V2}`: bare keys, strings between `token("<\|\"\|>")` quotes with their text as is, JSON numbers, `true`/`false`/`null`, `[...]`, `{...}` |
//! | `args_xml(OPEN, MID, CLOSE)` | one `OPEN key MID value CLOSE` per parameter, in the schema's order (optional ones may be left out): a string value as raw text, no quotes, no escapes, never containing CLOSE's tag (CLOSE trimmed of whitespace); any other value as JSON |
//! | `args_xml(OPEN, MID_STRING, MID_OTHER, CLOSE)` | the same, with `MID_STRING` after the key of a raw string value and `MID_OTHER` after that of a JSON value (DSML's `string="true"`/`"false"`) |
//!
//! The arguments of `args_xml` are expressions without tool parts: strings,
//! `token(...)`, sequences in parentheses.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use pest::iterators::Pair;
use pest::Parser as _;

use crate::error::{Error, ErrorKind};

mod parser {
    #[derive(pest_derive::Parser)]
    #[grammar = "lower/call_format/tdg.pest"]
    pub struct TdgParser;
}
use parser::TdgParser;

/// A line and column (1-based) in a format file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pos {
    /// The line, from 1.
    pub line: usize,
    /// The column, from 1.
    pub col: usize,
}

/// An expression of the format language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A literal string.
    Lit(String),
    /// A character class, as written (`[...]`).
    Class(String, Pos),
    /// A regular expression, between its slashes.
    Regex(String, Pos),
    /// A special token by name (`<|im_start|>`), as one token id.
    Special(String, Pos),
    /// A token by text, as one token id.
    Token(String, Pos),
    /// Free text containing none of the triggers (`Lit`, `Special`, `Token`).
    Text(Vec<Node>, Pos),
    /// A tool block: its body once per tool, with that tool's parts.
    Tool(Box<Node>, Pos),
    /// A part of the tool in a tool block.
    Part(Part, Pos),
    /// The tool's arguments as XML-style parameters (`args_xml(...)`).
    Xml(Box<Xml>, Pos),
    /// Another rule, by name.
    Ref(String, Pos),
    /// Each in turn.
    Seq(Vec<Node>),
    /// Any one of them.
    Alt(Vec<Node>),
    /// `min` to `max` repetitions (`None`: unbounded).
    Repeat(Box<Node>, u32, Option<u32>),
}

/// What `tool { }` makes available.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The tool's name (`name`).
    Name,
    /// The tool's name as a JSON string (`name_json`).
    NameJson,
    /// The tool's arguments as a JSON object (`args`).
    Args,
    /// The tool's arguments by position (`args_positional`).
    ArgsPositional,
    /// The tool's arguments as a JSON object on one line (`args_inline`).
    ArgsInline,
    /// The tool's arguments as Python keyword arguments (`args_python`).
    ArgsPython,
    /// The tool's arguments as a Gemma 4 object (`args_gemma`).
    ArgsGemma,
    /// The tool's arguments as XML-style parameters ([`Node::Xml`]).
    ArgsXml,
}

impl Part {
    /// The keyword that names the part in a format file.
    pub fn keyword(self) -> &'static str {
        match self {
            Part::Name => "name",
            Part::NameJson => "name_json",
            Part::Args => "args",
            Part::ArgsPositional => "args_positional",
            Part::ArgsInline => "args_inline",
            Part::ArgsPython => "args_python",
            Part::ArgsGemma => "args_gemma",
            Part::ArgsXml => "args_xml",
        }
    }
}

/// The wrappers of `args_xml(...)`: each parameter is written as
/// `open key mid value close`, `mid` being `mid_string` before a raw string
/// value and `mid_other` before a JSON one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Xml {
    /// Before the key.
    pub open: Node,
    /// Between the key and a raw string value.
    pub mid_string: Node,
    /// Between the key and a JSON value (the same as `mid_string` when
    /// `args_xml` has three arguments).
    pub mid_other: Node,
    /// After the value.
    pub close: Node,
}

impl Xml {
    /// The tag that ends a raw string value: `close`'s first literal or
    /// token, trimmed of whitespace (`</parameter>` of
    /// `"\n</parameter>\n"`). `None` when `close` begins with no text.
    pub fn stop(&self) -> Option<String> {
        first_text(&self.close)
    }

    /// What a raw string value may never contain, since a parser would end
    /// the value there: the closing tag ([`Xml::stop`]), the opening tag
    /// of the next parameter, and the first text of `after`, what the
    /// format writes after the parameters (`</function>`), where parsers
    /// that read a value up to the next tag end it too.
    pub fn stops(&self, after: Option<&Node>) -> Vec<String> {
        let mut stops: Vec<String> = [self.stop(), first_text(&self.open)]
            .into_iter()
            .chain([after.and_then(first_text)])
            .flatten()
            .collect();
        stops.dedup();
        stops
    }

    fn parts(&self) -> [&Node; 4] {
        [&self.open, &self.mid_string, &self.mid_other, &self.close]
    }
}

/// One `name = expression ;`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The rule's name.
    pub name: String,
    /// Whether it is an entry point (`entry name = ...`).
    pub entry: bool,
    /// Its expression.
    pub body: Node,
    /// Where it starts.
    pub pos: Pos,
}

/// A parsed and checked format file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    /// Where it came from, for messages (`grammars/formats/react.tdg`).
    pub file: String,
    /// Its rules, in file order.
    pub rules: Vec<Rule>,
}

const KEYWORDS: &[&str] = &[
    "entry",
    "tool",
    "name",
    "name_json",
    "args",
    "args_positional",
    "args_inline",
    "args_python",
    "args_gemma",
    "args_xml",
    "special",
    "token",
    "text",
    "text_except",
];

/// Most repetitions a bounded repeat may ask for.
pub const MAX_REPEAT: u32 = 1000;

impl Rules {
    /// Parses and checks a format file.
    pub fn parse(file: &str, text: &str) -> Result<Rules, Error> {
        let mut pairs =
            TdgParser::parse(Rule_::file, text).map_err(|e| syntax_error(file, text, e))?;
        let top = pairs.next().expect("the file rule");
        let src = Src::new(file, text);
        let mut rules = Vec::new();
        for p in top.into_inner() {
            if p.as_rule() == Rule_::rule {
                rules.push(rule(&src, p)?);
            }
        }
        let g = Rules {
            file: file.to_string(),
            rules,
        };
        g.check()?;
        Ok(g)
    }

    fn err(&self, pos: Pos, msg: impl std::fmt::Display) -> Error {
        Error::new(
            ErrorKind::CallFormat,
            format!("{}:{}:{}: {msg}", self.file, pos.line, pos.col),
        )
    }

    /// The rule called `name`.
    pub fn rule(&self, name: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.name == name)
    }

    /// The entry rules, the default one first.
    pub fn entries(&self) -> impl Iterator<Item = &Rule> {
        self.rules.iter().filter(|r| r.entry)
    }

    fn check(&self) -> Result<(), Error> {
        let mut seen: BTreeMap<&str, Pos> = BTreeMap::new();
        for r in &self.rules {
            if KEYWORDS.contains(&r.name.as_str()) {
                return Err(self.err(r.pos, format!("{:?} is a keyword, not a rule name", r.name)));
            }
            if let Some(first) = seen.insert(&r.name, r.pos) {
                return Err(self.err(
                    r.pos,
                    format!(
                        "rule {:?} is defined twice (first at line {})",
                        r.name, first.line
                    ),
                ));
            }
        }
        if self.entries().next().is_none() {
            let pos = self
                .rules
                .first()
                .map_or(Pos { line: 1, col: 1 }, |r| r.pos);
            return Err(self.err(
                pos,
                "no entry rule: mark where output starts with `entry NAME = ...;`",
            ));
        }
        for r in &self.rules {
            self.check_node(&r.body, false)?;
        }
        // Recursion: a depth-first walk from every rule.
        let mut done = BTreeSet::new();
        for r in &self.rules {
            let mut path = Vec::new();
            self.no_cycle(&r.name, &mut path, &mut done)?;
        }
        // Reachability from the entries.
        let mut reached = BTreeSet::new();
        let mut todo: Vec<&str> = self.entries().map(|r| r.name.as_str()).collect();
        while let Some(n) = todo.pop() {
            if reached.insert(n) {
                if let Some(r) = self.rule(n) {
                    refs(&r.body, &mut |name, _| todo.push(name));
                }
            }
        }
        if let Some(r) = self
            .rules
            .iter()
            .find(|r| !reached.contains(r.name.as_str()))
        {
            return Err(self.err(
                r.pos,
                format!("rule {:?} is unreachable from every entry rule", r.name),
            ));
        }
        Ok(())
    }

    fn check_node(&self, n: &Node, in_tool: bool) -> Result<(), Error> {
        match n {
            Node::Ref(name, pos) => {
                if self.rule(name).is_none() {
                    return Err(self.err(*pos, format!("unknown rule {name:?}")));
                }
                if in_tool && self.rule(name).is_some_and(|r| has_parts(&r.body)) {
                    return Err(self.err(
                        *pos,
                        format!("rule {name:?} is used inside `tool {{ }}` and has its own"),
                    ));
                }
            }
            Node::Part(p, pos) if !in_tool => {
                return Err(self.err(
                    *pos,
                    format!("`{}` is only defined inside `tool {{ ... }}`", p.keyword()),
                ))
            }
            Node::Xml(_, pos) if !in_tool => {
                return Err(self.err(*pos, "`args_xml` is only defined inside `tool { ... }`"))
            }
            Node::Xml(x, pos) => {
                for n in x.parts() {
                    if has_parts(n) || !refs_none(n) {
                        return Err(self.err(
                            *pos,
                            "the arguments of args_xml(...) are strings and tokens, not tool parts or rules",
                        ));
                    }
                    self.check_node(n, false)?;
                }
                if x.stop().is_none() {
                    return Err(self.err(
                        *pos,
                        "the last argument of args_xml(...) must begin with the text (or token) that ends a value",
                    ));
                }
            }
            Node::Tool(body, pos) => {
                if in_tool {
                    return Err(self.err(*pos, "`tool { }` inside `tool { }`"));
                }
                self.check_node(body, true)?;
            }
            Node::Text(triggers, pos) => {
                for t in triggers {
                    match t {
                        Node::Lit(s) if s.is_empty() => {
                            return Err(self.err(*pos, "an empty trigger: text could never start"))
                        }
                        Node::Lit(_) | Node::Special(..) | Node::Token(..) => {}
                        _ => return Err(self.err(
                            *pos,
                            "text_except takes strings, special(\"...\") and token(\"...\") only",
                        )),
                    }
                }
            }
            Node::Special(s, pos) | Node::Token(s, pos) if s.is_empty() => {
                return Err(self.err(*pos, "an empty token name"))
            }
            Node::Repeat(inner, ..) => {
                self.check_node(inner, in_tool)?;
            }
            Node::Seq(v) | Node::Alt(v) => {
                for x in v {
                    self.check_node(x, in_tool)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn no_cycle<'a>(
        &'a self,
        name: &'a str,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Result<(), Error> {
        if done.contains(name) {
            return Ok(());
        }
        if let Some(i) = path.iter().position(|&p| p == name) {
            let mut cycle: Vec<&str> = path[i..].to_vec();
            cycle.push(name);
            let r = self.rule(path[i]).expect("rules on the path exist");
            return Err(self.err(
                r.pos,
                format!(
                    "rule {name:?} is recursive ({}); formats are regular, so use repetition",
                    cycle.join(" -> ")
                ),
            ));
        }
        let Some(r) = self.rule(name) else {
            return Ok(());
        };
        path.push(name);
        let mut names = Vec::new();
        refs(&r.body, &mut |n, _| names.push(n));
        for n in names {
            self.no_cycle(n, path, done)?;
        }
        path.pop();
        done.insert(name);
        Ok(())
    }

    /// The grammar in canonical form: one rule per line, `|` spaced, groups
    /// only where needed. Parsing the output gives the same grammar.
    pub fn pretty(&self) -> String {
        let mut out = String::new();
        for r in &self.rules {
            if r.entry {
                out.push_str("entry ");
            }
            let _ = write!(out, "{} = ", r.name);
            print(&r.body, &mut out, 0);
            out.push_str(";\n");
        }
        out
    }
}

/// The first literal or token `n` writes, trimmed of whitespace; `None`
/// when it begins with something else (or only whitespace).
pub fn first_text(n: &Node) -> Option<String> {
    match n {
        Node::Lit(s) if s.trim().is_empty() => None,
        Node::Lit(s) => Some(s.trim().to_string()),
        Node::Token(s, _) | Node::Special(s, _) => Some(s.clone()),
        Node::Seq(v) => v.first().and_then(first_text),
        _ => None,
    }
}

/// Whether `n` refers to no rule.
fn refs_none(n: &Node) -> bool {
    let mut none = true;
    refs(n, &mut |_, _| none = false);
    none
}

/// Every rule reference in `n`.
fn refs<'a>(n: &'a Node, f: &mut impl FnMut(&'a str, Pos)) {
    match n {
        Node::Ref(name, pos) => f(name, *pos),
        Node::Tool(b, _) | Node::Repeat(b, ..) => refs(b, f),
        Node::Seq(v) | Node::Alt(v) | Node::Text(v, _) => v.iter().for_each(|x| refs(x, f)),
        _ => {}
    }
}

/// Whether `n` uses a tool part (`name`, `args`, ...) that `want` picks.
pub fn uses(n: &Node, want: fn(Part) -> bool) -> bool {
    match n {
        Node::Part(p, _) => want(*p),
        Node::Xml(..) => want(Part::ArgsXml),
        Node::Tool(b, _) | Node::Repeat(b, ..) => uses(b, want),
        Node::Seq(v) | Node::Alt(v) => v.iter().any(|x| uses(x, want)),
        _ => false,
    }
}

/// Whether some path through `n` writes no arguments part: a call read
/// from it has the arguments `{}`.
pub fn may_skip_args(n: &Node) -> bool {
    match n {
        Node::Part(p, _) => matches!(p, Part::Name | Part::NameJson),
        Node::Xml(..) => false,
        Node::Tool(b, _) => may_skip_args(b),
        Node::Repeat(b, min, _) => *min == 0 || may_skip_args(b),
        Node::Seq(v) => v.iter().all(may_skip_args),
        Node::Alt(v) => v.iter().any(may_skip_args),
        _ => true,
    }
}

/// Whether `n` uses any tool part.
pub fn has_parts(n: &Node) -> bool {
    uses(n, |_| true)
}

/// Binding strength, for printing groups only where needed.
fn print(n: &Node, out: &mut String, outer: u8) {
    let (own, text) = match n {
        Node::Alt(v) => {
            let mut s = String::new();
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    s.push_str(" | ");
                }
                print(x, &mut s, 1);
            }
            (0, s)
        }
        Node::Seq(v) => {
            let mut s = String::new();
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    s.push(' ');
                }
                print(x, &mut s, 2);
            }
            (1, s)
        }
        Node::Repeat(x, min, max) => {
            let mut s = String::new();
            print(x, &mut s, 3);
            match (min, max) {
                (0, Some(1)) => s.push('?'),
                (0, None) => s.push('*'),
                (1, None) => s.push('+'),
                (m, None) => {
                    let _ = write!(s, "{{{m},}}");
                }
                (m, Some(n)) if m == n => {
                    let _ = write!(s, "{{{m}}}");
                }
                (m, Some(n)) => {
                    let _ = write!(s, "{{{m},{n}}}");
                }
            }
            (2, s)
        }
        Node::Lit(s) => (3, quote(s)),
        Node::Class(s, _) => (3, s.clone()),
        Node::Regex(s, _) => (3, format!("/{s}/")),
        Node::Special(s, _) => (3, format!("special({})", quote(s))),
        Node::Token(s, _) => (3, format!("token({})", quote(s))),
        Node::Text(t, _) if t.is_empty() => (3, "text()".into()),
        Node::Text(t, _) => {
            let mut s = String::from("text_except(");
            for (i, x) in t.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                print(x, &mut s, 0);
            }
            s.push(')');
            (3, s)
        }
        Node::Tool(b, _) => {
            let mut s = String::from("tool { ");
            print(b, &mut s, 0);
            s.push_str(" }");
            (3, s)
        }
        Node::Part(p, _) => (3, p.keyword().to_string()),
        Node::Xml(x, _) => {
            let mut s = String::from("args_xml(");
            let mut args = vec![&x.open, &x.mid_string];
            if x.mid_other != x.mid_string {
                args.push(&x.mid_other);
            }
            args.push(&x.close);
            for (i, a) in args.into_iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                print(a, &mut s, 0);
            }
            s.push(')');
            (3, s)
        }
        Node::Ref(r, _) => (3, r.clone()),
    };
    if own < outer {
        let _ = write!(out, "({text})");
    } else {
        out.push_str(&text);
    }
}

/// A string literal in the language's syntax.
pub fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

use self::Rule as AstRule;
use parser::Rule as Rule_;

/// The format file being parsed: its name, which messages show, and
/// where its lines start. pest's `line_col` counts from the top of the
/// text at every call, which made parsing quadratic (gpt-oss.tdg, 5 KB,
/// took 1.2 ms, paid by every compile that named a format); a binary
/// search over the line starts is not.
struct Src<'t> {
    name: &'t str,
    text: &'t str,
    /// Byte offset of each line's first byte; the first is 0.
    lines: Vec<usize>,
}

impl<'t> Src<'t> {
    fn new(name: &'t str, text: &'t str) -> Src<'t> {
        let breaks = text.match_indices('\n').map(|(i, _)| i + 1);
        Src {
            name,
            text,
            lines: std::iter::once(0).chain(breaks).collect(),
        }
    }

    /// Where `p` starts: 1-based line, and column in characters.
    fn pos(&self, p: &Pair<'_, Rule_>) -> Pos {
        let at = p.as_span().start();
        let line = self.lines.partition_point(|&start| start <= at);
        let start = self.lines[line - 1];
        let col = self.text[start..at].chars().count() + 1;
        Pos { line, col }
    }
}

impl std::fmt::Display for Src<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

fn rule(file: &Src<'_>, p: Pair<'_, Rule_>) -> Result<AstRule, Error> {
    let pos = file.pos(&p);
    let mut entry = false;
    let mut name = String::new();
    let mut body = None;
    for q in p.into_inner() {
        match q.as_rule() {
            Rule_::entry => entry = true,
            Rule_::rule_name => name = q.as_str().to_string(),
            Rule_::alt => body = Some(alt(file, q)?),
            _ => {}
        }
    }
    Ok(AstRule {
        name,
        entry,
        body: body.expect("a rule has a body"),
        pos,
    })
}

fn alt(file: &Src<'_>, p: Pair<'_, Rule_>) -> Result<Node, Error> {
    list(file, p, seq, Node::Alt)
}

fn seq(file: &Src<'_>, p: Pair<'_, Rule_>) -> Result<Node, Error> {
    list(file, p, postfix, Node::Seq)
}

/// The children of `p` through `item`; one child stands alone, several are
/// wrapped.
fn list(
    file: &Src<'_>,
    p: Pair<'_, Rule_>,
    item: fn(&Src<'_>, Pair<'_, Rule_>) -> Result<Node, Error>,
    wrap: fn(Vec<Node>) -> Node,
) -> Result<Node, Error> {
    let mut v = Vec::new();
    for q in p.into_inner() {
        v.push(item(file, q)?);
    }
    Ok(if v.len() == 1 {
        v.pop().expect("one")
    } else {
        wrap(v)
    })
}

fn postfix(file: &Src<'_>, p: Pair<'_, Rule_>) -> Result<Node, Error> {
    let mut inner = p.into_inner();
    let mut node = atom(file, inner.next().expect("an atom"))?;
    for s in inner {
        let (min, max) = match s.as_rule() {
            Rule_::opt => (0, Some(1)),
            Rule_::star => (0, None),
            Rule_::plus => (1, None),
            _ => {
                let pos = file.pos(&s);
                let mut nums = Vec::new();
                let mut comma = false;
                for q in s.into_inner() {
                    match q.as_rule() {
                        Rule_::number => nums.push(q.as_str().parse::<u32>().map_err(|_| {
                            at(
                                file,
                                pos,
                                format!("repetition count {} is too large", q.as_str()),
                            )
                        })?),
                        _ => comma = true,
                    }
                }
                let min = nums[0];
                let max = match (comma, nums.get(1)) {
                    (false, _) => Some(min),
                    (true, Some(&m)) => Some(m),
                    (true, None) => None,
                };
                if max.is_some_and(|m| m < min) {
                    return Err(at(
                        file,
                        pos,
                        format!(
                            "repetition {{{min},{}}}: the maximum is below the minimum",
                            max.unwrap_or(0)
                        ),
                    ));
                }
                if min > MAX_REPEAT || max.is_some_and(|m| m > MAX_REPEAT) {
                    return Err(at(
                        file,
                        pos,
                        format!("repetition counts above {MAX_REPEAT} are refused"),
                    ));
                }
                (min, max)
            }
        };
        node = Node::Repeat(Box::new(node), min, max);
    }
    Ok(node)
}

fn at(file: &Src<'_>, pos: Pos, msg: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::CallFormat,
        format!("{file}:{}:{}: {msg}", pos.line, pos.col),
    )
}

fn atom(file: &Src<'_>, p: Pair<'_, Rule_>) -> Result<Node, Error> {
    let pos = file.pos(&p);
    Ok(match p.as_rule() {
        Rule_::string => Node::Lit(unescape(
            file,
            pos,
            p.into_inner().next().map_or("", |c| c.as_str()),
        )?),
        Rule_::class => Node::Class(p.as_str().to_string(), pos),
        Rule_::regex => {
            let s = p.as_str();
            Node::Regex(s[1..s.len() - 1].replace("\\/", "/"), pos)
        }
        Rule_::reference => Node::Ref(p.as_str().to_string(), pos),
        Rule_::alt => alt(file, p)?,
        Rule_::tool_part => Node::Part(
            match p.as_str() {
                "name" => Part::Name,
                "name_json" => Part::NameJson,
                "args" => Part::Args,
                "args_inline" => Part::ArgsInline,
                "args_python" => Part::ArgsPython,
                "args_gemma" => Part::ArgsGemma,
                _ => Part::ArgsPositional,
            },
            pos,
        ),
        Rule_::tool_block => {
            let body = p.into_inner().next().expect("a tool body");
            Node::Tool(Box::new(alt(file, body)?), pos)
        }
        Rule_::call => {
            let mut inner = p.into_inner();
            let f = inner.next().expect("a function name").as_str().to_string();
            let mut args = Vec::new();
            for a in inner {
                args.push(alt(file, a)?);
            }
            match f.as_str() {
                "special" | "token" => {
                    let [Node::Lit(s)] = args.as_slice() else {
                        return Err(at(
                            file,
                            pos,
                            format!("{f}(...) takes one string: the token's name"),
                        ));
                    };
                    if f == "special" {
                        Node::Special(s.clone(), pos)
                    } else {
                        Node::Token(s.clone(), pos)
                    }
                }
                "args_xml" => xml(file, pos, args)?,
                "text" if !args.is_empty() => {
                    return Err(at(
                        file,
                        pos,
                        "text() takes no arguments; text_except(...) takes triggers",
                    ))
                }
                "text_except" if args.is_empty() => {
                    return Err(at(
                        file,
                        pos,
                        "text_except(...) needs at least one trigger; text() is free text",
                    ))
                }
                _ => Node::Text(args, pos),
            }
        }
        r => unreachable!("atom {r:?}"),
    })
}

/// `args_xml(OPEN, MID, CLOSE)` or `args_xml(OPEN, MID_STRING, MID_OTHER, CLOSE)`.
fn xml(file: &Src<'_>, pos: Pos, args: Vec<Node>) -> Result<Node, Error> {
    let mut it = args.into_iter();
    let x = match (it.next(), it.next(), it.next(), it.next(), it.next()) {
        (Some(open), Some(mid), Some(close), None, None) => Xml {
            open,
            mid_string: mid.clone(),
            mid_other: mid,
            close,
        },
        (Some(open), Some(mid_string), Some(mid_other), Some(close), None) => Xml {
            open,
            mid_string,
            mid_other,
            close,
        },
        _ => {
            return Err(at(
                file,
                pos,
                "args_xml takes (OPEN, MID, CLOSE) or (OPEN, MID_STRING, MID_OTHER, CLOSE)",
            ))
        }
    };
    Ok(Node::Xml(Box::new(x), pos))
}

fn unescape(file: &Src<'_>, pos: Pos, s: &str) -> Result<String, Error> {
    let mut out = String::new();
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some(c @ ('"' | '\\' | '/')) => out.push(c),
            Some('u') => {
                let hex: String = it.by_ref().skip(1).take_while(|&c| c != '}').collect();
                let c = u32::from_str_radix(&hex, 16)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| {
                        at(
                            file,
                            pos,
                            format!("\\u{{{hex}}} is not a Unicode scalar value"),
                        )
                    })?;
                out.push(c);
            }
            other => {
                return Err(at(
                    file,
                    pos,
                    format!("unknown escape \\{}", other.unwrap_or(' ')),
                ))
            }
        }
    }
    Ok(out)
}

fn syntax_error(file: &str, text: &str, e: pest::error::Error<Rule_>) -> Error {
    let (line, col) = match e.line_col {
        pest::error::LineColLocation::Pos(p) => p,
        pest::error::LineColLocation::Span(p, _) => p,
    };
    let offset = match e.location {
        pest::error::InputLocation::Pos(o) => o,
        pest::error::InputLocation::Span((o, _)) => o,
    };
    let found: String = text[offset.min(text.len())..]
        .chars()
        .take_while(|&c| c != '\n')
        .take(24)
        .collect();
    let found = if found.is_empty() {
        if offset >= text.len() {
            "the end of the file".to_string()
        } else {
            "the end of the line".to_string()
        }
    } else {
        format!("{found:?}")
    };
    let expected = match &e.variant {
        pest::error::ErrorVariant::ParsingError { positives, .. } => {
            let mut names: Vec<&str> = positives.iter().map(describe).collect();
            names.sort_unstable();
            names.dedup();
            names.join(", ")
        }
        pest::error::ErrorVariant::CustomError { message } => message.clone(),
    };
    Error::new(
        ErrorKind::CallFormat,
        format!("{file}:{line}:{col}: expected {expected}; found {found}"),
    )
}

fn describe(r: &Rule_) -> &'static str {
    match r {
        Rule_::EOI => "the end of the file",
        Rule_::rule | Rule_::entry | Rule_::rule_name => "a rule (`name = ...;`)",
        Rule_::alt | Rule_::seq | Rule_::postfix => "an expression",
        Rule_::opt | Rule_::star | Rule_::plus | Rule_::range => {
            "a repetition (`?`, `*`, `+`, `{m,n}`)"
        }
        Rule_::number => "a number",
        Rule_::range_comma => "`,`",
        Rule_::string | Rule_::chars => "a string",
        Rule_::escape => "an escape (\\n \\t \\r \\\" \\\\ \\0 \\/ \\u{...})",
        Rule_::class => "a character class",
        Rule_::regex => "a /regex/",
        Rule_::call | Rule_::function => {
            "special(...), token(...), text(), text_except(...) or args_xml(...)"
        }
        Rule_::tool_block => "tool { ... }",
        Rule_::tool_part => {
            "name, name_json, args, args_inline, args_positional, args_python or args_gemma"
        }
        Rule_::reference => "a rule name",
        _ => "more input",
    }
}
