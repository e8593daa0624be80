#!/usr/bin/env python3
"""Evaluate the bundled EAGLE-3 head beside the small draft, for the model card.

Loads the shipped folders, then
  1. checks the head's files against an independent NumPy forward (target features from the NumPy
     Llama forward of evaluate.py, head depth 0 at every position and depth 1 at the last one);
  2. teacher-forced top-1 agreement with the target per depth and domain on held-out windows: at
     position t the head reads the target's features of t and the held-out tokens t+1..t+1+k
     (its own outputs as hidden input for k > 0) and predicts token t+2+k; the target's argmax
     there is the reference. A standalone draft reads the same tokens, so its teacher-forced
     agreement is the same at every depth (it sees all tokens, just as the target does); the
     head's falls with depth because it sees the target's features only at depth 0. Also the
     ROC AUC of each drafter's top probability for telling agreeing positions from the others;
  3. greedy chain acceptance exactly as evaluate.py measures the small draft (chain length, number
     of new tokens), for the head and the small draft on the same prompts in the same run.
Run alone, it adds `models.head` and `head_evaluation` to an existing card.json and re-renders
README.md; evaluate.py calls `evaluate` itself when the head folder exists.
"""
import argparse
import json
import math
import os
import time

import numpy as np
import torch

import eagle3_head as E
import evaluate as EV
import model as M
import train as T

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
DOMAINS = ("code", "prose", "math")


# ------------------------------------------------------------ independent NumPy reference
def np_head(head_folder, target_folder, ids, next_token):
    """Draft-vocabulary logits of depth 0 at every position (ids[1:] as the following tokens) and of
    depth 1 at the last position, reading target token `next_token`."""
    with open(os.path.join(head_folder, "config.json")) as fh:
        c = json.load(fh)
    W = {k[len("model."):] if k.startswith("model.") else k: v.numpy()
         for k, v in M.load_safetensors(os.path.join(head_folder, "model.safetensors")).items()}
    W = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in W.items()}
    layer_ids = c["eagle_config"]["eagle_aux_hidden_state_layer_ids"]
    _, cap = EV.np_forward(target_folder, ids, capture=tuple(layer_ids))
    tw = M.load_safetensors(os.path.join(target_folder, "model.safetensors"))["model.embed_tokens.weight"].double().numpy()
    H, KV, D, eps = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"], c["rms_norm_eps"]
    n = len(ids) - 1
    inv = c["rope_theta"] ** (-np.arange(0, D, 2) / D)

    def rms(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w

    def rope(x, pos):  # x [heads, m, D]
        ang = np.asarray(pos, dtype=np.float64)[:, None] * inv[None, :]
        x1, x2 = x[..., : D // 2], x[..., D // 2:]
        return np.concatenate([x1 * np.cos(ang) - x2 * np.sin(ang), x2 * np.cos(ang) + x1 * np.sin(ang)], -1)

    def qkv(hidden, tokens, pos):
        z = np.concatenate([rms(tw[tokens], W["midlayer.input_layernorm.weight"]),
                            rms(hidden, W["midlayer.hidden_norm.weight"])], -1)
        m = z.shape[0]
        q = (z @ W["midlayer.self_attn.q_proj.weight"].T).reshape(m, H, D).transpose(1, 0, 2)
        k = (z @ W["midlayer.self_attn.k_proj.weight"].T).reshape(m, KV, D).transpose(1, 0, 2)
        v = (z @ W["midlayer.self_attn.v_proj.weight"].T).reshape(m, KV, D).transpose(1, 0, 2)
        return rope(q, pos), rope(k, pos), v

    def finish(hidden, att):  # att [m, H*D]
        x = hidden + att @ W["midlayer.self_attn.o_proj.weight"].T
        h = rms(x, W["midlayer.post_attention_layernorm.weight"])
        g = h @ W["midlayer.mlp.gate_proj.weight"].T
        return x + ((g / (1 + np.exp(-g))) * (h @ W["midlayer.mlp.up_proj.weight"].T)) @ W["midlayer.mlp.down_proj.weight"].T

    def attend(q, k, v, allowed):  # q [H, m, D], k/v [KV, j, D], allowed [m, j]
        out = np.zeros((H, q.shape[1], D))
        for hh in range(H):
            kv = hh // (H // KV)
            s = q[hh] @ k[kv].T / math.sqrt(D)
            s[~allowed] = -np.inf
            s = np.exp(s - s.max(-1, keepdims=True))
            out[hh] = (s / s.sum(-1, keepdims=True)) @ v[kv]
        return out.transpose(1, 0, 2).reshape(q.shape[1], H * D)

    feats = np.concatenate([cap[i] for i in layer_ids], -1)[:n]
    h0 = feats @ W["fc.weight"].T
    q0, k0, v0 = qkv(h0, np.asarray(ids[1:]), np.arange(n))
    out0 = finish(h0, attend(q0, k0, v0, np.tril(np.ones((n, n), bool))))
    logits0 = rms(out0, W["norm.weight"]) @ W["lm_head.weight"].T
    h1 = out0[-1:]
    q1, k1, v1 = qkv(h1, np.asarray([next_token]), np.asarray([n]))
    k = np.concatenate([k0, k1], 1)
    v = np.concatenate([v0, v1], 1)
    out1 = finish(h1, attend(q1, k, v, np.ones((1, n + 1), bool)))
    logits1 = rms(out1, W["norm.weight"]) @ W["lm_head.weight"].T
    return logits0, logits1[0]


@torch.no_grad()
def reference_check(head, target, head_folder, target_folder, ids):
    layer_ids = E.layer_ids_of(head.config)
    n = len(ids) - 1
    x = torch.tensor([ids])
    _, feats = E.target_features(target, x, layer_ids)
    out0 = head.unroll(feats[:, :n], head.embedding(target.model.embed_tokens), x[:, 1:], 1)[0]
    logits0 = head.logits(out0)[0]
    nxt = int(head.draft_ids()[logits0[-1].argmax()])
    outs = head.unroll(feats[:, :n], head.embedding(target.model.embed_tokens), torch.tensor([ids[1:] + [nxt]]), 2)
    logits1 = head.logits(outs[1])[0, -1]
    want0, want1 = np_head(head_folder, target_folder, ids, nxt)
    return max(float(np.abs(logits0.double().numpy() - want0).max()),
               float(np.abs(logits1.double().numpy() - want1).max()))


# ------------------------------------------------------------ teacher-forced agreement
def auc(score, label):
    """ROC AUC (Mann-Whitney, ties counted half); None without both classes."""
    score, label = np.asarray(score, np.float64), np.asarray(label, bool)
    npos, nneg = int(label.sum()), int((~label).sum())
    if not npos or not nneg:
        return None
    _, inv, cnt = np.unique(score, return_inverse=True, return_counts=True)
    ranks = (np.cumsum(cnt) - (cnt - 1) / 2.0)[inv]
    return float((ranks[label].sum() - npos * (npos + 1) / 2.0) / (npos * nneg))


@torch.no_grad()
def teacher_forced(target, draft, head, windows, depths, bs=8):
    layer_ids = E.layer_ids_of(head.config)
    draft_ids = head.draft_ids()
    res = {}
    for dom, w in windows.items():
        acc = {"head": [[] for _ in range(depths)], "draft": [[] for _ in range(depths)]}
        for i in range(0, w.size(0), bs):
            x = w[i:i + bs]
            t = x.size(1) - depths
            tl, feats = E.target_features(target, x, layer_ids)
            ref = tl.argmax(-1)
            dp = draft(x).softmax(-1)
            dconf, dpick = dp.max(-1)
            outs = head.unroll(feats[:, :t], head.embedding(target.model.embed_tokens), x[:, 1:], depths)
            for k, out in enumerate(outs):
                hconf, hpick = head.logits(out).softmax(-1).max(-1)
                want = ref[:, k + 1:k + 1 + t]
                acc["head"][k].append((hconf.flatten(), (draft_ids[hpick] == want).flatten()))
                acc["draft"][k].append((dconf[:, k + 1:k + 1 + t].flatten(), (dpick[:, k + 1:k + 1 + t] == want).flatten()))
        res[dom] = {}
        for who, per in acc.items():
            conf = [torch.cat([c for c, _ in p]).numpy() for p in per]
            hit = [torch.cat([h for _, h in p]).numpy() for p in per]
            res[dom][who] = {
                "positions": int(hit[0].size),
                "top1_agreement": [round(float(h.mean()), 4) for h in hit],
                "auc": [None if (v := auc(c, h)) is None else round(v, 4) for c, h in zip(conf, hit)],
            }
    return res


# ------------------------------------------------------------ greedy chain with the head
def head_proposer(target, head):
    """The head's greedy chain of k tokens following ctx, as the engine drafts it: the target's
    features of the committed positions 0..n-1 with the tokens that follow them; depth d reads
    the previous depth's output and the token drafted there."""
    layer_ids = E.layer_ids_of(head.config)
    draft_ids = head.draft_ids()

    def propose(ctx, k):
        n = len(ctx) - 1
        _, feats = E.target_features(target, torch.tensor([ctx]), layer_ids)
        embed = head.embedding(target.model.embed_tokens)
        cache = {}
        out = head.step(embed(torch.tensor([ctx[1:]])), head.fc(feats[:, :n]), torch.arange(n)[None], cache)[:, -1:]
        prop = []
        for d in range(k):
            prop.append(int(draft_ids[head.logits(out[0, -1]).argmax()]))
            if d + 1 < k:
                out = head.step(embed(torch.tensor([[prop[-1]]])), out, torch.tensor([[n + d]]), cache, first=n - 1)
        return prop
    return propose


def chain_acceptance(target, drafters, enc, prompts_dir, tc, chain, max_new, max_prompts):
    """Greedy chain acceptance per drafter (name -> propose) and domain, on the same prompts."""
    is_number = [any(ch.isdigit() for ch in enc.decode([i])) for i in range(len(enc.vocab))]
    is_number += [False] * (tc["vocab_size"] - len(is_number))
    out = {name: {} for name in drafters}
    for d in DOMAINS:
        with open(os.path.join(prompts_dir, f"{d}.jsonl"), encoding="utf-8") as fh:
            prompts = [json.loads(l) for l in fh if l.strip()]
        if max_prompts:
            prompts = prompts[:max_prompts]
        for name, propose in drafters.items():
            steps = []
            for p in prompts:
                got, _ = EV.chain_run(target, propose, enc.encode(p["prompt"]), tc["bos_token_id"], tc["eos_token_id"],
                                      chain, max_new, is_number)
                steps += got
            s = np.array(steps)
            reached = [int((s >= i).sum()) for i in range(chain)]
            passed = [int((s > i).sum()) for i in range(chain)]
            out[name][d] = {"prompts": len(prompts), "steps": int(s.size), "mean_accepted": round(float(s.mean()), 3),
                            "tokens_per_step": round(float(s.mean()) + 1, 3),
                            "acceptance_per_depth": [round(p / r, 3) if r else None for p, r in zip(passed, reached)]}
            print(f"{name} chain {d}: mean accepted {out[name][d]['mean_accepted']} / {chain}, "
                  f"per depth {out[name][d]['acceptance_per_depth']}", flush=True)
    return out


def comparison_entry(path):
    """One comparison run's training record, reduced to what the card's comparison table shows."""
    with open(path) as fh:
        t = json.load(fh)
    last = t["history"][-1]
    return {"layer_ids": t["layer_ids"], "hidden": t["hidden"], "parameters": t["parameters"], "steps": t["steps"],
            "batch": t["batch"], "positions": t["positions"], "train_seconds": t["train_seconds"],
            "heldout": {d: last[d] for d in DOMAINS}}


def evaluate(target_folder, draft_folder, head_folder, prompts_dir, data, chain, max_new, max_prompts, max_windows,
             depths=4, training=None):
    import bpe
    t0 = time.time()
    enc = bpe.load(os.path.join(target_folder, "tokenizer.json"))
    target = M.load_hf_folder(target_folder).eval()
    draft = M.load_hf_folder(draft_folder).eval()
    head = E.load_folder(head_folder).eval()
    with open(os.path.join(target_folder, "config.json")) as fh:
        tc = json.load(fh)
    ids = enc.encode("def add(a, b):\n    return a + b\n\nThe answer is 3 * 12 = 36.")
    ref = reference_check(head, target, head_folder, target_folder, [tc["bos_token_id"]] + ids)
    print(f"head: torch vs NumPy reference max |logit diff| = {ref:.2e}", flush=True)
    if ref > 1e-3:
        raise SystemExit(f"head: exported head disagrees with the NumPy reference ({ref})")
    windows = T.heldout_windows(data, 256, max_windows=max_windows or None)
    tf = teacher_forced(target, draft, head, windows, depths)
    for d in DOMAINS:
        print(f"teacher-forced {d}: head {tf[d]['head']['top1_agreement']} auc {tf[d]['head']['auc']}; "
              f"draft {tf[d]['draft']['top1_agreement'][0]} auc {tf[d]['draft']['auc'][0]}", flush=True)
    ch = chain_acceptance(target, {"head": head_proposer(target, head), "draft": EV.lm_proposer(draft)}, enc,
                          prompts_dir, tc, chain, max_new, max_prompts)
    with open(os.path.join(head_folder, "config.json")) as fh:
        hc = json.load(fh)
    tm_path = training or os.path.join(data, f"train_{os.path.basename(os.path.normpath(head_folder))}.json")
    tm = json.load(open(tm_path)) if os.path.exists(tm_path) else {}
    model_meta = {
        "folder": os.path.relpath(head_folder, ROOT),
        "parameters": head.num_parameters(),
        "own_embedding": head.embed_tokens is not None,
        "size_bytes": os.path.getsize(os.path.join(head_folder, "model.safetensors")),
        "config": {k: hc[k] for k in ("architectures", "hidden_size", "intermediate_size", "num_hidden_layers",
                                      "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size",
                                      "draft_vocab_size", "target_hidden_size")}
                  | {"eagle_aux_hidden_state_layer_ids": E.layer_ids_of(hc)},
        "training": {k: tm.get(k) for k in ("steps", "planned_steps", "time_budget_min", "batch", "seq", "positions",
                                            "train_seconds", "lr", "warmup", "weight_decay", "domain_weights",
                                            "ttt_steps", "step_decay", "layer_ids", "draft_vocab",
                                            "draft_vocab_coverage", "target", "hidden", "intermediate", "gen_data")},
        "training_curve": tm.get("history", []),
    }
    evaluation = {
        "reference_check_max_abs_logit_diff": ref,
        "teacher_forced": {"window": 256, "depths": depths, "per_domain": tf},
        "chain": {"chain_length": chain, "max_new_tokens": max_new, "per_domain": ch["head"],
                  "draft_per_domain": ch["draft"]},
        "eval_seconds": round(time.time() - t0, 1),
    }
    return model_meta, evaluation


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default=os.path.join(ROOT, "assets/models/echo-demo-target"))
    ap.add_argument("--draft", default=os.path.join(ROOT, "assets/models/echo-demo-draft"))
    ap.add_argument("--head", default=os.path.join(ROOT, "assets/models/echo-demo-head"))
    ap.add_argument("--prompts", default=os.path.join(ROOT, "assets/prompts"))
    ap.add_argument("--data", default=os.path.join(HERE, ".data"))
    ap.add_argument("--card", default=os.path.join(ROOT, "assets/models/card.json"))
    ap.add_argument("--max-windows", type=int, default=32, help="held-out 256-token windows per domain; 0 = all")
    ap.add_argument("--max-prompts", type=int, default=0,
                    help="first N prompts per domain for the chain runs; 0 = as many as the card's draft numbers used")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--note", action="append", default=[], help="a line for the head's training notes in the card")
    ap.add_argument("--training", default=None, help="the head's training record (train_eagle3.py's JSON); default DATA/train_HEADFOLDER.json")
    ap.add_argument("--comparison", default=None,
                    help="comma-separated training records of the feature-layer / width comparison runs, for the card")
    ap.add_argument("--engine", default=None, help="bench/drafters.ts --json output: both drafters in the engine, for the card")
    ap.add_argument("--engine-note", default="", help="a sentence the card adds to the engine table (the machine, its load)")
    ap.add_argument("--engine-same-run", default=None,
                    help="bench/drafters.ts --json of both drafters in one process (e.g. batch 1 only), for the card")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    with open(a.card, encoding="utf-8") as fh:
        card = json.load(fh)
    acc = card["acceptance"]
    prompts = a.max_prompts or acc["per_domain"]["code"]["prompts"]
    meta, ev = evaluate(a.target, a.draft, a.head, a.prompts, a.data, acc["chain_length"], acc["max_new_tokens"],
                        prompts, a.max_windows, training=a.training)
    meta["notes"] = a.note
    if a.comparison:
        meta["comparison"] = [comparison_entry(p) for p in a.comparison.split(",")]
    elif card.get("models", {}).get("head", {}).get("comparison"):
        # the feature-layer / width runs are not redone for every retraining: keep the card's
        meta["comparison"] = card["models"]["head"]["comparison"]
    if a.engine:
        with open(a.engine, encoding="utf-8") as fh:
            card["head_engine"] = json.load(fh) | {"note": a.engine_note}
    if a.engine_same_run:
        with open(a.engine_same_run, encoding="utf-8") as fh:
            card["head_engine_same_run"] = json.load(fh)
    card["models"]["head"] = meta
    card["head_evaluation"] = ev
    with open(a.card, "w", encoding="utf-8") as fh:
        json.dump(card, fh, indent=1, ensure_ascii=False)
    import write_card
    write_card.write(card, os.path.join(os.path.dirname(a.card), "README.md"))
    print(f"added the head to {a.card} and README.md in {ev['eval_seconds']:.0f}s")


if __name__ == "__main__":
    main()
