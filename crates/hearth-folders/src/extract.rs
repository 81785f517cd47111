//! Text out of a file: the part of ingestion that reads hostile bytes. It runs in the
//! extraction worker, a child process ([`super::worker`]), never in the app: a parser that
//! panics, loops or overflows its stack on a crafted file takes down only the worker.
//!
//! What a file is comes from its extension ([`Kind::of`]); a file without a known one is
//! sniffed as text. Text is decoded as UTF-8 (after a BOM), else as the encoding `chardetng`
//! guesses, with `encoding_rs`; a file with NUL bytes or mostly control characters is
//! `binary`. HTML goes through `html2text`, DOCX is a zip whose `word/document.xml` is read
//! with `quick-xml` (`w:p` paragraphs, `w:t` runs, headings kept as `#` lines), decompressed
//! size capped; CSV rows and JSON values become lines of text.

use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::Reason;

/// How a file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Plain text, or a file without a known extension (sniffed).
    Text,
    Markdown,
    /// Source code and configuration: text, split at blank lines first.
    Code,
    Html,
    Docx,
    Csv,
    Json,
    Pdf,
}

impl Kind {
    /// The kind of `path` from its extension; `None` for a format Hearth does not read
    /// (images, media, archives, executables …), which is `unsupported` without being opened.
    pub fn of(path: &Path) -> Option<Kind> {
        let Some(ext) = path.extension().and_then(|e| e.to_str()) else {
            return Some(Kind::Text);
        };
        let ext = ext.to_ascii_lowercase();
        Some(match ext.as_str() {
            "md" | "markdown" | "mdx" | "mdown" | "mkd" => Kind::Markdown,
            "txt" | "text" | "log" | "rst" | "org" | "adoc" | "asciidoc" | "tex" | "nfo" | "me"
            | "1st" => Kind::Text,
            "html" | "htm" | "xhtml" => Kind::Html,
            "docx" => Kind::Docx,
            "csv" | "tsv" => Kind::Csv,
            "json" | "jsonl" | "ndjson" | "geojson" => Kind::Json,
            "pdf" => Kind::Pdf,
            e if CODE_EXTENSIONS.contains(&e) => Kind::Code,
            e if BINARY_EXTENSIONS.contains(&e) => return None,
            _ => Kind::Text,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Markdown => "markdown",
            Kind::Code => "code",
            Kind::Html => "html",
            Kind::Docx => "docx",
            Kind::Csv => "csv",
            Kind::Json => "json",
            Kind::Pdf => "pdf",
        }
    }
}

const CODE_EXTENSIONS: &[&str] = &[
    "rs", "py", "pyi", "js", "mjs", "cjs", "ts", "tsx", "jsx", "go", "java", "kt", "kts", "scala",
    "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "cs", "fs", "rb", "php", "swift", "m", "mm", "sh",
    "bash", "zsh", "fish", "ps1", "lua", "pl", "pm", "r", "jl", "sql", "toml", "yaml", "yml",
    "ini", "cfg", "conf", "xml", "css", "scss", "sass", "less", "vue", "svelte", "dart", "ex",
    "exs", "erl", "hrl", "hs", "ml", "mli", "clj", "cljs", "el", "vim", "nix", "zig", "gradle",
    "cmake", "mk", "proto", "graphql", "tf", "hcl", "bat", "cmd", "asm", "s", "v", "sv", "vhd",
    "elm", "purs", "rkt", "scm", "lisp", "f90", "f", "pas", "d", "nim", "cr", "groovy", "ipynb",
    "svg",
];

/// Formats that are not text and that Hearth does not read yet: never opened.
const BINARY_EXTENSIONS: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "bmp", "tif", "tiff", "webp", "ico", "icns", "heic", "heif",
    "avif", "psd", "raw", "cr2", "nef", "mp3", "wav", "flac", "ogg", "oga", "opus", "m4a", "aac",
    "wma", "mp4", "m4v", "mov", "avi", "mkv", "webm", "wmv", "flv", "zip", "tar", "gz", "tgz",
    "bz2", "xz", "zst", "7z", "rar", "lz", "lz4", "cab", "exe", "dll", "so", "dylib", "o", "a",
    "lib", "obj", "class", "jar", "war", "wasm", "bin", "dat", "iso", "dmg", "img", "vmdk",
    "qcow2", "doc", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "odp", "rtf", "epub", "mobi",
    "pages", "numbers", "key", "sqlite", "sqlite3", "db", "mdb", "woff", "woff2", "ttf", "otf",
    "eot", "pyc", "pyo", "deb", "rpm", "apk", "msi", "pkg", "swp", "lock", "kdbx", "gpg", "pgp",
    "p12", "pfx", "der", "pem", "crt", "keystore",
];

/// Limits of one extraction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// A file larger than this is `too_large` (read no further).
    pub max_file_bytes: u64,
    /// Extracted text longer than this is `too_large` (a DOCX's XML, a zip bomb).
    pub max_text_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_bytes: super::MAX_FILE_BYTES,
            max_text_bytes: 64 * 1024 * 1024,
        }
    }
}

/// A file's text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Extracted {
    pub text: String,
    /// The text is Markdown (headings as `#` lines): split by its structure.
    pub markdown: bool,
    /// Byte offsets in `text` where each page starts (PDF), else empty.
    pub pages: Vec<usize>,
    /// SHA-256 of the file's bytes, hex.
    pub hash: String,
}

/// Why a file gave no text: a fixed reason and a message for the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    pub reason: Reason,
    pub message: String,
}

impl Refusal {
    pub fn new(reason: Reason, message: impl Into<String>) -> Self {
        Self {
            reason,
            message: message.into(),
        }
    }
}

/// Reads and extracts `path` as `kind`.
pub fn extract(path: &Path, kind: Kind, limits: &Limits) -> Result<Extracted, Refusal> {
    let bytes = read_bounded(path, limits.max_file_bytes)?;
    let hash = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(&bytes))
    };
    if bytes.is_empty() {
        return Err(Refusal::new(Reason::Empty, "the file is empty"));
    }
    let (text, markdown, pages) = match kind {
        Kind::Text | Kind::Code => (decode_text(&bytes)?.into_owned(), false, Vec::new()),
        Kind::Markdown => (decode_text(&bytes)?.into_owned(), true, Vec::new()),
        Kind::Html => (html(&bytes, limits)?, true, Vec::new()),
        Kind::Docx => (docx(&bytes, limits)?, true, Vec::new()),
        Kind::Csv => (csv(&decode_text(&bytes)?), false, Vec::new()),
        Kind::Json => (json(&decode_text(&bytes)?)?, false, Vec::new()),
        Kind::Pdf => {
            let (text, pages) = pdf(&bytes, limits)?;
            (text, false, pages)
        }
    };
    if text.len() as u64 > limits.max_text_bytes {
        return Err(Refusal::new(
            Reason::TooLarge,
            format!(
                "its text is over {} MB",
                limits.max_text_bytes / (1024 * 1024)
            ),
        ));
    }
    if text.trim().is_empty() {
        return Err(match kind {
            Kind::Text | Kind::Code | Kind::Markdown | Kind::Csv | Kind::Json => {
                Refusal::new(Reason::Empty, "the file holds only white space")
            }
            _ => Refusal::new(Reason::NoText, "the file has no text to index"),
        });
    }
    Ok(Extracted {
        text,
        markdown,
        pages,
        hash,
    })
}

fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, Refusal> {
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Refusal::new(Reason::Unreadable, format!("could not read it: {e}")))?;
    if bytes.len() as u64 > max {
        return Err(Refusal::new(
            Reason::TooLarge,
            format!("it is over {} MB", max / (1024 * 1024)),
        ));
    }
    Ok(bytes)
}

/// Opens `path` only if it is a regular file, without following a final link and without
/// blocking on a FIFO (which the walk skips, but which may have replaced the file since).
fn open_regular(path: &Path) -> Result<std::fs::File, Refusal> {
    let meta = std::fs::symlink_metadata(path)
        .map_err(|e| Refusal::new(Reason::Unreadable, format!("could not read it: {e}")))?;
    if !meta.file_type().is_file() {
        return Err(Refusal::new(
            Reason::NotRegular,
            "not a regular file (a link, FIFO, socket or device)",
        ));
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NOFOLLOW | O_NONBLOCK: a link or FIFO swapped in after the check is not read.
        opts.custom_flags(
            (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32,
        );
    }
    let file = opts.open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => {
            Refusal::new(Reason::Unreadable, "permission denied")
        }
        _ => Refusal::new(Reason::Unreadable, format!("could not open it: {e}")),
    })?;
    match file.metadata() {
        Ok(m) if m.file_type().is_file() => Ok(file),
        Ok(_) => Err(Refusal::new(Reason::NotRegular, "not a regular file")),
        Err(e) => Err(Refusal::new(
            Reason::Unreadable,
            format!("could not read it: {e}"),
        )),
    }
}

/// How much of a text may be control characters (other than tab, newline, carriage return,
/// form feed) or undecodable before it is taken for binary data.
const MAX_CONTROL_SHARE: f64 = 0.05;

/// Decodes text: UTF-8 (a BOM honoured), else the encoding `chardetng` guesses. NUL bytes
/// or many control characters make it `binary`.
pub fn decode_text(bytes: &[u8]) -> Result<Cow<'_, str>, Refusal> {
    let bom = encoding_rs::Encoding::for_bom(bytes);
    let is_utf16 =
        bom.is_some_and(|(e, _)| e == encoding_rs::UTF_16LE || e == encoding_rs::UTF_16BE);
    if !is_utf16 && bytes.iter().take(8192).any(|&b| b == 0) {
        return Err(Refusal::new(Reason::Binary, "binary data (NUL bytes)"));
    }
    let text: Cow<'_, str> = if let Some((encoding, _)) = bom {
        let (text, _, _) = encoding.decode(bytes);
        text
    } else if let Ok(s) = std::str::from_utf8(bytes) {
        Cow::Borrowed(s)
    } else {
        let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
        detector.feed(bytes, true);
        let encoding = detector.guess(None, chardetng::Utf8Detection::Allow);
        let (text, _, _) = encoding.decode(bytes);
        text
    };
    let (mut total, mut control) = (0usize, 0usize);
    for c in text.chars().take(65_536) {
        total += 1;
        if c == '\u{FFFD}' || (c.is_control() && !matches!(c, '\n' | '\r' | '\t' | '\u{c}')) {
            control += 1;
        }
    }
    if total > 0 && control as f64 / total as f64 > MAX_CONTROL_SHARE {
        return Err(Refusal::new(
            Reason::Binary,
            "binary data (mostly control characters)",
        ));
    }
    // NULs past the sniffed prefix would end up in the index: drop them.
    if text.contains('\0') {
        return Ok(Cow::Owned(text.replace('\0', "")));
    }
    Ok(text)
}

fn html(bytes: &[u8], limits: &Limits) -> Result<String, Refusal> {
    let text = decode_text(bytes)?;
    let out = html2text::config::plain()
        .no_link_wrapping()
        .link_footnotes(false)
        .string_from_read(text.as_bytes(), 10_000)
        .map_err(|e| Refusal::new(Reason::Corrupt, format!("could not read the HTML: {e}")))?;
    if out.len() as u64 > limits.max_text_bytes {
        return Err(Refusal::new(Reason::TooLarge, "its text is too large"));
    }
    Ok(out)
}

/// The most pages of a PDF that are read.
pub const MAX_PDF_PAGES: usize = 10_000;

/// A PDF's text, page by page (`pdf_oxide`), with where each page starts. A PDF that needs
/// a password is `encrypted`; one with no text on any page (scanned images) ends up
/// `no_text`, not indexed empty.
fn pdf(bytes: &[u8], limits: &Limits) -> Result<(String, Vec<usize>), Refusal> {
    if !bytes.starts_with(b"%PDF")
        && !bytes
            .get(..1024)
            .is_some_and(|h| h.windows(4).any(|w| w == b"%PDF"))
    {
        return Err(Refusal::new(Reason::Corrupt, "not a PDF file"));
    }
    let doc = pdf_oxide::PdfDocument::from_bytes(bytes.to_vec()).map_err(|e| match e {
        pdf_oxide::Error::EncryptedPdf => {
            Refusal::new(Reason::Encrypted, "the PDF is password-protected")
        }
        e => Refusal::new(Reason::Corrupt, format!("a broken PDF: {e}")),
    })?;
    if doc.is_encrypted() && !doc.authenticate(b"").unwrap_or(false) {
        return Err(Refusal::new(
            Reason::Encrypted,
            "the PDF is password-protected",
        ));
    }
    let n = doc
        .page_count()
        .map_err(|e| Refusal::new(Reason::Corrupt, format!("a broken PDF: {e}")))?;
    if n > MAX_PDF_PAGES {
        return Err(Refusal::new(
            Reason::TooLarge,
            format!("it has over {MAX_PDF_PAGES} pages"),
        ));
    }
    let mut text = String::new();
    let mut pages = Vec::with_capacity(n);
    for i in 0..n {
        pages.push(text.len());
        // A page that cannot be read is left out; the others still count.
        if let Ok(t) = doc.extract_text(i) {
            let t = t.trim();
            if !t.is_empty() {
                text.push_str(t);
                text.push_str("\n\n");
            }
        }
        if text.len() as u64 > limits.max_text_bytes {
            return Err(Refusal::new(Reason::TooLarge, "its text is too large"));
        }
    }
    Ok((text, pages))
}

/// The compound-file signature of an encrypted Office document (and of old `.doc` files).
const CFB_MAGIC: &[u8] = &[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];

fn docx(bytes: &[u8], limits: &Limits) -> Result<String, Refusal> {
    if bytes.starts_with(CFB_MAGIC) {
        return Err(Refusal::new(
            Reason::Encrypted,
            "the document is password-protected (or an old Word file named .docx)",
        ));
    }
    if !bytes.starts_with(b"PK") {
        return Err(Refusal::new(Reason::Corrupt, "not a DOCX file (not a zip)"));
    }
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| Refusal::new(Reason::Corrupt, format!("a broken DOCX: {e}")))?;
    let entry = archive.by_name("word/document.xml").map_err(|_| {
        Refusal::new(
            Reason::Corrupt,
            "a broken DOCX: it has no word/document.xml",
        )
    })?;
    if entry.encrypted() {
        return Err(Refusal::new(Reason::Encrypted, "the document is encrypted"));
    }
    // The XML is larger than the text it holds: allow four times the text cap.
    let cap = limits.max_text_bytes.saturating_mul(4);
    if entry.size() > cap {
        return Err(Refusal::new(
            Reason::TooLarge,
            format!(
                "it unpacks to over {} MB (a zip bomb?)",
                cap / (1024 * 1024)
            ),
        ));
    }
    let mut xml = Vec::new();
    entry
        .take(cap.saturating_add(1))
        .read_to_end(&mut xml)
        .map_err(|e| Refusal::new(Reason::Corrupt, format!("a broken DOCX: {e}")))?;
    if xml.len() as u64 > cap {
        return Err(Refusal::new(
            Reason::TooLarge,
            format!(
                "it unpacks to over {} MB (a zip bomb?)",
                cap / (1024 * 1024)
            ),
        ));
    }
    docx_text(&xml)
}

/// The text of a DOCX's `document.xml`: one paragraph per block, headings (`Heading1`…,
/// `Title`) as Markdown `#` lines so chunks know the section they are in.
pub fn docx_text(xml: &[u8]) -> Result<String, Refusal> {
    use quick_xml::events::Event;
    let corrupt = |e: &dyn std::fmt::Display| {
        Refusal::new(
            Reason::Corrupt,
            format!("a broken DOCX: its XML is malformed ({e})"),
        )
    };
    let mut reader = quick_xml::Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut out = String::new();
    let mut para = String::new();
    let mut heading: Option<usize> = None;
    let mut in_text = false;
    loop {
        let event = reader.read_event_into(&mut buf).map_err(|e| corrupt(&e))?;
        match event {
            Event::Start(e) | Event::Empty(e) => {
                let name = e.local_name();
                match name.as_ref() {
                    "p" => {
                        para.clear();
                        heading = None;
                    }
                    "t" => in_text = true,
                    "tab" => para.push('\t'),
                    "br" | "cr" => para.push(' '),
                    "pStyle" => {
                        for a in e.attributes().with_checks(false).flatten() {
                            if a.key.local_name().as_ref() == "val" {
                                let v = a
                                    .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                                    .unwrap_or_default();
                                heading = heading_level(&v);
                            }
                        }
                    }
                    _ => {}
                }
            }
            Event::Text(t) if in_text => para.push_str(&t.xml10_content()),
            Event::GeneralRef(r) if in_text => {
                if let Ok(Some(c)) = r.resolve_char_ref() {
                    para.push(c);
                } else {
                    para.push_str(match r.as_ref() {
                        "lt" => "<",
                        "gt" => ">",
                        "amp" => "&",
                        "quot" => "\"",
                        "apos" => "'",
                        _ => "",
                    });
                }
            }
            Event::End(e) => match e.local_name().as_ref() {
                "t" => in_text = false,
                "p" => {
                    let text = para.trim();
                    if !text.is_empty() {
                        if let Some(level) = heading {
                            out.push_str(&"#".repeat(level));
                            out.push(' ');
                        }
                        out.push_str(text);
                        out.push_str("\n\n");
                    }
                    para.clear();
                }
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    Ok(out)
}

fn heading_level(style: &str) -> Option<usize> {
    let s = style.to_ascii_lowercase();
    if s == "title" {
        return Some(1);
    }
    let n = s.strip_prefix("heading")?.trim();
    n.parse::<usize>().ok().map(|n| n.clamp(1, 6))
}

/// CSV/TSV as lines: each row's cells joined by " | " (the header row first, as it is).
fn csv(text: &str) -> String {
    let sep = if text.lines().next().is_some_and(|l| l.contains('\t')) {
        '\t'
    } else {
        ','
    };
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let cells: Vec<&str> = line
            .split(sep)
            .map(|c| c.trim().trim_matches('"').trim())
            .collect();
        out.push_str(&cells.join(" | "));
        out.push('\n');
    }
    out
}

/// The deepest nesting a JSON value may have (serde_json's own limit is 128).
const MAX_JSON_DEPTH: usize = 64;

/// JSON as lines `path.to.key: value`, one per scalar (JSON Lines: each line a record).
fn json(text: &str) -> Result<String, Refusal> {
    let mut out = String::with_capacity(text.len());
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) => flatten(&v, "", 0, &mut out),
        Err(whole) => {
            let mut any = false;
            for (i, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let v: serde_json::Value = serde_json::from_str(line).map_err(|_| {
                    Refusal::new(
                        Reason::Corrupt,
                        format!("not valid JSON ({})", whole.classify_name()),
                    )
                })?;
                flatten(&v, &format!("[{i}]"), 0, &mut out);
                any = true;
            }
            if !any {
                return Err(Refusal::new(Reason::Corrupt, "not valid JSON"));
            }
        }
    }
    Ok(out)
}

trait ClassifyName {
    fn classify_name(&self) -> &'static str;
}

impl ClassifyName for serde_json::Error {
    fn classify_name(&self) -> &'static str {
        match self.classify() {
            serde_json::error::Category::Io => "an I/O error",
            serde_json::error::Category::Syntax => "a syntax error",
            serde_json::error::Category::Data => "a data error",
            serde_json::error::Category::Eof => "it ends early",
        }
    }
}

fn flatten(v: &serde_json::Value, path: &str, depth: usize, out: &mut String) {
    use serde_json::Value;
    if depth > MAX_JSON_DEPTH {
        return;
    }
    let line = |out: &mut String, value: &str| {
        if path.is_empty() {
            out.push_str(value);
        } else {
            out.push_str(path);
            out.push_str(": ");
            out.push_str(value);
        }
        out.push('\n');
    };
    match v {
        Value::Null => line(out, "null"),
        Value::Bool(b) => line(out, if *b { "true" } else { "false" }),
        Value::Number(n) => line(out, &n.to_string()),
        Value::String(s) => line(out, s),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                flatten(item, &format!("{path}[{i}]"), depth + 1, out);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                flatten(item, &p, depth + 1, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_decoded_from_utf8_a_bom_or_the_guessed_encoding() {
        assert_eq!(decode_text("héllo".as_bytes()).as_deref(), Ok("héllo"));
        assert_eq!(
            decode_text(b"\xEF\xBB\xBFbom text").as_deref(),
            Ok("bom text")
        );
        let latin1 = b"Caf\xe9 cr\xe8me au march\xe9 de No\xebl, tr\xe8s app\xe9tissant";
        assert_eq!(
            decode_text(latin1).as_deref(),
            Ok("Café crème au marché de Noël, très appétissant")
        );
        let utf16: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain("hi".encode_utf16().flat_map(|u| u.to_le_bytes()))
            .collect();
        assert_eq!(decode_text(&utf16).as_deref(), Ok("hi"));
    }

    #[test]
    fn nul_bytes_or_control_noise_are_binary() {
        let reason = |b: &[u8]| decode_text(b).err().map(|r| r.reason);
        assert_eq!(reason(b"abc\0def"), Some(Reason::Binary));
        let noise: Vec<u8> = (1u8..32)
            .filter(|b| !b"\t\n\r\x0c".contains(b))
            .cycle()
            .take(500)
            .collect();
        assert_eq!(reason(&noise), Some(Reason::Binary));
        assert_eq!(reason(b"plain\ttext\r\n"), None);
    }

    #[test]
    fn docx_paragraphs_runs_entities_and_headings_become_text() {
        let xml = br#"<w:document xmlns:w="x"><w:body>
            <w:p><w:pPr><w:pStyle w:val="Heading2"/></w:pPr><w:r><w:t>Plan</w:t></w:r></w:p>
            <w:p><w:r><w:t xml:space="preserve">Fish </w:t></w:r><w:r><w:t>&amp; chips</w:t><w:tab/><w:t>&#169;</w:t></w:r></w:p>
            <w:p/></w:body></w:document>"#;
        assert_eq!(
            docx_text(xml).as_deref(),
            Ok("## Plan\n\nFish & chips\t©\n\n")
        );
        assert_eq!(
            docx_text(b"<w:p><w:t>open").map(|_| ()),
            Ok(()),
            "a truncated document keeps what it had"
        );
        assert_eq!(
            docx_text(b"<w:p></w:t>").err().map(|r| r.reason),
            Some(Reason::Corrupt)
        );
    }

    #[test]
    fn csv_rows_and_json_values_become_lines() {
        assert_eq!(csv("a,b\n\"x\", y\n"), "a | b\nx | y\n");
        assert_eq!(csv("a\tb\n1\t2\n"), "a | b\n1 | 2\n");
        assert_eq!(
            json(r#"{"a": {"b": [1, "two"]}, "c": null}"#).as_deref(),
            Ok("a.b[0]: 1\na.b[1]: two\nc: null\n")
        );
        assert_eq!(
            json("{\"x\":1}\n{\"x\":2}\n").as_deref(),
            Ok("[0].x: 1\n[1].x: 2\n")
        );
        assert_eq!(json("{nope").err().map(|r| r.reason), Some(Reason::Corrupt));
        let deep = format!("{}1{}", "[".repeat(1000), "]".repeat(1000));
        assert!(
            json(&deep).is_err(),
            "too deep is refused, not a stack overflow"
        );
    }

    #[test]
    fn kinds_come_from_extensions_and_unknown_binary_formats_are_not_opened() {
        assert_eq!(Kind::of(Path::new("a/README")), Some(Kind::Text));
        assert_eq!(Kind::of(Path::new("x.MD")), Some(Kind::Markdown));
        assert_eq!(Kind::of(Path::new("x.rs")), Some(Kind::Code));
        assert_eq!(Kind::of(Path::new("x.weird")), Some(Kind::Text));
        assert_eq!(Kind::of(Path::new("x.png")), None);
        assert_eq!(Kind::of(Path::new("x.docx")), Some(Kind::Docx));
    }
}
