#!/usr/bin/env python3
"""Byte-level BPE: trainer, encoder and Hugging Face tokenizer.json writer.

Pre-tokenization is the GPT-2 pattern used by the Hugging Face ByteLevel pre-tokenizer
(use_regex true):
    's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+
Python's `re` has no \\p{..} classes, so the letter and number classes are built here from
unicodedata categories (L*, N*) and \\s is spelled out as JavaScript's whitespace set, so that
the split is the same as in JavaScript (tokenizers.js) and Rust (tokenizers).
"""
import heapq
import json
import re
import sys
import unicodedata
from collections import Counter

EOT = "<|endoftext|>"


def _ranges(pred):
    out, start, prev = [], None, None
    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            ok = False
        else:
            ok = pred(chr(cp))
        if ok and start is None:
            start = cp
        if not ok and start is not None:
            out.append((start, cp - 1))
            start = None
    if start is not None:
        out.append((start, sys.maxunicode))
    return "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in out)


_L = _ranges(lambda c: unicodedata.category(c).startswith("L"))
_N = _ranges(lambda c: unicodedata.category(c).startswith("N"))
# JavaScript's \s (ECMAScript WhiteSpace + LineTerminator)
_S = "\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
PRETOKENIZE = re.compile(
    rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{_L}]+| ?[{_N}]+| ?[^{_S}{_L}{_N}]+|[{_S}]+(?![^{_S}])|[{_S}]+"
)


def bytes_to_unicode():
    """GPT-2's reversible map from bytes to printable unicode characters."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    mapping, extra = {}, 0
    for b in range(256):
        if b in keep:
            mapping[b] = chr(b)
        else:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


B2U = bytes_to_unicode()


def pretokenize(text):
    return ["".join(B2U[b] for b in w.encode("utf-8")) for w in PRETOKENIZE.findall(text)]


def train(texts, vocab_size, log=print):
    """Learn merges until the vocabulary (special + 256 bytes + merges) has vocab_size entries."""
    freq = Counter()
    for t in texts:
        freq.update(pretokenize(t))
    log(f"bpe: {len(freq)} distinct pre-tokens")
    symbols = [EOT] + [B2U[b] for b in range(256)]
    sym_id = {s: i for i, s in enumerate(symbols)}
    words = [[sym_id[ch] for ch in w] for w in freq]
    counts = list(freq.values())
    pair_count = Counter()
    where = {}
    for wi, (w, c) in enumerate(zip(words, counts)):
        for p in zip(w, w[1:]):
            pair_count[p] += c
            where.setdefault(p, set()).add(wi)
    heap = [(-c, symbols[p[0]], symbols[p[1]], p) for p, c in pair_count.items()]
    heapq.heapify(heap)
    merges = []
    while len(symbols) < vocab_size and heap:
        negc, _, _, p = heapq.heappop(heap)
        if pair_count.get(p, 0) != -negc or negc == 0:
            continue  # stale entry
        a, b = p
        new = symbols[a] + symbols[b]
        merges.append((symbols[a], symbols[b]))
        if new in sym_id:
            nid = sym_id[new]
        else:
            nid = len(symbols)
            symbols.append(new)
            sym_id[new] = nid
        changed = set()
        for wi in where.pop(p, ()):
            w = words[wi]
            if len(w) < 2:
                continue
            c = counts[wi]
            has = False
            for q in zip(w, w[1:]):
                if q == p:
                    has = True
                    break
            if not has:
                continue
            for q in zip(w, w[1:]):
                pair_count[q] -= c
                changed.add(q)
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(nid)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            words[wi] = out
            for q in zip(out, out[1:]):
                pair_count[q] += c
                changed.add(q)
                where.setdefault(q, set()).add(wi)
        pair_count.pop(p, None)
        for q in changed:
            if q == p:
                continue
            c = pair_count.get(q, 0)
            if c > 0:
                heapq.heappush(heap, (-c, symbols[q[0]], symbols[q[1]], q))
            else:
                pair_count.pop(q, None)
        if len(merges) % 500 == 0:
            log(f"bpe: {len(merges)} merges, vocab {len(symbols)}")
    return symbols, merges


class Encoder:
    def __init__(self, symbols, merges):
        self.vocab = {s: i for i, s in enumerate(symbols)}
        self.ranks = {m: i for i, m in enumerate(merges)}
        self.cache = {}
        self.eot = self.vocab[EOT]
        # For decode: built once, not per call (callers decode token by token).
        self._symbol_of = {i: s for s, i in self.vocab.items()}
        self._byte_of = {u: b for b, u in B2U.items()}

    def _bpe(self, word):
        parts = list(word)
        while len(parts) > 1:
            best, bi = None, -1
            for i in range(len(parts) - 1):
                r = self.ranks.get((parts[i], parts[i + 1]))
                if r is not None and (best is None or r < best):
                    best, bi = r, i
            if best is None:
                break
            a, b = parts[bi], parts[bi + 1]
            out, i = [], 0
            while i < len(parts):
                if i + 1 < len(parts) and parts[i] == a and parts[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(parts[i])
                    i += 1
            parts = out
        return [self.vocab[p] for p in parts]

    def encode(self, text):
        """Encode like the HF tokenizer: <|endoftext|> in the text is the special token."""
        ids = []
        for k, piece in enumerate(text.split(EOT)):
            if k:
                ids.append(self.eot)
            ids.extend(self._encode_plain(piece))
        return ids

    def _encode_plain(self, text):
        ids = []
        for w in pretokenize(text):
            r = self.cache.get(w)
            if r is None:
                r = self._bpe(w)
                self.cache[w] = r
            ids.extend(r)
        return ids

    def decode(self, ids):
        out = bytearray()
        for i in ids:
            s = self._symbol_of[i]
            if s == EOT:
                out += s.encode()
            else:
                out += bytes(self._byte_of[ch] for ch in s)
        return out.decode("utf-8", errors="replace")


def tokenizer_json(symbols, merges):
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{
            "id": 0, "content": EOT, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True,
        }],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": {s: i for i, s in enumerate(symbols)},
            "merges": [f"{a} {b}" for a, b in merges],
        },
    }


def tokenizer_config(max_len):
    return {
        "add_bos_token": True,
        "add_eos_token": False,
        "add_prefix_space": False,
        "bos_token": EOT,
        "eos_token": EOT,
        "unk_token": None,
        "pad_token": None,
        "clean_up_tokenization_spaces": False,
        "model_max_length": max_len,
        "tokenizer_class": "PreTrainedTokenizerFast",
        "added_tokens_decoder": {"0": {
            "content": EOT, "lstrip": False, "normalized": False, "rstrip": False,
            "single_word": False, "special": True,
        }},
    }


def load(path):
    with open(path, encoding="utf-8") as fh:
        tj = json.load(fh)
    vocab = tj["model"]["vocab"]
    symbols = [None] * len(vocab)
    for s, i in vocab.items():
        symbols[i] = s
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in tj["model"]["merges"]]
    return Encoder(symbols, merges)
