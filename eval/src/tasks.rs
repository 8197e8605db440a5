//! BFCL tasks with ground truth: the question, the functions, and the
//! acceptable calls from `possible_answer`.

use std::path::Path;

use serde_json::Value;
use tooldec_testkit::bfcl;

/// The BFCL categories with ground truth that the evaluation runs.
pub const CATEGORIES: [&str; 4] = ["simple_python", "multiple", "parallel", "parallel_multiple"];

/// One BFCL question.
#[derive(Debug, Clone)]
pub struct Task {
    pub id: String,
    pub category: String,
    /// The user's question (the first user turn).
    pub question: String,
    /// The functions as BFCL documents them (shown to the model).
    pub functions: Vec<Value>,
    /// The functions converted to standard JSON Schema (compiled, validated).
    pub tools: Vec<Value>,
    /// `[{tool_name: {param: [acceptable values]}}]`, one entry per call.
    pub ground_truth: Vec<Value>,
}

/// The JSON values of a JSON-lines file, one per non-empty line.
pub fn read_jsonl(path: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))
        })
        .collect()
}

/// Every task of one category, in file order.
pub fn load_category(data: &Path, category: &str) -> Result<Vec<Task>, String> {
    let dir = data.join("tools/bfcl");
    let questions = read_jsonl(&dir.join(format!("BFCL_v4_{category}.json")))?;
    let answers = read_jsonl(&dir.join(format!("possible_answer/BFCL_v4_{category}.json")))?;
    let mut by_id = std::collections::HashMap::new();
    for a in answers {
        let id = a["id"].as_str().unwrap_or_default().to_string();
        by_id.insert(
            id,
            a["ground_truth"].as_array().cloned().unwrap_or_default(),
        );
    }
    let mut out = Vec::new();
    for q in questions {
        let id = q["id"].as_str().unwrap_or_default().to_string();
        let where_ = format!("BFCL_v4_{category}.json: {id}");
        let question = q["question"]
            .as_array()
            .and_then(|turns| turns.first())
            .and_then(Value::as_array)
            .and_then(|msgs| msgs.iter().find(|m| m["role"] == "user"))
            .and_then(|m| m["content"].as_str())
            .ok_or_else(|| format!("{where_}: no user question"))?
            .to_string();
        let functions = q["function"]
            .as_array()
            .ok_or_else(|| format!("{where_}: no \"function\" array"))?
            .clone();
        let tools = functions.iter().map(bfcl::convert_function).collect();
        let ground_truth = by_id
            .remove(&id)
            .ok_or_else(|| format!("{where_}: no ground truth in possible_answer"))?;
        out.push(Task {
            id,
            category: category.to_string(),
            question,
            functions,
            tools,
            ground_truth,
        });
    }
    Ok(out)
}

/// Indices into a list of `len`: first `n` spread evenly (every
/// `len / n`-th), so a small run still sees the whole file rather than its
/// first entries; then all the others in order, as replacements for tasks
/// that cannot be used.
pub fn spread_order(len: usize, n: usize) -> Vec<usize> {
    let n = n.min(len);
    let mut order: Vec<usize> = (0..n).map(|i| i * len / n).collect();
    let mut taken = vec![false; len];
    for &i in &order {
        taken[i] = true;
    }
    order.extend((0..len).filter(|&i| !taken[i]));
    order
}
