import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { assertSameVocabulary, loadTokenizer, ModelTokenizer, readModelInfo } from '../../../src/engine/model/index.js';
import { fixtureTokenizerJson, writeFixtureModel } from './fixtures.js';
import { tempDir } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
const CHAT = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";

describe('ModelTokenizer', () => {
  const fx = writeFixtureModel(join(tmp.path, 'a'), { chatTemplate: CHAT });
  const { bosId, eosId, size } = fixtureTokenizerJson();

  test('encodes with BOS, merges byte pairs, decodes back, names tokens', () => {
    const tok = ModelTokenizer.load(fx.dir);
    const ids = tok.encode('the cat and the hat');
    expect(ids[0]).toBe(bosId);
    expect(ids.length).toBeLessThan(1 + 'the cat and the hat'.length); // merges applied
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('the cat and the hat');
    expect(tok.encode('the', { addSpecialTokens: false })).not.toContain(bosId);
    const strings = (text: string) => tok.encode(text, { addSpecialTokens: false }).map((id) => tok.tokenString(id));
    expect(strings('the')).toEqual(['t', 'he']);
    expect(strings('a the')).toEqual(['a', 'Ġthe']);
    expect(tok.tokenText(tok.encode(' the', { addSpecialTokens: false })[0])).toBe(' the');
    expect(tok.tokenString(99999)).toBeNull();
    expect(tok.vocabSize).toBe(size);
    expect(tok.bosTokenId).toBe(bosId);
    expect(tok.eosTokenIds).toEqual([eosId]);
    expect(tok.isEos(eosId)).toBe(true);
  });

  test('a tokenizer with more ids than config.json\'s vocab_size is refused in one line; a model padded past its tokenizer is not', () => {
    const dir = writeFixtureModel(join(tmp.path, 'wide-tokenizer'), { vocabSize: size + 8 }).dir;
    expect(ModelTokenizer.load(dir).vocabSize).toBe(size); // padded embeddings: fine
    const path = join(dir, 'tokenizer.json');
    const json = JSON.parse(readFileSync(path, 'utf8'));
    // 200 added tokens past the model's rows, as a tokenizer of 4,296 beside a vocab_size of 4,096.
    for (let i = 0; i < 200; i++) json.added_tokens.push({ id: size + 8 + i, content: `<extra_${i}>`, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
    writeFileSync(path, JSON.stringify(json));
    const message = new RegExp(`tokenizer\\.json: holds ${size + 208} token ids but config\\.json's vocab_size is ${size + 8}: ids from ${size + 8} on have no embedding row`);
    expect(() => ModelTokenizer.load(dir)).toThrow(message);
    expect(() => loadTokenizer(dir)).toThrow(message);
  });

  test('renders the chat template from tokenizer_config.json', () => {
    const tok = ModelTokenizer.load(fx.dir);
    expect(tok.hasChatTemplate).toBe(true);
    const text = tok.applyChatTemplate([{ role: 'user', content: 'hi' }]);
    expect(text).toBe('<|user|>hi</s><|assistant|>');
  });

  test('a model without a chat template says so', () => {
    const plain = writeFixtureModel(join(tmp.path, 'plain'));
    expect(() => ModelTokenizer.load(plain.dir).applyChatTemplate([{ role: 'user', content: 'x' }])).toThrow(/tokenizer_config.json: has no chat_template/);
  });

  test('a missing tokenizer.json is a one-line error naming the file', () => {
    const none = writeFixtureModel(join(tmp.path, 'none'), { withoutTokenizer: true });
    expect(() => ModelTokenizer.load(none.dir)).toThrow(/tokenizer\.json: missing/);
  });

  test('draft/target vocabularies: same passes, a swapped id is refused', () => {
    const target = ModelTokenizer.load(fx.dir);
    const draftFx = writeFixtureModel(join(tmp.path, 'draft'), { seed: 9, hiddenSize: 32 });
    expect(() => assertSameVocabulary(ModelTokenizer.load(draftFx.dir), target)).not.toThrow();
    const path = join(draftFx.dir, 'tokenizer.json');
    const json = JSON.parse(readFileSync(path, 'utf8'));
    json.model.vocab.a = json.model.vocab.b;
    json.model.vocab.b = 97;
    writeFileSync(path, JSON.stringify(json));
    expect(() => assertSameVocabulary(ModelTokenizer.load(draftFx.dir), target)).toThrow(/vocabularies differ: token "[ab]" is id \d+ in the draft but \d+ in the target/);
  });
});

describe('add_bos_token', () => {
  // The bundled demo tokenizer has no BOS post-processor: BOS comes from tokenizer_config.json.
  const demo = join('assets', 'models', 'echo-demo-target');
  const copy = (addBos: boolean) => {
    const dir = join(tmp.path, `bos-${addBos}`);
    writeFixtureModel(dir, { vocabSize: 4096 }); // the demo tokenizer's ids, each with an embedding row
    writeFileSync(join(dir, 'tokenizer.json'), readFileSync(join(demo, 'tokenizer.json')));
    const config = JSON.parse(readFileSync(join(demo, 'tokenizer_config.json'), 'utf8'));
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ ...config, add_bos_token: addBos }));
    return ModelTokenizer.load(dir);
  };

  test('prepends BOS once when tokenizer_config.json asks for it, and only then', () => {
    const withBos = copy(true);
    const without = copy(false);
    const bos = withBos.bosTokenId!;
    const plain = without.encode('def f(x):');
    expect(plain[0]).not.toBe(bos);
    expect(withBos.encode('def f(x):')).toEqual([bos, ...plain]);
    expect(withBos.encode('def f(x):', { addSpecialTokens: false })).toEqual(plain);
    expect(withBos.encode('<|endoftext|>x').filter((id) => id === bos)).toHaveLength(1);
  });
});

describe('EOS ids', () => {
  test('generation_config.json end-of-turn ids are merged with config.json and the tokenizer', () => {
    const fx = writeFixtureModel(join(tmp.path, 'gen'));
    const { eosId, bosId } = fixtureTokenizerJson();
    writeFileSync(join(fx.dir, 'generation_config.json'), JSON.stringify({ eos_token_id: [eosId, bosId + 2] }));
    expect(readModelInfo(fx.dir).eosTokenIds).toEqual([eosId, bosId + 2]);
    expect(loadTokenizer(fx.dir).eosTokenIds).toEqual([eosId, bosId + 2]);
  });
});
