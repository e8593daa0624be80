// One timed block of greedy forwards, shared by the in-process A/B benches (runtime-ab, graph-ab):
// prefill a prompt (untimed), then `forwards` steps of `tokens` new tokens each, a chain whose
// first row is the argmax of the step before (as `ar` keeps its one token), the rest fixed guesses.

/** What a block needs of a model session (structural, so an older revision's session fits too). */
export interface Forwarding {
  allocSlot(): number;
  freeSlot(slot: number): void;
  commit(slot: number, rows: number[]): void;
  forward(entries: { slot: number; tokens: number[]; parents: number[] }[], outputs: { argmaxRows?: number[]; logitsRows?: number[] }): Promise<{ argmax?: Int32Array | number[]; logits?: Float32Array }>;
}

export interface BlockShape {
  prompt: readonly number[];
  tokens: number;
  forwards: number;
  vocab: number;
  /** The first this many forwards also fetch their logits (for a bit-for-bit comparison); default 0. */
  logitsOf?: number;
}

export interface BlockResult {
  ms: number;
  cpuMs: number;
  output: number[];
  logits: Float32Array[];
}

export async function decodeBlock(model: Forwarding, shape: BlockShape): Promise<BlockResult> {
  const { prompt, tokens, forwards, vocab } = shape;
  const logitsOf = shape.logitsOf ?? 0;
  const slot = model.allocSlot();
  const pre = await model.forward([{ slot, tokens: [...prompt], parents: prompt.map((_, i) => i - 1) }], { argmaxRows: [prompt.length - 1] });
  model.commit(slot, prompt.map((_, i) => i));
  let next = pre.argmax![0];
  const output: number[] = [];
  const logits: Float32Array[] = [];
  const rows = Array.from({ length: tokens }, (_, i) => i);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let f = 0; f < forwards; f++) {
    const chain = [next, ...Array.from({ length: tokens - 1 }, (_, i) => (next + i + 1) % vocab)];
    const asked = f < logitsOf ? { argmaxRows: rows, logitsRows: rows } : { argmaxRows: rows };
    const r = await model.forward([{ slot, tokens: chain, parents: chain.map((_, i) => i - 1) }], asked);
    if (r.logits) logits.push(Float32Array.from(r.logits));
    model.commit(slot, [0]);
    next = r.argmax![0];
    output.push(next);
  }
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  model.freeSlot(slot);
  return { ms, cpuMs: (cpu.user + cpu.system) / 1000, output, logits };
}
