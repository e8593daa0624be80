// What a browser client of `echo-studio serve` may read and write, over a real WebSocket to the
// real web host and its (built) engine host: only the folders chosen when the server started (the
// data folder, the models folder, --allow folders); a path outside them gets the answer a missing
// one gets; errors never repeat a file's contents; exports land atomically and replace a file
// only when asked to.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { packagePaths, findPackageRoot } from '../../src/host/paths.js';
import { startWebHost, type WebHost } from '../../src/host/web-host.js';
import { TraceRecorder } from '../../src/engine/trace/writer.js';
import type { RunConfig } from '../../src/shared/config.js';
import { parseEvent, type EngineEvent, type EngineRequest } from '../../src/shared/messages.js';
import { tempDir } from '../engine/model/helpers.js';
import { testHeader, testRun } from '../engine/trace/fixtures.js';
import { missingBuild, paths, writeModelsFolder } from './helpers.js';
import { tinyConfig, writeTinyPair, type TinyPair } from './run-fixtures.js';

const skipReason = missingBuild();
if (skipReason) console.warn(`skipping the web host file access tests: ${skipReason}`);

/** In every file a client must never see: its appearance in an error is a leak. */
const SECRET = 'TOPSECRET';
const tmp = tempDir('echo-web-files-');
const data = path.join(tmp.path, 'data');
const picked = path.join(tmp.path, 'picked');
const outside = path.join(tmp.path, 'outside');
const savedCache = process.env.ECHO_STUDIO_CACHE;
let web: WebHost | null = null;
let pair: TinyPair;

beforeAll(async () => {
  if (skipReason) return;
  for (const dir of [data, picked, outside]) mkdirSync(dir, { recursive: true });
  process.env.ECHO_STUDIO_CACHE = path.join(tmp.path, 'cache'); // the engine host child inherits it
  pair = writeTinyPair(picked);
  await writeModelsFolder(path.join(tmp.path, 'models'));
  // Outside: a file like a password file, a model folder, a prompts file.
  writeFileSync(path.join(outside, 'passwd'), `root:${SECRET}:0:0:root:/root:/bin/bash\n`);
  writeTinyPair(path.join(outside, 'pair'));
  writeFileSync(path.join(outside, 'leak.jsonl'), `${JSON.stringify({ id: 'a', prompt: SECRET })}\n`);
  // Inside, but not what they claim to be.
  writeFileSync(path.join(data, 'not-a-trace.jsonl'), `root:${SECRET}:0:0\n`);
  writeFileSync(path.join(data, 'bad-profile.json'), `{"${SECRET}": root:x:0:0}\n`);
  writeFileSync(path.join(data, 'bad-prompts.jsonl'), `{"id": "a", "prompt": ${SECRET}}\n`);
  const recorder = new TraceRecorder(path.join(data, 'run.jsonl'), testHeader());
  for (const step of testRun()) recorder.step(step);
  recorder.finish('finished');
  web = await startWebHost({
    port: 0,
    rendererDir: paths.rendererDir,
    engineHostEntry: paths.engineHostEntry,
    modelsDir: path.join(tmp.path, 'models'),
    dataDir: data,
    allow: [picked],
    log: () => {},
  });
});
afterAll(async () => {
  await web?.close();
  process.env.ECHO_STUDIO_CACHE = savedCache;
  tmp.cleanup();
});

/** A studio client: sends requests and waits for the answer that settles each. */
async function connect() {
  const ws = new WebSocket(`ws://127.0.0.1:${web!.port}/ws?token=${web!.token}`, { origin: `http://127.0.0.1:${web!.port}` });
  const events: EngineEvent[] = [];
  const waiters: Array<() => void> = [];
  ws.on('message', (raw) => {
    const parsed = parseEvent(JSON.parse(raw.toString()));
    if (!parsed.ok) throw new Error(parsed.error);
    events.push(parsed.value);
    for (const wake of waiters.splice(0)) wake();
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  /** Sends `request` and resolves with the first later event that `settles` it. */
  async function ask(request: EngineRequest, settles: (e: EngineEvent) => boolean): Promise<EngineEvent> {
    let cursor = events.length;
    ws.send(JSON.stringify(request));
    for (;;) {
      for (; cursor < events.length; cursor++) if (settles(events[cursor])) return events[cursor];
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  }
  return { ask, close: () => ws.close() };
}
type Client = Awaited<ReturnType<typeof connect>>;

const isError = (e: EngineEvent): boolean => e.type === 'error';
/** A run.start is settled by its error, or by the run getting under way (which a refusal must prevent). */
const runSettles = (e: EngineEvent) => e.type === 'error' || (e.type === 'run.state' && (e.state === 'running' || e.state === 'finished'));

/** The error a request gets, with the path it named taken out: what the client learns beyond its own input. */
async function errorFor(client: Client, request: EngineRequest, named: string, settles = isError): Promise<string> {
  const answer = await client.ask(request, settles);
  if (answer.type !== 'error') throw new Error(`${request.type} naming ${named} was not refused: ${JSON.stringify(answer)}`);
  return answer.message.split(named).join('<path>');
}

const run = (overrides: Partial<RunConfig>): EngineRequest => ({ type: 'run.start', config: tinyConfig(pair, { requests: 2, maxNewTokens: 4, ...overrides }) });

describe.skipIf(skipReason !== null)('the web host reads and writes only in the chosen folders', () => {
  it('never quotes a file in an error: not a trace, a profile or a prompts file that is not JSON', async () => {
    const client = await connect();
    const notTrace = path.join(data, 'not-a-trace.jsonl');
    const traceError = await errorFor(client, { type: 'trace.open', path: notTrace }, notTrace);
    expect(traceError).toMatch(/^cannot open trace <path>: line 1 is not valid JSON/);
    const profile = path.join(data, 'bad-profile.json');
    const profileError = await errorFor(client, run({ policy: 'echo', profile }), profile, runSettles);
    expect(profileError).toMatch(/not JSON/);
    const prompts = path.join(data, 'bad-prompts.jsonl');
    const promptsError = await errorFor(client, run({ promptsFile: prompts }), prompts, runSettles);
    expect(promptsError).toMatch(/line 1: not valid JSON/);
    for (const message of [traceError, profileError, promptsError]) expect(message).not.toContain(SECRET);
    client.close();
  });

  it('answers a path outside them as it answers a missing one, for every request that names a path', async () => {
    const client = await connect();
    const missingInside = path.join(data, 'nothing-here');
    const cases: Array<{ what: string; request: (p: string) => EngineRequest; existing: string; settles?: (e: EngineEvent) => boolean }> = [
      { what: 'model.open', request: (dir) => ({ type: 'model.open', dir }), existing: path.join(outside, 'pair', 'target') },
      { what: 'hw.knee', request: (targetDir) => ({ type: 'hw.knee', batch: 1, targetDir }), existing: path.join(outside, 'pair', 'target') },
      { what: 'trace.open', request: (p) => ({ type: 'trace.open', path: p }), existing: path.join(outside, 'passwd') },
      { what: 'run.start promptsFile', request: (promptsFile) => run({ promptsFile }), existing: path.join(outside, 'passwd'), settles: runSettles },
      { what: 'run.start profile', request: (profile) => run({ policy: 'echo', profile }), existing: path.join(outside, 'passwd'), settles: runSettles },
      {
        what: 'run.start folders',
        request: (dir) => run({ draftDir: dir, targetDir: dir }),
        existing: path.join(outside, 'pair', 'target'),
        settles: runSettles,
      },
    ];
    for (const { what, request, existing, settles } of cases) {
      const missingOutside = path.join(outside, 'nothing-here');
      const answers = [
        await errorFor(client, request(existing), existing, settles),
        await errorFor(client, request(missingOutside), missingOutside, settles),
        await errorFor(client, request(missingInside), missingInside, settles),
      ];
      expect(new Set(answers), `${what}: ${answers.join(' | ')}`).toHaveProperty('size', 1);
      expect(answers[0]).not.toContain(SECRET);
    }
    client.close();
  });

  it('takes bundled prompts by domain name only, never a path out of their folder', async () => {
    const client = await connect();
    const promptsDir = path.join(packagePaths(findPackageRoot(import.meta.url)).root, 'assets', 'prompts');
    const domain = path.relative(promptsDir, path.join(outside, 'leak'));
    const answer = await client.ask({ type: 'run.start', config: { ...tinyConfig(pair, { requests: 1, maxNewTokens: 2 }), promptsFile: undefined, domain } }, runSettles);
    expect(answer).toMatchObject({ type: 'error', message: expect.stringContaining('unknown domain') });
    client.close();
  });

  it('exports only into the chosen folders, atomically, replacing a file only when asked', async () => {
    const client = await connect();
    await client.ask({ type: 'trace.open', path: path.join(data, 'run.jsonl') }, (e) => e.type === 'run.state' && e.state === 'finished');
    const exported = (e: EngineEvent) => e.type === 'error' || (e.type === 'progress' && e.task === 'export');

    // Outside: refused as a missing folder is, and nothing written.
    const outsideFile = path.join(outside, 'out.csv');
    const refused = [
      await errorFor(client, { type: 'trace.export', path: outsideFile, format: 'csv' }, outsideFile, exported),
      await errorFor(client, { type: 'trace.export', path: path.join(data, 'no-folder', 'out.csv'), format: 'csv' }, path.join(data, 'no-folder', 'out.csv'), exported),
    ];
    expect(new Set(refused)).toHaveProperty('size', 1);
    expect(existsSync(outsideFile)).toBe(false);

    // Inside the data folder (a relative path starts there) and a picked folder.
    expect(await client.ask({ type: 'trace.export', path: 'relative.csv', format: 'csv' }, exported)).toMatchObject({ type: 'progress' });
    expect(readFileSync(path.join(data, 'relative.csv'), 'utf8')).toMatch(/^step,/);
    expect(await client.ask({ type: 'trace.export', path: path.join(picked, 'run.jsonl'), format: 'jsonl' }, exported)).toMatchObject({ type: 'progress' });
    expect(readFileSync(path.join(picked, 'run.jsonl'), 'utf8')).toBe(readFileSync(path.join(data, 'run.jsonl'), 'utf8'));

    // An existing file stays unless the request asks to overwrite it.
    const kept = path.join(data, 'kept.csv');
    writeFileSync(kept, 'mine');
    const notReplaced = await client.ask({ type: 'trace.export', path: kept, format: 'csv' }, exported);
    expect(notReplaced).toMatchObject({ type: 'error', message: expect.stringMatching(/exists; export with overwrite to replace it/) });
    expect(readFileSync(kept, 'utf8')).toBe('mine');
    expect(await client.ask({ type: 'trace.export', path: kept, format: 'csv', overwrite: true }, exported)).toMatchObject({ type: 'progress' });
    expect(readFileSync(kept, 'utf8')).toBe(readFileSync(path.join(data, 'relative.csv'), 'utf8'));
    // The models folder is read, never written, even with overwrite.
    const model = path.join(tmp.path, 'models', 'echo-target', 'config.json');
    const before = readFileSync(model, 'utf8');
    const intoModels = await client.ask({ type: 'trace.export', path: model, format: 'jsonl', overwrite: true }, exported);
    expect(intoModels).toMatchObject({ type: 'error', message: expect.stringMatching(/cannot write there: not a folder this studio may write in/) });
    expect(readFileSync(model, 'utf8')).toBe(before);
    // Written beside and renamed: no temporary file is left behind.
    expect(readdirSync(data).filter((name) => name.endsWith('.tmp'))).toEqual([]);
    client.close();
  });
});
