// Progress of long engine work (model load, graph build, calibration, opening a trace), one bar per
// task; a task's final message (what model.open found, where trace.export wrote) stays a few seconds
// as a notice. Opening a trace can be cancelled from its bar.
import { useEffect } from 'react';
import type { StudioNotice } from '../studio/store.js';
import { useSend, useStudio } from './StudioContext.js';

/** How long a finished task's notice stays before it goes by itself. */
export const NOTICE_MS = 5000;

function Notice({ notice }: { notice: StudioNotice }) {
  const dismiss = useStudio((s) => s.dismissNotice);
  useEffect(() => {
    const timer = setTimeout(() => dismiss(notice.id), NOTICE_MS);
    return () => clearTimeout(timer);
  }, [dismiss, notice.id]);
  return (
    <div className="notice" data-testid={`notice-${notice.task}`}>
      <span className="progress-task">{notice.task}</span>
      <span className="notice-message">{notice.message}</span>
      <button type="button" className="link" aria-label={`dismiss: ${notice.message}`} onClick={() => dismiss(notice.id)}>
        ×
      </button>
    </div>
  );
}

export function ProgressBar() {
  const progress = useStudio((s) => s.progress);
  const send = useSend();
  const notices = useStudio((s) => s.notices);
  const tasks = Object.values(progress);
  if (tasks.length === 0 && notices.length === 0) return null;
  return (
    <div className="progress-list" role="status" aria-live="polite">
      {tasks.map((t) => {
        const fraction = t.total > 0 ? Math.min(1, t.done / t.total) : null;
        return (
          <div key={t.task} className="progress" data-testid={`progress-${t.task}`}>
            <span className="progress-task">{t.task}</span>
            {fraction === null ? (
              <progress aria-label={t.task} />
            ) : (
              <progress aria-label={t.task} value={fraction} max={1} />
            )}
            <span className="progress-text">
              {fraction === null ? '' : `${Math.round(fraction * 100)}%`}
              {t.message ? ` — ${t.message}` : ''}
            </span>
            {t.task === 'trace' && (
              <button type="button" className="link" onClick={() => send({ type: 'trace.cancel' })}>
                Cancel
              </button>
            )}
          </div>
        );
      })}
      {notices.map((n) => (
        <Notice key={n.id} notice={n} />
      ))}
    </div>
  );
}
