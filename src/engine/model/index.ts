// Public surface of the model runtime.
export type { ForwardEntry, ForwardOutputs, ForwardResult, ModelInfo, ModelSession } from './types.js';
export { ModelLoadError, ModelUsageError } from './errors.js';
export { loadModel, loadTokenizer, readModelInfo, openModelFolder, isGraphCached, ensureGraph, type LoadOptions, type ModelFolder } from './loader.js';
export { OrtModelSession } from './session.js';
export { GRAPH_VERSION } from './graph-builder.js';
export { cacheRoot } from './graph-cache.js';
export { ModelTokenizer, assertSameVocabulary, type ChatMessage } from './tokenizer.js';
