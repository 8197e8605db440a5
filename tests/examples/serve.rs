//! Serving figures for one tool set and tokenizer: compile, then time
//! `fill_mask` on every DFA state and `accept_token` along random walks.
//!
//! `cargo run --release -p tooldec-tests --example serve -- TOOLS.json [TOKENIZER.json] [EOS]`
//!
//! Prints the compile report and per-call times (median, p99, max). Timings
//! on a shared machine are noisy: compare runs, not absolute numbers.

use std::time::Instant;

use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::{compile, spec, Options};
use tooldec_runtime::Artifact;

fn percentiles(mut v: Vec<f64>) -> String {
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| v[((v.len() - 1) as f64 * q) as usize];
    format!(
        "median {:.0} ns, p99 {:.0} ns, max {:.0} ns ({} samples)",
        at(0.5),
        at(0.99),
        v[v.len() - 1],
        v.len()
    )
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let tools = args
        .first()
        .expect("usage: serve TOOLS.json [TOKENIZER.json] [EOS]");
    let text = std::fs::read_to_string(tools).expect("read tools");
    let set = spec::parse(tools, &text).unwrap_or_else(|e| panic!("{e}"));
    let eos: Vec<String> = args.get(2).cloned().into_iter().collect();
    let vocab = match args.get(1) {
        Some(p) => Vocab::from_tokenizer_json(p.as_ref(), &eos).unwrap_or_else(|e| panic!("{e}")),
        None => Vocab::builtin_gpt2().unwrap(),
    };
    let t = Instant::now();
    let out =
        compile(&set, &vocab, &Options::default(), &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    let r = &out.report;
    println!(
        "{} tools, {}: compile {:.2?}, states {} -> {}, {} distinct masks, artifact {} bytes ({} raw)",
        r.tools, vocab.label, t.elapsed(), r.dfa_states, r.min_states, r.masks, r.artifact_bytes, r.payload_bytes
    );
    let t = Instant::now();
    let art = Artifact::from_bytes(&out.artifact).unwrap();
    println!("load (decompress + validate): {:.2?}", t.elapsed());
    let g = art.grammar();
    let mut words = vec![0u32; g.mask_words()];

    // fill_mask on every state: the median of 32 calls per state.
    let mut fill = Vec::new();
    for s in 1..g.state_count() as u32 {
        let id = g.mask_id(s).unwrap();
        let mut times = [0f64; 32];
        for t in times.iter_mut() {
            let start = Instant::now();
            g.fill_mask_by_id(id, std::hint::black_box(&mut words));
            *t = start.elapsed().as_nanos() as f64;
        }
        times.sort_by(|a, b| a.total_cmp(b));
        fill.push(times[16]);
    }
    println!(
        "fill_mask over all {} states: {}",
        g.state_count() - 1,
        percentiles(fill)
    );

    // accept_token and fill_mask along random walks that finish.
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let (mut accept, mut fills) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        let mut m = g.matcher();
        for step in 0..300 {
            let start = Instant::now();
            m.fill_mask(&mut words);
            fills.push(start.elapsed().as_nanos() as f64);
            if m.is_accepting() && (step > 40 || next() % 8 == 0) {
                break;
            }
            let allowed: Vec<u32> = (0..g.token_count() as u32)
                .filter(|&t| words[(t >> 5) as usize] >> (t & 31) & 1 == 1)
                .collect();
            // Prefer short tokens late in the walk so that most walks end.
            let t = if step > 20 {
                *allowed
                    .iter()
                    .filter(|&&t| g.token_bytes(t).is_some_and(|b| b.len() == 1))
                    .nth(next() as usize % 4)
                    .unwrap_or(&allowed[0])
            } else {
                allowed[next() as usize % allowed.len()]
            };
            let start = Instant::now();
            let ok = m.accept_token(std::hint::black_box(t));
            accept.push(start.elapsed().as_nanos() as f64);
            assert!(ok, "a token from the mask was refused");
        }
    }
    println!("fill_mask along walks: {}", percentiles(fills));
    println!("accept_token along walks: {}", percentiles(accept));
}
