//! The gate's side of a call: parse, validate, check the grants and the provenance rule,
//! and ask the user.

use super::*;

impl ToolRun {
    /// Parses, validates and gates a call: `Ok` when it is to run, else its finished record.
    pub(super) async fn check(&mut self, call: &ToolCall) -> Result<Ready, CallRecord> {
        if self.selecting() && call.name == select::DESCRIBE_TOOL {
            return Err(self.describe(call));
        }
        if self.selecting() && call.name == select::CALL_TOOL {
            let mut record = first_record(call, None);
            record.observation = "Error: call_tool needs {\"name\": \"TOOL\", \"arguments\": {…}} \
                naming a tool of the catalog."
                .into();
            return Err(record);
        }
        let tool = self.find(&call.name);
        let mut record = first_record(call, tool.as_ref());
        let arguments = record.arguments.clone();
        let Some(tool) = tool else {
            record.observation = format!(
                "Error: there is no tool named `{}`. The tools are: {}.",
                call.name,
                self.specs()
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            return Err(record);
        };
        if !arguments.is_object() {
            record.observation = format!(
                "Error: the arguments of {} must be a JSON object matching its schema.",
                tool.name()
            );
            return Err(record);
        }
        let name = tool.name().to_owned();
        let key = (name.clone(), canonical_json(&arguments));
        if self.seen.contains(&key) {
            record.observation = "Error: this exact call was already made in this turn; its \
                result is above. Do not repeat it."
                .into();
            return Err(record);
        }
        self.seen.insert(key);
        let folders = match self.folders().await {
            Ok(f) => f,
            Err(e) => {
                record.result_status = ResultStatus::Error;
                record.observation = format!("Error: the watched folders could not be read: {e}");
                return Err(record);
            }
        };
        let folders = Env {
            folders,
            store: self.store.clone(),
            conversation: self.conversation.clone(),
            retrieval: self.retrieval.clone(),
            worker: self.settings.worker.clone(),
        };
        let action = match &tool {
            Callable::BuiltIn(builtin) => {
                let (args, folders, builtin) = (arguments.clone(), folders.clone(), *builtin);
                match tokio::task::spawn_blocking(move || builtin.prepare(&args, &folders)).await {
                    Ok(r) => r.map(Some),
                    Err(_) => Err("the call's arguments could not be checked".into()),
                }
            }
            Callable::External(x) => {
                super::super::external::check_arguments(&x.parameters(), &arguments).map(|()| None)
            }
        };
        let action = match action {
            Ok(a) => a,
            Err(message) => {
                record.observation = format!("Error: {message}");
                return Err(record);
            }
        };
        if let Some(Action::Forget(m)) = &action {
            record.memory = Some(m.id.clone());
        }
        // `remember` runs unasked only for the user's own "remember that …" (not an
        // instruction, not after untrusted text).
        let asked_to_remember = matches!(&action, Some(Action::Remember(m))
            if m.kind != crate::memory::Kind::Instruction && self.user_asked_to_remember);
        // The gate.
        let risk = tool.risk();
        let open_world = tool.open_world();
        let quoted = self.quotes_a_passage(&arguments);
        let escalated_by = if risk >= Risk::Write || open_world {
            self.untrusted.clone().or(quoted)
        } else {
            None
        };
        record.escalated = escalated_by.is_some();
        // A path Hearth does not read on its own (hidden, ignored, a secret place): the
        // user decides, every time, whatever the tier, grants or `--allow-writes`.
        let excluded = action.as_ref().and_then(Action::excluded);
        let decided: Result<DecidedBy, (DecidedBy, Option<String>)> = match risk {
            // A read runs, unless it can send data out after untrusted text came in.
            Risk::Read if escalated_by.is_none() && excluded.is_none() => Ok(DecidedBy::Auto),
            Risk::Write if escalated_by.is_none() && excluded.is_none() && asked_to_remember => {
                Ok(DecidedBy::Auto)
            }
            Risk::Write
                if escalated_by.is_none() && excluded.is_none() && self.settings.allow_writes =>
            {
                Ok(DecidedBy::AllowWrites)
            }
            Risk::Write
                if escalated_by.is_none()
                    && excluded.is_none()
                    && self.is_granted(&tool.grant_target()).await =>
            {
                Ok(DecidedBy::Grant)
            }
            _ => {
                let reason = match (&excluded, risk, &escalated_by) {
                    (Some(why), _, _) => format!(
                        "{why}; Hearth does not read or change it unless you allow this call"
                    ),
                    (None, Risk::Destructive, _) => {
                        "it cannot be undone from here: destructive calls always ask".into()
                    }
                    (None, Risk::Read, Some(by)) => format!(
                        "it can send data off this computer, and untrusted content entered \
                         this turn before the request ({by})"
                    ),
                    (None, _, Some(by)) => format!(
                        "untrusted content entered this turn before the request ({by}); \
                         grants do not cover it"
                    ),
                    (None, _, None) => {
                        "it changes files, and you have not allowed this tool".into()
                    }
                };
                // A temporary chat stores nothing, so it offers no lasting grant. Grants
                // cover writes only (a read asks only when escalated, which no grant
                // covers), and never a path Hearth does not read on its own.
                let grantable = risk == Risk::Write && excluded.is_none();
                let request = ConsentRequest {
                    call_id: call.id.clone(),
                    tool: name.clone(),
                    origin: tool.origin(),
                    risk,
                    arguments: escape_for_display(
                        &serde_json::to_string_pretty(&arguments).unwrap_or_default(),
                    ),
                    preview: action
                        .as_ref()
                        .and_then(Action::preview)
                        .map(|p| escape_for_display(&p)),
                    reason,
                    escalated_by: escalated_by.clone(),
                    offers_always: grantable && self.conversation.is_some(),
                    offers_conversation: grantable,
                };
                // An excluded path's answer is never stored as a grant.
                let stored_as = if excluded.is_some() {
                    Risk::Destructive
                } else {
                    risk
                };
                self.ask(&request, stored_as, &tool.grant_target()).await
            }
        };
        let by = match decided {
            Ok(by) => by,
            Err((by, reason)) => {
                record.decision = Decision::Denied;
                record.decided_by = by;
                record.observation = match by {
                    DecidedBy::PolicyNoTty => format!(
                        "The call was not run: it needs the user's approval and no one could be \
                         asked here (no terminal). Tell the user what you wanted to do ({name}) \
                         so they can do it or approve it in the app."
                    ),
                    DecidedBy::Timeout => {
                        "The call was not run: the user did not answer in time.".into()
                    }
                    _ => format!(
                        "The user denied this call{}. Do not retry it; go on without it or ask \
                         the user.",
                        reason.map(|r| format!(": {r}")).unwrap_or_default()
                    ),
                };
                return Err(record);
            }
        };
        record.decision = Decision::Allowed;
        record.decided_by = by;
        Ok(Ready {
            record,
            tool,
            action,
            env: folders,
            arguments,
        })
    }

    /// Asks the user; a grant answer is kept for the rest of the run (and stored, bound to
    /// `target`, in a saved conversation).
    pub(super) async fn ask(
        &mut self,
        request: &ConsentRequest,
        risk: Risk,
        target: &Target,
    ) -> Result<DecidedBy, (DecidedBy, Option<String>)> {
        let Some(surface) = self.settings.consent.clone() else {
            return Err((DecidedBy::PolicyNoTty, None));
        };
        let asked = Instant::now();
        let answer =
            tokio::time::timeout(self.settings.consent_timeout, surface.ask(request)).await;
        self.consent_wait += asked.elapsed();
        let Ok(answer) = answer else {
            return Err((DecidedBy::Timeout, None));
        };
        match answer {
            Answer::AllowOnce => Ok(DecidedBy::User),
            Answer::AllowConversation | Answer::AllowAlways => {
                if risk != Risk::Destructive {
                    self.granted
                        .insert((target.tool.clone(), target.binding.clone()));
                    let scope = match answer {
                        Answer::AllowAlways => Scope::Always,
                        _ => Scope::Conversation,
                    };
                    // A temporary chat's grant stays in the run; a saved one is stored.
                    if self.conversation.is_some() {
                        let (grants, target, conversation) = (
                            self.grants.clone(),
                            target.clone(),
                            self.conversation.clone(),
                        );
                        let stored = tokio::task::spawn_blocking(move || {
                            grants.add(&target, risk, scope, conversation.as_deref())
                        })
                        .await;
                        if !matches!(stored, Ok(Ok(()))) {
                            tracing::warn!(tool = %request.tool, "a grant could not be stored");
                        }
                    }
                }
                Ok(DecidedBy::User)
            }
            Answer::Deny(reason) => Err((DecidedBy::User, reason)),
            Answer::NoSurface => Err((DecidedBy::PolicyNoTty, None)),
        }
    }

    /// Whether the user granted `target` (its name, origin and binding) in this run, this
    /// conversation, or always.
    pub(super) async fn is_granted(&self, target: &Target) -> bool {
        if self
            .granted
            .contains(&(target.tool.clone(), target.binding.clone()))
        {
            return true;
        }
        let (grants, target, conversation) = (
            self.grants.clone(),
            target.clone(),
            self.conversation.clone(),
        );
        tokio::task::spawn_blocking(move || {
            grants.covers(
                &target.tool,
                &target.origin,
                &target.binding,
                conversation.as_deref(),
            )
        })
        .await
        .ok()
        .and_then(|r| r.ok())
        .unwrap_or(false)
    }

    pub(super) async fn folders(&self) -> crate::Result<Vec<crate::folders::Folder>> {
        let folders = Folders::new(self.store.clone());
        tokio::task::spawn_blocking(move || folders.list())
            .await
            .map_err(|e| crate::Error::InvalidInput(e.to_string()))?
    }

    /// Which passage (if any) a string argument quotes.
    pub(super) fn quotes_a_passage(&self, arguments: &Value) -> Option<String> {
        if self.passages.is_empty() {
            return None;
        }
        let mut strings = Vec::new();
        collect_strings(arguments, &mut strings);
        for s in strings {
            let w = words(s);
            if w.len() < QUOTE_WORDS {
                continue;
            }
            for (i, p) in self.passages.iter().enumerate() {
                if p.len() < QUOTE_WORDS {
                    continue;
                }
                let windows: HashSet<&[String]> = p.windows(QUOTE_WORDS).collect();
                if w.windows(QUOTE_WORDS).any(|win| windows.contains(win)) {
                    return Some(format!(
                        "the call quotes passage [{}] of a watched folder",
                        i + 1
                    ));
                }
            }
        }
        None
    }
}


