// The studio shell: header with the engine link, the error banner, the engine card, and the
// named panels that views fill in.
import { Component, useEffect, useRef, useState, type CSSProperties, type ErrorInfo, type ReactNode } from 'react';
import { useStore } from 'zustand';
import { StudioProvider, useStudio } from './views/StudioContext.js';
import { PANELS, type PanelSpec } from './panels.js';
import { ErrorBanner } from './views/ErrorBanner.js';
import { Splitter } from './shell/Splitter.js';
import { gridColumns, MAX_COLUMN_WIDTH, MIN_COLUMN_WIDTH, SHARE_RANGE, type ColumnId } from './studio/layout.js';
import { TraceFiles } from './views/TraceFiles.js';
import type { ConnectionStore } from './shell/connection-store.js';
import type { StudioStore } from './studio/store.js';
import type { Transport } from './transport/types.js';

const CONNECTION_LABELS = { connecting: 'Connecting…', connected: 'Connected', disconnected: 'Disconnected' } as const;

function formatParameters(count: number): string {
  if (count >= 1e9) return `${(count / 1e9).toFixed(1)}B params`;
  if (count >= 1e6) return `${(count / 1e6).toFixed(1)}M params`;
  if (count >= 1e3) return `${(count / 1e3).toFixed(1)}K params`;
  return `${count} params`;
}

function Header({ connection, transportKind }: { connection: ConnectionStore; transportKind: Transport['kind'] }) {
  const state = useStore(connection, (s) => s.state);
  const detail = useStore(connection, (s) => s.detail);
  const status = useStudio((s) => s.status);
  const runState = useStudio((s) => s.runState);
  const observer = status?.access === 'observe';
  return (
    <header className="shell-header">
      <div className="brand">
        <img className="brand-mark" src="./icon.svg" alt="" />
        <span className="brand-name">ECHO Studio</span>
      </div>
      <div className="header-facts">
        {/* The desktop app opens and exports traces from its File menu; a browser through the web host. */}
        {transportKind === 'websocket' && !observer && <TraceFiles />}
        {observer && (
          <span className="fact observer-badge" data-testid="observer" title="This observer link sees everything the studio shows; the server refuses its requests to change anything.">
            Watching only
          </span>
        )}
        <span className="fact" data-testid="engine-version">
          <span className="fact-label">Engine</span> {status ? `v${status.version}` : '—'}
        </span>
        <span className="fact" data-testid="engine-provider">
          <span className="fact-label">Provider</span> {status ? status.provider : '—'}
        </span>
        <span className="fact" data-testid="run-state">
          <span className="fact-label">Run</span> {runState}
        </span>
        <span
          className={`connection connection-${state}`}
          data-testid="connection"
          data-state={state}
          title={detail ?? `${transportKind === 'electron' ? 'Desktop' : 'Web'} link to the engine host`}
        >
          <span className="connection-dot" aria-hidden="true" />
          {CONNECTION_LABELS[state]}
        </span>
      </div>
    </header>
  );
}

function ConnectionNotice({ connection }: { connection: ConnectionStore }) {
  const state = useStore(connection, (s) => s.state);
  const detail = useStore(connection, (s) => s.detail);
  if (state === 'connected' || !detail) return null;
  return <div className="connection-notice">{detail}</div>;
}

/** A panel's title bar, with the control that folds the panel to its title (the others take its room). */
function PanelTitle({ id, title, collapsed, onToggle }: { id: string; title: string; collapsed: boolean; onToggle(): void }) {
  return (
    <h2 className="panel-title" id={`panel-${id}-title`}>
      <button type="button" className="panel-toggle" aria-expanded={!collapsed} aria-controls={`panel-${id}-body`} title={collapsed ? `show ${title}` : `fold ${title} away`} onClick={onToggle}>
        <span aria-hidden="true">{collapsed ? '▸' : '▾'}</span>
      </button>
      {title}
    </h2>
  );
}

function EngineCard() {
  const status = useStudio((s) => s.status);
  const models = status?.bundledModels ?? [];
  // Folded to its title until the user opens it: the header already names the engine's version
  // and provider, the Run panel its bundled pair, and the run's knobs need the room on a small screen.
  const [collapsed, setCollapsed] = useState(true);
  return (
    <section className={`panel panel-engine${collapsed ? ' collapsed' : ''}`} data-panel="engine" aria-labelledby="panel-engine-title">
      <PanelTitle id="engine" title="Engine" collapsed={collapsed} onToggle={() => setCollapsed(!collapsed)} />
      <div className="panel-body" id="panel-engine-body" hidden={collapsed}>
        {status === null ? (
          <p className="muted">Waiting for the engine host…</p>
        ) : (
          <>
            <dl className="engine-facts">
              <dt>Version</dt>
              <dd>{status.version}</dd>
              <dt>Provider</dt>
              <dd>{status.provider}</dd>
              {status.draftPrecision ? (
                <>
                  <dt>Draft weights</dt>
                  <dd title="the draft model's linear layers; the target runs in float32 unless the run form says otherwise">{status.draftPrecision}</dd>
                </>
              ) : null}
            </dl>
            <h3 className="subheading">Bundled models</h3>
            {models.length === 0 ? (
              <p className="muted" data-testid="no-models">
                None found under assets/models.
              </p>
            ) : (
              <ul className="model-list" data-testid="models">
                {models.map((model) => (
                  <li key={model.dir} title={model.dir}>
                    <span className="model-name">{model.name}</span>
                    {model.parameters !== undefined ? <span className="model-params">{formatParameters(model.parameters)}</span> : null}
                  </li>
                ))}
              </ul>
            )}
          </>
        )}
      </div>
    </section>
  );
}

/** A view that throws takes down only its own panel, which says so; the rest keeps working. */
class PanelBoundary extends Component<{ title: string; onError: (message: string, detail?: string) => void; children: ReactNode }, { failed: string | null }> {
  override state = { failed: null as string | null };

  static getDerivedStateFromError(error: unknown) {
    return { failed: error instanceof Error ? error.message : String(error) };
  }

  override componentDidCatch(error: unknown, info: ErrorInfo) {
    const message = error instanceof Error ? error.message : String(error);
    this.props.onError(`The ${this.props.title} view failed: ${message}`, info.componentStack ?? undefined);
  }

  override render() {
    if (this.state.failed !== null) {
      return (
        <div className="panel-failed" role="alert">
          <p>This view failed and was stopped.</p>
          <button type="button" onClick={() => this.setState({ failed: null })}>
            Try again
          </button>
        </div>
      );
    }
    return this.props.children;
  }
}

const noKey = () => '';
/** Panels whose controls steer the studio (start runs, turn knobs, run studies). */
const STEERING_PANELS: ReadonlySet<string> = new Set(['run', 'reports']);

function Panel({ spec }: { spec: PanelSpec }) {
  const reportError = useStudio((s) => s.reportError);
  const View = spec.view;
  const titleId = `panel-${spec.id}-title`;
  // An observer link may change nothing: the panels that steer the run are shown, not operable.
  const readOnly = useStudio((s) => s.status?.access === 'observe') && STEERING_PANELS.has(spec.id);
  const [collapsed, setCollapsed] = useState(spec.unfoldOn !== undefined);
  const unfoldKey = useStudio(spec.unfoldOn ?? noKey);
  useEffect(() => {
    if (unfoldKey !== '') setCollapsed(false);
  }, [unfoldKey]);
  return (
    <section className={`panel panel-${spec.id}${collapsed ? ' collapsed' : ''}`} data-panel={spec.id} aria-labelledby={titleId}>
      <PanelTitle id={spec.id} title={spec.title} collapsed={collapsed} onToggle={() => setCollapsed(!collapsed)} />
      {/* Folded views stay mounted (hidden), so their state and subscriptions survive. */}
      <div className="panel-body" id={`panel-${spec.id}-body`} hidden={collapsed}>
        {View ? (
          <PanelBoundary title={spec.title} onError={reportError}>
            {readOnly ? (
              <fieldset className="read-only" disabled data-testid={`read-only-${spec.id}`}>
                <View />
              </fieldset>
            ) : (
              <View />
            )}
          </PanelBoundary>
        ) : (
          <p className="muted placeholder">{spec.placeholder}</p>
        )}
      </div>
    </section>
  );
}

const panel = (id: PanelSpec['id']) => {
  const spec = PANELS.find((p) => p.id === id);
  return spec ? <Panel spec={spec} /> : null;
};

/** The width between columns: the splitter fills it. */
const SPLITTER_PX = 12;
const COLUMN_LABELS: Record<ColumnId, string> = { side: 'run controls', right: 'histograms', far: 'gates, budget and metrics' };

/**
 * The four columns with splitters between them (and between the Super-Tree and the request view):
 * the sizes live in the store, so they hold while the studio runs.
 */
function MainGrid() {
  const layout = useStudio((s) => s.layout);
  const setLayout = useStudio((s) => s.setLayout);
  const centre = useRef<HTMLDivElement>(null);
  const columnSplitter = (id: ColumnId, direction: 1 | -1) => (
    <Splitter
      orientation="vertical"
      label={`resize the ${COLUMN_LABELS[id]} column`}
      testId={`splitter-${id}`}
      value={layout[id]}
      min={MIN_COLUMN_WIDTH[id]}
      max={MAX_COLUMN_WIDTH}
      keyStep={16}
      // The column grows toward the centre: the run column rightwards, the others leftwards.
      resize={(start, delta) => start + direction * delta}
      onChange={(width) => setLayout({ [id]: width })}
      valueText={(width) => `${Math.round(width)} px wide`}
    />
  );
  const style = { gridTemplateColumns: gridColumns(layout, SPLITTER_PX), '--super-tree-share': layout.superTreeShare } as CSSProperties;
  return (
    <main className="shell-grid" style={style}>
      <div className="column column-side">
        <EngineCard />
        {panel('run')}
        {panel('reports')}
      </div>
      {columnSplitter('side', 1)}
      <div className="column column-center" ref={centre}>
        {panel('super-tree')}
        <Splitter
          orientation="horizontal"
          label="resize the Super-Tree against the request view"
          testId="splitter-super-tree"
          value={layout.superTreeShare}
          min={SHARE_RANGE.min}
          max={SHARE_RANGE.max}
          keyStep={24}
          resize={(start, delta) => start + delta / Math.max(1, centre.current?.clientHeight ?? 1)}
          onChange={(share) => setLayout({ superTreeShare: share })}
          valueText={(share) => `Super-Tree ${Math.round(share * 100)} % of the column`}
        />
        {panel('request')}
      </div>
      {columnSplitter('right', -1)}
      <div className="column column-right">{panel('histograms')}</div>
      {columnSplitter('far', -1)}
      <div className="column column-far">
        {panel('gates')}
        {panel('budget')}
        {panel('metrics')}
      </div>
    </main>
  );
}

export function App({ studio, connection, transport }: { studio: StudioStore; connection: ConnectionStore; transport: Transport }) {
  return (
    <StudioProvider store={studio} send={(request) => transport.send(request)}>
      <div className="shell">
        <Header connection={connection} transportKind={transport.kind} />
        <ConnectionNotice connection={connection} />
        <ErrorBanner />
        <MainGrid />
      </div>
    </StudioProvider>
  );
}
