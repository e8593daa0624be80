// The real shell and views in headless Chromium, driven by the synthetic stream (batch 64): trees
// and histograms fill, a dragged τ reaches the engine side and comes back in its gate checks, and
// every view is saved as a screenshot under test-results/studio/. Skipped without Chromium.
//
// Frames reach the page as the WebSocket transport's socket worker hands them over (decode=thin:
// the newest step of a frame whole, older ones as digests, one frame in flight until the page
// takes it at its next animation frame), so a page slowed by a loaded machine gets fewer, fuller
// frames instead of a queue of them that grows for as long as the test runs. Every wait is for
// what the next check needs (histogram samples, the engine's τ, the paused state), never for a
// number of steps or frames, with limits meant for a full test run on two busy cores; each test's
// own limit is above the sum of its waits, so a slow page fails on the wait that names what is
// missing.
import { existsSync, mkdirSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, launchChromium } from '../../host/browser.js';
import { startHarness } from './harness/server.js';

const hasChromium = existsSync(CHROMIUM);
const SHOTS = 'test-results/studio';
/** One wait on the page (an action, a selector, a condition). */
const WAIT_MS = 120_000;
/** A test: above the sum of its waits. */
const TEST_MS = 4 * WAIT_MS;

if (!hasChromium) console.warn(`studio visual check skipped: no Chromium at ${CHROMIUM} (set CHROMIUM_PATH)`);

describe.skipIf(!hasChromium)('studio views in Chromium (synthetic stream)', () => {
  let browser: Browser;
  let page: Page;
  let harness: Awaited<ReturnType<typeof startHarness>>;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    harness = await startHarness();
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1680, height: 1050 } });
    page.setDefaultTimeout(WAIT_MS);
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    // Under a full test run on two cores the first page load (Vite compiles the views) can take most of a minute.
    await page.goto(`${harness.url}?batch=64&kmax=512&sps=20&decode=thin`);
    await page.waitForSelector('[data-testid="super-tree-canvas"]');
    expect(errors).toEqual([]);
  }, TEST_MS);

  afterAll(async () => {
    await browser?.close();
    await harness?.close();
  });

  it('starts a run from the run panel and fills the Super-Tree and the histograms', async () => {
    await page.getByLabel('batch size').fill('64');
    await page.getByLabel('K_max').fill('512');
    await page.getByRole('button', { name: 'Start', exact: true }).click();
    // The Super-Tree shows the batch's trees, and depth 0's histogram has samples enough to draw.
    await page.waitForSelector('[data-testid="super-tree-summary"]:has-text("64 requests")');
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="histogram-0"]')?.getAttribute('data-samples') ?? '0') > 50, null, { polling: 250 });
    // The canvas has coloured pixels, not just a background (drawn at the next animation frame).
    await page.waitForFunction(
      () => {
        const canvas = document.querySelector<HTMLCanvasElement>('[data-testid="super-tree-canvas"]');
        const ctx = canvas?.getContext('2d');
        if (!canvas || !ctx) return false;
        const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
        let n = 0;
        for (let i = 3; i < data.length; i += 4) if (data[i] > 0) n += 1;
        return n > 1000;
      },
      null,
      { polling: 500 },
    );
    expect(await page.getByTestId('super-tree-summary').textContent()).toMatch(/64 requests/);
    expect(Number(await page.getByTestId('histogram-0').getAttribute('data-samples'))).toBeGreaterThan(50);
  }, TEST_MS);

  it('sends a dragged τ as knobs.set and sees the engine use it', async () => {
    const line = page.getByTestId('tau-line-2');
    await line.scrollIntoViewIfNeeded();
    const box = await line.boundingBox();
    if (!box) throw new Error('τ line for depth 2 is not visible');
    const x = box.x + box.width / 2;
    const y = box.y + box.height / 2;
    await page.mouse.move(x, y);
    await page.mouse.down();
    await page.mouse.move(x + 40, y, { steps: 5 });
    await page.mouse.up();
    // The release sends knobs.set with the dragged τ.
    const sent = (await (
      await page.waitForFunction(() => {
        const w = window as unknown as { __studio: { transport: { sent: Array<{ type: string; knobs?: { taus?: Record<string, number> } }> } } };
        return w.__studio.transport.sent.filter((r) => r.type === 'knobs.set').at(-1)?.knobs?.taus?.['2'] ?? false;
      })
    ).jsonValue()) as number;
    expect(sent).toBeGreaterThan(0.35);
    // The synthetic engine gates its next steps with it, and the caption shows the τ of its latest gate checks.
    await page.waitForFunction(
      (tau) => document.querySelector('[data-testid="engine-tau-2"]')?.textContent?.includes(`τ ${tau.toFixed(2)}`) ?? false,
      sent,
      { polling: 250 },
    );
  }, TEST_MS);

  it('opens a request from the Super-Tree and explains its step', async () => {
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    await page.waitForSelector('[data-testid="run-panel-state"]:has-text("paused")');
    const canvas = page.getByTestId('super-tree-canvas');
    const box = await canvas.boundingBox();
    if (!box) throw new Error('no Super-Tree canvas');
    await page.mouse.click(box.x + 30, box.y + 30);
    await page.waitForSelector('svg.request-tree');
    expect(await page.locator('svg.request-tree [data-state="accepted"]').count()).toBeGreaterThan(0);
    expect(await page.getByTestId('decisions').textContent()).toMatch(/accepted \d+ of \d+ verified draft token/);
  }, TEST_MS);

  it('saves a screenshot of each view', async () => {
    await page.screenshot({ path: `${SHOTS}/studio.png` });
    for (const panel of ['run', 'super-tree', 'request', 'histograms', 'gates', 'budget', 'metrics']) {
      const locator = page.locator(`[data-panel="${panel}"]`);
      await locator.scrollIntoViewIfNeeded();
      await locator.screenshot({ path: `${SHOTS}/${panel}.png` });
    }
    expect(existsSync(`${SHOTS}/super-tree.png`)).toBe(true);
  }, TEST_MS);
});
