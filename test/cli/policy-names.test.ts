// The command line takes any registered policy by name, not only the built-in ones; an unknown
// name is refused in one line that lists the registered names.
import { describe, expect, it } from 'vitest';
import { runConfigFromFlags, type RunFlags } from '../../src/cli/run-config.js';
import { parseSweepEntry } from '../../src/engine/run/sweep.js';
import { availablePolicies, createPolicy, registerPolicy } from '../../src/engine/policy/index.js';

const flags = (policy: string): RunFlags => ({ policy, batch: 2, requests: 4, maxNewTokens: 8, temperature: 0, seed: 0 });

describe('policy names', () => {
  it('a registered policy is accepted by run and sweep; an unknown one is refused naming every registered policy', () => {
    expect(() => runConfigFromFlags(flags('wide-chain'))).toThrow('unknown policy "wide-chain"');
    registerPolicy('wide-chain', (options) => createPolicy('chain', { ...options, chainLength: 8 }));
    expect(runConfigFromFlags(flags('wide-chain')).policy).toBe('wide-chain');
    expect(parseSweepEntry('wide-chain@4:64')).toEqual({ label: 'wide-chain@4:64', policy: 'wide-chain', draftWindow: { sink: 4, recent: 64 } });

    let message = '';
    try {
      runConfigFromFlags(flags('nope'));
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toBe(`unknown policy "nope" (choose from ${availablePolicies().join(', ')})`);
    expect(message).toContain('wide-chain');
    expect(message).not.toContain('\n');
    expect(() => parseSweepEntry('nope')).toThrow(message);
  });

  it('a name outside the plain alphabet is refused by the run config itself', () => {
    expect(() => runConfigFromFlags(flags('Echo#2'))).toThrow(/unknown policy "Echo#2"/);
    expect(() => registerPolicy('Echo#2', (options) => createPolicy('chain', options))).toThrow(/lower-case letters, digits and dashes/);
  });
});
