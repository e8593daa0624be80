// The recording the studio shows: a trace file opened for replay, or the live run's own recording.
// The run handlers say where the run records; the trace handlers replay, seek and export from it.
import type { TraceFileIndex } from '../engine/index.js';

export class Recordings {
  /**
   * A trace opened for replay (cleared when a run starts): its index of step lines, never its
   * steps, so a long trace costs a few numbers a step; steps are read from the file as needed.
   */
  opened: { path: string; index: TraceFileIndex } | null = null;
  /** The live run's trace file; `live` while the run still writes it. */
  run: { path: string; live: boolean } | null = null;
  /** The step the studio was last sent up to (a replay's scrub position). */
  replayedTo: number | null = null;
  /**
   * A trace let go when its last client left: its path and position, so the next client to say
   * hello gets it opened again where it was.
   */
  dormant: { path: string; replayedTo: number | null } | null = null;

  /** Where the live run records (null: the last recording is gone); a new live run replaces any opened trace. */
  setRun(path: string | null, live = false): void {
    this.run = path === null ? null : { path, live };
    if (live) {
      this.closeOpened();
      this.dormant = null;
    }
  }

  /** Lets the opened trace go (its file is closed); `keepPlace` remembers it for the next client. */
  closeOpened({ keepPlace = false }: { keepPlace?: boolean } = {}): void {
    if (keepPlace && this.opened) this.dormant = { path: this.opened.path, replayedTo: this.replayedTo };
    this.opened?.index.close();
    this.opened = null;
    this.replayedTo = null;
  }
}
