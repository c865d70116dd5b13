// A sale's orders on the admin's page, the back office: on demand, pages of the
// sale's orders in id order (GET /api/v1/orders?activity_id=, one status or all),
// each with who paid it, and a paid order's refund (POST /api/v1/orders/{id}/refund),
// its units back on sale or kept off it.
import { api, money, when, el, setText, statusLabel } from './common.js';

// pageSize is how many orders one "Show orders" or "More orders" reads.
const pageSize = 50;

// wireOrders connects a sale card's orders section; refused(res) handles the answers
// that end the session.
export function wireOrders(entry, token, refused) {
  const node = entry.node;
  const id = entry.data.id;
  entry.orders = { rows: new Map(), next: null, loaded: false, busy: false };
  el(node, '.orders-status').id = `sale-${id}-orders-status`;
  el(node, '.orders-status-label').htmlFor = `sale-${id}-orders-status`;
  el(node, '.orders-title').id = `sale-${id}-orders`;
  el(node, '.orders-admin .table-scroll').setAttribute('aria-labelledby', `sale-${id}-orders sale-${id}-name`);
  el(node, '.orders-filter').addEventListener('submit', (ev) => {
    ev.preventDefault();
    loadOrders(entry, token(), refused, true);
  });
  el(node, '.orders-more').addEventListener('click', () => loadOrders(entry, token(), refused, false));
}

// loadOrders reads the first page of the sale's orders (fresh) or the page after the
// last one shown.
async function loadOrders(entry, token, refused, fresh) {
  const o = entry.orders;
  if (o.busy) return;
  o.busy = true;
  const node = entry.node;
  const status = el(node, '.orders-status').value;
  let path = `/api/v1/orders?activity_id=${entry.data.id}&limit=${pageSize}`;
  if (status) path += `&status=${encodeURIComponent(status)}`;
  if (!fresh && o.next) path += `&after=${encodeURIComponent(o.next)}`;
  setText(el(node, '.orders-note'), 'Loading the orders…');
  const res = await api('GET', path, { token });
  o.busy = false;
  if (!res.ok) {
    if (refused(res)) return;
    setText(el(node, '.orders-note'), `Could not load the orders: ${res.error.message}`);
    return;
  }
  if (fresh) {
    o.rows.clear();
    el(node, '.orders-table tbody').replaceChildren();
  }
  o.loaded = true;
  if (res.data.next) o.next = res.data.next;
  for (const order of res.data.orders) showOrder(entry, order, token, refused);
  const n = o.rows.size;
  let note = n === 0 ? 'No order yet.' : `${n} ${n === 1 ? 'order' : 'orders'} shown, oldest first.`;
  if (res.data.orders.length === pageSize) note += ' More may follow.';
  note += ' The newest orders show about ten seconds after they were bought.';
  setText(el(node, '.orders-note'), note);
  el(node, '.orders-table').hidden = n === 0;
  el(node, '.orders-more').hidden = n === 0;
}

// paidByText says who confirmed a payment.
const paidByText = { service: 'the shop', admin: 'an admin', buyer: 'the buyer' };

// showOrder adds or updates an order's row.
function showOrder(entry, order, token, refused) {
  const o = entry.orders;
  let row = o.rows.get(order.id);
  if (!row) {
    row = document.createElement('tr');
    row.dataset.orderId = order.id;
    for (let c = 0; c < 6; c++) row.appendChild(document.createElement('td'));
    row.cells[3].append(document.createElement('span'));
    o.rows.set(order.id, row);
    el(entry.node, '.orders-table tbody').append(row);
  }
  row.dataset.status = order.status;
  setText(row.cells[0], order.id);
  setText(row.cells[1], order.buyer); // the subject: user_id is there for a decimal one only
  setText(row.cells[2], `${order.quantity} for ${money(order.amount_cents)}`);
  const badge = row.cells[3].firstChild;
  setText(badge, statusLabel(order.status));
  badge.className = `badge status-${order.status}`;
  let detail = '';
  if (order.paid_at) detail = `Paid ${when(order.paid_at)}${order.paid_by ? ` by ${paidByText[order.paid_by] || order.paid_by}` : ''}.`;
  if (order.status === 'refunded') {
    detail += ` Refunded ${when(order.refunded_at)}: ${order.restock ? 'its units went back on sale' : 'its units are kept off sale'}.`;
  }
  if (order.status === 'failed') detail = order.failure_reason || '';
  setText(row.cells[4], detail.trim() || '—');
  row.cells[5].replaceChildren();
  if (order.status === 'paid') row.cells[5].append(refundControls(entry, order, row, token, refused));
}

// refundControls are a paid order's refund: whether its units go back on sale, and
// the button.
function refundControls(entry, order, row, token, refused) {
  const box = document.createElement('div');
  box.className = 'refund';
  const label = document.createElement('label');
  label.className = 'check';
  const restock = document.createElement('input');
  restock.type = 'checkbox';
  restock.className = 'refund-restock';
  restock.checked = true;
  label.append(restock, ' Back on sale');
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'secondary refund-button';
  setText(button, 'Refund');
  button.setAttribute('aria-label', `Refund order ${order.id}`);
  const message = document.createElement('p');
  message.className = 'field-error';
  message.setAttribute('role', 'alert');
  button.addEventListener('click', async () => {
    button.disabled = true;
    setText(message, '');
    const res = await api('POST', `/api/v1/orders/${encodeURIComponent(order.id)}/refund`,
      { token, body: { restock: restock.checked } });
    button.disabled = false;
    if (res.ok) {
      showOrder(entry, res.data, token, refused);
      return;
    }
    if (refused(res)) return;
    setText(message, `Not refunded: ${res.error.message}`);
  });
  box.append(label, button, message);
  return box;
}
