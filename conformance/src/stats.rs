//! Aggregating schema results into table rows and refusal groups.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::{Refusal, SchemaResult};

/// One table row: the schemas of a file, a dataset or a whole table.
#[derive(Debug, Clone, Default)]
pub struct Row {
    pub label: String,
    pub schemas: usize,
    pub compiled: usize,
    /// Refused by the state budget.
    pub budget: usize,
    pub valid: usize,
    pub valid_accepted: usize,
    pub valid_one_form: usize,
    pub invalid: usize,
    pub invalid_rejected: usize,
    pub invalid_one_form: usize,
    /// Every compile attempt, refused ones included.
    pub compile_total: Duration,
    /// The compile times of the compiled schemas.
    pub compile_times: Vec<Duration>,
    pub walk_total: Duration,
    pub disagreements: usize,
}

impl Row {
    pub fn new(label: &str) -> Row {
        Row {
            label: label.to_string(),
            ..Row::default()
        }
    }

    pub fn add(&mut self, r: &SchemaResult) {
        self.schemas += 1;
        self.compile_total += r.compile;
        self.walk_total += r.walk;
        match &r.refusal {
            None => {
                self.compiled += 1;
                self.compile_times.push(r.compile);
            }
            Some(f) => self.budget += f.budget as usize,
        }
        self.valid += r.valid;
        self.valid_accepted += r.valid_accepted;
        self.valid_one_form += r.valid_one_form;
        self.invalid += r.invalid;
        self.invalid_rejected += r.invalid_rejected;
        self.invalid_one_form += r.invalid_one_form;
        self.disagreements += r.disagreements;
    }

    pub fn merge(&mut self, o: &Row) {
        self.schemas += o.schemas;
        self.compiled += o.compiled;
        self.budget += o.budget;
        self.valid += o.valid;
        self.valid_accepted += o.valid_accepted;
        self.valid_one_form += o.valid_one_form;
        self.invalid += o.invalid;
        self.invalid_rejected += o.invalid_rejected;
        self.invalid_one_form += o.invalid_one_form;
        self.compile_total += o.compile_total;
        self.compile_times.extend_from_slice(&o.compile_times);
        self.walk_total += o.walk_total;
        self.disagreements += o.disagreements;
    }

    /// Median compile time of the compiled schemas.
    pub fn median(&self) -> Option<Duration> {
        let mut t = self.compile_times.clone();
        if t.is_empty() {
            return None;
        }
        t.sort();
        Some(t[t.len() / 2])
    }

    /// Invalid instances accepted in at least one form.
    pub fn invalid_accepted(&self) -> usize {
        self.invalid - self.invalid_rejected
    }

    /// Valid instances not accepted in both forms.
    pub fn valid_missed(&self) -> usize {
        self.valid - self.valid_accepted
    }

    pub fn compiled_pct(&self) -> f64 {
        pct(self.compiled, self.schemas)
    }
}

/// `a` as a percentage of `b` (0 when `b` is 0).
pub fn pct(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// Refusals grouped by kind and shortened reason.
#[derive(Debug, Clone, Default)]
pub struct Reasons(pub BTreeMap<(String, String), Reason>);

/// One group of refusals.
#[derive(Debug, Clone)]
pub struct Reason {
    pub count: usize,
    /// The first schema or tool refused for it, and its whole message.
    pub example: String,
    pub message: String,
}

impl Reasons {
    pub fn add(&mut self, f: &Refusal, example: &str) {
        self.0
            .entry((f.kind.clone(), f.reason.clone()))
            .and_modify(|r| r.count += 1)
            .or_insert_with(|| Reason {
                count: 1,
                example: example.to_string(),
                message: f.message.clone(),
            });
    }

    pub fn merge(&mut self, o: &Reasons) {
        for (k, r) in &o.0 {
            self.0
                .entry(k.clone())
                .and_modify(|x| x.count += r.count)
                .or_insert_with(|| r.clone());
        }
    }

    /// The groups, most frequent first.
    pub fn sorted(&self) -> Vec<(&(String, String), &Reason)> {
        let mut v: Vec<_> = self.0.iter().collect();
        v.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(b.0)));
        v
    }

    pub fn total(&self) -> usize {
        self.0.values().map(|r| r.count).sum()
    }
}
