//! How much Hearth reads from a provider, and how long it waits for one. A server that
//! sends more (a broken one, or a hostile one on the network) gets a clear error, never an
//! out-of-memory process or a hang. Documented in docs/decisions/0005-bounded-provider-replies.md and docs/cli.md.

use std::time::Duration;

/// Bytes of a failing response's body read for the error message; the rest is dropped
/// unread (the connection is closed).
pub const MAX_ERROR_BODY: usize = 64 * 1024;

/// The largest single server-sent event of a streamed answer (the bytes between two blank
/// lines). A larger one fails the stream with `provider_protocol`; text that had already
/// arrived is kept, as for a broken stream.
pub const MAX_SSE_EVENT: usize = 1024 * 1024;

/// The most text (answer text plus tool-call arguments) one answer may have; past it the
/// call fails with `provider_protocol`, keeping what arrived up to the limit.
pub const MAX_ANSWER: usize = 4 * 1024 * 1024;

/// The largest model listing body (`GET /models`, Ollama's `/api/tags` and each
/// `/api/show`).
pub const MAX_LISTING_BODY: usize = 4 * 1024 * 1024;

/// Models of an Ollama server whose details (`/api/show`, for the context window) are
/// asked; any further ones are listed without a window.
pub const MAX_SHOWN_MODELS: usize = 100;

/// `/api/show` requests in flight at once.
pub const SHOW_CONCURRENCY: usize = 4;

/// The largest embeddings reply (64 texts × 4,096 floats as JSON is about 6 MiB).
pub const MAX_EMBEDDINGS_BODY: usize = 64 * 1024 * 1024;

/// The longest `Retry-After` Hearth honours, and the most it waits in total across the
/// retries of one call. A 429 asking for longer (or for a wait that is not a number of
/// seconds in 0..=60, or an HTTP date further away) fails at once with
/// `provider_rate_limited`.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

/// Characters of a redirect's `Location` shown in the error.
pub const MAX_LOCATION_SHOWN: usize = 200;

/// The most texts one token-count call sends (the built-in worker's own limit).
pub const MAX_COUNT_TEXTS: usize = 4096;
