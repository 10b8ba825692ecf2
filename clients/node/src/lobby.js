// The lobby: RegisterBot, MatchService and LadderService as promise-returning methods.

import { randomUUID } from 'node:crypto';

import { CapicuaError } from './errors.js';
import {
  bearer,
  ladderName,
  makeClient,
  matchName,
  resolveServer,
  resolveToken,
} from './connection.js';
import { loadProtos } from './proto.js';

const LEVELS = { easy: 'CPU_LEVEL_EASY', medium: 'CPU_LEVEL_MEDIUM', hard: 'CPU_LEVEL_HARD' };
const POLICIES = {
  'auto-play': 'TIMEOUT_POLICY_AUTO_PLAY',
  autoplay: 'TIMEOUT_POLICY_AUTO_PLAY',
  forfeit: 'TIMEOUT_POLICY_FORFEIT',
};

/**
 * One SeatSpec from the CLI's notation ("open", "cpu", "cpu:hard", "bot:NAME") or an
 * object already shaped like a SeatSpec ({kind: 'SEAT_KIND_CPU', cpu_level: ...}).
 */
export function seatSpec(seat) {
  if (typeof seat !== 'string') {
    return seat;
  }
  const text = seat.trim();
  const colon = text.indexOf(':');
  const kind = (colon < 0 ? text : text.slice(0, colon)).toLowerCase();
  const arg = colon < 0 ? '' : text.slice(colon + 1);
  if (kind === 'open') {
    return { kind: 'SEAT_KIND_OPEN' };
  }
  if (kind === 'cpu') {
    const level = LEVELS[(arg || 'easy').toLowerCase()];
    if (level) {
      return { kind: 'SEAT_KIND_CPU', cpu_level: level };
    }
  }
  if (kind === 'bot' && arg) {
    return { kind: 'SEAT_KIND_BOT', bot_id: arg };
  }
  throw new TypeError(
    `seat ${JSON.stringify(seat)} is not open, cpu[:easy|medium|hard] or bot:NAME`,
  );
}

/**
 * MatchService, RegisterBot and LadderService over one channel.
 *
 *   const lobby = new Lobby({ server: '127.0.0.1:50051' });
 *   const { token } = await lobby.registerBot('my-bot');
 *   const { match, host_token } = await lobby.createMatch({
 *     preset: 'block', seats: ['bot:my-bot', 'cpu', 'cpu:medium', 'cpu:hard'],
 *     token, // reserving a bot's seat takes its consent: here its own token
 *   });
 *   await lobby.startMatch(match.name, host_token);
 *   ...
 *   const replay = await lobby.getReplay(match.name);
 *   lobby.close();
 *
 * Every method rejects with a CapicuaError (code, codeName, reason) when the call fails.
 */
export class Lobby {
  /**
   * @param {object} [options]
   * @param {string} [options.server] host:port (default $CAPICUA_SERVER or 127.0.0.1:50051)
   * @param {string} [options.adminToken] for RegisterBot on a server with --admin-token
   *   (default $CAPICUA_ADMIN_TOKEN)
   * @param {number} [options.timeoutMs] deadline of each call (default 10 s)
   * @param {boolean|object} [options.tls] true, or {ca, cert, key} PEM paths: connect over
   *   TLS (default: $CAPICUA_TLS*, else plaintext; see docs/tls.md)
   */
  constructor({ server, adminToken, timeoutMs = 10_000, tls } = {}) {
    const v1 = loadProtos();
    this.server = resolveServer(server);
    this.adminToken = adminToken ?? process.env.CAPICUA_ADMIN_TOKEN ?? '';
    this.timeoutMs = timeoutMs;
    this.matches = makeClient(v1.MatchService, this.server, {}, tls);
    this.play = makeClient(v1.PlayService, this.server, {}, tls);
    this.ladders = makeClient(v1.LadderService, this.server, {}, tls);
  }

  _call(client, method, request, token) {
    return new Promise((resolve, reject) => {
      const deadline = new Date(Date.now() + this.timeoutMs);
      client[method](request, bearer(token), { deadline }, (err, response) => {
        if (err) {
          reject(CapicuaError.fromGrpc(err, method));
        } else {
          resolve(response);
        }
      });
    });
  }

  /**
   * Register a bot; resolves to {name: 'bots/ID', token, reservable_by, accept_chosen_seeds}.
   *
   * @param {string} botId
   * @param {object} [options]
   * @param {string} [options.description]
   * @param {string[]} [options.reservableBy] who else may create matches reserving its
   *   seats: 'bots/NAME' of registered bots, or '*' for anyone (default: nobody but the bot
   *   itself and the server's admin)
   * @param {boolean} [options.acceptChosenSeeds] let those who may reserve it also choose
   *   such a match's seed, with which they can compute its tiles (an arena's duplicate deals)
   * @param {string} [options.adminToken] (default: the Lobby's)
   */
  registerBot(
    botId,
    { description = '', reservableBy = [], acceptChosenSeeds = false, adminToken } = {},
  ) {
    return this._call(
      this.play,
      'RegisterBot',
      {
        bot_id: botId,
        description,
        reservable_by: reservableBy,
        accept_chosen_seeds: acceptChosenSeeds,
      },
      adminToken ?? this.adminToken,
    );
  }

  /**
   * Replace who else may reserve a bot's seats, with the bot's token, and (when given)
   * whether they may also choose those matches' seeds; resolves to
   * {name, reservable_by, accept_chosen_seeds}.
   */
  setBotAccess(botToken, reservableBy = [], { acceptChosenSeeds } = {}) {
    const request = { reservable_by: reservableBy };
    if (acceptChosenSeeds !== undefined) {
      request.accept_chosen_seeds = acceptChosenSeeds;
    }
    return this._call(this.play, 'SetBotAccess', request, botToken);
  }

  /**
   * Create a match; resolves to {match, host_token}.
   *
   * @param {object} spec
   * @param {string} [spec.preset] e.g. 'block', 'cutthroat', 'iq-1v1' (or give `ruleset`)
   * @param {object} [spec.ruleset] a full Ruleset when no preset is given
   * @param {string[]} [spec.overrides] 'knob=value', e.g. 'target=50'
   * @param {Array<string|object>} [spec.seats] 'open' | 'cpu[:easy|medium|hard]' | 'bot:NAME'
   *   or SeatSpec objects (none: all open)
   * @param {number} [spec.turnTimerMs] time per decision (0: the server's default)
   * @param {string} [spec.onTimeout] 'auto-play' | 'forfeit' (or a TimeoutPolicy name)
   * @param {boolean} [spec.private] not listed publicly
   * @param {string[]} [spec.tags]
   * @param {string|number|bigint} [spec.seed] the match seed (uint64)
   * @param {string} [spec.requestId] the call's request_id (default: a fresh UUID4; '' for
   *   none). Calling again with the same one and the same spec is a safe retry: it resolves
   *   to the first call's {match, host_token} and creates no other match (the same id with
   *   another spec rejects with reason REQUEST_ID_REUSED).
   * @param {string} [spec.token] create as this bot (its bot token) or as the admin (the
   *   admin token): a seat reserved for a bot ('bot:NAME') needs that bot's consent, which
   *   its own token and the admin's carry (else the bot must let the caller, or anyone,
   *   reserve it: reservableBy; reason NOT_RESERVABLE)
   */
  createMatch({
    preset = '',
    ruleset,
    overrides = [],
    seats = [],
    turnTimerMs = 0,
    onTimeout,
    private: isPrivate = false,
    tags = [],
    seed,
    requestId = randomUUID(),
    token,
  } = {}) {
    const request = {
      request_id: requestId,
      preset,
      overrides,
      seats: seats.map(seatSpec),
      settings: {
        turn_timer_ms: turnTimerMs,
        on_timeout: onTimeout ? (POLICIES[onTimeout] ?? onTimeout) : 'TIMEOUT_POLICY_UNSPECIFIED',
        visibility: isPrivate ? 'VISIBILITY_PRIVATE' : 'VISIBILITY_PUBLIC',
        tags,
      },
    };
    if (ruleset !== undefined) {
      request.ruleset = ruleset;
    }
    if (seed !== undefined && seed !== null) {
      request.seed = String(seed);
    }
    return this._call(this.matches, 'CreateMatch', request, token);
  }

  /**
   * Take a seat (with a bot token: for that bot; without: resolves with a seat_token).
   * `acceptChosenSeed`: take an open seat even though the match's creator chose its seed
   * (match.seed_chosen), with which it can compute this seat's tiles.
   */
  joinMatch(name, { token, seat, displayName = '', acceptChosenSeed = false } = {}) {
    const request = {
      name: matchName(name),
      display_name: displayName,
      accept_chosen_seed: acceptChosenSeed,
    };
    if (seat !== undefined && seat !== null) {
      request.seat = seat;
    }
    return this._call(this.matches, 'JoinMatch', request, token);
  }

  /** Start a waiting match with its host token; resolves to the Match. */
  async startMatch(name, hostToken) {
    const response = await this._call(
      this.matches,
      'StartMatch',
      { name: matchName(name) },
      hostToken,
    );
    return response.match;
  }

  /** Cancel a match with its host token; resolves to the Match. */
  async cancelMatch(name, hostToken, reason = '') {
    const response = await this._call(
      this.matches,
      'CancelMatch',
      { name: matchName(name), reason },
      hostToken,
    );
    return response.match;
  }

  /** One match. */
  async getMatch(name) {
    const response = await this._call(this.matches, 'GetMatch', { name: matchName(name) });
    return response.match;
  }

  /** A page of public matches: {matches, next_page_token}. */
  listMatches({ pageSize = 50, pageToken = '', state = 'MATCH_STATE_UNSPECIFIED', tag = '' } = {}) {
    return this._call(this.matches, 'ListMatches', {
      page_size: pageSize,
      page_token: pageToken,
      state,
      tag,
    });
  }

  /** Every preset ruleset. */
  async listRulesets() {
    const response = await this._call(this.matches, 'ListRulesets', {});
    return response.rulesets;
  }

  /** The complete Replay of a finished match. */
  async getReplay(name) {
    const response = await this._call(this.matches, 'GetReplay', { name: matchName(name) });
    return response.replay;
  }

  /** The server's ladders, in the order it runs them: [{name, title, preset, ...}]. */
  async listLadders() {
    const response = await this._call(this.ladders, 'ListLadders', {});
    return response.ladders;
  }

  /** One ladder ('ladders/ID' or 'ID') and every entry that ever joined it: {ladder, entries}. */
  getLadder(name) {
    return this._call(this.ladders, 'GetLadder', { name: ladderName(name) });
  }

  /**
   * Join a ladder as the bot of `token`; resolves to its LadderEntry ({name, version,
   * predecessor, state, max_concurrent_matches, ...}). The ladder's matches then come on
   * the bot's Play stream (runBot) like any other match, at most `maxConcurrentMatches` at
   * once. Joining again with the same version changes only that number; a new version
   * label starts a new rated entry after the current one, which plays no more.
   *
   * @param {string} ladder 'ladders/ID' (or 'ID')
   * @param {string} version 1-32 characters of [A-Za-z0-9_.-]
   * @param {object} [options]
   * @param {number} [options.maxConcurrentMatches] 1-32 (default 1)
   * @param {string} [options.token] the bot token (default $CAPICUA_TOKEN, else
   *   $CAPICUA_BOT_TOKEN, as runBot)
   */
  async joinLadder(ladder, version, { maxConcurrentMatches = 1, token } = {}) {
    const request = {
      ladder: ladderName(ladder),
      version,
      max_concurrent_matches: maxConcurrentMatches,
    };
    const response = await this._call(this.ladders, 'JoinLadder', request, resolveToken(token));
    return response.entry;
  }

  /**
   * Leave a ladder as the bot of `token` (default as joinLadder's): no new matches, those
   * in flight finish, the entry's results stay. Resolves to the entry (ENTRY_STATE_LEFT);
   * rejects with reason NOT_ON_LADDER when the bot has no active entry there.
   */
  async leaveLadder(ladder, { token } = {}) {
    const request = { ladder: ladderName(ladder) };
    const response = await this._call(this.ladders, 'LeaveLadder', request, resolveToken(token));
    return response.entry;
  }

  /** Close the channel. */
  close() {
    this.matches.close();
    this.play.close();
    this.ladders.close();
  }
}
