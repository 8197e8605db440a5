//! The committed header `include/tooldec.h` is what cbindgen makes of the
//! current code. Regenerate it with
//!
//! ```sh
//! TOOLDEC_UPDATE_HEADER=1 cargo test -p tooldec-capi --test header
//! ```

use std::path::Path;

const REGENERATE: &str = "TOOLDEC_UPDATE_HEADER=1 cargo test -p tooldec-capi --test header";

fn generate(dir: &Path) -> String {
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml"))
        .unwrap_or_else(|e| panic!("capi/cbindgen.toml: {e}"));
    // Parses the sources directly (no `cargo metadata`): src/lib.rs and the
    // modules it declares.
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .unwrap_or_else(|e| panic!("cbindgen failed: {e}"));
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("cbindgen wrote UTF-8")
}

#[test]
fn header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = dir.join("include/tooldec.h");
    let generated = generate(dir);
    if std::env::var_os("TOOLDEC_UPDATE_HEADER").is_some() {
        std::fs::write(&path, &generated).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        eprintln!("wrote {}", path.display());
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed == generated {
        return;
    }
    // Where they part, with a little context.
    let (old, new): (Vec<&str>, Vec<&str>) =
        (committed.lines().collect(), generated.lines().collect());
    let first = old
        .iter()
        .zip(&new)
        .position(|(a, b)| a != b)
        .unwrap_or(old.len().min(new.len()));
    let show = |lines: &[&str]| {
        lines
            .iter()
            .enumerate()
            .skip(first.saturating_sub(2))
            .take(6)
            .map(|(i, l)| format!("  {:5} | {l}\n", i + 1))
            .collect::<String>()
    };
    panic!(
        "capi/include/tooldec.h is out of date with capi/src (first difference at line {}; \
         committed {} lines, generated {}).\ncommitted:\n{}generated:\n{}\
         Regenerate it with:\n  {REGENERATE}\nand commit the result.",
        first + 1,
        old.len(),
        new.len(),
        show(&old),
        show(&new),
    );
}
