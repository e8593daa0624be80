// Shared by the host and end-to-end tests: the built engine host, and model folders to list.
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { packagePaths } from '../../src/host/paths.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const paths = packagePaths(repoRoot);

/** Why the built engine host cannot be used, or null when it can (npm test builds first). */
export function missingBuild(): string | null {
  return existsSync(paths.engineHostEntry) ? null : `${path.relative(repoRoot, paths.engineHostEntry)} is missing: run \`npm run build\` (npm test does)`;
}

/** Writes a real safetensors file whose tensors hold `shapes`. */
export async function writeSafetensors(file: string, shapes: Record<string, number[]>): Promise<void> {
  let offset = 0;
  const header: Record<string, unknown> = {};
  for (const [name, shape] of Object.entries(shapes)) {
    const bytes = shape.reduce((a, b) => a * b, 1) * 4;
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  const json = Buffer.from(JSON.stringify(header));
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  await writeFile(file, Buffer.concat([length, json, Buffer.alloc(offset)]));
}

/** A models folder with a small draft/target pair (config.json + weights headers). */
export async function writeModelsFolder(root: string): Promise<void> {
  await mkdir(path.join(root, 'echo-draft'), { recursive: true });
  await writeFile(path.join(root, 'echo-draft', 'config.json'), '{"model_type":"llama","hidden_size":64}');
  await writeSafetensors(path.join(root, 'echo-draft', 'model.safetensors'), { 'embed.weight': [1000, 64], 'norm.weight': [64] });
  await mkdir(path.join(root, 'echo-target'), { recursive: true });
  await writeFile(path.join(root, 'echo-target', 'config.json'), '{"model_type":"llama","hidden_size":256}');
  await writeSafetensors(path.join(root, 'echo-target', 'model.safetensors'), { 'embed.weight': [4000, 256], 'lm_head.weight': [4000, 256] });
}
