use super::*;
use crate::store::OpenOptions;
use crate::store::key::KeyBackend;
use hearth_base::paths::DataDir;

fn open(root: &Path) -> Folders {
    let mut opts = OpenOptions::new(DataDir::new(root.join("data")));
    opts.new_key_backend = KeyBackend::File;
    Folders::new(Store::open(&opts).expect("open"))
}

fn write(path: &Path, text: &str) {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
}

fn statuses(folders: &Folders, root: &Path) -> Vec<(String, &'static str, Option<&'static str>)> {
    let prefix = format!("{}/", std::fs::canonicalize(root).expect("canon").display());
    folders
        .files(root, None)
        .expect("files")
        .into_iter()
        .map(|f| {
            (
                f.path.trim_start_matches(&prefix).to_owned(),
                f.status.as_str(),
                f.reason_code.map(Reason::as_str),
            )
        })
        .collect()
}

#[test]
fn adding_canonicalizes_is_idempotent_and_refuses_files_missing_paths_and_overlaps() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let folders = open(tmp.path());
    let notes = tmp.path().join("notes");
    std::fs::create_dir_all(notes.join("inner")).expect("mkdir");
    write(&notes.join("a.md"), "# A");
    let a = folders.add(&notes).expect("add");
    assert!(Path::new(&a.path).is_absolute());
    let again = folders
        .add(&notes.join("inner").join(".."))
        .expect("the same folder by another spelling");
    assert_eq!(again.id, a.id, "same id on re-add");
    assert_eq!(folders.list().expect("list").len(), 1);

    let err = folders.add(&notes.join("a.md")).expect_err("a file");
    assert!(err.to_string().contains("is a file, not a folder"), "{err}");
    let err = folders.add(&tmp.path().join("nope")).expect_err("missing");
    assert!(err.to_string().contains("does not exist"), "{err}");
    let err = folders.add(&notes.join("inner")).expect_err("inside");
    assert!(err.to_string().contains("is inside"), "{err}");
    assert!(
        err.to_string().contains(&a.path),
        "names the watched one: {err}"
    );
    let err = folders.add(tmp.path()).expect_err("around");
    assert!(err.to_string().contains("contains"), "{err}");
    assert_eq!(err.code(), "invalid_input");

    let removed = folders.remove(&notes).expect("remove");
    assert_eq!(removed.id, a.id);
    assert!(folders.list().expect("list").is_empty());
    assert_eq!(
        folders.remove(&notes).expect_err("twice").code(),
        "not_found"
    );
}

#[cfg(unix)]
#[test]
fn the_walk_classifies_every_entry_and_never_follows_a_link_out() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let folders = open(tmp.path());
    let root = tmp.path().join("docs");
    write(&root.join("notes/plan.md"), "# Plan");
    write(&root.join("café/résumé.txt"), "unicode names");
    write(&root.join("node_modules/x/index.js"), "ignored");
    write(&root.join(".hidden/secret.txt"), "ignored");
    write(&root.join("build.log"), "ignored by .gitignore");
    write(&root.join(".gitignore"), "*.log\n");
    write(&root.join("empty.txt"), "");
    let outside = tmp.path().join("outside-secret.txt");
    write(&outside, "never read");
    std::os::unix::fs::symlink(&outside, root.join("escape.txt")).expect("link out");
    std::os::unix::fs::symlink(root.join("notes/plan.md"), root.join("plan-link.md"))
        .expect("link in");
    std::os::unix::fs::symlink(root.join("loop-b"), root.join("loop-a")).expect("loop a");
    std::os::unix::fs::symlink(root.join("loop-a"), root.join("loop-b")).expect("loop b");
    let fifo = root.join("pipe");
    let ok = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mkfifo is there");
    let folder = folders.add(&root).expect("add");
    // A small cap stands in for a 60 MB file.
    let entries = walk::walk(Path::new(&folder.path), 4);
    let plan = entries
        .iter()
        .find(|e| e.rel_path == "notes/plan.md")
        .expect("plan");
    assert!(
        matches!(plan.found, Found::Skipped(Reason::TooLarge, _)),
        "{plan:?}"
    );

    let report = folders.reconcile(&folder).expect("reconcile");
    assert_eq!(report.seen, 8, "{report:?}");
    assert_eq!(
        statuses(&folders, &root),
        vec![
            ("café/résumé.txt".to_owned(), "pending", None),
            ("empty.txt".to_owned(), "pending", None),
            ("escape.txt".to_owned(), "skipped", Some("symlink_outside")),
            ("loop-a".to_owned(), "skipped", Some("symlink_loop")),
            ("loop-b".to_owned(), "skipped", Some("symlink_loop")),
            ("notes/plan.md".to_owned(), "pending", None),
            ("pipe".to_owned(), "skipped", Some("not_regular")),
            ("plan-link.md".to_owned(), "skipped", Some("not_regular")),
        ]
    );
    let counts = folders.counts(folder.id).expect("counts");
    assert_eq!((counts.pending, counts.skipped), (3, 5));
    let only = folders
        .files(&root, Some(FileStatus::Skipped))
        .expect("skipped");
    assert_eq!(only.len(), 5);
    assert!(
        only.iter()
            .all(|f| f.message.is_some() && Path::new(&f.path).is_absolute())
    );
}

#[test]
fn a_second_pass_notices_what_changed_while_nothing_ran_and_keeps_an_unplugged_folders_rows() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let folders = open(tmp.path());
    let root = tmp.path().join("docs");
    write(&root.join("a.txt"), "one");
    write(&root.join("b.txt"), "two");
    let folder = folders.add(&root).expect("add");
    assert_eq!(folders.reconcile(&folder).expect("first").queued, 2);
    // Pretend both were indexed, then change things with nothing running.
    folders
        .store
        .write_blocking(|c| c.execute("UPDATE folder_files SET status = 'indexed'", []))
        .expect("indexed");
    let quiet = folders.reconcile(&folder).expect("nothing changed");
    assert_eq!((quiet.queued, quiet.removed), (0, 0), "{quiet:?}");
    write(&root.join("a.txt"), "one, and more");
    std::fs::remove_file(root.join("b.txt")).expect("rm");
    write(&root.join("c.txt"), "three");
    let report = folders.reconcile(&folder).expect("again");
    assert_eq!((report.queued, report.removed), (2, 1), "{report:?}");
    assert_eq!(
        statuses(&folders, &root),
        vec![
            ("a.txt".to_owned(), "pending", None),
            ("c.txt".to_owned(), "pending", None),
        ]
    );
    // The drive goes away: the folder is unavailable and its rows stay.
    let moved = tmp.path().join("elsewhere");
    std::fs::rename(&root, &moved).expect("unplug");
    let gone = folders.reconcile(&folder).expect("gone");
    assert!(gone.unavailable);
    let listed = folders.list().expect("list");
    assert!(!listed[0].available);
    assert_eq!(folders.counts(folder.id).expect("counts").pending, 2);
    std::fs::rename(&moved, &root).expect("plug back");
    assert!(!folders.reconcile(&folder).expect("back").unavailable);
    assert!(folders.list().expect("list")[0].available);
}
