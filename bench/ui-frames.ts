// UI frame-time bench (a script, not a test): the real shell and studio views in headless Chromium
// while a synthetic batch streams at full speed, frames batched at 30/s as the engine host sends
// them. Prints p50/p95/p99/max of the interval between animation frames and the long tasks
// (> 50 ms) the main thread had. Target: p95 under 33 ms at batch 64.
//
//   npx esbuild bench/ui-frames.ts --bundle --platform=node --format=esm --packages=external \
//     --outfile=node_modules/.cache/bench/ui-frames.mjs && node node_modules/.cache/bench/ui-frames.mjs [options]
//
// Options: --batch N (64), --kmax N (512), --sps N engine steps per second (60), --seconds N
// measured (15), --warmup N seconds (4), --views a,b (mount only these panels' views), --select (open a request so the request SVG redraws too),
// --decode main|worker|thin (main: the page parses and validates each frame itself, as the WebSocket
// transport did before it had a worker; worker: frames arrive parsed and validated; thin: what the
// WebSocket transport's socket worker posts — parsed, validated, only the newest step of a frame
// whole and the others as digests without trees, see src/renderer/transport/decode.ts; paced as the socket worker paces them,
// src/renderer/transport/frame-pacer.ts), --pace MS (thin: least time between frames instead of the socket worker's own),
// --breakdown (trace the measured window and print the page's main-thread CPU time by phase, per second and per frame
// the page took: thread time, so it moves less with the machine's load than the frame intervals do; tracing costs a
// little, so leave it off for the frame numbers), --chromium PATH (/usr/bin/chromium). Run from the repository root.
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { startHarness } from '../test/renderer/views/harness/server.js';

const { values: args } = parseArgs({
  options: {
    batch: { type: 'string', default: '64' },
    kmax: { type: 'string', default: '512' },
    sps: { type: 'string', default: '60' },
    seconds: { type: 'string', default: '15' },
    warmup: { type: 'string', default: '4' },
    select: { type: 'boolean', default: false },
    decode: { type: 'string', default: 'main' },
    views: { type: 'string' },
    pace: { type: 'string' },
    breakdown: { type: 'boolean', default: false },
    chromium: { type: 'string', default: '/usr/bin/chromium' },
  },
});

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Trace events summed for --breakdown: top-level phases of the renderer's main thread. */
const PHASES: ReadonlyArray<[string, string]> = [
  ['ThreadControllerImpl::RunTask', 'all tasks'],
  ['HandlePostMessage', 'frames received (deserialise, store)'],
  ['FireAnimationFrame', 'animation frame callbacks (canvases)'],
  ['TimerFire', 'timers (throttled charts)'],
  ['UpdateLayoutTree', 'style'],
  ['Layout', 'layout'],
  ['PrePaint', 'pre-paint'],
  ['Paint', 'paint'],
  ['Layerize', 'layerize'],
  ['Commit', 'commit (incl. canvas raster)'],
  ['MinorGC', 'GC (minor)'],
  ['MajorGC', 'GC (major)'],
];

/** Starts a Chromium trace of the page; stop() sums each phase's thread time on its main thread (ms). */
async function startTrace(page: import('playwright-core').Page): Promise<{ stop(): Promise<Map<string, number>> }> {
  const cdp = await page.context().newCDPSession(page);
  type TraceEvent = { name: string; ph: string; pid: number; tid: number; tdur?: number; args?: { name?: string } };
  const events: TraceEvent[] = [];
  cdp.on('Tracing.dataCollected', (e) => events.push(...(e.value as unknown as TraceEvent[])));
  await cdp.send('Tracing.start', { categories: 'toplevel,devtools.timeline,disabled-by-default-devtools.timeline,v8', transferMode: 'ReportEvents' });
  return {
    async stop() {
      const done = new Promise<void>((resolve) => cdp.once('Tracing.tracingComplete', () => resolve()));
      await cdp.send('Tracing.end');
      await done;
      const main = new Set(events.filter((e) => e.name === 'thread_name' && e.args?.name === 'CrRendererMain').map((e) => `${e.pid}:${e.tid}`));
      const wanted = new Set(PHASES.map(([name]) => name));
      const sums = new Map<string, number>();
      for (const e of events) {
        if (e.ph !== 'X' || !wanted.has(e.name) || !main.has(`${e.pid}:${e.tid}`)) continue;
        sums.set(e.name, (sums.get(e.name) ?? 0) + (e.tdur ?? 0) / 1000);
      }
      return sums;
    },
  };
}

const harness = await startHarness('production');
const browser = await chromium.launch({
  executablePath: args.chromium,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1680, height: 1050 } });
  const pageErrors: string[] = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  // Console errors include Content-Security-Policy violations (the built page carries the CSP).
  page.on('console', (m) => {
    if (m.type() === 'error') pageErrors.push(m.text());
  });
  await page.goto(`${harness.url}?batch=${args.batch}&kmax=${args.kmax}&sps=${args.sps}&autostart=1&decode=${args.decode}${args.views ? `&views=${args.views}` : ''}${args.pace ? `&pace=${args.pace}` : ''}`);
  await page.waitForFunction(() => (window as unknown as { __studio?: { store: { getState(): { frameCount: number } } } }).__studio?.store.getState().frameCount ?? 0 > 0, null, {
    timeout: 120_000,
  });
  if (args.select) {
    const box = await page.getByTestId('super-tree-canvas').boundingBox();
    if (box) await page.mouse.click(box.x + 30, box.y + 30);
  }
  await page.waitForTimeout(Number(args.warmup) * 1000);
  const trace = args.breakdown ? await startTrace(page) : null;
  const result = await page.evaluate(async (seconds: number) => {
    const intervals: number[] = [];
    const longTasks: number[] = [];
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) longTasks.push(entry.duration);
    });
    try {
      observer.observe({ type: 'longtask', buffered: false });
    } catch {
      // Long-task timing is Chromium-only; the frame intervals still count.
    }
    const w = window as unknown as {
      __studio: { store: { getState(): { latestStep: { step: number } | null; frameCount: number } }; transport: { decodeMs: number } };
    };
    const decodeAtStart = w.__studio.transport.decodeMs;
    const stepAtStart = w.__studio.store.getState().latestStep?.step ?? 0;
    const framesAtStart = w.__studio.store.getState().frameCount;
    await new Promise<void>((resolve) => {
      let last = performance.now();
      const end = last + seconds * 1000;
      const tick = (now: number): void => {
        intervals.push(now - last);
        last = now;
        if (now < end) requestAnimationFrame(tick);
        else resolve();
      };
      requestAnimationFrame(tick);
    });
    observer.disconnect();
    const state = w.__studio.store.getState();
    return {
      intervals,
      longTasks,
      steps: (state.latestStep?.step ?? 0) - stepAtStart,
      engineFrames: state.frameCount - framesAtStart,
      decodeMs: w.__studio.transport.decodeMs - decodeAtStart,
    };
  }, Number(args.seconds));
  const phases = trace ? await trace.stop() : null;
  const sorted = result.intervals.slice(1).sort((a, b) => a - b);
  const fmt = (v: number): string => v.toFixed(1).padStart(6);
  console.log(
    `ui-frames: batch ${args.batch}, K_max ${args.kmax}, ${args.sps} engine steps/s, ${args.seconds} s measured, decode on ${args.decode}${args.select ? ', request view open' : ''}`,
  );
  console.log(`  engine frames received ${result.engineFrames} (${(result.engineFrames / Number(args.seconds)).toFixed(1)}/s), steps ${result.steps}`);
  console.log(`  animation frames ${sorted.length}: p50 ${fmt(percentile(sorted, 50))} ms  p95 ${fmt(percentile(sorted, 95))} ms  p99 ${fmt(percentile(sorted, 99))} ms  max ${fmt(sorted.at(-1) ?? Number.NaN)} ms`);
  console.log(`  main-thread decode (${args.decode === 'main' ? 'JSON.parse + validation' : args.decode === 'thin' ? 'JSON.parse of the worker\'s frame text' : 'none: structured clone only'}) ${result.decodeMs.toFixed(0)} ms (${(result.decodeMs / Math.max(1, result.engineFrames)).toFixed(1)} ms per frame)`);
  const longTotal = result.longTasks.reduce((a, b) => a + b, 0);
  console.log(`  long tasks (> 50 ms) ${result.longTasks.length}, ${longTotal.toFixed(0)} ms in all`);
  console.log(`  p95 target < 33 ms: ${percentile(sorted, 95) < 33 ? 'met' : 'NOT met'}`);
  if (phases) {
    const seconds = Number(args.seconds);
    const frames = Math.max(1, result.engineFrames);
    console.log(`  main-thread CPU (thread time) by phase: ms per second | ms per frame taken`);
    for (const [name, label] of PHASES) {
      const ms = phases.get(name) ?? 0;
      console.log(`    ${label.padEnd(38)} ${(ms / seconds).toFixed(1).padStart(6)} | ${(ms / frames).toFixed(2).padStart(6)}`);
    }
  }
  if (pageErrors.length > 0) {
    console.error(`page errors:\n${pageErrors.join('\n')}`);
    process.exitCode = 1;
  }
} finally {
  await browser.close();
  await harness.close();
}
