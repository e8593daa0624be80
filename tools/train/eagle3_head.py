"""An EAGLE-3 draft head in PyTorch, in the published layout (config `LlamaForCausalLMEagle3`,
tensors `fc`, `midlayer.*`, `norm`, `lm_head`, `d2t`, `t2d`), written from the method's description.

The head drafts for a target model from the target's own hidden states:
  - features of position t = the outputs of three target decoder layers (named in the config's
    `eagle_config.eagle_aux_hidden_state_layer_ids`), concatenated low -> high, projected by `fc`
    [H, 3 * H_target] to the head's width;
  - at position t the head's one decoder layer reads [input_layernorm(embed(token t+1)),
    hidden_norm(h)] (width 2H) into q/k/v, attends causally (RoPE as the target's), adds o_proj's
    output to h (the residual is the hidden input, not the embedding), then
    post_attention_layernorm + SiLU MLP + residual; `norm` + `lm_head` give logits over the draft
    vocabulary, predicting token t+2; draft id i is target id i + d2t[i];
  - depth 0 uses h = fc(features of t); a deeper node uses its parent's output (before `norm`) as
    h, sits one position further on, and attends to the committed positions plus its ancestors.

The embedding is the target's (frozen), so the head carries no `embed_tokens.weight`, unless the head is
narrower than the target: then it carries its own `embed_tokens.weight` [vocab, H] (trained).

`unroll` runs EAGLE-3's training-time test: step 0 over every position of a sequence, then steps
1..K-1 where each position continues from its own previous-step output with the next ground-truth
token; a step-k query attends to the step-0 keys of positions <= its own and to the keys of its own
position at steps 1..k (the diagonal extension of the causal mask), which is exactly the view a
depth-k tree node has at inference time.
"""
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

import model as M

ARCHITECTURE = "LlamaForCausalLMEagle3"


def head_config(target_cfg, layer_ids, draft_vocab_size, intermediate_size=None, hidden_size=None):
    """The head's config.json. hidden_size defaults to the target's (the head then borrows the
    target's embedding); a narrower head carries its own embedding table and keeps the target's
    head_dim with proportionally fewer attention heads."""
    t = target_cfg
    hs = hidden_size or t["hidden_size"]
    if hs % t["head_dim"]:
        raise SystemExit(f"head width {hs} is not a multiple of the target's head_dim {t['head_dim']}")
    heads = hs // t["head_dim"]
    kv_heads = max(1, heads * t["num_key_value_heads"] // t["num_attention_heads"])
    return {
        "architectures": [ARCHITECTURE],
        "model_type": "llama",
        "vocab_size": t["vocab_size"],
        "draft_vocab_size": draft_vocab_size,
        "hidden_size": hs,
        "target_hidden_size": t["hidden_size"],
        "intermediate_size": intermediate_size or t["intermediate_size"],
        "num_hidden_layers": 1,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": t["head_dim"],
        "hidden_act": "silu",
        "rms_norm_eps": t["rms_norm_eps"],
        "rope_theta": t["rope_theta"],
        "rope_scaling": None,
        "max_position_embeddings": t["max_position_embeddings"],
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "bos_token_id": t["bos_token_id"],
        "eos_token_id": t["eos_token_id"],
        "torch_dtype": "float32",
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": list(layer_ids), "use_aux_hidden_state": True},
    }


class MidAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.h, self.kvh, self.d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        hs = c["hidden_size"]
        self.q_proj = nn.Linear(2 * hs, self.h * self.d, bias=False)
        self.k_proj = nn.Linear(2 * hs, self.kvh * self.d, bias=False)
        self.v_proj = nn.Linear(2 * hs, self.kvh * self.d, bias=False)
        self.o_proj = nn.Linear(self.h * self.d, hs, bias=False)


class MidLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        hs, eps = c["hidden_size"], c["rms_norm_eps"]
        self.input_layernorm = M.RMSNorm(hs, eps)
        self.hidden_norm = M.RMSNorm(hs, eps)
        self.post_attention_layernorm = M.RMSNorm(hs, eps)
        self.self_attn = MidAttention(c)
        self.mlp = M.MLP(c)


class Eagle3Head(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        hs = c["hidden_size"]
        self.fc = nn.Linear(3 * c["target_hidden_size"], hs, bias=False)
        # Its own token embedding only when it is narrower than the target (it cannot borrow the target's).
        self.embed_tokens = nn.Embedding(c["vocab_size"], hs) if hs != c["target_hidden_size"] else None
        self.midlayer = MidLayer(c)
        self.norm = M.RMSNorm(hs, c["rms_norm_eps"])
        self.lm_head = nn.Linear(hs, c["draft_vocab_size"], bias=False)
        self.register_buffer("d2t", torch.zeros(c["draft_vocab_size"], dtype=torch.int64))
        self.register_buffer("t2d", torch.zeros(c["vocab_size"], dtype=torch.bool))
        d = c["head_dim"]
        inv_freq = 1.0 / (c["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02 / (math.sqrt(2) if name.endswith(("o_proj.weight", "down_proj.weight")) else 1))

    def num_parameters(self):
        return sum(p.numel() for p in self.parameters())

    def set_vocab(self, draft_to_target):
        """draft_to_target[i] = target id of draft id i (ascending target ids)."""
        ids = torch.as_tensor(draft_to_target, dtype=torch.int64)
        self.d2t.copy_(ids - torch.arange(ids.numel()))
        self.t2d.zero_()
        self.t2d[ids] = True

    def draft_ids(self):
        return torch.arange(self.d2t.numel()) + self.d2t

    def rope(self, positions):
        freqs = positions.float()[..., None] * self.inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos()[:, None], emb.sin()[:, None]  # [B, 1, T, d]: broadcast over heads

    def step(self, emb, hidden, positions, cache, first=0):
        """One unrolled step. emb, hidden [B, T, H]; positions [B, T]. cache: {} before step 0
        (filled with step 0's keys/values), then carries the diagonal keys/values of steps 1..k.
        After step 0 the rows may be a suffix of the sequence, starting at index `first` (a chain
        that only continues the last position). Returns the layer output before `norm`."""
        L, a = self.midlayer, self.midlayer.self_attn
        b, t, _ = hidden.shape
        x = torch.cat((L.input_layernorm(emb), L.hidden_norm(hidden)), dim=-1)
        cos, sin = self.rope(positions)
        q = a.q_proj(x).view(b, t, a.h, a.d).transpose(1, 2)
        k = a.k_proj(x).view(b, t, a.kvh, a.d).transpose(1, 2)
        v = a.v_proj(x).view(b, t, a.kvh, a.d).transpose(1, 2)
        q = q * cos + M.rotate_half(q) * sin
        k = k * cos + M.rotate_half(k) * sin
        rep = a.h // a.kvh

        def heads(z):  # [B, kvH, T, d] -> [B, H, T, d]; query head i uses kv head i // rep
            return z[:, :, None].expand(b, a.kvh, rep, t, a.d).reshape(b, a.h, t, a.d) if rep > 1 else z

        if "k0" not in cache:
            cache["k0"], cache["v0"], cache["diag"] = heads(k), heads(v), []
        else:
            cache["diag"].append((heads(k), heads(v)))
        scale = 1.0 / math.sqrt(a.d)
        n = cache["k0"].size(2)
        s0 = (q @ cache["k0"].transpose(-1, -2)) * scale
        s0 = s0.masked_fill(torch.ones(t, n, dtype=torch.bool).triu(1 + first), float("-inf"))
        sd = [(q * kd).sum(-1, keepdim=True) * scale for kd, _ in cache["diag"]]
        p = torch.cat([s0] + sd, dim=-1).softmax(-1)
        y = p[..., :n] @ cache["v0"]
        for i, (_, vd) in enumerate(cache["diag"]):
            y = y + p[..., n + i:n + i + 1] * vd
        y = y.transpose(1, 2).reshape(b, t, a.h * a.d)
        h = hidden + a.o_proj(y)
        return h + L.mlp(L.post_attention_layernorm(h))

    def logits(self, out):
        return self.lm_head(self.norm(out))

    def embedding(self, target_embed):
        """The embedding the head reads tokens through: its own, or the target's it borrows."""
        return self.embed_tokens if self.embed_tokens is not None else target_embed

    def unroll(self, features, embed, tokens, steps):
        """Training-time test. features [B, T, 3*H_t] of positions 0..T-1 of a sequence x;
        tokens = x[:, 1:] (at least T + steps - 1 long). Step k at position i reads token
        x[i + k + 1] and predicts x[i + k + 2]. Returns the per-step outputs (before `norm`)."""
        b, t, _ = features.shape
        hidden = self.fc(features)
        positions = torch.arange(t).expand(b, t)
        cache, outs = {}, []
        for k in range(steps):
            hidden = self.step(embed(tokens[:, k:k + t]), hidden, positions + k, cache)
            outs.append(hidden)
        return outs

    def hf_state_dict(self):
        sd = {k: v.detach().contiguous() for k, v in self.state_dict().items()}
        return {k: (v.float() if v.is_floating_point() else v) for k, v in sd.items()}


def target_features(target, ids, layer_ids):
    """Runs the target; returns (logits [B, T, V], features [B, T, 3*H]) where the features are
    the outputs of decoder layers `layer_ids` (0-based), concatenated in that order."""
    b, t = ids.shape
    positions = torch.arange(t)
    freqs = positions.float()[:, None] * target.inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    mask = torch.ones(t, t, dtype=torch.bool).triu(1)
    x = target.model.embed_tokens(ids)
    feats = []
    for i, layer in enumerate(target.model.layers):
        x = layer(x, cos, sin, mask)
        if i in layer_ids:
            feats.append((layer_ids.index(i), x))
    feats = [f for _, f in sorted(feats, key=lambda p: p[0])]
    return target.lm_head(target.model.norm(x)), torch.cat(feats, dim=-1)


def save_folder(head, out, target_folder, extra_files=("tokenizer.json", "tokenizer_config.json", "generation_config.json")):
    import shutil
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as fh:
        json.dump(head.config, fh, indent=2)
    M.save_safetensors(head.hf_state_dict(), os.path.join(out, "model.safetensors"), {"format": "pt"})
    for name in extra_files:
        src = os.path.join(target_folder, name)
        if os.path.exists(src):
            shutil.copy(src, os.path.join(out, name))


def load_folder(folder):
    with open(os.path.join(folder, "config.json")) as fh:
        c = json.load(fh)
    if ARCHITECTURE not in c.get("architectures", []):
        raise SystemExit(f"{folder}: not an EAGLE-3 head (architectures {c.get('architectures')})")
    head = Eagle3Head(c)
    sd = M.load_safetensors(os.path.join(folder, "model.safetensors"))
    sd = {k[len("model."):] if k.startswith("model.") else k: v for k, v in sd.items()}
    head.load_state_dict(sd, strict=True)
    return head


def layer_ids_of(head_cfg):
    return list(head_cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"])
