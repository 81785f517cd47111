-- Consent that cannot be widened or outlived (issue 31).

-- A call whose output was untrusted text (a file's content, a folder listing, search
-- passages, anything an MCP server returned): while its conversation holds it, later turns
-- escalate their writes too. Existing rows are marked by the same rule the engine applies.
ALTER TABLE tool_calls ADD COLUMN untrusted INTEGER NOT NULL DEFAULT 0;
UPDATE tool_calls SET untrusted = 1
 WHERE decision = 'allowed' AND result_status = 'ok'
   AND (origin <> 'built_in' OR tool IN ('read_file', 'list_directory', 'search_documents'));

-- An MCP server's annotations are claims. The user's decision to take a tool's claim as
-- its tier is bound to the definition it was made on (its hash): a changed definition
-- drops it. Without it the tool is destructive. Tools approved before this version keep
-- working, as destructive, shown "labels not confirmed" until the user confirms.
ALTER TABLE mcp_tools ADD COLUMN labels_accepted_hash TEXT;
-- The user's own tier for a tool is bound the same way.
ALTER TABLE mcp_tools ADD COLUMN risk_override_hash TEXT;
UPDATE mcp_tools SET risk_override_hash = hash WHERE risk_override IS NOT NULL;

-- A grant names what was granted: for an MCP tool its server's identity (command and
-- arguments, or URL) and its pinned definition, as `sha256(identity):definition hash`;
-- '' for a built-in. A grant of an MCP tool made before this version named neither, so it
-- ends here (the tool asks again).
ALTER TABLE tool_grants ADD COLUMN binding TEXT NOT NULL DEFAULT '';
-- What it covers, in words (`hearth grants list`).
ALTER TABLE tool_grants ADD COLUMN covers TEXT NOT NULL DEFAULT '';
DELETE FROM tool_grants WHERE origin <> 'built_in';
DROP INDEX tool_grants_unique;
CREATE UNIQUE INDEX tool_grants_unique
    ON tool_grants (tool, origin, binding, scope, coalesce(conversation_id, ''));
