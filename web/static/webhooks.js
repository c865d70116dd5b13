// The admin page's webhooks: each endpoint the shop subscribed, and its newest
// deliveries (status, attempts, last answer, next try), read every 5 s.
import { api, when, setText, poller } from './common.js';

// Each endpoint shows this many of its newest deliveries.
const shownDeliveries = 10;

const $ = (id) => document.getElementById(id);

function cell(row, text) {
  const td = document.createElement('td');
  td.textContent = text;
  row.append(td);
  return td;
}

// deliveryRow is one delivery as the admin reads it.
function deliveryRow(d) {
  const row = document.createElement('tr');
  row.dataset.status = d.status;
  cell(row, d.type);
  const badge = document.createElement('span');
  badge.className = `badge delivery-${d.status}`;
  badge.textContent = { pending: 'Pending', delivered: 'Delivered', failed: 'Given up' }[d.status] || d.status;
  cell(row, '').append(badge);
  cell(row, String(d.attempts));
  cell(row, d.last_status_code ? `HTTP ${d.last_status_code}` : (d.last_error || '—'));
  cell(row, d.status === 'pending' && d.next_attempt_at ? when(d.next_attempt_at, true)
    : (d.delivered_at ? `delivered ${when(d.delivered_at, true)}` : '—'));
  row.title = `${d.event_id}${d.last_error ? `: ${d.last_error}` : ''}`;
  return row;
}

// endpointNode is one endpoint with its deliveries.
function endpointNode(w, deliveries, error) {
  const li = document.createElement('li');
  li.className = 'card webhook';
  li.dataset.id = w.id;
  li.dataset.disabled = w.disabled_at ? 'true' : 'false';
  const head = document.createElement('p');
  const url = document.createElement('code');
  url.textContent = w.url;
  head.append(url, ` — ${w.disabled_at ? `disabled ${when(w.disabled_at)} (${w.disabled_reason})` : 'active'}`);
  const events = document.createElement('p');
  events.className = 'note';
  events.textContent = `Events: ${(w.events || []).join(', ')}. Subscribed ${when(w.created_at)}.`;
  li.append(head, events);
  if (error) {
    const p = document.createElement('p');
    p.className = 'note';
    p.textContent = `Could not load its deliveries: ${error}`;
    li.append(p);
    return li;
  }
  const count = (s) => deliveries.filter((d) => d.status === s).length;
  const summary = document.createElement('p');
  summary.className = 'deliveries-note';
  summary.textContent = deliveries.length === 0 ? 'No delivery yet.'
    : `Newest ${deliveries.length} deliveries: ${count('delivered')} delivered, ${count('pending')} pending, ${count('failed')} given up.`;
  li.append(summary);
  if (deliveries.length === 0) return li;
  const wrap = document.createElement('div');
  wrap.className = 'table-scroll';
  const table = document.createElement('table');
  table.className = 'deliveries';
  table.innerHTML = '<thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th>'
    + '<th scope="col">Last answer</th><th scope="col">Next try</th></tr></thead>';
  const body = document.createElement('tbody');
  deliveries.slice(0, shownDeliveries).forEach((d) => body.append(deliveryRow(d)));
  table.append(body);
  wrap.append(table);
  li.append(wrap);
  return li;
}

// webhooksPoller reads the endpoints and their deliveries for the signed-in admin.
// refused handles an answer that ends the session (it returns true then).
export function webhooksPoller(session, refused) {
  return poller(async () => {
    if (!session.token || $('console').hidden) return 5000;
    const res = await api('GET', '/api/v1/admin/webhooks', { token: session.token });
    if (!res.ok) {
      if (refused(res)) return 5000;
      setText($('webhooks-note'), `Could not load the webhooks: ${res.error.message} Trying again…`);
      return 5000;
    }
    const hooks = res.data.webhooks || [];
    const nodes = await Promise.all(hooks.map(async (w) => {
      const d = await api('GET', `/api/v1/admin/webhooks/${w.id}/deliveries`, { token: session.token });
      return endpointNode(w, d.ok ? d.data.deliveries || [] : [], d.ok ? '' : d.error.message);
    }));
    $('webhooks').replaceChildren(...nodes);
    setText($('webhooks-note'), hooks.length === 0
      ? 'No endpoint subscribed: POST /api/v1/admin/webhooks adds one.'
      : `${hooks.length} ${hooks.length === 1 ? 'endpoint' : 'endpoints'}, ${hooks.filter((w) => w.disabled_at).length} disabled.`);
    return 5000;
  });
}
