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

// Scratch arrays shared by every layout (one tree at a time, on one thread): a batch-64 step lays
// out 64 trees, and allocating five typed arrays per tree cost more than the layout itself.
let scratchSize = 0;
let parentOf = new Int32Array(0);
let offsets = new Int32Array(0);
let fill = new Int32Array(0);
let children = new Int32Array(0);
let stack = new Int32Array(0);
let scores = new Float64Array(0);

function ensureScratch(n: number): void {
  if (n <= scratchSize) return;
  scratchSize = Math.max(n, 2 * scratchSize, 64);
  parentOf = new Int32Array(scratchSize);
  offsets = new Int32Array(scratchSize + 1);
  fill = new Int32Array(scratchSize);
  children = new Int32Array(scratchSize);
  stack = new Int32Array(2 * scratchSize + 2);
  scores = new Float64Array(scratchSize);
}

function computeLayout(request: RequestStep): TreeLayout {
  const nodes = request.nodes;
  const n = nodes.length;
  const x = new Float32Array(n);
  const row = new Int16Array(n);
  ensureScratch(n);
  // Parent positions; node ids are positions in the list (events.ts), with a lookup as fallback.
  let idsArePositions = true;
  for (let i = 0; i < n; i += 1) {
    if (nodes[i].id !== i) {
      idsArePositions = false;
      break;
    }
  }
  const index = idsArePositions ? null : new Map(nodes.map((node, i) => [node.id, i]));
  for (let i = 0; i < n; i += 1) {
    const node = nodes[i];
    const p = node.parent;
    parentOf[i] = p < 0 ? -1 : index ? (index.get(p) ?? -1) : p < n ? p : -1;
    const s = node.pathScore;
    scores[i] = Number.isFinite(s) ? s : -1e30;
  }
  // Children in compressed rows: counts → offsets → fill, then sort each row by path score.
  offsets.fill(0, 0, n + 1);
  for (let i = 0; i < n; i += 1) if (parentOf[i] >= 0) offsets[parentOf[i] + 1] += 1;
  for (let i = 0; i < n; i += 1) offsets[i + 1] += offsets[i];
  fill.set(offsets.subarray(0, n));
  for (let i = 0; i < n; i += 1) if (parentOf[i] >= 0) children[fill[parentOf[i]]++] = i;
  // Best path score first, ties by position: insertion sort (a node has a handful of children).
  for (let i = 0; i < n; i += 1) {
    const from = offsets[i];
    const to = offsets[i + 1];
    for (let k = from + 1; k < to; k += 1) {
      const c = children[k];
      let j = k - 1;
      while (j >= from && (scores[children[j]] < scores[c] || (scores[children[j]] === scores[c] && children[j] > c))) {
        children[j + 1] = children[j];
        j -= 1;
      }
      children[j + 1] = c;
    }
  }

  let nextSlot = 0;
  let rows = 1;
  // Iterative post-order (deep chains cannot overflow the stack): a node is pushed once to place
  // its row and children, and once more (negated, minus one) to centre it after its children.
  for (let r = 0; r < n; r += 1) {
    if (parentOf[r] >= 0) continue;
    let top = 0;
    row[r] = 0;
    stack[top++] = r;
    while (top > 0) {
      const entry = stack[--top];
      if (entry >= 0) {
        const i = entry;
        rows = Math.max(rows, row[i] + 1);
        stack[top++] = -i - 1;
        for (let k = offsets[i + 1] - 1; k >= offsets[i]; k -= 1) {
          const c = children[k];
          row[c] = row[i] + 1;
          stack[top++] = c;
        }
        continue;
      }
      const i = -entry - 1;
      if (offsets[i + 1] === offsets[i]) {
        x[i] = nextSlot + 0.5;
        nextSlot += 1;
      } else {
        x[i] = (x[children[offsets[i]]] + x[children[offsets[i + 1] - 1]]) / 2;
      }
    }
  }
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

function shelfPack(layouts: TreeLayout[], ids: string[], width: number, slot: number, rowHeight = Math.max(3, Math.round(slot * 1.1))): PackedForest {
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
    if (packed.height <= options.height) {
      // Drafted trees are wide and shallow; give the rows the height the slots leave unused.
      const spare = options.height / packed.height;
      if (spare > 1.15) {
        const taller = shelfPack(layouts, ids, Math.max(1, options.width), slot, Math.min(slot * 3, Math.floor(packed.rowHeight * spare * 0.97)));
        if (taller.height <= options.height) return taller;
      }
      return packed;
    }
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
