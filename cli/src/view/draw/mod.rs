//! `draw`: a compiled machine as a Graphviz graph, at the level a person
//! reads it.
//!
//! The overview is a quotient of the DFA, walked from the served entry
//! states (never from the entry selector):
//! - text the format writes (its literals and what a call writes after the
//!   tool's name) is cut into straight runs, each one box labelled by the
//!   bytes it spells (special tokens by name);
//! - free text (`text_except`) is one node per rule, its exits labelled by
//!   the bytes every path out of it ends with (ReAct's `\nAction: `);
//! - the tool names are a trie whose edges are tokens: each name split by
//!   the tokenizer (or by longest match over the artifact's token bytes),
//!   each token an edge between the DFA states it walks between, so names
//!   share nodes where the minimized DFA shares states;
//! - each argument machine is a cluster with one node per top-level
//!   parameter; the bytes between members (`{`, `,`, `}`, whitespace) are
//!   passed through, so the nodes connect in the orders the machine
//!   allows, optional members can be skipped, and a parameter every path
//!   passes is marked required;
//! - parts reached from different sets of entries are drawn apart (the
//!   machine keeps them apart: what may follow differs);
//! - a node after which the output may end has a double border and an edge
//!   to the `EOS` node.
//!
//! With `--tool NAME`, that tool's argument machine state by state: every
//! DFA state in its arguments region, edges labelled by their bytes.
//!
//! Everything here is a description read from the artifact's region table
//! (see [`tooldec_compiler::automaton::region`]); output is deterministic.
//!
//! The drawing is built in stages, one file each: `machine` reads the
//! served part of the DFA as byte runs; `parts` classes its states
//! (literal, free text, tool name, argument machine) and finds the
//! parameters and the literal boxes; `edges` turns moves into edges
//! between the overview's nodes; `names` walks the tool names token by
//! token; `overview` and `expanded` write the two drawings; `text`
//! quotes for DOT. Rendering the DOT (the `dot` program) is the command
//! line's job (`crate::graphviz`).

mod edges;
mod expanded;
mod machine;
mod names;
mod overview;
mod parts;
mod text;

use std::cell::RefCell;
use std::collections::HashMap;

use super::{Tokenizer, View};
use edges::Targets;
use machine::ServedDfa;
use parts::{Blocks, Regions, States};
use text::cut;
use tooldec_compiler::{Error, ErrorKind};

/// What to draw.
pub struct DrawOptions<'a> {
    /// Expand this tool's argument machine state by state (None: the collapsed overview).
    /// `TOOL.PARAM` expands one top-level parameter of it (for machines too large to draw whole).
    pub tool: Option<&'a str>,
    /// The tokenizer for the token labels of the name trie; None: longest match over the artifact's own token bytes (say so in the graph's label).
    pub tokenizer: Option<&'a Tokenizer>,
}

/// The most nodes, or edges, an overview may have: beyond that a picture
/// is no longer read.
pub const MAX_DRAWN: usize = 2000;

/// The most edges a state-by-state drawing (`--tool`) may have: deep
/// machines beyond that are no longer read, and Graphviz takes minutes to
/// lay them out; one parameter (`TOOL.PARAM`) is drawn instead.
pub const MAX_STATE_EDGES: usize = 300;

/// Bytes of a literal box or an edge label shown before it is cut.
const LABEL_CHARS: usize = 40;

/// The DOT text. Deterministic: the same artifact and options give the same bytes.
pub fn dot(view: &View<'_>, opts: &DrawOptions<'_>) -> Result<String, Error> {
    if view.no_regions {
        return Err(Error::new(
            ErrorKind::Artifact,
            "the artifact has no region table (it was compiled by an older release or with \
             --no-regions), so its parts cannot be told apart; recompile it with this release's \
             tooldec-compile",
        ));
    }
    let selected = match opts.tool {
        None => None,
        Some(name) => Some(select(view, name)?),
    };
    let m = ServedDfa::new(view);
    let rg = Regions::new(view);
    let st = States::new(view, &m, &rg);
    let blocks = Blocks::new(&m, &st);
    let cx = Ctx {
        view,
        m: &m,
        rg: &rg,
        st: &st,
        blocks: &blocks,
        memo: RefCell::new(HashMap::new()),
    };
    match selected {
        Some((tool, param)) => cx.expanded(tool, param),
        None => cx.overview(opts.tokenizer),
    }
}

/// `--tool`'s argument: a tool's name, or `TOOL.PARAM` (split at the last
/// dot that leaves a tool's name before it).
fn select<'n>(view: &View<'_>, name: &'n str) -> Result<(&'n str, Option<&'n str>), Error> {
    if view.tools.iter().any(|t| t == name) {
        return Ok((name, None));
    }
    if let Some((tool, param)) = name.rsplit_once('.') {
        if view.tools.iter().any(|t| t == tool) {
            return Ok((tool, Some(param)));
        }
    }
    Err(Error::new(
        ErrorKind::Usage,
        format!(
            "no tool `{name}` in this artifact; its tools: {}",
            view.tool_names(&(0..view.tools.len() as u32).collect::<Vec<_>>())
        ),
    ))
}

/// What both drawings read: the artifact, its served machine and the parts
/// found in it, and the overview's memo of where moves lead.
struct Ctx<'a, 'g> {
    view: &'a View<'g>,
    m: &'a ServedDfa,
    rg: &'a Regions,
    st: &'a States,
    blocks: &'a Blocks,
    memo: RefCell<HashMap<(u32, Option<u32>), Targets>>,
}

impl Ctx<'_, '_> {
    /// Bytes for display as [`View::show_text`] shows them (special
    /// tokens by name), cut to [`LABEL_CHARS`].
    fn show_bytes(&self, bytes: &[u8]) -> String {
        let shown = self.view.show_text(bytes);
        // Without the backticks around it, which are ASCII.
        let body = &shown[1..shown.len() - 1];
        format!("`{}`", cut(body, LABEL_CHARS))
    }

    /// The bytes a literal box spells: each state's one byte, the last
    /// one's too when it has one move.
    fn block_text(&self, start: u32) -> Vec<u8> {
        let chain = self
            .blocks
            .list
            .get(&start)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        chain
            .iter()
            .filter_map(|&s| self.m.single_out(s).map(|(b, _)| b))
            .collect()
    }
}
