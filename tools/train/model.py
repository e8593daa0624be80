"""A Llama decoder in PyTorch that follows the Hugging Face LlamaForCausalLM conventions exactly
(parameter names, RoPE rotate_half, RMSNorm, SiLU-gated MLP, grouped-query attention), and a
safetensors writer/reader (the `safetensors` package is not needed)."""
import json
import math
import os
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def hf_config(vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
              num_key_value_heads, max_position_embeddings=1024, rope_theta=10000.0, rms_norm_eps=1e-5,
              tie_word_embeddings=True, bos_token_id=0, eos_token_id=0):
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": vocab_size,
        "hidden_size": hidden_size,
        "intermediate_size": intermediate_size,
        "num_hidden_layers": num_hidden_layers,
        "num_attention_heads": num_attention_heads,
        "num_key_value_heads": num_key_value_heads,
        "head_dim": hidden_size // num_attention_heads,
        "hidden_act": "silu",
        "rms_norm_eps": rms_norm_eps,
        "rope_theta": rope_theta,
        "rope_scaling": None,
        "max_position_embeddings": max_position_embeddings,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        "tie_word_embeddings": tie_word_embeddings,
        "bos_token_id": bos_token_id,
        "eos_token_id": eos_token_id,
        "initializer_range": 0.02,
        "use_cache": True,
        "torch_dtype": "float32",
    }


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.h, self.kvh, self.d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        hs = c["hidden_size"]
        self.q_proj = nn.Linear(hs, self.h * self.d, bias=False)
        self.k_proj = nn.Linear(hs, self.kvh * self.d, bias=False)
        self.v_proj = nn.Linear(hs, self.kvh * self.d, bias=False)
        self.o_proj = nn.Linear(self.h * self.d, hs, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kvh, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kvh, self.d).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.h // self.kvh
        if rep > 1:  # HF repeat_kv: query head i uses kv head i // rep
            k = k[:, :, None].expand(b, self.kvh, rep, t, self.d).reshape(b, self.h, t, self.d)
            v = v[:, :, None].expand(b, self.kvh, rep, t, self.d).reshape(b, self.h, t, self.d)
        att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(self.d))
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, self.h * self.d)
        return self.o_proj(y)


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        hs, im = c["hidden_size"], c["intermediate_size"]
        self.gate_proj = nn.Linear(hs, im, bias=False)
        self.up_proj = nn.Linear(hs, im, bias=False)
        self.down_proj = nn.Linear(im, hs, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = Attention(c)
        self.mlp = MLP(c)
        self.input_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.post_attention_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Backbone(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])


class LlamaForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.model = Backbone(c)
        self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        if c["tie_word_embeddings"]:
            self.lm_head.weight = self.model.embed_tokens.weight
        d = c["head_dim"]
        inv_freq = 1.0 / (c["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self._init()

    def _init(self):
        std = self.config["initializer_range"]
        resid_std = std / math.sqrt(2 * self.config["num_hidden_layers"])
        for name, p in self.named_parameters():
            if p.dim() == 2:
                s = resid_std if name.endswith(("o_proj.weight", "down_proj.weight")) else std
                nn.init.normal_(p, 0.0, s)

    def num_parameters(self):
        return sum(p.numel() for p in self.parameters())  # tied weights counted once

    def forward(self, ids, positions=None):
        b, t = ids.shape
        if positions is None:
            positions = torch.arange(t)
        freqs = positions.float()[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)
        x = self.model.embed_tokens(ids)
        for layer in self.model.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.model.norm(x))

    def hf_state_dict(self):
        sd = {k: v.detach().contiguous().float() for k, v in self.state_dict().items()}
        if self.config["tie_word_embeddings"]:
            sd.pop("lm_head.weight", None)
        return sd


_ST_DTYPES = {"F32": "<f4", "F16": "<f2", "I64": "<i8", "BOOL": "|b1"}


def save_safetensors(tensors, path, metadata=None, float_tag="F32"):
    """safetensors: u64 little-endian header length, JSON header, raw little-endian data.
    Floating tensors are written as `float_tag` (F32, or F16 to halve what the repository stores;
    the runtime computes in float32 either way); int64 tensors as I64 and bool tensors as BOOL (the
    vocabulary maps of an EAGLE-3 head). The file is written under a temporary name and renamed."""
    assert float_tag in ("F32", "F16"), float_tag
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    for name in sorted(tensors):
        t = tensors[name].detach().cpu()
        if t.dtype == torch.bool:
            tag = "BOOL"
        elif t.dtype == torch.int64:
            tag = "I64"
        else:
            tag = float_tag
        a = t.float().numpy() if tag in ("F32", "F16") else t.numpy()
        a = a.astype(_ST_DTYPES[tag], copy=False)
        b = np.ascontiguousarray(a).tobytes()
        header[name] = {"dtype": tag, "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)  # pad so the data starts 8-byte aligned
    tmp = path + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(struct.pack("<Q", len(h)))
        fh.write(h)
        for b in blobs:
            fh.write(b)
    os.replace(tmp, path)


def read_safetensors(path):
    """name -> NumPy array; F16 weights are widened to float32, as the runtime does."""
    with open(path, "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]
        header = json.loads(fh.read(n))
        data = fh.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] in _ST_DTYPES, info
        s, e = info["data_offsets"]
        a = np.frombuffer(data[s:e], dtype=_ST_DTYPES[info["dtype"]]).reshape(info["shape"])
        out[name] = a.astype(np.float32) if info["dtype"] == "F16" else a.copy()
    return out


def safetensors_float_tag(path):
    """The tag the floating tensors of a safetensors file are stored in (F32 or F16)."""
    with open(path, "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]
        header = json.loads(fh.read(n))
    tags = {v["dtype"] for k, v in header.items() if k != "__metadata__" and v["dtype"] in ("F32", "F16")}
    return "F16" if tags == {"F16"} else "F32"


def load_safetensors(path):
    return {name: torch.from_numpy(a) for name, a in read_safetensors(path).items()}


def load_hf_folder(folder):
    with open(f"{folder}/config.json") as fh:
        c = json.load(fh)
    m = LlamaForCausalLM(c)
    sd = load_safetensors(f"{folder}/model.safetensors")
    if c["tie_word_embeddings"]:
        sd["lm_head.weight"] = sd["model.embed_tokens.weight"]
    m.load_state_dict(sd, strict=True)
    return m
