"""A plain PyTorch EAGLE-3 draft head and its target, written from the published description
(docs/model-runtime.md, "EAGLE-3 draft heads"), to check the engine's ONNX head against.

Given a head folder and a target folder (Hugging Face Llama or Qwen3 layout, safetensors), it
computes, teacher-forced over a token sequence x_0 … x_n:
  - the target's features h_p of x_p (p < n): its residual stream entering the layers the head
    reads, concatenated;
  - depth 0: head row p reads fc(h_p) and the embedding of x_{p+1} at position p and predicts
    x_{p+2}: its top-k over the draft vocabulary, as target ids;
  - depth 1: after the last row, the row for the depth-0 top-1 token c reads c's embedding and the
    last row's pre-norm output, at position n, and predicts the token after c.

    /usr/bin/python3 tools/eagle3/reference.py HEAD_DIR TARGET_DIR --tokens 5,9,2,7 [--topk 5]

prints JSON {"depth0": [{"ids", "logprobs", "logits"}] per row, "depth1": {"token", "ids", "logprobs", "logits"}}.
Needs only torch and numpy (safetensors files are read here).
"""
import argparse
import json
import math
import os
import struct

import numpy as np
import torch

DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32, "BOOL": np.bool_, "U8": np.uint8}


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        if t["dtype"] == "BF16":
            raw = np.frombuffer(data[begin:end], dtype=np.uint16).astype(np.uint32) << 16
            arr = raw.view(np.float32)
        else:
            arr = np.frombuffer(data[begin:end], dtype=DTYPES[t["dtype"]])
        out[name] = arr.reshape(t["shape"]).copy()
    return out


def read_folder(folder):
    single = os.path.join(folder, "model.safetensors")
    if os.path.exists(single):
        tensors = read_safetensors(single)
    else:
        with open(os.path.join(folder, "model.safetensors.index.json")) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
        tensors = {}
        for name in files:
            tensors.update(read_safetensors(os.path.join(folder, name)))
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    return config, tensors


def f32(a):
    return torch.tensor(np.asarray(a, dtype=np.float32))


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def inv_freq(config, head_dim):
    theta = config.get("rope_theta", 10000.0)
    base = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    scaling = config.get("rope_scaling")
    if not scaling:
        return base
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "linear":
        return base / scaling["factor"]
    if kind != "llama3":
        return base
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    orig = scaling["original_max_position_embeddings"]
    out = []
    for f in base.tolist():
        wavelen = 2 * math.pi / f
        if wavelen < orig / high:
            out.append(f)
        elif wavelen > orig / low:
            out.append(f / factor)
        else:
            smooth = (orig / wavelen - low) / (high - low)
            out.append((1 - smooth) * f / factor + smooth * f)
    return torch.tensor(out, dtype=torch.float64)


def rope(x, positions, freqs):
    """x [T, heads, hd]; rotate-half RoPE at the given positions."""
    ang = positions.to(torch.float64)[:, None] * freqs[None, :]
    ang = torch.cat([ang, ang], dim=-1).to(torch.float32)[:, None, :]
    x1, x2 = x.chunk(2, dim=-1)
    return x * ang.cos() + torch.cat([-x2, x1], dim=-1) * ang.sin()


class Layer:
    """One decoder layer's weights, read from `get(name)`; `width` is what q/k/v read."""

    def __init__(self, get, prefix, config, width, qk_norm=False):
        self.c = config
        self.heads = config["num_attention_heads"]
        self.kv_heads = config.get("num_key_value_heads", self.heads)
        self.hd = config.get("head_dim") or config["hidden_size"] // self.heads
        self.eps = config.get("rms_norm_eps", 1e-6)
        self.width = width
        self.qk_norm = qk_norm
        p = prefix
        self.w = {k: f32(get(p + k)) for k in [
            "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight",
            "post_attention_layernorm.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"]}
        bias = config.get("attention_bias", False)
        for k in ["q", "k", "v"]:
            self.w[f"{k}_bias"] = f32(get(p + f"self_attn.{k}_proj.bias")) if bias else None
        self.w["o_bias"] = f32(get(p + "self_attn.o_proj.bias")) if bias and not qk_norm else None
        if qk_norm:
            self.w["q_norm"] = f32(get(p + "self_attn.q_norm.weight"))
            self.w["k_norm"] = f32(get(p + "self_attn.k_norm.weight"))
        self.freqs = inv_freq(config, self.hd)

    def attention(self, x, positions, cache):
        """x [T, width] new rows; cache = (K, V) lists of earlier rows [heads, hd]; causal over them."""
        w = self.w

        def lin(name, b):
            y = x @ w[name].T
            return y if b is None else y + b

        T = x.shape[0]
        q = lin("self_attn.q_proj.weight", w["q_bias"]).view(T, self.heads, self.hd)
        k = lin("self_attn.k_proj.weight", w["k_bias"]).view(T, self.kv_heads, self.hd)
        v = lin("self_attn.v_proj.weight", w["v_bias"]).view(T, self.kv_heads, self.hd)
        if self.qk_norm:
            q = rms_norm(q, w["q_norm"], self.eps)
            k = rms_norm(k, w["k_norm"], self.eps)
        q = rope(q, positions, self.freqs)
        k = rope(k, positions, self.freqs)
        past = len(cache[0])
        cache[0].extend(k)
        cache[1].extend(v)
        K = torch.stack(cache[0])  # [S, kvH, hd]
        V = torch.stack(cache[1])
        group = self.heads // self.kv_heads
        K = K.repeat_interleave(group, dim=1)
        V = V.repeat_interleave(group, dim=1)
        scores = torch.einsum("thd,shd->hts", q, K) / math.sqrt(self.hd)
        S = K.shape[0]
        mask = torch.full((T, S), float("-inf"))
        for t in range(T):
            mask[t, : past + t + 1] = 0
        probs = torch.softmax(scores + mask[None], dim=-1)
        ctx = torch.einsum("hts,shd->thd", probs, V).reshape(T, self.heads * self.hd)
        o = ctx @ w["self_attn.o_proj.weight"].T
        return o if w["o_bias"] is None else o + w["o_bias"]

    def finish(self, h):
        w = self.w
        y = rms_norm(h, w["post_attention_layernorm.weight"], self.eps)
        gate = y @ w["mlp.gate_proj.weight"].T
        up = y @ w["mlp.up_proj.weight"].T
        return h + (torch.nn.functional.silu(gate) * up) @ w["mlp.down_proj.weight"].T


class Target:
    def __init__(self, folder):
        self.config, t = read_folder(folder)
        c = self.config
        self.L = c["num_hidden_layers"]
        qwen3 = "Qwen3ForCausalLM" in c.get("architectures", []) or c.get("model_type") == "qwen3"
        self.layers = []
        for i in range(self.L):
            layer = Layer(lambda n: t[n], f"model.layers.{i}.", c, c["hidden_size"], qk_norm=qwen3)
            layer.in_norm = f32(t[f"model.layers.{i}.input_layernorm.weight"])
            self.layers.append(layer)
        self.embed = f32(t["model.embed_tokens.weight"])
        self.eps = c.get("rms_norm_eps", 1e-6)

    def features(self, tokens, boundaries):
        """Residual stream entering each boundary layer (L = after the last), concatenated, for every token."""
        h = self.embed[torch.tensor(tokens)]
        positions = torch.arange(len(tokens))
        grabbed = {}
        for i, layer in enumerate(self.layers):
            if i in boundaries:
                grabbed[i] = h
            x = rms_norm(h, layer.in_norm, self.eps)
            h = h + layer.attention(x, positions, ([], []))
            h = layer.finish(h)
        grabbed[self.L] = h
        return torch.cat([grabbed[b] for b in boundaries], dim=-1)


def head_tensor(tensors, name):
    names = [name, "model." + name]
    if name.startswith("midlayer."):
        rest = name[len("midlayer."):]
        names += ["layers.0." + rest, "model.layers.0." + rest]
    for n in names:
        if n in tensors:
            return tensors[n]
    raise KeyError(f"missing tensor {name}")


class Head:
    def __init__(self, folder, target):
        self.config, t = read_folder(folder)
        c = self.config
        get = lambda n: head_tensor(t, n)
        self.eps = c.get("rms_norm_eps", 1e-6)
        L = target.L
        ids = (c.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids")
        self.boundaries = [i + 1 for i in ids] if ids else [2, L // 2, L - 3]
        H = c["hidden_size"]
        self.layers = [Layer(get, "midlayer.", c, 2 * H)]
        self.input_norm = f32(get("midlayer.input_layernorm.weight"))
        self.hidden_norm = f32(get("midlayer.hidden_norm.weight"))
        for i in range(1, c["num_hidden_layers"]):
            layer = Layer(get, f"layers.{i}.", c, H)
            layer.in_norm = f32(get(f"layers.{i}.input_layernorm.weight"))
            self.layers.append(layer)
        self.fc = f32(get("fc.weight"))
        self.fc_bias = f32(get("fc.bias")) if c.get("bias") else None
        self.norm = f32(get("norm.weight"))
        self.lm_head = f32(get("lm_head.weight"))
        try:
            self.embed = f32(get("embed_tokens.weight"))
        except KeyError:
            self.embed = target.embed
        vd = self.lm_head.shape[0]
        try:
            self.d2t = torch.arange(vd) + torch.tensor(get("d2t").astype(np.int64))
        except KeyError:
            self.d2t = torch.arange(vd)
        self.caches = [([], []) for _ in self.layers]

    def rows(self, tokens, incoming, positions):
        """Head rows for `tokens` with incoming hidden states [T, H]; returns (pre-norm out, draft logits)."""
        e = self.embed[torch.tensor(tokens)]
        x = torch.cat([rms_norm(e, self.input_norm, self.eps), rms_norm(incoming, self.hidden_norm, self.eps)], dim=-1)
        first = self.layers[0]
        h = first.finish(incoming + first.attention(x, positions, self.caches[0]))
        for layer, cache in zip(self.layers[1:], self.caches[1:]):
            x = rms_norm(h, layer.in_norm, self.eps)
            h = layer.finish(h + layer.attention(x, positions, cache))
        logits = rms_norm(h, self.norm, self.eps) @ self.lm_head.T
        return h, logits

    def fc_of(self, features):
        y = features @ self.fc.T
        return y if self.fc_bias is None else y + self.fc_bias


def top(logits, d2t, k):
    logprobs = torch.log_softmax(logits.to(torch.float64), dim=-1)
    values, idx = torch.topk(logprobs, k)
    return {"ids": d2t[idx].tolist(), "logprobs": values.tolist(), "logits": logits[idx].tolist()}


def run(head_dir, target_dir, tokens, k):
    target = Target(target_dir)
    head = Head(head_dir, target)
    n = len(tokens) - 1
    feats = target.features(tokens[:n], head.boundaries)
    out, logits = head.rows(tokens[1:], head.fc_of(feats), torch.arange(n))
    depth0 = [top(logits[p], head.d2t, k) for p in range(n)]
    c = depth0[-1]["ids"][0]
    _, logits1 = head.rows([c], out[n - 1 : n], torch.tensor([n]))
    depth1 = dict(top(logits1[0], head.d2t, k), token=c)
    return {"boundaries": head.boundaries, "depth0": depth0, "depth1": depth1}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("head")
    ap.add_argument("target")
    ap.add_argument("--tokens", required=True, help="comma-separated target token ids, at least 2")
    ap.add_argument("--topk", type=int, default=5)
    a = ap.parse_args()
    tokens = [int(t) for t in a.tokens.split(",")]
    if len(tokens) < 2:
        ap.error("--tokens needs at least 2 ids")
    with torch.no_grad():
        print(json.dumps(run(a.head, a.target, tokens, a.topk)))


if __name__ == "__main__":
    main()
