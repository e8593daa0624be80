#!/usr/bin/env python3
"""Collect the three training domains into tools/train/.data/corpus/.

  code   Python 3.11 standard-library sources (Debian, /usr/lib/python3.11/*.py), PSF licence.
  prose  The Debian Administrator's Handbook, English HTML edition (Debian package
         `debian-handbook`), GPL-2+ or CC-BY-SA-3.0; only running-text paragraphs are kept.
         With --prose-sources handbook,python-docs also the Python 3.11 documentation's running
         text (Debian package `python3.11-doc`, PSF licence): about five times the handbook, for
         targets large enough to over-fit the handbook alone.
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


def paragraph_runs(paras, max_chars=800):
    """Documents made of runs of consecutive paragraphs, up to about max_chars each."""
    docs, cur = [], ""
    for t in paras:
        if cur and len(cur) + len(t) > max_chars:
            docs.append(cur + "\n")
            cur = ""
        cur = t if not cur else cur + "\n\n" + t
    if cur:
        docs.append(cur + "\n")
    return docs


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
        (heldout if held_out(os.path.basename(p), 120) else train).extend(paragraph_runs(paras))
    return train, heldout


_P = re.compile(r"<p>(.*?)</p>", re.S)
# Sections that are lists of changes or C declarations rather than running text.
_PYDOC_SKIP = ("/whatsnew/", "/c-api/", "/genindex", "/py-modindex", "/search.html")


def collect_python_docs(doc_dir):
    """Running-text paragraphs of the Python documentation, one document per run of paragraphs."""
    pages = sorted(p for p in glob.glob(os.path.join(doc_dir, "**", "*.html"), recursive=True)
                   if not any(skip in p for skip in _PYDOC_SKIP))
    if not pages:
        sys.exit(f"no Python documentation pages found in {doc_dir}")
    train, heldout = [], []
    for p in pages:
        with open(p, encoding="utf-8") as fh:
            s = fh.read()
        paras = [clean(" ".join(html.unescape(_TAG.sub("", m.group(1))).split())) for m in _P.finditer(s)]
        docs = paragraph_runs([t for t in paras if len(t) >= 80])
        (heldout if held_out(os.path.relpath(p, doc_dir), 120) else train).extend(docs)
    return train, heldout


def fetch_deb_dir(workdir, package, inner):
    """Download and unpack a Debian package (no installation needed); returns its folder `inner`."""
    target = os.path.join(workdir, package)
    found = os.path.join(target, inner.lstrip("/"))
    if os.path.isdir(found):
        return found
    if os.path.isdir(inner):
        return inner
    os.makedirs(target, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["apt-get", "download", package], cwd=tmp, check=True)
        debs = glob.glob(os.path.join(tmp, f"{package}_*.deb"))
        subprocess.run(["dpkg-deb", "-x", debs[0], target], check=True)
    return found


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
# Templates with several wordings per sentence, so that the words around the numbers are not a
# fixed script: a small model then has to read the problem, and the computed numbers (results of
# *, +, -, /) are the tokens it cannot guess, while numbers copied from the question are easy.
NAMES = ["Maria", "Tom", "Aisha", "Ken", "Lena", "Omar", "Sofia", "Ravi", "Ines", "Jack",
         "Mei", "Pablo", "Nora", "Sam", "Zoe", "Ali", "Hana", "Luca", "Ada", "Ben",
         "Yuki", "Ivan", "Chloe", "Kofi", "Elif", "Mateo", "Priya", "Oscar", "Freya", "Tariq"]
ITEMS = [("box", "boxes", "apple", "apples"), ("bag", "bags", "marble", "marbles"),
         ("crate", "crates", "bottle", "bottles"), ("pack", "packs", "pencil", "pencils"),
         ("shelf", "shelves", "book", "books"), ("tray", "trays", "cookie", "cookies"),
         ("basket", "baskets", "egg", "eggs"), ("jar", "jars", "coin", "coins"),
         ("row", "rows", "chair", "chairs"), ("carton", "cartons", "orange", "oranges"),
         ("bucket", "buckets", "shell", "shells"), ("folder", "folders", "sticker", "stickers"),
         ("bin", "bins", "toy", "toys"), ("case", "cases", "card", "cards")]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def gen_problem(r):
    n = r.choice(NAMES)
    c, cs, it, its = r.choice(ITEMS)
    pick = r.choice
    k = r.randrange(8)
    if k == 0:
        a, b = r.randint(2, 14), r.randint(3, 30)
        tot = a * b
        g = r.randint(1, tot - 1)
        q = pick([f"{n} has {a} {cs} of {b} {its}. {n} gives away {g} {its}. How many {its} does {n} have left?",
                  f"There are {b} {its} in each of {n}'s {a} {cs}. If {n} gives {g} {its} to a friend, how many are left?",
                  f"{n} owns {a} {cs}, each with {b} {its}, and then loses {g} {its}. How many {its} remain?"])
        ans = pick([f"{a} {cs} of {b} {its} is {a} * {b} = {tot} {its}. After giving away {g} {its}, "
                    f"{n} has {tot} - {g} = {tot - g} {its}.",
                    f"First find the total: {a} * {b} = {tot}. Then subtract: {tot} - {g} = {tot - g}.",
                    f"{n} starts with {a} * {b} = {tot} {its}, so {tot - g} {its} are left because {tot} - {g} = {tot - g}."])
        res = tot - g
    elif k == 1:
        d1, d2, d3 = r.sample(DAYS, 3)
        a, b, c2 = r.randint(10, 199), r.randint(10, 199), r.randint(10, 199)
        s1, s2 = a + b, a + b + c2
        q = pick([f"{n} collected {a} {its} on {d1}, {b} {its} on {d2} and {c2} {its} on {d3}. "
                  f"How many {its} did {n} collect in total?",
                  f"On {d1} {n} found {a} {its}. On {d2} {n} found {b} more, and on {d3} another {c2}. "
                  f"What is the total?"])
        ans = pick([f"{d1} and {d2} give {a} + {b} = {s1} {its}. Adding {d3} gives {s1} + {c2} = {s2} {its}.",
                    f"Add the first two days: {a} + {b} = {s1}. Then {s1} + {c2} = {s2}.",
                    f"The total is {a} + {b} + {c2}. We get {s1} after two days and {s2} after three."])
        res = s2
    elif k == 2:
        per, cnt = r.randint(2, 19), r.randint(2, 25)
        tot = per * cnt
        q = pick([f"{n} puts {tot} {its} into {cs}, {per} {its} in each {c}. How many {cs} does {n} fill?",
                  f"How many {cs} are needed for {tot} {its} if every {c} takes {per} of them?",
                  f"{n} shares {tot} {its} equally among {cs} of {per}. How many {cs} are there?"])
        ans = pick([f"Each {c} holds {per} {its}, so {n} fills {tot} / {per} = {cnt} {cs}.",
                    f"Divide the {its} by the size of a {c}: {tot} / {per} = {cnt}.",
                    f"We need {cnt} {cs}, since {per} * {cnt} = {tot}."])
        res = cnt
    elif k == 3:
        price, qty = r.randint(2, 25), r.randint(2, 9)
        cost = price * qty
        paid = (cost // 10 + 1 + r.randint(0, 5)) * 10
        q = pick([f"One {it} costs {price} dollars. {n} buys {qty} {its} and pays with {paid} dollars. "
                  f"How much change does {n} get?",
                  f"{n} pays {paid} dollars for {qty} {its} at {price} dollars each. What is the change?",
                  f"A {it} is sold for {price} dollars. If {n} buys {qty} of them with {paid} dollars, "
                  f"how much money is left?"])
        ans = pick([f"{qty} {its} cost {qty} * {price} = {cost} dollars. The change is "
                    f"{paid} - {cost} = {paid - cost} dollars.",
                    f"The {its} cost {price} * {qty} = {cost}. So {n} gets {paid} - {cost} = {paid - cost} back.",
                    f"Cost: {qty} * {price} = {cost} dollars. Left: {paid - cost} dollars, because {paid} - {cost} = {paid - cost}."])
        res = paid - cost
    elif k == 4:
        a, b = r.randint(3, 15), r.randint(3, 15)
        x, y = r.randint(2, 12), r.randint(2, 12)
        t1, t2 = a * x, b * y
        q = pick([f"{n} has {a} {cs} with {x} {its} each and {b} {cs} with {y} {its} each. "
                  f"How many {its} are there altogether?",
                  f"In a room there are {a} {cs} holding {x} {its} and {b} {cs} holding {y} {its}. "
                  f"Count all the {its}."])
        ans = pick([f"The first {cs} hold {a} * {x} = {t1} {its}. The other {cs} hold {b} * {y} = {t2} {its}. "
                    f"Altogether there are {t1} + {t2} = {t1 + t2} {its}.",
                    f"{a} * {x} = {t1} and {b} * {y} = {t2}, so the total is {t1} + {t2} = {t1 + t2}."])
        res = t1 + t2
    elif k == 5:
        start, days, per = r.randint(20, 300), r.randint(2, 12), r.randint(2, 15)
        used = days * per
        start = max(start, used + r.randint(1, 80))
        q = pick([f"{n} starts with {start} {its} and uses {per} {its} every day for {days} days. "
                  f"How many {its} are left?",
                  f"A store has {start} {its}. It sells {per} a day for {days} days. How many does it still have?"])
        ans = pick([f"In {days} days {n} uses {days} * {per} = {used} {its}. That leaves "
                    f"{start} - {used} = {start - used} {its}.",
                    f"Over {days} days, {per} * {days} = {used} are gone, and {start} - {used} = {start - used} remain."])
        res = start - used
    elif k == 6:
        a, b = r.randint(2, 9), r.randint(2, 9)
        m = a * b
        tot = m * r.randint(2, 12)
        q = pick([f"A shop packs {a} {its} in each {c} and puts {b} {cs} in each carton. "
                  f"How many cartons are needed for {tot} {its}?",
                  f"Each carton takes {b} {cs} and each {c} takes {a} {its}. {n} has {tot} {its}. "
                  f"How many cartons does {n} fill?"])
        ans = pick([f"One carton holds {a} * {b} = {m} {its}. For {tot} {its} that makes "
                    f"{tot} / {m} = {tot // m} cartons.",
                    f"A carton holds {m} {its}, because {a} * {b} = {m}. Then {tot} / {m} = {tot // m}."])
        res = tot // m
    else:
        a, b = r.randint(100, 999), r.randint(10, 99)
        size = r.choice([2, 3, 4, 5])
        s = a + b
        b += (-s) % size
        s = a + b
        q = pick([f"A school has {a} students. {b} more students join. Then the students form groups of {size}. "
                  f"How many groups are there?",
                  f"{a} people are at a party and {b} more arrive. They sit at tables of {size}. How many tables are used?"])
        ans = pick([f"After {b} join there are {a} + {b} = {s}. In groups of {size} that is {s} / {size} = {s // size}.",
                    f"First {a} + {b} = {s}, then {s} / {size} = {s // size}."])
        res = s // size
    end = pick([f" The answer is {res}.", f" So the answer is {res}.", f" Answer: {res}."])
    return f"Problem: {q}\nAnswer: {ans}{end}\n"


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


def collect_prose_sources(workdir, sources):
    train, heldout = [], []
    if "handbook" in sources:
        tr, ho = collect_prose(fetch_handbook(workdir))
        train += tr
        heldout += ho
    if "python-docs" in sources:
        tr, ho = collect_python_docs(fetch_deb_dir(workdir, "python3.11-doc", "/usr/share/doc/python3.11/html"))
        train += tr
        heldout += ho
    return train, heldout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), ".data"))
    ap.add_argument("--pydir", default="/usr/lib/python3.11")
    ap.add_argument("--math-train", type=int, default=16000)
    ap.add_argument("--math-heldout", type=int, default=400)
    ap.add_argument("--prose-sources", default="handbook",
                    help="comma-separated: handbook (the Debian Administrator's Handbook), python-docs")
    a = ap.parse_args()
    sources = set(a.prose_sources.split(","))
    if not sources or not sources <= {"handbook", "python-docs"}:
        sys.exit(f"--prose-sources: expected handbook and/or python-docs, got {a.prose_sources}")
    corpus = os.path.join(a.out, "corpus")
    os.makedirs(corpus, exist_ok=True)
    domains = {
        "code": collect_code(a.pydir),
        "prose": collect_prose_sources(a.out, sources),
        "math": collect_math(a.math_train, a.math_heldout),
    }
    # evaluate.py names the sources in the model card from this
    with open(os.path.join(corpus, "sources.json"), "w", encoding="utf-8") as fh:
        json.dump({"prose": sorted(sources), "math_train": a.math_train, "math_heldout": a.math_heldout}, fh)
    for d, (tr, ho) in domains.items():
        for split, docs in (("train", tr), ("heldout", ho)):
            with open(os.path.join(corpus, f"{d}.{split}.json"), "w", encoding="utf-8") as fh:
                json.dump(docs, fh, ensure_ascii=False)
        print(f"{d:6s} train {len(tr):6d} docs {sum(map(len, tr)) / 1e6:6.2f} MB | "
              f"heldout {len(ho):5d} docs {sum(map(len, ho)) / 1e6:6.2f} MB")


if __name__ == "__main__":
    main()
