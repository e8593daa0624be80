// The one τ_d grammar the command line and the studio's run form both read.
import { expect, test } from 'vitest';
import { parseTauList } from '../../src/shared/config.js';

test('DEPTH:TAU pairs apart by commas or spaces, DEPTH=TAU alike, depths as plain numbers', () => {
  expect(parseTauList('0:0.2,5:0.35')).toEqual({ taus: { '0': 0.2, '5': 0.35 } });
  expect(parseTauList(' 0=0.2 5=0.35 ')).toEqual({ taus: { '0': 0.2, '5': 0.35 } });
  expect(parseTauList('0 : 0.2,  05:1, 3:0')).toEqual({ taus: { '0': 0.2, '5': 1, '3': 0 } });
  expect(parseTauList('2:1e-1')).toEqual({ taus: { '2': 0.1 } });
});

test('"none" is no gates', () => {
  expect(parseTauList('none')).toEqual({ taus: {} });
});

test('names the first part that is not a pair with τ in [0, 1]', () => {
  expect(parseTauList('0:0.2, two:0.3')).toEqual({ bad: 'two:0.3' });
  expect(parseTauList('0:1.5')).toEqual({ bad: '0:1.5' });
  expect(parseTauList('0:-0.1')).toEqual({ bad: '0:-0.1' });
  expect(parseTauList('0.5')).toEqual({ bad: '0.5' });
  expect(parseTauList('')).toEqual({ bad: '' });
});

test('refuses a depth given twice, naming the part that repeats it (05 is depth 5)', () => {
  expect(parseTauList('0:0.2,0:0.3')).toEqual({ bad: '0:0.3', repeats: '0' });
  expect(parseTauList('5:0.2, 1:0.1, 05:0.2')).toEqual({ bad: '05:0.2', repeats: '5' });
});
