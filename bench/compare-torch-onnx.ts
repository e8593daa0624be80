// The project's graph against a torch.onnx export of the same weights, on the same onnxruntime-node
// with the same session options (a script, not a test; a one-off comparison).
//
//   python3 tools/compare/export_torch_onnx.py        # writes node_modules/.cache/compare/target-torch.onnx
//   npx esbuild bench/compare-torch-onnx.ts --bundle --platform=node --format=esm --packages=external \
//     --outfile=node_modules/.cache/bench/compare-torch-onnx.mjs && node node_modules/.cache/bench/compare-torch-onnx.mjs \
//     --onnx node_modules/.cache/compare/target-torch.onnx [--model DIR] [--threads 1,2] [--tokens 1,8,32,128] [--runs 30]
//
// Same work on both sides: a full causal forward of N tokens from an empty cache, full logits of
// every row. The torch export takes input_ids [1, N] → logits [1, N, vocab]; the project's graph
// gets one entry on an empty slot (parents [-1, 0, 1, …]) with logitsRows = all N rows, and its
// scratch is cleared after each run so every run starts from the empty slot. Times are onnxruntime
// run() only (the project's `result.runMs`; performance.now() around run() for the export), runs
// of the two interleaved, median and minimum of --runs runs after 3 warm-up runs each.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import { loadModel } from '../src/engine/model/index.js';
import { runtimeSessionOptions } from '../src/engine/model/loader.js';

const { values: args } = parseArgs({
  options: {
    onnx: { type: 'string', default: 'node_modules/.cache/compare/target-torch.onnx' },
    model: { type: 'string', default: 'assets/models/echo-demo-target' },
    threads: { type: 'string', default: '1,2' },
    tokens: { type: 'string', default: '1,8,32,128' },
    runs: { type: 'string', default: '30' },
  },
});
const onnxPath = args.onnx!;
if (!existsSync(onnxPath)) throw new Error(`${onnxPath} not found; run python3 tools/compare/export_torch_onnx.py first`);
const threadList = args.threads!.split(',').map(Number);
const tokenList = args.tokens!.split(',').map(Number);
const runs = Number(args.runs);
const scratch = mkdtempSync(join(tmpdir(), 'echo-compare-'));

/** The torch export runs under exactly the runtime's own session options, on CPU. */
function loaderSessionOptions(threads: number): ort.InferenceSession.SessionOptions {
  return { ...runtimeSessionOptions(threads), executionProviders: ['cpu'] };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const maxAbsDiff = (a: Float32Array | number[], b: Float32Array | number[]): number => {
  if (a.length !== b.length) throw new Error(`length ${a.length} != ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
};

const refPath = `${onnxPath}.ref.json`;
const ref = existsSync(refPath) ? (JSON.parse(readFileSync(refPath, 'utf8')) as { tokens: number[]; logits: number[] }) : null;

console.log(`model: ${args.model}; torch export: ${onnxPath}; onnxruntime-node ${ort.env.versions.common}, CPU`);
console.log(`session options as src/engine/model/loader.ts (inter-op 1, sequential, all optimisations, no spinning)`);
console.log(`median / min of ${runs} interleaved runs after 3 warm-up runs; run() time only`);
console.log('');
const rows: string[] = [];
const diffs: string[] = [];
for (const threads of threadList) {
  const project = await loadModel(args.model!, { threads, cacheDir: join(scratch, 'cache') });
  const torch = await ort.InferenceSession.create(onnxPath, loaderSessionOptions(threads));
  const vocab = project.info.vocabSize;
  const token = (i: number): number => (17 + 31 * i) % vocab;
  const slot = project.allocSlot();

  async function runProject(ids: number[]): Promise<{ ms: number; logits: Float32Array }> {
    const r = await project.forward([{ slot, tokens: ids, parents: ids.map((_, i) => i - 1) }], { logitsRows: ids.map((_, i) => i) });
    project.clearScratch(slot);
    return { ms: r.runMs, logits: r.logits! };
  }
  async function runTorch(ids: number[]): Promise<{ ms: number; logits: Float32Array }> {
    const feeds = { input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, (x) => BigInt(x)), [1, ids.length]) };
    const t0 = performance.now();
    const out = await torch.run(feeds);
    const ms = performance.now() - t0;
    return { ms, logits: out.logits.data as Float32Array };
  }

  if (ref) {
    const p = await runProject(ref.tokens);
    const t = await runTorch(ref.tokens);
    diffs.push(
      `threads ${threads}, ${ref.tokens.length} tokens vs PyTorch (tools/train/model.py): project ${maxAbsDiff(p.logits, ref.logits).toExponential(1)}, ` +
        `torch export ${maxAbsDiff(t.logits, ref.logits).toExponential(1)}`,
    );
  }
  for (const n of tokenList) {
    const ids = Array.from({ length: n }, (_, i) => token(i));
    const tp: number[] = [];
    const tt: number[] = [];
    let diff = 0;
    let maxLogit = 0;
    for (let r = 0; r < runs + 3; r++) {
      // Alternate which side goes first so neither always runs right after the other.
      const first = r % 2 === 0;
      const a = first ? await runProject(ids) : null;
      const t = await runTorch(ids);
      const p = a ?? (await runProject(ids));
      if (r === 0) {
        diff = maxAbsDiff(p.logits, t.logits);
        for (const x of t.logits) maxLogit = Math.max(maxLogit, Math.abs(x));
      }
      if (r >= 3) {
        tp.push(p.ms);
        tt.push(t.ms);
      }
    }
    const [pm, tm] = [median(tp), median(tt)];
    const [pmin, tmin] = [Math.min(...tp), Math.min(...tt)];
    rows.push(
      `| ${threads} | ${n} | ${pm.toFixed(3)} | ${pmin.toFixed(3)} | ${tm.toFixed(3)} | ${tmin.toFixed(3)} | ${(pm / tm).toFixed(2)} | ${(pmin / tmin).toFixed(2)} | ${diff.toExponential(1)} |`,
    );
    diffs.push(`threads ${threads}, N ${n}: max |logit diff| project vs torch export ${diff.toExponential(1)} (max |logit| ${maxLogit.toFixed(2)})`);
  }
  await project.release();
  await torch.release();
}
console.log('| threads | N | project median ms | project min ms | torch.onnx median ms | torch.onnx min ms | ratio (median) | ratio (min) | max abs logit diff |');
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) console.log(r);
console.log('');
for (const d of diffs) console.log(d);
rmSync(scratch, { recursive: true, force: true });
