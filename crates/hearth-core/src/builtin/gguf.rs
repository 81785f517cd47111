//! Reading a GGUF file's header without loading it: the checks that give a clear error
//! before the worker starts — not a GGUF, a version or architecture llama.cpp cannot run,
//! cut short (its tensors end past the end of the file) — and the numbers that say how
//! much memory it needs. Every length in the file is hostile: each is bounded, and a file
//! that ends early is "truncated", never a panic or a huge allocation.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// Text-generation architectures of the llama.cpp that `hearth-llama` vendors
/// (`llama-cpp-sys-2` 0.1.161, `src/llama-arch.cpp`), without encoders, embedders, vision
/// and speech models.
pub const ARCHITECTURES: &[&str] = &[
    "llama", "llama4", "deci", "falcon", "grok", "gpt2", "gptj", "gptneox", "mpt", "baichuan",
    "starcoder", "refact", "bloom", "stablelm", "qwen", "qwen2", "qwen2moe", "qwen3", "qwen3moe",
    "qwen3next", "qwen35", "qwen35moe", "phi2", "phi3", "phimoe", "plamo", "plamo2", "plamo3",
    "codeshell", "orion", "internlm2", "minicpm", "minicpm3", "gemma", "gemma2", "gemma3",
    "gemma3n", "gemma4", "starcoder2", "mamba", "mamba2", "jamba", "falcon-h1", "xverse",
    "command-r", "cohere2", "dbrx", "olmo", "olmo2", "olmoe", "openelm", "arctic", "deepseek",
    "deepseek2", "chatglm", "glm4", "glm4moe", "bitnet", "jais", "nemotron", "nemotron_h",
    "exaone", "exaone4", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7", "granite", "granitemoe",
    "granitehybrid", "chameleon", "plm", "bailingmoe", "bailingmoe2", "dots1", "arcee", "ernie4_5",
    "ernie4_5-moe", "hunyuan-moe", "hunyuan-dense", "smollm3", "gpt-oss", "lfm2", "lfm2moe",
    "seed_oss", "apertus", "minimax-m2", "mistral3", "mistral4",
];

/// Longest key or string the reader accepts (a chat template is a few KiB).
const MAX_STRING: u64 = 16 * 1024 * 1024;
/// Most key–value pairs and tensors a header may declare.
const MAX_ENTRIES: u64 = 1 << 20;
/// Most elements of one array (a vocabulary is ~150k strings).
const MAX_ARRAY: u64 = 1 << 26;

/// What the header says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GgufInfo {
    pub version: u32,
    pub architecture: String,
    pub name: Option<String>,
    pub context_length: Option<u64>,
    pub block_count: Option<u64>,
    pub embedding_length: Option<u64>,
    pub head_count: Option<u64>,
    pub head_count_kv: Option<u64>,
    pub has_chat_template: bool,
    /// Its chat template renders tools: the model was taught to call them.
    pub renders_tools: bool,
    pub tensor_count: u64,
    /// Bytes the file must have for all its tensors (when every tensor type is known).
    pub needed_bytes: Option<u64>,
    pub file_bytes: u64,
}

/// Why a file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GgufError {
    #[error("{0} is not a GGUF model file")]
    NotGguf(String),
    #[error("{file} is GGUF version {version}; llama.cpp reads versions 2 and 3")]
    Version { file: String, version: u32 },
    #[error("{0} is cut short or damaged: its header or tensors run past the end of the file")]
    Truncated(String),
    #[error("{0} is damaged: {1}")]
    Corrupt(String, String),
    #[error("{file} is a {arch:?} model, which the built-in engine cannot run as a chat model")]
    Architecture { file: String, arch: String },
    #[error("{0} cannot be read: {1}")]
    Io(String, String),
}

struct Reader<R> {
    r: R,
    file: String,
}

impl<R: Read + Seek> Reader<R> {
    fn bytes<const N: usize>(&mut self) -> Result<[u8; N], GgufError> {
        let mut b = [0u8; N];
        self.r.read_exact(&mut b).map_err(|e| self.io(e))?;
        Ok(b)
    }
    fn io(&self, e: std::io::Error) -> GgufError {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            GgufError::Truncated(self.file.clone())
        } else {
            GgufError::Io(self.file.clone(), e.to_string())
        }
    }
    fn u32(&mut self) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.bytes()?))
    }
    fn u64(&mut self) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.bytes()?))
    }
    fn corrupt(&self, what: &str) -> GgufError {
        GgufError::Corrupt(self.file.clone(), what.into())
    }
    fn string(&mut self) -> Result<String, GgufError> {
        let n = self.u64()?;
        if n > MAX_STRING {
            return Err(self.corrupt("a string is longer than any model needs"));
        }
        let mut b = Vec::new();
        (&mut self.r)
            .take(n)
            .read_to_end(&mut b)
            .map_err(|e| self.io(e))?;
        if b.len() as u64 != n {
            return Err(GgufError::Truncated(self.file.clone()));
        }
        Ok(String::from_utf8_lossy(&b).into_owned())
    }
    fn skip(&mut self, n: u64) -> Result<(), GgufError> {
        let n = i64::try_from(n).map_err(|_| self.corrupt("a length is out of range"))?;
        self.r.seek(SeekFrom::Current(n)).map_err(|e| self.io(e))?;
        Ok(())
    }
    fn pos(&mut self) -> Result<u64, GgufError> {
        self.r.stream_position().map_err(|e| self.io(e))
    }
}

/// A scalar value, as far as the header's numbers need one.
enum Val {
    Int(u64),
    Str(String),
    Other,
}

fn scalar_size(t: u32) -> Option<u64> {
    match t {
        0 | 1 | 7 => Some(1),
        2 | 3 => Some(2),
        4..=6 => Some(4),
        10..=12 => Some(8),
        _ => None,
    }
}

fn value<R: Read + Seek>(r: &mut Reader<R>, t: u32) -> Result<Val, GgufError> {
    Ok(match t {
        0 => Val::Int(u64::from(r.bytes::<1>()?[0])),
        2 => Val::Int(u64::from(u16::from_le_bytes(r.bytes()?))),
        4 => Val::Int(u64::from(r.u32()?)),
        5 => Val::Int(u64::try_from(i32::from_le_bytes(r.bytes()?)).unwrap_or(0)),
        10 => Val::Int(r.u64()?),
        11 => Val::Int(u64::try_from(i64::from_le_bytes(r.bytes()?)).unwrap_or(0)),
        8 => Val::Str(r.string()?),
        9 => {
            let inner = r.u32()?;
            let n = r.u64()?;
            if n > MAX_ARRAY {
                return Err(r.corrupt("an array is longer than any model needs"));
            }
            match (inner, scalar_size(inner)) {
                (_, Some(size)) => r.skip(size.saturating_mul(n))?,
                (8, None) => {
                    for _ in 0..n {
                        let len = r.u64()?;
                        if len > MAX_STRING {
                            return Err(r.corrupt("a string is longer than any model needs"));
                        }
                        r.skip(len)?;
                    }
                }
                _ => return Err(r.corrupt("an array of arrays or of an unknown type")),
            }
            Val::Other
        }
        t => match scalar_size(t) {
            Some(size) => {
                r.skip(size)?;
                Val::Other
            }
            None => return Err(r.corrupt("a value of an unknown type")),
        },
    })
}

/// Bytes of `elements` values of ggml type `t`, when the type is known.
fn tensor_bytes(t: u32, elements: u64) -> Option<u64> {
    let (block, size) = match t {
        0 => (1, 4),
        1 | 30 => (1, 2),
        2 | 20 => (32, 18),
        3 => (32, 20),
        6 => (32, 22),
        7 => (32, 24),
        8 => (32, 34),
        9 => (32, 36),
        10 => (256, 84),
        11 | 21 => (256, 110),
        12 => (256, 144),
        13 => (256, 176),
        14 => (256, 210),
        15 => (256, 292),
        16 => (256, 66),
        17 => (256, 74),
        18 => (256, 98),
        19 => (256, 50),
        22 => (256, 82),
        23 => (256, 136),
        24 => (1, 1),
        25 => (1, 2),
        26 => (1, 4),
        27 | 28 => (1, 8),
        29 => (256, 56),
        _ => return None,
    };
    Some(elements.div_ceil(block).saturating_mul(size))
}

/// Reads and checks the header of the GGUF at `path`.
pub fn inspect(path: &Path) -> Result<GgufInfo, GgufError> {
    let file = path.display().to_string();
    let f = File::open(path).map_err(|e| GgufError::Io(file.clone(), e.to_string()))?;
    let file_bytes = f
        .metadata()
        .map_err(|e| GgufError::Io(file.clone(), e.to_string()))?
        .len();
    let mut r = Reader {
        r: BufReader::with_capacity(64 * 1024, f),
        file: file.clone(),
    };
    let magic = r.bytes::<4>().map_err(|_| GgufError::NotGguf(file.clone()))?;
    if &magic != b"GGUF" {
        return Err(GgufError::NotGguf(file));
    }
    let version = r.u32()?;
    if !(2..=3).contains(&version) {
        return Err(GgufError::Version { file, version });
    }
    let tensor_count = r.u64()?;
    let kv_count = r.u64()?;
    if tensor_count > MAX_ENTRIES || kv_count > MAX_ENTRIES {
        return Err(r.corrupt("it declares more entries than any model has"));
    }
    let mut info = GgufInfo {
        version,
        tensor_count,
        file_bytes,
        ..GgufInfo::default()
    };
    let mut ints: Vec<(String, u64)> = Vec::new();
    let mut alignment = 32u64;
    for _ in 0..kv_count {
        let key = r.string()?;
        let t = r.u32()?;
        match (key.as_str(), value(&mut r, t)?) {
            ("general.architecture", Val::Str(s)) => info.architecture = s,
            ("general.name", Val::Str(s)) => info.name = Some(s),
            ("general.alignment", Val::Int(n)) if n > 0 && n <= 1 << 20 => alignment = n,
            ("tokenizer.chat_template", Val::Str(t)) => {
                info.has_chat_template = true;
                info.renders_tools = t.contains("tools");
            }
            (_, Val::Int(n)) => ints.push((key, n)),
            _ => {}
        }
    }
    if info.architecture.is_empty() {
        return Err(r.corrupt("it names no architecture"));
    }
    if !ARCHITECTURES.contains(&info.architecture.as_str()) {
        return Err(GgufError::Architecture {
            file,
            arch: info.architecture,
        });
    }
    let arch = info.architecture.clone();
    let int = |suffix: &str| {
        let key = format!("{arch}.{suffix}");
        ints.iter().find(|(k, _)| *k == key).map(|&(_, v)| v)
    };
    info.context_length = int("context_length");
    info.block_count = int("block_count");
    info.embedding_length = int("embedding_length");
    info.head_count = int("attention.head_count");
    info.head_count_kv = int("attention.head_count_kv").or(info.head_count);
    let mut end = 0u64;
    let mut known = true;
    for _ in 0..tensor_count {
        let _name = r.string()?;
        let dims = r.u32()?;
        if dims > 8 {
            return Err(r.corrupt("a tensor has more dimensions than ggml allows"));
        }
        let mut elements = 1u64;
        for _ in 0..dims {
            elements = elements.saturating_mul(r.u64()?);
        }
        let t = r.u32()?;
        let offset = r.u64()?;
        match tensor_bytes(t, elements) {
            Some(b) => end = end.max(offset.saturating_add(b)),
            None => known = false,
        }
    }
    let header_end = r.pos()?;
    let data_start = header_end.div_ceil(alignment).saturating_mul(alignment);
    if known {
        let needed = data_start.saturating_add(end);
        info.needed_bytes = Some(needed);
        if needed > file_bytes {
            return Err(GgufError::Truncated(file));
        }
    } else if data_start > file_bytes {
        return Err(GgufError::Truncated(file));
    }
    Ok(info)
}

impl GgufInfo {
    /// Bytes of the KV cache for `n_ctx` tokens (f16 keys and values), when the header
    /// gives the shapes.
    pub fn kv_bytes(&self, n_ctx: u64) -> Option<u64> {
        let layers = self.block_count?;
        let embd = self.embedding_length?;
        let heads = self.head_count?.max(1);
        let kv_heads = self.head_count_kv?;
        let kv_dim = embd / heads * kv_heads;
        Some(2 * layers * n_ctx * kv_dim * 2)
    }
}
