//! Grants and the audit log as the Activity screen and `hearth grants` / `hearth audit`
//! use them: one method per use case, the rules (an unknown grant, the screen's list
//! length) decided here once.

use super::Hearth;
use crate::audit::{Audit, Entry, Filter, Verification};
use crate::tools::grants::{Grant, Grants};
use crate::{Error, Result};

/// How many of the newest audit entries the Activity screen lists.
pub const RECENT_AUDIT_ENTRIES: usize = 500;

/// Grants and the audit log.
#[derive(Clone)]
pub struct ActivityService {
    hearth: Hearth,
}

impl ActivityService {
    pub(super) fn new(hearth: Hearth) -> Self {
        Self { hearth }
    }

    fn grants_table(&self) -> Grants {
        Grants::new(self.hearth.inner.store.clone())
    }

    fn log(&self) -> Audit {
        Audit::new(self.hearth.inner.store.clone())
    }

    /// Every grant, newest first.
    pub fn grants(&self) -> Result<Vec<Grant>> {
        self.grants_table().list()
    }

    /// Revokes grant `id` (an audit entry); `not_found` when there is none.
    pub fn revoke_grant(&self, id: i64) -> Result<()> {
        if self.grants_table().revoke(id)? {
            Ok(())
        } else {
            Err(Error::NotFound(format!(
                "there is no grant {id}; see `hearth grants list`"
            )))
        }
    }

    /// Revokes every grant; how many there were.
    pub fn revoke_all_grants(&self) -> Result<usize> {
        self.grants_table().revoke_all()
    }

    /// Audit entries `filter` lets through, oldest first.
    pub fn audit(&self, filter: &Filter) -> Result<Vec<Entry>> {
        self.log().list(filter)
    }

    /// The newest [`RECENT_AUDIT_ENTRIES`] entries, oldest first (the Activity screen).
    pub fn recent_audit(&self) -> Result<Vec<Entry>> {
        self.log().list(&Filter {
            limit: Some(RECENT_AUDIT_ENTRIES),
            ..Filter::default()
        })
    }

    /// Checks the log's chain.
    pub fn verify_audit(&self) -> Result<Verification> {
        self.log().verify()
    }
}
