//! Collecting a test's failures and reporting them together.

use tooldec_compiler::ErrorKind;

/// A refusal the compiler may legitimately give for real-world schemas.
pub fn acceptable_refusal(kind: ErrorKind) -> bool {
    matches!(kind, ErrorKind::Unsupported | ErrorKind::Schema)
}

/// One failed case: what it was, and what went wrong.
pub struct Failure {
    pub what: String,
    pub detail: String,
}

/// Panics with the count and the first eight failures, if any.
pub fn report_failures(label: &str, failures: &[Failure]) {
    if failures.is_empty() {
        return;
    }
    let mut msg = format!("{label}: {} failure(s); first ones:\n", failures.len());
    for f in failures.iter().take(8) {
        msg.push_str(&format!("--- {}\n{}\n", f.what, f.detail));
    }
    panic!("{msg}");
}
