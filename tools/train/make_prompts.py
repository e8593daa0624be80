#!/usr/bin/env python3
"""Write the bundled prompt sets assets/prompts/{code,prose,math}.jsonl from the held-out splits.

A prompt is the beginning of a held-out document, 20-60 tokens long, cut where the next token
starts a new word (so re-encoding the prompt gives the same ids). Math prompts are a whole
problem statement plus the first few words of its worked answer."""
import argparse
import json
import os
import random

import bpe

HERE = os.path.dirname(os.path.abspath(__file__))


def cut(enc, ids, lo, hi, rng):
    n0 = rng.randint(lo, (lo + hi) // 2)
    for strict in (True, False):
        for n in range(n0, min(hi, len(ids) - 1) + 1):
            text = enc.decode(ids[:n])
            nxt = enc.decode(ids[n:n + 1])
            if strict and (text != text.rstrip() or not nxt[:1].isspace()):
                continue
            if "\ufffd" in text or enc.encode(text) != ids[:n]:
                continue
            return text
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(HERE, ".data"))
    ap.add_argument("--out", default=os.path.join(HERE, "..", "..", "assets", "prompts"))
    ap.add_argument("--per-domain", type=int, default=80)
    a = ap.parse_args()
    enc = bpe.load(os.path.join(a.data, "tokenizer", "tokenizer.json"))
    os.makedirs(a.out, exist_ok=True)
    for d in ("code", "prose", "math"):
        with open(os.path.join(a.data, "corpus", f"{d}.heldout.json"), encoding="utf-8") as fh:
            docs = json.load(fh)
        rng = random.Random({"code": 11, "prose": 22, "math": 33}[d])
        prompts = []
        for doc in docs:
            if len(prompts) >= a.per_domain:
                break
            if d == "math":
                q, ans = doc.split("\nAnswer: ", 1)
                words = ans.split(" ")
                text = q + "\nAnswer: " + " ".join(words[: rng.randint(2, 6)])
                n = len(enc.encode(text))
                if not 20 <= n <= 60:
                    continue
            else:
                ids = enc.encode(doc)
                if len(ids) < 40:
                    continue
                text = cut(enc, ids, 20, 60, rng)
                if text is None:
                    continue
            prompts.append({"id": f"{d}-{len(prompts) + 1:04d}", "domain": d, "prompt": text})
        if len(prompts) < 64:
            raise SystemExit(f"{d}: only {len(prompts)} prompts (need at least 64)")
        with open(os.path.join(a.out, f"{d}.jsonl"), "w", encoding="utf-8") as fh:
            for p in prompts:
                fh.write(json.dumps(p, ensure_ascii=False) + "\n")
        lens = [len(enc.encode(p["prompt"])) for p in prompts]
        print(f"{d:6s} {len(prompts)} prompts, {min(lens)}-{max(lens)} tokens (mean {sum(lens) / len(lens):.1f})")


if __name__ == "__main__":
    main()
