//! Lowering JSON Schema to [`Expr`]: the typed argument machine of a tool.
//!
//! Supported: `type` (object, string, integer, number, boolean, null, array),
//! `properties` and `required` (properties in declared order, optional ones
//! may be left out), `items`, `enum`, `const`, nested objects. Annotations
//! (`description`, `title`, `default`, `examples`, ...) and vendor keywords
//! (`x-...`) are ignored. Anything else is an error naming the JSON pointer
//! and keyword: the machine never lets through an argument the schema
//! forbids, and refuses what it cannot express rather than approximate it.
//!
//! Objects are closed: only declared properties are generated (a subset of
//! what an open schema allows, never more). Whitespace between JSON tokens is
//! allowed up to `max_ws` bytes at each place, so no path can loop forever.

use std::rc::Rc;

use serde_json::Value;

use crate::error::{Error, ErrorKind};
use crate::expr::Expr;
use crate::spec::ToolSet;

/// Bounds of the argument machines.
#[derive(Debug, Clone, Copy)]
pub struct JsonOptions {
    /// Most whitespace bytes allowed between two JSON tokens.
    pub max_ws: u32,
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
    /// Over-approximate what cannot be expressed exactly (`uniqueItems`,
    /// `not`, overlapping `oneOf` ...) instead of refusing it; each
    /// approximation is listed in [`Lowering::relaxed`].
    pub relax: bool,
}

impl Default for JsonOptions {
    fn default() -> Self {
        JsonOptions {
            max_ws: 4,
            max_depth: 32,
            open_objects: false,
            any_order: 0,
            max_recursion: 3,
            any_depth: 3,
            relax: false,
        }
    }
}

const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "default",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$schema",
    "$id",
];

/// Builds the argument machines of one tool set.
pub struct Lowering<'a> {
    pub set: &'a ToolSet,
    pub opts: JsonOptions,
    tool: usize,
}

impl<'a> Lowering<'a> {
    pub fn new(set: &'a ToolSet, opts: JsonOptions) -> Self {
        Lowering { set, opts, tool: 0 }
    }

    /// The argument machine of tool `i`: a JSON object matching its schema.
    pub fn tool_arguments(&mut self, i: usize) -> Result<Expr, Error> {
        self.tool = i;
        let tool = &self.set.tools[i];
        let schema = &tool.parameters;
        let pointer = tool.pointer.clone();
        if let Some(t) = schema.get("type") {
            if t != "object" {
                return Err(self.err(
                    ErrorKind::Schema,
                    &format!("{pointer}/type"),
                    &format!("the parameters schema must have type \"object\", found {t}"),
                ));
            }
        }
        self.value(schema, &pointer, 0)
    }

    /// Tool `i`'s schema as a JSON value of any type (a schema document
    /// compiled on its own, not as tool arguments).
    pub fn schema_value(&mut self, i: usize) -> Result<Expr, Error> {
        self.tool = i;
        let tool = &self.set.tools[i];
        let schema = tool.parameters.clone();
        let pointer = tool.pointer.clone();
        let v = self.value(&schema, &pointer, 0)?;
        Ok(Expr::seq([self.ws(), v, self.ws()]))
    }

    /// Tool `i`'s arguments as positional values, `v1, v2, ...`: the
    /// required parameters in the schema's order, then the optional ones in
    /// order, of which any trailing run may be left out. The separator is a
    /// comma and an optional space.
    pub fn tool_positional(&mut self, i: usize) -> Result<Expr, Error> {
        // The keyword checks of the whole schema come first.
        self.tool_arguments(i)?;
        let tool = &self.set.tools[i];
        let schema = tool.parameters.clone();
        let pointer = tool.pointer.clone();
        let empty = serde_json::Map::new();
        let props = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut req = Vec::new();
        let mut opt = Vec::new();
        for (name, sub) in props {
            let p = format!("{pointer}/properties/{}", escape_pointer(name));
            let v = self.value(sub, &p, 1)?;
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

    fn err(&self, kind: ErrorKind, pointer: &str, msg: &str) -> Error {
        let name = &self.set.tools[self.tool].name;
        Error::new(
            kind,
            format!("{}: tool {name:?}: {msg}", self.set.place(pointer)),
        )
    }

    /// `[ \t\n\r]{0,max_ws}`.
    pub fn ws(&self) -> Expr {
        ws(self.opts.max_ws)
    }

    fn value(&mut self, schema: &Value, at: &str, depth: usize) -> Result<Expr, Error> {
        if depth > self.opts.max_depth {
            return Err(self.err(
                ErrorKind::Limit,
                at,
                &format!(
                    "the schema nests deeper than {} levels (raise --max-depth)",
                    self.opts.max_depth
                ),
            ));
        }
        let obj = match schema {
            Value::Object(o) => o,
            Value::Bool(true) => {
                return Err(self.err(
                    ErrorKind::Unsupported,
                    at,
                    "the schema `true` (any JSON value) is not supported yet",
                ))
            }
            Value::Bool(false) => {
                return Err(self.err(ErrorKind::Schema, at, "the schema `false` accepts no value"))
            }
            _ => return Err(self.err(ErrorKind::Schema, at, "a schema must be an object")),
        };
        for key in obj.keys() {
            let known = matches!(
                key.as_str(),
                "type"
                    | "properties"
                    | "required"
                    | "items"
                    | "enum"
                    | "const"
                    | "additionalProperties"
            );
            if !known && !ANNOTATIONS.contains(&key.as_str()) && !key.starts_with("x-") {
                return Err(self.err(
                    ErrorKind::Unsupported,
                    &format!("{at}/{}", escape_pointer(key)),
                    &format!("unsupported JSON Schema keyword {key:?}"),
                ));
            }
        }
        let ty = match obj.get("type") {
            None => None,
            Some(Value::String(t)) => Some(t.as_str()),
            Some(Value::Array(_)) => {
                return Err(self.err(
                    ErrorKind::Unsupported,
                    &format!("{at}/type"),
                    "lists of types are not supported yet",
                ))
            }
            Some(other) => {
                return Err(self.err(
                    ErrorKind::Schema,
                    &format!("{at}/type"),
                    &format!("\"type\" must be a string, found {other}"),
                ))
            }
        };
        if let Some(t) = ty {
            if !matches!(
                t,
                "object" | "string" | "integer" | "number" | "boolean" | "null" | "array"
            ) {
                return Err(self.err(
                    ErrorKind::Schema,
                    &format!("{at}/type"),
                    &format!("unknown type {t:?}"),
                ));
            }
        }
        if let Some(c) = obj.get("const") {
            return self.literals(std::slice::from_ref(c), ty, &format!("{at}/const"));
        }
        if let Some(e) = obj.get("enum") {
            let Value::Array(values) = e else {
                return Err(self.err(
                    ErrorKind::Schema,
                    &format!("{at}/enum"),
                    "\"enum\" must be an array",
                ));
            };
            return self.literals(values, ty, &format!("{at}/enum"));
        }
        match ty {
            None if obj.contains_key("properties") => self.object(obj, at, depth),
            None => Err(self.err(
                ErrorKind::Unsupported,
                at,
                "a schema without \"type\", \"enum\" or \"const\" (any JSON value) is not supported yet",
            )),
            Some("object") => self.object(obj, at, depth),
            Some("array") => self.array(obj, at, depth),
            Some("string") => Ok(json_string()),
            Some("integer") => Ok(json_integer()),
            Some("number") => Ok(json_number()),
            Some("boolean") => Ok(Expr::alt([Expr::lit("true"), Expr::lit("false")])),
            Some(_) => Ok(Expr::lit("null")),
        }
    }

    fn literals(&self, values: &[Value], ty: Option<&str>, at: &str) -> Result<Expr, Error> {
        let mut alts = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for v in values {
            if let Some(text) = canonical_literal(v, ty) {
                if seen.insert(text.clone()) {
                    alts.push(Expr::lit(&text));
                }
            }
        }
        if alts.is_empty() {
            return Err(self.err(
                ErrorKind::Schema,
                at,
                &format!("no value here matches the type {:?}", ty.unwrap_or("any")),
            ));
        }
        Ok(Expr::alt(alts))
    }

    fn object(
        &mut self,
        obj: &serde_json::Map<String, Value>,
        at: &str,
        depth: usize,
    ) -> Result<Expr, Error> {
        let empty = serde_json::Map::new();
        let props = match obj.get("properties") {
            None => &empty,
            Some(Value::Object(p)) => p,
            Some(_) => {
                return Err(self.err(
                    ErrorKind::Schema,
                    &format!("{at}/properties"),
                    "\"properties\" must be an object",
                ))
            }
        };
        let mut required = Vec::new();
        match obj.get("required") {
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
                    if !props.contains_key(name) {
                        return Err(self.err(
                            ErrorKind::Schema,
                            &format!("{at}/required/{i}"),
                            &format!(
                                "required property {name:?} is not declared in \"properties\""
                            ),
                        ));
                    }
                    required.push(name);
                }
            }
            Some(_) => {
                return Err(self.err(
                    ErrorKind::Schema,
                    &format!("{at}/required"),
                    "\"required\" must be an array",
                ))
            }
        }
        match obj.get("additionalProperties") {
            None | Some(Value::Bool(_)) | Some(Value::Object(_)) => {}
            Some(_) => {
                return Err(self.err(
                    ErrorKind::Schema,
                    &format!("{at}/additionalProperties"),
                    "\"additionalProperties\" must be a boolean or a schema",
                ))
            }
        }
        // Members in declared order.
        let mut members = Vec::with_capacity(props.len());
        for (name, sub) in props {
            let p = format!("{at}/properties/{}", escape_pointer(name));
            let value = self.value(sub, &p, depth + 1)?;
            let key = serde_json::to_string(name).unwrap_or_default();
            let member = Expr::seq([
                Expr::Bytes(key.into_bytes()),
                self.ws(),
                Expr::lit(":"),
                self.ws(),
                value,
            ]);
            members.push((member, required.contains(&name.as_str())));
        }
        // tail(i, first): members i.. in order, optional ones skippable,
        // separated by commas; `first` = nothing was written before.
        // Built from the end; each tail is shared by the two alternatives
        // that continue into it, so the size stays linear.
        let sep = Expr::shared(Expr::seq([self.ws(), Expr::lit(","), self.ws()]));
        let mut tail_first = Expr::Empty;
        let mut tail_rest = Expr::Empty;
        for (member, req) in members.into_iter().rev() {
            let member = Expr::shared(member);
            let rest = Expr::shared(tail_rest);
            let first = Expr::shared(tail_first);
            let with_first = Expr::seq([member.clone(), rest.clone()]);
            let with_rest = Expr::seq([sep.clone(), member, rest.clone()]);
            if req {
                tail_first = with_first;
                tail_rest = with_rest;
            } else {
                tail_first = Expr::alt([with_first, first]);
                tail_rest = Expr::alt([with_rest, rest]);
            }
        }
        Ok(Expr::seq([
            Expr::lit("{"),
            self.ws(),
            tail_first,
            self.ws(),
            Expr::lit("}"),
        ]))
    }

    fn array(
        &mut self,
        obj: &serde_json::Map<String, Value>,
        at: &str,
        depth: usize,
    ) -> Result<Expr, Error> {
        let Some(items) = obj.get("items") else {
            return Err(self.err(
                ErrorKind::Unsupported,
                at,
                "an array without \"items\" (elements of any JSON type) is not supported yet",
            ));
        };
        if items.is_array() {
            return Err(self.err(
                ErrorKind::Unsupported,
                &format!("{at}/items"),
                "tuple-form \"items\" (an array of schemas) is not supported yet",
            ));
        }
        let item = Expr::Shared(Rc::new(self.value(
            items,
            &format!("{at}/items"),
            depth + 1,
        )?));
        let more = Expr::star(Expr::seq([
            self.ws(),
            Expr::lit(","),
            self.ws(),
            item.clone(),
        ]));
        Ok(Expr::seq([
            Expr::lit("["),
            self.ws(),
            Expr::opt(Expr::seq([item, more])),
            self.ws(),
            Expr::lit("]"),
        ]))
    }
}

/// `[ \t\n\r]{0,max}`.
pub fn ws(max: u32) -> Expr {
    if max == 0 {
        return Expr::Empty;
    }
    Expr::repeat(
        Expr::ByteClass(vec![(b' ', b' '), (b'\t', b'\n'), (b'\r', b'\r')]),
        0,
        Some(max),
    )
}

/// The canonical compact JSON text of `v` if it is a value of type `ty`.
/// Integral numbers of type `integer` are written without a fraction.
fn canonical_literal(v: &Value, ty: Option<&str>) -> Option<String> {
    let fits = match ty {
        None => true,
        Some("string") => v.is_string(),
        Some("integer") => {
            v.is_i64()
                || v.is_u64()
                || v.as_f64()
                    .is_some_and(|f| f.fract() == 0.0 && f.abs() < 9.007e15)
        }
        Some("number") => v.is_number(),
        Some("boolean") => v.is_boolean(),
        Some("null") => v.is_null(),
        Some("object") => v.is_object(),
        Some("array") => v.is_array(),
        Some(_) => false,
    };
    if !fits {
        return None;
    }
    if ty == Some("integer") && !(v.is_i64() || v.is_u64()) {
        return v.as_f64().map(|f| format!("{}", f as i64));
    }
    serde_json::to_string(v).ok()
}

fn hex() -> Expr {
    Expr::ByteClass(vec![(b'0', b'9'), (b'A', b'F'), (b'a', b'f')])
}

/// A JSON string: any Unicode scalar value except `"`, `\` and control
/// characters, or an escape. `\u` escapes name scalar values only: a high
/// surrogate must be followed by a low one (strict parsers refuse lone
/// surrogates).
pub fn json_string() -> Expr {
    let plain = Expr::CharClass(vec![(' ', '!'), ('#', '['), (']', '\u{10FFFF}')]);
    let h = hex;
    let non_surrogate = Expr::alt([
        Expr::seq([
            Expr::ByteClass(vec![
                (b'0', b'9'),
                (b'A', b'C'),
                (b'a', b'c'),
                (b'E', b'F'),
                (b'e', b'f'),
            ]),
            h(),
            h(),
            h(),
        ]),
        Expr::seq([
            Expr::ByteClass(vec![(b'D', b'D'), (b'd', b'd')]),
            Expr::ByteClass(vec![(b'0', b'7')]),
            h(),
            h(),
        ]),
    ]);
    let high = Expr::seq([
        Expr::ByteClass(vec![(b'D', b'D'), (b'd', b'd')]),
        Expr::ByteClass(vec![(b'8', b'9'), (b'A', b'B'), (b'a', b'b')]),
        h(),
        h(),
    ]);
    let low = Expr::seq([
        Expr::ByteClass(vec![(b'D', b'D'), (b'd', b'd')]),
        Expr::ByteClass(vec![(b'C', b'F'), (b'c', b'f')]),
        h(),
        h(),
    ]);
    let escape = Expr::seq([
        Expr::lit("\\"),
        Expr::alt([
            Expr::ByteClass(vec![
                (b'"', b'"'),
                (b'\\', b'\\'),
                (b'/', b'/'),
                (b'b', b'b'),
                (b'f', b'f'),
                (b'n', b'n'),
                (b'r', b'r'),
                (b't', b't'),
            ]),
            Expr::seq([Expr::lit("u"), non_surrogate]),
            Expr::seq([Expr::lit("u"), high, Expr::lit("\\u"), low]),
        ]),
    ]);
    Expr::seq([
        Expr::lit("\""),
        Expr::star(Expr::alt([plain, escape])),
        Expr::lit("\""),
    ])
}

/// Most digits of an integer (and of a number's integer part): every such
/// integer fits an i64 exactly.
pub const MAX_INT_DIGITS: u32 = 18;

fn int_part() -> Expr {
    Expr::seq([
        Expr::opt(Expr::lit("-")),
        Expr::alt([
            Expr::lit("0"),
            Expr::seq([
                Expr::ByteClass(vec![(b'1', b'9')]),
                Expr::repeat(
                    Expr::ByteClass(vec![(b'0', b'9')]),
                    0,
                    Some(MAX_INT_DIGITS - 1),
                ),
            ]),
        ]),
    ])
}

/// `-?(0|[1-9][0-9]{0,17})`: canonical integers that fit an i64 exactly.
pub fn json_integer() -> Expr {
    int_part()
}

/// A JSON number whose value is a finite double: the integer part has at
/// most 18 digits (below 1e18) and a positive exponent is at most 289 (up to
/// three digits, leading zeros counted), so the value stays below 1e307.
/// Strict parsers refuse out-of-range numbers such as `1e400`.
pub fn json_number() -> Expr {
    let digit = || Expr::ByteClass(vec![(b'0', b'9')]);
    let up_to_289 = Expr::alt([
        Expr::repeat(digit(), 1, Some(2)),
        Expr::seq([Expr::ByteClass(vec![(b'0', b'1')]), digit(), digit()]),
        Expr::seq([Expr::lit("2"), Expr::ByteClass(vec![(b'0', b'7')]), digit()]),
        Expr::seq([Expr::lit("28"), digit()]),
    ]);
    let exponent = Expr::seq([
        Expr::ByteClass(vec![(b'E', b'E'), (b'e', b'e')]),
        Expr::alt([
            Expr::seq([Expr::opt(Expr::lit("+")), up_to_289]),
            Expr::seq([Expr::lit("-"), Expr::repeat(digit(), 1, Some(3))]),
        ]),
    ]);
    Expr::seq([
        int_part(),
        Expr::opt(Expr::seq([Expr::lit("."), Expr::repeat(digit(), 1, None)])),
        Expr::opt(exponent),
    ])
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}
