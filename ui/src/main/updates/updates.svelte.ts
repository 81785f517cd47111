/**
 * Updates, shared by the sidebar's card (the first-run question, the offer) and Settings →
 * About: the user's choice, the offer the last check found, and an install in progress.
 * Nothing is installed without the user's click; the core verifies the download's
 * signature before anything is replaced.
 */
import { call, subscribe, toErrorDto, type ErrorDto } from '../../lib/ipc';
import type { UpdatesDto } from '../../lib/bindings/UpdatesDto';

class UpdatesStore {
  state = $state<UpdatesDto | null>(null);
  loadError = $state<ErrorDto | null>(null);
  /** A check the user started is running. */
  checking = $state(false);
  /** The last check the user started found nothing (shown in About). */
  upToDate = $state(false);
  checkError = $state<ErrorDto | null>(null);
  installing = $state(false);
  installError = $state<ErrorDto | null>(null);
  /** The offer is set aside until the next start ("Later"). */
  dismissed = $state(false);
  private listening = false;

  offer = $derived(this.state?.offer ?? null);

  private listen(): void {
    if (this.listening) return;
    this.listening = true;
    subscribe('update_available', (offer) => {
      if (this.state) this.state = { ...this.state, offer };
      this.dismissed = false;
    });
  }

  async load(): Promise<void> {
    this.listen();
    try {
      this.state = await call('get_updates');
      this.loadError = null;
    } catch (reason) {
      this.loadError = toErrorDto(reason);
    }
  }

  /** The first-run answer or the Settings switch. */
  async setCheck(on: boolean): Promise<void> {
    try {
      this.state = await call('set_update_check', { on });
      this.loadError = null;
    } catch (reason) {
      this.loadError = toErrorDto(reason);
    }
  }

  /** "Check now". */
  async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    this.checkError = null;
    this.upToDate = false;
    try {
      this.state = await call('check_for_update');
      this.upToDate = this.state.offer === null;
      this.dismissed = false;
    } catch (reason) {
      this.checkError = toErrorDto(reason);
    } finally {
      this.checking = false;
    }
  }

  /** The user's click on "Install": download, verify, install. */
  async install(): Promise<void> {
    if (this.installing) return;
    this.installing = true;
    this.installError = null;
    try {
      this.state = await call('install_update');
    } catch (reason) {
      this.installError = toErrorDto(reason);
      // The refused offer is gone from the core; check again for a good one.
      if (this.state) this.state = { ...this.state, offer: null };
    } finally {
      this.installing = false;
    }
  }

  async restart(): Promise<void> {
    try {
      await call('restart_app');
    } catch (reason) {
      this.installError = toErrorDto(reason);
    }
  }
}

export const updates = new UpdatesStore();
