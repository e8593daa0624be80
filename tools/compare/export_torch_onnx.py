#!/usr/bin/env python3
"""Export a HF Llama folder with torch.onnx, for bench/compare-torch-onnx.ts.

Loads the folder's weights into the trainer's PyTorch model (tools/train/model.py, load_hf_folder,
the same loader evaluate.py uses) and exports a plain full-sequence causal forward:
input_ids [1, N] int64 (N dynamic) -> logits [1, N, vocab], opset 17, no KV cache.

Also writes <out>.ref.json: a short input and PyTorch's logits for it, which the bench compares
against both onnxruntime graphs. The .onnx goes to a gitignored folder by default; never commit it.

    python3 tools/compare/export_torch_onnx.py [--model assets/models/echo-demo-target] \
        [--out node_modules/.cache/compare/target-torch.onnx]

Needs torch (1.13 works; its exporter does not need the onnx Python package).
"""
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "train"))
import model as M  # noqa: E402


class LogitsOnly(torch.nn.Module):
    """input_ids [1, N] -> logits [1, N, vocab]; positions 0..N-1, causal mask (model.py's own)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids):
        return self.m(input_ids)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(ROOT, "assets", "models", "echo-demo-target"))
    ap.add_argument("--out", default=os.path.join(ROOT, "node_modules", ".cache", "compare", "target-torch.onnx"))
    ap.add_argument("--check-tokens", type=int, default=16)
    a = ap.parse_args()

    m = M.load_hf_folder(a.model).eval()
    vocab = m.config["vocab_size"]
    wrapped = LogitsOnly(m).eval()
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    example = torch.tensor([[(17 + 31 * i) % vocab for i in range(8)]], dtype=torch.int64)
    with torch.no_grad():
        torch.onnx.export(
            wrapped,
            (example,),
            a.out,
            opset_version=17,
            input_names=["input_ids"],
            output_names=["logits"],
            dynamic_axes={"input_ids": {1: "n"}, "logits": {1: "n"}},
            do_constant_folding=True,
        )
    # Reference logits of a short input (a different length than the export example, so the
    # dynamic axis is exercised).
    ids = [(17 + 31 * i) % vocab for i in range(a.check_tokens)]
    with torch.no_grad():
        logits = wrapped(torch.tensor([ids], dtype=torch.int64))[0]
    ref = {"tokens": ids, "vocab": vocab, "logits": [round(float(x), 7) for x in logits.reshape(-1)]}
    with open(a.out + ".ref.json", "w") as fh:
        json.dump(ref, fh)
    size = os.path.getsize(a.out)
    print(f"wrote {a.out} ({size / 2**20:.1f} MiB), torch {torch.__version__}, opset 17, input_ids [1, n] -> logits [1, n, {vocab}]")
    print(f"wrote {a.out}.ref.json ({len(ids)} tokens, PyTorch logits; max |logit| {float(logits.abs().max()):.2f})")


if __name__ == "__main__":
    main()
