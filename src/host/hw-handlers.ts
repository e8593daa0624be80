// hw.knee in the engine host: times the target's forward against packed token count on this
// machine (profile-hw's measurement, over the requests a step of the batch would pack), fits the
// knee where its cost turns linear, and answers with the K_max it suggests for the batch. Refused
// while a run lives: the run's forwards would share the cores with the timed ones.
import { BUNDLED_TARGET, DEFAULT_TOKEN_COUNTS, fitKnee, loadModel, measureForwardCurve, pairThreads, readModelInfo, Refusal, rowsNeeded, suggestKmax } from '../engine/index.js';
import type { HandlerModule } from './handler-context.js';

/** As profile-hw: each slot holds 64 committed rows; the packed rows spread over up to 16 requests. */
const CONTEXT_ROWS = 64;
const MAX_SLOTS = 16;
const REPEATS = 5;

export const hwHandlers: HandlerModule = ({ host, study }) => {
  let measuring = false;
  return {
    async 'hw.knee'({ batch, targetDir }, ctx) {
      const state = host.status().runState;
      if (state === 'loading' || state === 'running' || state === 'paused') {
        ctx.reply({ type: 'error', message: `cannot time the target while a run is ${state}: its forwards would share the cores; stop it first` });
        return;
      }
      if (study.running) {
        ctx.reply({ type: 'error', message: 'cannot time the target while the quick study runs: its forwards would share the cores' });
        return;
      }
      if (measuring) {
        ctx.reply({ type: 'error', message: 'the target is already being timed; wait for that answer' });
        return;
      }
      measuring = true;
      // The timing answers the asker alone: other studios' runs are not affected by it.
      const progress = (done: number, total: number, message?: string) =>
        ctx.reply(message === undefined ? { type: 'progress', task: 'knee', done, total } : { type: 'progress', task: 'knee', done, total, message });
      try {
        // A folder outside the chosen ones gets the answer a missing one gets.
        let dir = targetDir === undefined ? undefined : host.files.readable(targetDir);
        if (dir === undefined) {
          dir = (await host.refreshStatus()).bundledModels.find((m) => m.name === BUNDLED_TARGET)?.dir;
          if (dir === undefined) throw new Refusal(`the bundled target (${BUNDLED_TARGET}) is not installed; choose a target folder`);
        }
        const measure = { tokenCounts: DEFAULT_TOKEN_COUNTS, repeats: REPEATS, slots: Math.min(batch, MAX_SLOTS), context: CONTEXT_ROWS };
        // One step per round of the sizes (the untimed one first), and a last one for the fit.
        const total = REPEATS + 2;
        progress(0, total, `timing the target's forward: ${dir}`);
        const target = await loadModel(dir, { slots: measure.slots, maxLength: rowsNeeded(measure), ...pairThreads(undefined, readModelInfo(dir).parameters).target });
        const curve = await measureForwardCurve(target, {
          ...measure,
          onRound: (done, rounds) => progress(done, total, `round ${done} of ${rounds} of ${DEFAULT_TOKEN_COUNTS.length} sizes`),
        }).finally(() => target.release());
        const fit = fitKnee(curve);
        const knee = Math.max(1, Math.round(fit.kmax));
        const kmax = suggestKmax(fit, batch);
        progress(total, total, `knee at ${knee} tokens (${fit.tArMs.toFixed(2)} ms for one): K_max ${kmax} for batch ${batch}`);
        ctx.reply({ type: 'hw.knee', batch, knee, kmax, tArMs: fit.tArMs, target: dir });
      } catch (err) {
        progress(1, 1);
        ctx.reply({ type: 'error', message: `cannot time the target: ${(err as Error).message.split('\n')[0]}` });
      } finally {
        measuring = false;
      }
    },
  };
};
