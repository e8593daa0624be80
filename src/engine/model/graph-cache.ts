// On-disk cache of built graphs: <cache>/graphs/<key>.onnx (+ <key>.onnx.data for external
// weights). The key hashes config.json, the weight files' identity and GRAPH_VERSION, so a changed
// model or a new graph layout never reuses a stale graph.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { GRAPH_VERSION, OPSET, type BuiltGraph } from './graph-builder.js';
import { encodeModel, type ModelProtoJs, type TensorProtoJs } from './onnx-proto.js';

/** Graphs whose weights exceed this many bytes keep them in an external data file (protobuf caps at 2 GiB). */
export const DEFAULT_EXTERNAL_DATA_THRESHOLD = 1 << 30;

export function cacheRoot(): string {
  const env = process.env.ECHO_STUDIO_CACHE;
  return env && env.length > 0 ? env : join(homedir(), '.cache', 'echo-studio');
}

export function graphCacheKey(configText: string, weightIdentity: string): string {
  return createHash('sha256').update(`graph-v${GRAPH_VERSION}\n${configText}\n${weightIdentity}`).digest('hex').slice(0, 32);
}

export function cachedGraphPath(key: string, root = cacheRoot()): string {
  return join(root, 'graphs', `${key}.onnx`);
}

function bytesOf(data: Float32Array | Int32Array | BigInt64Array): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/**
 * Writes the graph to `path` atomically (temp file + rename). Weights go inline when their total
 * is under `externalThreshold` bytes, else into `path + '.data'`, 64-byte aligned.
 */
export function writeGraph(graph: BuiltGraph, path: string, meta: Record<string, string>, externalThreshold = DEFAULT_EXTERNAL_DATA_THRESHOLD): void {
  mkdirSync(join(path, '..'), { recursive: true });
  const total = graph.initializers.reduce((s, t) => s + t.data.byteLength, 0);
  const external = total > externalThreshold;
  const tmp = `${path}.${process.pid}.tmp`;
  const dataPath = `${path}.data`;
  const dataTmp = `${dataPath}.${process.pid}.tmp`;
  const initializer: TensorProtoJs[] = [];
  if (external) {
    const fd = openSync(dataTmp, 'w');
    try {
      let offset = 0;
      const pad = new Uint8Array(64);
      for (const t of graph.initializers) {
        // Small tensors (constants) stay inline; only weights move out.
        if (t.data.byteLength < 1024) {
          initializer.push({ name: t.name, dims: t.dims, dataType: t.dataType, rawData: bytesOf(t.data) });
          continue;
        }
        const bytes = bytesOf(t.data);
        for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, Math.min(bytes.length - done, 1 << 30));
        initializer.push({
          name: t.name,
          dims: t.dims,
          dataType: t.dataType,
          dataLocation: 1,
          externalData: [
            { key: 'location', value: basename(dataPath) },
            { key: 'offset', value: String(offset) },
            { key: 'length', value: String(bytes.length) },
          ],
        });
        offset += bytes.length;
        const gap = (64 - (offset % 64)) % 64;
        if (gap > 0) {
          writeSync(fd, pad, 0, gap);
          offset += gap;
        }
      }
    } finally {
      closeSync(fd);
    }
  } else {
    for (const t of graph.initializers) initializer.push({ name: t.name, dims: t.dims, dataType: t.dataType, rawData: bytesOf(t.data) });
  }
  const model: ModelProtoJs = {
    irVersion: 8,
    producerName: 'echo-studio',
    producerVersion: String(GRAPH_VERSION),
    opsetImport: [{ domain: '', version: OPSET }],
    metadataProps: Object.entries(meta).map(([key, value]) => ({ key, value })),
    graph: { name: 'echo_tree_decoder', node: graph.nodes, initializer, input: graph.inputs, output: graph.outputs },
  };
  const bytes = encodeModel(model);
  const fd = openSync(tmp, 'w');
  try {
    for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, Math.min(bytes.length - done, 1 << 30));
  } finally {
    closeSync(fd);
  }
  if (external) renameSync(dataTmp, dataPath);
  else if (existsSync(dataPath)) rmSync(dataPath);
  renameSync(tmp, path);
}
