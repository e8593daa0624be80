// `echo-studio serve`: the studio in a browser, backed by a live engine host on this machine.
import { InvalidArgumentError, type Command } from 'commander';
import path from 'node:path';
import { defaultDataDir, resolveDataDir } from '../../host/data-folder.js';
import { findPackageRoot, packagePaths } from '../../host/paths.js';
import { isLoopbackAddress } from '../../host/security.js';
import { startWebHost } from '../../host/web-host.js';

export const DEFAULT_PORT = 5177;

export function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535) throw new InvalidArgumentError('expected a port number from 0 to 65535');
  return port;
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

export interface ServeOptions {
  port: number;
  host: string;
  modelsDir?: string;
  /** The studio's data folder (default: the per-user data folder). */
  dataDir?: string;
  /** More folders the browser may read and write in. */
  allow?: string[];
  /** A trace to show on start (`echo-studio trace replay`). */
  replay?: string;
}

/** Starts the web host, prints its URL, and serves until Ctrl+C. */
export async function serveStudio(options: ServeOptions): Promise<void> {
  const paths = packagePaths(findPackageRoot(import.meta.url));
  const modelsDir = path.resolve(options.modelsDir ?? paths.modelsDir);
  // Never the app's own folder or the models: the studio writes in its data folder.
  const dataDir = resolveDataDir(options.dataDir, { "the app's own folder": paths.root, 'the models folder': modelsDir });
  const host = await startWebHost({
    port: options.port,
    host: options.host,
    rendererDir: paths.rendererDir,
    engineHostEntry: paths.engineHostEntry,
    modelsDir: options.modelsDir ? path.resolve(options.modelsDir) : undefined,
    openTrace: options.replay ? path.resolve(options.replay) : undefined,
    dataDir,
    allow: (options.allow ?? []).map((dir) => path.resolve(dir)),
  });
  const writable = [dataDir, ...(options.allow ?? []).map((dir) => path.resolve(dir))];
  const readable = [...writable, modelsDir, ...(options.replay ? [path.dirname(path.resolve(options.replay))] : [])];
  process.stdout.write(`The studio's data folder (reports, exports): ${dataDir}\n`);
  process.stdout.write(`The browser may read files only in: ${[...new Set(readable)].join(', ')}\n`);
  process.stdout.write(`and write only in: ${[...new Set(writable)].join(', ')}\n`);
  if (!isLoopbackAddress(options.host)) {
    process.stderr.write(`warning: serving on ${options.host}, reachable from other machines\n`);
  }
  process.stdout.write(
    `ECHO Studio is serving at ${host.url}\n` +
      `Observer link (sees everything, can change nothing): ${host.observerUrl}\n` +
      'Open the first URL in a browser; share the observer link with those who only watch. Press Ctrl+C to stop.\n',
  );
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      void host.close().then(resolve);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

export function register(program: Command): void {
  program
    .command('serve')
    .description('serve the studio to a browser: starts the engine host and a local web server')
    .option('-p, --port <n>', 'port to listen on (0 picks a free one)', parsePort, DEFAULT_PORT)
    .option('--host <address>', 'address to bind; anything but loopback opens the engine to your network (the token is still required)', '127.0.0.1')
    .option('--models-dir <dir>', 'folder of model folders to list as bundled (default: assets/models)')
    .option('--data-dir <dir>', `the studio's data folder: the browser reads and writes there, relative paths start there (default: ${defaultDataDir()})`)
    .option('--allow <dir>', 'another folder the browser may read and write in (model folders, prompts, profiles); repeatable', collect, [] as string[])
    .addHelpText(
      'after',
      '\nThe printed URL carries a per-launch access token; requests without it are refused. A second URL, the observer\n' +
        'link, has a token of its own: it shows everything and may change nothing. The browser reads files only in the\n' +
        "data folder, the models folder and the --allow folders, and writes only in the data folder and the --allow\n" +
        "folders, never into the app's own files or the models folder.",
    )
    .action((options: ServeOptions) => serveStudio(options));
}
