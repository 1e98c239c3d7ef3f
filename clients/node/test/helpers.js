// Starts `$SOVEREIGN_BIN demo` on a free port in a temporary data dir, and reads its keys and
// address from stdout (clients/SPEC.md, "Tests").
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const BIN = process.env.SOVEREIGN_BIN || join(REPO, 'target/debug/sovereign');

export function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

/**
 * @returns {Promise<{url: string, keys: {admin: string, member: string, auditor: string},
 *   dataDir: string, ca: string|null, output: () => string, stop: () => Promise<void>}>}
 */
export async function startDemo({ tls = false, timeoutMs = 30_000 } = {}) {
  if (!existsSync(BIN)) {
    throw new Error(`the gateway binary ${BIN} does not exist: build it or set SOVEREIGN_BIN`);
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'sovereign-node-'));
  const port = await freePort();
  const args = ['demo', '--listen', `127.0.0.1:${port}`, '--data-dir', dataDir];
  if (tls) args.push('--tls');
  const proc = spawn(BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stderr.on('data', (d) => {
    err += d;
    if (err.length > 200_000) err = err.slice(-100_000);
  });
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  const info = await new Promise((ok, fail) => {
    const keys = {};
    let ca = null;
    const timer = setTimeout(() => {
      fail(new Error(`sovereign demo did not print "listening on" within ${timeoutMs} ms\nstdout:\n${out}\nstderr:\n${err.slice(-4000)}`));
    }, timeoutMs);
    proc.on('exit', (code, signal) => {
      clearTimeout(timer);
      fail(new Error(`sovereign demo exited (${code ?? signal})\nstdout:\n${out}\nstderr:\n${err.slice(-4000)}`));
    });
    proc.stdout.on('data', (d) => {
      out += d;
      for (const line of out.split('\n')) {
        let m;
        if ((m = /^key (admin|member|auditor) (\S+)/.exec(line.trim()))) keys[m[1]] = m[2];
        else if ((m = /^tls ca (\S+)/.exec(line.trim()))) ca = m[1];
        else if ((m = /^listening on (\S+)/.exec(line.trim()))) {
          clearTimeout(timer);
          ok({ url: m[1], keys, ca });
        }
      }
    });
  }).catch(async (e) => {
    await stop();
    throw e;
  });
  proc.stdout.resume();
  for (const role of ['admin', 'member', 'auditor']) {
    if (!info.keys[role]) {
      await stop();
      throw new Error(`sovereign demo printed no "key ${role}" line:\n${out}`);
    }
  }
  return { ...info, dataDir, output: () => out + err, stop };
}

/** Is the answer a 404 of a route the binary does not have yet (the checkpoint routes)? */
export function isMissingRoute(e) {
  return (e?.status === 404 || e?.status === 405) && /Unknown path|is not allowed on/.test(String(e?.message));
}
