// Starts `$SOVEREIGN_BIN demo` on a free port in a temporary data dir and reads its keys and
// address from stdout; launches Debian's chromium through playwright-core with a fresh profile.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

export const HERE = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(HERE, '../..');
export const BIN = process.env.SOVEREIGN_BIN || join(REPO, 'target/debug/sovereign');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.on('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

/** The demo gateway: {url, keys: {admin, member, auditor}, stop()}. */
export async function startDemo(timeoutMs = 30_000) {
  if (!existsSync(BIN)) throw new Error(`${BIN} does not exist: build it (cargo build -p sovereign) or set SOVEREIGN_BIN`);
  const dir = mkdtempSync(join(tmpdir(), 'sovereign-console-'));
  const port = await freePort();
  const proc = spawn(BIN, ['demo', '--listen', `127.0.0.1:${port}`, '--data-dir', join(dir, 'data')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stderr.on('data', (d) => { err = (err + d).slice(-20_000); });
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const info = await new Promise((ok, fail) => {
      const keys = {};
      const timer = setTimeout(() => fail(new Error(`no "listening on" within ${timeoutMs} ms\n${out}\n${err}`)), timeoutMs);
      proc.on('exit', (code, signal) => { clearTimeout(timer); fail(new Error(`sovereign demo exited (${code ?? signal})\n${out}\n${err}`)); });
      proc.stdout.on('data', (d) => {
        out += d;
        for (const line of out.split('\n')) {
          const m = /^key (admin|member|auditor) (\S+)/.exec(line.trim()) || /^listening on (\S+)/.exec(line.trim());
          if (m && m.length === 3) keys[m[1]] = m[2];
          else if (m) { clearTimeout(timer); ok({ url: m[1], keys }); }
        }
      });
    });
    proc.removeAllListeners('exit');
    return { ...info, dir, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** Chromium with a fresh profile under `dir`; no downloads, no network beyond the gateway. */
export async function launchBrowser(dir) {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y --no-install-recommends chromium`);
  return chromium.launchPersistentContext(join(dir, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 860 },
    acceptDownloads: true,
  });
}
