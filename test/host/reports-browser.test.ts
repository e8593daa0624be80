// The studio's Reports view in headless Chromium, served by the real web host and engine host
// (built): it opens the committed quick report and shows each claim with its verdict and numbers,
// how the report was made and its tables; a folder that is not a report is one line in the error
// banner; the quick-study button reaches the engine (here without a bundled pair, which it says).
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { startWebHost } from '../../src/host/web-host.js';
import { browserSkipReason, browserTestScope, launchChromium, openPage } from './browser.js';
import { paths, repoRoot } from './helpers.js';

const COMMITTED = path.join(repoRoot, 'docs', 'reports', '2026-12-06-h100-quick');
const skipReason = browserSkipReason();
if (skipReason) console.warn(`skipping the Reports view browser test: ${skipReason}`);

const scope = browserTestScope('echo-reports-browser-');
const { tmp } = scope;

beforeAll(async () => {
  if (skipReason) return;
  const modelsDir = path.join(tmp.path, 'models');
  mkdirSync(modelsDir); // no bundled pair
  // The browser may read the data folder (the scratch folder) and the committed report's folder.
  scope.web = await startWebHost({ port: 0, rendererDir: paths.rendererDir, engineHostEntry: paths.engineHostEntry, modelsDir, dataDir: tmp.path, allow: [COMMITTED], log: () => {} });
  scope.browser = await launchChromium();
});

describe.skipIf(skipReason !== null)('the Reports view in the browser', () => {
  it("opens the committed quick report and shows every claim's verdict with its numbers", async () => {
    const json = JSON.parse(readFileSync(path.join(COMMITTED, 'report.json'), 'utf8')) as {
      meta: { command: string };
      claims: Array<{ id: string; verdict: string; measured: string; uncertainty: string }>;
    };
    const { page, problems } = await openPage(scope.browser!);
    await page.goto(scope.web!.url);
    await page.getByText('Connected').waitFor();

    // Folded until there is something to show; unfolded by hand here.
    const body = page.locator('#panel-reports-body');
    expect(await body.isHidden()).toBe(true);
    await page.getByRole('button', { name: 'show Reports' }).click();

    // A folder that is not a report: one line in the banner, nothing shown.
    await page.fill('#report-dir', tmp.path);
    await page.getByRole('button', { name: 'Open', exact: true }).click();
    const banner = page.getByTestId('errors');
    await expect.poll(() => banner.textContent()).toMatch(/cannot open the report: .* is not a report folder: it has no report\.json/);
    expect(await page.getByTestId('report').count()).toBe(0);
    await page.locator('.error-dismiss').first().click();
    // A folder outside the ones it may read gets the answer a missing one gets.
    await page.fill('#report-dir', path.dirname(COMMITTED));
    await page.getByRole('button', { name: 'Open', exact: true }).click();
    await expect.poll(() => banner.textContent()).toMatch(/cannot open the report: .*reports: no such file or folder in the folders this studio may read/);
    await page.locator('.error-dismiss').first().click();

    await page.fill('#report-dir', COMMITTED);
    await page.getByRole('button', { name: 'Open', exact: true }).click();
    const claims = page.getByTestId('report-claims').locator('li');
    await expect.poll(() => claims.count()).toBe(json.claims.length);
    for (const [i, claim] of json.claims.entries()) {
      const li = claims.nth(i);
      expect(await li.getAttribute('data-claim')).toBe(claim.id);
      expect(await li.getAttribute('data-verdict')).toBe(claim.verdict);
      expect(await li.locator('.verdict').textContent()).toBe(claim.verdict);
      const text = await li.textContent();
      expect(text).toContain(claim.measured);
      expect(text).toContain(claim.uncertainty); // the A/A band a ratio was read against
    }
    const counts = new Map<string, number>();
    for (const c of json.claims) counts.set(c.verdict, (counts.get(c.verdict) ?? 0) + 1);
    const summary = await page.getByTestId('report-summary').textContent();
    for (const [verdict, n] of counts) expect(summary).toContain(`${n} ${verdict}`);
    expect(await page.getByTestId('report-command').textContent()).toBe(json.meta.command);
    // The tables, and the page saved whole.
    const table1 = page.getByTestId('report-table-table1.csv');
    await table1.locator('summary').click();
    expect(await table1.locator('tbody tr').count()).toBe(readFileSync(path.join(COMMITTED, 'table1.csv'), 'utf8').trim().split('\n').length - 1);
    expect(await page.getByTestId('report-page-link').getAttribute('href')).toMatch(/^blob:/);

    // The quick study's button reaches the engine host, which has no bundled pair here.
    await page.getByRole('button', { name: 'Run quick study' }).click();
    await expect.poll(() => banner.textContent()).toMatch(/the quick study failed: the bundled demo pair .* is not installed/);
    expect(await page.getByRole('button', { name: 'Run quick study' }).isEnabled()).toBe(true);
    expect(problems).toEqual([]);
    mkdirSync(path.join(repoRoot, 'test-results'), { recursive: true });
    await page.screenshot({ path: path.join(repoRoot, 'test-results', 'studio-reports.png'), fullPage: true });
    await page.close();
  }, 120_000);
});
