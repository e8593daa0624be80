// Policies by name: the baselines and the ECHO family (ddd, dense, fixed, echo).
import type { PolicyName } from '../../shared/config';
import { ArPolicy } from './ar';
import { ChainPolicy } from './chain';
import { DddPolicy } from './ddd';
import { DensePolicy } from './dense';
import { Eagle2Policy } from './eagle2';
import { EchoPolicy } from './echo';
import { FixedPolicy } from './fixed';
import { StaticPolicy } from './static';
import type { PolicyOptions, SpeculationPolicy } from './types';

export type PolicyFactory = (options: PolicyOptions) => SpeculationPolicy;

const registry = new Map<string, PolicyFactory>([
  ['ar', () => new ArPolicy()],
  ['chain', (o) => new ChainPolicy(o)],
  ['static', (o) => new StaticPolicy(o)],
  ['eagle2', (o) => new Eagle2Policy(o)],
  ['ddd', (o) => new DddPolicy(o)],
  ['dense', (o) => new DensePolicy(o)],
  ['fixed', (o) => new FixedPolicy(o)],
  ['echo', (o) => new EchoPolicy(o)],
]);

export function registerPolicy(name: PolicyName, factory: PolicyFactory): void {
  registry.set(name, factory);
}

export function availablePolicies(): string[] {
  return [...registry.keys()];
}

export function createPolicy(name: string, options: PolicyOptions): SpeculationPolicy {
  const factory = registry.get(name);
  if (!factory) {
    throw new Error(`unknown policy "${name}" (available: ${availablePolicies().join(', ')})`);
  }
  return factory(options);
}

export type { PolicyOptions, SpeculationPolicy, StepContext, StepRequest } from './types';
