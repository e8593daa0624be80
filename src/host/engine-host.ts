// Entry point of the engine host process. Started by Electron's main process as a utilityProcess
// (clients: the parent port, plus each MessagePort main hands over for a renderer) or by the web
// host / CLI with child_process.fork (client: the IPC channel). Models run here, never on
// Electron's main thread.
import { parseArgs } from 'node:util';
import { EngineHost } from './host.js';
import { findPackageRoot, packagePaths, packageVersion } from './paths.js';
import { attachForkedChannel, messagePortMainPort, type HostPort, type ParentPortLike } from './port.js';

function main(): void {
  const { values } = parseArgs({
    options: { 'models-dir': { type: 'string' } },
    allowPositionals: false,
    strict: false,
  });
  const root = findPackageRoot(import.meta.url);
  const modelsArg = values['models-dir'];
  const modelsDir = typeof modelsArg === 'string' ? modelsArg : process.env.ECHO_STUDIO_MODELS_DIR ?? packagePaths(root).modelsDir;
  const host = new EngineHost({ version: packageVersion(root), modelsDir });

  let exiting = false;
  const exit = (code: number) => {
    if (exiting) return;
    exiting = true;
    void host.shutdown().finally(() => process.exit(code));
  };
  process.on('SIGTERM', () => exit(0));
  process.on('SIGINT', () => exit(0));

  const parentPort = (process as NodeJS.Process & { parentPort?: ParentPortLike }).parentPort;
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
