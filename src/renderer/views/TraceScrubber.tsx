// Scrubbing a finished run or an opened trace: the slider picks a step and sends trace.seek; the
// engine host re-sends steps 0…N and every view rebuilds as it stood at step N. Dragging moves
// only the number; the seek goes out when the slider is released (each seek replays the trace).
import { useState } from 'react';
import { useSend, useStudio } from './StudioContext.js';

export function TraceScrubber() {
  const runState = useStudio((s) => s.runState);
  // Only a finished run shows the slider: while a run streams, the end and the newest step (new
  // every frame) must not re-render this view.
  const end = useStudio((s) => (s.runState === 'finished' ? s.runEndStep : null));
  const shown = useStudio((s) => (s.runState === 'finished' ? (s.latestStep?.step ?? null) : null));
  const seekStarted = useStudio((s) => s.seekStarted);
  const send = useSend();
  const [dragged, setDragged] = useState<number | null>(null);
  // The engine host seeks only when no run is streaming: a finished run or an opened trace.
  if (runState !== 'finished' || end === null || shown === null) return null;
  const value = dragged ?? shown;
  const commit = (): void => {
    if (dragged === null) return;
    setDragged(null);
    if (dragged === shown) return;
    seekStarted();
    send({ type: 'trace.seek', step: dragged });
  };
  return (
    <div className="trace-scrubber" data-testid="trace-scrubber">
      <label htmlFor="trace-scrubber-range">Replay</label>
      <input
        id="trace-scrubber-range"
        type="range"
        min={0}
        max={end}
        step={1}
        value={value}
        aria-label="step to replay up to"
        onChange={(e) => setDragged(Number(e.target.value))}
        onPointerUp={commit}
        onKeyUp={commit}
        onBlur={commit}
      />
      <span className="trace-scrubber-step" data-testid="trace-scrubber-step">
        step {value} of {end}
      </span>
    </div>
  );
}
