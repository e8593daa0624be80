// Errors from the engine, from sending to it and from failed views: one banner under the header,
// each error until the user dismisses it, its detail (often a stack) folded away.
import { useStudio } from './StudioContext.js';

export function ErrorBanner() {
  const errors = useStudio((s) => s.errors);
  const dismiss = useStudio((s) => s.dismissError);
  if (errors.length === 0) return null;
  return (
    <section className="error-banner" role="alert" data-testid="errors">
      {errors.map((error) => (
        <div className="error-item" key={error.id}>
          <span className="error-message">{error.message}</span>
          {error.detail ? (
            <details className="error-detail">
              <summary>Details</summary>
              <pre>{error.detail}</pre>
            </details>
          ) : null}
          <button type="button" className="error-dismiss" onClick={() => dismiss(error.id)} aria-label={`dismiss: ${error.message}`}>
            ×
          </button>
        </div>
      ))}
    </section>
  );
}
