#!/usr/bin/env python3
"""Store a trained model folder's floating weights as float16 (halves the repository's share;
the runtime widens them to float32 and computes in float32).

For a Llama folder it also measures what the rounding costs: held-out loss per domain (evenly
spaced 256-token windows) before and after, and the largest change of any logit on those windows.
The figures go to DATA/rounding_NAME.json, where write_card.py reads them.

    store_half.py FOLDER [--data .data/v2] [--windows 16]
"""
import argparse
import json
import os

import torch
import torch.nn.functional as F

import model as M
import train as T

HERE = os.path.dirname(os.path.abspath(__file__))


@torch.no_grad()
def losses_and_logits(model, windows):
    model.eval()
    loss, logits = {}, {}
    for d, w in windows.items():
        out = model(w[:, :-1])
        loss[d] = F.cross_entropy(out.reshape(-1, out.size(-1)), w[:, 1:].reshape(-1)).item()
        logits[d] = out
    return loss, logits


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--data", default=os.path.join(HERE, ".data"))
    ap.add_argument("--windows", type=int, default=16, help="held-out windows per domain for the rounding cost")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)

    path = os.path.join(a.folder, "model.safetensors")
    if M.safetensors_float_tag(path) == "F16":
        print(f"{path}: already float16")
        return
    with open(os.path.join(a.folder, "config.json")) as fh:
        config = json.load(fh)
    tensors = M.load_safetensors(path)
    report = {"folder": os.path.basename(os.path.normpath(a.folder)), "stored": "float16"}
    if "LlamaForCausalLM" in config.get("architectures", []):
        windows = T.heldout_windows(a.data, 256, max_windows=a.windows)
        before, logits32 = losses_and_logits(M.load_hf_folder(a.folder), windows)
        M.save_safetensors(tensors, path, {"format": "pt"}, float_tag="F16")
        after, logits16 = losses_and_logits(M.load_hf_folder(a.folder), windows)
        report.update({
            "windows_per_domain": a.windows,
            "heldout_loss_float32": {d: round(v, 5) for d, v in before.items()},
            "heldout_loss_float16": {d: round(v, 5) for d, v in after.items()},
            "max_abs_logit_change": round(max((logits16[d] - logits32[d]).abs().max().item() for d in windows), 5),
        })
    else:
        M.save_safetensors(tensors, path, {"format": "pt"}, float_tag="F16")
    worst = max((t.float() - t.half().float()).abs().max().item() for t in tensors.values() if t.is_floating_point())
    report["max_abs_weight_change"] = round(worst, 7)
    with open(os.path.join(a.data, f"rounding_{report['folder']}.json"), "w") as fh:
        json.dump(report, fh, indent=2)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
