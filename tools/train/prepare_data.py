#!/usr/bin/env python3
"""Collect the three training domains into tools/train/.data/corpus/.

  code   Python 3.11 standard-library sources (Debian, /usr/lib/python3.11/*.py), PSF licence.
  prose  The Debian Administrator's Handbook, English HTML edition (Debian package
         `debian-handbook`), GPL-2+ or CC-BY-SA-3.0; only running-text paragraphs are kept.
  math   Arithmetic word problems with worked answers, generated here from templates.

Each domain is written as two JSON files (train / heldout), each a list of documents (strings).
The held-out split is by source file (code), by handbook page (prose) and by random seed (math),
so no held-out document shares a file or page with training text.
"""
import argparse
import glob
import hashlib
import html
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import unicodedata

# Characters dropped everywhere: control characters other than \t \n, and the BOM.
_CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x85\ufeff\u2028\u2029]")


def clean(text):
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CTRL.sub("", text)
    return unicodedata.normalize("NFC", text)


def held_out(name, fraction_per_mille):
    h = int(hashlib.sha1(name.encode()).hexdigest()[:8], 16) % 1000
    return h < fraction_per_mille


# ---------------------------------------------------------------- code
def split_code(src, max_chars=3000):
    """Split a module into documents at top-level `def`/`class`/decorator boundaries."""
    lines = src.split("\n")
    docs, cur = [], []
    for ln in lines:
        top = ln.startswith(("def ", "class ", "async def ", "@"))
        if top and cur and (len("\n".join(cur)) > 400) and not (cur[-1].startswith("@")):
            docs.append("\n".join(cur).strip("\n") + "\n")
            cur = []
        cur.append(ln)
    if cur:
        docs.append("\n".join(cur).strip("\n") + "\n")
    out = []
    for d in docs:  # cap very long blocks at a blank line
        while len(d) > max_chars:
            cut = d.rfind("\n\n", 0, max_chars)
            if cut < 500:
                cut = d.rfind("\n", 0, max_chars)
            if cut < 200:
                cut = max_chars
            out.append(d[:cut].strip("\n") + "\n")
            d = d[cut:].lstrip("\n")
        if d.strip():
            out.append(d)
    return [x for x in out if len(x) > 80]


def collect_code(pydir):
    files = sorted(glob.glob(os.path.join(pydir, "*.py")))
    if not files:
        sys.exit(f"no Python sources found in {pydir}")
    train, heldout = [], []
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            src = clean(fh.read())
        docs = split_code(src)
        (heldout if held_out(os.path.basename(f), 80) else train).extend(docs)
    return train, heldout


# ---------------------------------------------------------------- prose
_PARA = re.compile(r'<div class="para">(.*?)</div>', re.S)
_TAG = re.compile(r"<[^>]+>")


def collect_prose(handbook_dir):
    pages = sorted(glob.glob(os.path.join(handbook_dir, "*.html")))
    if not pages:
        sys.exit(f"no handbook pages found in {handbook_dir}")
    train, heldout = [], []
    for p in pages:
        with open(p, encoding="utf-8") as fh:
            s = fh.read()
        paras = []
        for m in _PARA.finditer(s):
            t = html.unescape(_TAG.sub("", m.group(1)))
            t = clean(" ".join(t.split()))
            if len(t) >= 80:
                paras.append(t)
        # documents: runs of consecutive paragraphs, up to ~800 characters
        docs, cur = [], ""
        for t in paras:
            if cur and len(cur) + len(t) > 800:
                docs.append(cur + "\n")
                cur = ""
            cur = t if not cur else cur + "\n\n" + t
        if cur:
            docs.append(cur + "\n")
        (heldout if held_out(os.path.basename(p), 120) else train).extend(docs)
    return train, heldout


def fetch_handbook(workdir):
    """Download and unpack the debian-handbook package (no installation needed)."""
    target = os.path.join(workdir, "debian-handbook")
    html_dir = os.path.join(target, "usr/share/doc/debian-handbook/html/en-US")
    if os.path.isdir(html_dir):
        return html_dir
    installed = "/usr/share/doc/debian-handbook/html/en-US"
    if os.path.isdir(installed):
        return installed
    os.makedirs(target, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["apt-get", "download", "debian-handbook"], cwd=tmp, check=True)
        debs = glob.glob(os.path.join(tmp, "debian-handbook_*.deb"))
        subprocess.run(["dpkg-deb", "-x", debs[0], target], check=True)
    return html_dir


# ---------------------------------------------------------------- math
NAMES = ["Maria", "Tom", "Aisha", "Ken", "Lena", "Omar", "Sofia", "Ravi", "Ines", "Jack",
         "Mei", "Pablo", "Nora", "Sam", "Zoe", "Ali", "Hana", "Luca", "Ada", "Ben"]
ITEMS = [("box", "boxes", "apple", "apples"), ("bag", "bags", "marble", "marbles"),
         ("crate", "crates", "bottle", "bottles"), ("pack", "packs", "pencil", "pencils"),
         ("shelf", "shelves", "book", "books"), ("tray", "trays", "cookie", "cookies"),
         ("basket", "baskets", "egg", "eggs"), ("jar", "jars", "coin", "coins"),
         ("row", "rows", "chair", "chairs"), ("carton", "cartons", "orange", "oranges")]


def gen_problem(r):
    n = r.choice(NAMES)
    c, cs, it, its = r.choice(ITEMS)
    k = r.randrange(8)
    if k == 0:
        a, b, g = r.randint(2, 12), r.randint(3, 24), 0
        tot = a * b
        g = r.randint(1, tot - 1)
        q = f"{n} has {a} {cs} of {b} {its}. {n} gives away {g} {its}. How many {its} does {n} have left?"
        ans = (f"{a} {cs} of {b} {its} is {a} * {b} = {tot} {its}. After giving away {g} {its}, "
               f"{n} has {tot} - {g} = {tot - g} {its}. The answer is {tot - g}.")
    elif k == 1:
        a, b, c2 = r.randint(10, 99), r.randint(10, 99), r.randint(10, 99)
        s1 = a + b
        s2 = s1 + c2
        q = (f"{n} collected {a} {its} on Monday, {b} {its} on Tuesday and {c2} {its} on Wednesday. "
             f"How many {its} did {n} collect in total?")
        ans = (f"Monday and Tuesday give {a} + {b} = {s1} {its}. Adding Wednesday gives "
               f"{s1} + {c2} = {s2} {its}. The answer is {s2}.")
    elif k == 2:
        per, cnt = r.randint(2, 15), r.randint(2, 20)
        tot = per * cnt
        q = f"{n} puts {tot} {its} into {cs}, {per} {its} in each {c}. How many {cs} does {n} fill?"
        ans = f"Each {c} holds {per} {its}, so {n} fills {tot} / {per} = {cnt} {cs}. The answer is {cnt}."
    elif k == 3:
        price, qty, paid = r.randint(2, 20), r.randint(2, 9), 0
        cost = price * qty
        paid = (cost // 10 + 1 + r.randint(0, 3)) * 10
        q = (f"One {it} costs {price} dollars. {n} buys {qty} {its} and pays with {paid} dollars. "
             f"How much change does {n} get?")
        ans = (f"{qty} {its} cost {qty} * {price} = {cost} dollars. The change is "
               f"{paid} - {cost} = {paid - cost} dollars. The answer is {paid - cost}.")
    elif k == 4:
        a, b = r.randint(3, 12), r.randint(3, 12)
        x, y = r.randint(2, 9), r.randint(2, 9)
        t1, t2 = a * x, b * y
        q = (f"{n} has {a} {cs} with {x} {its} each and {b} {cs} with {y} {its} each. "
             f"How many {its} are there altogether?")
        ans = (f"The first {cs} hold {a} * {x} = {t1} {its}. The other {cs} hold {b} * {y} = {t2} {its}. "
               f"Altogether there are {t1} + {t2} = {t1 + t2} {its}. The answer is {t1 + t2}.")
    elif k == 5:
        start, days, per = r.randint(20, 200), r.randint(2, 9), r.randint(2, 15)
        used = days * per
        start = max(start, used + r.randint(1, 50))
        q = (f"{n} starts with {start} {its} and uses {per} {its} every day for {days} days. "
             f"How many {its} are left?")
        ans = (f"In {days} days {n} uses {days} * {per} = {used} {its}. That leaves "
               f"{start} - {used} = {start - used} {its}. The answer is {start - used}.")
    elif k == 6:
        a = r.randint(2, 9)
        b = r.randint(2, 9)
        m = a * b
        tot = m * r.randint(2, 9)
        q = (f"A shop packs {a} {its} in each {c} and puts {b} {cs} in each carton. "
             f"How many cartons are needed for {tot} {its}?")
        ans = (f"One carton holds {a} * {b} = {m} {its}. For {tot} {its} the shop needs "
               f"{tot} / {m} = {tot // m} cartons. The answer is {tot // m}.")
    else:
        a, b = r.randint(100, 999), r.randint(10, 99)
        q = f"A school has {a} students. {b} more students join. Then the students form groups of 2. How many groups are there?"
        s = a + b
        if s % 2:
            s += 1
            b += 1
            q = f"A school has {a} students. {b} more students join. Then the students form groups of 2. How many groups are there?"
        ans = (f"After {b} join there are {a} + {b} = {s} students. In groups of 2 that is "
               f"{s} / 2 = {s // 2} groups. The answer is {s // 2}.")
    return f"Problem: {q}\nAnswer: {ans}\n"


def collect_math(n_train, n_heldout):
    r = random.Random(1234)
    train = [gen_problem(r) for _ in range(n_train)]
    r2 = random.Random(98765)
    seen = set(train)
    heldout = []
    while len(heldout) < n_heldout:
        p = gen_problem(r2)
        if p not in seen:
            heldout.append(p)
    return train, heldout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), ".data"))
    ap.add_argument("--pydir", default="/usr/lib/python3.11")
    ap.add_argument("--math-train", type=int, default=16000)
    ap.add_argument("--math-heldout", type=int, default=400)
    a = ap.parse_args()
    corpus = os.path.join(a.out, "corpus")
    os.makedirs(corpus, exist_ok=True)
    domains = {
        "code": collect_code(a.pydir),
        "prose": collect_prose(fetch_handbook(a.out)),
        "math": collect_math(a.math_train, a.math_heldout),
    }
    for d, (tr, ho) in domains.items():
        for split, docs in (("train", tr), ("heldout", ho)):
            with open(os.path.join(corpus, f"{d}.{split}.json"), "w", encoding="utf-8") as fh:
                json.dump(docs, fh, ensure_ascii=False)
        print(f"{d:6s} train {len(tr):6d} docs {sum(map(len, tr)) / 1e6:6.2f} MB | "
              f"heldout {len(ho):5d} docs {sum(map(len, ho)) / 1e6:6.2f} MB")


if __name__ == "__main__":
    main()
