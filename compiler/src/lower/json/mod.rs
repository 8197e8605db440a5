//! Lowering JSON Schema to [`Expr`]: the typed argument machine of a tool.
//!
//! A schema is lowered in two steps. [`Lowering::flatten`] resolves `$ref`
//! (local JSON pointers, recursion unrolled `max_recursion` times), merges
//! `allOf` and the siblings of every applicator into one conjunction, and
//! distributes `anyOf`/`oneOf` over it: the result is a disjunction of
//! [`Flat`] schemas, each a plain conjunction of keyword constraints with no
//! applicator left. [`Lowering::build`] then writes each flat schema as an
//! expression, one JSON kind at a time (`flat.rs`, `build.rs`).
//!
//! The rule everywhere: the machine accepts a subset of the values the
//! schema allows, never more. What is exact, what is a documented subset
//! (closed objects, declared property order, canonical spellings, known
//! formats enforced), and what is refused is listed in `DESIGN.md`. With
//! [`JsonOptions::relax`], what would be refused is over-approximated
//! instead and recorded in [`Lowering::relaxed`].
//!
//! Whitespace between JSON tokens is allowed up to `max_ws` bytes at each
//! place, so no path can loop forever.

mod build;
mod flat;
mod spelling;
mod text;

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;

pub use build::MAX_POSITIONS;
pub(crate) use spelling::Spelling;
#[cfg(test)]
pub use text::{json_integer, json_string};
pub use text::{json_number, ws, MAX_INT_DIGITS};

use serde::{Deserialize, Serialize};

use crate::automaton::expr::Expr;
use crate::error::{Error, ErrorKind, Limit};
use crate::spec::ToolSet;
use flat::Flat;

/// Where JSON may hold whitespace between its tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Whitespace {
    /// Up to `max_ws` bytes of whitespace between any two tokens.
    #[default]
    Free,
    /// Exactly what Python's `json.dumps` writes by default, and so what
    /// chat templates write into their examples with `tojson`: `", "`
    /// between members and items, `": "` after a key, nothing else. Small
    /// models left free tend to drift into runs of `\n` and spaces.
    Dumps,
}

impl Whitespace {
    /// Its name on the command line and in the artifact.
    pub fn name(self) -> &'static str {
        match self {
            Whitespace::Free => "free",
            Whitespace::Dumps => "dumps",
        }
    }

    /// Reads `free` or `dumps`.
    pub fn parse(s: &str) -> Option<Whitespace> {
        [Whitespace::Free, Whitespace::Dumps]
            .into_iter()
            .find(|w| w.name() == s)
    }
}

/// Bounds of the argument machines.
#[derive(Debug, Clone, Copy)]
pub struct JsonOptions {
    /// Most whitespace bytes allowed between two JSON tokens (under
    /// [`Whitespace::Free`]).
    pub max_ws: u32,
    /// Where whitespace may go.
    pub whitespace: Whitespace,
    /// Deepest nesting of objects and arrays in a schema.
    pub max_depth: usize,
    /// Objects whose schema does not say `additionalProperties` accept
    /// extra properties (JSON Schema's meaning) when true; when false
    /// (the default for tool arguments) they accept only the declared ones,
    /// so a model cannot invent arguments. Either way the machine accepts
    /// nothing the schema forbids.
    pub open_objects: bool,
    /// Objects with at most this many declared properties accept them in
    /// any order (0: declared order only). Costs 2^n states per object.
    pub any_order: usize,
    /// How many times a recursive `$ref` may be entered along one path
    /// before the deeper recursion is cut off.
    pub max_recursion: usize,
    /// Deepest nesting of a value that a schema leaves free (`true`, `{}`,
    /// `additionalProperties: true`, an array without `items`).
    pub any_depth: usize,
    /// `maxLength` and `maxItems` above this (and above the minimum) are
    /// lowered as this bound: a subset that keeps counting machines small
    /// (a string of at most n code points costs about 20n DFA states).
    pub max_count: u32,
    /// Over-approximate what cannot be expressed exactly (`uniqueItems`,
    /// `not`, overlapping `oneOf` ...) instead of refusing it; each
    /// approximation is listed in [`Lowering::relaxed`].
    pub relax: bool,
}

impl Default for JsonOptions {
    fn default() -> Self {
        JsonOptions {
            max_ws: 4,
            whitespace: Whitespace::Free,
            max_depth: 32,
            open_objects: false,
            any_order: 0,
            max_recursion: 3,
            any_depth: 3,
            max_count: 256,
            relax: false,
        }
    }
}

/// Most alternatives one schema may distribute into (`anyOf` inside
/// `allOf` multiplies them).
pub const MAX_ALTERNATIVES: usize = 256;

/// Most `$ref`s entered along one path of a schema (distinct ones; a
/// recursive one also counts each time it is entered).
pub const MAX_REF_CHAIN: usize = 256;

/// Most `any_order` objects may ask for.
pub const MAX_ANY_ORDER: usize = 8;

/// A schema and where it is: the schema value, its JSON pointer in the
/// source file, and the `$ref` targets entered on the way to it (for
/// bounding recursion).
#[derive(Debug, Clone)]
pub(crate) struct Sub<'a> {
    pub schema: &'a Value,
    pub at: String,
    pub stack: Rc<Vec<String>>,
}

/// A conjunction of schema nodes (by address), each with its recursion path.
type MemoKey = Vec<(usize, Rc<Vec<String>>)>;

/// Builds the argument machines of one tool set.
pub struct Lowering<'a> {
    pub set: &'a ToolSet,
    pub opts: JsonOptions,
    tool: usize,
    /// Over-approximations made under [`JsonOptions::relax`]: one line each,
    /// "place: keyword: what was done".
    pub relaxed: Vec<String>,
    memo: HashMap<MemoKey, Expr>,
    any: Vec<Expr>,
    /// How values are spelled (JSON unless an argument encoding says).
    spelling: Spelling,
    /// Unconstrained strings in this spelling: nested, and as a top-level
    /// value (which XML parameters write raw).
    plain_strings: [Option<Expr>; 2],
}

impl<'a> Lowering<'a> {
    pub fn new(set: &'a ToolSet, opts: JsonOptions) -> Self {
        Lowering::spelled(set, opts, Spelling::Json)
    }

    /// A lowering that writes values as `spelling` says.
    pub(crate) fn spelled(set: &'a ToolSet, opts: JsonOptions, spelling: Spelling) -> Self {
        Lowering {
            spelling,
            plain_strings: [None, None],
            set,
            opts,
            tool: 0,
            relaxed: Vec::new(),
            memo: HashMap::new(),
            any: Vec::new(),
        }
    }

    fn root(&self) -> Sub<'a> {
        let set: &'a ToolSet = self.set;
        let tool = &set.tools[self.tool];
        Sub {
            schema: &tool.parameters,
            at: tool.pointer.clone(),
            stack: Rc::new(Vec::new()),
        }
    }

    fn select(&mut self, i: usize) {
        if self.tool != i {
            self.memo.clear();
        }
        self.tool = i;
    }

    /// The argument machine of tool `i`: a JSON object matching its schema.
    pub fn tool_arguments(&mut self, i: usize) -> Result<Expr, Error> {
        self.select(i);
        let root = self.root();
        let alts = self.flatten(std::slice::from_ref(&root), 0)?;
        let mut objects = Vec::new();
        let mut kinds = 0;
        for mut f in alts {
            kinds |= f.kinds;
            f.kinds &= flat::OBJ;
            if f.kinds != 0 && f.literals.is_some() && self.spelling.top_form() {
                return Err(self.err(
                    ErrorKind::Unsupported,
                    &f.at,
                    "enum or const on the whole arguments has no spelling as keyword arguments or XML parameters",
                ));
            }
            if f.kinds != 0 {
                let e = self.build(&f, 0)?;
                if !build::is_nothing(&e) {
                    objects.push(e);
                }
            }
        }
        if objects.is_empty() {
            let msg = if kinds & flat::OBJ == 0 && kinds != 0 {
                "the parameters schema must describe a JSON object".to_string()
            } else {
                "the parameters schema accepts no value".to_string()
            };
            return Err(self.err(ErrorKind::Schema, &root.at, &msg));
        }
        Ok(Expr::alt(objects))
    }

    /// Tool `i`'s schema as a JSON value of any type (a schema document
    /// compiled on its own, not as tool arguments), with whitespace around.
    pub fn schema_value(&mut self, i: usize) -> Result<Expr, Error> {
        self.select(i);
        let root = self.root();
        let v = self.value_of(std::slice::from_ref(&root), 0)?;
        if build::is_nothing(&v) {
            return Err(self.err(ErrorKind::Schema, &root.at, "the schema accepts no value"));
        }
        Ok(Expr::seq([self.ws(), v, self.ws()]))
    }

    /// Tool `i`'s arguments as positional values, `v1, v2, ...`: the
    /// required parameters in the schema's order, then the optional ones in
    /// order, of which any trailing run may be left out. The separator is a
    /// comma and an optional space.
    pub fn tool_positional(&mut self, i: usize) -> Result<Expr, Error> {
        // The keyword checks of the whole schema come first.
        self.tool_arguments(i)?;
        let root = self.root();
        let required: Vec<&str> = root
            .schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let props = root.schema.get("properties").and_then(Value::as_object);
        self.check_positional(&root, props, &required)?;
        let Some(props) = props else {
            return Ok(Expr::Empty);
        };
        let mut req = Vec::new();
        let mut opt = Vec::new();
        for (name, sub) in props {
            let s = Sub {
                schema: sub,
                at: format!("{}/properties/{}", root.at, escape_pointer(name)),
                stack: root.stack.clone(),
            };
            let v = Expr::tag(
                crate::automaton::region::Tag::Value {
                    name: name.clone(),
                    ty: crate::automaton::region::schema_type(&[sub]),
                },
                self.value_of(std::slice::from_ref(&s), 1)?,
            );
            if required.contains(&name.as_str()) {
                req.push(v);
            } else {
                opt.push(v);
            }
        }
        let sep = || Expr::seq([Expr::lit(","), Expr::opt(Expr::lit(" "))]);
        // The optional tail, built from the end: (sep? v_k tail)?
        let mut tail = Expr::Empty;
        let first_optional_alone = req.is_empty();
        for (k, v) in opt.into_iter().enumerate().rev() {
            let lead = if k == 0 && first_optional_alone {
                Expr::Empty
            } else {
                sep()
            };
            tail = Expr::opt(Expr::seq([lead, v, tail]));
        }
        let mut parts = Vec::new();
        for (k, v) in req.into_iter().enumerate() {
            if k > 0 {
                parts.push(sep());
            }
            parts.push(v);
        }
        parts.push(tail);
        Ok(Expr::seq(parts))
    }

    /// Refuses a root keyword that positional arguments cannot honour:
    /// they are the declared properties in order, nothing else, so a
    /// keyword on the whole object (or a name `required` but not declared)
    /// would go unenforced.
    fn check_positional(
        &self,
        root: &Sub<'a>,
        props: Option<&serde_json::Map<String, Value>>,
        required: &[&str],
    ) -> Result<(), Error> {
        let refuse = |keyword: &str, why: &str| {
            Err(self.err(
                ErrorKind::Unsupported,
                &format!("{}/{}", root.at, escape_pointer(keyword)),
                &format!("args_positional writes the declared properties in order and nothing else, so {why}"),
            ))
        };
        let declared = |n: &str| props.is_some_and(|p| p.contains_key(n));
        if let Some(name) = required.iter().find(|n| !declared(n)) {
            return refuse(
                "required",
                &format!(
                    "the required {name:?}, which `properties` does not declare, has no position"
                ),
            );
        }
        let count = |k: &str| root.schema.get(k).and_then(Value::as_u64);
        if count("minProperties").is_some_and(|n| n > required.len() as u64) {
            return refuse(
                "minProperties",
                "minProperties above the number of required parameters cannot be enforced",
            );
        }
        if count("maxProperties").is_some_and(|n| n < props.map_or(0, |p| p.len()) as u64) {
            return refuse(
                "maxProperties",
                "maxProperties below the number of parameters cannot be enforced",
            );
        }
        const WHOLE: [&str; 15] = [
            "const",
            "enum",
            "not",
            "allOf",
            "anyOf",
            "oneOf",
            "$ref",
            "$dynamicRef",
            "if",
            "then",
            "else",
            "dependentRequired",
            "dependentSchemas",
            "dependencies",
            "propertyNames",
        ];
        for k in WHOLE.iter().chain(&["patternProperties"]) {
            if root.schema.get(*k).is_some() {
                return refuse(k, &format!("the root keyword {k} cannot be enforced"));
            }
        }
        Ok(())
    }

    pub(crate) fn err(&self, kind: ErrorKind, pointer: &str, msg: &str) -> Error {
        let name = &self.set.tools[self.tool].name;
        Error::new(
            kind,
            format!("{}: tool {name:?}: {msg}", self.set.place(pointer)),
        )
    }

    /// Refuses `keyword` at `at` with `why`, or under `relax` records the
    /// over-approximation `instead` and returns `Ok(())`.
    pub(crate) fn refuse_or_relax(
        &mut self,
        at: &str,
        keyword: &str,
        why: &str,
        instead: &str,
    ) -> Result<(), Error> {
        if self.opts.relax {
            let place = self.set.place(at);
            let line = format!("{place}: {keyword}: {instead}");
            if !self.relaxed.contains(&line) {
                self.relaxed.push(line);
            }
            Ok(())
        } else {
            Err(self.err(
                ErrorKind::Unsupported,
                at,
                &format!("{keyword:?} {why} (--relax accepts it: {instead})"),
            ))
        }
    }

    /// The whitespace a JSON token may have next to it where no
    /// separator is (inside brackets, around a value): `[ \t\n\r]{0,max_ws}`
    /// when free; none under `dumps`, or where the spelling takes none.
    pub fn ws(&self) -> Expr {
        match self.spelling {
            _ if self.opts.whitespace == Whitespace::Dumps => Expr::Empty,
            Spelling::JsonInline => text::ws_inline(self.opts.max_ws),
            _ if self.spelling.spaced() => ws(self.opts.max_ws),
            _ => Expr::Empty,
        }
    }

    /// The `,` between members or items, with its whitespace.
    pub fn comma(&self) -> Expr {
        self.separator(",")
    }

    /// The `:` between a key and its value, with its whitespace.
    pub fn colon(&self) -> Expr {
        self.separator(":")
    }

    /// `sep` with free whitespace around, or as `json.dumps` spaces it
    /// (one space after) where the spelling takes whitespace.
    fn separator(&self, sep: &str) -> Expr {
        if self.opts.whitespace == Whitespace::Dumps && self.spelling.spaced() {
            return Expr::lit(&format!("{sep} "));
        }
        Expr::seq([self.ws(), Expr::lit(sep), self.ws()])
    }

    /// The machine of the values that satisfy all of `subs`, shared
    /// between the places that ask for the same conjunction.
    pub(crate) fn value_of(&mut self, subs: &[Sub<'a>], depth: usize) -> Result<Expr, Error> {
        if depth > self.opts.max_depth {
            return Err(self.err(
                ErrorKind::Limit,
                &subs[0].at,
                &format!(
                    "the schema nests deeper than {} levels (raise --max-depth)",
                    self.opts.max_depth
                ),
            ));
        }
        let mut key: MemoKey = subs
            .iter()
            .map(|s| (s.schema as *const Value as usize, s.stack.clone()))
            .collect();
        // XML parameters spell a top-level value apart from a nested one.
        if depth == 1 && matches!(self.spelling, Spelling::Xml { .. }) {
            key.push((0, Rc::default()));
        }
        if let Some(e) = self.memo.get(&key) {
            return Ok(e.clone());
        }
        let alts = self.flatten(subs, depth)?;
        let mut parts = Vec::with_capacity(alts.len());
        for f in &alts {
            let e = self.build(f, depth)?;
            if !build::is_nothing(&e) {
                parts.push(e);
            }
        }
        let e = if parts.is_empty() {
            build::nothing()
        } else {
            Expr::shared(Expr::alt(parts))
        };
        self.memo.insert(key, e.clone());
        Ok(e)
    }

    /// Resolves a local `$ref` (`#`, `#/json/pointer`) against the tool's
    /// parameters. `None` when the recursion bound cuts it off.
    pub(crate) fn resolve(
        &mut self,
        from: &Sub<'a>,
        reference: &str,
        at: &str,
    ) -> Result<Option<Sub<'a>>, Error> {
        let Some(pointer) = reference.strip_prefix('#') else {
            return Err(self.err(
                ErrorKind::Unsupported,
                at,
                &format!("the $ref {reference:?} is not local (only \"#...\" JSON pointers are resolved)"),
            ));
        };
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(self.err(
                ErrorKind::Unsupported,
                at,
                &format!(
                    "the $ref {reference:?} names an anchor (only JSON pointers are resolved)"
                ),
            ));
        }
        let decoded = percent_decode(pointer);
        let root = self.root();
        let Some(target) = root.schema.pointer(&decoded) else {
            return Err(self.err(
                ErrorKind::Schema,
                at,
                &format!("the $ref {reference:?} points at nothing"),
            ));
        };
        let count = from.stack.iter().filter(|t| **t == decoded).count();
        if count >= self.opts.max_recursion.max(1) {
            return Ok(None);
        }
        // Each reference entered is a level of recursion of the lowering:
        // a chain of distinct references is bounded here, as a cycle is by
        // `max_recursion`.
        if from.stack.len() >= MAX_REF_CHAIN {
            return Err(self.err(
                ErrorKind::Limit,
                at,
                &format!("more than {MAX_REF_CHAIN} $refs entered along one path"),
            ));
        }
        let mut stack = (*from.stack).clone();
        stack.push(decoded.clone());
        Ok(Some(Sub {
            schema: target,
            at: format!("{}{}", root.at, decoded),
            stack: Rc::new(stack),
        }))
    }

    /// Flattens the conjunction of `subs` into a disjunction of flat
    /// schemas (see the module documentation).
    pub(crate) fn flatten(
        &mut self,
        subs: &[Sub<'a>],
        depth: usize,
    ) -> Result<Vec<Flat<'a>>, Error> {
        let mut alts = vec![Flat::any(&subs[0].at)];
        // `unevaluated*` keywords see what their own schema evaluates;
        // only a schema flattened alone has all of that in one flat schema.
        let alone = subs.len() == 1;
        for sub in subs {
            let more = self.flatten_one(sub, depth, alone)?;
            alts = self.product(alts, more, &sub.at)?;
            if alts.is_empty() {
                break;
            }
        }
        Ok(alts)
    }

    fn product(
        &mut self,
        left: Vec<Flat<'a>>,
        right: Vec<Flat<'a>>,
        at: &str,
    ) -> Result<Vec<Flat<'a>>, Error> {
        if left.len() * right.len() > MAX_ALTERNATIVES {
            return Err(self.err(
                ErrorKind::Limit,
                at,
                &format!(
                    "anyOf/oneOf here distribute into more than {MAX_ALTERNATIVES} alternatives"
                ),
            ));
        }
        let mut out = Vec::with_capacity(left.len() * right.len());
        for l in &left {
            for r in &right {
                let m = l.merge(r);
                if m.kinds != 0 {
                    out.push(m);
                }
            }
        }
        Ok(out)
    }

    fn flatten_one(
        &mut self,
        sub: &Sub<'a>,
        depth: usize,
        top: bool,
    ) -> Result<Vec<Flat<'a>>, Error> {
        let o = match sub.schema {
            Value::Bool(true) => return Ok(vec![Flat::any(&sub.at)]),
            Value::Bool(false) => return Ok(Vec::new()),
            Value::Object(o) => o,
            _ => {
                return Err(self.err(
                    ErrorKind::Schema,
                    &sub.at,
                    "a schema must be an object or a boolean",
                ))
            }
        };
        let mut alts = vec![self.own(sub, o, top)?];
        let child = |key: &str, v: &'a Value, i: Option<usize>| Sub {
            schema: v,
            at: match i {
                Some(i) => format!("{}/{key}/{i}", sub.at),
                None => format!("{}/{key}", sub.at),
            },
            stack: sub.stack.clone(),
        };
        if let Some(r) = o.get("$ref") {
            let at = format!("{}/$ref", sub.at);
            let Some(r) = r.as_str() else {
                return Err(self.err(ErrorKind::Schema, &at, "\"$ref\" must be a string"));
            };
            match self.resolve(sub, r, &at)? {
                None => return Ok(Vec::new()),
                Some(target) => {
                    let more = self.flatten_one(&target, depth, false)?;
                    alts = self.product(alts, more, &at)?;
                }
            }
        }
        if let Some(v) = o.get("allOf") {
            for (i, s) in self.schema_list(v, &sub.at, "allOf")?.iter().enumerate() {
                let more = self.flatten_one(&child("allOf", s, Some(i)), depth, false)?;
                alts = self.product(alts, more, &sub.at)?;
            }
        }
        for key in ["anyOf", "oneOf"] {
            let Some(v) = o.get(key) else { continue };
            let mut branches = Vec::new();
            for (i, s) in self.schema_list(v, &sub.at, key)?.iter().enumerate() {
                branches.push(self.flatten_one(&child(key, s, Some(i)), depth, false)?);
            }
            if key == "oneOf" {
                self.check_one_of(&branches, &format!("{}/oneOf", sub.at), depth)?;
            }
            let union: Vec<Flat<'a>> = branches.into_iter().flatten().collect();
            alts = self.product(alts, union, &sub.at)?;
        }
        if let Some(n) = o.get("not") {
            let at = format!("{}/not", sub.at);
            match self.not_kinds(n) {
                Some(excluded) => {
                    for f in &mut alts {
                        f.kinds &= !excluded;
                    }
                    alts.retain(|f| f.kinds != 0);
                }
                None => self.refuse_or_relax(
                    &at,
                    "not",
                    "is only supported when it excludes whole types",
                    "ignored",
                )?,
            }
        }
        if o.contains_key("if") {
            self.refuse_or_relax(
                &format!("{}/if", sub.at),
                "if",
                "(with then/else) is not supported",
                "if/then/else ignored",
            )?;
        }
        Ok(alts)
    }

    fn schema_list(&self, v: &'a Value, at: &str, key: &str) -> Result<&'a Vec<Value>, Error> {
        match v {
            Value::Array(a) if !a.is_empty() => Ok(a),
            _ => Err(self.err(
                ErrorKind::Schema,
                &format!("{at}/{key}"),
                &format!("\"{key}\" must be a non-empty array of schemas"),
            )),
        }
    }

    /// The kinds a `not` schema excludes, when it only names types (or is
    /// `true`/`{}`, excluding everything).
    fn not_kinds(&self, n: &Value) -> Option<u8> {
        match n {
            Value::Bool(true) => Some(flat::ALL),
            Value::Bool(false) => Some(0),
            Value::Object(o) => {
                let mut excluded = flat::ALL;
                for (k, v) in o {
                    if k == "type" {
                        excluded &= flat::type_kinds(v)?;
                    } else if !flat::is_annotation(k) {
                        return None;
                    }
                }
                Some(excluded)
            }
            _ => None,
        }
    }

    /// `oneOf` is exact as a union only when no value satisfies two
    /// branches: checked by kinds, by literal values, and by a required
    /// property whose values the branches keep apart (a discriminator).
    fn check_one_of(
        &mut self,
        branches: &[Vec<Flat<'a>>],
        at: &str,
        depth: usize,
    ) -> Result<(), Error> {
        for i in 0..branches.len() {
            for j in i + 1..branches.len() {
                for f in &branches[i] {
                    for g in &branches[j] {
                        if !self.disjoint(f, g, depth)? {
                            return self.refuse_or_relax(
                                at,
                                "oneOf",
                                &format!(
                                    "branches {i} and {j} may both accept one value, so the union would let through a value that matches both"
                                ),
                                "read as anyOf",
                            );
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn disjoint(&mut self, f: &Flat<'a>, g: &Flat<'a>, depth: usize) -> Result<bool, Error> {
        if f.effective_kinds() & g.effective_kinds() == 0 {
            return Ok(true);
        }
        if let (Some(a), Some(b)) = (&f.literals, &g.literals) {
            if !a.iter().any(|x| b.iter().any(|y| flat::json_eq(x, y))) {
                return Ok(true);
            }
        }
        if f.effective_kinds() == flat::OBJ && g.effective_kinds() == flat::OBJ && depth < 8 {
            // A property required by both whose values cannot be equal.
            for name in f.required() {
                if !g.required().contains(&name) {
                    continue;
                }
                let (fs, gs) = (f.property_subs(&name), g.property_subs(&name));
                if fs.is_empty() || gs.is_empty() {
                    continue;
                }
                let fa = self.flatten(&fs, depth + 1)?;
                let ga = self.flatten(&gs, depth + 1)?;
                let mut apart = true;
                'pairs: for x in &fa {
                    for y in &ga {
                        let kinds_apart = x.effective_kinds() & y.effective_kinds() == 0;
                        let literals_apart = match (&x.literals, &y.literals) {
                            (Some(a), Some(b)) => {
                                !a.iter().any(|p| b.iter().any(|q| flat::json_eq(p, q)))
                            }
                            _ => false,
                        };
                        if !kinds_apart && !literals_apart {
                            apart = false;
                            break 'pairs;
                        }
                    }
                }
                if apart {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }
}

impl<'a> Lowering<'a> {
    /// The deepest sub-schema of tool `i` whose machine alone exceeds the
    /// bounds: the part of the schema to blame for a state explosion, as
    /// "FILE:LINE:COL (at POINTER)". `None` when no part exceeds them on
    /// its own (the explosion comes from the parts together).
    /// Gives up (`Err`) on a bound that says nothing of the part's size:
    /// the compile's time, or a cancel.
    pub fn blame(
        &mut self,
        i: usize,
        max_states: usize,
        max_nfa_states: usize,
    ) -> Result<Option<String>, Limit> {
        self.select(i);
        let root = self.root();
        self.blame_at(&root, max_states, max_nfa_states, 0)
    }

    fn blame_at(
        &mut self,
        sub: &Sub<'a>,
        max_states: usize,
        max_nfa: usize,
        depth: usize,
    ) -> Result<Option<String>, Limit> {
        let exceeds = |l: Limit| if l.is_size() { Ok(true) } else { Err(l) };
        let explodes = match self.value_of(std::slice::from_ref(sub), depth) {
            Err(e) => match e.limit() {
                Some(l) => exceeds(l)?,
                None => e.kind() == ErrorKind::Limit,
            },
            Ok(e) => match crate::automaton::nfa::build(&e, max_nfa) {
                Err(l) => exceeds(l)?,
                Ok(n) => match crate::automaton::dfa::Dfa::determinize(&n, max_states) {
                    Err(l) => exceeds(l)?,
                    Ok(_) => false,
                },
            },
        };
        if !explodes {
            return Ok(None);
        }
        let Value::Object(o) = sub.schema else {
            return Ok(Some(self.set.place(&sub.at)));
        };
        let mut children = Vec::new();
        for (k, v) in o {
            let at = format!("{}/{}", sub.at, escape_pointer(k));
            match (k.as_str(), v) {
                (
                    "properties" | "patternProperties" | "$defs" | "definitions",
                    Value::Object(m),
                ) => {
                    for (name, s) in m {
                        children.push((format!("{at}/{}", escape_pointer(name)), s));
                    }
                }
                ("items" | "prefixItems" | "allOf" | "anyOf" | "oneOf", Value::Array(a)) => {
                    for (j, s) in a.iter().enumerate() {
                        children.push((format!("{at}/{j}"), s));
                    }
                }
                (
                    "items" | "additionalProperties" | "additionalItems" | "not",
                    Value::Object(_),
                ) => children.push((at, v)),
                _ => {}
            }
        }
        for (at, schema) in children {
            let child = Sub {
                schema,
                at,
                stack: sub.stack.clone(),
            };
            if let Some(p) = self.blame_at(&child, max_states, max_nfa, depth + 1)? {
                return Ok(Some(p));
            }
        }
        Ok(Some(self.set.place(&sub.at)))
    }
}

pub(crate) fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Decodes `%XX` escapes of a URI fragment.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() && s.is_char_boundary(i + 3) {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

#[cfg(test)]
mod spelling_tests;
#[cfg(test)]
mod tests;
