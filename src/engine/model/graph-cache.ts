// On-disk cache of built graphs: <cache>/graphs/<key>.onnx (+ <key>.onnx.data for external
// weights, + <key>.json describing the entry). The key hashes config.json, the weight files'
// identity (content hashes included, see weight-hashes.ts) and GRAPH_VERSION, so a changed model or a new graph layout never reuses a stale graph;
// the superseded graphs of the same model folder are pruned once the new one is written.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync, utimesSync, writeFileSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { WeightPrecisionSchema, type WeightPrecision } from '../../shared/config.js';
import { GRAPH_VERSION, MS_DOMAIN, OPSET, STORE_MIN_BYTES, initializerBytes, type BuiltGraph, type WeightStore } from './graph-builder.js';
import { ModelLoadError } from './errors.js';
import { encodeModel, type ModelProtoJs, type TensorProtoJs } from './onnx-proto.js';

/**
 * Graphs whose weights exceed this many bytes keep them in an external data file, written weight by
 * weight while the graph is built: protobuf caps a graph at 2 GiB, and an inline graph would hold
 * every weight twice more (as arrays, then encoded) while it is written, and once more while
 * onnxruntime parses it.
 */
export const DEFAULT_EXTERNAL_DATA_THRESHOLD = 64 << 20;

export function cacheRoot(): string {
  const env = process.env.ECHO_STUDIO_CACHE;
  return env && env.length > 0 ? env : join(homedir(), '.cache', 'echo-studio');
}

/** float32 keeps the key it had before precisions existed, so those graphs stay valid. */
export function graphCacheKey(configText: string, weightIdentity: string, precision: WeightPrecision = 'float32', featureBoundaries: readonly number[] = []): string {
  const variant = (precision === 'float32' ? '' : `\nprecision=${precision}`) + (featureBoundaries.length === 0 ? '' : `\nfeatures=${featureBoundaries.join(',')}`);
  return createHash('sha256').update(`graph-v${GRAPH_VERSION}\n${configText}\n${weightIdentity}${variant}`).digest('hex').slice(0, 32);
}

export function cachedGraphPath(key: string, root = cacheRoot()): string {
  return join(graphsDir(root), `${key}.onnx`);
}

/**
 * The data file beside a graph (`<graph>.data`), written under a temporary name while the graph is
 * built: each weight is appended, 64-byte aligned, as soon as the builder has it, so the weights of
 * a large model are never all in memory at once. `writeGraph` renames it into place with the graph.
 */
export class GraphDataFile implements WeightStore {
  readonly tempPath: string;
  private fd: number | null;
  private offset = 0;
  private static readonly pad = new Uint8Array(64);

  constructor(readonly graphPath: string) {
    mkdirSync(dirname(graphPath), { recursive: true });
    this.tempPath = `${graphPath}.data.${process.pid}.tmp`;
    this.fd = openSync(this.tempPath, 'w');
  }

  put(bytes: Uint8Array): { offset: number; length: number } {
    if (this.fd === null) throw new Error(`${this.tempPath} is already closed`);
    const at = this.offset;
    writeAll(this.fd, bytes);
    this.offset += bytes.length;
    const gap = (64 - (this.offset % 64)) % 64;
    if (gap > 0) {
      writeAll(this.fd, GraphDataFile.pad.subarray(0, gap));
      this.offset += gap;
    }
    return { offset: at, length: bytes.length };
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  /** Closes and deletes the temporary file (a build that failed). */
  discard(): void {
    this.close();
    rmSync(this.tempPath, { force: true });
  }
}

function writeAll(fd: number, bytes: Uint8Array): void {
  for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, Math.min(bytes.length - done, 1 << 30));
}

/**
 * Writes the graph to `path` atomically (temp file + rename). A graph built into a `GraphDataFile`
 * points its stored weights at `path + '.data'`. Otherwise weights go inline when their total is
 * under `externalThreshold` bytes, else into `path + '.data'`, 64-byte aligned.
 */
export function writeGraph(graph: BuiltGraph, path: string, meta: Record<string, string>, externalThreshold = DEFAULT_EXTERNAL_DATA_THRESHOLD, dataFile?: GraphDataFile): void {
  mkdirSync(join(path, '..'), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  const dataPath = `${path}.data`;
  let store = dataFile;
  try {
    let inMemory = graph.initializers;
    if (store === undefined) {
      const total = graph.initializers.reduce((sum, t) => sum + (t.data?.byteLength ?? 0), 0);
      if (total > externalThreshold) {
        // Small tensors (constants) stay inline; only weights move out.
        store = new GraphDataFile(path);
        const into = store;
        inMemory = graph.initializers.map((t) =>
          t.data !== null && t.data.byteLength >= STORE_MIN_BYTES ? { ...t, data: null, stored: into.put(initializerBytes(t.data)) } : t,
        );
      }
    }
    store?.close();
    const initializer: TensorProtoJs[] = inMemory.map((t) => {
      if (t.data !== null) return { name: t.name, dims: t.dims, dataType: t.dataType, rawData: initializerBytes(t.data) };
      if (t.stored === undefined || store === undefined) throw new Error(`initializer ${t.name} has neither data nor a data file`);
      return {
        name: t.name,
        dims: t.dims,
        dataType: t.dataType,
        dataLocation: 1,
        externalData: [
          { key: 'location', value: basename(dataPath) },
          { key: 'offset', value: String(t.stored.offset) },
          { key: 'length', value: String(t.stored.length) },
        ],
      };
    });
    const model: ModelProtoJs = {
      irVersion: 8,
      producerName: 'echo-studio',
      producerVersion: String(GRAPH_VERSION),
      opsetImport: graph.nodes.some((n) => n.domain === MS_DOMAIN)
        ? [{ domain: '', version: OPSET }, { domain: MS_DOMAIN, version: 1 }]
        : [{ domain: '', version: OPSET }],
      metadataProps: Object.entries(meta).map(([key, value]) => ({ key, value })),
      graph: { name: 'echo_tree_decoder', node: graph.nodes, initializer, input: graph.inputs, output: graph.outputs },
    };
    const fd = openSync(tmp, 'w');
    try {
      writeAll(fd, encodeModel(model));
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    store?.discard();
    rmSync(tmp, { force: true });
    throw err;
  }
  if (store !== undefined) renameSync(store.tempPath, dataPath);
  else if (existsSync(dataPath)) rmSync(dataPath);
  renameSync(tmp, path);
}

/**
 * Builds a graph and writes it to `graphPath`. Past `externalThreshold` bytes of float32 weights
 * (`float32Bytes`, which bounds any precision's) the builder gets a data file to stream the weights
 * into; a build that fails deletes it, and its error propagates as it is. A failed write is one
 * line that names the cache.
 */
export function buildIntoCache(
  graphPath: string,
  float32Bytes: number,
  build: (store: WeightStore | undefined) => BuiltGraph,
  meta: Record<string, string>,
  externalThreshold = DEFAULT_EXTERNAL_DATA_THRESHOLD,
): void {
  const cannotWrite = (err: unknown) => new ModelLoadError(graphPath, `cannot write the graph cache (${errorCode(err)}); set ECHO_STUDIO_CACHE to a writable folder`);
  let dataFile: GraphDataFile | undefined;
  try {
    dataFile = float32Bytes > externalThreshold ? new GraphDataFile(graphPath) : undefined;
  } catch (err) {
    throw cannotWrite(err);
  }
  let graph: BuiltGraph;
  try {
    graph = build(dataFile);
  } catch (err) {
    dataFile?.discard();
    throw err;
  }
  try {
    writeGraph(graph, graphPath, meta, externalThreshold, dataFile);
  } catch (err) {
    throw cannotWrite(err);
  }
}

// ---- Entries: sidecars, last use, listing and removal ----

/** `<key>.json` next to `<key>.onnx`: what the graph was built from, so it can be listed and pruned. */
export interface GraphSidecar {
  /** Absolute model folder the graph was built from. */
  source: string;
  graphVersion: number;
  architecture: string;
  /** Weight precision the graph was built with (sidecars from before it existed: float32). */
  precision: WeightPrecision;
  /** Hidden-state boundaries of its `features` output (for an EAGLE-3 head's target); absent: none. */
  features?: number[];
  /** ISO time the graph was written. */
  builtAt: string;
  /** .onnx + .onnx.data bytes when written. */
  bytes: number;
  /** graphDigest of the files when written; absent in sidecars from before it was recorded. */
  digest?: string;
}

export interface GraphCacheEntry {
  key: string;
  /** The `<key>.onnx` file. */
  path: string;
  /** From the sidecar; null for graphs written before sidecars existed. */
  source: string | null;
  architecture: string | null;
  graphVersion: number | null;
  precision: WeightPrecision | null;
  /** Feature boundaries of a graph built for an EAGLE-3 head's target; empty: none. */
  features: number[];
  builtAt: string | null;
  /** The .onnx file's mtime: set when written, touched by `markGraphUsed` on every reuse. */
  lastUsedAt: string;
  /** .onnx + .onnx.data bytes on disk now. */
  bytes: number;
}

export interface GraphRemoval {
  removed: GraphCacheEntry[];
  /** Bytes of the removed entries plus the leftover files deleted with them. */
  freedBytes: number;
  /** Files that could not be deleted (permissions, a file in use on Windows), with the reason. */
  failed: { path: string; reason: string }[];
}

/** Crashed writes leave `<key>.onnx.<pid>.tmp` files; a younger one may be a write in progress. */
export const STALE_LEFTOVER_MS = 60 * 60 * 1000;

const CACHE_KEY = /^[0-9a-f]{32}$/;
const TEMP_FILE = /^([0-9a-f]{32})\.(?:onnx|onnx\.data|json)\.\d+\.tmp$/;

export function graphsDir(root = cacheRoot()): string {
  return join(root, 'graphs');
}

export function sidecarPath(graphPath: string): string {
  return graphPath.replace(/\.onnx$/, '.json');
}

export function graphFileBytes(graphPath: string): number {
  let total = statSync(graphPath).size;
  if (existsSync(`${graphPath}.data`)) total += statSync(`${graphPath}.data`).size;
  return total;
}

/**
 * SHA-256 of `<key>.onnx` followed by `<key>.onnx.data` (when there is one), read in 4 MiB chunks:
 * what a load checks a cached graph against, since damage that keeps a file's size (a sector gone
 * bad, a stray write) loads without an error and computes something else.
 */
export function graphDigest(graphPath: string): string {
  const hash = createHash('sha256');
  const chunk = Buffer.allocUnsafe(4 << 20);
  for (const file of [graphPath, `${graphPath}.data`]) {
    if (file !== graphPath && !existsSync(file)) continue;
    hash.update(`${basename(file)}\0`);
    const fd = openSync(file, 'r');
    try {
      for (let n; (n = readSync(fd, chunk, 0, chunk.length, null)) > 0; ) hash.update(chunk.subarray(0, n));
    } finally {
      closeSync(fd);
    }
  }
  return hash.digest('hex');
}

/**
 * Why a cached graph must not be used, or null when its files still have the digest its sidecar
 * recorded when they were written. A graph without a readable sidecar or digest cannot be checked,
 * so it counts as damaged too (this version writes both with every graph).
 */
export function cachedGraphProblem(graphPath: string): string | null {
  const sidecar = readSidecar(sidecarPath(graphPath));
  if (sidecar?.digest === undefined) return `cached graph ${basename(graphPath)} has no recorded digest to check it against`;
  if (graphDigest(graphPath) !== sidecar.digest) return `cached graph ${basename(graphPath)} does not match the digest recorded when it was written (damaged on disk)`;
  return null;
}

/** Writes `<key>.json` next to a freshly written graph, atomically (temp file + rename). */
export function writeGraphSidecar(
  graphPath: string,
  what: { source: string; graphVersion: number; architecture: string; precision: WeightPrecision; features?: number[] },
): GraphSidecar {
  const sidecar: GraphSidecar = {
    source: resolve(what.source),
    graphVersion: what.graphVersion,
    architecture: what.architecture,
    precision: what.precision,
    ...(what.features && what.features.length > 0 ? { features: what.features } : {}),
    builtAt: new Date().toISOString(),
    bytes: graphFileBytes(graphPath),
    digest: graphDigest(graphPath),
  };
  const path = sidecarPath(graphPath);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(sidecar, null, 2)}\n`);
  renameSync(tmp, path);
  return sidecar;
}

/** Records a reuse as the .onnx file's mtime, which `--prune-unused` reads. */
export function markGraphUsed(graphPath: string, now = new Date()): void {
  utimesSync(graphPath, now, now);
}

function readSidecar(path: string): GraphSidecar | null {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return null; // missing or not ours: the entry is listed as unknown
  }
  const s = raw as Partial<GraphSidecar> | null;
  if (s === null || typeof s !== 'object' || typeof s.source !== 'string' || typeof s.graphVersion !== 'number' || typeof s.architecture !== 'string') return null;
  const precision: WeightPrecision = WeightPrecisionSchema.safeParse(s.precision).data ?? 'float32';
  const features = Array.isArray(s.features) && s.features.every((b) => typeof b === 'number') ? { features: s.features } : {};
  const digest = typeof s.digest === 'string' ? { digest: s.digest } : {};
  return { source: s.source, graphVersion: s.graphVersion, architecture: s.architecture, precision, ...features, ...digest, builtAt: typeof s.builtAt === 'string' ? s.builtAt : '', bytes: typeof s.bytes === 'number' ? s.bytes : 0 };
}

function listNames(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/**
 * The graphs in the cache, most recently used first. Only `*.onnx` files that are ours count:
 * named by a cache key, or described by a sidecar.
 */
export function listGraphCache(root = cacheRoot()): GraphCacheEntry[] {
  const dir = graphsDir(root);
  const entries: GraphCacheEntry[] = [];
  for (const name of listNames(dir)) {
    if (!name.endsWith('.onnx')) continue;
    const key = name.slice(0, -'.onnx'.length);
    const path = join(dir, name);
    const sidecar = readSidecar(sidecarPath(path));
    if (sidecar === null && !CACHE_KEY.test(key)) continue;
    let stat;
    try {
      stat = statSync(path);
      if (!stat.isFile()) continue;
    } catch {
      continue; // removed while listing
    }
    let bytes = stat.size;
    try {
      bytes += statSync(`${path}.data`).size;
    } catch {
      // inline weights: no data file
    }
    entries.push({
      key,
      path,
      source: sidecar?.source ?? null,
      architecture: sidecar?.architecture ?? null,
      graphVersion: sidecar?.graphVersion ?? null,
      precision: sidecar?.precision ?? null,
      features: sidecar?.features ?? [],
      builtAt: sidecar?.builtAt || null,
      lastUsedAt: stat.mtime.toISOString(),
      bytes,
    });
  }
  return entries.sort((a, b) => b.lastUsedAt.localeCompare(a.lastUsedAt) || a.key.localeCompare(b.key));
}

/** A file-system error in one word (its code, e.g. EACCES), or its message when it has none. */
export function errorCode(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e.code ?? e.message;
}

function failure(path: string, err: unknown): { path: string; reason: string } {
  return { path, reason: errorCode(err) };
}

/** Deletes each entry's .onnx, .onnx.data and sidecar; an entry counts as removed once its .onnx is gone. */
export function removeGraphEntries(entries: GraphCacheEntry[]): GraphRemoval {
  const result: GraphRemoval = { removed: [], freedBytes: 0, failed: [] };
  for (const entry of entries) {
    try {
      rmSync(entry.path, { force: true });
    } catch (err) {
      result.failed.push(failure(entry.path, err));
      continue; // keep the rest so the entry still lists with its source
    }
    result.removed.push(entry);
    result.freedBytes += entry.bytes;
    for (const path of [`${entry.path}.data`, sidecarPath(entry.path)]) {
      try {
        rmSync(path, { force: true });
      } catch (err) {
        result.failed.push(failure(path, err)); // a leftover data file is removed by a later prune
      }
    }
  }
  return result;
}

/**
 * Deletes what crashed or interrupted writes left in `graphs/`: our temp files and `.onnx.data`
 * files without their `.onnx` once older than STALE_LEFTOVER_MS (younger ones may belong to a
 * write in progress in another process: the data file is renamed into place just before the
 * graph), and sidecars without their `.onnx`.
 */
export function removeGraphLeftovers(root = cacheRoot(), now = Date.now()): GraphRemoval {
  const dir = graphsDir(root);
  const result: GraphRemoval = { removed: [], freedBytes: 0, failed: [] };
  const names = listNames(dir);
  const present = new Set(names);
  for (const name of names) {
    const path = join(dir, name);
    let stale: boolean;
    if (TEMP_FILE.test(name)) stale = true;
    else if (name.endsWith('.onnx.data')) {
      const stem = name.slice(0, -'.onnx.data'.length);
      stale = !present.has(`${stem}.onnx`) && (CACHE_KEY.test(stem) || readSidecar(join(dir, `${stem}.json`)) !== null);
    } else if (name.endsWith('.json')) {
      const stem = name.slice(0, -'.json'.length);
      if (present.has(`${stem}.onnx`) || readSidecar(path) === null) continue;
      try {
        rmSync(path, { force: true });
      } catch (err) {
        result.failed.push(failure(path, err));
      }
      continue;
    } else continue;
    if (!stale) continue;
    try {
      const stat = statSync(path);
      if (!stat.isFile() || now - stat.mtimeMs < STALE_LEFTOVER_MS) continue;
      rmSync(path, { force: true });
      result.freedBytes += stat.size;
    } catch (err) {
      result.failed.push(failure(path, err));
    }
  }
  return result;
}

function merge(a: GraphRemoval, b: GraphRemoval): GraphRemoval {
  return { removed: [...a.removed, ...b.removed], freedBytes: a.freedBytes + b.freedBytes, failed: [...a.failed, ...b.failed] };
}

/**
 * A graph of another layout version may belong to another installed version of the app, which
 * touches it on every load: it counts as superseded only once unused this long.
 */
export const OTHER_LAYOUT_GRACE_MS = 14 * 24 * 3600_000;

/**
 * After `keepPath` was written for model folder `source`: deletes the other entries built from
 * the same folder with the same weight precision and graph layout (the model files changed
 * since), the same folder's graphs of other layouts unused for OTHER_LAYOUT_GRACE_MS, and stale
 * leftovers. A folder used both as a draft (int8) and as a target keeps both graphs, and a target
 * with and without an EAGLE-3 head's features keeps both. Entries
 * without a sidecar are left alone: their source is unknown.
 */
export function pruneSupersededGraphs(
  keepPath: string,
  source: string,
  precision: WeightPrecision = 'float32',
  now = Date.now(),
  features: readonly number[] = [],
): GraphRemoval {
  const root = dirname(dirname(keepPath));
  const keep = resolve(keepPath);
  const folder = resolve(source);
  const superseded = listGraphCache(root).filter(
    (e) =>
      e.source !== null &&
      resolve(e.source) === folder &&
      (e.precision ?? 'float32') === precision &&
      e.features.join(',') === features.join(',') &&
      resolve(e.path) !== keep &&
      (e.graphVersion === GRAPH_VERSION || now - Date.parse(e.lastUsedAt) >= OTHER_LAYOUT_GRACE_MS),
  );
  return merge(removeGraphEntries(superseded), removeGraphLeftovers(root, now));
}

/** Deletes the entries not used for `olderThanMs` (0: all of them) and stale leftovers. */
export function pruneUnusedGraphs(olderThanMs: number, root = cacheRoot(), now = Date.now()): GraphRemoval {
  const unused = listGraphCache(root).filter((e) => now - Date.parse(e.lastUsedAt) >= olderThanMs);
  return merge(removeGraphEntries(unused), removeGraphLeftovers(root, now));
}

/** Deletes every entry (sidecar or not) and stale leftovers. */
export function clearGraphCache(root = cacheRoot(), now = Date.now()): GraphRemoval {
  return merge(removeGraphEntries(listGraphCache(root)), removeGraphLeftovers(root, now));
}

/** Deletes one cached graph (its .onnx, .onnx.data and sidecar), e.g. one that no longer loads. */
export function removeCachedGraph(graphPath: string): void {
  for (const path of [graphPath, `${graphPath}.data`, sidecarPath(graphPath)]) rmSync(path, { force: true });
}
