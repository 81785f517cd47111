//! What a memory is: its kinds, states, provenance, changes and the list filter, and how
//! a text becomes a normal form and a full-text query.

use serde::{Deserialize, Serialize};

use crate::time::Millis;
use crate::{Error, Result};

/// Longest memory text accepted.
pub const MAX_TEXT: usize = 2_000;

/// What a memory is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Fact,
    Preference,
    /// A dated event.
    Episode,
    /// How the user wants answers.
    Instruction,
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::Fact,
        Kind::Preference,
        Kind::Episode,
        Kind::Instruction,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Fact => "fact",
            Kind::Preference => "preference",
            Kind::Episode => "episode",
            Kind::Instruction => "instruction",
        }
    }

    pub fn parse(s: &str) -> Result<Self> {
        Kind::ALL
            .into_iter()
            .find(|k| k.as_str() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| {
                Error::InvalidInput(format!(
                    "unknown kind {s:?}: use fact, preference, episode or instruction"
                ))
            })
    }
}

/// Whether a memory is in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Active,
    /// Merged into another memory.
    Superseded,
    /// Removed by the model (or by the user's "forget that …"); restorable until emptied.
    Removed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Superseded => "superseded",
            Status::Removed => "removed",
        }
    }

    pub fn parse(s: &str) -> Self {
        match s {
            "superseded" => Status::Superseded,
            "removed" => Status::Removed,
            _ => Status::Active,
        }
    }
}

/// Where a memory came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Source {
    /// Learned in a conversation, from one of its messages.
    Conversation {
        conversation: String,
        message: Option<i64>,
    },
    /// Drawn from a file (never becomes an instruction).
    File { path: String },
    /// Added by the user.
    Manual,
    /// Imported from an export.
    Import,
}

impl Source {
    pub fn kind_str(&self) -> &'static str {
        match self {
            Source::Conversation { .. } => "conversation",
            Source::File { .. } => "file",
            Source::Manual => "manual",
            Source::Import => "import",
        }
    }
}

/// Who changed a memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Actor {
    Assistant,
    User,
    Import,
}

impl Actor {
    pub fn as_str(self) -> &'static str {
        match self {
            Actor::Assistant => "assistant",
            Actor::User => "user",
            Actor::Import => "import",
        }
    }

    pub fn parse(s: &str) -> Self {
        match s {
            "assistant" => Actor::Assistant,
            "import" => Actor::Import,
            _ => Actor::User,
        }
    }
}

/// A memory as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    pub id: String,
    pub text: String,
    pub kind: Kind,
    pub subject: Option<String>,
    pub importance: f64,
    pub pinned: bool,
    pub critical: bool,
    pub confidence: f64,
    pub source: Source,
    /// Episodes: when it happened (ms since the epoch).
    pub event_at: Option<Millis>,
    pub created: Millis,
    pub updated: Millis,
    pub last_used: Option<Millis>,
    pub use_count: u32,
    pub status: Status,
    pub removed_at: Option<Millis>,
    /// The model that made its vector (`None`: not embedded yet).
    pub embed_model: Option<String>,
    /// Removed by the assistant on its own, not by the user: marked for the consent gate
    /// (the user is asked, or restores it). Never set for the user's own removals.
    #[serde(default)]
    pub removal_awaits_consent: bool,
    /// For an imported memory: the origin its file claimed (informational only; `source`
    /// is `import` whatever a file says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_from: Option<serde_json::Value>,
    /// The words around it where it came from (e.g. an imported conversation's turns before
    /// and after it): searched by words, never sent in the memory block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The parts of life it touches (`health`, `family`, `home`, `work`, `money`, `travel`,
    /// `schedule`, `leisure`, `style`), tagged when it was written.
    #[serde(default)]
    pub facets: Vec<String>,
    /// It says it stopped being true ("until March 2026"), or a newer memory replaced it:
    /// still listed and searchable, but the memory block prefers the current one.
    #[serde(default)]
    pub no_longer_true: bool,
    /// The memory that replaced it, when the user said it changed ("we moved").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
}

/// The most characters of context a memory keeps.
pub const MAX_CONTEXT_CHARS: usize = 2_000;

/// A change applied to memory after an exchange (the "Memory updated" chip), with what
/// undoing it needs ([`Memories::undo`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub memory_id: String,
    /// `add`, `update`, `remove` (soft), `supersede` (kept, marked no longer true: the
    /// user's life changed), or `proposal` (a pinned or critical memory the model wanted to
    /// change: nothing changed, a proposal waits for the user).
    pub op: String,
    /// The memory's text after the change; for `remove`, the removed text; for
    /// `proposal`, what Hearth suggests (the new text, or the memory's text to remove).
    pub text: String,
    /// For `update` and an update `proposal`: the text before.
    pub old_text: Option<String>,
    /// For `proposal`: the proposal to accept or reject.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposal_id: Option<String>,
}

/// A new memory.
#[derive(Debug, Clone)]
pub struct NewMemory {
    pub text: String,
    pub kind: Kind,
    pub subject: Option<String>,
    pub importance: f64,
    pub pinned: bool,
    pub critical: bool,
    pub confidence: f64,
    pub source: Source,
    pub event_at: Option<Millis>,
    /// Keep this creation time (imports); `None` for now.
    pub created: Option<Millis>,
    /// See [`Memory::context`].
    pub context: Option<String>,
    /// Topic facets to keep besides the tagger's (an import keeps its file's).
    pub facets: super::facets::Facets,
}

/// Two candidates are the same memory when their text and kind are (the learner compares
/// what the model proposes by these).
impl PartialEq for NewMemory {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text && self.kind == other.kind
    }
}

impl NewMemory {
    /// A memory the user typed in.
    pub fn manual(text: impl Into<String>, kind: Kind) -> Self {
        Self {
            text: text.into(),
            kind,
            subject: None,
            importance: 0.5,
            pinned: false,
            critical: false,
            confidence: 1.0,
            source: Source::Manual,
            event_at: None,
            created: None,
            context: None,
            facets: Default::default(),
        }
    }
}

/// One change in a memory's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// `add`, `update`, `pin`, `unpin`, `critical`, `uncritical`, `remove`, `restore`,
    /// `merge`, `delete` (a tombstone: no text), `import`, `supersede` (no longer true: a
    /// newer memory replaced it), `unsupersede`.
    pub op: String,
    pub old_text: Option<String>,
    pub new_text: Option<String>,
    pub actor: Actor,
    pub at: Millis,
    pub source: Option<serde_json::Value>,
}

/// What to list.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub kind: Option<Kind>,
    /// `removed` lists "Recently removed"; default: active only.
    pub removed: bool,
    pub pinned: Option<bool>,
    pub critical: Option<bool>,
    /// `conversation`, `file`, `manual` or `import`.
    pub source: Option<String>,
    /// Created in `[from, to)`.
    pub from: Option<Millis>,
    pub to: Option<Millis>,
    /// Full-text match (words, any order); hybrid search lives in the memory block.
    pub query: Option<String>,
}

impl Filter {
    /// Whether `m` passes every condition but the query.
    pub fn admits(&self, m: &Memory) -> bool {
        let status_ok = if self.removed {
            m.status == Status::Removed
        } else {
            m.status == Status::Active
        };
        status_ok
            && self.kind.is_none_or(|k| m.kind == k)
            && self.pinned.is_none_or(|p| m.pinned == p)
            && self.critical.is_none_or(|c| m.critical == c)
            && self
                .source
                .as_deref()
                .is_none_or(|s| m.source.kind_str() == s)
            && self.from.is_none_or(|f| m.created >= f)
            && self.to.is_none_or(|t| m.created < t)
    }
}

/// Lower-case, single-spaced, without trailing punctuation: equal norms are the same memory.
pub fn normalize(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
        .trim_end_matches(['.', '!', '?', ';', ','])
        .to_owned()
}

pub use hearth_text::rank::fts_query;
