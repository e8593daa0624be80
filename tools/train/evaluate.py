#!/usr/bin/env python3
"""Evaluate the exported demo pair and write the model card numbers.

Loads both models from their Hugging Face folders (the files that ship), then
  1. checks the safetensors + config against an independent NumPy Llama forward (HF conventions),
  2. held-out loss (mean cross-entropy, nats/token) per domain, all non-overlapping 256-token
     windows of the held-out token streams,
  3. greedy chain acceptance: for every bundled prompt (BOS + prompt), the draft proposes
     --chain greedy tokens, the target accepts the longest prefix equal to its own greedy tokens
     and adds one bonus token; repeated until --max-new tokens are produced or EOS.
  4. with an EAGLE-3 head folder present (--head), evaluate_head.py's comparison of the head with
     the draft.
Writes assets/models/card.json and assets/models/README.md.
"""
import argparse
import json
import os
import time

import numpy as np
import torch

import model as M
import train as T

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
DOMAINS = ("code", "prose", "math")


# ------------------------------------------------------------ independent NumPy reference
def np_forward(folder, ids, capture=()):
    """Logits [t, V]; with `capture`, also the outputs of those decoder layers (0-based), by index."""
    with open(os.path.join(folder, "config.json")) as fh:
        c = json.load(fh)
    W = {k: a.astype(np.float64) for k, a in M.read_safetensors(os.path.join(folder, "model.safetensors")).items()}
    H, KV, D, eps = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"], c["rms_norm_eps"]

    def rms(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w

    t = len(ids)
    inv = c["rope_theta"] ** (-np.arange(0, D, 2) / D)
    ang = np.arange(t)[:, None] * inv[None, :]
    cos, sin = np.cos(ang), np.sin(ang)

    def rope(x):  # x [heads, t, D]; pairs (i, i + D/2)
        x1, x2 = x[..., : D // 2], x[..., D // 2:]
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)

    x = W["model.embed_tokens.weight"][ids]
    captured = {}
    causal = np.triu(np.ones((t, t), bool), 1)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms(x, W[p + "input_layernorm.weight"])
        q = (h @ W[p + "self_attn.q_proj.weight"].T).reshape(t, H, D).transpose(1, 0, 2)
        k = (h @ W[p + "self_attn.k_proj.weight"].T).reshape(t, KV, D).transpose(1, 0, 2)
        v = (h @ W[p + "self_attn.v_proj.weight"].T).reshape(t, KV, D).transpose(1, 0, 2)
        q, k = rope(q), rope(k)
        out = np.zeros((H, t, D))
        for hh in range(H):
            kv = hh // (H // KV)
            s = q[hh] @ k[kv].T / np.sqrt(D)
            s[causal] = -np.inf
            s = np.exp(s - s.max(-1, keepdims=True))
            out[hh] = (s / s.sum(-1, keepdims=True)) @ v[kv]
        x = x + out.transpose(1, 0, 2).reshape(t, H * D) @ W[p + "self_attn.o_proj.weight"].T
        h = rms(x, W[p + "post_attention_layernorm.weight"])
        g = h @ W[p + "mlp.gate_proj.weight"].T
        x = x + ((g / (1 + np.exp(-g))) * (h @ W[p + "mlp.up_proj.weight"].T)) @ W[p + "mlp.down_proj.weight"].T
        if i in capture:
            captured[i] = x
    head = W["model.embed_tokens.weight"] if c["tie_word_embeddings"] else W["lm_head.weight"]
    logits = rms(x, W["model.norm.weight"]) @ head.T
    return (logits, captured) if capture else logits


# ------------------------------------------------------------ acceptance
def lm_proposer(draft):
    """A standalone draft model's greedy chain: k tokens following ctx."""
    def propose(ctx, k):
        d_ctx, prop = list(ctx), []
        for _ in range(k):
            t = int(draft(torch.tensor([d_ctx]))[0, -1].argmax())
            prop.append(t)
            d_ctx.append(t)
        return prop
    return propose


@torch.no_grad()
def chain_run(target, propose, prompt_ids, bos, eos, k, max_new, is_number):
    """Returns the accepted count per step, and (target token is a number, draft matched it) for
    every drafted position that was reached (all earlier draft tokens accepted).
    propose(ctx, k) returns the draft's k greedy tokens following ctx."""
    ctx = [bos] + prompt_ids
    accepted, produced, by_kind = [], 0, []
    while produced < max_new:
        prop = propose(ctx, k)
        tl = target(torch.tensor([ctx + prop]))[0, len(ctx) - 1:]
        greedy = tl.argmax(-1).tolist()  # k + 1 target choices
        a = 0
        while a < k and prop[a] == greedy[a]:
            a += 1
        by_kind += [(is_number[greedy[i]], i < a) for i in range(min(a + 1, k))]
        new = prop[:a] + [greedy[a]]
        accepted.append(a)
        ctx += new
        produced += len(new)
        if eos in new:
            break
    return accepted, by_kind


@torch.no_grad()
def greedy_text(model, enc, prompt, bos, eos, max_new):
    """The model's greedy continuation of BOS + prompt, as text (stops at EOS)."""
    ctx = [bos] + enc.encode(prompt)
    out = []
    for _ in range(max_new):
        t = int(model(torch.tensor([ctx]))[0, -1].argmax())
        if t == eos:
            break
        out.append(t)
        ctx.append(t)
    return enc.decode(out)


def prose_source(sources):
    """The prose domain's source and licence for the card, from prepare_data.py's record of them."""
    handbook = ("The Debian Administrator's Handbook, English HTML (Debian package debian-handbook 11.20220922), "
                "running-text paragraphs", "GPL-2.0-or-later or CC-BY-SA-3.0 (Raphaël Hertzog, Roland Mas)")
    docs = ("the Python 3.11 documentation, running-text paragraphs of its HTML (Debian package python3.11-doc)",
            "PSF-2.0")
    chosen = (sources or {}).get("prose", ["handbook"])
    parts = [p for name, p in (("handbook", handbook), ("python-docs", docs)) if name in chosen]
    return {"source": "; ".join(p[0] for p in parts), "licence": "; ".join(p[1] for p in parts)}


def read_json(path):
    if not path or not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default=os.path.join(ROOT, "assets/models/echo-demo-target"))
    ap.add_argument("--draft", default=os.path.join(ROOT, "assets/models/echo-demo-draft"))
    ap.add_argument("--head", default=os.path.join(ROOT, "assets/models/echo-demo-head"),
                    help="EAGLE-3 head folder, evaluated beside the draft when it exists")
    ap.add_argument("--prompts", default=os.path.join(ROOT, "assets/prompts"))
    ap.add_argument("--data", default=os.path.join(HERE, ".data"))
    ap.add_argument("--out", default=os.path.join(ROOT, "assets/models"))
    ap.add_argument("--chain", type=int, default=5)
    ap.add_argument("--max-new", type=int, default=32)
    ap.add_argument("--max-prompts", type=int, default=64, help="first N prompts per domain; 0 = all")
    ap.add_argument("--max-windows", type=int, default=64, help="held-out 256-token windows per domain, evenly spaced; 0 = all")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--previous-target", default=None,
                    help="the target this pair replaces: its held-out loss on the same windows goes in the card")
    ap.add_argument("--samples", type=int, default=3, help="greedy samples of the target per domain (first prompts)")
    ap.add_argument("--sample-tokens", type=int, default=48)
    ap.add_argument("--profile", default=None,
                    help="`echo-studio profile-hw --json` output for the target on this machine (its curve and knee)")
    ap.add_argument("--note", action="append", default=[], help="a line for the model card's training section")
    ap.add_argument("--notes-file", default=None, help="more such lines, one per line")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.notes_file and os.path.exists(a.notes_file):
        with open(a.notes_file, encoding="utf-8") as fh:
            a.note += [l.strip() for l in fh if l.strip()]
    t0 = time.time()
    import bpe
    enc = bpe.load(os.path.join(a.target, "tokenizer.json"))
    models = {"target": M.load_hf_folder(a.target).eval(), "draft": M.load_hf_folder(a.draft).eval()}

    # 1. exported files vs. independent NumPy forward
    ref_check = {}
    ids = enc.encode("def add(a, b):\n    return a + b\n\nThe answer is 3 * 12 = 36.")
    for name, m in models.items():
        folder = a.target if name == "target" else a.draft
        with torch.no_grad():
            got = m(torch.tensor([ids]))[0].double().numpy()
        want = np_forward(folder, ids)
        diff = float(np.abs(got - want).max())
        ref_check[name] = diff
        print(f"{name}: torch vs NumPy reference max |logit diff| = {diff:.2e}")
        if diff > 1e-3:
            raise SystemExit(f"{name}: exported model disagrees with the NumPy reference ({diff})")

    # 2. held-out loss
    windows = T.heldout_windows(a.data, 256, max_windows=a.max_windows or None)
    loss = {}
    for name, m in models.items():
        loss[name] = {d: round(v, 4) for d, v in T.evaluate(m, windows).items()}
        print(f"{name} held-out loss: {loss[name]}")
    heldout_tokens = {d: int(w[:, 1:].numel()) for d, w in windows.items()}
    previous = None
    if a.previous_target and os.path.isdir(a.previous_target):
        prev = M.load_hf_folder(a.previous_target).eval()
        previous = {"parameters": prev.num_parameters(),
                    "heldout_loss": {d: round(v, 4) for d, v in T.evaluate(prev, windows).items()}}
        print(f"previous target held-out loss: {previous['heldout_loss']}")
        del prev

    # 3. greedy chain acceptance
    with open(os.path.join(a.target, "config.json")) as fh:
        tc = json.load(fh)
    # A token "is a number" when its text has a digit: computed results in math are these.
    is_number = [any(ch.isdigit() for ch in enc.decode([i])) for i in range(len(enc.vocab))]
    is_number += [False] * (tc["vocab_size"] - len(is_number))
    acc = {}
    for d in DOMAINS:
        with open(os.path.join(a.prompts, f"{d}.jsonl"), encoding="utf-8") as fh:
            prompts = [json.loads(l) for l in fh if l.strip()]
        if a.max_prompts:
            prompts = prompts[: a.max_prompts]
        steps, kinds = [], []
        for p in prompts:
            got, by_kind = chain_run(models["target"], lm_proposer(models["draft"]), enc.encode(p["prompt"]),
                                     tc["bos_token_id"], tc["eos_token_id"], a.chain, a.max_new, is_number)
            steps += got
            kinds += by_kind
        s = np.array(steps)
        reached = [int((s >= i).sum()) for i in range(a.chain)]
        passed = [int((s > i).sum()) for i in range(a.chain)]
        acc[d] = {
            "prompts": len(prompts),
            "steps": int(s.size),
            "mean_accepted": round(float(s.mean()), 3),
            "tokens_per_step": round(float(s.mean()) + 1, 3),
            "accepted_histogram": [int((s == i).sum()) for i in range(a.chain + 1)],
            "depth_reached": reached,
            "depth_accepted": passed,
            "acceptance_per_depth": [round(p / r, 3) if r else None for p, r in zip(passed, reached)],
            "survival_per_depth": [round(p / s.size, 3) for p in passed],
            "by_token_kind": {
                kind: {"reached": len(xs), "accepted": sum(ok for _, ok in xs),
                       "acceptance": round(sum(ok for _, ok in xs) / len(xs), 3) if xs else None}
                for kind, xs in (("number", [x for x in kinds if x[0]]), ("other", [x for x in kinds if not x[0]]))
            },
        }
        print(f"{d}: mean accepted {acc[d]['mean_accepted']} / {a.chain}, per depth {acc[d]['acceptance_per_depth']}, "
              f"by token kind {acc[d]['by_token_kind']}")

    samples = {}
    for d in DOMAINS:
        with open(os.path.join(a.prompts, f"{d}.jsonl"), encoding="utf-8") as fh:
            prompts = [json.loads(l) for l in fh if l.strip()][: a.samples]
        samples[d] = [{"id": p.get("id"), "prompt": p["prompt"],
                       "target": greedy_text(models["target"], enc, p["prompt"], tc["bos_token_id"], tc["eos_token_id"], a.sample_tokens)}
                      for p in prompts]

    def pick(tm):
        return {k: tm.get(k) for k in ("steps", "planned_steps", "time_budget_min", "batch", "seq", "tokens",
                                        "train_seconds", "lr", "warmup", "weight_decay", "domain_weights",
                                        "init", "teacher", "kd_alpha")}

    meta = {}
    for name in ("target", "draft"):
        folder = a.target if name == "target" else a.draft
        with open(os.path.join(folder, "config.json")) as fh:
            c = json.load(fh)
        tm_path = os.path.join(a.data, f"train_{os.path.basename(folder)}.json")
        tm = json.load(open(tm_path)) if os.path.exists(tm_path) else {}
        meta[name] = {
            "folder": os.path.relpath(folder, ROOT),
            "parameters": models[name].num_parameters(),
            "size_bytes": os.path.getsize(os.path.join(folder, "model.safetensors")),
            "config": {k: c[k] for k in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                                          "num_attention_heads", "num_key_value_heads", "head_dim",
                                          "max_position_embeddings", "tie_word_embeddings")},
            "training": pick(tm),
            "training_curve": tm.get("history", []),
        }
        if tm.get("init"):
            pre_path = os.path.join(a.data, f"train_{tm['init']}.json")
            pre = json.load(open(pre_path)) if os.path.exists(pre_path) else {}
            meta[name]["pretraining"] = pick(pre)
            meta[name]["pretraining_curve"] = pre.get("history", [])
    stats_path = os.path.join(a.data, "tokens", "stats.json")
    stats = json.load(open(stats_path)) if os.path.exists(stats_path) else {}
    card = {
        "schema": 1,
        "models": meta,
        "tokenizer": {"type": "byte-level BPE", "vocab_size": len(enc.vocab), "merges": len(enc.ranks),
                      "special_tokens": {"<|endoftext|>": 0}},
        "data": {
            "code": {"source": "Python 3.11 standard library sources (Debian package libpython3.11-stdlib, /usr/lib/python3.11/*.py)",
                     "licence": "PSF-2.0"},
            "prose": prose_source(read_json(os.path.join(a.data, "corpus", "sources.json"))),
            "math": {"source": "arithmetic word problems with worked answers generated by tools/train/prepare_data.py",
                     "licence": "part of this project"},
            "token_counts": stats,
        },
        "heldout_loss": {"unit": "nats/token", "window": 256, "tokens": heldout_tokens, **loss},
        "acceptance": {
            "method": f"greedy chain of {a.chain}: draft proposes {a.chain} greedy tokens, target accepts the longest prefix "
                      f"matching its greedy tokens plus one bonus token; BOS + prompt, {a.max_new} new tokens per prompt",
            "chain_length": a.chain, "max_new_tokens": a.max_new,
            "per_domain": acc,
        },
        "samples": {"method": f"the target's greedy continuation of BOS + prompt, up to {a.sample_tokens} tokens",
                    "per_domain": samples},
        "reference_check_max_abs_logit_diff": ref_check,
        "notes": a.note,
        "eval_seconds": round(time.time() - t0, 1),
    }
    if previous:
        card["heldout_loss"]["previous_target"] = previous
    storage = {name: read_json(os.path.join(a.data, f"rounding_{os.path.basename(os.path.normpath(folder))}.json"))
               for name, folder in (("target", a.target), ("draft", a.draft), ("head", a.head))}
    card["storage"] = {k: v for k, v in storage.items() if v}
    profile = read_json(a.profile)
    if profile:
        card["profile_hw"] = {
            "command": "echo-studio profile-hw --json",
            "host": profile["profile"]["host"], "slots": profile["profile"]["slots"],
            "context": profile["profile"]["context"],
            "target_curve": profile["profile"]["target"],
            "knee_tokens": profile["target"]["kmax"], "t_ar_ms": round(profile["target"]["tArMs"], 3),
            "gamma_per_token": round(profile["target"]["gamma"], 5),
            "fit_rms_relative_error": round(profile["target"]["rmsRelativeError"], 4),
        }
    if os.path.exists(os.path.join(a.head, "config.json")):
        import evaluate_head
        meta["head"], card["head_evaluation"] = evaluate_head.evaluate(
            a.target, a.draft, a.head, a.prompts, a.data, a.chain, a.max_new, a.max_prompts, a.max_windows)
        card["eval_seconds"] = round(time.time() - t0, 1)
    with open(os.path.join(a.out, "card.json"), "w", encoding="utf-8") as fh:
        json.dump(card, fh, indent=1, ensure_ascii=False)
    import write_card
    write_card.write(card, os.path.join(a.out, "README.md"))
    print(f"wrote card.json and README.md in {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
