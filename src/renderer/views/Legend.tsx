import { NODE_STATES } from '../studio/nodeStates.js';
import { GATE_COLOURS, GRANT_COLOURS, GRANT_LABELS, STATE_COLOURS, STATE_LABELS } from './colors.js';

/** The node-state key shared by the Super-Tree and the request view. */
export function NodeLegend() {
  return (
    <ul className="legend" aria-label="Node colours">
      {NODE_STATES.map((s) => (
        <li key={s}>
          <span className="swatch dot" style={{ background: STATE_COLOURS[s] }} />
          {STATE_LABELS[s]}
        </li>
      ))}
      {(['depth', 'width'] as const).map((g) => (
        <li key={g}>
          <span className="swatch ring" style={{ borderColor: GRANT_COLOURS[g] }} />
          {GRANT_LABELS[g]}
        </li>
      ))}
      <li>
        <span className="swatch bar" style={{ background: GATE_COLOURS.pass }} />
        gate pass
      </li>
      <li>
        <span className="swatch bar" style={{ background: GATE_COLOURS.truncate }} />
        gate truncate
      </li>
      <li>
        <span className="swatch bar" style={{ background: GATE_COLOURS.waived }} />
        gate failed, cut waived (worth more than the budget it frees)
      </li>
    </ul>
  );
}
