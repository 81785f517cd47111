/**
 * Model answers as Markdown, rendered safely.
 *
 * Pipeline: marked (GFM) → our renderer → DOMPurify (allow-list) → a small DOM pass.
 *
 * - Raw HTML in the Markdown is never interpreted: it is shown as text. A model that writes
 *   `<img onerror=…>` (or is tricked into it) gets its tags displayed, not run.
 * - Images are never loaded (a remote image is a classic way to leak a conversation to a
 *   server): they become their alt text.
 * - Links keep only http(s)/mailto targets; the view that shows them intercepts clicks
 *   (nothing opens inside the app window).
 * - DOMPurify runs on everything anyway, with an allow-list of tags and attributes and no
 *   `style` attributes (the CSP forbids them), as the second line of defence.
 * - Headings are shifted to fit the page's outline (see `headingBase`).
 * - Fenced code is highlighted with highlight.js (a few common languages only) and gets a
 *   header with its language and a Copy button (`button.code-copy`; the view wires it up).
 */
import DOMPurify from 'dompurify';
import { Marked, type Token, type Tokens } from 'marked';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import markdown from 'highlight.js/lib/languages/markdown';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import shell from 'highlight.js/lib/languages/shell';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';

const LANGUAGES = {
  bash,
  c,
  cpp,
  css,
  diff,
  go,
  java,
  javascript,
  json,
  markdown,
  python,
  rust,
  shell,
  sql,
  typescript,
  xml,
  yaml,
};
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);
hljs.registerAliases(['sh', 'zsh', 'console'], { languageName: 'bash' });
hljs.registerAliases(['html', 'svg'], { languageName: 'xml' });
hljs.configure({ ignoreUnescapedHTML: true });

/** Code longer than this is shown without highlighting (keeps streaming cheap). */
const HIGHLIGHT_LIMIT = 60_000;

const ALLOWED_TAGS = [
  'a', 'blockquote', 'br', 'button', 'code', 'del', 'div', 'em', 'h2', 'h3', 'h4', 'h5', 'h6',
  'hr', 'input', 'li', 'ol', 'p', 'pre', 'span', 'strong', 'table', 'tbody', 'td', 'th', 'thead',
  'tr', 'ul',
];
const ALLOWED_ATTR = [
  'align', 'aria-hidden', 'aria-label', 'checked', 'class', 'disabled', 'href', 'start', 'title',
  'type',
];
const SAFE_URL = /^(?:https?:|mailto:)/i;

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** A language name from a fence info string (`ts title="x"` → `ts`), safe to show and use in a class. */
function fenceLanguage(lang: string | undefined): string {
  const first = (lang ?? '').trim().split(/\s+/)[0] ?? '';
  return first.replace(/[^\w+#.-]/g, '').slice(0, 32);
}

function highlighted(code: string, language: string): string {
  if (language !== '' && code.length <= HIGHLIGHT_LIMIT && hljs.getLanguage(language)) {
    try {
      return hljs.highlight(code, { language, ignoreIllegals: true }).value;
    } catch {
      // fall through to plain text
    }
  }
  return escapeHtml(code);
}

/** Heading depth (1–6) → the level it is rendered at, for the answer being rendered. */
let headingLevels = new Map<number, number>();

const md = new Marked({ gfm: true, breaks: false, async: false });
md.use({
  renderer: {
    html({ text, block }: Tokens.HTML | Tokens.Tag): string {
      return block ? `<p class="md-raw">${escapeHtml(text.replace(/\n+$/, ''))}</p>\n` : escapeHtml(text);
    },
    heading({ tokens, depth }: Tokens.Heading): string {
      const level = headingLevels.get(depth) ?? 6;
      return `<h${level} class="md-heading">${this.parser.parseInline(tokens)}</h${level}>\n`;
    },
    code({ text, lang }: Tokens.Code): string {
      const language = fenceLanguage(lang);
      const known = language !== '' && hljs.getLanguage(language) !== undefined;
      const label = language === '' ? 'Code' : language;
      const cls = known ? `hljs language-${language}` : 'hljs';
      const copyLabel = language === '' ? 'Copy code' : `Copy ${language} code`;
      return (
        `<div class="code-block"><div class="code-head"><span class="code-lang">${escapeHtml(label)}</span>` +
        `<button type="button" class="code-copy" aria-label="${escapeHtml(copyLabel)}">Copy</button></div>` +
        `<pre><code class="${escapeHtml(cls)}">${highlighted(text.replace(/\n$/, ''), language)}</code></pre></div>\n`
      );
    },
    link({ href, title, tokens }: Tokens.Link): string {
      const text = this.parser.parseInline(tokens);
      if (!SAFE_URL.test(href.trim())) return text;
      const label = text.trim() === '' ? escapeHtml(href) : text;
      const tip = title ? escapeHtml(title) : escapeHtml(href);
      return `<a href="${escapeHtml(href.trim())}" title="${tip}">${label}</a>`;
    },
    image({ text }: Tokens.Image): string {
      return text.trim() === '' ? '' : `<span class="md-image">[${escapeHtml(text)}]</span>`;
    },
  },
});

function headingDepths(tokens: Token[]): number[] {
  const depths = new Set<number>();
  md.walkTokens(tokens, (token) => {
    if (token.type === 'heading') depths.add((token as Tokens.Heading).depth);
  });
  return [...depths].sort((a, b) => a - b);
}

let purifierReady = false;

function purifier(): typeof DOMPurify {
  if (!purifierReady) {
    DOMPurify.addHook('afterSanitizeAttributes', (node) => {
      if (node.nodeName === 'A') {
        const href = node.getAttribute('href') ?? '';
        if (!SAFE_URL.test(href)) node.removeAttribute('href');
        node.setAttribute('rel', 'noopener noreferrer nofollow');
        node.setAttribute('target', '_blank');
      }
    });
    purifierReady = true;
  }
  return DOMPurify;
}

export type RenderOptions = {
  /** The level the answer's biggest heading gets (3 under a pane's <h2>, 2 under a window's <h1>). */
  headingBase?: number;
};

/** Markdown → sanitized HTML, ready for `{@html}`. */
export function renderMarkdown(source: string, options: RenderOptions = {}): string {
  const base = options.headingBase ?? 3;
  const tokens = md.lexer(source);
  // The answer's headings, whatever levels the model used, become consecutive levels from `base`.
  headingLevels = new Map(headingDepths(tokens).map((depth, i) => [depth, Math.min(base + i, 6)]));
  const raw = md.parser(tokens);
  const fragment = purifier().sanitize(raw, {
    ALLOWED_TAGS,
    ALLOWED_ATTR: [...ALLOWED_ATTR, 'rel', 'target'],
    ALLOW_DATA_ATTR: false,
    ALLOW_ARIA_ATTR: false,
    // Only href holds a URL; the other attributes' values are plain words.
    ALLOWED_URI_REGEXP: SAFE_URL,
    ADD_URI_SAFE_ATTR: ['align', 'aria-hidden', 'aria-label', 'checked', 'start', 'type'],
    RETURN_DOM_FRAGMENT: true,
  });
  // Scrollable blocks must be reachable by keyboard; wide tables scroll inside a wrapper.
  for (const pre of fragment.querySelectorAll('pre')) pre.setAttribute('tabindex', '0');
  for (const table of fragment.querySelectorAll('table')) {
    const wrap = document.createElement('div');
    wrap.className = 'table-wrap';
    wrap.setAttribute('tabindex', '0');
    table.replaceWith(wrap);
    wrap.append(table);
  }
  for (const box of fragment.querySelectorAll('input')) {
    if (box.getAttribute('type') !== 'checkbox') {
      box.remove();
      continue;
    }
    box.setAttribute('disabled', '');
    box.setAttribute('aria-label', box.hasAttribute('checked') ? 'Done' : 'Not done');
  }
  const holder = document.createElement('div');
  holder.append(fragment);
  return holder.innerHTML;
}
