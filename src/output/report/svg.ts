// A tiny SVG vocabulary for a report's figures: axes with ticks, lines, step curves, boxes and
// grouped bars, each figure a standalone <svg> string (inline in HTML, or written as a .svg file).
// No dependency: the figures are simple and the report must open anywhere, offline.

export const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#7f7f7f'];

export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

const num = (x: number) => (Number.isFinite(x) ? Number(x.toFixed(2)).toString() : '0');

/** A linear (or log₂) scale from a domain to a pixel range. */
export function scale(domain: [number, number], range: [number, number], log = false): (x: number) => number {
  const f = log ? Math.log2 : (x: number) => x;
  const [d0, d1] = [f(domain[0]), f(domain[1])];
  const span = d1 - d0 || 1;
  return (x) => range[0] + ((f(x) - d0) / span) * (range[1] - range[0]);
}

/** About `count` round tick values covering [lo, hi]. */
export function ticks(lo: number, hi: number, count = 5): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const out: number[] = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(Number(t.toPrecision(12)));
  return out;
}

export interface Frame {
  width: number;
  height: number;
  margin: { left: number; right: number; top: number; bottom: number };
}

export class Svg {
  private readonly parts: string[] = [];
  constructor(
    readonly width: number,
    readonly height: number,
  ) {}
  add(element: string): this {
    this.parts.push(element);
    return this;
  }
  text(x: number, y: number, text: string, attrs: { anchor?: 'start' | 'middle' | 'end'; size?: number; rotate?: boolean; weight?: string; fill?: string } = {}): this {
    const rotate = attrs.rotate ? ` transform="rotate(-90 ${num(x)} ${num(y)})"` : '';
    return this.add(
      `<text x="${num(x)}" y="${num(y)}" font-size="${attrs.size ?? 11}" text-anchor="${attrs.anchor ?? 'start'}"${attrs.weight ? ` font-weight="${attrs.weight}"` : ''}${attrs.fill ? ` fill="${attrs.fill}"` : ''}${rotate}>${escapeXml(text)}</text>`,
    );
  }
  line(x1: number, y1: number, x2: number, y2: number, stroke = '#000', attrs = ''): this {
    return this.add(`<line x1="${num(x1)}" y1="${num(y1)}" x2="${num(x2)}" y2="${num(y2)}" stroke="${stroke}" ${attrs}/>`);
  }
  path(points: ReadonlyArray<[number, number]>, stroke: string, attrs = ''): this {
    if (points.length === 0) return this;
    const d = points.map(([x, y], i) => `${i === 0 ? 'M' : 'L'}${num(x)},${num(y)}`).join(' ');
    return this.add(`<path d="${d}" fill="none" stroke="${stroke}" stroke-width="1.6" ${attrs}/>`);
  }
  rect(x: number, y: number, w: number, h: number, fill: string, attrs = ''): this {
    return this.add(`<rect x="${num(x)}" y="${num(y)}" width="${num(Math.max(0, w))}" height="${num(Math.max(0, h))}" fill="${fill}" ${attrs}/>`);
  }
  circle(x: number, y: number, r: number, fill: string): this {
    return this.add(`<circle cx="${num(x)}" cy="${num(y)}" r="${num(r)}" fill="${fill}"/>`);
  }
  toString(): string {
    return `<svg xmlns="http://www.w3.org/2000/svg" width="${this.width}" height="${this.height}" viewBox="0 0 ${this.width} ${this.height}" font-family="sans-serif">\n<rect width="100%" height="100%" fill="#fff"/>\n${this.parts.join('\n')}\n</svg>\n`;
  }
}

/** Axes of a plot area: ticks, grid lines and labels. */
function axes(svg: Svg, area: { x0: number; x1: number; y0: number; y1: number }, x: { ticks: number[]; at: (v: number) => number; label: string; format?: (v: number) => string }, y: { ticks: number[]; at: (v: number) => number; label: string; format?: (v: number) => string }): void {
  const { x0, x1, y0, y1 } = area;
  for (const t of y.ticks) {
    const py = y.at(t);
    svg.line(x0, py, x1, py, '#e5e5e5');
    svg.text(x0 - 4, py + 3, y.format ? y.format(t) : String(t), { anchor: 'end', size: 9 });
  }
  for (const t of x.ticks) {
    const px = x.at(t);
    svg.line(px, y0, px, y0 + 4, '#000');
    svg.text(px, y0 + 14, x.format ? x.format(t) : String(t), { anchor: 'middle', size: 9 });
  }
  svg.line(x0, y0, x1, y0, '#000').line(x0, y0, x0, y1, '#000');
  svg.text((x0 + x1) / 2, y0 + 28, x.label, { anchor: 'middle' });
  svg.text(x0 - 34, (y0 + y1) / 2, y.label, { anchor: 'middle', rotate: true });
}

function legend(svg: Svg, x: number, y: number, items: ReadonlyArray<{ name: string; color: string; dashed?: boolean }>): void {
  items.forEach((item, i) => {
    const ly = y + i * 14;
    svg.line(x, ly - 3, x + 16, ly - 3, item.color, `stroke-width="2"${item.dashed ? ' stroke-dasharray="4 3"' : ''}`);
    svg.text(x + 20, ly, item.name, { size: 10 });
  });
}

export interface Series {
  name: string;
  points: ReadonlyArray<[number, number]>;
  color: string;
  dashed?: boolean;
}

/** Lines over x (log₂ when asked, e.g. batch sizes), with a legend. */
export function lineChart(options: { title: string; xLabel: string; yLabel: string; series: readonly Series[]; logX?: boolean; width?: number; height?: number }): string {
  const width = options.width ?? 560;
  const height = options.height ?? 340;
  const svg = new Svg(width, height);
  const area = { x0: 60, x1: width - 130, y0: height - 45, y1: 30 };
  const xs = options.series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = options.series.flatMap((s) => s.points.map((p) => p[1])).filter(Number.isFinite);
  const xDomain: [number, number] = [Math.min(...xs), Math.max(...xs)];
  const yTicks = ticks(0, Math.max(...ys, 1e-9) * 1.08);
  const xAt = scale(xDomain[0] === xDomain[1] ? [xDomain[0] / 2, xDomain[0] * 2] : xDomain, [area.x0 + 10, area.x1 - 10], options.logX);
  const yAt = scale([0, yTicks[yTicks.length - 1]], [area.y0, area.y1]);
  svg.text(width / 2, 18, options.title, { anchor: 'middle', size: 13, weight: 'bold' });
  axes(svg, area, { ticks: [...new Set(xs)].sort((a, b) => a - b), at: xAt, label: options.xLabel }, { ticks: yTicks, at: yAt, label: options.yLabel, format: compact });
  for (const s of options.series) {
    const pts = s.points.filter((p) => Number.isFinite(p[1])).map(([x, y]) => [xAt(x), yAt(y)] as [number, number]);
    svg.path(pts, s.color, s.dashed ? 'stroke-dasharray="5 3"' : '');
    for (const [px, py] of pts) svg.circle(px, py, 2.5, s.color);
  }
  legend(svg, area.x1 + 14, area.y1 + 10, options.series);
  return svg.toString();
}

/** Grouped bars: one group per category, one bar per series, a reference line at `reference`. */
export function groupedBars(options: { title: string; yLabel: string; categories: readonly string[]; series: ReadonlyArray<{ name: string; values: readonly number[]; color: string }>; reference?: number; width?: number; height?: number }): string {
  const width = options.width ?? 560;
  const height = options.height ?? 320;
  const svg = new Svg(width, height);
  const area = { x0: 60, x1: width - 110, y0: height - 45, y1: 30 };
  const ys = options.series.flatMap((s) => s.values).filter(Number.isFinite);
  const yTicks = ticks(0, Math.max(...ys, options.reference ?? 0, 1e-9) * 1.1);
  const yAt = scale([0, yTicks[yTicks.length - 1]], [area.y0, area.y1]);
  svg.text(width / 2, 18, options.title, { anchor: 'middle', size: 13, weight: 'bold' });
  const groupWidth = (area.x1 - area.x0) / Math.max(1, options.categories.length);
  const barWidth = (groupWidth * 0.8) / Math.max(1, options.series.length);
  axes(svg, area, { ticks: [], at: () => 0, label: '' }, { ticks: yTicks, at: yAt, label: options.yLabel, format: compact });
  options.categories.forEach((category, c) => {
    const gx = area.x0 + c * groupWidth + groupWidth * 0.1;
    options.series.forEach((s, k) => {
      const v = s.values[c];
      if (Number.isFinite(v)) svg.rect(gx + k * barWidth, yAt(v), barWidth - 1, area.y0 - yAt(v), s.color);
    });
    svg.text(area.x0 + (c + 0.5) * groupWidth, area.y0 + 14, category, { anchor: 'middle', size: 10 });
  });
  if (options.reference !== undefined) svg.line(area.x0, yAt(options.reference), area.x1, yAt(options.reference), '#444', 'stroke-dasharray="4 3"');
  legend(svg, area.x1 + 12, area.y1 + 10, options.series);
  return svg.toString();
}

/** Box plots: median, interquartile box, whiskers at the 10th and 90th percentiles, n below. */
export function boxPlots(options: { title: string; yLabel: string; groups: ReadonlyArray<{ name: string; values: readonly number[]; color: string }>; yMax?: number; width?: number; height?: number }): string {
  const width = options.width ?? 520;
  const height = options.height ?? 320;
  const svg = new Svg(width, height);
  const area = { x0: 60, x1: width - 20, y0: height - 50, y1: 30 };
  const yTicks = ticks(0, options.yMax ?? Math.max(1e-9, ...options.groups.flatMap((g) => g.values)));
  const yAt = scale([0, yTicks[yTicks.length - 1]], [area.y0, area.y1]);
  svg.text(width / 2, 18, options.title, { anchor: 'middle', size: 13, weight: 'bold' });
  axes(svg, area, { ticks: [], at: () => 0, label: '' }, { ticks: yTicks, at: yAt, label: options.yLabel });
  const slot = (area.x1 - area.x0) / Math.max(1, options.groups.length);
  options.groups.forEach((g, i) => {
    const cx = area.x0 + (i + 0.5) * slot;
    svg.text(cx, area.y0 + 14, g.name, { anchor: 'middle', size: 10 });
    svg.text(cx, area.y0 + 27, `n = ${g.values.length}`, { anchor: 'middle', size: 9, fill: '#555' });
    if (g.values.length === 0) return;
    const sorted = [...g.values].sort((a, b) => a - b);
    const q = (p: number) => quantile(sorted, p);
    const w = Math.min(40, slot * 0.5);
    svg.line(cx, yAt(q(0.1)), cx, yAt(q(0.9)), g.color);
    svg.rect(cx - w / 2, yAt(q(0.75)), w, yAt(q(0.25)) - yAt(q(0.75)), g.color, 'fill-opacity="0.25" stroke="' + g.color + '"');
    svg.line(cx - w / 2, yAt(q(0.5)), cx + w / 2, yAt(q(0.5)), g.color, 'stroke-width="2.5"');
  });
  return svg.toString();
}

/**
 * Small multiples of per-depth densities: accepted (red) and rejected (blue) as step curves over
 * [0, 1], each panel titled with its AUC; a sweet spot's τ_d as a green dashed line.
 */
export function densityPanels(options: {
  title: string;
  xLabel: string;
  panels: ReadonlyArray<{ title: string; edges: readonly number[]; accepted: readonly number[]; rejected: readonly number[]; tau: number | null; sweetSpot: boolean }>;
  columns?: number;
}): string {
  const columns = options.columns ?? 4;
  const pw = 170;
  const ph = 120;
  const rows = Math.max(1, Math.ceil(options.panels.length / columns));
  const svg = new Svg(columns * pw + 20, rows * ph + 60);
  svg.text(svg.width / 2, 18, options.title, { anchor: 'middle', size: 13, weight: 'bold' });
  legend(svg, 20, 36, [
    { name: 'accepted', color: PALETTE[1] },
    { name: 'rejected', color: PALETTE[0] },
  ]);
  legend(svg, 120, 36, [{ name: 'τ_d at a sweet spot', color: PALETTE[2], dashed: true }]);
  options.panels.forEach((p, i) => {
    const ox = 10 + (i % columns) * pw;
    const oy = 50 + Math.floor(i / columns) * ph;
    const area = { x0: ox + 28, x1: ox + pw - 8, y0: oy + ph - 24, y1: oy + 18 };
    const density = (counts: readonly number[]) => {
      const total = counts.reduce((a, b) => a + b, 0);
      return counts.map((c, k) => (total > 0 ? c / total / (p.edges[k + 1] - p.edges[k]) : 0));
    };
    const acc = density(p.accepted);
    const rej = density(p.rejected);
    const top = Math.max(1e-9, ...acc, ...rej);
    const xAt = scale([0, 1], [area.x0, area.x1]);
    const yAt = scale([0, top * 1.05], [area.y0, area.y1]);
    svg.line(area.x0, area.y0, area.x1, area.y0, '#000').line(area.x0, area.y0, area.x0, area.y1, '#000');
    for (const t of [0, 0.5, 1]) svg.text(xAt(t), area.y0 + 11, String(t), { anchor: 'middle', size: 8 });
    svg.text((area.x0 + area.x1) / 2, oy + 12, p.title, { anchor: 'middle', size: 10, weight: p.sweetSpot ? 'bold' : undefined });
    const steps = (d: number[]) => d.flatMap((v, k) => [[xAt(p.edges[k]), yAt(v)], [xAt(p.edges[k + 1]), yAt(v)]] as Array<[number, number]>);
    if (p.edges.length > 1) {
      svg.path(steps(rej), PALETTE[0]);
      svg.path(steps(acc), PALETTE[1]);
    }
    if (p.sweetSpot && p.tau !== null) svg.line(xAt(p.tau), area.y0, xAt(p.tau), area.y1, PALETTE[2], 'stroke-width="1.5" stroke-dasharray="4 3"');
  });
  svg.text(svg.width / 2, svg.height - 4, options.xLabel, { anchor: 'middle', size: 10 });
  return svg.toString();
}

function quantile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = (sorted.length - 1) * p;
  const lo = Math.floor(i);
  const hi = Math.ceil(i);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (i - lo);
}

function compact(v: number): string {
  return Math.abs(v) >= 1000 ? `${Number((v / 1000).toPrecision(3))}k` : String(Number(v.toPrecision(3)));
}
