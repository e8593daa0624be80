// `calibrate`'s hand-off to serving engines: the pair calibrated, by its real folders, or one line
// saying why no engine can take it (the profile itself is written either way).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { servingText } from '../../../src/cli/commands/calibrate.js';
import type { EchoProfile } from '../../../src/engine/calibrate/profile.js';
import { findPackageRoot } from '../../../src/engine/package-root.js';
import { writeFixtureModel, writeSwappedVocabModel } from '../../engine/model/fixtures.js';

const profile = { taus: { '0': 0.3, '2': 0.15 }, confidence: 'path-prob' } as unknown as EchoProfile;

describe('calibrate: for serving engines', () => {
  it('prints both loads for the bundled pair by its folders, in the mode of its drafter', () => {
    const models = path.join(findPackageRoot(import.meta.url), 'assets', 'models');
    const dirs = { draftDir: path.join(models, 'echo-demo-draft'), targetDir: path.join(models, 'echo-demo-target') };
    const text = servingText(profile, dirs);
    expect(text.match(/--speculative-algorithm STANDALONE/g)).toHaveLength(4); // ECHO's and upstream, both loads
    expect(text).toContain(`--model-path ${dirs.targetDir} `);
    expect(text).not.toContain('TARGET');
  });

  it('says in one line why a pair with different tokenizers has no hand-off', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'echo-calibrate-serving-'));
    writeFixtureModel(path.join(root, 'target'), { seed: 3, hiddenSize: 32 });
    writeSwappedVocabModel(path.join(root, 'draft'), { seed: 4, hiddenSize: 32 });
    const text = servingText(profile, { draftDir: path.join(root, 'draft'), targetDir: path.join(root, 'target') });
    expect(text).toMatch(/^no hand-off: no serving engine can take this pair: .*vocabularies differ/);
    expect(text).not.toContain('\n');
  });
});
