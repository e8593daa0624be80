// Running a CLI subcommand in-process as commander would, with its stdout and stderr captured;
// and a calibration profile that gates only the root, for pairs a warm-up cannot calibrate.
import { Command } from 'commander';
import { vi } from 'vitest';
import { buildProfile, saveProfile } from '../../src/engine/calibrate/profile.js';

export interface CliOutput {
  stdout: string;
  stderr: string;
}

/** Parses `echo-studio ...args` with the commands `register` adds; throws what the action throws. */
export async function runCli(register: (program: Command) => void, args: string[]): Promise<CliOutput> {
  const program = new Command('echo-studio').exitOverride();
  register(program);
  const output: CliOutput = { stdout: '', stderr: '' };
  const capture = (stream: 'stdout' | 'stderr') =>
    vi.spyOn(process[stream], 'write').mockImplementation((chunk: string | Uint8Array) => {
      output[stream] += String(chunk);
      return true;
    });
  const spies = [capture('stdout'), capture('stderr')];
  try {
    await program.parseAsync(['node', 'echo-studio', ...args]);
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
  return output;
}

export type Histogram = { edges: number[]; accepted: number[]; rejected: number[] };

/** A profile for a draft/target pair gating only the root, at τ in the given signal. */
export async function saveRootGateProfile(
  path: string,
  models: { draft: string; target: string },
  confidence: 'path-prob' | 'path-margin',
  tau: number,
  histogram: Histogram = { edges: [], accepted: [], rejected: [] },
): Promise<string> {
  await saveProfile(
    path,
    buildProfile({
      models,
      domain: 'test',
      delta: 0.75,
      tauRule: 'budget',
      significance: 0.05,
      confidence,
      targetDepth: 1,
      samples: { prompts: 1, steps: 1, requestSteps: 1 },
      depths: [{ depth: 0, accepted: 9, rejected: 9, auc: 0.8, threshold: { tau, alternative: 0.5, j: 0.5, truePositiveRate: 0.8, falsePositiveRate: 0.3 }, sweetSpot: true }],
      histograms: [histogram],
    }),
  );
  return path;
}
