// The buyer's page: the sales with their countdowns and live stock, Buy, and the
// buyer's orders moving from queued to created, with Pay and Cancel.
import {
  api, clock, Session, decodeClaims, money, duration, when, idempotencyKey,
  el, setText, statusLabel, poller,
} from './common.js';

const session = new Session('seckill.buyer.token');
const sales = new Map(); // activity id -> {data, node, result, pending, busy}
const orders = new Map(); // order id -> {data, node, message, busy}
let ordersLoaded = false;
let fastOrdersUntil = 0;

const $ = (id) => document.getElementById(id);

// ---- signing in ----

function showSignedIn() {
  const claims = session.claims();
  const signedIn = Boolean(session.token && claims);
  $('signin').hidden = signedIn;
  $('who').hidden = !signedIn;
  $('orders-section').hidden = !signedIn;
  if (signedIn) {
    setText($('who-name'), claims.role === 'admin'
      ? `Signed in as admin ${claims.sub}`
      : `Signed in as buyer ${claims.sub}`);
  }
  renderAllSales();
}

function signOut(reason) {
  session.set('');
  orders.clear();
  $('orders').replaceChildren();
  ordersLoaded = false;
  $('token').value = '';
  showFieldError(reason || '');
  showSignedIn();
  if (reason) $('token').focus();
}

function showFieldError(text) {
  setText($('token-error'), text);
  $('token').setAttribute('aria-invalid', text ? 'true' : 'false');
}

// tokenProblem says what is wrong with a token before the server is asked.
function tokenProblem(token) {
  const claims = decodeClaims(token);
  if (!token) return 'Paste a token first.';
  if (!claims) return 'This is not a token: a token is three parts separated by dots.';
  if (claims.exp && claims.exp * 1000 < clock.now()) {
    return 'This token has expired. Get a new one with go run ./cmd/api token -user 42.';
  }
  return '';
}

async function signIn(token) {
  const problem = tokenProblem(token);
  if (problem) {
    signOut(problem);
    return;
  }
  session.set(token);
  showFieldError('');
  const res = await loadOrders();
  if (res && res.status === 401) return; // loadOrders signed out with the reason
  showSignedIn();
}

$('signin-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  signIn($('token').value.trim());
});

$('sign-out').addEventListener('click', () => {
  signOut('');
  $('token').focus();
});

// ---- sales ----

// unitsHeld counts the buyer's units in a sale that count towards the limit.
function unitsHeld(activityId) {
  let n = 0;
  for (const { data } of orders.values()) {
    if (data.activity_id === activityId && ['queued', 'created', 'paid'].includes(data.status)) {
      n += data.quantity;
    }
  }
  return n;
}

// effectiveStatus is the sale's status from the server, moved on by the clock
// between two refreshes (a sale starts or ends at its time).
function effectiveStatus(a) {
  const now = clock.now();
  let s = a.status;
  if (s === 'upcoming' && now >= Date.parse(a.starts_at)) s = a.stock_available > 0 ? 'active' : 'sold_out';
  if ((s === 'active' || s === 'sold_out') && now >= Date.parse(a.ends_at)) s = 'ended';
  return s;
}

// saleState is what the buyer can do now: the sentence to show and whether Buy works.
function saleState(a) {
  const status = effectiveStatus(a);
  const signedIn = Boolean(session.token);
  const held = unitsHeld(a.id);
  const limitReached = signedIn && ordersLoaded && held >= a.per_user_limit;
  let sentence = '';
  if (status === 'upcoming') sentence = `Not started yet: the sale opens on ${when(a.starts_at, true)}.`;
  else if (status === 'ended') sentence = 'This sale has ended.';
  else if (status === 'sold_out') sentence = 'Sold out: every unit has been taken.';
  else if (!signedIn) sentence = 'Sign in above to buy.';
  else if (limitReached) {
    sentence = `Limit reached: you have ${held} of the ${a.per_user_limit} allowed per buyer.`;
  }
  return {
    status,
    held,
    sentence,
    canBuy: sentence === '',
    key: [status, signedIn, limitReached].join('|'),
  };
}

function newSaleCard(a) {
  const node = $('sale-template').content.firstElementChild.cloneNode(true);
  node.dataset.activityId = a.id;
  const qty = el(node, '.qty');
  qty.id = `qty-${a.id}`;
  el(node, '.qty-label').htmlFor = qty.id;
  const limit = el(node, '.limit-text');
  limit.id = `limit-${a.id}`;
  qty.setAttribute('aria-describedby', limit.id);
  el(node, '.sale-name').id = `sale-${a.id}-name`;
  el(node, '.buy-button').setAttribute('aria-describedby', `sale-${a.id}-name`);
  const entry = { data: a, node, result: null, pending: null, busy: false };
  el(node, '.buy').addEventListener('submit', (ev) => {
    ev.preventDefault();
    buy(entry);
  });
  return entry;
}

function renderSaleCard(entry) {
  const a = entry.data;
  const node = entry.node;
  const state = saleState(a);
  const now = clock.now();
  node.dataset.status = state.status;
  setText(el(node, '.sale-name'), a.name);
  const badge = el(node, '.sale-status');
  setText(badge, statusLabel(state.status));
  badge.className = `badge sale-status status-${state.status}`;
  setText(el(node, '.product'), a.product_name);
  setText(el(node, '.price'), `${money(a.price_cents)} each`);

  let clockText = '';
  if (state.status === 'upcoming') clockText = `Starts in ${duration(Date.parse(a.starts_at) - now)}`;
  else if (state.status === 'ended') clockText = `Ended on ${when(a.ends_at)}`;
  else clockText = `Ends in ${duration(Date.parse(a.ends_at) - now)}`;
  setText(el(node, '.clock'), clockText);

  const available = Math.max(0, a.stock_available);
  setText(el(node, '.stock-text'), `${available.toLocaleString('en-US')} of ${a.stock_total.toLocaleString('en-US')} left`);
  const share = a.stock_total > 0 ? Math.min(1, available / a.stock_total) : 0;
  el(node, '.bar-fill').style.width = `${(share * 100).toFixed(1)}%`;

  const qty = el(node, '.qty');
  const room = Math.max(1, a.per_user_limit - state.held);
  if (qty.max !== String(room)) qty.max = String(room);
  let limitText = `Up to ${a.per_user_limit} per buyer.`;
  if (session.token && ordersLoaded && state.held > 0) limitText += ` You have ${state.held}.`;
  setText(el(node, '.limit-text'), limitText);

  el(node, '.buy').hidden = state.status === 'ended';
  const button = el(node, '.buy-button');
  button.disabled = entry.busy || !state.canBuy;
  qty.disabled = !state.canBuy;
  setText(button, entry.busy ? 'Buying…' : 'Buy');

  if (entry.result && entry.result.key !== state.key) entry.result = null;
  const message = el(node, '.message');
  const text = entry.result ? entry.result.text : state.sentence;
  setText(message, text);
  message.className = `message ${entry.result ? entry.result.kind : 'state'}`;
}

function renderAllSales() {
  for (const entry of sales.values()) renderSaleCard(entry);
}

// saleOrder puts the sales on now first (ending soonest first), then the upcoming ones
// (starting soonest first, each with its countdown), then the ended ones (the latest
// first).
function saleOrder(list) {
  const rank = (a) => ({ upcoming: 1, ended: 2 })[effectiveStatus(a)] || 0;
  const when = (a) => [Date.parse(a.ends_at), Date.parse(a.starts_at), -Date.parse(a.ends_at)][rank(a)];
  return [...list].sort((x, y) => rank(x) - rank(y) || when(x) - when(y) || x.id - y.id);
}

function showSales(list) {
  list = saleOrder(list);
  const seen = new Set();
  const parent = $('sales');
  list.forEach((a, i) => {
    seen.add(a.id);
    let entry = sales.get(a.id);
    if (!entry) {
      entry = newSaleCard(a);
      sales.set(a.id, entry);
    }
    entry.data = a;
    renderSaleCard(entry);
    // Move a card only when it is out of place, so focus inside it stays put.
    if (parent.children[i] !== entry.node) parent.insertBefore(entry.node, parent.children[i] || null);
  });
  for (const [id, entry] of sales) {
    if (!seen.has(id)) {
      entry.node.remove();
      sales.delete(id);
    }
  }
  setText($('sales-note'), list.length === 0 ? 'There are no sales yet. Check back soon.' : '');
  renderAllOrders(); // order titles name their sale
}

const salesPoll = poller(async () => {
  const res = await api('GET', '/api/v1/activities');
  if (res.ok) {
    showSales(res.data.activities || []);
    return 2000;
  }
  if (res.status === 429) {
    setText($('sales-note'), `Too many requests: the sales refresh again in ${res.retryAfter || 1} seconds.`);
    return (res.retryAfter || 1) * 1000;
  }
  setText($('sales-note'), `Could not load the sales: ${res.error.message} Trying again…`);
  return 5000;
});

// buyError is the sentence for a refused purchase.
function buyError(res, a) {
  const msg = res.error.message || '';
  switch (res.error.code) {
    case 'sold_out': {
      const m = /only (\d+) left/i.exec(msg);
      return m
        ? `Not enough left: only ${m[1]} remain. Choose a smaller quantity.`
        : 'Sold out: every unit has been taken.';
    }
    case 'limit_exceeded':
      return `Limit reached: each buyer may hold at most ${a.per_user_limit} of this sale, counting queued, created and paid orders.`;
    case 'sale_not_started':
      return `Not started yet: the sale opens on ${when(a.starts_at, true)}.`;
    case 'sale_ended':
      return 'This sale has ended.';
    case 'busy':
      return 'Busy: your previous purchase in this sale is still being processed. Try again in a moment.';
    case 'rate_limited':
      return `Too many requests: wait ${res.retryAfter || 1} seconds, then try again.`;
    case 'unavailable':
      return 'The shop cannot take orders right now; nothing was taken from stock. Try again shortly.';
    case 'not_found':
      return 'This sale no longer exists.';
    case 'network':
      return 'Could not reach the server. Press Buy again to retry: you will not get a second order.';
    default:
      return msg;
  }
}

async function buy(entry) {
  if (entry.busy) return;
  const a = entry.data;
  const qtyInput = el(entry.node, '.qty');
  const quantity = Number(qtyInput.value);
  const state = saleState(a);
  if (!Number.isInteger(quantity) || quantity < 1) {
    entry.result = { kind: 'error', text: 'Enter a whole number of at least 1 as the quantity.', key: state.key };
    renderSaleCard(entry);
    qtyInput.focus();
    return;
  }
  // One key per purchase: a retry after a lost answer sends the same key and body,
  // so the server answers with the first order instead of making a second one.
  if (!entry.pending || entry.pending.quantity !== quantity) {
    entry.pending = { quantity, key: idempotencyKey() };
  }
  entry.busy = true;
  entry.result = null;
  renderSaleCard(entry);
  const res = await api('POST', `/api/v1/activities/${a.id}/orders`, {
    token: session.token,
    body: { quantity },
    headers: { 'Idempotency-Key': entry.pending.key },
  });
  entry.busy = false;
  if (res.status !== 0) entry.pending = null;
  if (res.ok) {
    const o = res.data;
    upsertOrder(o);
    entry.result = {
      kind: 'ok',
      text: `Order placed: ${o.quantity} × ${a.product_name}, ${statusLabel(o.status).toLowerCase()}. Follow it under Your orders.`,
    };
    fastOrdersUntil = Date.now() + 15000;
    ordersPoll.kick();
    salesPoll.kick();
  } else {
    if (res.status === 401) {
      signOut('Your sign-in has expired or was not accepted. Sign in again.');
      return;
    }
    entry.result = { kind: 'error', text: buyError(res, a) };
    if (['sold_out', 'sale_ended', 'sale_not_started', 'limit_exceeded'].includes(res.error.code)) {
      salesPoll.kick();
      ordersPoll.kick();
    }
  }
  entry.result.key = saleState(a).key;
  renderSaleCard(entry);
}

// ---- orders ----

function newOrderCard(o) {
  const node = $('order-template').content.firstElementChild.cloneNode(true);
  node.dataset.orderId = o.id;
  const title = el(node, '.order-title');
  title.id = `order-${o.id}-title`;
  title.tabIndex = -1;
  el(node, '.pay').setAttribute('aria-describedby', title.id);
  el(node, '.cancel').setAttribute('aria-describedby', title.id);
  const entry = { data: o, node, message: '', busy: false };
  el(node, '.pay').addEventListener('click', () => act(entry, 'pay'));
  el(node, '.cancel').addEventListener('click', () => act(entry, 'cancel'));
  return entry;
}

function upsertOrder(o) {
  let entry = orders.get(o.id);
  if (!entry) {
    entry = newOrderCard(o);
    orders.set(o.id, entry);
  }
  entry.data = o;
  renderAllOrders();
  renderAllSales();
}

function orderText(o, expired) {
  switch (o.status) {
    case 'queued':
      return 'Queued: your units are reserved while the order is being created.';
    case 'created':
      return expired
        ? 'The pay window has passed: the order will be cancelled and its units returned.'
        : 'Created: awaiting payment.';
    case 'paid':
      return `Paid on ${when(o.paid_at)}. Thank you!`;
    case 'cancelled':
      return 'Cancelled: the units went back to stock.';
    case 'failed':
      return `Failed: ${o.failure_reason || 'the order could not be stored'}. The units went back to stock; nothing is owed.`;
    default:
      return statusLabel(o.status);
  }
}

function renderOrderCard(entry) {
  const o = entry.data;
  const node = entry.node;
  const sale = sales.get(o.activity_id);
  const now = clock.now();
  const expires = Date.parse(o.expires_at);
  const expired = o.status === 'created' && now >= expires;
  node.dataset.status = o.status;
  const what = sale ? sale.data.product_name : 'item';
  setText(el(node, '.order-title'), `${sale ? sale.data.name : `Sale ${o.activity_id}`}: ${o.quantity} × ${what}`);
  const badge = el(node, '.order-badge');
  setText(badge, statusLabel(o.status));
  badge.className = `badge order-badge status-${o.status}`;
  setText(el(node, '.order-status'), orderText(o, expired));
  const payClock = el(node, '.pay-clock');
  payClock.hidden = !(o.status === 'created' && !expired);
  setText(payClock, payClock.hidden ? '' : `Pay within ${duration(expires - now)}, by ${when(o.expires_at)}.`);
  setText(el(node, '.amount'), `Total ${money(o.amount_cents)}`);
  setText(el(node, '.order-id'), `Order ${o.id}, placed on ${when(o.created_at)}`);
  const actions = el(node, '.actions');
  actions.hidden = o.status !== 'created';
  const pay = el(node, '.pay');
  setText(pay, entry.busy === 'pay' ? 'Paying…' : `Pay ${money(o.amount_cents)}`);
  pay.disabled = Boolean(entry.busy) || expired;
  const cancel = el(node, '.cancel');
  setText(cancel, entry.busy === 'cancel' ? 'Cancelling…' : 'Cancel order');
  cancel.disabled = Boolean(entry.busy);
  setText(el(node, '.message'), entry.message);
}

function renderAllOrders() {
  const list = [...orders.values()].sort((x, y) => Date.parse(y.data.created_at) - Date.parse(x.data.created_at));
  const parent = $('orders');
  list.forEach((entry, i) => {
    renderOrderCard(entry);
    if (parent.children[i] !== entry.node) parent.insertBefore(entry.node, parent.children[i] || null);
  });
  if (ordersLoaded) setText($('orders-note'), list.length === 0 ? 'You have no orders yet.' : '');
}

function actionError(res, verb) {
  switch (res.error.code) {
    case 'order_expired':
      return 'The pay window has passed: the order is cancelled and its units went back to stock.';
    case 'order_not_payable':
      return verb === 'pay'
        ? 'This order cannot be paid: it is no longer awaiting payment.'
        : 'This order cannot be cancelled: it is no longer awaiting payment.';
    case 'not_found':
      return 'No such order.';
    case 'rate_limited':
      return `Too many requests: wait ${res.retryAfter || 1} seconds, then try again.`;
    case 'unavailable':
      return 'The shop is unavailable right now; the order is unchanged. Try again shortly.';
    default:
      return res.error.message;
  }
}

async function act(entry, verb) {
  if (entry.busy) return;
  entry.busy = verb;
  entry.message = '';
  renderOrderCard(entry);
  const res = await api('POST', `/api/v1/orders/${encodeURIComponent(entry.data.id)}/${verb}`, { token: session.token });
  entry.busy = false;
  if (res.ok) {
    entry.data = res.data;
  } else if (res.status === 401) {
    signOut('Your sign-in has expired or was not accepted. Sign in again.');
    return;
  } else {
    entry.message = actionError(res, verb);
  }
  renderOrderCard(entry);
  renderAllSales();
  // The buttons are gone once the order is paid or cancelled: keep the keyboard's place.
  if (entry.data.status !== 'created') el(entry.node, '.order-title').focus();
  ordersPoll.kick();
  salesPoll.kick();
}

async function loadOrders() {
  if (!session.token) return null;
  const res = await api('GET', '/api/v1/orders', { token: session.token });
  if (res.ok) {
    const list = res.data.orders || [];
    for (const o of list) {
      let entry = orders.get(o.id);
      if (!entry) {
        entry = newOrderCard(o);
        orders.set(o.id, entry);
      }
      if (!entry.busy) entry.data = o;
    }
    ordersLoaded = true;
    renderAllOrders();
    renderAllSales();
  } else if (res.status === 401) {
    signOut('The server did not accept this token: it is malformed, expired, or signed with another secret.');
  } else if (res.status !== 429) {
    setText($('orders-note'), `Could not load your orders: ${res.error.message} Trying again…`);
  }
  return res;
}

const ordersPoll = poller(async () => {
  const res = await loadOrders();
  if (!res) return 3000;
  if (res.status === 429) return (res.retryAfter || 1) * 1000;
  const statuses = [...orders.values()].map((e) => e.data.status);
  if (statuses.includes('queued') || Date.now() < fastOrdersUntil) return 700;
  return statuses.includes('created') ? 2000 : 4000;
});

// The countdowns tick every second between refreshes.
setInterval(() => {
  renderAllSales();
  for (const entry of orders.values()) renderOrderCard(entry);
}, 1000);

// ---- start ----

if (session.token) {
  const problem = tokenProblem(session.token);
  if (problem) signOut(problem);
}
showSignedIn();
salesPoll.kick();
ordersPoll.kick();
