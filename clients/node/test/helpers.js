// Test helpers: a real `capicua serve` subprocess, child processes, bounded waits.

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Lobby } from '../src/index.js';

export const NODE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const SERVER_START_MS = 30_000;

/** The capicua executable: $CAPICUA_BIN, else `capicua` on PATH. */
export function capicuaBin() {
  return process.env.CAPICUA_BIN || 'capicua';
}

/** Reject after `ms` with `what` in the message; otherwise settle like `promise`. */
export function within(ms, promise, what = 'operation') {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * A child process whose output is collected; `waitFor(regex, ms)` resolves with the first
 * match in stdout+stderr (already printed or still to come), `exited(ms)` with
 * {code, signal}.
 */
export class Child {
  constructor(command, args, options = {}) {
    this.output = '';
    this.listeners = new Set();
    this.exit = null;
    this.proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
    this.exitPromise = new Promise((resolve) => {
      this.proc.on('error', (err) => {
        this.spawnError = err;
        this.exit = { code: null, signal: null, error: err };
        resolve(this.exit);
        this.notify();
      });
      this.proc.on('close', (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
        this.notify();
      });
    });
    for (const stream of [this.proc.stdout, this.proc.stderr]) {
      stream.setEncoding('utf8');
      stream.on('data', (chunk) => {
        this.output += chunk;
        if (this.output.length > 2_000_000) {
          this.output = this.output.slice(-1_000_000);
        }
        this.notify();
      });
    }
  }

  notify() {
    for (const check of [...this.listeners]) {
      check();
    }
  }

  waitFor(regex, ms, what = String(regex)) {
    return within(
      ms,
      new Promise((resolve, reject) => {
        const check = () => {
          const found = regex.exec(this.output);
          if (found) {
            this.listeners.delete(check);
            resolve(found);
          } else if (this.exit) {
            this.listeners.delete(check);
            reject(new Error(`exited (${JSON.stringify(this.exit)}) before ${what}:\n${this.tail()}`));
          }
        };
        this.listeners.add(check);
        check();
      }),
      `${what}; output:\n${this.tail()}`,
    );
  }

  exited(ms) {
    return within(ms, this.exitPromise, `process exit; output:\n${this.tail()}`);
  }

  tail(chars = 4000) {
    return this.output.slice(-chars);
  }

  /** Signal the process (if still running) and wait for it; SIGKILL after `ms`. */
  async kill(signal = 'SIGTERM', ms = 10_000) {
    if (!this.exit) {
      this.proc.kill(signal);
      try {
        await within(ms, this.exitPromise, 'exit after a signal');
      } catch {
        this.proc.kill('SIGKILL');
        await this.exitPromise;
      }
    }
    return this.exit;
  }
}

/**
 * Start `capicua serve --port PORT --data DIR` and wait for its `listening on HOST:PORT`.
 * Resolves to {address, port, dataDir, child, stop()}. `stop()` SIGTERMs it (SIGKILL after
 * 10 s) and removes the data directory if this call created it.
 */
export async function startServer({ port = 0, dataDir, args = [] } = {}) {
  const owned = !dataDir;
  const dir = dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'capicua-node-'));
  const child = new Child(capicuaBin(), [
    'serve',
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--data',
    dir,
    '--cpu-workers',
    '1',
    '--grace',
    '1',
    ...args,
  ]);
  let found;
  try {
    found = await child.waitFor(/listening on (\S+)/, SERVER_START_MS, 'capicua serve listening');
  } catch (err) {
    await child.kill('SIGKILL');
    if (owned) {
      rmSync(dir, { recursive: true, force: true });
    }
    if (child.spawnError?.code === 'ENOENT') {
      throw new Error(
        `cannot run '${capicuaBin()}': put the capicua executable on PATH (activate the ` +
          'Python virtualenv with capicua installed) or set CAPICUA_BIN',
      );
    }
    throw err;
  }
  const address = found[1];
  return {
    address,
    port: Number(address.slice(address.lastIndexOf(':') + 1)),
    dataDir: dir,
    child,
    async stop() {
      const exit = await child.kill('SIGTERM', 10_000);
      if (owned) {
        rmSync(dir, { recursive: true, force: true });
      }
      return exit;
    },
  };
}

/**
 * The `capicua serve` of one describe() (startServer's options), started by its before()
 * and stopped by its after(), with every process its tests started through `node()`.
 * `server` and `lobby` (a Lobby on it) are set once before() has run.
 */
export function suiteServer(options = {}) {
  const suite = {
    server: null,
    lobby: null,
    children: [],
    /** Register a bot `PREFIX-xxxxxxxx`; resolves to {botId, token}. */
    async newBot(prefix) {
      const botId = `${prefix}-${randomUUID().slice(0, 8)}`;
      const { token } = await suite.lobby.registerBot(botId);
      return { botId, token };
    },
    /** `node SCRIPT ARGS` with `env` over this process's (and CAPICUA_LOG unset). */
    node(script, args, env) {
      const child = new Child(process.execPath, [script, ...args], {
        env: { ...process.env, CAPICUA_LOG: '', ...env },
      });
      suite.children.push(child);
      return child;
    },
  };
  before(async () => {
    suite.server = await startServer(options);
    suite.lobby = new Lobby({ server: suite.server.address });
  });
  after(async () => {
    for (const child of suite.children) {
      await child.kill('SIGKILL');
    }
    suite.lobby?.close();
    await suite.server?.stop();
  });
  return suite;
}

/** A logger for runBot that records every line (printed too with CAPICUA_TEST_VERBOSE=1). */
export function recordingLogger(prefix = 'bot') {
  const lines = [];
  const verbose = Boolean(process.env.CAPICUA_TEST_VERBOSE);
  const make = (level) => (message) => {
    lines.push(`${level}: ${message}`);
    if (verbose) {
      console.error(`${new Date().toISOString()} [${prefix}] ${level}: ${message}`);
    }
  };
  return {
    lines,
    debug: make('debug'),
    info: make('info'),
    warn: make('warn'),
    error: make('error'),
    /** Resolves when a line matching `regex` was logged (checked every 20 ms). */
    waitFor(regex, ms, what = String(regex)) {
      return within(
        ms,
        (async () => {
          for (;;) {
            const line = lines.find((l) => regex.test(l));
            if (line) {
              return line;
            }
            await sleep(20);
          }
        })(),
        `${what}; log:\n${lines.slice(-30).join('\n')}`,
      );
    },
  };
}

/** Random legal action. */
export function randomChoice(view, legalActions) {
  return legalActions[Math.floor(Math.random() * legalActions.length)];
}

/** A bot that records everything it is told; `choice` decides (default: random). */
export function recordingBot(choice = randomChoice) {
  const bot = {
    started: [],
    decisions: [],
    events: [],
    hands: [],
    ended: [],
    errors: [],
    choose(view, legalActions, decision) {
      bot.decisions.push(decision);
      return choice(view, legalActions, decision, bot);
    },
    onMatchStarted(info) {
      bot.started.push(info);
    },
    onEvents(info) {
      bot.events.push(info);
    },
    onHandEnded(info) {
      bot.hands.push(info);
    },
    onMatchEnded(info) {
      bot.ended.push(info);
    },
    onError(err) {
      bot.errors.push(err);
    },
  };
  return bot;
}

/**
 * A TCP proxy to `address` on 127.0.0.1 (a free port): `cut()` drops every connection
 * through it (the client sees its stream fail with UNAVAILABLE), `close()` stops it.
 */
export async function startProxy(address) {
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon);
  const port = Number(address.slice(colon + 1));
  const sockets = new Set();
  const track = (socket) => {
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(port, host);
    track(client);
    track(upstream);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return {
    address: `127.0.0.1:${server.address().port}`,
    get connections() {
      return sockets.size;
    },
    cut() {
      for (const socket of sockets) {
        socket.destroy();
      }
    },
    close() {
      this.cut();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
