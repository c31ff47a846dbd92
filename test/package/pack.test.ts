/**
 * The package as people install it: `npm pack` (its size printed), the tarball installed into a
 * scratch project, where TypeScript files import the engine, the client and the protocol by the
 * package's name and type-check under `moduleResolution` `nodenext` and `bundler`, a misspelt
 * param (`titel`) is a type error, and the examples run from the tarball: (a) the engine in
 * process with a custom world, (b) the client driving the tarball's own daemon (it adds a task
 * and receives its event), (c) an AI SDK agent loop as your own runtime on the heartbeat (its resume
 * delivered by webhook from the tarball's daemon, acknowledged, reported done).
 *
 * Needs a full build (`npm run build`: dist/ with declarations and schemas, web/dist); `npm test`
 * builds first. Dependencies come from npm's cache (or the registry); better-sqlite3's native
 * build is taken from this checkout instead of compiled again.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/cli.js';
import { startModelServer } from '../support/model-server.js';
import { expectExampleRan, scriptAgent } from '../runtimes/example-script.js';

const run = promisify(execFile);
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const NPM_TIMEOUT_MS = 240_000;

let scratch: string;
let tarball: string;
let packed: { size: number; unpackedSize: number; files: { path: string }[] };

const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

beforeAll(async () => {
  for (const built of ['dist/sdk/index.d.ts', 'dist/client/index.d.ts', 'dist/openapi.json', 'web/dist/index.html']) {
    if (!existsSync(path.join(ROOT, built))) throw new Error(`${built} is missing: run \`npm run build\` first (npm test does).`);
  }
  scratch = mkdtempSync(path.join(os.tmpdir(), 'subc-pack-'));
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: ROOT, timeout: NPM_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 });
  const [info] = JSON.parse(stdout) as Array<typeof packed & { filename: string }>;
  packed = info!;
  tarball = path.join(scratch, info!.filename);
  console.log(
    `[pack] ${info!.filename}: ${(info!.size / 1024).toFixed(0)} kB packed, ${(info!.unpackedSize / 1024 / 1024).toFixed(2)} MB unpacked, ${info!.files.length} files`,
  );

  const app = path.join(scratch, 'app');
  mkdirSync(path.join(app, 'src'), { recursive: true });
  writeFileSync(
    path.join(app, 'package.json'),
    JSON.stringify({
      name: 'scratch-app',
      private: true,
      type: 'module',
      dependencies: { [pkg.name]: `file:${tarball}`, zod: pkg.dependencies.zod },
      devDependencies: { '@types/node': pkg.devDependencies['@types/node'] },
    }),
  );
  // Scripts off: better-sqlite3 would compile again; this checkout's build of it is copied in.
  await run('npm', ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: app, timeout: NPM_TIMEOUT_MS });
  cpSync(path.join(ROOT, 'node_modules', 'better-sqlite3', 'build'), path.join(app, 'node_modules', 'better-sqlite3', 'build'), { recursive: true });
  for (const example of ['embed-engine.ts', 'drive-daemon.ts', 'external-runtime.ts'])
    cpSync(path.join(ROOT, 'examples', example), path.join(app, 'src', example));
  const base = { strict: true, target: 'ES2022', lib: ['ES2023', 'DOM'], types: ['node'], skipLibCheck: true, exactOptionalPropertyTypes: true };
  // Incremental: each project is checked twice (with the typo, then without), and the second check
  // re-uses what the first learnt of the unchanged files instead of checking them all again.
  const incremental = (name: string) => ({ incremental: true, tsBuildInfoFile: `tsbuildinfo/${name}.json` });
  writeFileSync(
    path.join(app, 'tsconfig.nodenext.json'),
    JSON.stringify({
      compilerOptions: { ...base, ...incremental('nodenext'), module: 'NodeNext', moduleResolution: 'NodeNext', outDir: 'build' },
      include: ['src'],
    }),
  );
  writeFileSync(
    path.join(app, 'tsconfig.bundler.json'),
    JSON.stringify({
      compilerOptions: { ...base, ...incremental('bundler'), module: 'Preserve', moduleResolution: 'Bundler', noEmit: true },
      include: ['src'],
    }),
  );
}, 600_000);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const appDir = () => path.join(scratch, 'app');

async function tsc(project: string): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await run(process.execPath, [TSC, '-p', project], { cwd: appDir(), timeout: 180_000 });
    return { code: 0, out: stdout };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

describe('the packed tarball', () => {
  it('holds what runs (dist with declarations, the built page, README, LICENSE) and no source maps or sources', () => {
    const files = packed.files.map((f) => f.path);
    for (const f of [
      'package.json',
      'README.md',
      'LICENSE',
      'bin/subconscious.js',
      'dist/sdk/index.js',
      'dist/sdk/index.d.ts',
      'dist/client/index.d.ts',
      'dist/protocol/index.d.ts',
      'dist/openapi.json',
      'web/dist/index.html',
    ])
      expect(files, f).toContain(f);
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
    expect(files.filter((f) => f.startsWith('src/') || f.startsWith('test/'))).toEqual([]);
  });

  it('type-checks imports of the engine, the client and the protocol by name under nodenext and bundler; `titel` is a type error', async () => {
    const typo = path.join(appDir(), 'src', 'typo.ts');
    writeFileSync(
      typo,
      [
        "import { createClient } from 'subconscious-engine/client';",
        "import { createApp, productModules } from 'subconscious-engine';",
        "import type { ProductMethods } from 'subconscious-engine/protocol';",
        'export type Methods = keyof ProductMethods;',
        'export const start = () => createApp({ workspace: ".", modules: productModules });',
        "const client = createClient({ url: 'http://127.0.0.1:7777', token: 't' });",
        "export const added = client.call('subconscious.tasks_add', { titel: 'Check urgent emails' });",
      ].join('\n'),
    );
    try {
      for (const project of ['tsconfig.nodenext.json', 'tsconfig.bundler.json']) {
        const result = await tsc(project);
        expect(result.code, `${project}: ${result.out}`).not.toBe(0);
        // The only error is the misspelt param: the rest of the file and the examples check.
        const errors = result.out.split('\n').filter((l) => /error TS\d+/.test(l));
        expect(errors.length, result.out).toBe(1);
        expect(errors[0]).toMatch(/src\/typo\.ts.*'titel'/);
      }
    } finally {
      rmSync(typo);
    }
    for (const project of ['tsconfig.nodenext.json', 'tsconfig.bundler.json']) {
      const clean = await tsc(project);
      expect(clean, project).toEqual({ code: 0, out: '' });
    }
  }, 400_000);

  it('runs example (a): the engine in process with a custom world — a tick digests, the next is quiet', async () => {
    if (!existsSync(path.join(appDir(), 'build', 'embed-engine.js'))) expect(await tsc('tsconfig.nodenext.json')).toEqual({ code: 0, out: '' });
    const { stdout } = await run(process.execPath, ['build/embed-engine.js'], { cwd: appDir(), timeout: 60_000 });
    expect(stdout).toMatch(/event notes\.digested: \{"count":2,/);
    expect(stdout).toMatch(/tick: committed — digested 2 notes/);
    expect(stdout).toMatch(/tick: \w+ — nothing new/);
    expect(stdout).toMatch(/digest: "- Ask Dana about the contract\\n- Renew the domain"/);
    expect(stdout).toMatch(/status: notes ticks=2/);
  }, 120_000);

  it("runs example (b): the client drives the tarball's own daemon — adds a task and receives its event", async () => {
    if (!existsSync(path.join(appDir(), 'build', 'drive-daemon.js'))) expect(await tsc('tsconfig.nodenext.json')).toEqual({ code: 0, out: '' });
    const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-pack-ws-'));
    const bin = path.join(appDir(), 'node_modules', '.bin', 'subconscious');
    const daemon = spawn(process.execPath, [bin, 'start', '--workspace', workspace, '--port', '0'], {
      cwd: appDir(),
      env: { ...process.env, SUBCONSCIOUS_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const { url, token } = await pageUrl(daemon);
      const page = await fetch(`${url}/`);
      expect(await page.text()).toMatch(/<div id="root"|<script type="module"/); // the built page, not the "not built" note
      const { stdout } = await run(process.execPath, ['build/drive-daemon.js'], {
        cwd: appDir(),
        env: { ...process.env, SUBCONSCIOUS_URL: url, SUBCONSCIOUS_TOKEN: token },
        timeout: 60_000,
      });
      expect(stdout).toContain('daemon up: true');
      expect(stdout).toMatch(/added task [\w-]+: Check urgent emails/);
      expect(stdout).toContain('event tasks.changed: added our task');
      expect(stdout).toMatch(/tasks: \d+/);
      expect(stdout).toContain('typed error: not_found');
    } finally {
      daemon.kill('SIGTERM');
      await new Promise((r) => daemon.once('exit', r));
      rmSync(workspace, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('example (c) from the tarball', () => {
  it('an AI SDK agent loop registers its bot with the tarball’s daemon, gets the resume by webhook, acknowledges it and reports it done', async () => {
    if (!existsSync(path.join(appDir(), 'build', 'external-runtime.js'))) expect(await tsc('tsconfig.nodenext.json')).toEqual({ code: 0, out: '' });
    const agent = await startModelServer();
    scriptAgent(agent);
    const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-pack-ws-'));
    const bin = path.join(appDir(), 'node_modules', '.bin', 'subconscious');
    const daemon = spawn(process.execPath, [bin, 'start', '--workspace', workspace, '--port', '0'], {
      cwd: appDir(),
      // The daemon's own models are nowhere: the example's resume needs no pulse.
      env: {
        ...process.env,
        SUBCONSCIOUS_LOG_LEVEL: 'warn',
        SUBCONSCIOUS_LOCAL_BASE_URL: 'http://127.0.0.1:9/v1',
        SUBCONSCIOUS_AGENT_BASE_URL: 'http://127.0.0.1:9/v1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const { url, token } = await pageUrl(daemon);
      const { stdout } = await run(process.execPath, ['build/external-runtime.js'], {
        cwd: appDir(),
        env: { ...process.env, SUBCONSCIOUS_URL: url, SUBCONSCIOUS_TOKEN: token, AGENT_BASE_URL: agent.baseUrl, AGENT_MODEL: 'scripted-model' },
        timeout: 90_000,
      });
      expectExampleRan(stdout);
    } finally {
      daemon.kill('SIGTERM');
      await new Promise((r) => daemon.once('exit', r));
      await agent.close();
      rmSync(workspace, { recursive: true, force: true });
    }
  }, 150_000);
});

function pageUrl(child: ChildProcess): Promise<{ url: string; token: string }> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`the daemon did not start within 60 s:\n${out}`)), 60_000);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const m = /open (http:\/\/[^/\s]+)\/\?token=([\w-]+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[1]!, token: m[2]! });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the daemon exited with ${code}:\n${out}`));
    });
  });
}
