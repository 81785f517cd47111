//! The Tools screen's MCP servers: each command calls the façade's `McpService` and
//! converts to DTOs; the rules (resolving commands, keeping secrets, pinning) are the
//! core's, so the app and `hearth mcp` behave the same.

use hearth_core::{Hearth, NewServer};
use tauri::State;

use crate::cmd::blocking;
use crate::dto::args::Args;
use crate::dto::{
    AddMcpServerArgs, ApproveMcpArgs, ErrorDto, ImportMcpArgs, McpImportDto, McpNameArgs,
    McpReviewDto, McpServerDto, McpToolDto, SetMcpEnabledArgs, SetToolRiskArgs,
};
use crate::state::AppState;

fn server_dto(hearth: &Hearth, name: &str) -> Result<McpServerDto, ErrorDto> {
    let mcp = hearth.mcp();
    Ok(McpServerDto::new(mcp.server(name)?, mcp.log(name)?))
}

#[tauri::command]
pub async fn list_mcp_servers(state: State<'_, AppState>) -> Result<Vec<McpServerDto>, ErrorDto> {
    let mcp = state.hearth()?.mcp();
    let rows = blocking(move || mcp.list()).await?;
    let mcp = state.hearth()?.mcp();
    Ok(rows
        .into_iter()
        .map(|r| {
            let log = mcp.logs(&r.name);
            McpServerDto::new(r, log)
        })
        .collect())
}

#[tauri::command]
pub async fn add_mcp_server(
    state: State<'_, AppState>,
    args: Args<AddMcpServerArgs>,
) -> Result<McpServerDto, ErrorDto> {
    let a = args.0;
    let pairs =
        |v: Vec<crate::dto::SecretPairDto>| v.into_iter().map(|p| (p.name, p.value)).collect();
    let new = NewServer {
        name: a.name,
        command: a.command.filter(|c| !c.trim().is_empty()),
        args: a.args,
        url: a.url.filter(|u| !u.trim().is_empty()),
        env: pairs(a.env),
        headers: pairs(a.headers),
    };
    let hearth = state.hearth()?;
    // It starts a program: confirmed in the consent window, never by this window alone.
    let report = hearth.mcp().add(new, false, state.consent.as_ref()).await?;
    server_dto(hearth, &report.server.name)
}

#[tauri::command]
pub async fn list_mcp_tools(
    state: State<'_, AppState>,
    args: Args<McpNameArgs>,
) -> Result<Vec<McpToolDto>, ErrorDto> {
    let tools = state.hearth()?.mcp().tools(&args.0.name).await?;
    Ok(tools.into_iter().map(Into::into).collect())
}

#[tauri::command]
pub async fn known_mcp_tools(
    state: State<'_, AppState>,
    args: Args<McpNameArgs>,
) -> Result<Vec<McpToolDto>, ErrorDto> {
    let mcp = state.hearth()?.mcp();
    let name = args.0.name;
    let tools = blocking(move || mcp.known_tools(&name)).await?;
    Ok(tools.into_iter().map(Into::into).collect())
}

#[tauri::command]
pub async fn approve_mcp_tools(
    state: State<'_, AppState>,
    args: Args<ApproveMcpArgs>,
) -> Result<u32, ErrorDto> {
    let ApproveMcpArgs { name, tool } = args.0;
    let mcp = state.hearth()?.mcp();
    let tools: Vec<String> = tool.into_iter().collect();
    // Confirmed in the consent window (the core asks), never by this window alone.
    let n = mcp
        .approve(&name, &tools, false, state.consent.as_ref())
        .await?;
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

#[tauri::command]
pub async fn review_mcp_server(
    state: State<'_, AppState>,
    args: Args<McpNameArgs>,
) -> Result<Vec<McpReviewDto>, ErrorDto> {
    let mcp = state.hearth()?.mcp();
    let name = args.0.name;
    let reviews = blocking(move || mcp.review(&name)).await?;
    Ok(reviews.into_iter().map(Into::into).collect())
}

/// A server's recent stderr lines (this process's, kept in memory only): the Tools
/// screen's "Show log". `not_found` for a server that does not exist.
#[tauri::command]
pub async fn mcp_server_log(
    state: State<'_, AppState>,
    args: Args<McpNameArgs>,
) -> Result<Vec<String>, ErrorDto> {
    let hearth = state.hearth()?.clone();
    let name = args.0.name;
    blocking(move || hearth.mcp().log(&name)).await
}

#[tauri::command]
pub async fn remove_mcp_server(
    state: State<'_, AppState>,
    args: Args<McpNameArgs>,
) -> Result<(), ErrorDto> {
    Ok(state.hearth()?.mcp().remove(&args.0.name).await?)
}

#[tauri::command]
pub async fn set_mcp_enabled(
    state: State<'_, AppState>,
    args: Args<SetMcpEnabledArgs>,
) -> Result<McpServerDto, ErrorDto> {
    let SetMcpEnabledArgs { name, enabled } = args.0;
    let mcp = state.hearth()?.mcp();
    let row = mcp.set_enabled(&name, enabled).await?;
    let log = mcp.logs(&row.name);
    Ok(McpServerDto::new(row, log))
}

#[tauri::command]
pub async fn import_mcp_servers(
    state: State<'_, AppState>,
    args: Args<ImportMcpArgs>,
) -> Result<McpImportDto, ErrorDto> {
    let ImportMcpArgs {
        path,
        claude_desktop,
        replace,
    } = args.0;
    let path = match (path.filter(|p| !p.trim().is_empty()), claude_desktop) {
        (Some(p), false) => std::path::PathBuf::from(p),
        (None, true) => hearth_core::McpService::claude_desktop_config()?,
        _ => {
            return Err(ErrorDto::new(
                "invalid_input",
                "import_mcp_servers: give a file, or choose Claude Desktop's config",
            ));
        }
    };
    let mcp = state.hearth()?.mcp();
    let report = mcp
        .import_file(&path, replace, state.consent.as_ref())
        .await?;
    Ok(report.into())
}

#[tauri::command]
pub async fn set_tool_risk(
    state: State<'_, AppState>,
    args: Args<SetToolRiskArgs>,
) -> Result<(), ErrorDto> {
    let SetToolRiskArgs { tool, risk } = args.0;
    let mcp = state.hearth()?.mcp();
    // A lower tier is confirmed in the consent window (the core asks).
    let risk = hearth_core::Risk::parse(&risk)?;
    Ok(mcp.set_risk(&tool, risk, state.consent.as_ref()).await?)
}
