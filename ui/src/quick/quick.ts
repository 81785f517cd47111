import '../styles/tokens.css';
import '../styles/base.css';
import '../styles/markdown.css';
import { mount } from 'svelte';
import { initTheme } from '../lib/theme.svelte';
import Quick from './Quick.svelte';

initTheme();

async function start(): Promise<void> {
  if (import.meta.env.MODE === 'mock') {
    const { installMocks, scenarioFromLocation } = await import('../mocks/index');
    installMocks(scenarioFromLocation(), 'quick');
  }
  const target = document.getElementById('app');
  if (!target) throw new Error('Hearth: #app is missing from quick.html');
  mount(Quick, { target });
}

void start();
