// Two layouts that change how onnxruntime holds a model's weights and not what it computes: an
// embedding stored in float16 or bfloat16 stays 16-bit in the lookup table (the gathered rows are
// cast to float32), and a projection past MAX_PROJECTION_BYTES is split by output rows into parts
// (so prepacking holds at most one part twice while it loads).
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, describe, expect, test } from 'vitest';
import { WEIGHT_PRECISIONS } from '../../../src/shared/config.js';
import { buildGraph, GraphBuilder, projection, projectionBytes, valueInfo, weightBits, type BuiltGraph } from '../../../src/engine/model/graph-builder.js';
import { writeGraph } from '../../../src/engine/model/graph-cache.js';
import { loadModel, openModelFolder } from '../../../src/engine/model/index.js';
import { weightSource } from '../../../src/engine/model/loader.js';
import { DataType } from '../../../src/engine/model/onnx-proto.js';
import { writeFixtureModel, writeSafetensors, type FixtureModel } from './fixtures.js';
import { prefillLogits, tempDir } from './helpers.js';

const tmp = tempDir('echo-compact-');
afterAll(() => tmp.cleanup());

const PROMPTS = [
  [283, 40, 260, 101, 32, 119, 111, 114],
  [72, 101, 108, 108, 111],
];

/** The same folder with every tensor written as float32 (its stored values are exact in float32). */
function float32Copy(fx: FixtureModel, dir: string): string {
  mkdirSync(dir, { recursive: true });
  for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(fx.dir, f), join(dir, f));
  const entries = [...fx.tensors].map(([name, t]) => ({ name, shape: t.shape, bytes: new Uint8Array(t.data.slice().buffer), dtype: 'float32' as const }));
  writeSafetensors(join(dir, 'model.safetensors'), entries);
  return dir;
}

function initializer(graph: BuiltGraph, name: string): BuiltGraph['initializers'][number] | undefined {
  return graph.initializers.find((t) => t.name === name);
}

describe('a 16-bit embedding stays 16-bit', () => {
  test.each([
    ['bfloat16', DataType.BFLOAT16],
    ['float16', DataType.FLOAT16],
  ] as const)('%s: the table keeps the stored bits, the tied head is a float32 matrix of its own, and the logits equal a float32 folder’s bit for bit', async (dtype, dataType) => {
    const fx = writeFixtureModel(join(tmp.path, dtype), { dtype, tieWordEmbeddings: true, seed: 7 });
    const copy = float32Copy(fx, join(tmp.path, `${dtype}-as-float32`));

    const half = openModelFolder(fx.dir, join(tmp.path, 'cache'));
    const halfGraph = buildGraph(half.config, weightSource(half.weights));
    expect(initializer(halfGraph, 'model.embed_tokens.weight')).toMatchObject({ dataType, dims: [fx.vocabSize, fx.hiddenSize] });
    expect(initializer(halfGraph, 'model.embed_tokens.weight')!.data!.byteLength).toBe(2 * fx.vocabSize * fx.hiddenSize);
    expect(initializer(halfGraph, 'lm_head.weight')).toMatchObject({ dataType: DataType.FLOAT });
    // A float32 folder's table is float32 and is the tied head's weight too.
    const full = openModelFolder(copy, join(tmp.path, 'cache'));
    const fullGraph = buildGraph(full.config, weightSource(full.weights));
    expect(initializer(fullGraph, 'model.embed_tokens.weight')).toMatchObject({ dataType: DataType.FLOAT });
    expect(initializer(fullGraph, 'lm_head.weight')).toBeUndefined();

    const options = { slots: 2, maxLength: 64, cacheDir: join(tmp.path, 'cache') };
    const [a, b] = await Promise.all([loadModel(fx.dir, options), loadModel(copy, options)]);
    try {
      const [la, lb] = await Promise.all([prefillLogits(a, PROMPTS), prefillLogits(b, PROMPTS)]);
      expect(la.length).toBe(13);
      for (let i = 0; i < la.length; i++) expect(Array.from(la[i])).toEqual(Array.from(lb[i]));
    } finally {
      await Promise.all([a.release(), b.release()]);
    }
  });
});

describe('a large projection is split into parts by output rows', () => {
  const OUT = 100;
  const INNER = 64;
  const weight = Float32Array.from({ length: OUT * INNER }, (_, i) => Math.sin(i * 0.37) * (1 + (i % 7) / 3));
  const x = Float32Array.from({ length: 5 * INNER }, (_, i) => Math.cos(i * 0.91));

  test.each(WEIGHT_PRECISIONS)('%s: parts of at most the given bytes, and the outputs equal the whole projection’s exactly', async (precision) => {
    const g = new GraphBuilder();
    const whole = projection(g, precision, 'whole', weight, OUT, INNER);
    const before = g.initializers.length;
    // Room for 32 rows a part at every precision: parts of 32, 32, 32 and 4 rows.
    const rowBytes = projectionBytes(1, INNER, weightBits(precision));
    const split = projection(g, precision, 'split', (rows) => weight.subarray(rows.from * INNER, rows.to * INNER), OUT, INNER, 32 * rowBytes + 1);
    const partWeights = g.initializers.slice(before).filter((t) => /^split_part\d+(_q\d)?$/.test(t.name));
    expect(partWeights.map((t) => t.dims[0])).toEqual([32, 32, 32, 4]);
    g.one('Identity', [whole('x')], {}, 'y_whole');
    g.one('Identity', [split('x')], {}, 'y_split');
    const path = join(tmp.path, `projection-${precision}.onnx`);
    writeGraph(
      { nodes: g.nodes, initializers: g.initializers, inputs: [valueInfo('x', DataType.FLOAT, ['N', INNER])], outputs: ['y_whole', 'y_split'].map((n) => valueInfo(n, DataType.FLOAT, ['N', OUT])) },
      path,
      {},
    );
    const session = await ort.InferenceSession.create(path);
    try {
      const r = await session.run({ x: new ort.Tensor('float32', x, [5, INNER]) });
      expect(r.y_split.dims).toEqual([5, OUT]);
      expect(Array.from(r.y_split.data as Float32Array)).toEqual(Array.from(r.y_whole.data as Float32Array));
    } finally {
      await session.release();
    }
  });
});
