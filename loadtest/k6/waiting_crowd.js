// A waiting crowd in k6, through the project's nginx front: BUYERS virtual users join a
// sale's line before its start and wait as the buyer's page does (the line's public
// status every 1 to 1.5 s, no token; the ticket once, for the pass, when the status
// admits their place; then the purchase), while WATCHERS virtual users read the sale and
// its status as fast as the front answers (the many pages a drop's crowd keeps open).
//
//   k6 run -e BASE_URL=http://127.0.0.1:8080 loadtest/k6/waiting_crowd.js   (BASE_URL: the front)
//   K6_SCRIPT=waiting_crowd.js loadtest/run.sh k6   (starts the APIs, a worker and the front)
//
// Environment (k6 -e NAME=value):
//   BASE_URL            the front's base URL [http://127.0.0.1:8080]
//   SECKILL_JWT_SECRET  the APIs' secret [the dev secret of internal/config]
//   BUYERS              buyers waiting in the line [300]
//   RATE                the line's admit_per_second [50]
//   LEAD                seconds from the sale's creation to its start: the buyers join meanwhile [15]
//   WATCHERS            virtual users reading the sale and the status without pause [50]
//
// It reports, beside k6's own figures: front_misses, the share of the reads the front
// passed on to an API (its X-Cache-Status MISS, EXPIRED or BYPASS: about two a second
// whatever the crowd); admission_seen, from a ticket's admitted_at to the poll that
// showed it; purchase_after_admission, from admitted_at to the purchase's 202. The run
// fails (k6 exits 99) when a buyer does not buy, sees its admission more than 3 s late,
// or an answer is a 5xx or outside the contract. The machine's clock and the APIs' are
// taken to be one (the same machine).
import http from 'k6/http';
import { check, sleep } from 'k6';
import exec from 'k6/execution';
import { createSale, token } from './tokens.js';
import { Counter, Rate, Trend } from 'k6/metrics';

const BASE = (__ENV.BASE_URL || 'http://127.0.0.1:8080').replace(/\/$/, '');
const BUYERS = parseInt(__ENV.BUYERS || '300', 10);
const RATE = parseInt(__ENV.RATE || '50', 10);
const LEAD = parseInt(__ENV.LEAD || '15', 10);
const WATCHERS = parseInt(__ENV.WATCHERS || '50', 10);
// The watchers read until every buyer should have bought: the lead, the admissions at
// RATE, and some room.
const WATCH_SECONDS = LEAD + Math.ceil(BUYERS / RATE) + 10;

const frontMisses = new Rate('front_misses');
const unexpected = new Rate('unexpected_answers');
const serverErrors = new Counter('server_errors');
const bought = new Counter('buyers_bought');
const notBought = new Counter('buyers_not_bought');
const admissionSeen = new Trend('admission_seen', true);
const purchaseAfterAdmission = new Trend('purchase_after_admission', true);

export const options = {
  scenarios: {
    buyers: { executor: 'per-vu-iterations', vus: BUYERS, iterations: 1, maxDuration: `${WATCH_SECONDS + 30}s`, exec: 'waitAndBuy' },
    watchers: { executor: 'constant-vus', vus: WATCHERS, duration: `${WATCH_SECONDS}s`, exec: 'watch' },
  },
  thresholds: {
    unexpected_answers: ['rate==0'],
    server_errors: ['count==0'],
    buyers_not_bought: ['count==0'],
    admission_seen: ['max<3000'],
  },
  summaryTrendStats: ['avg', 'med', 'p(90)', 'p(99)', 'max'],
};

http.setResponseCallback(http.expectedStatuses(200, 201, 202));

export function setup() {
  const starts = Date.now() + LEAD * 1000;
  const sale = {
    name: 'k6 waiting crowd', product_name: 'k6 unit', price_cents: 100, stock: BUYERS, per_user_limit: 1,
    starts_at: new Date(starts).toISOString(), ends_at: new Date(starts + 3600 * 1000).toISOString(),
    waiting_room: true, admit_per_second: RATE, prequeue_seconds: 7200,
  };
  return { id: createSale(BASE, sale, http) };
}

// read GETs a public read through the front and counts whether the front passed it on.
function read(path, name) {
  const res = http.get(`${BASE}${path}`, { tags: { name: name } });
  const cache = res.headers['X-Cache-Status'] || '';
  frontMisses.add(cache === 'MISS' || cache === 'EXPIRED' || cache === 'BYPASS' || cache === '');
  unexpected.add(res.status !== 200);
  if (res.status >= 500) serverErrors.add(1);
  return res;
}

// watch reads the sale and its line's status in turns, without pause.
export function watch(data) {
  read(`/api/v1/activities/${data.id}/line/status`, 'status');
  read(`/api/v1/activities/${data.id}`, 'sale');
}

// waitAndBuy is one buyer: it joins, waits on the status as the buyer's page does,
// collects its pass once admitted and buys.
export function waitAndBuy(data) {
  const user = 20_000_000 + exec.vu.idInTest;
  const auth = { Authorization: `Bearer ${token(String(user), 'user')}`, 'Content-Type': 'application/json' };
  const joined = http.post(`${BASE}/api/v1/activities/${data.id}/line`, '{}', { headers: auth, tags: { name: 'join' } });
  if (!check(joined, { 'joined': (r) => r.status === 201 })) {
    unexpected.add(true);
    notBought.add(1);
    return;
  }
  const place = joined.json('place');
  const deadline = Date.now() + (WATCH_SECONDS + 20) * 1000;
  while (Date.now() < deadline) {
    const res = read(`/api/v1/activities/${data.id}/line/status`, 'status');
    if (res.status === 200 && res.json('admitted_through') >= place) {
      const seen = Date.now();
      const ticket = http.get(`${BASE}/api/v1/activities/${data.id}/line`, { headers: auth, tags: { name: 'ticket' } });
      if (!check(ticket, { 'admitted with a pass': (r) => r.status === 200 && r.json('status') === 'admitted' && r.json('pass') })) {
        break;
      }
      const admittedAt = Date.parse(ticket.json('admitted_at'));
      admissionSeen.add(seen - admittedAt);
      const buy = http.post(`${BASE}/api/v1/activities/${data.id}/orders`, '{"quantity":1}',
        { headers: { ...auth, 'X-Sale-Pass': ticket.json('pass') }, tags: { name: 'buy' } });
      if (check(buy, { 'bought': (r) => r.status === 202 })) {
        purchaseAfterAdmission.add(Date.now() - admittedAt);
        bought.add(1);
        return;
      }
      if (buy.status >= 500) serverErrors.add(1);
      break;
    }
    if (res.status === 200 && ['sold_out', 'ended'].includes(res.json('state'))) break;
    sleep(1 + Math.random() * 0.5);
  }
  notBought.add(1);
}
