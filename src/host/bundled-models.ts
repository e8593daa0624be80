// Finds the model folders bundled under assets/models: every subfolder with a config.json.
// The parameter count comes from the safetensors headers (exact, and cheap: only the JSON header
// of each file is read, never the weights).
import { open, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { BundledModel } from '../shared/messages.js';

/** safetensors headers are small JSON; anything past this is a damaged or foreign file. */
const MAX_SAFETENSORS_HEADER_BYTES = 64 * 1024 * 1024;

export interface BundledModelScan {
  models: BundledModel[];
  /** One line per folder that looked like a model but could not be read. */
  problems: string[];
}

export async function findBundledModels(modelsRoot: string): Promise<BundledModelScan> {
  const models: BundledModel[] = [];
  const problems: string[] = [];
  let entries;
  try {
    entries = await readdir(modelsRoot, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { models, problems };
    throw err;
  }
  const folders = entries.filter((e) => e.isDirectory()).map((e) => e.name).sort();
  for (const name of folders) {
    const dir = path.resolve(modelsRoot, name);
    let configText: string;
    try {
      configText = await readFile(path.join(dir, 'config.json'), 'utf8');
    } catch {
      continue; // not a model folder
    }
    try {
      const config: unknown = JSON.parse(configText);
      if (typeof config !== 'object' || config === null || Array.isArray(config)) {
        throw new Error('config.json is not a JSON object');
      }
    } catch (err) {
      problems.push(`${dir}/config.json: ${(err as Error).message}`);
      continue;
    }
    const model: BundledModel = { name, dir };
    try {
      const parameters = await countSafetensorsParameters(dir);
      if (parameters !== null) model.parameters = parameters;
    } catch (err) {
      problems.push(`${dir}: ${(err as Error).message}`);
    }
    models.push(model);
  }
  return { models, problems };
}

/** Sums the element counts of every tensor in the folder's *.safetensors files; null when none. */
export async function countSafetensorsParameters(dir: string): Promise<number | null> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.safetensors')).sort();
  if (files.length === 0) return null;
  let total = 0;
  for (const file of files) total += await countInFile(path.join(dir, file));
  return total;
}

async function countInFile(file: string): Promise<number> {
  const handle = await open(file, 'r');
  try {
    const lengthBytes = Buffer.alloc(8);
    const { bytesRead } = await handle.read(lengthBytes, 0, 8, 0);
    if (bytesRead < 8) throw new Error(`${path.basename(file)} is too short to be a safetensors file`);
    const headerLength = lengthBytes.readBigUInt64LE(0);
    if (headerLength > BigInt(MAX_SAFETENSORS_HEADER_BYTES)) {
      throw new Error(`${path.basename(file)} declares a ${headerLength}-byte header; not a safetensors file`);
    }
    const header = Buffer.alloc(Number(headerLength));
    const got = await handle.read(header, 0, header.length, 8);
    if (got.bytesRead < header.length) throw new Error(`${path.basename(file)}: header is truncated`);
    const tensors = JSON.parse(header.toString('utf8')) as Record<string, { shape?: unknown }>;
    let count = 0;
    for (const [name, info] of Object.entries(tensors)) {
      if (name === '__metadata__') continue;
      if (!Array.isArray(info?.shape) || !info.shape.every((d) => Number.isInteger(d) && d >= 0)) {
        throw new Error(`${path.basename(file)}: tensor ${name} has no valid shape`);
      }
      count += (info.shape as number[]).reduce((a, b) => a * b, 1);
    }
    return count;
  } finally {
    await handle.close();
  }
}
