// The synthetic engine in its own thread, as the real engine runs in its own process: it makes
// steps at the requested rate and sends frames at most 30 times a second. `decode` says where the
// frame is parsed and validated: 'main' sends JSON text for the page to decode and validate (what
// the WebSocket transport does today), 'worker' decodes and validates here and posts the object,
// 'thin' decodes and paces with the WebSocket transport's own worker code (newest step of a frame
// whole, the others as digests; one frame in flight until the page acks it at its next animation
// frame), so the page gets exactly what the socket worker posts.
import { decodeText, encodeMessage, parseEvent, type EngineEvent } from '../../../../src/shared/messages.js';
import { decodeIncoming } from '../../../../src/renderer/transport/decode.js';
import { FramePacer } from '../../../../src/renderer/transport/frame-pacer.js';
import { frameToText } from '../../../../src/renderer/transport/frame-text.js';
import { SyntheticRun } from '../../studio/syntheticSteps.js';

export type EngineCommand =
  | {
      type: 'start';
      batch: number;
      kmax: number;
      stepsPerSecond: number;
      decode: 'main' | 'worker' | 'thin';
      taus?: Record<string, number>;
      /** 'thin': least time between frames posted (the socket worker's FRAME_MIN_INTERVAL_MS unless given). */
      paceMs?: number;
    }
  | { type: 'pause' | 'resume' | 'step' | 'stop' }
  | { type: 'taus'; taus: Record<string, number> }
  /** 'thin': the page took the last frame (as the socket worker's pacer is told). */
  | { type: 'ack' };

export type EngineOutput =
  | { type: 'text'; text: string }
  | { type: 'event'; event: EngineEvent }
  /** 'thin': a frame as the socket worker posts it, JSON text (frame-text.ts). */
  | { type: 'frame'; text: string };

let decode: 'main' | 'worker' | 'thin' = 'main';
let run: SyntheticRun | null = null;
let running = false;
let owed = 0;
let timer: ReturnType<typeof setInterval> | null = null;
const postEvent = (event: EngineEvent): void =>
  (self as unknown as Worker).postMessage((event.type === 'frame' ? { type: 'frame', text: frameToText(event) } : { type: 'event', event }) satisfies EngineOutput);
let pacer = new FramePacer(postEvent);

function post(event: EngineEvent): void {
  const text = encodeMessage(event);
  if (decode === 'main') {
    (self as unknown as Worker).postMessage({ type: 'text', text } satisfies EngineOutput);
    return;
  }
  if (decode === 'thin') {
    const event = decodeIncoming(text);
    if (event) pacer.push(event);
    return;
  }
  const decoded = decodeText(text);
  const parsed = decoded.ok ? parseEvent(decoded.value) : decoded;
  (self as unknown as Worker).postMessage({
    type: 'event',
    event: parsed.ok ? parsed.value : { type: 'error', message: `synthetic engine sent an unreadable frame: ${parsed.error}` },
  } satisfies EngineOutput);
}

function frame(count: number): void {
  if (!run) return;
  const steps = Array.from({ length: count }, () => run!.next());
  post({ type: 'frame', steps, histograms: run.histograms() });
}

self.onmessage = (message: MessageEvent<EngineCommand>) => {
  const command = message.data;
  switch (command.type) {
    case 'start': {
      decode = command.decode;
      pacer = new FramePacer(postEvent, command.paceMs === undefined ? {} : { minIntervalMs: command.paceMs });
      run = new SyntheticRun({ batch: command.batch, kmax: command.kmax, ...(command.taus ? { taus: command.taus } : {}) });
      running = true;
      owed = 0;
      if (timer !== null) clearInterval(timer);
      const frameMs = 1000 / 30;
      let last = performance.now();
      timer = setInterval(() => {
        const now = performance.now();
        if (!running) {
          last = now;
          return;
        }
        owed += (command.stepsPerSecond * (now - last)) / 1000;
        last = now;
        // A real engine that falls behind makes fewer steps, it does not send a backlog at once.
        const count = Math.min(Math.floor(owed), Math.ceil(command.stepsPerSecond / 30));
        if (count === 0) return;
        owed = Math.min(owed - count, 1);
        frame(count);
      }, frameMs);
      return;
    }
    case 'pause':
      running = false;
      return;
    case 'resume':
      running = true;
      return;
    case 'step':
      if (!running) frame(1);
      return;
    case 'stop':
      running = false;
      if (timer !== null) clearInterval(timer);
      timer = null;
      return;
    case 'taus':
      run?.setTaus(command.taus);
      return;
    case 'ack':
      pacer.ack();
      return;
  }
};
