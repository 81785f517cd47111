//! The consent window's commands (the open questions, and the user's answer) and the Tools
//! and Activity screens' (tools, grants, the audit log). Only the
//! consent window's capability lists them (`commands.in.rs`), and each checks it is that
//! window calling, so a chat or quick-prompt window — which render model text — can never
//! approve a tool call.

use hearth_core::ConsentAnswer as Answer;
use tauri::{Runtime, State, Webview};

use crate::dto::args::Args;
use crate::dto::{
    AnswerConsentArgs, AuditEntryDto, AuditVerifyDto, ConsentRequestDto, ErrorDto, GrantDto,
    GrantIdArgs, ToolDto,
};
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
    let AnswerConsentArgs {
        id,
        hash,
        choice,
        reason,
    } = args.0;
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
    Ok(state.consent.answer(id, &hash, answer))
}

#[tauri::command]
pub fn list_tools(state: State<'_, AppState>) -> Result<Vec<ToolDto>, ErrorDto> {
    Ok(state
        .hearth()?
        .tools()?
        .into_iter()
        .map(|t| ToolDto {
            name: t.name,
            description: t.description,
            origin: t.origin.label(),
            risk: t.risk.as_str().to_owned(),
            risk_source: t.risk_source.to_owned(),
            enabled: t.enabled,
        })
        .collect())
}

#[tauri::command]
pub async fn list_grants(state: State<'_, AppState>) -> Result<Vec<GrantDto>, ErrorDto> {
    let activity = state.hearth()?.activity();
    let list = crate::cmd::blocking(move || activity.grants()).await?;
    Ok(list
        .into_iter()
        .map(|g| GrantDto {
            id: g.id,
            tool: g.tool,
            origin: g.origin,
            scope: g.scope.as_str().to_owned(),
            conversation_id: g.conversation,
            created_at: g.created_at,
        })
        .collect())
}

#[tauri::command]
pub async fn revoke_grant(
    state: State<'_, AppState>,
    args: Args<GrantIdArgs>,
) -> Result<(), ErrorDto> {
    let id = args.0.id;
    let activity = state.hearth()?.activity();
    crate::cmd::blocking(move || activity.revoke_grant(id)).await
}

/// The newest entries of the audit log (`hearth_core::RECENT_AUDIT_ENTRIES`), oldest first.
#[tauri::command]
pub async fn list_audit(state: State<'_, AppState>) -> Result<Vec<AuditEntryDto>, ErrorDto> {
    let activity = state.hearth()?.activity();
    let list = crate::cmd::blocking(move || activity.recent_audit()).await?;
    Ok(list.into_iter().map(Into::into).collect())
}

#[tauri::command]
pub async fn verify_audit(state: State<'_, AppState>) -> Result<AuditVerifyDto, ErrorDto> {
    let activity = state.hearth()?.activity();
    let v = crate::cmd::blocking(move || activity.verify_audit()).await?;
    Ok(AuditVerifyDto {
        ok: v.ok,
        entries: v.entries,
        first_bad_seq: v.first_bad_seq,
        problem: v.problem,
    })
}
