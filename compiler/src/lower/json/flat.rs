//! Flat schemas: one conjunction of keyword constraints, with no
//! applicator (`$ref`, `allOf`, `anyOf`, `oneOf`) left. Merging two flat
//! schemas is their conjunction: kinds and literal sets intersect, bounds
//! tighten, and sub-schemas (properties, items) collect into `allOf` lists
//! that are lowered together later.

use serde_json::{Map, Number, Value};

use super::{escape_pointer, Lowering, Sub};
use crate::error::{Error, ErrorKind};

pub const NULL: u8 = 1;
pub const BOOL: u8 = 2;
/// Integral numbers.
pub const INT: u8 = 4;
/// Numbers that are not integral.
pub const FRAC: u8 = 8;
pub const STR: u8 = 16;
pub const ARR: u8 = 32;
pub const OBJ: u8 = 64;
pub const ALL: u8 = 127;

/// Keywords that never constrain a value.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "default",
    "examples",
    "example",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$schema",
    "$id",
    "id",
    "$anchor",
    "$dynamicAnchor",
    "$vocabulary",
    "$defs",
    "definitions",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "discriminator",
    "xml",
    "externalDocs",
    "markdownDescription",
    "enumDescriptions",
    "markdownEnumDescriptions",
];

/// Keywords this lowering reads (assertions and applicators).
const KNOWN: &[&str] = &[
    "type",
    "enum",
    "const",
    "nullable",
    "$ref",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "items",
    "prefixItems",
    "additionalItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "unevaluatedItems",
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "$dynamicRef",
    "$recursiveRef",
    "$recursiveAnchor",
];

pub fn is_annotation(key: &str) -> bool {
    ANNOTATIONS.contains(&key) || key.starts_with("x-") || !KNOWN.contains(&key)
}

/// The kinds of a `type` value (a name or a list of names); `None` for an
/// unknown name.
pub fn type_kinds(v: &Value) -> Option<u8> {
    let one = |t: &str| match t {
        "null" => Some(NULL),
        "boolean" => Some(BOOL),
        "integer" => Some(INT),
        "number" => Some(INT | FRAC),
        "string" => Some(STR),
        "array" => Some(ARR),
        "object" => Some(OBJ),
        _ => None,
    };
    match v {
        Value::String(t) => one(t),
        Value::Array(ts) => ts
            .iter()
            .try_fold(0, |acc, t| Some(acc | one(t.as_str()?)?)),
        _ => None,
    }
}

/// The kind of a JSON value.
pub fn kind_of(v: &Value) -> u8 {
    match v {
        Value::Null => NULL,
        Value::Bool(_) => BOOL,
        Value::Number(n) => {
            if n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0) {
                INT
            } else {
                FRAC
            }
        }
        Value::String(_) => STR,
        Value::Array(_) => ARR,
        Value::Object(_) => OBJ,
    }
}

/// JSON Schema's equality: numbers by value, objects regardless of order.
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(p), Some(q)) = (x.as_i64(), y.as_i64()) {
                p == q
            } else if let (Some(p), Some(q)) = (x.as_u64(), y.as_u64()) {
                p == q
            } else {
                x.as_f64() == y.as_f64()
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// A numeric bound: value and whether it is exclusive.
#[derive(Debug, Clone)]
pub struct NumBound {
    pub value: Number,
    pub exclusive: bool,
}

fn f(n: &Number) -> f64 {
    n.as_f64().unwrap_or(f64::NAN)
}

/// The tighter of two lower bounds (`lower`) or upper bounds.
fn tighter(a: &Option<NumBound>, b: &Option<NumBound>, lower: bool) -> Option<NumBound> {
    match (a, b) {
        (None, x) | (x, None) => x.clone(),
        (Some(x), Some(y)) => {
            let (fx, fy) = (f(&x.value), f(&y.value));
            if fx == fy {
                Some(if x.exclusive { x.clone() } else { y.clone() })
            } else if (fx > fy) == lower {
                Some(x.clone())
            } else {
                Some(y.clone())
            }
        }
    }
}

/// What an object part says of properties it does not declare.
#[derive(Debug, Clone)]
pub enum Extra<'a> {
    /// `additionalProperties` absent.
    Unsaid,
    /// `true`, or `unevaluatedProperties`-free openness.
    Any,
    /// `false`.
    None,
    Schema(Sub<'a>),
}

/// The object keywords of one schema object.
#[derive(Debug, Clone)]
pub struct ObjPart<'a> {
    pub props: Vec<(String, Sub<'a>)>,
    pub required: Vec<String>,
    pub extra: Extra<'a>,
    /// `patternProperties`: (pattern, schema).
    pub patterns: Vec<(String, Sub<'a>)>,
}

/// The array keywords of one schema object.
#[derive(Debug, Clone)]
pub struct ArrPart<'a> {
    pub prefix: Vec<Sub<'a>>,
    /// The elements after the prefix: `None` = any, `Some(None)` = none
    /// allowed (`items: false`), `Some(Some(s))` = schema `s`.
    pub rest: Option<Option<Sub<'a>>>,
}

/// A conjunction of keyword constraints.
#[derive(Debug, Clone)]
pub struct Flat<'a> {
    /// Where it comes from, for messages.
    pub at: String,
    pub kinds: u8,
    /// `enum`/`const`: the only values allowed (before the other keywords).
    pub literals: Option<Vec<&'a Value>>,
    /// Whether any keyword besides type/enum/const constrains values.
    pub constrained: bool,
    pub lo: Option<NumBound>,
    pub hi: Option<NumBound>,
    pub multiple_of: Vec<(Number, String)>,
    pub min_len: u64,
    pub max_len: Option<u64>,
    pub patterns: Vec<(&'a str, String)>,
    pub formats: Vec<&'a str>,
    pub arrays: Vec<ArrPart<'a>>,
    pub min_items: u64,
    pub max_items: Option<u64>,
    pub unique: Option<String>,
    pub objects: Vec<ObjPart<'a>>,
    pub min_props: u64,
    pub max_props: Option<u64>,
    /// `dependentRequired`: if the key is present, all of these are.
    pub dependent: Vec<(String, Vec<String>)>,
    pub property_names: Vec<Sub<'a>>,
    /// `unevaluatedProperties: false` seen.
    pub closed: bool,
}

impl<'a> Flat<'a> {
    /// No constraint at all.
    pub fn any(at: &str) -> Flat<'a> {
        Flat {
            at: at.to_string(),
            kinds: ALL,
            literals: None,
            constrained: false,
            lo: None,
            hi: None,
            multiple_of: Vec::new(),
            min_len: 0,
            max_len: None,
            patterns: Vec::new(),
            formats: Vec::new(),
            arrays: Vec::new(),
            min_items: 0,
            max_items: None,
            unique: None,
            objects: Vec::new(),
            min_props: 0,
            max_props: None,
            dependent: Vec::new(),
            property_names: Vec::new(),
            closed: false,
        }
    }

    /// The conjunction of two flat schemas.
    pub fn merge(&self, o: &Flat<'a>) -> Flat<'a> {
        let literals = match (&self.literals, &o.literals) {
            (None, x) | (x, None) => x.clone(),
            (Some(a), Some(b)) => Some(
                a.iter()
                    .copied()
                    .filter(|x| b.iter().any(|y| json_eq(x, y)))
                    .collect(),
            ),
        };
        let mut m = Flat {
            at: self.at.clone(),
            kinds: self.kinds & o.kinds,
            literals,
            constrained: self.constrained || o.constrained,
            lo: tighter(&self.lo, &o.lo, true),
            hi: tighter(&self.hi, &o.hi, false),
            multiple_of: [self.multiple_of.clone(), o.multiple_of.clone()].concat(),
            min_len: self.min_len.max(o.min_len),
            max_len: min_opt(self.max_len, o.max_len),
            patterns: [self.patterns.clone(), o.patterns.clone()].concat(),
            formats: [self.formats.clone(), o.formats.clone()].concat(),
            arrays: [self.arrays.clone(), o.arrays.clone()].concat(),
            min_items: self.min_items.max(o.min_items),
            max_items: min_opt(self.max_items, o.max_items),
            unique: self.unique.clone().or(o.unique.clone()),
            objects: [self.objects.clone(), o.objects.clone()].concat(),
            min_props: self.min_props.max(o.min_props),
            max_props: min_opt(self.max_props, o.max_props),
            dependent: [self.dependent.clone(), o.dependent.clone()].concat(),
            property_names: [self.property_names.clone(), o.property_names.clone()].concat(),
            closed: self.closed || o.closed,
        };
        m.formats.dedup();
        if let Some(l) = &m.literals {
            if l.is_empty() {
                m.kinds = 0;
            }
        }
        m
    }

    /// The kinds left once literals are taken into account.
    pub fn effective_kinds(&self) -> u8 {
        match &self.literals {
            None => self.kinds,
            Some(l) => self.kinds & l.iter().fold(0, |acc, v| acc | kind_of(v)),
        }
    }

    /// The names some object part requires.
    pub fn required(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in &self.objects {
            for r in &p.required {
                if !out.contains(r) {
                    out.push(r.clone());
                }
            }
        }
        out
    }

    /// The schemas property `name` must satisfy, from the parts that
    /// declare it.
    pub fn property_subs(&self, name: &str) -> Vec<Sub<'a>> {
        self.objects
            .iter()
            .flat_map(|p| {
                p.props
                    .iter()
                    .filter(|(n, _)| n == name)
                    .map(|(_, s)| s.clone())
            })
            .collect()
    }
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) | (None, x) => x,
    }
}

impl<'a> Lowering<'a> {
    /// The flat schema of one schema object's own keywords (applicators
    /// are handled by the caller): each keyword in turn, then the item and
    /// property keywords, which are read together.
    pub(crate) fn own(
        &mut self,
        sub: &Sub<'a>,
        o: &'a Map<String, Value>,
        top: bool,
    ) -> Result<Flat<'a>, Error> {
        let mut f = Flat::any(&sub.at);
        for (k, v) in o {
            if !is_annotation(k) {
                self.own_keyword(&mut f, sub, o, k.as_str(), v)?;
            }
        }
        if o.get("nullable") == Some(&Value::Bool(true)) && o.contains_key("type") {
            f.kinds |= NULL;
        }
        self.own_items(&mut f, sub, o, top)?;
        self.own_properties(&mut f, sub, o, top)?;
        Ok(f)
    }

    /// What one keyword `k` (value `v`) of the schema object `o` adds to `f`;
    /// the item and property keywords are read by [`Self::own_items`] and
    /// [`Self::own_properties`].
    fn own_keyword(
        &mut self,
        f: &mut Flat<'a>,
        sub: &Sub<'a>,
        o: &'a Map<String, Value>,
        k: &str,
        v: &'a Value,
    ) -> Result<(), Error> {
        let at = &sub.at;
        let here = |k: &str| format!("{at}/{}", escape_pointer(k));
        let child = |path: String, v: &'a Value| Sub {
            schema: v,
            at: path,
            stack: sub.stack.clone(),
        };
        match k {
            "type" => {
                f.kinds &= type_kinds(v).ok_or_else(|| {
                    self.err(
                        ErrorKind::Schema,
                        &here(k),
                        &format!("unknown type {v} (expected null, boolean, integer, number, string, array, object, or a list of them)"),
                    )
                })?;
            }
            "nullable" => {}
            "enum" => {
                let Value::Array(values) = v else {
                    return Err(self.err(ErrorKind::Schema, &here(k), "\"enum\" must be an array"));
                };
                f.literals = Some(values.iter().collect());
            }
            "const" => f.literals = Some(vec![v]),
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => {
                self.own_bound(f, o, k, v, &here(k))?;
            }
            "multipleOf" => {
                f.constrained = true;
                match v {
                    Value::Number(n) if n.as_f64().is_some_and(|x| x > 0.0) => {
                        f.multiple_of.push((n.clone(), here(k)))
                    }
                    _ => {
                        return Err(self.err(
                            ErrorKind::Schema,
                            &here(k),
                            "\"multipleOf\" must be a number above 0",
                        ))
                    }
                }
            }
            "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
            | "maxProperties" => {
                f.constrained = true;
                let n = count(v).ok_or_else(|| {
                    self.err(
                        ErrorKind::Schema,
                        &here(k),
                        &format!("\"{k}\" must be a non-negative integer"),
                    )
                })?;
                match k {
                    "minLength" => f.min_len = f.min_len.max(n),
                    "maxLength" => f.max_len = min_opt(f.max_len, Some(n)),
                    "minItems" => f.min_items = f.min_items.max(n),
                    "maxItems" => f.max_items = min_opt(f.max_items, Some(n)),
                    "minProperties" => f.min_props = f.min_props.max(n),
                    _ => f.max_props = min_opt(f.max_props, Some(n)),
                }
            }
            "pattern" => {
                f.constrained = true;
                let Value::String(p) = v else {
                    return Err(self.err(
                        ErrorKind::Schema,
                        &here(k),
                        "\"pattern\" must be a string",
                    ));
                };
                f.patterns.push((p.as_str(), here(k)));
            }
            "format" => {
                if let Value::String(name) = v {
                    if crate::lower::value::format_is_exact(name).is_some() {
                        f.constrained = true;
                        f.formats.push(name.as_str());
                    } else if name == "regex" {
                        // Validators check it, and regular expressions
                        // nest: no finite machine knows them.
                        self.refuse_or_relax(
                            &here(k),
                            "format",
                            "\"regex\" (a valid regular expression) cannot be checked by a finite machine",
                            "any string",
                        )?;
                    }
                    // Other names are annotations, as JSON Schema reads
                    // formats it does not define (int32, password, ...).
                }
            }
            "uniqueItems" if v == &Value::Bool(true) => {
                f.constrained = true;
                f.unique = Some(here(k));
            }
            "items" | "prefixItems" | "additionalItems" | "unevaluatedItems" => {}
            "contains" => {
                self.refuse_or_relax(&here(k), k, "is not supported", "ignored")?;
            }
            "properties"
            | "required"
            | "additionalProperties"
            | "patternProperties"
            | "unevaluatedProperties" => {}
            "propertyNames" => {
                f.constrained = true;
                f.property_names.push(child(here(k), v));
            }
            "dependentRequired" | "dependencies" => {
                self.own_dependent(f, k, v, &here(k))?;
            }
            "dependentSchemas" => {
                self.refuse_or_relax(&here(k), k, "is not supported", "ignored")?
            }
            "$dynamicRef" | "$recursiveRef" => {
                return Err(self.err(
                    ErrorKind::Unsupported,
                    &here(k),
                    &format!("\"{k}\" (dynamic scope) is not supported"),
                ))
            }
            // Applicators, handled by `flatten_one`.
            _ => {}
        }
        Ok(())
    }

    /// `minimum`, `maximum` and their exclusive forms (draft 4's boolean
    /// `exclusiveMinimum`/`exclusiveMaximum` included): the tighter bound wins.
    fn own_bound(
        &self,
        f: &mut Flat<'a>,
        o: &'a Map<String, Value>,
        k: &str,
        v: &'a Value,
        here: &str,
    ) -> Result<(), Error> {
        f.constrained = true;
        let lower = k.ends_with("inimum");
        let bound = match v {
            Value::Number(n) => NumBound {
                value: n.clone(),
                exclusive: k.starts_with("exclusive"),
            },
            // Draft 4: a boolean that makes minimum/maximum exclusive.
            Value::Bool(_) if k.starts_with("exclusive") => return Ok(()),
            _ => {
                return Err(self.err(
                    ErrorKind::Schema,
                    here,
                    &format!("\"{k}\" must be a number"),
                ))
            }
        };
        let exclusive4 = |name: &str| o.get(name) == Some(&Value::Bool(true));
        let bound = NumBound {
            exclusive: bound.exclusive
                || (k == "minimum" && exclusive4("exclusiveMinimum"))
                || (k == "maximum" && exclusive4("exclusiveMaximum")),
            ..bound
        };
        if lower {
            f.lo = tighter(&f.lo, &Some(bound), true);
        } else {
            f.hi = tighter(&f.hi, &Some(bound), false);
        }
        Ok(())
    }

    /// `dependentRequired` (and draft 7's `dependencies` with lists of
    /// names); a schema as a dependency is refused, or ignored under `--relax`.
    fn own_dependent(
        &mut self,
        f: &mut Flat<'a>,
        k: &str,
        v: &'a Value,
        here: &str,
    ) -> Result<(), Error> {
        f.constrained = true;
        let Value::Object(d) = v else {
            return Err(self.err(
                ErrorKind::Schema,
                here,
                &format!("\"{k}\" must be an object"),
            ));
        };
        for (name, deps) in d {
            match deps {
                Value::Array(names) => f.dependent.push((
                    name.clone(),
                    names
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect(),
                )),
                _ => self.refuse_or_relax(
                    &format!("{}/{}", here, escape_pointer(name)),
                    k,
                    "with a schema (dependentSchemas) is not supported",
                    "ignored",
                )?,
            }
        }
        Ok(())
    }

    /// The array keywords of `o` (`items`, `prefixItems`, their older
    /// spellings and `unevaluatedItems`) as one more array part of `f`.
    fn own_items(
        &mut self,
        f: &mut Flat<'a>,
        sub: &Sub<'a>,
        o: &'a Map<String, Value>,
        top: bool,
    ) -> Result<(), Error> {
        let at = &sub.at;
        let child = |path: String, v: &'a Value| Sub {
            schema: v,
            at: path,
            stack: sub.stack.clone(),
        };
        // Arrays.
        let items = o.get("items");
        let prefix_items = o.get("prefixItems");
        if items.is_some() || prefix_items.is_some() || o.contains_key("unevaluatedItems") {
            f.constrained = true;
            let mut part = ArrPart {
                prefix: Vec::new(),
                rest: None,
            };
            let list = |key: &str, v: &'a Value| -> Result<Vec<Sub<'a>>, Error> {
                match v {
                    Value::Array(a) => Ok(a
                        .iter()
                        .enumerate()
                        .map(|(i, s)| child(format!("{at}/{key}/{i}"), s))
                        .collect()),
                    _ => Err(self.err(
                        ErrorKind::Schema,
                        &format!("{at}/{key}"),
                        &format!("\"{key}\" must be an array of schemas"),
                    )),
                }
            };
            let rest_of = |key: &str, v: &'a Value| match v {
                Value::Bool(false) => Some(None),
                Value::Bool(true) => None,
                s => Some(Some(child(format!("{at}/{key}"), s))),
            };
            match (prefix_items, items) {
                (Some(p), items) => {
                    part.prefix = list("prefixItems", p)?;
                    if let Some(i) = items {
                        part.rest = rest_of("items", i);
                    }
                }
                // Drafts before 2020-12: an array of schemas is the prefix.
                (None, Some(i @ Value::Array(_))) => {
                    part.prefix = list("items", i)?;
                    if let Some(a) = o.get("additionalItems") {
                        part.rest = rest_of("additionalItems", a);
                    }
                }
                (None, Some(i)) => part.rest = rest_of("items", i),
                (None, None) => {}
            }
            match o.get("unevaluatedItems") {
                None | Some(Value::Bool(true)) => {}
                // Alone, the flat schema holds every item keyword this
                // schema evaluates: no element beyond them (a subset when
                // an applicator's items would have evaluated more).
                Some(Value::Bool(false)) if top => {
                    if part.rest.is_none() {
                        part.rest = Some(None);
                    }
                }
                Some(_) => self.refuse_or_relax(
                    &format!("{at}/unevaluatedItems"),
                    "unevaluatedItems",
                    "is only supported as false on a schema used alone",
                    "ignored",
                )?,
            }
            f.arrays.push(part);
        }
        Ok(())
    }

    /// The object keywords of `o` (`properties`, `required`,
    /// `patternProperties`, `additionalProperties`,
    /// `unevaluatedProperties`) as one more object part of `f`.
    fn own_properties(
        &mut self,
        f: &mut Flat<'a>,
        sub: &Sub<'a>,
        o: &'a Map<String, Value>,
        top: bool,
    ) -> Result<(), Error> {
        let at = &sub.at;
        let child = |path: String, v: &'a Value| Sub {
            schema: v,
            at: path,
            stack: sub.stack.clone(),
        };
        // Objects.
        let keys = [
            "properties",
            "required",
            "additionalProperties",
            "patternProperties",
            "unevaluatedProperties",
        ];
        if keys.iter().any(|k| o.contains_key(*k)) {
            f.constrained = true;
            let mut part = ObjPart {
                props: Vec::new(),
                required: Vec::new(),
                extra: Extra::Unsaid,
                patterns: Vec::new(),
            };
            match o.get("properties") {
                None => {}
                Some(Value::Object(p)) => {
                    for (name, s) in p {
                        let path = format!("{at}/properties/{}", escape_pointer(name));
                        part.props.push((name.clone(), child(path, s)));
                    }
                }
                Some(_) => {
                    return Err(self.err(
                        ErrorKind::Schema,
                        &format!("{at}/properties"),
                        "\"properties\" must be an object",
                    ))
                }
            }
            match o.get("required") {
                None => {}
                Some(Value::Array(r)) => {
                    for (i, name) in r.iter().enumerate() {
                        let Some(name) = name.as_str() else {
                            return Err(self.err(
                                ErrorKind::Schema,
                                &format!("{at}/required/{i}"),
                                "required names must be strings",
                            ));
                        };
                        if !part.required.iter().any(|r| r == name) {
                            part.required.push(name.to_string());
                        }
                    }
                }
                // OpenAPI 2 / some tools: `required: true` on a property is
                // handled by the dialect readers; here it carries no meaning.
                Some(Value::Bool(_)) => {}
                Some(_) => {
                    return Err(self.err(
                        ErrorKind::Schema,
                        &format!("{at}/required"),
                        "\"required\" must be an array",
                    ))
                }
            }
            match o.get("patternProperties") {
                None => {}
                Some(Value::Object(p)) => {
                    for (pat, s) in p {
                        let path = format!("{at}/patternProperties/{}", escape_pointer(pat));
                        part.patterns.push((pat.clone(), child(path, s)));
                    }
                }
                Some(_) => {
                    return Err(self.err(
                        ErrorKind::Schema,
                        &format!("{at}/patternProperties"),
                        "\"patternProperties\" must be an object",
                    ))
                }
            }
            part.extra = match o.get("additionalProperties") {
                None => Extra::Unsaid,
                Some(Value::Bool(true)) => Extra::Any,
                Some(Value::Bool(false)) => Extra::None,
                Some(s @ Value::Object(_)) => {
                    Extra::Schema(child(format!("{at}/additionalProperties"), s))
                }
                Some(_) => {
                    return Err(self.err(
                        ErrorKind::Schema,
                        &format!("{at}/additionalProperties"),
                        "\"additionalProperties\" must be a boolean or a schema",
                    ))
                }
            };
            match o.get("unevaluatedProperties") {
                None | Some(Value::Bool(true)) => {}
                Some(Value::Bool(false)) if top => f.closed = true,
                Some(_) => self.refuse_or_relax(
                    &format!("{at}/unevaluatedProperties"),
                    "unevaluatedProperties",
                    "is only supported as false on a schema used alone",
                    "ignored",
                )?,
            }
            f.objects.push(part);
        }
        Ok(())
    }
}

fn count(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|x| *x >= 0.0 && x.fract() == 0.0)
                .map(|x| x as u64)
        }),
        _ => None,
    }
}
