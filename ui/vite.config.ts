import { resolve } from 'node:path';
import { defineConfig, type Plugin } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

const root = import.meta.dirname;

/**
 * highlight.js and marked put links to their GitHub pages in a few warning and error
 * messages. They are never loaded, but the bundle must not name remote hosts at all
 * (tests/bundle.test.mjs): drop the scheme so they stay readable text.
 */
function unlinkDependencyDocs(): Plugin {
  return {
    name: 'hearth:unlink-dependency-docs',
    transform(code, id) {
      if (!/[\\/]node_modules[\\/](?:highlight\.js|marked)[\\/]/.test(id) || !code.includes('https://github.com/')) return null;
      return { code: code.replaceAll('https://github.com/', 'github.com/'), map: null };
    },
  };
}

// Three HTML entry points: the main window, the quick-prompt window and the consent window.
// `vite build` -> dist/ (what Tauri ships); `vite build --mode mock --outDir dist-mock`
// -> the same app with a fake core, for browser tests.
export default defineConfig(({ mode }) => ({
  plugins: [svelte({ emitCss: true }), unlinkDependencyDocs()],
  // Relative asset URLs: the bundle is served by Tauri from its own origin.
  base: './',
  clearScreen: false,
  server: {
    port: 1420,
    strictPort: true,
    host: '127.0.0.1',
  },
  envPrefix: ['VITE_', 'TAURI_ENV_'],
  build: {
    outDir: mode === 'mock' ? 'dist-mock' : 'dist',
    emptyOutDir: true,
    // Never inline assets as data: URLs into JS/CSS; keep everything a real file.
    assetsInlineLimit: 0,
    sourcemap: mode === 'mock',
    cssCodeSplit: true,
    rolldownOptions: {
      input: {
        main: resolve(root, 'index.html'),
        quick: resolve(root, 'quick.html'),
        consent: resolve(root, 'consent.html'),
      },
    },
  },
}));
