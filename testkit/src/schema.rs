//! Validating arguments against the tools' (converted) JSON Schemas.

use serde_json::Value;

/// One compiled validator per tool of a set.
pub struct ToolValidators {
    tools: Vec<(String, jsonschema::Validator)>,
}

impl ToolValidators {
    /// Builds validators for tools in OpenAI form (bare or wrapped in
    /// `{"type": "function", "function": ...}`). Panics if a schema is
    /// not a valid JSON Schema.
    pub fn new(tools: &[Value]) -> Self {
        Self::try_new(tools).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Like [`ToolValidators::new`], returning the error instead.
    pub fn try_new(tools: &[Value]) -> Result<Self, String> {
        let mut out = Vec::with_capacity(tools.len());
        for t in tools {
            let f = t.get("function").unwrap_or(t);
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("a tool has no name: {t}"))?;
            let params = f
                .get("parameters")
                .cloned()
                .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
            let v = jsonschema::validator_for(&params)
                .map_err(|e| format!("tool {name:?}: invalid JSON Schema: {e}"))?;
            out.push((name.to_string(), v));
        }
        Ok(ToolValidators { tools: out })
    }

    /// Checks that `name` is one of the tools and `args` satisfies its schema.
    pub fn check(&self, name: &str, args: &Value) -> Result<(), String> {
        let Some((_, v)) = self.tools.iter().find(|(n, _)| n == name) else {
            return Err(format!("unknown tool {name:?}"));
        };
        let errors: Vec<String> = v
            .iter_errors(args)
            .take(3)
            .map(|e| format!("{} (at {})", e, e.instance_path))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "arguments of {name:?} fail the schema: {}",
                errors.join("; ")
            ))
        }
    }
}
