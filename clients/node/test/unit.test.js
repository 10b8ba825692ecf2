// No server: proto loading, uint64 handling, error decoding, choose() results, seat specs,
// what the ladder calls send.

import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

import {
  Bot,
  CapicuaError,
  ErrorReason,
  GOOGLEAPIS_DIR,
  Lobby,
  PROTO_DIR,
  actionId,
  loadProtos,
  runBot,
  seatSpec,
  timestampToDate,
} from '../src/index.js';
import { decodeStatus } from '../src/proto.js';
import { NODE_DIR } from './helpers.js';

function protoFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules') {
      continue;
    }
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      out.push(...protoFiles(full));
    } else if (entry.name.endsWith('.proto')) {
      out.push(full);
    }
  }
  return out;
}

describe('protos', () => {
  test("the repository's .proto files are loaded, not copies", () => {
    assert.equal(PROTO_DIR, path.resolve(NODE_DIR, '..', '..', 'proto'));
    assert.ok(existsSync(path.join(PROTO_DIR, 'capicua', 'v1', 'play.proto')));
    assert.ok(existsSync(path.join(GOOGLEAPIS_DIR, 'google', 'rpc', 'status.proto')));
    assert.deepEqual(protoFiles(NODE_DIR), [], 'no .proto file inside clients/node');
    const v1 = loadProtos();
    assert.equal(typeof v1.PlayService, 'function');
    assert.equal(typeof v1.MatchService, 'function');
    assert.ok(v1.PlayService.service.Play.requestStream && v1.PlayService.service.Play.responseStream);
  });

  test('uint64 turn_id goes through unchanged as a decimal string', () => {
    const play = loadProtos().PlayService.service.Play;
    for (const turnId of ['0', '7', '9007199254740993', '18446744073709551615']) {
      const bytes = play.requestSerialize({ action: { match: 'matches/x', turn_id: turnId, action_id: 2 } });
      const back = play.requestDeserialize(bytes);
      assert.equal(back.message, 'action');
      assert.equal(back.action.turn_id, turnId);
      assert.equal(back.action.action_id, 2);
    }
  });

  test('in-stream errors and status trailers decode to a CapicuaError with the reason', () => {
    const play = loadProtos().PlayService.service.Play;
    const status = {
      code: 9,
      message: 'action_id: 9 is not one of the legal action ids 0..1 of turn 5',
      details: [
        {
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          reason: 'ILLEGAL_ACTION',
          domain: 'capicua.dev',
          metadata: { match: 'matches/x', turn_id: '5' },
        },
      ],
    };
    const message = play.responseDeserialize(play.responseSerialize({ error: status }));
    assert.equal(message.message, 'error');
    const err = CapicuaError.fromStatus(message.error);
    assert.equal(err.codeName, 'FAILED_PRECONDITION');
    assert.equal(err.reason, 'ILLEGAL_ACTION');
    assert.deepEqual(err.metadata, { match: 'matches/x', turn_id: '5' });
    assert.match(err.message, /^FAILED_PRECONDITION\/ILLEGAL_ACTION: action_id: 9/);

    // The grpc-status-details-bin trailer holds a serialized google.rpc.Status: the bytes
    // of PlayResponse field 7 without its tag and length.
    const framed = play.responseSerialize({ error: { ...status, message: 'x'.repeat(300) } });
    const raw = framed.subarray(3); // tag 0x3a + a two-byte length (> 127 bytes)
    assert.equal(framed[0], 0x3a);
    const decoded = decodeStatus(raw);
    assert.equal(decoded.message, 'x'.repeat(300));
    assert.equal(decoded.details[0].reason, 'ILLEGAL_ACTION');
  });

  test('ErrorReason names each value of capicua.v1.ErrorReason as itself', () => {
    const names = loadProtos().ErrorReason.type.value.map((v) => v.name);
    assert.equal(names[0], 'ERROR_REASON_UNSPECIFIED');
    assert.deepEqual(Object.keys(ErrorReason), names);
    for (const [name, reason] of Object.entries(ErrorReason)) {
      assert.equal(reason, name);
    }
    for (const reason of ['ILLEGAL_ACTION', 'STREAM_REPLACED', 'MISSING_TOKEN', 'REQUEST_ID_REUSED']) {
      assert.equal(ErrorReason[reason], reason);
    }
    assert.ok(Object.isFrozen(ErrorReason));
  });
});

describe('createMatch request_id', () => {
  function sent(spec) {
    const lobby = new Lobby({ server: '127.0.0.1:1' });
    try {
      lobby._call = (client, method, request) => ({ method, request });
      return lobby.createMatch(spec);
    } finally {
      lobby.close();
    }
  }

  test('a fresh UUID4 by default, the one given otherwise', () => {
    const uuid4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    const first = sent({ preset: 'block' });
    const second = sent({ preset: 'block' });
    assert.equal(first.method, 'CreateMatch');
    assert.match(first.request.request_id, uuid4);
    assert.match(second.request.request_id, uuid4);
    assert.notEqual(first.request.request_id, second.request.request_id);
    const requestId = '123e4567-e89b-42d3-a456-426614174000';
    assert.equal(sent({ preset: 'block', requestId }).request.request_id, requestId);
    assert.equal(sent({ preset: 'block', requestId: '' }).request.request_id, '');
    const create = loadProtos().MatchService.service.CreateMatch;
    const back = create.requestDeserialize(create.requestSerialize(sent({ preset: 'block', requestId }).request));
    assert.equal(back.request_id, requestId);
  });
});

describe('ladder calls', () => {
  /** What joinLadder/leaveLadder would send: {method, request, token}, no server. */
  async function sent(call) {
    const lobby = new Lobby({ server: '127.0.0.1:1' });
    try {
      lobby._call = async (client, method, request, token) => ({ entry: { method, request, token } });
      return await call(lobby);
    } finally {
      lobby.close();
    }
  }

  /** Runs `fn` with the token variables set as in `env` (unset when absent). */
  async function withTokens(env, fn) {
    const names = ['CAPICUA_TOKEN', 'CAPICUA_BOT_TOKEN', 'CAPICUA_SEAT_TOKEN'];
    const saved = Object.fromEntries(names.map((n) => [n, process.env[n]]));
    try {
      for (const n of names) {
        if (env[n] === undefined) {
          delete process.env[n];
        } else {
          process.env[n] = env[n];
        }
      }
      return await fn();
    } finally {
      for (const n of names) {
        if (saved[n] === undefined) {
          delete process.env[n];
        } else {
          process.env[n] = saved[n];
        }
      }
    }
  }

  test('joinLadder sends the ladder, the version and the matches at once, with the bot token', async () => {
    const joined = await sent((l) => l.joinLadder('club', 'v1', { maxConcurrentMatches: 4, token: 't1' }));
    assert.equal(joined.method, 'JoinLadder');
    assert.deepEqual(joined.request, { ladder: 'ladders/club', version: 'v1', max_concurrent_matches: 4 });
    assert.equal(joined.token, 't1');
    const byDefault = await withTokens({ CAPICUA_BOT_TOKEN: 'from-env' }, () =>
      sent((l) => l.joinLadder('ladders/club', 'v2')),
    );
    assert.deepEqual(byDefault.request, { ladder: 'ladders/club', version: 'v2', max_concurrent_matches: 1 });
    assert.equal(byDefault.token, 'from-env');
    const join = loadProtos().LadderService.service.JoinLadder;
    assert.deepEqual(join.requestDeserialize(join.requestSerialize(joined.request)), joined.request);
    const left = await sent((l) => l.leaveLadder('club', { token: 't1' }));
    assert.deepEqual([left.method, left.request, left.token], ['LeaveLadder', { ladder: 'ladders/club' }, 't1']);
  });

  test('without a token the ladder calls reject with MISSING_TOKEN before sending', async () => {
    await withTokens({}, async () => {
      for (const call of [(l) => l.joinLadder('club', 'v1'), (l) => l.leaveLadder('club')]) {
        await assert.rejects(sent(call), (err) => {
          assert.ok(err instanceof CapicuaError);
          assert.equal(err.reason, ErrorReason.MISSING_TOKEN);
          assert.match(err.message, /CAPICUA_TOKEN/);
          return true;
        });
      }
    });
  });
});

describe('choose() results', () => {
  const legal = [
    { id: 0, text: '3-6:L', kind: 'ACTION_KIND_PLAY', tile: '3-6', end: 'END_LEFT' },
    { id: 1, text: '3-6:R', kind: 'ACTION_KIND_PLAY', tile: '3-6', end: 'END_RIGHT' },
  ];

  test('a LegalAction, an id or a text name the action', () => {
    assert.equal(actionId(legal[1], legal), 1);
    assert.equal(actionId(0, legal), 0);
    assert.equal(actionId(1n, legal), 1);
    assert.equal(actionId('3-6:R', legal), 1);
    assert.equal(actionId('1', legal), 1);
    assert.equal(actionId(5, legal), 5, 'an unknown id is sent: the server says why');
  });

  test('anything else names no action', () => {
    for (const bad of [undefined, null, -1, 1.5, 'nope', {}, { id: -2 }, [], NaN]) {
      assert.equal(actionId(bad, legal), null, String(bad));
    }
  });

  test('timestamps become Dates', () => {
    assert.equal(timestampToDate(null), null);
    assert.equal(
      timestampToDate({ seconds: '1700000000', nanos: 250_000_000 }).toISOString(),
      '2023-11-14T22:13:20.250Z',
    );
  });

  test('the Bot base class asks for choose()', () => {
    class Empty extends Bot {}
    assert.throws(() => new Empty().choose({}, []), /Empty\.choose\(view, legalActions\) is not written/);
  });

  test('runBot rejects a bot without choose() and a missing token', async () => {
    await assert.rejects(runBot({}, { token: 't' }), /needs a choose/);
    const saved = process.env.CAPICUA_TOKEN;
    delete process.env.CAPICUA_TOKEN;
    try {
      await assert.rejects(runBot({ choose: () => 0 }, {}), (err) => {
        assert.ok(err instanceof CapicuaError);
        assert.equal(err.reason, 'MISSING_TOKEN');
        assert.match(err.message, /CAPICUA_TOKEN/);
        return true;
      });
    } finally {
      if (saved !== undefined) {
        process.env.CAPICUA_TOKEN = saved;
      }
    }
  });
});

describe('seat specs', () => {
  test("the CLI's notation", () => {
    assert.deepEqual(seatSpec('open'), { kind: 'SEAT_KIND_OPEN' });
    assert.deepEqual(seatSpec('cpu'), { kind: 'SEAT_KIND_CPU', cpu_level: 'CPU_LEVEL_EASY' });
    assert.deepEqual(seatSpec('CPU:Hard'), { kind: 'SEAT_KIND_CPU', cpu_level: 'CPU_LEVEL_HARD' });
    assert.deepEqual(seatSpec('bot:My-Bot'), { kind: 'SEAT_KIND_BOT', bot_id: 'My-Bot' });
    const spec = { kind: 'SEAT_KIND_CPU', cpu_level: 'CPU_LEVEL_MEDIUM' };
    assert.equal(seatSpec(spec), spec);
    for (const bad of ['cpu:expert', 'bot', 'human']) {
      assert.throws(() => seatSpec(bad), /is not open, cpu/);
    }
  });
});
