// Safetensors reader: headers are parsed eagerly (cheap), tensor data is read on demand, one tensor
// at a time, and converted to float32 (the graph computes in float32 whatever the file holds).
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { basename, isAbsolute, join, win32 } from 'node:path';
import { ModelLoadError } from './errors.js';

export type WeightDtype = 'float32' | 'float16' | 'bfloat16';
/** Integer and bool tensors hold tables, not weights (an EAGLE-3 head's vocabulary maps). */
export type TensorDtype = WeightDtype | 'int64' | 'int32' | 'bool';

const DTYPE_BY_TAG: Record<string, TensorDtype> = { F32: 'float32', F16: 'float16', BF16: 'bfloat16', I64: 'int64', I32: 'int32', BOOL: 'bool', U8: 'bool' };
const BYTES: Record<TensorDtype, number> = { float32: 4, float16: 2, bfloat16: 2, int64: 8, int32: 4, bool: 1 };

export function isWeightDtype(dtype: TensorDtype): dtype is WeightDtype {
  return dtype === 'float32' || dtype === 'float16' || dtype === 'bfloat16';
}

export interface TensorEntry {
  name: string;
  dtype: TensorDtype;
  shape: number[];
  file: string;
  /** Absolute byte offset of the data in the file. */
  offset: number;
  byteLength: number;
}

export interface SafetensorsFileInfo {
  path: string;
  size: number;
  mtimeMs: number;
  /** The raw JSON header, part of the graph cache key. */
  header: string;
}

export interface WeightIndex {
  files: SafetensorsFileInfo[];
  tensors: Map<string, TensorEntry>;
}

function readHeader(path: string): { info: SafetensorsFileInfo; entries: TensorEntry[] } {
  const name = path;
  const fd = openSync(path, 'r');
  try {
    const st = fstatSync(fd);
    if (st.size < 8) throw new ModelLoadError(name, `truncated: ${st.size} bytes, too short for a safetensors header`);
    const lenBuf = Buffer.alloc(8);
    readSync(fd, lenBuf, 0, 8, 0);
    const headerLen = Number(lenBuf.readBigUInt64LE(0));
    if (headerLen <= 0 || 8 + headerLen > st.size || headerLen > 100_000_000) {
      throw new ModelLoadError(name, `truncated or not a safetensors file (header length ${headerLen}, file size ${st.size})`);
    }
    const headerBuf = Buffer.alloc(headerLen);
    readSync(fd, headerBuf, 0, headerLen, 8);
    const header = headerBuf.toString('utf8');
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(header) as Record<string, unknown>;
    } catch {
      throw new ModelLoadError(name, 'safetensors header is not valid JSON');
    }
    const dataStart = 8 + headerLen;
    const entries: TensorEntry[] = [];
    for (const [tensorName, raw] of Object.entries(json)) {
      if (tensorName === '__metadata__') continue;
      const t = raw as { dtype?: string; shape?: number[]; data_offsets?: [number, number] };
      const dtype = DTYPE_BY_TAG[t.dtype ?? ''];
      if (dtype === undefined) {
        throw new ModelLoadError(name, `tensor ${tensorName} has dtype ${String(t.dtype)}; supported: F32, F16, BF16 (and I64, I32, BOOL, U8 for tables)`);
      }
      if (!Array.isArray(t.shape) || !Array.isArray(t.data_offsets) || t.data_offsets.length !== 2) {
        throw new ModelLoadError(name, `tensor ${tensorName} has a malformed header entry`);
      }
      const [begin, end] = t.data_offsets;
      if (!Number.isSafeInteger(begin) || !Number.isSafeInteger(end) || begin < 0 || end < begin) {
        throw new ModelLoadError(name, `tensor ${tensorName} has data_offsets [${String(begin)}, ${String(end)}], not two byte offsets in order`);
      }
      const count = t.shape.reduce((a, b) => a * b, 1);
      if (end - begin !== count * BYTES[dtype]) {
        throw new ModelLoadError(name, `tensor ${tensorName}: data_offsets span ${end - begin} bytes but shape [${t.shape}] of ${t.dtype} needs ${count * BYTES[dtype]}`);
      }
      if (dataStart + end > st.size) {
        throw new ModelLoadError(name, `truncated: tensor ${tensorName} ends at byte ${dataStart + end} but the file has ${st.size} bytes`);
      }
      entries.push({ name: tensorName, dtype, shape: t.shape, file: path, offset: dataStart + begin, byteLength: end - begin });
    }
    const layoutProblem = dataLayoutProblem(entries, dataStart, st.size);
    if (layoutProblem !== null) throw new ModelLoadError(name, layoutProblem);
    return { info: { path, size: st.size, mtimeMs: st.mtimeMs, header }, entries };
  } finally {
    closeSync(fd);
  }
}

/**
 * What the safetensors format forbids in where its tensors lie, or null: in order of their offsets
 * the tensors must tile the data that follows the header exactly, the first starting at its first
 * byte and each next one where the one before ended, the last ending at the end of the file. A
 * tensor that overlaps its neighbour reads the neighbour's bytes as its own.
 */
function dataLayoutProblem(entries: readonly TensorEntry[], dataStart: number, fileSize: number): string | null {
  const sorted = [...entries].sort((a, b) => a.offset - b.offset || a.byteLength - b.byteLength);
  const relative = (offset: number) => offset - dataStart;
  // Overlaps first: a tensor moved into its neighbours also leaves a gap where it was, and the
  // overlap is what reads wrong bytes.
  for (let i = 1; i < sorted.length; i++) {
    const [before, t] = [sorted[i - 1], sorted[i]];
    const beforeEnds = before.offset + before.byteLength;
    if (t.offset < beforeEnds) return `tensor ${t.name} overlaps ${before.name}: its data_offsets start at ${relative(t.offset)}, before ${before.name} ends at ${relative(beforeEnds)}`;
  }
  let expected = dataStart;
  let previous: TensorEntry | null = null;
  for (const t of sorted) {
    if (t.offset > expected) {
      return `tensor ${t.name} leaves a gap of ${t.offset - expected} bytes: its data_offsets start at ${relative(t.offset)}, but ${previous === null ? 'the data starts at 0' : `${previous.name} ends at ${relative(expected)}`}`;
    }
    expected = t.offset + t.byteLength;
    previous = t;
  }
  if (expected !== fileSize) return `${fileSize - expected} bytes follow the last tensor${previous === null ? '' : ` (${previous.name})`}; safetensors data ends with its last tensor`;
  return null;
}

/**
 * Why a shard name from model.safetensors.index.json is refused, or null: a shard must be a file
 * inside the model's folder, so a downloaded folder cannot make the loader read (and hash into the
 * graph cache) files elsewhere on the machine.
 */
export function shardNameProblem(name: unknown): string | null {
  if (typeof name !== 'string' || name.trim() === '') return `a shard name in "weight_map" is not a file name (${JSON.stringify(name)})`;
  if (isAbsolute(name) || win32.isAbsolute(name)) return `shard "${name}" is an absolute path; shards must be inside the model's folder`;
  if (name.split(/[\\/]/).includes('..')) return `shard "${name}" leads out of the model's folder (".."); shards must be inside it`;
  return null;
}

/** Finds model.safetensors or the shards named by model.safetensors.index.json, and reads their headers. */
export function indexWeights(dir: string): WeightIndex {
  const single = join(dir, 'model.safetensors');
  const indexPath = join(dir, 'model.safetensors.index.json');
  let paths: string[];
  if (existsSync(single)) {
    paths = [single];
  } else if (existsSync(indexPath)) {
    let map: Record<string, string>;
    try {
      map = (JSON.parse(readFileSync(indexPath, 'utf8')) as { weight_map: Record<string, string> }).weight_map;
    } catch {
      throw new ModelLoadError(indexPath, 'not valid JSON');
    }
    if (map === null || typeof map !== 'object') throw new ModelLoadError(indexPath, 'missing "weight_map"');
    const shards = [...new Set(Object.values(map))].sort();
    for (const shard of shards) {
      const problem = shardNameProblem(shard);
      if (problem !== null) throw new ModelLoadError(indexPath, problem);
    }
    paths = shards.map((f) => join(dir, f));
    for (const p of paths) {
      if (!existsSync(p)) throw new ModelLoadError(p, "missing (named by model.safetensors.index.json)");
    }
  } else {
    throw new ModelLoadError(single, 'missing (and no model.safetensors.index.json)');
  }
  const files: SafetensorsFileInfo[] = [];
  const tensors = new Map<string, TensorEntry>();
  for (const p of paths) {
    const { info, entries } = readHeader(p);
    files.push(info);
    for (const e of entries) tensors.set(e.name, e);
  }
  return { files, tensors };
}

/** Identity of the weight files for cache keys: name, size, header and content hash of each. */
export function weightIdentity(index: WeightIndex, contentHash: (file: string) => string): string {
  return index.files.map((f) => `${basename(f.path)}|${f.size}|${contentHash(f.path)}|${f.header}`).join('\n');
}

function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

let halfTable: Float32Array | null = null;

/** One tensor's bytes (or `length` of them from byte `from`), read into a fresh buffer of its own. */
function readBytes(entry: TensorEntry, from = 0, length = entry.byteLength): Uint8Array {
  const bytes = new Uint8Array(length);
  const fd = openSync(entry.file, 'r');
  try {
    let done = 0;
    while (done < length) {
      const n = readSync(fd, bytes, done, Math.min(length - done, 1 << 30), entry.offset + from + done);
      if (n === 0) throw new ModelLoadError(entry.file, `truncated while reading ${entry.name}`);
      done += n;
    }
  } finally {
    closeSync(fd);
  }
  return bytes;
}

/** Reads an integer or bool tensor as float64 numbers (exact for ids). */
export function readTensorInts(entry: TensorEntry): number[] {
  const bytes = readBytes(entry);
  const count = entry.byteLength / BYTES[entry.dtype];
  if (entry.dtype === 'int64') return Array.from(new BigInt64Array(bytes.buffer, 0, count), (v) => Number(v));
  if (entry.dtype === 'int32') return Array.from(new Int32Array(bytes.buffer, 0, count));
  if (entry.dtype === 'bool') return Array.from(bytes);
  throw new ModelLoadError(entry.file, `${entry.name} is ${entry.dtype}, expected an integer or bool tensor`);
}

/** A 16-bit float tensor as the file stores it: its raw bits and their format. */
export interface HalfTensor {
  format: 'float16' | 'bfloat16';
  bits: Uint16Array;
}

/** Reads a float16 or bfloat16 tensor as stored (half the memory of its float32 form); null for other dtypes. */
export function readTensorHalf(entry: TensorEntry): HalfTensor | null {
  if (entry.dtype !== 'float16' && entry.dtype !== 'bfloat16') return null;
  const bytes = readBytes(entry);
  return { format: entry.dtype, bits: new Uint16Array(bytes.buffer, 0, entry.byteLength / 2) };
}

/** Rows [from, to) along a tensor's first dimension. */
export interface RowRange {
  from: number;
  to: number;
}

/**
 * Reads one tensor, or the rows `rows` of it, as float32 (a fresh array the caller owns). Reading a
 * large tensor in row ranges keeps only one range in memory at a time.
 */
export function readTensorF32(entry: TensorEntry, rows?: RowRange): Float32Array {
  if (!isWeightDtype(entry.dtype)) throw new ModelLoadError(entry.file, `${entry.name} is ${entry.dtype}, expected F32, F16 or BF16 weights`);
  const rowBytes = entry.shape.slice(1).reduce((a, b) => a * b, 1) * BYTES[entry.dtype];
  const range = rows ?? { from: 0, to: entry.shape[0] ?? 1 };
  if (rows !== undefined && !(Number.isInteger(rows.from) && Number.isInteger(rows.to) && 0 <= rows.from && rows.from <= rows.to && rows.to <= entry.shape[0])) {
    throw new RangeError(`rows ${rows.from}..${rows.to} outside ${entry.name}'s ${entry.shape[0]}`);
  }
  const byteLength = rows === undefined ? entry.byteLength : (range.to - range.from) * rowBytes;
  const count = byteLength / BYTES[entry.dtype];
  // A fresh, aligned buffer (safetensors offsets need not be 4-byte aligned); the typed-array
  // views below assume a little-endian host, as every supported platform is.
  const bytes = readBytes(entry, range.from * rowBytes, byteLength);
  if (entry.dtype === 'float32') return new Float32Array(bytes.buffer, 0, count);
  const halves = new Uint16Array(bytes.buffer, 0, count);
  const out = new Float32Array(count);
  if (entry.dtype === 'float16') {
    if (halfTable === null) {
      halfTable = new Float32Array(65536);
      for (let i = 0; i < 65536; i++) halfTable[i] = halfToFloat(i);
    }
    const table = halfTable;
    for (let i = 0; i < count; i++) out[i] = table[halves[i]];
  } else {
    // bfloat16 is the top half of a float32.
    const u32 = new Uint32Array(out.buffer);
    for (let i = 0; i < count; i++) u32[i] = halves[i] << 16;
  }
  return out;
}
