//! What each built-in does once the gate let its call through.

use super::*;

impl Action {
    /// Why a path the action touches is one Hearth does not read on its own (hidden,
    /// ignored, a secret place: `folders::rule`), if one is: then the call asks.
    pub fn excluded(&self) -> Option<String> {
        let of = |r: &Resolved| {
            r.excluded
                .as_ref()
                .map(|why| format!("{}: {why}", r.path.display()))
        };
        match self {
            Action::List(r)
            | Action::Read(r)
            | Action::Create(r, _)
            | Action::Delete(r, _)
            | Action::DeletePermanently(r, _) => of(r),
            Action::Change(c) => of(&c.target),
            Action::Move(a, b) => of(a).or_else(|| of(b)),
            Action::CurrentTime | Action::Search(..) | Action::Remember(_) | Action::Forget(_) => {
                None
            }
        }
    }

    /// A delete taken again now: `Some` with what it would remove now when that is not the
    /// list the user was shown (files added or removed while the question waited), `None`
    /// when nothing changed or it is not a delete.
    pub fn retaken(&self) -> Option<Action> {
        match self {
            Action::Delete(r, files) => {
                let now = files_under(&r.path);
                (now != *files).then(|| Action::Delete(r.clone(), now))
            }
            Action::DeletePermanently(r, files) => {
                let now = files_under(&r.path);
                (now != *files).then(|| Action::DeletePermanently(r.clone(), now))
            }
            _ => None,
        }
    }

    /// What the user is shown before approving.
    pub fn preview(&self) -> Option<String> {
        match self {
            Action::Create(r, content) => Some(format!(
                "creates {} ({} bytes, {} lines)",
                r.path.display(),
                content.len(),
                content.lines().count()
            )),
            Action::Change(c) => Some(format!(
                "{}\ncontent hash: sha256:{} (the call is refused if the file changes before it runs)",
                c.diff.trim_end(),
                hex::encode(c.old_hash)
            )),
            Action::Remember(m) => Some(format!("remembers ({}): {}", m.kind.as_str(), m.text)),
            Action::Forget(m) => Some(format!(
                "removes memory {} ({}; restorable from Recently removed):\n  {}",
                m.id,
                m.kind.as_str(),
                m.text
            )),
            Action::Move(from, to) => Some(format!(
                "moves {}\n  to {}",
                from.path.display(),
                to.path.display()
            )),
            Action::Delete(_, files) => Some(format!("moves to the trash:\n{}", listing(files))),
            Action::DeletePermanently(_, files) => Some(format!(
                "deletes PERMANENTLY (the trash could not be used; this cannot be undone):\n{}",
                listing(files)
            )),
            _ => None,
        }
    }

    /// Runs the action, after checking its paths once more. `cancel` is the user's stop:
    /// an action that runs a child process (`read_file` on a PDF) kills it when it fires.
    pub fn execute(&self, env: &Env, cancel: &tokio_util::sync::CancellationToken) -> Output {
        let folders = env.folders.as_slice();
        let (fail, done) = (Output::failed, Output::done);
        let recheck = match self {
            Action::CurrentTime | Action::Search(..) | Action::Remember(_) | Action::Forget(_) => {
                Ok(())
            }
            Action::List(r)
            | Action::Read(r)
            | Action::Create(r, _)
            | Action::Delete(r, _)
            | Action::DeletePermanently(r, _) => r.still_valid(folders),
            Action::Change(c) => c.target.still_valid(folders),
            Action::Move(from, to) => from
                .still_valid(folders)
                .and_then(|()| to.still_valid(folders)),
        };
        if let Err(e) = recheck {
            return fail(e);
        }
        crate::failpoint::delay("tool_execute");
        if crate::failpoint::fails_times("tool_io") {
            return Output {
                transient: true,
                ..fail("a system error interrupted the call (try again)".into())
            };
        }
        match self {
            Action::CurrentTime => {
                let now = jiff::Zoned::now();
                done(format!(
                    "{} ({})",
                    now.strftime("%A %Y-%m-%d %H:%M:%S %:z"),
                    now.time_zone().iana_name().unwrap_or("local time")
                ))
            }
            Action::List(r) => match list(&r.folder, &r.path) {
                Ok(text) => Output::outside(text),
                Err(e) => fail(format!("could not list {}: {e}", r.path.display())),
            },
            Action::Read(r) => match read_any(&r.path, env, cancel) {
                Ok(text) => Output::outside(text),
                Err(e) => fail(e),
            },
            Action::Create(r, content) => {
                let created = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&r.path)
                    .and_then(|mut f| {
                        f.write_all(content.as_bytes())?;
                        f.sync_all()
                    });
                match created {
                    Ok(()) => done(format!(
                        "created {} ({} bytes)",
                        r.path.display(),
                        content.len()
                    )),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => fail(format!(
                        "{} already exists; create_file never overwrites a file",
                        r.path.display()
                    )),
                    Err(e) => fail(format!("could not create {}: {e}", r.path.display())),
                }
            }
            Action::Search(query, limit) => {
                let Some(source) = &env.retrieval else {
                    return fail("no folder search is available here".into());
                };
                match source.retrieve(query, SEARCH_BUDGET_TOKENS) {
                    Ok(passages) if passages.is_empty() => {
                        done(format!("Nothing in the watched folders matches “{query}”."))
                    }
                    Ok(passages) => Output::outside(
                        passages
                            .iter()
                            .take(*limit)
                            .enumerate()
                            .map(|(i, p)| format!("[{}] {}\n{}", i + 1, p.source, p.text))
                            .collect::<Vec<_>>()
                            .join("\n\n"),
                    ),
                    Err(e) => fail(format!("the search failed: {e}")),
                }
            }
            Action::Remember(new) => {
                let memories = crate::memory::Memories::new(env.store.clone());
                match memories.add(new.clone(), crate::memory::Actor::Assistant) {
                    Ok(m) => Output {
                        memory: Some(m.id.clone()),
                        ..done(format!("remembered ({}): {}", m.id, m.text))
                    },
                    Err(e) => fail(format!("could not remember it: {e}")),
                }
            }
            Action::Forget(m) => {
                let memories = crate::memory::Memories::new(env.store.clone());
                // Approved by the user: a soft removal, restorable, not awaiting consent.
                match memories.remove(&m.id, crate::memory::Actor::User, None) {
                    Ok(true) => Output {
                        memory: Some(m.id.clone()),
                        ..done(format!(
                            "removed memory {} (restorable from Recently removed)",
                            m.id
                        ))
                    },
                    Ok(false) => fail(format!("memory {} is no longer there", m.id)),
                    Err(e) => fail(format!("could not remove it: {e}")),
                }
            }
            Action::Change(c) => match apply_change(c) {
                Ok(()) => done(format!(
                    "changed {} ({} bytes now)",
                    c.target.path.display(),
                    c.new.len()
                )),
                Err(e) => fail(e),
            },
            Action::Move(from, to) => match move_no_replace(&from.path, &to.path) {
                Ok(()) => done(format!(
                    "moved {} to {}",
                    from.path.display(),
                    to.path.display()
                )),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => fail(format!(
                    "{} already exists; move_file never replaces a file",
                    to.path.display()
                )),
                Err(e) => fail(format!(
                    "could not move {} to {}: {e}",
                    from.path.display(),
                    to.path.display()
                )),
            },
            Action::Delete(r, files) => match trash_delete(&r.path) {
                Ok(()) => done(format!("moved {} to the trash", r.path.display())),
                // Never a silent hard delete: the file stays, and the user is asked again
                // whether to delete it permanently.
                Err(e) => Output {
                    trash_failed: Some(Action::DeletePermanently(r.clone(), files.clone())),
                    ..fail(format!(
                        "could not move {} to the trash ({e}); nothing was deleted",
                        r.path.display()
                    ))
                },
            },
            Action::DeletePermanently(r, _) => {
                let removed = if r.path.is_dir() {
                    std::fs::remove_dir_all(&r.path)
                } else {
                    std::fs::remove_file(&r.path)
                };
                match removed {
                    Ok(()) => done(format!("deleted {} permanently", r.path.display())),
                    Err(e) => fail(format!("could not delete {}: {e}", r.path.display())),
                }
            }
        }
    }
}
