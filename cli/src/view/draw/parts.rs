//! The parts of the served machine a drawing shows: each region's
//! argument machine and top-level parameter ([`Regions`]), each state's
//! class, parameters and piece ([`States`]), and the straight runs of
//! literal states drawn as one box each ([`Blocks`]).

use std::collections::{BTreeMap, HashMap};

use tooldec_compiler::automaton::region::Tag;

use super::machine::{is_value_byte, ServedDfa};
use crate::view::View;

/// A top-level parameter of an argument machine.
pub(super) struct Param {
    pub args: u32,
    /// Empty for the stand-in of an argument machine with no parameters.
    pub name: String,
    pub ty: String,
}

/// The region tree, read for drawing: which argument machine and which
/// top-level parameter each region is in.
pub(super) struct Regions {
    pub args_of: Vec<Option<u32>>,
    pub param_of: Vec<Option<u32>>,
    pub params: Vec<Param>,
}

impl Regions {
    pub fn new(view: &View<'_>) -> Regions {
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
pub(super) enum Class {
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

/// Per reached state: what it is part of (see [`Class`]), which parameters
/// and argument machines it is in, and its piece.
pub(super) struct States {
    pub class: Vec<Class>,
    /// The parameters the next byte may be part of (Args states).
    pub ps: Vec<Vec<u32>>,
    /// The argument machines the state is in (Args states).
    pub args: Vec<Vec<u32>>,
    /// The parameters a byte of which has been read to get here (or the
    /// one parameter every next byte is part of). Where the machines of
    /// several tools end alike, the minimized DFA shares their states: one
    /// state may then be in one parameter of each.
    pub committed: Vec<Vec<u32>>,
    /// The text regions of each interned text class.
    pub texts: Vec<Vec<u32>>,
    /// Per state: its piece, the least state connected to it by moves
    /// within argument machines (or within one free text). Machines that
    /// differ in what follows them (one call, or one of several) are
    /// separate pieces, drawn apart.
    pub piece: Vec<u32>,
    /// Each parameter's argument machine.
    pub param_args: Vec<u32>,
}

impl States {
    pub fn new(view: &View<'_>, m: &ServedDfa, rg: &Regions) -> States {
        let classes = classify(view, m, rg);
        let param_args: Vec<u32> = rg.params.iter().map(|p| p.args).collect();
        let committed = commitment(view, m, rg, &classes, &param_args);
        let piece = pieces(m, &classes.class);
        let Classes {
            class,
            ps,
            args,
            texts,
        } = classes;
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
    pub fn ps_in(&self, s: u32, ctx: Option<u32>) -> Vec<u32> {
        self.ps[s as usize]
            .iter()
            .copied()
            .filter(|&p| ctx.is_none_or(|a| self.param_args[p as usize] == a))
            .collect()
    }

    pub fn committed_in(&self, s: u32, ctx: Option<u32>) -> Vec<u32> {
        self.committed[s as usize]
            .iter()
            .copied()
            .filter(|&p| ctx.is_none_or(|a| self.param_args[p as usize] == a))
            .collect()
    }

    /// An argument-machine state in no parameter (of machine `ctx`) yet:
    /// between members, or before one (drawn as the edges it lets through).
    pub fn passthrough(&self, s: u32, ctx: Option<u32>) -> bool {
        self.class[s as usize] == Class::Args && self.committed_in(s, ctx).is_empty()
    }
}

/// [`States`]' classes, with the parameters and argument machines of
/// the Args states and the interned text classes.
struct Classes {
    class: Vec<Class>,
    ps: Vec<Vec<u32>>,
    args: Vec<Vec<u32>>,
    texts: Vec<Vec<u32>>,
}

/// Each reached state's class, from its most specific regions.
fn classify(view: &View<'_>, m: &ServedDfa, rg: &Regions) -> Classes {
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
    Classes {
        class,
        ps,
        args,
        texts,
    }
}

/// Which parameters each state is in (see [`States::committed`]).
///
/// A state is in parameter P (of argument machine A) once a byte of P was
/// read to get there: it follows a move that P makes (a value byte from a
/// state that expects P, alone or among others, into a state that of A's
/// parameters expects P alone), or any move from a state already in P that
/// P goes on in; a state whose every next byte in A is P's is in P too.
fn commitment(
    view: &View<'_>,
    m: &ServedDfa,
    rg: &Regions,
    classes: &Classes,
    param_args: &[u32],
) -> Vec<Vec<u32>> {
    let n = m.n;
    let Classes {
        class, ps, args, ..
    } = classes;
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
    committed
}

/// Each state's piece (see [`States::piece`]): connected parts of the
/// argument machines and of each free text, named by their least state.
fn pieces(m: &ServedDfa, class: &[Class]) -> Vec<u32> {
    let n = m.n;
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
    (0..n as u32).map(|s| find(&mut up, s)).collect()
}

/// Straight runs of literal states: each starts where a literal is entered
/// from elsewhere, joins or branches, or may end the output, and goes on
/// while one byte leads to the next literal state.
pub(super) struct Blocks {
    /// Per state: the first state of its block (`u32::MAX`: none).
    pub of: Vec<u32>,
    pub list: BTreeMap<u32, Vec<u32>>,
}

impl Blocks {
    pub fn new(m: &ServedDfa, st: &States) -> Blocks {
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
