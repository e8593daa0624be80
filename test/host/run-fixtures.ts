// For the engine host's run and trace tests: a tiny random-weight draft/target pair (the draft is
// the target with noisy weights, so trees are partly accepted), a prompts file, and a client on a
// real MessageChannel that collects validated events and waits for the ones a test expects.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { afterAll, beforeAll } from 'vitest';
import { EngineHost } from '../../src/host/host.js';
import { nodeMessagePortPort } from '../../src/host/port.js';
import type { RunConfig } from '../../src/shared/config.js';
import type { StepEvent } from '../../src/shared/events.js';
import { parseEvent, type EngineEvent, type EngineRequest, type EventOf, type EventType } from '../../src/shared/messages.js';
import { writePerturbedPair } from '../engine/model/fixtures.js';
import { tempDir } from '../engine/model/helpers.js';

export interface TinyPair {
  draftDir: string;
  targetDir: string;
  promptsFile: string;
}

export function writeTinyPair(root: string): TinyPair {
  const targetDir = join(root, 'target');
  const draftDir = join(root, 'draft');
  writePerturbedPair(targetDir, draftDir, { seed: 21, hiddenSize: 32, numLayers: 2 }, { noise: 0.3, stream: 5 });
  const promptsFile = join(root, 'prompts.jsonl');
  const prompts = ['def add(x, y):', 'Once upon a time', 'x = 1', 'import os', 'for i in range(10):', 'The answer is'];
  writeFileSync(promptsFile, prompts.map((prompt, i) => JSON.stringify({ id: `p${i}`, prompt })).join('\n') + '\n');
  return { draftDir, targetDir, promptsFile };
}

export function tinyConfig(pair: TinyPair, overrides: Partial<RunConfig> = {}): RunConfig {
  return {
    draftDir: pair.draftDir,
    targetDir: pair.targetDir,
    promptsFile: pair.promptsFile,
    policy: 'eagle2',
    batch: 2,
    kmax: 16,
    requests: 4,
    maxNewTokens: 24,
    temperature: 0,
    seed: 1,
    shape: { depth: 4, topk: 3, tokens: 6 },
    ...overrides,
  };
}

/** A client of the host over a real MessageChannel: every event is validated as a transport would. */
export function connectClient(host: EngineHost) {
  const channel = new MessageChannel();
  host.attach(nodeMessagePortPort(channel.port1));
  const events: EngineEvent[] = [];
  const waiters: Array<() => void> = [];
  channel.port2.on('message', (data) => {
    const parsed = parseEvent(JSON.parse(JSON.stringify(data)));
    if (!parsed.ok) throw new Error(parsed.error);
    events.push(parsed.value);
    for (const wake of waiters.splice(0)) wake();
  });
  let cursor = 0;
  /** Waits for the next event (after the previous match) of this type that satisfies `match`. */
  async function next<T extends EventType>(type: T, match: (e: EventOf<T>) => boolean = () => true): Promise<EventOf<T>> {
    for (;;) {
      for (; cursor < events.length; cursor++) {
        const e = events[cursor];
        if (e.type === type && match(e as EventOf<T>)) {
          cursor++;
          return e as EventOf<T>;
        }
      }
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  }
  /** Waits for the next event (after the previous match) of any of these types. */
  async function nextOf(types: readonly EventType[]): Promise<EngineEvent> {
    for (;;) {
      for (; cursor < events.length; cursor++) {
        const e = events[cursor];
        if (types.includes(e.type)) {
          cursor++;
          return e;
        }
      }
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  }
  /** Every step that arrived in frames so far, in arrival order. */
  const steps = (): StepEvent[] => events.flatMap((e) => (e.type === 'frame' ? e.steps : []));
  const send = (request: EngineRequest) => channel.port2.postMessage(request);
  return { send, next, nextOf, events, steps, close: () => channel.port2.close() };
}

export interface TinyPairHost {
  /** The temporary folder everything lives in. */
  root: string;
  pair: TinyPair;
  /** An empty models folder: hosts made by newHost find no bundled pair. */
  modelsDir: string;
  /** A host on the empty models folder and a client attached to it; `log` hears the host's diagnostics. */
  newHost(log?: (line: string) => void): { host: EngineHost; client: ReturnType<typeof connectClient> };
}

/**
 * Registers, for the calling test file, a tiny pair in a temporary folder with a graph cache of
 * its own (ECHO_STUDIO_CACHE, restored afterwards); the fields are set once beforeAll has run.
 */
export function useTinyPairHost(prefix: string): TinyPairHost {
  const tmp = tempDir(prefix);
  const savedCache = process.env.ECHO_STUDIO_CACHE;
  const fixture = {
    root: tmp.path,
    newHost(log = () => {}) {
      const host = new EngineHost({ version: 'test', modelsDir: fixture.modelsDir, log });
      return { host, client: connectClient(host) };
    },
  } as TinyPairHost;
  beforeAll(() => {
    process.env.ECHO_STUDIO_CACHE = join(tmp.path, 'cache');
    fixture.pair = writeTinyPair(tmp.path);
    fixture.modelsDir = join(tmp.path, 'models');
    mkdirSync(fixture.modelsDir);
  });
  afterAll(() => {
    process.env.ECHO_STUDIO_CACHE = savedCache;
    tmp.cleanup();
  });
  return fixture;
}

/**
 * Records a trace to replay: writes the tiny pair under `root`, runs it to the end on an
 * in-process engine host and exports the run's trace (JSONL) to `tracePath`. Returns the empty
 * models folder a web host can be started on, and the steps the run sent live.
 */
export async function recordTinyTrace(root: string, tracePath: string, overrides: Partial<RunConfig> = {}): Promise<{ modelsDir: string; steps: StepEvent[] }> {
  const pair = writeTinyPair(root);
  const modelsDir = join(root, 'models');
  mkdirSync(modelsDir);
  const host = new EngineHost({ version: 'test', modelsDir, log: () => {} });
  const client = connectClient(host);
  client.send({ type: 'run.start', config: tinyConfig(pair, overrides) });
  await client.next('run.state', (e) => e.state === 'finished');
  const steps = client.steps();
  client.send({ type: 'trace.export', path: tracePath, format: 'jsonl' });
  await client.next('progress', (e) => e.task === 'export');
  client.close();
  await host.shutdown();
  return { modelsDir, steps };
}
