// Bot processes against a real `capicua serve`: the example bot, signals, a bad token, a
// client killed and restarted mid-match, and a reconnect after the server restarts.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';

import { Lobby, runBot } from '../src/index.js';
import {
  NODE_DIR,
  recordingBot,
  recordingLogger,
  startServer,
  suiteServer,
  within,
} from './helpers.js';

const RANDOM_BOT = path.join(NODE_DIR, 'examples', 'random_bot.js');
const SLOW_BOT = path.join(NODE_DIR, 'test', 'fixtures', 'slow_bot.js');

describe('bot processes', { timeout: 120_000 }, () => {
  const suite = suiteServer();

  test('examples/random_bot.js --matches 1 plays a match and exits 0', async () => {
    const { botId, token } = await suite.newBot('node-example');
    const { match, host_token: hostToken } = await suite.lobby.createMatch({
      preset: 'block',
      seats: [`bot:${botId}`, 'cpu', `bot:${botId}`, 'cpu:medium'],
      token, // the bot's consent to reserve its seats
    });
    const child = suite.node(RANDOM_BOT, ['--matches', '1'], {
      CAPICUA_SERVER: suite.server.address,
      CAPICUA_TOKEN: token,
    });
    await child.waitFor(/connected to \S+ as bots\//, 10_000, 'the example connects');
    await suite.lobby.startMatch(match.name, hostToken);
    const exit = await child.exited(30_000);
    assert.deepEqual(exit, { code: 0, signal: null }, child.tail());
    assert.match(child.output, new RegExp(`${match.name} ended: NORMAL`));
    const finished = await suite.lobby.getMatch(match.name);
    assert.equal(finished.state, 'MATCH_STATE_FINISHED');
    assert.equal(finished.outcome.termination, 'TERMINATION_NORMAL');
  });

  for (const signal of ['SIGTERM', 'SIGINT']) {
    test(`random_bot.js stops cleanly on ${signal}`, async () => {
      const { token } = await suite.newBot('node-signal');
      const child = suite.node(RANDOM_BOT, [], { CAPICUA_SERVER: suite.server.address, CAPICUA_TOKEN: token });
      await child.waitFor(/connected to/, 10_000, 'the example connects');
      child.proc.kill(signal);
      const exit = await child.exited(5_000);
      assert.deepEqual(exit, { code: 0, signal: null }, child.tail());
      assert.match(child.output, new RegExp(`${signal}: closing the stream`));
      assert.match(child.output, /done after 0 match/);
    });
  }

  test('random_bot.js exits 2 with a clear message on a bad token', async () => {
    const child = suite.node(RANDOM_BOT, ['--matches', '1'], {
      CAPICUA_SERVER: suite.server.address,
      CAPICUA_TOKEN: 'wrong',
    });
    const exit = await child.exited(10_000);
    assert.equal(exit.code, 2, child.tail());
    assert.match(child.output, /refused the Play stream: .*UNAUTHENTICATED.*check the bot token/);
  });

  test('random_bot.js without a token says where to get one', async () => {
    const child = suite.node(RANDOM_BOT, [], { CAPICUA_SERVER: suite.server.address, CAPICUA_TOKEN: '' });
    const exit = await child.exited(10_000);
    assert.equal(exit.code, 2, child.tail());
    assert.match(child.output, /no bot token: .*CAPICUA_TOKEN/);
  });

  test('a client killed mid-match and restarted takes its seat back before the deadline', async () => {
    const { botId, token } = await suite.newBot('node-restart');
    // FORFEIT: had the seat not been taken back in time, the match would end DISCONNECT.
    const { match, host_token: hostToken } = await suite.lobby.createMatch({
      preset: 'block',
      seats: [`bot:${botId}`, 'cpu', `bot:${botId}`, 'cpu'],
      token, // the bot's consent to reserve its seats
      turnTimerMs: 10_000,
      onTimeout: 'forfeit',
    });
    const env = { CAPICUA_SERVER: suite.server.address, CAPICUA_TOKEN: token };
    const first = suite.node(SLOW_BOT, [], { ...env, SLOW_BOT_DELAY_MS: '40' });
    await first.waitFor(/connected to/, 10_000, 'the first client connects');
    await suite.lobby.startMatch(match.name, hostToken);
    await first.waitFor(/(decision \S+ \d+\n[^]*){3}/, 15_000, 'three decisions');
    first.proc.kill('SIGKILL');
    const killedAt = Date.now();
    assert.equal((await first.exited(5_000)).signal, 'SIGKILL');
    assert.equal((await suite.lobby.getMatch(match.name)).state, 'MATCH_STATE_RUNNING', 'mid-match');

    const second = suite.node(SLOW_BOT, [], { ...env, SLOW_BOT_DELAY_MS: '0' });
    await second.waitFor(new RegExp(`started ${match.name} seat [02]`), 10_000, 'seat resumed');
    await second.waitFor(new RegExp(`decision ${match.name} `), 10_000, 'asked again');
    assert.ok(Date.now() - killedAt < 10_000, 'back before the turn deadline');
    const exit = await second.exited(30_000);
    assert.deepEqual(exit, { code: 0, signal: null }, second.tail());
    assert.match(second.output, new RegExp(`ended ${match.name} TERMINATION_NORMAL`));
    const finished = await suite.lobby.getMatch(match.name);
    assert.equal(finished.outcome.termination, 'TERMINATION_NORMAL', finished.outcome.reason);
  });

  test('reconnects with backoff after the server restarts on the same address', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'capicua-node-restart-'));
    let own = await startServer({ dataDir });
    const ownLobby = () => new Lobby({ server: own.address });
    let lobby2 = ownLobby();
    try {
      const botId = `node-reconnect-${randomUUID().slice(0, 8)}`;
      const { token } = await lobby2.registerBot(botId);
      lobby2.close();
      const logger = recordingLogger('reconnect');
      const bot = recordingBot();
      const run = runBot(bot, {
        server: own.address,
        token,
        maxMatches: 1,
        logger,
        handleSignals: false,
        backoff: { initialMs: 100, maxMs: 1_000 },
      });
      run.catch(() => {}); // awaited below; avoid an unhandled rejection meanwhile
      await logger.waitFor(/connected to/, 10_000, 'first connection');

      await own.stop();
      await logger.waitFor(/reconnecting in/, 10_000, 'a reconnect is scheduled');
      own = await startServer({ port: own.port, dataDir });
      await within(
        15_000,
        (async () => {
          while (logger.lines.filter((l) => /connected to/.test(l)).length < 2) {
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        })(),
        'connected again',
      );

      // The bot token survived the restart; the bot plays a match on the new server.
      lobby2 = ownLobby();
      const { match, host_token: hostToken } = await lobby2.createMatch({
        preset: 'iq-1v1',
        seats: ['cpu', `bot:${botId}`],
        token, // the bot's consent to reserve its seats
      });
      await lobby2.startMatch(match.name, hostToken);
      const result = await within(30_000, run, 'the match on the restarted server');
      assert.deepEqual(result, { matches: 1, reason: 'maxMatches' });
      assert.equal(bot.ended[0].outcome.termination, 'TERMINATION_NORMAL');
    } finally {
      lobby2.close();
      await own.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
