//! Writing the artifact: the DFA, its masks and the vocab turned into the
//! runtime codec's sections (`tooldec_runtime::codec`, which lays out the
//! payload and stamps its checksum), then the envelope and one zstd frame.
//!
//! What is decided here is how each distinct mask is stored: the dense
//! bitmask (`mask_words` words), the list of allowed ids, the list of
//! disallowed ids below the token count, or for a budget tier, its state's
//! full mask minus a list. The runtime fills a dense mask with one copy and
//! a list by zeroing (or filling) and setting (or clearing) its bits, so a
//! list is used only while it is short: at most [`LIST_FRACTION`]th of the
//! dense words, where it is much smaller and at most a few hundred ns
//! slower, and at most [`HOT_LIST_FRACTION`]th for the masks of looping
//! states, which serve most steps and where a list must be about as fast.

use tooldec_runtime::codec::{
    BudgetBuilder, Dfa as DfaSection, EntriesBuilder, Header, LoopsBuilder, MasksBuilder, Payload,
    StateFlags, StopTokensBuilder, TokensBuilder, ToolsBuilder, WriteError,
};
use tooldec_runtime::layout::{self, kind};

use crate::automaton::packed::PackedDfa;
use crate::cross::Masks;
use crate::error::{Error, ErrorKind};
use crate::vocab::{TokenText, Vocab};

/// The TOKENS section's bytes for one vocabulary as a grammar reads it
/// (special tokens the grammar uses as their reserved strings): the same
/// for every grammar with those special tokens, so a [`crate::Compiler`]
/// builds it once.
pub fn token_table(text: &TokenText<'_>) -> TokensBuilder {
    let mut tokens = TokensBuilder::new();
    for id in 0..text.len() as u32 {
        tokens.push(text.get(id));
    }
    tokens
}

/// How many masks of each storage form were written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MaskForms {
    /// Masks stored as the dense bitmask.
    pub dense: usize,
    /// Masks stored as the list of allowed ids.
    pub allow: usize,
    /// Masks stored as the list of disallowed ids below the token count.
    pub deny: usize,
    /// Budget tiers stored as their state's full mask minus a list.
    pub delta: usize,
    /// Words of MASK_DATA.
    pub words: usize,
}

/// A mask is stored as a list of ids only when the list has at most
/// `words / LIST_FRACTION` entries (see [`payload`]).
pub const LIST_FRACTION: usize = 8;

/// The same bound for a hot mask (the full mask of a state with a byte
/// loop): a list costs the clear plus ~0.55 ns per id, a copy ~20-25 ns
/// more than the clear at 50k-152k tokens, so lists break even at about
/// `words / 100` ids (measured on GPT-2, Llama-3.2 and Qwen2.5 masks).
/// At `words / 64` a hot list serves within ~15 ns of the copy.
pub const HOT_LIST_FRACTION: usize = 64;

/// What goes into a payload: the compiled machine, its crossed masks and
/// the vocabulary, and the header's own values.
pub struct Input<'a> {
    /// The minimized DFA.
    pub dfa: &'a PackedDfa,
    /// The format's entry points, `(name, start state)`, the default first.
    pub entries: &'a [(String, u32)],
    /// Per entry, whether it stops after its first call (empty: none).
    pub stops: &'a [bool],
    /// Per state, whether it ends a call (empty: none does).
    pub call_end: &'a [bool],
    /// The masks, distances and tiers of the crossing.
    pub crossed: &'a Masks,
    /// Each token's bytes as the grammar reads them ([`token_table`]).
    pub tokens: &'a TokensBuilder,
    /// The vocabulary (its token count and EOS ids).
    pub vocab: &'a Vocab,
    /// The vocabulary's fingerprint ([`Vocab::fingerprint`]).
    pub fingerprint: [u8; 32],
    /// The mask width: the model's logits size.
    pub mask_width: u32,
    /// The default budget (`--max-tokens`).
    pub max_tokens: Option<u32>,
    /// META: the artifact's JSON description.
    pub meta: &'a str,
}

/// The stop gates, ascending, each with the tokens that run past a call's
/// end from it ([`crate::automaton::machine::Machine::stop_gates`]; empty:
/// none).
pub type StopGates = Vec<(u32, Vec<u32>)>;

/// Builds the raw payload. `stop_gates` is called once, after every
/// section that does not read the gates is built: finding them reads only
/// the machine, so a caller can find them on another thread meanwhile (at
/// 10,000 tools each side is a few tenths of a second, and nothing else
/// runs beside the writing).
pub fn payload(
    input: &Input<'_>,
    stop_gates: impl FnOnce() -> StopGates,
) -> Result<(Vec<u8>, MaskForms), Error> {
    let dfa = input.dfa;
    let mut s = sections(input, stop_gates)?;
    let transitions = dfa.rows().section(dfa.n_classes as u32, dfa.n_states());
    let payload = Payload {
        header: Header {
            mask_width: input.mask_width,
            start: input.entries.first().map_or(dfa.start, |e| e.1),
            fingerprint: input.fingerprint,
            max_tokens: input.max_tokens.unwrap_or(0),
        },
        dfa: DfaSection::view(
            &dfa.classes,
            &dfa.rows().shapes,
            dfa.n_classes as u32,
            &transitions,
            &s.states,
        ),
        masks: s.masks.masks(),
        tokens: input.tokens.tokens(&input.vocab.eos),
        meta: input.meta.as_bytes(),
        entries: s.entry_table.entries(),
        budget: s.budget.budget(),
        tools: s
            .tools
            .as_ref()
            .map(ToolsBuilder::tools)
            .unwrap_or_default(),
        stop_tokens: s.stop_tokens.stop_tokens(),
        loops: s.loops.loops(),
    };
    let bytes = payload.to_bytes().map_err(limit)?;
    Ok((bytes, s.forms))
}

/// Every section of a payload but the moves, as builders.
struct Sections {
    masks: MasksBuilder,
    forms: MaskForms,
    states: Vec<u8>,
    entry_table: EntriesBuilder,
    budget: BudgetBuilder,
    tools: Option<ToolsBuilder>,
    stop_tokens: StopTokensBuilder,
    loops: LoopsBuilder,
}

/// Builds every section but the moves, those reading the stop gates last.
fn sections(input: &Input<'_>, stop_gates: impl FnOnce() -> StopGates) -> Result<Sections, Error> {
    let Input {
        dfa,
        entries,
        stops,
        crossed,
        vocab,
        ..
    } = *input;
    let n_tokens = vocab.len() as u32;
    let hot = hot_masks(dfa, crossed);
    let (masks, forms) = mask_table(crossed, &hot, n_tokens).map_err(limit)?;
    let mut entry_table = EntriesBuilder::new();
    for (k, (name, state)) in entries.iter().enumerate() {
        entry_table.push(name, *state, stops.get(k).copied().unwrap_or(false));
    }
    let mut budget = BudgetBuilder::new();
    for s in 0..dfa.n_states() {
        let d = crossed.distance[s];
        let (lo, hi) = (
            crossed.tier_index[s] as usize,
            crossed.tier_index[s + 1] as usize,
        );
        let dist = (d != layout::NO_DISTANCE).then_some(d);
        budget.push(dist, crossed.top_tier[s], &crossed.tiers[lo..hi]);
    }
    let tools = tools_section(crossed);
    let loops = LoopsBuilder::new(&crossed.loops.sets, crossed.mask_words);
    let stop_gates = stop_gates();
    Ok(Sections {
        masks,
        forms,
        states: states_section(input, &stop_gates),
        entry_table,
        budget,
        tools,
        stop_tokens: StopTokensBuilder::new(&stop_gates),
        loops,
    })
}

/// STATES: per state its flags and full mask.
fn states_section(input: &Input<'_>, stop_gates: &[(u32, Vec<u32>)]) -> Vec<u8> {
    let Input {
        dfa,
        call_end,
        crossed,
        ..
    } = *input;
    let mut gate = vec![
        false;
        if stop_gates.is_empty() {
            0
        } else {
            dfa.n_states()
        }
    ];
    for g in stop_gates {
        gate[g.0 as usize] = true;
    }
    DfaSection::states_section((0..dfa.n_states()).map(|s| {
        let flag = |v: &[bool]| v.get(s).copied().unwrap_or(false);
        let flags = StateFlags {
            accepting: dfa.accept[s],
            ends_call: flag(call_end),
            stop_gate: flag(&gate),
            loop_set: crossed.loops.per_state[s],
        };
        (flags, crossed.state_mask[s])
    }))
}

/// The TOOLS section (one-tool matchers), when the crossing made its
/// tables: the machine has a tool-name trie.
fn tools_section(crossed: &Masks) -> Option<ToolsBuilder> {
    let t = crossed.tools.as_ref()?;
    let names: Vec<&str> = t.names.iter().map(String::as_str).collect();
    let distances = t
        .distances
        .as_ref()
        .map(|(rows, top)| (rows.as_slice(), top.as_slice()));
    Some(ToolsBuilder::new(
        &names, &t.rank, &t.states, &t.classes, distances,
    ))
}

fn limit(e: WriteError) -> Error {
    Error::new(ErrorKind::Limit, e.to_string())
}

/// Stores each distinct mask in its cheapest form to serve.
fn mask_table(
    crossed: &Masks,
    hot: &[bool],
    n_tokens: u32,
) -> Result<(MasksBuilder, MaskForms), WriteError> {
    let masks = &crossed.masks;
    let base_of = delta_bases(crossed);
    let mut forms = MaskForms::default();
    let mut table = MasksBuilder::new();
    let words = crossed.mask_words;
    for (id, m) in masks.iter().enumerate() {
        let allowed: u32 = m.iter().map(|&(_, w)| w.count_ones()).sum();
        let denied = n_tokens - allowed;
        // A list costs a clear of the whole buffer plus one store per id,
        // a dense mask one copy: a list is kept only while short (shorter
        // still for a hot mask), else the mask is stored dense.
        let list_max = words
            / if hot[id] {
                HOT_LIST_FRACTION
            } else {
                LIST_FRACTION
            };
        // A delta costs its base's fill plus one store per id.
        let delta = base_of[id].map(|b| {
            let removed = minus(&masks[b as usize], m);
            (b, removed.map(|(_, w)| w.count_ones()).sum::<u32>())
        });
        if let Some((b, _)) =
            delta.filter(|&(_, r)| (r as usize) < list_max && r < allowed.min(denied))
        {
            let removed = set_bits(minus(&masks[b as usize], m));
            table.push(kind::DELTA, std::iter::once(b).chain(removed))?;
            forms.delta += 1;
        } else if (allowed as usize) <= list_max && allowed <= denied {
            let ids = set_bits(m.iter().copied()).take_while(|&t| t < n_tokens);
            table.push(kind::ALLOW, ids)?;
            forms.allow += 1;
        } else if (denied as usize) <= list_max {
            let dense = crate::cross::dense(m, words);
            let complement = dense.iter().enumerate().map(|(i, &w)| (i as u32, !w));
            table.push(
                kind::DENY,
                set_bits(complement).take_while(|&t| t < n_tokens),
            )?;
            forms.deny += 1;
        } else {
            table.push(kind::DENSE, crate::cross::dense(m, words))?;
            forms.dense += 1;
        }
    }
    forms.words = table.data_words();
    Ok((table, forms))
}

/// Per mask: whether it is the full mask of a state with a byte loop
/// (a string body, digits, free text), where one state serves token after
/// token and decoding spends most of its steps.
fn hot_masks(dfa: &PackedDfa, crossed: &Masks) -> Vec<bool> {
    let mut hot = vec![false; crossed.masks.len()];
    for s in 0..dfa.n_states() {
        if dfa.moves(s as u32).any(|(_, t)| t as usize == s) {
            hot[crossed.state_mask[s] as usize] = true;
        }
    }
    hot
}

/// The ids of the set bits of a bitmask given as `(index, word)` pairs,
/// ascending: one step per word and per set bit, not per id (a mask is
/// 4,000 words of 128k ids, most of them zero in a list-stored mask).
fn set_bits(words: impl Iterator<Item = (u32, u32)>) -> impl Iterator<Item = u32> {
    words.flat_map(|(i, mut w)| {
        std::iter::from_fn(move || {
            (w != 0).then(|| {
                let bit = w.trailing_zeros();
                w &= w - 1;
                i << 5 | bit
            })
        })
    })
}

/// `base & !m` word by word over `base`'s nonzero words, both given as
/// their nonzero `(index, word)` pairs, ascending (`m` allows a subset of
/// `base`'s tokens).
fn minus<'a>(base: &'a [(u32, u32)], m: &'a [(u32, u32)]) -> impl Iterator<Item = (u32, u32)> + 'a {
    let mut j = 0;
    base.iter().map(move |&(i, y)| {
        while j < m.len() && m[j].0 < i {
            j += 1;
        }
        let x = m.get(j).filter(|p| p.0 == i).map_or(0, |p| p.1);
        debug_assert!(x & !y == 0, "a delta's mask is not a subset of its base");
        (i, y & !x)
    })
}

/// The base a budget tier may be stored as a delta of: the full mask of
/// the first state (in state order) it is a tier of, unless it is some
/// state's full mask itself (so a base is never a delta).
fn delta_bases(crossed: &Masks) -> Vec<Option<u32>> {
    let n = crossed.masks.len();
    let mut is_full = vec![false; n];
    for &m in &crossed.state_mask {
        is_full[m as usize] = true;
    }
    let mut base_of: Vec<Option<u32>> = vec![None; n];
    for (s, &full) in crossed.state_mask.iter().enumerate() {
        let (lo, hi) = (
            crossed.tier_index[s] as usize,
            crossed.tier_index[s + 1] as usize,
        );
        for &(_, m) in &crossed.tiers[lo..hi] {
            if !is_full[m as usize] && base_of[m as usize].is_none() {
                base_of[m as usize] = Some(full);
            }
        }
    }
    base_of
}

/// The compressed artifact file: the envelope (format version, lengths,
/// CRC-32C of the frame; `layout::envelope`), then the payload in one zstd
/// frame with its content size, so the loader can allocate once. `zstd -d`
/// skips the envelope (a skippable frame) and writes the payload.
pub fn compress(payload: &[u8], level: i32) -> Result<Vec<u8>, Error> {
    let len = u32::try_from(payload.len()).map_err(|_| {
        Error::new(
            ErrorKind::Limit,
            "the payload is over the 4 GiB the format addresses",
        )
    })?;
    let frame = zstd::bulk::compress(payload, level)
        .map_err(|e| Error::new(ErrorKind::Io, format!("zstd compression failed: {e}")))?;
    let mut out = Vec::with_capacity(layout::envelope::BYTES + frame.len());
    out.extend_from_slice(&tooldec_runtime::codec::envelope::write(len, &frame));
    out.extend_from_slice(&frame);
    Ok(out)
}
