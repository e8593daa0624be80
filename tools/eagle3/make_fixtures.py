"""Writes the tiny random-weight EAGLE-3 fixtures the engine's tests compare against
(test/engine/fixtures/eagle3/): two targets (a Llama-3-style one with GQA and llama3 RoPE scaling,
8 layers, so the default feature layers apply; a Qwen3-style one, 4 layers, with q/k norms) and
heads in the published layout for them, plus expected.json: reference.py's depth-0 and depth-1
top-k for each head over a fixed token sequence.

    /usr/bin/python3 tools/eagle3/make_fixtures.py [OUT_DIR]

Weights are stored as float16 to keep the files small; both sides compute in float32 from them.
"""
import json
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TAGS = {np.float16: "F16", np.float32: "F32", np.int64: "I64", np.bool_: "BOOL"}


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, arr in tensors.items():
        arr = np.ascontiguousarray(arr)
        raw = arr.tobytes()
        header[name] = {"dtype": TAGS[arr.dtype.type], "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def save(folder, config, tensors):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    write_safetensors(os.path.join(folder, "model.safetensors"), tensors)


class Rand:
    def __init__(self, seed):
        self.g = np.random.default_rng(seed)

    def w(self, *shape, scale=None):
        scale = scale if scale is not None else 1.0 / np.sqrt(shape[-1])
        return (self.g.standard_normal(shape) * scale * 1.5).astype(np.float16)

    def norm(self, n):
        return (1.0 + 0.2 * self.g.standard_normal(n)).astype(np.float16)


def layer_tensors(r, p, H, inp, heads, kv, hd, inter, qk_norm=False, prefix=""):
    t = {
        f"{prefix}{p}self_attn.q_proj.weight": r.w(heads * hd, inp),
        f"{prefix}{p}self_attn.k_proj.weight": r.w(kv * hd, inp),
        f"{prefix}{p}self_attn.v_proj.weight": r.w(kv * hd, inp),
        f"{prefix}{p}self_attn.o_proj.weight": r.w(H, heads * hd),
        f"{prefix}{p}post_attention_layernorm.weight": r.norm(H),
        f"{prefix}{p}mlp.gate_proj.weight": r.w(inter, H),
        f"{prefix}{p}mlp.up_proj.weight": r.w(inter, H),
        f"{prefix}{p}mlp.down_proj.weight": r.w(H, inter),
    }
    if qk_norm:
        t[f"{prefix}{p}self_attn.q_norm.weight"] = r.norm(hd)
        t[f"{prefix}{p}self_attn.k_norm.weight"] = r.norm(hd)
    return t


def target(folder, arch, V, H, L, heads, kv, hd, inter, tied, seed, rope_scaling=None):
    r = Rand(seed)
    qwen3 = arch == "qwen3"
    config = {
        "architectures": ["Qwen3ForCausalLM" if qwen3 else "LlamaForCausalLM"],
        "model_type": arch, "vocab_size": V, "hidden_size": H, "intermediate_size": inter,
        "num_hidden_layers": L, "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": hd,
        "hidden_act": "silu", "rms_norm_eps": 1e-6, "rope_theta": 500000.0 if rope_scaling else 10000.0,
        "rope_scaling": rope_scaling, "max_position_embeddings": 256, "tie_word_embeddings": tied,
        "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float16",
    }
    t = {"model.embed_tokens.weight": r.w(V, H, scale=1.0), "model.norm.weight": r.norm(H)}
    for i in range(L):
        t[f"model.layers.{i}.input_layernorm.weight"] = r.norm(H)
        t.update(layer_tensors(r, f"model.layers.{i}.", H, H, heads, kv, hd, inter, qk_norm=qwen3))
    if not tied:
        t["lm_head.weight"] = r.w(V, H)
    save(folder, config, t)


def head(folder, V, Vd, H, Ht, heads, kv, hd, inter, seed, layers=1, own_embedding=True, prefix="",
         layer_ids=None, fc_bias=False):
    r = Rand(seed)
    config = {
        "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "vocab_size": V,
        "draft_vocab_size": Vd, "hidden_size": H, "target_hidden_size": Ht, "intermediate_size": inter,
        "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": hd,
        "hidden_act": "silu", "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 256,
        "bias": fc_bias, "torch_dtype": "float16",
    }
    if layer_ids is not None:
        config["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": layer_ids}
    t = {f"{prefix}fc.weight": r.w(H, 3 * Ht), f"{prefix}norm.weight": r.norm(H), f"{prefix}lm_head.weight": r.w(Vd, H)}
    if fc_bias:
        t[f"{prefix}fc.bias"] = r.w(H, scale=0.3)
    t[f"{prefix}midlayer.input_layernorm.weight"] = r.norm(H)
    t[f"{prefix}midlayer.hidden_norm.weight"] = r.norm(H)
    t.update(layer_tensors(r, "midlayer.", H, 2 * H, heads, kv, hd, inter, prefix=prefix))
    for i in range(1, layers):
        t[f"{prefix}layers.{i}.input_layernorm.weight"] = r.norm(H)
        t.update(layer_tensors(r, f"layers.{i}.", H, H, heads, kv, hd, inter, prefix=prefix))
    if own_embedding:
        t[f"{prefix}embed_tokens.weight"] = r.w(V, H, scale=1.0)
    if Vd < V:
        # A draft vocabulary of Vd target ids chosen at random, sorted as published heads keep them.
        chosen = np.sort(r.g.choice(V, Vd, replace=False))
        t["d2t"] = (chosen - np.arange(Vd)).astype(np.int64)
        t2d = np.zeros(V, dtype=np.bool_)
        t2d[chosen] = True
        t["t2d"] = t2d
    save(folder, config, t)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "test", "engine", "fixtures", "eagle3")
    llama3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "original_max_position_embeddings": 64}
    target(os.path.join(out, "llama-target"), "llama", V=96, H=16, L=8, heads=4, kv=2, hd=4, inter=24, tied=False,
           seed=1, rope_scaling=llama3)
    target(os.path.join(out, "qwen3-target"), "qwen3", V=80, H=16, L=4, heads=4, kv=2, hd=8, inter=24, tied=True,
           seed=2)
    heads = {
        # Own embedding, draft vocabulary half the target's, names without a prefix.
        "llama-head-untied": ("llama-target", dict(V=96, Vd=48, H=16, Ht=16, heads=4, kv=2, hd=4, inter=24, seed=3)),
        # The target's embedding, the full vocabulary (no d2t), names with `model.`.
        "llama-head-tied": ("llama-target", dict(V=96, Vd=96, H=16, Ht=16, heads=4, kv=2, hd=4, inter=24, seed=4,
                                                  own_embedding=False, prefix="model.")),
        # Named layers, two decoder layers, fc bias, draft vocabulary smaller than the target's.
        "qwen3-head": ("qwen3-target", dict(V=80, Vd=40, H=16, Ht=16, heads=2, kv=1, hd=8, inter=24, seed=5,
                                           layers=2, layer_ids=[0, 1, 3], fc_bias=True, prefix="model.")),
    }
    tokens = [5, 17, 3, 42, 8, 29, 11, 60, 7, 33]
    expected = {"tokens": tokens, "topk": 5, "heads": {}}
    for name, (target_name, spec) in heads.items():
        head(os.path.join(out, name), **spec)
        with torch.no_grad():
            result = reference.run(os.path.join(out, name), os.path.join(out, target_name), tokens, 5)
        expected["heads"][name] = dict(result, target=target_name)
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
