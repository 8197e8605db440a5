//! The overview: every part of the served machine as one node (a literal
//! box, a free text, a name-trie node, a parameter, an entry, the end),
//! gathered as sets first and then written in the order a walk from the
//! entries meets them, so the output is the same bytes every time.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt::Write as _;

use tooldec_compiler::automaton::region::Tag;
use tooldec_compiler::{Error, ErrorKind};

use super::edges::{back_edges, Node};
use super::machine::{by_target, is_value_byte};
use super::names::NameTrie;
use super::parts::Class;
use super::text::{byte_set, cut, dot_id, dot_label, dot_label_left};
use super::{Ctx, LABEL_CHARS, MAX_DRAWN};
use crate::view::Tokenizer;

/// The overview's nodes and edges (each edge with the set of its labels)
/// before they are written.
#[derive(Default)]
struct Graph {
    nodes: BTreeSet<Node>,
    edges: BTreeMap<(Node, Node), BTreeSet<String>>,
}

impl Graph {
    /// Adds the edge `from -> to` with `label` unless [`Ctx::keep`] drops it.
    fn add(&mut self, cx: &Ctx<'_, '_>, from: &Node, to: Node, label: String) {
        if cx.keep(from, &to) {
            self.edges
                .entry((from.clone(), to))
                .or_default()
                .insert(label);
        }
    }
}

/// The order the overview is written in, and what marks its nodes.
struct Layout<'n> {
    /// Every node, in the order a walk from the entries meets them.
    order: Vec<&'n Node>,
    rank: HashMap<&'n Node, usize>,
    /// Edges that go back along the walk (they do not rank their target).
    back: HashSet<(Node, Node)>,
    /// Nodes after which the output may end.
    ends: BTreeSet<&'n Node>,
    /// Parameter nodes every path through their machine passes.
    required: BTreeSet<Node>,
}

impl Layout<'_> {
    fn rank_of(&self, n: &Node) -> usize {
        self.rank.get(n).copied().unwrap_or(usize::MAX)
    }

    fn peripheries(&self, n: &Node) -> &'static str {
        if self.ends.contains(n) {
            ", peripheries=2"
        } else {
            ""
        }
    }
}

impl Ctx<'_, '_> {
    pub(super) fn overview(&self, tokenizer: Option<&Tokenizer>) -> Result<String, Error> {
        let mut g = Graph::default();
        self.entry_and_block_edges(&mut g);
        for &s in &self.m.order {
            match self.st.class[s as usize] {
                Class::Text(t) => self.text_edges(&mut g, s, t),
                Class::Args => self.args_edges(&mut g, s),
                _ => {}
            }
        }
        let trie = self.name_trie(tokenizer);
        self.trie_edges(&mut g, &trie);

        let Graph { mut nodes, edges } = g;
        for (from, to) in edges.keys() {
            nodes.insert(from.clone());
            nodes.insert(to.clone());
        }
        for (_, to, ..) in &trie.token_edges {
            nodes.insert(to.clone());
        }
        let n_edges = edges.len() + trie.token_edges.len();
        if nodes.len() > MAX_DRAWN || n_edges > MAX_DRAWN {
            return Err(Error::new(
                ErrorKind::Limit,
                format!(
                    "the overview would have {} nodes and {n_edges} edges, more than the {MAX_DRAWN} a \
                     drawing is read with; draw one tool's arguments with --tool NAME",
                    nodes.len()
                ),
            ));
        }
        let layout = self.layout(&nodes, &edges, &trie);

        let mut out = String::new();
        out.push_str("digraph tooldec {\n  rankdir=LR;\n  newrank=true;\n");
        let legend = self.legend(tokenizer.is_some(), trie.unsplit);
        let _ = writeln!(
            out,
            "  graph [fontname=\"Helvetica\", fontsize=10, labelloc=t, labeljust=l, label={}];",
            dot_label_left(&legend)
        );
        out.push_str("  node [fontname=\"Helvetica\", fontsize=11];\n");
        out.push_str("  edge [fontname=\"Courier\", fontsize=10];\n");
        let clusters = self.write_nodes(&mut out, &layout, &trie.roots);
        self.write_clusters(&mut out, &layout, &clusters);
        write_edges(&mut out, &layout, &edges, &trie);
        out.push_str("}\n");
        Ok(out)
    }

    /// The entries' edges, and the literal boxes' (their last state's
    /// moves).
    fn entry_and_block_edges(&self, g: &mut Graph) {
        let m = self.m;
        for (k, &(_, s)) in m.entries.iter().enumerate() {
            g.nodes.insert(Node::Entry(k));
            for (t, l) in self.targets(s, None) {
                g.add(self, &Node::Entry(k), t, l);
            }
        }
        for (&start, chain) in &self.blocks.list {
            let from = Node::Block(start);
            g.nodes.insert(from.clone());
            let last = *chain.last().unwrap_or(&start);
            if let Some((_, to)) = m.single_out(last) {
                for (t, l) in self.targets(to, None) {
                    g.add(self, &from, t, l);
                }
                continue;
            }
            for (to, set) in by_target(&m.runs[last as usize]) {
                let label = byte_set(&set);
                for (t, l) in self.targets(to, None) {
                    let l = if l.is_empty() {
                        label.clone()
                    } else {
                        format!("{label} … {l}")
                    };
                    g.add(self, &from, t, l);
                }
            }
        }
    }

    /// Free text state `s` (of text class `t`): its exits, labelled by the
    /// literal that ends it.
    fn text_edges(&self, g: &mut Graph, s: u32, t: u32) {
        let (m, st) = (self.m, self.st);
        let su = s as usize;
        let piece = st.piece[su];
        let from = Node::Text(t, piece);
        g.nodes.insert(from.clone());
        if m.accepting[su] {
            g.add(self, &from, Node::End(m.reach[su]), String::new());
        }
        for run in &m.runs[su] {
            let x = run.to as usize;
            if st.class[x] == Class::Text(t) && st.piece[x] == piece {
                continue;
            }
            let label = match run.single() {
                Some(b) => self.show_bytes(&self.forced_suffix(s, b)),
                None => String::new(),
            };
            for (to, l) in self.targets(run.to, None) {
                g.add(
                    self,
                    &from,
                    to,
                    if l.is_empty() { label.clone() } else { l },
                );
            }
        }
    }

    /// Argument-machine state `s`: each parameter's moves out of it.
    fn args_edges(&self, g: &mut Graph, s: u32) {
        let (m, st) = (self.m, self.st);
        let su = s as usize;
        let piece = st.piece[su];
        for &p in &st.committed[su] {
            let ctx = Some(st.param_args[p as usize]);
            let from = Node::Param(p, piece);
            g.nodes.insert(from.clone());
            if m.accepting[su] {
                g.add(self, &from, Node::End(m.reach[su]), String::new());
            }
            for run in &m.runs[su] {
                if st.committed[run.to as usize].contains(&p) {
                    continue;
                }
                let label = self.exit_label(*run);
                for (to, l) in self.targets(run.to, ctx) {
                    g.add(
                        self,
                        &from,
                        to,
                        if l.is_empty() { label.clone() } else { l },
                    );
                }
            }
        }
        // A state expecting one parameter of a machine and not in it yet:
        // that parameter's bytes from here are its moves.
        for &a in &st.args[su] {
            let ctx = Some(a);
            let [p] = st.ps_in(s, ctx)[..] else { continue };
            if !st.committed_in(s, ctx).is_empty() {
                continue;
            }
            let from = Node::Param(p, piece);
            for run in &m.runs[su] {
                if !run.bytes().all(is_value_byte) || st.committed[run.to as usize].contains(&p) {
                    continue;
                }
                let label = self.exit_label(*run);
                for (to, l) in self.targets(run.to, ctx) {
                    g.add(
                        self,
                        &from,
                        to,
                        if l.is_empty() { label.clone() } else { l },
                    );
                }
            }
        }
    }

    /// The name trie's nodes, and their moves other than the tokens drawn
    /// (a name that is a prefix of another ends inside the trie).
    fn trie_edges(&self, g: &mut Graph, trie: &NameTrie) {
        let (m, st) = (self.m, self.st);
        for &s in &trie.nodes {
            let from = Node::Trie(s);
            g.nodes.insert(from.clone());
            if m.accepting[s as usize] {
                g.add(self, &from, Node::End(m.reach[s as usize]), String::new());
            }
            let drawn = trie.token_first.get(&s);
            for run in &m.runs[s as usize] {
                if drawn.is_some_and(|d| run.bytes().all(|b| d.contains(&b))) {
                    continue;
                }
                if st.class[run.to as usize] != Class::Name {
                    let label = match run.single() {
                        Some(b) => self.show_bytes(&[b]),
                        None => byte_set(&by_target(&[*run])[&run.to]),
                    };
                    for (t, l) in self.targets(run.to, None) {
                        g.add(self, &from, t, if l.is_empty() { label.clone() } else { l });
                    }
                }
            }
        }
    }

    /// The order nodes are written in, the back edges, and the marks.
    fn layout<'n>(
        &self,
        nodes: &'n BTreeSet<Node>,
        edges: &'n BTreeMap<(Node, Node), BTreeSet<String>>,
        trie: &'n NameTrie,
    ) -> Layout<'n> {
        // Edges that go back along a walk from the entries (a loop to
        // the next call) do not rank their target: the drawing reads
        // from left to right.
        let mut succ: BTreeMap<&Node, Vec<&'n Node>> = BTreeMap::new();
        for (from, to) in edges.keys() {
            succ.entry(from).or_default().push(to);
        }
        let trie_nodes: Vec<(Node, &Node)> = trie
            .token_edges
            .iter()
            .map(|(from, to, ..)| (Node::Trie(*from), to))
            .collect();
        for (from, to) in &trie_nodes {
            succ.entry(from).or_default().push(to);
        }
        let (back, order) = back_edges(&succ, nodes);
        // Nodes and edges are written in the order a walk from the entries
        // meets them: Graphviz then lays the first entry's part out first.
        let rank: HashMap<&Node, usize> = order.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let ends: BTreeSet<&Node> = edges
            .keys()
            .filter(|(_, to)| matches!(to, Node::End(_)))
            .map(|(from, _)| from)
            .collect();
        Layout {
            order,
            rank,
            back,
            ends,
            required: self.required(nodes),
        }
    }

    /// The graph's label: what is drawn and how to read it.
    fn legend(&self, with_tokenizer: bool, unsplit: usize) -> Vec<String> {
        let view = self.view;
        let mut legend = vec![format!(
            "{} format, {} {}, vocabulary {}",
            view.format_name(),
            view.tools.len(),
            if view.tools.len() == 1 {
                "tool"
            } else {
                "tools"
            },
            view.vocab_label(),
        )];
        legend.push(if with_tokenizer {
            "tool names: one edge per token, each name split by the tokenizer on its own".into()
        } else {
            "tool names: one edge per token, by longest match over the artifact's token bytes \
                 (not necessarily the tokenizer's split; pass the tokenizer for that)"
                .into()
        });
        if unsplit > 0 {
            legend.push(format!(
                "{unsplit} name walks have bytes that no token spells from there (shown as bytes)"
            ));
        }
        legend.push(
            "boxes: text the format writes; dashed: free text; ellipses: parameters (dashed: optional)"
                .into(),
        );
        legend.push("double border: the output may end after it (edge to EOS)".into());
        if self.m.reach_sets.len() > 1 {
            legend.push("parts that different entries reach are drawn apart".into());
        }
        legend
    }

    /// Writes every node but the parameters, which are returned by cluster
    /// (argument machine, piece) in the order they are met; then the
    /// entries' rank.
    fn write_nodes<'n>(
        &self,
        out: &mut String,
        layout: &Layout<'n>,
        roots: &[u32],
    ) -> BTreeMap<(u32, u32), Vec<&'n Node>> {
        let (m, st, view) = (self.m, self.st, self.view);
        let mut clusters: BTreeMap<(u32, u32), Vec<&Node>> = BTreeMap::new();
        for &node in &layout.order {
            let extra = layout.peripheries(node);
            let id = dot_id(&node.id());
            match node {
                Node::Entry(k) => {
                    let _ = writeln!(
                        out,
                        "  {id} [label={}, shape=box, style=\"rounded,filled\", fillcolor=\"#e8e8e8\"{extra}];",
                        dot_label(&[format!("entry {}", m.entries[*k].0)])
                    );
                }
                Node::Block(s) => {
                    let text = self.block_text(*s);
                    if text.is_empty() {
                        let _ =
                            writeln!(out, "  {id} [label=\"\", shape=point, width=0.1{extra}];");
                    } else {
                        let _ = writeln!(
                            out,
                            "  {id} [label={}, shape=box, fontname=\"Courier\", tooltip={}{extra}];",
                            dot_label(&[self.show_bytes(&text)]),
                            dot_label(&[view.describe_state(*s)])
                        );
                    }
                }
                Node::Trie(s) => {
                    if roots.contains(s) {
                        let _ = writeln!(
                            out,
                            "  {id} [label=\"name\", shape=circle, fontsize=9, tooltip=\"where tool names begin\"{extra}];"
                        );
                    } else {
                        let _ =
                            writeln!(out, "  {id} [label=\"\", shape=point, width=0.1{extra}];");
                    }
                }
                Node::Text(t, _) => {
                    let rules: Vec<String> = st.texts[*t as usize]
                        .iter()
                        .map(|&r| match &view.regions[r as usize].tag {
                            Some(Tag::Text { rule }) => format!("`{rule}`"),
                            _ => "?".into(),
                        })
                        .collect();
                    let _ = writeln!(
                        out,
                        "  {id} [label={}, shape=box, style=\"rounded,dashed\"{extra}];",
                        dot_label(&["free text".to_string(), rules.join(", ")])
                    );
                }
                Node::Param(p, r) => {
                    clusters
                        .entry((self.rg.params[*p as usize].args, *r))
                        .or_default()
                        .push(node);
                }
                Node::End(_) => {
                    let _ = writeln!(
                        out,
                        "  {id} [label=\"EOS\", shape=doublecircle, fontsize=9];"
                    );
                }
            }
        }
        if m.entries.len() > 1 {
            let ids: Vec<String> = (0..m.entries.len())
                .map(|k| dot_id(&Node::Entry(k).id()))
                .collect();
            // In entry order from the top (an invisible chain).
            let _ = writeln!(
                out,
                "  {{ rank=source; {}; {} [style=invis]; }}",
                ids.join("; "),
                ids.join(" -> ")
            );
        }
        clusters
    }

    /// Per cluster (argument machine, piece): what tells it apart from the
    /// other copies of the same machine ("(entry `start`, copy 1 of 2)"),
    /// when there are others.
    fn copy_labels(
        &self,
        clusters: &BTreeMap<(u32, u32), Vec<&Node>>,
    ) -> HashMap<(u32, u32), String> {
        let (m, st) = (self.m, self.st);
        // The entries that reach each piece, to tell copies apart.
        let mut piece_entries: HashMap<u32, BTreeSet<usize>> = HashMap::new();
        for &s in &m.order {
            if st.class[s as usize] == Class::Args {
                piece_entries
                    .entry(st.piece[s as usize])
                    .or_default()
                    .extend(m.reach_sets[m.reach[s as usize] as usize].iter().copied());
            }
        }
        let entries = |p: u32| piece_entries.get(&p).cloned().unwrap_or_default();
        let mut out = HashMap::new();
        for &(a, piece) in clusters.keys() {
            let same: Vec<u32> = clusters
                .keys()
                .filter(|(b, _)| *b == a)
                .map(|k| k.1)
                .collect();
            if same.len() < 2 {
                continue;
            }
            let mine = entries(piece);
            let twins: Vec<u32> = same
                .iter()
                .copied()
                .filter(|&p| entries(p) == mine)
                .collect();
            let mut label = m.entries_label(&mine);
            if twins.len() > 1 {
                let k = twins.iter().position(|&p| p == piece).unwrap_or(0) + 1;
                let _ = write!(label, ", copy {k} of {}", twins.len());
            }
            out.insert((a, piece), format!("({label})"));
        }
        out
    }

    /// Writes each argument machine's copy as a cluster of its parameters,
    /// in the order their first member is met.
    fn write_clusters(
        &self,
        out: &mut String,
        layout: &Layout<'_>,
        clusters: &BTreeMap<(u32, u32), Vec<&Node>>,
    ) {
        let view = self.view;
        let mut copies = self.copy_labels(clusters);
        let mut listed: Vec<(&(u32, u32), &Vec<&Node>)> = clusters.iter().collect();
        listed
            .sort_by_key(|(_, members)| members.first().map_or(usize::MAX, |n| layout.rank_of(n)));
        for (&(a, r), members) in listed {
            let tools: &[u32] = match &view.regions[a as usize].tag {
                Some(Tag::Args { tools }) => tools,
                _ => &[],
            };
            let mut title = vec![format!("arguments of {}", view.tool_names(tools))];
            if tools.len() > 1 {
                title[0].push_str(" (one shared machine)");
            }
            title.extend(copies.remove(&(a, r)));
            let _ = writeln!(
                out,
                "  subgraph {} {{\n    label={};\n    style=\"rounded\";\n    color=\"#999999\";",
                dot_id(&format!("cluster_a{a}_{r}")),
                dot_label(&title)
            );
            for node in members {
                let Node::Param(p, _) = node else { continue };
                let param = &self.rg.params[*p as usize];
                let id = dot_id(&node.id());
                let extra = layout.peripheries(node);
                if param.name.is_empty() {
                    let _ = writeln!(
                        out,
                        "    {id} [label=\"{{}}\\nno parameters\", shape=ellipse{extra}];"
                    );
                    continue;
                }
                let req = layout.required.contains(*node);
                let mut second = param.ty.clone();
                if !second.is_empty() {
                    second.push_str(", ");
                }
                second.push_str(if req { "required" } else { "optional" });
                let _ = writeln!(
                    out,
                    "    {id} [label={}, shape=ellipse{}{extra}];",
                    dot_label(&[param.name.clone(), second]),
                    if req { "" } else { ", style=dashed" }
                );
            }
            out.push_str("  }\n");
        }
    }

    /// The parameter nodes every path through their argument machine
    /// passes: with the states in the parameter taken away (and its own
    /// bytes from states that expect it alone), no path from where the
    /// machine is entered leads out of it.
    fn required(&self, nodes: &BTreeSet<Node>) -> BTreeSet<Node> {
        let m = self.m;
        let st = self.st;
        let mut members: BTreeMap<(u32, u32), Vec<u32>> = BTreeMap::new();
        for &s in &m.order {
            if st.class[s as usize] == Class::Args {
                for &a in &st.args[s as usize] {
                    members
                        .entry((a, st.piece[s as usize]))
                        .or_default()
                        .push(s);
                }
            }
        }
        let mut out = BTreeSet::new();
        for node in nodes {
            let Node::Param(p, r) = *node else { continue };
            let a = self.rg.params[p as usize].args;
            let Some(states) = members.get(&(a, r)) else {
                continue;
            };
            if self.is_required(p, a, states) {
                out.insert(node.clone());
            }
        }
        out
    }

    /// Whether parameter `p` of argument machine `a` (whose copy's states
    /// are `states`) is on every path through it.
    fn is_required(&self, p: u32, a: u32, states: &[u32]) -> bool {
        let (m, st) = (self.m, self.st);
        let inside: HashSet<u32> = states.iter().copied().collect();
        // Entered from outside every argument machine (a tail that
        // two machines share is entered from the other one too).
        let starts: Vec<u32> = states
            .iter()
            .copied()
            .filter(|&s| {
                m.is_entry(s)
                    || m.preds[s as usize]
                        .iter()
                        .any(|&(q, ..)| st.class[q as usize] != Class::Args)
            })
            .collect();
        if starts.is_empty() {
            return false;
        }
        // Entered in the parameter itself: every path passes it.
        let starts: Vec<u32> = starts
            .into_iter()
            .filter(|&s| !st.committed[s as usize].contains(&p))
            .collect();
        let mut seen: HashSet<u32> = starts.iter().copied().collect();
        let mut queue: VecDeque<u32> = starts.into_iter().collect();
        while let Some(u) = queue.pop_front() {
            if m.accepting[u as usize] {
                return false;
            }
            let alone = st.ps_in(u, Some(a)) == [p];
            for run in &m.runs[u as usize] {
                if alone && run.bytes().all(is_value_byte) {
                    continue;
                }
                if !inside.contains(&run.to) {
                    return false;
                }
                if !st.committed[run.to as usize].contains(&p) && seen.insert(run.to) {
                    queue.push_back(run.to);
                }
            }
        }
        true
    }
}

/// Writes the edges in the order of their ends' ranks (equal ranks keep
/// the edges' own order: the labelled edges, then the name trie's tokens).
fn write_edges(
    out: &mut String,
    layout: &Layout<'_>,
    edges: &BTreeMap<(Node, Node), BTreeSet<String>>,
    trie: &NameTrie,
) {
    let mut lines: Vec<(usize, usize, String)> = Vec::new();
    for ((from, to), labels) in edges {
        let labels: Vec<&str> = labels
            .iter()
            .map(String::as_str)
            .filter(|l| !l.is_empty())
            .collect();
        let mut line = format!("  {} -> {}", dot_id(&from.id()), dot_id(&to.id()));
        let mut attrs = Vec::new();
        if !labels.is_empty() {
            attrs.push(format!(
                "label={}",
                dot_label(&[cut(&labels.join(" | "), LABEL_CHARS)])
            ));
        }
        if layout.back.contains(&(from.clone(), to.clone())) {
            attrs.push("constraint=false".into());
        }
        if !attrs.is_empty() {
            let _ = write!(line, " [{}]", attrs.join(", "));
        }
        line.push_str(";\n");
        lines.push((layout.rank_of(from), layout.rank_of(to), line));
    }
    for (from, to, label, tip) in &trie.token_edges {
        let from = Node::Trie(*from);
        let line = format!(
            "  {} -> {} [label={}, tooltip={}, class=\"token\", color=\"#3060a0\", fontcolor=\"#3060a0\"{}];\n",
            dot_id(&from.id()),
            dot_id(&to.id()),
            dot_label(std::slice::from_ref(label)),
            dot_label(std::slice::from_ref(tip)),
            if layout.back.contains(&(from.clone(), to.clone())) {
                ", constraint=false"
            } else {
                ""
            }
        );
        lines.push((layout.rank_of(&from), layout.rank_of(to), line));
    }
    // Stable: equal ranks keep the (deterministic) order above.
    lines.sort_by_key(|l| (l.0, l.1));
    for (_, _, line) in lines {
        out.push_str(&line);
    }
}
