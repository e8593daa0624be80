// How views reach the studio store and the engine: one provider gives both. Views read state with
// useStudio (React, for forms and text) or useThrottledStudio (charts), or subscribe to the store
// directly (canvas views), and send requests with useSend, which reports failures to the user.
import { createContext, useCallback, useContext, useEffect, useRef, useState, type ReactNode } from 'react';
import { useStore } from 'zustand';
import type { EngineRequest } from '../../shared/messages.js';
import type { StudioState, StudioStore } from '../studio/store.js';

export type SendRequest = (request: EngineRequest) => void | Promise<void>;

interface StudioContextValue {
  store: StudioStore;
  send: SendRequest;
}

const StudioContext = createContext<StudioContextValue | null>(null);

export function StudioProvider({ store, send, children }: { store: StudioStore; send: SendRequest; children: ReactNode }) {
  return <StudioContext.Provider value={{ store, send }}>{children}</StudioContext.Provider>;
}

function useStudioContext(): StudioContextValue {
  const value = useContext(StudioContext);
  if (value === null) throw new Error('studio views must be rendered inside <StudioProvider>');
  return value;
}

export function useStudioStore(): StudioStore {
  return useStudioContext().store;
}

export function useStudio<T>(selector: (state: StudioState) => T): T {
  return useStore(useStudioContext().store, selector);
}

/**
 * Reads a derived value at most every `intervalMs`: charts would otherwise re-render on every
 * frame (30/s) while nothing a reader could see has changed. The trailing update always lands.
 * With `phaseMs`, updates land only at times ≡ phase (mod interval) on the page clock, so charts
 * given different phases never re-render in the same task: many short tasks, no long one.
 */
export function useThrottledStudio<T>(
  selector: (state: StudioState) => T,
  intervalMs: number,
  isEqual: (a: T, b: T) => boolean = Object.is,
  phaseMs?: number,
  /** False while the view is off screen: no updates until it is back, then one at once. */
  enabled = true,
): T {
  const store = useStudioStore();
  const selectorRef = useRef(selector);
  selectorRef.current = selector;
  const [value, setValue] = useState(() => selector(store.getState()));
  // The value on screen: an unchanged value is not even handed to setState, since React may render
  // the component once more before it notices that the state did not change.
  const shownRef = useRef(value);
  shownRef.current = value;
  useEffect(() => {
    if (!enabled) return;
    let timer: ReturnType<typeof setTimeout> | null = null;
    let last = 0;
    const flush = (): void => {
      timer = null;
      last = Date.now();
      const next = selectorRef.current(store.getState());
      if (isEqual(shownRef.current, next)) return;
      shownRef.current = next;
      setValue(next);
    };
    flush();
    const unsubscribe = store.subscribe(() => {
      // Unthrottled, the value follows the store in the same task, as the canvas views do; a
      // zero-delay timer would leave text views one task behind them.
      if (intervalMs <= 0 && phaseMs === undefined) return flush();
      if (timer !== null) return;
      const now = Date.now();
      let wait = Math.max(0, intervalMs - (now - last));
      if (phaseMs !== undefined && intervalMs > 0) {
        const earliest = now + wait - phaseMs;
        wait = Math.ceil(earliest / intervalMs) * intervalMs + phaseMs - now;
      }
      timer = setTimeout(flush, wait);
    });
    return () => {
      unsubscribe();
      if (timer !== null) clearTimeout(timer);
    };
  }, [store, intervalMs, isEqual, phaseMs, enabled]);
  return value;
}

/** Sends a request; a transport failure becomes an error banner instead of vanishing. */
export function useSend(): SendRequest {
  const { store, send } = useStudioContext();
  return useCallback(
    (request: EngineRequest) => {
      const fail = (err: unknown): void =>
        store.getState().reportError(`Could not send ${request.type} to the engine`, err instanceof Error ? err.message : String(err));
      try {
        const pending = send(request);
        if (pending instanceof Promise) pending.catch(fail);
      } catch (err) {
        fail(err);
      }
    },
    [store, send],
  );
}

/**
 * Whether the element is on screen (or its scroll container's visible part). Off-screen charts
 * skip their updates: the right column holds a dozen charts and a reader sees three or four.
 */
export function useOnScreen(ref: React.RefObject<Element | null>): boolean {
  const [visible, setVisible] = useState(true);
  useEffect(() => {
    const el = ref.current;
    if (el === null || typeof IntersectionObserver === 'undefined') return;
    const observer = new IntersectionObserver((entries) => {
      const entry = entries[entries.length - 1];
      if (entry) setVisible(entry.isIntersecting);
    });
    observer.observe(el);
    return () => observer.disconnect();
  }, [ref]);
  return visible;
}
