// The studio's named regions. The shell owns the layout; each region's content is a view from
// views/. To fill a region, import the view here and set it as that panel's `view`.
import type { ComponentType } from 'react';
import type { StudioState } from './studio/store.js';
import { STUDIO_VIEWS } from './views/index.js';

export type PanelId = 'run' | 'reports' | 'super-tree' | 'request' | 'histograms' | 'gates' | 'budget' | 'metrics';

export interface PanelSpec {
  id: PanelId;
  title: string;
  /** Shown while the region has no view or nothing to draw yet. */
  placeholder: string;
  view?: ComponentType;
  /**
   * Folded to its title until this key changes to a non-empty one (then it unfolds): for a panel
   * that has nothing to show most of the time and should not take the others' room.
   */
  unfoldOn?: (state: StudioState) => string;
}

export const PANELS: PanelSpec[] = [
  { id: 'run', title: 'Run', placeholder: 'Policy, batch size, K_max and thresholds for the next run.', view: STUDIO_VIEWS.run },
  {
    id: 'reports',
    title: 'Reports',
    placeholder: 'A reproduction report: each claim’s verdict, its numbers and tables; the quick study.',
    view: STUDIO_VIEWS.reports,
    // Folded until a report opens or the quick study starts: the run controls keep their room.
    unfoldOn: (s) => [s.report ? `${s.report.dir} ${s.report.meta.date}` : '', s.progress.study ? 'study' : ''].join('|').replace(/^\|$/, ''),
  },
  { id: 'super-tree', title: 'Super-Tree', placeholder: 'Every request’s draft tree of the current step, packed into one verification.', view: STUDIO_VIEWS['super-tree'] },
  { id: 'request', title: 'Request', placeholder: 'One request: its tree, accepted path and text.', view: STUDIO_VIEWS.request },
  { id: 'histograms', title: 'Confidence histograms', placeholder: 'Accepted vs rejected layer confidence per depth.', view: STUDIO_VIEWS.histograms },
  { id: 'gates', title: 'Gates', placeholder: 'Gate checks per request and depth: confidence against τ_d.', view: STUDIO_VIEWS.gates },
  { id: 'budget', title: 'Budget', placeholder: 'Where K_max went this step: roots, base, depth, width, unused.', view: STUDIO_VIEWS.budget },
  { id: 'metrics', title: 'Metrics', placeholder: 'Throughput, mean accepted tokens, draft utilisation over time.', view: STUDIO_VIEWS.metrics },
];
