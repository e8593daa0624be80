"""Writes a random-weight Hugging Face model folder of a real model's shape, for measuring the
runtime on sizes no bundled model has (weights are noise: never commit the result).

    /usr/bin/python3 bench/random-model.py OUT_DIR [--shape qwen2-0.5b|llama-100m] [--dtype bfloat16|float32]

The tokenizer files are copied from the bundled demo target (the vocabulary is padded past them,
which the runtime allows). Tensors are generated and written one at a time, so memory stays at
about one tensor.
"""
import argparse
import json
import shutil
import struct
from pathlib import Path

import numpy as np

SHAPES = {
    # Qwen2-0.5B's published shape.
    "qwen2-0.5b": dict(architectures=["Qwen2ForCausalLM"], model_type="qwen2", hidden_size=896, intermediate_size=4864,
                       num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2, vocab_size=151936,
                       max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True),
    # A Llama of about 100M parameters, between the demo pair and the 0.5B.
    "llama-100m": dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_size=768, intermediate_size=2048,
                       num_hidden_layers=12, num_attention_heads=12, num_key_value_heads=4, vocab_size=32000,
                       max_position_embeddings=4096, rope_theta=10000.0, rms_norm_eps=1e-5, tie_word_embeddings=True),
}

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--shape", default="qwen2-0.5b", choices=sorted(SHAPES))
parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
args = parser.parse_args()
cfg = dict(SHAPES[args.shape], hidden_act="silu", bos_token_id=0, eos_token_id=0, torch_dtype=args.dtype)
out = Path(args.out)
out.mkdir(parents=True, exist_ok=True)

H, I, L = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
nH, kvH, V = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["vocab_size"]
hd = H // nH
shapes = {"model.embed_tokens.weight": [V, H], "model.norm.weight": [H]}
for i in range(L):
    p = f"model.layers.{i}."
    shapes.update({
        p + "input_layernorm.weight": [H], p + "post_attention_layernorm.weight": [H],
        p + "self_attn.q_proj.weight": [nH * hd, H], p + "self_attn.k_proj.weight": [kvH * hd, H],
        p + "self_attn.v_proj.weight": [kvH * hd, H], p + "self_attn.o_proj.weight": [H, nH * hd],
        p + "mlp.gate_proj.weight": [I, H], p + "mlp.up_proj.weight": [I, H], p + "mlp.down_proj.weight": [H, I],
    })
    if cfg["model_type"] == "qwen2":
        shapes.update({p + "self_attn.q_proj.bias": [nH * hd], p + "self_attn.k_proj.bias": [kvH * hd], p + "self_attn.v_proj.bias": [kvH * hd]})

size = 2 if args.dtype == "bfloat16" else 4
header, offset = {}, 0
for name, shape in shapes.items():
    n = int(np.prod(shape)) * size
    header[name] = {"dtype": "BF16" if size == 2 else "F32", "shape": shape, "data_offsets": [offset, offset + n]}
    offset += n
head = json.dumps(header).encode()
head += b" " * ((8 - len(head) % 8) % 8)
rng = np.random.default_rng(0)
with open(out / "model.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(head)))
    f.write(head)
    for name, shape in shapes.items():
        if name.endswith("norm.weight"):
            data = np.ones(shape, dtype=np.float32)
        else:
            data = (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float32)
        if size == 2:
            f.write((data.view(np.uint32) >> 16).astype(np.uint16).tobytes())
        else:
            f.write(data.tobytes())
(out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
demo = Path(__file__).resolve().parent.parent / "assets" / "models" / "echo-demo-target"
for name in ("tokenizer.json", "tokenizer_config.json"):
    shutil.copy(demo / name, out / name)
print(f"{out}: {args.shape}, {sum(int(np.prod(s)) for s in shapes.values()):,} parameters, {args.dtype}")
