// Progress of long engine work (model load, graph build, calibration), one bar per task.
import { useStudio } from './StudioContext.js';

export function ProgressBar() {
  const progress = useStudio((s) => s.progress);
  const tasks = Object.values(progress);
  if (tasks.length === 0) return null;
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
          </div>
        );
      })}
    </div>
  );
}
