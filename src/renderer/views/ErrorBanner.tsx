// Errors from the engine (and from sending to it), shown until the user dismisses them.
import { useStudio } from './StudioContext.js';

export function ErrorBanner() {
  const errors = useStudio((s) => s.errors);
  const dismiss = useStudio((s) => s.dismissError);
  if (errors.length === 0) return null;
  return (
    <div className="error-banner" role="alert">
      {errors.map((e) => (
        <div key={e.id} className="error">
          <strong>{e.message}</strong>
          {e.detail && <pre className="error-detail">{e.detail}</pre>}
          <button type="button" aria-label={`dismiss: ${e.message}`} onClick={() => dismiss(e.id)}>
            Dismiss
          </button>
        </div>
      ))}
    </div>
  );
}
