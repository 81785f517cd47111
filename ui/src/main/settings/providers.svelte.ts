/**
 * Settings → Providers state shared by its sections (the provider list, the add form and the
 * model slots): presets, configured providers, and the last "Test connection" result of each
 * provider (which also lists its models for the slot pickers). Lives for the window's
 * lifetime, so a test isn't repeated on every visit; the lists are reloaded on each visit.
 */
import { call, toErrorDto, type ErrorDto } from '../../lib/ipc';
import type { ModelDto } from '../../lib/bindings/ModelDto';
import type { PresetDto } from '../../lib/bindings/PresetDto';
import type { ProviderDto } from '../../lib/bindings/ProviderDto';
import type { ProviderTestDto } from '../../lib/bindings/ProviderTestDto';

export type TestState =
  | { state: 'testing' }
  | { state: 'done'; result: ProviderTestDto }
  | { state: 'error'; error: ErrorDto };

class ProviderStore {
  presets = $state<PresetDto[]>([]);
  providers = $state<ProviderDto[]>([]);
  loadError = $state<ErrorDto | null>(null);
  loaded = $state(false);
  tests = $state<Record<string, TestState>>({});
  /** Bumped when a provider is removed (the core may have cleared model slots that used it). */
  removals = $state(0);

  async load(): Promise<void> {
    try {
      const [presets, providers] = await Promise.all([call('list_presets'), call('list_providers')]);
      this.presets = presets;
      this.providers = providers;
      this.loadError = null;
      for (const name of Object.keys(this.tests)) {
        if (!providers.some((p) => p.name === name)) delete this.tests[name];
      }
    } catch (reason) {
      this.loadError = toErrorDto(reason);
    } finally {
      this.loaded = true;
    }
  }

  preset(id: string): PresetDto | undefined {
    return this.presets.find((p) => p.id === id);
  }

  /** Test a provider's connection (also lists its models). */
  async test(name: string): Promise<TestState> {
    this.tests[name] = { state: 'testing' };
    let next: TestState;
    try {
      next = { state: 'done', result: await call('test_provider', { name }) };
    } catch (reason) {
      next = { state: 'error', error: toErrorDto(reason) };
    }
    if (this.providers.some((p) => p.name === name)) this.tests[name] = next;
    return next;
  }

  /** Test once, unless already tested or being tested. */
  ensureTested(name: string): void {
    if (this.tests[name] === undefined && this.providers.some((p) => p.name === name)) void this.test(name);
  }

  /** The provider's models from its last successful test; null if unknown (untested, testing or failed). */
  models(name: string): ModelDto[] | null {
    const test = this.tests[name];
    return test?.state === 'done' && test.result.ok ? test.result.models : null;
  }

  added(provider: ProviderDto): void {
    this.providers = [...this.providers.filter((p) => p.name !== provider.name), provider];
  }

  removed(name: string): void {
    this.providers = this.providers.filter((p) => p.name !== name);
    delete this.tests[name];
    this.removals += 1;
  }
}

export const providerStore = new ProviderStore();

/** Where a provider's key is kept, in words. */
export function keyLocation(location: string): string {
  switch (location) {
    case 'keyring':
      return 'Key in the system keyring';
    case 'database':
      return 'Key in the encrypted database';
    case 'none':
      return 'No key';
    default:
      return `Key: ${location}`;
  }
}

/** "ok · 3 models" style summary of a finished test. */
export function modelCount(n: number): string {
  return n === 1 ? '1 model' : `${n} models`;
}
