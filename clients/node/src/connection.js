// Addresses, channel options and the bearer-token metadata shared by the lobby and bots.

import { readFileSync } from 'node:fs';

import grpc from '@grpc/grpc-js';

import { CapicuaError, ErrorReason } from './errors.js';

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

/**
 * The bot's token: the argument, else (as the Python bots) the arena's $CAPICUA_TOKEN, else
 * $CAPICUA_BOT_TOKEN or $CAPICUA_SEAT_TOKEN. Throws a CapicuaError (MISSING_TOKEN) when
 * there is none, before anything is sent.
 */
export function resolveToken(token) {
  const env = process.env;
  const found = token || env.CAPICUA_TOKEN || env.CAPICUA_BOT_TOKEN || env.CAPICUA_SEAT_TOKEN;
  if (!found) {
    throw new CapicuaError(
      'no bot token: pass {token} or set CAPICUA_TOKEN or CAPICUA_BOT_TOKEN (from `capicua match register-bot NAME`)',
      { code: grpc.status.UNAUTHENTICATED, reason: ErrorReason.MISSING_TOKEN },
    );
  }
  return found;
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

/** "ladders/club" for "club" or "ladders/club". */
export function ladderName(id) {
  return id.startsWith('ladders/') ? id : `ladders/${id}`;
}

function pem(value, what) {
  if (value === undefined || value === null || value === '') {
    return null;
  }
  if (Buffer.isBuffer(value)) {
    return value;
  }
  try {
    return readFileSync(value);
  } catch (err) {
    throw new Error(`tls.${what} ${value}: cannot read it (${err.code ?? err.message})`);
  }
}

/**
 * The TLS settings: the argument, else $CAPICUA_TLS (1: the system's CAs), $CAPICUA_TLS_CA,
 * $CAPICUA_TLS_CERT and $CAPICUA_TLS_KEY (as the Python client); null means plaintext.
 * `true` trusts the system's CAs; `{ca, cert, key}` are PEM file paths (or Buffers): trust
 * `ca`, and show the client certificate `cert` with its `key` (mutual TLS).
 */
export function resolveTls(tls) {
  if (tls === false || tls === null) {
    return null;
  }
  if (tls === true) {
    return {};
  }
  if (tls !== undefined) {
    return tls;
  }
  const env = process.env;
  const flag = !['', '0', 'false', 'no'].includes((env.CAPICUA_TLS ?? '').trim().toLowerCase());
  const found = { ca: env.CAPICUA_TLS_CA, cert: env.CAPICUA_TLS_CERT, key: env.CAPICUA_TLS_KEY };
  return flag || found.ca || found.cert || found.key ? found : null;
}

/** grpc-js channel credentials for `tls` (see resolveTls): createSsl, or createInsecure. */
export function channelCredentials(tls) {
  const settings = resolveTls(tls);
  if (settings === null) {
    return grpc.credentials.createInsecure();
  }
  const cert = pem(settings.cert, 'cert');
  const key = pem(settings.key, 'key');
  if (Boolean(cert) !== Boolean(key)) {
    throw new Error('a client certificate needs both tls.cert and tls.key');
  }
  return grpc.credentials.createSsl(pem(settings.ca, 'ca'), key, cert);
}

/**
 * A grpc-js client of `Service` on `server`: over TLS with `tls` (see resolveTls), else in
 * plaintext (loopback or trusted networks only; see docs/tls.md).
 */
export function makeClient(Service, server, options = {}, tls = undefined) {
  return new Service(resolveServer(server), channelCredentials(tls), {
    ...CHANNEL_OPTIONS,
    ...options,
  });
}
