// The studio's layout in headless Chromium (the real shell and views, the synthetic stream):
// at 1366 × 768 the three knobs the product is built around — K_max, τ_d and the batch size — are
// on screen without scrolling on the first view, and stay there when the Reports panel opens; the
// budget bar's parts are as wide as their share of the tokens, and no label in it is cut; the
// metrics summary's lines fit their column. Saves the first view at 1366 × 768 and 1920 × 1080
// under test-results/studio-layout/. Skipped without Chromium.
//
// Paced as studio-visual.test.ts is: the page's own stream is the WebSocket transport's (decode=thin:
// frames handed over by the socket worker's pacer, one in flight until the page takes it), though
// these checks start no run and put the frames they measure into the store themselves. Every wait
// is for what the next check reads (the Run form, the opened Reports panel, the budget bar's parts,
// the comparison line), never a fixed time, with limits meant for a full test run on two busy
// cores; each test's own limit is above the sum of its waits, so a slow page fails on the wait
// that names what is missing, not on the test's clock.
import { existsSync, mkdirSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, launchChromium } from '../../host/browser.js';
import { startHarness } from './harness/server.js';

const hasChromium = existsSync(CHROMIUM);
const SHOTS = 'test-results/studio-layout';
/** One wait on the page (the load, an action, a selector, a condition). */
const WAIT_MS = 120_000;
/** A test: above the sum of its waits. */
const TEST_MS = 4 * WAIT_MS;
if (!hasChromium) console.warn(`studio layout check skipped: no Chromium at ${CHROMIUM} (set CHROMIUM_PATH)`);

/** Is the element wholly inside the viewport, with no scrolling of the page or of any panel? */
async function onScreen(page: Page, selector: string): Promise<{ visible: boolean; box: { x: number; y: number; width: number; height: number } | null }> {
  return page.evaluate((sel) => {
    const el = document.querySelector(sel);
    if (!el) return { visible: false, box: null };
    const r = el.getBoundingClientRect();
    let visible = r.width > 0 && r.height > 0 && r.top >= 0 && r.left >= 0 && r.bottom <= window.innerHeight && r.right <= window.innerWidth;
    // Inside a scrolling panel, the element must also be inside the panel's visible part.
    for (let p = el.parentElement; p; p = p.parentElement) {
      const style = getComputedStyle(p);
      if (/(auto|scroll|hidden)/.test(style.overflowY)) {
        const pr = p.getBoundingClientRect();
        if (r.top < pr.top - 1 || r.bottom > pr.bottom + 1) visible = false;
      }
    }
    return { visible, box: { x: r.x, y: r.y, width: r.width, height: r.height } };
  }, selector);
}

describe.skipIf(!hasChromium)('studio layout in Chromium', () => {
  let browser: Browser;
  let harness: Awaited<ReturnType<typeof startHarness>>;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    harness = await startHarness();
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await harness?.close();
  });

  async function open(width: number, height: number): Promise<{ page: Page; errors: string[] }> {
    const page = await browser.newPage({ viewport: { width, height } });
    page.setDefaultTimeout(WAIT_MS);
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    // Under a full test run on two cores the first page load (Vite compiles the views) can take most of a minute.
    await page.goto(`${harness.url}?batch=16&kmax=96&sps=10&decode=thin`);
    await page.waitForSelector('#run-kmax');
    return { page, errors };
  }

  it('shows K_max, τ_d and the batch size without scrolling at 1366×768, also with Reports open', async () => {
    const { page, errors } = await open(1366, 768);
    await page.screenshot({ path: `${SHOTS}/first-view-1366x768.png` });
    for (const knob of ['#run-kmax', '#run-taus', '#run-batch', '#run-policy']) {
      expect((await onScreen(page, knob)).visible, `${knob} on the first view`).toBe(true);
    }
    await page.locator('[data-panel="reports"] .panel-toggle').click();
    // Measured once the panel is open and its body laid out, not while the click's render is pending.
    await page.locator('[data-panel="reports"] .panel-toggle[aria-expanded="true"]').waitFor();
    await page.locator('#panel-reports-body').waitFor({ state: 'visible' });
    await page.screenshot({ path: `${SHOTS}/reports-open-1366x768.png` });
    for (const knob of ['#run-kmax', '#run-taus', '#run-batch']) {
      expect((await onScreen(page, knob)).visible, `${knob} with Reports open`).toBe(true);
    }
    expect(errors).toEqual([]);
    await page.close();
  }, TEST_MS);

  it('draws each part of the budget bar as wide as its share of K_max, and cuts no label', async () => {
    const { page, errors } = await open(1366, 768);
    // Width expansion 4 of 48 must be a twelfth of the bar, not grown by its text.
    const budget = { roots: 16, base: 10, depth: 16, width: 4, unused: 2 };
    await page.evaluate((split) => {
      const root = { id: 0, parent: -1, depth: -1, token: 1, text: 'a', logq: 0, pathScore: 0, grant: 'root', verified: true };
      const studio = (window as unknown as { __studio: { store: { getState(): { ingest(e: unknown): void } } } }).__studio;
      studio.store.getState().ingest({
        type: 'frame',
        steps: [
          {
            type: 'step', step: 0, t: 10, kmax: 48, verifiedTokens: 46, paddingWaste: 0, transfers: [], budget: split,
            timings: { draftMs: 1, packMs: 0, verifyMs: 2, commitMs: 0, totalMs: 3 },
            requests: [{ requestId: '0', nodes: [root], gates: [], confidences: [], accepted: [], bonusToken: 2, emitted: [2] }],
          },
        ],
      });
    }, budget);
    await page.getByTestId('budget-width').waitFor();
    const parts = await page.evaluate(() => {
      const bar = document.querySelector('.budget-bar')!.getBoundingClientRect().width;
      return [...document.querySelectorAll<HTMLElement>('.budget-part')].map((el) => ({
        key: el.dataset.testid!.replace('budget-', ''),
        share: el.getBoundingClientRect().width / bar,
        bar,
        text: el.textContent ?? '',
        clipped: el.scrollWidth > el.clientWidth + 1,
      }));
    });
    expect(parts.map((p) => p.key)).toEqual(['roots', 'base', 'depth', 'width', 'unused']);
    for (const part of parts) {
      const tokens = budget[part.key as keyof typeof budget];
      expect(Math.abs(part.share - tokens / 48) * part.bar, `${part.key}: ${part.share} of the bar for ${tokens} of 48`).toBeLessThan(1.5);
      expect(part.clipped, `${part.key}'s label "${part.text}" is cut`).toBe(false);
    }
    // A label, where one shows, is the whole count; the legend names every part with its count.
    expect(parts.find((p) => p.key === 'depth')!.text).toMatch(/^(depth extension )?16$/);
    expect(await page.getByTestId('budget-legend').textContent()).toContain('depth extension 16');
    await page.screenshot({ path: `${SHOTS}/budget-1366x768.png` });
    expect(errors).toEqual([]);
    await page.close();
  }, TEST_MS);

  it('fits the metrics summary, the comparison included, in its column at 1366×768', async () => {
    const { page, errors } = await open(1366, 768);
    await page.evaluate(() => {
      const studio = (window as unknown as { __studio: { store: { getState(): { ingest(e: unknown): void; keepForCompare(label: string): void } } } }).__studio;
      const root = { id: 0, parent: -1, depth: -1, token: 1, text: 'a', logq: 0, pathScore: 0, grant: 'root', verified: true };
      const step = (i: number, totalMs: number) => ({
        type: 'step', step: i, t: 10 * (i + 1), kmax: 96, verifiedTokens: 40, paddingWaste: 0, transfers: [],
        budget: { roots: 16, base: 20, depth: 4, width: 0, unused: 56 },
        timings: { draftMs: 1, packMs: 0, verifyMs: 2, commitMs: 0, totalMs },
        requests: [{ requestId: '0', nodes: [root], gates: [], confidences: [], accepted: [], bonusToken: 2, emitted: [2, 3, 4] }],
      });
      const metrics = (policy: string) => ({
        policy, steps: 90, requests: 48, generatedTokens: 3072, wallMs: 6870, throughput: 447.2, meanAcceptedTokens: 1.234, meanAcceptanceLength: 2.234,
        draftUtilisation: 0.412, verifiedTokensPerStep: 40, acceptancePerPosition: [0.5], paddingWaste: 0, tpotP50Ms: 123.4, tpotP99Ms: 456.7,
        stepTime: { draftMs: 23.4, verifyMs: 45.6, prefillMs: 12.3, otherMs: 1 },
      });
      const state = studio.store.getState();
      state.ingest({ type: 'run.state', state: 'running' });
      state.ingest({ type: 'frame', steps: [step(0, 80), step(1, 80)], metrics: metrics('static') });
      state.ingest({ type: 'run.state', state: 'finished' });
      state.keepForCompare('static');
      state.ingest({ type: 'run.state', state: 'running' });
      state.ingest({ type: 'frame', steps: [step(0, 60), { ...step(1, 60), kmax: 128 }], metrics: metrics('echo') });
      state.ingest({ type: 'run.state', state: 'paused' });
    });
    await page.getByTestId('run-comparison').waitFor();
    const fit = await page.evaluate(() => {
      const body = document.querySelector('#panel-metrics-body') as HTMLElement;
      const line = (id: string) => {
        const el = document.querySelector(`[data-testid="${id}"]`) as HTMLElement;
        return { lines: Math.round(el.getBoundingClientRect().height / parseFloat(getComputedStyle(el).lineHeight)), right: el.getBoundingClientRect().right };
      };
      return { sideways: body.scrollWidth - body.clientWidth, right: body.getBoundingClientRect().right, throughput: line('throughput'), comparison: line('run-comparison') };
    });
    expect(fit.sideways, 'the metrics panel scrolls sideways').toBeLessThanOrEqual(0);
    expect(fit.throughput.lines, 'throughput wraps').toBeLessThanOrEqual(1);
    expect(fit.comparison.right).toBeLessThanOrEqual(fit.right);
    await page.screenshot({ path: `${SHOTS}/metrics-1366x768.png` });
    expect(errors).toEqual([]);
    await page.close();
  }, TEST_MS);
});
