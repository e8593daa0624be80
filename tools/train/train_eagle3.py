#!/usr/bin/env python3
"""Train an EAGLE-3 draft head for a target model on the target's own features.

Every batch runs the frozen target once (features of the named layers and its logits, computed on
the fly: caching 3 x hidden floats per token would cost far more disk than the forward costs time),
then unrolls the head for --ttt-steps steps (EAGLE-3's training-time test: step k > 0 continues
from the head's own step k-1 output, so deeper tree nodes are trained on the inputs they will
see). Loss: per step, cross-entropy of the head's draft-vocabulary distribution against the
target's next-token distribution restricted to the draft vocabulary and renormalised (soft
distillation: the same optimum as matching the target's argmax, with the target's confidence as
extra signal, which is what the confidence gates read); step k weighted --step-decay ** k.

Draft vocabulary: the --draft-vocab most frequent tokens of the training streams (mixed in the
domain weights), as d2t/t2d; 0 = the full target vocabulary.

AdamW, linear warm-up then cosine to 10%, gradient clip 1.0, fixed seed; --steps or
--time-budget-min, whichever comes first (the schedule follows the further along, as train.py).
Checkpoints every --ckpt-every-min minutes of training to .data/ckpt/NAME/; a rerun resumes.
Writes the head folder (config.json, model.safetensors, the target's tokenizer files) to --out.
"""
import argparse
import json
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

import eagle3_head as E
import model as M
import train as T

HERE = os.path.dirname(os.path.abspath(__file__))
DOMAINS = T.DOMAINS


def log(msg):
    print(time.strftime("%H:%M:%S ") + msg, flush=True)


def frequent_tokens(data, weights, n, vocab):
    """The n most frequent target ids of the training streams, each domain's counts weighted by its
    share of the training mix (so the vocabulary follows what training and drafting see)."""
    counts = np.zeros(vocab, dtype=np.float64)
    for d in DOMAINS:
        s = np.load(os.path.join(data, "tokens", f"{d}.train.npy")).astype(np.int64)
        c = np.bincount(s, minlength=vocab)[:vocab].astype(np.float64)
        counts += weights[d] * c / max(1, c.sum())
    order = np.argsort(-counts, kind="stable")[:n]
    return np.sort(order), counts


class GeneratedRows:
    """Rows of generate_head_data.py's output (one folder, or several comma-separated, e.g. shards
    made on separate cores): the target's greedy continuations of training prompts with its decoder
    layers' outputs. A batch gives the tokens, the features of the chosen layers and the target's
    logits (recomputed from its top layer's output: norm + lm_head)."""

    def __init__(self, folders, layer_ids, target, seed):
        self.parts = []
        for folder in folders.split(","):
            with open(os.path.join(folder, "meta.json")) as fh:
                meta = json.load(fh)
            stored = meta.get("layer_ids", list(range(meta["layers"])))
            missing = [i for i in layer_ids if i not in stored]
            if missing:
                raise SystemExit(f"{folder} stores the outputs of layers {stored}, not {missing}: "
                                 f"regenerate it with those layers in --keep-layers")
            cols = [stored.index(i) for i in layer_ids] + [len(stored) - 1]  # the top layer is stored last
            self.parts.append({"meta": meta, "cols": cols,
                               "tokens": np.load(os.path.join(folder, "tokens.npy"), mmap_mode="r"),
                               "hidden": np.load(os.path.join(folder, "hidden.npy"), mmap_mode="r")})
        seqs = {p["meta"]["seq"] for p in self.parts}
        if len(seqs) != 1:
            raise SystemExit(f"generated rows of different lengths {sorted(seqs)} cannot share a batch")
        self.meta = {"seq": seqs.pop(), "seconds": sum(p["meta"]["seconds"] for p in self.parts),
                     "prompt_len": sum((p["meta"]["prompt_len"] for p in self.parts), []),
                     "bos": all(p["meta"].get("bos", False) for p in self.parts), "folders": len(self.parts)}
        self.offsets = np.cumsum([0] + [p["meta"]["rows"] for p in self.parts])
        self.rows = int(self.offsets[-1])
        self.target = target
        self.rng = np.random.default_rng(seed)
        self.domain = np.array(sum((p["meta"]["domain"][:p["meta"]["rows"]] for p in self.parts), []))

    def take(self, idx):
        idx = np.sort(np.asarray(idx))
        hs, xs = [], []
        for k, p in enumerate(self.parts):
            local = idx[(idx >= self.offsets[k]) & (idx < self.offsets[k + 1])] - self.offsets[k]
            if local.size:
                hs.append(np.ascontiguousarray(p["hidden"][local][:, :, p["cols"]]))
                xs.append(p["tokens"][local, :-1].astype(np.int64))
        h = torch.from_numpy(np.concatenate(hs)).float()
        feats = h[:, :, :-1].flatten(2)
        with torch.no_grad():
            tlogits = self.target.lm_head(self.target.model.norm(h[:, :, -1]))
        return torch.from_numpy(np.concatenate(xs)), feats, tlogits

    def fingerprint(self, h):
        for p in self.parts:
            h.update(json.dumps(p["meta"], sort_keys=True).encode())
            h.update(np.ascontiguousarray(p["tokens"]).tobytes())

    def meta_summary(self):
        doms = {d: int((self.domain == d).sum()) for d in DOMAINS}
        return {"rows": self.rows, "seq": self.meta["seq"], "rows_per_domain": doms,
                "prompt_tokens": [min(self.meta["prompt_len"]), max(self.meta["prompt_len"])],
                "bos": self.meta["bos"], "folders": self.meta["folders"],
                "generation_seconds": self.meta["seconds"]}

    def next(self, batch):
        return self.take(self.rng.choice(self.rows, size=batch, replace=False))


def ttt_losses(head, target, x, steps, layer_ids, draft_ids, feats=None, tlogits=None):
    """x [B, W] tokens, W = T + steps. The target's features and logits of x are computed here
    unless given (from generated rows). Returns (weighted loss terms per step, top-1 agreement per
    step, head confidence and hit per step for AUC)."""
    t = x.size(1) - steps
    with torch.no_grad():
        if feats is None:
            tlogits, feats = E.target_features(target, x, layer_ids)
        tlogp = F.log_softmax(tlogits[..., draft_ids], dim=-1)  # restricted + renormalised
        targmax = tlogits.argmax(-1)
    outs = head.unroll(feats[:, :t], head.embedding(target.model.embed_tokens), x[:, 1:], steps)
    losses, agree, conf = [], [], []
    for k, out in enumerate(outs):
        logp = F.log_softmax(head.logits(out), dim=-1)
        tp = tlogp[:, k + 1:k + 1 + t]
        losses.append(-(tp.exp() * logp).sum(-1).mean() - (-(tp.exp() * tp).sum(-1).mean()).detach())  # = KL
        pick = draft_ids[logp.argmax(-1)]
        hit = pick == targmax[:, k + 1:k + 1 + t]
        agree.append(hit.float().mean().item())
        conf.append((logp.max(-1).values.exp().detach(), hit))
    return losses, agree, conf


def auc(scores, hits):
    """ROC AUC of scores for telling hits from misses (ties count half)."""
    s, h = np.asarray(scores, dtype=np.float64), np.asarray(hits, dtype=bool)
    npos, nneg = h.sum(), (~h).sum()
    if npos == 0 or nneg == 0:
        return None
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s))
    sorted_s = s[order]
    i = 0
    while i < len(s):  # average ranks over ties
        j = i
        while j + 1 < len(s) and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[h].sum() - npos * (npos + 1) / 2) / (npos * nneg))


def held_out_score(ev):
    """The figure the best checkpoint is chosen by: mean over domains of the held-out chain acceptance
    (tokens a greedy chain gets accepted a step), or None for the corpus-window evaluation."""
    chains = [v["chain_accept"] for v in ev.values() if "chain_accept" in v]
    return sum(chains) / len(chains) if chains else None


@torch.no_grad()
def generated_eval(head, target, rows, steps, layer_ids, draft_ids, bs=16):
    """Held-out measure on generated rows, per domain: top-1 agreement with the target per step,
    the chain acceptance it implies (mean number of leading agreeing steps, the tokens a greedy
    chain of `steps` drafts would get accepted, plus the target's own token), and the depth-0 AUC
    of the head's confidence."""
    head.eval()
    per = {d: {"hits": [], "conf": []} for d in DOMAINS}
    for i in range(0, rows.rows, bs):
        idx = np.arange(i, min(rows.rows, i + bs))
        x, feats, tlogits = rows.take(idx)
        _, _, conf = ttt_losses(head, target, x, steps, layer_ids, draft_ids, feats, tlogits)
        hits = torch.stack([h for _, h in conf], dim=-1)  # [B, T, steps]
        c0 = conf[0][0]
        for j, r in enumerate(idx):
            d = rows.domain[r]
            per[d]["hits"].append(hits[j].numpy())
            per[d]["conf"].append(c0[j].numpy())
    res = {}
    for d, v in per.items():
        if not v["hits"]:
            continue
        hits = np.concatenate(v["hits"])
        lead = np.cumprod(hits, axis=1).sum(1)
        res[d] = {"top1": [round(float(m), 4) for m in hits.mean(0)],
                  "chain_accept": round(float(lead.mean()) + 1, 4),
                  "auc0": round(auc(np.concatenate(v["conf"]), hits[:, 0]), 4)}
    head.train()
    return res


@torch.no_grad()
def quick_eval(head, target, windows, steps, layer_ids, draft_ids, bs=8):
    head.eval()
    res = {}
    for d, w in windows.items():
        kl, ag, n = np.zeros(steps), np.zeros(steps), 0
        for i in range(0, w.size(0), bs):
            x = w[i:i + bs]
            losses, agree, _ = ttt_losses(head, target, x, steps, layer_ids, draft_ids)
            kl += np.array([l.item() for l in losses]) * x.size(0)
            ag += np.array(agree) * x.size(0)
            n += x.size(0)
        res[d] = {"kl": [round(v, 4) for v in kl / n], "top1": [round(v, 4) for v in ag / n]}
    head.train()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", default="echo-demo-head")
    ap.add_argument("--target", default=os.path.join(HERE, "..", "..", "assets/models/echo-demo-target"))
    ap.add_argument("--out", default=os.path.join(HERE, "..", "..", "assets/models/echo-demo-head"))
    ap.add_argument("--data", default=os.path.join(HERE, ".data"))
    ap.add_argument("--layer-ids", default="1,3,5", help="target decoder layers (0-based) whose outputs are the features, low to high")
    ap.add_argument("--draft-vocab", type=int, default=2048, help="0 = the target's whole vocabulary")
    ap.add_argument("--intermediate", type=int, default=0, help="MLP width; 0 = the target's")
    ap.add_argument("--hidden", type=int, default=0,
                    help="head width; 0 = the target's (borrows its embedding); narrower heads carry their own")
    ap.add_argument("--gen-data", default=None,
                    help="train on generate_head_data.py rows (the target's own continuations, features stored) "
                         "instead of corpus windows read through the target on the fly")
    ap.add_argument("--gen-heldout", default=None, help="held-out generated rows for the evaluations (with --gen-data)")
    ap.add_argument("--eval-rows", type=int, default=0, help="evaluate on the first N held-out generated rows; 0 = all")
    ap.add_argument("--ttt-steps", type=int, default=4, help="training-time test: unrolled steps (depths trained)")
    ap.add_argument("--step-decay", type=float, default=0.8, help="loss weight of step k is decay**k")
    ap.add_argument("--seq", type=int, default=256, help="tokens per window the target reads")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--lr", type=float, default=1.5e-3)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--weights", default="code=0.45,prose=0.2,math=0.35")
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--ckpt-every-min", type=float, default=3.0)
    ap.add_argument("--time-budget-min", type=float, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=2)
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    target = M.load_hf_folder(a.target).eval()
    for p in target.parameters():
        p.requires_grad_(False)
    tc = target.config
    layer_ids = [int(v) for v in a.layer_ids.split(",")]
    if len(layer_ids) != 3 or any(not 0 <= i < tc["num_hidden_layers"] for i in layer_ids):
        raise SystemExit(f"--layer-ids: need three layer indices in 0..{tc['num_hidden_layers'] - 1}, got {a.layer_ids}")
    weights = {k: float(v) for k, v in (kv.split("=") for kv in a.weights.split(","))}
    nv = a.draft_vocab or tc["vocab_size"]
    if not 0 < nv <= tc["vocab_size"]:
        raise SystemExit(f"--draft-vocab: must be in 1..{tc['vocab_size']}")
    vocab, counts = frequent_tokens(a.data, weights, nv, tc["vocab_size"])
    cover = counts[vocab].sum() / counts.sum()
    cfg = E.head_config(tc, layer_ids, nv, a.intermediate or None, a.hidden or None)
    head = E.Eagle3Head(cfg)
    head.set_vocab(vocab)
    draft_ids = head.draft_ids()
    # Start the output side where the target's is: its (tied) embedding rows and final norm; a
    # narrower head starts from the target's embedding projected on its leading principal directions.
    with torch.no_grad():
        table = target.model.embed_tokens.weight
        if head.embed_tokens is not None:
            basis = torch.linalg.svd(table, full_matrices=False)[2][:cfg["hidden_size"]].T
            table = table @ basis
            head.embed_tokens.weight.copy_(table)
        else:
            head.norm.weight.copy_(target.model.norm.weight)
        head.lm_head.weight.copy_(table[draft_ids])
    log(f"{a.name}: {head.num_parameters():,} parameters; features = outputs of target layers {layer_ids}; "
        f"draft vocabulary {nv} of {tc['vocab_size']} ({100 * cover:.1f}% of training tokens)")

    decay = [p for n, p in head.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in head.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.wd}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    if a.gen_data:
        gen = GeneratedRows(a.gen_data, layer_ids, target, a.seed)
        batches = gen  # its rng is checkpointed like the corpus batches'
        held = GeneratedRows(a.gen_heldout, layer_ids, target, a.seed) if a.gen_heldout else None
        if held and a.eval_rows:
            held.rows = min(held.rows, a.eval_rows)
        log(f"training on {gen.rows} generated rows of {gen.meta['seq']} positions ({a.gen_data})")
    else:
        batches = T.Batches(a.data, weights, a.seq - 1, a.batch, a.seed)  # rows of a.seq tokens
        quick = T.heldout_windows(a.data, a.seq - 1, max_windows=8)

    def evaluate_now():
        if a.gen_data:
            return generated_eval(head, target, held, a.ttt_steps, layer_ids, draft_ids) if held else {}
        return quick_eval(head, target, quick, a.ttt_steps, layer_ids, draft_ids)

    ckdir = os.path.join(a.data, "ckpt", a.name)
    os.makedirs(ckdir, exist_ok=True)
    ck = os.path.join(ckdir, "last.pt")
    best_ck = os.path.join(ckdir, "best.pt")  # the head weights of the best held-out evaluation so far
    step, elapsed, positions, history, best = 0, 0.0, 0, [], None
    if a.gen_data:
        import hashlib
        h = hashlib.sha256()
        gen.fingerprint(h)
        fingerprint = h.hexdigest()
    else:
        fingerprint = T.data_fingerprint(a.data)
    with open(os.path.join(a.target, "model.safetensors"), "rb") as fh:
        import hashlib
        target_hash = hashlib.sha256(fh.read()).hexdigest()
    if os.path.exists(ck):
        st = torch.load(ck)
        if st["data"] != fingerprint or st["config"] != cfg or st["target"] != target_hash:
            raise SystemExit(f"{ck} was trained on other data, another target or another head shape than this "
                             f"run's: move it away to train from scratch")
        head.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        batches.rng.bit_generator.state = st["rng"]
        torch.set_rng_state(st["torch_rng"])
        step, elapsed, positions, history = st["step"], st["elapsed"], st["positions"], st["history"]
        best = st.get("best")
        log(f"resumed from {ck} at step {step} ({elapsed / 60:.1f} min)")

    budget_s = a.time_budget_min * 60
    wsum = sum(a.step_decay ** k for k in range(a.ttt_steps))

    def progress():
        p = step / a.steps
        return min(1.0, max(p, elapsed / budget_s) if budget_s else p)

    def save():
        tmp = ck + ".tmp"
        torch.save({"model": head.state_dict(), "opt": opt.state_dict(), "rng": batches.rng.bit_generator.state,
                    "torch_rng": torch.get_rng_state(), "step": step, "elapsed": elapsed, "positions": positions,
                    "history": history, "best": best,
                    "data": fingerprint, "config": cfg, "target": target_hash}, tmp)
        os.replace(tmp, ck)

    t_last, last_ck, ema = time.time(), elapsed, None
    while step < a.steps and not (budget_s and elapsed >= budget_s):
        lr = T.lr_at(step, a.steps, a.lr, a.warmup, progress() if budget_s else None)
        for g in opt.param_groups:
            g["lr"] = lr
        if a.gen_data:
            x, feats, tlogits = gen.next(a.batch)
        else:
            x, y = batches.next()
            x = torch.cat([x, y[:, -1:]], dim=1)  # a.seq tokens
            feats = tlogits = None
        losses, agree, _ = ttt_losses(head, target, x, a.ttt_steps, layer_ids, draft_ids, feats, tlogits)
        loss = sum(a.step_decay ** k * l for k, l in enumerate(losses)) / wsum
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(head.parameters(), 1.0)
        opt.step()
        step += 1
        positions += x.size(0) * (x.size(1) - a.ttt_steps)
        now = time.time()
        elapsed += now - t_last
        t_last = now
        ema = agree if ema is None else [0.95 * e + 0.05 * g for e, g in zip(ema, agree)]
        if step % 10 == 0 or step == 1:
            tps = positions / max(elapsed, 1e-9)
            log(f"{a.name} step {step}/{a.steps} lr {lr:.2e} kl/step " + " ".join(f"{l.item():.3f}" for l in losses)
                + " | top-1 agreement (ema) " + " ".join(f"{v:.3f}" for v in ema)
                + f" | {tps:.0f} positions/s, {elapsed / 60:.1f} min")
        done = step == a.steps or bool(budget_s and elapsed >= budget_s)
        if step % a.eval_every == 0 or done:
            ev = evaluate_now()
            history.append({"step": step, "elapsed_s": round(elapsed, 1), **ev})
            score = held_out_score(ev)
            if score is not None and (best is None or score > best["score"]):
                # kept apart from last.pt: with more epochs than the data holds, the last weights can be worse
                best = {"step": step, "score": score}
                torch.save({"model": head.state_dict(), **best}, best_ck + ".tmp")
                os.replace(best_ck + ".tmp", best_ck)
            log(f"{a.name} eval step {step}: " + "; ".join(
                f"{d} top-1 {v['top1']}" + (f" chain {v['chain_accept']} auc0 {v['auc0']}" if "auc0" in v else "")
                for d, v in ev.items()))
            t_last = time.time()
        if done or elapsed - last_ck >= a.ckpt_every_min * 60:
            save()
            last_ck = elapsed
            t_last = time.time()

    if best is not None and best["step"] != step and os.path.exists(best_ck):
        head.load_state_dict(torch.load(best_ck)["model"])
        log(f"{a.name}: the best held-out evaluation was at step {best['step']} (mean chain {best['score']:.4f}); writing those weights")
    E.save_folder(head, a.out, a.target)
    meta = {"name": a.name, "parameters": head.num_parameters(), "steps": step, "planned_steps": a.steps,
            "time_budget_min": a.time_budget_min or None, "batch": a.batch, "seq": a.seq,
            "positions": positions, "best": best,
            "train_seconds": round(elapsed, 1), "lr": a.lr, "warmup": a.warmup, "weight_decay": a.wd,
            "domain_weights": weights, "ttt_steps": a.ttt_steps, "step_decay": a.step_decay,
            "layer_ids": layer_ids, "draft_vocab": nv, "hidden": cfg["hidden_size"],
            "intermediate": cfg["intermediate_size"], "gen_data": gen.meta_summary() if a.gen_data else None, "draft_vocab_coverage": round(float(cover), 4),
            "target": os.path.basename(os.path.normpath(a.target)), "threads": a.threads, "history": history}
    with open(os.path.join(a.data, f"train_{os.path.basename(os.path.normpath(a.out))}.json"), "w") as fh:
        json.dump(meta, fh, indent=2)
    log(f"{a.name}: wrote {a.out} ({step} steps, {meta['positions']:,} positions, {elapsed / 60:.1f} min)")


if __name__ == "__main__":
    main()
