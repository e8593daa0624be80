// Electron main process: one window, the menu, native dialogs, and the plumbing between the
// renderer and the engine host. It never runs a model: the engine host is a utilityProcess, and
// the renderer talks to it directly over a MessagePort that main hands to both ends.
import { app, BrowserWindow, dialog, ipcMain, Menu, MessageChannelMain, net, protocol, session, utilityProcess, type IpcMainInvokeEvent, type UtilityProcess } from 'electron';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CONTENT_SECURITY_POLICY } from '../host/security.js';
import { engineRestarts, exitReason } from '../host/engine-restarts.js';
import { IPC_CHANNELS, parseEvent, parseRequest, TRACE_EXPORT_FORMATS, type EngineRequest, type TraceExportFormat } from '../shared/messages.js';
import { EXPORT_FILTERS, menuTemplate } from './menu.js';
import { APP_ENTRY_URL, APP_SCHEME, isAllowedNavigation, isTrustedSenderUrl, resolveAppFile, unpackedPath } from './security.js';

const distDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const appRoot = path.resolve(distDir, '..');
const rendererDir = path.join(distDir, 'renderer');
const preloadPath = path.join(distDir, 'preload', 'preload.cjs');
const engineHostEntry = path.join(distDir, 'host', 'engine-host.js');
// Native code (onnxruntime) cannot read inside app.asar; packaged models are unpacked next to it.
const modelsDir = unpackedPath(path.join(appRoot, 'assets', 'models'));

// An engine host that exits unasked is restarted, three times at most (src/host/engine-restarts.ts).
const restarts = engineRestarts('ECHO Studio');

// Must happen before 'ready': app:// behaves like https (secure context, fetch, relative URLs).
protocol.registerSchemesAsPrivileged([
  { scheme: APP_SCHEME, privileges: { standard: true, secure: true, supportFetchAPI: true } },
]);

let mainWindow: BrowserWindow | null = null;
let engine: UtilityProcess | null = null;
let quitting = false;

function startEngine(): void {
  // The studio's data folder (its quick-study reports): the app's own folder in the user's profile.
  const child = utilityProcess.fork(engineHostEntry, ['--models-dir', modelsDir, '--data-dir', app.getPath('userData')], {
    serviceName: 'ECHO Studio engine host',
    stdio: 'inherit',
  });
  engine = child;
  // Replies to main's own requests (menu actions) come back here; the renderer hears them too.
  child.on('message', (data: unknown) => {
    const parsed = parseEvent(data);
    if (parsed.ok) mainWindow?.webContents.send(IPC_CHANNELS.engineEvent, parsed.value);
  });
  child.on('exit', (code) => {
    if (engine === child) engine = null;
    if (quitting) return;
    const { restart, message } = restarts.gone(exitReason(code));
    mainWindow?.webContents.send(IPC_CHANNELS.engineGone, message);
    if (restart) {
      startEngine();
      connectRenderer();
    }
  });
}

/** Gives the renderer a fresh MessagePort straight to the engine host. */
function connectRenderer(): void {
  if (!engine || !mainWindow) return;
  const { port1, port2 } = new MessageChannelMain();
  engine.postMessage({ type: 'attach' }, [port1]);
  mainWindow.webContents.postMessage(IPC_CHANNELS.enginePort, null, [port2]);
}

function sendToEngine(request: EngineRequest): void {
  const parsed = parseRequest(request);
  if (!parsed.ok) throw new Error(parsed.error);
  engine?.postMessage(parsed.value);
}

// ---- dialogs ---------------------------------------------------------------------------------

async function chooseFolder(title: string): Promise<string | null> {
  const options = { title, properties: ['openDirectory' as const] };
  const result = mainWindow ? await dialog.showOpenDialog(mainWindow, options) : await dialog.showOpenDialog(options);
  return result.canceled || result.filePaths.length === 0 ? null : result.filePaths[0];
}

function chooseModelFolder(): Promise<string | null> {
  return chooseFolder('Open model folder (Hugging Face format)');
}

async function chooseTraceFile(): Promise<string | null> {
  const options = {
    title: 'Open trace',
    properties: ['openFile' as const],
    filters: [{ name: 'ECHO traces', extensions: ['jsonl'] }, { name: 'All files', extensions: ['*'] }],
  };
  const result = mainWindow ? await dialog.showOpenDialog(mainWindow, options) : await dialog.showOpenDialog(options);
  return result.canceled || result.filePaths.length === 0 ? null : result.filePaths[0];
}

async function chooseExportPath(format: TraceExportFormat): Promise<string | null> {
  const options = { title: 'Export trace', filters: [EXPORT_FILTERS[format]] };
  const result = mainWindow ? await dialog.showSaveDialog(mainWindow, options) : await dialog.showSaveDialog(options);
  return result.canceled || !result.filePath ? null : result.filePath;
}

function trustedSender(event: IpcMainInvokeEvent): void {
  const url = event.senderFrame?.url;
  if (!isTrustedSenderUrl(url) || event.sender !== mainWindow?.webContents) {
    throw new Error(`refused IPC from an untrusted frame (${url ?? 'unknown'})`);
  }
}

ipcMain.handle(IPC_CHANNELS.chooseModelFolder, (event) => {
  trustedSender(event);
  return chooseModelFolder();
});
ipcMain.handle(IPC_CHANNELS.chooseTraceFile, (event) => {
  trustedSender(event);
  return chooseTraceFile();
});
ipcMain.handle(IPC_CHANNELS.chooseExportPath, (event, format: unknown) => {
  trustedSender(event);
  if (!TRACE_EXPORT_FORMATS.includes(format as TraceExportFormat)) throw new Error(`unknown export format ${String(format)}`);
  return chooseExportPath(format as TraceExportFormat);
});

// ---- window ----------------------------------------------------------------------------------

function createWindow(): void {
  const win = new BrowserWindow({
    width: 1440,
    height: 900,
    minWidth: 960,
    minHeight: 600,
    title: 'ECHO Studio',
    backgroundColor: '#0d1017',
    show: false,
    webPreferences: {
      preload: preloadPath,
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      webSecurity: true,
      spellcheck: false,
    },
  });
  mainWindow = win;
  win.once('ready-to-show', () => win.show());
  // Every (re)load of the page gets its own port; the old one closes with the old page.
  win.webContents.on('did-finish-load', () => connectRenderer());
  win.on('closed', () => {
    if (mainWindow === win) mainWindow = null;
  });
  void win.loadURL(APP_ENTRY_URL);
}

app.on('web-contents-created', (_event, contents) => {
  contents.setWindowOpenHandler(() => ({ action: 'deny' }));
  contents.on('will-navigate', (event, url) => {
    if (!isAllowedNavigation(url)) event.preventDefault();
  });
  contents.on('will-redirect', (event, url) => {
    if (!isAllowedNavigation(url)) event.preventDefault();
  });
  contents.on('will-attach-webview', (event) => event.preventDefault());
});

app.whenReady().then(() => {
  protocol.handle(APP_SCHEME, async (request) => {
    const file = resolveAppFile(rendererDir, request.url);
    if (!file) return new Response('not found', { status: 404 });
    const response = await net.fetch(pathToFileURL(file).toString());
    const headers = new Headers(response.headers);
    headers.set('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    headers.set('X-Content-Type-Options', 'nosniff');
    return new Response(response.body, { status: response.status, headers });
  });
  session.defaultSession.setPermissionRequestHandler((_contents, _permission, callback) => callback(false));

  Menu.setApplicationMenu(
    Menu.buildFromTemplate(
      menuTemplate(
        {
          openModelFolder: () => void chooseModelFolder().then((dir) => dir && sendToEngine({ type: 'model.open', dir })),
          openTrace: () => void chooseTraceFile().then((file) => file && sendToEngine({ type: 'trace.open', path: file })),
          openReportFolder: () => void chooseFolder('Open a reproduction report folder').then((dir) => dir && sendToEngine({ type: 'report.open', dir })),
          exportTrace: (format) => void chooseExportPath(format).then((file) => file && sendToEngine({ type: 'trace.export', path: file, format, overwrite: true })),
          quit: () => app.quit(),
        },
        process.platform === 'darwin',
      ),
    ),
  );

  startEngine();
  createWindow();
  app.on('activate', () => {
    if (BrowserWindow.getAllWindows().length === 0) createWindow();
  });
}, (err: unknown) => {
  console.error(`ECHO Studio could not start: ${String(err)}`);
  app.exit(1);
});

app.on('window-all-closed', () => {
  if (process.platform !== 'darwin') app.quit();
});

app.on('before-quit', () => {
  quitting = true;
  engine?.kill();
});
