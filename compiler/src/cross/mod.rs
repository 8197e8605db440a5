//! Crossing the DFA with the vocab: the mask of every state.
//!
//! The token trie holds every text token's bytes, flattened in depth-first
//! order: node `i` has a byte, a depth, the tokens that end there, and
//! `end[i]`, the index just past its subtree. For a state `s` the walk keeps
//! one DFA state per depth; a node whose byte leads to the dead state is
//! skipped with its whole subtree in one step (`i = end[i]`). Because the
//! DFA is trimmed, a token is allowed exactly when its walk stays alive, so
//! the set of nodes visited is the set of live token prefixes, never the
//! whole vocabulary unless the state really allows it.
//!
//! The crossing runs in three passes:
//!
//! 1. **Token edges.** Every served state is walked once; the distinct
//!    states its tokens end in are its token successors.
//! 2. **Token distances.** A backward breadth-first search over those edges
//!    from the accepting states gives `dist[s]`, the fewest tokens from `s`
//!    to acceptance. A state no token sequence completes (a byte path that
//!    no tokenization produces, a loop that never finishes) has none.
//! 3. **Tiered masks.** Each state with a distance is walked again, and
//!    each allowed token is filed by the distance of the state it leads to.
//!    The state's tiers are the distinct finite distances `k_1 < ... < k_m`
//!    among its successors; tier `k_i` allows the tokens whose next state
//!    is at most `k_i` from acceptance. With `r` tokens left the matcher may
//!    take a token only if it leads `r - 1` or fewer tokens from acceptance,
//!    so it serves the largest tier `<= r - 1`; the top tier `k_m` is the
//!    unbudgeted mask. Tokens leading to states with no distance are in no
//!    tier: token-level liveness. The number of tiers depends on the
//!    grammar and the vocabulary, never on a budget. The tokens that lead
//!    `s` back to itself are kept as well, as its loop set (LOOPS: the
//!    matcher takes them without walking their bytes).
//!
//! States are split into blocks that threads take in turn; masks are
//! deduplicated per thread and then numbered in state order, so the result
//! does not depend on timing or on the number of threads.

mod mask_set;
mod on_demand;
mod regions;
mod trie;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::automaton::dfa::DEAD;
use crate::automaton::machine::{Machine, ToolNames};
use crate::automaton::packed::PackedDfa;
use crate::error::{Error, ErrorKind, Limit};
use crate::vocab::{TokenText, Vocab};
pub use mask_set::dense;
use mask_set::{Building, MaskSet, Memo};
pub use on_demand::{OnDemand, Step};
pub(crate) use regions::Regions;
use regions::{RegionCache, Walks};
use trie::TokenTrie;

/// What the crossing reuses from one compile to the next for one
/// vocabulary and one set of grammar special tokens: the token trie, the
/// inside walks of regions (`regions.rs`), the TOKENS section and the
/// fingerprint. Built once, it makes every later crossing
/// skip both; it is `Sync`, so one serves a server's threads.
pub struct Prepared {
    trie: TokenTrie,
    regions: RegionCache,
    /// Whether walks go through regions; off only to check that they
    /// change nothing.
    use_regions: bool,
    /// Per byte, whether some text token is that byte alone.
    single: [bool; 256],
    /// The artifact's TOKENS section and the vocabulary's fingerprint,
    /// which the writer would otherwise rebuild per compile.
    pub tokens: tooldec_runtime::codec::TokensBuilder,
    /// See [`crate::vocab::Vocab::fingerprint`].
    pub fingerprint: [u8; 32],
}

impl Prepared {
    /// The trie of `text`'s tokens, and an empty region cache holding at
    /// most about `cache_bytes`.
    pub fn new(text: &TokenText<'_>, vocab: &Vocab, cache_bytes: usize) -> Prepared {
        let trie = TokenTrie::new(text);
        Prepared {
            single: trie.single_bytes(),
            trie,
            regions: RegionCache::new(cache_bytes),
            use_regions: true,
            tokens: crate::artifact::write::token_table(text),
            fingerprint: vocab.fingerprint(),
        }
    }

    /// Every walk plain, over the whole trie (for differential tests).
    pub fn without_regions(mut self) -> Prepared {
        self.use_regions = false;
        self
    }

    /// Empties the region cache.
    pub fn clear(&self) {
        self.regions.clear();
    }

    /// Bytes the region cache holds.
    pub fn cache_bytes(&self) -> usize {
        self.regions.held()
    }
}

/// A colour's live and end tool ranges (ranks, `[lo, hi)`).
pub type RankRanges = (Vec<(u32, u32)>, Vec<(u32, u32)>);

/// Per state its distance row where it has one, and per state its tool top.
pub type ToolRows = (Vec<Option<Vec<u32>>>, Vec<u32>);

/// What the TOOLS section stores (see `tooldec_runtime::codec::tools`),
/// computed with the crossing.
pub struct ToolTables {
    /// The tools' names, in tool order.
    pub names: Vec<String>,
    /// Each tool's rank: its place in name order, which the ranges count.
    pub rank: Vec<u32>,
    /// Per colour (0: none) its live and end rank ranges `[lo, hi)`.
    pub classes: Vec<RankRanges>,
    /// Per state `(colour, gate, budget gate)`.
    pub states: Vec<(u32, bool, bool)>,
    /// Per state its distance row (per live tool, in rank order) where
    /// some tool's distance differs from the state's, and per state its
    /// tool top; `None` when over [`TOOL_DISTANCE_LIMIT`] (or the colours'
    /// tool sets are not ranges in name order).
    pub distances: Option<ToolRows>,
    /// Why there are no distances, when there are none.
    pub no_distances: Option<String>,
    /// States with a distance row.
    pub rows: usize,
    /// Gated states.
    pub gated: usize,
}

/// The most entries the per-tool distance rows may have (tools ×
/// pre-name states, with name states counting only the tools their name
/// can still become), and the most work (tools × token edges of those
/// states) spent computing them.
pub const TOOL_DISTANCE_LIMIT: usize = 1 << 22;
const TOOL_DISTANCE_WORK: usize = 1 << 28;

/// The distinct masks, and per state its mask, distance and tiers.
pub struct Masks {
    /// Every distinct mask as its nonzero words `(index, word)`,
    /// ascending, numbered in state order of first use ([`dense`] gives
    /// the bitmask).
    pub masks: Vec<Vec<(u32, u32)>>,
    /// The words of a dense mask.
    pub mask_words: usize,
    /// Per state: its unbudgeted (top tier) mask.
    pub state_mask: Vec<u32>,
    /// Per state: the fewest tokens to acceptance, [`NO_DISTANCE`] if none.
    pub distance: Vec<u32>,
    /// Per state: its top tier (0 for states with no distance).
    pub top_tier: Vec<u32>,
    /// `n_states + 1` offsets into `tiers`.
    pub tier_index: Vec<u32>,
    /// The lower tiers, `(k, mask id)`, ascending per state.
    pub tiers: Vec<(u32, u32)>,
    /// Served states from which no token sequence reaches acceptance.
    pub token_dead: usize,
    /// Distinct token edges (state to state) of served states.
    pub edges: usize,
    pub trie_nodes: usize,
    /// Trie nodes visited outside the regions, both walks.
    pub nodes_visited: usize,
    /// The TOOLS section's tables (`None` without tool-name colours).
    pub tools: Option<ToolTables>,
    /// LOOPS: per state, the tokens that lead it back to itself.
    pub loops: Loops,
}

pub use tooldec_runtime::layout::NO_DISTANCE;

/// What [`par_blocks`] returns: each block's result with the thread that
/// made it, in block order, and each thread's state.
pub(crate) type Blocks<R, T> = (Vec<(usize, R)>, Vec<T>);

/// Runs `f` over blocks of `0..n` on `threads` threads; each thread keeps
/// its own `T` (made by `init`). Returns the block results in block order,
/// each with the index of the thread that made it, and the threads' `T`s.
/// The threads run under the caller's compile limits, checked before each
/// block with `held(thread's T)` bytes as the crossing's account: on the
/// first limit every thread stops after its block and the limit is
/// returned.
pub(crate) fn par_blocks<T: Send, R: Send>(
    n: usize,
    threads: usize,
    held: impl Fn(&T) -> usize + Sync,
    init: impl Fn() -> T + Sync,
    f: impl Fn(std::ops::Range<usize>, &mut T) -> R + Sync,
) -> Result<Blocks<R, T>, Limit> {
    const BLOCK: usize = 64;
    let blocks = n.div_ceil(BLOCK);
    let threads = threads.clamp(1, 64).min(blocks.max(1));
    let next = AtomicUsize::new(0);
    let stop: Mutex<Option<Limit>> = Mutex::new(None);
    let guard = crate::limits::current();
    let slots: Vec<Mutex<Option<(usize, R)>>> = (0..blocks).map(|_| Mutex::new(None)).collect();
    let states: Vec<T> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                let (next, slots, init, f, stop, guard, held) =
                    (&next, &slots, &init, &f, &stop, guard.as_ref(), &held);
                scope.spawn(move || {
                    crate::limits::run_under(guard, || {
                        let mut state = init();
                        loop {
                            let b = next.fetch_add(1, Ordering::Relaxed);
                            if b >= blocks {
                                break;
                            }
                            if let Err(limit) = crate::limits::check("cross", held(&state)) {
                                next.store(blocks, Ordering::Relaxed);
                                if let Ok(mut s) = stop.lock() {
                                    s.get_or_insert(limit);
                                }
                                break;
                            }
                            let r = f(b * BLOCK..((b + 1) * BLOCK).min(n), &mut state);
                            if let Ok(mut slot) = slots[b].lock() {
                                *slot = Some((k, r));
                            }
                        }
                        state
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    if let Some(limit) = stop.into_inner().ok().flatten() {
        return Err(limit);
    }
    let results = slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .ok()
                .flatten()
                .expect("every block was computed")
        })
        .collect();
    Ok((results, states))
}

/// A block's result of pass 3: per state its top mask, top tier and
/// lower tiers (`(k, mask)`), masks as ids of the thread's [`MaskSet`].
/// The lower tiers of the block's states lie end to end in one list: a
/// list per state was 2.2 million small allocations at 10,000 distinct
/// tools, held until the masks are numbered, the crossing's peak (RSS
/// there 1.04 -> 0.96 GB).
#[derive(Default)]
struct Tiered {
    /// Per state `(top, top_tier, end of its lower tiers in `lower`)`.
    states: Vec<(u32, u32, u32)>,
    lower: Vec<(u32, u32)>,
    /// Per state its loop set, an id of the thread's loop [`MaskSet`]
    /// ([`NO_LOOP`]: no token leads it back to itself).
    loops: Vec<u32>,
}

/// [`Tiered::loops`] of a state no token leads back to itself.
const NO_LOOP: u32 = u32::MAX;

impl Tiered {
    /// Adds a state with top mask `top` at `top_tier` and loop set
    /// `lp`; its lower tiers are what was pushed onto `lower` since the
    /// state before.
    fn push(&mut self, top: u32, top_tier: u32, lp: u32) {
        self.states.push((top, top_tier, self.lower.len() as u32));
        self.loops.push(lp);
    }

    /// Per state `(top, top_tier, lower tiers)`.
    fn iter(&self) -> impl Iterator<Item = (u32, u32, &[(u32, u32)])> {
        let mut start = 0;
        self.states.iter().map(move |&(top, tier, end)| {
            let lower = &self.lower[start..end as usize];
            start = end as usize;
            (top, tier, lower)
        })
    }
}

/// About what one pass of the crossing frees per state at scale (its
/// scratch: 10,000 distinct tools, 2.76 M states, about 200 MB a
/// pass): the estimate [`crate::heap::give_back`] is given.
pub(crate) const PASS_SCRATCH_PER_STATE: usize = 64;

/// Computes every state's distance and tiered masks (see the module
/// documentation). EOS tokens are allowed exactly in accepting states, in
/// every tier. Fails if a served state allows no token at all (the
/// vocabulary cannot write the bytes the grammar needs there). States that
/// are not served (see [`Machine::served_states`]) and states with no
/// distance get the empty mask.
pub fn masks(
    machine: &Machine,
    prepared: &Prepared,
    vocab: &Vocab,
    mask_words: usize,
    threads: usize,
) -> Result<Masks, Error> {
    let (dfa, names) = (&machine.dfa, machine.names.as_ref());
    let trie = &prepared.trie;
    let n = dfa.n_states();
    // The crossing's account: the table, a few words per state (regions,
    // distances, tiers, mask ids) and each thread's stamps.
    let held = dfa.bytes() + n * (32 + 4 * threads.max(1));
    // The states' moves as byte runs first: the served-state search reads
    // a few runs per state instead of a row of every class.
    let runs = prepared.use_regions.then(|| Regions::of(dfa, threads));
    let served = &machine.served_states(runs.as_ref());
    let walks = match runs {
        Some(runs) => Walks::new(dfa, runs, served, &prepared.regions, trie, threads, held)?,
        None => Walks::none(n),
    };
    // Each pass below frees its scratch, tens of bytes per state at scale
    // (the region search's, the edge walks' lists, the one-tool tables'
    // edges of every candidate): given back before the next pass lays out
    // its arrays, so that the peak is what is live (DESIGN.md §3).
    crate::heap::give_back(n * PASS_SCRATCH_PER_STATE);
    let cross = Cross {
        dfa,
        trie,
        served,
        walks: &walks,
        held,
    };
    let color = names.map(|n| n.colors.color.as_slice());
    let (succ, edge_visits) = cross.token_edges(color, threads)?;
    cross.check_writable(&succ)?;
    crate::heap::give_back(n * PASS_SCRATCH_PER_STATE);
    let distance = cross.distances(&succ);
    let token_dead = (1..n)
        .filter(|&s| served[s] && distance[s] == NO_DISTANCE)
        .count();
    // The one-tool tables before the masks: neither reads the other, and
    // the tables' pass holds the most beside its result (the edges of
    // every candidate state), so it runs while the masks do not exist yet.
    let tools = names
        .map(|names| cross.tool_tables(names, &succ, &distance, threads))
        .transpose()?;
    crate::heap::give_back(n * PASS_SCRATCH_PER_STATE);
    let (blocks, tierers) = cross.tiered_masks(&succ, &distance, vocab, mask_words, threads)?;
    let tier_visits: usize = tierers.iter().map(|w| w.visited).sum();
    let (sets, mut loop_sets): (Vec<MaskSet>, Vec<MaskSet>) =
        tierers.into_iter().map(|w| (w.set, w.loops)).unzip();
    let loops = number_loops(n, &blocks, &mut loop_sets, mask_words);
    let numbered = number_masks(dfa.n_states(), blocks, sets);
    Ok(Masks {
        masks: numbered.masks,
        mask_words,
        state_mask: numbered.state_mask,
        distance,
        top_tier: numbered.top_tier,
        tier_index: numbered.tier_index,
        tiers: numbered.tiers,
        token_dead,
        edges: succ.list.len(),
        trie_nodes: trie.nodes(),
        nodes_visited: edge_visits + tier_visits,
        tools,
        loops,
    })
}

/// What every pass of the crossing reads.
struct Cross<'a> {
    dfa: &'a PackedDfa,
    trie: &'a TokenTrie,
    served: &'a [bool],
    walks: &'a Walks,
    /// The bytes the crossing holds besides its masks (see `masks`).
    held: usize,
}

/// Per state, the distinct states its tokens end in (pass 1), stored flat.
struct Successors {
    /// `n_states + 1` offsets into `list`.
    index: Vec<u32>,
    list: Vec<u32>,
    /// Per state, whether some token's bytes from it pass through a
    /// coloured state (a tool name's): the states a one-tool matcher
    /// must check (see `Cross::tool_tables`). Empty without colours.
    touches: Vec<bool>,
}

impl Successors {
    fn of(&self, s: usize) -> &[u32] {
        &self.list[self.index[s] as usize..self.index[s + 1] as usize]
    }
}

/// Tokens a walk found leading to one state.
enum Found<'t, 'w> {
    /// The tokens ending at one trie node.
    Ids(&'t [u32]),
    /// Tokens that stay inside the walk's region (see `regions.rs`),
    /// borrowed from the region's walk for as long as it lives.
    Inside(&'w regions::Toks),
}

/// A pass 1 thread's scratch.
struct Edges {
    stack: Vec<u32>,
    /// `stamp[t] == s` once `t` is recorded as a successor of `s`, so each
    /// successor is listed once without clearing a set per state.
    stamp: Vec<u32>,
    visited: usize,
}

/// A built DFA's moves that note whether one enters a coloured state.
struct Watch<'d> {
    dfa: &'d PackedDfa,
    color: &'d [u32],
    touched: bool,
}

impl crate::automaton::dfa::Moves for Watch<'_> {
    #[inline]
    fn step(&mut self, s: u32, byte: u8) -> u32 {
        let t = self.dfa.next(s, byte);
        self.touched |= self.color[t as usize] != 0;
        t
    }
}

/// A pass 3 thread's scratch and distinct masks.
struct Tiers<'w> {
    set: MaskSet,
    memo: Memo<'w>,
    /// The distinct loop sets (the tokens that lead a state back to
    /// itself), their memo and the one being built.
    loops: MaskSet,
    loop_memo: Memo<'w>,
    looping: Building<'w>,
    stack: Vec<u32>,
    bufs: Vec<Building<'w>>,
    ks: Vec<u32>,
    /// The id of the empty mask in `set`, once made.
    empty: Option<u32>,
    visited: usize,
}

impl<'a> Cross<'a> {
    /// The inside walk of `s`'s region and the region's states in its
    /// key's order, when `s` has a region none of whose states has a colour.
    fn uncoloured_region(&self, s: u32, color: &[u32]) -> Option<(&regions::Inside, &[u32])> {
        let (part, states) = self.walks.get(s)?;
        states
            .iter()
            .all(|&q| color[q as usize] == 0)
            .then_some((part, states))
    }

    /// Pass 1: every served state's token successors, and the trie nodes
    /// visited; with the states' `color`s, also which states' tokens pass
    /// through a coloured state.
    fn token_edges(
        &self,
        color: Option<&[u32]>,
        threads: usize,
    ) -> Result<(Successors, usize), Limit> {
        let n = self.dfa.n_states();
        let (blocks, walkers) = par_blocks(
            n,
            threads,
            |_| self.held,
            || Edges {
                stack: Vec::new(),
                stamp: vec![u32::MAX; n],
                visited: 0,
            },
            |range, w| {
                let mut succ = Vec::new();
                let mut len = Vec::with_capacity(range.len());
                let mut touches = Vec::new();
                for s in range {
                    let before = succ.len();
                    let mut touched = false;
                    if s as u32 != DEAD && self.served[s] {
                        touched = self.successors_of(s as u32, color, w, &mut succ);
                    }
                    len.push((succ.len() - before) as u32);
                    if color.is_some() {
                        touches.push(touched);
                    }
                }
                (succ, len, touches)
            },
        )?;
        let visited: usize = walkers.iter().map(|w| w.visited).sum();
        // The stamps are a word per state per thread: free them before the
        // next passes allocate.
        drop(walkers);
        let mut index = Vec::with_capacity(n + 1);
        index.push(0u32);
        let mut list: Vec<u32> = Vec::new();
        let mut touches = Vec::new();
        for (_, (part, lens, touched)) in blocks {
            list.extend_from_slice(&part);
            for l in lens {
                index.push(index[index.len() - 1] + l);
            }
            touches.extend(touched);
        }
        let succ = Successors {
            index,
            list,
            touches,
        };
        Ok((succ, visited))
    }

    /// Appends the distinct states the tokens of `s` end in to `succ`.
    /// With `color`, returns whether a token's bytes from `s` pass through
    /// a coloured state: `s` itself, a state of its region, or one its
    /// walk steps into.
    fn successors_of(
        &self,
        s: u32,
        color: Option<&[u32]>,
        w: &mut Edges,
        succ: &mut Vec<u32>,
    ) -> bool {
        let Edges {
            stack,
            stamp,
            visited,
        } = w;
        let start = self.start(s);
        let record = |next: u32, _: Found<'_, '_>| {
            if stamp[next as usize] != s {
                stamp[next as usize] = s;
                succ.push(next);
            }
        };
        let Some(color) = color else {
            *visited += walk_from(self.trie, self.dfa, start, s, stack, record);
            return false;
        };
        let mut watch = Watch {
            dfa: self.dfa,
            color,
            touched: color[s as usize] != 0,
        };
        if let Start::Region(_, states) = start {
            watch.touched |= states.iter().any(|&q| color[q as usize] != 0);
        }
        *visited += walk_from(self.trie, &mut watch, start, s, stack, record);
        watch.touched
    }

    /// The walk of `s`'s tokens, through its region's cached inside walk
    /// when it has one: `f(next, tokens)` is called as
    /// [`TokenTrie::walk_with`] calls it, except that the tokens that stay
    /// inside the region come grouped by the state they end in
    /// ([`Found::Inside`]). Each token is
    /// seen once, as in the plain walk. Returns the trie nodes visited.
    fn walk(&self, s: u32, stack: &mut Vec<u32>, f: impl FnMut(u32, Found<'_, 'a>)) -> usize {
        walk_from(self.trie, self.dfa, self.start(s), s, stack, f)
    }

    /// How the walk of `s` covers the trie: through its region, else from
    /// its live bytes where its runs are kept.
    fn start(&self, s: u32) -> Start<'a, 'a> {
        match (self.walks.get(s), self.walks.runs(s)) {
            (Some((part, states)), _) => Start::Region(part, states),
            (None, Some(runs)) => Start::Live(runs),
            (None, None) => Start::Whole,
        }
    }

    /// Fails on the first served state with no token at all: the
    /// vocabulary cannot write what the grammar needs there.
    fn check_writable(&self, succ: &Successors) -> Result<(), Error> {
        let dfa = self.dfa;
        for (s, _) in self.served.iter().enumerate().skip(1).filter(|(_, &v)| v) {
            if !dfa.accept[s] && succ.of(s).is_empty() {
                let (example, next) = example_path(dfa, s as u32);
                return Err(Error::new(
                    ErrorKind::Grammar,
                    format!(
                        "incompatible vocabulary: after the text {:?} the grammar needs one of the bytes {} \
                         but no token of the vocabulary starts with any of them",
                        show_path(&example),
                        next
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Pass 2: per state the fewest tokens to acceptance, by a backward
    /// breadth-first search from the accepting states.
    fn distances(&self, succ: &Successors) -> Vec<u32> {
        self.distances_over(|s| succ.of(s))
    }

    /// [`Cross::distances`] over the edges `of` gives each state.
    fn distances_over<'e>(&self, of: impl Fn(usize) -> &'e [u32]) -> Vec<u32> {
        let n = self.dfa.n_states();
        let (rev_index, rev) = reverse(n, of);
        let mut distance = vec![NO_DISTANCE; n];
        let mut queue = std::collections::VecDeque::new();
        for (s, d) in distance.iter_mut().enumerate().skip(1) {
            if self.served[s] && self.dfa.accept[s] {
                *d = 0;
                queue.push_back(s as u32);
            }
        }
        while let Some(t) = queue.pop_front() {
            let d = distance[t as usize] + 1;
            for &s in &rev[rev_index[t as usize] as usize..rev_index[t as usize + 1] as usize] {
                if distance[s as usize] == NO_DISTANCE && self.served[s as usize] {
                    distance[s as usize] = d;
                    queue.push_back(s);
                }
            }
        }
        distance
    }

    /// Pass 3: every state's tiers, per block, with the threads' scratch
    /// (whose mask sets the ids refer to).
    fn tiered_masks(
        &self,
        succ: &Successors,
        distance: &[u32],
        vocab: &Vocab,
        mask_words: usize,
        threads: usize,
    ) -> Result<Blocks<Tiered, Tiers<'a>>, Limit> {
        // Each state's successors are held through this pass, and each
        // thread's distinct masks (counted as if every thread had as many).
        let held = self.held + succ.list.len() * 4;
        par_blocks(
            self.dfa.n_states(),
            threads,
            |w: &Tiers| {
                let own = w.set.bytes() + w.memo.bytes() + w.loops.bytes() + w.loop_memo.bytes();
                held + own * threads.max(1)
            },
            || Tiers {
                set: MaskSet::default(),
                memo: Memo::new(),
                loops: MaskSet::default(),
                loop_memo: Memo::new(),
                looping: Building::new(mask_words),
                stack: Vec::new(),
                bufs: Vec::new(),
                ks: Vec::new(),
                empty: None,
                visited: 0,
            },
            |range, w| {
                let mut out = Tiered::default();
                out.states.reserve(range.len());
                for s in range {
                    if s as u32 == DEAD || !self.served[s] || distance[s] == NO_DISTANCE {
                        let empty = *w
                            .empty
                            .get_or_insert_with(|| w.set.id(&mut Building::new(mask_words)));
                        out.push(empty, 0, NO_LOOP);
                        continue;
                    }
                    self.tier_state(s, succ.of(s), distance, vocab, mask_words, w, &mut out);
                }
                out
            },
        )
    }

    /// The tiers of the state `s`, which has a distance, added to `out`;
    /// `succ` are its token successors.
    #[allow(clippy::too_many_arguments)]
    fn tier_state(
        &self,
        s: usize,
        succ: &[u32],
        distance: &[u32],
        vocab: &Vocab,
        mask_words: usize,
        w: &mut Tiers<'a>,
        out: &mut Tiered,
    ) {
        w.ks.clear();
        w.ks.extend(
            succ.iter()
                .map(|&t| distance[t as usize])
                .filter(|&d| d != NO_DISTANCE),
        );
        w.ks.sort_unstable();
        w.ks.dedup();
        let tiers = w.ks.len().max(1);
        while w.bufs.len() < tiers {
            w.bufs.push(Building::new(mask_words));
        }
        for b in &mut w.bufs[..tiers] {
            b.clear();
        }
        w.looping.clear();
        {
            let Tiers {
                stack,
                bufs,
                ks,
                visited,
                looping,
                ..
            } = w;
            *visited += self.walk(s as u32, stack, |next, found| {
                let d = distance[next as usize];
                if d == NO_DISTANCE {
                    return;
                }
                let buf = &mut bufs[ks.partition_point(|&k| k < d)];
                for b in [Some(buf), (next as usize == s).then_some(&mut *looping)]
                    .into_iter()
                    .flatten()
                {
                    match found {
                        Found::Ids(toks) => toks.iter().for_each(|&t| b.set(t)),
                        Found::Inside(toks) => b.set_all(toks),
                    }
                }
            });
        }
        // Each token was filed in its own tier only; a tier allows every
        // token of the tiers below it too.
        for i in 1..tiers {
            let (done, rest) = w.bufs.split_at_mut(i);
            rest[0].merge(&done[i - 1]);
        }
        if self.dfa.accept[s] {
            for b in &mut w.bufs[..tiers] {
                vocab.eos.iter().for_each(|&t| b.set(t));
            }
        }
        for i in 0..tiers - 1 {
            out.lower
                .push((w.ks[i], w.memo.id(&mut w.set, &mut w.bufs[i])));
        }
        let top = w.memo.id(&mut w.set, &mut w.bufs[tiers - 1]);
        let lp = if w.looping.is_empty() {
            NO_LOOP
        } else {
            w.loop_memo.id(&mut w.loops, &mut w.looping)
        };
        out.push(top, w.ks.last().copied().unwrap_or(0), lp);
    }
}

/// How a walk of one state's tokens covers the trie.
#[derive(Clone, Copy)]
enum Start<'w, 'r> {
    /// Through the state's region: its inside walk, and the region's
    /// states in the walk's key order.
    Region(&'w regions::Inside, &'r [u32]),
    /// The whole trie from the live bytes of the state's byte runs.
    Live(&'r [(u8, u32)]),
    /// The whole trie, every first byte tried.
    Whole,
}

impl<'w, 'r> Start<'w, 'r> {
    /// Through `region` when there is one, else from every first byte.
    fn region(region: Option<(&'w regions::Inside, &'r [u32])>) -> Start<'w, 'r> {
        region.map_or(Start::Whole, |(part, states)| Start::Region(part, states))
    }
}

/// The walk of `s`'s tokens over `trie` as `start` says: through a region,
/// `f` gets the tokens that stay inside grouped by the state they end in,
/// then each exit's subtree walked plainly. Returns the trie nodes visited.
fn walk_from<'w>(
    trie: &TokenTrie,
    mut dfa: impl crate::automaton::dfa::Moves,
    start: Start<'w, '_>,
    s: u32,
    stack: &mut Vec<u32>,
    mut f: impl FnMut(u32, Found<'_, 'w>),
) -> usize {
    let (part, states) = match start {
        Start::Region(part, states) => (part, states),
        Start::Live(runs) => {
            return trie.walk_with(dfa, s, Some(runs), stack, |next, ids| {
                f(next, Found::Ids(ids))
            })
        }
        Start::Whole => {
            return trie.walk_with(dfa, s, None, stack, |next, ids| f(next, Found::Ids(ids)))
        }
    };
    for (q, toks) in &part.ends {
        f(states[*q as usize], Found::Inside(toks));
    }
    let mut visited = 0;
    for &(node, q) in &part.exits {
        let node = node as usize;
        let to = trie.end[node] as usize;
        let before = states[q as usize];
        visited += trie.walk_subtree(&mut dfa, node, to, before, stack, |next, ids| {
            f(next, Found::Ids(ids))
        });
    }
    visited
}

/// `(key, value)` pairs grouped by key (`0..n`), values in input order:
/// `n + 1` offsets into the values.
fn group_by<V: Copy + Default>(
    n: usize,
    pairs: impl Iterator<Item = (u32, V)> + Clone,
) -> (Vec<u32>, Vec<V>) {
    let mut at = vec![0u32; n + 1];
    for (k, _) in pairs.clone() {
        at[k as usize + 1] += 1;
    }
    for i in 0..n {
        at[i + 1] += at[i];
    }
    let mut fill = at.clone();
    let mut values = vec![V::default(); at[n] as usize];
    for (k, v) in pairs {
        values[fill[k as usize] as usize] = v;
        fill[k as usize] += 1;
    }
    (at, values)
}

/// The token edges reversed: `n + 1` offsets into the list of each state's
/// predecessors.
fn reverse<'e>(n: usize, of: impl Fn(usize) -> &'e [u32]) -> (Vec<u32>, Vec<u32>) {
    group_by(
        n,
        (0..n).flat_map(|s| of(s).iter().map(move |&t| (t, s as u32))),
    )
}

/// A constrained-walk thread's scratch (see [`Cross::tool_tables`]).
struct ConsWalk {
    stack: Vec<(u32, u32, u32, bool)>,
    stamp: Vec<u32>,
    seen: std::collections::HashSet<(u32, u32, u32)>,
}

/// One state's token edges as a one-tool matcher sees them: the targets
/// every tool's matcher may reach, and `(target, lo, hi)` for those only
/// the tools of ranks `lo..hi` may.
#[derive(Default)]
struct ToolEdges {
    free: Vec<u32>,
    checked: Vec<(u32, u32, u32)>,
}

/// Sorted ranks to ranges `[lo, hi)`.
fn runs(mut ranks: Vec<u32>) -> Vec<(u32, u32)> {
    ranks.sort_unstable();
    ranks.dedup();
    let mut out: Vec<(u32, u32)> = Vec::new();
    for r in ranks {
        match out.last_mut() {
            Some(last) if last.1 == r => last.1 = r + 1,
            _ => out.push((r, r + 1)),
        }
    }
    out
}

impl Cross<'_> {
    /// The TOOLS section's tables: ranks, colours as rank ranges, each
    /// state's gates, and per-tool distances where they differ from the
    /// distances over all tools (within [`TOOL_DISTANCE_LIMIT`]).
    ///
    /// Only a state some token of which passes through a coloured state
    /// (pass 1 noted which: `succ.touches`) can have a token whose walk a
    /// one-tool matcher checks; those are walked again, tracking for each
    /// token the ranks of the tools whose matcher may take it. Every other
    /// state's edges are its `succ`, free for every tool. (Before pass 1
    /// noted them, every state within a token's length of a coloured state
    /// was walked again: 116,076 states at 1,000 tools, against 58,123.)
    fn tool_tables(
        &self,
        names: &ToolNames,
        succ: &Successors,
        distance: &[u32],
        threads: usize,
    ) -> Result<ToolTables, Limit> {
        let dfa = self.dfa;
        let n = dfa.n_states();
        let n_tools = names.tools.len();
        let mut order: Vec<u32> = (0..n_tools as u32).collect();
        order.sort_by(|&a, &b| {
            names.tools[a as usize]
                .as_bytes()
                .cmp(names.tools[b as usize].as_bytes())
                .then(a.cmp(&b))
        });
        let mut rank = vec![0u32; n_tools];
        for (r, &t) in order.iter().enumerate() {
            rank[t as usize] = r as u32;
        }
        let to_ranks = |tools: &[u32]| runs(tools.iter().map(|&t| rank[t as usize]).collect());
        let classes: Vec<RankRanges> = names
            .colors
            .classes
            .iter()
            .map(|(l, e)| (to_ranks(l), to_ranks(e)))
            .collect();
        let contiguous = classes
            .iter()
            .skip(1)
            .all(|(l, e)| l.len() <= 1 && e.len() <= 1);
        let hull = |rs: &[(u32, u32)]| match (rs.first(), rs.last()) {
            (Some(a), Some(z)) => (a.0, z.1),
            _ => (0, 0),
        };
        let live_h: Vec<(u32, u32)> = classes.iter().map(|(l, _)| hull(l)).collect();
        let end_h: Vec<(u32, u32)> = classes.iter().map(|(_, e)| hull(e)).collect();
        let color = &names.colors.color;
        let all = (0u32, n_tools as u32);
        let step = |from: u32, to: u32| {
            let ct = color[to as usize];
            if ct != 0 {
                return Some(live_h[ct as usize]);
            }
            let cf = color[from as usize];
            (cf != 0).then(|| end_h[cf as usize])
        };
        let how = trie::Constrained { dfa, all, step };

        // The states some token of which passes through a coloured state
        // (pass 1 found them): every other state's tokens are free.
        let candidates: Vec<u32> = (1..n as u32)
            .filter(|&s| self.served[s as usize] && succ.touches[s as usize])
            .collect();
        // Their edges, walked again with constraints.
        let (blocks, _) = par_blocks(
            candidates.len(),
            threads,
            |_| self.held,
            || ConsWalk {
                stack: Vec::new(),
                stamp: vec![u32::MAX; n],
                seen: Default::default(),
            },
            |range, w| {
                let mut out = Vec::with_capacity(range.len());
                for i in range {
                    let s = candidates[i];
                    let mut e = ToolEdges::default();
                    w.seen.clear();
                    let ConsWalk { stack, stamp, seen } = w;
                    let mut found = |next: u32, (lo, hi): (u32, u32), touched: bool| {
                        // With colours that are not ranges the walk's
                        // range is a hull: every checked walk gates.
                        if !touched || (contiguous && (lo, hi) == all) {
                            if stamp[next as usize] != s {
                                stamp[next as usize] = s;
                                e.free.push(next);
                            }
                        } else if seen.insert((next, lo, hi)) {
                            e.checked.push((next, lo, hi));
                        }
                    };
                    // Inside a region with no coloured state nothing is
                    // checked: only the walks leaving it need the
                    // constraint.
                    match self.uncoloured_region(s, color) {
                        None => {
                            let whole = trie::Nodes::Whole(self.walks.runs(s));
                            self.trie.walk_constrained(&how, whole, s, stack, found);
                        }
                        Some((part, states)) => {
                            for (q, _) in &part.ends {
                                found(states[*q as usize], all, false);
                            }
                            for &(node, q) in &part.exits {
                                let range = trie::Nodes::Subtree(
                                    node as usize,
                                    self.trie.end[node as usize] as usize,
                                );
                                let before = states[q as usize];
                                self.trie
                                    .walk_constrained(&how, range, before, stack, &mut found);
                            }
                        }
                    }
                    // A target some walk reaches free needs no checked edge.
                    e.checked.retain(|&(t, _, _)| stamp[t as usize] != s);
                    out.push(e);
                }
                out
            },
        )?;
        // The candidates' edges in candidate order, and per state its
        // index there (an optional list per state was 48 bytes, 132 MB at
        // 10,000 distinct tools, where only the candidates have one).
        let edges: Vec<ToolEdges> = blocks.into_iter().flat_map(|(_, part)| part).collect();
        debug_assert_eq!(edges.len(), candidates.len(), "one result per candidate");
        let mut edge_of = vec![u32::MAX; n];
        for (i, &s) in candidates.iter().enumerate() {
            edge_of[s as usize] = i as u32;
        }
        let free_of = |s: usize| -> &[u32] {
            match edges.get(edge_of[s] as usize) {
                Some(e) => &e.free,
                None => succ.of(s),
            }
        };
        let checked_of = |s: usize| -> &[(u32, u32, u32)] {
            match edges.get(edge_of[s] as usize) {
                Some(e) => &e.checked,
                None => &[],
            }
        };

        // Distances over the edges every tool may take, read in place (a
        // copy of every state's list was another 132 MB there).
        let dist0 = self.distances_over(free_of);
        let row_of: Vec<bool> = (0..n)
            .map(|s| distance[s] != NO_DISTANCE && dist0[s] != distance[s])
            .collect();
        let rows: Vec<u32> = (0..n as u32).filter(|&s| row_of[s as usize]).collect();
        let row_len = |s: u32| -> usize {
            match color[s as usize] {
                0 => n_tools,
                c => classes[c as usize]
                    .0
                    .iter()
                    .map(|r| (r.1 - r.0) as usize)
                    .sum(),
            }
        };
        let entries: usize = rows.iter().map(|&s| row_len(s)).sum();
        let work: usize = rows
            .iter()
            .map(|&s| free_of(s as usize).len() + checked_of(s as usize).len())
            .sum::<usize>()
            .saturating_mul(n_tools);
        let no_distances = if !contiguous {
            Some("the tool-name colours are not ranges of tools in name order".to_string())
        } else if entries > TOOL_DISTANCE_LIMIT || work > TOOL_DISTANCE_WORK {
            Some(format!(
                "{n_tools} tools over {} pre-name states need {entries} per-tool distances, over the limit of {TOOL_DISTANCE_LIMIT}",
                rows.len()
            ))
        } else {
            None
        };
        let distances = if no_distances.is_none() {
            Some(self.tool_distances(
                &rows,
                &row_of,
                distance,
                &classes,
                color,
                n_tools,
                &free_of,
                &checked_of,
            ))
        } else {
            None
        };

        // Gates: a token whose walk a one-tool matcher checks (a checked
        // edge), or that ends in a state with a row (budget gate; a row
        // with a tool that cannot finish there gates always).
        let mut states = Vec::with_capacity(n);
        let mut top = vec![0u32; n];
        let mut gated = 0;
        for s in 0..n {
            let c = color[s];
            let mut gate = !checked_of(s).is_empty();
            let mut budget = false;
            if let Some(rows_d) = &distances {
                let mut t_max = 0u32;
                let targets = free_of(s)
                    .iter()
                    .copied()
                    .chain(checked_of(s).iter().map(|e| e.0));
                for t in targets {
                    match &rows_d[t as usize] {
                        Some(r) => {
                            budget = true;
                            if r.contains(&NO_DISTANCE) {
                                gate = true;
                            }
                            let m = r.iter().copied().filter(|&d| d != NO_DISTANCE).max();
                            t_max = t_max.max(m.unwrap_or(0));
                        }
                        None if distance[t as usize] != NO_DISTANCE => {
                            t_max = t_max.max(distance[t as usize]);
                        }
                        None => {}
                    }
                }
                top[s] = t_max;
            }
            gated += gate as usize;
            states.push((c, gate, budget));
        }
        Ok(ToolTables {
            names: names.tools.clone(),
            rank,
            classes,
            states,
            distances: distances.map(|r| (r, top)),
            no_distances,
            rows: rows.len(),
            gated,
        })
    }

    /// Per tool (by rank), its fewest tokens to acceptance from each state
    /// with a row: Dijkstra over the rows' states, the other states' tool
    /// distances being their distances.
    #[allow(clippy::too_many_arguments)]
    fn tool_distances<'e>(
        &self,
        rows: &[u32],
        row_of: &[bool],
        distance: &[u32],
        classes: &[RankRanges],
        color: &[u32],
        n_tools: usize,
        free_of: &dyn Fn(usize) -> &'e [u32],
        checked_of: &dyn Fn(usize) -> &'e [(u32, u32, u32)],
    ) -> Vec<Option<Vec<u32>>> {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let n = self.dfa.n_states();
        let mut index = vec![u32::MAX; n];
        for (i, &s) in rows.iter().enumerate() {
            index[s as usize] = i as u32;
        }
        // Edges between row states, reversed: (to, from, lo, hi).
        let all = (0u32, n_tools as u32);
        let mut rev: Vec<Vec<(u32, u32, u32)>> = vec![Vec::new(); rows.len()];
        for (i, &s) in rows.iter().enumerate() {
            let out = free_of(s as usize)
                .iter()
                .map(|&t| (t, all.0, all.1))
                .chain(checked_of(s as usize).iter().copied());
            for (t, lo, hi) in out {
                if row_of[t as usize] {
                    rev[index[t as usize] as usize].push((i as u32, lo, hi));
                }
            }
        }
        // The ways out of the rows, read once: per row the best distance
        // through an edge every tool may take, and the edges only some may
        // take, `(row, lo, hi, distance after)` (the loop over tools below
        // reads these, not the edges and the distances of their targets).
        let mut free_best = vec![NO_DISTANCE; rows.len()];
        let mut exits: Vec<(u32, u32, u32, u32)> = Vec::new();
        for (i, &s) in rows.iter().enumerate() {
            let after = |t: u32| match distance[t as usize] {
                _ if row_of[t as usize] => None,
                NO_DISTANCE => None,
                dt => Some(dt + 1),
            };
            for &t in free_of(s as usize) {
                if let Some(dd) = after(t) {
                    free_best[i] = free_best[i].min(dd);
                }
            }
            for &(t, lo, hi) in checked_of(s as usize) {
                if let Some(dd) = after(t) {
                    exits.push((i as u32, lo, hi, dd));
                }
            }
        }
        // Per tool the rows with an entry for it: every uncoloured row,
        // and the coloured rows whose colour's tools include it (a name's
        // path through the name trie). Only those can take a distance for
        // the tool: with contiguous colours every edge into a coloured row
        // is gated by that colour's tools. So each tool's search touches
        // its own rows, not all of them (`rows × tools` was most of the
        // crossing's time at 1,000 tools).
        let ranges_of = |i: usize| -> &[(u32, u32)] {
            match color[rows[i] as usize] {
                0 => &[],
                c => &classes[c as usize].0,
            }
        };
        let uncoloured: Vec<u32> = (0..rows.len() as u32)
            .filter(|&i| color[rows[i as usize] as usize] == 0)
            .collect();
        let (tool_at, tool_rows) = group_by(
            n_tools,
            (0..rows.len()).flat_map(|i| {
                ranges_of(i)
                    .iter()
                    .flat_map(move |&(lo, hi)| (lo..hi).map(move |r| (r, i as u32)))
            }),
        );
        let (exit_at, exit_list) = group_by(
            rows.len(),
            exits.iter().map(|&(i, lo, hi, dd)| (i, (lo, hi, dd))),
        );
        let mut out: Vec<Option<Vec<u32>>> = vec![None; n];
        let mut d = vec![NO_DISTANCE; rows.len()];
        let mut touched: Vec<u32> = Vec::new();
        let mut heap = BinaryHeap::new();
        for r in 0..n_tools as u32 {
            let own = &tool_rows[tool_at[r as usize] as usize..tool_at[r as usize + 1] as usize];
            heap.clear();
            for &i in uncoloured.iter().chain(own) {
                let iu = i as usize;
                let mut di = free_best[iu];
                for &(lo, hi, dd) in &exit_list[exit_at[iu] as usize..exit_at[iu + 1] as usize] {
                    if lo <= r && r < hi {
                        di = di.min(dd);
                    }
                }
                d[iu] = di;
                touched.push(i);
                if di != NO_DISTANCE {
                    heap.push(Reverse((di, i)));
                }
            }
            while let Some(Reverse((dq, q))) = heap.pop() {
                if dq > d[q as usize] {
                    continue;
                }
                for &(p, lo, hi) in &rev[q as usize] {
                    if lo <= r && r < hi && dq + 1 < d[p as usize] {
                        d[p as usize] = dq + 1;
                        touched.push(p);
                        heap.push(Reverse((dq + 1, p)));
                    }
                }
            }
            for &i in uncoloured.iter().chain(own) {
                let s = rows[i as usize];
                let c = color[s as usize];
                // Where the tool sits in the row: its rank, or its place
                // among the colour's tools.
                let at = if c == 0 {
                    r as usize
                } else {
                    let mut at = 0usize;
                    for x in ranges_of(i as usize) {
                        if x.0 <= r && r < x.1 {
                            at += (r - x.0) as usize;
                            break;
                        }
                        at += (x.1 - x.0) as usize;
                    }
                    at
                };
                let row = out[s as usize].get_or_insert_with(|| {
                    let len = match c {
                        0 => n_tools,
                        _ => ranges_of(i as usize)
                            .iter()
                            .map(|x| (x.1 - x.0) as usize)
                            .sum(),
                    };
                    vec![NO_DISTANCE; len]
                });
                row[at] = d[i as usize];
            }
            for i in touched.drain(..) {
                d[i as usize] = NO_DISTANCE;
            }
        }
        out
    }
}

/// The masks and per-state tables of [`Masks`], with global mask ids.
struct Numbered {
    masks: Vec<Vec<(u32, u32)>>,
    state_mask: Vec<u32>,
    top_tier: Vec<u32>,
    tier_index: Vec<u32>,
    tiers: Vec<(u32, u32)>,
}

/// Numbers the threads' masks in state order (a state's top mask, then its
/// tiers), so the ids do not depend on which thread took which block.
/// Takes the blocks by value, each freed once numbered.
fn number_masks(n: usize, blocks: Vec<(usize, Tiered)>, mut sets: Vec<MaskSet>) -> Numbered {
    let mut ids = Numbering::new(&sets);
    let mut state_mask = Vec::with_capacity(n);
    let mut top_tier = Vec::with_capacity(n);
    let mut tier_index = Vec::with_capacity(n + 1);
    let mut tiers = Vec::new();
    for (k, block) in blocks {
        for (top, tier, lower) in block.iter() {
            tier_index.push(tiers.len() as u32);
            state_mask.push(ids.number(&sets, k, top));
            top_tier.push(tier);
            for &(kk, local) in lower {
                tiers.push((kk, ids.number(&sets, k, local)));
            }
        }
    }
    tier_index.push(tiers.len() as u32);
    Numbered {
        masks: ids.take(&mut sets),
        state_mask,
        top_tier,
        tier_index,
        tiers,
    }
}

/// Global ids for the threads' distinct masks: equal masks of different
/// threads get one id, numbered in the order [`Numbering::number`] first
/// meets them, so the ids depend on the states' order alone.
struct Numbering {
    /// Per thread, per local id, its global id (`u32::MAX`: not yet): two
    /// lookups per state, a hash map's SipHash was most of this loop.
    global: Vec<Vec<u32>>,
    /// Per global id, the thread and local id of its mask.
    order: Vec<(usize, u32)>,
    /// Global ids by the hash each thread already has.
    by_hash: crate::automaton::dfa::WordMap<u64, Vec<u32>>,
}

impl Numbering {
    fn new(sets: &[MaskSet]) -> Numbering {
        Numbering {
            global: sets.iter().map(|m| vec![u32::MAX; m.list.len()]).collect(),
            order: Vec::new(),
            by_hash: Default::default(),
        }
    }

    /// The global id of thread `k`'s mask `local`.
    fn number(&mut self, sets: &[MaskSet], k: usize, local: u32) -> u32 {
        let known = self.global[k][local as usize];
        if known != u32::MAX {
            return known;
        }
        let mask = sets[k].list[local as usize].as_slice();
        let ids = self
            .by_hash
            .entry(sets[k].hashes[local as usize])
            .or_default();
        let order = &mut self.order;
        let same = ids.iter().copied().find(|&id| {
            let (kk, ll) = order[id as usize];
            sets[kk].list[ll as usize] == mask
        });
        let id = same.unwrap_or_else(|| {
            order.push((k, local));
            ids.push(order.len() as u32 - 1);
            order.len() as u32 - 1
        });
        self.global[k][local as usize] = id;
        id
    }

    /// The masks in global id order, as their nonzero words.
    fn take(self, sets: &mut [MaskSet]) -> Vec<Vec<(u32, u32)>> {
        self.order
            .iter()
            .map(|&(k, l)| std::mem::take(&mut sets[k].list[l as usize]))
            .collect()
    }
}

/// LOOPS' tables: each state's loop set and the sets.
pub struct Loops {
    /// Per state its loop set's number + 1 (0: none).
    pub per_state: Vec<u32>,
    /// The distinct sets, dense, in order of first use, at most
    /// [`MAX_SETS`](tooldec_runtime::codec::loops::MAX_SETS).
    pub sets: Vec<Vec<u32>>,
    /// States that loop on some token but were given no set: theirs was
    /// past the most a payload stores.
    pub dropped: usize,
}

/// Numbers the threads' loop sets in state order and keeps the first
/// [`MAX_SETS`](tooldec_runtime::codec::loops::MAX_SETS): a state whose
/// set comes later gets none, and its tokens are walked as before.
fn number_loops(n: usize, blocks: &[(usize, Tiered)], sets: &mut [MaskSet], words: usize) -> Loops {
    use tooldec_runtime::codec::loops::MAX_SETS;
    let mut ids = Numbering::new(sets);
    let mut per_state = Vec::with_capacity(n);
    let mut dropped = 0;
    for (k, block) in blocks {
        for &local in &block.loops {
            let id = (local != NO_LOOP).then(|| ids.number(sets, *k, local));
            per_state.push(match id {
                Some(id) if (id as usize) < MAX_SETS => id + 1,
                Some(_) => {
                    dropped += 1;
                    0
                }
                None => 0,
            });
        }
    }
    let sets = ids.take(sets);
    Loops {
        per_state,
        sets: sets
            .iter()
            .take(MAX_SETS)
            .map(|nz| dense(nz, words))
            .collect(),
        dropped,
    }
}

/// A path of the grammar as text: entry selectors dropped, special tokens
/// shown by id.
fn show_path(bytes: &[u8]) -> String {
    use crate::lower::call_format::{ENTRY_ESCAPE, SPECIAL_ESCAPE};
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            ENTRY_ESCAPE => i += 2,
            SPECIAL_ESCAPE if i + 3 < bytes.len() => {
                let id = u32::from_be_bytes([0, bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
                out.extend(format!("<special token {id}>").into_bytes());
                i += 4;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The shortest text leading to `target`, and the bytes that continue from it.
fn example_path(dfa: &PackedDfa, target: u32) -> (Vec<u8>, String) {
    let n = dfa.n_states();
    let mut parent: Vec<Option<(u32, u8)>> = vec![None; n];
    let mut seen = vec![false; n];
    let mut queue = std::collections::VecDeque::from([dfa.start]);
    seen[dfa.start as usize] = true;
    while let Some(s) = queue.pop_front() {
        if s == target {
            break;
        }
        for b in 0..=255u8 {
            let t = dfa.next(s, b);
            if t != DEAD && !seen[t as usize] {
                seen[t as usize] = true;
                parent[t as usize] = Some((s, b));
                queue.push_back(t);
            }
        }
    }
    let mut path = Vec::new();
    let mut s = target;
    while let Some((p, b)) = parent[s as usize] {
        path.push(b);
        s = p;
    }
    path.reverse();
    let next: Vec<String> = (0..=255u8)
        .filter(|&b| dfa.next(target, b) != DEAD)
        .take(8)
        .map(|b| format!("{:?}", b as char))
        .collect();
    (path, next.join(", "))
}
