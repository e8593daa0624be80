#!/usr/bin/env python3
"""Target-generated training data for the EAGLE-3 head: the target's own greedy continuations of
training prompts, with its hidden states captured in the same pass.

A head drafts continuations the target itself would write, so it is trained on the target's text,
not the corpus's: each row is a prompt (the BOS token the engine puts before every prompt, then the start of a
training document: 16-64 tokens in all, the length of the studio's prompts) followed by the target's
greedy continuation, to --seq tokens in all. The
generating pass keeps every decoder layer's output (float16), so a training run can pick any three
feature layers (and the top layer, from which the target's next-token distribution is recomputed)
without running the target again; the choice of feature layers is measured on the same data. Once
the layers are chosen, --keep-layers stores only those and the top layer (a quarter to a half of the
disk for the same rows).

Writes to --out:
  tokens.npy    int16 [N, seq + 1]    row n = prompt + continuation (the last token generated, not read)
  hidden.npy    float16 [N, seq, L, H] output of every decoder layer (or of --keep-layers) at every read position
  meta.json     prompt lengths, domains, the stored layers, the target's hash, how long it took

Rows are made in batches that share one prompt length, so the batch decodes with one KV cache and
no padding. Held-out rows (--split heldout) come from the held-out token streams.
"""
import argparse
import hashlib
import json
import math
import os
import time

import numpy as np
import torch

import model as M
import train as T

HERE = os.path.dirname(os.path.abspath(__file__))
DOMAINS = T.DOMAINS


def log(msg):
    print(time.strftime("%H:%M:%S ") + msg, flush=True)


def document_starts(stream, eos=0):
    """Indices right after each end-of-text token (and 0): where documents begin."""
    starts = np.flatnonzero(stream == eos) + 1
    return np.concatenate([[0], starts[starts < stream.size]])


class CachedTarget:
    """The target with a preallocated KV cache: one prefill, then one token a row per step.
    Returns every decoder layer's output for the positions it reads and the next-token logits."""

    def __init__(self, target, batch, length):
        self.t = target
        c = target.config
        self.kvh, self.d = c["num_key_value_heads"], c["head_dim"]
        self.h = c["num_attention_heads"]
        n = c["num_hidden_layers"]
        self.k = torch.zeros(n, batch, self.kvh, length, self.d)
        self.v = torch.zeros(n, batch, self.kvh, length, self.d)

    @torch.no_grad()
    def forward(self, ids, start):
        """ids [B, t] at positions start..start+t-1. Returns (logits of the last position [B, V],
        layer outputs [B, t, L, H])."""
        t = self.t
        b, n = ids.shape
        positions = torch.arange(start, start + n)
        freqs = positions.float()[:, None] * t.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        end = start + n
        # query i (position start+i) sees keys 0..start+i
        mask = torch.ones(n, end, dtype=torch.bool).triu(1 + start)
        x = t.model.embed_tokens(ids)
        outs = []
        for li, layer in enumerate(t.model.layers):
            a = layer.self_attn
            hx = layer.input_layernorm(x)
            q = a.q_proj(hx).view(b, n, a.h, a.d).transpose(1, 2)
            k = a.k_proj(hx).view(b, n, a.kvh, a.d).transpose(1, 2)
            v = a.v_proj(hx).view(b, n, a.kvh, a.d).transpose(1, 2)
            q = q * cos + M.rotate_half(q) * sin
            k = k * cos + M.rotate_half(k) * sin
            self.k[li, :, :, start:end] = k
            self.v[li, :, :, start:end] = v
            kk, vv = self.k[li, :, :, :end], self.v[li, :, :, :end]
            rep = a.h // a.kvh
            if rep > 1:
                kk = kk[:, :, None].expand(b, a.kvh, rep, end, a.d).reshape(b, a.h, end, a.d)
                vv = vv[:, :, None].expand(b, a.kvh, rep, end, a.d).reshape(b, a.h, end, a.d)
            att = (q @ kk.transpose(-1, -2)) * (1.0 / math.sqrt(a.d))
            att = att.masked_fill(mask, float("-inf")).softmax(-1)
            y = (att @ vv).transpose(1, 2).reshape(b, n, a.h * a.d)
            x = x + a.o_proj(y)
            x = x + layer.mlp(layer.post_attention_layernorm(x))
            outs.append(x)
        logits = t.lm_head(t.model.norm(x[:, -1]))
        return logits, torch.stack(outs, dim=2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default=os.path.join(HERE, "..", "..", "assets/models/echo-demo-target"))
    ap.add_argument("--data", default=os.path.join(HERE, ".data"), help="token streams from build_tokenizer.py")
    ap.add_argument("--out", required=True)
    ap.add_argument("--split", default="train", choices=["train", "heldout"])
    ap.add_argument("--rows", type=int, default=3072)
    ap.add_argument("--seq", type=int, default=192, help="tokens read per row (prompt + continuation)")
    ap.add_argument("--min-prompt", type=int, default=16)
    ap.add_argument("--max-prompt", type=int, default=64)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--weights", default="code=0.4,prose=0.3,math=0.3")
    ap.add_argument("--time-budget-min", type=float, default=0, help="stop after this many minutes (rows made so far are kept)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--keep-layers", default="",
                    help="store only these decoder layers' outputs (0-based, comma-separated; the top layer is always kept)")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    rng = np.random.default_rng(a.seed)
    target = M.load_hf_folder(a.target).eval()
    c = target.config
    H = c["hidden_size"]
    kept = sorted({int(v) for v in a.keep_layers.split(",") if v} | {c["num_hidden_layers"] - 1}) \
        if a.keep_layers else list(range(c["num_hidden_layers"]))
    if any(not 0 <= i < c["num_hidden_layers"] for i in kept):
        raise SystemExit(f"--keep-layers: layer indices must be in 0..{c['num_hidden_layers'] - 1}, got {a.keep_layers}")
    L = len(kept)
    weights = {k: float(v) for k, v in (kv.split("=") for kv in a.weights.split(","))}
    p = np.array([weights[d] for d in DOMAINS]) / sum(weights.values())
    streams = {d: np.load(os.path.join(a.data, "tokens", f"{d}.{a.split}.npy")).astype(np.int64) for d in DOMAINS}
    starts = {d: document_starts(s) for d, s in streams.items()}
    starts = {d: st[st + a.max_prompt < streams[d].size] for d, st in starts.items()}
    bos = 0  # the engine puts token 0 before every prompt; the head must learn from the rows it will read

    os.makedirs(a.out, exist_ok=True)
    n_rows = a.rows - a.rows % a.batch
    tokens = np.lib.format.open_memmap(os.path.join(a.out, "tokens.npy"), "w+", np.int16, (n_rows, a.seq + 1))
    hidden = np.lib.format.open_memmap(os.path.join(a.out, "hidden.npy"), "w+", np.float16, (n_rows, a.seq, L, H))
    prompt_len, domain = [], []
    t0 = time.time()
    done = 0
    while done < n_rows:
        if a.time_budget_min and time.time() - t0 > a.time_budget_min * 60:
            log(f"time budget reached after {done} rows")
            break
        plen = int(rng.integers(a.min_prompt, a.max_prompt + 1))
        doms = rng.choice(len(DOMAINS), size=a.batch, p=p)
        rows = []
        for di in doms:
            d = DOMAINS[di]
            s0 = int(rng.choice(starts[d]))
            rows.append(np.concatenate([[bos], streams[d][s0:s0 + plen - 1]]))
        ids = torch.from_numpy(np.stack(rows))
        cache = CachedTarget(target, a.batch, a.seq)
        seq = torch.zeros(a.batch, a.seq + 1, dtype=torch.int64)
        seq[:, :plen] = ids
        logits, h = cache.forward(ids, 0)
        hidden[done:done + a.batch, :plen] = h[:, :, kept].numpy().astype(np.float16)
        for pos in range(plen, a.seq + 1):
            seq[:, pos] = logits.argmax(-1)
            if pos == a.seq:
                break
            logits, h = cache.forward(seq[:, pos:pos + 1], pos)
            hidden[done:done + a.batch, pos] = h[:, 0, kept].numpy().astype(np.float16)
        tokens[done:done + a.batch] = seq.numpy().astype(np.int16)
        prompt_len += [plen] * a.batch
        domain += [DOMAINS[di] for di in doms]
        done += a.batch
        el = time.time() - t0
        log(f"{a.split}: {done}/{n_rows} rows, {done * a.seq / el:.0f} positions/s, {el / 60:.1f} min")
    tokens.flush()
    hidden.flush()
    with open(os.path.join(a.target, "model.safetensors"), "rb") as fh:
        target_hash = hashlib.sha256(fh.read()).hexdigest()
    meta = {"rows": done, "seq": a.seq, "layers": L, "layer_ids": kept, "bos": True, "hidden": H, "prompt_len": prompt_len, "domain": domain,
            "split": a.split, "target": target_hash, "seconds": round(time.time() - t0, 1),
            "weights": weights, "seed": a.seed}
    with open(os.path.join(a.out, "meta.json"), "w") as fh:
        json.dump(meta, fh)
    log(f"wrote {done} rows to {a.out}")


if __name__ == "__main__":
    main()
