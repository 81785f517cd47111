/** The mock core's scenarios (`?scenario=` in the page's address); see ./index.ts. */
export const SCENARIOS = [
  'ok',
  'shortcut-taken',
  'startup-error',
  'key-file',
  'no-provider',
  'chat-fails',
  'markdown',
  'fallback',
  'env-provider',
  'memory-empty',
  'memory-near-budget',
  'memory-off',
  'consent-diff',
  'consent-escalated',
  'consent-temporary',
  'tool-calls',
  'cascade',
  'over-budget',
  'saved-reply',
  'rate-limited',
] as const;
export type Scenario = (typeof SCENARIOS)[number];

export function scenarioFromLocation(location: Location = window.location): Scenario {
  const requested = new URLSearchParams(location.search).get('scenario') ?? 'ok';
  if ((SCENARIOS as readonly string[]).includes(requested)) return requested as Scenario;
  console.warn(`Hearth mocks: unknown scenario "${requested}", using "ok".`);
  return 'ok';
}

/** Scenarios with the seeded conversations (and, unless `memory-empty`, memories). */
export const seededScenario = (scenario: Scenario): boolean =>
  ['ok', 'markdown', 'memory-empty', 'memory-near-budget', 'memory-off', 'tool-calls'].includes(scenario);
