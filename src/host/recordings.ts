// The recording the studio shows: a trace file opened for replay, or the live run's own recording.
// The run handlers say where the run records; the trace handlers replay, seek and export from it.
import type { TraceContents } from '../engine/trace/parse.js';

export class Recordings {
  /** A trace opened for replay (cleared when a run starts). */
  opened: { path: string; trace: TraceContents } | null = null;
  /** The live run's trace file; `live` while the run still writes it. */
  run: { path: string; live: boolean } | null = null;
  /** The step the studio was last sent up to (a replay's scrub position). */
  replayedTo: number | null = null;

  /** Where the live run records (null: the last recording is gone); a new live run replaces any opened trace. */
  setRun(path: string | null, live = false): void {
    this.run = path === null ? null : { path, live };
    if (live) {
      this.opened = null;
      this.replayedTo = null;
    }
  }
}
