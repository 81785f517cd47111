import { vitePreprocess } from '@sveltejs/vite-plugin-svelte';

/** @type {import('@sveltejs/vite-plugin-svelte').SvelteConfig} */
export default {
  preprocess: vitePreprocess(),
  compilerOptions: {
    runes: true,
    // Component CSS goes to .css files (emitted by the Vite plugin), never into
    // <style> tags or style attributes, so the strict CSP `style-src 'self'` holds.
    css: 'external',
  },
};
