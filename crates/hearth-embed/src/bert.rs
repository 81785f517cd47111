//! A BERT encoder written for sentence embeddings on the CPU: the forward pass of
//! all-MiniLM-L6-v2 and bge-small over `gemm` (the matrix multiplication candle itself
//! calls), without candle's tensor machinery.
//!
//! Why not candle's `BertModel`: profiled embedding 256-token texts, its matrix
//! multiplications were a third of the time; the rest was element-wise work done one
//! scalar at a time (`expf` in the softmax, `erff` in GELU), a fresh tensor per operation
//! (the kernel zeroing new pages was 14%), and padding every text of a batch to its
//! longest. Here the texts of a batch are packed end to end (no padding, no mask: each
//! text's attention runs over its own tokens only), the buffers are allocated once per
//! batch, bias, residual and scale are folded into the multiplications, and the
//! element-wise kernels are compiled for AVX-512 / AVX2 and chosen at run time.
//!
//! Its vectors equal candle's to a cosine above 0.99999 (a test checks it on texts of many
//! lengths); the weights are the same f32 ones.
//! (Over 600 lines: one encoder's forward pass and its kernels, kept whole to read against the reference.)

use candle_core::DType;
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{Config, HiddenAct};

use super::catalog::Pooling;

/// Why a model could not be loaded: a message for [`super::EmbedError::Corrupt`].
pub type LoadError = String;

/// The weights of one BERT encoder, as f32, with each linear layer's matrix transposed
/// (inputs × outputs, row-major) and the query, key and value projections side by side.
pub struct Bert {
    hidden: usize,
    heads: usize,
    vocab: usize,
    positions: usize,
    eps: f32,
    act: Act,
    word: Vec<f32>,
    position: Vec<f32>,
    /// Token type 0's row: every text here is a single segment.
    token_type: Vec<f32>,
    norm: Norm,
    layers: Vec<Layer>,
}

#[derive(Clone, Copy)]
enum Act {
    GeluErf,
    GeluTanh,
    Relu,
}

struct Linear {
    /// `inputs × outputs`, row-major.
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

struct Layer {
    qkv: Linear,
    attention_out: Linear,
    attention_norm: Norm,
    up: Linear,
    down: Linear,
    out_norm: Norm,
}

/// Most layers a config may ask for (bge-small has 12).
const MAX_LAYERS: usize = 64;

impl Bert {
    /// Reads the encoder's weights from `vb` (with or without the `bert.`-style prefix, as
    /// candle's loader accepts) and checks every shape against `config`.
    pub fn load(vb: VarBuilder, config: &Config) -> Result<Self, LoadError> {
        let hidden = config.hidden_size;
        let heads = config.num_attention_heads;
        if heads == 0 || !hidden.is_multiple_of(heads) {
            return Err(format!(
                "{heads} attention heads do not divide {hidden} dimensions"
            ));
        }
        if config.num_hidden_layers == 0 || config.num_hidden_layers > MAX_LAYERS {
            return Err(format!("{} layers", config.num_hidden_layers));
        }
        if config.intermediate_size == 0 || config.type_vocab_size == 0 {
            return Err("an empty intermediate layer or no token types".into());
        }
        let act = match config.hidden_act {
            HiddenAct::Gelu => Act::GeluErf,
            HiddenAct::GeluApproximate => Act::GeluTanh,
            HiddenAct::Relu => Act::Relu,
        };
        let vb = if vb.contains_tensor("embeddings.word_embeddings.weight") {
            vb
        } else {
            match &config.model_type {
                Some(prefix) => vb.pp(prefix),
                None => vb,
            }
        };
        let err = |e: candle_core::Error| e.to_string();
        let matrix = |vb: &VarBuilder, rows: usize, cols: usize, name: &str| {
            vb.get_with_hints_dtype((rows, cols), name, Default::default(), DType::F32)
                .and_then(|t| t.flatten_all()?.to_vec1::<f32>())
                .map_err(err)
        };
        let vector = |vb: &VarBuilder, len: usize, name: &str| {
            vb.get_with_hints_dtype(len, name, Default::default(), DType::F32)
                .and_then(|t| t.to_vec1::<f32>())
                .map_err(err)
        };
        let norm = |vb: VarBuilder| -> Result<Norm, LoadError> {
            Ok(Norm {
                weight: vector(&vb, hidden, "weight")?,
                bias: vector(&vb, hidden, "bias")?,
            })
        };
        // nn.Linear stores `outputs × inputs`; transposed once here.
        let linear = |vbs: &[VarBuilder], inputs: usize, outputs: usize| {
            let mut weight = vec![0f32; inputs * outputs * vbs.len()];
            let mut bias = Vec::with_capacity(outputs * vbs.len());
            let width = outputs * vbs.len();
            for (part, vb) in vbs.iter().enumerate() {
                let w = matrix(vb, outputs, inputs, "weight")?;
                for o in 0..outputs {
                    for i in 0..inputs {
                        weight[i * width + part * outputs + o] = w[o * inputs + i];
                    }
                }
                bias.extend(vector(vb, outputs, "bias")?);
            }
            Ok::<_, LoadError>(Linear {
                weight,
                bias,
                inputs,
                outputs: width,
            })
        };
        let emb = vb.pp("embeddings");
        let word = matrix(
            &emb.pp("word_embeddings"),
            config.vocab_size,
            hidden,
            "weight",
        )?;
        let position = matrix(
            &emb.pp("position_embeddings"),
            config.max_position_embeddings,
            hidden,
            "weight",
        )?;
        let mut token_type = matrix(
            &emb.pp("token_type_embeddings"),
            config.type_vocab_size,
            hidden,
            "weight",
        )?;
        token_type.truncate(hidden);
        let embed_norm = norm(emb.pp("LayerNorm"))?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for l in 0..config.num_hidden_layers {
            let vb = vb.pp(format!("encoder.layer.{l}"));
            let att = vb.pp("attention");
            let own = att.pp("self");
            layers.push(Layer {
                qkv: linear(
                    &[own.pp("query"), own.pp("key"), own.pp("value")],
                    hidden,
                    hidden,
                )?,
                attention_out: linear(&[att.pp("output").pp("dense")], hidden, hidden)?,
                attention_norm: norm(att.pp("output").pp("LayerNorm"))?,
                up: linear(
                    &[vb.pp("intermediate").pp("dense")],
                    hidden,
                    config.intermediate_size,
                )?,
                down: linear(
                    &[vb.pp("output").pp("dense")],
                    config.intermediate_size,
                    hidden,
                )?,
                out_norm: norm(vb.pp("output").pp("LayerNorm"))?,
            });
        }
        Ok(Bert {
            hidden,
            heads,
            vocab: config.vocab_size,
            positions: config.max_position_embeddings,
            eps: config.layer_norm_eps as f32,
            act,
            word,
            position,
            token_type,
            norm: embed_norm,
            layers,
        })
    }

    /// The pooled, L2-normalised vector of each text (its token ids, `[CLS]` … `[SEP]`).
    /// An empty text, one longer than the model's positions or an id outside its
    /// vocabulary is an error, never a panic.
    pub fn embed(&self, texts: &[&[u32]], pooling: Pooling) -> Result<Vec<Vec<f32>>, String> {
        let h = self.hidden;
        for ids in texts {
            if ids.is_empty() || ids.len() > self.positions {
                return Err(format!(
                    "a text of {} tokens (the model takes 1 to {})",
                    ids.len(),
                    self.positions
                ));
            }
            if let Some(id) = ids.iter().find(|&&id| id as usize >= self.vocab) {
                return Err(format!("token id {id} is outside the vocabulary"));
            }
        }
        let tokens: usize = texts.iter().map(|t| t.len()).sum();
        let longest = texts.iter().map(|t| t.len()).max().unwrap_or(0);
        let inter = self.layers.first().map_or(0, |l| l.up.outputs);
        let mut x = vec![0f32; tokens * h];
        let mut qkv = vec![0f32; tokens * 3 * h];
        let mut ctx = vec![0f32; tokens * h];
        let mut tmp = vec![0f32; tokens * h];
        let mut up = vec![0f32; tokens * inter];
        let mut scores = vec![0f32; longest * longest];

        let mut row = 0;
        for ids in texts {
            for (p, &id) in ids.iter().enumerate() {
                let out = &mut x[row * h..(row + 1) * h];
                let w = &self.word[id as usize * h..(id as usize + 1) * h];
                let pos = &self.position[p * h..(p + 1) * h];
                kernels::add3(out, w, pos, &self.token_type);
                row += 1;
            }
        }
        kernels::layer_norm(&mut x, h, &self.norm.weight, &self.norm.bias, self.eps);

        let head = h / self.heads;
        let scale = 1.0 / (head as f32).sqrt();
        for layer in &self.layers {
            // Q, K and V of every token: (tokens × 3h).
            fill_rows(&mut qkv, &layer.qkv.bias);
            linear(&x, &layer.qkv, &mut qkv, tokens);
            // Attention, text by text and head by head, over the text's own tokens.
            let mut start = 0;
            for ids in texts {
                let n = ids.len();
                let s = &mut scores[..n * n];
                for hd in 0..self.heads {
                    let q = &qkv[start * 3 * h + hd * head..];
                    let k = &qkv[start * 3 * h + h + hd * head..];
                    let v = &qkv[start * 3 * h + 2 * h + hd * head..];
                    // scores = scale · Q Kᵀ
                    matmul(
                        (n, n, head),
                        Out {
                            data: s,
                            rs: n,
                            accumulate: false,
                        },
                        In {
                            data: q,
                            rs: 3 * h,
                            cs: 1,
                        },
                        In {
                            data: k,
                            rs: 1,
                            cs: 3 * h,
                        },
                        scale,
                    );
                    kernels::softmax_rows(s, n);
                    // context = P V, into this head's columns.
                    matmul(
                        (n, head, n),
                        Out {
                            data: &mut ctx[start * h + hd * head..],
                            rs: h,
                            accumulate: false,
                        },
                        In {
                            data: s,
                            rs: n,
                            cs: 1,
                        },
                        In {
                            data: v,
                            rs: 3 * h,
                            cs: 1,
                        },
                        1.0,
                    );
                }
                start += n;
            }
            // tmp = x + bias + context · W; x = norm(tmp)
            residual_rows(&mut tmp, &x, &layer.attention_out.bias);
            linear(&ctx, &layer.attention_out, &mut tmp, tokens);
            x.copy_from_slice(&tmp);
            kernels::layer_norm(
                &mut x,
                h,
                &layer.attention_norm.weight,
                &layer.attention_norm.bias,
                self.eps,
            );
            // Feed-forward.
            fill_rows(&mut up, &layer.up.bias);
            linear(&x, &layer.up, &mut up, tokens);
            match self.act {
                Act::GeluErf => kernels::gelu_erf(&mut up),
                Act::GeluTanh => kernels::gelu_tanh(&mut up),
                Act::Relu => up.iter_mut().for_each(|v| *v = v.max(0.0)),
            }
            residual_rows(&mut tmp, &x, &layer.down.bias);
            linear(&up, &layer.down, &mut tmp, tokens);
            x.copy_from_slice(&tmp);
            kernels::layer_norm(
                &mut x,
                h,
                &layer.out_norm.weight,
                &layer.out_norm.bias,
                self.eps,
            );
        }

        let mut out = Vec::with_capacity(texts.len());
        let mut start = 0;
        for ids in texts {
            let n = ids.len();
            let mut v = vec![0f32; h];
            match pooling {
                Pooling::Mean => {
                    for r in start..start + n {
                        for (acc, val) in v.iter_mut().zip(&x[r * h..(r + 1) * h]) {
                            *acc += val;
                        }
                    }
                    v.iter_mut().for_each(|a| *a /= n as f32);
                }
                Pooling::Cls => v.copy_from_slice(&x[start * h..(start + 1) * h]),
            }
            let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt().max(1e-12);
            v.iter_mut().for_each(|a| *a /= norm);
            out.push(v);
            start += n;
        }
        Ok(out)
    }
}

/// Every row of `dst` (rows of `bias.len()`) set to `bias`.
fn fill_rows(dst: &mut [f32], bias: &[f32]) {
    for row in dst.chunks_exact_mut(bias.len()) {
        row.copy_from_slice(bias);
    }
}

/// Every row of `dst` set to the same row of `src` plus `bias`.
fn residual_rows(dst: &mut [f32], src: &[f32], bias: &[f32]) {
    for (d, s) in dst
        .chunks_exact_mut(bias.len())
        .zip(src.chunks_exact(bias.len()))
    {
        for ((d, s), b) in d.iter_mut().zip(s).zip(bias) {
            *d = s + b;
        }
    }
}

/// `dst += src · W` for `rows` rows of `src` (each `inputs` long).
fn linear(src: &[f32], l: &Linear, dst: &mut [f32], rows: usize) {
    matmul(
        (rows, l.outputs, l.inputs),
        Out {
            data: dst,
            rs: l.outputs,
            accumulate: true,
        },
        In {
            data: src,
            rs: l.inputs,
            cs: 1,
        },
        In {
            data: &l.weight,
            rs: l.outputs,
            cs: 1,
        },
        1.0,
    );
}

/// A matrix read from a slice: element (r, c) at `r * rs + c * cs`.
struct In<'a> {
    data: &'a [f32],
    rs: usize,
    cs: usize,
}

/// The result: row stride `rs`, columns contiguous; added to what is there with
/// `accumulate`, else overwritten.
struct Out<'a> {
    data: &'a mut [f32],
    rs: usize,
    accumulate: bool,
}

/// `out (m × n) [+]= scale · lhs (m × k) · rhs (k × n)`, single-threaded (the embedder runs
/// one batch per core).
///
/// # Panics
/// If a matrix does not fit its slice: the shapes come from a config checked at load, so
/// that is a bug here, not bad input.
fn matmul((m, n, k): (usize, usize, usize), out: Out, lhs: In, rhs: In, scale: f32) {
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    let fits = |len: usize, rows: usize, cols: usize, rs: usize, cs: usize| {
        (rows - 1) * rs + (cols - 1) * cs < len
    };
    assert!(
        fits(out.data.len(), m, n, out.rs, 1)
            && fits(lhs.data.len(), m, k, lhs.rs, lhs.cs)
            && fits(rhs.data.len(), k, n, rhs.rs, rhs.cs),
        "matmul shapes do not fit their buffers"
    );
    // SAFETY: every element gemm touches lies inside its slice (checked just above), the
    // output is a unique borrow, and gemm reads `dst` only when `read_dst` is set.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out.data.as_mut_ptr(),
            1,
            out.rs as isize,
            out.accumulate,
            lhs.data.as_ptr(),
            lhs.cs as isize,
            lhs.rs as isize,
            rhs.data.as_ptr(),
            rhs.cs as isize,
            rhs.rs as isize,
            1.0,
            scale,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

/// Element-wise kernels, each compiled three times (AVX-512, AVX2+FMA, baseline) from
/// one portable body the compiler vectorises, and chosen once at run time.
mod kernels {
    use std::sync::OnceLock;

    #[derive(Clone, Copy, PartialEq)]
    enum Level {
        V4,
        V3,
        Base,
    }

    fn level() -> Level {
        static LEVEL: OnceLock<Level> = OnceLock::new();
        *LEVEL.get_or_init(|| {
            #[cfg(target_arch = "x86_64")]
            {
                use std::arch::is_x86_feature_detected as has;
                if has!("avx512f") && has!("avx512vl") && has!("avx512bw") && has!("avx512dq") {
                    return Level::V4;
                }
                if has!("avx2") && has!("fma") {
                    return Level::V3;
                }
            }
            Level::Base
        })
    }

    /// Defines `pub fn $name(args)` running `$body` built for the best level the CPU has.
    macro_rules! dispatch {
        ($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) $body:block) => {
            $(#[$doc])*
            pub fn $name($($arg: $ty),*) {
                #[inline(always)]
                fn body($($arg: $ty),*) $body
                #[cfg(target_arch = "x86_64")]
                {
                    #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
                    unsafe fn v4($($arg: $ty),*) { body($($arg),*) }
                    #[target_feature(enable = "avx2,fma")]
                    unsafe fn v3($($arg: $ty),*) { body($($arg),*) }
                    match level() {
                        // SAFETY: `level` found these features on this CPU.
                        Level::V4 => return unsafe { v4($($arg),*) },
                        // SAFETY: as above.
                        Level::V3 => return unsafe { v3($($arg),*) },
                        Level::Base => {}
                    }
                }
                body($($arg),*)
            }
        };
    }

    const LANES: usize = 16;

    /// e^x to about 2 ulp for x in [-87, 88] (clamped outside): Cephes' `expf`, branch-free
    /// so it vectorises.
    #[inline(always)]
    pub fn exp(x: f32) -> f32 {
        const MAGIC: f32 = 12_582_912.0; // 1.5 × 2²³: adding it rounds to an integer
        let x = x.clamp(-87.0, 88.0);
        let n = (x * std::f32::consts::LOG2_E + MAGIC) - MAGIC;
        let r = x - n * 0.693_359_4 + n * 2.121_944_4e-4;
        let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2)
            * r
            + 1.666_666_5e-1)
            * r
            + 0.5;
        let y = p * r * r + r + 1.0;
        y * f32::from_bits(((n as i32 + 127) << 23) as u32)
    }

    /// erf(x) to 1e-6 in f32 (Abramowitz & Stegun 7.1.26: 1.5e-7 in exact arithmetic),
    /// branch-free.
    #[inline(always)]
    pub fn erf(x: f32) -> f32 {
        let a = x.abs();
        let t = 1.0 / (1.0 + 0.327_591_1 * a);
        let poly = ((((1.061_405_4 * t - 1.453_152_1) * t + 1.421_413_7) * t - 0.284_496_74) * t
            + 0.254_829_6)
            * t;
        let y = 1.0 - poly * exp(-a * a);
        y.copysign(x)
    }

    /// tanh(x), branch-free, from [`exp`].
    #[inline(always)]
    fn tanh(x: f32) -> f32 {
        let e = exp(-2.0 * x.abs());
        ((1.0 - e) / (1.0 + e)).copysign(x)
    }

    dispatch! {
        /// `out = a + b + c`, element-wise.
        fn add3(out: &mut [f32], a: &[f32], b: &[f32], c: &[f32]) {
            for (((o, a), b), c) in out.iter_mut().zip(a).zip(b).zip(c) {
                *o = a + b + c;
            }
        }
    }

    dispatch! {
        /// GELU with the exact (erf) curve, in place.
        fn gelu_erf(x: &mut [f32]) {
            for v in x.iter_mut() {
                *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
            }
        }
    }

    dispatch! {
        /// GELU with the tanh approximation, in place.
        fn gelu_tanh(x: &mut [f32]) {
            for v in x.iter_mut() {
                let u = 0.797_884_6 * (*v + 0.044_715 * *v * *v * *v);
                *v = 0.5 * *v * (1.0 + tanh(u));
            }
        }
    }

    /// Sum of `x`, in [`LANES`] partial sums so the loop vectorises.
    #[inline(always)]
    fn sum(x: &[f32]) -> f32 {
        let mut acc = [0f32; LANES];
        let mut chunks = x.chunks_exact(LANES);
        for c in &mut chunks {
            for j in 0..LANES {
                acc[j] += c[j];
            }
        }
        acc.iter().sum::<f32>() + chunks.remainder().iter().sum::<f32>()
    }

    dispatch! {
        /// Softmax of each row of `x` (rows of `len`), in place.
        fn softmax_rows(x: &mut [f32], len: usize) {
            for row in x.chunks_exact_mut(len) {
                let mut top = [f32::NEG_INFINITY; LANES];
                let mut chunks = row.chunks_exact(LANES);
                for c in &mut chunks {
                    for j in 0..LANES {
                        top[j] = if c[j] > top[j] { c[j] } else { top[j] };
                    }
                }
                let max = chunks
                    .remainder()
                    .iter()
                    .chain(&top)
                    .fold(f32::NEG_INFINITY, |m, &v| if v > m { v } else { m });
                for v in row.iter_mut() {
                    *v = exp(*v - max);
                }
                let inv = 1.0 / sum(row);
                for v in row.iter_mut() {
                    *v *= inv;
                }
            }
        }
    }

    dispatch! {
        /// LayerNorm of each row of `x` (rows of `width`), in place.
        fn layer_norm(x: &mut [f32], width: usize, weight: &[f32], bias: &[f32], eps: f32) {
            for row in x.chunks_exact_mut(width) {
                let mean = sum(row) / width as f32;
                let mut acc = [0f32; LANES];
                let mut chunks = row.chunks_exact(LANES);
                for c in &mut chunks {
                    for j in 0..LANES {
                        let d = c[j] - mean;
                        acc[j] += d * d;
                    }
                }
                let rest: f32 = chunks.remainder().iter().map(|v| (v - mean) * (v - mean)).sum();
                let var = (acc.iter().sum::<f32>() + rest) / width as f32;
                let inv = 1.0 / (var + eps).sqrt();
                for ((v, w), b) in row.iter_mut().zip(weight).zip(bias) {
                    *v = (*v - mean) * inv * w + b;
                }
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn exp_and_erf_match_the_library_functions() {
            let mut worst_exp = 0f64;
            let mut worst_erf = 0f64;
            for i in -80_000..=80_000 {
                let x = i as f32 / 1000.0;
                let rel = ((exp(x) as f64) - (x as f64).exp()).abs() / (x as f64).exp();
                worst_exp = worst_exp.max(rel);
                let e = (erf(x / 10.0) as f64 - libm::erf(x as f64 / 10.0)).abs();
                worst_erf = worst_erf.max(e);
            }
            assert!(worst_exp < 1e-6, "exp relative error {worst_exp}");
            assert!(worst_erf < 1e-6, "erf absolute error {worst_erf}");
        }

        #[test]
        fn softmax_and_norm_rows_are_right_at_every_level() {
            // Lengths around the lane count, so the remainders are exercised.
            for len in [1usize, 3, 15, 16, 17, 40, 384] {
                let row: Vec<f32> = (0..len).map(|i| ((i * 37) % 11) as f32 - 5.0).collect();
                let mut s = row.clone();
                softmax_rows(&mut s, len);
                let max = row.iter().cloned().fold(f32::MIN, f32::max);
                let total: f32 = row.iter().map(|v| (v - max).exp()).sum();
                for (got, v) in s.iter().zip(&row) {
                    assert!((got - (v - max).exp() / total).abs() < 1e-6);
                }
                let mut n = row.clone();
                let ones = vec![1.0; len];
                let zeros = vec![0.0; len];
                layer_norm(&mut n, len, &ones, &zeros, 1e-12);
                let mean: f32 = n.iter().sum::<f32>() / len as f32;
                assert!(mean.abs() < 1e-5, "mean {mean} at {len}");
            }
        }
    }
}

/// The encoder against candle's `BertModel` on the same weights: what it replaced.
#[cfg(test)]
mod reference {
    use candle_core::{Device, Tensor};
    use candle_nn::VarBuilder;
    use candle_transformers::models::bert::{BertModel, Config, DTYPE};

    use super::super::catalog::{LocalModel, Pooling};
    use super::super::local::{load_model, load_tokenizer};
    use super::super::{ModelFiles, ModelSource};

    fn files() -> ModelFiles {
        let dir = std::env::var_os("HEARTH_EMBED_MODEL_DIR")
            .map(std::path::PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .map(|h| std::path::PathBuf::from(h).join(".cache/hearth-models/minilm"))
            })
            .expect("HEARTH_EMBED_MODEL_DIR or HOME");
        match ModelSource::dir(&dir).find() {
            Ok(Some(files)) => files,
            other => panic!(
                "the embedding model is not installed at {} ({other:?}): run scripts/fetch-model.sh",
                dir.display()
            ),
        }
    }

    /// candle's model, one text at a time (no padding), mean-pooled and normalised.
    fn candle_vector(model: &BertModel, ids: &[u32]) -> Vec<f32> {
        let ids = Tensor::from_vec(ids.to_vec(), (1, ids.len()), &Device::Cpu).unwrap();
        let types = ids.zeros_like().unwrap();
        let hidden = model.forward(&ids, &types, None).unwrap(); // (1, n, 384)
        let mean = hidden.mean(1).unwrap().squeeze(0).unwrap();
        let v: Vec<f32> = mean.to_vec1().unwrap();
        let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt();
        v.iter().map(|a| a / norm).collect()
    }

    #[test]
    fn vectors_equal_candles_bert_on_texts_of_every_length_packed_in_one_batch() {
        let files = files();
        let tokenizer = load_tokenizer(&files).unwrap();
        let ours = load_model(&files, LocalModel::MiniLm).unwrap();
        let config: Config =
            serde_json::from_str(&std::fs::read_to_string(&files.config).unwrap()).unwrap();
        let vb = VarBuilder::from_buffered_safetensors(
            std::fs::read(&files.weights).unwrap(),
            DTYPE,
            &Device::Cpu,
        )
        .unwrap();
        let theirs = BertModel::load(vb, &config).unwrap();
        let prose = "Hearth keeps what you tell it in one encrypted file on your own machine; \
                     my sister moved to Lisbon last spring and error E1234 came back twice. ";
        let texts: Vec<String> = vec![
            String::new(),
            "hi".into(),
            "The quick brown fox.".into(),
            prose.into(),
            prose.repeat(3),
            prose.repeat(12), // cut at 256 tokens
            "ünïcödé — 東京 🙂 tabs\tand\nnewlines".into(),
        ];
        let encodings: Vec<_> = texts
            .iter()
            .map(|t| tokenizer.encode(t.as_str(), true).unwrap())
            .collect();
        let ids: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();
        assert_eq!(ids.iter().map(|i| i.len()).max(), Some(256));
        let packed = ours.embed(&ids, Pooling::Mean).unwrap();
        for (i, (got, ids)) in packed.iter().zip(&ids).enumerate() {
            let want = candle_vector(&theirs, ids);
            let cos: f32 = got.iter().zip(&want).map(|(a, b)| a * b).sum();
            assert!(
                cos > 0.99999,
                "text {i} ({} tokens): cosine {cos}",
                ids.len()
            );
        }
        // A text alone gets the vector it gets in a batch.
        let alone = ours.embed(&ids[3..4], Pooling::Mean).unwrap();
        let cos: f32 = alone[0].iter().zip(&packed[3]).map(|(a, b)| a * b).sum();
        assert!(cos > 0.999999, "batched vs alone: {cos}");
    }

    #[test]
    fn bad_token_ids_and_lengths_are_errors_not_panics() {
        let files = files();
        let ours = load_model(&files, LocalModel::MiniLm).unwrap();
        assert!(
            ours.embed(&[&[101, 4_000_000_000, 102]], Pooling::Mean)
                .is_err()
        );
        assert!(ours.embed(&[&[]], Pooling::Mean).is_err());
        assert!(ours.embed(&[&vec![100u32; 513]], Pooling::Mean).is_err());
        assert!(ours.embed(&[], Pooling::Mean).unwrap().is_empty());
    }
}
