/** Words for the Folders screen: states and the fixed reasons a file was skipped or failed. */
import type { FolderDto } from '../../lib/bindings/FolderDto';

const STATE_LABEL: Record<string, string> = {
  indexing: 'Reading',
  watching: 'Up to date',
  idle: 'Up to date',
  paused: 'Paused',
  unavailable: 'Unavailable',
};

/** The short state shown on a folder's card ("Checked every 30 s" with the engine's number). */
export function stateLabel(folder: FolderDto): string {
  if (folder.state === 'polling') return `Checked every ${folder.poll_every_s} s`;
  return STATE_LABEL[folder.state] ?? folder.state;
}

/** Each `reason_code` of hearth-core's `folders::Reason`, for people. */
export const REASON_LABEL: Record<string, string> = {
  too_large: 'Too large',
  binary: 'Not text',
  encrypted: 'Encrypted',
  corrupt: 'Damaged',
  unreadable: 'No permission',
  symlink_loop: 'Link loop',
  symlink_outside: 'Link leads outside the folder',
  not_regular: 'Not a regular file',
  timeout: 'Took too long to read',
  unsupported: 'Unsupported type',
  no_text: 'No text in it',
  empty: 'Empty',
};

export function reasonLabel(code: string | null): string {
  return code === null ? '' : (REASON_LABEL[code] ?? code);
}

/** "Reading 4 of 12 files", "Up to date", … */
export function stateLine(folder: FolderDto): string {
  switch (folder.state) {
    case 'indexing': {
      const total = folder.indexed + folder.pending + folder.failed + folder.skipped;
      return `Reading: ${total - folder.pending} of ${total} files`;
    }
    case 'paused':
      return folder.pending > 0 ? `Paused with ${folder.pending} ${folder.pending === 1 ? 'file' : 'files'} still to read` : 'Paused: changes are not read until you resume';
    case 'unavailable':
      return 'The folder is not there (an unplugged drive?). What Hearth read is kept until it comes back or you remove it.';
    case 'watching':
      return 'Up to date: changes are read as they happen';
    case 'polling':
      return `Up to date. The system would not let Hearth watch this folder, so it is checked for changes every ${folder.poll_every_s} seconds.`;
    default:
      return 'Up to date';
  }
}

/** "3 KB", "4.6 MB". */
export function formatSize(bytes: number | null): string {
  if (bytes === null) return '';
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}
