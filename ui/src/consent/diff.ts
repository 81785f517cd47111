/** One line of a preview, classified so a unified diff can be coloured. */
export type PreviewLine = { kind: 'add' | 'del' | 'hunk' | 'file' | 'meta' | 'text'; text: string };

/** Whether `preview` is a unified diff (what edit_file and overwrite_file show). */
export function isDiff(preview: string): boolean {
  return /^--- .*\n\+\+\+ .*\n@@ /m.test(preview);
}

/** The preview's lines, each with its kind (plain text when it is not a diff). */
export function previewLines(preview: string): PreviewLine[] {
  const diff = isDiff(preview);
  return preview.split('\n').map((text) => {
    if (!diff) return { kind: 'text', text };
    if (text.startsWith('+++ ') || text.startsWith('--- ')) return { kind: 'file', text };
    if (text.startsWith('@@')) return { kind: 'hunk', text };
    if (text.startsWith('+')) return { kind: 'add', text };
    if (text.startsWith('-')) return { kind: 'del', text };
    if (text.startsWith('content hash:')) return { kind: 'meta', text };
    return { kind: 'text', text };
  });
}
