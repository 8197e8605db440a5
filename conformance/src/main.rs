//! `tooldec-conformance report [--out FILE] [--filter SUBSTR] [--limit N] [--jobs N]`:
//! runs the JSON-Schema-Test-Suite, JSONSchemaBench and the real tool
//! corpora through the compiler and the runtime, and writes the markdown
//! report (CONFORMANCE.md).

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = tooldec_conformance::report::main(&args) {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}
