// The τ a gated policy shows the studio as its knobs, and how a change of knobs moves them: the
// policies' own rules, kept beside them so that a host asks here instead of mirroring them.
// dense gates every depth its calibration measured (its dense τ_d), echo and fixed only the sweet
// spots; fixed holds one τ for every gated depth.
import type { Knobs, RunConfig } from '../../shared/config.js';

/** The τ by depth a policy starts with, from its config and the τ_d its calibration resolved. */
export function startingTaus(config: Pick<RunConfig, 'policy' | 'tau'>, gates: { taus: Record<string, number>; denseTaus: Record<string, number> } | null): { taus: Record<string, number>; tau?: number } {
  if (!gates) return { taus: {} };
  const taus = config.policy === 'dense' && Object.keys(gates.denseTaus).length > 0 ? gates.denseTaus : gates.taus;
  if (config.policy === 'fixed' && config.tau !== undefined) return { taus: Object.fromEntries(Object.keys(taus).map((d) => [d, config.tau!])), tau: config.tau };
  return { taus: { ...taus } };
}

/** The τ after a knobs change: new τ_d replace the old set; fixed keeps one τ for all its depths. */
export function tausAfter(policy: string, current: { taus: Record<string, number>; tau?: number }, change: Knobs): { taus: Record<string, number>; tau?: number } {
  const tau = change.tau ?? current.tau;
  let taus = change.taus !== undefined ? { ...change.taus } : current.taus;
  if (policy === 'fixed' && tau !== undefined) taus = Object.fromEntries(Object.keys(taus).map((d) => [d, tau]));
  return { taus, ...(tau !== undefined ? { tau } : {}) };
}
