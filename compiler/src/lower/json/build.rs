//! Writing a flat schema as an expression, one JSON kind at a time.

use std::collections::HashMap;

use crate::automaton::dfa::Dfa;
use crate::automaton::region::Tag;

use serde_json::Value;

use super::flat::{self, Extra, Flat};
use super::spelling::Spelling;
use super::text::{json_number, json_string};
use super::{Lowering, Sub};
use crate::automaton::expr::{self, Expr};
use crate::error::{Error, ErrorKind};
use crate::lower::value;

/// State budget of one intersection (pattern with length, range with
/// multipleOf, a literal with the other keywords).
pub const INTERSECT_STATES: usize = 100_000;

/// Most array positions or property counts written out one by one.
pub const MAX_POSITIONS: u64 = 4096;

/// What one pattern's machine may take on its own: a pattern whose
/// deterministic machine is larger (the n-th character from the end, a long
/// counted repeat searched anywhere) is refused in about this time with
/// its pointer, rather than found out by the whole compile's bounds.
const PATTERN_STATES: usize = 100_000;
const PATTERN_TIME: std::time::Duration = std::time::Duration::from_secs(1);
const PATTERN_MEMORY: usize = 256 << 20;

/// Whether a pattern's content determinizes within the pattern bounds.
fn pattern_fits(e: &Expr) -> Result<(), String> {
    let guard = crate::limits::Guard::part(PATTERN_TIME, PATTERN_MEMORY);
    let built = guard.run(|| {
        let nfa = crate::automaton::nfa::build(e, PATTERN_STATES * 4)?;
        crate::automaton::dfa::Dfa::determinize(&nfa, PATTERN_STATES).map(drop)
    });
    built.map_err(|l| match l {
        crate::error::Limit::Cancelled { .. } => l.to_string(),
        _ => format!(
            "its machine is too large on its own (more than {PATTERN_STATES} states, \
             {} or {} s to build: anchor it with ^ and $, or bound its repeats)",
            crate::limits::bytes_text(PATTERN_MEMORY),
            PATTERN_TIME.as_secs()
        ),
    })
}

/// Longest property name: the machine that excludes the declared names
/// from extra properties nests a level per character, and builds
/// recursively (a thread's stack is a few megabytes).
pub const MAX_NAME_BYTES: usize = 1024;

/// The empty language.
pub fn nothing() -> Expr {
    Expr::Alt(Vec::new())
}

pub fn is_nothing(e: &Expr) -> bool {
    match e {
        Expr::Alt(v) => v.is_empty(),
        Expr::Shared(inner) => is_nothing(inner),
        Expr::Tag(_, inner) => is_nothing(inner),
        _ => false,
    }
}

fn quoted(content: Expr) -> Expr {
    Expr::seq([Expr::lit("\""), content, Expr::lit("\"")])
}

impl<'a> Lowering<'a> {
    /// The expression of one flat schema.
    pub(crate) fn build(&mut self, f: &Flat<'a>, depth: usize) -> Result<Expr, Error> {
        if let Some(literals) = &f.literals {
            let kinds = f.kinds;
            let mut seen: Vec<&Value> = Vec::new();
            let mut alts = Vec::new();
            let mut lit_kinds = 0;
            for v in literals {
                if flat::kind_of(v) & kinds == 0 {
                    continue;
                }
                if seen.iter().any(|s| flat::json_eq(s, v)) {
                    continue;
                }
                seen.push(*v);
                lit_kinds |= flat::kind_of(v);
                alts.push(self.xml_mid(flat::kind_of(v), self.literal(v, depth), depth));
            }
            if alts.is_empty() {
                return Ok(nothing());
            }
            let lits = Expr::alt(alts);
            if !f.constrained {
                return Ok(lits);
            }
            let mut g = f.clone();
            g.literals = None;
            g.kinds &= lit_kinds
                | if lit_kinds & flat::INT != 0 {
                    flat::FRAC
                } else {
                    0
                };
            let rest = self.build(&g, depth)?;
            if is_nothing(&rest) {
                return Ok(nothing());
            }
            return expr::intersect(&[lits, rest], INTERSECT_STATES).map_err(|l| {
                self.err(
                    ErrorKind::Limit,
                    &f.at,
                    &format!("checking enum/const against the other keywords: {l}"),
                )
            });
        }
        let mut alts = Vec::new();
        if f.kinds & flat::NULL != 0 {
            alts.push(self.xml_mid(flat::NULL, self.spelling.null(), depth));
        }
        if f.kinds & flat::BOOL != 0 {
            alts.push(self.xml_mid(flat::BOOL, self.spelling.bools(), depth));
        }
        if f.kinds & (flat::INT | flat::FRAC) != 0 {
            let e = self.numbers(f)?;
            let e = self.spelling.numbers(e).map_err(|l| {
                self.err(ErrorKind::Limit, &f.at, &format!("spelling numbers: {l}"))
            })?;
            alts.push(self.xml_mid(flat::INT, e, depth));
        }
        if f.kinds & flat::STR != 0 {
            let e = self.strings(f, depth)?;
            alts.push(self.xml_mid(flat::STR, e, depth));
        }
        if f.kinds & flat::ARR != 0 {
            let e = self.array(f, depth)?;
            alts.push(self.xml_mid(flat::ARR, e, depth));
        }
        if f.kinds & flat::OBJ != 0 {
            let e = self.object(f, depth)?;
            alts.push(self.xml_mid(flat::OBJ, e, depth));
        }
        alts.retain(|e| !is_nothing(e));
        Ok(if alts.is_empty() {
            nothing()
        } else {
            Expr::alt(alts)
        })
    }

    /// Under XML-style parameters, a top-level property's value `e` of
    /// `kind` with what separates it from the key (`string="true"` or
    /// `"false"` in DSML); `e` elsewhere.
    fn xml_mid(&self, kind: u8, e: Expr, depth: usize) -> Expr {
        match &self.spelling {
            _ if depth != 1 || is_nothing(&e) => e,
            Spelling::Xml { mid_string, .. } if kind == flat::STR => {
                Expr::seq([mid_string.clone(), e])
            }
            Spelling::Xml { mid_other, .. } => Expr::seq([mid_other.clone(), e]),
            _ => e,
        }
    }

    /// One value as text in this spelling, with the machine's whitespace
    /// between its tokens. An integral number is also accepted as `N.0`
    /// where a double holds it exactly (|N| <= 2^53): above that, a parser
    /// reading `N.0` as a double gets another number.
    fn literal(&self, v: &Value, depth: usize) -> Expr {
        const EXACT: i64 = 1 << 53;
        match v {
            Value::Number(n) => {
                let mut texts = vec![n.to_string()];
                let int = n.as_i64().or_else(|| {
                    n.as_f64()
                        .filter(|x| x.fract() == 0.0 && x.abs() < 9.0e15)
                        .map(|x| x as i64)
                });
                if let Some(i) = int {
                    texts.push(i.to_string());
                    if i.abs() <= EXACT {
                        texts.push(format!("{i}.0"));
                    }
                }
                texts.sort();
                texts.dedup();
                Expr::alt(texts.iter().map(|t| Expr::lit(t)))
            }
            Value::Array(items) => {
                let mut parts = vec![Expr::lit("["), self.ws()];
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        parts.push(self.comma());
                    }
                    parts.push(self.literal(x, depth + 1));
                }
                parts.extend([self.ws(), Expr::lit("]")]);
                Expr::seq(parts)
            }
            Value::Object(members) => {
                let mut parts = vec![Expr::lit("{"), self.ws()];
                for (i, (k, x)) in members.iter().enumerate() {
                    if i > 0 {
                        parts.push(self.comma());
                    }
                    parts.extend([self.spelling.key(k), self.colon()]);
                    parts.push(self.literal(x, depth + 1));
                }
                parts.extend([self.ws(), Expr::lit("}")]);
                Expr::seq(parts)
            }
            Value::String(s) => self.spelling.string(s, depth),
            Value::Bool(b) => self.spelling.boolean(*b),
            Value::Null => self.spelling.null(),
        }
    }

    /// A lang refusal: an error, or under relax the constraint dropped.
    fn lang_refusal(&mut self, at: &str, keyword: &str, why: String) -> Result<(), Error> {
        self.refuse_or_relax(
            at,
            keyword,
            &format!("cannot be expressed exactly: {why}"),
            "ignored",
        )
    }

    fn intersect(&self, parts: Vec<Expr>, at: &str) -> Result<Expr, Error> {
        expr::intersect(&parts, INTERSECT_STATES).map_err(|l| {
            self.err(
                ErrorKind::Limit,
                at,
                &format!("combining the constraints here: {l}"),
            )
        })
    }

    fn numbers(&mut self, f: &Flat<'a>) -> Result<Expr, Error> {
        let mut parts = Vec::new();
        let integral_only = f.kinds & flat::FRAC == 0;
        if integral_only {
            let bound = |x: &Option<flat::NumBound>| {
                x.as_ref().map(|b| value::Bound {
                    value: b.value.clone(),
                    exclusive: b.exclusive,
                })
            };
            let (lo, hi) = match value::integer_bounds(bound(&f.lo).as_ref(), bound(&f.hi).as_ref())
            {
                Ok(b) => b,
                Err(why) => {
                    let at = f.at.clone();
                    self.lang_refusal(&at, "minimum/maximum", why)?;
                    (None, None)
                }
            };
            match value::integer_range(lo, hi) {
                Ok(e) => parts.push(e),
                Err(_) => return Ok(nothing()),
            }
        } else if f.lo.is_some() || f.hi.is_some() {
            let b = |x: &Option<flat::NumBound>| {
                x.as_ref().map(|b| value::Bound {
                    value: b.value.clone(),
                    exclusive: b.exclusive,
                })
            };
            match value::number_range(b(&f.lo), b(&f.hi)) {
                Ok(e) => parts.push(e),
                Err(why) => {
                    let at = f.at.clone();
                    self.lang_refusal(&at, "minimum/maximum", why)?;
                    parts.push(json_number());
                }
            }
        } else {
            parts.push(json_number());
        }
        if f.kinds & flat::INT == 0 {
            // Non-integral numbers only (`not: {type: integer}`): a nonzero
            // fraction digit, no exponent (a subset).
            let digit = || Expr::ByteClass(vec![(b'0', b'9')]);
            parts.push(Expr::seq([
                super::text::int_part(),
                Expr::lit("."),
                Expr::star(digit()),
                Expr::ByteClass(vec![(b'1', b'9')]),
                Expr::star(digit()),
            ]));
        }
        for (m, at) in &f.multiple_of {
            let e = match m.as_u64() {
                Some(k) if integral_only => value::integer_multiple_of(k),
                _ => value::number_multiple_of(m),
            };
            match e {
                Ok(e) => parts.push(e),
                Err(why) => self.lang_refusal(at, "multipleOf", why)?,
            }
        }
        self.intersect(parts, &f.at)
    }

    fn strings(&mut self, f: &Flat<'a>, depth: usize) -> Result<Expr, Error> {
        // Unconstrained strings, the most common, are respelled once per
        // place that spells them apart (a top-level XML value or not).
        let plain = f.patterns.is_empty()
            && f.min_len == 0
            && f.max_len.is_none()
            && f.formats.is_empty()
            && !matches!(self.spelling, Spelling::Json | Spelling::JsonInline);
        let slot = usize::from(depth == 1);
        if plain {
            if let Some(e) = &self.plain_strings[slot] {
                return Ok(e.clone());
            }
        }
        let e = self.json_strings(f)?;
        if is_nothing(&e) {
            return Ok(e);
        }
        let e = self.spelling.strings(e, depth).map_err(|l| {
            self.err(
                ErrorKind::Limit,
                &f.at,
                &format!("spelling the string in this argument encoding: {l}"),
            )
        })?;
        if plain {
            let e = Expr::shared(e);
            self.plain_strings[slot] = Some(e.clone());
            return Ok(e);
        }
        Ok(e)
    }

    /// The strings of `f` as quoted, canonical JSON.
    fn json_strings(&mut self, f: &Flat<'a>) -> Result<Expr, Error> {
        let mut parts = Vec::new();
        for (p, at) in &f.patterns {
            match value::pattern_content(p).and_then(|e| pattern_fits(&e).map(|()| e)) {
                Ok(e) => parts.push(quoted(e)),
                Err(why) => self.lang_refusal(at, "pattern", why)?,
            }
        }
        if f.min_len > 0 || f.max_len.is_some() {
            if f.max_len.is_some_and(|m| m < f.min_len) {
                return Ok(nothing());
            }
            let cap = (self.opts.max_count as u64).max(f.min_len);
            let max_len = f.max_len.map(|m| m.min(cap));
            if f.min_len > MAX_POSITIONS || max_len.is_some_and(|m| m > MAX_POSITIONS) {
                return Err(self.err(
                    ErrorKind::Limit,
                    &f.at,
                    &format!("string lengths above {MAX_POSITIONS} are not supported"),
                ));
            }
            parts.push(quoted(value::length_content(
                f.min_len as u32,
                max_len.map(|m| m as u32),
            )));
        }
        for name in &f.formats {
            if let Some(e) = value::format_string(name) {
                parts.push(e);
            }
        }
        if parts.is_empty() {
            return Ok(json_string());
        }
        self.intersect(parts, &f.at)
    }

    /// Any JSON value nested at most `depth` containers deep.
    pub(crate) fn any_value(&mut self, depth: usize) -> Expr {
        while self.any.len() <= depth {
            let d = self.any.len();
            let string = self
                .spelling
                .strings(json_string(), 2)
                .unwrap_or_else(|_| json_string());
            let scalars = [
                self.spelling.null(),
                self.spelling.bools(),
                json_number(),
                string,
            ];
            let mut alts: Vec<Expr> = scalars.into();
            if d > 0 {
                let inner = self.any[d - 1].clone();
                let sep = self.comma();
                alts.push(Expr::seq([
                    Expr::lit("["),
                    self.ws(),
                    Expr::opt(Expr::seq([
                        inner.clone(),
                        Expr::star(Expr::seq([sep.clone(), inner.clone()])),
                    ])),
                    self.ws(),
                    Expr::lit("]"),
                ]));
                let key = self
                    .spelling
                    .keys(json_string())
                    .unwrap_or_else(|_| json_string());
                let member = Expr::seq([key, self.colon(), inner]);
                alts.push(Expr::seq([
                    Expr::lit("{"),
                    self.ws(),
                    Expr::opt(Expr::seq([
                        member.clone(),
                        Expr::star(Expr::seq([sep, member])),
                    ])),
                    self.ws(),
                    Expr::lit("}"),
                ]));
            }
            self.any.push(Expr::shared(Expr::alt(alts)));
        }
        self.any[depth].clone()
    }

    /// The values satisfying all of `subs` (any value when empty).
    fn all_of(&mut self, subs: &[Sub<'a>], depth: usize) -> Result<Expr, Error> {
        if subs.is_empty() {
            if depth == 1 && matches!(self.spelling, Spelling::Xml { .. }) {
                // A free top-level parameter: its kinds get their own
                // separators from the key.
                return self.build(&Flat::any(""), depth);
            }
            let d = self.opts.any_depth;
            return Ok(self.any_value(d));
        }
        self.value_of(subs, depth)
    }

    fn array(&mut self, f: &Flat<'a>, depth: usize) -> Result<Expr, Error> {
        let prefix_len = f.arrays.iter().map(|p| p.prefix.len()).max().unwrap_or(0);
        let mut max = f.max_items;
        for p in &f.arrays {
            if let Some(None) = p.rest {
                max = Some(max.map_or(p.prefix.len() as u64, |m| m.min(p.prefix.len() as u64)));
            }
        }
        let min = f.min_items;
        if max.is_some_and(|m| m < min) {
            return Ok(nothing());
        }
        let max = max.map(|m| m.min((self.opts.max_count as u64).max(min)));
        if let Some(at) = &f.unique {
            if max.is_none_or(|m| m > 1) {
                let at = at.clone();
                self.refuse_or_relax(
                    &at,
                    "uniqueItems",
                    "cannot be checked by a finite machine",
                    "duplicates allowed",
                )?;
            }
        }
        let explicit = (prefix_len as u64).max(min);
        if explicit > MAX_POSITIONS {
            return Err(self.err(
                ErrorKind::Limit,
                &f.at,
                &format!(
                    "arrays with more than {MAX_POSITIONS} constrained positions are not supported"
                ),
            ));
        }
        let subs_at = |j: usize| -> Vec<Sub<'a>> {
            let mut subs = Vec::new();
            for p in &f.arrays {
                if j < p.prefix.len() {
                    subs.push(p.prefix[j].clone());
                } else if let Some(Some(s)) = &p.rest {
                    subs.push(s.clone());
                }
            }
            subs
        };
        let sep = Expr::shared(self.comma());
        let rest = self.all_of(&subs_at(prefix_len), depth + 1)?;
        let explicit = explicit as usize;
        // tail(j): what may follow once j elements are written, built from
        // the uniform end backwards.
        let uniform = if max.is_some_and(|m| m <= explicit as u64) || is_nothing(&rest) {
            Expr::Empty
        } else {
            Expr::repeat(
                Expr::seq([sep.clone(), rest.clone()]),
                0,
                max.map(|m| (m - explicit as u64) as u32),
            )
        };
        let mut tail = Expr::shared(uniform);
        let mut first = None;
        for j in (0..explicit).rev() {
            // Element j, then tail(j + 1).
            let elem = self.all_of(&subs_at(j), depth + 1)?;
            let can_write = max.is_none_or(|m| (j as u64) < m);
            let more = if can_write && !is_nothing(&elem) && !is_nothing(&tail) {
                Some((elem, tail.clone()))
            } else {
                None
            };
            let stop_ok = j as u64 >= min;
            if j == 0 {
                first = more.map(|(e, t)| Expr::seq([e, t]));
                break;
            }
            let cont = more.map(|(e, t)| Expr::seq([sep.clone(), e, t]));
            tail = Expr::shared(match (stop_ok, cont) {
                (true, Some(c)) => Expr::alt([Expr::Empty, c]),
                (true, None) => Expr::Empty,
                (false, Some(c)) => c,
                (false, None) => nothing(),
            });
        }
        if explicit == 0 {
            // No constrained position: any number of `rest` elements.
            first = if max == Some(0) || is_nothing(&rest) {
                None
            } else {
                Some(Expr::seq([
                    rest.clone(),
                    Expr::repeat(
                        Expr::seq([sep.clone(), rest]),
                        0,
                        max.map(|m| (m - 1) as u32),
                    ),
                ]))
            };
        }
        let body = match (min == 0, first) {
            (true, Some(e)) => Expr::opt(e),
            (true, None) => Expr::Empty,
            (false, Some(e)) => e,
            (false, None) => return Ok(nothing()),
        };
        Ok(Expr::seq([
            Expr::lit("["),
            self.ws(),
            body,
            self.ws(),
            Expr::lit("]"),
        ]))
    }

    /// The DFA of a property-name language (a pattern, `propertyNames`),
    /// built once per object and asked about each declared name.
    fn name_dfa(&self, e: &Expr, at: &str) -> Result<crate::automaton::dfa::Dfa, Error> {
        let limit = |l| {
            self.err(
                ErrorKind::Limit,
                at,
                &format!("checking property names: {l}"),
            )
        };
        let nfa = crate::automaton::nfa::build(e, INTERSECT_STATES * 4).map_err(limit)?;
        crate::automaton::dfa::Dfa::determinize(&nfa, INTERSECT_STATES).map_err(limit)
    }

    fn object(&mut self, f: &Flat<'a>, depth: usize) -> Result<Expr, Error> {
        let mut plan = self.object_plan(f, depth)?;
        if let Some(long) = plan.names.iter().find(|n| n.len() > MAX_NAME_BYTES) {
            return Err(self.err(
                ErrorKind::Limit,
                &format!("{}/properties/{}", f.at, super::escape_pointer(long)),
                &format!(
                    "a property name of {} bytes: names longer than {MAX_NAME_BYTES} bytes are not supported",
                    long.len()
                ),
            ));
        }
        self.spelling.order_keys(&mut plan.names);
        // The arguments themselves as keyword arguments or XML parameters.
        let top = depth == 0 && self.spelling.top_form();
        let sep = if top && matches!(self.spelling, Spelling::Xml { .. }) {
            Expr::Empty
        } else {
            Expr::shared(self.comma())
        };
        let mut members: Vec<(Expr, bool)> = Vec::new();
        for n in &plan.names {
            let is_required = plan.required.contains(n);
            match self.member(f, &plan, n, depth)? {
                Some(member) => members.push((member, is_required)),
                // A required member with no value: no object fits.
                None if is_required => return Ok(nothing()),
                None => {}
            }
        }
        // Keyword arguments and XML parameters have no spelling for a name
        // nobody declared: such objects are closed there (a subset).
        let extra = if plan.extras_allowed && !top {
            self.extra_member(f, &plan.names, depth)?
        } else {
            None
        };
        let n_req = members.iter().filter(|m| m.1).count() as u64;
        if f.max_props.is_some_and(|m| m < n_req || m < f.min_props) {
            return Ok(nothing());
        }
        let (min_props, max_props) =
            self.property_counts(f, members.len(), n_req, extra.is_some())?;
        let body = if self.opts.any_order > 0
            && members.len() <= self.opts.any_order.min(super::MAX_ANY_ORDER)
            && members.len() > 1
            && min_props <= n_req
            && max_props.is_none()
        {
            any_order(&members, &extra, &sep)
        } else {
            counted(&members, &extra, &sep, min_props, max_props)
        };
        if is_nothing(&body) {
            return Ok(nothing());
        }
        if top {
            return Ok(body);
        }
        Ok(Expr::seq([
            Expr::lit("{"),
            self.ws(),
            body,
            self.ws(),
            Expr::lit("}"),
        ]))
    }

    /// The names, the extras rule and the compiled name languages of an
    /// object, which every member is checked against.
    fn object_plan(&mut self, f: &Flat<'a>, depth: usize) -> Result<ObjectPlan<'a>, Error> {
        let (names, required, dropped) = object_names(f);
        // Extra properties are allowed when every part allows them.
        let open = |p: &flat::ObjPart<'a>| match p.extra {
            Extra::Any | Extra::Schema(_) => true,
            Extra::None => false,
            Extra::Unsaid => {
                self.opts.open_objects || (p.props.is_empty() && p.patterns.is_empty())
            }
        };
        let extras_allowed = f.objects.iter().all(open)
            && f.objects.iter().all(|p| p.patterns.is_empty())
            && f.property_names.is_empty()
            && !f.closed;
        // The name patterns, compiled once.
        let mut patterns: Vec<(Dfa, Sub<'a>, usize)> = Vec::new();
        for (i, p) in f.objects.iter().enumerate() {
            for (pat, s) in &p.patterns {
                match value::pattern_content(pat) {
                    Ok(e) => patterns.push((self.name_dfa(&quoted(e), &s.at)?, s.clone(), i)),
                    Err(why) => {
                        return Err(self.err(
                            ErrorKind::Unsupported,
                            &s.at,
                            &format!("the patternProperties pattern {pat:?}: {why}"),
                        ))
                    }
                }
            }
        }
        let mut name_checks: Vec<Dfa> = Vec::new();
        for s in &f.property_names {
            let e = self.value_of(std::slice::from_ref(s), depth + 1)?;
            name_checks.push(self.name_dfa(&e, &s.at)?);
        }
        Ok(ObjectPlan {
            names,
            required,
            dropped,
            extras_allowed,
            patterns,
            name_checks,
        })
    }

    /// The member `"n": value`, or `None` when no value may follow the
    /// name `n`.
    fn member(
        &mut self,
        f: &Flat<'a>,
        plan: &ObjectPlan<'a>,
        n: &str,
        depth: usize,
    ) -> Result<Option<Expr>, Error> {
        let (subs, forbidden) = member_subs(f, plan, n);
        let value = if forbidden {
            nothing()
        } else {
            self.all_of(&subs, depth + 1)?
        };
        if is_nothing(&value) {
            return Ok(None);
        }
        let ty = crate::automaton::region::schema_type(
            &subs.iter().map(|s| s.schema).collect::<Vec<_>>(),
        );
        let key = |e: Expr| {
            Expr::tag(
                Tag::Key {
                    name: n.to_string(),
                },
                e,
            )
        };
        let value = Expr::tag(
            Tag::Value {
                name: n.to_string(),
                ty,
            },
            value,
        );
        let top = depth == 0 && self.spelling.top_form();
        let member = match &self.spelling {
            Spelling::Python if top => {
                if !is_identifier(n) {
                    return Err(self.err(
                        ErrorKind::Unsupported,
                        &f.at,
                        &format!("the parameter {n:?} is not a Python identifier, so it cannot be a keyword argument"),
                    ));
                }
                Expr::seq([key(Expr::lit(n)), Expr::lit("="), value])
            }
            // The value carries its separator from the key (`xml_mid`).
            Spelling::Xml { open, close, .. } if top => {
                Expr::seq([open.clone(), key(Expr::lit(n)), value, close.clone()])
            }
            Spelling::Gemma { .. } if !self.spelling.writes_key(n) => {
                return Err(self.err(
                    ErrorKind::Unsupported,
                    &f.at,
                    &format!(
                        "the property {n:?} cannot be a bare Gemma 4 key: vLLM's parser reads a key up to \
                         the first ':', strips it, and counts brackets to find where an object ends, so a \
                         key must not have any of , : [ ] {{ }} or the string quote, nor space at an end"
                    ),
                ));
            }
            _ => Expr::seq([key(self.spelling.key(n)), self.colon(), value]),
        };
        Ok(Some(Expr::shared(member)))
    }

    /// A member of any name but `names`, or `None` when no value fits the
    /// additional properties.
    fn extra_member(
        &mut self,
        f: &Flat<'a>,
        names: &[String],
        depth: usize,
    ) -> Result<Option<Expr>, Error> {
        let subs: Vec<Sub<'a>> = f
            .objects
            .iter()
            .filter_map(|p| match &p.extra {
                Extra::Schema(s) => Some(s.clone()),
                _ => None,
            })
            .collect();
        let value = self.all_of(&subs, depth + 1)?;
        if is_nothing(&value) {
            return Ok(None);
        }
        let key = self.spelling.keys(quoted(key_except(names))).map_err(|l| {
            self.err(
                ErrorKind::Limit,
                &f.at,
                &format!("spelling property names: {l}"),
            )
        })?;
        Ok(Some(Expr::shared(Expr::seq([key, self.colon(), value]))))
    }
}

/// Whether `n` is a Python identifier (ASCII; no keyword check, since a
/// schema naming a parameter `class` cannot be called either way).
fn is_identifier(n: &str) -> bool {
    let mut cs = n.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What every member of one object is checked against, built once per
/// object.
struct ObjectPlan<'a> {
    /// Every name that may get its own member, in order of first mention.
    names: Vec<String>,
    required: Vec<String>,
    /// Optional keys left out for dependentRequired.
    dropped: Vec<String>,
    extras_allowed: bool,
    /// patternProperties: the name's DFA, its schema and the index of the
    /// object part declaring it.
    patterns: Vec<(Dfa, Sub<'a>, usize)>,
    /// One DFA per propertyNames schema.
    name_checks: Vec<Dfa>,
}

/// The names an object's members may have (declared, required, named by
/// dependentRequired, in order of first appearance), the required names,
/// and the optional keys dropped for dependentRequired.
fn object_names(f: &Flat<'_>) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut names: Vec<String> = Vec::new();
    for p in &f.objects {
        for (n, _) in &p.props {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    let mut required = f.required();
    for r in &required {
        if !names.contains(r) {
            names.push(r.clone());
        }
    }
    // Names that dependentRequired speaks of are never extras: they
    // become optional members, so the rule below can apply to them.
    for (key, deps) in &f.dependent {
        for n in std::iter::once(key).chain(deps) {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    // dependentRequired: a present key needs its dependencies. Exact
    // when the key is required (the dependencies become required);
    // otherwise the key is left out (a subset).
    let mut dropped: Vec<String> = Vec::new();
    loop {
        let mut changed = false;
        for (key, deps) in &f.dependent {
            if dropped.contains(key) || !names.contains(key) {
                continue;
            }
            if required.contains(key) {
                for d in deps {
                    if !required.contains(d) {
                        required.push(d.clone());
                        if !names.contains(d) {
                            names.push(d.clone());
                        }
                        changed = true;
                    }
                }
            } else if !deps.iter().all(|d| required.contains(d)) {
                dropped.push(key.clone());
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    (names, required, dropped)
}

/// The schemas the value of the member `n` must meet (its declarations,
/// the patterns its name matches, the parts' additional properties), and
/// whether the name is forbidden outright.
fn member_subs<'a>(f: &Flat<'a>, plan: &ObjectPlan<'a>, n: &str) -> (Vec<Sub<'a>>, bool) {
    let text = serde_json::to_string(n).unwrap_or_default();
    let matches = |dfa: &Dfa| dfa.accepts(text.as_bytes());
    let is_required = plan.required.iter().any(|r| r == n);
    let mut subs = Vec::new();
    let mut forbidden = plan.dropped.iter().any(|d| d == n);
    for (i, p) in f.objects.iter().enumerate() {
        if let Some((_, s)) = p.props.iter().find(|(m, _)| m == n) {
            subs.push(s.clone());
            continue;
        }
        let mut matched = false;
        for (dfa, s, j) in &plan.patterns {
            if *j == i && matches(dfa) {
                subs.push(s.clone());
                matched = true;
            }
        }
        if matched {
            continue;
        }
        match &p.extra {
            Extra::None => forbidden = true,
            Extra::Schema(s) => subs.push(s.clone()),
            Extra::Any | Extra::Unsaid => {}
        }
    }
    // Declared names that also match a pattern of the part declaring them.
    for (dfa, s, j) in &plan.patterns {
        let declares = f.objects[*j].props.iter().any(|(m, _)| m == n);
        if declares && matches(dfa) {
            subs.push(s.clone());
        }
    }
    if !plan.name_checks.iter().all(matches) {
        forbidden = true;
    }
    let declared = f
        .objects
        .iter()
        .any(|p| p.props.iter().any(|(m, _)| m == n));
    if f.closed && !declared {
        forbidden = true;
    }
    if !declared && !is_required && !plan.extras_allowed {
        // Named only by dependentRequired, in an object that takes
        // no extra properties.
        forbidden = true;
    }
    (subs, forbidden)
}

/// Most declared properties an object may count (`minProperties` or
/// `maxProperties` binding): counting costs a copy of the object's machine
/// per count, so members × counts.
pub const MAX_COUNTED_MEMBERS: usize = 256;

impl Lowering<'_> {
    /// `minProperties` and `maxProperties` as the object's machine counts
    /// them: `maxProperties` above `max_count` (and the minimum) lowered as
    /// it (a subset, as for `maxItems`); a minimum beyond
    /// [`MAX_POSITIONS`] refused, and counting refused for objects with
    /// more than [`MAX_COUNTED_MEMBERS`] declared properties.
    fn property_counts(
        &self,
        f: &Flat<'_>,
        members: usize,
        required: u64,
        extras: bool,
    ) -> Result<(u64, Option<u64>), Error> {
        if f.min_props > MAX_POSITIONS {
            return Err(self.err(
                ErrorKind::Limit,
                &f.at,
                &format!("minProperties above {MAX_POSITIONS} is not supported"),
            ));
        }
        if extras && f.min_props >= members as u64 + 2 {
            return Err(self.err(
                ErrorKind::Unsupported,
                &f.at,
                &format!(
                    "minProperties {} needs at least two properties beyond the {members} declared ones, \
                     but a token mask cannot keep the names of extra properties distinct, and a JSON \
                     parser counts a repeated name once",
                    f.min_props
                ),
            ));
        }
        let cap = (self.opts.max_count as u64).max(f.min_props);
        let max = f.max_props.map(|m| m.min(cap));
        // When `counted` counts.
        let counts = f.min_props > required || max.is_some_and(|m| m < members as u64 || extras);
        if counts && members > MAX_COUNTED_MEMBERS {
            return Err(self.err(
                ErrorKind::Limit,
                &f.at,
                &format!(
                    "minProperties or maxProperties on an object with more than \
                     {MAX_COUNTED_MEMBERS} declared properties is not supported"
                ),
            ));
        }
        Ok((f.min_props, max))
    }
}

/// The members in order, optional ones skippable, then extras; the count
/// of members written stays within `min..=max`.
fn counted(
    members: &[(Expr, bool)],
    extra: &Option<Expr>,
    sep: &Expr,
    min: u64,
    max: Option<u64>,
) -> Expr {
    let n = members.len();
    let n_req = members.iter().filter(|m| m.1).count() as u64;
    // Count members only when a bound can bite; the count is then exact
    // (at most n), which costs n copies of each member's machine.
    let counting = min > n_req || max.is_some_and(|m| m < n as u64 || extra.is_some());
    let (min, max, cap) = if counting {
        (min, max, n as u64)
    } else {
        (0, None, 0)
    };
    let mut memo: HashMap<(usize, u64, bool), Expr> = HashMap::new();
    // Built from the end: node(i, c, first).
    for i in (0..=n).rev() {
        for c in 0..=cap {
            for first in [false, true] {
                let e = if i == n {
                    extras_tail(extra, sep, c, first, min, max)
                } else {
                    let (m, req) = &members[i];
                    let lead = if first { Expr::Empty } else { sep.clone() };
                    let c1 = (c + 1).min(cap);
                    let take = if max.is_some_and(|mx| c + 1 > mx) {
                        nothing()
                    } else {
                        let next = memo[&(i + 1, c1, false)].clone();
                        if is_nothing(&next) {
                            nothing()
                        } else {
                            Expr::seq([lead, m.clone(), next])
                        }
                    };
                    let skip = if *req {
                        nothing()
                    } else {
                        memo[&(i + 1, c, first)].clone()
                    };
                    match (is_nothing(&take), is_nothing(&skip)) {
                        (true, true) => nothing(),
                        (false, true) => take,
                        (true, false) => skip,
                        (false, false) => Expr::alt([take, skip]),
                    }
                };
                memo.insert((i, c, first), Expr::shared(e));
            }
        }
    }
    memo[&(0, 0, true)].clone()
}

/// After the members: extras bringing the count `c` into `min..=max`.
fn extras_tail(
    extra: &Option<Expr>,
    sep: &Expr,
    c: u64,
    first: bool,
    min: u64,
    max: Option<u64>,
) -> Expr {
    let lo = min.saturating_sub(c);
    let hi = max.map(|m| m.saturating_sub(c));
    if lo >= 2 {
        // Two extras may repeat one name, which a parser counts once: the
        // declared members must bring the count within one of the minimum
        // (a subset; `property_counts` refuses objects where none can).
        return nothing();
    }
    let Some(x) = extra else {
        return if lo == 0 { Expr::Empty } else { nothing() };
    };
    if hi == Some(0) {
        return if lo == 0 { Expr::Empty } else { nothing() };
    }
    let lead = if first { Expr::Empty } else { sep.clone() };
    let one = Expr::seq([lead, x.clone()]);
    // Both within `max_count` or MAX_POSITIONS (`property_counts`).
    let count = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
    let more = Expr::repeat(
        Expr::seq([sep.clone(), x.clone()]),
        count(lo.saturating_sub(1)),
        hi.map(|h| count(h - 1)),
    );
    let some = Expr::seq([one, more]);
    if lo == 0 {
        Expr::alt([Expr::Empty, some])
    } else {
        some
    }
}

/// The members in any order (each at most once, the required ones all),
/// then extras: one node per set of members written.
fn any_order(members: &[(Expr, bool)], extra: &Option<Expr>, sep: &Expr) -> Expr {
    let n = members.len();
    let required: u32 = members
        .iter()
        .enumerate()
        .filter(|(_, m)| m.1)
        .fold(0, |acc, (i, _)| acc | (1 << i));
    let mut memo: HashMap<(u32, bool), Expr> = HashMap::new();
    for used in (0..(1u32 << n)).rev() {
        for first in [false, true] {
            let mut alts = Vec::new();
            if used & required == required {
                alts.push(extras_tail(extra, sep, 0, first, 0, None));
            }
            for (i, (m, _)) in members.iter().enumerate() {
                if used & (1 << i) != 0 {
                    continue;
                }
                let lead = if first { Expr::Empty } else { sep.clone() };
                let next = memo[&(used | (1 << i), false)].clone();
                if !is_nothing(&next) {
                    alts.push(Expr::seq([lead, m.clone(), next]));
                }
            }
            alts.retain(|e| !is_nothing(e));
            let e = if alts.is_empty() {
                nothing()
            } else {
                Expr::shared(Expr::alt(alts))
            };
            memo.insert((used, first), e);
        }
    }
    memo[&(0, true)].clone()
}

/// The content of a JSON string written without escapes that is none of
/// `names`: a trie of the names whose missing branches lead to free text.
fn key_except(names: &[String]) -> Expr {
    let plain = vec![(' ', '!'), ('#', '['), (']', '\u{10FFFF}')];
    let any = Expr::star(Expr::CharClass(plain.clone()));
    // Only names that can be written without escapes can collide.
    let mut words: Vec<Vec<char>> = names
        .iter()
        .filter(|n| n.chars().all(|c| c >= ' ' && c != '"' && c != '\\'))
        .map(|n| n.chars().collect())
        .collect();
    words.sort();
    words.dedup();
    fn node(words: &[Vec<char>], d: usize, plain: &[(char, char)], any: &Expr) -> Expr {
        let terminal = words.iter().any(|w| w.len() == d);
        let mut alts = Vec::new();
        if !terminal {
            alts.push(Expr::Empty);
        }
        let mut next: Vec<char> = words.iter().filter(|w| w.len() > d).map(|w| w[d]).collect();
        next.dedup();
        for &c in &next {
            let group: Vec<Vec<char>> = words
                .iter()
                .filter(|w| w.len() > d && w[d] == c)
                .cloned()
                .collect();
            alts.push(Expr::seq([
                Expr::CharClass(vec![(c, c)]),
                node(&group, d + 1, plain, any),
            ]));
        }
        let others = subtract(plain, &next);
        if !others.is_empty() {
            alts.push(Expr::seq([Expr::CharClass(others), any.clone()]));
        }
        Expr::alt(alts)
    }
    if words.is_empty() {
        return any;
    }
    node(&words, 0, &plain, &any)
}

/// `ranges` without the chars of `out` (sorted).
fn subtract(ranges: &[(char, char)], out: &[char]) -> Vec<(char, char)> {
    let mut res = Vec::new();
    for &(lo, hi) in ranges {
        let mut start = lo as u32;
        for &c in out {
            let c = c as u32;
            if c < start || c > hi as u32 {
                continue;
            }
            if c > start {
                if let (Some(a), Some(b)) = (char::from_u32(start), char::from_u32(c - 1)) {
                    res.push((a, b));
                }
            }
            start = c + 1;
        }
        if start <= hi as u32 {
            if let Some(a) = char::from_u32(start) {
                res.push((a, hi));
            }
        }
    }
    res
}
