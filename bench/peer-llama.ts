// Peer benchmark (a script, on demand, never in CI): ECHO Studio against llama.cpp on the same
// model folders, batch 1, greedy, each side run as a user runs it.
//
//   npx esbuild bench/peer-llama.ts --bundle --platform=node --format=esm --packages=external \
//     --outfile=node_modules/.cache/bench/peer-llama.mjs && node node_modules/.cache/bench/peer-llama.mjs [options]
//
// llama.cpp is built from the source that the npm package node-llama-cpp@3.21.1 ships (its
// llama/gitRelease.bundle): `npm pack` into --cache, `git clone` of the bundle, cmake with
// GGML_NATIVE, then bench/peer/llama-greedy.cpp compiled against it. Nothing of it enters the
// repository. Each model folder is converted to GGUF by bench/peer/to-gguf.py with that source's
// gguf-py (/usr/bin/python3 with numpy).
//
// Each round runs, in an order rotated every round: llama-greedy plain, a fresh `echo-studio run
// --policy ar` process, llama-greedy with the draft chain, a fresh `echo-studio run --policy chain`
// process. Every one decodes the prompt list --repeat times in its process (pass 1 is what a fresh
// process's first requests cost, the later passes its steady state) and stops a prompt at EOS or
// --new tokens. Decode tok/s: ECHO's from its trace (step time less prefill, tokens emitted),
// llama.cpp's from its own clock around its decode loop (prefill excluded); ECHO decodes a prompt's
// first token in a step where llama.cpp takes it from the prefill, so both rates are per decoding
// forward. Every round checks token identity: ECHO ar against llama.cpp plain, ECHO chain against
// ECHO ar, llama.cpp chain against its plain decoding.
//
// Options: --target DIR, --draft DIR [the bundled pair], --domains code,prose, --count N prompts per
// domain [4], --new N tokens per prompt at most [64], --chain N drafted tokens [3; 0: plain decoding
// only, for a target no draft predicts, such as random weights], --rounds N [10], --repeat N [2],
// --threads N llama.cpp threads [2], --echo-threads N [the CLI's default], --gguf f32|q8_0 [f32],
// --echo-precision float32|int8|int4 ECHO's target weights [float32] (int8 against --gguf q8_0: two
// 8-bit schemes, so their greedy outputs may part), --cache DIR [~/.cache/echo-studio-peers],
// --markdown FILE: append this run's summary as a markdown section (bench/peer-report.sh).
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parseModelConfig, readConfigJson } from '../src/engine/model/config.js';
import { ModelTokenizer } from '../src/engine/model/tokenizer.js';
import { WeightPrecisionSchema } from '../src/shared/config.js';
import { encodePrompt, readPromptsFile } from '../src/engine/run/workload.js';

const { values: args } = parseArgs({
  options: {
    target: { type: 'string', default: 'assets/models/echo-demo-target' },
    draft: { type: 'string', default: 'assets/models/echo-demo-draft' },
    domains: { type: 'string', default: 'code,prose' },
    count: { type: 'string', default: '4' },
    new: { type: 'string', default: '64' },
    chain: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '10' },
    repeat: { type: 'string', default: '2' },
    threads: { type: 'string', default: '2' },
    'echo-threads': { type: 'string' },
    gguf: { type: 'string', default: 'f32' },
    'echo-precision': { type: 'string', default: 'float32' },
    cache: { type: 'string', default: join(homedir(), '.cache', 'echo-studio-peers') },
    markdown: { type: 'string' },
  },
});
const PACKAGE = 'node-llama-cpp@3.21.1';
const newTokens = Number(args.new);
const chain = Number(args.chain);
const rounds = Number(args.rounds);
const repeat = Number(args.repeat);
if (args.gguf !== 'f32' && args.gguf !== 'q8_0') throw new Error(`--gguf takes f32 or q8_0, got ${args.gguf}`);
if (!(repeat >= 1 && rounds >= 1)) throw new Error('--rounds and --repeat take N >= 1');
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
if (!existsSync(driver) || statSync(driver).mtimeMs < statSync(driverSource).mtimeMs) run('g++', ['-O2', '-std=c++17', '-o', driver, driverSource, '-I', join(source, 'include'), '-I', join(source, 'ggml', 'include'),
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

// ---- prompts: a JSONL file for the CLI, the same records as token ids for llama-greedy ----
const records = (await Promise.all(args.domains.split(',').map((d) => readPromptsFile(join('assets', 'prompts', `${d}.jsonl`), { limit: Number(args.count) })))).flat();
const targetConfig = parseModelConfig(readConfigJson(args.target).json, join(args.target, 'config.json'));
const tokenizer = ModelTokenizer.load(args.target, targetConfig.eosTokenIds);
const prompts = records.map((r) => encodePrompt(r, tokenizer));
const promptsJsonl = join(cache, 'prompts.jsonl');
writeFileSync(promptsJsonl, records.map((r) => JSON.stringify({ id: r.id, prompt: r.prompt })).join('\n') + '\n');
const promptIds = join(cache, 'prompts.txt');
writeFileSync(promptIds, prompts.map((p) => p.join(' ')).join('\n') + '\n');
const eos = tokenizer.eosTokenIds;

/** One side's run: tokens per prompt of pass 1, decode tok/s per pass. */
interface Decoded {
  tokens: number[][];
  tokPerS: number[];
}

function llama(withChain: boolean): Decoded {
  const argv = ['--model', targetGguf, '--threads', args.threads!, '--new', String(newTokens), '--prompts', promptIds, '--repeat', String(repeat)];
  if (eos.length > 0) argv.push('--eos', eos.join(','));
  if (withChain) argv.push('--draft', draftGguf, '--chain', String(chain));
  const lines = run(driver, argv).trim().split('\n');
  const ms = new Array<number>(repeat).fill(0);
  const count = new Array<number>(repeat).fill(0);
  const tokens = lines.map((line, i) => {
    const [t, ...ids] = line.split(' ').map(Number);
    const pass = Math.floor(i / prompts.length);
    ms[pass] += t;
    count[pass] += ids.length - 1; // the first comes from the untimed prefill
    return ids;
  });
  return { tokens: tokens.slice(0, prompts.length), tokPerS: ms.map((m, p) => count[p] / (m / 1000)) };
}

const cli = resolve('bin/echo-studio.js');
const scratch = join(cache, 'run');
mkdirSync(scratch, { recursive: true });
function echo(policy: 'ar' | 'chain'): Decoded {
  const trace = join(scratch, `${policy}.trace.jsonl`);
  const out = join(scratch, `${policy}.out.jsonl`);
  rmSync(trace, { force: true });
  rmSync(out, { force: true });
  const argv = [cli, 'run', '--policy', policy, '--batch', '1', '--prompts', promptsJsonl, '--requests', String(prompts.length * repeat), '--max-new-tokens', String(newTokens),
    '--temperature', '0', '--target', args.target, '--draft', args.draft, '--target-precision', echoPrecision, '--trace', trace, '--out', out];
  if (policy === 'chain') argv.push('--chain-length', String(chain));
  if (args['echo-threads']) argv.push('--threads', args['echo-threads']);
  // Its log lines (graph cache, the note that the list repeats) are not the bench's output; a failure still says why.
  execFileSync(process.execPath, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 28 });
  const ms = new Array<number>(repeat).fill(0);
  const count = new Array<number>(repeat).fill(0);
  for (const line of readFileSync(trace, 'utf8').split('\n')) {
    if (!line.startsWith('{"type":"step"')) continue;
    const e = JSON.parse(line) as { timings: { totalMs: number; prefillMs?: number }; requests: { requestId: string; emitted: number[] }[] };
    const id = e.requests[0].requestId;
    const hash = id.lastIndexOf('#');
    const pass = hash < 0 ? 0 : Number(id.slice(hash + 1)) - 1;
    ms[pass] += e.timings.totalMs - (e.timings.prefillMs ?? 0);
    count[pass] += e.requests[0].emitted.length;
  }
  const byId = new Map<string, number[]>();
  for (const line of readFileSync(out, 'utf8').trim().split('\n')) {
    const r = JSON.parse(line) as { id: string; tokens: number[] };
    byId.set(r.id, r.tokens);
  }
  return { tokens: records.map((r) => byId.get(r.id)!), tokPerS: ms.map((m, p) => count[p] / (m / 1000)) };
}

const sameTokens = (a: number[][], b: number[][]): number => a.filter((t, i) => t.join() === b[i].join()).length;

const title = `llama.cpp ${revision} (from ${PACKAGE}), GGML_NATIVE, ${args.threads} thread(s), GGUF ${args.gguf}; ECHO Studio \`run\` (target ${echoPrecision}${args['echo-threads'] ? `, ${args['echo-threads']} thread(s)` : ', default threads'}), target ${basename(resolve(args.target))}, draft ${basename(resolve(args.draft))}`;
const setup = `${prompts.length} prompts (${args.domains}), up to ${newTokens} new tokens each (EOS ends a prompt), greedy, batch 1, chain of ${chain}, each run decodes the list ${repeat}× in one process, ${rounds} rounds`;
console.log(title);
console.log(setup);

const kinds = (['llama plain', 'echo ar', 'llama chain', 'echo chain'] as const).filter((k) => chain > 0 || !k.endsWith('chain'));
type Kind = (typeof kinds)[number];
const rates: Record<Kind, number[][]> = { 'llama plain': [], 'echo ar': [], 'llama chain': [], 'echo chain': [] };
const identity = { arVsLlama: 0, chainVsAr: 0, llamaChainVsPlain: 0, checked: 0 };
for (let r = 0; r < rounds; r++) {
  const got: Partial<Record<Kind, Decoded>> = {};
  for (let j = 0; j < kinds.length; j++) {
    const kind = kinds[(j + r) % kinds.length];
    const d = kind === 'llama plain' ? llama(false) : kind === 'llama chain' ? llama(true) : echo(kind === 'echo ar' ? 'ar' : 'chain');
    got[kind] = d;
    rates[kind].push(d.tokPerS);
  }
  identity.checked += prompts.length;
  identity.arVsLlama += sameTokens(got['echo ar']!.tokens, got['llama plain']!.tokens);
  if (chain > 0) {
    identity.chainVsAr += sameTokens(got['echo chain']!.tokens, got['echo ar']!.tokens);
    identity.llamaChainVsPlain += sameTokens(got['llama chain']!.tokens, got['llama plain']!.tokens);
  }
  const row = kinds.map((k) => `${k} ${rates[k][r].map((x) => x.toFixed(0)).join('/')}`).join(', ');
  console.log(`round ${r + 1}: decode tok/s (pass 1/2…) ${row}`);
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const spread = (xs: number[], digits = 2): string => `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;
/** Per round: a ÷ b of pass 1 (a fresh process's requests), or of the later passes' mean (steady state). */
const later = (x: number[]): number => x.slice(1).reduce((s, v) => s + v, 0) / (x.length - 1);
const ratio = (a: Kind, b: Kind): number[] => rates[a].map((x, i) => x[0] / rates[b][i][0]);
const steadyRatio = (a: Kind, b: Kind): number[] => rates[a].map((x, i) => later(x) / later(rates[b][i]));
/** Per round: pass 1 ÷ the mean of the later passes (how far a fresh process is from its steady state). */
const warm = (k: Kind): number[] => rates[k].map((x) => x[0] / later(x));
const lines: [string, string][] = [];
for (const k of kinds) lines.push([`${k}, decode tok/s, pass 1`, spread(rates[k].map((x) => x[0]), 0)]);
lines.push(['ECHO ar ÷ llama.cpp plain', spread(ratio('echo ar', 'llama plain'))]);
if (chain > 0) {
  lines.push(['ECHO chain ÷ llama.cpp chain', spread(ratio('echo chain', 'llama chain'))]);
  lines.push(['ECHO chain ÷ ECHO ar', spread(ratio('echo chain', 'echo ar'))]);
  lines.push(['llama.cpp chain ÷ plain', spread(ratio('llama chain', 'llama plain'))]);
}
if (repeat > 1) {
  lines.push(['ECHO ar ÷ llama.cpp plain, later passes', spread(steadyRatio('echo ar', 'llama plain'))]);
  if (chain > 0) lines.push(['ECHO chain ÷ llama.cpp chain, later passes', spread(steadyRatio('echo chain', 'llama chain'))]);
  for (const k of kinds) lines.push([`${k}: pass 1 ÷ later passes`, spread(warm(k))]);
}
const identityLines: string[] = [`ECHO ar = llama.cpp plain, token for token: ${identity.arVsLlama}/${identity.checked} prompt runs`];
if (chain > 0) {
  identityLines.push(`ECHO chain = ECHO ar: ${identity.chainVsAr}/${identity.checked}`);
  identityLines.push(`llama.cpp chain = llama.cpp plain: ${identity.llamaChainVsPlain}/${identity.checked}`);
}
console.log('\nmedian over rounds (range); pass 1 of each process unless said:');
for (const [k, v] of lines) console.log(`  ${k.padEnd(40)} ${v}`);
for (const l of identityLines) console.log(`  ${l}`);
if (args.markdown) {
  const md = [`### ${basename(resolve(args.target))}, ECHO ${echoPrecision} against GGUF ${args.gguf}${chain > 0 ? `, chain of ${chain}` : ''}`, '', title + '.', setup + '.', '',
    '| measure | median (range over rounds) |', '|---|---|', ...lines.map(([k, v]) => `| ${k} | ${v} |`), '', ...identityLines.map((l) => `- ${l}`), '', ''];
  appendFileSync(args.markdown, md.join('\n'));
}
