//! The built-in model end to end in one process: the real engine (`hearth-llama-worker`,
//! llama.cpp) on a real GGUF (SmolLM2-135M, `scripts/fetch-llm.sh`, `HEARTH_TEST_GGUF`).
//! What is checked is what the user would notice: answers stream and are stored, turn 2
//! reuses turn 1's prompt (cached tokens), Stop keeps the partial answer, a worker killed
//! mid-answer ends the turn interrupted with the partial kept, and the next turn answers
//! from a new worker. Never wording or time.

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hearth_core::builtin::Installed;
use hearth_core::chat::{ChatOptions, ModelSlots};
use hearth_core::conversations::MessageState;
use hearth_core::{Hearth, KeyBackend};
use tokio_util::sync::CancellationToken;

mod common;

/// One worker at a time: llama.cpp's threads spin while they wait, and two workers on the
/// same cores slow each other down by orders of magnitude.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn gguf() -> PathBuf {
    PathBuf::from(std::env::var_os("HEARTH_TEST_GGUF").expect(
        "HEARTH_TEST_GGUF names the test model: export HEARTH_TEST_GGUF=$(scripts/fetch-llm.sh)",
    ))
}

fn open(dir: &std::path::Path) -> Hearth {
    let hearth = Hearth::open(&common::options(dir, KeyBackend::File)).expect("open");
    hearth
        .builtin()
        .add(&gguf(), Some("smollm2"))
        .expect("add the test model");
    // A small window keeps the answers of a model made to talk on short.
    let mut installed = Installed::load(hearth.store()).expect("installed");
    installed.context = Some(2048);
    installed.save(hearth.store()).expect("save");
    hearth
}

fn built_in_slots(hearth: &Hearth) -> ModelSlots {
    let slots = hearth.providers().for_chat(None, None).expect("slots");
    assert_eq!(slots.main.provider.name, "builtin");
    slots
}

fn ask(text: &str, conversation: Option<String>) -> ChatOptions {
    ChatOptions {
        message: text.into(),
        conversation,
        ..ChatOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
// The guard only orders this file's tests; nothing else takes it.
#[allow(clippy::await_holding_lock)]
async fn a_chat_with_no_provider_is_answered_by_the_built_in_model_and_turn_two_reuses_turn_ones_prompt()
 {
    let _serial = serial();
    let tmp = tempfile::tempdir().expect("tempdir");
    let hearth = open(tmp.path());
    let slots = built_in_slots(&hearth);
    let pieces = Arc::new(Mutex::new(0usize));
    let counted = pieces.clone();
    let one = hearth
        .chat(
            &slots,
            ask("Tell me one fact about the sea.", None),
            &CancellationToken::new(),
            move |e| {
                if let hearth_core::chat::TurnEvent::Text(_) = e {
                    *counted.lock().unwrap() += 1;
                }
            },
        )
        .await
        .expect("turn 1");
    assert!(!one.answer.trim().is_empty(), "an answer");
    assert!(*pieces.lock().unwrap() > 1, "the answer streamed in pieces");
    assert_eq!(one.provider, "builtin");
    assert_eq!(one.model, "smollm2");
    let u1 = one.usage.expect("usage in the model's tokens");
    assert!(u1.input_tokens > 0 && u1.output_tokens > 0, "{u1:?}");
    // The prompt was budgeted in the model's own tokens: the worker counted its texts in
    // one call, and the context inspector's zones are in those counts, not an estimate.
    use hearth_core::tokens::{Encoding, ModelTokens};
    let tokens = ModelTokens::for_key("builtin:smollm2");
    assert!(tokens.learned() > 0, "the model counted the prompt's texts");
    let system = hearth_core::chat::SYSTEM_PROMPT;
    let model_count = Encoding::Model(tokens).count(system) as u32;
    assert_ne!(
        model_count,
        Encoding::Estimated.count(system) as u32,
        "the model's count is its own"
    );
    assert_eq!(
        one.zones.system,
        model_count + hearth_core::context::MESSAGE_OVERHEAD
    );

    // Learning from turn 1 calls the same model (the fast slot) in between: it lands in
    // another cache slot and does not evict the conversation's.
    let job = one.learn_job.expect("turn 1 is learned from");
    hearth.jobs().run_job(job).await.expect("learning ran");
    // What a 135M model learns is noise, and a critical memory it made up would rightly
    // change the prompt's stable core: forget it all, as a user would.
    let memory = hearth.memory();
    let learned: Vec<String> = memory
        .list(&Default::default())
        .expect("memories")
        .into_iter()
        .map(|m| m.id)
        .collect();
    memory.delete_many(&learned).expect("forget");
    let learning_calls: i64 = hearth
        .store()
        .read_blocking(|c| {
            c.query_row(
                "SELECT count(*) FROM usage_ledger WHERE slot != 'main' AND provider = 'builtin' AND output_tokens > 0",
                [],
                |r| r.get(0),
            )
        })
        .expect("ledger");
    assert!(learning_calls >= 1, "learning asked the built-in model");
    let status = hearth.builtin().status().expect("status");
    assert!(status.worker.running, "the worker runs: {status:?}");
    assert_eq!(status.worker.starts, 1, "one worker served both calls");

    let two = hearth
        .chat(
            &slots,
            ask("And one about rivers?", one.conversation.clone()),
            &CancellationToken::new(),
            |_| {},
        )
        .await
        .expect("turn 2");
    let u2 = two.usage.expect("usage");
    // Turn 1's whole prompt is the start of turn 2's: all of it but the token the answer
    // began with comes from the cache.
    assert!(
        u2.cached_input_tokens + 2 >= u1.input_tokens,
        "turn 2 reused turn 1's prompt: {} cached of {} (turn 1's prompt: {})",
        u2.cached_input_tokens,
        u2.input_tokens,
        u1.input_tokens
    );
    assert!(u2.input_tokens > u1.input_tokens);
}

#[test]
fn stop_keeps_the_partial_answer_and_a_killed_worker_interrupts_the_turn_then_a_new_one_answers() {
    let _serial = serial();
    // The tiny model is kept talking (its end token suppressed) so there is time to act.
    if common::rerun_in_child(
        "stop_keeps_the_partial_answer_and_a_killed_worker_interrupts_the_turn_then_a_new_one_answers",
        ("HEARTH_TEST_LLAMA_MIN_TOKENS", "100000"),
    ) {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let tmp = tempfile::tempdir().expect("tempdir");
    let hearth = open(tmp.path());
    let slots = built_in_slots(&hearth);
    runtime.block_on(async {
        // Stop after a few pieces: the answer so far is kept, marked stopped.
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        let mut seen = 0;
        let stopped = hearth
            .chat(
                &slots,
                ask("Write a long story.", None),
                &cancel,
                move |e| {
                    if let hearth_core::chat::TurnEvent::Text(_) = e {
                        seen += 1;
                        if seen == 5 {
                            c.cancel();
                        }
                    }
                },
            )
            .await
            .expect("a stopped turn is not an error");
        assert!(stopped.stopped);
        assert!(!stopped.answer.is_empty());
        let convs = hearth.conversations();
        let messages = convs
            .messages(stopped.conversation.as_deref().expect("stored"))
            .expect("messages");
        let last = messages.last().expect("the answer");
        assert_eq!(last.state, MessageState::Stopped);
        assert_eq!(last.message.content, stopped.answer);

        // Kill the worker mid-answer (as an abort or the OOM killer would).
        let (h, s) = (hearth.clone(), slots.clone());
        let started = Arc::new(Mutex::new(false));
        let flag = started.clone();
        let turn = tokio::spawn(async move {
            h.chat(
                &s,
                ask("Write another long story.", None),
                &CancellationToken::new(),
                move |e| {
                    if let hearth_core::chat::TurnEvent::Text(_) = e {
                        *flag.lock().unwrap() = true;
                    }
                },
            )
            .await
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        while !*started.lock().unwrap() {
            assert!(Instant::now() < deadline, "the answer never started");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let pid = hearth
            .builtin()
            .status()
            .expect("status")
            .worker
            .pid
            .expect("a worker pid");
        let killed = Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
        let result = turn.await.expect("join");
        let err = result.expect_err("the turn broke off");
        assert_eq!(err.code(), "provider_interrupted", "{err}");
        let list = hearth.conversations().list().expect("list");
        let broken = list
            .iter()
            .map(|c| hearth.conversations().messages(&c.id).expect("messages"))
            .find(|m| m[0].message.content == "Write another long story.")
            .expect("the conversation is kept");
        let answer = broken.last().expect("answer");
        assert_eq!(answer.state, MessageState::Interrupted);
        assert!(
            !answer.message.content.is_empty(),
            "the partial answer is kept"
        );

        // The next turn starts a new worker and answers.
        let again = hearth
            .chat(
                &slots,
                ask("Say hello.", None),
                &CancellationToken::new(),
                |_| {},
            )
            .await
            .expect("a new worker answers");
        assert!(!again.answer.is_empty());
        let status = hearth.builtin().status().expect("status");
        assert_eq!(status.worker.starts, 2, "{status:?}");
        assert_eq!(status.worker.crashes, 1, "{status:?}");
        assert_ne!(status.worker.pid, Some(pid));
    });
}

/// Twenty things a user might say, each asked of the tiny model with learning's own prompt
/// and schema: grammar-constrained sampling makes every answer valid JSON of that schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::await_holding_lock)]
async fn extraction_on_the_tiny_model_is_schema_valid_json_for_every_prompt() {
    let _serial = serial();
    use hearth_core::learn::{EXTRACT_PROMPT, extraction_schema};
    use hearth_core::llm::{ChatRequest, LlmClient, RetryPolicy, Timeouts};
    use hearth_core::types::Message;

    let tmp = tempfile::tempdir().expect("tempdir");
    let hearth = open(tmp.path());
    let fast = built_in_slots(&hearth).fast;
    let client = LlmClient::new(RetryPolicy::default(), Timeouts::default()).expect("client");
    let schema = extraction_schema();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let said = [
        "I moved to Lisbon in April and I work as a nurse.",
        "My daughter Mia is allergic to peanuts.",
        "Please always answer in short bullet points.",
        "My husband Tomás and I are going to Japan on 2027-03-14.",
        "I don't eat meat anymore.",
        "What's the weather like?",
        "Remember that my passport expires in June 2028.",
        "Forget what I said about my old job at the bank.",
        "I have two cats, Pixel and Byte.",
        "Can you help me write an email to my landlord?",
        "I'm training for a half marathon in October.",
        "My mother's birthday is on the 3rd of May.",
        "I prefer metric units.",
        "hi",
        "I take 50 mg of sertraline every morning.",
        "My manager is called Ana and she wants the report by Friday.",
        "I drive a 2015 Honda Civic.",
        "Don't ever suggest seafood restaurants, I'm allergic to shellfish.",
        "I'm learning Portuguese, I'm at about A2 level.",
        "Thanks, that was helpful!",
    ];
    for words in said {
        let request = ChatRequest {
            model: fast.model.clone(),
            messages: vec![
                Message::system(EXTRACT_PROMPT),
                Message::user(format!(
                    "<data>\nUser: {words}\nAssistant (context only, not a source of facts): Noted.\n</data>\nToday is 2026-12-06. Extract the memories from the user's words."
                )),
            ],
            temperature: Some(0.0),
            json_schema: Some(("memory_extraction".into(), schema.clone())),
            max_output_tokens: Some(hearth_core::learn::LEARN_MAX_OUTPUT),
            ..ChatRequest::default()
        };
        let done = client
            .stream_chat(&fast.provider, &request, &CancellationToken::new(), |_| {})
            .await
            .expect("the worker answers");
        let value: serde_json::Value = serde_json::from_str(&done.text)
            .unwrap_or_else(|e| panic!("not JSON for {words:?} ({e}): {}", done.text));
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{words:?}: {errors:?} in {value}");
    }
}
