// A trace header and a run for tests, without hashing real models.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TRACE_FORMAT, TRACE_SCHEMA_VERSION, type TraceHeader } from '../../../src/shared/trace-schema.js';
import { syntheticConfig, syntheticRun, type SyntheticRunOptions } from '../metrics/synthetic-run.js';

const fakeSha = (c: string) => c.repeat(64);

export const RUN_OPTIONS: SyntheticRunOptions = { seed: 11, batch: 3, requests: 5, maxNewTokens: 24, depth: 4, kmax: 15, withText: true };

export function testHeader(options: SyntheticRunOptions = RUN_OPTIONS): TraceHeader {
  return {
    type: 'header',
    format: TRACE_FORMAT,
    schemaVersion: TRACE_SCHEMA_VERSION,
    createdAt: '2026-01-02T03:04:05.000Z',
    writer: 'echo-studio test',
    config: syntheticConfig(options),
    models: {
      draft: { dir: 'models/draft', files: [{ name: 'config.json', bytes: 10, sha256: fakeSha('a') }, { name: 'model.safetensors', bytes: 99, sha256: fakeSha('b') }] },
      target: { dir: 'models/target', files: [{ name: 'config.json', bytes: 11, sha256: fakeSha('c') }, { name: 'model.safetensors', bytes: 999, sha256: fakeSha('d') }] },
    },
    hardware: { cpuModel: 'Test CPU', cores: 2, memoryBytes: 1 << 30, platform: 'linux', arch: 'x64', runtime: 'node 20', provider: 'cpu' },
    recordCandidates: false,
  };
}

export const testRun = (options: SyntheticRunOptions = RUN_OPTIONS) => syntheticRun(options);

export function tempDir(): string {
  return mkdtempSync(path.join(os.tmpdir(), 'echo-trace-test-'));
}
