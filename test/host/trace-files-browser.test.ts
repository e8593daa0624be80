// Trace files in the browser studio, through the real web host and its (built) engine host: a trace
// recorded by a short run on the tiny pair is uploaded from "the user's disk" (a folder the server
// may not read) and replays; Save downloads the same bytes; a cut trace is refused in one line and
// the replay stays. The HTTP routes refuse what a browser page of another origin, a file too large
// or not a trace, or an unknown format would bring, without quoting the file.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseTrace } from '../../src/engine/trace/parse.js';
import { startWebHost } from '../../src/host/web-host.js';
import { missingBuild, paths, repoRoot } from './helpers.js';
import { browserSkipReason, browserTestScope, launchChromium } from './browser.js';
import { recordTinyTrace } from './run-fixtures.js';

const noBuild = missingBuild();
const noBrowser = browserSkipReason();
if (noBuild) console.warn(`skipping the trace file route tests: ${noBuild}`);
else if (noBrowser) console.warn(`skipping the trace files browser test: ${noBrowser}`);

const SECRET = 'TOPSECRET';
const UPLOAD_LIMIT = 2 * 1024 * 1024;
const scope = browserTestScope('echo-trace-files-');
const { tmp } = scope;
/** The user's own disk: the server was not told about this folder. */
const userDisk = join(tmp.path, 'user-disk');
const dataDir = join(tmp.path, 'data');
let tracePath: string;
let cutPath: string;

beforeAll(async () => {
  if (noBuild) return;
  mkdirSync(userDisk);
  mkdirSync(dataDir);
  tracePath = join(userDisk, 'recorded.jsonl');
  const { modelsDir } = await recordTinyTrace(tmp.path, tracePath, { requests: 2, maxNewTokens: 10 });
  // Cut mid-line, as a run killed while writing leaves it.
  const bytes = readFileSync(tracePath);
  const lastLine = bytes.lastIndexOf('\n', bytes.length - 2);
  cutPath = join(userDisk, 'cut.jsonl');
  writeFileSync(cutPath, bytes.subarray(0, lastLine + 20));
  writeFileSync(join(userDisk, 'passwd.jsonl'), `root:${SECRET}:0:0:root\n`);
  scope.web = await startWebHost({
    port: 0,
    rendererDir: paths.rendererDir,
    engineHostEntry: paths.engineHostEntry,
    modelsDir,
    dataDir,
    maxUploadBytes: UPLOAD_LIMIT,
    log: () => {},
  });
  if (noBrowser) return;
  scope.browser = await launchChromium();
});

const base = () => `http://127.0.0.1:${scope.web!.port}`;
const origin = () => ({ Origin: base() });
async function post(body: Buffer, headers: Record<string, string> = origin(), token: string | null = scope.web!.token) {
  const response = await fetch(`${base()}/trace/upload?name=x.jsonl${token ? `&token=${token}` : ''}`, { method: 'POST', body: new Uint8Array(body), headers });
  return { status: response.status, text: await response.text() };
}
async function get(query: string) {
  const response = await fetch(`${base()}/trace/download?token=${scope.web!.token}&${query}`);
  return { status: response.status, text: await response.text() };
}

describe.skipIf(noBuild !== null)('the web host trace file routes', () => {
  it('refuse another origin, no token, an oversized body, a file that is not a trace and an unknown format, in one line', async () => {
    const trace = readFileSync(tracePath);
    expect((await post(trace, origin(), null)).status).toBe(403);
    expect(await post(trace, { Origin: 'http://evil.example' })).toMatchObject({ status: 403, text: expect.stringMatching(/may not upload/) });
    expect(await post(Buffer.alloc(UPLOAD_LIMIT + 1, 0x61))).toMatchObject({ status: 413, text: 'the file is larger than the 2 MiB a trace upload may be\n' });
    const notTrace = await post(readFileSync(join(userDisk, 'passwd.jsonl')));
    expect(notTrace).toMatchObject({ status: 422, text: expect.stringMatching(/^x\.jsonl is not a trace: line 1 is not valid JSON/) });
    expect(notTrace.text).not.toContain(SECRET);
    expect(notTrace.text.trim().split('\n')).toHaveLength(1);
    expect(await get('format=parquet')).toMatchObject({ status: 400, text: expect.stringMatching(/cannot be downloaded: choose jsonl, perfetto, csv/) });
    // Nothing opened or run yet: nothing to export.
    expect(await get('format=jsonl')).toMatchObject({ status: 409, text: expect.stringMatching(/no run or trace to use/) });
    // An accepted upload lands in the server's own folder, never in the data folder.
    const accepted = await post(trace);
    expect(accepted.status).toBe(200);
    const answer = JSON.parse(accepted.text) as { path: string; name: string; steps: number };
    expect(answer).toMatchObject({ name: 'x.jsonl', steps: parseTrace(trace.toString('utf8')).steps.length });
    expect(readFileSync(answer.path)).toEqual(trace);
    expect(readdirSync(dataDir)).toEqual([]);
  });
});

describe.skipIf(noBrowser !== null)('trace files in the browser studio', () => {
  it('opens a trace from the user disk, replays it, saves it back, and refuses a cut one in one line', async () => {
    const page = await scope.browser!.newPage({ viewport: { width: 1366, height: 768 }, acceptDownloads: true });
    page.setDefaultTimeout(90_000);
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(String(e)));
    await page.goto(scope.web!.url, { timeout: 120_000 });
    await page.getByText('Connected').waitFor();
    const recorded = parseTrace(readFileSync(tracePath, 'utf8'));
    const last = recorded.steps[recorded.steps.length - 1].step;

    await page.getByLabel('trace file to open').setInputFiles(tracePath);
    await expect.poll(() => page.getByTestId('run-panel-state').textContent(), { timeout: 90_000 }).toBe('finished');
    await expect.poll(() => page.getByTestId('trace-scrubber-step').textContent(), { timeout: 90_000 }).toBe(`step ${last} of ${last}`);
    await expect.poll(() => page.getByTestId('super-tree-summary').textContent()).toMatch(new RegExp(`^step ${last} ·`));
    expect(await page.getByTestId('trace-files-note').textContent()).toBe(`opened recorded.jsonl (${recorded.steps.length} steps)`);
    expect(await page.getByRole('alert').count()).toBe(0);
    mkdirSync(path.join(repoRoot, 'test-results'), { recursive: true });
    await page.screenshot({ path: path.join(repoRoot, 'test-results', 'studio-trace-opened.png') });

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Save trace' }).click()]);
    expect(download.suggestedFilename()).toBe('echo-trace.jsonl');
    const saved = readFileSync((await download.path())!);
    expect(saved).toEqual(readFileSync(tracePath));
    expect(parseTrace(saved.toString('utf8')).error).toBeUndefined();

    await page.getByLabel('trace file to open').setInputFiles(cutPath);
    const banner = page.getByTestId('errors');
    await banner.waitFor();
    const refusal = (await banner.locator('.error-message').textContent()) ?? '';
    expect(refusal).toMatch(/^Could not open cut\.jsonl: cut\.jsonl is not a whole trace: line \d+ is cut short: .*; nothing was opened$/);
    expect(refusal).not.toContain('\n');
    // The replay shown before stays.
    expect(await page.getByTestId('trace-scrubber-step').textContent()).toBe(`step ${last} of ${last}`);
    expect(problems).toEqual([]);
    await page.close();
  });
});
