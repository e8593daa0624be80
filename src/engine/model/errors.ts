// One error type for everything that can go wrong while reading a model folder, so callers (CLI,
// studio) can print `message` as a single line and exit, instead of a stack trace from deep inside.
import { Refusal } from '../refusal.js';

export class ModelLoadError extends Refusal {
  /** The file (or folder) the problem is in. */
  readonly file: string;
  constructor(file: string, problem: string) {
    super(`${file}: ${problem}`);
    this.name = 'ModelLoadError';
    this.file = file;
  }
}

/** Raised for misuse of a loaded model (bad slot, bad parents, out of capacity). */
export class ModelUsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ModelUsageError';
  }
}
