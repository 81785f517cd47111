/**
 * The mock core's updates and "Open at login" (Settings → About, the sidebar's update card).
 * `?updates=` picks the state at start:
 *   answered (default)  the first-run question was answered yes; no update
 *   ask                 the first-run question is open
 *   offer               Hearth 0.2.0 is offered; installing it works
 *   bad-signature       Hearth 0.2.0 is offered; its download does not verify
 *   source              a build from source: no update checks
 * `check_for_update` finds the offer when the state has one.
 */
import type { UpdateOfferDto } from '../lib/bindings/UpdateOfferDto';
import type { UpdatesDto } from '../lib/bindings/UpdatesDto';
import { fail, sleep, type HandlersFor } from './types';

export type UpdatesState = 'answered' | 'ask' | 'offer' | 'bad-signature' | 'source';

export function updatesStateFromLocation(): UpdatesState {
  const value = new URLSearchParams(window.location.search).get('updates');
  return value === 'ask' || value === 'offer' || value === 'bad-signature' || value === 'source' ? value : 'answered';
}

export const MOCK_OFFER: UpdateOfferDto = {
  version: '0.2.0',
  current_version: '0.1.0',
  notes: 'Faster answers from the built-in model.\n<b>Not bold</b>: notes are shown as text.',
  date: '2026-12-01T10:00:00Z',
  can_install: true,
  download_page: 'https://github.com/hearth-app/hearth/releases/latest',
};

type UpdatesCommand =
  | 'get_updates'
  | 'set_update_check'
  | 'check_for_update'
  | 'install_update'
  | 'restart_app'
  | 'open_download_page'
  | 'get_open_at_login'
  | 'set_open_at_login';

export function createUpdatesMock(start: UpdatesState): { handlers: HandlersFor<UpdatesCommand> } {
  const offered = start === 'offer' || start === 'bad-signature';
  let state: UpdatesDto = {
    check: start === 'ask' ? null : start === 'source' ? null : true,
    last_checked_at: offered ? Date.now() - 60_000 : null,
    current_version: '0.1.0',
    can_check: start !== 'source',
    installer: start === 'source' ? null : 'AppImage',
    download_page: MOCK_OFFER.download_page,
    offer: offered ? structuredClone(MOCK_OFFER) : null,
    installed: null,
  };
  let openAtLogin = false;

  const handlers: HandlersFor<UpdatesCommand> = {
    get_updates: () => structuredClone(state),
    set_update_check: ({ on }) => {
      state = { ...state, check: on };
      return structuredClone(state);
    },
    check_for_update: async () => {
      if (!state.can_check) fail('update_unsupported', "This copy of Hearth was built from source, so it doesn't update itself.");
      await sleep(150);
      state = { ...state, last_checked_at: Date.now(), offer: offered ? structuredClone(MOCK_OFFER) : null };
      return structuredClone(state);
    },
    install_update: async () => {
      if (state.offer === null) return fail('not_found', 'There is no update to install; check again.');
      await sleep(300);
      if (start === 'bad-signature') {
        state = { ...state, offer: null };
        return fail(
          'update_signature',
          "The download is not signed with Hearth's release key, so it was not installed. Nothing on this computer was changed.",
        );
      }
      state = { ...state, installed: state.offer.version, offer: null };
      return structuredClone(state);
    },
    restart_app: () => null,
    open_download_page: () => null,
    get_open_at_login: () => openAtLogin,
    set_open_at_login: ({ on }) => {
      openAtLogin = on;
      return openAtLogin;
    },
  };
  return { handlers };
}
