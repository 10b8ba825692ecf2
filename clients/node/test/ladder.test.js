// Ladders on a real `capicua serve --ladder FILE`: a bot of this package joins with
// Lobby.joinLadder, its ladder matches come on its runBot stream, and the ladder's results
// directory rates it (read back with `capicua ladder show`); the refusals the server names.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, test } from 'node:test';

import { CapicuaError, ErrorReason, runBot } from '../src/index.js';
import {
  NODE_DIR,
  capicuaBin,
  recordingBot,
  recordingLogger,
  sleep,
  suiteServer,
  within,
} from './helpers.js';

const RANDOM_BOT = path.join(NODE_DIR, 'examples', 'random_bot.js');
const LADDER_FILE = path.join(NODE_DIR, 'test', 'fixtures', 'club-ladder.toml');
const LADDER = 'ladders/club-ladder'; // the id comes from the file's name, "Club ladder"
const PLAY_MS = 90_000;

/** `capicua ladder show DIR --json`: the ladder's published table, by entry name. */
async function ladderTable(dir) {
  const { stdout } = await promisify(execFile)(capicuaBin(), ['ladder', 'show', dir, '--json']);
  return Object.fromEntries(JSON.parse(stdout).entries.map((row) => [row.name, row]));
}

/** Resolves once `check()` is true, asking every 100 ms (the results are another process's). */
function until(check, ms, what) {
  return within(
    ms,
    (async () => {
      while (!(await check())) {
        await sleep(100);
      }
    })(),
    what,
  );
}

/** Rejects like `promise` with a CapicuaError of this code and reason; resolves to it. */
async function refused(promise, codeName, reason) {
  let caught = null;
  await assert.rejects(promise, (err) => {
    caught = err;
    return err instanceof CapicuaError;
  });
  assert.equal(caught.codeName, codeName, caught.message);
  assert.equal(caught.reason, reason, caught.message);
  return caught;
}

describe('ladders on a real server', { timeout: 180_000 }, () => {
  const suite = suiteServer({ args: ['--ladder', LADDER_FILE, '--max-versions-per-day', '2'] });

  /** The joined entries of the ladder now, by entry id ("bot@version"). */
  async function entries() {
    const { entries: all } = await suite.lobby.getLadder(LADDER);
    const prefix = `${LADDER}/entries/`;
    return Object.fromEntries(
      all.filter((e) => !e.built_in).map((e) => [e.name.slice(prefix.length), e]),
    );
  }

  /** The ladder's table, from its results directory in the server's data directory. */
  function table() {
    return ladderTable(path.join(suite.server.dataDir, 'ladders', 'club-ladder'));
  }

  /** Matches of `entry` the ladder's results directory holds (read while the server runs). */
  async function stored(entry) {
    return (await table())[entry]?.matches ?? 0;
  }

  test('the server lists its ladder with its built-in entries', async () => {
    const ladders = await suite.lobby.listLadders();
    assert.deepEqual(
      ladders.map((l) => [l.name, l.title, l.preset, l.overrides, l.turn_timer_ms]),
      [[LADDER, 'Club ladder', 'iq-1v1', ['target=20'], 5000]],
    );
    const { ladder, entries: all } = await suite.lobby.getLadder('club-ladder'); // the id alone too
    assert.equal(ladder.name, LADDER);
    assert.deepEqual(
      all.filter((e) => e.built_in).map((e) => e.name),
      [`${LADDER}/entries/random`, `${LADDER}/entries/easy`],
    );
  });

  test('a bot that joined gets its ladder matches on its Play stream, within its limit, and is rated', async () => {
    const { botId, token } = await suite.newBot('node-ladder');
    const entry = await suite.lobby.joinLadder(LADDER, 'v1', { maxConcurrentMatches: 2, token });
    assert.equal(entry.name, `${LADDER}/entries/${botId}@v1`);
    assert.equal(entry.bot, `bots/${botId}`);
    assert.equal(entry.version, 'v1');
    assert.equal(entry.predecessor, '');
    assert.equal(entry.state, 'ENTRY_STATE_ACTIVE');
    assert.equal(entry.max_concurrent_matches, 2);

    // Counts the ladder matches it holds at once (each is one seat of an iq-1v1 match).
    const bot = recordingBot();
    const now = new Set();
    let most = 0;
    bot.onMatchStarted = ({ match }) => {
      now.add(match);
      most = Math.max(most, now.size);
    };
    bot.onMatchEnded = (info) => {
      now.delete(info.match);
      bot.ended.push(info);
    };
    const logger = recordingLogger('ladder-bot');
    const { matches } = await within(
      PLAY_MS,
      runBot(bot, { server: suite.server.address, token, maxMatches: 4, handleSignals: false, logger }),
      'four ladder matches end',
    );
    assert.equal(matches, 4);
    assert.ok(most >= 1 && most <= 2, `at most 2 matches at once, held ${most}`);
    assert.deepEqual(bot.errors, []);
    // Rated sets' matches end normally; the entry's one-hand validation match ends at the
    // hand limit, or normally when that hand reached the target.
    const limited = bot.ended.filter(({ outcome }) => outcome.termination !== 'TERMINATION_NORMAL');
    assert.ok(limited.length <= 1, JSON.stringify(limited));
    for (const { outcome } of limited) {
      assert.equal(outcome.termination, 'TERMINATION_HAND_LIMIT', outcome.reason);
      assert.match(outcome.reason, /^max_hands=1 reached/);
    }
    for (const { match } of bot.ended.slice(0, 4)) {
      const played = await suite.lobby.getMatch(match);
      assert.equal(played.state, 'MATCH_STATE_FINISHED');
    }
    // The runner commits a match once it has its replay; the first is the entry's one-hand
    // validation match, which rates nothing: the table counts three or more.
    const id = `${botId}@v1`;
    await until(async () => (await stored(id)) >= 3, PLAY_MS, 'the ladder commits the matches');
    const row = (await table())[id];
    assert.equal(row.spec, `remote:${botId} version v1`);

    const left = await suite.lobby.leaveLadder(LADDER, { token });
    assert.equal(left.name, entry.name);
    assert.equal(left.state, 'ENTRY_STATE_LEFT');
    assert.equal((await entries())[id].state, 'ENTRY_STATE_LEFT');
  });

  test('a new version is a new entry after the old one; limits and mistakes are refused by name', async () => {
    const { botId, token } = await suite.newBot('node-versions');
    const first = await suite.lobby.joinLadder(LADDER, 'v1', { token });
    assert.equal(first.max_concurrent_matches, 1, 'one match at a time by default');
    const again = await suite.lobby.joinLadder(LADDER, 'v1', { maxConcurrentMatches: 3, token });
    assert.equal(again.name, first.name);
    assert.equal(again.max_concurrent_matches, 3);
    const second = await suite.lobby.joinLadder(LADDER, 'v2.beta_1-x', { token });
    assert.equal(second.predecessor, first.name);
    const now = await entries();
    assert.equal(now[`${botId}@v1`].state, 'ENTRY_STATE_SUPERSEDED');
    assert.equal(now[`${botId}@v2.beta_1-x`].state, 'ENTRY_STATE_ACTIVE');

    // the server was started with --max-versions-per-day 2
    const limited = await refused(
      suite.lobby.joinLadder(LADDER, 'v3', { token }),
      'RESOURCE_EXHAUSTED',
      ErrorReason.TOO_MANY_ENTRIES,
    );
    assert.equal(limited.metadata.limit, '2');
    assert.match(limited.details, /--max-versions-per-day/);

    const missing = await refused(
      suite.lobby.joinLadder('ladders/no-such-ladder', 'v1', { token }),
      'NOT_FOUND',
      ErrorReason.LADDER_NOT_FOUND,
    );
    assert.equal(missing.metadata.field, 'ladder');
    for (const [version, most, field] of [
      ['v 1', 1, 'version'],
      ['x'.repeat(33), 1, 'version'],
      ['v1', 33, 'max_concurrent_matches'],
    ]) {
      const bad = await refused(
        suite.lobby.joinLadder(LADDER, version, { maxConcurrentMatches: most, token }),
        'INVALID_ARGUMENT',
        ErrorReason.INVALID_ARGUMENT,
      );
      assert.ok(bad.details.startsWith(`${field}: `), bad.message);
    }

    await suite.lobby.leaveLadder(LADDER, { token });
    const notOn = await refused(
      suite.lobby.leaveLadder(LADDER, { token }),
      'FAILED_PRECONDITION',
      ErrorReason.NOT_ON_LADDER,
    );
    assert.equal(notOn.metadata.ladder, LADDER);
    await refused(
      suite.lobby.joinLadder(LADDER, 'v1', { token: 'bot_not-a-real-token' }),
      'UNAUTHENTICATED',
      ErrorReason.BAD_TOKEN,
    );
  });

  test('examples/random_bot.js --ladder joins before it plays, and a bad --version is one line, exit 2', async () => {
    const { botId, token } = await suite.newBot('node-example-ladder');
    const env = { CAPICUA_SERVER: suite.server.address, CAPICUA_TOKEN: token };
    const bad = suite.node(RANDOM_BOT, ['--ladder', LADDER, '--version', 'v 1'], env);
    assert.equal((await bad.exited(30_000)).code, 2, bad.tail());
    assert.match(bad.output, /^random_bot: JoinLadder failed: INVALID_ARGUMENT: version: .*\n$/);
    assert.deepEqual(Object.keys(await entries()).filter((id) => id.startsWith(botId)), []);

    const args = ['--ladder', LADDER, '--version', 'v1', '--max-matches-at-once', '2', '--matches', '2'];
    const child = suite.node(RANDOM_BOT, args, env);
    await child.waitFor(/joined ladders\/club-ladder as \S+@v1 \(2 matches at once\)/, 30_000, 'the join');
    assert.equal((await child.exited(PLAY_MS)).code, 0, child.tail());
    assert.match(child.output, /done after 2 match\(es\)/);
    assert.equal((await entries())[`${botId}@v1`].max_concurrent_matches, 2);
  });
});
