// A plain TypeScript forward pass (float64 loops) of a fixture model, written independently of the
// graph builder: the tests compare the ONNX graph against it. Causal attention over one sequence.
import type { FixtureModel } from './fixtures.js';

function ropeInvFreq(model: FixtureModel): Float64Array {
  const cfg = model.config;
  const hd = model.headDim;
  const theta = cfg.rope_theta as number;
  const out = new Float64Array(hd / 2);
  const scaling = cfg.rope_scaling as Record<string, number> | undefined;
  for (let i = 0; i < hd / 2; i++) {
    const base = 1 / Math.pow(theta, (2 * i) / hd);
    if (!scaling) {
      out[i] = base;
      continue;
    }
    // transformers' _compute_llama3_parameters, element by element.
    const { factor, low_freq_factor: low, high_freq_factor: high, original_max_position_embeddings: orig } = scaling;
    const wavelen = (2 * Math.PI) / base;
    if (wavelen < orig / high) out[i] = base;
    else if (wavelen > orig / low) out[i] = base / factor;
    else {
      const smooth = (orig / wavelen - low) / (high - low);
      out[i] = (1 - smooth) * (base / factor) + smooth * base;
    }
  }
  return out;
}

function matVec(w: Float32Array, rows: number, cols: number, x: Float64Array, bias?: Float32Array): Float64Array {
  const y = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let s = bias ? bias[r] : 0;
    const off = r * cols;
    for (let c = 0; c < cols; c++) s += w[off + c] * x[c];
    y[r] = s;
  }
  return y;
}

function rmsNorm(x: Float64Array, w: Float32Array, eps: number): Float64Array {
  let ss = 0;
  for (const v of x) ss += v * v;
  const inv = 1 / Math.sqrt(ss / x.length + eps);
  return x.map((v, i) => v * inv * w[i]);
}

/**
 * Logits [tokens.length][vocab] of a causal forward over `tokens` at positions 0, 1, …; with a
 * window, position p sees position j ≤ p iff j < sink or p − j < recent.
 */
export function referenceForward(model: FixtureModel, tokens: number[], window?: { sink: number; recent: number }): Float64Array[] {
  const sees = (p: number, j: number): boolean => !window || j < window.sink || p - j < window.recent;
  const t = (name: string) => {
    const x = model.tensors.get(name);
    if (!x) throw new Error(`reference: missing ${name}`);
    return x.data;
  };
  const { hiddenSize: H, numHeads: nH, numKvHeads: kvH, headDim: hd, intermediateSize: I, vocabSize: V } = model;
  const eps = model.config.rms_norm_eps as number;
  const invFreq = ropeInvFreq(model);
  const group = nH / kvH;
  const qkNorm = model.architecture === 'qwen3';

  const rope = (vec: Float64Array, heads: number, pos: number): void => {
    const half = hd / 2;
    for (let h = 0; h < heads; h++) {
      for (let i = 0; i < half; i++) {
        const a = pos * invFreq[i];
        const c = Math.cos(a);
        const s = Math.sin(a);
        const x1 = vec[h * hd + i];
        const x2 = vec[h * hd + half + i];
        vec[h * hd + i] = x1 * c - x2 * s;
        vec[h * hd + half + i] = x2 * c + x1 * s;
      }
    }
  };
  const headNorm = (vec: Float64Array, heads: number, w: Float32Array): Float64Array => {
    const out = new Float64Array(vec.length);
    for (let h = 0; h < heads; h++) out.set(rmsNorm(vec.subarray(h * hd, (h + 1) * hd), w, eps), h * hd);
    return out;
  };

  const embed = t('model.embed_tokens.weight');
  let hs = tokens.map((id) => Float64Array.from(embed.subarray(id * H, (id + 1) * H)));
  for (let l = 0; l < model.numLayers; l++) {
    const p = `model.layers.${l}.`;
    const qs: Float64Array[] = [];
    const ks: Float64Array[] = [];
    const vs: Float64Array[] = [];
    const bias = model.tensors.has(p + 'self_attn.q_proj.bias');
    hs.forEach((h, pos) => {
      const x = rmsNorm(h, t(p + 'input_layernorm.weight'), eps);
      let q = matVec(t(p + 'self_attn.q_proj.weight'), nH * hd, H, x, bias ? t(p + 'self_attn.q_proj.bias') : undefined);
      let k = matVec(t(p + 'self_attn.k_proj.weight'), kvH * hd, H, x, bias ? t(p + 'self_attn.k_proj.bias') : undefined);
      const v = matVec(t(p + 'self_attn.v_proj.weight'), kvH * hd, H, x, bias ? t(p + 'self_attn.v_proj.bias') : undefined);
      if (qkNorm) {
        q = headNorm(q, nH, t(p + 'self_attn.q_norm.weight'));
        k = headNorm(k, kvH, t(p + 'self_attn.k_norm.weight'));
      }
      rope(q, nH, pos);
      rope(k, kvH, pos);
      qs.push(q);
      ks.push(k);
      vs.push(v);
    });
    hs = hs.map((h, pos) => {
      const ctx = new Float64Array(nH * hd);
      for (let head = 0; head < nH; head++) {
        const kvHead = Math.floor(head / group);
        const scores: number[] = [];
        for (let j = 0; j <= pos; j++) {
          let s = 0;
          for (let d = 0; d < hd; d++) s += qs[pos][head * hd + d] * ks[j][kvHead * hd + d];
          scores.push(sees(pos, j) ? s / Math.sqrt(hd) : -Infinity);
        }
        const m = Math.max(...scores);
        const e = scores.map((s) => Math.exp(s - m));
        const z = e.reduce((a, b) => a + b, 0);
        for (let j = 0; j <= pos; j++) {
          for (let d = 0; d < hd; d++) ctx[head * hd + d] += (e[j] / z) * vs[j][kvHead * hd + d];
        }
      }
      const oBias = model.tensors.get(p + 'self_attn.o_proj.bias')?.data;
      const o = matVec(t(p + 'self_attn.o_proj.weight'), H, nH * hd, ctx, oBias);
      const h1 = h.map((v, i) => v + o[i]);
      const y = rmsNorm(h1, t(p + 'post_attention_layernorm.weight'), eps);
      const gate = matVec(t(p + 'mlp.gate_proj.weight'), I, H, y);
      const up = matVec(t(p + 'mlp.up_proj.weight'), I, H, y);
      const act = gate.map((g, i) => (g / (1 + Math.exp(-g))) * up[i]);
      const down = matVec(t(p + 'mlp.down_proj.weight'), H, I, act);
      return h1.map((v, i) => v + down[i]);
    });
  }
  const head = model.tensors.has('lm_head.weight') ? t('lm_head.weight') : embed;
  return hs.map((h) => matVec(head, V, H, rmsNorm(h, t('model.norm.weight'), eps)));
}
