//! How moves of the DFA become edges of the overview: the overview's nodes
//! ([`Node`]), where a move into a state leads once the states between
//! parameters are passed through ([`Ctx::targets`]), the labels of edges
//! out of free text and argument machines, and the back edges that do not
//! rank their target.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use super::machine::{is_value_byte, is_ws, Run};
use super::parts::Class;
use super::{Ctx, LABEL_CHARS};

/// A node of the overview.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Node {
    Entry(usize),
    Block(u32),
    Trie(u32),
    /// A text class and a piece.
    Text(u32, u32),
    /// A parameter and a piece.
    Param(u32, u32),
    /// The end of the output, per reach set (each part of the drawing
    /// ends at its own).
    End(u32),
}

impl Node {
    pub fn id(&self) -> String {
        match self {
            Node::Entry(k) => format!("entry{k}"),
            Node::Block(s) => format!("b{s}"),
            Node::Trie(s) => format!("t{s}"),
            Node::Text(t, r) => format!("x{t}_{r}"),
            Node::Param(p, r) => format!("p{p}_{r}"),
            Node::End(r) => format!("end{r}"),
        }
    }
}

/// Where edges go, with a label each (empty: none).
pub(super) type Targets = Vec<(Node, String)>;

impl Ctx<'_, '_> {
    /// The nodes a move into `x` reaches when `x` is in a drawn part;
    /// `ctx`: the argument machine the move is made in, if any.
    pub(super) fn direct(&self, x: u32, ctx: Option<u32>) -> Targets {
        let xu = x as usize;
        let r = self.m.reach[xu];
        let piece = self.st.piece[xu];
        let mut out = Vec::new();
        match self.st.class[xu] {
            Class::Off => {}
            Class::End => out.push((Node::End(r), String::new())),
            Class::Name => {
                out.push((Node::Trie(x), String::new()));
                if self.m.accepting[xu] {
                    out.push((Node::End(r), String::new()));
                }
            }
            Class::Lit => {
                let b = self.blocks.of[xu];
                out.push((Node::Block(b), String::new()));
                if self.m.accepting[xu] && b == x {
                    out.push((Node::End(r), String::new()));
                }
            }
            Class::Text(t) => out.push((Node::Text(t, piece), String::new())),
            Class::Args => {
                for p in self.st.committed_in(x, ctx) {
                    out.push((Node::Param(p, piece), String::new()));
                }
            }
        }
        out
    }

    /// The nodes a move into `v` reaches: through the states between
    /// parameters to the parameters, literals or end they lead to. A move
    /// out into a literal or the end on one byte that is not whitespace
    /// (`}`, `)`) labels its edge.
    pub(super) fn targets(&self, v: u32, ctx: Option<u32>) -> Targets {
        if !self.st.passthrough(v, ctx) {
            return self.direct(v, ctx);
        }
        if let Some(t) = self.memo.borrow().get(&(v, ctx)) {
            return t.clone();
        }
        let mut out: BTreeSet<(Node, String)> = BTreeSet::new();
        let mut seen: HashSet<u32> = HashSet::from([v]);
        let mut queue = VecDeque::from([v]);
        while let Some(w) = queue.pop_front() {
            let wu = w as usize;
            if self.m.accepting[wu] {
                out.insert((Node::End(self.m.reach[wu]), String::new()));
            }
            let expects = self.st.ps_in(w, ctx);
            for &p in &expects {
                out.insert((Node::Param(p, self.st.piece[wu]), String::new()));
            }
            for r in &self.m.runs[wu] {
                // A byte of the parameter this state expects: that
                // parameter's node (above) goes on from here.
                if !expects.is_empty() && r.bytes().all(is_value_byte) {
                    continue;
                }
                if self.st.passthrough(r.to, ctx) {
                    if seen.insert(r.to) {
                        queue.push_back(r.to);
                    }
                    continue;
                }
                let label = self.exit_label(*r);
                for (t, l) in self.direct(r.to, ctx) {
                    out.insert((t, if l.is_empty() { label.clone() } else { l }));
                }
            }
        }
        let out: Targets = out.into_iter().collect();
        self.memo.borrow_mut().insert((v, ctx), out.clone());
        out
    }

    /// The label of a move out of an argument machine: its byte when it is
    /// one byte that closes something (`}`, `)`) into a literal or the end.
    pub(super) fn exit_label(&self, r: Run) -> String {
        match (r.single(), self.st.class[r.to as usize]) {
            (Some(b), Class::Lit | Class::End) if !is_ws(b) && !is_value_byte(b) => {
                self.show_bytes(&[b])
            }
            _ => String::new(),
        }
    }

    /// The bytes every path that ends with the move `u --byte-->` ends with,
    /// within the same free text: the literal that closes the text (ReAct's
    /// `\nAction: `). Walks back while every move into the state carries
    /// one same byte and, to go on, comes from one state.
    pub(super) fn forced_suffix(&self, u: u32, byte: u8) -> Vec<u8> {
        let mut out = vec![byte];
        let mut cur = u;
        let mut seen = HashSet::from([u]);
        let class = self.st.class[u as usize];
        while out.len() < 2 * LABEL_CHARS && !self.m.is_entry(cur) {
            let preds = &self.m.preds[cur as usize];
            let Some(&(p0, b0, _)) = preds.first() else {
                break;
            };
            if preds.iter().any(|&(_, lo, hi)| lo != hi || lo != b0) {
                break;
            }
            out.push(b0);
            if preds.iter().any(|&(p, ..)| p != p0)
                || self.st.class[p0 as usize] != class
                || !seen.insert(p0)
            {
                break;
            }
            cur = p0;
        }
        out.reverse();
        out
    }

    /// A parameter node may lead to another argument machine's nodes only
    /// through what lies between (a merged tail of two machines would
    /// otherwise link one's members to the other's).
    pub(super) fn keep(&self, from: &Node, to: &Node) -> bool {
        if from == to {
            return false;
        }
        match (from, to) {
            (Node::Param(a, _), Node::Param(b, _)) => {
                self.rg.params[*a as usize].args == self.rg.params[*b as usize].args
            }
            _ => true,
        }
    }
}

/// The edges a depth-first walk from the entries (then from any node not
/// reached yet, in node order) finds going back to a node on its path.
/// Also returns every node in the order the walk meets them.
pub(super) fn back_edges<'n>(
    succ: &BTreeMap<&Node, Vec<&'n Node>>,
    nodes: &'n BTreeSet<Node>,
) -> (HashSet<(Node, Node)>, Vec<&'n Node>) {
    let mut back = HashSet::new();
    let mut order: Vec<&Node> = Vec::new();
    // 0: not seen, 1: on the path, 2: done.
    let mut mark: HashMap<&Node, u8> = HashMap::new();
    let empty: Vec<&Node> = Vec::new();
    let roots = nodes
        .iter()
        .filter(|n| matches!(n, Node::Entry(_)))
        .chain(nodes.iter());
    for root in roots {
        if mark.get(root).copied().unwrap_or(0) != 0 {
            continue;
        }
        mark.insert(root, 1);
        order.push(root);
        let mut stack: Vec<(&Node, usize)> = vec![(root, 0)];
        while let Some(top) = stack.last_mut() {
            let (node, i) = *top;
            let next = succ.get(node).unwrap_or(&empty);
            if i == next.len() {
                mark.insert(node, 2);
                stack.pop();
                continue;
            }
            top.1 += 1;
            let to = next[i];
            match mark.get(to).copied().unwrap_or(0) {
                0 => {
                    mark.insert(to, 1);
                    order.push(to);
                    stack.push((to, 0));
                }
                1 => {
                    back.insert((node.clone(), to.clone()));
                }
                _ => {}
            }
        }
    }
    (back, order)
}
