//! A Llama-architecture decoder over a quantized GGUF file, on candle.
//!
//! The weights are immutable and shared; each sequence keeps its own
//! [`Cache`] (keys and values per layer), so one prompt can be prefilled
//! once and its cache forked, or truncated, for each decode from it.
//! [`Model::forward`] takes any number of new tokens at any position;
//! decoding feeds one at a time (`generate::Tree` says why) and prompts are
//! prefilled in one pass ([`Model::prefill`]).

use std::path::Path;

use candle_core::quantized::{gguf_file, QMatMul};
use candle_core::{DType, Device, Module, Tensor};

/// An error of the model, with what was being done.
pub type Result<T> = std::result::Result<T, String>;

fn ctx<T>(what: &str, r: candle_core::Result<T>) -> Result<T> {
    r.map_err(|e| format!("{what}: {e}"))
}

/// A weight matrix kept twice: quantized, as the GGUF file has it, and
/// dequantized for prefilling prompts. A prompt's pass is bound by
/// arithmetic, where f32 matrix products are about four times faster than
/// candle's quantized kernels (SmolLM2, 600 tokens: 1.8 s against 7.3 s).
/// Decoding stays quantized: its passes (one token each) are bound by
/// reading the weights, a sixth of the bytes quantized.
struct Linear {
    quantized: QMatMul,
    dense: QMatMul,
}

impl Linear {
    fn new(q: candle_core::quantized::QTensor, device: &Device) -> candle_core::Result<Linear> {
        let dense = QMatMul::Tensor(q.dequantize(device)?);
        Ok(Linear {
            quantized: QMatMul::from_qtensor(q)?,
            dense,
        })
    }

    fn forward(&self, x: &Tensor, pass: Pass) -> candle_core::Result<Tensor> {
        match pass {
            Pass::Prefill => self.dense.forward(x),
            Pass::Decode => self.quantized.forward(x),
        }
    }
}

/// Which weights a forward pass takes ([`Linear`]).
#[derive(Clone, Copy)]
enum Pass {
    Prefill,
    Decode,
}

struct Layer {
    wq: Linear,
    wk: Linear,
    wv: Linear,
    wo: Linear,
    w_gate: Linear,
    w_up: Linear,
    w_down: Linear,
    attn_norm: Tensor,
    ffn_norm: Tensor,
}

/// The weights and shape of the model.
pub struct Model {
    embed: Tensor,
    layers: Vec<Layer>,
    norm: Tensor,
    output: QMatMul,
    n_head: usize,
    n_kv_head: usize,
    head_dim: usize,
    eps: f32,
    cos: Tensor,
    sin: Tensor,
    /// Longest sequence (prompt and output) the rotary tables cover.
    pub context: usize,
    /// Width of the logits.
    pub vocab: usize,
    device: Device,
}

/// Keys and values of one sequence so far.
#[derive(Clone, Default)]
pub struct Cache {
    kv: Vec<Option<(Tensor, Tensor)>>,
    /// Tokens seen so far.
    pub len: usize,
}

impl Cache {
    /// The cache of the first `len` tokens of this one. The narrowed
    /// tensors share this cache's storage; appending to either copies
    /// (`Tensor::cat`), so neither sees the other's later tokens.
    pub fn truncated(&self, len: usize) -> Result<Cache> {
        if len > self.len {
            return Err(format!("cannot truncate a cache of {} to {len}", self.len));
        }
        let kv = self
            .kv
            .iter()
            .map(|slot| match slot {
                Some((k, v)) if len > 0 => Ok(Some((k.narrow(2, 0, len)?, v.narrow(2, 0, len)?))),
                _ => Ok(None),
            })
            .collect::<candle_core::Result<_>>();
        Ok(Cache {
            kv: ctx("truncate the cache", kv)?,
            len,
        })
    }
}

impl Model {
    /// Loads a Llama-architecture GGUF file onto the CPU.
    pub fn load(path: &Path) -> Result<Model> {
        let shown = path.display();
        let mut file =
            std::fs::File::open(path).map_err(|e| format!("{shown}: cannot open: {e}"))?;
        let content = gguf_file::Content::read(&mut file)
            .map_err(|e| format!("{shown}: not a GGUF file: {e}"))?;
        let device = Device::Cpu;
        let md = |key: &str| {
            content
                .metadata
                .get(key)
                .ok_or_else(|| format!("{shown}: no {key:?} in the GGUF metadata"))
        };
        let arch = md("general.architecture")?
            .to_string()
            .map_err(|e| format!("{shown}: general.architecture: {e}"))?
            .clone();
        if arch != "llama" {
            return Err(format!(
                "{shown}: architecture {arch:?}; this harness runs \"llama\" models"
            ));
        }
        let u = |key: &str| -> Result<usize> {
            md(key)?
                .to_u32()
                .map(|v| v as usize)
                .map_err(|e| format!("{shown}: {key}: {e}"))
        };
        let n_head = u("llama.attention.head_count")?;
        let n_kv_head = u("llama.attention.head_count_kv")?;
        let n_layer = u("llama.block_count")?;
        let d_model = u("llama.embedding_length")?;
        let context = u("llama.context_length")?;
        let eps = md("llama.attention.layer_norm_rms_epsilon")?
            .to_f32()
            .map_err(|e| format!("{shown}: rms epsilon: {e}"))?;
        let base = content
            .metadata
            .get("llama.rope.freq_base")
            .and_then(|v| v.to_f32().ok())
            .unwrap_or(10_000.0);
        let head_dim = d_model / n_head;

        let mut tensor = |name: &str| {
            content
                .tensor(&mut file, name, &device)
                .map_err(|e| format!("{shown}: tensor {name}: {e}"))
        };
        let embed_q = tensor("token_embd.weight")?;
        let embed = ctx("dequantize embeddings", embed_q.dequantize(&device))?;
        let vocab = embed.dims()[0];
        let norm = ctx(
            "output norm",
            tensor("output_norm.weight")?.dequantize(&device),
        )?;
        let output = match tensor("output.weight") {
            Ok(t) => t,
            Err(_) => embed_q, // tied embeddings
        };
        let output = ctx("output", QMatMul::from_qtensor(output))?;
        let mut layers = Vec::with_capacity(n_layer);
        for i in 0..n_layer {
            let mut q = |part: &str| -> Result<Linear> {
                ctx(
                    part,
                    Linear::new(tensor(&format!("blk.{i}.{part}.weight"))?, &device),
                )
            };
            let (wq, wk, wv, wo) = (q("attn_q")?, q("attn_k")?, q("attn_v")?, q("attn_output")?);
            let (w_gate, w_up, w_down) = (q("ffn_gate")?, q("ffn_up")?, q("ffn_down")?);
            let attn_norm = ctx(
                "attn norm",
                tensor(&format!("blk.{i}.attn_norm.weight"))?.dequantize(&device),
            )?;
            let ffn_norm = ctx(
                "ffn norm",
                tensor(&format!("blk.{i}.ffn_norm.weight"))?.dequantize(&device),
            )?;
            layers.push(Layer {
                wq,
                wk,
                wv,
                wo,
                w_gate,
                w_up,
                w_down,
                attn_norm,
                ffn_norm,
            });
        }
        // Rotary tables: angle of pair j at position p is p * base^(-2j/d).
        let half = head_dim / 2;
        let inv: Vec<f32> = (0..half)
            .map(|j| 1.0 / base.powf(2.0 * j as f32 / head_dim as f32))
            .collect();
        let mut angles = Vec::with_capacity(context * half);
        for p in 0..context {
            angles.extend(inv.iter().map(|f| p as f32 * f));
        }
        let angles = ctx("rope", Tensor::from_vec(angles, (context, half), &device))?;
        let cos = ctx("rope", angles.cos())?;
        let sin = ctx("rope", angles.sin())?;
        Ok(Model {
            embed,
            layers,
            norm,
            output,
            n_head,
            n_kv_head,
            head_dim,
            eps,
            cos,
            sin,
            context,
            vocab,
            device,
        })
    }

    /// An empty cache for a new sequence.
    pub fn cache(&self) -> Cache {
        Cache {
            kv: vec![None; self.layers.len()],
            len: 0,
        }
    }

    /// Feeds `tokens` after what `cache` holds and returns the logits that
    /// predict the token after the last of them, with the quantized
    /// weights. A pass of more than a few tokens sums in another order
    /// than one token at a time (see `generate::Tree`).
    pub fn forward(&self, tokens: &[u32], cache: &mut Cache) -> Result<Vec<f32>> {
        ctx("forward", self.forward_inner(tokens, cache, Pass::Decode))
    }

    /// As [`Model::forward`], for a prompt: with the dequantized weights,
    /// several times faster for many tokens, the logits differing by
    /// rounding.
    pub fn prefill(&self, tokens: &[u32], cache: &mut Cache) -> Result<Vec<f32>> {
        ctx("prefill", self.forward_inner(tokens, cache, Pass::Prefill))
    }

    fn forward_inner(
        &self,
        tokens: &[u32],
        cache: &mut Cache,
        pass: Pass,
    ) -> candle_core::Result<Vec<f32>> {
        let t = tokens.len();
        let pos = cache.len;
        if t == 0 || pos + t > self.context {
            candle_core::bail!(
                "{t} new tokens after {pos} do not fit the context of {}",
                self.context
            );
        }
        let ids = Tensor::new(tokens, &self.device)?;
        let mut x = self.embed.index_select(&ids, 0)?.unsqueeze(0)?; // (1, t, d)
        let mask = if t > 1 {
            // Row i (position pos + i) sees columns 0..=pos + i.
            let total = pos + t;
            let m: Vec<f32> = (0..t)
                .flat_map(|i| {
                    (0..total).map(move |j| if j > pos + i { f32::NEG_INFINITY } else { 0.0 })
                })
                .collect();
            Some(Tensor::from_vec(m, (t, total), &self.device)?)
        } else {
            None
        };
        let cos = self.cos.narrow(0, pos, t)?;
        let sin = self.sin.narrow(0, pos, t)?;
        let (h, kvh, hd) = (self.n_head, self.n_kv_head, self.head_dim);
        for (layer, slot) in self.layers.iter().zip(cache.kv.iter_mut()) {
            let residual = x.clone();
            let y = candle_nn::ops::rms_norm(&x, &layer.attn_norm, self.eps)?;
            let q = layer
                .wq
                .forward(&y, pass)?
                .reshape((1, t, h, hd))?
                .transpose(1, 2)?;
            let k = layer
                .wk
                .forward(&y, pass)?
                .reshape((1, t, kvh, hd))?
                .transpose(1, 2)?;
            let v = layer
                .wv
                .forward(&y, pass)?
                .reshape((1, t, kvh, hd))?
                .transpose(1, 2)?;
            let q = candle_nn::rotary_emb::rope_i(&q.contiguous()?, &cos, &sin)?;
            let k = candle_nn::rotary_emb::rope_i(&k.contiguous()?, &cos, &sin)?;
            let v = v.contiguous()?;
            let (k, v) = match slot.take() {
                None => (k, v),
                Some((kc, vc)) => (Tensor::cat(&[&kc, &k], 2)?, Tensor::cat(&[&vc, &v], 2)?),
            };
            *slot = Some((k.clone(), v.clone()));
            // Grouped-query attention: each key/value head serves h / kvh query heads.
            let rep = h / kvh;
            let total = k.dims()[2];
            let k = k
                .unsqueeze(2)?
                .expand((1, kvh, rep, total, hd))?
                .reshape((1, h, total, hd))?;
            let v = v
                .unsqueeze(2)?
                .expand((1, kvh, rep, total, hd))?
                .reshape((1, h, total, hd))?;
            let mut att = (q.matmul(&k.t()?)? / (hd as f64).sqrt())?;
            if let Some(m) = &mask {
                att = att.broadcast_add(m)?;
            }
            let att = candle_nn::ops::softmax_last_dim(&att)?;
            let y = att.matmul(&v)?.transpose(1, 2)?.reshape((1, t, h * hd))?;
            x = (layer.wo.forward(&y, pass)? + residual)?;

            let residual = x.clone();
            let y = candle_nn::ops::rms_norm(&x, &layer.ffn_norm, self.eps)?;
            let gate = candle_nn::ops::silu(&layer.w_gate.forward(&y, pass)?)?;
            let up = layer.w_up.forward(&y, pass)?;
            x = (layer.w_down.forward(&(gate * up)?, pass)? + residual)?;
        }
        cache.len += t;
        let last = x.narrow(1, t - 1, 1)?;
        let last = candle_nn::ops::rms_norm(&last, &self.norm, self.eps)?;
        let logits = self.output.forward(&last)?;
        logits.flatten_all()?.to_dtype(DType::F32)?.to_vec1::<f32>()
    }
}

/// The index of the largest value (the first, on ties).
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &v) in logits.iter().enumerate() {
        if v > logits[best] {
            best = i;
        }
    }
    best as u32
}
