import { Command, InvalidArgumentError } from 'commander';
import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { integer, list, withoutDefault } from '../../src/cli/flags.js';
import { register as registerModel } from '../../src/cli/commands/model.js';
import { register as registerReproduce } from '../../src/cli/commands/reproduce.js';
import { register as registerSweep } from '../../src/cli/commands/sweep.js';
import { register as registerTrace } from '../../src/cli/commands/trace.js';
import { KNOBS } from '../../src/shared/knobs.js';

describe('shared flag parsers', () => {
  it('integer takes whole numbers from its minimum and names the flag otherwise', () => {
    const requests = integer('--requests', 1);
    expect(requests('3')).toBe(3);
    expect(() => requests('0')).toThrow(/--requests must be an integer ≥ 1, got "0"/);
    expect(() => requests('1.5')).toThrow(InvalidArgumentError);
    expect(() => requests('')).toThrow(InvalidArgumentError);
  });

  it('list parses each part and refuses empty ones', () => {
    const batches = list('--batches', integer('--batches', 1));
    expect(batches('1, 8,32')).toEqual([1, 8, 32]);
    expect(() => batches('1,,8')).toThrow(/--batches takes a comma-separated list, got "1,,8"/);
    expect(() => batches('1,0')).toThrow(/--batches must be an integer ≥ 1/);
  });
});

describe('flags cut from the knob registry', () => {
  const program = new Command();
  registerModel(program);
  registerTrace(program);
  registerSweep(program);
  registerReproduce(program);
  const command = (path: string) => path.split(' ').reduce<Command>((c, name) => c.commands.find((sub) => sub.name() === name)!, program);
  const option = (path: string, flag: string) => command(path).options.find((o) => o.long === flag)!;
  const parse = (path: string, flag: string, text: string) => option(path, flag).parseArg!(text, undefined);
  const cores = availableParallelism();

  it("gives trace what-if the run's knobs: their parsers, their ranges, their help with the recorded run as the default", () => {
    for (const [flag, name] of [['--kmax', 'kmax'], ['--taus', 'taus'], ['--tau', 'tau'], ['--max-depth', 'maxDepth'], ['--max-width', 'maxWidth'], ['--chain-length', 'chainLength']] as const) {
      const o = option('trace what-if', flag);
      expect(o.flags).toBe(KNOBS[name].flag);
      expect(o.description).toBe(`${withoutDefault(KNOBS[name].help)}; default: the recorded run's`);
    }
    expect(option('trace what-if', '--kmax').description).toBe("verification budget: Σ(1+K_i) ≤ K_max tokens per step; default: the recorded run's");
    expect(parse('trace what-if', '--kmax', '12')).toBe(12);
    expect(() => parse('trace what-if', '--kmax', '0')).toThrow(/^--kmax must be an integer in \[1, 65536\], got "0"$/);
    expect(() => parse('trace what-if', '--max-depth', 'x')).toThrow(/^--max-depth must be an integer in \[1, 64\], got "x"$/);
    // The upper bound is the run config's own: the flag refuses what the config would, in its words.
    expect(() => parse('trace what-if', '--max-depth', '65')).toThrow(/^--max-depth must be an integer in \[1, 64\], got "65"$/);
    expect(() => parse('trace what-if', '--tau', '1.5')).toThrow(/thresholds are probabilities in \[0, 1\]/);
    expect(parse('trace what-if', '--taus', '0:0.2,3:0.35')).toEqual({ 0: 0.2, 3: 0.35 });
    expect(() => parse('trace what-if', '--draft-cost', 'auto')).toThrow(/--draft-cost takes a share of a target forward in \[0, 10\], got "auto"/);
  });

  it('parses each entry of sweep and reproduce --kmax lists with the kmax knob', () => {
    for (const path of ['sweep', 'reproduce']) {
      expect(option(path, '--kmax').flags).toBe('--kmax <list>');
      expect(parse(path, '--kmax', '16,64')).toEqual([16, 64]);
      expect(() => parse(path, '--kmax', '8,0')).toThrow(/^--kmax must be an integer in \[1, 65536\], got "0"$/);
      expect(() => parse(path, '--kmax', '8,70000')).toThrow(/^--kmax must be an integer in \[1, 65536\], got "70000"$/);
      expect(() => parse(path, '--kmax', '8,,9')).toThrow(/--kmax takes a comma-separated list/);
    }
  });

  it("takes model check --threads in the threads knob's range, 1 to twice this machine's cores, by default 2", () => {
    expect(option('model check', '--threads').defaultValue).toBe(2);
    expect(parse('model check', '--threads', String(2 * cores))).toBe(2 * cores);
    expect(() => parse('model check', '--threads', String(2 * cores + 1))).toThrow(new RegExp(`--threads takes 1 to ${2 * cores} `));
    expect(() => parse('model check', '--threads', '0')).toThrow(InvalidArgumentError);
  });
});
