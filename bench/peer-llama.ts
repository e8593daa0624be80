// Peer benchmark (a script, on demand, never in CI): ECHO Studio's runtime against llama.cpp on the
// same model folders, batch 1, greedy, decode only.
//
//   npx esbuild bench/peer-llama.ts --bundle --platform=node --format=esm --packages=external \
//     --outfile=node_modules/.cache/bench/peer-llama.mjs && node node_modules/.cache/bench/peer-llama.mjs [options]
//
// llama.cpp is built from the source that the npm package node-llama-cpp@3.21.1 ships (its
// llama/gitRelease.bundle): `npm pack` into --cache, `git clone` of the bundle, cmake with
// GGML_NATIVE, then bench/peer/llama-greedy.cpp compiled against it. Nothing of it enters the
// repository. Each model folder is converted to GGUF by bench/peer/to-gguf.py with that source's
// gguf-py (/usr/bin/python3 with numpy). Then:
//   1. both engines decode every prompt plainly; their token ids must be identical (reported per prompt);
//   2. --rounds alternating rounds of: llama.cpp plain, ECHO `ar`, llama.cpp chain, ECHO `chain`
//      (order rotated each round), each over every prompt; decode tok/s per run, prefill excluded.
// Prints per round the tok/s of each and the ratios ECHO ar ÷ llama.cpp plain, ECHO chain ÷ ECHO ar,
// ECHO chain ÷ llama.cpp chain, then their medians and ranges.
//
// Options: --target DIR, --draft DIR [the bundled pair], --domains code,prose [8 prompts each],
// --count N prompts per domain [8], --new N tokens per prompt [64], --chain N drafted tokens [3; 0:
// plain decoding only, for a target no draft predicts, such as random weights],
// --rounds N [3], --threads N llama.cpp threads [2], --echo-threads N [the engine's default],
// --gguf f32|q8_0 [f32], --echo-precision float32|int8|int4 ECHO's target weights [float32] (int8
// against --gguf q8_0: two 8-bit schemes, so their greedy outputs may part), --cache DIR [~/.cache/echo-studio-peers].
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadPair } from '../src/engine/pair.js';
import { WeightPrecisionSchema } from '../src/shared/config.js';
import { createPolicy } from '../src/engine/policy/index.js';
import { Runner, slotRows } from '../src/engine/runner.js';
import { encodePrompt, readPromptsFile } from '../src/engine/workload.js';

const { values: args } = parseArgs({
  options: {
    target: { type: 'string', default: 'assets/models/echo-demo-target' },
    draft: { type: 'string', default: 'assets/models/echo-demo-draft' },
    domains: { type: 'string', default: 'code,prose' },
    count: { type: 'string', default: '8' },
    new: { type: 'string', default: '64' },
    chain: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    threads: { type: 'string', default: '2' },
    'echo-threads': { type: 'string' },
    gguf: { type: 'string', default: 'f32' },
    'echo-precision': { type: 'string', default: 'float32' },
    cache: { type: 'string', default: join(homedir(), '.cache', 'echo-studio-peers') },
  },
});
const PACKAGE = 'node-llama-cpp@3.21.1';
const newTokens = Number(args.new);
const chain = Number(args.chain);
const rounds = Number(args.rounds);
if (args.gguf !== 'f32' && args.gguf !== 'q8_0') throw new Error(`--gguf takes f32 or q8_0, got ${args.gguf}`);
const echoPrecision = WeightPrecisionSchema.parse(args['echo-precision']);
const cache = resolve(args.cache);
const source = join(cache, 'llama.cpp');
const run = (cmd: string, argv: string[], cwd?: string): string => execFileSync(cmd, argv, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 28 });

// ---- llama.cpp from the package's bundle, built once into the cache ----
mkdirSync(cache, { recursive: true });
if (!existsSync(join(source, 'CMakeLists.txt'))) {
  let tarball = readdirSync(cache).find((f) => f.startsWith('node-llama-cpp-') && f.endsWith('.tgz'));
  if (tarball === undefined) {
    run('npm', ['pack', PACKAGE, '--silent'], cache);
    tarball = readdirSync(cache).find((f) => f.startsWith('node-llama-cpp-') && f.endsWith('.tgz'))!;
  }
  run('tar', ['xzf', tarball, 'package/llama/gitRelease.bundle'], cache);
  run('git', ['clone', '--quiet', join(cache, 'package', 'llama', 'gitRelease.bundle'), source]);
}
const libDir = join(source, 'build', 'bin');
if (!existsSync(join(libDir, 'libllama.so'))) {
  console.error('building llama.cpp (GGML_NATIVE) …');
  run('cmake', ['-B', 'build', '-DCMAKE_BUILD_TYPE=Release', '-DGGML_NATIVE=ON', '-DLLAMA_CURL=OFF', '-DLLAMA_OPENSSL=OFF', '-DLLAMA_BUILD_TESTS=OFF',
    '-DLLAMA_BUILD_EXAMPLES=OFF', '-DLLAMA_BUILD_TOOLS=OFF', '-DLLAMA_BUILD_SERVER=OFF', '-DBUILD_SHARED_LIBS=ON'], source);
  run('cmake', ['--build', 'build', '--target', 'llama', '-j2'], source);
}
const driver = join(cache, 'llama-greedy');
const driverSource = resolve('bench/peer/llama-greedy.cpp');
run('g++', ['-O2', '-std=c++17', '-o', driver, driverSource, '-I', join(source, 'include'), '-I', join(source, 'ggml', 'include'),
  '-L', libDir, '-lllama', '-lggml', '-lggml-base', `-Wl,-rpath,${libDir}`]);
const revision = run('git', ['rev-parse', '--short', 'HEAD'], source).trim();

// ---- the model folders as GGUF (converted again only when a file of the folder is newer) ----
function toGguf(dir: string): string {
  const out = join(cache, 'gguf', `${basename(resolve(dir))}-${args.gguf}.gguf`);
  mkdirSync(join(cache, 'gguf'), { recursive: true });
  const newest = Math.max(...readdirSync(dir).map((f) => statSync(join(dir, f)).mtimeMs));
  if (existsSync(out) && statSync(out).mtimeMs > newest) return out;
  run('/usr/bin/python3', [resolve('bench/peer/to-gguf.py'), join(source, 'gguf-py'), dir, out, args.gguf!]);
  return out;
}
const targetGguf = toGguf(args.target);
const draftGguf = toGguf(args.draft);

// ---- prompts, as token ids both engines take ----
const pair = await loadPair(args.draft, args.target, {
  slots: 1,
  maxLength: 512,
  targetPrecision: echoPrecision,
  ...(args['echo-threads'] ? { threads: Number(args['echo-threads']) } : {}),
});
const prompts = (await Promise.all(args.domains.split(',').map((d) => readPromptsFile(join('assets', 'prompts', `${d}.jsonl`), { limit: Number(args.count) })))).flat().map((r) => encodePrompt(r, pair.tokenizer));
const longest = Math.max(...prompts.map((p) => p.length));
if (slotRows(longest, newTokens, chain + 1) > pair.maxLength) throw new Error(`prompts of ${longest} tokens + ${newTokens} new do not fit the pair's ${pair.maxLength} rows`);
const promptFile = join(cache, 'prompts.txt');
writeFileSync(promptFile, prompts.map((p) => p.join(' ')).join('\n') + '\n');

interface Decoded {
  tokens: number[][];
  tokPerS: number;
}

function llama(withChain: boolean): Decoded {
  const argv = ['--model', targetGguf, '--threads', args.threads!, '--new', String(newTokens), '--prompts', promptFile];
  if (withChain) argv.push('--draft', draftGguf, '--chain', String(chain));
  const lines = run(driver, argv).trim().split('\n');
  let ms = 0;
  const tokens = lines.map((line) => {
    const [t, ...ids] = line.split(' ').map(Number);
    ms += t;
    return ids;
  });
  // The first token comes from the prefill, which is not timed.
  return { tokens, tokPerS: (prompts.length * (newTokens - 1)) / (ms / 1000) };
}

async function echo(policy: 'ar' | 'chain'): Promise<Decoded> {
  let decodeMs = 0;
  const runner = new Runner(
    {
      target: pair.target,
      draft: pair.draft,
      policy: createPolicy(policy, { batch: 1, kmax: chain + 1, ...(policy === 'chain' ? { chainLength: chain } : {}) }),
      batch: 1,
      kmax: chain + 1,
      maxNewTokens: newTokens,
      temperature: 0,
      seed: 0,
      eosTokenIds: [], // as llama-greedy: every prompt decodes all its tokens
      maxLength: pair.maxLength,
      onStep: (e) => {
        decodeMs += e.timings.totalMs - (e.timings.prefillMs ?? 0);
      },
    },
    prompts.map((promptTokens, i) => ({ id: `p${i}`, promptTokens })),
  );
  const summary = await runner.run();
  const tokens = [...summary.results].sort((a, b) => a.index - b.index).map((r) => r.tokens);
  return { tokens, tokPerS: (prompts.length * (newTokens - 1)) / (decodeMs / 1000) };
}

console.log(`llama.cpp ${revision} (from ${PACKAGE}), GGML_NATIVE, ${args.threads} thread(s), GGUF ${args.gguf}; ECHO Studio target ${args.target} (${echoPrecision} weights), draft ${args.draft}`);
console.log(`${prompts.length} prompts (${args.domains}), ${newTokens} new tokens each, greedy, batch 1, chain of ${chain}`);

// 1. Identical greedy output first.
await echo('ar'); // warm-up
const reference = await echo('ar');
const peer = llama(false);
let identical = 0;
for (let i = 0; i < prompts.length; i++) {
  const a = reference.tokens[i];
  const b = peer.tokens[i];
  const first = a.findIndex((t, j) => t !== b[j]);
  if (first < 0 && a.length === b.length) identical++;
  else console.log(`prompt ${i}: outputs differ from token ${first < 0 ? Math.min(a.length, b.length) : first} on`);
}
console.log(`token-identical greedy output on ${identical}/${prompts.length} prompts`);
if (chain > 0) {
  const chained = llama(true);
  const chainSame = chained.tokens.every((t, i) => t.join() === peer.tokens[i].join());
  console.log(`llama.cpp's chain decodes what its plain decoding does: ${chainSame ? 'yes' : 'NO'}`);
}

// 2. Alternating rounds.
const kinds = (['llama plain', 'echo ar', 'llama chain', 'echo chain'] as const).filter((k) => chain > 0 || !k.endsWith('chain'));
const results: Record<(typeof kinds)[number], number[]> = { 'llama plain': [], 'echo ar': [], 'llama chain': [], 'echo chain': [] };
for (let r = 0; r < rounds; r++) {
  for (let j = 0; j < kinds.length; j++) {
    const kind = kinds[(j + r) % kinds.length];
    const d = kind === 'llama plain' ? llama(false) : kind === 'llama chain' ? llama(true) : await echo(kind === 'echo ar' ? 'ar' : 'chain');
    results[kind].push(d.tokPerS);
  }
  const row = kinds.map((k) => `${k} ${results[k][r].toFixed(0)}`).join(', ');
  console.log(`round ${r + 1}: decode tok/s ${row}`);
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ratio = (a: number[], b: number[]): string => {
  const rs = a.map((x, i) => x / b[i]);
  return `${median(rs).toFixed(2)} (${Math.min(...rs).toFixed(2)}–${Math.max(...rs).toFixed(2)})`;
};
console.log('');
console.log(`ECHO ar ÷ llama.cpp plain:    ${ratio(results['echo ar'], results['llama plain'])}`);
if (chain > 0) {
  console.log(`ECHO chain ÷ ECHO ar:         ${ratio(results['echo chain'], results['echo ar'])}`);
  console.log(`ECHO chain ÷ llama.cpp chain: ${ratio(results['echo chain'], results['llama chain'])}`);
  console.log(`llama.cpp chain ÷ plain:      ${ratio(results['llama chain'], results['llama plain'])}`);
}
await pair.release();
