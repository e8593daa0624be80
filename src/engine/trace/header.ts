// The facts a trace header records about where a run came from: the model pair by content hash,
// the machine, the config. Hashes are streamed so multi-GB weights never sit in memory.

import { createHash } from 'node:crypto';
import { createReadStream, readdirSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AttentionWindow, RunConfig, WeightPrecision } from '../../shared/config.js';
import {
  TRACE_FORMAT,
  TRACE_SCHEMA_VERSION,
  TraceHeaderSchema,
  type Hardware,
  type ModelRef,
  type TraceHeader,
} from '../../shared/trace-schema.js';
import { Refusal } from '../refusal.js';

/** Weight files a model folder may hold (Hugging Face or exported ONNX), sharded or not. */
const WEIGHT_FILE = /(\.safetensors|\.onnx|\.onnx_data|\.onnx\.data|^pytorch_model.*\.bin)$/;

export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** config.json and every weight file of a model folder, by name, size and SHA-256. */
export async function describeModel(dir: string): Promise<ModelRef> {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    throw new Refusal(`model folder not found or unreadable: ${dir}`);
  }
  if (!names.includes('config.json')) throw new Refusal(`model folder ${dir} has no config.json`);
  const weights = names.filter((n) => WEIGHT_FILE.test(n)).sort();
  if (weights.length === 0) throw new Refusal(`model folder ${dir} has no weights (*.safetensors, *.onnx or pytorch_model*.bin)`);
  const files = [];
  for (const name of ['config.json', ...weights]) {
    const file = path.join(dir, name);
    files.push({ name, bytes: statSync(file).size, sha256: await sha256File(file) });
  }
  return { dir, files };
}

export function describeHardware(provider: string): Hardware {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memoryBytes: os.totalmem(),
    platform: process.platform,
    arch: process.arch,
    runtime: `node ${process.versions.node}`,
    provider,
  };
}

export interface TraceHeaderInput {
  config: RunConfig;
  /** Model folders actually loaded (the bundled pair's when the config names none). */
  draftDir: string;
  targetDir: string;
  /** Execution provider the models run on, e.g. 'cpu'. */
  provider: string;
  /** The weight precision each model was loaded with (absent: float32). */
  draftPrecision?: WeightPrecision;
  targetPrecision?: WeightPrecision;
  /** What drafted: a small model or an EAGLE-3 head. */
  draftKind?: 'model' | 'eagle3-head';
  /** The target's end-of-sequence ids (nothing was drafted below them). */
  targetEnds?: readonly number[];
  /** The attention window each model ran with, when not the whole past. */
  windows?: { draft?: AttentionWindow | null; target?: AttentionWindow | null };
  /** Application name and version, e.g. 'echo-studio 0.1.0'. */
  writer: string;
  profile?: Record<string, unknown>;
  recordCandidates?: boolean;
  /** Run start; defaults to now. */
  createdAt?: Date;
}

/** Hash both models and describe this machine: the header of a new trace, validated. */
export async function buildTraceHeader(input: TraceHeaderInput): Promise<TraceHeader> {
  const [draft, target] = await Promise.all([describeModel(input.draftDir), describeModel(input.targetDir)]);
  return TraceHeaderSchema.parse({
    type: 'header',
    format: TRACE_FORMAT,
    schemaVersion: TRACE_SCHEMA_VERSION,
    createdAt: (input.createdAt ?? new Date()).toISOString(),
    writer: input.writer,
    config: input.config,
    models: {
      draft: {
        ...draft,
        ...(input.draftKind ? { kind: input.draftKind } : {}),
        precision: input.draftPrecision ?? 'float32',
        ...(input.windows?.draft ? { window: input.windows.draft } : {}),
      },
      target: {
        ...target,
        precision: input.targetPrecision ?? 'float32',
        ...(input.windows?.target ? { window: input.windows.target } : {}),
        ...(input.targetEnds && input.targetEnds.length > 0 ? { ends: [...input.targetEnds] } : {}),
      },
    },
    hardware: describeHardware(input.provider),
    ...(input.profile ? { profile: input.profile } : {}),
    recordCandidates: input.recordCandidates ?? false,
  });
}
