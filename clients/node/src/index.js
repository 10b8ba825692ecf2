// capicua-client: write a capicua bot in Node.js as one choose(view, legalActions) function.
//
//   import { runBot } from 'capicua-client';
//   await runBot({ choose: (view, legalActions) => legalActions[0] });
//
// See README.md.

export {
  Bot,
  SUPERSEDED,
  WITHDRAWN,
  runBot,
  actionId,
  timestampToDate,
  consoleLogger,
} from './bot.js';
export { Lobby, seatSpec } from './lobby.js';
export { CapicuaError, DOMAIN, ErrorReason, codeName, errorInfo } from './errors.js';
export {
  CHANNEL_OPTIONS,
  DEFAULT_SERVER,
  VERSION,
  bearer,
  channelCredentials,
  ladderName,
  matchName,
  resolveServer,
  resolveTls,
  resolveToken,
} from './connection.js';
export { GOOGLEAPIS_DIR, LOADER_OPTIONS, PROTO_DIR, loadProtos } from './proto.js';
