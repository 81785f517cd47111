import '../styles/tokens.css';
import '../styles/base.css';
import { mount } from 'svelte';
import { initTheme } from '../lib/theme.svelte';
import Consent from './Consent.svelte';

initTheme();

async function start(): Promise<void> {
  if (import.meta.env.MODE === 'mock') {
    const { installMocks, scenarioFromLocation } = await import('../mocks/index');
    installMocks(scenarioFromLocation(), 'consent');
  }
  const target = document.getElementById('app');
  if (!target) throw new Error('Hearth: #app is missing from consent.html');
  mount(Consent, { target });
}

void start();
