// A sale's funnel on the admin's page (GET /api/v1/admin/activities/{id}/funnel): on
// demand, bars from the line to the payments, the refusals by why, the orders and
// units, the sell-out and payment times, and the admitted buyers' waits; read again
// every 5 s while shown and the sale is live (an archived sale's funnel no longer
// changes), and downloaded as CSV for a spreadsheet.
import { api, duration, el, setText, when } from './common.js';

const every = 5000; // ms between two reads of a live sale's funnel

const n = (v) => Number(v).toLocaleString('en-US');
const secs = (s) => (s < 10 ? `${s.toFixed(s < 1 ? 3 : 1)} s` : duration(s * 1000));

// codes words the refusals' error codes; another code is shown as it is.
const codes = {
  sold_out: 'sold out', limit_exceeded: 'over the limit', not_admitted: 'not admitted (no valid pass)',
  rate_limited: 'rate limited', busy: 'busy (same buyer at once)', sale_not_started: 'before the start',
  sale_ended: 'after the end', invalid_request: 'invalid request', idempotency_key_reused: 'key reused',
};

// wireFunnel connects a sale card's funnel section; refused(res) handles the answers
// that end the session.
export function wireFunnel(entry, token, refused) {
  const node = entry.node;
  const id = entry.data.id;
  el(node, '.funnel-title').id = `sale-${id}-funnel`;
  entry.funnel = { shown: false, timer: 0 };
  el(node, '.funnel-show').addEventListener('click', () => {
    const f = entry.funnel;
    f.shown = !f.shown;
    el(node, '.funnel-show').textContent = f.shown ? 'Hide the funnel' : 'Show the funnel';
    el(node, '.funnel-body').hidden = !f.shown;
    el(node, '.funnel-csv').hidden = !f.shown;
    clearTimeout(f.timer);
    if (f.shown) readFunnel(entry, token, refused);
    else setText(el(node, '.funnel-note'), '');
  });
  el(node, '.funnel-csv').addEventListener('click', () => downloadCSV(entry, token(), refused));
}

// readFunnel reads the funnel, draws it, and reads it again in a while if the sale is
// live and the funnel still shown.
async function readFunnel(entry, token, refused) {
  const f = entry.funnel;
  const res = await api('GET', `/api/v1/admin/activities/${entry.data.id}/funnel`, { token: token() });
  if (!f.shown) return;
  if (!res.ok) {
    if (refused(res)) return;
    setText(el(entry.node, '.funnel-note'), `Could not read the funnel: ${res.error.message}`);
  } else {
    drawFunnel(entry, res.data);
  }
  if (!entry.data.archived_at) f.timer = setTimeout(() => readFunnel(entry, token, refused), every);
}

// drawFunnel draws the figures on the card.
export function drawFunnel(entry, d) {
  const node = entry.node;
  const line = d.line;
  const refusedTotal = Object.values(d.purchases.refused).reduce((a, b) => a + b, 0);
  const steps = [];
  if (line) {
    steps.push(['Joined the line', line.joined], ['Admitted', line.admitted]);
  }
  steps.push(['Purchases answered', d.purchases.accepted + refusedTotal], ['Purchases taken', d.purchases.accepted],
    ['Orders created', d.orders.created], ['Orders paid', d.orders.paid]);
  bars(el(node, '.funnel-chart'), steps);

  const figures = [
    ['Refused', n(refusedTotal)],
    ...Object.entries(d.purchases.refused).sort((a, b) => b[1] - a[1]).map(([code, v]) => [`Refused: ${codes[code] || code}`, n(v)]),
    ['Cancelled', n(d.orders.cancelled)], ['Of which expired', n(d.orders.expired)], ['Failed', n(d.orders.failed)],
    ['Refunded', n(d.orders.refunded)], ['Offered to the waitlist', n(d.orders.offered)],
    ['Units sold', n(d.units.sold)], ['Units returned', n(d.units.returned)], ['Units to the waitlist', n(d.units.to_waitlist)],
    ['First purchase', d.first_purchase_at ? when(d.first_purchase_at, true) : 'none yet'],
    ['Sold out', d.sold_out_at ? `${when(d.sold_out_at, true)}, ${secs(d.sell_out_seconds)} after the start` : 'not sold out'],
    ['Time to pay (median, p90)', d.pay_seconds ? `${secs(d.pay_seconds.p50)}, ${secs(d.pay_seconds.p90)}` : 'no payment yet'],
  ];
  if (line) {
    figures.splice(0, 0, ['Joined before the start', n(line.joined_before_start)], ['Passes expired unused', n(line.passes_expired)],
      ['Wait in line (median, p90, p99, longest)', line.wait_seconds
        ? [line.wait_seconds.p50, line.wait_seconds.p90, line.wait_seconds.p99, line.wait_seconds.max].map(secs).join(', ')
        : 'nobody admitted yet']);
  }
  el(node, '.funnel-figures').replaceChildren(...figures.map(([label, value]) => {
    const div = document.createElement('div');
    const dt = document.createElement('dt');
    const dd = document.createElement('dd');
    dt.textContent = label;
    dd.textContent = value;
    div.append(dt, dd);
    return div;
  }));

  el(node, '.funnel-waits-figure').hidden = !line;
  if (line) {
    bars(el(node, '.funnel-waits'), line.wait_distribution.map((r) => [
      r.to_seconds === null ? `${secs(r.from_seconds)} or more` : `${secs(r.from_seconds)} to ${secs(r.to_seconds)}`, r.buyers]));
  }
  const archived = entry.data.archived_at ? ' The sale is archived: MySQL keeps these figures.' : ' Read again every 5 s.';
  setText(el(node, '.funnel-note'), `As of ${when(d.as_of, true)}.${archived}`);
  node.dataset.funnel = JSON.stringify({ accepted: d.purchases.accepted, refused: refusedTotal, paid: d.orders.paid });
}

// bars draws labelled horizontal bars in list, each against the largest value.
function bars(list, rows) {
  const top = Math.max(1, ...rows.map((r) => r[1]));
  list.replaceChildren(...rows.map(([label, value]) => {
    const li = document.createElement('li');
    const name = document.createElement('span');
    name.className = 'bar-label';
    name.textContent = label;
    const bar = document.createElement('span');
    bar.className = 'bar';
    bar.style.width = `${(100 * value) / top}%`;
    const v = document.createElement('span');
    v.className = 'bar-value';
    v.textContent = n(value);
    li.append(name, bar, v);
    li.dataset.value = String(value);
    return li;
  }));
}

// downloadCSV fetches the funnel's CSV with the admin's token and hands it to the
// browser as a file.
async function downloadCSV(entry, token, refused) {
  const path = `/api/v1/admin/activities/${entry.data.id}/funnel?format=csv`;
  let res;
  try {
    res = await fetch(path, { headers: { Authorization: `Bearer ${token}` }, cache: 'no-store' });
  } catch {
    setText(el(entry.node, '.funnel-note'), 'Could not reach the server for the CSV.');
    return;
  }
  if (!res.ok) {
    const r = await api('GET', path, { token }); // the error body, as the page words it
    if (!refused(r)) setText(el(entry.node, '.funnel-note'), `Could not download the CSV: ${r.error.message}`);
    return;
  }
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = `funnel-${entry.data.id}.csv`;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
