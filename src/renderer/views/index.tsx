// The views the shell mounts into its named panels (see ../panels.tsx).
import '../styles/views.css';
import type { ComponentType } from 'react';
import { BudgetFlow } from './BudgetFlow.js';
import { GateGrid } from './GateGrid.js';
import { Histograms } from './Histograms.js';
import { MetricsChart } from './MetricsChart.js';
import { ProgressBar } from './ProgressBar.js';
import { ReportsPanel } from './ReportsPanel.js';
import { RequestView } from './RequestTree.js';
import { RunPanel } from './RunPanel.js';
import { SuperTreeCanvas } from './SuperTreeCanvas.js';
import { TeachingPanel } from './TeachingPanel.js';
import { TraceScrubber } from './TraceScrubber.js';

/** Run form with the engine's progress above it (model load, graph build, calibration). */
function RunPanelWithProgress() {
  return (
    <>
      <ProgressBar />
      <RunPanel />
    </>
  );
}

/** The Super-Tree, with the replay scrubber above it once a run has finished or a trace is open. */
function SuperTreeWithScrubber() {
  return (
    <>
      <TraceScrubber />
      <SuperTreeCanvas />
    </>
  );
}

/** The opened request, then the teaching sentences (filtered to that request when one is open). */
function RequestWithTeaching() {
  return (
    <>
      <RequestView />
      <TeachingPanel />
    </>
  );
}

export const STUDIO_VIEWS = {
  run: RunPanelWithProgress,
  'super-tree': SuperTreeWithScrubber,
  request: RequestWithTeaching,
  histograms: Histograms,
  gates: GateGrid,
  budget: BudgetFlow,
  metrics: MetricsChart,
  reports: ReportsPanel,
} satisfies Record<string, ComponentType>;

export { BudgetFlow, GateGrid, Histograms, MetricsChart, ProgressBar, ReportsPanel, RequestView, RunPanel, SuperTreeCanvas, TeachingPanel, TraceScrubber };
export { ErrorBanner } from './ErrorBanner.js';
export { StudioProvider } from './StudioContext.js';
