//! `--tool NAME` (or `TOOL.PARAM`): one tool's argument machine state by
//! state, each state a circle in its parameter's sub-cluster, edges
//! labelled by their bytes, and boxes for what comes before and after.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use tooldec_compiler::automaton::region::Tag;
use tooldec_compiler::{Error, ErrorKind};

use super::machine::{by_target, Run};
use super::parts::Class;
use super::text::{byte_set, dot_id, dot_label, dot_label_left};
use super::{Ctx, MAX_STATE_EDGES};

/// The states drawn, and what the legend and errors say about them.
struct Selection<'n> {
    /// The tool's name.
    name: &'n str,
    /// `TOOL.PARAM`'s parameter.
    param: Option<&'n str>,
    /// The tool's argument machines (regions).
    mine: Vec<u32>,
    /// The states drawn.
    set: BTreeSet<u32>,
    /// The states of the copies not drawn.
    rest: Vec<u32>,
    /// The entries that reach the copies not drawn.
    others: BTreeSet<usize>,
    /// The pieces of the copies not drawn.
    other_pieces: BTreeSet<u32>,
    /// The tool's top-level parameters.
    params: Vec<u32>,
    /// What is drawn, in words: "the arguments of `add`".
    what: String,
}

/// Per argument machine: its states by parameter, and the states in no
/// one parameter.
type Cluster = (BTreeMap<u32, Vec<u32>>, Vec<u32>);

/// The edges of the drawing: between states, and from or to the boxes for
/// what lies outside.
#[derive(Default)]
struct StateEdges {
    /// `(id, label)` of each box outside the machine.
    outside: Vec<(String, String)>,
    outside_ids: HashMap<String, String>,
    /// Per edge, the bytes it reads.
    edges: BTreeMap<(String, String), [bool; 256]>,
    /// The edges in the order they were first added.
    order_keys: Vec<(String, String)>,
}

impl StateEdges {
    /// The id of the box of `kind` ("before", "after") labelled `label`.
    fn node_for(&mut self, kind: &str, label: String) -> String {
        let key = format!("{kind}\u{0}{label}");
        let outside = &mut self.outside;
        self.outside_ids
            .entry(key)
            .or_insert_with(|| {
                let id = format!("{kind}{}", outside.len());
                outside.push((id.clone(), label));
                id
            })
            .clone()
    }

    fn add(&mut self, from: String, to: String, run: Option<Run>) {
        let key = (from, to);
        let order_keys = &mut self.order_keys;
        let e = self.edges.entry(key.clone()).or_insert_with(|| {
            order_keys.push(key);
            [false; 256]
        });
        for b in run.into_iter().flat_map(Run::bytes) {
            e[b as usize] = true;
        }
    }
}

impl Ctx<'_, '_> {
    /// One tool's argument machine, state by state.
    pub(super) fn expanded(&self, name: &str, param: Option<&str>) -> Result<String, Error> {
        let sel = self.select_states(name, param)?;
        let clusters = self.clusters(&sel);
        let edges = self.state_edges(&sel);
        if edges.edges.len() > MAX_STATE_EDGES {
            return Err(self.too_large(&sel, edges.edges.len()));
        }
        Ok(self.write_expanded(&sel, &clusters, &edges))
    }

    /// The states of `name`'s machine to draw (of `param` only, when
    /// given), or why they cannot be.
    fn select_states<'n>(
        &self,
        name: &'n str,
        param: Option<&'n str>,
    ) -> Result<Selection<'n>, Error> {
        let (view, m, st) = (self.view, self.m, self.st);
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
        // The tool's top-level parameters, in the order the schema's
        // regions list them.
        let params: Vec<u32> = (0..self.rg.params.len() as u32)
            .filter(|&p| {
                let p = &self.rg.params[p as usize];
                mine.contains(&p.args) && !p.name.is_empty()
            })
            .collect();
        let mut sel = Selection {
            name,
            param,
            set: set.into_iter().collect(),
            others: rest
                .iter()
                .flat_map(|&s| entries_of(s).iter().copied())
                .collect(),
            other_pieces: rest.iter().map(|&s| st.piece[s as usize]).collect(),
            rest,
            mine,
            params,
            what: format!("the arguments of `{name}`"),
        };
        if let Some(pn) = param {
            let chosen: Vec<u32> = sel
                .params
                .iter()
                .copied()
                .filter(|&p| self.rg.params[p as usize].name == pn)
                .collect();
            if chosen.is_empty() {
                return Err(Error::new(
                    ErrorKind::Usage,
                    format!(
                        "tool `{name}` has no parameter `{pn}`; its parameters: {}",
                        self.param_list(&sel)
                    ),
                ));
            }
            sel.set
                .retain(|&s| st.ps[s as usize].iter().any(|p| chosen.contains(p)));
            sel.what = format!("parameter `{pn}` of `{name}`");
        }
        if sel.set.len() > MAX_STATE_EDGES {
            let edges = sel
                .set
                .iter()
                .map(|&s| by_target(&m.runs[s as usize]).len())
                .sum();
            return Err(self.too_large(&sel, edges));
        }
        Ok(sel)
    }

    /// The tool's parameters as `--tool` takes them:
    /// "`get_weather.city`, `get_weather.days`".
    fn param_list(&self, sel: &Selection<'_>) -> String {
        // Regions are numbered as the NFA is built, right to left:
        // reversed, the parameters come in declared order.
        let mut names: Vec<String> = sel
            .params
            .iter()
            .rev()
            .map(|&p| format!("`{}.{}`", sel.name, self.rg.params[p as usize].name))
            .collect();
        names.dedup();
        names.join(", ")
    }

    /// The error for a drawing with `edges` edges, too many to read.
    fn too_large(&self, sel: &Selection<'_>, edges: usize) -> Error {
        Error::new(
            ErrorKind::Limit,
            format!(
                "{}: {} states and {edges} edges, more than the {MAX_STATE_EDGES} edges a \
                 state-by-state drawing is read (and laid out) with{}",
                sel.what,
                sel.set.len(),
                if sel.param.is_none() && !sel.params.is_empty() {
                    format!(
                        "; draw one parameter at a time: --tool {}",
                        self.param_list(sel)
                    )
                } else {
                    String::new()
                }
            ),
        )
    }

    /// The drawn states by argument machine, by parameter.
    fn clusters(&self, sel: &Selection<'_>) -> BTreeMap<u32, Cluster> {
        let st = self.st;
        let mut clusters: BTreeMap<u32, Cluster> = BTreeMap::new();
        for &s in &sel.set {
            let su = s as usize;
            let a = *st.args[su]
                .iter()
                .find(|a| sel.mine.contains(a))
                .unwrap_or(&sel.mine[0]);
            let c = clusters.entry(a).or_default();
            match st.ps_in(s, Some(a))[..] {
                [p] if !self.rg.params[p as usize].name.is_empty() => {
                    c.0.entry(p).or_default().push(s)
                }
                _ => c.1.push(s),
            }
        }
        clusters
    }

    /// Edges inside, out to what follows, in from what precedes.
    fn state_edges(&self, sel: &Selection<'_>) -> StateEdges {
        let m = self.m;
        let set = &sel.set;
        let mut e = StateEdges::default();
        for &u in set {
            for run in &m.runs[u as usize] {
                let to = if set.contains(&run.to) {
                    format!("s{}", run.to)
                } else {
                    e.node_for("after", self.describe_after(run.to))
                };
                e.add(format!("s{u}"), to, Some(*run));
            }
        }
        for &v in set {
            if m.is_entry(v) {
                let names: Vec<&str> = m
                    .entries
                    .iter()
                    .filter(|e| e.1 == v)
                    .map(|e| e.0.as_str())
                    .collect();
                let id = e.node_for("before", format!("entry {}", names.join(", ")));
                e.add(id, format!("s{v}"), None);
            }
            for &(p, lo, hi) in &m.preds[v as usize] {
                if !set.contains(&p) {
                    let id = e.node_for("before", self.describe_before(p));
                    e.add(id, format!("s{v}"), Some(Run { lo, hi, to: v }));
                }
            }
        }
        e
    }

    /// The graph's label: what is drawn, how to read it, and which copies
    /// of the machine are left out.
    fn expanded_legend(&self, sel: &Selection<'_>) -> Vec<String> {
        let (view, m) = (self.view, self.m);
        let what = &sel.what;
        let mut legend = vec![format!(
            "{what}, state by state ({} format, vocabulary {})",
            view.format_name(),
            view.vocab_label()
        )];
        legend.push("circles: DFA states (their numbers); double circle: accepting; edges: the bytes they read".into());
        legend.push(format!("boxes: what comes before and after {what}"));
        if !sel.other_pieces.is_empty() {
            let drawn: BTreeSet<usize> = sel
                .set
                .iter()
                .flat_map(|&s| m.reach_sets[m.reach[s as usize] as usize].iter().copied())
                .collect();
            legend.push(format!(
                "drawn: the copy reached from {}; not drawn: {} more {} reached from {} ({} states)",
                m.entries_label(&drawn),
                sel.other_pieces.len(),
                if sel.other_pieces.len() == 1 {
                    "copy"
                } else {
                    "copies"
                },
                m.entries_label(&sel.others),
                sel.rest.len()
            ));
        }
        legend
    }

    fn write_expanded(
        &self,
        sel: &Selection<'_>,
        clusters: &BTreeMap<u32, Cluster>,
        e: &StateEdges,
    ) -> String {
        let mut out = String::new();
        out.push_str("digraph tooldec {\n  rankdir=LR;\n  newrank=true;\n");
        let _ = writeln!(
            out,
            "  graph [fontname=\"Helvetica\", fontsize=10, labelloc=t, labeljust=l, label={}];",
            dot_label_left(&self.expanded_legend(sel))
        );
        out.push_str("  node [fontname=\"Helvetica\", fontsize=10, shape=circle];\n");
        out.push_str("  edge [fontname=\"Courier\", fontsize=9];\n");
        for (id, label) in &e.outside {
            let _ = writeln!(
                out,
                "  {} [label={}, shape=box, style=\"rounded,dotted\", fontname=\"Courier\"];",
                dot_id(id),
                dot_label(std::slice::from_ref(label))
            );
        }
        for (&a, (params, glue)) in clusters {
            self.write_cluster(&mut out, a, params, glue);
        }
        let key_order: BTreeMap<&(String, String), usize> = e
            .order_keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k, i))
            .collect();
        let mut listed: Vec<(&(String, String), &[bool; 256])> = e.edges.iter().collect();
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
        out
    }

    /// One argument machine `a`: its states in no one parameter, then a
    /// sub-cluster per parameter.
    fn write_cluster(
        &self,
        out: &mut String,
        a: u32,
        params: &BTreeMap<u32, Vec<u32>>,
        glue: &[u32],
    ) {
        let (view, m) = (self.view, self.m);
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
