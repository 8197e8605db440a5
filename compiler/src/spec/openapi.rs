//! OpenAPI 3 (3.0 and 3.1): each operation is a tool.
//!
//! - Name: `operationId`; without one, `METHOD PATH` rewritten as
//!   `{method}_{path}` with `{`/`}` dropped and every run of other
//!   characters outside `[A-Za-z0-9]` turned into `_` (`GET /movie/{id}` →
//!   `get_movie_id`).
//! - Description: `description`, else `summary`.
//! - Arguments: an object whose properties are the operation's parameters
//!   (path-level ones merged in, the operation's winning on the same name
//!   and `in`) with `in` = `path`, `query` or `header`, in order; `cookie`
//!   parameters, and the `Accept`, `Content-Type` and `Authorization`
//!   headers (which OpenAPI says to ignore), are left out, as are security
//!   schemes (the client adds credentials). Path parameters and those with
//!   `required: true` are required. A parameter's `description` is copied
//!   into its schema when the schema has none. The JSON request body
//!   (`application/json`, or another `*/*+json` media type) is the property
//!   `body`, required when `requestBody.required`; a body with no JSON media
//!   type is an error. Two parameters with one name in different places, or
//!   a parameter named `body` next to a body, are errors.
//! - `$ref`: references to parameters, request bodies and path items are
//!   inlined (at most 32 hops; a cycle is an error). Schema references
//!   `#/components/schemas/NAME` become `#/$defs/NAME` and the schemas they
//!   reach (transitively) are copied into the arguments' `$defs`, so
//!   recursive schemas are left to the lowering. Other references are
//!   errors.
//! - OpenAPI 3.0 schemas are turned into JSON Schema: `nullable: true` adds
//!   `"null"` to `type` (and to `enum`), boolean `exclusiveMinimum`/
//!   `exclusiveMaximum` become numbers, `example`, `discriminator`, `xml`
//!   and `externalDocs` are dropped. 3.1 schemas are JSON Schema already.

use serde_json::{Map, Value};

use super::{esc, spec_err, Found, Read, ToolSet};
use crate::error::Error;

const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];
const MAX_HOPS: usize = 32;

pub(super) fn read(set: &ToolSet, root: &Value) -> Result<Read, Error> {
    let Some(doc) = root.as_object() else {
        return Err(spec_err(
            set,
            "",
            "an OpenAPI document must be a JSON object",
        ));
    };
    if doc.contains_key("swagger") {
        return Err(spec_err(
            set,
            "/swagger",
            "Swagger 2.0 is not supported (convert it to OpenAPI 3)",
        ));
    }
    let oas30 = match doc.get("openapi") {
        Some(Value::String(v)) if v.starts_with("3.0") => true,
        Some(Value::String(v)) if v.starts_with("3.") => false,
        Some(v) => {
            return Err(spec_err(
                set,
                "/openapi",
                &format!("unsupported OpenAPI version {v} (expected 3.x)"),
            ))
        }
        None => true,
    };
    let Some(Value::Object(paths)) = doc.get("paths") else {
        return Err(spec_err(
            set,
            "",
            "the OpenAPI document has no \"paths\" object",
        ));
    };
    let cx = Cx { set, root, oas30 };
    let mut read = Read {
        base: "/paths".into(),
        ..Read::default()
    };
    for (path, item) in paths {
        let item_at = format!("/paths/{}", esc(path));
        let (item, item_at) = cx.deref(item, &item_at)?;
        let Some(item) = item.as_object() else {
            return Err(spec_err(set, &item_at, "a path item must be a JSON object"));
        };
        let shared = cx.parameters(item.get("parameters"), &format!("{item_at}/parameters"))?;
        for (method, op) in item {
            if !METHODS.contains(&method.as_str()) {
                continue;
            }
            let at = format!("{item_at}/{method}");
            read.tools
                .push(cx.operation(path, method, op, &at, &shared)?);
        }
    }
    Ok(read)
}

struct Cx<'a> {
    set: &'a ToolSet,
    root: &'a Value,
    oas30: bool,
}

/// A parameter after `$ref`s: its value and pointer.
struct Param<'a> {
    value: &'a Map<String, Value>,
    at: String,
    name: &'a str,
    place: &'a str,
}

impl<'a> Cx<'a> {
    /// Follows `$ref`s from `v` (at `at`) to a value in the document.
    fn deref(&self, mut v: &'a Value, at: &str) -> Result<(&'a Value, String), Error> {
        let mut at = at.to_string();
        for _ in 0..MAX_HOPS {
            let Some(r) = v.get("$ref") else {
                return Ok((v, at));
            };
            let here = format!("{at}/$ref");
            let Some(r) = r.as_str() else {
                return Err(spec_err(self.set, &here, "\"$ref\" must be a string"));
            };
            let Some(ptr) = r.strip_prefix('#') else {
                return Err(spec_err(
                    self.set,
                    &here,
                    &format!("external reference {r:?} is not supported (only #/... in this file)"),
                ));
            };
            v = self.root.pointer(ptr).ok_or_else(|| {
                spec_err(
                    self.set,
                    &here,
                    &format!("the reference {r:?} leads nowhere"),
                )
            })?;
            at = ptr.to_string();
        }
        Err(spec_err(
            self.set,
            &at,
            &format!("more than {MAX_HOPS} $ref hops (a reference cycle?)"),
        ))
    }

    /// A `parameters` array, references followed.
    fn parameters(&self, list: Option<&'a Value>, at: &str) -> Result<Vec<Param<'a>>, Error> {
        let Some(list) = list else {
            return Ok(Vec::new());
        };
        let Some(items) = list.as_array() else {
            return Err(spec_err(self.set, at, "\"parameters\" must be an array"));
        };
        let mut out = Vec::new();
        for (i, p) in items.iter().enumerate() {
            let (p, p_at) = self.deref(p, &format!("{at}/{i}"))?;
            let Some(obj) = p.as_object() else {
                return Err(spec_err(
                    self.set,
                    &p_at,
                    "a parameter must be a JSON object",
                ));
            };
            let (Some(Value::String(name)), Some(Value::String(place))) =
                (obj.get("name"), obj.get("in"))
            else {
                return Err(spec_err(
                    self.set,
                    &p_at,
                    "a parameter needs a string \"name\" and \"in\"",
                ));
            };
            out.push(Param {
                value: obj,
                at: p_at,
                name,
                place,
            });
        }
        Ok(out)
    }

    fn operation(
        &self,
        path: &str,
        method: &str,
        op: &'a Value,
        at: &str,
        shared: &[Param<'a>],
    ) -> Result<Found, Error> {
        let set = self.set;
        let Some(o) = op.as_object() else {
            return Err(spec_err(set, at, "an operation must be a JSON object"));
        };
        let (name, name_at) = match o.get("operationId") {
            Some(Value::String(id)) => (id.clone(), format!("{at}/operationId")),
            Some(_) => {
                return Err(spec_err(
                    set,
                    &format!("{at}/operationId"),
                    "\"operationId\" must be a string",
                ))
            }
            None => (rewrite_name(method, path), at.to_string()),
        };
        let text = |k: &str| {
            o.get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.trim().is_empty())
        };
        let description = text("description").or(text("summary")).map(str::to_string);

        let own = self.parameters(o.get("parameters"), &format!("{at}/parameters"))?;
        let mut params: Vec<&Param> = Vec::new();
        for p in shared {
            if !own.iter().any(|q| q.name == p.name && q.place == p.place) {
                params.push(p);
            }
        }
        params.extend(own.iter());

        let mut defs = Defs::default();
        let mut props = Map::new();
        let mut required = Vec::new();
        for p in params {
            let Some(s) = self.parameter_schema(p, &mut defs)? else {
                continue;
            };
            if props.contains_key(p.name) {
                return Err(spec_err(
                    set,
                    &p.at,
                    &format!(
                        "two parameters of this operation are named {:?} (in different places); a tool's arguments need distinct names",
                        p.name
                    ),
                ));
            }
            props.insert(p.name.to_string(), s);
            let req = p.place == "path" || p.value.get("required") == Some(&Value::Bool(true));
            if req {
                required.push(Value::String(p.name.to_string()));
            }
        }
        if let Some(body) = o.get("requestBody") {
            let (s, body_at, req) =
                self.request_body(body, &format!("{at}/requestBody"), &mut defs)?;
            if props.contains_key("body") {
                return Err(spec_err(
                    set,
                    &body_at,
                    "the operation has a parameter named \"body\" and a request body (which is the argument \"body\")",
                ));
            }
            props.insert("body".into(), s);
            if req {
                required.push(Value::String("body".into()));
            }
        }
        let mut parameters = Map::new();
        parameters.insert("type".into(), "object".into());
        parameters.insert("properties".into(), Value::Object(props));
        if !required.is_empty() {
            parameters.insert("required".into(), Value::Array(required));
        }
        if !defs.done.is_empty() {
            parameters.insert("$defs".into(), Value::Object(defs.done));
        }
        Ok(Found {
            name,
            name_at,
            entry: at.to_string(),
            description,
            parameters: Value::Object(parameters),
            pointer: at.to_string(),
        })
    }

    /// The argument schema of one parameter (its description copied in), or
    /// `None` for a parameter the client does not pass as an argument
    /// (cookies, the headers OpenAPI says to ignore).
    fn parameter_schema(&self, p: &Param<'a>, defs: &mut Defs) -> Result<Option<Value>, Error> {
        let set = self.set;
        let ignored_header = p.place == "header"
            && ["accept", "content-type", "authorization"]
                .contains(&p.name.to_ascii_lowercase().as_str());
        match p.place {
            "path" | "query" | "header" if !ignored_header => {}
            "path" | "query" | "header" | "cookie" => return Ok(None),
            other => {
                return Err(spec_err(
                    set,
                    &format!("{}/in", p.at),
                    &format!("unknown parameter location {other:?}"),
                ))
            }
        }
        let (schema, schema_at) = match (p.value.get("schema"), p.value.get("content")) {
            (Some(s), _) => (s, format!("{}/schema", p.at)),
            (None, Some(Value::Object(c))) if c.len() == 1 => {
                let (mt, m) = c.iter().next().expect("one media type");
                match m.get("schema") {
                    Some(s) => (s, format!("{}/content/{}/schema", p.at, esc(mt))),
                    None => {
                        return Err(spec_err(
                            set,
                            &format!("{}/content", p.at),
                            "the parameter's media type has no \"schema\"",
                        ))
                    }
                }
            }
            _ => {
                return Err(spec_err(
                    set,
                    &p.at,
                    &format!(
                    "the parameter {:?} has no \"schema\" (nor a \"content\" with one media type)",
                    p.name
                ),
                ))
            }
        };
        let mut s = self.schema(schema, &schema_at, defs)?;
        if let (Value::Object(so), Some(Value::String(d))) = (&mut s, p.value.get("description")) {
            if !so.contains_key("description") && !so.contains_key("$ref") {
                so.insert("description".into(), Value::String(d.clone()));
            }
        }
        Ok(Some(s))
    }

    /// The schema of a request body's JSON media type, the body's pointer
    /// (references followed) and whether the body is required.
    fn request_body(
        &self,
        body: &'a Value,
        at: &str,
        defs: &mut Defs,
    ) -> Result<(Value, String, bool), Error> {
        let (body, body_at) = self.deref(body, at)?;
        let content = body.get("content").and_then(Value::as_object);
        let json = content.and_then(|c| {
            c.iter()
                .find(|(k, _)| k.starts_with("application/json"))
                .or_else(|| {
                    c.iter().find(|(k, _)| {
                        k.split(';')
                            .next()
                            .is_some_and(|m| m.trim().ends_with("+json"))
                    })
                })
        });
        let Some((mt, media)) = json else {
            let types: Vec<&String> = content.map(|c| c.keys().collect()).unwrap_or_default();
            return Err(spec_err(
                self.set,
                &body_at,
                &format!("the request body has no JSON media type (found {types:?})"),
            ));
        };
        let schema_at = format!("{body_at}/content/{}/schema", esc(mt));
        let s = match media.get("schema") {
            Some(s) => self.schema(s, &schema_at, defs)?,
            None => Value::Object(Map::new()),
        };
        let required = body.get("required") == Some(&Value::Bool(true));
        Ok((s, body_at, required))
    }

    /// A schema converted to JSON Schema, with the component schemas it
    /// references collected into `defs` (transitively).
    fn schema(&self, s: &Value, at: &str, defs: &mut Defs) -> Result<Value, Error> {
        let out = self.convert(s, at, defs)?;
        while let Some(name) = defs.queue.pop() {
            let comp_at = format!("/components/schemas/{}", esc(&name));
            let comp = self.root.pointer(&comp_at).ok_or_else(|| {
                spec_err(
                    self.set,
                    at,
                    &format!("the schema #/components/schemas/{name} does not exist"),
                )
            })?;
            let converted = self.convert(comp, &comp_at, defs)?;
            defs.done.insert(name, converted);
        }
        Ok(out)
    }

    fn convert(&self, s: &Value, at: &str, defs: &mut Defs) -> Result<Value, Error> {
        let Value::Object(o) = s else {
            return Ok(s.clone());
        };
        let mut out = Map::new();
        for (k, v) in o {
            let here = format!("{at}/{}", esc(k));
            let nv = match k.as_str() {
                "$ref" => {
                    let Some(r) = v.as_str() else {
                        return Err(spec_err(self.set, &here, "\"$ref\" must be a string"));
                    };
                    let Some(name) = r.strip_prefix("#/components/schemas/") else {
                        return Err(spec_err(
                            self.set,
                            &here,
                            &format!("unsupported schema reference {r:?} (only #/components/schemas/NAME)"),
                        ));
                    };
                    let name = name.replace("~1", "/").replace("~0", "~");
                    if !defs.done.contains_key(&name) && !defs.queue.contains(&name) {
                        defs.done.insert(name.clone(), Value::Null);
                        defs.queue.push(name.clone());
                    }
                    Value::String(format!("#/$defs/{}", esc(&name)))
                }
                "properties" | "patternProperties" | "$defs" | "definitions"
                | "dependentSchemas" => match v {
                    Value::Object(m) => {
                        let mut mm = Map::new();
                        for (pk, pv) in m {
                            mm.insert(
                                pk.clone(),
                                self.convert(pv, &format!("{here}/{}", esc(pk)), defs)?,
                            );
                        }
                        Value::Object(mm)
                    }
                    other => other.clone(),
                },
                "items"
                | "additionalProperties"
                | "not"
                | "contains"
                | "propertyNames"
                | "additionalItems"
                | "if"
                | "then"
                | "else"
                | "unevaluatedProperties"
                | "unevaluatedItems" => match v {
                    Value::Array(vs) => Value::Array(self.convert_all(vs, &here, defs)?),
                    other => self.convert(other, &here, defs)?,
                },
                "allOf" | "anyOf" | "oneOf" | "prefixItems" => match v {
                    Value::Array(vs) => Value::Array(self.convert_all(vs, &here, defs)?),
                    other => other.clone(),
                },
                "nullable" | "example" | "discriminator" | "xml" | "externalDocs" if self.oas30 => {
                    continue
                }
                _ => v.clone(),
            };
            out.insert(k.clone(), nv);
        }
        if self.oas30 {
            if o.get("nullable") == Some(&Value::Bool(true)) {
                match out.get_mut("type") {
                    Some(Value::String(t)) => {
                        let t = t.clone();
                        out.insert("type".into(), serde_json::json!([t, "null"]));
                    }
                    Some(Value::Array(ts)) if !ts.contains(&Value::from("null")) => {
                        ts.push("null".into())
                    }
                    _ => {}
                }
                if let Some(Value::Array(e)) = out.get_mut("enum") {
                    if !e.contains(&Value::Null) {
                        e.push(Value::Null);
                    }
                }
            }
            for (ex, bound) in [
                ("exclusiveMinimum", "minimum"),
                ("exclusiveMaximum", "maximum"),
            ] {
                if let Some(Value::Bool(b)) = out.get(ex).cloned() {
                    out.remove(ex);
                    if b {
                        if let Some(m) = out.remove(bound) {
                            out.insert(ex.into(), m);
                        }
                    }
                }
            }
        }
        Ok(Value::Object(out))
    }

    fn convert_all(&self, vs: &[Value], at: &str, defs: &mut Defs) -> Result<Vec<Value>, Error> {
        vs.iter()
            .enumerate()
            .map(|(i, v)| self.convert(v, &format!("{at}/{i}"), defs))
            .collect()
    }
}

/// Component schemas copied into a tool's `$defs`: done (or reserved with
/// `null` while queued) and still to convert.
#[derive(Default)]
struct Defs {
    done: Map<String, Value>,
    queue: Vec<String>,
}

/// `METHOD PATH` as a tool name: `get_movie_movie_id`.
fn rewrite_name(method: &str, path: &str) -> String {
    let mut out = method.to_ascii_lowercase();
    let mut sep = true;
    for c in path.chars().filter(|c| !matches!(c, '{' | '}')) {
        if c.is_ascii_alphanumeric() {
            if sep {
                out.push('_');
                sep = false;
            }
            out.push(c);
        } else {
            sep = true;
        }
    }
    out
}
