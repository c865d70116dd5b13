// What the k6 scripts share: the tokens they sign, HS256 JWTs as the contract describes
// them, with SECKILL_JWT_SECRET (k6 -e), or the dev secret of internal/config.
import crypto from 'k6/crypto';
import encoding from 'k6/encoding';

// internal/config.DevJWTSecret: the public secret of dev mode.
const DEV_SECRET = 'seckill-dev-secret-do-not-use-in-production';
const SECRET = __ENV.SECKILL_JWT_SECRET || DEV_SECRET;

function b64url(s) {
  return encoding.b64encode(s, 'rawurl');
}

// token signs an HS256 JWT for an hour: sub = the subject, role.
export function token(subject, role) {
  const now = Math.floor(Date.now() / 1000);
  const head = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const body = b64url(JSON.stringify({ sub: subject, role: role, iat: now, exp: now + 3600 }));
  const sig = crypto.hmac('sha256', SECRET, `${head}.${body}`, 'base64rawurl');
  return `${head}.${body}.${sig}`;
}

// createSale creates a sale from its JSON object as the admin and returns its id.
export function createSale(base, sale, http) {
  const res = http.post(`${base}/api/v1/admin/activities`, JSON.stringify(sale),
    { headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token('1', 'admin')}` },
      tags: { name: 'create_sale' } });
  if (res.status !== 201) {
    throw new Error(`create sale: ${res.status} ${res.body}`);
  }
  return res.json('id');
}
