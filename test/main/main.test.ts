// Electron's main process with Electron itself stood in for (the binary is not installable
// offline): checks the security settings and the engine plumbing main.ts sets up.
import path from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { IPC_CHANNELS } from '../../src/shared/messages.js';

type Listener = (...args: any[]) => unknown;

const fake = vi.hoisted(() => {
  const on = () => {
    const listeners = new Map<string, Listener[]>();
    return {
      listeners,
      on(event: string, listener: Listener) {
        listeners.set(event, [...(listeners.get(event) ?? []), listener]);
        return this;
      },
      once(event: string, listener: Listener) {
        return this.on(event, listener);
      },
      emit(event: string, ...args: unknown[]) {
        for (const listener of listeners.get(event) ?? []) listener(...args);
      },
    };
  };
  const state = {
    privileged: [] as unknown[],
    protocolHandlers: new Map<string, Listener>(),
    ipcHandlers: new Map<string, Listener>(),
    windows: [] as any[],
    forks: [] as any[],
    menu: null as unknown,
    permissionHandler: null as Listener | null,
    app: on(),
    readyResolve: () => {},
  };
  class BrowserWindow {
    static getAllWindows = () => state.windows;
    options: any;
    events = on();
    webContents: any;
    loaded: string | null = null;
    constructor(options: unknown) {
      this.options = options;
      const contents = on();
      this.webContents = Object.assign(contents, {
        posted: [] as Array<{ channel: string; ports: unknown[] }>,
        sent: [] as Array<{ channel: string; args: unknown[] }>,
        postMessage(channel: string, _message: unknown, ports: unknown[]) {
          this.posted.push({ channel, ports });
        },
        send(channel: string, ...args: unknown[]) {
          this.sent.push({ channel, args });
        },
      });
      state.windows.push(this);
    }
    on(event: string, listener: Listener) {
      this.events.on(event, listener);
    }
    once(event: string, listener: Listener) {
      this.events.on(event, listener);
    }
    show() {}
    async loadURL(url: string) {
      this.loaded = url;
    }
  }
  return { state, on, BrowserWindow };
});

vi.mock('electron', () => {
  const { state, on, BrowserWindow } = fake;
  let portCount = 0;
  return {
    app: Object.assign(state.app, {
      whenReady: () => new Promise<void>((resolve) => (state.readyResolve = resolve)),
      quit: vi.fn(),
      exit: vi.fn(),
      getPath: (name: string) => `/profile/${name}`,
    }),
    BrowserWindow,
    dialog: { showOpenDialog: vi.fn(), showSaveDialog: vi.fn() },
    ipcMain: { handle: (channel: string, handler: Listener) => state.ipcHandlers.set(channel, handler) },
    Menu: { buildFromTemplate: (template: unknown) => template, setApplicationMenu: (menu: unknown) => (state.menu = menu) },
    MessageChannelMain: class {
      port1 = { id: ++portCount };
      port2 = { id: ++portCount };
    },
    net: { fetch: vi.fn() },
    protocol: {
      registerSchemesAsPrivileged: (schemes: unknown[]) => state.privileged.push(...schemes),
      handle: (scheme: string, handler: Listener) => state.protocolHandlers.set(scheme, handler),
    },
    session: { defaultSession: { setPermissionRequestHandler: (handler: Listener) => (state.permissionHandler = handler) } },
    utilityProcess: {
      fork: (modulePath: string, args: string[], options: unknown) => {
        const child = Object.assign(on(), { modulePath, args, options, posted: [] as unknown[][], postMessage: (m: unknown, ports?: unknown[]) => child.posted.push([m, ports]), kill: vi.fn() });
        state.forks.push(child);
        return child;
      },
    },
  };
});

const { state } = fake;

beforeAll(async () => {
  await import('../../src/main/main.js');
  state.readyResolve();
  await new Promise((resolve) => setTimeout(resolve, 0));
});

describe('Electron main', () => {
  it('registers app:// as a privileged scheme and serves it', () => {
    expect(state.privileged).toEqual([{ scheme: 'app', privileges: { standard: true, secure: true, supportFetchAPI: true } }]);
    expect(state.protocolHandlers.has('app')).toBe(true);
  });

  it('opens one sandboxed, isolated window on the app entry', () => {
    expect(state.windows).toHaveLength(1);
    const [win] = state.windows;
    expect(win.options.webPreferences).toMatchObject({ contextIsolation: true, sandbox: true, nodeIntegration: false, webSecurity: true });
    expect(win.options.webPreferences.preload).toMatch(/preload\.cjs$/);
    expect(win.loaded).toBe('app://studio/index.html');
  });

  it('denies new windows, foreign navigation, webviews and permissions', () => {
    const contents = Object.assign(fake.on(), { windowOpenHandler: null as Listener | null, setWindowOpenHandler(h: Listener) { this.windowOpenHandler = h; } });
    state.app.emit('web-contents-created', {}, contents);
    expect(contents.windowOpenHandler?.({ url: 'https://example.com' })).toEqual({ action: 'deny' });
    const prevented = (event: string, url: string) => {
      const e = { preventDefault: vi.fn() };
      contents.emit(event, e, url);
      return e.preventDefault.mock.calls.length > 0;
    };
    expect(prevented('will-navigate', 'https://evil.example/')).toBe(true);
    expect(prevented('will-navigate', 'app://studio/index.html')).toBe(false);
    expect(prevented('will-redirect', 'file:///etc/passwd')).toBe(true);
    const webview = { preventDefault: vi.fn() };
    contents.emit('will-attach-webview', webview);
    expect(webview.preventDefault).toHaveBeenCalled();
    const answer = vi.fn();
    state.permissionHandler?.({}, 'camera', answer);
    expect(answer).toHaveBeenCalledWith(false);
  });

  it('starts the engine host as a utility process and hands each page load a port to it', () => {
    expect(state.forks).toHaveLength(1);
    const [engine] = state.forks;
    expect(path.basename(engine.modulePath)).toBe('engine-host.js');
    expect(engine.args[0]).toBe('--models-dir');
    // Quick-study reports go to the app's folder in the user's profile.
    expect(engine.args.slice(2)).toEqual(['--data-dir', '/profile/userData']);
    const [win] = state.windows;
    win.webContents.emit('did-finish-load');
    expect(engine.posted).toHaveLength(1);
    const [, enginePorts] = engine.posted[0];
    const rendererPort = win.webContents.posted.find((p: { channel: string }) => p.channel === IPC_CHANNELS.enginePort);
    expect(enginePorts).toHaveLength(1);
    expect(rendererPort.ports).toHaveLength(1);
    expect(rendererPort.ports[0]).not.toBe(enginePorts[0]);
  });

  it('restarts a crashed engine host, tells the renderer, and reconnects it', () => {
    const [engine] = state.forks;
    const [win] = state.windows;
    engine.emit('exit', 3);
    expect(win.webContents.sent).toContainEqual({ channel: IPC_CHANNELS.engineGone, args: ['the engine host stopped (exit code 3); restarting it (1/3)'] });
    expect(state.forks).toHaveLength(2);
    expect(state.forks[1].posted).toHaveLength(1);
  });

  it('answers dialog IPC only from the app frame of its own window', async () => {
    const handler = state.ipcHandlers.get(IPC_CHANNELS.chooseModelFolder)!;
    const [win] = state.windows;
    expect(() => handler({ senderFrame: { url: 'https://evil.example/' }, sender: win.webContents })).toThrow(/untrusted frame/);
    expect(() => handler({ senderFrame: { url: 'app://studio/index.html' }, sender: {} })).toThrow(/untrusted frame/);
    const exportHandler = state.ipcHandlers.get(IPC_CHANNELS.chooseExportPath)!;
    expect(() => exportHandler({ senderFrame: { url: 'app://studio/index.html' }, sender: win.webContents }, 'xml')).toThrow(/unknown export format/);
  });

  it('has a File menu with open model folder, open trace, open report folder, export trace and quit', () => {
    const file = (state.menu as Array<{ label?: string; submenu?: Array<{ label?: string }> }>).find((m) => m.label === 'File');
    const labels = file?.submenu?.map((item) => item.label).filter(Boolean);
    expect(labels).toEqual(['Open Model Folder…', 'Open Trace…', 'Open Report Folder…', 'Export Trace', 'Quit']);
  });

  it('opens a report folder chosen in the dialog in the engine host', async () => {
    const { dialog } = await import('electron');
    vi.mocked(dialog.showOpenDialog).mockResolvedValueOnce({ canceled: false, filePaths: ['/reports/quick-2026-12-01'] });
    const file = (state.menu as Array<{ label?: string; submenu?: Array<{ label?: string; click?: () => void }> }>).find((m) => m.label === 'File');
    const engine = state.forks.at(-1);
    const before = engine.posted.length;
    file?.submenu?.find((item) => item.label === 'Open Report Folder…')?.click?.();
    await vi.waitFor(() => expect(engine.posted.length).toBe(before + 1));
    expect(engine.posted.at(-1)[0]).toEqual({ type: 'report.open', dir: '/reports/quick-2026-12-01' });
  });
});
