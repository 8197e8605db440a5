//! The recorded results (`eval/results.jsonl`) read and score as they were
//! recorded: the reply reading now lives in the test kit
//! (`tooldec_testkit::parsers::reply`), and moving or changing it must not
//! silently change the evaluation's numbers.
//!
//! - `recorded_replies_read_as_recorded` needs only the checkout: every
//!   reply the run found unparseable is unparseable with the same message,
//!   and every other reply parses.
//! - `recorded_replies_score_as_recorded` rescoring every reply against the
//!   BFCL ground truth needs `$TOOLDEC_DATA` (skips, saying so, without it).

use std::collections::HashMap;

use serde_json::Value;
use tooldec_eval::prompt::CallFormat;
use tooldec_eval::score;
use tooldec_eval::tasks::{self, Task};
use tooldec_testkit::data_dir;
use tooldec_testkit::schema::ToolValidators;

const CONDITIONS: [&str; 2] = ["unconstrained", "constrained"];

/// The records of a format run (refusals, format `*`, left out), with
/// their format.
fn records() -> Vec<(Value, CallFormat)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/results.jsonl");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let out: Vec<_> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter_map(|r| {
            let format = match r["format"].as_str()? {
                "*" => return None,
                f => CallFormat::parse(f).unwrap_or_else(|e| panic!("{f}: {e}")),
            };
            Some((r, format))
        })
        .collect();
    assert!(!out.is_empty(), "{path}: no records");
    out
}

fn text<'a>(r: &'a Value, cond: &str) -> &'a str {
    r[cond]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{} {cond}: no text", r["id"]))
}

#[test]
fn recorded_replies_read_as_recorded() {
    let mut replies = 0;
    for (r, format) in records() {
        for cond in CONDITIONS {
            let text = text(&r, cond);
            let recorded = r[cond]["syntax_error"].as_str();
            let unparseable = recorded.and_then(|e| e.strip_prefix("unparseable: "));
            match (score::parse_reply(format, text), unparseable) {
                (Ok(_), None) => {}
                (Err(e), Some(was)) => assert_eq!(e, was, "{} {cond}: {text:?}", r["id"]),
                (now, _) => panic!(
                    "{} {} {cond}: recorded {recorded:?}, read now {now:?}\ntext: {text:?}",
                    r["id"], r["docs"]
                ),
            }
            replies += 1;
        }
    }
    println!("{replies} recorded replies read as recorded");
}

#[test]
fn recorded_replies_score_as_recorded() {
    let Some(data) = data_dir() else {
        println!("TOOLDEC_DATA unset: skipping the rescoring of eval/results.jsonl");
        return;
    };
    let mut tasks: HashMap<String, Task> = HashMap::new();
    for category in tasks::CATEGORIES {
        let all = tasks::load_category(&data, category).unwrap_or_else(|e| panic!("{e}"));
        tasks.extend(all.into_iter().map(|t| (t.id.clone(), t)));
    }
    let mut replies = 0;
    for (r, format) in records() {
        let id = r["id"].as_str().expect("an id");
        let task = tasks
            .get(id)
            .unwrap_or_else(|| panic!("{id}: not a BFCL task of the data"));
        let validators = ToolValidators::new(&task.tools);
        for cond in CONDITIONS {
            let c = &r[cond];
            let parsed = score::parse_reply(format, text(&r, cond));
            let syntax = score::syntax_error(&parsed, &validators);
            let calls = parsed.as_deref().unwrap_or(&[]);
            let names_ok = syntax.is_none() && score::names_match(calls, &task.ground_truth);
            let ast_ok = syntax.is_none() && score::ast_match(calls, &task.ground_truth);
            let what = format!("{id} {} {} {cond}", r["format"], r["docs"]);
            assert_eq!(syntax.as_deref(), c["syntax_error"].as_str(), "{what}");
            assert_eq!(Some(names_ok), c["names_ok"].as_bool(), "{what}");
            assert_eq!(Some(ast_ok), c["ast_ok"].as_bool(), "{what}");
            replies += 1;
        }
    }
    println!("{replies} recorded replies score as recorded");
}
