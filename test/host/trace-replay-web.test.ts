// `echo-studio trace replay`: the web host starts the (built) engine host with a trace opened, and a
// browser that connects later gets the replay with its hello; over the real WebSocket.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startWebHost, type WebHost } from '../../src/host/web-host.js';
import type { StepEvent } from '../../src/shared/events.js';
import { parseEvent, type EngineEvent } from '../../src/shared/messages.js';
import { tempDir } from '../engine/model/helpers.js';
import { missingBuild, paths } from './helpers.js';
import { recordTinyTrace } from './run-fixtures.js';

const skipReason = missingBuild();
if (skipReason) console.warn(`skipping the trace replay web test: ${skipReason}`);

const tmp = tempDir('echo-replay-web-');
const savedCache = process.env.ECHO_STUDIO_CACHE;
let web: WebHost | null = null;
let liveSteps: StepEvent[];
let tracePath: string;

beforeAll(async () => {
  if (skipReason) return;
  process.env.ECHO_STUDIO_CACHE = join(tmp.path, 'cache');
  tracePath = join(tmp.path, 'run.jsonl');
  const recorded = await recordTinyTrace(tmp.path, tracePath, { requests: 2, maxNewTokens: 10 });
  liveSteps = recorded.steps;
  const modelsDir = recorded.modelsDir;
  web = await startWebHost({
    port: 0,
    rendererDir: paths.rendererDir,
    engineHostEntry: paths.engineHostEntry,
    modelsDir,
    openTrace: tracePath,
    log: () => {},
  });
});
afterAll(async () => {
  await web?.close();
  process.env.ECHO_STUDIO_CACHE = savedCache;
  tmp.cleanup();
});

describe.skipIf(skipReason !== null)('trace replay in the web host', () => {
  it('shows the trace to a browser that connects after the start', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${web!.port}/ws?token=${web!.token}`, { origin: `http://127.0.0.1:${web!.port}` });
    const events: EngineEvent[] = [];
    // The run state as the studio's store folds it: from status and run.state, the latest wins.
    // (The hello may be answered before or after the engine host has finished opening the trace.)
    const runState = () =>
      events.reduce<string | null>((state, e) => (e.type === 'status' ? e.runState : e.type === 'run.state' ? e.state : state), null);
    const finished = new Promise<void>((resolve) => {
      ws.on('message', (data) => {
        const parsed = parseEvent(JSON.parse(data.toString()));
        if (!parsed.ok) throw new Error(parsed.error);
        events.push(parsed.value);
        if (runState() === 'finished' && events.some((e) => e.type === 'frame' && e.metrics)) resolve();
      });
    });
    await new Promise<void>((resolve) => ws.once('open', () => resolve()));
    ws.send(JSON.stringify({ type: 'hello' }));
    await finished;
    // As the store reads frames: a frame starting at step 0 starts the picture afresh.
    const frames = events.filter((e) => e.type === 'frame');
    const fresh = frames.map((f) => f.steps[0]?.step).lastIndexOf(0);
    const steps = frames.slice(fresh).flatMap((f) => f.steps);
    expect(JSON.parse(JSON.stringify(steps))).toEqual(JSON.parse(JSON.stringify(liveSteps)));
    ws.close();
  });
});
