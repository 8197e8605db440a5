//! The automaton stage's glue: a lowered grammar to a minimized [`Machine`]
//! with its entry points, timed phase by phase, a state bound exceeded on
//! the way blamed on the part of the schema responsible.

use std::time::{Duration, Instant};

use crate::automaton::{dfa, nfa, region};
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
    /// The trimmed, minimized DFA.
    pub dfa: dfa::Dfa,
    /// Entry rule names and their start states; the first is the default.
    /// With several entries, `dfa.start` is a selector state that no token
    /// reaches, and each entry's state is where its selector leads.
    pub entries: Vec<(String, u32)>,
    /// The special tokens the grammar uses.
    pub specials: Vec<u32>,
    /// Over-approximations made under `--relax`, one line each.
    pub relaxed: Vec<String>,
    /// The region tree of the grammar (see [`region`]).
    pub regions: Vec<region::Region>,
    /// Each state's regions, sorted.
    pub labels: Vec<Vec<u32>>,
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
    let (mut machine, stats, phases) = build_lowered(
        || crate::lower::lower(set, opts, vocab),
        opts,
        |e| blame(e, set, opts, 0..set.tools.len()),
        progress,
    )?;
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

/// Times `lower` and the NFA build as the "lower" phase, then
/// determinizes, trims and minimizes; a state bound exceeded on the way
/// goes through `blame`.
fn build_lowered(
    lower: impl FnOnce() -> Result<call_format::Lowered, Error>,
    opts: &Options,
    blame: impl FnOnce(Error) -> Error,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Machine, DfaStats, Phases), Error> {
    let mut phases = Vec::new();
    let timed = |name: &'static str, progress: &mut dyn FnMut(Progress)| {
        progress(Progress::Start(name));
        let t = Instant::now();
        move |phases: &mut Vec<(&'static str, Duration)>, progress: &mut dyn FnMut(Progress)| {
            let d = t.elapsed();
            phases.push((name, d));
            progress(Progress::Done(name, d));
        }
    };
    let done = timed("lower", progress);
    let lowered = lower()?;
    let nfa = match nfa::build(&lowered.expr, opts.max_nfa_states) {
        Ok(nfa) => nfa,
        Err(limit) => return Err(blame(limit.into())),
    };
    drop(lowered.expr);
    done(&mut phases, progress);

    let done = timed("determinize", progress);
    let (mut dfa, labels, colors) = match dfa::Dfa::determinize_named(&nfa, opts.max_states) {
        Ok(dfa) => dfa,
        Err(limit) => return Err(blame(limit.into())),
    };
    let stats = DfaStats {
        nfa_states: nfa.states.len(),
        dfa_states: dfa.n_states(),
    };
    let regions = nfa.regions;
    drop(nfa.states);
    let unminimized = dfa.clone();
    done(&mut phases, progress);

    let done = timed("minimize", progress);
    if !dfa.trim() {
        return Err(Error::new(
            ErrorKind::Grammar,
            "the grammar accepts no output at all",
        ));
    }
    // Name states of different colours are kept apart, so that a
    // one-tool matcher reads each state's colour exactly (DESIGN.md §3).
    let names = if colors.any() {
        let trimmed = unminimized.carry_colors(&colors.color, &dfa);
        let color = dfa.minimize_colored(&trimmed, colors.classes.len());
        Some(ToolNames {
            tools: Vec::new(),
            colors: dfa::NameColors {
                color,
                classes: colors.classes,
            },
        })
    } else {
        dfa.minimize();
        None
    };
    let labels = unminimized.carry_labels(&labels, &dfa);
    drop(unminimized);
    done(&mut phases, progress);
    let entries = if lowered.entries.len() == 1 {
        vec![(lowered.entries[0].clone(), dfa.start)]
    } else {
        lowered
            .entries
            .iter()
            .enumerate()
            .map(|(k, name)| {
                let s = dfa.walk(dfa.start, &[call_format::ENTRY_ESCAPE, k as u8]);
                if s == dfa::DEAD {
                    Err(Error::new(
                        ErrorKind::Grammar,
                        format!(
                            "entry {name:?} of format {:?} accepts no output",
                            opts.format.name
                        ),
                    ))
                } else {
                    Ok((name.clone(), s))
                }
            })
            .collect::<Result<Vec<_>, _>>()?
    };
    let machine = Machine {
        dfa,
        entries,
        specials: lowered.specials,
        relaxed: lowered.relaxed,
        regions,
        labels,
        names,
    };
    Ok((machine, stats, phases))
}

impl Machine {
    /// The states a matcher can be in: those reached from an entry by text
    /// bytes and by whole special tokens. The others (the entry selector,
    /// the inside of a special token's reserved bytes) get an empty mask.
    pub fn served_states(&self) -> Vec<bool> {
        let dfa = &self.dfa;
        let mut seen = vec![false; dfa.n_states()];
        let mut stack: Vec<u32> = self.entries.iter().map(|e| e.1).collect();
        for &s in &stack {
            seen[s as usize] = true;
        }
        let markers: Vec<[u8; 4]> = self
            .specials
            .iter()
            .map(|&id| call_format::special_marker(id))
            .collect();
        while let Some(s) = stack.pop() {
            let text = (0..call_format::ENTRY_ESCAPE).map(|b| dfa.next(s, b));
            let specials = markers.iter().map(|m| dfa.walk(s, m));
            for t in text.chain(specials) {
                if t != dfa::DEAD && !seen[t as usize] {
                    seen[t as usize] = true;
                    stack.push(t);
                }
            }
        }
        seen
    }
}
