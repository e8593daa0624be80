"""A Hugging Face Llama or Qwen2 folder → GGUF, for bench/peer-llama.ts.

Uses the gguf-py package of the llama.cpp source being measured (its folder is passed in), so the
file matches what that llama.cpp reads. Llama's q and k projections are permuted from the
rotate-half layout of Hugging Face to the interleaved pairs that llama.cpp's LLAMA rope expects
(Qwen2 uses the rotate-half rope there, so its weights stay as they are). The tokenizer is written
as a byte-level BPE with the "gpt-2" pre-tokenizer; the bench feeds token ids, so it only has to
load.

    python3 to-gguf.py GGUF_PY_DIR MODEL_DIR OUT.gguf f32|q8_0
"""
import json
import struct
import sys
from pathlib import Path

import numpy as np

gguf_py, model_dir, out_path, outtype = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4]
sys.path.insert(0, gguf_py)
import gguf  # noqa: E402  (from the measured llama.cpp source)

config = json.loads((model_dir / "config.json").read_text())
arch_class = (config.get("architectures") or [""])[0]
arch = {"LlamaForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2"}.get(arch_class)
if arch is None:
    sys.exit(f"to-gguf: {arch_class or config.get('model_type')} is not supported here (Llama or Qwen2)")


def read_safetensors(folder: Path) -> dict:
    """name → float32 array, from model.safetensors or the shards its index names."""
    index = folder / "model.safetensors.index.json"
    files = sorted(set(json.loads(index.read_text())["weight_map"].values())) if index.exists() else ["model.safetensors"]
    tensors = {}
    for name in files:
        raw = (folder / name).read_bytes()
        header_len = struct.unpack("<Q", raw[:8])[0]
        header = json.loads(raw[8 : 8 + header_len])
        base = 8 + header_len
        for key, meta in header.items():
            if key == "__metadata__":
                continue
            begin, end = meta["data_offsets"]
            buf = raw[base + begin : base + end]
            if meta["dtype"] == "F32":
                data = np.frombuffer(buf, dtype=np.float32)
            elif meta["dtype"] == "F16":
                data = np.frombuffer(buf, dtype=np.float16).astype(np.float32)
            elif meta["dtype"] == "BF16":
                data = (np.frombuffer(buf, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
            else:
                sys.exit(f"to-gguf: {key} has dtype {meta['dtype']}")
            tensors[key] = data.reshape(meta["shape"])
    return tensors


def to_interleaved(w: np.ndarray, heads: int) -> np.ndarray:
    """Rows of each head from [first half, second half] to interleaved pairs (llama.cpp's LLAMA rope)."""
    rows = w.shape[0] // heads
    return w.reshape(heads, 2, rows // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


weights = read_safetensors(model_dir)
hidden = config["hidden_size"]
heads = config["num_attention_heads"]
kv_heads = config.get("num_key_value_heads", heads)
head_dim = config.get("head_dim", hidden // heads)
layers = config["num_hidden_layers"]

quant = {"f32": gguf.GGMLQuantizationType.F32, "q8_0": gguf.GGMLQuantizationType.Q8_0}[outtype]
writer = gguf.GGUFWriter(out_path, arch)
writer.add_name(model_dir.name)
writer.add_context_length(config.get("max_position_embeddings", 4096))
writer.add_embedding_length(hidden)
writer.add_block_count(layers)
writer.add_feed_forward_length(config["intermediate_size"])
writer.add_head_count(heads)
writer.add_head_count_kv(kv_heads)
writer.add_key_length(head_dim)
writer.add_value_length(head_dim)
writer.add_rope_dimension_count(head_dim)
writer.add_layer_norm_rms_eps(config.get("rms_norm_eps", 1e-6))
writer.add_rope_freq_base(config.get("rope_theta", 10000.0))
writer.add_file_type(gguf.LlamaFileType.ALL_F32 if outtype == "f32" else gguf.LlamaFileType.MOSTLY_Q8_0)

tok = json.loads((model_dir / "tokenizer.json").read_text())
vocab = tok["model"]["vocab"]
size = config["vocab_size"]
tokens = [f"[PAD{i}]" for i in range(size)]
types = [gguf.TokenType.UNUSED] * size
for text, idx in vocab.items():
    if idx < size:
        tokens[idx] = text
        types[idx] = gguf.TokenType.NORMAL
for added in tok.get("added_tokens", []):
    if added["id"] < size:
        tokens[added["id"]] = added["content"]
        types[added["id"]] = gguf.TokenType.CONTROL if added.get("special") else gguf.TokenType.USER_DEFINED
merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"].get("merges", [])]
writer.add_tokenizer_model("gpt2")
writer.add_tokenizer_pre("gpt-2")
writer.add_token_list(tokens)
writer.add_token_types(types)
writer.add_token_merges(merges)
if config.get("bos_token_id") is not None:
    writer.add_bos_token_id(config["bos_token_id"])
eos = config.get("eos_token_id")
if isinstance(eos, list):
    eos = eos[0]
if eos is not None:
    writer.add_eos_token_id(eos)
writer.add_add_bos_token(False)


def add(name: str, data: np.ndarray) -> None:
    data = np.ascontiguousarray(data, dtype=np.float32)
    # Q8_0 packs rows in blocks of 32; a row length that is not a multiple stays float32, as
    # llama.cpp's own converter does (the small draft's 344-wide MLP).
    block = gguf.GGML_QUANT_SIZES[quant][0]
    if data.ndim == 1 or quant == gguf.GGMLQuantizationType.F32 or data.shape[-1] % block:
        writer.add_tensor(name, data)
    else:
        writer.add_tensor(name, gguf.quants.quantize(data, quant), raw_dtype=quant)


add("token_embd.weight", weights["model.embed_tokens.weight"])
add("output_norm.weight", weights["model.norm.weight"])
if "lm_head.weight" in weights and not config.get("tie_word_embeddings", False):
    add("output.weight", weights["lm_head.weight"])
for i in range(layers):
    p = f"model.layers.{i}."
    q = weights[p + "self_attn.q_proj.weight"]
    k = weights[p + "self_attn.k_proj.weight"]
    if arch == "llama":
        q, k = to_interleaved(q, heads), to_interleaved(k, kv_heads)
    add(f"blk.{i}.attn_norm.weight", weights[p + "input_layernorm.weight"])
    add(f"blk.{i}.attn_q.weight", q)
    add(f"blk.{i}.attn_k.weight", k)
    add(f"blk.{i}.attn_v.weight", weights[p + "self_attn.v_proj.weight"])
    if arch == "qwen2":
        for part in ("q", "k", "v"):
            add(f"blk.{i}.attn_{part}.bias", weights[p + f"self_attn.{part}_proj.bias"])
    add(f"blk.{i}.attn_output.weight", weights[p + "self_attn.o_proj.weight"])
    add(f"blk.{i}.ffn_norm.weight", weights[p + "post_attention_layernorm.weight"])
    add(f"blk.{i}.ffn_gate.weight", weights[p + "mlp.gate_proj.weight"])
    add(f"blk.{i}.ffn_up.weight", weights[p + "mlp.up_proj.weight"])
    add(f"blk.{i}.ffn_down.weight", weights[p + "mlp.down_proj.weight"])

writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()
