/**
 * The mock core's consent queue, with the shell's rules (`tools_cmd.rs` over hearth-core's
 * `ConsentQueue`): `list_consent_requests` lists the open questions oldest first;
 * `answer_consent` answers one (false when it is no longer open); "conversation" counts as
 * "once" for a question that does not offer it (`offers_conversation`), and so does "always"
 * (`offers_always`); both commands refuse
 * every window but the consent window (`forbidden`). `ask(request)` (a test hook) opens a
 * question and emits `consent_changed`; `withdraw(id)` closes one unanswered (a timeout); `answers()` lists what the user answered.
 *
 * The Tools and Activity screens: `list_tools` (the built-in catalog), `list_grants` and
 * `revoke_grant` (`not_found` for an unknown id; a revocation is an audit entry),
 * `list_audit` and `verify_audit` (seeded scenarios start with two grants and a few
 * entries; `tamperAudit()` breaks the chain at entry 2).
 *
 * Scenario `consent-diff` opens an overwrite_file question with a diff at start;
 * `consent-escalated` a granted write that untrusted text preceded; `consent-temporary` a
 * write in a temporary chat (no "always"; "for this chat" lasts for the chat's run only).
 */
import type { AuditEntryDto } from '../lib/bindings/AuditEntryDto';
import type { ConsentRequestDto } from '../lib/bindings/ConsentRequestDto';
import type { GrantDto } from '../lib/bindings/GrantDto';
import type { ToolDto } from '../lib/bindings/ToolDto';
import type { Events } from '../lib/bindings/commands';
import type { Scenario } from './scenarios';
import { fail, type HandlersFor } from './types';

export type ConsentAnswer = { id: number; tool: string; choice: string; reason: string | null };

export const DIFF_REQUEST: Omit<ConsentRequestDto, 'id'> = {
  hash: 'diff_request-digest',
  call_id: 'call_1',
  tool: 'overwrite_file',
  origin: 'built_in',
  risk: 'destructive',
  arguments: '{\n  "path": "/home/ada/Notes/plan.md",\n  "content": "# Plan\\n\\n- ship the beta\\n- write the docs\\n"\n}',
  preview:
    '--- /home/ada/Notes/plan.md\n+++ /home/ada/Notes/plan.md\n@@ -1,4 +1,4 @@\n # Plan\n \n-- ship the alpha\n+- ship the beta\n - write the docs\ncontent hash: sha256:6b1f0c2e9d84a7f35e0c1b2a9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e (the call is refused if the file changes before it runs)',
  reason: 'it cannot be undone from here: destructive calls always ask',
  escalated_by: null,
  offers_always: false,
  offers_conversation: false,
};

export const ESCALATED_REQUEST: Omit<ConsentRequestDto, 'id'> = {
  hash: 'escalated_request-digest',
  call_id: 'call_2',
  tool: 'create_file',
  origin: 'built_in',
  risk: 'write',
  arguments: '{\n  "path": "keys.txt",\n  "content": "<img src=x onerror=alert(1)> \\u{202e}txt.exe"\n}',
  preview: 'creates /home/ada/Notes/keys.txt (41 bytes, 1 lines)',
  reason: 'untrusted content entered this turn before the request (the output of read_file on notes.txt); grants do not cover it',
  escalated_by: 'the output of read_file on notes.txt',
  offers_always: true,
  offers_conversation: true,
};

/** A write asked for in a temporary chat: nothing lasting is offered, "for this chat" is. */
export const TEMPORARY_REQUEST: Omit<ConsentRequestDto, 'id'> = {
  hash: 'temporary_request-digest',
  call_id: 'call_3',
  tool: 'create_file',
  origin: 'built_in',
  risk: 'write',
  arguments: '{\n  "path": "shopping.md",\n  "content": "- oats\\n- lemons\\n"\n}',
  preview: 'creates /home/ada/Notes/shopping.md (18 bytes, 2 lines)',
  reason: 'it changes files: writes ask unless you allowed them (a temporary chat keeps no grant)',
  escalated_by: null,
  offers_always: false,
  offers_conversation: true,
};

const TOOLS: ToolDto[] = [
  ['current_time', 'read', 'Returns the current local date, time and time zone.'],
  ['search_documents', 'read', 'Searches the files in the folders the user watches.'],
  ['list_directory', 'read', 'Lists the files and folders in a folder the user watches.'],
  ['read_file', 'read', 'Returns the text of one file in a folder the user watches.'],
  ['create_file', 'write', 'Creates a new text file in a folder the user made writable.'],
  ['remember', 'write', 'Saves a lasting memory about the user.'],
  ['edit_file', 'destructive', 'Replaces one passage of a text file, after the user approves the diff.'],
  ['overwrite_file', 'destructive', 'Replaces the whole content of an existing text file.'],
  ['move_file', 'destructive', 'Moves or renames a file or folder within the writable watched folders.'],
  ['delete_file', 'destructive', 'Moves a file or folder to the system trash, after the user approves.'],
  ['forget_memory', 'destructive', "Removes one of the user's memories (restorable)."],
].map(([name, risk, description]) => ({ name, risk, description, origin: 'built_in', risk_source: 'built_in', enabled: true }));

const DAY = 24 * 60 * 60 * 1000;

export function createConsentMock(options: {
  seeded?: boolean;
  scenario: Scenario;
  windowLabel: string;
  emit: <K extends keyof Events>(event: K, payload: Events[K]) => Promise<void>;
}) {
  const open: ConsentRequestDto[] = [];
  const answered: ConsentAnswer[] = [];
  let next = 1;

  const queue = (request: Omit<ConsentRequestDto, 'id'>): number => {
    const id = next++;
    open.push({ ...request, id });
    return id;
  };
  const ask = (request: Omit<ConsentRequestDto, 'id'>): number => {
    const id = queue(request);
    void options.emit('consent_changed', open.length);
    return id;
  };
  // The question timed out or its turn stopped: it is no longer open.
  const withdraw = (id: number): void => {
    const at = open.findIndex((r) => r.id === id);
    if (at >= 0) open.splice(at, 1);
    void options.emit('consent_changed', open.length);
  };
  // Open at start (before the IPC mock exists: no event, the window lists them on load).
  if (options.scenario === 'consent-diff') queue(DIFF_REQUEST);
  if (options.scenario === 'consent-escalated') queue(ESCALATED_REQUEST);
  if (options.scenario === 'consent-temporary') queue(TEMPORARY_REQUEST);

  const now = Date.now();
  let grants: GrantDto[] = options.seeded
    ? [
        { id: 2, tool: 'create_file', origin: 'built_in', scope: 'always', conversation_id: null, created_at: now - 2 * DAY },
        { id: 1, tool: 'remember', origin: 'built_in', scope: 'conversation', conversation_id: 'c-lisbon', created_at: now - 5 * DAY },
      ]
    : [];
  const entry = (e: Partial<AuditEntryDto> & { kind: string }): AuditEntryDto => ({
    seq: 0, tool: null, risk: null, decision: null, decided_by: null, op: null, result_status: null,
    escalated: false, time: now, payload_redacted: false, ...e,
  });
  const audit: AuditEntryDto[] = options.seeded
    ? [
        entry({ kind: 'grant', tool: 'remember', risk: 'write', op: 'grant', time: now - 5 * DAY }),
        entry({ kind: 'tool_call', tool: 'read_file', risk: 'read', decision: 'allowed', decided_by: 'auto', result_status: 'ok', time: now - 3 * DAY }),
        entry({ kind: 'tool_call', tool: 'create_file', risk: 'write', decision: 'denied', decided_by: 'user', result_status: 'not_run', escalated: true, time: now - 3 * DAY }),
        entry({ kind: 'memory', op: 'add', time: now - 3 * DAY, payload_redacted: true }),
        entry({ kind: 'grant', tool: 'create_file', risk: 'write', op: 'grant', time: now - 2 * DAY }),
        entry({ kind: 'tool_call', tool: 'delete_file', risk: 'destructive', decision: 'allowed', decided_by: 'user', result_status: 'ok', time: now - DAY }),
      ].map((e, i) => ({ ...e, seq: i + 1 }))
    : [];
  let brokenAt: number | null = null;

  const onlyConsent = (): void => {
    if (options.windowLabel !== 'consent') fail('forbidden', "only the consent window may answer a tool's request");
  };

  const handlers: HandlersFor<
    'list_consent_requests' | 'answer_consent' | 'list_tools' | 'list_grants' | 'revoke_grant' | 'list_audit' | 'verify_audit'
  > = {
    list_tools: () => TOOLS.map((t) => ({ ...t })),
    list_grants: () => grants.map((g) => ({ ...g })),
    revoke_grant: ({ id }) => {
      const gone = grants.find((g) => g.id === id);
      if (!gone) fail('not_found', `there is no grant ${id}`);
      grants = grants.filter((g) => g.id !== id);
      audit.push(entry({ kind: 'grant', tool: gone?.tool ?? null, op: 'revoke', seq: audit.length + 1 }));
      return null;
    },
    list_audit: () => audit.map((e) => ({ ...e })),
    verify_audit: () =>
      brokenAt === null
        ? { ok: true, entries: audit.length, first_bad_seq: null, problem: null }
        : {
            ok: false,
            entries: brokenAt - 1,
            first_bad_seq: brokenAt,
            problem: `entry ${brokenAt} does not match its hash (it or the one before was changed)`,
          },
    list_consent_requests: () => {
      onlyConsent();
      return open.map((r) => ({ ...r }));
    },
    answer_consent: ({ id, hash, choice, reason }) => {
      onlyConsent();
      if (!['once', 'conversation', 'always', 'deny'].includes(choice)) {
        fail('invalid_input', `answer_consent: unknown choice "${choice}"`);
      }
      // The core answers only the exact question shown (its digest).
      const at = open.findIndex((r) => r.id === id && r.hash === hash);
      if (at < 0) return false;
      const [request] = open.splice(at, 1);
      const offered =
        (choice !== 'conversation' || request.offers_conversation) && (choice !== 'always' || request.offers_always);
      answered.push({
        id,
        tool: request.tool,
        choice: offered ? choice : 'once',
        reason: choice === 'deny' ? reason : null,
      });
      void options.emit('consent_changed', open.length);
      return true;
    },
  };

  return {
    handlers,
    tamperAudit: (): void => {
      brokenAt = 2;
    },
    ask,
    withdraw,
    answers: (): ConsentAnswer[] => answered.map((a) => ({ ...a })),
  };
}
