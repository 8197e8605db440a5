//! Parsers for the model call formats, each written from the upstream
//! serving parser of that model (vLLM's `vllm/tool_parsers/` or SGLang's
//! `python/sglang/srt/function_call/`, file and commit in each item's
//! comment) and not from the `.tdg` grammars: they read what the upstream
//! parser reads, type XML-style raw values by the tool schema as it does,
//! and turn Python literals and Gemma values into JSON.
//!
//! Each [`FormatFn`] takes a whole decoded output (special tokens as their
//! text) and the tool list, and returns the text before the first call
//! (`content`) and the calls. Where an upstream parser would silently
//! lose something the output says (text between or after the calls, a
//! string value it strips, a name it cuts), these parsers fail with a
//! message naming the upstream behaviour: the grammar should not produce
//! such an output.
//!
//! [`EntryParser`] adds the entry's rule on top: `auto` (any text, zero or
//! more calls), `required` (at least one call, only whitespace before it),
//! `one` (exactly one), and the `think-` variants, which start inside the
//! reasoning block and first skip past its end marker (the upstream
//! reasoning parsers split there).

use serde_json::{Map, Value};

use super::pylit::PyReader;
use super::typing::{
    dsml_value, glm_value, minimax_value, py_float, py_int, qwen3_coder_value, tool_properties,
};
use super::Calls;

/// What a format parser reads from an output.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The text before the first call (all of it when there is none).
    pub content: String,
    /// The calls: name and arguments (a JSON object).
    pub calls: Calls,
}

impl Parsed {
    fn text(content: &str) -> Self {
        Parsed {
            content: content.to_string(),
            calls: Vec::new(),
        }
    }
}

/// A format parser: decoded output and OpenAI-form tools to calls.
pub type FormatFn = fn(&str, &[Value]) -> Result<Parsed, String>;

/// The start of `s`, for messages.
fn preview(s: &str) -> String {
    let p: String = s.chars().take(60).collect();
    if p.len() < s.len() {
        format!("{p}...")
    } else {
        p
    }
}

/// The arguments as a JSON object (what clients `json.loads`).
fn args_object(text: &str, what: &str) -> Result<Value, String> {
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(other) => Err(format!("{what}: the arguments are not an object: {other}")),
        Err(e) => Err(format!(
            "{what}: arguments {:?} are not JSON: {e}",
            preview(text)
        )),
    }
}

/// Fails unless `rest` is whitespace: text the upstream parser drops.
fn only_ws(rest: &str, upstream: &str, place: &str) -> Result<(), String> {
    if rest.trim().is_empty() {
        Ok(())
    } else {
        Err(format!(
            "text {place} ({upstream} drops it): {:?}",
            preview(rest.trim())
        ))
    }
}

/// Fails when the upstream conversion changed a string value's text.
fn check_string_kept(raw: &str, v: &Value, upstream: &str, key: &str) -> Result<(), String> {
    match v {
        Value::String(s) if s != raw => Err(format!(
            "{upstream} changes the string value of {key:?}: {raw:?} becomes {s:?}"
        )),
        _ => Ok(()),
    }
}

// ---------------------------------------------------------------------------
// Hermes JSON in <tool_call> tags: qwen3, and the new entries of hermes.
// ---------------------------------------------------------------------------

/// vLLM `Hermes2ProToolParser.extract_tool_calls`
/// (vllm/tool_parsers/hermes_tool_parser.py @ becf329d2cb4494516f3672d291d4d7c06a57563;
/// Qwen3 is served with `--tool-call-parser hermes`): every
/// `<tool_call>(.*?)</tool_call>` is `json.loads`ed and must have `name`
/// and `arguments`; the content is the text before the first `<tool_call>`.
pub fn hermes_json(text: &str, _tools: &[Value]) -> Result<Parsed, String> {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let Some(first) = text.find(OPEN) else {
        return Ok(Parsed::text(text));
    };
    let mut out = Parsed::text(&text[..first]);
    let mut rest = &text[first..];
    while let Some(r) = rest.strip_prefix(OPEN) {
        let end = r.find(CLOSE).ok_or("a <tool_call> without </tool_call>")?;
        let what = format!("call #{}", out.calls.len() + 1);
        let v: Value = serde_json::from_str(r[..end].trim())
            .map_err(|e| format!("{what}: not JSON: {e}: {:?}", preview(&r[..end])))?;
        let name = v
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{what}: no \"name\" string"))?;
        let args = v
            .get("arguments")
            .ok_or_else(|| format!("{what}: no \"arguments\""))?;
        if !args.is_object() {
            return Err(format!("{what}: the arguments are not an object"));
        }
        out.calls.push((name.to_string(), args.clone()));
        rest = &r[end + CLOSE.len()..];
        let t = rest.trim_start();
        if t.starts_with(OPEN) {
            only_ws(
                &rest[..rest.len() - t.len()],
                "vLLM's hermes parser",
                "between calls",
            )?;
            rest = t;
        }
    }
    only_ws(rest, "vLLM's hermes parser", "after the calls")?;
    Ok(out)
}

// ---------------------------------------------------------------------------
// Qwen3-Coder XML.
// ---------------------------------------------------------------------------

/// Qwen3-Coder's tags.
mod qc {
    pub const CALL: &str = "<tool_call>";
    pub const CALL_END: &str = "</tool_call>";
    pub const FUNC: &str = "<function=";
    pub const FUNC_END: &str = "</function>";
    pub const PARAM: &str = "<parameter=";
    pub const PARAM_END: &str = "</parameter>";
}

/// `_next_structural_param_start`: the next `<parameter=` at `start` or
/// later that begins the text or a line (and names a known parameter
/// when `valid` is given).
fn qc_structural_param(text: &str, start: usize, valid: Option<&[String]>) -> Option<usize> {
    let mut at = start;
    while let Some(i) = text[at..].find(qc::PARAM) {
        let i = at + i;
        if i == 0 || text.as_bytes()[i - 1] == b'\n' {
            match valid {
                None => return Some(i),
                Some(names) => {
                    let n0 = i + qc::PARAM.len();
                    if let Some(e) = text[n0..].find('>') {
                        if names.iter().any(|n| *n == text[n0..n0 + e]) {
                            return Some(i);
                        }
                    }
                }
            }
        }
        at = i + 1;
    }
    None
}

/// `_find_true_param_end`: the `</parameter>` that closes a value, with
/// nested structural opens counted and the look-ahead rule.
fn qc_param_end(v: &str, valid: Option<&[String]>) -> Option<usize> {
    let mut depth = 0usize;
    let mut pos = 0usize;
    while pos < v.len() {
        let close = pos + v[pos..].find(qc::PARAM_END)?;
        match qc_structural_param(v, pos, None) {
            Some(open) if open < close => {
                depth += 1;
                pos = open + qc::PARAM.len();
                continue;
            }
            _ => {}
        }
        if depth == 0 {
            let after = v[close + qc::PARAM_END.len()..].trim_start();
            let next_param = after.strip_prefix(qc::PARAM).is_some_and(|a| match valid {
                None => true,
                Some(names) => a
                    .find('>')
                    .is_some_and(|e| names.iter().any(|n| *n == a[..e])),
            });
            if after.is_empty()
                || next_param
                || after.starts_with(qc::FUNC_END)
                || after.starts_with(qc::CALL_END)
            {
                return Some(close);
            }
        } else {
            depth -= 1;
        }
        pos = close + qc::PARAM_END.len();
    }
    None
}

/// vLLM `Qwen3CoderToolParser.extract_tool_calls`
/// (vllm/tool_parsers/qwen3coder_tool_parser.py @ 00d0a333ba9b8e40eb35fc0b54b4ae96114f30b3):
/// `<tool_call>` blocks closed by a structural `</tool_call>` (followed
/// by another `<tool_call>` or the end); in each, `<function=NAME>` and
/// structural `<parameter=KEY>` blocks (at a line start), a value losing
/// one leading and one trailing `\n`, typed by `_convert_param_value`.
pub fn qwen3_coder(text: &str, tools: &[Value]) -> Result<Parsed, String> {
    if !text.contains(qc::FUNC) {
        return Ok(Parsed::text(text));
    }
    let first = text
        .find(qc::CALL)
        .ok_or("<function= without <tool_call> (vLLM falls back to reading the whole text)")?;
    let mut out = Parsed::text(&text[..first]);
    let mut rest = &text[first..];
    while let Some(after_open) = rest.strip_prefix(qc::CALL) {
        let what = format!("call #{}", out.calls.len() + 1);
        // The structural </tool_call>.
        let mut search = 0;
        let end = loop {
            let i = search
                + after_open[search..]
                    .find(qc::CALL_END)
                    .ok_or_else(|| format!("{what}: no structural </tool_call>"))?;
            let after = after_open[i + qc::CALL_END.len()..].trim_start();
            if after.is_empty() || after.starts_with(qc::CALL) {
                break i;
            }
            search = i + qc::CALL_END.len();
        };
        let block = &after_open[..end];
        let f = block
            .find(qc::FUNC)
            .ok_or_else(|| format!("{what}: no <function="))?;
        only_ws(
            &block[..f],
            "vLLM's qwen3_coder parser",
            "before <function=",
        )?;
        let body = &block[f + qc::FUNC.len()..];
        let name_end = body
            .find('>')
            .ok_or_else(|| format!("{what}: <function= without '>'"))?;
        let name = &body[..name_end];
        if name.is_empty() || name.chars().any(|c| "{}<>\"' \t\n\r".contains(c)) {
            return Err(format!("{what}: vLLM refuses the function name {name:?}"));
        }
        let props = tool_properties(tools, name);
        let valid: Option<Vec<String>> = props
            .filter(|p| !p.is_empty())
            .map(|p| p.keys().cloned().collect());
        let params = &body[name_end + 1..];
        let mut args = Map::new();
        let mut pos = 0;
        loop {
            let ws = params[pos..].len() - params[pos..].trim_start().len();
            let here = pos + ws;
            if params[here..].starts_with(qc::FUNC_END) {
                only_ws(
                    &params[here + qc::FUNC_END.len()..],
                    "vLLM's qwen3_coder parser",
                    "after </function>",
                )?;
                break;
            }
            if !params[here..].starts_with(qc::PARAM) {
                return Err(format!(
                    "{what}: expected <parameter= or </function>, found {:?}",
                    preview(&params[here..])
                ));
            }
            if qc_structural_param(params, here, None) != Some(here) {
                return Err(format!(
                    "{what}: <parameter= not at a line start (vLLM skips it): {:?}",
                    preview(&params[here..])
                ));
            }
            let n0 = here + qc::PARAM.len();
            let ne = n0
                + params[n0..]
                    .find('>')
                    .ok_or_else(|| format!("{what}: <parameter= without '>'"))?;
            let key = &params[n0..ne];
            let value_text = &params[ne + 1..];
            let pe = qc_param_end(value_text, valid.as_deref())
                .ok_or_else(|| format!("{what}: no structural </parameter> for {key:?}"))?;
            let mut value = &value_text[..pe];
            value = value.strip_prefix('\n').unwrap_or(value);
            value = value.strip_suffix('\n').unwrap_or(value);
            args.insert(key.to_string(), qwen3_coder_value(value, key, props));
            pos = ne + 1 + pe + qc::PARAM_END.len();
        }
        out.calls.push((name.to_string(), Value::Object(args)));
        rest = &after_open[end + qc::CALL_END.len()..];
        let t = rest.trim_start();
        if t.starts_with(qc::CALL) {
            rest = t;
        }
    }
    only_ws(rest, "vLLM's qwen3_coder parser", "after the calls")?;
    Ok(out)
}

// ---------------------------------------------------------------------------
// GLM-4.5 / GLM-4.7.
// ---------------------------------------------------------------------------

/// GLM's tool calls: `<tool_call>NAME` then `<arg_key>K</arg_key>`
/// `<arg_value>V</arg_value>` pairs, `</tool_call>`. `newline_name`: GLM-4.5's
/// `<tool_call>([^\n]*)\n(.*)</tool_call>` (the name runs to a newline);
/// otherwise GLM-4.7's `<tool_call>(.*?)(<arg_key>.*?)?</tool_call>`.
fn glm(text: &str, tools: &[Value], newline_name: bool) -> Result<Parsed, String> {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let upstream = if newline_name {
        "vLLM's glm45 parser"
    } else {
        "vLLM's glm47 parser"
    };
    let Some(first) = text.find(OPEN) else {
        return Ok(Parsed::text(text));
    };
    let mut out = Parsed::text(&text[..first]);
    let mut rest = &text[first..];
    while let Some(r) = rest.strip_prefix(OPEN) {
        let what = format!("call #{}", out.calls.len() + 1);
        let end = r
            .find(CLOSE)
            .ok_or_else(|| format!("{what}: no </tool_call>"))?;
        let block = &r[..end];
        let (name, mut pairs) = if newline_name {
            let nl = block.find('\n').ok_or_else(|| {
                format!("{what}: no newline after the name ({upstream} finds no call)")
            })?;
            (&block[..nl], &block[nl + 1..])
        } else {
            let k = block.find("<arg_key>").unwrap_or(block.len());
            (&block[..k], &block[k..])
        };
        let props = tool_properties(tools, name);
        let mut args = Map::new();
        loop {
            let t = pairs.trim_start();
            if t.is_empty() {
                break;
            }
            let Some(k) = t.strip_prefix("<arg_key>") else {
                return Err(format!(
                    "{what}: text between the arguments ({upstream} drops it): {:?}",
                    preview(t)
                ));
            };
            let ke = k
                .find("</arg_key>")
                .ok_or_else(|| format!("{what}: no </arg_key>"))?;
            let key = k[..ke].trim();
            let after = &k[ke + "</arg_key>".len()..];
            let v = after
                .trim_start()
                .strip_prefix("<arg_value>")
                .ok_or_else(|| format!("{what}: no <arg_value> after the key {key:?}"))?;
            let ve = v
                .find("</arg_value>")
                .ok_or_else(|| format!("{what}: no </arg_value>"))?;
            let raw = &v[..ve];
            let value = glm_value(raw, key, props);
            check_string_kept(raw, &value, upstream, key)?;
            args.insert(key.to_string(), value);
            pairs = &v[ve + "</arg_value>".len()..];
        }
        out.calls.push((name.to_string(), Value::Object(args)));
        rest = &r[end + CLOSE.len()..];
        let t = rest.trim_start();
        if t.starts_with(OPEN) {
            only_ws(&rest[..rest.len() - t.len()], upstream, "between calls")?;
            rest = t;
        }
    }
    only_ws(rest, upstream, "after the calls")?;
    Ok(out)
}

/// vLLM `Glm4MoeModelToolParser` (vllm/tool_parsers/glm4_moe_tool_parser.py
/// @ 5a314e9e8178996f4a9b12b801ef532fe3462f86).
pub fn glm45(text: &str, tools: &[Value]) -> Result<Parsed, String> {
    glm(text, tools, true)
}

/// vLLM `Glm47MoeModelToolParser` (vllm/tool_parsers/glm47_moe_tool_parser.py
/// @ b91ee1b47c8e8462ada5e5b8d18244bc96a0ebbc).
pub fn glm47(text: &str, tools: &[Value]) -> Result<Parsed, String> {
    glm(text, tools, false)
}

// ---------------------------------------------------------------------------
// DeepSeek.
// ---------------------------------------------------------------------------

const DS_CALLS: &str = "<｜tool▁calls▁begin｜>";
const DS_CALLS_END: &str = "<｜tool▁calls▁end｜>";
const DS_CALL: &str = "<｜tool▁call▁begin｜>";
const DS_CALL_END: &str = "<｜tool▁call▁end｜>";
const DS_SEP: &str = "<｜tool▁sep｜>";

/// DeepSeek's calls section; `call` reads one call's text between
/// `<｜tool▁call▁begin｜>` and `<｜tool▁call▁end｜>`.
fn deepseek(
    text: &str,
    upstream: &str,
    call: fn(&str) -> Result<(String, Value), String>,
) -> Result<Parsed, String> {
    let Some(first) = text.find(DS_CALLS) else {
        return Ok(Parsed::text(text));
    };
    let mut out = Parsed::text(&text[..first]);
    let mut rest = &text[first + DS_CALLS.len()..];
    loop {
        let t = rest.trim_start();
        let Some(r) = t.strip_prefix(DS_CALL) else {
            break;
        };
        only_ws(&rest[..rest.len() - t.len()], upstream, "between calls")?;
        let end = r
            .find(DS_CALL_END)
            .ok_or("a call without <｜tool▁call▁end｜>")?;
        let c = call(&r[..end]).map_err(|e| format!("call #{}: {e}", out.calls.len() + 1))?;
        out.calls.push(c);
        rest = &r[end + DS_CALL_END.len()..];
    }
    let t = rest.trim_start();
    let after = t.strip_prefix(DS_CALLS_END).unwrap_or(t);
    only_ws(after, upstream, "after the calls")?;
    if out.calls.is_empty() {
        return Err(format!("{DS_CALLS} without a call"));
    }
    Ok(out)
}

/// vLLM `DeepSeekV3ToolParser` (vllm/tool_parsers/deepseekv3_tool_parser.py @
/// 80445b45067e96b21483ac0f12efe67fa6899270; DeepSeek-R1 uses it too): the
/// regex `TYPE<｜tool▁sep｜>NAME\n```json\nARGS\n```` without DOTALL, so no
/// part may hold a line break, and TYPE must be `function` (the
/// `ToolCall.type` literal).
fn deepseek_v3_call(c: &str) -> Result<(String, Value), String> {
    let (ty, rest) = c.split_once(DS_SEP).ok_or("no <｜tool▁sep｜>")?;
    if ty != "function" {
        return Err(format!("the call type is {ty:?}, not \"function\""));
    }
    let (name, rest) = rest
        .split_once('\n')
        .ok_or("no line break after the name")?;
    let args = rest
        .strip_prefix("```json\n")
        .and_then(|a| a.strip_suffix("\n```"))
        .ok_or_else(|| {
            format!(
                "the arguments are not in a ```json block: {:?}",
                preview(rest)
            )
        })?;
    if args.contains('\n') {
        return Err(format!(
            "a line break inside the arguments (vLLM's deepseek_v3 regex has no DOTALL and finds no call): {:?}",
            preview(args)
        ));
    }
    Ok((name.to_string(), args_object(args, name)?))
}

/// DeepSeek-V3 / R1 (see [`deepseek_v3_call`]).
pub fn deepseek_v3(text: &str, _tools: &[Value]) -> Result<Parsed, String> {
    deepseek(text, "vLLM's deepseek_v3 parser", deepseek_v3_call)
}

/// vLLM `DeepSeekV31ToolParser` (vllm/tool_parsers/deepseekv31_tool_parser.py @
/// e2fc92ec91d754266a76b9369da48f6693300c2e): `NAME<｜tool▁sep｜>ARGS`,
/// lazy and without DOTALL (no line break in either).
fn deepseek_v31_call(c: &str) -> Result<(String, Value), String> {
    let (name, args) = c.split_once(DS_SEP).ok_or("no <｜tool▁sep｜>")?;
    if name.contains('\n') || args.contains('\n') {
        return Err(format!(
            "a line break in the call (vLLM's deepseek_v31 regex has no DOTALL and finds no call): {:?}",
            preview(c)
        ));
    }
    Ok((name.to_string(), args_object(args, name)?))
}

/// DeepSeek-V3.1 (see [`deepseek_v31_call`]).
pub fn deepseek_v31(text: &str, _tools: &[Value]) -> Result<Parsed, String> {
    deepseek(text, "vLLM's deepseek_v31 parser", deepseek_v31_call)
}

/// DeepSeek-V3.2 DSML (SGLang `DeepSeekV32Detector.detect_and_parse`,
/// python/sglang/srt/function_call/deepseekv32_detector.py @
/// d51fbf8ccf562f0b7a6516ae230ebb2fae3fffb4; vLLM's deepseekv32_tool_parser.py
/// reads the same tags): the first `<｜DSML｜function_calls>` block, its
/// `<｜DSML｜invoke name="N">` blocks, their
/// `<｜DSML｜parameter name="K" string="true|false">V</｜DSML｜parameter>`.
pub fn deepseek_v32(text: &str, _tools: &[Value]) -> Result<Parsed, String> {
    const UP: &str = "SGLang's deepseekv32 detector";
    const BLOCK: &str = "<｜DSML｜function_calls>";
    const BLOCK_END: &str = "</｜DSML｜function_calls>";
    const INVOKE: &str = "<｜DSML｜invoke";
    const INVOKE_END: &str = "</｜DSML｜invoke>";
    const PARAM: &str = "<｜DSML｜parameter";
    const PARAM_END: &str = "</｜DSML｜parameter>";
    let Some(first) = text.find(BLOCK) else {
        return Ok(Parsed::text(text));
    };
    let mut out = Parsed::text(&text[..first]);
    let r = &text[first + BLOCK.len()..];
    let end = r.find(BLOCK_END).ok_or("no </｜DSML｜function_calls>")?;
    only_ws(&r[end + BLOCK_END.len()..], UP, "after the calls block")?;
    let mut body = &r[..end];
    // `\s+name="([^"]+)"` and the like.
    fn attr<'a>(s: &'a str, name: &str) -> Option<(&'a str, &'a str)> {
        let t = s.trim_start();
        if t.len() == s.len() {
            return None;
        }
        let v = t.strip_prefix(name)?.strip_prefix("=\"")?;
        let q = v.find('"')?;
        if q == 0 {
            return None;
        }
        Some((&v[..q], &v[q + 1..]))
    }
    loop {
        let t = body.trim_start();
        if t.is_empty() {
            break;
        }
        let what = format!("call #{}", out.calls.len() + 1);
        let inv = t
            .strip_prefix(INVOKE)
            .ok_or_else(|| format!("text between the invokes ({UP} drops it): {:?}", preview(t)))?;
        let (name, inv) = attr(inv, "name").ok_or_else(|| format!("{what}: bad invoke header"))?;
        let inv = inv
            .trim_start()
            .strip_prefix('>')
            .ok_or_else(|| format!("{what}: bad invoke header"))?;
        let ie = inv
            .find(INVOKE_END)
            .ok_or_else(|| format!("{what}: no </｜DSML｜invoke>"))?;
        let mut params = &inv[..ie];
        let mut args = Map::new();
        loop {
            let t = params.trim_start();
            if t.is_empty() {
                break;
            }
            let p = t.strip_prefix(PARAM).ok_or_else(|| {
                format!(
                    "{what}: text between the parameters ({UP} drops it): {:?}",
                    preview(t)
                )
            })?;
            let (key, p) =
                attr(p, "name").ok_or_else(|| format!("{what}: bad parameter header"))?;
            let (s, p) = attr(p, "string").ok_or_else(|| format!("{what}: no string=\"...\""))?;
            let p = p
                .trim_start()
                .strip_prefix('>')
                .ok_or_else(|| format!("{what}: bad parameter header"))?;
            let pe = p
                .find(PARAM_END)
                .ok_or_else(|| format!("{what}: no </｜DSML｜parameter>"))?;
            let raw = &p[..pe];
            let value = dsml_value(raw, s == "true");
            if s == "true" {
                check_string_kept(raw, &value, UP, key)?;
            }
            args.insert(key.to_string(), value);
            params = &p[pe + PARAM_END.len()..];
        }
        out.calls.push((name.to_string(), Value::Object(args)));
        body = &inv[ie + INVOKE_END.len()..];
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Kimi K2.
// ---------------------------------------------------------------------------

/// vLLM `KimiK2ToolParser.extract_tool_calls`
/// (vllm/tool_parsers/kimi_k2_tool_parser.py @ c853e15405fb9f281256a5ce916aa24e8962cab6):
/// in the section `<|tool_calls_section_begin|>`...`<|tool_calls_section_end|>`,
/// each `<|tool_call_begin|>ID<|tool_call_argument_begin|>ARGS<|tool_call_end|>`
/// with `ID` = `[^<]+:\d+` (whitespace around allowed); the name is
/// `ID.split(":")[0].split(".")[-1]`. Kimi's chat template writes
/// `functions.NAME:IDX`, so a tool name with a dot loses its prefix there:
/// that is an error here.
pub fn kimi_k2(text: &str, _tools: &[Value]) -> Result<Parsed, String> {
    const UP: &str = "vLLM's kimi_k2 parser";
    const SEC: &str = "<|tool_calls_section_begin|>";
    const SEC_END: &str = "<|tool_calls_section_end|>";
    const CALL: &str = "<|tool_call_begin|>";
    const ARG: &str = "<|tool_call_argument_begin|>";
    const END: &str = "<|tool_call_end|>";
    let Some(first) = text.find(SEC) else {
        return Ok(Parsed::text(text));
    };
    let mut out = Parsed::text(&text[..first]);
    let mut rest = &text[first + SEC.len()..];
    loop {
        let t = rest.trim_start();
        let Some(r) = t.strip_prefix(CALL) else { break };
        only_ws(&rest[..rest.len() - t.len()], UP, "between calls")?;
        let what = format!("call #{}", out.calls.len() + 1);
        let a = r.find(ARG).ok_or_else(|| format!("{what}: no {ARG}"))?;
        let id = r[..a].trim();
        let (head, _index) = id
            .rsplit_once(':')
            .filter(|(h, i)| {
                !h.is_empty() && !i.is_empty() && i.bytes().all(|c| c.is_ascii_digit())
            })
            .ok_or_else(|| format!("{what}: the call id {id:?} is not NAME:INDEX"))?;
        if id.contains('<') {
            return Err(format!("{what}: '<' in the call id {id:?}"));
        }
        let template_name = head.strip_prefix("functions.").unwrap_or(head);
        let vllm_name = head
            .split(':')
            .next()
            .unwrap_or("")
            .rsplit('.')
            .next()
            .unwrap_or("");
        if vllm_name != template_name {
            return Err(format!(
                "{what}: {UP} reads the tool name of id {id:?} as {vllm_name:?}, not {template_name:?}"
            ));
        }
        let args_and_rest = &r[a + ARG.len()..];
        let e = args_and_rest
            .find(END)
            .ok_or_else(|| format!("{what}: no {END}"))?;
        let args = &args_and_rest[..e];
        if args.contains(CALL) {
            return Err(format!("{what}: {CALL} inside the arguments"));
        }
        out.calls
            .push((vllm_name.to_string(), args_object(args, &what)?));
        rest = &args_and_rest[e + END.len()..];
    }
    let t = rest.trim_start();
    let after = t.strip_prefix(SEC_END).unwrap_or(t);
    only_ws(after, UP, "after the calls section")?;
    if out.calls.is_empty() {
        return Err(format!("{SEC} without a call"));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// MiniMax-M2.
// ---------------------------------------------------------------------------

/// vLLM `MinimaxM2ToolParser` (vllm/tool_parsers/minimax_m2_tool_parser.py @
/// 9412856add437f03009a0804f61f3bed6731ddeb): `<minimax:tool_call>` blocks
/// of `<invoke name=N>` blocks of `<parameter name=K>V</parameter>`; names
/// stripped of whitespace and one pair of quotes; a value `.strip()`ped,
/// then typed by [`minimax_value`].
pub fn minimax_m2(text: &str, tools: &[Value]) -> Result<Parsed, String> {
    const UP: &str = "vLLM's minimax_m2 parser";
    const OPEN: &str = "<minimax:tool_call>";
    const CLOSE: &str = "</minimax:tool_call>";
    fn extract_name(s: &str) -> &str {
        let t = s.trim();
        if t.len() >= 2
            && ((t.starts_with('"') && t.ends_with('"'))
                || (t.starts_with('\'') && t.ends_with('\'')))
        {
            &t[1..t.len() - 1]
        } else {
            t
        }
    }
    let Some(first) = text.find(OPEN) else {
        return Ok(Parsed::text(text));
    };
    let mut out = Parsed::text(&text[..first]);
    let mut rest = &text[first..];
    while let Some(r) = rest.strip_prefix(OPEN) {
        let end = r.find(CLOSE).ok_or("no </minimax:tool_call>")?;
        let mut block = &r[..end];
        loop {
            let t = block.trim_start();
            if t.is_empty() {
                break;
            }
            let what = format!("call #{}", out.calls.len() + 1);
            let inv = t.strip_prefix("<invoke name=").ok_or_else(|| {
                format!("text between the invokes ({UP} drops it): {:?}", preview(t))
            })?;
            let ie = inv
                .find("</invoke>")
                .ok_or_else(|| format!("{what}: no </invoke>"))?;
            let invoke = &inv[..ie];
            let gt = invoke
                .find('>')
                .ok_or_else(|| format!("{what}: no '>' after the name"))?;
            let name = extract_name(&invoke[..gt]);
            let props = tool_properties(tools, name);
            let mut params = &invoke[gt + 1..];
            let mut args = Map::new();
            loop {
                let t = params.trim_start();
                if t.is_empty() {
                    break;
                }
                let p = t.strip_prefix("<parameter name=").ok_or_else(|| {
                    format!(
                        "{what}: text between the parameters ({UP} drops it): {:?}",
                        preview(t)
                    )
                })?;
                let pe = p
                    .find("</parameter>")
                    .ok_or_else(|| format!("{what}: no </parameter>"))?;
                let whole = &p[..pe];
                let gt = whole
                    .find('>')
                    .ok_or_else(|| format!("{what}: no '>' after a parameter name"))?;
                let key = extract_name(&whole[..gt]);
                let raw = &whole[gt + 1..];
                let mut v = raw.trim();
                v = v.strip_prefix('\n').unwrap_or(v);
                v = v.strip_suffix('\n').unwrap_or(v);
                let value = minimax_value(v, key, props);
                check_string_kept(raw, &value, UP, key)?;
                args.insert(key.to_string(), value);
                params = &p[pe + "</parameter>".len()..];
            }
            out.calls.push((name.to_string(), Value::Object(args)));
            block = &inv[ie + "</invoke>".len()..];
        }
        rest = &r[end + CLOSE.len()..];
        let t = rest.trim_start();
        if t.starts_with(OPEN) {
            rest = t;
        }
    }
    only_ws(rest, UP, "after the calls")?;
    if out.calls.is_empty() {
        return Err(format!("{OPEN} without a call"));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// gpt-oss (Harmony).
// ---------------------------------------------------------------------------

/// Harmony messages as the openai-harmony `StreamableParser` reads the
/// completion that follows `<|start|>assistant` (vLLM
/// `OpenAIToolParser`, vllm/tool_parsers/openai_tool_parser.py @
/// 2050c2115da88a06d1366c4e4f2e964a5fdeff69, takes each message whose
/// recipient starts with `functions.` as a call of the rest of the
/// recipient, its text as the arguments; the `final` channel's text is the
/// content): `<|channel|>CHANNEL[ to=RECIPIENT][ <|constrain|>json]<|message|>TEXT`
/// ended by `<|end|>` (then `<|start|>assistant` and the next header),
/// `<|call|>` or `<|return|>` (or the end, where those are EOS). The
/// recipient may also stand before `<|channel|>`. `analysis` messages are
/// reasoning.
pub fn gpt_oss(text: &str, _tools: &[Value]) -> Result<Parsed, String> {
    const MSG: &str = "<|message|>";
    const START: &str = "<|start|>assistant";
    let mut out = Parsed::text("");
    let mut rest = text.strip_prefix(START).unwrap_or(text);
    let mut seen_call = false;
    while !rest.is_empty() {
        let what = format!("message at {:?}", preview(rest));
        let m = rest
            .find(MSG)
            .ok_or_else(|| format!("{what}: no <|message|>"))?;
        let header = &rest[..m];
        let ch = header
            .find("<|channel|>")
            .ok_or_else(|| format!("{what}: no <|channel|> in the header"))?;
        let after_ch = &header[ch + "<|channel|>".len()..];
        let channel: String = after_ch
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != '<')
            .collect();
        let recipient = header
            .split(|c: char| c.is_whitespace() || c == '<' || c == '>')
            .find_map(|w| w.strip_prefix("to="))
            .map(str::to_string);
        let body = &rest[m + MSG.len()..];
        let (end, term) = ["<|end|>", "<|call|>", "<|return|>"]
            .iter()
            .filter_map(|t| body.find(t).map(|i| (i, *t)))
            .min()
            .unwrap_or((body.len(), ""));
        let content = &body[..end];
        rest = &body[end + term.len()..];
        match (recipient.as_deref(), channel.as_str()) {
            (Some(r), _) => {
                let name = r
                    .strip_prefix("functions.")
                    .ok_or_else(|| format!("{what}: the recipient {r:?} is not a function"))?;
                if term == "<|end|>" || term == "<|return|>" {
                    return Err(format!("{what}: a call ended by {term}, not <|call|>"));
                }
                out.calls
                    .push((name.to_string(), args_object(content, name)?));
                seen_call = true;
            }
            (None, "analysis") => {}
            (None, "final" | "commentary") => {
                if seen_call {
                    return Err(format!("{what}: text after a call"));
                }
                out.content.push_str(content);
            }
            (None, other) => return Err(format!("{what}: unknown channel {other:?}")),
        }
        if term == "<|return|>" && !rest.is_empty() {
            return Err(format!("text after <|return|>: {:?}", preview(rest)));
        }
        if !rest.is_empty() {
            rest = rest.strip_prefix(START).ok_or_else(|| {
                format!(
                    "after {term}: expected <|start|>assistant, found {:?}",
                    preview(rest)
                )
            })?;
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Llama 3.x JSON, Llama pythonic.
// ---------------------------------------------------------------------------

/// vLLM `Llama3JsonToolParser.extract_tool_calls`
/// (vllm/tool_parsers/llama_tool_parser.py @ 13e48c2bd449aafc4b60d0783d30e072f3201805):
/// only an output that starts with `<|python_tag|>` or `{` holds calls:
/// JSON objects read with `raw_decode` one after another, `"; "` between
/// them, each with `name` and `arguments` or `parameters`.
pub fn llama3_json(text: &str, _tools: &[Value]) -> Result<Parsed, String> {
    const TAG: &str = "<|python_tag|>";
    let body = match text.strip_prefix(TAG) {
        Some(b) => b,
        None if text.starts_with('{') => text,
        None => {
            if text.contains(TAG) || text.contains("{\"name\"") {
                return Err(format!(
                    "a call after text (vLLM's llama3_json parser reads only outputs that start with {TAG} or '{{'): {:?}",
                    preview(text)
                ));
            }
            return Ok(Parsed::text(text));
        }
    };
    if text.starts_with(TAG) && !body.starts_with('{') {
        return Err(format!(
            "text after <|python_tag|> that is not a call (vLLM's llama3_json parser fails on it): {:?}",
            preview(body)
        ));
    }
    let mut out = Parsed::text("");
    let mut rest = body;
    loop {
        let what = format!("call #{}", out.calls.len() + 1);
        let mut de = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        let v = match de.next() {
            Some(Ok(v)) => v,
            Some(Err(e)) => return Err(format!("{what}: not JSON: {e}: {:?}", preview(rest))),
            None => return Err(format!("{what}: no JSON object")),
        };
        if rest.starts_with(char::is_whitespace) {
            return Err(format!(
                "{what}: whitespace before the object (raw_decode refuses it)"
            ));
        }
        let n = de.byte_offset();
        let name = v
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{what}: no \"name\" string"))?;
        let args = v
            .get("arguments")
            .or_else(|| v.get("parameters"))
            .ok_or_else(|| format!("{what}: neither \"arguments\" nor \"parameters\""))?;
        if !args.is_object() {
            return Err(format!("{what}: the arguments are not an object"));
        }
        out.calls.push((name.to_string(), args.clone()));
        rest = &rest[n..];
        if rest.is_empty() {
            break;
        }
        rest = rest.strip_prefix("; ").ok_or_else(|| {
            format!(
                "after {what}: expected \"; \" or the end, found {:?}",
                preview(rest)
            )
        })?;
    }
    Ok(out)
}

/// The pythonic list `[f(a=1, b='x'), g()]` (SGLang `PythonicDetector`,
/// python/sglang/srt/function_call/pythonic_detector.py, whose
/// `_get_parameter_value` reads constants, dicts, lists, `True`/`False`/`None`
/// and negative numbers, and whose `_get_function_name` reads dotted
/// names; vLLM's pythonic_tool_parser.py @
/// 0047fb9dad17a566f41008c80e57f7eeb7aa5b81 refuses both a negative number
/// (`ast.UnaryOp`) and a dotted name): only an output that is exactly such
/// a list (surrounding whitespace aside) holds calls; keyword arguments only.
pub fn pythonic(text: &str, _tools: &[Value]) -> Result<Parsed, String> {
    // Llama 4 wraps the list in <|python_start|>...<|python_end|>, which
    // vLLM's llama4_pythonic parser (vllm/tool_parsers/llama4_pythonic_tool_parser.py
    // @ e2fc92ec91d754266a76b9369da48f6693300c2e) strips first.
    // vLLM matches its regex at the start of the output: text there,
    // even whitespace, makes the output content.
    let mut t = text.trim_end();
    if let Some(inner) = t.strip_prefix("<|python_start|>") {
        t = inner
            .strip_suffix("<|python_end|>")
            .ok_or("<|python_start|> without <|python_end|> at the end")?
            .trim_end();
    }
    if !t.starts_with('[') {
        if t.contains("<|python_start|>") {
            return Err(format!("<|python_start|> after text: {:?}", preview(t)));
        }
        return Ok(Parsed::text(text));
    }
    let mut r = PyReader::new(t);
    r.eat("[");
    let mut out = Parsed::text("");
    loop {
        r.skip_ws();
        if r.eat("]") {
            break;
        }
        let what = format!("call #{}", out.calls.len() + 1);
        let mut name = r
            .ident()
            .ok_or_else(|| {
                format!(
                    "{what}: expected a function name at {:?}",
                    preview(r.rest())
                )
            })?
            .to_string();
        while r.rest().starts_with('.') {
            r.eat(".");
            let part = r
                .ident()
                .ok_or_else(|| format!("{what}: bad dotted name"))?;
            name.push('.');
            name.push_str(part);
        }
        r.skip_ws();
        if !r.eat("(") {
            return Err(format!("{what}: expected '(' after {name:?}"));
        }
        let mut args = Map::new();
        loop {
            r.skip_ws();
            if r.eat(")") {
                break;
            }
            let key = r
                .ident()
                .ok_or_else(|| {
                    format!(
                        "{what}: expected a keyword argument at {:?}",
                        preview(r.rest())
                    )
                })?
                .to_string();
            r.skip_ws();
            if !r.eat("=") {
                return Err(format!(
                    "{what}: a positional argument (only keywords are read)"
                ));
            }
            let v = r.value().map_err(|e| format!("{what}: {key}: {e}"))?;
            if args.insert(key.clone(), v).is_some() {
                return Err(format!(
                    "{what}: the keyword {key:?} twice (a Python SyntaxError)"
                ));
            }
            r.skip_ws();
            if r.eat(")") {
                break;
            }
            if !r.eat(",") {
                return Err(format!(
                    "{what}: expected ',' or ')' at {:?}",
                    preview(r.rest())
                ));
            }
        }
        out.calls.push((name, Value::Object(args)));
        r.skip_ws();
        if r.eat("]") {
            break;
        }
        if !r.eat(",") {
            return Err(format!(
                "after {what}: expected ',' or ']' at {:?}",
                preview(r.rest())
            ));
        }
    }
    r.skip_ws();
    if !r.rest().is_empty() {
        return Err(format!(
            "text after the list (the whole output must be one Python list): {:?}",
            preview(r.rest())
        ));
    }
    if out.calls.is_empty() {
        return Err("an empty call list".into());
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Mistral.
// ---------------------------------------------------------------------------

/// vLLM `MistralToolParser.extract_tool_calls`, tokenizers before v11
/// (vllm/tool_parsers/mistral_tool_parser.py @ decc268eec08cf0999fd2adae4e77d1842217b53):
/// the content is the text before `[TOOL_CALLS]`; after it, one JSON array
/// of `{"name", "arguments"}`.
pub fn mistral_v3(text: &str, _tools: &[Value]) -> Result<Parsed, String> {
    const BOT: &str = "[TOOL_CALLS]";
    let Some(i) = text.find(BOT) else {
        return Ok(Parsed::text(text));
    };
    let mut out = Parsed::text(&text[..i]);
    let arr: Value = serde_json::from_str(text[i + BOT.len()..].trim())
        .map_err(|e| format!("the calls are not one JSON array: {e}"))?;
    let Value::Array(calls) = arr else {
        return Err("the calls are not a JSON array".into());
    };
    for (k, c) in calls.iter().enumerate() {
        let name = c
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("call #{}: no name", k + 1))?;
        let args = c
            .get("arguments")
            .filter(|a| a.is_object())
            .ok_or_else(|| format!("call #{}: no arguments object", k + 1))?;
        out.calls.push((name.to_string(), args.clone()));
    }
    if out.calls.is_empty() {
        return Err("an empty call array".into());
    }
    Ok(out)
}

/// vLLM `MistralToolParser.extract_tool_calls`, tokenizers v11 and later
/// (same file): the output split at `[TOOL_CALLS]`; the first piece is the
/// content, every other one `NAME[ARGS]JSON` (also
/// `NAME[CALL_ID]ID[ARGS]JSON`), the JSON `json.loads`ed whole.
pub fn mistral_v11(text: &str, _tools: &[Value]) -> Result<Parsed, String> {
    const BOT: &str = "[TOOL_CALLS]";
    let mut pieces = text.split(BOT);
    let mut out = Parsed::text(pieces.next().unwrap_or(""));
    for p in pieces {
        let what = format!("call #{}", out.calls.len() + 1);
        let (head, args) = p
            .split_once("[ARGS]")
            .ok_or_else(|| format!("{what}: no [ARGS] in {:?}", preview(p)))?;
        let name = head.split_once("[CALL_ID]").map_or(head, |(n, _)| n);
        if name.is_empty() {
            return Err(format!("{what}: an empty name"));
        }
        out.calls
            .push((name.to_string(), args_object(args, &what)?));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Granite.
// ---------------------------------------------------------------------------

/// vLLM `GraniteToolParser.extract_tool_calls`
/// (vllm/tool_parsers/granite_tool_parser.py @ 400ffd7655ff746cbcd3b9b3f44d97c02f5f3503):
/// the stripped output must start with `<|tool_call|>` (Granite 3.0) or
/// `<tool_call>` (3.1 and later); the rest is a JSON array of
/// `{"name", "arguments"}`. Otherwise it is all content.
pub fn granite(text: &str, _tools: &[Value]) -> Result<Parsed, String> {
    let t = text.trim();
    let rest = match t
        .strip_prefix("<|tool_call|>")
        .or_else(|| t.strip_prefix("<tool_call>"))
    {
        Some(r) => r,
        None => {
            if t.contains("<|tool_call|>") || t.contains("<tool_call>") {
                return Err(format!(
                    "a call after text (vLLM's granite parser reads only outputs that start with the tag): {:?}",
                    preview(t)
                ));
            }
            return Ok(Parsed::text(text));
        }
    };
    let mut out = Parsed::text("");
    let arr: Value = serde_json::from_str(rest.trim())
        .map_err(|e| format!("the calls are not a JSON array: {e}"))?;
    let Value::Array(calls) = arr else {
        return Err("the calls are not a JSON array".into());
    };
    for (k, c) in calls.iter().enumerate() {
        let name = c
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("call #{}: no name", k + 1))?;
        let args = c
            .get("arguments")
            .filter(|a| a.is_object())
            .ok_or_else(|| format!("call #{}: no arguments object", k + 1))?;
        out.calls.push((name.to_string(), args.clone()));
    }
    if out.calls.is_empty() {
        return Err("an empty call array".into());
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Gemma 4.
// ---------------------------------------------------------------------------

const GEMMA_Q: &str = "<|\"|>";

/// vLLM `_parse_gemma4_value` (as of vllm-project/vllm @
/// 027004de3715411197be51ced325705abcf740a7): `true`/`false`; `null`,
/// `none`, `nil` in any case as null; a number (`float` when it holds a
/// `.`, else `int`); else the text as a string. A bare JSON value that this
/// reads as a string (`1e5`) is an error: the grammar meant the value, vLLM
/// gives the text.
fn gemma_scalar(s: &str) -> Result<Value, String> {
    let t = s.trim();
    match t {
        "true" => return Ok(Value::Bool(true)),
        "false" => return Ok(Value::Bool(false)),
        _ if matches!(t.to_lowercase().as_str(), "null" | "none" | "nil") => {
            return Ok(Value::Null)
        }
        _ => {}
    }
    let n = if t.contains('.') {
        py_float(t).and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
    } else {
        py_int(t)
    };
    match n {
        Some(v) => Ok(v),
        None if serde_json::from_str::<Value>(t).is_ok() => Err(format!(
            "vLLM's gemma4 parser reads the bare value {t:?} as a string"
        )),
        None => Ok(Value::String(t.to_string())),
    }
}

/// The end of a bracketed value starting at `i` (just after the opening
/// bracket): vLLM's depth scan (strings skipped only when `skip_strings`).
fn gemma_close(s: &str, mut i: usize, open: u8, close: u8, skip_strings: bool) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 1;
    while i < b.len() {
        if skip_strings && s[i..].starts_with(GEMMA_Q) {
            i += GEMMA_Q.len();
            i = s[i..].find(GEMMA_Q).map(|j| i + j + GEMMA_Q.len())?;
            continue;
        }
        if b[i] == open {
            depth += 1;
        } else if b[i] == close {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
        i += 1;
    }
    None
}

/// vLLM `_parse_gemma4_args` (vllm/tool_parsers/gemma4_tool_parser.py @
/// c31f17f4b150c829a866e3218b8420967bf7722a), complete inputs only.
fn gemma_args(s: &str) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && matches!(b[i], b' ' | b',' | b'\n' | b'\t') {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        let c = s[i..]
            .find(':')
            .ok_or_else(|| format!("a key without ':' at {:?}", preview(&s[i..])))?;
        let key = s[i..i + c].trim().to_string();
        i += c + 1;
        while i < b.len() && matches!(b[i], b' ' | b'\n' | b'\t') {
            i += 1;
        }
        let v = if i >= b.len() {
            Value::String(String::new())
        } else if s[i..].starts_with(GEMMA_Q) {
            i += GEMMA_Q.len();
            let e = s[i..]
                .find(GEMMA_Q)
                .ok_or("an unterminated <|\"|> string")?;
            let v = Value::String(s[i..i + e].to_string());
            i += e + GEMMA_Q.len();
            v
        } else if b[i] == b'{' {
            let e = gemma_close(s, i + 1, b'{', b'}', true).ok_or("an unclosed '{'")?;
            let v = Value::Object(gemma_args(&s[i + 1..e])?);
            i = e + 1;
            v
        } else if b[i] == b'[' {
            let e = gemma_close(s, i + 1, b'[', b']', true).ok_or("an unclosed '['")?;
            let v = Value::Array(gemma_array(&s[i + 1..e])?);
            i = e + 1;
            v
        } else {
            let start = i;
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']') {
                i += 1;
            }
            gemma_scalar(&s[start..i])?
        };
        out.insert(key, v);
    }
    Ok(out)
}

/// vLLM `_parse_gemma4_array`.
fn gemma_array(s: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && matches!(b[i], b' ' | b',' | b'\n' | b'\t') {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        if s[i..].starts_with(GEMMA_Q) {
            i += GEMMA_Q.len();
            let e = s[i..]
                .find(GEMMA_Q)
                .ok_or("an unterminated <|\"|> string")?;
            out.push(Value::String(s[i..i + e].to_string()));
            i += e + GEMMA_Q.len();
        } else if b[i] == b'{' {
            let e = gemma_close(s, i + 1, b'{', b'}', true).ok_or("an unclosed '{'")?;
            out.push(Value::Object(gemma_args(&s[i + 1..e])?));
            i = e + 1;
        } else if b[i] == b'[' {
            // vLLM does not skip strings inside a nested array.
            let e = gemma_close(s, i + 1, b'[', b']', false).ok_or("an unclosed '['")?;
            out.push(Value::Array(gemma_array(&s[i + 1..e])?));
            i = e + 1;
        } else {
            let start = i;
            while i < b.len() && !matches!(b[i], b',' | b']') {
                i += 1;
            }
            out.push(gemma_scalar(&s[start..i])?);
        }
    }
    Ok(out)
}

/// vLLM `Gemma4ToolParser.extract_tool_calls` (vllm/tool_parsers/gemma4_tool_parser.py @
/// c31f17f4b150c829a866e3218b8420967bf7722a): every
/// `<|tool_call>call:NAME{ARGS}<tool_call|>` (NAME `[\w\-\.]+`, ARGS up to
/// the first `}<tool_call|>`), ARGS read by `_parse_gemma4_args`: bare keys,
/// `<|"|>`-quoted strings as is, `true`/`false`, numbers, nested `{}`/`[]`,
/// and any other bare value as a string (so `null` and `1e5` become the
/// strings "null" and "1e5").
pub fn gemma4(text: &str, _tools: &[Value]) -> Result<Parsed, String> {
    const UP: &str = "vLLM's gemma4 parser";
    const OPEN: &str = "<|tool_call>call:";
    const CLOSE: &str = "}<tool_call|>";
    let Some(first) = text.find("<|tool_call>") else {
        return Ok(Parsed::text(text));
    };
    let mut out = Parsed::text(&text[..first]);
    let mut rest = &text[first..];
    loop {
        let t = rest.trim_start();
        let Some(r) = t.strip_prefix(OPEN) else { break };
        only_ws(&rest[..rest.len() - t.len()], UP, "between calls")?;
        let what = format!("call #{}", out.calls.len() + 1);
        let brace = r.find('{').ok_or_else(|| format!("{what}: no '{{'"))?;
        let name = &r[..brace];
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_alphanumeric() || "_-.".contains(c))
        {
            return Err(format!("{what}: {UP} does not read the name {name:?}"));
        }
        let a = &r[brace + 1..];
        let e = a
            .find(CLOSE)
            .ok_or_else(|| format!("{what}: no }}<tool_call|>"))?;
        let args = gemma_args(&a[..e]).map_err(|err| format!("{what}: {err}"))?;
        out.calls.push((name.to_string(), Value::Object(args)));
        rest = &a[e + CLOSE.len()..];
    }
    only_ws(rest, UP, "after the calls")?;
    if out.calls.is_empty() {
        return Err(format!(
            "<|tool_call> not followed by call:NAME{{ ({UP} finds no call)"
        ));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Entries.
// ---------------------------------------------------------------------------

/// How many calls an entry takes, and whether text may come first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Optional text, then zero or more calls.
    Auto,
    /// Optional text, then at most one call (`auto-one`: tool choice auto
    /// with parallel calls off).
    AutoOne,
    /// No text (whitespace aside), one or more calls.
    Required,
    /// No text (whitespace aside), exactly one call.
    One,
}

/// A format parser with an entry's rule.
#[derive(Clone, Copy)]
pub struct EntryParser {
    /// The format's parser.
    pub format: FormatFn,
    /// The reasoning block's end marker for a `think-` entry.
    pub think: Option<&'static str>,
    /// The entry's rule.
    pub mode: Mode,
}

impl EntryParser {
    /// Parses a whole output (one leading space, which a SentencePiece
    /// decoder may show, dropped first).
    pub fn parse(&self, text: &str, tools: &[Value]) -> Result<Calls, String> {
        let mut t = super::strip_space(text);
        if let Some(marker) = self.think {
            let i = t
                .find(marker)
                .ok_or_else(|| format!("no {marker:?} ending the reasoning"))?;
            t = &t[i + marker.len()..];
        }
        let p = (self.format)(t, tools)?;
        match self.mode {
            Mode::Auto => {}
            Mode::AutoOne => {
                if p.calls.len() > 1 {
                    return Err(format!(
                        "{} calls where at most one is allowed",
                        p.calls.len()
                    ));
                }
            }
            Mode::Required | Mode::One => {
                if !p.content.trim().is_empty() {
                    return Err(format!(
                        "text before the first call: {:?}",
                        preview(&p.content)
                    ));
                }
                if p.calls.is_empty() {
                    return Err("no call".into());
                }
                if self.mode == Mode::One && p.calls.len() != 1 {
                    return Err(format!("{} calls where one is expected", p.calls.len()));
                }
            }
        }
        Ok(p.calls)
    }
}

/// The model formats: name, parser, reasoning end marker (for `think-`
/// entries).
pub const FORMATS: &[(&str, FormatFn, Option<&str>)] = &[
    ("qwen3", hermes_json, Some("</think>")),
    ("hermes", hermes_json, None),
    ("qwen3-coder", qwen3_coder, Some("</think>")),
    ("glm-4.5", glm45, Some("</think>")),
    ("glm-4.7", glm47, Some("</think>")),
    ("deepseek-r1", deepseek_v3, Some("</think>")),
    ("deepseek-v3.1", deepseek_v31, Some("</think>")),
    ("deepseek-v3.2", deepseek_v32, Some("</think>")),
    ("kimi-k2", kimi_k2, Some("</think>")),
    ("gpt-oss", gpt_oss, Some("<|end|>")),
    ("llama3", llama3_json, None),
    ("llama-pythonic", pythonic, None),
    ("mistral", mistral_v3, None),
    ("mistral-v11", mistral_v11, Some("[/THINK]")),
    ("minimax-m2", minimax_m2, Some("</think>")),
    ("granite", granite, None),
    ("gemma4", gemma4, Some("<channel|>")),
];

/// `auto` of the formats whose calls must start the output (llama3,
/// llama-pythonic, granite): where the upstream parser fails on an output
/// that starts like a call, it returns the whole output as content (vLLM's
/// `extract_tool_calls` catches the error), which is what the grammar's
/// plain-text branch means. A SentencePiece vocabulary's `▁{` at the
/// start, decoded without its space, is such a text.
fn content_on_failure(f: FormatFn, text: &str, tools: &[Value]) -> Result<Parsed, String> {
    Ok(f(text, tools).unwrap_or_else(|_| Parsed::text(text)))
}

fn llama3_json_auto(text: &str, tools: &[Value]) -> Result<Parsed, String> {
    content_on_failure(llama3_json, text, tools)
}

fn pythonic_auto(text: &str, tools: &[Value]) -> Result<Parsed, String> {
    content_on_failure(pythonic, text, tools)
}

fn granite_auto(text: &str, tools: &[Value]) -> Result<Parsed, String> {
    content_on_failure(granite, text, tools)
}

/// The parser of a model format's `auto`/`required`/`one` entry or its
/// `think-` variant.
pub fn entry_parser(format: &str, entry: &str) -> Option<EntryParser> {
    let &(_, mut f, marker) = FORMATS.iter().find(|(n, _, _)| *n == format)?;
    if entry.trim_start_matches("think-").starts_with("auto") {
        f = match format {
            "llama3" => llama3_json_auto,
            "llama-pythonic" => pythonic_auto,
            "granite" => granite_auto,
            _ => f,
        };
    }
    let (think, mode) = match entry.strip_prefix("think-") {
        Some(m) => (Some(marker?), m),
        None => (None, entry),
    };
    let mode = match mode {
        "auto" => Mode::Auto,
        "auto-one" => Mode::AutoOne,
        "required" => Mode::Required,
        "one" => Mode::One,
        _ => return None,
    };
    Some(EntryParser {
        format: f,
        think,
        mode,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Vec<Value> {
        vec![
            json!({"type": "function", "function": {"name": "get_weather", "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "scale": {"type": "number"},
                    "hourly": {"type": "boolean"},
                    "tags": {"type": "array", "items": {"type": "string"}}
                }
            }}}),
        ]
    }

    fn ok(format: &str, entry: &str, text: &str) -> Calls {
        entry_parser(format, entry)
            .unwrap_or_else(|| panic!("no parser for {format}/{entry}"))
            .parse(text, &tools())
            .unwrap_or_else(|e| panic!("{format}/{entry} refuses {text:?}: {e}"))
    }

    fn bad(format: &str, entry: &str, text: &str) -> String {
        match entry_parser(format, entry).unwrap().parse(text, &tools()) {
            Ok(c) => panic!("{format}/{entry} accepts {text:?}: {c:?}"),
            Err(e) => e,
        }
    }

    fn w(args: Value) -> Calls {
        vec![("get_weather".to_string(), args)]
    }

    #[test]
    fn hermes_and_qwen3() {
        let c = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
        assert_eq!(ok("qwen3", "one", c), w(json!({"city": "Paris"})));
        assert_eq!(ok("qwen3", "required", &format!("{c}\n{c}")).len(), 2);
        assert_eq!(ok("qwen3", "auto", &format!("Sure.\n{c}")).len(), 1);
        assert_eq!(ok("qwen3", "auto", "Just text.").len(), 0);
        assert_eq!(
            ok("qwen3", "think-one", &format!("Hmm.</think>\n\n{c}")).len(),
            1
        );
        bad("qwen3", "one", &format!("{c}\n{c}"));
        bad("qwen3", "required", &format!("Sure.\n{c}"));
        assert!(bad("qwen3", "auto", &format!("{c} trailing")).contains("drops it"));
        bad("qwen3", "one", &c.replace("arguments", "parameters"));
    }

    #[test]
    fn qwen3_coder_types_by_schema() {
        let c = "<tool_call>\n<function=get_weather>\n<parameter=city>\n 42 \n</parameter>\n<parameter=days>\n3\n</parameter>\n<parameter=scale>\n2.0\n</parameter>\n<parameter=hourly>\ntrue\n</parameter>\n<parameter=tags>\n[\"a\"]\n</parameter>\n</function>\n</tool_call>";
        assert_eq!(
            ok("qwen3-coder", "one", c),
            w(json!({"city": " 42 ", "days": 3, "scale": 2, "hourly": true, "tags": ["a"]}))
        );
        // A value holding </parameter> not followed by a tag goes on.
        let v = "<tool_call>\n<function=get_weather>\n<parameter=city>\na</parameter>b\n</parameter>\n</function>\n</tool_call>";
        assert_eq!(
            ok("qwen3-coder", "one", v),
            w(json!({"city": "a</parameter>b"}))
        );
        bad(
            "qwen3-coder",
            "one",
            "<tool_call>\n<function=get weather>\n</function>\n</tool_call>",
        );
    }

    #[test]
    fn glm() {
        let c45 = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>";
        assert_eq!(
            ok("glm-4.5", "one", c45),
            w(json!({"city": "Paris", "days": 3}))
        );
        let c47 = "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>tags</arg_key><arg_value>['x']</arg_value></tool_call>";
        assert_eq!(ok("glm-4.7", "required", &format!("{c47}{c47}")).len(), 2);
        assert_eq!(
            ok("glm-4.7", "one", c47),
            w(json!({"city": "Paris", "tags": ["x"]}))
        );
        let e = bad("glm-4.5", "one", &c45.replace(">Paris<", "> Paris<"));
        assert!(e.contains("changes the string value"), "{e}");
    }

    #[test]
    fn deepseek() {
        let r1 = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
        assert_eq!(ok("deepseek-r1", "one", r1), w(json!({"city": "Paris"})));
        let e = bad(
            "deepseek-r1",
            "one",
            &r1.replace("{\"city\"", "{\n\"city\""),
        );
        assert!(e.contains("no DOTALL"), "{e}");
        let v31 = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
        assert_eq!(
            ok(
                "deepseek-v3.1",
                "think-required",
                &format!("x</think>{v31}")
            )
            .len(),
            2
        );
        let v32 = "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n<｜DSML｜parameter name=\"days\" string=\"false\">3</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>";
        assert_eq!(
            ok("deepseek-v3.2", "one", v32),
            w(json!({"city": "Paris", "days": 3}))
        );
    }

    #[test]
    fn kimi() {
        let c = "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|><|tool_calls_section_end|>";
        assert_eq!(ok("kimi-k2", "one", c), w(json!({"city": "Paris"})));
        let e = bad("kimi-k2", "one", &c.replace("get_weather", "weather.get"));
        assert!(e.contains("reads the tool name"), "{e}");
    }

    #[test]
    fn gpt_oss() {
        let call = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>";
        assert_eq!(ok("gpt-oss", "one", call), w(json!({"city": "Paris"})));
        let with_analysis =
            format!("<|channel|>analysis<|message|>Think.<|end|><|start|>assistant{call}");
        assert_eq!(ok("gpt-oss", "required", &with_analysis).len(), 1);
        assert_eq!(
            ok(
                "gpt-oss",
                "think-one",
                &format!("Think.<|end|><|start|>assistant{call}")
            )
            .len(),
            1
        );
        let other = " to=functions.get_weather<|channel|>commentary json<|message|>{}<|call|>";
        assert_eq!(ok("gpt-oss", "one", other), w(json!({})));
        assert_eq!(
            ok("gpt-oss", "auto", "<|channel|>final<|message|>Hello.").len(),
            0
        );
        bad("gpt-oss", "one", "<|channel|>final<|message|>Hello.");
    }

    #[test]
    fn llama() {
        let j = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}";
        assert_eq!(ok("llama3", "one", j), w(json!({"city": "Paris"})));
        assert_eq!(
            ok("llama3", "required", &format!("<|python_tag|>{j}; {j}")).len(),
            2
        );
        assert_eq!(ok("llama3", "auto", "Hello there.").len(), 0);
        // Text first: vLLM reads no call (content), as the grammar's plain text.
        assert_eq!(ok("llama3", "auto", &format!("Sure: {j}")).len(), 0);
        // vLLM returns an output that fails as a call as content.
        assert_eq!(ok("llama3", "auto", "{\"name\": oops").len(), 0);
        bad("llama3", "one", &format!("{j};{j}"));
        let p = "[get_weather(city='Pa\\'ris', days=-3, tags=[\"a\"], hourly=True), math.add(a=1.5, b=None)]";
        assert_eq!(
            ok("llama-pythonic", "required", p),
            vec![
                (
                    "get_weather".to_string(),
                    json!({"city": "Pa'ris", "days": -3, "tags": ["a"], "hourly": true})
                ),
                ("math.add".to_string(), json!({"a": 1.5, "b": null})),
            ]
        );
        assert_eq!(
            ok(
                "llama-pythonic",
                "one",
                "<|python_start|>[get_weather()]<|python_end|>"
            )
            .len(),
            1
        );
        assert_eq!(ok("llama-pythonic", "auto", "No call here.").len(), 0);
        bad("llama-pythonic", "one", "[get_weather('Paris')]");
        bad("llama-pythonic", "one", "[get_weather(city=x)]");
        bad("llama-pythonic", "one", "[get_weather()] and more");
    }

    #[test]
    fn mistral_granite_minimax_gemma() {
        let m = "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}";
        assert_eq!(ok("mistral-v11", "one", m), w(json!({"city": "Paris"})));
        assert_eq!(ok("mistral-v11", "auto", &format!("Sure.{m}{m}")).len(), 2);
        assert_eq!(
            ok(
                "mistral-v11",
                "one",
                "[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{}"
            )
            .len(),
            1
        );
        bad("mistral-v11", "one", "[TOOL_CALLS]get_weather{}");
        let g = "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {}}]";
        assert_eq!(ok("granite", "one", g), w(json!({})));
        let mm = "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n<parameter name=\"days\">3</parameter>\n</invoke>\n</minimax:tool_call>";
        assert_eq!(
            ok("minimax-m2", "one", mm),
            w(json!({"city": "Paris", "days": 3}))
        );
        let gm = "<|tool_call>call:get_weather{city:<|\"|>Paris, FR<|\"|>,days:3,scale:1.5,tags:[<|\"|>a<|\"|>],hourly:false}<tool_call|>";
        assert_eq!(
            ok("gemma4", "one", gm),
            w(
                json!({"city": "Paris, FR", "days": 3, "scale": 1.5, "tags": ["a"], "hourly": false})
            )
        );
        let e = bad(
            "gemma4",
            "one",
            "<|tool_call>call:get_weather{days:1e3}<tool_call|>",
        );
        assert!(e.contains("as a string"), "{e}");
    }
}
