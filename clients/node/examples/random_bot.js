#!/usr/bin/env node
// A bot that plays a random legal action. Run it against a capicua server:
//
//   CAPICUA_SERVER=127.0.0.1:50051 CAPICUA_TOKEN=<bot token> \
//     node clients/node/examples/random_bot.js [--matches N] [--ask-forced]
//
// It plays every match its token holds a seat in until stopped (Ctrl+C), or exits 0 after
// N matches ended. --server and --token override the environment.

import { parseArgs } from 'node:util';

import { runBot } from '../src/index.js';

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
      '         [--tls] [--tls-ca FILE] [--tls-cert FILE --tls-key FILE]',
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

try {
  const { matches } = await runBot(randomBot, {
    server: args.server,
    token: args.token,
    askForced: args['ask-forced'],
    maxMatches,
    // --tls-ca or a certificate implies --tls; none: $CAPICUA_TLS*, else plaintext
    tls:
      args.tls || args['tls-ca'] || args['tls-cert'] || args['tls-key']
        ? { ca: args['tls-ca'], cert: args['tls-cert'], key: args['tls-key'] }
        : undefined,
  });
  console.error(`random_bot: done after ${matches} match(es)`);
} catch (err) {
  // the server refused us or we gave up (a bad token, ...): exit 2 like the Python tools
  console.error(`random_bot: ${err.message}`);
  process.exit(2);
}
