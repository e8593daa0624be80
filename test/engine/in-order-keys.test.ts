// The load-time note for runs whose slots reach past the key columns a forward sums in order.
import { describe, expect, it } from 'vitest';
import { IN_ORDER_KEYS } from '../../src/engine/model/graph-builder.js';
import { inOrderKeysNote } from '../../src/engine/run/session-run.js';

describe('in-order attention sums', () => {
  it('are 1,024 keys long with values multiplied 16 columns at a time', () => {
    expect(IN_ORDER_KEYS).toBe(1024);
  });

  it('a quantised target whose slots reach past them gets a note at load; float32 and short slots do not', () => {
    expect(inOrderKeysNote(1500, 'int8')).toMatch(/reach 1500 positions; past 1024 an int8 target's verified rows may sum attention in another order/);
    expect(inOrderKeysNote(1500, 'int4')).toMatch(/int4 target/);
    expect(inOrderKeysNote(1024, 'int8')).toBeNull();
    expect(inOrderKeysNote(1500, 'float32')).toBeNull();
    expect(inOrderKeysNote(1500, undefined)).toBeNull();
  });
});
