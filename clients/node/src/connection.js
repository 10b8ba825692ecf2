// Addresses, channel options and the bearer-token metadata shared by the lobby and bots.

import { readFileSync } from 'node:fs';

import grpc from '@grpc/grpc-js';

export const DEFAULT_SERVER = '127.0.0.1:50051';

/** The package's version, sent in Hello.client. */
export const VERSION = JSON.parse(
  readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
).version;

/**
 * Channel options of the reference clients (docs/protocol.md, "Keepalive and limits"):
 * ping every 20 s at most (the server refuses faster pings), and accept large replies
 * (a replay can be several MiB).
 */
export const CHANNEL_OPTIONS = Object.freeze({
  'grpc.keepalive_time_ms': 20_000,
  'grpc.keepalive_timeout_ms': 10_000,
  'grpc.keepalive_permit_without_calls': 1,
  'grpc.http2.max_pings_without_data': 0,
  'grpc.max_receive_message_length': 64 * 1024 * 1024,
});

/** The server address: the argument, else $CAPICUA_SERVER, else 127.0.0.1:50051. */
export function resolveServer(server) {
  return server || process.env.CAPICUA_SERVER || DEFAULT_SERVER;
}

/** `authorization: Bearer <token>` metadata (empty without a token). */
export function bearer(token) {
  const metadata = new grpc.Metadata();
  if (token) {
    metadata.set('authorization', `Bearer ${token}`);
  }
  return metadata;
}

/** "matches/abc" for "abc" or "matches/abc". */
export function matchName(id) {
  return id.startsWith('matches/') ? id : `matches/${id}`;
}

/** A grpc-js client of `Service` on `server`, in plaintext (see docs/protocol.md). */
export function makeClient(Service, server, options = {}) {
  return new Service(resolveServer(server), grpc.credentials.createInsecure(), {
    ...CHANNEL_OPTIONS,
    ...options,
  });
}
