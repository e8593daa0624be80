#!/usr/bin/env python3
"""Train the shared BPE tokenizer on a balanced sample of the three domains' training splits,
write tokenizer.json, and encode every split into token streams (.data/tokens/*.npy, uint16)
with <|endoftext|> before each document."""
import argparse
import json
import os
import random
import shutil
import time

import numpy as np

import bpe

DOMAINS = ("code", "prose", "math")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), ".data"))
    ap.add_argument("--vocab-size", type=int, default=4096)
    ap.add_argument("--sample-chars", type=int, default=1_500_000, help="per domain, for BPE training")
    ap.add_argument("--tokenizer", default=None,
                    help="encode with this existing tokenizer.json instead of training one (a new model then "
                         "shares the bundled pair's vocabulary, prompts and token ids)")
    a = ap.parse_args()
    t0 = time.time()
    tokdir = os.path.join(a.data, "tokenizer")
    os.makedirs(tokdir, exist_ok=True)
    if a.tokenizer:
        enc = bpe.load(a.tokenizer)
        shutil.copy(a.tokenizer, os.path.join(tokdir, "tokenizer.json"))
        print(f"bpe: reusing {a.tokenizer}")
    else:
        enc = train_tokenizer(a, tokdir, t0)
    encode_corpora(a, enc, t0)


def train_tokenizer(a, tokdir, t0):
    sample = []
    for d in DOMAINS:
        with open(os.path.join(a.data, "corpus", f"{d}.train.json"), encoding="utf-8") as fh:
            docs = json.load(fh)
        random.Random(7).shuffle(docs)
        n = 0
        for doc in docs:
            if n >= a.sample_chars:
                break
            sample.append(doc)
            n += len(doc)
    symbols, merges = bpe.train(sample, a.vocab_size)
    print(f"bpe: trained {len(merges)} merges, vocab {len(symbols)} in {time.time() - t0:.1f}s")
    with open(os.path.join(tokdir, "tokenizer.json"), "w", encoding="utf-8") as fh:
        json.dump(bpe.tokenizer_json(symbols, merges), fh, ensure_ascii=False)
    return bpe.Encoder(symbols, merges)


def encode_corpora(a, enc, t0):
    outdir = os.path.join(a.data, "tokens")
    os.makedirs(outdir, exist_ok=True)
    stats = {}
    for d in DOMAINS:
        for split in ("train", "heldout"):
            with open(os.path.join(a.data, "corpus", f"{d}.{split}.json"), encoding="utf-8") as fh:
                docs = json.load(fh)
            ids = []
            for doc in docs:
                ids.append(enc.eot)
                ids.extend(enc.encode(doc))
            arr = np.asarray(ids, dtype=np.uint16)
            np.save(os.path.join(outdir, f"{d}.{split}.npy"), arr)
            chars = sum(map(len, docs))
            stats[f"{d}.{split}"] = {"docs": len(docs), "chars": chars, "tokens": int(arr.size)}
            print(f"{d:6s} {split:8s} {arr.size:9d} tokens  {chars / max(1, arr.size):.2f} chars/token")
    with open(os.path.join(outdir, "stats.json"), "w") as fh:
        json.dump(stats, fh, indent=1)
    print(f"done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
