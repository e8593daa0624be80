// One linear layer of the demo target's shapes as onnxruntime runs it (a script, not a test):
// float32 Gemm against MatMulNBits at 8 bits with blocks of 32, 64 and 128 inputs (accuracy_level
// 4), at 1 and 4 rows, one thread, the variants alternating in blocks; µs per call, median over blocks.
// Each variant holds `--copies` layers of distinct weights and calls them in turn, as a forward
// does, so that float32 weights come from memory (8 copies of the demo's gate+up: 46 MB, past a
// 32 MB L3) and int8 ones mostly from L3 (the whole int8 demo target is 26 MB), not from L2.
//
//   npx esbuild bench/matmulnbits-blocks.ts --bundle --platform=node --format=esm --packages=external \
//     --outfile=node_modules/.cache/bench/matmulnbits-blocks.mjs && node node_modules/.cache/bench/matmulnbits-blocks.mjs [--blocks 15] [--calls 200] [--copies 8]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import { GraphBuilder, MS_DOMAIN, valueInfo } from '../src/engine/model/graph-builder.js';
import { writeGraph } from '../src/engine/model/graph-cache.js';
import { DataType } from '../src/engine/model/onnx-proto.js';

const { values: args } = parseArgs({ options: { blocks: { type: 'string', default: '15' }, calls: { type: 'string', default: '200' }, copies: { type: 'string', default: '8' } } });
const copies = Number(args.copies);
const blocks = Number(args.blocks);
const calls = Number(args.calls);
const scratch = mkdtempSync(join(tmpdir(), 'echo-nbits-'));

/** Symmetric 8-bit blocks of `block` inputs along each row (codes q + 128, scale maxabs/127). */
function quantize8(w: Float32Array, rows: number, cols: number, block: number): { packed: Uint8Array; scales: Float32Array; blocks: number } {
  const nb = Math.ceil(cols / block);
  const packed = new Uint8Array(rows * nb * block).fill(128);
  const scales = new Float32Array(rows * nb);
  for (let r = 0; r < rows; r++) {
    for (let b = 0; b < nb; b++) {
      let m = 0;
      for (let i = b * block; i < Math.min(cols, (b + 1) * block); i++) m = Math.max(m, Math.abs(w[r * cols + i]));
      const scale = m > 0 ? m / 127 : 1;
      scales[r * nb + b] = scale;
      for (let i = b * block; i < Math.min(cols, (b + 1) * block); i++) packed[(r * nb + b) * block + (i - b * block)] = Math.round(w[r * cols + i] / scale) + 128;
    }
  }
  return { packed, scales, blocks: nb };
}

async function variant(name: string, out: number, inner: number, block: number | null, copy: number): Promise<ort.InferenceSession> {
  const g = new GraphBuilder();
  const w = Float32Array.from({ length: out * inner }, (_, i) => Math.sin((i + copy * 7919) * 12.9898) * 0.05);
  if (block === null) {
    g.one('Gemm', ['x', g.init('w', [out, inner], w)], { transB: 1 }, 'y');
  } else {
    const q = quantize8(w, out, inner, block);
    const inputs = ['x', g.init('w_q', [out, q.blocks, block], q.packed), g.init('w_s', [out * q.blocks], q.scales)];
    g.op('MatMulNBits', inputs, { K: inner, N: out, bits: 8, block_size: block, accuracy_level: 4 }, 1, ['y'], MS_DOMAIN);
  }
  const path = join(scratch, `${name}.onnx`);
  writeGraph({ nodes: g.nodes, initializers: g.initializers, inputs: [valueInfo('x', DataType.FLOAT, ['M', inner])], outputs: [valueInfo('y', DataType.FLOAT, ['M', out])] }, path, {});
  return ort.InferenceSession.create(path, { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionProviders: ['cpu'] });
}

const shapes: [string, number, number][] = [
  ['qkv 512→1024', 1024, 512],
  ['gate+up 512→2816', 2816, 512],
  ['down 1408→512', 512, 1408],
  ['head 512→4096', 4096, 512],
];
const kinds: [string, number | null][] = [
  ['float32 Gemm', null],
  ['int8 block 32', 32],
  ['int8 block 64', 64],
  ['int8 block 128', 128],
];
console.log(`µs per call, 1 thread, median over ${blocks} blocks of ${calls} calls (range of block medians)`);
console.log(`| layer | rows | ${kinds.map(([k]) => k).join(' | ')} |`);
console.log(`|---|---:|${kinds.map(() => '---:').join('|')}|`);
for (const [label, out, inner] of shapes) {
  const sessions: ort.InferenceSession[][] = [];
  for (const [k, block] of kinds) {
    const layers: ort.InferenceSession[] = [];
    for (let c = 0; c < copies; c++) layers.push(await variant(`${label}-${k}-${c}`.replace(/[^a-z0-9]+/gi, '_'), out, inner, block, c));
    sessions.push(layers);
  }
  for (const rows of [1, 4]) {
    const x = new ort.Tensor('float32', Float32Array.from({ length: rows * inner }, (_, i) => Math.cos(i)), [rows, inner]);
    const per: number[][] = kinds.map(() => []);
    for (let b = 0; b < blocks + 1; b++) {
      for (let j = 0; j < sessions.length; j++) {
        const i = (j + b) % sessions.length;
        const t0 = performance.now();
        for (let c = 0; c < calls; c++) await sessions[i][c % copies].run({ x });
        if (b > 0) per[i].push(((performance.now() - t0) * 1000) / calls);
      }
    }
    const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    console.log(`| ${label} | ${rows} | ${per.map((p) => `${med(p).toFixed(1)} (${Math.min(...p).toFixed(0)}–${Math.max(...p).toFixed(0)})`).join(' | ')} |`);
  }
  for (const layers of sessions) for (const s of layers) await s.release();
}
rmSync(scratch, { recursive: true, force: true });
