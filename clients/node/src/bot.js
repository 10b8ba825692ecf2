// runBot: one Play stream, any number of matches and seats, one choose() per decision.

import grpc from '@grpc/grpc-js';

import { CapicuaError, ErrorReason, codeName } from './errors.js';
import { VERSION, bearer, makeClient, resolveServer, resolveToken } from './connection.js';
import { loadProtos } from './proto.js';

/** Why a decision's AbortSignal is aborted (its `reason`). */
export const SUPERSEDED = 'superseded: the server moved on';
export const WITHDRAWN = 'withdrawn: the match is over';

/** Withdrawals after which nobody takes an answer: the choice in progress is aborted. */
const NOBODY_WAITS = new Set([
  'WITHDRAWAL_REASON_MATCH_ENDED',
  'WITHDRAWAL_REASON_SERVER_STOPPING',
]);

/**
 * Stream endings that no reconnect can fix (the lifecycle table in docs/protocol.md): runBot
 * rejects with a CapicuaError. Every other status but OK is a drop: reconnect with backoff.
 */
const FATAL_CODES = new Set([
  grpc.status.UNAUTHENTICATED,
  grpc.status.PERMISSION_DENIED,
  grpc.status.UNIMPLEMENTED,
  grpc.status.INVALID_ARGUMENT,
  grpc.status.ABORTED, // STREAM_REPLACED: another client holds the token now
  grpc.status.FAILED_PRECONDITION, // MATCH_FINISHED: a seat token whose match is over
]);

/** Why a fatal status stops the bot, where the token is not the thing to check. */
const FATAL_HINTS = new Map([
  [grpc.status.UNIMPLEMENTED, (server) => `is ${server} a capicua server?`],
  [
    grpc.status.ABORTED,
    () => 'another Play stream with the same token replaced this one (is the bot running twice?)',
  ],
  [grpc.status.FAILED_PRECONDITION, () => 'the match of this seat token is over'],
]);

/**
 * Optional base class: extend it and write `choose`. Any object with a `choose` method
 * works as well; the hooks are optional.
 */
export class Bot {
  /**
   * Pick one of `legalActions` for the seat whose `view` is given. Return the LegalAction
   * itself, its `id`, or its `text` ("3-6:L"); may be async.
   *
   * @param {object} view the seat's full View (snake_case fields as in view.proto)
   * @param {object[]} legalActions [{id, text, kind, tile, end}, ...]
   * @param {{match: string, seat: number, turnId: string, deadline: Date|null,
   *   timeLeftMs: number|null, timeLeft: function(): number|null, turnTimer: object|null,
   *   signal: AbortSignal, stale: boolean, withdrawal: object|null, request: object}} decision
   *   the DecisionRequest's context (see runBot)
   */
  // eslint-disable-next-line no-unused-vars
  choose(view, legalActions, decision) {
    throw new Error(`${this.constructor.name}.choose(view, legalActions) is not written`);
  }
}

/** The `id` to answer with for what choose() returned, or null if it names no action. */
export function actionId(choice, legalActions) {
  if (typeof choice === 'number' && Number.isInteger(choice) && choice >= 0) {
    return choice;
  }
  if (typeof choice === 'bigint' && choice >= 0n) {
    return Number(choice);
  }
  if (typeof choice === 'string') {
    const found = legalActions.find((a) => a.text === choice);
    if (found) {
      return found.id;
    }
    return /^\d+$/.test(choice) ? Number(choice) : null;
  }
  if (choice !== null && typeof choice === 'object') {
    return Number.isInteger(choice.id) && choice.id >= 0 ? choice.id : null;
  }
  return null;
}

/** A Timestamp message as a Date (null when unset). */
export function timestampToDate(ts) {
  if (!ts) {
    return null;
  }
  return new Date(Number(ts.seconds) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6));
}

/** Logger writing "capicua: ..." lines to stderr; debug lines only with CAPICUA_LOG=debug. */
export function consoleLogger(prefix = 'capicua') {
  const line = (level, message) => {
    console.error(`${new Date().toISOString()} ${prefix} ${level}: ${message}`);
  };
  const debug = (process.env.CAPICUA_LOG ?? '').toLowerCase() === 'debug';
  return {
    debug: debug ? (m) => line('debug', m) : () => {},
    info: (m) => line('info', m),
    warn: (m) => line('warn', m),
    error: (m) => line('error', m),
  };
}

function normalizeLogger(logger) {
  const base = logger === undefined ? consoleLogger() : (logger ?? {});
  const out = {};
  for (const level of ['debug', 'info', 'warn', 'error']) {
    out[level] = typeof base[level] === 'function' ? base[level].bind(base) : () => {};
  }
  return out;
}

function outcomeText(outcome) {
  if (!outcome) {
    return 'no outcome';
  }
  const termination = String(outcome.termination).replace(/^TERMINATION_/, '');
  const winner = outcome.winner === undefined ? 'no winner' : `side ${outcome.winner} won`;
  const scores = (outcome.scores ?? []).join('-');
  return `${termination}, ${winner} (${scores})${outcome.reason ? `: ${outcome.reason}` : ''}`;
}

class Runner {
  constructor(bot, options) {
    if (!bot || typeof bot.choose !== 'function') {
      throw new TypeError('runBot(bot): the bot needs a choose(view, legalActions) method');
    }
    this.bot = bot;
    this.server = resolveServer(options.server);
    this.tls = options.tls; // true | {ca, cert, key} | false; default $CAPICUA_TLS*
    this.token = resolveToken(options.token);
    this.askForced = Boolean(options.askForced);
    // CAPABILITY_INCREMENTAL_DECISIONS: one message per decision (the bot's views stay full)
    this.incremental = options.incremental ?? true;
    // `${match}#${seat}` -> the seat's view as kept (KeptView), only when this.incremental
    this.views = new Map();
    const max = options.maxMatches;
    this.maxMatches = max === undefined || max === null || max === 0 ? Infinity : Number(max);
    if (!(this.maxMatches > 0)) {
      throw new TypeError(`maxMatches must be a positive number, got ${max}`);
    }
    this.clientName = options.clientName ?? `capicua-client-node/${VERSION}`;
    this.log = normalizeLogger(options.logger);
    const backoff = options.backoff ?? {};
    this.initialMs = backoff.initialMs ?? 100;
    this.maxMs = backoff.maxMs ?? 10_000;
    this.factor = backoff.factor ?? 2;
    this.maxReconnects = options.maxReconnects ?? Infinity;
    this.handleSignals = options.handleSignals ?? true;
    this.abortSignal = options.signal;

    this.ended = new Set(); // match names whose MatchEnded arrived
    // match -> {timer, latest, withdrawnThrough (BigInt turn ids), choosing, queued}: the
    // decisions of a match are taken one at a time (see onDecision)
    this.matches = new Map();
    this.started = new Set(); // "match#seat" seen in MatchStarted
    this.handsEnded = new Set(); // "match#hand" seen in HandEnded
    this.inflight = new Map(); // "match#turn_id" -> promise of the choose() running for it
    this.pending = new Set(); // running hook promises
    this.chains = new Map(); // match -> its last hook promise (hooks of a match run in order)
    this.session = null; // the current stream
    this.stopReason = null;
    this.wake = null; // ends a backoff sleep early
  }

  get stopped() {
    return this.stopReason !== null;
  }

  stop(reason) {
    if (this.stopped) {
      return;
    }
    this.stopReason = reason;
    const session = this.session;
    if (session) {
      session.call.end(); // half-close: the server closes the stream after it
      session.killer = setTimeout(() => session.call.cancel(), 2_000);
    }
    this.wake?.();
  }

  async run() {
    const v1 = loadProtos();
    this.client = makeClient(v1.PlayService, this.server, {
      'grpc.initial_reconnect_backoff_ms': this.initialMs,
      'grpc.max_reconnect_backoff_ms': this.maxMs,
    }, this.tls);
    const onSignal = (signal) => {
      if (this.stopped) {
        this.log.warn(`${signal} again: exiting now`);
        process.exit(130);
      }
      this.log.info(`${signal}: closing the stream`);
      this.stop('signal');
    };
    const onAbort = () => this.stop('aborted');
    if (this.handleSignals) {
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
    }
    if (this.abortSignal) {
      if (this.abortSignal.aborted) {
        this.stop('aborted');
      }
      this.abortSignal.addEventListener('abort', onAbort);
    }
    try {
      let failures = 0;
      while (!this.stopped) {
        const result = await this.connect();
        if (this.stopped) {
          break;
        }
        if (result.fatal) {
          throw result.fatal;
        }
        if (result.welcomed) {
          failures = 0;
        }
        failures += 1;
        if (failures > this.maxReconnects) {
          throw new CapicuaError(`gave up after ${this.maxReconnects} reconnects: ${result.why}`, {
            code: result.code,
          });
        }
        const base = Math.min(this.maxMs, this.initialMs * this.factor ** (failures - 1));
        const delay = Math.round(base * (0.8 + 0.4 * Math.random()));
        this.log.warn(`${result.why}; reconnecting in ${(delay / 1000).toFixed(1)} s`);
        await this.sleep(delay);
      }
      await this.settle();
      return { matches: this.ended.size, reason: this.stopReason };
    } finally {
      if (this.handleSignals) {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
      this.abortSignal?.removeEventListener('abort', onAbort);
      this.client.close();
    }
  }

  sleep(ms) {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = () => {
        this.wake = null;
        done();
      };
    });
  }

  /** Wait for running hooks and choices (their answers are dropped), at most `ms`. */
  async settle(ms = 5_000) {
    const until = Date.now() + ms;
    while ((this.pending.size > 0 || this.inflight.size > 0) && Date.now() < until) {
      let timer;
      await Promise.race([
        Promise.allSettled([...this.pending, ...this.inflight.values()]),
        new Promise((resolve) => {
          timer = setTimeout(resolve, until - Date.now());
        }),
      ]);
      clearTimeout(timer);
    }
    const left = this.pending.size + this.inflight.size;
    if (left > 0) {
      this.log.warn(`stopped with ${left} hook(s) or choice(s) still running`);
    }
  }

  /** One stream, until it ends; resolves to {welcomed, fatal, why, code}. */
  connect() {
    return new Promise((resolve) => {
      const call = this.client.Play(bearer(this.token));
      const session = { call, welcomed: false, fatal: null, killer: null, stopping: false };
      this.session = session;
      call.on('data', (message) => {
        try {
          this.onMessage(session, message);
        } catch (err) {
          this.log.error(`handling a ${message?.message} message failed: ${err?.stack ?? err}`);
        }
      });
      call.on('error', () => {}); // the 'status' event below carries the same information
      call.on('status', (status) => {
        clearTimeout(session.killer);
        if (this.session === session) {
          this.session = null;
        }
        const code = status.code;
        let fatal = session.fatal;
        if (!fatal && !this.stopped && FATAL_CODES.has(code)) {
          const err = CapicuaError.fromGrpc(status);
          const hint =
            FATAL_HINTS.get(code)?.(this.server) ??
            'check the bot token (CAPICUA_TOKEN or --token)';
          fatal = new CapicuaError(`the server refused the Play stream: ${err.message}; ${hint}`, {
            code,
            reason: err.reason,
            metadata: err.metadata,
            details: err.details,
          });
        }
        if (code === grpc.status.OK && !this.stopped && !session.stopping) {
          // OK: the server has nothing more for this token (a seat token's match ended).
          // (A ServerStopping before it: a server from before every ending had a status.)
          this.log.info('the server ended the stream');
          this.stop('serverEnded');
        }
        const why =
          code === grpc.status.OK
            ? 'the server closed the stream'
            : `the stream ended (${codeName(code)}: ${status.details})`;
        resolve({ welcomed: session.welcomed, fatal, why, code });
      });
      const capabilities = this.incremental ? ['CAPABILITY_INCREMENTAL_DECISIONS'] : [];
      call.write({ hello: { ask_forced: this.askForced, client: this.clientName, capabilities } });
    });
  }

  send(request) {
    const session = this.session;
    if (!session || this.stopped) {
      return false;
    }
    session.call.write(request);
    return true;
  }

  /** Run hook `name` after the earlier hooks of the same match (errors are logged). */
  hook(name, arg, match = '') {
    const fn = this.bot[name];
    if (typeof fn !== 'function') {
      return;
    }
    const previous = this.chains.get(match) ?? Promise.resolve();
    const p = previous
      .then(() => fn.call(this.bot, arg))
      .catch((err) => this.log.error(`${name} threw: ${err?.stack ?? err}`))
      .finally(() => {
        this.pending.delete(p);
        if (this.chains.get(match) === p) {
          this.chains.delete(match);
        }
      });
    this.chains.set(match, p);
    this.pending.add(p);
  }

  onMessage(session, message) {
    const kind = message.message;
    const body = message[kind];
    switch (kind) {
      case 'welcome':
        session.welcomed = true;
        this.log.info(
          `connected to ${this.server} as ${body.principal} (server ${body.server_version || '?'})`,
        );
        break;
      case 'match_started': {
        const key = `${body.match}#${body.seat}`;
        const resumed = this.started.has(key);
        this.started.add(key);
        this.matchState(body.match).timer = body.turn_timer ?? null;
        this.log.info(`${body.match} ${resumed ? 'resumed' : 'started'}: seat ${body.seat}`);
        if (this.incremental) {
          this.views.set(key, new KeptView(body.view));
        }
        if (!resumed) {
          const started = {
            match: body.match,
            seat: body.seat,
            view: body.view,
            turnTimer: body.turn_timer ?? null,
          };
          this.hook('onMatchStarted', started, body.match);
        }
        break;
      }
      case 'decision':
        this.onDecision(body);
        break;
      case 'decision_withdrawn':
        this.onWithdrawn(body);
        break;
      case 'events':
        this.views.get(`${body.match}#${body.seat}`)?.addEvents(body.hand, body.events);
        this.hook(
          'onEvents',
          { match: body.match, seat: body.seat, hand: body.hand, events: body.events },
          body.match,
        );
        break;
      case 'hand_ended': {
        this.views.get(`${body.match}#${body.seat}`)?.addResult(body.result);
        const key = `${body.match}#${body.result?.hand}`;
        if (!this.handsEnded.has(key)) {
          this.handsEnded.add(key);
          this.hook('onHandEnded', { match: body.match, result: body.result }, body.match);
        }
        break;
      }
      case 'match_ended': {
        this.views.delete(`${body.match}#${body.seat}`);
        this.matchOver(body.match);
        if (!this.ended.has(body.match)) {
          this.ended.add(body.match);
          this.log.info(`${body.match} ended: ${outcomeText(body.outcome)}`);
          this.hook('onMatchEnded', { match: body.match, outcome: body.outcome }, body.match);
        }
        if (this.ended.size >= this.maxMatches && !this.stopped) {
          this.log.info(`${this.ended.size} match(es) played: stopping`);
          this.stop('maxMatches');
        }
        break;
      }
      case 'error': {
        const err = CapicuaError.fromStatus(body);
        const where = err.metadata.match
          ? ` (${err.metadata.match}${err.metadata.turn_id ? ` turn ${err.metadata.turn_id}` : ''})`
          : '';
        this.log.warn(`server error: ${err.message}${where}`);
        if (err.reason === ErrorReason.STREAM_REPLACED) { // in the stream: an older server
          session.fatal = new CapicuaError(
            'another Play stream with the same token replaced this one (is the bot running twice?)',
            { code: err.code, reason: err.reason, details: err.details },
          );
        }
        this.hook('onError', err, err.metadata.match ?? '');
        break;
      }
      case 'stopping':
        session.stopping = true;
        this.log.warn(`the server is stopping${body.reason ? `: ${body.reason}` : ''}`);
        break;
      default:
        this.log.debug(`ignored a ${kind} message`);
    }
  }

  onDecision(request) {
    const seatKey = `${request.match}#${request.seat}`;
    if (!request.incremental) {
      if (this.incremental) {
        this.views.set(seatKey, new KeptView(request.view)); // the full view: start over
      }
    } else if (this.views.has(seatKey)) {
      const kept = this.views.get(seatKey);
      if (request.events.length > 0) {
        const info = { match: request.match, seat: request.seat, hand: request.view.hand };
        this.hook('onEvents', { ...info, events: request.events }, request.match);
      }
      kept.complete(request);
    } else {
      const where = `${request.match} seat ${request.seat}`;
      this.log.error(`${where}: an incremental request before the seat's view (not answered)`);
      return;
    }
    const state = this.matchState(request.match);
    const turn = BigInt(request.turn_id);
    const over = this.ended.has(request.match) || turn <= state.withdrawnThrough;
    if (over || turn < state.latest) {
      return; // withdrawn already, obsolete, or the match is over: nothing to decide
    }
    if (turn > state.latest) {
      state.latest = turn;
    }
    const received = performance.now();
    const choosing = state.choosing;
    if (choosing !== null && !choosing.dropped) {
      if (choosing.turn === turn) {
        // Sent again after a reconnect while choose() still runs: its answer goes to the
        // current stream.
        return;
      }
      if (choosing.turn < turn) {
        choosing.decision.stale = true;
        if (choosing.decision.withdrawal === null) {
          // the server moved on without saying (a server that does not withdraw): drop it
          this.log.warn(
            `${request.match} turn ${choosing.turn}: the server moved on to turn ${turn}; ` +
              'dropping that decision',
          );
          this.drop(choosing, SUPERSEDED);
        } else {
          // withdrawn for a turn the server played: its answer, still to come, is what
          // ends the auto-play; the next decision waits for it (and is dropped if it is
          // withdrawn meanwhile)
          state.queued = { request, received };
          return;
        }
      }
    }
    this.decide(state, request, received);
  }

  /** The per-match bookkeeping of decisions. */
  matchState(match) {
    let state = this.matches.get(match);
    if (state === undefined) {
      state = { timer: null, latest: 0n, withdrawnThrough: 0n, choosing: null, queued: null };
      this.matches.set(match, state);
    }
    return state;
  }

  /** Stop waiting for `choosing`'s answer: abort its signal; its answer will not be sent. */
  drop(choosing, reason) {
    choosing.dropped = true;
    choosing.controller.abort(reason);
  }

  /** Ask the bot for `request` (the match's one decision in progress). */
  decide(state, request, received) {
    const key = `${request.match}#${request.turn_id}`;
    const controller = new AbortController();
    const timeLeftMs = Number(request.time_left_ms ?? 0) || null;
    const decision = {
      match: request.match,
      seat: request.seat,
      turnId: request.turn_id,
      deadline: timestampToDate(request.deadline),
      // what the server measured when it sent the request: counted from `received` on this
      // machine's monotonic clock, it needs no clock agreeing with the server's
      timeLeftMs,
      timeLeft: () =>
        timeLeftMs === null ? null : Math.max(0, timeLeftMs - (performance.now() - received)),
      turnTimer: state.timer,
      signal: controller.signal,
      stale: false, // the server no longer wants this answer
      withdrawal: null, // its DecisionWithdrawn, if it sent one
      request,
    };
    const choosing = { turn: BigInt(request.turn_id), decision, controller, dropped: false };
    state.choosing = choosing;
    this.log.debug(
      `${request.match} turn ${request.turn_id} seat ${request.seat}: ` +
        `${request.legal_actions.map((a) => `${a.id}=${a.text}`).join(' ')}`,
    );
    const where = `${request.match} turn ${request.turn_id}`;
    const p = (async () => {
      let choice;
      try {
        choice = await this.bot.choose(request.view, request.legal_actions, decision);
      } catch (err) {
        if (!choosing.dropped) {
          this.log.error(`choose threw on ${where} (no answer sent): ${err?.stack ?? err}`);
        }
        return;
      }
      if (choosing.dropped) {
        return; // nobody takes this answer any more
      }
      const id = actionId(choice, request.legal_actions);
      if (id === null) {
        this.log.error(
          `choose returned ${JSON.stringify(choice)} on ${request.match} ` +
            `turn ${request.turn_id}: not a legal action, its id or its text (no answer sent)`,
        );
        return;
      }
      if (decision.withdrawal !== null) {
        // The server played the turn itself: the answer is refused, but ends its auto-play.
        this.log.info(`${where}: answered after the server withdrew it, to take the seat back`);
      }
      // turn_id goes back exactly as it came: a decimal string (uint64).
      this.send({ action: { match: request.match, turn_id: request.turn_id, action_id: id } });
    })().finally(() => {
      this.inflight.delete(key);
      if (state.choosing === choosing) {
        state.choosing = null;
        this.next(state);
      }
    });
    this.inflight.set(key, p);
  }

  /** The decision that waited for the one in progress, unless it is over by now. */
  next(state) {
    const queued = state.queued;
    state.queued = null;
    if (queued === null) {
      return;
    }
    const { request, received } = queued;
    const turn = BigInt(request.turn_id);
    if (!this.ended.has(request.match) && turn > state.withdrawnThrough && turn >= state.latest) {
      this.decide(state, request, received);
    }
  }

  /**
   * The server no longer wants an answer to `withdrawn.turn_id`: a decision waiting for its
   * turn is dropped (choose is never called for it); one in progress is aborted when nobody
   * will take the answer, and otherwise (the server played the turn itself) goes on: its
   * answer, refused as stale, ends the auto-play.
   */
  onWithdrawn(withdrawn) {
    const state = this.matchState(withdrawn.match);
    const turn = BigInt(withdrawn.turn_id);
    if (turn > state.withdrawnThrough) {
      state.withdrawnThrough = turn;
    }
    const where = `${withdrawn.match} turn ${withdrawn.turn_id} (seat ${withdrawn.seat})`;
    const reason = withdrawn.reason;
    if (reason === 'WITHDRAWAL_REASON_AUTO_PLAYED') {
      this.log.debug(`${where}: withdrawn: the server played it (the seat is auto-played)`);
    } else if (reason === 'WITHDRAWAL_REASON_TIMED_OUT') {
      this.log.warn(`${where}: withdrawn: the turn timer ran out (timeout policy)`);
    } else if (reason === 'WITHDRAWAL_REASON_ILLEGAL_ACTIONS') {
      this.log.warn(`${where}: withdrawn: three illegal answers (timeout policy)`);
    } else {
      this.log.info(`${where}: withdrawn (${reason})`);
    }
    if (state.queued !== null && BigInt(state.queued.request.turn_id) <= turn) {
      state.queued = null;
    }
    const choosing = state.choosing;
    if (choosing === null || choosing.turn > turn) {
      return;
    }
    choosing.decision.stale = true;
    if (choosing.turn === turn) {
      choosing.decision.withdrawal = withdrawn;
    }
    if (NOBODY_WAITS.has(reason)) {
      this.drop(choosing, WITHDRAWN);
    }
  }

  /** MatchEnded: nothing of the match is decided any more. */
  matchOver(match) {
    const state = this.matches.get(match);
    if (state === undefined) {
      return;
    }
    this.matches.delete(match);
    state.queued = null;
    if (state.choosing !== null) {
      state.choosing.decision.stale = true;
      this.drop(state.choosing, WITHDRAWN);
    }
  }
}

/**
 * One seat's view as the client keeps it (CAPABILITY_INCREMENTAL_DECISIONS): what an
 * incremental DecisionRequest leaves out of its view (ruleset, players, results, the hand's
 * events), from a full view on, with every EventBatch, request `events` and HandEnded added.
 */
class KeptView {
  constructor(view) {
    this.ruleset = view.ruleset;
    this.players = view.players;
    this.results = [...view.results];
    this.hand = view.hand;
    this.events = [...view.events];
  }

  addEvents(hand, events) {
    if (hand !== this.hand) {
      this.hand = hand;
      this.events = [];
    }
    this.events.push(...events);
  }

  addResult(result) {
    if (result && result.hand === this.results.length) {
      this.results.push(result);
    }
  }

  /** Fill an incremental request's view in place: the full view, as without the capability. */
  complete(request) {
    this.addEvents(request.view.hand, request.events);
    Object.assign(request.view, {
      ruleset: this.ruleset,
      players: this.players,
      results: [...this.results],
      events: [...this.events],
    });
  }
}

/**
 * Play with `bot` until stopped: connect, send Hello, answer every DecisionRequest of every
 * seat this token holds (any number of matches at once), reconnect with exponential backoff
 * after a dropped stream.
 *
 * The decisions of one match are taken one at a time, and the bot is never asked for a
 * request that is over before its turn comes: one the server withdrew (DecisionWithdrawn),
 * one made obsolete by a newer request of the match, any once the match ended. A choice in
 * progress whose answer nobody will take (the match ended, the server stops, a newer request
 * came without a withdrawal) has its `decision.signal` aborted and its answer dropped; one
 * whose turn the server played itself (timed out, auto-played) runs on, and its answer is
 * sent: refused as stale, it ends the auto-play. `decision.timeLeftMs` is the time the
 * server will wait, as it measured it; `decision.timeLeft()` counts it down on this
 * machine's monotonic clock; `decision.turnTimer` is MatchStarted's {limit_ms, on_timeout}.
 *
 * How the stream ends decides what comes next (the lifecycle table in docs/protocol.md):
 * resolves to {matches, reason} when `maxMatches` matches ended, when the server ends the
 * stream with OK (a seat token's match ended: reason 'serverEnded'), on SIGINT/SIGTERM, or
 * when `signal` aborts. Rejects with a CapicuaError when the server refuses the token
 * (UNAUTHENTICATED / PERMISSION_DENIED), when another stream with the same token replaces
 * this one (ABORTED / STREAM_REPLACED), when a seat token's match is over
 * (FAILED_PRECONDITION / MATCH_FINISHED), or after `maxReconnects` failed reconnects; any
 * other ending (UNAVAILABLE, SHUTTING_DOWN, SLOW_CONSUMER, INTERNAL...) is reconnected to.
 *
 * @param {object} bot {choose(view, legalActions, decision), onMatchStarted?, onEvents?,
 *   onHandEnded?, onMatchEnded?, onError?}
 * @param {object} [options]
 * @param {string} [options.server] host:port (default $CAPICUA_SERVER or 127.0.0.1:50051)
 * @param {string} [options.token] bot or seat token (default $CAPICUA_TOKEN)
 * @param {boolean|object} [options.tls] true (the system's CAs), or {ca, cert, key} PEM
 *   paths: connect over TLS (default: $CAPICUA_TLS*, else plaintext; see docs/tls.md)
 * @param {boolean} [options.askForced] be asked even when a single action is legal
 * @param {boolean} [options.incremental] ask for one message per decision
 *   (CAPABILITY_INCREMENTAL_DECISIONS; default true): the bot's views stay the full ones
 * @param {number} [options.maxMatches] stop after this many matches ended (default: never)
 * @param {object|null} [options.logger] {debug, info, warn, error}; null: silent
 * @param {AbortSignal} [options.signal] stops the bot when aborted
 * @param {boolean} [options.handleSignals] stop cleanly on SIGINT/SIGTERM (default true)
 * @param {{initialMs?: number, maxMs?: number, factor?: number}} [options.backoff]
 *   reconnect delays (default 0.1 s doubling up to 10 s, ±20% jitter)
 * @param {number} [options.maxReconnects] consecutive failed connects before giving up
 *   (default: never give up)
 */
export function runBot(bot, options = {}) {
  let runner;
  try {
    runner = new Runner(bot, options);
  } catch (err) {
    return Promise.reject(err);
  }
  return runner.run();
}
