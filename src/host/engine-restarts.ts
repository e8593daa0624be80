// How the desktop app and the web host keep their engine host alive: an engine host that exits
// when nobody asked it to is started again, three times at most, and the studio is told each time
// in one line; after that it is told to restart the app. Both faces share this rule and its words.

/** Engine host restarts allowed after unexpected exits before its owner gives up on it. */
export const MAX_ENGINE_RESTARTS = 3;

/** Why an engine host went: its signal, else its exit code. */
export function exitReason(code: number | null, signal?: string | null): string {
  return signal ? `signal ${signal}` : `exit code ${code}`;
}

/**
 * Counts one engine host's unexpected exits. `gone(why)` says what to tell the studio and whether
 * to start the engine host again: `restartHint` names what the user restarts once it gave up.
 */
export function engineRestarts(restartHint: string, max = MAX_ENGINE_RESTARTS) {
  let restarts = 0;
  return {
    gone(why: string): { restart: boolean; message: string } {
      if (restarts >= max) return { restart: false, message: `the engine host stopped (${why}) and was restarted too often; restart ${restartHint}` };
      restarts += 1;
      return { restart: true, message: `the engine host stopped (${why}); restarting it (${restarts}/${max})` };
    },
  };
}
