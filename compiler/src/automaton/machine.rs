//! The automaton stage's glue: a lowered grammar to a minimized [`Machine`]
//! with its entry points, timed phase by phase, a state bound exceeded on
//! the way blamed on the part of the schema responsible.

use std::time::{Duration, Instant};

use crate::automaton::packed::PackedDfa;
use crate::automaton::{dfa, nfa, region, sparse};
use crate::lower::{blame, call_format};
use crate::spec::ToolSet;
use crate::vocab::Vocab;
use crate::{Error, ErrorKind, Options, Progress};

/// Statistics of [`build_dfa`].
#[derive(Debug, Clone, Copy, Default)]
pub struct DfaStats {
    /// NFA states built.
    pub nfa_states: usize,
    /// DFA states after determinization, before trimming and minimization.
    pub dfa_states: usize,
}

/// A minimized DFA with its entry points.
pub struct Machine {
    /// The trimmed, minimized DFA, packed as the artifact stores it.
    pub dfa: PackedDfa,
    /// Entry rule names and their start states; the first is the default.
    /// With several entries, `dfa.start` is a selector state that no token
    /// reaches, and each entry's state is where its selector leads.
    pub entries: Vec<(String, u32)>,
    /// Per entry, whether it stops after its first call: it was lowered
    /// with its call repeated, and serves only the end of sequence at a
    /// state that ends a call (see `call_format::stops`).
    pub stops: Vec<bool>,
    /// Per state, whether it ends a call; empty when no entry stops.
    pub call_end: Vec<bool>,
    /// The special tokens the grammar uses.
    pub specials: Vec<u32>,
    /// Over-approximations made under `--relax`, one line each.
    pub relaxed: Vec<String>,
    /// The region tree of the grammar (see [`region`]).
    pub regions: Vec<region::Region>,
    /// Each state's regions, sorted.
    pub labels: region::Labels,
    /// What a one-tool matcher needs: each state's tool-name colour (see
    /// [`dfa::NameColors`]); `None` when the grammar has no tool-name trie
    /// (a `tool { }` that does not write the name first, a schema alone).
    pub names: Option<ToolNames>,
}

/// The tool names and each state's tool-name colour (see
/// [`dfa::NameColors`]): what the TOOLS section of the artifact stores.
#[derive(Debug, Clone, Default)]
pub struct ToolNames {
    /// The tools' names, in tool order.
    pub tools: Vec<String>,
    /// Per minimized state its colour, and the colours.
    pub colors: dfa::NameColors,
}

/// Time spent per named phase.
pub type Phases = Vec<(&'static str, Duration)>;

/// Lowers, determinizes, trims and minimizes.
pub fn build_dfa(
    set: &ToolSet,
    opts: &Options,
    vocab: &Vocab,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Machine, DfaStats, Phases), Error> {
    let specials = call_format::Specials::of(vocab);
    let front = front_tools(set, opts, vocab, &specials, progress)?;
    finish_tools(front, set, opts, progress)
}

/// The [`Front`] of a tool set's grammar.
pub(crate) fn front_tools(
    set: &ToolSet,
    opts: &Options,
    vocab: &Vocab,
    specials: &call_format::Specials,
    progress: &mut dyn FnMut(Progress),
) -> Result<Front, Error> {
    let front = lower_tools(set, opts, vocab, specials, progress)?
        .determinize_tools(set, opts, progress)?;
    explicit_if_mixed(front, opts, |o| {
        front_tools(set, o, vocab, specials, progress)
    })
}

/// `front`, or where one of its states that ends a call could also be
/// before the first call's end (then an entry that stops after its first
/// call would be served wrong there), the grammar lowered and determinized
/// again with every entry as written. No shipped format needs it.
/// `rebuild` makes the front again with the options it is given.
pub(crate) fn explicit_if_mixed(
    front: Front,
    opts: &Options,
    rebuild: impl FnOnce(&Options) -> Result<Front, Error>,
) -> Result<Front, Error> {
    if !front.dfa.call_mixed {
        return Ok(front);
    }
    drop(front);
    rebuild(&Options {
        stop_entries: false,
        ..opts.clone()
    })
}

/// The [`LoweredNfa`] of a tool set's grammar.
pub(crate) fn lower_tools(
    set: &ToolSet,
    opts: &Options,
    vocab: &Vocab,
    specials: &call_format::Specials,
    progress: &mut dyn FnMut(Progress),
) -> Result<LoweredNfa, Error> {
    lower_nfa(
        || crate::lower::lower_with(set, opts, vocab, specials),
        opts,
        |e| blame(e, set, opts, 0..set.tools.len()),
        progress,
    )
}

/// [`Front::finish`] for a tool set's grammar: its tool names added.
pub(crate) fn finish_tools(
    front: Front,
    set: &ToolSet,
    opts: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Machine, DfaStats, Phases), Error> {
    let (mut machine, stats, phases) = front.finish(opts, progress)?;
    if let Some(names) = &mut machine.names {
        names.tools = set.tools.iter().map(|t| t.name.clone()).collect();
    }
    Ok((machine, stats, phases))
}

/// [`build_dfa`] for the grammar of [`lower_schema`].
pub fn build_schema_dfa(
    set: &ToolSet,
    opts: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Machine, DfaStats, Phases), Error> {
    build_lowered(
        || crate::lower::lower_schema(set, opts),
        opts,
        |e| blame(e, set, opts, 0..1),
        progress,
    )
}

/// What lowering and determinization leave for trimming and
/// minimization: the unminimized DFA, which can already serve masks on
/// demand ([`crate::Compiler::start`]) while [`Front::finish`] goes on.
pub struct Front {
    /// The DFA of the subset construction by its live moves, neither
    /// trimmed nor minimized.
    pub dfa: sparse::SparseDfa,
    /// Whether every state of the NFA can finish ([`nfa::Nfa::all_finish`]):
    /// then every state of `dfa` can, and it needs no pruning.
    finishes: bool,
    labels: region::Labels,
    colors: dfa::NameColors,
    regions: Vec<region::Region>,
    /// Entry rule names; entry `k` starts where `[ENTRY_ESCAPE, k]` leads
    /// from the start when there are several.
    pub entries: Vec<String>,
    /// Per entry, whether it stops after its first call.
    stops: Vec<bool>,
    /// The special tokens the grammar uses.
    pub specials: Vec<u32>,
    relaxed: Vec<String>,
    /// Sizes so far.
    pub stats: DfaStats,
    /// Time spent so far, per phase.
    pub phases: Phases,
}

/// What lowering leaves for determinization: the grammar's NFA (shared,
/// so that masks can be served from it lazily while it is determinized,
/// see [`crate::Compiler::start`]) and what the artifact needs besides.
pub struct LoweredNfa {
    /// The NFA of the whole grammar.
    pub nfa: std::sync::Arc<nfa::Nfa>,
    /// Entry rule names; entry `k` starts where `[ENTRY_ESCAPE, k]` leads
    /// from the start when there are several.
    pub entries: Vec<String>,
    /// Per entry, whether it stops after its first call.
    pub stops: Vec<bool>,
    /// The special tokens the grammar uses.
    pub specials: Vec<u32>,
    relaxed: Vec<String>,
    phases: Phases,
}

/// Times `lower` and the NFA build as the "lower" phase, then
/// determinizes; a state bound exceeded on the way goes through `blame`.
pub(crate) fn front(
    lower: impl FnOnce() -> Result<call_format::Lowered, Error>,
    opts: &Options,
    blame: impl Fn(Error) -> Error,
    progress: &mut dyn FnMut(Progress),
) -> Result<Front, Error> {
    lower_nfa(lower, opts, &blame, progress)?.determinize(opts, &[], blame, progress)
}

/// Times `lower` and the NFA build as the "lower" phase; a state bound
/// exceeded goes through `blame`.
fn lower_nfa(
    lower: impl FnOnce() -> Result<call_format::Lowered, Error>,
    opts: &Options,
    blame: impl Fn(Error) -> Error,
    progress: &mut dyn FnMut(Progress),
) -> Result<LoweredNfa, Error> {
    let mut phases = Vec::new();
    let t = timed("lower", progress);
    let lowered = lower()?;
    let nfa = match nfa::build(&lowered.expr, opts.max_nfa_states) {
        Ok(nfa) => nfa,
        Err(limit) => return Err(blame(limit.into())),
    };
    drop(lowered.expr);
    // The builder's states and the expression are freed.
    crate::heap::give_back(nfa.len() * nfa::STATE_BYTES);
    done("lower", t, &mut phases, progress);
    Ok(LoweredNfa {
        nfa: std::sync::Arc::new(nfa),
        entries: lowered.entries,
        stops: lowered.stops,
        specials: lowered.specials,
        relaxed: lowered.relaxed,
        phases,
    })
}

impl LoweredNfa {
    /// [`LoweredNfa::determinize`] for a tool set's grammar.
    pub(crate) fn determinize_tools(
        self,
        set: &ToolSet,
        opts: &Options,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Front, Error> {
        let names: Vec<String> = set.tools.iter().map(|t| format!("{:?}", t.name)).collect();
        self.determinize(
            opts,
            &names,
            |e| blame(e, set, opts, 0..set.tools.len()),
            progress,
        )
    }

    /// The subset construction, timed as the "determinize" phase; a state
    /// bound exceeded goes through `blame`.
    fn determinize(
        self,
        opts: &Options,
        tool_names: &[String],
        blame: impl Fn(Error) -> Error,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Front, Error> {
        let LoweredNfa {
            nfa,
            entries,
            stops,
            specials,
            relaxed,
            mut phases,
        } = self;
        let t = timed("determinize", progress);
        let finishes = nfa.all_finish();
        let (dfa, labels, colors) =
            match dfa::Dfa::determinize_named(&nfa, opts.max_states, crate::threads(opts)) {
                Ok(dfa) => dfa,
                Err(limit) => {
                    let e = blame(limit.into());
                    let Some(r) = limit.region() else {
                        return Err(e);
                    };
                    let tool = |t: u32| {
                        tool_names
                            .get(t as usize)
                            .cloned()
                            .unwrap_or_else(|| format!("#{t}"))
                    };
                    let at = region::describe(&nfa.regions, r, tool);
                    let message = format!("{e}; it was building {at}");
                    return Err(e.with_message(message));
                }
            };
        let stats = DfaStats {
            nfa_states: nfa.len(),
            dfa_states: dfa.n_states(),
        };
        done("determinize", t, &mut phases, progress);
        // The lazy DFA may still hold the NFA: then its regions are copied.
        let regions =
            std::sync::Arc::try_unwrap(nfa).map_or_else(|n| n.regions.clone(), |n| n.regions);
        Ok(Front {
            dfa,
            finishes,
            labels,
            colors,
            regions,
            entries,
            stops,
            specials,
            relaxed,
            stats,
            phases,
        })
    }
}

fn timed(name: &'static str, progress: &mut dyn FnMut(Progress)) -> Instant {
    progress(Progress::Start(name));
    Instant::now()
}

fn done(
    name: &'static str,
    t: Instant,
    phases: &mut Vec<(&'static str, Duration)>,
    progress: &mut dyn FnMut(Progress),
) {
    let d = t.elapsed();
    phases.push((name, d));
    progress(Progress::Done(name, d));
}

/// The state entry `k` of `entries` starts at in `dfa` (the start itself
/// when there is one entry), or the dead state.
pub fn entry_state(dfa: &PackedDfa, entries: usize, k: usize) -> u32 {
    if entries == 1 {
        dfa.start
    } else {
        dfa.walk(dfa.start, &[call_format::ENTRY_ESCAPE, k as u8])
    }
}

/// [`front`], then [`Front::finish`].
fn build_lowered(
    lower: impl FnOnce() -> Result<call_format::Lowered, Error>,
    opts: &Options,
    blame: impl Fn(Error) -> Error,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Machine, DfaStats, Phases), Error> {
    front(lower, opts, blame, progress)?.finish(opts, progress)
}

impl Front {
    /// Trims and minimizes: the [`Machine`], with the sizes and the phase
    /// times since lowering began.
    pub fn finish(
        self,
        opts: &Options,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(Machine, DfaStats, Phases), Error> {
        let Front {
            dfa: mut sparse,
            finishes,
            labels,
            colors,
            regions,
            entries,
            stops,
            specials,
            relaxed,
            stats,
            mut phases,
        } = self;
        let t = timed("minimize", progress);
        if !finishes && !sparse.prune() {
            return Err(Error::new(
                ErrorKind::Grammar,
                "the grammar accepts no output at all",
            ));
        }
        // Name states of different colours are kept apart, so that a
        // one-tool matcher reads each state's colour exactly (DESIGN.md §3).
        let (dfa, new_of, names) = if colors.any() {
            let (dfa, new_of, color) =
                sparse.minimize_colored(&colors.color, crate::threads(opts))?;
            let names = ToolNames {
                tools: Vec::new(),
                colors: dfa::NameColors {
                    color,
                    classes: colors.classes,
                },
            };
            (dfa, new_of, Some(names))
        } else {
            let (dfa, new_of) = sparse.minimize(crate::threads(opts))?;
            (dfa, new_of, None)
        };
        let freed = sparse.bytes();
        let call_end = carried_ends(&sparse.call_end, &new_of, dfa.n_states());
        drop(sparse);
        let skip = |m| m == dfa::UNREACHED || m == dfa::DEAD;
        let labels = labels.carried(&new_of, dfa.n_states(), skip);
        drop(new_of);
        // The subset construction's DFA and minimization's arrays.
        crate::heap::give_back(freed);
        done("minimize", t, &mut phases, progress);
        let entries = entries
            .iter()
            .enumerate()
            .map(|(k, name)| match entry_state(&dfa, entries.len(), k) {
                dfa::DEAD => Err(Error::new(
                    ErrorKind::Grammar,
                    format!(
                        "entry {name:?} of format {:?} accepts no output",
                        opts.format.name
                    ),
                )),
                s => Ok((name.clone(), s)),
            })
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(state) =
            stopping_states(&entries, &stops, &call_end).find(|&s| !dfa.accept[s as usize])
        {
            // `call_format::stops` only stops entries that its repeated
            // calls end; this would be a bug there.
            return Err(Error::new(
                ErrorKind::CallFormat,
                format!("state {state} ends a call but does not accept"),
            ));
        }
        let machine = Machine {
            dfa,
            entries,
            stops,
            call_end,
            specials,
            relaxed,
            regions,
            labels,
            names,
        };
        Ok((machine, stats, phases))
    }
}

/// Per state of the minimized DFA, whether it ends a call: carried from
/// the subset construction's states (minimization keeps the two kinds
/// apart). Empty when none does.
fn carried_ends(ends: &[bool], new_of: &[u32], n: usize) -> Vec<bool> {
    if !ends.iter().any(|&e| e) {
        return Vec::new();
    }
    let mut out = vec![false; n];
    for (&m, &e) in new_of.iter().zip(ends) {
        if e && m != dfa::UNREACHED && m != dfa::DEAD {
            out[m as usize] = true;
        }
    }
    out
}

/// The states that end a call, when some entry stops after its first one.
fn stopping_states<'a>(
    entries: &[(String, u32)],
    stops: &[bool],
    call_end: &'a [bool],
) -> impl Iterator<Item = u32> + 'a {
    let any = entries.len() == stops.len() && stops.iter().any(|&s| s);
    call_end
        .iter()
        .enumerate()
        .filter(move |&(_, &e)| any && e)
        .map(|(s, _)| s as u32)
}

impl Machine {
    /// The states from which a token can run past the end of a call
    /// (`</tool_call>` written as text, then a token `>\n`), ascending,
    /// each with those tokens, ascending: the stop gates, where a matcher
    /// that stops after its first call clears them from the mask
    /// (STOP_TOKENS). Empty when no entry stops.
    ///
    /// Such a token holds a byte into a state that ends a call followed by
    /// one out of it, so only tokens with such a pair are tried, and only
    /// from the states no farther before a call's end than the token's
    /// last byte into one (at 10,000 tools, 250,000 states near an end and
    /// 80 candidates: walking every pair was half of this search).
    pub fn stop_gates(&self, text: &crate::vocab::TokenText<'_>) -> Vec<(u32, Vec<u32>)> {
        let dfa = &self.dfa;
        let ends = &self.call_end;
        if !self.stops.iter().any(|&s| s) || !ends.iter().any(|&e| e) {
            return Vec::new();
        }
        let n = dfa.n_states();
        // One pass over the moves (millions at scale): the classes into
        // and out of a call's end, and each state's predecessor count.
        let mut into = vec![false; dfa.n_classes];
        let mut out = vec![false; dfa.n_classes];
        let mut at = vec![0u32; n + 1];
        for s in 0..n as u32 {
            let from_end = ends[s as usize];
            for (c, t) in dfa.moves(s) {
                into[c] |= ends[t as usize];
                out[c] |= from_end;
                at[t as usize + 1] += 1;
            }
        }
        // The candidates, each with the last position inside it where a
        // call's end can fall (after a byte into one).
        let class = |b: u8| dfa.classes[b as usize] as usize;
        let tokens: Vec<(u32, &[u8], usize)> = (0..text.len() as u32)
            .filter_map(|t| Some((t, text.get(t)?)))
            .filter(|(_, b)| b.windows(2).any(|w| into[class(w[0])] && out[class(w[1])]))
            .filter_map(|(t, b)| {
                let reach = (1..b.len()).rev().find(|&i| into[class(b[i - 1])])?;
                Some((t, b, reach))
            })
            .collect();
        let Some(farthest) = tokens.iter().map(|t| t.2).max() else {
            return Vec::new();
        };
        // Each state's distance in bytes to a call's end, up to the
        // farthest reach, by a backward search over predecessor lists.
        for i in 0..n {
            at[i + 1] += at[i];
        }
        let mut fill = at.clone();
        let mut preds = vec![0u32; at[n] as usize];
        for s in 0..n as u32 {
            for (_, t) in dfa.moves(s) {
                preds[fill[t as usize] as usize] = s;
                fill[t as usize] += 1;
            }
        }
        drop(fill);
        let mut dist = vec![u32::MAX; n];
        let mut layer: Vec<u32> = (0..n as u32).filter(|&s| ends[s as usize]).collect();
        for &s in &layer {
            dist[s as usize] = 0;
        }
        for d in 1..=farthest as u32 {
            let mut next = Vec::new();
            for &q in &layer {
                for &p in &preds[at[q as usize] as usize..at[q as usize + 1] as usize] {
                    if dist[p as usize] == u32::MAX {
                        dist[p as usize] = d;
                        next.push(p);
                    }
                }
            }
            layer = next;
        }
        drop(preds);
        let runs_past = |s: u32, bytes: &[u8]| {
            let mut q = s;
            for (i, &b) in bytes.iter().enumerate() {
                if i > 0 && ends[q as usize] {
                    return true;
                }
                q = dfa.next(q, b);
                if q == dfa::DEAD {
                    return false;
                }
            }
            false
        };
        // A token runs past an end `i` bytes in only if `i` is at least
        // the state's distance and at most the token's reach: most pairs
        // are never walked.
        (0..n as u32)
            .filter(|&s| dist[s as usize] != u32::MAX)
            .filter_map(|s| {
                let d = dist[s as usize] as usize;
                let past: Vec<u32> = tokens
                    .iter()
                    .filter(|t| t.2 >= d && runs_past(s, t.1))
                    .map(|t| t.0)
                    .collect();
                (!past.is_empty()).then_some((s, past))
            })
            .collect()
    }

    /// The states a matcher can be in: those reached from an entry by text
    /// bytes and by whole special tokens. The others (the entry selector,
    /// the inside of a special token's reserved bytes) get an empty mask.
    /// With the states' byte runs (`runs`, made of this DFA), each state's
    /// moves are read as its few runs rather than its row.
    pub fn served_states(&self, runs: Option<&crate::cross::Regions>) -> Vec<bool> {
        let dfa = &self.dfa;
        let mut seen = vec![false; dfa.n_states()];
        let mut stack: Vec<u32> = self.entries.iter().map(|e| e.1).collect();
        for &s in &stack {
            seen[s as usize] = true;
        }
        let markers: Vec<[u8; 4]> = self
            .specials
            .iter()
            .filter_map(|&id| call_format::special_marker(id))
            .collect();
        // The classes of the text bytes (those below the entry escape),
        // each once: a row read by class rather than 254 lookups by byte.
        let mut text_classes: Vec<usize> = (0..call_format::ENTRY_ESCAPE)
            .map(|b| dfa.classes[b as usize] as usize)
            .collect();
        text_classes.sort_unstable();
        text_classes.dedup();
        let mut text = Vec::new();
        while let Some(s) = stack.pop() {
            text.clear();
            match runs {
                // A run holds a text byte when it starts below the escape.
                Some(r) => text.extend(
                    r.runs_of(s)
                        .iter()
                        .take_while(|&&(b, _)| b < call_format::ENTRY_ESCAPE)
                        .map(|&(_, t)| t),
                ),
                None => text.extend(text_classes.iter().map(|&c| dfa.target(s, c))),
            }
            let specials = markers.iter().map(|m| dfa.walk(s, m));
            for t in text.iter().copied().chain(specials) {
                if t != dfa::DEAD && !seen[t as usize] {
                    seen[t as usize] = true;
                    stack.push(t);
                }
            }
        }
        seen
    }
}
