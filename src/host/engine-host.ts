// Entry point of the engine host process. Started by Electron's main process as a utilityProcess
// (clients: the parent port, plus each MessagePort main hands over for a renderer) or by the web
// host / CLI with child_process.fork (client: the IPC channel). Models run here, never on
// Electron's main thread.
import { parseArgs } from 'node:util';
import { allowedFolders, ANY_PATH } from './allowed-folders.js';
import { EngineHost } from './host.js';
import { findPackageRoot, packagePaths, packageVersion } from './paths.js';
import { attachForkedChannel, messagePortMainPort, type HostPort, type ParentPortLike } from './port.js';

function main(): void {
  const { values } = parseArgs({
    options: { 'models-dir': { type: 'string' }, 'data-dir': { type: 'string' }, allow: { type: 'string', multiple: true } },
    allowPositionals: false,
    strict: false,
  });
  const root = findPackageRoot(import.meta.url);
  const modelsArg = values['models-dir'];
  const modelsDir = typeof modelsArg === 'string' ? modelsArg : process.env.ECHO_STUDIO_MODELS_DIR ?? packagePaths(root).modelsDir;
  const parentPort = (process as NodeJS.Process & { parentPort?: ParentPortLike }).parentPort;
  // The desktop app's paths come from its dialogs: any. The web host's clients only type paths:
  // the data folder, the models folder and the folders it names with --allow.
  const dataDir = typeof values['data-dir'] === 'string' ? values['data-dir'] : process.cwd();
  const allow = (Array.isArray(values.allow) ? values.allow : []).filter((dir): dir is string => typeof dir === 'string');
  // Writes go only to the data folder and the --allow folders, never into the app's own files or
  // the models folder, even where those lie inside one of them.
  const files = parentPort
    ? ANY_PATH
    : allowedFolders([dataDir, modelsDir, ...allow], dataDir, { writable: [dataDir, ...allow], protect: [root, modelsDir] });
  const host = new EngineHost({ version: packageVersion(root), modelsDir, dataDir, files });

  let exiting = false;
  const exit = (code: number) => {
    if (exiting) return;
    exiting = true;
    void host.shutdown().finally(() => process.exit(code));
  };
  process.on('SIGTERM', () => exit(0));
  process.on('SIGINT', () => exit(0));

  if (parentPort) {
    // Electron utility process: messages carrying ports hand over renderer connections; plain
    // messages are requests from main itself (menu actions).
    const fromMain: HostPort = {
      post: (event) => parentPort.postMessage(event),
      onMessage(listener) {
        parentPort.on('message', (e) => {
          if (e.ports && e.ports.length > 0) {
            for (const port of e.ports) host.attach(messagePortMainPort(port));
          } else {
            listener(e.data);
          }
        });
      },
      onClose() {
        // the parent port lives as long as the process
      },
      close() {},
    };
    host.attach(fromMain, { broadcasts: false });
  } else if (process.send) {
    attachForkedChannel(process, (port, options) => host.attach(port, options));
    process.on('disconnect', () => exit(0)); // the parent went away
  } else {
    process.stderr.write('engine host: start it through the app, `echo-studio serve` or the CLI; it has no channel to talk on\n');
    process.exit(2);
  }
}

main();
