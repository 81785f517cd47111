/**
 * The mock core's consent queue, with the shell's rules (`tools_cmd.rs` over hearth-core's
 * `ConsentQueue`): `list_consent_requests` lists the open questions oldest first;
 * `answer_consent` answers one (false when it is no longer open); "conversation" and
 * "always" count as "once" for a question that does not offer them; both commands refuse
 * every window but the consent window (`forbidden`). `ask(request)` (a test hook) opens a
 * question and emits `consent_changed`; `answers()` lists what the user answered.
 *
 * Scenario `consent-diff` opens an overwrite_file question with a diff at start;
 * `consent-escalated` a granted write that untrusted text preceded.
 */
import type { ConsentRequestDto } from '../lib/bindings/ConsentRequestDto';
import type { Events } from '../lib/bindings/commands';
import type { Scenario } from './scenarios';
import { fail, type HandlersFor } from './types';

export type ConsentAnswer = { id: number; tool: string; choice: string; reason: string | null };

export const DIFF_REQUEST: Omit<ConsentRequestDto, 'id'> = {
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
};

export const ESCALATED_REQUEST: Omit<ConsentRequestDto, 'id'> = {
  call_id: 'call_2',
  tool: 'create_file',
  origin: 'built_in',
  risk: 'write',
  arguments: '{\n  "path": "keys.txt",\n  "content": "<img src=x onerror=alert(1)> \\u{202e}txt.exe"\n}',
  preview: 'creates /home/ada/Notes/keys.txt (41 bytes, 1 lines)',
  reason: 'untrusted content entered this turn before the request (the output of read_file on notes.txt); grants do not cover it',
  escalated_by: 'the output of read_file on notes.txt',
  offers_always: true,
};

export function createConsentMock(options: {
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
  // Open at start (before the IPC mock exists: no event, the window lists them on load).
  if (options.scenario === 'consent-diff') queue(DIFF_REQUEST);
  if (options.scenario === 'consent-escalated') queue(ESCALATED_REQUEST);

  const onlyConsent = (): void => {
    if (options.windowLabel !== 'consent') fail('forbidden', "only the consent window may answer a tool's request");
  };

  const handlers: HandlersFor<'list_consent_requests' | 'answer_consent'> = {
    list_consent_requests: () => {
      onlyConsent();
      return open.map((r) => ({ ...r }));
    },
    answer_consent: ({ id, choice, reason }) => {
      onlyConsent();
      if (!['once', 'conversation', 'always', 'deny'].includes(choice)) {
        fail('invalid_input', `answer_consent: unknown choice "${choice}"`);
      }
      const at = open.findIndex((r) => r.id === id);
      if (at < 0) return false;
      const [request] = open.splice(at, 1);
      const lasting = choice === 'conversation' || choice === 'always';
      answered.push({
        id,
        tool: request.tool,
        choice: lasting && !request.offers_always ? 'once' : choice,
        reason: choice === 'deny' ? reason : null,
      });
      void options.emit('consent_changed', open.length);
      return true;
    },
  };

  return {
    handlers,
    ask,
    answers: (): ConsentAnswer[] => answered.map((a) => ({ ...a })),
  };
}
