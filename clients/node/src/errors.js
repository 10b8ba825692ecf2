// Errors: gRPC status codes, google.rpc.Status and its ErrorInfo (domain "capicua.dev").

import grpc from '@grpc/grpc-js';

import { decodeStatus, loadProtos } from './proto.js';

export const DOMAIN = 'capicua.dev';

/**
 * The ErrorInfo reasons, from the enum capicua.v1.ErrorReason (proto/capicua/v1/errors.proto
 * says when each is sent and with which status code). Each name maps to itself, the string
 * a CapicuaError carries as `reason`: compare `err.reason === ErrorReason.ILLEGAL_ACTION`
 * rather than retyping the name. A reason newer than these protos still arrives as its
 * string.
 */
export const ErrorReason = Object.freeze(
  Object.fromEntries(loadProtos().ErrorReason.type.value.map(({ name }) => [name, name])),
);
const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';

const CODE_NAMES = Object.fromEntries(
  Object.entries(grpc.status).map(([name, number]) => [number, name]),
);

/** "UNAVAILABLE" for 14. */
export function codeName(code) {
  return CODE_NAMES[code] ?? `CODE_${code}`;
}

/** "FAILED_PRECONDITION/ILLEGAL_ACTION" (the code alone when the reason repeats it). */
function statusLabel(code, reason) {
  return reason && reason !== codeName(code) ? `${codeName(code)}/${reason}` : codeName(code);
}

/** The ErrorInfo of a decoded google.rpc.Status, or null. */
export function errorInfo(status) {
  for (const detail of status?.details ?? []) {
    if (detail && detail['@type'] === ERROR_INFO) {
      return detail;
    }
  }
  return null;
}

/**
 * A failed call or an in-stream error: `code` (number), `codeName` ("FAILED_PRECONDITION"),
 * `reason` ("ILLEGAL_ACTION", from the ErrorInfo; "" if none), `metadata` (the
 * ErrorInfo's), and the server's message as `details`.
 */
export class CapicuaError extends Error {
  constructor(message, options = {}) {
    const { code = grpc.status.UNKNOWN, reason = '', metadata = {}, details = '', cause } = options;
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'CapicuaError';
    this.code = code;
    this.codeName = codeName(code);
    this.reason = reason;
    this.metadata = metadata;
    this.details = details;
  }

  /** From an in-stream google.rpc.Status (PlayResponse.error). */
  static fromStatus(status) {
    const info = errorInfo(status);
    const reason = info?.reason ?? '';
    const code = status.code ?? grpc.status.UNKNOWN;
    const label = statusLabel(code, reason);
    return new CapicuaError(`${label}: ${status.message}`, {
      code,
      reason,
      metadata: { ...(info?.metadata ?? {}) },
      details: status.message ?? '',
    });
  }

  /**
   * From a @grpc/grpc-js call error or status (reads the rich status in the trailers when
   * present); `what` (e.g. the method) prefixes the message.
   */
  static fromGrpc(err, what = '') {
    if (err instanceof CapicuaError) {
      return err;
    }
    const code = typeof err?.code === 'number' ? err.code : grpc.status.UNKNOWN;
    let info = null;
    const raw = err?.metadata?.get?.('grpc-status-details-bin') ?? [];
    if (raw.length > 0) {
      try {
        info = errorInfo(decodeStatus(Buffer.from(raw[0])));
      } catch {
        info = null;
      }
    }
    const reason = info?.reason ?? '';
    const details = err?.details ?? err?.message ?? String(err);
    const label = statusLabel(code, reason);
    return new CapicuaError(`${what ? `${what} failed: ` : ''}${label}: ${details}`, {
      code,
      reason,
      metadata: { ...(info?.metadata ?? {}) },
      details,
      cause: err,
    });
  }
}
