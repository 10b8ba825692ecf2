// Full matches on a real `capicua serve`, played by bots of this package over Play streams.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';

import { CapicuaError, ErrorReason, Lobby, WITHDRAWN, runBot } from '../src/index.js';
import {
  recordingBot,
  recordingLogger,
  sleep,
  startProxy,
  startServer,
  within,
} from './helpers.js';

const MATCH_MS = 30_000;

describe('matches on a real server', { timeout: 120_000 }, () => {
  let server;
  let lobby;

  before(async () => {
    server = await startServer();
    lobby = new Lobby({ server: server.address });
  });

  after(async () => {
    lobby?.close();
    await server?.stop();
  });

  async function newBot(prefix, reservableBy = []) {
    const botId = `${prefix}-${randomUUID().slice(0, 8)}`;
    const reply = await lobby.registerBot(botId, { description: 'node test bot', reservableBy });
    const { name, token } = reply;
    assert.equal(name, `bots/${botId}`);
    assert.deepEqual(reply.reservable_by, [...reservableBy].sort());
    assert.ok(token);
    return { botId, token };
  }

  function play(bot, token, options = {}) {
    const logger = recordingLogger(options.prefix ?? 'bot');
    const promise = runBot(bot, {
      server: server.address,
      token,
      handleSignals: false,
      logger,
      ...options,
    });
    return { promise, logger };
  }

  /**
   * Wait until the bot's stream is open (and its Hello sent) before starting a match: a
   * hand played out with forced moves only before the bot connects would reach it as
   * nothing but a resumed MatchStarted.
   */
  function connected(run) {
    return run.logger.waitFor(/connected to/, 10_000, 'the bot connects');
  }

  /** The replay agrees with what the bots were told. */
  async function checkReplay(matchName, outcome, seats) {
    const replay = await lobby.getReplay(matchName);
    assert.equal(`matches/${replay.match_id}`, matchName);
    assert.equal(replay.format_version, 1);
    assert.equal(replay.players.length, seats);
    assert.ok(replay.hands.length > 0, 'the replay has hands');
    for (const hand of replay.hands) {
      assert.ok(hand.deals.length > 0, `hand ${hand.hand} has a deal`);
      assert.ok(hand.events.length > 0, `hand ${hand.hand} has events`);
    }
    assert.match(replay.seed, /^\d+$/, 'uint64 seed as a decimal string');
    assert.deepEqual(replay.outcome, outcome);
    const match = await lobby.getMatch(matchName);
    assert.equal(match.state, 'MATCH_STATE_FINISHED');
    assert.deepEqual(match.outcome, outcome);
    return replay;
  }

  function checkEnded(bot, matchName) {
    const ended = bot.ended.filter((e) => e.match === matchName);
    assert.equal(ended.length, 1, 'onMatchEnded once per match');
    const { outcome } = ended[0];
    assert.ok(outcome, 'MatchEnded has an outcome');
    assert.equal(outcome.termination, 'TERMINATION_NORMAL', outcome.reason);
    assert.notEqual(outcome.winner, undefined, 'a normal end has a winner');
    return outcome;
  }

  /**
   * Play one block match on `seats` out with one recordingBot (`choose`; the other keys are
   * runBot's options) and check it ended normally. `token` is the bot's: its consent to
   * reserve its seats.
   */
  async function playOne({ seats, token, seed, choose, ...options }) {
    const { match, host_token: hostToken } = await lobby.createMatch({
      preset: 'block',
      seats,
      token,
      seed,
    });
    const bot = recordingBot(choose);
    const run = play(bot, token, { maxMatches: 1, ...options });
    // The server reads ask_forced when the match starts: be connected (Hello sent) first.
    await connected(run);
    await lobby.startMatch(match.name, hostToken);
    await within(MATCH_MS, run.promise, 'the match ends');
    checkEnded(bot, match.name);
    return { bot, match };
  }

  /** onHandEnded once per hand, in order, and onEvents for the match. */
  function checkHands(bot, matchName, replay) {
    const hands = bot.hands.filter((h) => h.match === matchName).map((h) => h.result.hand);
    const finished = replay.hands.filter((h) => h.result).map((h) => h.hand);
    assert.deepEqual(hands, finished);
    assert.ok(bot.events.some((e) => e.match === matchName && e.events.length > 0));
    const kinds = new Set(bot.events.flatMap((e) => e.events.map((ev) => ev.kind)));
    assert.ok(kinds.has('play'), `event kinds: ${[...kinds]}`);
  }

  test('block: 4 seats held by 2 Node bots over their streams', async () => {
    const a = await newBot('node-a');
    const b = await newBot('node-b', [`bots/${a.botId}`]); // a may reserve b's seats
    const seats = [`bot:${a.botId}`, `bot:${b.botId}`, `bot:${a.botId}`, `bot:${b.botId}`];
    // without a token neither bot consents; as b, a does not
    for (const token of [undefined, b.token]) {
      await assert.rejects(lobby.createMatch({ preset: 'block', seats, token }), (err) => {
        assert.equal(err.codeName, 'PERMISSION_DENIED');
        assert.equal(err.reason, 'NOT_RESERVABLE');
        return true;
      });
    }
    const { match, host_token: hostToken } = await lobby.createMatch({
      preset: 'block',
      seats,
      token: a.token,
    });
    assert.equal(match.state, 'MATCH_STATE_WAITING');
    assert.ok(hostToken);
    const botA = recordingBot();
    const botB = recordingBot();
    const runA = play(botA, a.token, { maxMatches: 1, prefix: 'a' });
    const runB = play(botB, b.token, { maxMatches: 1, prefix: 'b' });
    await connected(runA);
    await connected(runB);
    const started = await lobby.startMatch(match.name, hostToken);
    assert.notEqual(started.state, 'MATCH_STATE_WAITING');

    const [resultA, resultB] = await within(
      MATCH_MS,
      Promise.all([runA.promise, runB.promise]),
      'both bots finish the match',
    );
    assert.deepEqual(resultA, { matches: 1, reason: 'maxMatches' });
    assert.deepEqual(resultB, { matches: 1, reason: 'maxMatches' });

    assert.deepEqual(botA.started.map((s) => s.seat).sort(), [0, 2]);
    assert.deepEqual(botB.started.map((s) => s.seat).sort(), [1, 3]);
    for (const [bot, seats] of [
      [botA, [0, 2]],
      [botB, [1, 3]],
    ]) {
      assert.ok(bot.decisions.length > 0, 'the bot was asked');
      for (const d of bot.decisions) {
        assert.equal(d.match, match.name);
        assert.ok(seats.includes(d.seat), `decision for seat ${d.seat}`);
        assert.match(d.turnId, /^\d+$/, 'turn_id is a decimal string');
        assert.ok(d.deadline instanceof Date && d.deadline > 0, 'deadline as a Date');
        assert.equal(d.request.view.seat, d.seat);
        assert.deepEqual(
          d.request.legal_actions.map((x) => x.id),
          d.request.legal_actions.map((_, i) => i),
        );
      }
      assert.deepEqual(bot.errors, [], 'no in-stream errors');
    }
    const outcome = checkEnded(botA, match.name);
    assert.deepEqual(checkEnded(botB, match.name), outcome);
    const replay = await checkReplay(match.name, outcome, 4);
    checkHands(botA, match.name, replay);
    checkHands(botB, match.name, replay);
    assert.deepEqual(replay.players.slice(0, 2), [a.botId, b.botId]);
    assert.ok(runA.logger.lines.some((l) => /connected to .* as bots\/node-a-/.test(l)));
  });

  test('iq-1v1 against a CPU and cutthroat with two CPUs', async () => {
    const { botId, token } = await newBot('node-solo');
    const duel = await lobby.createMatch({
      preset: 'iq-1v1',
      seats: [`bot:${botId}`, 'cpu:medium'],
      token,
    });
    const three = await lobby.createMatch({
      preset: 'cutthroat',
      seats: ['cpu', `bot:${botId}`, 'cpu:medium'],
      token, // the bot's consent to reserve its seats
    });
    const bot = recordingBot();
    // One stream plays both matches at once.
    const run = play(bot, token, { maxMatches: 2 });
    await connected(run);
    await lobby.startMatch(duel.match.name, duel.host_token);
    await lobby.startMatch(three.match.name, three.host_token);
    const result = await within(MATCH_MS, run.promise, 'both matches end');
    assert.deepEqual(result, { matches: 2, reason: 'maxMatches' });

    // Decisions come only from these two matches (a match can end on forced moves alone,
    // without asking the bot anything: e.g. an iq-1v1 hand blocked by its opening double).
    const matchesAsked = new Set(bot.decisions.map((d) => d.match));
    for (const m of matchesAsked) assert.ok([duel.match.name, three.match.name].includes(m), m);
    assert.ok(matchesAsked.size >= 1, 'the bot decided something');
    const duelOutcome = checkEnded(bot, duel.match.name);
    checkHands(bot, duel.match.name, await checkReplay(duel.match.name, duelOutcome, 2));
    const threeOutcome = checkEnded(bot, three.match.name);
    assert.equal(threeOutcome.scores.length, 3, 'cutthroat: three sides');
    checkHands(bot, three.match.name, await checkReplay(three.match.name, threeOutcome, 3));
    assert.deepEqual(
      bot.started.map((s) => [s.match, s.seat]).sort(),
      [
        [duel.match.name, 0],
        [three.match.name, 1],
      ].sort(),
    );
  });

  test('an illegal action id gets ILLEGAL_ACTION in the stream and the decision again', async () => {
    const { botId, token } = await newBot('node-illegal');
    const { match, host_token: hostToken } = await lobby.createMatch({
      preset: 'iq-1v1',
      seats: [`bot:${botId}`, 'cpu'],
      token, // the bot's consent to reserve its seats
      // a fixed deal: with a random one the bot's every move can be forced (never asked)
      seed: 7,
    });
    let illegalSent = null;
    const bot = recordingBot((view, legalActions, decision, self) => {
      if (illegalSent === null) {
        illegalSent = decision.turnId;
        return legalActions.length + 7; // not one of the ids
      }
      return legalActions[0];
    });
    const run = play(bot, token, { maxMatches: 1 });
    await connected(run);
    await lobby.startMatch(match.name, hostToken);
    await within(MATCH_MS, run.promise, 'the match ends');

    assert.ok(illegalSent !== null);
    assert.equal(bot.errors.length, 1, 'exactly one in-stream error');
    const [err] = bot.errors;
    assert.ok(err instanceof CapicuaError);
    assert.equal(err.codeName, 'FAILED_PRECONDITION');
    assert.equal(err.reason, 'ILLEGAL_ACTION');
    assert.equal(err.metadata.match, match.name);
    assert.equal(err.metadata.turn_id, illegalSent);
    assert.match(err.details, /^action_id: /, 'the message starts with the field it is about');
    // Asked again: the same turn, then the match went on and ended normally.
    const [first, second] = bot.decisions;
    assert.equal(first.turnId, illegalSent);
    assert.equal(second.turnId, illegalSent, 'the same DecisionRequest is sent again');
    assert.deepEqual(second.request.legal_actions, first.request.legal_actions);
    assert.ok(bot.decisions.length > 2, 'the match went on');
    checkEnded(bot, match.name);
    assert.ok(
      run.logger.lines.some((l) => /^warn: .*FAILED_PRECONDITION\/ILLEGAL_ACTION: action_id: /.test(l)),
      'the error is logged with its reason',
    );
  });

  test('Hello{ask_forced}: single-option decisions are asked only when requested', async () => {
    const firstAction = (view, legalActions) => legalActions[0].text; // answer by text
    const single = async (askForced) => {
      const { botId, token } = await newBot('node-forced');
      const { bot, match } = await playOne({
        seats: [`bot:${botId}`, 'cpu', `bot:${botId}`, 'cpu'],
        token,
        seed: '18446744073709551557', // a uint64 above 2^53
        choose: firstAction,
        askForced,
      });
      const replay = await lobby.getReplay(match.name);
      assert.equal(replay.seed, '18446744073709551557');
      return bot.decisions.filter((d) => d.request.legal_actions.length === 1).length;
    };
    assert.equal(await single(false), 0, 'forced moves are not asked by default');
    assert.ok((await single(true)) > 0, 'forced moves are asked with askForced');
  });

  test('one message per decision (incremental) gives a bot the same full views', async () => {
    const { botId, token } = await newBot('node-incremental');
    const firstAction = (view, legalActions) => legalActions[0].id;
    const seen = async (incremental) => {
      const seats = [`bot:${botId}`, `bot:${botId}`, `bot:${botId}`, `bot:${botId}`];
      const { bot } = await playOne({ seats, token, seed: '5', choose: firstAction, incremental });
      return bot;
    };
    const asked = await seen(true);
    const full = await seen(false);
    assert.ok(asked.decisions.length > 0);
    assert.ok(asked.decisions.every((d) => d.request.incremental), 'incremental requests');
    assert.ok(full.decisions.every((d) => !d.request.incremental));
    assert.deepEqual(
      asked.decisions.map((d) => d.request.view),
      full.decisions.map((d) => d.request.view),
    );
    // each seat's events in order (the seats' batches interleave differently)
    const events = (bot, seat) =>
      bot.events.filter((e) => e.seat === seat).flatMap((e) => e.events);
    for (const seat of [0, 1, 2, 3]) {
      assert.deepEqual(events(asked, seat), events(full, seat), `seat ${seat}`);
    }
  });

  test('a stream dropped mid-match reconnects with backoff and takes its seats back', async () => {
    const { botId, token } = await newBot('node-drop');
    // FORFEIT: a seat not taken back before its deadline would end the match DISCONNECT.
    const { match, host_token: hostToken } = await lobby.createMatch({
      preset: 'block',
      seats: [`bot:${botId}`, 'cpu', `bot:${botId}`, 'cpu'],
      token, // the bot's consent to reserve its seats
      turnTimerMs: 10_000,
      onTimeout: 'forfeit',
    });
    const proxy = await startProxy(server.address);
    try {
      const bot = recordingBot(async (view, legalActions, decision, self) => {
        if (self.decisions.length <= 4) {
          await sleep(20); // a choice may be in flight when the connection drops
        }
        return legalActions[Math.floor(Math.random() * legalActions.length)];
      });
      const run = play(bot, token, {
        server: proxy.address,
        maxMatches: 1,
        backoff: { initialMs: 100, maxMs: 1_000 },
      });
      await connected(run);
      await lobby.startMatch(match.name, hostToken);
      await within(
        15_000,
        (async () => {
          while (bot.decisions.length < 3) {
            await sleep(10);
          }
        })(),
        'three decisions',
      );
      const asked = bot.decisions.length;
      proxy.cut();
      await run.logger.waitFor(/reconnecting in/, 10_000, 'a reconnect is scheduled');
      await run.logger.waitFor(/resumed: seat/, 10_000, 'the seats are resumed');
      const result = await within(MATCH_MS, run.promise, 'the match ends after the reconnect');
      assert.deepEqual(result, { matches: 1, reason: 'maxMatches' });
      assert.ok(bot.decisions.length > asked, 'asked again after the reconnect');
      assert.equal(bot.started.length, 2, 'onMatchStarted once per seat, not again on resume');
      assert.equal(run.logger.lines.filter((l) => /connected to/.test(l)).length, 2);
      checkEnded(bot, match.name);
      assert.deepEqual(bot.errors, []);
    } finally {
      await proxy.close();
    }
  });

  /** The turn ids the bot logged as withdrawn (DecisionWithdrawn), in order. */
  function withdrawnTurns(run, matchName) {
    const pattern = new RegExp(`^\\w+: ${matchName} turn (\\d+) \\(seat \\d+\\): withdrawn`);
    return run.logger.lines.map((l) => pattern.exec(l)?.[1]).filter((t) => t !== undefined);
  }

  test('a slow bot under auto-play is never asked a withdrawn turn', async () => {
    // Its first choose is stuck: the timer runs out, and the server plays that turn and every
    // later one of the seat at once, withdrawing each request. The match is over while the
    // bot still thinks: it is asked nothing more, and the stuck choice is aborted.
    const timerMs = 200;
    const { botId, token } = await newBot('node-stuck');
    const { match, host_token: hostToken } = await lobby.createMatch({
      preset: 'iq-1v1',
      seats: [`bot:${botId}`, 'cpu'],
      overrides: ['target=60'],
      seed: 4,
      turnTimerMs: timerMs,
      onTimeout: 'auto-play',
      token,
    });
    let release;
    const released = new Promise((resolve) => {
      release = resolve;
    });
    let aborted = null;
    const bot = recordingBot(async (view, legalActions, decision, self) => {
      if (self.decisions.length === 1) {
        decision.signal.addEventListener('abort', () => {
          aborted = decision.signal.reason;
        });
        await released; // stuck: never released before the match is over
      }
      return legalActions[0];
    });
    const run = play(bot, token, { maxMatches: 1 });
    try {
      await connected(run);
      await lobby.startMatch(match.name, hostToken);
      await within(MATCH_MS, run.promise, 'the match ends while the bot is stuck');
    } finally {
      release();
    }
    checkEnded(bot, match.name);
    assert.equal(bot.decisions.length, 1, 'asked once: never for a turn played without it');
    const [first] = bot.decisions;
    assert.equal(aborted, WITHDRAWN, 'the stuck choice is aborted when the match ends');
    assert.ok(first.stale);
    assert.equal(first.withdrawal?.reason, 'WITHDRAWAL_REASON_TIMED_OUT');
    const withdrawn = withdrawnTurns(run, match.name);
    assert.ok(withdrawn.length > 5, withdrawn.join(' '));
    assert.deepEqual(
      withdrawn,
      withdrawn.map((_, i) => String(BigInt(first.turnId) + BigInt(i))),
      'every request of the seat, in order, from the first',
    );
    const seat = (await lobby.getMatch(match.name)).seats[0];
    assert.equal(seat.timeouts, 1);
    assert.equal(seat.auto_played, withdrawn.length);
    assert.deepEqual(bot.errors, [], 'nothing answered: the match was over first');
    // What it was told of its time: the server's own measure, and the match's timer.
    assert.ok(first.timeLeftMs > 0 && first.timeLeftMs <= timerMs, String(first.timeLeftMs));
    assert.ok(first.timeLeft() >= 0 && first.timeLeft() <= first.timeLeftMs);
    const timer = { limit_ms: timerMs, on_timeout: 'ON_TIMEOUT_AUTO_PLAY' };
    assert.deepEqual(first.turnTimer, timer);
    assert.deepEqual(bot.started[0].turnTimer, timer);
  });

  test('a bot late once answers its withdrawn turn and takes its seat back', async () => {
    const { botId, token } = await newBot('node-late');
    const { match, host_token: hostToken } = await lobby.createMatch({
      preset: 'iq-1v1',
      seats: [`bot:${botId}`, 'cpu'],
      overrides: ['target=200'],
      seed: 4,
      turnTimerMs: 300,
      onTimeout: 'auto-play',
      token,
    });
    const staleAtStart = [];
    const bot = recordingBot(async (view, legalActions, decision, self) => {
      if (decision.stale) {
        staleAtStart.push(decision.turnId);
      }
      if (self.decisions.length === 1) {
        for (let i = 0; i < 3000 && !decision.stale; i += 1) {
          await sleep(10); // bounded: the server withdraws it after its 300 ms
        }
      }
      return legalActions[legalActions.length - 1];
    });
    const run = play(bot, token, { maxMatches: 1 });
    await connected(run);
    await lobby.startMatch(match.name, hostToken);
    await within(MATCH_MS, run.promise, 'the match ends');
    checkEnded(bot, match.name);
    const [first] = bot.decisions;
    assert.equal(first.withdrawal?.reason, 'WITHDRAWAL_REASON_TIMED_OUT');
    assert.deepEqual(staleAtStart, [], 'asked for a turn already withdrawn');
    const withdrawn = withdrawnTurns(run, match.name).map(BigInt);
    assert.equal(withdrawn[0], BigInt(first.turnId));
    // Only requests sent before its late answer was read were played without it; every
    // later one was asked and answered in time.
    const last = withdrawn[withdrawn.length - 1];
    const later = bot.decisions.map((d) => BigInt(d.turnId)).filter((t) => t > last);
    assert.ok(later.length >= 3, `asked after the auto-play: ${later.join(' ')}`);
    assert.deepEqual(later, later.map((_, i) => last + 1n + BigInt(i)));
    assert.ok(bot.errors.every((e) => e.reason === ErrorReason.STALE_TURN));
    assert.ok(bot.errors.length <= withdrawn.length);
    const seat = (await lobby.getMatch(match.name)).seats[0];
    assert.equal(seat.timeouts, 1);
    assert.equal(seat.auto_played, withdrawn.length);
  });

  test('an AbortSignal stops the bot cleanly, even with a choice still running', async () => {
    const { botId, token } = await newBot('node-abort');
    const { match, host_token: hostToken } = await lobby.createMatch({
      preset: 'iq-1v1',
      seats: [`bot:${botId}`, 'cpu'],
      token, // the bot's consent to reserve its seats
    });
    const controller = new AbortController();
    const bot = recordingBot(() => new Promise(() => {})); // never answers
    const run = play(bot, token, { signal: controller.signal });
    await connected(run);
    await lobby.startMatch(match.name, hostToken);
    await within(
      10_000,
      (async () => {
        while (bot.decisions.length === 0) {
          await sleep(10);
        }
      })(),
      'a decision',
    );
    const aborted = Date.now();
    controller.abort();
    const result = await within(15_000, run.promise, 'runBot returns after abort');
    assert.deepEqual(result, { matches: 0, reason: 'aborted' });
    assert.ok(Date.now() - aborted < 8_000);
    assert.ok(run.logger.lines.some((l) => /1 hook\(s\) or choice\(s\) still running/.test(l)));
    await lobby.cancelMatch(match.name, hostToken, 'test over');
  });

  test('a bad token is refused with a clear error, without retrying', async () => {
    const logger = recordingLogger('bad');
    const started = Date.now();
    await assert.rejects(
      within(
        10_000,
        runBot(recordingBot(), {
          server: server.address,
          token: 'not-a-token',
          logger,
          handleSignals: false,
        }),
      ),
      (err) => {
        assert.ok(err instanceof CapicuaError);
        assert.equal(err.codeName, 'UNAUTHENTICATED');
        assert.equal(err.reason, 'BAD_TOKEN');
        assert.match(err.message, /refused.*UNAUTHENTICATED.*token/);
        return true;
      },
    );
    assert.ok(Date.now() - started < 5_000);
    assert.ok(!logger.lines.some((l) => /reconnecting/.test(l)), 'no reconnect attempt');
  });

  test('a replaced stream rejects with ABORTED / STREAM_REPLACED and never reconnects', async () => {
    const { token } = await newBot('twin');
    const first = play(recordingBot(), token, { prefix: 'first' });
    await connected(first);
    const abort = new AbortController();
    const second = play(recordingBot(), token, { prefix: 'second', signal: abort.signal });
    await assert.rejects(within(10_000, first.promise, 'the first bot stops'), (err) => {
      assert.ok(err instanceof CapicuaError);
      assert.equal(err.codeName, 'ABORTED');
      assert.equal(err.reason, 'STREAM_REPLACED');
      assert.match(err.message, /replaced this one/);
      return true;
    });
    assert.ok(!first.logger.lines.some((l) => /reconnecting/.test(l)), 'no reconnect attempt');
    abort.abort();
    await within(10_000, second.promise, 'the second bot stops');
  });

  test("a seat token's bot stops when the server ends its stream after MatchEnded", async () => {
    const { match, host_token: hostToken } = await lobby.createMatch({
      preset: 'iq-1v1',
      seats: ['cpu', 'open'],
      overrides: ['target=30'],
    });
    const { seat_token: seatToken } = await lobby.joinMatch(match.name, { seat: 1 });
    const run = play(recordingBot(), seatToken, { prefix: 'seat' });
    await connected(run);
    await lobby.startMatch(match.name, hostToken);
    const result = await within(MATCH_MS, run.promise, 'the match ends and the bot stops');
    assert.deepEqual(result, { matches: 1, reason: 'serverEnded' });
    assert.ok(!run.logger.lines.some((l) => /reconnecting/.test(l)), 'no reconnect attempt');
  });

  test('a host token cannot play: PERMISSION_DENIED', async () => {
    const { host_token: hostToken } = await lobby.createMatch({ preset: 'iq-1v1', seats: ['cpu', 'open'] });
    await assert.rejects(
      within(
        10_000,
        runBot(recordingBot(), { server: server.address, token: hostToken, logger: null, handleSignals: false }),
      ),
      (err) => err instanceof CapicuaError && err.codeName === 'PERMISSION_DENIED',
    );
  });

  test('createMatch again with the same requestId is a safe retry', async () => {
    const spec = { preset: 'iq-1v1', seats: ['cpu', 'open'], tags: ['retry'], requestId: randomUUID() };
    const first = await lobby.createMatch(spec);
    const again = await lobby.createMatch(spec);
    assert.equal(again.match.name, first.match.name);
    assert.equal(again.host_token, first.host_token);
    const fresh = await lobby.createMatch({ ...spec, requestId: undefined });
    assert.notEqual(fresh.match.name, first.match.name);
    await assert.rejects(lobby.createMatch({ ...spec, tags: ['other'] }), (err) => {
      assert.equal(err.codeName, 'ALREADY_EXISTS');
      assert.equal(err.reason, ErrorReason.REQUEST_ID_REUSED);
      assert.equal(err.metadata.field, 'request_id');
      return true;
    });
    await assert.rejects(lobby.createMatch({ ...spec, requestId: 'not-a-uuid' }), (err) => {
      assert.equal(err.codeName, 'INVALID_ARGUMENT');
      assert.equal(err.reason, ErrorReason.INVALID_ARGUMENT);
      assert.match(err.details, /^request_id: /);
      return true;
    });
    await lobby.cancelMatch(first.match.name, first.host_token);
    await lobby.cancelMatch(fresh.match.name, fresh.host_token);
  });

  test('a chosen seed takes the consent of the seats it deals', async () => {
    const { botId: victim, token: victimToken } = await newBot('node-victim', ['*']);
    const seeded = { preset: 'iq-1v1', seats: [`bot:${victim}`, 'cpu'], seed: 42 };
    await assert.rejects(lobby.createMatch(seeded), (err) => {
      assert.equal(err.codeName, 'PERMISSION_DENIED');
      assert.equal(err.reason, ErrorReason.SEED_NOT_ALLOWED);
      assert.equal(err.metadata.bot, `bots/${victim}`);
      return true;
    });
    const access = await lobby.setBotAccess(victimToken, ['*'], { acceptChosenSeeds: true });
    assert.equal(access.accept_chosen_seeds, true);
    const kept = await lobby.setBotAccess(victimToken, ['*']);
    assert.equal(kept.accept_chosen_seeds, true, 'unchanged when not given');
    const reserved = await lobby.createMatch(seeded);
    assert.equal(reserved.match.seed_chosen, true);

    const { match } = await lobby.createMatch({ preset: 'iq-1v1', seats: ['cpu', 'open'], seed: 42 });
    await assert.rejects(lobby.joinMatch(match.name, { seat: 1 }), (err) => {
      assert.equal(err.codeName, 'FAILED_PRECONDITION');
      assert.equal(err.reason, ErrorReason.SEED_CHOSEN);
      return true;
    });
    const joined = await lobby.joinMatch(match.name, { seat: 1, acceptChosenSeed: true });
    assert.ok(joined.seat_token);
  });

  test('lobby errors carry the code and the ErrorInfo reason', async () => {
    const { botId } = await newBot('node-dup');
    await assert.rejects(lobby.registerBot(botId), (err) => {
      assert.equal(err.codeName, 'ALREADY_EXISTS');
      assert.equal(err.reason, 'BOT_EXISTS');
      return true;
    });
    await assert.rejects(lobby.createMatch({ preset: 'no-such-preset' }), (err) => {
      assert.equal(err.codeName, 'INVALID_ARGUMENT');
      return true;
    });
    await assert.rejects(lobby.getReplay('matches/nope'), (err) => {
      assert.equal(err.codeName, 'NOT_FOUND');
      return true;
    });
  });
});
