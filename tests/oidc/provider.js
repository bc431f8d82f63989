// A real OpenID provider on loopback for tests/test_oidc.py: panva's certified oidc-provider with its
// development login and consent pages (any password signs an account in).
//
//   node tests/oidc/provider.js PORT
//
// prints "ready <issuer>" once it listens. Tests set it up over a small JSON side door under /test/
// (never part of a real provider):
//   POST /test/clients   {client_id, client_secret, redirect_uris}       registers a client
//   POST /test/accounts  {email, email_verified, groups, name}          an account, signed in as <email>
//   POST /test/rotate                                                   new signing key; the old one is gone
//   POST /test/forge-jwks                                               /jwks serves other keys under the same kids
//   POST /test/clock     {offset_seconds}                               the provider's clock runs that far off
//                                                                       (its tokens' iat and exp with it)
// Clients and accounts live in the process's memory and survive a rotation.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import http from 'node:http';

import Provider from 'oidc-provider';

const port = Number(process.argv[2] || process.env.PORT || 0);
const host = '127.0.0.1';
const accounts = new Map();
const clients = new Map();
let forgeJwks = false;
// the whole process's clock: oidc-provider reads the time through Date.now (its epochTime helper)
let clockOffset = 0;
const realNow = Date.now;
Date.now = () => realNow() + clockOffset * 1000;

function newKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), use: 'sig', alg: 'RS256' };
}

function publicOf(jwk) {
  const { d, p, q, dp, dq, qi, ...rest } = jwk;
  return rest;
}

function makeProvider(issuer, key) {
  const provider = new Provider(issuer, {
    jwks: { keys: [key] },
    // the ID token carries the scopes' claims (email, email_verified, groups), as most providers' do
    conformIdTokenClaims: false,
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name'],
      groups: ['groups'],
    },
    scopes: ['openid', 'email', 'profile', 'groups'],
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true } },
    cookies: { keys: ['tms-test-oidc-cookie-key'] },
    async findAccount(ctx, id) {
      const account = accounts.get(id);
      if (!account) return undefined;
      return {
        accountId: id,
        async claims() {
          return { sub: id, ...account };
        },
      };
    },
  });
  provider.on('server_error', (ctx, err) => console.error('server_error', err));
  return provider;
}

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
}

function answer(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const server = http.createServer();
server.listen(port, host, () => {
  const issuer = `http://${host}:${server.address().port}`;
  let key = newKey();
  let provider = makeProvider(issuer, key);
  let callback = provider.callback();

  server.on('request', async (req, res) => {
    try {
      if (req.method === 'POST' && req.url === '/test/clients') {
        const body = await readJson(req);
        const client = {
          client_id: body.client_id,
          client_secret: body.client_secret,
          redirect_uris: body.redirect_uris,
          grant_types: ['authorization_code'],
          response_types: ['code'],
          token_endpoint_auth_method: body.token_endpoint_auth_method || 'client_secret_basic',
        };
        clients.set(client.client_id, client);
        await provider.Client.adapter.upsert(client.client_id, client);
        return answer(res, 201, { client_id: body.client_id });
      }
      if (req.method === 'POST' && req.url === '/test/accounts') {
        const body = await readJson(req);
        accounts.set(body.email, {
          email: body.email,
          email_verified: body.email_verified !== false,
          groups: body.groups || [],
          name: body.name || body.email.split('@')[0],
        });
        return answer(res, 201, { sub: body.email });
      }
      if (req.method === 'POST' && req.url === '/test/rotate') {
        key = newKey();
        provider = makeProvider(issuer, key);
        callback = provider.callback();
        for (const client of clients.values()) await provider.Client.adapter.upsert(client.client_id, client);
        return answer(res, 200, { kid: key.kid });
      }
      if (req.method === 'POST' && req.url === '/test/forge-jwks') {
        forgeJwks = true;
        return answer(res, 200, {});
      }
      if (req.method === 'POST' && req.url === '/test/clock') {
        clockOffset = Number((await readJson(req)).offset_seconds) || 0;
        return answer(res, 200, { offset_seconds: clockOffset });
      }
      if (forgeJwks && req.method === 'GET' && req.url.startsWith('/jwks')) {
        // the same kid, another key: a token signed by the real key must not verify against it
        return answer(res, 200, { keys: [publicOf({ ...newKey(), kid: key.kid })] });
      }
      return callback(req, res);
    } catch (err) {
      console.error(err);
      return answer(res, 500, { error: String(err) });
    }
  });
  console.log(`ready ${issuer}`);
});
