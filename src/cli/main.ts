// The echo-studio command line. Each subcommand lives in its own file under commands/ and
// exports `register(program)`; this file only lists them.
import { Command, CommanderError } from 'commander';
import { findPackageRoot, packageVersion } from '../host/paths.js';
import { register as registerServe } from './commands/serve.js';
import { register as registerModel } from './commands/model.js';
import { register as registerRun } from './commands/run.js';
import { register as registerTrace } from './commands/trace.js';
import { register as registerCalibrate } from './commands/calibrate.js';
import { register as registerProfileHw } from './commands/profile-hw.js';
import { register as registerSweep } from './commands/sweep.js';
import { register as registerReproduce } from './commands/reproduce.js';

const COMMANDS: Array<(program: Command) => void> = [
  registerServe,
  registerModel,
  registerRun,
  registerSweep,
  registerReproduce,
  registerCalibrate,
  registerProfileHw,
  registerTrace,
];

export function buildProgram(): Command {
  const program = new Command('echo-studio')
    .description('See and tune speculative decoding under a verification budget (ECHO) on real draft/target models.')
    .version(packageVersion(findPackageRoot(import.meta.url)), '-V, --version')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  for (const register of COMMANDS) register(program);
  return program;
}

async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode; // commander has printed the message
    process.stderr.write(`echo-studio: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`echo-studio: ${String(err)}\n`);
    process.exitCode = 1;
  },
);
