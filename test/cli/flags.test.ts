import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { integer, list } from '../../src/cli/flags.js';

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
