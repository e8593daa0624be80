// Shared by the host's browser tests: headless Chromium against the built web host, skipped with
// the reason where the machine or the build cannot run them, and what a test file starts, closed
// after it.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import type { WebHost } from '../../src/host/web-host.js';
import { tempDir } from '../engine/model/helpers.js';
import { missingBuild, paths } from './helpers.js';

/** Debian's Chromium, unless CHROMIUM_PATH names another. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Why the browser tests cannot run here, or null when they can. */
export function browserSkipReason(): string | null {
  if (!existsSync(CHROMIUM)) return `${CHROMIUM} is missing (apt-get install chromium)`;
  if (!existsSync(path.join(paths.rendererDir, 'index.html'))) return 'dist/renderer is missing: run `npm run build` (npm test does)';
  return missingBuild();
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

/** A wide page, and the console errors and uncaught page errors it reports (a test expects none). */
export async function openPage(browser: Browser): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(String(e)));
  return { page, problems };
}

/** What a browser test file starts: its scratch folder, the web host and Chromium. */
export interface BrowserTestScope {
  tmp: ReturnType<typeof tempDir>;
  web: WebHost | null;
  browser: Browser | null;
}

/**
 * A scratch folder for a browser test file, whose graph cache the engine host child (which
 * inherits the environment) uses while the file runs. After the file's tests the browser and the
 * web host it started are closed, the cache setting restored and the folder deleted.
 */
export function browserTestScope(prefix: string): BrowserTestScope {
  const scope: BrowserTestScope = { tmp: tempDir(prefix), web: null, browser: null };
  const savedCache = process.env.ECHO_STUDIO_CACHE;
  beforeAll(() => {
    process.env.ECHO_STUDIO_CACHE = path.join(scope.tmp.path, 'cache');
  });
  afterAll(async () => {
    await scope.browser?.close();
    await scope.web?.close();
    process.env.ECHO_STUDIO_CACHE = savedCache;
    scope.tmp.cleanup();
  });
  return scope;
}
