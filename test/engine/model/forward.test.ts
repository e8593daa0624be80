// The graph against an independent TypeScript forward pass, and the KV cache semantics:
// (a) logits = reference, (b) one token at a time = one full forward, (c) a tree in one forward
// gives every node its own prefix's logits, (d) a packed batch = each request alone, also when a
// deep tree's queries are attended in chunks,
// (e) KV compaction then decoding = decoding the kept path directly.
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { loadModel, type OrtModelSession } from '../../../src/engine/model/index.js';
import { queryChunk } from '../../../src/engine/model/batch-plan.js';
import { PAST_BLOCK } from '../../../src/engine/model/graph-builder.js';
import { writeFixtureModel, type FixtureModel, type FixtureOptions } from './fixtures.js';
import { argmax, logSoftmax, maxRowDiff, tempDir } from './helpers.js';
import { referenceForward } from './reference.js';

const TOL = 1e-4;
const tmp = tempDir();
afterAll(() => tmp.cleanup());
let counter = 0;

async function load(options: FixtureOptions, slots = 4): Promise<{ fx: FixtureModel; session: OrtModelSession }> {
  const fx = writeFixtureModel(join(tmp.path, `model-${counter++}`), options);
  const session = await loadModel(fx.dir, { slots, maxLength: 64, cacheDir: join(tmp.path, 'cache') });
  return { fx, session };
}

const chain = (start: number, len: number): number[] => Array.from({ length: len }, (_, i) => (i === 0 ? start - 1 : start + i - 1));
const PROMPT = [283, 40, 260, 101, 32, 119, 111, 114];

const VARIANTS: [string, FixtureOptions][] = [
  ['llama fp32 GQA untied', { architecture: 'llama' }],
  ['llama llama3 rope scaling, tied', { architecture: 'llama', llama3RopeScaling: true, tieWordEmbeddings: true }],
  ['qwen2 (qkv bias) fp16', { architecture: 'qwen2', dtype: 'float16' }],
  ['qwen3 (q/k norm, explicit head_dim) bf16 sharded', { architecture: 'qwen3', dtype: 'bfloat16', headDim: 16, shards: 3 }],
  ['mistral MHA', { architecture: 'mistral', numKvHeads: 4 }],
  ['llama attention_bias (q/k/v/o biases), tied', { architecture: 'llama', attentionBias: true, tieWordEmbeddings: true }],
];

describe.each(VARIANTS)('%s', (_name, options) => {
  test('(a) full logits of a prefill equal the reference forward; top-k and argmax agree', async () => {
    const { fx, session } = await load(options);
    const slot = session.allocSlot();
    const rows = PROMPT.map((_, i) => i);
    const r = await session.forward([{ slot, tokens: PROMPT, parents: chain(0, PROMPT.length) }], {
      logitsRows: rows,
      topkRows: rows,
      topk: 5,
      argmaxRows: rows,
    });
    const ref = referenceForward(fx, PROMPT);
    for (const i of rows) {
      expect(maxRowDiff(r.logits!, i, ref[i])).toBeLessThan(TOL);
      const lsm = logSoftmax(ref[i]);
      const order = lsm.map((v, id) => [v, id]).sort((a, b) => b[0] - a[0]);
      for (let j = 0; j < 5; j++) {
        expect(r.topkIds![i * 5 + j]).toBe(order[j][1]);
        expect(Math.abs(r.topkLogprobs![i * 5 + j] - order[j][0])).toBeLessThan(TOL);
      }
      expect(r.argmax![i]).toBe(argmax(ref[i]));
    }
    expect(r.tokens).toBe(PROMPT.length);
    expect(r.paddingWaste).toBe(0);
    await session.release();
  });

  test('(b) decoding one token at a time with the KV cache equals one full forward', async () => {
    const { fx, session } = await load(options);
    const slot = session.allocSlot();
    const ref = referenceForward(fx, PROMPT);
    for (let i = 0; i < PROMPT.length; i++) {
      const r = await session.forward([{ slot, tokens: [PROMPT[i]], parents: [-1] }], { logitsRows: [0] });
      expect(maxRowDiff(r.logits!, 0, ref[i])).toBeLessThan(TOL);
      session.commit(slot, [0]);
      expect(session.committedLength(slot)).toBe(i + 1);
      expect(session.scratchSize(slot)).toBe(0);
    }
    await session.release();
  });
});

describe('tree attention and KV slots (llama, GQA)', () => {
  test('(c) a tree verified in one packed forward gives every node its root-to-node prefix logits', async () => {
    const { fx, session } = await load({ architecture: 'llama', numHeads: 6, numKvHeads: 2 });
    const slot = session.allocSlot();
    const prompt = PROMPT.slice(0, 5);
    await session.forward([{ slot, tokens: prompt, parents: chain(0, prompt.length) }], {});
    session.commit(slot, [0, 1, 2, 3, 4]);
    // Tree:      0(r)
    //          /   |   \
    //        1(a) 2(b) 3(c)
    //        / \    \
    //     4(d) 5(e) 6(f)
    //      |
    //     7(g)
    const tokens = [100, 40, 41, 42, 50, 51, 52, 60];
    const parents = [-1, 0, 0, 0, 1, 1, 2, 4];
    const r = await session.forward([{ slot, tokens, parents }], { logitsRows: tokens.map((_, i) => i) });
    for (let i = 0; i < tokens.length; i++) {
      const path: number[] = [];
      for (let a = i; a >= 0; a = parents[a]) path.unshift(tokens[a]);
      const ref = referenceForward(fx, [...prompt, ...path]);
      expect(maxRowDiff(r.logits!, i, ref[ref.length - 1])).toBeLessThan(TOL);
    }
    // Drafting depth by depth: a later forward hangs new nodes off earlier scratch nodes.
    const more = await session.forward([{ slot, tokens: [70, 71], parents: [7, 5] }], { logitsRows: [0, 1] });
    const refG = referenceForward(fx, [...prompt, 100, 40, 50, 60, 70]);
    const refE = referenceForward(fx, [...prompt, 100, 40, 51, 71]);
    expect(maxRowDiff(more.logits!, 0, refG[refG.length - 1])).toBeLessThan(TOL);
    expect(maxRowDiff(more.logits!, 1, refE[refE.length - 1])).toBeLessThan(TOL);
    expect(session.scratchSize(slot)).toBe(10);
    await session.release();
  });

  test('(d) a packed batch with different past lengths gives each request the logits it gets alone', async () => {
    const { fx, session } = await load({ architecture: 'qwen2' });
    const pasts = [PROMPT.slice(0, 2), PROMPT.slice(0, 7), [90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]];
    const slots = pasts.map(() => session.allocSlot());
    for (let b = 0; b < pasts.length; b++) {
      await session.forward([{ slot: slots[b], tokens: pasts[b], parents: chain(0, pasts[b].length) }], {});
      session.commit(slots[b], pasts[b].map((_, i) => i));
    }
    const news = [
      { tokens: [120], parents: [-1] },
      { tokens: [130, 131, 132], parents: [-1, 0, 1] },
      { tokens: [140, 141, 142, 143], parents: [-1, 0, 0, 2] },
    ];
    const total = news.reduce((s, e) => s + e.tokens.length, 0);
    const r = await session.forward(
      news.map((e, b) => ({ slot: slots[b], ...e })),
      { logitsRows: Array.from({ length: total }, (_, i) => i), topkRows: [0, 3], topk: 2 },
    );
    expect(r.tokens).toBe(8);
    expect(r.paddingWaste).toBeCloseTo((12 - 8) / 12, 10);
    // Alone: a second session, one request per forward.
    const alone = await loadModel(fx.dir, { slots: 1, maxLength: 64, cacheDir: join(tmp.path, 'cache') });
    let row = 0;
    for (let b = 0; b < pasts.length; b++) {
      const s = alone.allocSlot();
      await alone.forward([{ slot: s, tokens: pasts[b], parents: chain(0, pasts[b].length) }], {});
      alone.commit(s, pasts[b].map((_, i) => i));
      const a = await alone.forward([{ slot: s, ...news[b] }], { logitsRows: news[b].tokens.map((_, i) => i) });
      for (let t = 0; t < news[b].tokens.length; t++) {
        const expected = a.logits!.subarray(t * fx.vocabSize, (t + 1) * fx.vocabSize);
        expect(maxRowDiff(r.logits!, row + t, expected)).toBeLessThan(TOL);
        const path: number[] = [];
        for (let n = t; n >= 0; n = news[b].parents[n]) path.unshift(news[b].tokens[n]);
        const ref = referenceForward(fx, [...pasts[b], ...path]);
        expect(maxRowDiff(r.logits!, row + t, ref[ref.length - 1])).toBeLessThan(TOL);
      }
      row += news[b].tokens.length;
      alone.freeSlot(s);
    }
    await alone.release();
    await session.release();
  });

  test('(d2) a deep tree among one-token entries is attended in query chunks and still gets its own logits', async () => {
    const { fx, session } = await load({ architecture: 'llama' }, 13);
    // Twelve one-token requests and one ten-node tree: the tree's queries split into chunks,
    // a later chunk's nodes still see their ancestors in the earlier chunks, and a node of the
    // tree that drafted earlier (scratch) stays visible to every chunk.
    const pasts = Array.from({ length: 13 }, (_, b) => PROMPT.slice(0, 1 + (b % 7)));
    const slots = pasts.map(() => session.allocSlot());
    for (let b = 0; b < pasts.length; b++) {
      await session.forward([{ slot: slots[b], tokens: pasts[b], parents: chain(0, pasts[b].length) }], {});
      session.commit(slots[b], pasts[b].map((_, i) => i));
    }
    const deep = 12;
    await session.forward([{ slot: slots[deep], tokens: [150], parents: [-1] }], {});
    const tree = { tokens: [151, 152, 153, 154, 155, 156, 157, 158, 159, 160], parents: [0, 1, 1, 2, 4, 5, 3, 7, 6, 8] };
    const news = slots.map((_, b) => (b === deep ? tree : { tokens: [120 + b], parents: [-1] }));
    const lengths = news.map((e) => e.tokens.length);
    const chunk = queryChunk(lengths);
    expect(chunk).toBeLessThan(10);
    const groups = lengths.reduce((sum, len) => sum + Math.ceil(len / chunk), 0);
    const total = lengths.reduce((a, b) => a + b, 0);
    const r = await session.forward(
      news.map((e, b) => ({ slot: slots[b], ...e })),
      { logitsRows: Array.from({ length: total }, (_, i) => i) },
    );
    expect(r.paddingWaste).toBeCloseTo((groups * chunk - total) / (groups * chunk), 10);
    let row = 0;
    for (let b = 0; b < news.length; b++) {
      for (let t = 0; t < news[b].tokens.length; t++) {
        const path: number[] = [];
        if (b === deep) {
          // Scratch index 0 is the earlier-drafted root 150; this forward's node t is scratch t + 1.
          for (let n = t + 1; n > 0; n = tree.parents[n - 1]) path.unshift(tree.tokens[n - 1]);
          path.unshift(150);
        } else {
          path.push(news[b].tokens[t]);
        }
        const ref = referenceForward(fx, [...pasts[b], ...path]);
        expect(maxRowDiff(r.logits!, row + t, ref[ref.length - 1])).toBeLessThan(TOL);
      }
      row += news[b].tokens.length;
    }
    await session.release();
  });

  test('(e) KV compaction then decoding equals decoding the kept path directly', async () => {
    const { fx, session } = await load({ architecture: 'qwen3' });
    const slot = session.allocSlot();
    const prompt = PROMPT.slice(0, 4);
    await session.forward([{ slot, tokens: prompt, parents: chain(0, prompt.length) }], {});
    session.commit(slot, [0, 1, 2, 3]);
    for (let step = 0; step < 2; step++) {
      // root 0, two branches; keep root → 2 → 5 (the second branch), drop the rest.
      const tokens = [200 + step, 30, 31, 32, 33, 34];
      const parents = [-1, 0, 0, 1, 2, 2];
      await session.forward([{ slot, tokens: tokens.slice(0, 3), parents: parents.slice(0, 3) }], {});
      await session.forward([{ slot, tokens: tokens.slice(3), parents: parents.slice(3) }], {});
      const before = session.committedLength(slot);
      session.commit(slot, [0, 2, 5]);
      expect(session.committedLength(slot)).toBe(before + 3);
      expect(session.scratchSize(slot)).toBe(0);
      prompt.push(tokens[0], tokens[2], tokens[5]);
    }
    const next = await session.forward([{ slot, tokens: [77, 78], parents: [-1, 0] }], { logitsRows: [0, 1] });
    const ref = referenceForward(fx, [...prompt, 77, 78]);
    expect(maxRowDiff(next.logits!, 0, ref[ref.length - 2])).toBeLessThan(TOL);
    expect(maxRowDiff(next.logits!, 1, ref[ref.length - 1])).toBeLessThan(TOL);
    // clearScratch drops uncommitted nodes: the same query again gives the same answer.
    session.clearScratch(slot);
    const again = await session.forward([{ slot, tokens: [77], parents: [-1] }], { logitsRows: [0] });
    expect(maxRowDiff(again.logits!, 0, ref[ref.length - 2])).toBeLessThan(TOL);
    await session.release();
  });

  test('a freed slot starts empty and does not see the previous request', async () => {
    const { fx, session } = await load({ architecture: 'llama' }, 1);
    const first = session.allocSlot();
    await session.forward([{ slot: first, tokens: PROMPT, parents: chain(0, PROMPT.length) }], {});
    session.commit(first, PROMPT.map((_, i) => i));
    session.freeSlot(first);
    const second = session.allocSlot();
    expect(second).toBe(first);
    expect(session.committedLength(second)).toBe(0);
    const r = await session.forward([{ slot: second, tokens: [5, 6], parents: [-1, 0] }], { logitsRows: [1] });
    const ref = referenceForward(fx, [5, 6]);
    expect(maxRowDiff(r.logits!, 0, ref[1])).toBeLessThan(TOL);
    // Two committed rows: the past is gathered in whole blocks, the rest of whose rows still hold
    // the previous request's keys. The mask must hide them.
    expect(PROMPT.length).toBeGreaterThanOrEqual(PAST_BLOCK);
    session.commit(second, [0, 1]);
    const next = await session.forward([{ slot: second, tokens: [7], parents: [-1] }], { logitsRows: [0] });
    expect(maxRowDiff(next.logits!, 0, referenceForward(fx, [5, 6, 7])[2])).toBeLessThan(TOL);
    await session.release();
  });

  test('misuse is refused with a one-line message', async () => {
    const { session } = await load({ architecture: 'llama' }, 1);
    const slot = session.allocSlot();
    expect(() => session.allocSlot()).toThrow(/no free KV slot/);
    await expect(session.forward([{ slot, tokens: [1, 2], parents: [-1, 1] }], {})).rejects.toThrow(/parent 1 of token 1/);
    await expect(session.forward([{ slot, tokens: [99999], parents: [-1] }], {})).rejects.toThrow(/outside the vocabulary/);
    await expect(session.forward([{ slot, tokens: [1], parents: [-1] }], { logitsRows: [3] })).rejects.toThrow(/row 3/);
    await expect(session.forward([{ slot, tokens: new Array(65).fill(1), parents: chain(0, 65) }], {})).rejects.toThrow(/maxLength 64/);
    await expect(session.forward([], { logitsRows: [0] })).rejects.toThrow(/without tokens/);
    expect((await session.forward([{ slot, tokens: [], parents: [] }], {})).tokens).toBe(0);
    await session.forward([{ slot, tokens: [1, 2, 3], parents: [-1, 0, 0] }], {});
    expect(() => session.commit(slot, [0, 1, 2])).toThrow(/root-to-leaf path/);
    expect(() => session.commit(slot, [0, 7])).toThrow(/does not exist/);
    expect(() => session.committedLength(5)).toThrow(/slot 5 does not exist/);
    const running = session.forward([{ slot, tokens: [4], parents: [-1] }], {});
    await expect(session.forward([{ slot, tokens: [4], parents: [-1] }], {})).rejects.toThrow(/already running/);
    expect(() => session.commit(slot, [0])).toThrow(/still running/);
    await running;
    await session.release();
  });
});
