// model.open in the engine host: checks that a folder is a model the engine can run (config.json,
// the weights' headers, the tokenizer; for an EAGLE-3 head its config and weights' headers) and
// answers with a one-line description. The contract has
// no draft/target choice, so the folder is not used by itself: a run names its pair in
// RunConfig.draftDir / targetDir, which the studio fills from the folders it opened.
import { describeHeadFolder, isEagle3Config, loadTokenizer, parseEagle3Config, readConfigJson, readModelInfo } from '../engine/index.js';
import type { HandlerModule } from './handler-context.js';

function formatCount(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)}B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)}k`;
  return String(n);
}

export const modelHandlers: HandlerModule = ({ host }) => ({
  'model.open'({ dir }, ctx) {
    let description: string;
    try {
      // Outside the chosen folders, or not there: one answer, before anything is read.
      const folder = host.files.readable(dir);
      const { path, json } = readConfigJson(folder);
      if (isEagle3Config(json)) {
        // A head drafts for a target the run names; here only its own files can be checked
        // (as `model info HEAD` describes it).
        parseEagle3Config(json, path);
        const head = describeHeadFolder(folder);
        const layers = head.featureLayers === null ? 'the default target layers' : `target layers ${head.featureLayers.join(', ')}`;
        ctx.reply({
          type: 'progress',
          task: 'model',
          done: 1,
          total: 1,
          message:
            `${dir}: EAGLE-3 draft head, ${formatCount(head.parameters)} parameters, ${head.numLayers} layer${head.numLayers === 1 ? '' : 's'}, ` +
            `hidden ${head.hiddenSize}, draft vocabulary ${head.draftVocabSize} of ${head.vocabSize}, reads ${layers} (use it as the draft)`,
        });
        return;
      }
      const info = readModelInfo(folder);
      const tokenizer = loadTokenizer(folder);
      description =
        `${dir}: ${info.architecture}, ${formatCount(info.parameters)} parameters (${info.dtype}), ${info.numLayers} layers, ` +
        `hidden ${info.hiddenSize}, vocabulary ${info.vocabSize} (tokenizer ${tokenizer.vocabulary().size}), ${info.maxPositions} positions`;
    } catch (err) {
      ctx.reply({ type: 'error', message: `cannot use ${dir} as a model: ${(err as Error).message}` });
      return;
    }
    ctx.reply({ type: 'progress', task: 'model', done: 1, total: 1, message: description });
  },
});
