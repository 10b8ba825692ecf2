#!/usr/bin/env node
// A bot that plays a random legal action. Run it against a capicua server:
//
//   CAPICUA_SERVER=127.0.0.1:50051 CAPICUA_TOKEN=<bot token> \
//     node clients/node/examples/random_bot.js [--matches N] [--ask-forced]
//
// It plays every match its token holds a seat in until stopped (Ctrl+C), or exits 0 after
// N matches ended. --server and --token override the environment. With --ladder
// ladders/ID --version LABEL it first joins that ladder of the server (JoinLadder, with
// --max-matches-at-once N: 1 by default), whose matches then come on its Play stream.

import { parseArgs } from 'node:util';

import { Lobby, runBot } from '../src/index.js';

const randomBot = {
  choose(view, legalActions) {
    return legalActions[Math.floor(Math.random() * legalActions.length)];
  },
};

let args;
try {
  ({ values: args } = parseArgs({
    options: {
      matches: { type: 'string' },
      server: { type: 'string' },
      token: { type: 'string' },
      tls: { type: 'boolean', default: false },
      'tls-ca': { type: 'string' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      'ask-forced': { type: 'boolean', default: false },
      ladder: { type: 'string' },
      version: { type: 'string' },
      'max-matches-at-once': { type: 'string', default: '1' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  }));
} catch (err) {
  console.error(`random_bot: ${err.message}`);
  process.exit(2);
}
if (args.help) {
  console.log(
    'usage: node random_bot.js [--matches N] [--server HOST:PORT] [--token TOKEN] [--ask-forced]\n' +
      '         [--tls] [--tls-ca FILE] [--tls-cert FILE --tls-key FILE]\n' +
      '         [--ladder ladders/ID --version LABEL [--max-matches-at-once N]]',
  );
  console.log(
    'env: CAPICUA_SERVER (default 127.0.0.1:50051), CAPICUA_TOKEN, CAPICUA_TLS=1, ' +
      'CAPICUA_TLS_CA, CAPICUA_TLS_CERT, CAPICUA_TLS_KEY',
  );
  process.exit(0);
}
const maxMatches = args.matches === undefined ? undefined : Number(args.matches);
if (maxMatches !== undefined && !(Number.isInteger(maxMatches) && maxMatches > 0)) {
  console.error(`random_bot: --matches needs a positive integer, got ${args.matches}`);
  process.exit(2);
}

const atOnce = Number(args['max-matches-at-once']);
if (!Number.isInteger(atOnce) || atOnce < 1) {
  console.error(
    `random_bot: --max-matches-at-once needs a positive integer, got ${args['max-matches-at-once']}`,
  );
  process.exit(2);
}
if ((args.ladder === undefined) !== (args.version === undefined)) {
  console.error('random_bot: --ladder and --version go together (e.g. --ladder ladders/club --version v1)');
  process.exit(2);
}
// --tls-ca or a certificate implies --tls; none: $CAPICUA_TLS*, else plaintext
const tls =
  args.tls || args['tls-ca'] || args['tls-cert'] || args['tls-key']
    ? { ca: args['tls-ca'], cert: args['tls-cert'], key: args['tls-key'] }
    : undefined;

/** Join the ladder before the Play stream opens: its matches then come on that stream. */
async function joinLadder() {
  const lobby = new Lobby({ server: args.server, tls });
  try {
    const entry = await lobby.joinLadder(args.ladder, args.version, {
      maxConcurrentMatches: atOnce,
      token: args.token,
    });
    const id = entry.name.slice(entry.name.lastIndexOf('/') + 1);
    console.error(`random_bot: joined ${args.ladder} as ${id} (${atOnce} matches at once)`);
  } finally {
    lobby.close();
  }
}

try {
  if (args.ladder !== undefined) {
    await joinLadder();
  }
  const { matches } = await runBot(randomBot, {
    server: args.server,
    token: args.token,
    askForced: args['ask-forced'],
    maxMatches,
    tls,
  });
  console.error(`random_bot: done after ${matches} match(es)`);
} catch (err) {
  // the server refused us or we gave up (a bad token, ...): exit 2 like the Python tools
  console.error(`random_bot: ${err.message}`);
  process.exit(2);
}
