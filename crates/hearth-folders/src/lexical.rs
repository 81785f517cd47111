//! The keyword side of folder search in process: a tantivy index of every chunk's text and
//! heading path, held in RAM only (never a file: the text stays in the encrypted store),
//! built from the store and kept up to date from `chunk_journal`.
//!
//! Why: FTS5's `bm25()` scores every document matching any query word (an OR query; it has
//! no WAND), so at 100k chunks a question of common words costs tens of milliseconds
//! (docs/decisions/0012-in-memory-search-copies.md has the measurements); tantivy's block-max WAND
//! reads only the postings that can still reach the top k. The ranking is the same
//! function as the FTS5 path: BM25 (k1 1.2, b 0.75) over the same query words
//! ([`crate::rank::query_words`]) and one term frequency over text and heading path (the
//! heading counts fully here, at half there), words stemmed (Snowball English here, Porter
//! there) and diacritics folded.
//!
//! Who builds it: [`warm`] (the app's folder watcher at start, `hearth eval`), off the
//! search path; until a copy is built, and for filters it cannot apply (file type,
//! modified time), keyword search is FTS5's, so a one-shot command never pays a build.
//! Once built, every search first replays the journal entries after the copy's cursor (an
//! entry means "re-read this chunk id": gone, it is dropped; present, its current text is
//! indexed). A copy whose cursor fell behind the pruned journal, or that would replay more
//! than [`MAX_REPLAY`] entries, is dropped and rebuilt by the next [`warm`]; the search
//! meanwhile is FTS5's. Any tantivy error degrades to FTS5 the same way: the derived copy
//! never fails a search.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use rusqlite::{Connection, params};
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, ConstScoreQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, Schema, TantivyDocument, TextFieldIndexing,
    TextOptions,
};
use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer,
    TextAnalyzer,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, Term};

use crate::store::Store;

const TOKENIZER: &str = "hearth_en";
/// Journal entries replayed at search time before the copy is rebuilt instead.
pub const MAX_REPLAY: usize = 20_000;
/// Journal entries the indexer keeps (older ones are pruned).
pub const JOURNAL_KEEP: i64 = 200_000;
/// The writer's memory budget: tantivy's minimum (15 MB per indexing thread), so a build
/// adds little to the process's peak.
const WRITER_BUDGET: usize = 15_000_000;

#[derive(Clone, Copy)]
struct Fields {
    /// The text and the heading path.
    text: Field,
    chunk: Field,
    folder: Field,
}

struct Built {
    index: Index,
    reader: IndexReader,
    fields: Fields,
    analyzer: TextAnalyzer,
    /// The last journal entry this copy reflects.
    cursor: i64,
    docs: usize,
}

/// The in-memory keyword index of one database's chunks (see the module's documentation);
/// one per open store (`Store::shared`).
#[derive(Default)]
pub struct LexicalIndex {
    built: Mutex<Option<Built>>,
    /// One build at a time.
    building: Mutex<()>,
    /// This process asked for the copy ([`warm`]): a dropped copy is rebuilt in the
    /// background, and the ingest job keeps it fresh ([`keep_fresh`]).
    wanted: AtomicBool,
    /// A background rebuild is under way.
    rebuilding: AtomicBool,
}

impl std::fmt::Debug for LexicalIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LexicalIndex").finish_non_exhaustive()
    }
}

/// Where a chunk's keyword candidates came from (tests and benchmarks read it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Memory,
    Fts5,
}

fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .filter(Stemmer::new(Language::English))
        .build()
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let words = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        text: b.add_text_field("text", words),
        chunk: b.add_i64_field("chunk", INDEXED | FAST),
        folder: b.add_i64_field("folder", INDEXED),
    };
    (b.build(), fields)
}

fn doc(f: &Fields, id: i64, folder: i64, text: &str, heading: Option<&str>) -> TantivyDocument {
    let mut d = TantivyDocument::default();
    d.add_text(f.text, text);
    // The heading path joins the text in one field, as FTS5's bm25() scores a row: one
    // term frequency over both columns, one length, one IDF (two fields would add a
    // second BM25 with its own IDF; on LoCoMo that cost 0.03 nDCG@10 against FTS5).
    if let Some(h) = heading {
        d.add_text(f.text, h);
    }
    d.add_i64(f.chunk, id);
    d.add_i64(f.folder, folder);
    d
}

const CHUNK_ROW: &str = "SELECT ch.id, f.folder_id, ch.text, ch.heading
                           FROM chunks ch JOIN folder_files f ON f.id = ch.file_id";

fn journal_head(c: &Connection) -> rusqlite::Result<i64> {
    c.query_row("SELECT coalesce(max(seq), 0) FROM chunk_journal", [], |r| {
        r.get(0)
    })
}

impl LexicalIndex {
    /// True when a built copy exists (it may be behind the journal until the next search).
    pub fn is_built(&self) -> bool {
        self.built
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// Documents in the copy, and its bytes in memory (0, 0 before a build).
    pub fn usage(&self) -> (usize, u64) {
        let guard = self.built.lock().unwrap_or_else(|p| p.into_inner());
        match &*guard {
            Some(b) => {
                let bytes = b
                    .reader
                    .searcher()
                    .space_usage()
                    .map(|u| u.total().get_bytes())
                    .unwrap_or(0);
                (b.docs, bytes)
            }
            None => (0, 0),
        }
    }

    /// Builds the copy from every chunk of the store (when there is none), then brings it
    /// up to date. Runs without holding the copy, so searches go on (by FTS5) meanwhile.
    pub fn warm(&self, store: &Store) -> crate::Result<()> {
        self.wanted.store(true, Ordering::Relaxed);
        let _one = self.building.lock().unwrap_or_else(|p| p.into_inner());
        if !self.is_built() {
            let built = store
                .read_blocking(|c| {
                    let built = build(c);
                    crate::store::release_cache(c);
                    Ok(built)
                })
                .and_then(|r| r.map_err(|e| crate::Error::Database(e.to_string())));
            match built {
                Ok(b) => {
                    *self.built.lock().unwrap_or_else(|p| p.into_inner()) = Some(b);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not build the in-memory keyword index");
                    return Err(e);
                }
            }
        }
        store.read_blocking(|c| {
            self.refreshed(c);
            Ok(())
        })
    }

    /// Replays the journal into the copy; drops the copy (and returns false) when it
    /// cannot be brought up to date cheaply.
    fn refreshed(&self, c: &Connection) -> bool {
        let mut guard = self.built.lock().unwrap_or_else(|p| p.into_inner());
        let Some(b) = guard.as_mut() else {
            return false;
        };
        match replay(b, c) {
            Ok(true) => true,
            Ok(false) => {
                *guard = None;
                false
            }
            Err(e) => {
                tracing::warn!(error = %e, "the in-memory keyword index fell behind; rebuilding");
                *guard = None;
                false
            }
        }
    }

    /// The `k` best chunks for `text` by BM25, with their scores, from the copy — or
    /// `None` when there is no usable copy (the caller asks FTS5).
    pub fn search(
        &self,
        c: &Connection,
        text: &str,
        k: usize,
        folder: Option<i64>,
    ) -> Option<Vec<(i64, f64)>> {
        if !self.refreshed(c) {
            return None;
        }
        let mut guard = self.built.lock().unwrap_or_else(|p| p.into_inner());
        let b = guard.as_mut()?;
        match query(b, text, k, folder) {
            Ok(hits) => Some(hits),
            Err(e) => {
                tracing::warn!(error = %e, "in-memory keyword search failed; using FTS5");
                None
            }
        }
    }
}

fn build(c: &Connection) -> Result<Built, LexError> {
    let tx = c.unchecked_transaction()?;
    let cursor = journal_head(&tx)?;
    let (schema, fields) = schema();
    let index = Index::create_in_ram(schema);
    index.tokenizers().register(TOKENIZER, analyzer());
    let mut writer: IndexWriter = index.writer_with_num_threads(1, WRITER_BUDGET)?;
    let mut stmt = tx.prepare(CHUNK_ROW)?;
    let mut rows = stmt.query([])?;
    let mut docs = 0;
    while let Some(r) = rows.next()? {
        let text = r.get_ref(2)?.as_str()?;
        let heading = r.get_ref(3)?.as_str_or_null()?;
        writer.add_document(doc(&fields, r.get(0)?, r.get(1)?, text, heading))?;
        docs += 1;
    }
    writer.commit()?;
    // The writer (and its arena) goes once its work is in: held, it would cost its budget
    // for as long as the process runs.
    writer.wait_merging_threads()?;
    let reader = index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .try_into()?;
    Ok(Built {
        index,
        reader,
        fields,
        analyzer: analyzer(),
        cursor,
        docs,
    })
}

/// Applies the journal after `b.cursor`; false when the copy must be rebuilt instead.
fn replay(b: &mut Built, c: &Connection) -> Result<bool, LexError> {
    let tx = c.unchecked_transaction()?;
    let head = journal_head(&tx)?;
    if head == b.cursor {
        return Ok(true);
    }
    let (oldest, pending): (i64, i64) = tx.query_row(
        "SELECT coalesce(min(seq), 0), count(*) FROM chunk_journal WHERE seq > ?1",
        [b.cursor],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    // Sequence numbers are contiguous (only the oldest are ever pruned, never the newest):
    // a gap after the cursor means entries it needed were pruned.
    if oldest > b.cursor + 1 || pending as usize > MAX_REPLAY {
        return Ok(false);
    }
    let mut ids: Vec<i64> = {
        let mut stmt = tx.prepare_cached(
            "SELECT DISTINCT chunk_id FROM chunk_journal WHERE seq > ?1 AND seq <= ?2",
        )?;
        stmt.query_map(params![b.cursor, head], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?
    };
    ids.sort_unstable();
    let mut row = tx.prepare_cached(&format!("{CHUNK_ROW} WHERE ch.id = ?1"))?;
    let mut writer: IndexWriter = b.index.writer_with_num_threads(1, WRITER_BUDGET)?;
    for id in ids {
        writer.delete_term(Term::from_field_i64(b.fields.chunk, id));
        let mut rows = row.query([id])?;
        if let Some(r) = rows.next()? {
            let text = r.get_ref(2)?.as_str()?;
            let heading = r.get_ref(3)?.as_str_or_null()?;
            writer.add_document(doc(&b.fields, id, r.get(1)?, text, heading))?;
        }
    }
    writer.commit()?;
    // Small segments merge before the writer goes, so replays do not pile them up.
    writer.wait_merging_threads()?;
    b.reader.reload()?;
    b.docs = usize::try_from(b.reader.searcher().num_docs()).unwrap_or(usize::MAX);
    b.cursor = head;
    Ok(true)
}

#[derive(Debug, thiserror::Error)]
enum LexError {
    #[error("{0}")]
    Sql(#[from] rusqlite::Error),
    #[error("{0}")]
    Value(#[from] rusqlite::types::FromSqlError),
    #[error("{0}")]
    Tantivy(#[from] tantivy::TantivyError),
}

fn query(
    b: &mut Built,
    text: &str,
    k: usize,
    folder: Option<i64>,
) -> tantivy::Result<Vec<(i64, f64)>> {
    let mut terms = Vec::new();
    for word in crate::rank::query_words(text) {
        let mut stream = b.analyzer.token_stream(&word);
        while stream.advance() {
            let t = stream.token().text.clone();
            if !terms.contains(&t) {
                terms.push(t);
            }
        }
    }
    if terms.is_empty() || k == 0 {
        return Ok(Vec::new());
    }
    let mut shoulds: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    for t in &terms {
        shoulds.push((
            Occur::Should,
            Box::new(TermQuery::new(
                Term::from_field_text(b.fields.text, t),
                IndexRecordOption::WithFreqs,
            )),
        ));
    }
    let words: Box<dyn Query> = Box::new(BooleanQuery::new(shoulds));
    let q: Box<dyn Query> = match folder {
        Some(id) => Box::new(BooleanQuery::new(vec![
            (Occur::Must, words),
            (
                Occur::Must,
                Box::new(ConstScoreQuery::new(
                    Box::new(TermQuery::new(
                        Term::from_field_i64(b.fields.folder, id),
                        IndexRecordOption::Basic,
                    )),
                    0.0,
                )),
            ),
        ])),
        None => words,
    };
    let searcher = b.reader.searcher();
    let top = searcher.search(&q, &TopDocs::with_limit(k).order_by_score())?;
    let mut out = Vec::with_capacity(top.len());
    for (score, addr) in top {
        let column = searcher
            .segment_reader(addr.segment_ord)
            .fast_fields()
            .i64("chunk")?;
        if let Some(id) = column.first(addr.doc_id) {
            out.push((id, f64::from(score)));
        }
    }
    Ok(out)
}

/// Prunes journal entries older than the newest [`JOURNAL_KEEP`] (the indexer, after a run).
pub fn prune_journal(c: &Connection) -> rusqlite::Result<usize> {
    c.execute(
        "DELETE FROM chunk_journal WHERE seq <= (SELECT max(seq) FROM chunk_journal) - ?1",
        [JOURNAL_KEEP],
    )
}

/// Builds (or brings up to date) the in-memory keyword index of `store`'s chunks; from
/// then on this process keeps one (see the module's documentation).
pub fn warm(store: &Store) -> crate::Result<()> {
    store.shared::<LexicalIndex>().warm(store)
}

/// After an ingest: brings this process's copy up to date (rebuilding a dropped one) when
/// it keeps one, so a user's next search has nothing to replay; else nothing.
pub fn keep_fresh(store: &Store) -> crate::Result<()> {
    let index = store.shared::<LexicalIndex>();
    if index.wanted.load(Ordering::Relaxed) {
        index.warm(store)?;
    }
    Ok(())
}

/// When this process keeps a copy but has none usable now (dropped as too far behind),
/// rebuilds it on a thread of its own; searches meanwhile are FTS5's.
pub fn rebuild_in_background(store: &Store) {
    let index = store.shared::<LexicalIndex>();
    if !index.wanted.load(Ordering::Relaxed)
        || index.is_built()
        || index.rebuilding.swap(true, Ordering::AcqRel)
    {
        return;
    }
    let store = store.clone();
    let spawned = std::thread::Builder::new()
        .name("keyword-index".into())
        .spawn(move || {
            let index = store.shared::<LexicalIndex>();
            let _ = index.warm(&store);
            index.rebuilding.store(false, Ordering::Release);
        });
    if spawned.is_err() {
        index.rebuilding.store(false, Ordering::Release);
    }
}

/// Documents in `store`'s in-memory keyword index and its bytes (0, 0 before a build).
pub fn usage(store: &Store) -> (usize, u64) {
    store.shared::<LexicalIndex>().usage()
}

/// Words of a snippet (as FTS5's `snippet(…, 40)` gave).
const SNIPPET_WORDS: usize = 40;

/// The passage of `text` around the words of `query` that it contains — the window of
/// [`SNIPPET_WORDS`] words with the most of them, first such — with `…` where it is cut;
/// `None` when it contains none. Words match as the index matches them (stemmed).
pub fn snippet(text: &str, query: &str) -> Option<String> {
    let mut a = analyzer();
    let mut wanted = Vec::new();
    for w in crate::rank::query_words(query) {
        let mut s = a.token_stream(&w);
        while s.advance() {
            wanted.push(s.token().text.clone());
        }
    }
    if wanted.is_empty() {
        return None;
    }
    // Every word of the text with its byte range and whether it matches.
    let mut words: Vec<(usize, usize, bool)> = Vec::new();
    let mut s = a.token_stream(text);
    while s.advance() {
        let t = s.token();
        words.push((t.offset_from, t.offset_to, wanted.contains(&t.text)));
    }
    let hits: Vec<usize> = (0..words.len()).filter(|i| words[*i].2).collect();
    if hits.is_empty() {
        return None;
    }
    let mut best = (0, hits[0]);
    for (n, first) in hits.iter().enumerate() {
        let within = hits[n..]
            .iter()
            .take_while(|h| **h < first + SNIPPET_WORDS)
            .count();
        if within > best.0 {
            best = (within, *first);
        }
    }
    // Start a few words before the first match, so it reads in context.
    let start = best
        .1
        .saturating_sub(4)
        .min(words.len().saturating_sub(SNIPPET_WORDS));
    let end = (start + SNIPPET_WORDS).min(words.len());
    let from = words[start].0;
    let to = words[end - 1].1;
    let body = text
        .get(from..to)?
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.push_str(&body);
    if end < words.len() {
        out.push('…');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::snippet;

    #[test]
    fn a_snippet_is_the_window_with_the_query_words_cut_with_ellipses() {
        let filler = "word ".repeat(100);
        let text = format!("{filler}the boilers failed with error E1234 today {filler}");
        let s = snippet(&text, "boiler E1234").expect("found");
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(s.contains("boilers failed with error E1234"), "{s}");
        assert_eq!(s.trim_matches('…').split_whitespace().count(), 40);
        assert_eq!(snippet(&text, "quokka"), None);
        assert_eq!(
            snippet("short E1234 text", "e1234").as_deref(),
            Some("short E1234 text")
        );
        // Byte offsets stay on character boundaries in any script.
        assert!(snippet("größere Dächer über café", "dacher").is_some());
    }
}
