//! Watched folders through the real `hearth` binary: `folders`, `index`, `search`, with the
//! real extraction worker (a child of the binary) and the real encrypted store. Hostile
//! files, a slow and a crashing reader, edits while a file is read, renames and deletes,
//! two indexers at once, and a kill mid-run.

mod common;

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use hearth_core::store::{OpenOptions, Store};
use hearth_core::{DataDir, KeyBackend};
use serde_json::Value;

struct Home {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    docs: PathBuf,
}

impl Home {
    fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("hearth");
        let docs = tmp.path().join("docs");
        std::fs::create_dir_all(&docs).expect("docs");
        Self {
            _tmp: tmp,
            root,
            docs,
        }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_hearth"));
        c.args(args)
            .env("HEARTH_HOME", &self.root)
            .env("HEARTH_KEY_BACKEND", "file")
            .env_remove("HEARTH_TEST_CRASH_AT")
            .env_remove("HEARTH_TEST_DELAY_AT")
            .env_remove("HEARTH_LOG")
            .env("HEARTH_EMBED_MODEL_DIR", model_dir())
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run hearth")
    }

    fn json(&self, args: &[&str]) -> Value {
        json_of(&self.run(args), args)
    }

    fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let p = self.docs.join(rel);
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir).expect("dir");
        }
        std::fs::write(&p, content).expect("write");
        p
    }

    fn docs(&self) -> &str {
        self.docs.to_str().expect("utf-8 path")
    }

    fn store(&self) -> Store {
        let mut o = OpenOptions::new(DataDir::new(&self.root));
        o.new_key_backend = KeyBackend::File;
        Store::open(&o).expect("open store")
    }

    /// `SELECT count(*)` of `sql`.
    fn count(&self, sql: &'static str) -> i64 {
        self.store()
            .read_blocking(move |c| c.query_row(sql, [], |r| r.get(0)))
            .expect("count")
    }

    /// The files of the docs folder by relative path: (status, reason).
    fn statuses(&self) -> std::collections::BTreeMap<String, (String, Option<String>)> {
        let v = self.json(&["folders", "files", self.docs(), "--json"]);
        let docs = std::fs::canonicalize(&self.docs).expect("canonical");
        v.as_array()
            .expect("array")
            .iter()
            .map(|f| {
                let path = PathBuf::from(f["path"].as_str().expect("path"));
                let rel = path
                    .strip_prefix(&docs)
                    .expect("inside the folder")
                    .to_string_lossy()
                    .into_owned();
                (
                    rel,
                    (
                        f["status"].as_str().expect("status").to_owned(),
                        f["reason_code"].as_str().map(str::to_owned),
                    ),
                )
            })
            .collect()
    }

    fn search(&self, query: &str) -> Vec<Value> {
        let v = self.json(&["search", query, "--mode", "bm25", "--json"]);
        v["results"].as_array().expect("results").clone()
    }
}

fn json_of(out: &Output, args: &[&str]) -> Value {
    assert!(
        out.status.success(),
        "hearth {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "hearth {args:?}: no JSON on stdout ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn paths(results: &[Value]) -> Vec<String> {
    results
        .iter()
        .map(|r| {
            Path::new(r["path"].as_str().expect("path"))
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect()
}

/// A DOCX: a zip holding `word/document.xml` with `xml` as its body.
fn docx(body: &str) -> Vec<u8> {
    let xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}</w:body></w:document>"#
    );
    zip_with(&[
        ("[Content_Types].xml", b"<Types/>".as_slice()),
        ("word/document.xml", xml.as_bytes()),
    ])
}

fn zip_with(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, data) in entries {
            z.start_file(*name, opts).expect("zip entry");
            z.write_all(data).expect("zip write");
        }
        z.finish().expect("zip finish");
    }
    buf.into_inner()
}

/// A DOCX whose document.xml unpacks to 300 MB (of one repeated tag).
fn zip_bomb() -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .compression_level(Some(1))
            .large_file(true);
        z.start_file("word/document.xml", opts).expect("zip entry");
        let block = "<w:p/>".repeat(1 << 16).into_bytes();
        for _ in 0..(300 * 1024 * 1024 / block.len()) {
            z.write_all(&block).expect("zip write");
        }
        z.finish().expect("zip finish");
    }
    buf.into_inner()
}

#[test]
fn every_hostile_file_gets_its_reason_and_every_good_file_is_indexed() {
    let home = Home::new();
    home.write(
        "guide.md",
        "# Install\n\n## Linux\n\nRun the installer. Error E4041 means the keyring is locked.\n",
    );
    home.write("notes.txt", "Tomatoes need full sun and deep watering.\n");
    home.write("page.html", "<html><body><h1>Bread</h1><p>Bake the sourdough at 230 degrees.</p><script>var hidden='scriptword';</script></body></html>");
    home.write("people.csv", "name,city\nAda,Llandudno\n");
    home.write(
        "config.json",
        r#"{"service": {"port": 8443, "owner": "quartermaster"}}"#,
    );
    home.write(
        "src/lib.rs",
        "/// Parses the frobnicator configuration.\npub fn frobnicate() {}\n",
    );
    home.write(
        "report.docx",
        docx(r#"<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Quarterly</w:t></w:r></w:p><w:p><w:r><w:t xml:space="preserve">Revenue rose in </w:t></w:r><w:r><w:t>Reykjavik &amp; Oslo.</w:t></w:r></w:p>"#),
    );
    // Latin-1, not UTF-8: decoded, not refused.
    home.write(
        "latin1.txt",
        b"Caf\xe9 cr\xe8me br\xfbl\xe9e recipe from Lyon\n".as_slice(),
    );
    // Hostile.
    home.write("empty.txt", b"");
    home.write("nul.txt", vec![0u8; 4096]);
    let random: Vec<u8> = (0..8192u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    home.write("random.txt", &random);
    home.write("fake.docx", "this is not a zip at all");
    home.write("bomb.docx", zip_bomb());
    let mut cfb = vec![0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];
    cfb.extend_from_slice(&[0u8; 504]);
    home.write("locked.docx", &cfb);
    home.write("photo.png", b"\x89PNG\r\n\x1a\n not really");
    let big = std::fs::File::create(home.docs.join("huge.txt")).expect("huge");
    big.set_len(60 * 1024 * 1024).expect("60 MB");
    drop(big);
    std::os::unix::fs::symlink("/etc/passwd", home.docs.join("passwd-link")).expect("link");
    std::os::unix::fs::symlink("loop-b", home.docs.join("loop-a")).expect("link");
    std::os::unix::fs::symlink("loop-a", home.docs.join("loop-b")).expect("link");
    let fifo = home.docs.join("pipe");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo")
            .success(),
        "mkfifo"
    );

    let added = home.json(&["folders", "add", home.docs(), "--json"]);
    assert!(added["id"].as_i64().is_some());
    let summary = home.json(&["index", "--wait", "--json"]);
    let s = home.statuses();
    let expect = |rel: &str, status: &str, reason: Option<&str>| {
        let got = s
            .get(rel)
            .unwrap_or_else(|| panic!("{rel} is not listed: {s:?}"));
        assert_eq!(
            (got.0.as_str(), got.1.as_deref()),
            (status, reason),
            "{rel}"
        );
    };
    for good in [
        "guide.md",
        "notes.txt",
        "page.html",
        "people.csv",
        "config.json",
        "src/lib.rs",
        "report.docx",
        "latin1.txt",
    ] {
        expect(good, "indexed", None);
    }
    expect("empty.txt", "skipped", Some("empty"));
    expect("nul.txt", "skipped", Some("binary"));
    expect("random.txt", "skipped", Some("binary"));
    expect("fake.docx", "failed", Some("corrupt"));
    expect("bomb.docx", "skipped", Some("too_large"));
    expect("locked.docx", "skipped", Some("encrypted"));
    expect("photo.png", "skipped", Some("unsupported"));
    expect("huge.txt", "skipped", Some("too_large"));
    expect("passwd-link", "skipped", Some("symlink_outside"));
    expect("loop-a", "skipped", Some("symlink_loop"));
    expect("pipe", "skipped", Some("not_regular"));
    assert_eq!(summary["files"]["indexed"], 8, "{summary}");
    assert_eq!(summary["files"]["pending"], 0, "{summary}");
    assert_eq!(summary["files"]["failed"], 1, "{summary}");

    // Every good file is found by its own words; the link's target never is.
    assert_eq!(paths(&home.search("E4041")), ["guide.md"]);
    assert_eq!(paths(&home.search("sourdough")), ["page.html"]);
    assert!(
        home.search("scriptword").is_empty(),
        "script text is not page text"
    );
    assert_eq!(paths(&home.search("Llandudno")), ["people.csv"]);
    assert_eq!(paths(&home.search("quartermaster")), ["config.json"]);
    assert_eq!(paths(&home.search("frobnicator")), ["lib.rs"]);
    assert_eq!(paths(&home.search("Reykjavik Oslo")), ["report.docx"]);
    assert_eq!(paths(&home.search("crème brûlée")), ["latin1.txt"]);
    assert!(
        home.search("root").is_empty(),
        "/etc/passwd must not be indexed"
    );
    let docx_hit = &home.search("Reykjavik")[0];
    assert_eq!(docx_hit["heading"], "Quarterly");
    // No orphans: every chunk has its file, FTS has a row per chunk.
    assert_eq!(
        home.count(
            "SELECT count(*) FROM chunks WHERE file_id NOT IN (SELECT id FROM folder_files)"
        ),
        0
    );
    assert_eq!(
        home.count("SELECT count(*) FROM chunks"),
        home.count("SELECT count(*) FROM chunks_fts")
    );
    assert_eq!(
        home.count("SELECT coalesce(sum(chunks), 0) FROM folder_files"),
        home.count("SELECT count(*) FROM chunks")
    );
}

#[test]
fn a_hit_cites_the_file_lines_and_heading_it_came_from() {
    let home = Home::new();
    let mut text = String::from("# Handbook\n\n");
    for i in 0..120 {
        text.push_str(&format!(
            "Paragraph {i} talks about ordinary office matters and lunch.\n\n"
        ));
    }
    text.push_str("## Troubleshooting\n\nIf the printer shows PRN-7731, reseat the toner.\n");
    home.write("handbook.md", &text);
    home.json(&["folders", "add", home.docs(), "--json"]);
    home.json(&["index", "--wait", "--json"]);
    let hits = home.search("PRN-7731 printer");
    let hit = &hits[0];
    assert_eq!(paths(&hits)[0], "handbook.md");
    let line = text
        .lines()
        .position(|l| l.contains("PRN-7731"))
        .expect("line") as u64
        + 1;
    let (start, end) = (
        hit["line_start"].as_u64().expect("start"),
        hit["line_end"].as_u64().expect("end"),
    );
    assert!(
        start <= line && line <= end,
        "lines {start}-{end} miss line {line}"
    );
    assert_eq!(hit["heading"], "Handbook > Troubleshooting");
    assert!(hit["snippet"].as_str().expect("snippet").contains("PRN"));
    assert!(hit["chunk_id"].as_i64().is_some());
    // Hybrid without vectors is keyword search, and says so.
    let v = home.json(&["search", "PRN-7731", "--json"]);
    assert_eq!(v["mode"], "bm25");
    assert!(v["warning"].as_str().is_some_and(|w| w.contains("keyword")));
    // A folder filter: another folder's files are not returned.
    let other = home._tmp.path().join("other");
    std::fs::create_dir_all(&other).expect("other");
    std::fs::write(other.join("o.txt"), "PRN-7731 in another folder").expect("write");
    home.json(&["folders", "add", other.to_str().expect("utf-8"), "--json"]);
    home.json(&["index", "--wait", "--json"]);
    let all = home.json(&["search", "PRN-7731", "--mode", "bm25", "--json"]);
    assert_eq!(all["results"].as_array().map(Vec::len), Some(2));
    let only = home.json(&[
        "search",
        "PRN-7731",
        "--mode",
        "bm25",
        "--folder",
        other.to_str().expect("utf-8"),
        "--json",
    ]);
    assert_eq!(
        paths(only["results"].as_array().expect("results")),
        ["o.txt"]
    );
    // By file type, and by modified time (the handbook was written before o.txt).
    let by_type = home.json(&[
        "search", "PRN-7731", "--mode", "bm25", "--type", "MD", "--json",
    ]);
    assert_eq!(
        paths(by_type["results"].as_array().expect("results")),
        ["handbook.md"]
    );
    let mtime = |p: &Path| -> i64 {
        std::fs::metadata(p)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as i64)
    };
    let cut = mtime(&other.join("o.txt"));
    assert!(
        mtime(&home.docs.join("handbook.md")) < cut,
        "precondition: the handbook is older"
    );
    let since = cut.to_string();
    let recent = home.json(&[
        "search",
        "PRN-7731",
        "--mode",
        "bm25",
        "--modified-since",
        &since,
        "--json",
    ]);
    assert_eq!(
        paths(recent["results"].as_array().expect("results")),
        ["o.txt"]
    );
}

#[test]
fn edits_renames_and_deletes_made_while_nothing_ran_are_picked_up() {
    let home = Home::new();
    home.write("a.txt", "The heron nests by the old mill.\n");
    home.write("b.txt", "Otters play below the weir.\n");
    home.write("c.txt", "Kingfishers dive for minnows.\n");
    home.write("ünïcödé/d.txt", "Dragonflies hover over the reeds.\n");
    home.json(&["folders", "add", home.docs(), "--json"]);
    home.json(&["index", "--wait", "--json"]);
    assert_eq!(paths(&home.search("dragonflies")), ["d.txt"]);
    let otter_chunk = home.search("otters")[0]["chunk_id"].clone();

    // Edit a, rename b (same bytes), delete c, add e — with nothing running.
    home.write("a.txt", "The egret nests by the new bridge.\n");
    std::fs::rename(home.docs.join("b.txt"), home.docs.join("b-renamed.txt")).expect("rename");
    std::fs::remove_file(home.docs.join("c.txt")).expect("delete");
    home.write("e.txt", "Swallows arrive in April.\n");
    let summary = home.json(&["index", "--wait", "--json"]);
    assert_eq!(summary["files"]["indexed"], 4, "{summary}");

    assert!(
        home.search("heron").is_empty(),
        "the old text of an edited file is gone"
    );
    assert_eq!(paths(&home.search("egret")), ["a.txt"]);
    let otter = home.search("otters");
    assert_eq!(paths(&otter), ["b-renamed.txt"]);
    assert_eq!(
        otter[0]["chunk_id"], otter_chunk,
        "a rename moves the row, it is not read again"
    );
    assert!(
        home.search("kingfishers").is_empty(),
        "a deleted file's chunks go"
    );
    assert_eq!(paths(&home.search("swallows")), ["e.txt"]);
    assert_eq!(
        home.count("SELECT count(*) FROM chunks"),
        home.count("SELECT count(*) FROM chunks_fts")
    );
    assert_eq!(
        home.count(
            "SELECT count(*) FROM chunks WHERE file_id NOT IN (SELECT id FROM folder_files)"
        ),
        0
    );
}

#[test]
fn a_slow_reader_times_out_a_crashing_one_fails_and_the_rest_are_indexed() {
    let home = Home::new();
    home.write("slow.txt", "the slow file\n");
    home.write("crash.txt", "the crashing file\n");
    for i in 0..5 {
        home.write(
            &format!("ok{i}.txt"),
            format!("healthy file number {i} about lighthouses\n"),
        );
    }
    home.json(&["folders", "add", home.docs(), "--json"]);
    let out = home
        .cmd(&["index", "--wait", "--json"])
        .env("HEARTH_EXTRACT_TIMEOUT_MS", "1500")
        .env("HEARTH_TEST_DELAY_AT", "extract:slow.txt:60000")
        .env("HEARTH_TEST_CRASH_AT", "extract:crash.txt")
        .output()
        .expect("run");
    json_of(&out, &["index"]);
    let s = home.statuses();
    assert_eq!(s["slow.txt"], ("failed".into(), Some("timeout".into())));
    assert_eq!(s["crash.txt"], ("failed".into(), Some("corrupt".into())));
    for i in 0..5 {
        assert_eq!(s[&format!("ok{i}.txt")].0, "indexed");
    }
    assert_eq!(home.search("lighthouses").len(), 5);
    // The messages say what happened.
    let files = home.json(&[
        "folders",
        "files",
        home.docs(),
        "--status",
        "failed",
        "--json",
    ]);
    let text = files.to_string();
    assert!(text.contains("took over 1.5 s"), "{text}");
    assert!(text.contains("crashed"), "{text}");
}

#[test]
fn a_reader_that_eats_memory_is_stopped_at_the_limit_and_the_rest_are_indexed() {
    let home = Home::new();
    home.write("hungry.txt", "the file whose reader eats memory\n");
    for i in 0..3 {
        home.write(
            &format!("ok{i}.txt"),
            format!("healthy note {i} about puffins\n"),
        );
    }
    home.json(&["folders", "add", home.docs(), "--json"]);
    // The reader takes 700 MiB and then holds them for a minute: only the memory watch
    // can end it before the 30 s timeout (the address-space cap sits 2 GiB higher).
    let out = home
        .cmd(&["index", "--wait", "--json"])
        .env("HEARTH_EXTRACT_MEMORY_MIB", "256")
        .env("HEARTH_TEST_ALLOC_AT", "extract:hungry.txt:700")
        .env("HEARTH_TEST_DELAY_AT", "extract:hungry.txt:60000")
        .output()
        .expect("run");
    json_of(&out, &["index"]);
    let s = home.statuses();
    assert_eq!(
        s["hungry.txt"],
        ("skipped".into(), Some("too_large".into()))
    );
    for i in 0..3 {
        assert_eq!(s[&format!("ok{i}.txt")].0, "indexed");
    }
    assert_eq!(home.search("puffins").len(), 3);
    let files = home.json(&[
        "folders",
        "files",
        home.docs(),
        "--status",
        "skipped",
        "--json",
    ]);
    let text = files.to_string();
    assert!(
        text.contains("reading it needed over 256 MiB of memory"),
        "{text}"
    );
}

#[test]
fn a_file_edited_while_it_is_read_ends_with_its_latest_content_only() {
    let home = Home::new();
    let live = home.write("live.txt", "first draft mentions walruses\n");
    home.json(&["folders", "add", home.docs(), "--json"]);
    let mut child = home
        .cmd(&["index", "--wait", "--json"])
        .env("HEARTH_TEST_DELAY_AT", "extract:live.txt:3000")
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = std::io::BufReader::new(stderr).lines();
    let mut events = Vec::new();
    let mut edited = false;
    for line in lines.by_ref() {
        let line = line.expect("line");
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        if v["phase"] == "scan" && !edited {
            // The worker is reading (held 3 s at the test point): change the file now.
            std::thread::sleep(std::time::Duration::from_millis(300));
            std::fs::write(
                &live,
                "final version mentions narwhals, much longer than before\n",
            )
            .expect("edit");
            edited = true;
        }
        events.push(v);
    }
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success());
    assert!(
        events.iter().any(|e| e["phase"] == "requeued"),
        "precondition: the edit landed while the file was read: {events:?}"
    );
    assert!(
        home.search("walruses").is_empty(),
        "the first draft is not kept"
    );
    assert_eq!(paths(&home.search("narwhals")), ["live.txt"]);
    assert_eq!(home.count("SELECT count(*) FROM chunks"), 1);
}

#[test]
fn progress_is_monotonic_with_the_total_known_after_the_scan_and_ends_at_the_stores_counts() {
    let home = Home::new();
    for i in 0..30 {
        home.write(
            &format!("f{i:02}.txt"),
            format!("file {i} mentions a barometer\n"),
        );
    }
    home.write("zero.txt", "");
    home.json(&["folders", "add", home.docs(), "--json"]);
    let out = home.run(&["index", "--wait", "--json"]);
    let summary = json_of(&out, &["index"]);
    let events: Vec<Value> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(events[0]["phase"], "scan");
    assert_eq!(events[0]["total"], 31, "the total is known after the scan");
    let mut last = 0;
    for e in &events {
        let done = e["done"].as_u64().expect("done");
        assert!(done >= last, "done went back: {events:?}");
        assert!(done <= e["total"].as_u64().expect("total"));
        last = done;
    }
    let end = events.last().expect("events");
    assert_eq!(end["phase"], "done");
    assert_eq!(end["done"], 31);
    assert_eq!(summary["files"]["indexed"], 30);
    assert_eq!(summary["files"]["skipped"], 1);
    assert_eq!(
        summary["chunks"].as_i64(),
        Some(home.count("SELECT count(*) FROM chunks"))
    );
}

#[test]
fn pausing_keeps_files_pending_across_runs_until_resumed() {
    let home = Home::new();
    home.write("p.txt", "pelicans gather at dusk\n");
    home.json(&["folders", "add", home.docs(), "--json"]);
    let paused = home.json(&["folders", "pause", home.docs(), "--json"]);
    assert_eq!(paused[0]["paused"], true);
    let summary = home.json(&["index", "--wait", "--json"]);
    assert_eq!(summary["files"]["pending"], 1);
    let list = home.json(&["folders", "list", "--json"]);
    assert_eq!(list[0]["state"], "paused");
    home.json(&["folders", "resume", "--json"]);
    let summary = home.json(&["index", "--wait", "--json"]);
    assert_eq!(summary["files"]["indexed"], 1);
    assert_eq!(
        home.json(&["folders", "list", "--json"])[0]["state"],
        "idle"
    );
}

#[test]
fn adding_refuses_a_file_a_missing_path_and_a_folder_inside_a_watched_one() {
    let home = Home::new();
    let file = home.write("sub/x.txt", "x");
    let first = home.json(&["folders", "add", home.docs(), "--json"]);
    let again = home.json(&["folders", "add", &format!("{}/./", home.docs()), "--json"]);
    assert_eq!(
        first["id"], again["id"],
        "the same folder twice is one folder"
    );
    for (path, needle) in [
        (file.to_str().expect("utf-8").to_owned(), "is a file"),
        (format!("{}/missing", home.docs()), "does not exist"),
        (format!("{}/sub", home.docs()), "inside"),
    ] {
        let out = home.run(&["folders", "add", &path, "--json"]);
        assert_eq!(out.status.code(), Some(1), "{path}");
        let v: Value = serde_json::from_slice(&out.stdout).expect("json error");
        assert_eq!(v["error"]["code"], "invalid_input");
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(needle)),
            "{v}"
        );
    }
    let out = home.run(&["folders", "remove", "/nowhere/at/all", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let out = home.run(&["search", "x", "--mode", "fuzzy", "--json"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn the_text_is_only_inside_the_encrypted_file_and_removing_the_folder_takes_it() {
    let home = Home::new();
    let marker = "zqxmarkerphrase";
    home.write("secret.md", format!("# Diary\n\nMy {marker} lives here.\n"));
    home.json(&["folders", "add", home.docs(), "--json"]);
    home.json(&["index", "--wait", "--json"]);
    assert_eq!(home.search(marker).len(), 1);
    let in_files = |root: &Path| -> Vec<PathBuf> {
        let mut hits = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).expect("read dir").flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if std::fs::read(&p)
                    .is_ok_and(|b| b.windows(marker.len()).any(|w| w == marker.as_bytes()))
                {
                    hits.push(p);
                }
            }
        }
        hits
    };
    assert_eq!(
        in_files(&home.root),
        Vec::<PathBuf>::new(),
        "plaintext in the data folder"
    );
    home.json(&["folders", "remove", home.docs(), "--json"]);
    assert!(home.search(marker).is_empty());
    assert_eq!(home.count("SELECT count(*) FROM chunks"), 0);
    assert_eq!(home.count("SELECT count(*) FROM folder_files"), 0);
    // Not in the decrypted index either: no FTS term is left for it.
    let store = home.store();
    let terms: i64 = store
        .read_blocking(|c| {
            c.execute_batch(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.chunk_terms USING fts5vocab(main, chunks_fts, 'row')",
            )?;
            c.query_row(
                "SELECT count(*) FROM temp.chunk_terms WHERE term = 'zqxmarkerphras' OR term = 'zqxmarkerphrase'",
                [],
                |r| r.get(0),
            )
        })
        .expect("vocab");
    assert_eq!(terms, 0);
    assert!(
        std::fs::read_to_string(home.docs.join("secret.md")).is_ok(),
        "the file itself stays"
    );
}

#[test]
fn two_indexers_at_once_share_the_work_through_the_lock() {
    let home = Home::new();
    for i in 0..12 {
        home.write(&format!("n{i}.txt"), format!("note {i} about the comet\n"));
    }
    home.json(&["folders", "add", home.docs(), "--json"]);
    // The first holds the lock and is slowed on one file; the second follows it.
    let first = home
        .cmd(&["index", "--wait", "--json"])
        .env("HEARTH_TEST_DELAY_AT", "extract:n3.txt:1500")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let lock = home.root.join("index.lock");
    let mut held = false;
    for _ in 0..200 {
        if let Ok(f) = std::fs::OpenOptions::new().write(true).open(&lock) {
            match f.try_lock() {
                Ok(()) => {
                    let _ = f.unlock();
                }
                Err(_) => {
                    held = true;
                    break;
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    assert!(held, "precondition: the first indexer holds the lock");
    let second = home.run(&["index", "--wait", "--json"]);
    let second_summary = json_of(&second, &["index"]);
    let first_out = first.wait_with_output().expect("wait");
    let first_summary = json_of(&first_out, &["index"]);
    assert_eq!(second_summary["files"]["pending"], 0);
    assert_eq!(second_summary["files"]["indexed"], 12);
    assert_eq!(first_summary["files"]["indexed"], 12);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        !stderr.contains("\"phase\":\"file\""),
        "the second indexer read no file itself: {stderr}"
    );
    assert_eq!(
        home.count("SELECT count(*) FROM chunks"),
        12,
        "no duplicate chunks"
    );
}

#[test]
fn a_kill_at_any_point_leaves_a_store_that_the_next_run_completes() {
    // Reference: a clean run.
    let make = |home: &Home| {
        for i in 0..200 {
            home.write(
                &format!("d{}/f{i:03}.md", i % 7),
                format!(
                    "# Note {i}\n\nEntry {i} records the tide at harbour {}.\n",
                    i * 7
                ),
            );
        }
    };
    let clean = Home::new();
    make(&clean);
    clean.json(&["folders", "add", clean.docs(), "--json"]);
    clean.json(&["index", "--wait", "--json"]);
    let expected = clean.count("SELECT count(*) FROM chunks");
    assert_eq!(
        clean.count("SELECT count(*) FROM folder_files WHERE status = 'indexed'"),
        200
    );

    for kill_after in [1usize, 40, 150] {
        let home = Home::new();
        make(&home);
        home.json(&["folders", "add", home.docs(), "--json"]);
        let mut child = home
            .cmd(&["index", "--wait", "--json"])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn");
        let stderr = child.stderr.take().expect("stderr");
        let mut seen = 0;
        for line in std::io::BufReader::new(stderr).lines() {
            if line.is_err() {
                break;
            }
            seen += 1;
            if seen == kill_after {
                child.kill().expect("kill -9");
                break;
            }
        }
        let _ = child.wait();
        assert_eq!(
            seen, kill_after,
            "precondition: killed after event {kill_after}"
        );
        let integrity: String = home
            .store()
            .read_blocking(|c| c.query_row("PRAGMA integrity_check", [], |r| r.get(0)))
            .expect("integrity");
        assert_eq!(integrity, "ok");
        let summary = home.json(&["index", "--wait", "--json"]);
        assert_eq!(
            summary["files"]["indexed"], 200,
            "after a kill at event {kill_after}"
        );
        assert_eq!(home.count("SELECT count(*) FROM chunks"), expected);
        assert_eq!(
            home.count("SELECT count(*) FROM (SELECT file_id, ordinal FROM chunks GROUP BY 1, 2 HAVING count(*) > 1)"),
            0
        );
        assert_eq!(
            home.count("SELECT count(*) FROM chunks"),
            home.count("SELECT count(*) FROM chunks_fts")
        );
    }
    // Killed while embedding (after its second batch of vectors): the next run gives the
    // rest their vectors, once each.
    require_model();
    let home = Home::new();
    make(&home);
    home.json(&["folders", "add", home.docs(), "--json"]);
    let mut child = home
        .cmd(&["index", "--wait", "--wait-vectors", "--json"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn");
    let stderr = child.stderr.take().expect("stderr");
    let mut batches = 0;
    for line in std::io::BufReader::new(stderr).lines() {
        let Ok(line) = line else { break };
        if line.contains("\"phase\":\"embed\"") {
            batches += 1;
            if batches == 2 {
                child.kill().expect("kill -9");
                break;
            }
        }
    }
    let _ = child.wait();
    assert_eq!(batches, 2, "precondition: killed mid-embedding");
    let partial = home.count("SELECT count(*) FROM chunk_vectors");
    assert!(
        partial > 0 && partial < expected,
        "precondition: some vectors, not all ({partial} of {expected})"
    );
    let integrity: String = home
        .store()
        .read_blocking(|c| c.query_row("PRAGMA integrity_check", [], |r| r.get(0)))
        .expect("integrity");
    assert_eq!(integrity, "ok");
    let summary = home.json(&["index", "--wait", "--wait-vectors", "--json"]);
    assert_eq!(summary["vectors"], "complete", "{summary}");
    assert_eq!(summary["files"]["indexed"], 200);
    assert_eq!(home.count("SELECT count(*) FROM chunks"), expected);
    assert_eq!(home.count("SELECT count(*) FROM chunk_vectors"), expected);
    assert_eq!(
        home.count("SELECT count(*) FROM chunk_vectors v LEFT JOIN chunks c ON c.id = v.chunk_id WHERE c.id IS NULL"),
        0,
        "no orphan vectors"
    );

    // And a crash right after a commit (the process aborts there).
    let home = Home::new();
    make(&home);
    home.json(&["folders", "add", home.docs(), "--json"]);
    let out = home
        .cmd(&["index", "--wait", "--json"])
        .env("HEARTH_TEST_CRASH_AT", "index.after_commit")
        .output()
        .expect("run");
    assert!(!out.status.success(), "precondition: it crashed");
    assert_eq!(
        home.count("SELECT count(*) FROM folder_files WHERE status = 'indexed'"),
        1
    );
    let summary = home.json(&["index", "--wait", "--json"]);
    assert_eq!(summary["files"]["indexed"], 200);
    assert_eq!(home.count("SELECT count(*) FROM chunks"), expected);
}

/// Where the local embedding model is (`scripts/fetch-model.sh`'s default without the
/// variable).
fn model_dir() -> PathBuf {
    std::env::var_os("HEARTH_EMBED_MODEL_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/hearth-models/minilm"))
        })
        .unwrap_or_default()
}

/// The local embedding model must be here (the README's test command fetches it).
fn require_model() {
    let dir = model_dir();
    assert!(
        hearth_core::embed::ModelSource::dir(&dir)
            .find()
            .ok()
            .flatten()
            .is_some(),
        "the embedding model is not at {} (scripts/fetch-model.sh)",
        dir.display()
    );
}

#[test]
fn hybrid_search_finds_an_identifier_vectors_miss_and_a_paraphrase_keywords_miss() {
    require_model();
    let home = Home::new();
    home.write(
        "sync.md",
        "# Sync\n\nIf syncing stops with E7291, sign out of the account, wait a minute, link the \
         account again and let the first full sync finish before you edit anything on the \
         other devices; it can take an hour for a large library of photos.\n",
    );
    // Error codes that look alike, as a troubleshooting folder has them.
    for (name, code, fix) in [
        ("sync-disk.md", "E7219", "free some disk space and retry"),
        ("sync-pass.md", "E7921", "enter the new password"),
        ("sync-clock.md", "E2791", "set the computer's clock"),
        ("sync-net.md", "E7129", "check the network connection"),
    ] {
        home.write(name, format!("# Sync\n\nSync error {code}: {fix}.\n"));
    }
    home.write(
        "puppy.md",
        "# Pets\n\nOur puppy needs vaccinations before it may visit the kennel.\n",
    );
    let others = [
        (
            "garden.md",
            "Tomatoes ripen faster in a greenhouse with steady watering.",
        ),
        (
            "bread.md",
            "Sourdough bread rises overnight in a cool kitchen.",
        ),
        (
            "bikes.md",
            "Check the chain and tyre pressure before a long bicycle ride.",
        ),
        (
            "tax.md",
            "The tax return is due at the end of January each year.",
        ),
        (
            "trip.md",
            "The old harbour town has a market every Saturday morning.",
        ),
        (
            "music.md",
            "Practise the piano scales slowly before playing them fast.",
        ),
        (
            "cooking.md",
            "Simmer the lentil soup for forty minutes and season it well.",
        ),
        (
            "car.md",
            "The car's oil should be changed every ten thousand kilometres.",
        ),
        (
            "books.md",
            "The library lends novels, atlases and audiobooks for three weeks.",
        ),
        (
            "sleep.md",
            "A dark, quiet bedroom helps adults sleep through the night.",
        ),
    ];
    for (name, text) in others {
        home.write(name, format!("# Notes\n\n{text}\n"));
    }
    home.json(&["folders", "add", home.docs(), "--json"]);
    let summary = home.json(&["index", "--wait-vectors", "--json"]);
    assert_eq!(summary["vectors"], "complete", "{summary}");
    let list = home.json(&["folders", "list", "--json"]);
    assert_eq!(list[0]["chunks_embedded"], list[0]["chunks"]);
    assert_eq!(list[0]["chunks"], 16);

    let search = |query: &str, mode: &str| -> Value {
        home.json(&["search", query, "--mode", mode, "--json"])
    };
    let top = |v: &Value| paths(v["results"].as_array().expect("results"));

    // An identifier: vectors alone do not put it first (precondition); hybrid does.
    let vector = search("E7291", "vector");
    assert_eq!(vector["mode"], "vector");
    assert_ne!(
        top(&vector).first().map(String::as_str),
        Some("sync.md"),
        "precondition: {vector}"
    );
    let hybrid = search("E7291", "hybrid");
    assert_eq!(hybrid["mode"], "hybrid");
    assert_eq!(hybrid["warning"], Value::Null);
    assert_eq!(
        top(&hybrid).first().map(String::as_str),
        Some("sync.md"),
        "{hybrid}"
    );

    // A paraphrase: no word in common, so BM25 misses it (precondition); hybrid finds it.
    let q = "how old must a young dog be for its jabs";
    let bm25 = search(q, "bm25");
    assert!(
        !top(&bm25).contains(&"puppy.md".to_owned()),
        "precondition: {bm25}"
    );
    let hybrid = search(q, "hybrid");
    let found = top(&hybrid);
    assert!(found.iter().take(3).any(|p| p == "puppy.md"), "{hybrid}");

    // An edit drops the old vectors with the old chunks; the next run embeds the new one.
    home.write(
        "puppy.md",
        "# Pets\n\nThe kitten sleeps on the windowsill all afternoon.\n",
    );
    let summary = home.json(&["index", "--wait", "--json"]);
    assert_eq!(summary["vectors"], "pending", "{summary}");
    assert_eq!(
        home.count(
            "SELECT count(*) FROM chunk_vectors WHERE chunk_id NOT IN (SELECT id FROM chunks)"
        ),
        0
    );
    let summary = home.json(&["index", "--wait-vectors", "--json"]);
    assert_eq!(summary["vectors"], "complete");
    assert_eq!(home.count("SELECT count(*) FROM chunk_vectors"), 16);
}

/// `hearth index --watch --json` running in the background; killed when dropped. Its
/// progress events are collected from stderr.
struct Watching {
    child: std::process::Child,
    events: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
}

impl Watching {
    fn start(home: &Home) -> Self {
        Self::start_with(home, &[])
    }

    /// With `env` on top (test hooks).
    fn start_with(home: &Home, env: &[(&str, &str)]) -> Self {
        let mut child = home
            .cmd(&["index", "--watch", "--json"])
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let stderr = child.stderr.take().expect("stderr");
        let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = events.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && let Ok(mut e) = sink.lock()
                {
                    e.push(v);
                }
            }
        });
        let w = Self { child, events };
        w.until("the first index is done", || w.saw("done"));
        w
    }

    fn saw(&self, phase: &str) -> bool {
        self.events
            .lock()
            .map(|e| e.iter().any(|v| v["phase"] == phase))
            .unwrap_or(false)
    }

    /// Polls `ok` until it holds (a generous guard of 5 minutes, never a timing assertion).
    fn until(&self, what: &str, ok: impl Fn() -> bool) {
        for _ in 0..3000 {
            if ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let phases: Vec<String> = self
            .events
            .lock()
            .map(|e| {
                e.iter()
                    .filter(|v| v["phase"] != "file")
                    .map(|v| v.to_string())
                    .collect()
            })
            .unwrap_or_default();
        panic!("the watcher did not get there: {what}; events other than files: {phases:?}");
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_watcher_sees_creates_edits_renames_and_deletes_as_they_happen() {
    let home = Home::new();
    home.write("first.txt", "The lighthouse keeper logs the weather.\n");
    home.json(&["folders", "add", home.docs(), "--json"]);
    let w = Watching::start(&home);
    assert_eq!(paths(&home.search("lighthouse")), ["first.txt"]);

    home.write("ünï/cödé.md", "# Ideas\n\nA walrus-shaped teapot.\n");
    w.until("a new file in a new folder is found", || {
        paths(&home.search("walrus")) == ["cödé.md"]
    });
    home.write("first.txt", "The lighthouse keeper logs the tides now.\n");
    w.until("an edit is indexed", || !home.search("tides").is_empty());
    assert!(home.search("weather").is_empty(), "the old text went");
    let chunk = home.search("tides")[0]["chunk_id"].clone();
    std::fs::rename(home.docs.join("first.txt"), home.docs.join("renamed.txt")).expect("mv");
    w.until("a rename moves the file", || {
        paths(&home.search("tides")) == ["renamed.txt"]
    });
    assert_eq!(
        home.search("tides")[0]["chunk_id"],
        chunk,
        "a rename is not read again"
    );
    std::fs::remove_dir_all(home.docs.join("ünï")).expect("rm");
    w.until("a deleted folder's files go", || {
        home.search("walrus").is_empty()
    });
    assert_eq!(
        home.count("SELECT count(*) FROM chunks"),
        home.count("SELECT count(*) FROM chunks_fts")
    );
    assert_eq!(home.count("SELECT count(*) FROM folder_files"), 1);

    // A folder added by another command is watched too.
    let other = home._tmp.path().join("other");
    std::fs::create_dir_all(&other).expect("other");
    home.json(&["folders", "add", other.to_str().expect("utf-8"), "--json"]);
    std::thread::sleep(std::time::Duration::from_millis(2500));
    std::fs::write(other.join("late.txt"), "A heron on the weir.\n").expect("write");
    w.until("a folder added later is watched", || {
        !home.search("heron").is_empty()
    });
}

/// While alive, new inotify instances get a queue of `events` (the kernel reads the limit
/// when an instance is made); the old limit comes back when dropped. `None` when this
/// process may not change it (not root).
struct SmallInotifyQueue(String);

impl SmallInotifyQueue {
    const PATH: &str = "/proc/sys/fs/inotify/max_queued_events";

    fn set(events: u32) -> Option<Self> {
        let old = std::fs::read_to_string(Self::PATH).ok()?;
        std::fs::write(Self::PATH, events.to_string()).ok()?;
        Some(Self(old.trim().to_owned()))
    }
}

impl Drop for SmallInotifyQueue {
    fn drop(&mut self) {
        let _ = std::fs::write(Self::PATH, &self.0);
    }
}

#[test]
fn a_burst_of_twenty_thousand_files_ends_fully_indexed_through_a_rescan() {
    let home = Home::new();
    home.write("seed.txt", "seed\n");
    home.json(&["folders", "add", home.docs(), "--json"]);
    // The watcher's queue is made small so the burst overflows it for sure (at the
    // default 16,384 the watcher usually keeps up); restored once the watcher runs.
    let Some(small) = SmallInotifyQueue::set(16) else {
        eprintln!(
            "SKIPPED: cannot shrink the inotify queue here (needs root); the Rescan path is not exercised"
        );
        return;
    };
    let w = Watching::start(&home);
    // `done` is the first pass's; the OS watch (its queue sized at creation) starts after
    // it. Only once the store says the folder is watched is the queue size restored.
    w.until("the folder is watched", || {
        home.count("SELECT count(*) FROM folders WHERE watch = 'watching'") == 1
    });
    drop(small);
    // The watcher is stopped (SIGSTOP) while the burst is written, so the kernel's queue
    // overflows for sure — a busy machine could otherwise let it keep up — then resumed.
    let signal = |sig: &str| {
        let ok = Command::new("kill")
            .args([sig, &w.child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill {sig}");
    };
    signal("-STOP");
    for d in 0..20 {
        let dir = home.docs.join(format!("b{d:02}"));
        std::fs::create_dir_all(&dir).expect("dir");
        for i in 0..1000 {
            std::fs::write(
                dir.join(format!("f{i:04}.txt")),
                format!("burst file {d} {i}\n"),
            )
            .expect("write");
        }
    }
    signal("-CONT");
    w.until("all 20,001 files are indexed", || {
        home.count("SELECT count(*) FROM folder_files WHERE status = 'indexed'") == 20_001
    });
    // The events read before the overflow already make the folder dirty (every change is
    // one walk of the whole folder), so the files may all be in before the debouncer hands
    // over the overflow itself: it is waited for, not assumed to come first.
    w.until("the overflow is reported as a rescan", || w.saw("rescan"));
    assert_eq!(home.count("SELECT count(*) FROM chunks"), 20_001);
}

#[test]
fn a_file_its_user_may_not_read_is_unreadable_and_the_rest_are_indexed() {
    // As root every file is readable: run `hearth` as nobody (uid 65534) over a data
    // folder nobody owns. Skipped, saying so, where that cannot be done.
    let setpriv = Path::new("/usr/bin/setpriv");
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
    });
    if !root || !setpriv.exists() {
        eprintln!("SKIPPED: needs root and setpriv to run hearth as another user");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().expect("tempdir");
    let open = |p: &Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod")
    };
    open(tmp.path(), 0o755);
    // The binary where nobody may run it (the target dir may be under /root).
    let bin = tmp.path().join("hearth");
    std::fs::copy(env!("CARGO_BIN_EXE_hearth"), &bin).expect("copy hearth");
    open(&bin, 0o755);
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).expect("data");
    std::os::unix::fs::chown(&data, Some(65534), Some(65534)).expect("chown");
    let docs = tmp.path().join("docs");
    std::fs::create_dir(&docs).expect("docs");
    open(&docs, 0o755);
    std::fs::write(docs.join("open.txt"), "A readable note about otters.\n").expect("write");
    open(&docs.join("open.txt"), 0o644);
    std::fs::write(docs.join("closed.txt"), "A private note about badgers.\n").expect("write");
    open(&docs.join("closed.txt"), 0o000);
    let nobody = |args: &[&str]| -> Value {
        let out = Command::new(setpriv)
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin)
            .args(args)
            .env("HEARTH_HOME", &data)
            .env("HOME", &data)
            .env("HEARTH_KEY_BACKEND", "file")
            .env_remove("HEARTH_TEST_CRASH_AT")
            .env_remove("HEARTH_TEST_DELAY_AT")
            .stdin(Stdio::null())
            .output()
            .expect("setpriv");
        json_of(&out, args)
    };
    let docs_arg = docs.to_str().expect("utf-8");
    nobody(&["folders", "add", docs_arg, "--json"]);
    let summary = nobody(&["index", "--wait", "--json"]);
    assert_eq!(summary["files"]["indexed"], 1, "{summary}");
    assert_eq!(summary["files"]["failed"], 1, "{summary}");
    let files = nobody(&["folders", "files", docs_arg, "--json"]);
    let closed = files
        .as_array()
        .expect("files")
        .iter()
        .find(|f| {
            f["path"]
                .as_str()
                .is_some_and(|p| p.ends_with("closed.txt"))
        })
        .expect("closed.txt listed");
    assert_eq!(closed["status"], "failed");
    assert_eq!(closed["reason_code"], "unreadable");
    assert_eq!(closed["message"], "permission denied");
    let found = nobody(&["search", "otters", "--mode", "bm25", "--json"]);
    assert_eq!(found["results"].as_array().map(Vec::len), Some(1));
}

#[test]
fn pdf_pages_are_read_and_cited_and_broken_or_empty_ones_say_why() {
    let home = Home::new();
    home.write(
        "manual.pdf",
        common::pdf(&[
            "Chapter one is about installing the heater.",
            "The boiler code is B-5512 for low pressure.",
        ]),
    );
    home.write("scan.pdf", common::pdf(&["", ""]));
    let whole = common::pdf(&["A page about the greenhouse thermostat."]);
    home.write("truncated.pdf", &whole[..whole.len() / 3]);
    home.write("notapdf.pdf", "just some text with a .pdf name");
    home.json(&["folders", "add", home.docs(), "--json"]);
    home.json(&["index", "--wait", "--json"]);
    let s = home.statuses();
    assert_eq!(s["manual.pdf"].0, "indexed");
    assert_eq!(s["scan.pdf"], ("skipped".into(), Some("no_text".into())));
    assert_eq!(s["notapdf.pdf"], ("failed".into(), Some("corrupt".into())));
    assert_ne!(
        s["truncated.pdf"].0, "pending",
        "a truncated PDF is decided, not left"
    );
    let hits = home.search("boiler B-5512");
    assert_eq!(paths(&hits), ["manual.pdf"]);
    assert_eq!(hits[0]["page"], 2, "{hits:?}");
    let hits = home.search("heater");
    assert_eq!(hits[0]["page"], 1);
}

#[test]
fn a_folder_the_system_will_not_watch_is_polled_and_every_process_sees_how_each_is_watched() {
    let home = Home::new();
    home.write("a.txt", "The lighthouse keeper logs the weather.\n");
    let share = home._tmp.path().join("nfs-share");
    std::fs::create_dir_all(&share).expect("share");
    std::fs::write(share.join("b.txt"), "Harbour tides at noon.\n").expect("write");
    home.json(&["folders", "add", home.docs(), "--json"]);
    home.json(&["folders", "add", share.to_str().expect("utf-8"), "--json"]);
    home.json(&["index", "--wait", "--json"]);
    let states = || -> Vec<(String, Value)> {
        home.json(&["folders", "list", "--json"])
            .as_array()
            .expect("list")
            .iter()
            .map(|f| {
                (
                    f["state"].as_str().unwrap_or("").to_owned(),
                    f["watch_reason"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(
        states(),
        [("idle".into(), Value::Null), ("idle".into(), Value::Null)],
        "nothing watches them yet"
    );

    // The system refuses to watch the share (as inotify does at its limit): it is polled,
    // and another process reads both states from the store.
    let w = Watching::start_with(
        &home,
        &[
            ("HEARTH_TEST_UNWATCHABLE", "nfs-share"),
            ("HEARTH_TEST_POLL_MS", "300"),
        ],
    );
    w.until("the watch states are in the store", || {
        let s = states();
        s[0].0 == "watching" && s[1].0 == "polling"
    });
    assert!(w.saw("polling"), "the watcher said so");
    let s = states();
    assert_eq!(s[0].1, Value::Null);
    assert!(
        s[1].1
            .as_str()
            .is_some_and(|r| r.contains("No space left on device")),
        "{:?}",
        s[1]
    );
    // How often it is walked is the engine's number, the same in JSON and in text.
    let listed = home.json(&["folders", "list", "--json"]);
    assert_eq!(listed[1]["poll_every_s"], 30, "{listed}");
    let text = String::from_utf8_lossy(&home.run(&["folders", "list"]).stdout).into_owned();
    assert!(text.contains("polled every 30 s"), "{text}");
    assert!(text.contains("watched for changes"), "{text}");

    // A file written into the polled folder is found by a walk (no event comes).
    std::fs::write(share.join("c.txt"), "A cormorant dries its wings.\n").expect("write");
    w.until("the poll finds the new file", || {
        paths(&home.search("cormorant")) == ["c.txt"]
    });

    // The watcher killed: the states it left read as not watched.
    drop(w);
    assert_eq!(
        states(),
        [("idle".into(), Value::Null), ("idle".into(), Value::Null)]
    );
}
