// Reports through the engine host: report.open reads a reproduction's folder (the committed quick
// report, one the host's own quick study wrote) and refuses anything else with one line that
// quotes no file; report.quick runs the real study on a tiny random pair with progress, one at a
// time and never beside a run, and report.cancel ends it leaving no folder behind.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EngineHost } from '../../src/host/host.js';
import { missingBuild, repoRoot } from './helpers.js';
import { connectClient, tinyConfig, useTinyPairHost } from './run-fixtures.js';

const fixture = useTinyPairHost('echo-host-reports-');
const COMMITTED = join(repoRoot, 'docs', 'reports', '2026-12-06-h100-quick');
const skipBuild = missingBuild();
if (skipBuild) console.warn(`skipping the quick study tests: ${skipBuild}`);

function newHost(dataDir: string) {
  mkdirSync(dataDir, { recursive: true });
  const host = new EngineHost({ version: 'test', modelsDir: fixture.modelsDir, dataDir, log: () => {} });
  return { host, client: connectClient(host) };
}

describe('report.open', () => {
  it('refuses a folder that is not a report with one line that quotes nothing from its files', async () => {
    const { host, client } = newHost(join(fixture.root, 'data-open'));
    const empty = join(fixture.root, 'not-a-report');
    mkdirSync(empty);
    const garbled = join(fixture.root, 'garbled');
    mkdirSync(garbled);
    writeFileSync(join(garbled, 'report.json'), 'SECRET-TOKEN-123 {');
    const foreign = join(fixture.root, 'foreign');
    mkdirSync(foreign);
    writeFileSync(join(foreign, 'report.json'), JSON.stringify({ kind: 'SECRET-KIND', meta: { password: 'SECRET-TOKEN-456' } }));
    const cases: Array<[string, RegExp]> = [
      [empty, /not-a-report is not a report folder: it has no report\.json/],
      [garbled, /garbled[/\\]report\.json is not valid JSON$/],
      [foreign, /foreign[/\\]report\.json is not a reproduction report/],
      [join(COMMITTED, 'report.json'), /report\.json is a file: choose the report's folder/],
      [join(fixture.root, 'missing'), /missing: no such folder/],
    ];
    for (const [dir, expected] of cases) {
      client.send({ type: 'report.open', dir });
      const error = await client.next('error');
      expect(error.message).toMatch(/^cannot open the report: /);
      expect(error.message).toMatch(expected);
      expect(error.message).not.toContain('\n');
      expect(error.message).not.toMatch(/SECRET/);
    }
    expect(client.events.filter((e) => e.type === 'report')).toEqual([]);
    await host.shutdown();
  });

  it("reads the committed quick report: how it was made, every claim's verdict, the tables and the page", async () => {
    const { host, client } = newHost(join(fixture.root, 'data-committed'));
    client.send({ type: 'report.open', dir: COMMITTED });
    const report = await client.next('report');
    const json = JSON.parse(readFileSync(join(COMMITTED, 'report.json'), 'utf8')) as { meta: { command: string; date: string }; claims: Array<{ id: string; verdict: string; measured: string }> };
    expect(report.dir).toBe(COMMITTED);
    expect(report.meta.command).toBe(json.meta.command);
    expect(report.meta.date).toBe(json.meta.date);
    expect(report.claims.map((c) => [c.id, c.verdict, c.measured])).toEqual(json.claims.map((c) => [c.id, c.verdict, c.measured]));
    expect(report.tables.map((t) => t.name)).toEqual(['table1.csv', 'throughput.csv', 'explain.csv', 'calibration.csv', 'utilisation.csv']);
    const table1 = report.tables[0];
    expect(table1.header.slice(0, 3)).toEqual(['domain', 'policy', 'paper_method']);
    // Every row as wide as the header, though cells quote commas (the paper's method names).
    for (const table of report.tables) for (const row of table.rows) expect(row).toHaveLength(table.header.length);
    expect(table1.rows.find((r) => r[1] === 'echo')?.[0]).toBe('code');
    expect(report.html).toMatch(/^<!doctype html>/);
    await host.shutdown();
  });
});

describe.skipIf(skipBuild !== null)('report.quick', () => {
  const small = () => ({ draftDir: fixture.pair.draftDir, targetDir: fixture.pair.targetDir, domains: ['code'], batches: [1, 2], requests: 2, maxNewTokens: 4 });

  it('runs the quick study into the data folder with progress, alone, and report.open reads what it wrote', async () => {
    const dataDir = join(fixture.root, 'data-quick');
    const { host, client } = newHost(dataDir);
    client.send({ type: 'report.quick', ...small() });
    const first = await client.next('progress', (e) => e.task === 'study');
    expect(first.done).toBe(0);
    // One study at a time, and no run beside it.
    client.send({ type: 'report.quick', ...small() });
    expect((await client.next('error')).message).toMatch(/already running/);
    client.send({ type: 'run.start', config: tinyConfig(fixture.pair) });
    expect((await client.next('error')).message).toMatch(/quick study is running/);

    const report = await client.next('report');
    const study = client.events.filter((e) => e.type === 'progress' && e.task === 'study') as Array<{ done: number; total: number; message?: string }>;
    const dones = study.map((e) => e.done);
    expect(dones).toEqual([...dones].sort((a, b) => a - b)); // never goes back
    expect(study.some((e) => /\[calibration 1\/1\] code/.test(e.message ?? ''))).toBe(true);
    expect(study.some((e) => e.done > 0 && e.done < e.total)).toBe(true);
    expect(study.at(-1)).toMatchObject({ done: study.at(-1)!.total, message: expect.stringContaining('report written to') });

    expect(readdirSync(join(dataDir, 'reports'))).toEqual([expect.stringMatching(/^quick-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d$/)]);
    expect(report.dir.startsWith(join(dataDir, 'reports'))).toBe(true);
    expect(report.meta.quick).toBe(true);
    expect(report.meta.settings.domains).toBe('code');
    expect(report.claims.length).toBeGreaterThan(5);
    for (const c of report.claims) expect(['holds', 'does not hold', 'not measurable here']).toContain(c.verdict);

    client.send({ type: 'report.open', dir: report.dir });
    const reopened = await client.next('report');
    expect(reopened.claims).toEqual(report.claims);
    expect(reopened.tables.find((t) => t.name === 'throughput.csv')!.rows.map((r) => r[1])).toEqual(expect.arrayContaining(['1', '2']));
    await host.shutdown();
  }, 240_000);

  it('cancels a running study, writes no report, and starts again afterwards', async () => {
    const dataDir = join(fixture.root, 'data-cancel');
    const { host, client } = newHost(dataDir);
    client.send({ type: 'report.cancel' });
    expect((await client.next('error')).message).toMatch(/no quick study is running/);
    client.send({ type: 'report.quick', ...small() });
    await client.next('progress', (e) => e.task === 'study' && /loading the pair/.test(e.message ?? ''));
    client.send({ type: 'report.cancel' });
    const end = await client.next('progress', (e) => e.task === 'study' && e.done === e.total);
    expect(end.message).toMatch(/cancelled; no report was written/);
    expect(readdirSync(join(dataDir, 'reports'))).toEqual([]);
    expect(client.events.filter((e) => e.type === 'report')).toEqual([]);
    // The next study is not refused: the first one is over.
    client.send({ type: 'report.quick', ...small() });
    await client.next('progress', (e) => e.task === 'study');
    client.send({ type: 'report.cancel' });
    await client.next('progress', (e) => e.task === 'study' && e.done === e.total);
    expect(client.events.filter((e) => e.type === 'error')).toHaveLength(1);
    await host.shutdown();
  }, 120_000);
});
