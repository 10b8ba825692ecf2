// Loads the repository's .proto files at run time (no copies, no generated code).
//
// proto/capicua/v1/*.proto and third_party/googleapis/google/rpc/*.proto are read from the
// repository this package lives in (two levels up). Messages are plain objects with the
// field names of the .proto files (snake_case), enums as their names
// ("ACTION_KIND_PLAY"), 64-bit integers as decimal strings (a uint64 `turn_id` never loses
// precision), unset proto3 `optional` fields left undefined, every other field present
// with its default, and each oneof's set member named by a virtual field (`message`
// for PlayRequest/PlayResponse, `kind` for Event).

import path from 'node:path';
import { fileURLToPath } from 'node:url';

import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..', '..');

/** Where capicua/v1/*.proto are read from (the repository's proto/). */
export const PROTO_DIR = path.join(repo, 'proto');
/** Where google/rpc/status.proto and error_details.proto are read from. */
export const GOOGLEAPIS_DIR = path.join(repo, 'third_party', 'googleapis');

/** The options given to @grpc/proto-loader: they fix how messages look in JavaScript. */
export const LOADER_OPTIONS = Object.freeze({
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  // Decode google.protobuf.Any (the details of a google.rpc.Status) into
  // {'@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain, metadata}.
  json: true,
});

const FILES = [
  'capicua/v1/play.proto',
  'capicua/v1/match.proto',
  'capicua/v1/ladder.proto',
  'capicua/v1/errors.proto',
  'google/rpc/status.proto',
  'google/rpc/error_details.proto',
];

let cached = null;

/**
 * The loaded `capicua.v1` package: `{PlayService, MatchService, ...}` service constructors
 * for @grpc/grpc-js. Loaded once per process.
 */
export function loadProtos() {
  if (cached === null) {
    const definition = protoLoader.loadSync(FILES, {
      ...LOADER_OPTIONS,
      includeDirs: [PROTO_DIR, GOOGLEAPIS_DIR],
    });
    const loaded = grpc.loadPackageDefinition(definition);
    cached = { v1: loaded.capicua.v1, definition };
  }
  return cached.v1;
}

/**
 * Decode a serialized google.rpc.Status (the `grpc-status-details-bin` trailer of a failed
 * call) with the same options as every other message. proto-loader exposes decoders only
 * for RPC messages, so the bytes are framed as field 7 (`error`, a google.rpc.Status) of a
 * PlayResponse and decoded as one.
 */
export function decodeStatus(bytes) {
  const { PlayService } = loadProtos();
  const header = [0x3a]; // field 7, wire type 2 (length-delimited)
  let n = bytes.length;
  while (n > 0x7f) {
    header.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  header.push(n);
  const framed = Buffer.concat([Buffer.from(header), bytes]);
  return PlayService.service.Play.responseDeserialize(framed).error;
}
