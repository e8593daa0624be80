// Checks that the bundled tokenizer loads in @huggingface/tokenizers (the package the app uses),
// that it round-trips text, and that its token ids equal the Python training encoder's ids on
// held-out samples of every domain.
//
//   node tools/train/check_tokenizer.mjs [modelDir] [samples.json]
//
// Defaults: assets/models/echo-demo-target and tools/train/.data/tokenizer_samples.json
// (written by tokenizer_samples.py during the training pipeline). Without the samples file only
// the load and round-trip checks run.
import { readFileSync, existsSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Tokenizer } from '@huggingface/tokenizers';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..', '..');
const modelDir = resolve(process.argv[2] ?? join(root, 'assets/models/echo-demo-target'));
const samplesPath = resolve(process.argv[3] ?? join(here, '.data/tokenizer_samples.json'));

const tj = JSON.parse(readFileSync(join(modelDir, 'tokenizer.json'), 'utf8'));
const tc = JSON.parse(readFileSync(join(modelDir, 'tokenizer_config.json'), 'utf8'));
const tok = new Tokenizer(tj, tc);
const vocabSize = Object.keys(tj.model.vocab).length;
console.log(`loaded ${modelDir}/tokenizer.json: ${vocabSize} vocab entries, ${tj.model.merges.length} merges`);

let failures = 0;
const fail = (msg) => { failures++; if (failures <= 10) console.error('FAIL ' + msg); };

const eot = tok.encode('<|endoftext|>', { add_special_tokens: false }).ids;
if (eot.length !== 1 || eot[0] !== 0) fail(`<|endoftext|> should encode to [0], got [${eot}]`);

const roundTrip = [
  'def main():\n    print("hello")\n', 'The quick brown fox jumps over the lazy dog.',
  'Problem: 3 boxes of 12 apples is 3 * 12 = 36 apples.', 'naïve café — Ελληνικά 漢字 🙂',
];
for (const t of roundTrip) {
  const ids = tok.encode(t, { add_special_tokens: false }).ids;
  const back = tok.decode(ids, { skip_special_tokens: false });
  if (back !== t) fail(`round trip: ${JSON.stringify(t)} -> ${JSON.stringify(back)}`);
}

if (existsSync(samplesPath)) {
  const samples = JSON.parse(readFileSync(samplesPath, 'utf8'));
  const perDomain = {};
  for (const s of samples) {
    const d = (perDomain[s.domain] ??= { n: 0, same: 0, roundTrip: 0, tokens: 0 });
    d.n++;
    const ids = tok.encode(s.text, { add_special_tokens: false }).ids;
    d.tokens += ids.length;
    const same = ids.length === s.ids.length && ids.every((v, i) => v === s.ids[i]);
    if (same) d.same++;
    else {
      let i = 0;
      while (i < ids.length && ids[i] === s.ids[i]) i++;
      fail(`${s.domain}: ids differ from Python at token ${i} (node ${ids.slice(i, i + 5)} vs python ${s.ids.slice(i, i + 5)}) in ${JSON.stringify(s.text.slice(0, 60))}`);
    }
    const back = ids.length ? tok.decode(ids, { skip_special_tokens: false }) : '';
    if (back === s.text) d.roundTrip++;
    else fail(`${s.domain}: round trip differs for ${JSON.stringify(s.text.slice(0, 60))}`);
  }
  for (const [d, r] of Object.entries(perDomain)) {
    console.log(`${d.padEnd(6)} ${r.same}/${r.n} samples with identical ids (${r.tokens} tokens), ${r.roundTrip}/${r.n} round-trip exactly`);
  }
} else {
  console.log(`no samples file at ${samplesPath}; run the training pipeline to produce it (load/round-trip checks only)`);
}

if (failures) {
  console.error(`${failures} check(s) failed`);
  process.exit(1);
}
console.log('tokenizer check passed');
