#!/usr/bin/env python3
"""Train one model of the demo pair on the token streams in .data/tokens/.

Target: plain next-token cross-entropy.
Draft:  --teacher FOLDER: the first --ce-steps steps (that fraction of the run) are plain
        cross-entropy (cheap), the rest distil from the teacher: loss = alpha * KL(p_teacher || p_draft) + (1 - alpha) * CE.

AdamW, linear warm-up then cosine decay to 10%, gradient clipping 1.0, fixed seed.
With --time-budget-min the run ends at --steps or when the budget of training time is spent,
whichever comes first, and the schedule follows whichever is further along (so a slow, shared
machine still gets a complete cosine decay; the number of steps is then machine-dependent).
Checkpoints every --ckpt-every steps to .data/ckpt/NAME.pt; a rerun resumes from there.
At the end the model is written as a Hugging Face folder (config.json, model.safetensors,
generation_config.json, tokenizer files) to --out.
"""
import argparse
import json
import math
import os
import shutil
import time

import numpy as np
import torch
import torch.nn.functional as F

import bpe
import model as M

DOMAINS = ("code", "prose", "math")
HERE = os.path.dirname(os.path.abspath(__file__))


def log(msg, fh=None):
    line = time.strftime("%H:%M:%S ") + msg
    print(line, flush=True)


class Batches:
    def __init__(self, data, weights, seq, batch, seed):
        self.streams = {d: np.load(os.path.join(data, "tokens", f"{d}.train.npy")).astype(np.int64) for d in DOMAINS}
        w = np.array([weights[d] for d in DOMAINS], dtype=np.float64)
        self.p = w / w.sum()
        self.seq, self.batch = seq, batch
        self.rng = np.random.default_rng(seed)

    def next(self):
        rows = []
        doms = self.rng.choice(len(DOMAINS), size=self.batch, p=self.p)
        for di in doms:
            s = self.streams[DOMAINS[di]]
            i = self.rng.integers(0, s.size - self.seq - 1)
            rows.append(s[i:i + self.seq + 1])
        x = torch.from_numpy(np.stack(rows))
        return x[:, :-1], x[:, 1:]


def data_fingerprint(data):
    """SHA-256 of the tokenizer and the training token streams: a checkpoint only resumes on the
    data it was trained on (a re-run that rebuilt the tokenizer must not continue stale weights)."""
    import hashlib
    h = hashlib.sha256()
    with open(os.path.join(data, "tokenizer", "tokenizer.json"), "rb") as fh:
        h.update(fh.read())
    for d in DOMAINS:
        with open(os.path.join(data, "tokens", f"{d}.train.npy"), "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()


def heldout_windows(data, seq, max_windows=None):
    out = {}
    for d in DOMAINS:
        s = np.load(os.path.join(data, "tokens", f"{d}.heldout.npy")).astype(np.int64)
        n = (s.size - 1) // seq
        if max_windows:
            idx = np.linspace(0, n - 1, min(n, max_windows)).astype(int)
        else:
            idx = np.arange(n)
        out[d] = torch.from_numpy(np.stack([s[i * seq:i * seq + seq + 1] for i in idx]))
    return out


@torch.no_grad()
def evaluate(model, windows, bs=16):
    model.eval()
    res = {}
    for d, w in windows.items():
        tot, n = 0.0, 0
        for i in range(0, w.size(0), bs):
            x = w[i:i + bs]
            logits = model(x[:, :-1])
            tot += F.cross_entropy(logits.reshape(-1, logits.size(-1)), x[:, 1:].reshape(-1), reduction="sum").item()
            n += x[:, 1:].numel()
        res[d] = tot / n
    model.train()
    return res


def lr_at(step, total, peak, warmup, progress=None):
    """Linear warm-up, then cosine to 10% of peak. `progress` (0..1) overrides step/total
    after warm-up when training is time-budgeted."""
    if step < warmup:
        return peak * (step + 1) / warmup
    p = (step - warmup) / max(1, total - warmup)
    if progress is not None:
        p = max(p, progress)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, p))))


def export(model, out, data, extra_meta):
    os.makedirs(out, exist_ok=True)
    c = dict(model.config)
    with open(os.path.join(out, "config.json"), "w") as fh:
        json.dump(c, fh, indent=2)
    M.save_safetensors(model.hf_state_dict(), os.path.join(out, "model.safetensors"), {"format": "pt"})
    with open(os.path.join(out, "generation_config.json"), "w") as fh:
        json.dump({"bos_token_id": c["bos_token_id"], "eos_token_id": c["eos_token_id"],
                   "do_sample": False, "max_new_tokens": 128}, fh, indent=2)
    shutil.copy(os.path.join(data, "tokenizer", "tokenizer.json"), os.path.join(out, "tokenizer.json"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as fh:
        json.dump(bpe.tokenizer_config(c["max_position_embeddings"]), fh, indent=2)
    # evaluate.py reads the training record from the same data folder
    with open(os.path.join(data, f"train_{os.path.basename(os.path.normpath(out))}.json"), "w") as fh:
        json.dump(extra_meta, fh, indent=2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--data", default=os.path.join(HERE, ".data"))
    ap.add_argument("--hidden", type=int, required=True)
    ap.add_argument("--intermediate", type=int, required=True)
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--kv-heads", type=int, required=True)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--max-pos", type=int, default=1024)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=40)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--weights", default="code=0.45,prose=0.2,math=0.35")
    ap.add_argument("--init", default=None, help="start from the weights of this HF folder (same shape)")
    ap.add_argument("--teacher", default=None)
    ap.add_argument("--ce-steps", type=int, default=0)
    ap.add_argument("--kd-alpha", type=float, default=0.7)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--ckpt-every", type=int, default=50)
    ap.add_argument("--time-budget-min", type=float, default=0,
                    help="stop after this many minutes of training time even before --steps; the cosine "
                         "schedule then follows max(step/steps, time/budget). 0 = steps only")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    cfg = M.hf_config(a.vocab, a.hidden, a.intermediate, a.layers, a.heads, a.kv_heads, max_position_embeddings=a.max_pos)
    model = M.LlamaForCausalLM(cfg)
    log(f"{a.name}: {model.num_parameters():,} parameters, config {json.dumps({k: cfg[k] for k in ('hidden_size', 'intermediate_size', 'num_hidden_layers', 'num_attention_heads', 'num_key_value_heads')})}")
    if a.init:
        init = M.load_hf_folder(a.init)
        if init.config != cfg:
            raise SystemExit(f"--init {a.init}: config differs from the requested model")
        model.load_state_dict(init.state_dict())
        log(f"initialised from {a.init}")
    teacher = None
    if a.teacher:
        teacher = M.load_hf_folder(a.teacher)
        teacher.eval()
        for p in teacher.parameters():
            p.requires_grad_(False)
        log(f"teacher {a.teacher}: {teacher.num_parameters():,} parameters")

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.wd}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    weights = {k: float(v) for k, v in (kv.split("=") for kv in a.weights.split(","))}
    batches = Batches(a.data, weights, a.seq, a.batch, a.seed)
    quick = heldout_windows(a.data, a.seq, max_windows=8)

    ckdir = os.path.join(a.data, "ckpt")
    os.makedirs(ckdir, exist_ok=True)
    ck = os.path.join(ckdir, f"{a.name}.pt")
    step, elapsed, history = 0, 0.0, []
    fingerprint = data_fingerprint(a.data)
    if os.path.exists(ck):
        st = torch.load(ck)
        # Checkpoints written before fingerprints existed carry none and are trusted.
        if st.get("data", fingerprint) != fingerprint or st.get("config", cfg) != cfg:
            raise SystemExit(f"{ck} was trained on other data or another model shape than this run's "
                             f"(the tokenizer or corpora were rebuilt?): move it away to train from scratch")
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        batches.rng.bit_generator.state = st["rng"]
        torch.set_rng_state(st["torch_rng"])
        step, elapsed, history = st["step"], st["elapsed"], st["history"]
        log(f"resumed from {ck} at step {step}")

    t_last = time.time()
    ema = None
    budget_s = a.time_budget_min * 60

    def progress():
        p = step / a.steps
        if budget_s:
            p = max(p, elapsed / budget_s)
        return min(1.0, p)

    while step < a.steps and not (budget_s and elapsed >= budget_s):
        lr = lr_at(step, a.steps, a.lr, a.warmup, progress() if budget_s else None)
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = batches.next()
        logits = model(x)
        ce = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        loss, kd = ce, None
        if teacher is not None and progress() >= a.ce_steps / a.steps:
            with torch.no_grad():
                tlogp = F.log_softmax(teacher(x), dim=-1)
            slogp = F.log_softmax(logits, dim=-1)
            kd = (tlogp.exp() * (tlogp - slogp)).sum(-1).mean()
            loss = a.kd_alpha * kd + (1 - a.kd_alpha) * ce
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        now = time.time()
        elapsed += now - t_last
        t_last = now
        ema = ce.item() if ema is None else 0.95 * ema + 0.05 * ce.item()
        if step % 10 == 0 or step == 1:
            tps = step * a.batch * a.seq / max(elapsed, 1e-9)
            log(f"{a.name} step {step}/{a.steps} lr {lr:.2e} ce {ce.item():.3f} (ema {ema:.3f})"
                + (f" kd {kd.item():.3f}" if kd is not None else "")
                + f" | {tps:.0f} tok/s, {elapsed / 60:.1f} min")
        done = step == a.steps or bool(budget_s and elapsed >= budget_s)
        if step % a.eval_every == 0 or done:
            ev = evaluate(model, quick)
            history.append({"step": step, "elapsed_s": round(elapsed, 1), **{d: round(v, 4) for d, v in ev.items()}})
            log(f"{a.name} eval step {step}: " + " ".join(f"{d} {v:.3f}" for d, v in ev.items()))
            t_last = time.time()
        if step % a.ckpt_every == 0 or done:
            tmp = ck + ".tmp"
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "rng": batches.rng.bit_generator.state,
                        "torch_rng": torch.get_rng_state(), "step": step, "elapsed": elapsed, "history": history,
                        "data": fingerprint, "config": cfg}, tmp)
            os.replace(tmp, ck)
            t_last = time.time()

    meta = {"name": a.name, "parameters": model.num_parameters(), "steps": step, "planned_steps": a.steps,
            "time_budget_min": a.time_budget_min or None, "batch": a.batch, "seq": a.seq,
            "tokens": step * a.batch * a.seq, "train_seconds": round(elapsed, 1), "lr": a.lr, "warmup": a.warmup,
            "weight_decay": a.wd, "domain_weights": weights, "init": os.path.basename(a.init) if a.init else None,
            "teacher": bool(a.teacher), "ce_steps": a.ce_steps,
            "kd_alpha": a.kd_alpha if a.teacher else None, "history": history}
    export(model, a.out, a.data, meta)
    log(f"{a.name}: wrote {a.out} ({step} steps, {meta['tokens']:,} tokens, {elapsed / 60:.1f} min)")


if __name__ == "__main__":
    main()
