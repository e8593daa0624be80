"""Render assets/models/README.md (the model card) from card.json."""
import json
import sys

DOMAINS = ("code", "prose", "math")


def _fmt_int(n):
    return f"{n:,}" if isinstance(n, int) else "n/a"


def _head_section(L, card):
    h, ev = card["models"]["head"], card["head_evaluation"]
    c, tr = h["config"], h["training"]
    L.append("## EAGLE-3 draft head\n")
    L.append(f"`{h['folder']}` is a second drafter for the same target: an EAGLE-3 head (`{c['architectures'][0]}`,")
    L.append("the published folder layout: `fc`, one decoder layer `midlayer.*` whose q/k/v read the normed token")
    L.append("embedding and the normed hidden state side by side, `norm`, `lm_head` over a draft vocabulary,")
    L.append("`d2t`/`t2d`; no `embed_tokens`, the target's embedding is used). It drafts from the target's own hidden")
    L.append(f"states: the outputs of target layers {c['eagle_aux_hidden_state_layer_ids']} (0-based; on a target this")
    L.append("shallow EAGLE-3's default layers coincide, so the config names them), projected by `fc` from 3 x "
             f"{c['target_hidden_size']} to {c['hidden_size']}. At a committed position t it reads")
    L.append("those features with the embedding of token t+1 and predicts token t+2; a deeper tree node reads its")
    L.append("parent's output instead of the features.\n")
    L.append(f"- {_fmt_int(h['parameters'])} parameters ({h['size_bytes'] / 1e6:.1f} MB float32): hidden {c['hidden_size']}, "
             f"MLP {c['intermediate_size']}, {c['num_attention_heads']} query / {c['num_key_value_heads']} KV heads of "
             f"{c['head_dim']}, draft vocabulary {c['draft_vocab_size']} of {c['vocab_size']}.")
    if tr.get("steps") is not None:
        cov = tr.get("draft_vocab_coverage")
        L.append(f"- Draft vocabulary: the {tr['draft_vocab']} most frequent tokens of the training streams"
                 + (f" ({100 * cov:.1f}% of training tokens)" if cov else "") + ".")
        L.append(f"- Training: {tr['steps']} steps x {tr['batch']} windows of {tr['seq']} tokens "
                 f"({_fmt_int(tr['positions'])} positions), {tr['train_seconds'] / 60:.1f} min on shared CPU cores "
                 f"(planned {tr['planned_steps']} steps or {tr['time_budget_min']:g} min, whichever came first). "
                 f"The target is frozen and run on every batch for its features and logits. EAGLE-3's training-time "
                 f"test unrolls {tr['ttt_steps']} steps: step k > 0 continues from the head's own step k-1 output, and "
                 f"its attention sees the step-0 keys up to its position plus its own position's keys of steps 1..k. "
                 f"Loss per step: KL(target || head) over the draft vocabulary (the target's distribution restricted "
                 f"to it and renormalised), step k weighted {tr['step_decay']}^k. AdamW (weight decay "
                 f"{tr['weight_decay']}), peak lr {tr['lr']}, {tr['warmup']} warm-up steps, cosine to 10%; "
                 f"`lm_head` and `norm` start from the target's embedding rows and final norm.")
    for note in h.get("notes", []):
        L.append(f"- {note}")
    tf = ev["teacher_forced"]
    L.append("")
    L.append(f"**Teacher-forced agreement with the target** (held-out {tf['window']}-token windows, "
             f"{_fmt_int(tf['per_domain']['code']['head']['positions'])} / "
             f"{_fmt_int(tf['per_domain']['prose']['head']['positions'])} / "
             f"{_fmt_int(tf['per_domain']['math']['head']['positions'])} positions per depth for code / prose / math):")
    L.append("the fraction of positions where the drafter's top token is the target's top token, with the held-out")
    L.append("text as the tokens read. The head sees the target's features only at depth 0, so its agreement falls")
    L.append("with depth; the small draft reads the same tokens at every depth, so its figure stays put (only the")
    L.append("positions shift by one per depth). AUC:")
    L.append("how well the drafter's top probability separates agreeing from disagreeing positions (0.5 = not at all).\n")
    depths = tf["depths"]
    L.append("| domain | drafter | " + " | ".join(f"agreement d{k}" for k in range(depths)) + " | "
             + " | ".join(f"AUC d{k}" for k in range(depths)) + " |")
    L.append("|---|---|" + "---|" * (2 * depths))
    for dom in DOMAINS:
        r = tf["per_domain"][dom]
        fmt = lambda v: "-" if v is None else f"{v:.3f}"
        L.append(f"| {dom} | head | " + " | ".join(fmt(v) for v in r["head"]["top1_agreement"]) + " | "
                 + " | ".join(fmt(v) for v in r["head"]["auc"]) + " |")
        L.append(f"| {dom} | small draft | " + " | ".join(fmt(v) for v in r["draft"]["top1_agreement"]) + " | "
                 + " | ".join(fmt(v) for v in r["draft"]["auc"]) + " |")
    ch = ev["chain"]
    acc = ch.get("draft_per_domain") or card["acceptance"]["per_domain"]
    L.append("")
    L.append(f"**Greedy chain acceptance**, measured as for the small draft above (chain of {ch['chain_length']}, "
             f"{ch['max_new_tokens']} new tokens per prompt), both drafters on the first "
             f"{ch['per_domain']['code']['prompts']} prompts of each set in the same run:\n")
    hdr = " / ".join(str(i) for i in range(ch["chain_length"]))
    L.append(f"| domain | drafter | mean accepted | tokens/step | acceptance at depth {hdr} |")
    L.append("|---|---|---|---|---|")
    for dom in DOMAINS:
        for who, r in (("head", ch["per_domain"][dom]), ("small draft", acc[dom])):
            per = " / ".join("-" if v is None else f"{v:.2f}" for v in r["acceptance_per_depth"])
            L.append(f"| {dom} | {who} | {r['mean_accepted']:.2f} | {r['tokens_per_step']:.2f} | {per} |")
    L.append("")
    L.append(f"The head's exported files were checked against an independent NumPy forward (target features, depth 0 "
             f"at every position and depth 1): max |logit difference| {ev['reference_check_max_abs_logit_diff']:.1e}.\n")
    L.append("Both drafters in the engine, per domain at batch 1, 8 and 32 under chain, static and echo (MAT, tokens/s "
             "on this machine and on a modelled H100 serving a 70B model): `npx echo-studio sweep --draft-kind "
             "model|head …` measures them (docs/reports/2026-12-01-head-vs-draft holds such a comparison for the "
             "previous 5.4M-parameter pair).\n")


def below_knee(prof):
    """What the measured points say about the fit's flat part: the fit alone would claim that a tree
    up to the knee costs one token's time, which a noisy fit can say of a curve that is not flat."""
    curve = prof["target_curve"]
    one = next((p["ms"] for p in curve if p["tokens"] == 1), None)
    at_knee = [p for p in curve if p["tokens"] <= prof["knee_tokens"]]
    if not one or not at_knee:
        return ""
    last = at_knee[-1]
    ratio = last["ms"] / one
    if ratio <= 1.25:
        return (f"Measured, {last['tokens']} tokens cost {ratio:.2f}x one token: below the knee, verifying a tree "
                "costs about one token's time, the regime in which speculation pays.")
    return (f"Measured, {last['tokens']} tokens cost {ratio:.1f}x one token, so on this machine the curve is not "
            "flat below the knee: verifying a tree is cheaper per token than decoding it, but not free, and "
            "speculation pays only where acceptance outruns that growth.")


def write(card, path):
    m, loss, acc = card["models"], card["heldout_loss"], card["acceptance"]
    t, d = m["target"], m["draft"]
    L = []
    L.append("# ECHO demo model pair\n")
    stored = card.get("storage", {})
    dtypes = sorted({stored.get(name, {}).get("stored", "float32") for name in ("target", "draft")})
    L.append("Two small Llama-architecture language models that ship with ECHO Studio so the app runs with")
    L.append("nothing to download: `echo-demo-target` and its draft `echo-demo-draft`. They share one byte-level")
    L.append(f"BPE tokenizer and are stored in the Hugging Face format (config.json, model.safetensors in {' or '.join(dtypes)},")
    L.append("tokenizer.json, tokenizer_config.json, generation_config.json), loaded by the app exactly like a")
    L.append("user's own model folder. They are teaching/benchmark models, not useful assistants: the point is")
    L.append("that draft/target agreement differs by domain and by depth, which is what the product visualises.\n")
    L.append("Everything here is produced by `tools/train/train_demo_pair.sh` (see tools/train/README.md); this")
    L.append("file and `card.json` are written by `tools/train/evaluate.py`.\n")
    L.append("## Architecture\n")
    L.append("| | target | draft |")
    L.append("|---|---|---|")
    rows = [("parameters", "parameters"), ("hidden_size", None), ("intermediate_size", None),
            ("num_hidden_layers", None), ("num_attention_heads", None), ("num_key_value_heads", None),
            ("head_dim", None), ("vocab_size", None), ("max_position_embeddings", None), ("tie_word_embeddings", None)]
    for key, top in rows:
        tv = t[top] if top else t["config"][key]
        dv = d[top] if top else d["config"][key]
        L.append(f"| {key} | {_fmt_int(tv) if isinstance(tv, int) and not isinstance(tv, bool) else tv} | "
                 f"{_fmt_int(dv) if isinstance(dv, int) and not isinstance(dv, bool) else dv} |")
    L.append(f"| model.safetensors | {t['size_bytes'] / 1e6:.1f} MB | {d['size_bytes'] / 1e6:.1f} MB |")
    L.append("")
    L.append("Both: `LlamaForCausalLM` (RMSNorm eps 1e-5, RoPE theta 10000 in the rotate-half convention,")
    L.append("SiLU-gated MLP, grouped-query attention, no biases, tied input/output embeddings; the runtime")
    L.append("computes in float32 whatever the stored precision).")
    L.append("Token id 0 is `<|endoftext|>`, used as BOS and EOS; training text has it before every document.")
    L.append("The tokenizer does not add it by itself (no post-processor): prepend `bos_token_id` to a prompt,")
    L.append("as the numbers below do. The parameter count counts the tied embedding once.\n")
    L.append(f"Tokenizer: byte-level BPE, {card['tokenizer']['vocab_size']} entries ({card['tokenizer']['merges']} merges),")
    L.append("GPT-2 pre-tokenization (Hugging Face `ByteLevel` pre-tokenizer, add_prefix_space false), trained by")
    L.append("`tools/train/bpe.py` on a balanced sample of the three domains.\n")
    L.append("## Data and licences\n")
    L.append("| domain | source | licence | train tokens | held-out tokens |")
    L.append("|---|---|---|---|---|")
    tc = card["data"].get("token_counts", {})
    for dom in DOMAINS:
        src = card["data"][dom]
        tr = tc.get(f"{dom}.train", {}).get("tokens")
        ho = tc.get(f"{dom}.heldout", {}).get("tokens")
        L.append(f"| {dom} | {src['source']} | {src['licence']} | {_fmt_int(tr)} | {_fmt_int(ho)} |")
    L.append("")
    L.append("Held-out splits: whole source files (code, ~8% of files), whole handbook pages (prose, ~12% of")
    L.append("pages) and problems from a separate random seed (math). The bundled prompt sets")
    L.append("(`assets/prompts/*.jsonl`) are beginnings of held-out documents (math: the problem plus the first")
    L.append("words of its worked answer). The prose text is CC-BY-SA-3.0 / GPL-2+; the weights were trained on")
    L.append("it, so we credit its authors here: *The Debian Administrator's Handbook*, Raphaël Hertzog and")
    L.append("Roland Mas. The raw corpora are not committed; the pipeline regenerates them.\n")
    L.append("## Training\n")
    def line(label, tr, extra=""):
        budget = ""
        if tr.get("time_budget_min"):
            budget = (f" (planned {tr['planned_steps']} steps or {tr['time_budget_min']:g} min of training time, "
                      f"whichever came first; the cosine schedule follows the further of the two)")
        L.append(f"- **{label}**: {tr['steps']} steps x {tr['batch']} sequences x {tr['seq']} tokens = "
                 f"{_fmt_int(tr['tokens'])} tokens, {tr['train_seconds'] / 60:.1f} min on CPU "
                 f"(PyTorch 1.13, fp32){budget}. AdamW (betas 0.9/0.95, weight decay {tr['weight_decay']}), "
                 f"peak lr {tr['lr']}, {tr['warmup']} warm-up steps, cosine decay to 10%, gradient clip 1.0; "
                 f"domain mix {tr['domain_weights']}.{extra}")

    if t["training"].get("steps") is not None:
        line("target", t["training"], " Loss: next-token cross-entropy.")
    def loss_text(tr):
        kd = tr.get("kd_alpha")
        if kd is None:
            return " Loss: next-token cross-entropy."
        return (f" Loss = {kd} * KL(p_teacher || p_draft) + {1 - kd:.1f} * cross-entropy, the teacher's full "
                f"next-token distribution computed on the fly.")

    pre = d.get("pretraining", {})
    if pre.get("steps") is not None:
        line("draft, stage 1" + (" (distillation)" if pre.get("kd_alpha") is not None else ""), pre, loss_text(pre))
    if d["training"].get("steps") is not None:
        kd = d["training"].get("kd_alpha")
        label = ("draft, stage 2" if pre.get("steps") is not None else "draft") + (" (distillation)" if kd is not None else "")
        line(label, d["training"], (" Starts from stage 1." if pre.get("steps") is not None else "") + loss_text(d["training"]))
    for note in card.get("notes", []):
        L.append(f"- {note}")
    L.append("")
    L.append("## Held-out loss\n")
    L.append(f"Mean cross-entropy in nats/token over evenly spaced, non-overlapping {loss['window']}-token windows of each held-out split (token counts below).\n")
    prev = loss.get("previous_target")
    if prev:
        L.append(f"*Previous target* is the {prev['parameters'] / 1e6:.1f}M-parameter target this one replaced, "
                 "measured on the same windows.\n")
    L.append("| domain | held-out tokens | target | draft |" + (" previous target |" if prev else ""))
    L.append("|---|---|---|---|" + ("---|" if prev else ""))
    for dom in DOMAINS:
        L.append(f"| {dom} | {_fmt_int(loss['tokens'][dom])} | {loss['target'][dom]:.3f} | {loss['draft'][dom]:.3f} |"
                 + (f" {prev['heldout_loss'][dom]:.3f} |" if prev else ""))
    L.append("")
    if stored:
        L.append("## Stored precision\n")
        L.append("The repository stores these weights in float16 to halve its size; the runtime widens them to")
        L.append("float32 on load. What the rounding costs, measured on held-out windows before and after:\n")
        L.append("| model | largest weight change | largest logit change | held-out loss change (code / prose / math) |")
        L.append("|---|---|---|---|")
        for name, r in stored.items():
            if "heldout_loss_float32" in r:
                dl = " / ".join(f"{r['heldout_loss_float16'][d] - r['heldout_loss_float32'][d]:+.5f}" for d in DOMAINS)
                L.append(f"| {name} | {r['max_abs_weight_change']:.1e} | {r['max_abs_logit_change']:.1e} | {dl} |")
            else:
                L.append(f"| {name} | {r['max_abs_weight_change']:.1e} | - | - |")
        L.append("")
    prof = card.get("profile_hw")
    if prof:
        L.append("## Forward time on the build machine\n")
        L.append(f"`{prof['command']}` on {prof['host'].get('cpu', 'this CPU')} ({prof['host'].get('provider', 'cpu')}): "
                 f"the target's forward time against the number of packed tokens ({prof['slots']} requests, "
                 f"{prof['context']} committed rows each, median of repeats). The fit: {prof['t_ar_ms']:.2f} ms for one "
                 f"token, flat up to a knee at **{prof['knee_tokens']} tokens**, then {prof['gamma_per_token']:.4f} x that "
                 f"per extra token (rms error {prof['fit_rms_relative_error'] * 100:.0f}%). {below_knee(prof)}\n")
        L.append("| tokens | " + " | ".join(str(p["tokens"]) for p in prof["target_curve"]) + " |")
        L.append("|---|" + "---|" * len(prof["target_curve"]))
        L.append("| ms | " + " | ".join(f"{p['ms']:.2f}" for p in prof["target_curve"]) + " |")
        L.append("")
    L.append("## Greedy acceptance of the draft by the target\n")
    n_prompts = sorted({r["prompts"] for r in acc["per_domain"].values()})
    L.append(f"Measured in Python (`tools/train/evaluate.py`) on the first {'/'.join(map(str, n_prompts))} prompts of each "
             f"bundled prompt set: {acc['method']}.")
    L.append("*Mean accepted* counts drafted tokens accepted per verification step (0 to "
             f"{acc['chain_length']}); tokens per step adds the target's bonus token. Acceptance at depth d is the")
    L.append("fraction of steps that accept the depth-d draft token among the steps that reached depth d (all")
    L.append("earlier tokens accepted); depth 0 is the first drafted token.\n")
    hdr = " / ".join(str(i) for i in range(acc["chain_length"]))
    L.append(f"| domain | prompts | steps | mean accepted | tokens/step | acceptance at depth {hdr} |")
    L.append("|---|---|---|---|---|---|")
    for dom in DOMAINS:
        r = acc["per_domain"][dom]
        per = " / ".join("-" if v is None else f"{v:.2f}" for v in r["acceptance_per_depth"])
        L.append(f"| {dom} | {r['prompts']} | {r['steps']} | {r['mean_accepted']:.2f} | {r['tokens_per_step']:.2f} | {per} |")
    L.append("")
    if all("by_token_kind" in acc["per_domain"][d] for d in DOMAINS):
        L.append("The same reached positions split by the target's token there: *number* tokens (text with a")
        L.append("digit; in math mostly results the model has to compute) against all *other* tokens.\n")
        L.append("| domain | number tokens reached | acceptance | other tokens reached | acceptance |")
        L.append("|---|---|---|---|---|")
        for dom in DOMAINS:
            k = acc["per_domain"][dom]["by_token_kind"]
            cell = lambda x: "-" if x["acceptance"] is None else f"{x['acceptance']:.2f}"
            L.append(f"| {dom} | {k['number']['reached']} | {cell(k['number'])} | {k['other']['reached']} | {cell(k['other'])} |")
        L.append("")
    L.append("Machine-readable numbers: `card.json` (`heldout_loss.target.code`, `acceptance.per_domain.math.mean_accepted`, ...).")
    L.append(f"The exported files were checked against an independent NumPy Llama forward (max |logit difference|: "
             + ", ".join(f"{k} {v:.1e}" for k, v in card["reference_check_max_abs_logit_diff"].items()) + ").\n")
    samples = card.get("samples")
    if samples:
        L.append("## Greedy samples\n")
        L.append(f"{samples['method'][0].upper()}{samples['method'][1:]}, on the first prompts of each bundled set;")
        L.append("⟨ ⟩ marks the model's continuation.\n")
        fence = "`" * 3
        for dom in DOMAINS:
            for smp in samples["per_domain"].get(dom, []):
                L.append(f"**{dom}** `{smp.get('id')}`\n")
                L.append(fence + "text")
                L.append(f"{smp['prompt']}⟨{smp['target']}⟩".replace(fence, "` ` `"))
                L.append(fence + "\n")
    if "head" in m and "head_evaluation" in card:
        _head_section(L, card)
    L.append("## Limitations\n")
    seen = m["target"]["training"].get("tokens")
    order = sorted(DOMAINS, key=lambda d: -acc["per_domain"][d]["mean_accepted"])
    L.append(f"Both models are tiny and trained on {seen / 1e6:.1f}M tokens on a CPU, so their text is not" if seen else
             "Both models are tiny and trained briefly on a CPU, so their text is not")
    L.append("coherent beyond short spans and their held-out loss on code and prose is high. They exist to")
    L.append("exercise the runtime (GQA, RoPE, tied embeddings, the tokenizer) and to give the visualisations")
    L.append(f"real, domain-dependent acceptance (here, from easiest to hardest: {', '.join(order)}). Greedy")
    L.append("decoding of such small models falls into short loops on some prompts, which the draft then")
    L.append("predicts well, so loops raise acceptance. Acceptance numbers depend on the exact weights and are")
    L.append("re-measured on every pipeline run. The models saw 256-token windows only: quality degrades for")
    L.append("positions beyond 256 (config allows 512).\n")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(L))


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as fh:
        write(json.load(fh), sys.argv[2])
