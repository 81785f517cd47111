//! Command-line arguments. `docs/cli.md` quotes the help these produce; a test keeps it so.
//! (Over 600 lines: every command's arguments and help in one place, as `docs/cli.md` quotes them.)

use clap::{Parser, Subcommand};

/// `hearth --version`: the version and the commit it was built from.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("HEARTH_COMMIT"), ")");

/// Hearth, a local-first personal assistant: command-line interface.
///
/// Data lives in one encrypted database in the data folder ($HEARTH_HOME, or the platform's
/// data directory). Exit codes: 0 ok, 1 failure, 2 usage error, 130 interrupted.
#[derive(Debug, Parser)]
#[command(name = "hearth", version = VERSION, propagate_version = true)]
pub struct Cli {
    /// Print machine-readable JSON on stdout (errors as {"error":{"code","message"}}).
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check the setup: data folder, database, encryption, key storage, SQLite modules.
    ///
    /// Creates the data folder and an empty encrypted database if there is none yet.
    Doctor,
    /// Ask the assistant; the answer streams to stdout.
    ///
    /// Prints `conversation: <id>` on stderr. Ctrl-C stops the answer, keeps what arrived
    /// (marked as stopped) and exits 130. The model comes from HEARTH_PROVIDER_URL (an
    /// OpenAI-compatible base URL ending in /v1), HEARTH_MODEL and HEARTH_API_KEY when set,
    /// else from the default provider (`hearth providers add`), else the built-in model
    /// (`hearth model add`; `--json` then says `"provider": "builtin"`);
    /// HEARTH_FAST_MODEL (summaries) defaults to HEARTH_MODEL; HEARTH_CONTEXT_WINDOW
    /// overrides the model's context window in tokens.
    Chat {
        /// Continue this conversation instead of starting a new one.
        #[arg(long)]
        conversation: Option<String>,
        /// The model to use (default: HEARTH_MODEL, or the provider's model).
        #[arg(long)]
        model: Option<String>,
        /// Use this configured provider instead of the default one.
        #[arg(long)]
        provider: Option<String>,
        /// Write nothing: no conversation, no messages, no memory.
        #[arg(long, conflicts_with = "conversation")]
        temporary: bool,
        /// Answer the conversation's last message again (needs --conversation, no MESSAGE);
        /// the new answer replaces the old one, which stays if this one fails.
        #[arg(long, requires = "conversation", conflicts_with_all = ["message", "edit"])]
        regenerate: bool,
        /// Replace the conversation's last message with MESSAGE and answer it again (needs
        /// --conversation); if that fails, the old message and answer come back.
        #[arg(long, requires_all = ["conversation", "message"])]
        edit: bool,
        /// Do not wait for Hearth to learn from this exchange (it happens in the
        /// background: the app, or the next command that waits, finishes it).
        #[arg(long)]
        no_wait: bool,
        /// Offer the model no tools (built-in tools are on by default).
        #[arg(long)]
        no_tools: bool,
        /// Approve the model's `write` calls (creating a file) without asking; never a
        /// destructive call, nor a write after untrusted text entered the turn.
        #[arg(long, conflicts_with = "no_tools")]
        allow_writes: bool,
        /// Which model answers: `fast` (the fast slot), `strong` (the main model) or `auto`
        /// (the router's rules, unless routing is off).
        #[arg(long, default_value = "auto", value_parser = ["auto", "fast", "strong"])]
        tier: String,
        /// Send this message even if it crosses a spending cap (`hearth usage budget`).
        #[arg(long)]
        over_budget: bool,
        /// Your message.
        #[arg(required_unless_present = "regenerate")]
        message: Option<String>,
    },
    /// What model calls cost: tokens, USD, cache reads and latency from the usage ledger,
    /// by model, slot or local day.
    #[command(args_conflicts_with_subcommands = true)]
    Usage {
        #[command(subcommand)]
        command: Option<UsageCommand>,
        /// Count from local midnight of this day (YYYY-MM-DD); default: everything.
        #[arg(long)]
        since: Option<String>,
        /// Group by `model`, `slot` (main, fallback, learning, compaction) or `day` (local
        /// days).
        #[arg(long, default_value = "model", value_parser = ["model", "slot", "day"])]
        by: String,
    },
    /// Configure model providers (keys go to the system keyring).
    Providers {
        #[command(subcommand)]
        command: ProvidersCommand,
    },
    /// The model table: context windows and prices (USD per million tokens), built in or
    /// edited by you.
    Models {
        #[command(subcommand)]
        command: ModelsCommand,
    },
    /// The built-in model: GGUF files Hearth runs on this computer (llama.cpp in a worker
    /// process), so it answers with no other program and nothing leaving the computer.
    ///
    /// With no provider configured, `hearth chat` uses the built-in model. A file added
    /// with `add` stays where it is; Hearth never moves or deletes it.
    Model {
        #[command(subcommand)]
        command: ModelCommand,
    },
    /// List and inspect conversations.
    Conversations {
        #[command(subcommand)]
        command: ConversationsCommand,
    },
    /// What Hearth remembers about you: list, search, add, edit, pin, delete, restore,
    /// forget, export and import.
    ///
    /// Deleting is real: the memory, its search entries and the texts in its history are
    /// gone. Memories the assistant removed stay restorable until you empty them
    /// (--removed). Hearth never changes a pinned or critical memory on its own: it
    /// proposes, and you accept or reject (proposals).
    Memory {
        #[command(subcommand)]
        command: MemoryCommand,
    },
    /// The embedding model behind memory search: show it, choose it, download the local one.
    ///
    /// Changing the model gives every memory a vector from the new one (a background job;
    /// `use` and `download` wait for it with progress on stderr unless --no-wait).
    /// Meanwhile memories stay findable by keyword; nothing is lost.
    Embedding {
        #[command(subcommand)]
        command: EmbeddingCommand,
    },
    /// Folders Hearth reads for you: add, remove, list, their files, pause and resume.
    ///
    /// Adding a folder walks it and queues its files; `hearth index --wait` (or the app)
    /// indexes them. Hidden files, .gitignore'd files and build folders are left out; links
    /// are never followed out of the folder. Nothing leaves this computer, and removing a
    /// folder removes only Hearth's index of it.
    Folders {
        #[command(subcommand)]
        command: FoldersCommand,
    },
    /// Index the watched folders: notice what changed, then (with --wait) read the files.
    ///
    /// Progress goes to stderr (JSON lines with --json); stdout gets one summary. If another
    /// process is indexing, --wait follows its progress instead. Files that are skipped or
    /// fail never change the exit code: `hearth folders files PATH` says why.
    Index {
        /// Also index the queued files here and return when every file is read and
        /// searchable by keyword.
        #[arg(long)]
        wait: bool,
        /// As --wait, then also give every chunk a vector from the embedding model in use
        /// (none: the summary says "unavailable"; nothing is downloaded).
        #[arg(long)]
        wait_vectors: bool,
        /// As --wait, then keep watching the folders and index each change as it happens,
        /// until stopped (Ctrl-C; a file half-read then is read again next time).
        #[arg(long)]
        watch: bool,
    },
    /// The tools a chat offers the model, with their risk tiers.
    Tools {
        #[command(subcommand)]
        command: ToolsCommand,
    },
    /// MCP servers: their approved tools join the chat's, under the same consent gate.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// What you allowed tools ahead of time: a tool for one conversation, or always.
    Grants {
        #[command(subcommand)]
        command: GrantsCommand,
    },
    /// The audit log: every tool call and memory change, hash-chained.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Search the watched folders' files.
    ///
    /// Results name the file, its heading, lines and page, with a snippet and the chunk id
    /// a chat answer cites. Hybrid search falls back to keyword (bm25) search while the
    /// chunks have no vectors, and says so in `warning`.
    Search {
        /// What to look for.
        query: String,
        /// How many results (default 10; 1 to 50).
        #[arg(long)]
        k: Option<usize>,
        /// hybrid, bm25 or vector.
        #[arg(long, default_value = "hybrid")]
        mode: String,
        /// Only files in this watched folder.
        #[arg(long)]
        folder: Option<std::path::PathBuf>,
        /// Only files of this type, by extension (md, pdf, docx …).
        #[arg(long = "type", value_name = "EXT")]
        file_type: Option<String>,
        /// Only files modified at or after this time (ms since the Unix epoch).
        #[arg(long, value_name = "MS")]
        modified_since: Option<i64>,
    },
    /// Durable background jobs (learning from conversations, re-embedding memories).
    ///
    /// The desktop app runs them as they come; `hearth chat` runs the one it waits for.
    /// Their counts and failures are in `hearth doctor`.
    Jobs {
        #[command(subcommand)]
        command: JobsCommand,
    },
    /// Measure retrieval quality: of memories (LoCoMo, or a profile of your own) and of
    /// watched folders (LoCoMo).
    Eval {
        #[command(subcommand)]
        command: EvalCommand,
    },
    /// Whether the app looks for a newer Hearth by itself: show, on, off.
    ///
    /// The app asks on its first run and checks nothing until then; when on, it checks at
    /// start and once a day, sending only its version and platform, and installs an update
    /// only when you click Install. The CLI never downloads or installs anything.
    Updates {
        #[command(subcommand)]
        command: UpdatesCommand,
    },
    /// Manage the database key.
    Key {
        #[command(subcommand)]
        command: KeyCommand,
    },
}

/// `hearth usage` subcommands.
#[derive(Debug, Subcommand)]
pub enum UsageCommand {
    /// Show or set spending caps (USD): daily and monthly, overall or for one provider.
    /// Days and months end at local midnight. A priced call that would cross a cap is not
    /// sent; at 80 % you are told, and learning and summarising pause.
    Budget {
        /// The daily cap in USD, or `none` to remove it.
        #[arg(long, value_name = "USD|none")]
        daily: Option<String>,
        /// The monthly cap in USD, or `none` to remove it.
        #[arg(long, value_name = "USD|none")]
        monthly: Option<String>,
        /// Set this provider's caps instead of the overall ones.
        #[arg(long)]
        provider: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ProvidersCommand {
    /// Add (or replace) a provider. The API key is read from stdin, or asked for on a
    /// terminal (empty for none); it is stored in the system keyring.
    Add {
        /// A short name: letters, digits, '-' and '_'.
        name: String,
        /// openai | anthropic | openrouter | ollama | lmstudio | llamacpp | vllm | custom
        #[arg(long)]
        preset: String,
        /// Base URL including /v1 (required for custom; overrides the preset's).
        #[arg(long)]
        url: Option<String>,
        /// The model for answers.
        #[arg(long)]
        model: Option<String>,
        /// The cheaper model for summaries (default: --model).
        #[arg(long)]
        fast_model: Option<String>,
        /// The model's context window in tokens, if the built-in table is wrong.
        #[arg(long)]
        context_window: Option<u32>,
    },
    /// List providers (never their keys); the default comes first.
    List,
    /// Check that a provider answers, and list its models with their context windows.
    ///
    /// Ollama is asked through its own API (/api/tags, /api/show), and the windows it
    /// reports are remembered in the model table.
    Test { name: String },
    /// Look for model servers running on this computer (Ollama, LM Studio, llama.cpp).
    ///
    /// Probes their default ports, or the PRESET=URL list in HEARTH_LOCAL_SERVERS.
    Detect,
    /// Show or choose which models do which job: main (answers), fast (summaries,
    /// memory extraction) and fallback (used only when enabled and the main model fails).
    ///
    /// Each is PROVIDER:MODEL, e.g. ollama:llama3.2:3b. Without options, prints the choice.
    Slots {
        /// The model that answers.
        #[arg(long)]
        main: Option<String>,
        /// The model for summaries and extraction ("same" for the main model).
        #[arg(long)]
        fast: Option<String>,
        /// The model that answers when the main one fails ("none" to clear).
        #[arg(long)]
        fallback: Option<String>,
        /// Use the fallback model when the main one fails.
        #[arg(long, conflicts_with = "no_fallback")]
        enable_fallback: bool,
        /// Never use a fallback model.
        #[arg(long)]
        no_fallback: bool,
    },
    /// Show or set whether the router picks the fast or the main model for each message
    /// (on by default; it matters only when the fast slot holds a different model).
    Routing {
        /// Let the router choose by its rules.
        #[arg(long, conflicts_with = "off")]
        on: bool,
        /// The main model answers every message (a message can still ask for
        /// `hearth chat --tier fast`).
        #[arg(long)]
        off: bool,
        /// Cascade: check each answer the rules sent to the fast model (cut off, empty, a
        /// refusal, not the JSON asked for, a tool call it could not form) and have the
        /// main model answer again when a check fails — never after a write was asked for.
        #[arg(long, conflicts_with = "no_cascade")]
        cascade: bool,
        /// Keep the fast model's answers as they are (the default).
        #[arg(long)]
        no_cascade: bool,
    },
    /// Show or set the response caches (off by default). The exact cache reuses an answer
    /// only for a request identical in every byte — model, tools, memory, passages, history
    /// and message; the semantic cache (`--semantic`) for a stateless question that means
    /// the same. Never for Regenerate, a temporary chat, or a call that carries tool results.
    Cache {
        /// Save answers and reuse them.
        #[arg(long, conflicts_with = "off")]
        on: bool,
        /// Save nothing (and remove what is saved).
        #[arg(long)]
        off: bool,
        /// How long a saved answer is used, in hours (default 24).
        #[arg(long, value_name = "HOURS")]
        ttl_hours: Option<u32>,
        /// Remove every saved answer.
        #[arg(long)]
        clear: bool,
        /// Also reuse an answer for a question that means the same (stateless questions
        /// only: no memory, passages or history; the numbers, dates and names must match).
        #[arg(long, conflicts_with = "no_semantic")]
        semantic: bool,
        /// Turn the semantic cache off (and remove what it saved).
        #[arg(long)]
        no_semantic: bool,
        /// The least similarity (cosine, 0.80–1) of a semantic match (default 0.95).
        #[arg(long, value_name = "SIMILARITY")]
        similarity: Option<f32>,
    },
    /// Remove a provider and its stored key.
    Remove {
        name: String,
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum FoldersCommand {
    /// Watch a folder: walk it and queue its files for indexing (the same folder twice is
    /// one folder; one inside or around a watched folder is refused).
    Add {
        path: std::path::PathBuf,
        /// Let tools create, change and delete files in it (each destructive call still
        /// asks); re-adding a folder with --no-writable takes that back.
        #[arg(long, conflicts_with = "no_writable")]
        writable: bool,
        /// Make the folder read-only for tools again (the default for a new folder).
        #[arg(long)]
        no_writable: bool,
        /// Do not ask for confirmation of --writable (asked on a terminal; elsewhere
        /// required).
        #[arg(long)]
        yes: bool,
    },
    /// Stop watching a folder; its index (chunks, vectors) goes, its files stay untouched.
    Remove { path: std::path::PathBuf },
    /// The watched folders with their state and counts.
    List,
    /// Every entry the walk met in a folder, with its status and, when not indexed, why.
    Files {
        path: std::path::PathBuf,
        /// Only this status: indexed, pending, skipped or failed.
        #[arg(long)]
        status: Option<String>,
    },
    /// Pause indexing of a folder (every folder without PATH). Kept across restarts.
    Pause { path: Option<std::path::PathBuf> },
    /// Resume indexing of a folder (every folder without PATH).
    Resume { path: Option<std::path::PathBuf> },
}

#[derive(Debug, Subcommand)]
pub enum JobsCommand {
    /// Run every job that is due now, one at a time, until none is left.
    ///
    /// Safe beside the app or another `hearth jobs run`: each job is run by one worker,
    /// and a result is applied only while its worker still holds the job.
    Run,
}

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Memory retrieval on LoCoMo (--locomo) or on a profile of one user (--profile).
    ///
    /// --locomo: recall@5, recall@10 and MRR@10 for bm25, vector and hybrid search, overall
    /// and per category (1–4). Builds one temporary store per conversation (each turn an
    /// episode dated by its session, with the turns before and after it as its context) and
    /// searches it for every question with evidence.
    /// Conversations 26 and 30 are the tuning set; the other eight are reported, then all
    /// ten.
    ///
    /// --profile DIR: DIR/memories.tsv has key<TAB>kind<TAB>text lines, DIR/queries.tsv
    /// key<TAB>request lines (a request that needs several memories joins their keys with
    /// +; blank lines and # comments skipped). Builds a temporary store
    /// with those memories plus generated memories about other people, and for each request
    /// reports whether the keyed memory is in the memory block a chat turn would send and its
    /// rank in `memory list --query`: block hit rate, R@1, R@5, MRR, and the misses.
    ///
    /// Vector and hybrid search need the local embedding model (HEARTH_EMBED_MODEL_DIR or
    /// the Hugging Face cache); without it only keywords are measured.
    #[command(group(clap::ArgGroup::new("set").required(true).args(["locomo", "profile"])))]
    Memory {
        /// locomo10.zip, or a folder of its <id>.json files.
        #[arg(long)]
        locomo: Option<std::path::PathBuf>,
        /// A folder with memories.tsv and queries.tsv.
        #[arg(long)]
        profile: Option<std::path::PathBuf>,
        /// With --profile: how many generated memories about other people to add.
        #[arg(long, default_value_t = 400, requires = "profile")]
        distractors: usize,
        /// The local embedding model to measure with: all-MiniLM-L6-v2 or
        /// bge-small-en-v1.5 (its files must be on this computer).
        #[arg(long, default_value = "all-MiniLM-L6-v2")]
        model: String,
        /// With --profile: read each text's vector from FILE instead of a local model, to
        /// measure a model computed elsewhere. JSON lines {"t": text, "v": [numbers]}; the
        /// texts without one are listed in FILE.missing and the run fails (invalid_input).
        #[arg(
            long,
            value_name = "FILE",
            requires = "profile",
            conflicts_with = "model"
        )]
        vectors: Option<std::path::PathBuf>,
    },
    /// Retrieval over watched folders on LoCoMo: nDCG@10, R@5, R@10, R@20 and MRR@10.
    ///
    /// Writes each session as a Markdown file (conv-26/session_03.md: a date heading,
    /// one turn per line as `Speaker: text`) into a temporary folder, watches and indexes
    /// each conversation's folder through the real pipeline (extraction, chunking, keyword
    /// index, embedding) and searches it for every question of categories 1–4 with
    /// evidence by bm25, vector and hybrid search. A chunk is relevant when its lines cover
    /// an evidence turn's line. Conversations 26 and 30 are the tuning split; the other
    /// eight are reported; then all ten. Progress goes to stderr.
    ///
    /// Vector and hybrid search need the local embedding model (HEARTH_EMBED_MODEL_DIR or
    /// the Hugging Face cache); without it only keywords are measured, saying so.
    Retrieval {
        /// locomo10.zip, or a folder of its <id>.json files.
        #[arg(long)]
        locomo: std::path::PathBuf,
        /// The local embedding model to measure with: all-MiniLM-L6-v2 or
        /// bge-small-en-v1.5 (its files must be on this computer).
        #[arg(long, default_value = "all-MiniLM-L6-v2")]
        model: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// List memories: pinned and critical first, then newest.
    List {
        /// Only this kind: fact, preference, episode or instruction.
        #[arg(long)]
        kind: Option<String>,
        /// Only memories matching these words (best match first).
        #[arg(long)]
        query: Option<String>,
        /// List "Recently removed" instead (removed by the assistant, restorable).
        #[arg(long)]
        removed: bool,
    },
    /// Remember something.
    Add {
        text: String,
        /// fact (default), preference, episode or instruction.
        #[arg(long, default_value = "fact")]
        kind: String,
        /// Always put it in the prompt.
        #[arg(long)]
        pin: bool,
        /// Safety-critical (an allergy, a hard constraint): always in the prompt, first.
        #[arg(long)]
        critical: bool,
    },
    /// Change a memory's text (its history keeps the old text).
    Edit { id: String, text: String },
    /// Always put a memory in the prompt.
    Pin { id: String },
    /// Stop always putting a memory in the prompt.
    Unpin { id: String },
    /// Delete a memory for good (no undo).
    Delete { id: String },
    /// Bring back a memory the assistant removed.
    Restore { id: String },
    /// Show a memory with its provenance, the history of its changes and Hearth's proposals.
    Show { id: String },
    /// Changes Hearth suggests to pinned or critical memories, waiting for you.
    Proposals,
    /// Apply a proposal (a removal is soft: restorable under --removed).
    Accept {
        /// The proposal's id (p-…).
        id: String,
    },
    /// Drop a proposal; the memory stays as it is.
    Reject {
        /// The proposal's id (p-…).
        id: String,
    },
    /// Delete memories for good: all of them, or those created between two dates.
    ///
    /// Dates are YYYY-MM-DD in your time zone; --to is inclusive. Asks on a terminal;
    /// elsewhere requires --yes.
    Forget {
        /// Every memory.
        #[arg(long, conflicts_with_all = ["from", "to"])]
        all: bool,
        /// First day (inclusive).
        #[arg(long, requires = "to")]
        from: Option<String>,
        /// Last day (inclusive).
        #[arg(long, requires = "from")]
        to: Option<String>,
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
    },
    /// Write every memory to FILE: jsonl (with history; re-importable) or md (readable).
    ///
    /// The file is NOT encrypted: anyone who can read it can read your memories.
    Export {
        file: std::path::PathBuf,
        /// jsonl or md (default: from the file's extension, else jsonl).
        #[arg(long)]
        format: Option<String>,
    },
    /// Read memories from a JSON Lines export; ones you already have are skipped.
    Import { file: std::path::PathBuf },
}

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// List every row: built-in, reported by a server, or edited (marked *).
    List,
    /// Set a model's (or name prefix's) window and prices; unset values use the defaults.
    Set {
        /// A model name or prefix (gpt-4o covers gpt-4o-2024-08-06).
        model: String,
        /// Context window in tokens.
        #[arg(long)]
        window: Option<u32>,
        /// USD per million input tokens.
        #[arg(long)]
        input_price: Option<f64>,
        /// USD per million output tokens.
        #[arg(long)]
        output_price: Option<f64>,
        /// USD per million input tokens read from the provider's cache.
        #[arg(long)]
        cached_price: Option<f64>,
    },
    /// Drop your values for a model (the built-in or server values apply again).
    Reset { model: String },
}

#[derive(Debug, Subcommand)]
pub enum ConversationsCommand {
    /// List conversations, most recently active first.
    List,
    /// Show a conversation's messages, with the state of each answer.
    Show { id: String },
    /// Find conversations whose title or messages contain TEXT.
    Search { text: String },
    /// Give a conversation another title.
    Rename { id: String, title: String },
    /// Delete a conversation and all its messages for good.
    Delete {
        id: String,
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Print the recovery key: with it, anyone can read all of your Hearth data.
    ///
    /// Asks for confirmation on a terminal; elsewhere requires --yes.
    Export {
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
    },
    /// Move the key to another storage backend (keyring, file or passphrase).
    ///
    /// The key stays the same, so a recovery key stays valid. A new passphrase comes from
    /// HEARTH_NEW_PASSPHRASE or is asked for twice on the terminal.
    Backend {
        /// keyring | file | passphrase
        backend: String,
    },
    /// Re-encrypt the database with a new random key (the old recovery key stops working).
    Rotate,
    /// Restore a lost key from a recovery key, read from stdin or asked for on a terminal.
    ///
    /// The key is checked against the database before it is stored.
    Import,
}

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Installed models (size, the memory each needs here, its context, whether it fits,
    /// which one the chat uses) and the catalogue of models to download, with the one
    /// recommended for this computer.
    List,
    /// The catalogue model recommended for this computer: the one for the most memory it
    /// has, among those that fit in its memory and free disk. Exit 1 (`not_found`) when none
    /// fits.
    Recommend,
    /// Download a catalogue model into the data folder's models/ and install it.
    ///
    /// Progress (bytes, rate, time left) goes to stderr: a bar on a terminal, JSON lines
    /// with --json. The file is checked against its
    /// pinned size and SHA-256: a mismatch deletes it and installs nothing. Ctrl-C stops
    /// the download (exit 1); running it again resumes where it stopped.
    Download { name: String },
    /// Add a GGUF model file you have, in place. Its header is checked first (a GGUF of
    /// an architecture llama.cpp runs, not cut short) and it must fit this computer's
    /// memory; exit 1 with the reason otherwise. The first model added answers chats.
    Add {
        /// The .gguf file.
        path: std::path::PathBuf,
        /// The name to use (default: the file's name).
        #[arg(long)]
        name: Option<String>,
    },
    /// Forget a model. A downloaded model's file is deleted; a file you added stays.
    Remove { name: String },
    /// Make a model the one the chat uses (or, with --fast, the one background work uses).
    Use {
        name: String,
        #[arg(long)]
        fast: bool,
    },
    /// The engine: whether its worker runs (in this process), the model loaded, its
    /// memory, and the models chosen.
    Status,
}

#[derive(Debug, Subcommand)]
pub enum UpdatesCommand {
    /// Whether automatic checks are on, and when the app last checked.
    Show,
    /// Let the app check for updates at start and once a day.
    On,
    /// No automatic checks (the app's Settings → About can still check when you ask).
    Off,
}

#[derive(Debug, Subcommand)]
pub enum EmbeddingCommand {
    /// The choice, the model in use, and how many memories have its vectors.
    Show,
    /// Choose the embedding model: `local` (all-MiniLM-L6-v2, run on this computer),
    /// `local:bge-small-en-v1.5` (a stronger local model), `off` (keyword search only), or
    /// PROVIDER:MODEL (a configured provider's OpenAI-compatible embeddings API, e.g.
    /// ollama:nomic-embed-text).
    ///
    /// A provider's model is tried first and refused (exit 1) if it does not answer. A
    /// local model not yet on this computer is chosen anyway: `download` fetches it.
    Use {
        /// local | local:MODEL | off | PROVIDER:MODEL
        choice: String,
        /// Do not wait for memories to be embedded (the app, or the next `use`, does it).
        #[arg(long)]
        no_wait: bool,
    },
    /// Download the chosen local model (all-MiniLM-L6-v2 about 90 MB, bge-small-en-v1.5
    /// about 133 MB; once, from Hugging Face or HF_ENDPOINT into the Hugging Face cache)
    /// with progress on stderr, then embed memories with it.
    Download {
        /// Do not wait for memories to be embedded.
        #[arg(long)]
        no_wait: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// Every tool: name, where it comes from, its risk tier and whether it is on.
    List,
    /// Set an MCP tool's risk tier (read, write or destructive); built-ins keep theirs. A
    /// lower tier asks on a terminal; elsewhere requires --yes.
    Risk {
        /// The tool's name as `hearth tools list` shows it (server__tool).
        tool: String,
        /// read, write or destructive.
        #[arg(value_parser = ["read", "write", "destructive"])]
        risk: String,
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Add a server: `hearth mcp add NAME -- COMMAND ARGS…` or `hearth mcp add NAME --url URL`.
    ///
    /// Starts it once to list its tools and approves nothing. Values of --env and --header
    /// are read from the terminal, or one line each from stdin, in the order given; never
    /// from the command line. Starting a program needs your confirmation: asked on a
    /// terminal; elsewhere requires --yes.
    Add {
        /// A name for the server (letters, digits, '-', '_', '.').
        name: String,
        /// A Streamable HTTP endpoint instead of a command.
        #[arg(long, conflicts_with = "command")]
        url: Option<String>,
        /// An environment variable the server gets (its value is a secret; repeatable).
        #[arg(long = "env", value_name = "KEY")]
        env: Vec<String>,
        /// An HTTP header the server is sent (its value is a secret; repeatable).
        #[arg(long = "header", value_name = "NAME", requires = "url")]
        header: Vec<String>,
        /// Replace a server of that name.
        #[arg(long)]
        replace: bool,
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
        /// The command and its arguments, after `--`.
        #[arg(last = true, required_unless_present = "url")]
        command: Vec<String>,
    },
    /// Every server as last known: transport, state, tools (starts nothing).
    List,
    /// Start a server and list its tools: name, effective risk, why, the server's claim,
    /// state.
    Tools { name: String },
    /// Approve a server's tools as they are listed now (or the tools named), pinning them.
    /// Approved tools are destructive (they ask every time) unless you accept the server's
    /// labels or set a tier with `hearth tools risk`. Asks on a terminal; elsewhere
    /// requires --yes.
    Approve {
        name: String,
        /// Only these tools (their own names or server__tool).
        tools: Vec<String>,
        /// Take the server's annotations (read-only, reversible write, destructive) as
        /// these tools' tiers.
        #[arg(long)]
        accept_labels: bool,
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
    },
    /// What changed since you approved: a diff per tool that is off until reviewed.
    Review { name: String },
    /// Remove a server, its tools and its secrets. Asks on a terminal; elsewhere requires
    /// --yes.
    Remove {
        name: String,
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
    },
    /// Import servers from a desktop config (`{"mcpServers": …}`), or Claude Desktop's.
    ///
    /// Starts nothing and approves nothing. Env and header values go to the keyring; a
    /// server whose name exists is skipped unless --replace. The servers are programs
    /// Hearth will start: asks on a terminal; elsewhere requires --yes.
    Import {
        /// The config file (`-` for stdin).
        #[arg(
            required_unless_present = "claude_desktop",
            conflicts_with = "claude_desktop"
        )]
        file: Option<std::path::PathBuf>,
        /// Read Claude Desktop's config from its usual place.
        #[arg(long)]
        claude_desktop: bool,
        /// Replace servers whose names exist.
        #[arg(long)]
        replace: bool,
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
    },
    /// Export every server in the desktop format, to FILE or stdout; secrets redacted.
    Export {
        /// Where to write it (readable by you only); stdout when absent.
        file: Option<std::path::PathBuf>,
        /// Write the env and header values themselves. Asks on a terminal; elsewhere
        /// requires --yes.
        #[arg(long)]
        include_secrets: bool,
        /// Do not ask for confirmation.
        #[arg(long, requires = "include_secrets")]
        yes: bool,
    },
    /// Turn a server on: its approved tools are offered again.
    Enable { name: String },
    /// Turn a server off: it is stopped and none of its tools is offered.
    Disable { name: String },
}

#[derive(Debug, Subcommand)]
pub enum GrantsCommand {
    /// Every stored grant, newest first.
    List,
    /// Revoke one grant by its id, or every grant with --all. The tool asks again.
    Revoke {
        /// The grant's id (from `hearth grants list`).
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        id: Option<i64>,
        /// Revoke every grant.
        #[arg(long)]
        all: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Entries, oldest first: what ran, what was decided and by whom, when.
    List {
        /// Only this kind: audit, tool_call, memory, grant, folder or mcp.
        #[arg(long)]
        kind: Option<String>,
        /// Only the calls of this tool.
        #[arg(long)]
        tool: Option<String>,
        /// Only the newest N entries.
        #[arg(long)]
        limit: Option<usize>,
    },
    /// Check the hash chain from the first entry to the stored head. Exit 1 when broken.
    Verify,
}
