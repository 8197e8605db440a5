//! Lowering: from a parsed tool list and a call format to one [`Expr`]
//! (`crate::automaton::expr::Expr`) over bytes.
//!
//! - [`json`] lowers each tool's JSON Schema to its argument machine;
//! - [`value`] holds the exact value languages those machines use
//!   (integer and decimal ranges, `multipleOf`, string content, patterns,
//!   the JSON Schema `format` keyword's RFC grammars);
//! - [`call_format`] lowers the call format (a `.tdg` grammar file such as
//!   `react` or `hermes`) around the tool-name trie and those machines.

pub mod call_format;
pub(crate) mod json;
pub(crate) mod value;

use std::collections::HashMap;

use crate::automaton::expr::{self, Expr};
use crate::automaton::region;
use crate::spec::ToolSet;
use crate::vocab::Vocab;
use crate::{Error, ErrorKind, Options};
use call_format::Encoding;
use json::Lowering;

/// The whole grammar of a tool set as an [`Expr`], with its entry rules
/// and the special tokens it uses.
pub fn lower(set: &ToolSet, opts: &Options, vocab: &Vocab) -> Result<call_format::Lowered, Error> {
    lower_with(set, opts, vocab, &call_format::Specials::of(vocab))
}

/// [`lower`] with the vocabulary's special tokens already found.
pub(crate) fn lower_with(
    set: &ToolSet,
    opts: &Options,
    vocab: &Vocab,
    specials: &call_format::Specials,
) -> Result<call_format::Lowered, Error> {
    let mut lowering = Lowering::new(set, opts.json);
    let mut args = Vec::with_capacity(set.tools.len());
    // Tools with the same parameters schema share one argument machine: the
    // NFA builds it once, determinization reaches one copy of its states,
    // and minimization has that much less to merge.
    let keys: Vec<String> = set.tools.iter().map(|t| t.parameters.to_string()).collect();
    let mut groups: HashMap<&str, Vec<u32>> = HashMap::new();
    for (i, k) in keys.iter().enumerate() {
        groups.entry(k).or_default().push(i as u32);
    }
    let mut seen: HashMap<&str, Expr> = HashMap::new();
    let mut group_of: HashMap<&str, usize> = HashMap::new();
    let group_index: Vec<usize> = keys
        .iter()
        .map(|k| {
            let next = group_of.len();
            *group_of.entry(k.as_str()).or_insert(next)
        })
        .collect();
    for (i, key) in keys.iter().enumerate() {
        let e = match seen.get(key.as_str()) {
            Some(e) => e.clone(),
            None => {
                let tools = groups[key.as_str()].clone();
                let e = Expr::shared(Expr::tag(
                    region::Tag::Args { tools },
                    lowering.tool_arguments(i)?,
                ));
                seen.insert(key, e.clone());
                e
            }
        };
        args.push(e);
    }
    // One lowering per spelling, each with its own memo of machines.
    let mut spelled: Vec<(String, Lowering)> = Vec::new();
    let mut encode = |i: usize, enc: &Encoding| -> Result<Expr, Error> {
        let spelling = match enc {
            Encoding::Positional => return lowering.tool_positional(i),
            Encoding::Spelled(s) => s,
        };
        let key = format!("{spelling:?}");
        let k = match spelled.iter().position(|(k, _)| *k == key) {
            Some(k) => k,
            None => {
                spelled.push((key, Lowering::spelled(set, opts.json, spelling.clone())));
                spelled.len() - 1
            }
        };
        spelled[k].1.tool_arguments(i)
    };
    let mut parts = call_format::ToolParts {
        names: set.tools.iter().map(|t| t.name.clone()).collect(),
        groups: group_index,
        args,
        encode: &mut encode,
    };
    let mut lowered =
        call_format::lower(&opts.format, &mut parts, vocab, specials, opts.stop_entries)?;
    let mut relaxed = std::mem::take(&mut lowering.relaxed);
    for (_, l) in &mut spelled {
        for line in l.relaxed.drain(..) {
            if !relaxed.contains(&line) {
                relaxed.push(line);
            }
        }
    }
    lowered.relaxed = relaxed;
    Ok(lowered)
}

/// The whole grammar of a tool set as one regular expression (the syntax of
/// `regex-syntax`, Unicode mode), for running other engines on exactly the
/// language this compiler builds: that of the format's first entry.
/// Formats that use special tokens have no such spelling (their reserved
/// bytes are not text).
pub fn regex(set: &ToolSet, opts: &Options, vocab: &Vocab) -> Result<String, Error> {
    let mut opts = opts.clone();
    opts.format = opts.format.only_default_entry();
    let lowered = lower(set, &opts, vocab)?;
    expr::to_regex(&lowered.expr).map_err(|m| {
        Error::new(
            ErrorKind::Unsupported,
            format!("the grammar has no regular-expression spelling: {m}"),
        )
    })
}

/// Adds to a state-bound error the part of the schemas that exceeds the
/// bound on its own, if one does.
pub(crate) fn blame(
    e: Error,
    set: &ToolSet,
    opts: &Options,
    tools: std::ops::Range<usize>,
) -> Error {
    if !e.limit().is_some_and(|l| l.is_size()) {
        return e;
    }
    // On a clock of its own: the compile's may be spent, and a part that
    // exceeds a bound alone takes no longer than the whole did.
    let guard = crate::limits::Guard::start(&opts.limits);
    let mut lowering = Lowering::new(set, opts.json);
    for i in tools {
        let found = guard.run(|| lowering.blame(i, opts.max_states, opts.max_nfa_states));
        let Ok(found) = found else {
            return e;
        };
        if let Some(place) = found {
            return Error::new(
                ErrorKind::Limit,
                format!(
                    "{}; the part of the schema responsible: {place} (tool {:?})",
                    e.message(),
                    set.tools[i].name
                ),
            );
        }
    }
    e
}

/// The grammar of one JSON Schema on its own: the whole output is one JSON
/// value that the schema accepts (tool 0 of `set`; see
/// [`spec::schema_document`]). No call format surrounds it.
pub fn lower_schema(set: &ToolSet, opts: &Options) -> Result<call_format::Lowered, Error> {
    let mut lowering = Lowering::new(set, opts.json);
    let expr = lowering.schema_value(0)?;
    Ok(call_format::Lowered {
        expr,
        entries: vec!["value".to_string()],
        stops: vec![false],
        specials: Vec::new(),
        relaxed: lowering.relaxed,
    })
}
