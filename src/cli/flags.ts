// The command line's flags, cut from the knob registry (src/shared/knobs.ts): each knob's flag,
// help, parser and default are declared there once; a command adds a knob as an option with
// knobOption, saying only what differs for it (a help of its own, a default). A bad value is
// reported as commander's InvalidArgumentError: one line naming the flag.
import { InvalidArgumentError, Option, type Command } from 'commander';
import { availableParallelism } from 'node:os';
import { integerParser, KNOBS, numberParser, parseDraftCostShare, parseTausFlag, type KnobName } from '../shared/knobs.js';

export { DRAFT_PRECISION_HELP, DRAFT_WINDOW_HELP, TARGET_PRECISION_HELP, THREADS_HELP } from '../shared/knobs.js';

/** A parser whose Error becomes commander's one-line InvalidArgumentError. */
function forCommander<T>(parse: (text: string) => T): (text: string) => T {
  return (text) => {
    try {
      return parse(text);
    } catch (err) {
      throw new InvalidArgumentError((err as Error).message);
    }
  };
}

/** A whole number of at least `min`, e.g. integer('--requests', 1). */
export function integer(name: string, min: number) {
  return forCommander(integerParser(name, min));
}

/** Any finite number. */
export function number(name: string) {
  return forCommander(numberParser(name));
}

/** A comma-separated list whose parts are each parsed by `parse`; empty parts are refused. */
export function list<T>(name: string, parse: (part: string) => T) {
  return (value: string): T[] => {
    const parts = value.split(',').map((p) => p.trim());
    if (parts.some((p) => p === '')) throw new InvalidArgumentError(`${name} takes a comma-separated list, got "${value}"`);
    return parts.map(parse);
  };
}

/** The knob's parser as commander calls it (on this machine, for the knobs that ask). */
export function knobParser<K extends KnobName>(name: K): (text: string) => ReturnType<(typeof KNOBS)[K]['parse']> {
  const spec = KNOBS[name];
  const machine = { cores: availableParallelism() };
  return forCommander((text) => spec.parse(text, machine) as ReturnType<(typeof KNOBS)[K]['parse']>);
}

/**
 * Adds a knob to a command as its option. `defaulted` gives it the registry's default (else it is
 * absent unless given, and the command decides); `help` and `default` are a command's own words;
 * `defaultSaid` keeps the registry's help but says the command's own default in place of its
 * `(default …)` clause.
 */
export function knobOption(command: Command, name: KnobName, options: { help?: string; defaulted?: boolean; default?: unknown; defaultSaid?: string } = {}): Command {
  const spec = KNOBS[name] as { flag: string; help: string; default?: unknown };
  const fallback = options.default ?? (options.defaulted ? spec.default : undefined);
  const parse = knobParser(name) as (text: string, previous: unknown) => unknown;
  const help = options.help ?? (options.defaultSaid === undefined ? spec.help : `${withoutDefault(spec.help)}; default: ${options.defaultSaid}`);
  return fallback === undefined ? command.option(spec.flag, help, parse) : command.option(spec.flag, help, parse, fallback);
}

/** A knob's help without its closing `(default …)` clause, for a command whose default differs. */
export function withoutDefault(help: string): string {
  return help.replace(/ \(default .*\)$/, '');
}

/**
 * Adds a knob that a study over many batch sizes takes as a comma-separated list (`--kmax <list>`
 * of sweep and reproduce): each entry parsed, and its range checked, by the knob's own parser.
 */
export function knobListOption(name: KnobName, help: string): Option {
  const flag = KNOBS[name].flag.split(' ')[0];
  return new Option(`${flag} <list>`, help).argParser(list(flag, knobParser(name)));
}

/** Several knobs as options, in order, each with the registry's words. */
export function knobOptions(command: Command, names: readonly KnobName[]): Command {
  for (const name of names) knobOption(command, name);
  return command;
}

/** `--draft-cost` of trace what-if: a share of a target forward (`also` names the other forms a flag takes). */
export function parseDraftCost(value: string, also = ''): number {
  return forCommander((text: string) => parseDraftCostShare(text, also))(value);
}

/** `--taus` of run, sweep and trace what-if, in the one τ grammar (parseTauList). */
export const parseTaus = forCommander(parseTausFlag);

export const confidenceFlag = knobParser('confidence');
export const draftCostFlag = knobParser('draftCost');
export const draftPrecisionFlag = knobParser('draftPrecision');
export const targetPrecisionFlag = knobParser('targetPrecision');
export const draftWindowFlag = knobParser('draftWindow');
export const threadsFlag = knobParser('threads');

/** The workload and model folder options of run and sweep (`requests`: the command's default). */
export function withWorkloadOptions(command: Command, requests: number): Command {
  knobOption(command, 'domain');
  knobOption(command, 'promptsFile');
  knobOption(command, 'requests', { default: requests });
  knobOption(command, 'maxNewTokens', { defaulted: true });
  knobOption(command, 'temperature', { defaulted: true });
  knobOption(command, 'seed', { defaulted: true });
  return knobOptions(command, ['draftDir', 'targetDir', 'draftKind']);
}

/**
 * `--draft` and `--target` of the commands that load a pair without a workload's flags:
 * calibrate, profile-hw, reproduce. Each loads it as run does (loadPair), so the draft may be a
 * model or an EAGLE-3 head.
 */
export function withPairFolders(command: Command): Command {
  return knobOptions(command, ['draftDir', 'targetDir']);
}

/** The onnxruntime options of run and sweep. */
export function withRuntimeOptions(command: Command): Command {
  return knobOptions(command, ['threads', 'provider', 'draftPrecision', 'targetPrecision', 'draftWindow']);
}
