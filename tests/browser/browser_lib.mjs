// Shared by the browser test and bench/dashboard_bench.sh: Debian's Chromium, headless, driven
// by playwright-core, with a fresh profile in a temporary directory (removed by close()).
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const CHROMIUM = process.env.PHALANX_CHROMIUM || '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

// A browser context with its own --user-data-dir; `viewport` {width, height}.
export async function launch(viewport = { width: 1400, height: 1000 }) {
  const profile = mkdtempSync(join(tmpdir(), 'phx-chromium-'));
  // launchPersistentContext passes `profile` as --user-data-dir.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: true, args: FLAGS, viewport,
  });
  const close = async () => {
    await context.close().catch(() => {});
    rmSync(profile, { recursive: true, force: true });
  };
  return { context, close };
}

// Collects console errors, page errors and failed requests of `page`.
export function watchErrors(page) {
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push('console: ' + m.text()); });
  page.on('pageerror', (e) => errors.push('page error: ' + e.message));
  page.on('requestfailed', (r) => {
    // The event stream is cut when the page goes away; anything else is a real failure.
    if (!r.url().endsWith('/api/v1/events')) errors.push('request failed: ' + r.url() + ' ' + (r.failure() || {}).errorText);
  });
  return errors;
}
