//! The consent window's commands: the open questions, and the user's answer. Only the
//! consent window's capability lists them (`commands.in.rs`), and each checks it is that
//! window calling, so a chat or quick-prompt window — which render model text — can never
//! approve a tool call.

use hearth_core::tools::gate::Answer;
use tauri::{Runtime, State, Webview};

use crate::dto::args::Args;
use crate::dto::{AnswerConsentArgs, ConsentRequestDto, ErrorDto};
use crate::state::AppState;
use crate::windows::CONSENT;

fn only_the_consent_window<R: Runtime>(webview: &Webview<R>) -> Result<(), ErrorDto> {
    if webview.label() == CONSENT {
        Ok(())
    } else {
        tracing::warn!(
            window = webview.label(),
            "refused a consent command from another window"
        );
        Err(ErrorDto::new(
            "forbidden",
            "only the consent window may answer a tool's request",
        ))
    }
}

#[tauri::command]
pub fn list_consent_requests<R: Runtime>(
    webview: Webview<R>,
    state: State<'_, AppState>,
) -> Result<Vec<ConsentRequestDto>, ErrorDto> {
    only_the_consent_window(&webview)?;
    Ok(state
        .consent
        .pending()
        .into_iter()
        .map(Into::into)
        .collect())
}

#[tauri::command]
pub fn answer_consent<R: Runtime>(
    webview: Webview<R>,
    state: State<'_, AppState>,
    args: Args<AnswerConsentArgs>,
) -> Result<bool, ErrorDto> {
    only_the_consent_window(&webview)?;
    let AnswerConsentArgs { id, choice, reason } = args.0;
    let answer = match choice.as_str() {
        "once" => Answer::AllowOnce,
        "conversation" => Answer::AllowConversation,
        "always" => Answer::AllowAlways,
        "deny" => Answer::Deny(reason.filter(|r| !r.trim().is_empty())),
        other => {
            return Err(ErrorDto::new(
                "invalid_input",
                format!("answer_consent: unknown choice {other:?}"),
            ));
        }
    };
    Ok(state.consent.answer(id, answer))
}
