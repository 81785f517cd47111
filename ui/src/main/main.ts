import '../styles/tokens.css';
import '../styles/base.css';
import '../styles/markdown.css';
import { mount } from 'svelte';
import { initTheme } from '../lib/theme.svelte';
import App from './App.svelte';

initTheme();

async function start(): Promise<void> {
  // Browser tests only: a fake core. The condition is static, so production builds drop
  // this branch and the mocks module with it.
  if (import.meta.env.MODE === 'mock') {
    const { installMocks, scenarioFromLocation } = await import('../mocks/index');
    installMocks(scenarioFromLocation(), 'main');
  }
  const target = document.getElementById('app');
  if (!target) throw new Error('Hearth: #app is missing from index.html');
  mount(App, { target });
}

void start();
