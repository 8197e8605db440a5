//! Reading the JSON-Schema-Test-Suite and JSONSchemaBench files.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::{Group, Instance};

/// The JSON-Schema-Test-Suite draft 2020-12 folder, under the data dir.
pub const SUITE_DIR: &str = "json-schema/test-suite/tests/draft2020-12";
/// The JSONSchemaBench files, under the data dir.
pub const BENCH_DIR: &str = "json-schema/jsonschemabench/data";

/// The `*.json` files directly in `dir`, sorted by name.
pub fn json_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    Ok(files)
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: invalid JSON: {e}", path.display()))
}

fn instance(t: &Value, what: &str) -> Result<Instance, String> {
    let valid = t
        .get("valid")
        .and_then(Value::as_bool)
        .ok_or_else(|| format!("{what}: a test without a boolean \"valid\""))?;
    let data = t
        .get("data")
        .cloned()
        .ok_or_else(|| format!("{what}: a test without \"data\""))?;
    Ok(Instance {
        description: t
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        data,
        valid,
    })
}

fn tests(v: &Value, what: &str) -> Result<Vec<Instance>, String> {
    v.get("tests")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{what}: no \"tests\" array"))?
        .iter()
        .enumerate()
        .map(|(i, t)| instance(t, &format!("{what} test #{i}")))
        .collect()
}

/// One test-suite file: an array of `{description, schema, tests}` groups,
/// named `LABEL #i`.
pub fn suite_file(path: &Path, label: &str) -> Result<Vec<Group>, String> {
    let v = read_json(path)?;
    let groups = v
        .as_array()
        .ok_or_else(|| format!("{}: expected an array of test groups", path.display()))?;
    groups
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let name = format!("{label} #{i}");
            Ok(Group {
                description: g
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                schema: g
                    .get("schema")
                    .cloned()
                    .ok_or_else(|| format!("{name}: no \"schema\""))?,
                tests: tests(g, &name)?,
                name,
            })
        })
        .collect()
}

/// One JSONSchemaBench file: `{description?, meta?, schema, tests: [{data,
/// valid}]}`, named after the file.
pub fn bench_file(path: &Path) -> Result<Group, String> {
    let v = read_json(path)?;
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    Ok(Group {
        description: v
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        schema: v
            .get("schema")
            .cloned()
            .ok_or_else(|| format!("{name}: no \"schema\""))?,
        tests: tests(&v, &name)?,
        name,
    })
}

/// The dataset of a JSONSchemaBench file name: everything before `---`
/// (`Github_easy---o1.json` → `Github_easy`), else the name without
/// `.json` and a trailing `_N` (`BFCL_java_1.json` → `BFCL_java`).
pub fn dataset(file_name: &str) -> String {
    if let Some((d, _)) = file_name.split_once("---") {
        return d.to_string();
    }
    let stem = file_name.strip_suffix(".json").unwrap_or(file_name);
    match stem.rsplit_once('_') {
        Some((d, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => d.to_string(),
        _ => stem.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::dataset;

    #[test]
    fn datasets() {
        assert_eq!(dataset("Github_easy---o1234.json"), "Github_easy");
        assert_eq!(dataset("Glaiveai2K---fn_12.json"), "Glaiveai2K");
        assert_eq!(dataset("BFCL_java_1.json"), "BFCL_java");
        assert_eq!(
            dataset("BFCL_parallel_multiple_10.json"),
            "BFCL_parallel_multiple"
        );
        assert_eq!(dataset("JME_0.json"), "JME");
        assert_eq!(dataset("odd.json"), "odd");
    }
}
