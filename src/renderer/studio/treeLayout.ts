// Tree layout for draft trees. One request's tree is laid out in abstract units (a leaf slot is
// 1 wide, a depth row is 1 tall, the root on row 0); the Super-Tree packs many such trees side by
// side in shelves and picks the largest scale at which they all fit the canvas.
import type { RequestStep } from '../../shared/events.js';

export interface TreeLayout {
  /** Per node (same order as request.nodes): horizontal centre in leaf slots. */
  x: Float32Array;
  /** Per node: row, root = 0, depth d = d + 1. */
  row: Int16Array;
  /** Width in leaf slots (at least 1). */
  width: number;
  /** Rows used (root row included). */
  rows: number;
}

/**
 * Leaves take consecutive slots in depth-first order, children ordered by path score (best
 * first, so the likely path runs down the left); a parent sits centred over its children.
 */
export function layoutTree(request: RequestStep): TreeLayout {
  let layout = layoutCache.get(request);
  if (layout === undefined) {
    layout = computeLayout(request);
    layoutCache.set(request, layout);
  }
  return layout;
}

// Step events are immutable once received: lay each request's tree out once, however many times
// it is packed (resizes, selection changes) or drawn.
const layoutCache = new WeakMap<RequestStep, TreeLayout>();

function computeLayout(request: RequestStep): TreeLayout {
  const nodes = request.nodes;
  const n = nodes.length;
  const x = new Float32Array(n);
  const row = new Int16Array(n);
  const index = new Map<number, number>();
  nodes.forEach((node, i) => index.set(node.id, i));
  const children: number[][] = nodes.map(() => []);
  const roots: number[] = [];
  nodes.forEach((node, i) => {
    const parentIndex = node.parent < 0 ? undefined : index.get(node.parent);
    if (parentIndex === undefined) roots.push(i);
    else children[parentIndex].push(i);
  });
  const score = (i: number): number => {
    const s = nodes[i].pathScore;
    return Number.isFinite(s) ? s : -1e30;
  };
  for (const list of children) if (list.length > 1) list.sort((a, b) => score(b) - score(a) || a - b);

  let nextSlot = 0;
  let rows = 1;
  // Iterative post-order so deep chains cannot overflow the stack.
  const place = (start: number, startRow: number): void => {
    const stack: Array<{ i: number; r: number; visited: boolean }> = [{ i: start, r: startRow, visited: false }];
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      const kids = children[top.i];
      if (!top.visited) {
        top.visited = true;
        row[top.i] = top.r;
        rows = Math.max(rows, top.r + 1);
        for (let k = kids.length - 1; k >= 0; k -= 1) stack.push({ i: kids[k], r: top.r + 1, visited: false });
        continue;
      }
      stack.pop();
      if (kids.length === 0) {
        x[top.i] = nextSlot + 0.5;
        nextSlot += 1;
      } else {
        x[top.i] = (x[kids[0]] + x[kids[kids.length - 1]]) / 2;
      }
    }
  };
  for (const r of roots) place(r, 0);
  return { x, row, width: Math.max(1, nextSlot), rows };
}

export interface PackedTree {
  requestId: string;
  /** Index into the step's requests array. */
  requestIndex: number;
  layout: TreeLayout;
  /** Box in pixels, label strip included. */
  left: number;
  top: number;
  width: number;
  height: number;
}

export interface PackedForest {
  trees: PackedTree[];
  /** Pixels per leaf slot and per depth row at the chosen scale. */
  slot: number;
  rowHeight: number;
  /** Height of the strip above each tree for its label and gate markers' legend. */
  labelHeight: number;
  /** Column left of each tree, holding its gate markers and separating it from its neighbour. */
  gap: number;
  /** Total packed height in pixels. */
  height: number;
  /** False when even the smallest scale overflows the height (the canvas then scrolls). */
  fits: boolean;
}

export interface PackOptions {
  width: number;
  height: number;
  /** Slot sizes to try, largest first. */
  slotSizes?: readonly number[];
}

const DEFAULT_SLOTS = [22, 18, 15, 12, 10, 8, 6, 5, 4, 3, 2] as const;

function shelfPack(layouts: TreeLayout[], ids: string[], width: number, slot: number): PackedForest {
  const rowHeight = Math.max(3, Math.round(slot * 1.1));
  const labelHeight = slot >= 8 ? 12 : 0;
  const gap = Math.max(4, Math.round(slot * 0.8));
  const trees: PackedTree[] = [];
  let cursorX = 0;
  let shelfTop = 0;
  let shelfHeight = 0;
  layouts.forEach((layout, i) => {
    const w = layout.width * slot + gap;
    const h = layout.rows * rowHeight + labelHeight + 2;
    if (cursorX > 0 && cursorX + w > width) {
      shelfTop += shelfHeight;
      cursorX = 0;
      shelfHeight = 0;
    }
    trees.push({ requestId: ids[i], requestIndex: i, layout, left: cursorX, top: shelfTop, width: w, height: h });
    cursorX += w;
    shelfHeight = Math.max(shelfHeight, h);
  });
  return { trees, slot, rowHeight, labelHeight, gap, height: shelfTop + shelfHeight, fits: true };
}

/** Packs every request's tree into the viewport at the largest slot size that fits. */
export function packForest(requests: readonly RequestStep[], options: PackOptions): PackedForest {
  const layouts = requests.map(layoutTree);
  const ids = requests.map((r) => r.requestId);
  const sizes = options.slotSizes ?? DEFAULT_SLOTS;
  let packed: PackedForest | undefined;
  for (const slot of sizes) {
    packed = shelfPack(layouts, ids, Math.max(1, options.width), slot);
    if (packed.height <= options.height) return packed;
  }
  const smallest = packed ?? shelfPack(layouts, ids, Math.max(1, options.width), 2);
  return { ...smallest, fits: false };
}

/** Pixel centre of node i of a packed tree. */
export function nodePosition(forest: PackedForest, tree: PackedTree, i: number): { x: number; y: number } {
  return {
    x: tree.left + forest.gap + tree.layout.x[i] * forest.slot,
    y: tree.top + forest.labelHeight + (tree.layout.row[i] + 0.5) * forest.rowHeight,
  };
}

/** The request whose box contains the point, or null. */
export function hitTestForest(forest: PackedForest, x: number, y: number): PackedTree | null {
  for (const tree of forest.trees) {
    if (x >= tree.left && x < tree.left + tree.width && y >= tree.top && y < tree.top + tree.height) return tree;
  }
  return null;
}
