// TLS on a real `capicua serve --tls-cert --tls-key [--tls-client-ca]`: the Lobby and a bot
// connect with {tls: {ca}}; plaintext and an untrusted CA are refused; with mutual TLS a
// client certificate is needed. The certificates come from the openssl commands of
// docs/tls.md (the test is skipped without an openssl executable).

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { CapicuaError, Lobby, runBot } from '../src/index.js';
import { recordingLogger, startServer, within } from './helpers.js';

function haveOpenssl() {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A CA, a server certificate for localhost/127.0.0.1 and a client certificate, in `dir`. */
function makeCerts(dir) {
  const run = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const ca = (name) => {
    run('req', '-x509', ...ec, '-keyout', `${name}-key.pem`, '-out', `${name}.pem`, '-days', '1',
      '-subj', `/CN=${name}`, '-addext', 'basicConstraints=critical,CA:TRUE',
      '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  };
  const leaf = (name, ext) => {
    writeFileSync(path.join(dir, `${name}.ext`), ext);
    run('req', ...ec, '-keyout', `${name}-key.pem`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    run('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca-key.pem',
      '-CAcreateserial', '-out', `${name}.pem`, '-days', '1', '-extfile', `${name}.ext`);
  };
  ca('ca');
  ca('other-ca');
  leaf('server', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  leaf('client', 'extendedKeyUsage=clientAuth\n');
  const file = (name) => path.join(dir, name);
  return {
    ca: file('ca.pem'),
    otherCa: file('other-ca.pem'),
    serverCert: file('server.pem'),
    serverKey: file('server-key.pem'),
    clientCert: file('client.pem'),
    clientKey: file('client-key.pem'),
  };
}

async function refused(options, pattern) {
  const lobby = new Lobby({ timeoutMs: 5_000, ...options });
  try {
    await assert.rejects(lobby.listMatches(), (err) => {
      assert.ok(err instanceof CapicuaError, String(err));
      assert.equal(err.codeName, 'UNAVAILABLE', err.message);
      if (pattern) {
        assert.match(err.message, pattern);
      }
      return true;
    });
  } finally {
    lobby.close();
  }
}

const skip = haveOpenssl() ? false : 'no openssl executable';

describe('TLS', { timeout: 120_000, skip }, () => {
  let dir;
  let certs;

  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'capicua-node-tls-'));
    certs = makeCerts(dir);
  });

  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  test('a bot plays over TLS; plaintext and an untrusted CA are refused', async () => {
    const server = await startServer({
      args: ['--tls-cert', certs.serverCert, '--tls-key', certs.serverKey],
    });
    const lobby = new Lobby({ server: server.address, tls: { ca: certs.ca } });
    try {
      const botId = `node-tls-${randomUUID().slice(0, 8)}`;
      const { token } = await lobby.registerBot(botId);
      const { match, host_token: hostToken } = await lobby.createMatch({
        preset: 'block',
        seats: [`bot:${botId}`, 'cpu', 'cpu', 'cpu'],
        token, // the bot's consent to reserve its seats
        overrides: ['target=15'],
      });
      await lobby.startMatch(match.name, hostToken);
      const logger = recordingLogger('tls-bot');
      const summary = await within(
        60_000,
        runBot(
          { choose: (view, legalActions) => legalActions[0] },
          {
            server: server.address,
            token,
            tls: { ca: certs.ca },
            maxMatches: 1,
            handleSignals: false,
            logger,
          },
        ),
        'the bot plays one match over TLS',
      );
      assert.equal(summary.matches, 1);
      await refused({ server: server.address, tls: false });
      await refused({ server: server.address, tls: { ca: certs.otherCa } }, /unable to verify|CERTIFICATE_VERIFY_FAILED/);
    } finally {
      lobby.close();
      await server.stop();
    }
  });

  test('mutual TLS: a client certificate is needed', async () => {
    const server = await startServer({
      args: [
        '--tls-cert', certs.serverCert, '--tls-key', certs.serverKey,
        '--tls-client-ca', certs.ca,
      ],
    });
    try {
      await refused({ server: server.address, tls: { ca: certs.ca } });
      const lobby = new Lobby({
        server: server.address,
        tls: { ca: certs.ca, cert: certs.clientCert, key: certs.clientKey },
      });
      try {
        const listed = await lobby.listMatches();
        assert.ok(Array.isArray(listed.matches ?? []));
      } finally {
        lobby.close();
      }
    } finally {
      await server.stop();
    }
  });
});
