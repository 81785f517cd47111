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
use text_splitter::{ChunkConfig, ChunkSizer, MarkdownSplitter, TextSplitter};
use tokenizers::Tokenizer;

use super::extract::Extracted;

/// all-MiniLM-L6-v2's tokenizer, as shipped with the model.
static TOKENIZER_JSON: &[u8] = include_bytes!("../assets/minilm-tokenizer.json");

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

/// The most bytes chunked from one tokenization: a longer section is cut into blocks at
/// blank lines (else lines), so the token offsets held at once stay small whatever the
/// file's size.
const BLOCK_BYTES: usize = 256 * 1024;

/// Token counts of any slice of one block, from a single tokenization of the block.
///
/// `text-splitter` sizes a chunk by binary search over candidate ends, and the plain
/// tokenizer sizer tokenizes each candidate afresh — most of ingest's time. Every candidate
/// is a slice of the block, so its count is the number of the block's tokens it overlaps:
/// exact when the slice starts and ends between tokens (BERT's pre-tokenizer splits words at
/// whitespace and punctuation, where every cut but a mid-word one falls); a slice cut inside
/// a word is recounted by [`chunk`] before it is kept.
struct SpanSizer {
    base: usize,
    len: usize,
    starts: Vec<u32>,
    ends: Vec<u32>,
}

impl SpanSizer {
    fn new(tok: &Tokenizer, block: &str) -> Option<SpanSizer> {
        let enc = tok.encode(block, false).ok()?;
        let mut starts = Vec::with_capacity(enc.len());
        let mut ends = Vec::with_capacity(enc.len());
        for &(a, b) in enc.get_offsets() {
            starts.push(u32::try_from(a).ok()?);
            ends.push(u32::try_from(b).ok()?);
        }
        // Offsets come in text order; binary search below relies on it.
        if !starts.is_sorted() || !ends.is_sorted() {
            return None;
        }
        Some(SpanSizer {
            base: block.as_ptr() as usize,
            len: block.len(),
            starts,
            ends,
        })
    }

    /// The slice's byte range in the block, if it is a slice of the block.
    fn range(&self, chunk: &str) -> Option<(usize, usize)> {
        let a = (chunk.as_ptr() as usize).checked_sub(self.base)?;
        let b = a.checked_add(chunk.len())?;
        (b <= self.len).then_some((a, b))
    }

    /// The tokens overlapping bytes `a..b`, and whether both ends fall between tokens.
    fn count(&self, a: usize, b: usize) -> (usize, bool) {
        let first = self.ends.partition_point(|&e| (e as usize) <= a);
        let last = self.starts.partition_point(|&s| (s as usize) < b);
        let exact = self.starts.get(first).is_none_or(|&s| s as usize >= a)
            && (last == 0 || self.ends.get(last - 1).is_none_or(|&e| e as usize <= b));
        (last.saturating_sub(first), exact)
    }
}

impl ChunkSizer for SpanSizer {
    fn size(&self, chunk: &str) -> usize {
        match self.range(chunk) {
            Some((a, b)) => self.count(a, b).0,
            None => embed_tokens(chunk),
        }
    }
}

/// Splits an extracted file into chunks.
pub fn chunk(doc: &Extracted) -> Vec<Draft> {
    let Some(tok) = tokenizer() else {
        return Vec::new();
    };
    let text = doc.text.as_str();
    let newlines: Vec<usize> = memchr_newlines(text);
    let line_of = |offset: usize| newlines.partition_point(|&n| n < offset) + 1;
    let encoding = crate::tokens::Encoding::O200kBase;
    let mut out = Vec::new();
    let mut push = |from: usize, piece: &str, heading: &Option<String>| {
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
    };
    for (start, end, heading) in sections(text, doc.markdown, &doc.pages) {
        for (block_start, block_end) in blocks(text, start, end) {
            let block = &text[block_start..block_end];
            let sizer = SpanSizer::new(tok, block);
            let pieces = match &sizer {
                Some(sizer) => split(doc.markdown, sizer, block),
                None => split(doc.markdown, tok, block),
            };
            for (offset, piece) in pieces {
                if piece.trim().is_empty() {
                    continue;
                }
                let fits = match &sizer {
                    Some(sizer) => match sizer.count(offset, offset + piece.len()) {
                        (n, true) => n <= MAX_CHUNK_TOKENS,
                        (_, false) => embed_tokens(piece) <= MAX_CHUNK_TOKENS,
                    },
                    None => true,
                };
                if fits {
                    push(block_start + offset, piece, &heading);
                    continue;
                }
                // Cut inside a word and miscounted: split again, counted exactly.
                for (inner, part) in split(false, tok, piece) {
                    if !part.trim().is_empty() {
                        push(block_start + offset + inner, part, &heading);
                    }
                }
            }
        }
    }
    out
}

/// Chunks of `text` (offsets into it) with the given sizer.
fn split<S: ChunkSizer>(markdown: bool, sizer: S, text: &str) -> Vec<(usize, &str)> {
    let Ok(config) = ChunkConfig::new(MAX_CHUNK_TOKENS)
        .with_sizer(sizer)
        .with_overlap(OVERLAP_TOKENS)
    else {
        return Vec::new();
    };
    if markdown {
        MarkdownSplitter::new(config).chunk_indices(text).collect()
    } else {
        TextSplitter::new(config).chunk_indices(text).collect()
    }
}

/// `start..end` cut into blocks of at most [`BLOCK_BYTES`], each ending at a blank line,
/// else a line end, else a character boundary.
fn blocks(text: &str, start: usize, end: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = start;
    while end - at > BLOCK_BYTES {
        let mut limit = at + BLOCK_BYTES;
        while !text.is_char_boundary(limit) {
            limit -= 1;
        }
        let window = &text[at..limit];
        let cut = window
            .rfind("\n\n")
            .map(|i| i + 2)
            .or_else(|| window.rfind('\n').map(|i| i + 1))
            .filter(|&i| i > 0)
            .unwrap_or(window.len());
        if cut == 0 {
            break;
        }
        out.push((at, at + cut));
        at += cut;
    }
    out.push((at, end));
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

    /// Prose, code, punctuation, accents, CJK and emoji, as real folders hold.
    fn mixed_text() -> String {
        let mut t = String::from("# Notes\n\n");
        for i in 0..120 {
            t.push_str(&format!(
                "Paragraph {i}: Zoë's café — naïve façade, 東京 and 北京 (see §3.{i}); \
                 error E{i:04} in `parse_config()`… 🙂 don't panic!\n\
                 fn f{i}(x: &str) -> Result<u32, Error> {{ x.parse().map_err(Error::from) }}\n\n"
            ));
        }
        t
    }

    #[test]
    fn the_span_sizer_counts_like_the_tokenizer_and_chunks_the_same() {
        let tok = tokenizer().expect("tokenizer");
        let text = mixed_text();
        let sizer = SpanSizer::new(tok, &text).expect("sizer");
        // Slices cut between words count exactly what tokenizing them alone counts.
        let cuts: Vec<usize> = text
            .char_indices()
            .filter(|(_, c)| c.is_whitespace())
            .map(|(i, _)| i)
            .step_by(7)
            .collect();
        let mut checked = 0;
        for w in cuts.windows(2).step_by(3) {
            let end = text.floor_char_boundary((w[1] + 300).min(text.len()));
            let slice = &text[w[0]..end];
            let (a, b) = sizer.range(slice).expect("a slice of the block");
            let (n, exact) = sizer.count(a, b);
            if exact {
                assert_eq!(n, embed_tokens(slice), "{slice:?}");
                checked += 1;
            }
        }
        assert!(checked > 100, "only {checked} exact slices");
        // A slice from elsewhere is counted by the tokenizer.
        let copy = text[..400].to_owned();
        assert_eq!(sizer.size(&copy), embed_tokens(&copy));
        // So the splitter makes the very chunks it makes with the tokenizer itself.
        for markdown in [true, false] {
            let fast = split(markdown, &sizer, &text);
            let slow = split(markdown, tok, &text);
            assert!(fast.len() > 10);
            assert_eq!(fast, slow, "markdown: {markdown}");
        }
    }

    #[test]
    fn long_words_and_huge_sections_still_fit_the_window() {
        // A 40 KB "word" (base64-like, no spaces) forces cuts inside a word, and a section
        // over BLOCK_BYTES is cut into blocks.
        let word: String = (0..40_000)
            .map(|i| char::from(b"abcdefghijklmnopqrstuvwxyz0123456789"[(i * 7 + i / 3) % 36]))
            .collect();
        let mut text = format!("start {word} end\n\n");
        while text.len() < BLOCK_BYTES * 2 + 10_000 {
            text.push_str("A line of ordinary words about the garden and the weather.\n");
            if text.len() % 7 == 0 {
                text.push('\n');
            }
        }
        let chunks = chunk(&doc(&text, false));
        assert!(chunks.len() > 100);
        let mut covered = 0;
        for c in &chunks {
            let n = embed_tokens(&c.text);
            assert!(n <= MAX_CHUNK_TOKENS, "a chunk of {n} tokens");
            assert_eq!(&text[c.byte_start..c.byte_end], c.text);
            // No gap between chunks but whitespace.
            assert!(
                text[covered.min(c.byte_start)..c.byte_start]
                    .trim()
                    .is_empty()
            );
            covered = covered.max(c.byte_end);
        }
        assert!(text[covered..].trim().is_empty());
        assert_eq!(
            chunks.last().map(|c| c.line_end),
            Some(text.lines().count())
        );
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
