// Teaching mode: pause the run, advance one step at a time, and read a sentence per decision.
import { useMemo } from 'react';
import type { StepEvent } from '../../shared/events.js';
import { teachStep, type DecisionKind } from '../studio/teaching.js';
import { viewedStep, type StudioState } from '../studio/store.js';
import { useSend, useStudio, useThrottledStudio } from './StudioContext.js';

const KIND_LABEL: Record<DecisionKind, string> = {
  budget: 'budget',
  unused: 'unused budget',
  drain: 'drain',
  draft: 'drafted',
  given: 'given',
  truncate: 'truncated',
  pass: 'gate passed',
  waived: 'cut waived',
  priced: 'priced out',
  depth: 'deepened',
  width: 'widened',
  verify: 'verified',
  finish: 'finished',
};

/** How often the sentences follow a streaming run. */
export const STREAMING_MS = 200;

const selectStep = (s: StudioState): StepEvent | null => viewedStep(s);
const selectSteps = (s: StudioState): StepEvent[] => s.steps;

export function TeachingPanel() {
  const teaching = useStudio((s) => s.teaching);
  const setTeaching = useStudio((s) => s.setTeaching);
  const pinStep = useStudio((s) => s.pinStep);
  const selectRequest = useStudio((s) => s.selectRequest);
  const selectedId = useStudio((s) => s.selectedRequestId);
  const runState = useStudio((s) => s.runState);
  // While streaming the sentences follow the stream at the request view's pace (five times a
  // second), so they stay within a few steps of the Super-Tree, and say which step they are
  // about; once the run stops streaming (paused, finished, teaching) the last step shows at once,
  // the same one the Super-Tree shows.
  const settled = teaching || runState !== 'running';
  const recent = useThrottledStudio(selectSteps, settled ? 0 : STREAMING_MS, Object.is, settled ? undefined : 120);
  const step = useThrottledStudio(selectStep, settled ? 0 : STREAMING_MS, Object.is, settled ? undefined : 120);
  const send = useSend();
  const decisions = useMemo(() => (step ? teachStep(step) : []), [step]);
  const shown = selectedId === null ? decisions : decisions.filter((d) => d.requestId === undefined || d.requestId === selectedId);
  const index = step ? recent.findIndex((s) => s.step === step.step) : -1;
  const canAdvance = (index >= 0 && index < recent.length - 1) || runState === 'paused' || runState === 'running';

  const enter = (): void => {
    setTeaching(true);
    if (runState === 'running') send({ type: 'run.pause' });
  };
  const leave = (): void => {
    setTeaching(false);
    pinStep(null);
  };
  const nextStep = (): void => {
    // Within the kept recent, step forward through history; at the newest, ask the engine for one.
    if (index >= 0 && index < recent.length - 1) pinStep(recent[index + 1].step);
    else {
      pinStep(null);
      send({ type: 'run.step' });
    }
  };

  return (
    <section className="view teaching" aria-label="Teaching mode">
      <header className="view-header">
        <h2>Teaching</h2>
        {step !== null && (
          <span className="summary" data-testid="teaching-step">
            step {step.step}
          </span>
        )}
        {!teaching ? (
          <button type="button" onClick={enter}>
            Step through decisions
          </button>
        ) : (
          <>
            <button type="button" disabled={index <= 0} onClick={() => pinStep(recent[index - 1].step)}>
              ◀ previous step
            </button>
            <button type="button" onClick={nextStep} disabled={!canAdvance}>
              next step ▶
            </button>
            <button type="button" onClick={leave}>
              Leave teaching
            </button>
          </>
        )}
        {selectedId !== null && (
          <span className="summary">
            only request {selectedId} ·{' '}
            <button type="button" className="link" onClick={() => selectRequest(null)}>
              show all
            </button>
          </span>
        )}
      </header>
      {step === null ? (
        <p className="muted">Start a run; each step's decisions are explained here.</p>
      ) : (
        <ol className="decisions" data-testid="decisions">
          {shown.slice(0, teaching ? 400 : 40).map((d, i) => (
            <li key={i} className={`decision kind-${d.kind}`}>
              <span className="kind">{KIND_LABEL[d.kind]}</span>
              {d.requestId !== undefined ? (
                <button type="button" className="link sentence" onClick={() => selectRequest(d.requestId ?? null)}>
                  {d.text}
                </button>
              ) : (
                <span className="sentence">{d.text}</span>
              )}
            </li>
          ))}
          {!teaching && shown.length > 40 && <li className="muted">… {shown.length - 40} more; step through to read them all.</li>}
        </ol>
      )}
    </section>
  );
}
