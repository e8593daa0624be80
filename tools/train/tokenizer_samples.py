#!/usr/bin/env python3
"""Write held-out samples with the Python encoder's ids, for check_tokenizer.mjs to compare."""
import argparse
import json
import os

import bpe

EXTRA = [
    "Hello World", "  leading spaces and trailing   ", "tabs\tand\nnew\n\nlines\r\n",
    "it's they're we've I'm you'll he'd IT'S", "Raphaël Hertzog — naïve café, über, Ελληνικά, русский",
    "numbers 3 * 12 = 36; ² ½ Ⅻ ٣٤ 1,000,000.50", "emoji 🙂👍🏽 and CJK 漢字かなカナ",
    "def f(x):\n    return {'a': [1, 2, 3]}  # comment\n", "<|endoftext|>", "", " ", "\u00a0nbsp\u2009thin",
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), ".data"))
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--per-domain", type=int, default=60)
    a = ap.parse_args()
    enc = bpe.load(a.tokenizer)
    samples = []
    for d in ("code", "prose", "math"):
        with open(os.path.join(a.data, "corpus", f"{d}.heldout.json"), encoding="utf-8") as fh:
            docs = json.load(fh)
        for doc in docs[: a.per_domain]:
            samples.append({"domain": d, "text": doc, "ids": enc.encode(doc)})
    for t in EXTRA:
        samples.append({"domain": "extra", "text": t, "ids": enc.encode(t)})
    out = os.path.join(a.data, "tokenizer_samples.json")
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(samples, fh, ensure_ascii=False)
    print(f"wrote {len(samples)} samples to {out}")


if __name__ == "__main__":
    main()
