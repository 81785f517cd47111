//! Chunks of a file's text, sized by the embedder's own tokenizer: all-MiniLM-L6-v2's
//! `tokenizer.json` (Apache-2.0) is compiled into the binary, so chunking never waits for
//! the model download. A chunk is at most [`MAX_CHUNK_TOKENS`] WordPiece tokens — the
//! model's window less `[CLS]` and `[SEP]`: a longer chunk would be embedded from its first
//! part only — and overlaps the one before by about 15% ([`OVERLAP_TOKENS`]). Markdown (and
//! HTML/DOCX, which extraction turns into Markdown-like text) is split by its structure
//! (`text-splitter`'s Markdown splitter: sections, then paragraphs, then sentences); other
//! text at blank lines, lines, then sentences.
//!
//! Each chunk keeps its byte range, its line range (1-based, inclusive), the heading path
//! it sits under (`Setup > Linux`), its page (PDF), and its token count in the chat
//! encoding (o200k), counted once here so prompt assembly never counts it again.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use text_splitter::{ChunkConfig, MarkdownSplitter, TextSplitter};
use tokenizers::Tokenizer;

use super::extract::Extracted;

/// all-MiniLM-L6-v2's tokenizer, as shipped with the model.
static TOKENIZER_JSON: &[u8] = include_bytes!("../../assets/minilm-tokenizer.json");

/// The most WordPiece tokens in a chunk: the embedder's 256-token window less `[CLS]` and
/// `[SEP]`.
pub const MAX_CHUNK_TOKENS: usize = 254;

/// Tokens a chunk shares with the one before it (about 15%).
pub const OVERLAP_TOKENS: usize = 38;

/// One chunk of a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Draft {
    pub text: String,
    /// The Markdown headings it sits under, outermost first, joined by " > ".
    pub heading: Option<String>,
    pub byte_start: usize,
    pub byte_end: usize,
    /// 1-based, inclusive.
    pub line_start: usize,
    pub line_end: usize,
    /// 1-based (PDF only).
    pub page: Option<usize>,
    /// In the chat encoding (o200k).
    pub tokens: usize,
}

/// The embedder's tokenizer without its truncation and padding (sizes must be whole).
fn tokenizer() -> Option<&'static Tokenizer> {
    static TOKENIZER: OnceLock<Option<Tokenizer>> = OnceLock::new();
    TOKENIZER
        .get_or_init(|| {
            let mut t = Tokenizer::from_bytes(TOKENIZER_JSON).ok()?;
            t.with_truncation(None).ok()?;
            t.with_padding(None);
            Some(t)
        })
        .as_ref()
}

/// WordPiece tokens of `text` as the embedder counts them (without `[CLS]`/`[SEP]`).
pub fn embed_tokens(text: &str) -> usize {
    tokenizer()
        .and_then(|t| t.encode_fast(text, false).ok())
        .map_or(text.len() / 3, |e| e.len())
}

/// Splits an extracted file into chunks.
pub fn chunk(doc: &Extracted) -> Vec<Draft> {
    let Some(tok) = tokenizer() else {
        return Vec::new();
    };
    let config = || {
        ChunkConfig::new(MAX_CHUNK_TOKENS)
            .with_sizer(tok)
            .with_overlap(OVERLAP_TOKENS)
    };
    let (Ok(md), Ok(plain)) = (config(), config()) else {
        return Vec::new();
    };
    let markdown_splitter = MarkdownSplitter::new(md);
    let text_splitter = TextSplitter::new(plain);
    let text = doc.text.as_str();
    let newlines: Vec<usize> = memchr_newlines(text);
    let line_of = |offset: usize| newlines.partition_point(|&n| n < offset) + 1;
    let encoding = crate::tokens::Encoding::O200kBase;
    let mut out = Vec::new();
    for (start, end, heading) in sections(text, doc.markdown, &doc.pages) {
        let section = &text[start..end];
        let pieces: Vec<(usize, &str)> = if doc.markdown {
            markdown_splitter.chunk_indices(section).collect()
        } else {
            text_splitter.chunk_indices(section).collect()
        };
        for (offset, piece) in pieces {
            if piece.trim().is_empty() {
                continue;
            }
            let from = start + offset;
            let to = from + piece.len();
            let page = if doc.pages.is_empty() {
                None
            } else {
                Some(doc.pages.partition_point(|&p| p <= from).max(1))
            };
            out.push(Draft {
                text: piece.to_owned(),
                heading: heading.clone(),
                byte_start: from,
                byte_end: to,
                line_start: line_of(from),
                line_end: line_of(to.saturating_sub(1).max(from)),
                page,
                tokens: encoding.count(piece),
            });
        }
    }
    out
}

/// The parts of a text chunked apart, with the heading path each sits under. Markdown is
/// cut at its headings, so no chunk straddles two sections and each cites the section it
/// is from; a heading with nothing under it before the next one goes with that one (its
/// path is the deeper heading's). A PDF is cut at its pages, so each chunk cites one page.
/// Other text is one part.
fn sections(text: &str, markdown: bool, pages: &[usize]) -> Vec<(usize, usize, Option<String>)> {
    if !pages.is_empty() {
        return pages
            .iter()
            .enumerate()
            .map(|(i, &start)| {
                (
                    start,
                    pages.get(i + 1).copied().unwrap_or(text.len()).max(start),
                    None,
                )
            })
            .filter(|(a, b, _)| b > a && text.get(*a..*b).is_some_and(|t| !t.trim().is_empty()))
            .collect();
    }
    let hs = if markdown { headings(text) } else { Vec::new() };
    if hs.is_empty() {
        return vec![(0, text.len(), None)];
    }
    let mut out: Vec<(usize, usize, Option<String>)> = Vec::new();
    if hs[0].0 > 0 && !text[..hs[0].0].trim().is_empty() {
        out.push((0, hs[0].0, None));
    }
    let mut open: Option<usize> = None;
    for (i, (at, _, _)) in hs.iter().enumerate() {
        let end = hs.get(i + 1).map_or(text.len(), |h| h.0);
        let start = open.take().unwrap_or(*at);
        let body = text[*at..end].split_once('\n').map_or("", |(_, b)| b);
        if body.trim().is_empty() && i + 1 < hs.len() {
            open = Some(start);
            continue;
        }
        out.push((start, end, heading_path(&hs, *at)));
    }
    out
}

fn memchr_newlines(text: &str) -> Vec<usize> {
    text.bytes()
        .enumerate()
        .filter(|(_, b)| *b == b'\n')
        .map(|(i, _)| i)
        .collect()
}

/// A Markdown heading: where its line starts, its level, its title.
type Heading = (usize, usize, String);

/// The ATX headings (`# Title`) of a Markdown text, outside fenced code blocks.
fn headings(text: &str) -> Vec<Heading> {
    let mut out = Vec::new();
    let mut offset = 0;
    let mut fence: Option<&str> = None;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if let Some(f) = fence {
            if t.starts_with(f) {
                fence = None;
            }
        } else if t.starts_with("```") {
            fence = Some("```");
        } else if t.starts_with("~~~") {
            fence = Some("~~~");
        } else if line.starts_with('#') {
            let level = line.bytes().take_while(|&b| b == b'#').count();
            let rest = &line[level..];
            if level <= 6 && (rest.starts_with(' ') || rest.starts_with('\t')) {
                let title = rest.trim().trim_end_matches('#').trim();
                if !title.is_empty() {
                    out.push((offset, level, title.to_owned()));
                }
            }
        }
        offset += line.len();
    }
    out
}

/// The headings in force at `offset`: the last heading of each level above it.
fn heading_path(headings: &[Heading], offset: usize) -> Option<String> {
    let mut stack: Vec<(usize, &str)> = Vec::new();
    for (at, level, title) in headings {
        if *at > offset {
            break;
        }
        while stack.last().is_some_and(|(l, _)| l >= level) {
            stack.pop();
        }
        stack.push((*level, title));
    }
    if stack.is_empty() {
        return None;
    }
    let path: Vec<&str> = stack.iter().map(|(_, t)| *t).collect();
    let mut joined = path.join(" > ");
    if joined.len() > 500 {
        let mut cut = 500;
        while !joined.is_char_boundary(cut) {
            cut -= 1;
        }
        joined.truncate(cut);
    }
    Some(joined)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str, markdown: bool) -> Extracted {
        Extracted {
            text: text.to_owned(),
            markdown,
            pages: Vec::new(),
            hash: String::new(),
        }
    }

    #[test]
    fn every_chunk_fits_the_embedders_window_and_neighbours_overlap() {
        let para = "The quick brown fox jumps over the lazy dog near the riverbank. ";
        let text: String = (0..200).map(|i| format!("{i}: {para}\n")).collect();
        let chunks = chunk(&doc(&text, false));
        assert!(chunks.len() > 5, "{} chunks", chunks.len());
        for (i, c) in chunks.iter().enumerate() {
            let n = embed_tokens(&c.text);
            assert!(n <= MAX_CHUNK_TOKENS, "a chunk of {n} tokens");
            // Full, except the last (the rest of the text).
            assert!(
                i + 1 == chunks.len() || n > MAX_CHUNK_TOKENS * 3 / 4,
                "a chunk of only {n} tokens"
            );
            assert_eq!(&text[c.byte_start..c.byte_end], c.text);
            assert!(c.tokens > 0);
        }
        for w in chunks.windows(2) {
            assert!(w[1].byte_start < w[0].byte_end, "no overlap: {w:?}");
            assert!(w[1].byte_start > w[0].byte_start);
        }
        // Lines: the first chunk starts on line 1, the last ends on line 200.
        assert_eq!(chunks[0].line_start, 1);
        assert_eq!(chunks.last().map(|c| c.line_end), Some(200));
    }

    #[test]
    fn line_ranges_are_the_lines_the_chunk_covers() {
        let text = "alpha\nbeta\ngamma\n";
        let chunks = chunk(&doc(text, false));
        assert_eq!(chunks.len(), 1);
        assert_eq!((chunks[0].line_start, chunks[0].line_end), (1, 3));
        let text = "\n\n\nfourth line only\n";
        let chunks = chunk(&doc(text, false));
        assert_eq!((chunks[0].line_start, chunks[0].line_end), (4, 4));
    }

    #[test]
    fn markdown_chunks_know_their_heading_path() {
        let body = "Some words about installing the thing on this system. ".repeat(30);
        let text = format!(
            "# Guide\n\nIntro.\n\n## Setup\n\n### Linux\n\n{body}\n\n```\n# not a heading\n```\n\n## Usage\n\n{body}\n"
        );
        let chunks = chunk(&doc(&text, true));
        let linux = chunks
            .iter()
            .find(|c| c.text.contains("installing") && c.line_start > 5)
            .and_then(|c| c.heading.clone());
        assert_eq!(linux.as_deref(), Some("Guide > Setup > Linux"));
        let last = chunks.last().and_then(|c| c.heading.clone());
        assert_eq!(last.as_deref(), Some("Guide > Usage"));
    }

    #[test]
    fn pages_come_from_page_offsets() {
        let text = format!(
            "{}{}",
            "page one text. ".repeat(10),
            "page two text. ".repeat(10)
        );
        let mut d = doc(&text, false);
        d.pages = vec![0, 150];
        let chunks = chunk(&d);
        assert_eq!(chunks[0].page, Some(1));
    }
}
