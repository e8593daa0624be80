import { describe, expect, it } from 'vitest';
import { parsePrompts, takeRequests } from '../../src/engine/workload.js';

describe('prompts JSONL', () => {
  it('reads id, prompt, optional domain and arrival, skipping blank lines', () => {
    const records = parsePrompts('{"id":"a","prompt":"x"}\n\n{"id":"b","domain":"code","prompt":"y","arrivalMs":20}\n', 'p.jsonl');
    expect(records).toEqual([
      { id: 'a', prompt: 'x' },
      { id: 'b', domain: 'code', prompt: 'y', arrivalMs: 20 },
    ]);
  });

  it.each([
    ['{"id":"a","prompt":"x"}\n{"id":"b"', 'p.jsonl line 2: not valid JSON'],
    ['{"id":"a","prompt":"x"}\n[1,2]', 'p.jsonl line 2: the line: '],
    ['{"id":"a","prompt":3}', 'p.jsonl line 1: field "prompt": '],
    ['{"prompt":"x"}', 'p.jsonl line 1: field "id": '],
    ['{"id":"a","prompt":"x","arrivalMs":-5}', 'p.jsonl line 1: field "arrivalMs": '],
    ['{"id":"a","prompt":"x"}\n\n{"id":"a","prompt":"y"}', 'p.jsonl line 3: id "a" already used on line 1'],
    ['\n\n', 'p.jsonl: no prompts in the file'],
  ])('names the line and the problem: %j', (text, message) => {
    expect(() => parsePrompts(text, 'p.jsonl')).toThrow(message);
  });

  it('reuses the file with suffixed ids and shifted arrivals when more requests are asked for', () => {
    const records = parsePrompts('{"id":"a","prompt":"x","arrivalMs":0}\n{"id":"b","prompt":"y","arrivalMs":10}', 'p');
    expect(takeRequests(records, 5).map((r) => [r.id, r.arrivalMs])).toEqual([
      ['a', 0],
      ['b', 10],
      ['a#2', 10],
      ['b#2', 20],
      ['a#3', 20],
    ]);
    expect(takeRequests(records, 1).map((r) => r.id)).toEqual(['a']);
  });
});
