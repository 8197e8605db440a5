//! What the C tests share: finding `libtooldec.a`, compiling C programs
//! against it with the system compiler, a seeded RNG, the mask hash, and
//! the artifacts the tests walk.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub mod ffi;

/// The capi crate's directory.
pub fn capi_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The static library cargo built for this test run.
///
/// Cargo compiles the `tooldec` lib target once, with all its crate types,
/// before the integration tests that link it: `libtooldec.rlib` (which this
/// test binary links), `libtooldec.a` and `libtooldec.so` land side by
/// side in `target/<profile>/deps/`, the directory of this test binary
/// (cdylib/staticlib outputs carry no hash in their file name). This holds
/// for `cargo test` (target/debug) and `cargo test --release`
/// (target/release), with or without `--target` and `CARGO_TARGET_DIR`.
/// `target/<profile>/libtooldec.a` (what `cargo build` uplifts) is the
/// fallback.
pub fn staticlib() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("the test binary's directory");
    let candidates = [Some(deps), deps.parent()];
    for dir in candidates.into_iter().flatten() {
        let lib = dir.join("libtooldec.a");
        if lib.is_file() {
            return lib;
        }
    }
    panic!(
        "libtooldec.a is neither in {} nor in its parent: build it with \
         `cargo build -p tooldec-capi` (cargo test builds it next to the test binary)",
        deps.display()
    );
}

/// The system libraries Rust's standard library needs when linked
/// statically (`rustc --print native-static-libs` on this target).
fn native_libs() -> &'static [&'static str] {
    if cfg!(target_os = "linux") {
        &[
            "-lgcc_s",
            "-lutil",
            "-lrt",
            "-lpthread",
            "-lm",
            "-ldl",
            "-lc",
        ]
    } else if cfg!(target_os = "macos") {
        &["-lSystem", "-lc", "-lm"]
    } else {
        &["-lpthread", "-lm"]
    }
}

/// The C compiler: `$CC`, else `cc`.
fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_string())
}

/// Compiles `sources` with `-Wall -Wextra -Werror -std=c11` (plus
/// `extra` flags) against `include/` and links them with `libtooldec.a`
/// into `CARGO_TARGET_TMPDIR/<name>`. Panics with the compiler's output
/// on failure.
pub fn compile_c(name: &str, sources: &[PathBuf], extra: &[&str]) -> PathBuf {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    // Built under a name of its own, then renamed: a test run beside this
    // one may be executing the previous binary.
    let tmp = out.with_extension(format!("{}.tmp", std::process::id()));
    let mut cmd = Command::new(cc());
    cmd.args(["-Wall", "-Wextra", "-Werror", "-std=c11", "-O2", "-g"])
        .arg("-I")
        .arg(capi_dir().join("include"))
        .args(extra)
        .args(sources)
        .arg(staticlib())
        .args(native_libs())
        .arg("-o")
        .arg(&tmp);
    let shown = format!("{cmd:?}");
    let result = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{}`: {e}", cc()));
    assert!(
        result.status.success(),
        "C compilation failed:\n{shown}\n{}{}",
        String::from_utf8_lossy(&result.stdout),
        String::from_utf8_lossy(&result.stderr)
    );
    std::fs::rename(&tmp, &out).expect("move the compiled program in place");
    out
}

/// Writes `bytes` to `path` through a temporary file and a rename, so a
/// concurrent test run never reads a half-written file.
pub fn write_file(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes).unwrap_or_else(|e| panic!("{}: {e}", tmp.display()));
    std::fs::rename(&tmp, path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// Runs a compiled program and returns its standard output; panics with
/// its output if it fails.
pub fn run(program: &Path, args: &[&Path]) -> String {
    let result = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    assert!(
        result.status.success(),
        "{} failed ({}):\n{}\n{}",
        program.display(),
        result.status,
        String::from_utf8_lossy(&result.stderr),
        tail(&String::from_utf8_lossy(&result.stdout), 20),
    );
    String::from_utf8(result.stdout).expect("UTF-8 output")
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// FNV-1a over 32-bit words (each word XORed in whole): walk.c's hash.
pub fn fnv(words: &[u32]) -> u64 {
    words.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &w| {
        (h ^ w as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// SplitMix64: a small seeded generator.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The committed golden artifact (GPT-2 vocabulary, react format).
pub fn golden_artifact() -> PathBuf {
    let path = capi_dir().join("../artifacts/weather-gpt2.tdm");
    assert!(path.is_file(), "{} is missing", path.display());
    path
}

/// The default budget of [`padded_hermes_artifact`].
pub const HERMES_MAX_TOKENS: u32 = 160;

/// The weather tools in the hermes format (entries start, calls, call),
/// compiled here for GPT-2 with the mask width padded to 50304 (a model
/// with more logits than the tokenizer has tokens) and a default budget
/// of [`HERMES_MAX_TOKENS`]: the artifact's path.
pub fn padded_hermes_artifact() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            use tooldec_compiler::{compile, spec, vocab::Vocab, CallFormat, Options};
            let path = capi_dir().join("../grammars/examples/weather.json");
            let text = std::fs::read_to_string(&path).expect("weather.json");
            let set = spec::parse("weather.json", &text).expect("weather.json parses");
            let vocab = Vocab::builtin_gpt2().expect("the built-in GPT-2 vocabulary");
            let opts = Options {
                format: CallFormat::load("hermes").expect("the shipped hermes format"),
                mask_width: Some(50304),
                max_tokens: Some(HERMES_MAX_TOKENS),
                threads: 1,
                ..Options::default()
            };
            let out = compile(&set, &vocab, &opts, &mut |_| {}).expect("weather.json compiles");
            let file =
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("capi-weather-hermes-padded.tdm");
            write_file(&file, &out.artifact);
            file
        })
        .clone()
}
