// The buyer's page: the sales with their countdowns and live stock, Buy, and the
// buyer's orders moving from queued to created, with Pay and Cancel. In a group-buy
// sale the buyer opens a group or joins one instead of buying, shares a link to it
// (/?group=<id>, which shows that group with a Join button), and follows it until it
// fills and the order becomes payable. A sale with a waiting room is bought from once
// its line lets the buyer in (line.js).
import {
  api, activities, clock, Session, decodeClaims, money, duration, when, idempotencyKey,
  el, setText, statusLabel, poller, groupWindowOver, onScreen, offScreen,
} from './common.js';
import { setupLines, renderLine, wireLine, admittedPass, trackCards, startLines, forgetLines } from './line.js';
import { wireEarly, renderEarly, earlyBuyable, earlySentence, codeHeaders, codeError } from './early.js';

const session = new Session('seckill.buyer.token');
// activity id -> {data, node, result, pending, busy, and for a group sale: groups (the
// open ones), groupsAt, onScreen, joining (a group id), joinPending, items}
const sales = new Map();
const orders = new Map(); // order id -> {data, node, message, busy, share}
// group id -> {data, at, busy, missing}: the groups the buyer holds a seat in while
// they are open, and the one a shared link points to.
const groups = new Map();
let ordersLoaded = false;
let fastOrdersUntil = 0;
// A group's state is read at most this often.
const groupsEvery = 2000;
// A sale card lists this many open groups, the fullest first.
const maxListedGroups = 8;
// invite is the group a shared link (/?group=<id>) points to.
const invite = { id: new URLSearchParams(location.search).get('group') || '', busy: false, pending: null, result: null };

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

// expiredSignIn is what the page says when the API refuses the buyer's token.
const expiredSignIn = 'Your sign-in has expired or was not accepted. Sign in again.';

function signOut(reason) {
  session.set('');
  for (const entry of sales.values()) entry.waitlist = null;
  forgetLines();
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

// holding are the order statuses that count towards the limits, as the API counts.
const holding = ['queued', 'grouping', 'created', 'paid'];

// unitsHeld counts the buyer's units in a sale that count towards the limit.
function unitsHeld(activityId) {
  let n = 0;
  for (const { data } of orders.values()) {
    if (data.activity_id === activityId && holding.includes(data.status)) {
      n += data.quantity;
    }
  }
  return n;
}

// participations counts the buyer's orders in a sale that count towards the cap on
// participations.
function participations(activityId) {
  let n = 0;
  for (const { data } of orders.values()) {
    if (data.activity_id === activityId && holding.includes(data.status)) n += 1;
  }
  return n;
}

const isGroupSale = (a) => a.kind === 'group';
const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

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
  // The orders known prove a limit reached even before the first load of the list
  // ends: an order taken in the meantime counts, so the answer to it stays on screen
  // when the list arrives.
  const limitReached = signedIn && held >= a.per_user_limit;
  const parts = participations(a.id);
  const cap = a.per_user_participations || 0;
  const partsReached = signedIn && cap > 0 && parts >= cap;
  let sentence = '';
  // In the early window a buyer with an access code buys as after the start.
  const early = status === 'upcoming' && earlyBuyable(a);
  if (status === 'upcoming' && !early) sentence = earlySentence(a) || `Not started yet: the sale opens on ${when(a.starts_at, true)}.`;
  else if (status === 'ended') sentence = 'This sale has ended.';
  else if (status === 'sold_out') sentence = 'Sold out: every unit has been taken.';
  else if (!signedIn) sentence = isGroupSale(a) ? 'Sign in above to open or join a group.' : 'Sign in above to buy.';
  else if (limitReached) {
    sentence = `Limit reached: you have ${held} of the ${a.per_user_limit} allowed per buyer.`;
  } else if (partsReached) {
    sentence = isGroupSale(a)
      ? `Limit reached: you take part in ${plural(parts, 'group', 'groups')} of this sale, the most allowed per buyer.`
      : `Limit reached: you hold ${plural(parts, 'order', 'orders')} in this sale, the most allowed per buyer.`;
  }
  return {
    status,
    held,
    parts,
    sentence,
    canBuy: sentence === '',
    early,
    key: [status, signedIn, limitReached, partsReached, early].join('|'),
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
  const entry = { data: a, node, result: null, pending: null, busy: false, waitlist: null, waitlistBusy: false };
  wireLine(entry);
  wireEarly(entry, renderSaleCard);
  el(node, '.join-waitlist').addEventListener('click', () => joinWaitlist(entry));
  el(node, '.leave-waitlist').addEventListener('click', () => leaveWaitlist(entry));
  el(node, '.buy').addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (isGroupSale(entry.data)) openGroup(entry);
    else buy(entry);
  });
  if (isGroupSale(a)) {
    Object.assign(entry, { groups: null, groupsAt: 0, groupsBusy: false, groupsError: '', onScreen: false,
      joining: '', joinPending: null, items: new Map() });
    el(node, '.open-group-button').setAttribute('aria-describedby', `sale-${a.id}-name`);
    el(node, '.open-groups-title').id = `sale-${a.id}-groups`;
    el(node, '.groups').setAttribute('aria-labelledby', `sale-${a.id}-groups`);
    // A sale's open groups are read only while its card can be seen.
    onScreen(node, (visible) => {
      entry.onScreen = visible;
      if (visible) fetchOpenGroups(entry);
    });
  }
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
  setText(el(node, '.stock-text'), `${available.toLocaleString('en-US')} of ${a.stock_total.toLocaleString('en-US')} left`
    + (a.variants ? ` in ${plural(a.variants.length, 'size', 'sizes')}` : ''));
  renderVariants(entry, state);
  const share = a.stock_total > 0 ? Math.min(1, available / a.stock_total) : 0;
  el(node, '.bar-fill').style.width = `${(share * 100).toFixed(1)}%`;

  const qty = el(node, '.qty');
  const room = Math.max(1, a.per_user_limit - state.held);
  if (qty.max !== String(room)) qty.max = String(room);
  setText(el(node, '.limit-text'), limitText(a, state));

  renderEarly(entry, state.status, Boolean(session.token));
  // A waiting-room sale is bought from with the pass of an admitted ticket only.
  const admitted = renderLine(entry, state.status);
  el(node, '.buy').hidden = state.status === 'ended' || !admitted;
  const group = isGroupSale(a);
  const button = el(node, '.buy-button');
  button.hidden = group;
  button.disabled = entry.busy || !state.canBuy || soldOutChoice(entry);
  qty.disabled = !state.canBuy;
  setText(button, entry.busy ? 'Buying…' : 'Buy');
  const opener = el(node, '.open-group-button');
  opener.hidden = !group;
  opener.disabled = entry.busy || !state.canBuy;
  setText(opener, entry.busy ? 'Opening…' : 'Open a group');
  const rule = el(node, '.group-rule');
  rule.hidden = !group;
  if (group) {
    setText(rule, `Group-buy: ${a.group_size} buyers per group. Open a group and share its link, or join one `
      + `below. Orders become payable once their group is full; a group that does not fill within `
      + `${duration(a.group_window_seconds * 1000)} is cancelled and nothing is owed.`);
    renderOpenGroups(entry, state);
  }

  renderWaitlist(entry, state);
  if (entry.result && entry.result.key !== state.key) entry.result = null;
  // A sentence about a seat lasts while its group is open: the order tells the rest.
  if (entry.result && entry.result.group && groups.get(entry.result.group)?.data?.status !== 'open') entry.result = null;
  const message = el(node, '.message');
  const text = entry.result ? entry.result.text : state.sentence;
  setText(message, text);
  message.className = `message ${entry.result ? entry.result.kind : 'state'}`;
}

// renderVariants shows a sale of variants' sizes as a choice, each with its units left:
// a sold-out size is shown as such (never hidden); chosen, it offers its waitlist
// instead of Buy.
function renderVariants(entry, state) {
  const a = entry.data;
  const box = el(entry.node, '.variants');
  const vs = a.variants || [];
  box.hidden = vs.length === 0;
  if (vs.length === 0) return;
  const options = el(box, '.variant-options');
  const names = JSON.stringify(vs.map((v) => v.name));
  if (options.dataset.names !== names) { // the sizes never change: built once
    options.dataset.names = names;
    options.replaceChildren(...vs.map((v) => {
      const label = document.createElement('label');
      label.className = 'variant';
      const input = document.createElement('input');
      Object.assign(input, { type: 'radio', name: `variant-${a.id}`, value: v.name });
      input.addEventListener('change', () => {
        entry.variant = v.name;
        entry.result = null;
        renderSaleCard(entry);
      });
      const name = document.createElement('span');
      name.className = 'variant-name';
      name.textContent = v.name;
      const left = document.createElement('span');
      left.className = 'variant-left';
      label.append(input, name, left);
      return label;
    }));
  }
  vs.forEach((v, i) => {
    const label = options.children[i];
    const input = label.querySelector('input');
    const soldOut = v.stock_available <= 0;
    label.classList.toggle('sold-out', soldOut);
    setText(el(label, '.variant-left'), soldOut ? 'Sold out' : `${v.stock_available.toLocaleString('en-US')} left`);
    input.disabled = !session.token || state.status === 'ended' || state.status === 'upcoming' && !state.early;
    input.checked = entry.variant === v.name;
    label.title = soldOut ? `${v.name} is sold out: choose it to join its waitlist` : '';
  });
}

// ---- the waitlist ----

// soldOutChoice reports whether the size chosen on a sale of variants is sold out.
function soldOutChoice(entry) {
  const v = (entry.data.variants || []).find((x) => x.name === entry.variant);
  return Boolean(v && v.stock_available <= 0);
}

// waitlistable reports whether the buyer may ask the sale's waitlist for units now: the
// sale, or the size chosen, is sold out while the sale is on.
function waitlistable(entry, state) {
  const a = entry.data;
  if (!session.token || isGroupSale(a) || a.stock_buckets > 1) return false;
  if (state.status !== 'active' && state.status !== 'sold_out') return false;
  return a.variants ? soldOutChoice(entry) : state.status === 'sold_out';
}

// ordinal is 1st, 2nd, 3rd, 4th...
function ordinal(n) {
  const s = ['th', 'st', 'nd', 'rd'];
  const v = n % 100;
  return `${n}${s[(v - 20) % 10] || s[v] || s[0]}`;
}

// renderWaitlist shows the buyer's waitlist entry of the sale (its place, or the order
// offered with its pay window's countdown), or the way to join it.
function renderWaitlist(entry, state) {
  const box = el(entry.node, '.waitlist-box');
  const w = entry.waitlist;
  const join = el(box, '.join-waitlist');
  const leave = el(box, '.leave-waitlist');
  const canJoin = waitlistable(entry, state) && (!w || w.status === 'ended');
  box.hidden = !w && !canJoin;
  if (box.hidden) return;
  let text = '';
  const what = w && w.variant ? ` of ${w.variant}` : '';
  if (w && w.status === 'waiting') {
    text = `On the waitlist for ${plural(w.quantity, 'unit', 'units')}${what}: ${ordinal(w.position)} in line. `
      + 'Units that come back are offered in the order buyers joined.';
  } else if (w && w.status === 'offered') {
    const o = orders.get(w.order_id)?.data;
    const left = o && o.status === 'created' ? Date.parse(o.expires_at) - clock.now() : 0;
    text = o && o.status === 'created' && left > 0
      ? `Units came back for you: ${plural(w.quantity, 'unit', 'units')}${what} ${w.quantity === 1 ? 'is' : 'are'} yours. Pay within ${duration(left)}.`
      : `Units came back for you: ${plural(w.quantity, 'unit', 'units')}${what}. See the order below.`;
  } else if (w && w.status === 'ended') {
    text = 'Your waitlist offer ended unpaid (or the sale ended).';
  } else {
    text = soldOutText(entry);
  }
  setText(el(box, '.waitlist-state'), text);
  join.hidden = !canJoin;
  join.disabled = entry.waitlistBusy;
  setText(join, entry.waitlistBusy ? 'Joining…' : 'Join the waitlist');
  leave.hidden = !w || w.status !== 'waiting';
  leave.disabled = entry.waitlistBusy;
}

// soldOutText is the sentence beside Join the waitlist.
function soldOutText(entry) {
  return entry.data.variants
    ? `${entry.variant} is sold out. Join its waitlist to be offered units that come back, in the order buyers joined.`
    : 'Sold out. Join the waitlist to be offered units that come back, in the order buyers joined.';
}

// fetchWaitlist reads the buyer's entry of a sale's waitlist (none: null).
async function fetchWaitlist(entry) {
  const res = await api('GET', `/api/v1/activities/${entry.data.id}/waitlist`, { token: session.token });
  if (res.ok) entry.waitlist = res.data;
  else if (res.status === 404) entry.waitlist = null;
  return res;
}

async function joinWaitlist(entry) {
  if (entry.waitlistBusy) return;
  const a = entry.data;
  const quantity = cardQuantity(entry);
  if (!quantity) return;
  entry.waitlistBusy = true;
  renderSaleCard(entry);
  const body = a.variants ? { quantity, variant: entry.variant } : { quantity };
  const res = await api('POST', `/api/v1/activities/${a.id}/waitlist`, { token: session.token, body });
  entry.waitlistBusy = false;
  if (res.ok) {
    entry.waitlist = res.data;
    entry.result = null;
  } else if (res.error.code === 'not_sold_out') {
    entry.result = { kind: 'error', text: 'Units are on sale again: buy them now.', key: saleState(a).key };
    salesPoll.kick();
  } else if (res.error.code === 'not_admitted') {
    entry.result = { kind: 'error', text: 'Only buyers who joined the line of this sale may join its waitlist.', key: saleState(a).key };
  } else {
    entry.result = { kind: 'error', text: buyError(res, a), key: saleState(a).key };
  }
  renderSaleCard(entry);
}

async function leaveWaitlist(entry) {
  if (entry.waitlistBusy) return;
  entry.waitlistBusy = true;
  renderSaleCard(entry);
  const res = await api('DELETE', `/api/v1/activities/${entry.data.id}/waitlist`, { token: session.token });
  entry.waitlistBusy = false;
  if (res.ok || res.status === 404) entry.waitlist = null;
  renderSaleCard(entry);
}

// Every 2 s, the buyer's entries of the sales they may wait for: those sold out (or
// with a size sold out), and those they joined.
const waitlistPoll = poller(async () => {
  if (!session.token) return 3000;
  const jobs = [];
  for (const entry of sales.values()) {
    const a = entry.data;
    const soldOutSomewhere = a.status === 'sold_out' || (a.variants || []).some((v) => v.stock_available <= 0);
    if (entry.waitlist || (soldOutSomewhere && !isGroupSale(a) && a.status !== 'ended')) jobs.push(fetchWaitlist(entry));
  }
  const answers = await Promise.all(jobs);
  if (answers.some((r) => r.ok && r.data.status === 'offered')) ordersPoll.kick();
  renderAllSales();
  const limited = answers.find((r) => r.status === 429);
  return limited ? (limited.retryAfter || 1) * 1000 : 2000;
});

// limitText says how much one buyer may take, and how much this one holds.
function limitText(a, state) {
  let text = `Up to ${a.per_user_limit} per buyer`;
  if (a.per_variant_limit) text += `, ${a.per_variant_limit} of a size`;
  if (a.per_user_participations) {
    text += isGroupSale(a)
      ? `, in at most ${plural(a.per_user_participations, 'group', 'groups')} at once`
      : `, in at most ${plural(a.per_user_participations, 'order', 'orders')} at once`;
  }
  text += '.';
  if (session.token && ordersLoaded && state.held > 0) {
    text += ` You have ${state.held}`;
    if (a.per_user_participations) text += isGroupSale(a) ? `, in ${plural(state.parts, 'group', 'groups')}` : `, in ${plural(state.parts, 'order', 'orders')}`;
    text += '.';
  }
  return text;
}

function renderAllSales() {
  for (const entry of sales.values()) renderSaleCard(entry);
  renderInvite();
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
      offScreen(entry.node);
      entry.node.remove();
      sales.delete(id);
    }
  }
  setText($('sales-note'), list.length === 0 ? 'There are no sales yet. Check back soon.' : '');
  renderAllOrders(); // order titles name their sale
  renderInvite(); // the invite names its sale
}

const salesPoll = poller(async () => {
  const res = await activities('/api/v1/activities');
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
      if (a.variants) {
        return m
          ? `Not enough of this size left: only ${m[1]} remain. Choose a smaller quantity or another size.`
          : 'This size is sold out. Choose another size.';
      }
      return m
        ? `Not enough left: only ${m[1]} remain. Choose a smaller quantity.`
        : 'Sold out: every unit has been taken.';
    }
    case 'limit_exceeded': {
      const parts = /take part (\d+) times?/i.exec(msg);
      if (parts) {
        return `Limit reached: you already hold ${plural(Number(parts[1]), 'order', 'orders')} in this sale, the most allowed per buyer.`;
      }
      if (/of this variant/i.test(msg)) {
        return `Limit reached for this size: each buyer may hold at most ${a.per_variant_limit} of one size.`;
      }
      return `Limit reached: each buyer may hold at most ${a.per_user_limit} of this sale, counting queued, created and paid orders.`;
    }
    case 'sale_not_started':
      return earlySentence(a) || `Not started yet: the sale opens on ${when(a.starts_at, true)}.`;
    case 'access_code_taken':
    case 'access_code_invalid':
      return codeError(res);
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
    case 'group_sale':
      return 'This is a group-buy sale: open a group or join one instead of buying.';
    case 'not_admitted':
      return 'Not your turn: join the line, and buy once it lets you in, before your pass expires.';
    case 'network':
      return 'Could not reach the server. Press Buy again to retry: you will not get a second order.';
    default:
      return msg;
  }
}

async function buy(entry) {
  if (entry.busy) return;
  const a = entry.data;
  const quantity = cardQuantity(entry);
  if (!quantity) return;
  const variant = a.variants ? entry.variant : undefined;
  if (a.variants && !variant) {
    entry.result = { kind: 'error', text: 'Choose a size first.', key: saleState(a).key };
    renderSaleCard(entry);
    el(entry.node, '.variant input:not(:disabled)')?.focus();
    return;
  }
  // One key per purchase: a retry after a lost answer sends the same key and body,
  // so the server answers with the first order instead of making a second one.
  if (!entry.pending || entry.pending.quantity !== quantity || entry.pending.variant !== variant) {
    entry.pending = { quantity, variant, key: idempotencyKey() };
  }
  entry.busy = true;
  entry.result = null;
  renderSaleCard(entry);
  const res = await api('POST', `/api/v1/activities/${a.id}/orders`, {
    token: session.token,
    body: variant ? { quantity, variant } : { quantity },
    headers: { 'Idempotency-Key': entry.pending.key, ...(a.waiting_room ? { 'X-Sale-Pass': admittedPass(a.id) } : {}),
      ...codeHeaders(a) },
  });
  entry.busy = false;
  if (res.status !== 0) entry.pending = null;
  if (res.ok) {
    const o = res.data;
    upsertOrder(o);
    entry.result = {
      kind: 'ok',
      text: `Order placed: ${o.quantity} × ${a.product_name}${o.variant ? ` (${o.variant})` : ''}, ${statusLabel(o.status).toLowerCase()}. Follow it under Your orders.`,
    };
    fastOrdersUntil = Date.now() + 15000;
    ordersPoll.kick();
    salesPoll.kick();
  } else {
    if (res.status === 401) {
      signOut(expiredSignIn);
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
  el(node, '.checkout').setAttribute('aria-describedby', title.id);
  el(node, '.cancel').setAttribute('aria-describedby', title.id);
  const entry = { data: o, node, message: '', busy: false, share: '' };
  el(node, '.pay').addEventListener('click', () => act(entry, 'pay'));
  el(node, '.cancel').addEventListener('click', () => act(entry, 'cancel'));
  const share = el(node, '.share-url');
  share.id = `order-${o.id}-share`;
  el(node, '.share-label').htmlFor = share.id;
  share.addEventListener('focus', () => share.select());
  el(node, '.copy').setAttribute('aria-describedby', title.id);
  el(node, '.copy').addEventListener('click', () => copyShareLink(entry));
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
  const g = o.group_id ? groups.get(o.group_id) : null;
  switch (o.status) {
    case 'queued':
      return o.group_id
        ? 'Queued: your seat in the group and its units are reserved while the order is being created.'
        : 'Queued: your units are reserved while the order is being created.';
    case 'grouping':
      return 'Waiting for the group: your units are held. The order becomes payable when the group is full; '
        + 'if it does not fill in time it is cancelled and nothing is owed.';
    case 'created':
      return expired
        ? 'The pay window has passed: the order will be cancelled and its units returned.'
        : 'Created: awaiting payment.';
    case 'paid':
      return `Paid on ${when(o.paid_at)}. Thank you!`;
    case 'refunded':
      return o.restock
        ? `Refunded on ${when(o.refunded_at)}: the units went back on sale.`
        : `Refunded on ${when(o.refunded_at)}.`;
    case 'cancelled':
      return g && g.data && g.data.status !== 'complete'
        ? 'Cancelled: the group did not fill in time. The units went back to stock; nothing is owed.'
        : 'Cancelled: the units went back to stock.';
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
  setText(el(node, '.order-title'), `${sale ? sale.data.name : `Sale ${o.activity_id}`}: ${o.quantity} × ${what}`
    + `${o.variant ? ` (${o.variant})` : ''}${o.group_id ? ' in a group' : ''}${o.offered ? ', offered from the waitlist' : ''}`);
  const badge = el(node, '.order-badge');
  setText(badge, statusLabel(o.status));
  badge.className = `badge order-badge status-${o.status}`;
  setText(el(node, '.order-status'), orderText(o, expired));
  const payClock = el(node, '.pay-clock');
  payClock.hidden = !(o.status === 'created' && !expired);
  setText(payClock, payClock.hidden ? '' : `Pay within ${duration(expires - now)}, by ${when(o.expires_at)}.`);
  setText(el(node, '.amount'), `Total ${money(o.amount_cents)}`);
  renderOrderGroup(entry);
  setText(el(node, '.order-id'), `Order ${o.id}, placed on ${when(o.created_at)}`);
  const actions = el(node, '.actions');
  actions.hidden = o.status !== 'created';
  // The shop's checkout, when it has one, takes the payment: the page sends the buyer
  // there instead of paying here.
  const pay = el(node, '.pay');
  const checkout = el(node, '.checkout');
  pay.hidden = Boolean(o.checkout_url);
  checkout.hidden = !o.checkout_url || expired;
  if (o.checkout_url) checkout.href = o.checkout_url;
  setText(checkout, `Pay ${money(o.amount_cents)} at the shop`);
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
    case 'payment_by_shop':
      return 'Payment is taken at the shop\'s checkout: the shop marks the order paid once it has your payment.';
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
    signOut(expiredSignIn);
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
  // An order whose group has filled turns created as soon as the worker stores the seat.
  const filling = [...orders.values()].some(({ data }) => data.status === 'grouping'
    && groups.get(data.group_id)?.data?.status === 'complete');
  if (statuses.includes('queued') || filling || Date.now() < fastOrdersUntil) return 700;
  return statuses.includes('created') || statuses.includes('grouping') ? 2000 : 4000;
});

// The countdowns tick every second between refreshes.
setInterval(() => {
  renderAllSales();
  for (const entry of orders.values()) renderOrderCard(entry);
}, 1000);

// ---- groups ----

const shareURL = (id) => `${location.origin}/?group=${encodeURIComponent(id)}`;

// myOrderIn returns the buyer's order that holds (or held) a seat in the group, or null.
function myOrderIn(groupId) {
  for (const { data } of orders.values()) {
    if (data.group_id === groupId && data.status !== 'failed') return data;
  }
  return null;
}

// withOrder returns a group's state moved on by the buyer's order in it: an order
// turns created (payable) only once its group is complete, which the order may show
// before the page reads the group again.
function withOrder(data, order) {
  if (data && order && data.status === 'open' && ['created', 'paid'].includes(order.status)) {
    return { ...data, status: 'complete', members: data.size };
  }
  return data;
}

// joinable reports a group with a seat left whose window has not passed.
function joinable(g) {
  return g.status === 'open' && g.members < g.size && !groupWindowOver(g);
}

// renderSeats draws a group's seats as dots, the taken ones filled (the text beside
// them says the same for screen readers).
function renderSeats(box, members, size) {
  const n = Math.min(size, 100);
  while (box.children.length < n) box.appendChild(document.createElement('span'));
  while (box.children.length > n) box.lastChild.remove();
  [...box.children].forEach((dot, i) => dot.classList.toggle('taken', i < members));
}

// later reports whether group state b is at least as far along as a: a group only
// gains members and moves from open to complete or failed, so an answer that left the
// server earlier never undoes a later one.
function later(a, b) {
  const rank = (g) => (g.status === 'open' ? 0 : 1);
  return rank(b) > rank(a) || (rank(b) === rank(a) && b.members >= a.members);
}

function groupEntry(id) {
  let g = groups.get(id);
  if (!g) {
    g = { data: null, at: 0, busy: false, missing: false };
    groups.set(id, g);
  }
  return g;
}

// setGroup records a group's state. When a group the buyer is in fills or fails, the
// orders are read again at once: theirs become payable or cancelled.
function setGroup(data) {
  const g = groupEntry(data.id);
  if (g.data && !later(g.data, data)) return;
  const before = g.data ? g.data.status : '';
  g.data = data;
  g.missing = false;
  if (before !== data.status && data.status !== 'open' && myOrderIn(data.id)) {
    fastOrdersUntil = Date.now() + 15000;
    ordersPoll.kick();
  }
  renderAllOrders();
  renderAllSales();
}

// fetchGroup reads one group, unless it was read less than groupsEvery ago.
async function fetchGroup(id, force = false) {
  const g = groupEntry(id);
  if (g.busy || (!force && Date.now() - g.at < groupsEvery - 200)) return null;
  g.busy = true;
  const res = await api('GET', `/api/v1/groups/${encodeURIComponent(id)}`);
  g.busy = false;
  g.at = Date.now();
  if (res.ok) {
    setGroup(res.data);
  } else if (res.status === 404) {
    g.missing = true;
    renderInvite();
  }
  return res;
}

// fetchOpenGroups reads a group sale's open groups while its card is on screen and the
// sale is on, unless they were read less than groupsEvery ago.
async function fetchOpenGroups(entry, force = false) {
  if (!entry.onScreen || entry.groupsBusy || effectiveStatus(entry.data) !== 'active') return null;
  if (!force && Date.now() - entry.groupsAt < groupsEvery - 200) return null;
  entry.groupsBusy = true;
  const res = await api('GET', `/api/v1/activities/${entry.data.id}/groups`);
  entry.groupsBusy = false;
  entry.groupsAt = Date.now();
  if (res.ok) {
    entry.groups = res.data.groups || [];
    entry.groupsError = '';
  } else if (res.status === 429) {
    entry.groupsError = `Too many requests: the groups refresh again in ${res.retryAfter || 1} seconds.`;
  } else {
    entry.groupsError = `Could not load the open groups: ${res.error.message} Trying again…`;
  }
  renderSaleCard(entry);
  return res;
}

// followedGroups are the groups whose state the page follows, while they are open:
// those the buyer waits in, those the page last saw open (an order can turn payable
// before the page reads its group complete), and the one a shared link points to.
function followedGroups() {
  const ids = new Set();
  if (invite.id) ids.add(invite.id);
  for (const { data } of orders.values()) {
    if (data.group_id && (['queued', 'grouping'].includes(data.status)
      || groups.get(data.group_id)?.data?.status === 'open')) ids.add(data.group_id);
  }
  return [...ids].filter((id) => {
    const g = groups.get(id);
    return !g || (!g.missing && (!g.data || g.data.status === 'open'));
  });
}

// Every groupsEvery: the followed groups, and the open groups of each group sale on
// screen; one request each.
const groupsPoll = poller(async () => {
  const jobs = followedGroups().map((id) => fetchGroup(id));
  for (const entry of sales.values()) {
    if (isGroupSale(entry.data)) jobs.push(fetchOpenGroups(entry));
  }
  const answers = await Promise.all(jobs);
  const limited = answers.find((r) => r && r.status === 429);
  return limited ? (limited.retryAfter || 1) * 1000 : groupsEvery;
});

function newGroupItem(entry, id) {
  const item = $('group-item-template').content.firstElementChild.cloneNode(true);
  item.dataset.groupId = id;
  const seats = el(item, '.group-seats');
  seats.id = `group-${id}-seats`;
  const join = el(item, '.join-button');
  join.setAttribute('aria-describedby', `${seats.id} sale-${entry.data.id}-name`);
  join.addEventListener('click', () => joinFromSale(entry, id));
  return item;
}

function renderGroupItem(entry, item, g, state) {
  const mine = myOrderIn(g.id);
  item.dataset.members = String(g.members);
  item.dataset.mine = String(Boolean(mine));
  setText(el(item, '.group-seats'), `${g.members} of ${g.size} joined: ${plural(g.size - g.members, 'seat', 'seats')} left`);
  renderSeats(el(item, '.seats'), g.members, g.size);
  setText(el(item, '.group-clock'), `Closes in ${duration(Date.parse(g.expires_at) - clock.now())}`);
  const join = el(item, '.join-button');
  join.hidden = Boolean(mine);
  join.disabled = entry.busy || Boolean(entry.joining) || !state.canBuy;
  setText(join, entry.joining === g.id ? 'Joining…' : 'Join');
  const yours = el(item, '.group-yours');
  yours.hidden = !mine;
  if (mine) yours.href = `#order-${mine.id}-title`;
}

// renderOpenGroups lists a group sale's groups with a seat left, the fullest first.
function renderOpenGroups(entry, state) {
  const box = el(entry.node, '.open-groups');
  box.hidden = state.status !== 'active';
  if (box.hidden) return;
  // A group this page follows may have been read after the sale's list.
  const freshest = (g) => {
    const followed = groups.get(g.id)?.data;
    return followed && later(g, followed) ? followed : g;
  };
  const list = (entry.groups || []).map(freshest).filter(joinable);
  const shown = list.slice(0, maxListedGroups);
  let note = '';
  if (entry.groupsError) note = entry.groupsError;
  else if (entry.groups === null) note = 'Loading the open groups…';
  else if (list.length === 0) note = 'No group is open right now: open the first one.';
  else if (list.length > shown.length) note = `The ${shown.length} fullest of ${list.length} open groups.`;
  setText(el(box, '.open-groups-note'), note);
  const parent = el(box, '.groups');
  const seen = new Set();
  shown.forEach((g, i) => {
    seen.add(g.id);
    let item = entry.items.get(g.id);
    if (!item) {
      item = newGroupItem(entry, g.id);
      entry.items.set(g.id, item);
    }
    renderGroupItem(entry, item, g, state);
    if (parent.children[i] !== item) parent.insertBefore(item, parent.children[i] || null);
  });
  for (const [id, item] of entry.items) {
    if (!seen.has(id)) {
      const focused = item.contains(document.activeElement);
      item.remove();
      entry.items.delete(id);
      if (focused) el(entry.node, '.qty').focus();
    }
  }
}

// seatError is the sentence for a refused group opening or seat.
function seatError(res, a, join) {
  const msg = res.error.message || '';
  switch (res.error.code) {
    case 'group_full':
      return 'This group is full: every seat was taken just before you. Join another group or open your own.';
    case 'group_closed':
      return 'This group has closed: its time ran out before it filled. Join another group or open your own.';
    case 'already_in_group':
      return 'You already have a seat in this group. Share its link so that others fill it.';
    case 'not_a_group_sale':
      return 'This sale is not a group-buy: buy it directly.';
    case 'not_found':
      return join ? 'This group does not exist: check that the link was copied whole.' : 'This sale no longer exists.';
    case 'limit_exceeded': {
      const parts = /take part (\d+) times?, at most (\d+)/i.exec(msg);
      if (parts) {
        return `Limit reached: you already take part in ${plural(Number(parts[1]), 'group', 'groups')} of this sale, `
          + 'the most allowed per buyer (groups still filling count too).';
      }
      return `Limit reached: each buyer may hold at most ${a.per_user_limit} of this sale, counting orders queued, `
        + 'waiting in a group, created and paid.';
    }
    case 'network':
      return 'Could not reach the server. Press the button again to retry: you will not get a second seat.';
    default:
      return buyError(res, a);
  }
}

// joinedText is the sentence for a seat taken in a group.
function joinedText(g) {
  if (g.status === 'complete') {
    return `You joined and filled the group: ${g.size} of ${g.size}. Your order becomes payable in a moment, under Your orders.`;
  }
  return `You joined the group: ${g.members} of ${g.size}. Your order becomes payable when `
    + `${plural(g.size - g.members, 'more buyer joins', 'more buyers join')}; follow it under Your orders.`;
}

// wholeQuantity reads a quantity field, or returns 0 when it is not a whole number of
// at least 1.
function wholeQuantity(input) {
  const quantity = Number(input.value);
  return Number.isInteger(quantity) && quantity >= 1 ? quantity : 0;
}

const quantityProblem = 'Enter a whole number of at least 1 as the quantity.';

// cardQuantity reads a sale card's quantity (to buy, open a group or join one); when it
// is not a whole number of at least 1 the card says so, the field gets the focus, and
// it returns 0.
function cardQuantity(entry) {
  const input = el(entry.node, '.qty');
  const quantity = wholeQuantity(input);
  if (!quantity) {
    entry.result = { kind: 'error', text: quantityProblem, key: saleState(entry.data).key };
    renderSaleCard(entry);
    input.focus();
  }
  return quantity;
}

// takeSeat opens a group or joins one of sale a with pending's quantity and
// Idempotency-Key: a retry after a lost answer sends the same key and body, and gets the
// first seat back.
async function takeSeat(path, pending, a) {
  const res = await api('POST', path, {
    token: session.token,
    body: { quantity: pending.quantity },
    headers: { 'Idempotency-Key': pending.key, ...codeHeaders(a) },
  });
  if (res.ok) {
    upsertOrder(res.data.order);
    setGroup(res.data.group);
    fastOrdersUntil = Date.now() + 15000;
    ordersPoll.kick();
    salesPoll.kick();
  } else if (['sold_out', 'sale_ended', 'sale_not_started', 'limit_exceeded'].includes(res.error.code)) {
    salesPoll.kick();
    ordersPoll.kick();
  }
  return res;
}

async function openGroup(entry) {
  if (entry.busy || entry.joining) return;
  const a = entry.data;
  const quantity = cardQuantity(entry);
  if (!quantity) return;
  if (!entry.pending || entry.pending.quantity !== quantity) entry.pending = { quantity, key: idempotencyKey() };
  entry.busy = true;
  entry.result = null;
  renderSaleCard(entry);
  const res = await takeSeat(`/api/v1/activities/${a.id}/groups`, entry.pending, a);
  entry.busy = false;
  if (res.status !== 0) entry.pending = null;
  if (res.status === 401) {
    signOut(expiredSignIn);
    return;
  }
  if (res.ok) {
    const g = res.data.group;
    entry.result = {
      kind: 'ok',
      group: g.id,
      text: `You opened a group: ${g.members} of ${g.size} joined. Share its link from your order below; the order `
        + `becomes payable when ${plural(g.size - g.members, 'more buyer joins', 'more buyers join')}.`,
    };
  } else {
    entry.result = { kind: 'error', text: seatError(res, a, false) };
  }
  entry.result.key = saleState(a).key;
  renderSaleCard(entry);
}

// refreshAfter are the refusals after which the group's state is read again at once.
const refreshAfter = ['group_full', 'group_closed', 'already_in_group', 'not_found'];

async function joinFromSale(entry, id) {
  if (entry.busy || entry.joining) return;
  const a = entry.data;
  const quantity = cardQuantity(entry);
  if (!quantity) return;
  const p = entry.joinPending;
  if (!p || p.group !== id || p.quantity !== quantity) entry.joinPending = { group: id, quantity, key: idempotencyKey() };
  entry.joining = id;
  entry.result = null;
  renderSaleCard(entry);
  const res = await takeSeat(`/api/v1/groups/${encodeURIComponent(id)}/join`, entry.joinPending, a);
  entry.joining = '';
  if (res.status !== 0) entry.joinPending = null;
  if (res.status === 401) {
    signOut(expiredSignIn);
    return;
  }
  if (res.ok) {
    const g = res.data.group;
    entry.result = { kind: 'ok', text: joinedText(g), group: g.status === 'open' ? g.id : '' };
  } else {
    entry.result = { kind: 'error', text: seatError(res, a, true) };
    if (refreshAfter.includes(res.error.code)) fetchOpenGroups(entry, true);
  }
  entry.result.key = saleState(a).key;
  renderSaleCard(entry);
  // The Join button is gone once the buyer holds the seat: keep the keyboard's place
  // on the order, which follows the group.
  const order = res.ok && orders.get(res.data.order.id);
  if (order) el(order.node, '.order-title').focus();
}

// ---- the group a shared link points to ----

function renderInvite() {
  const box = $('invite');
  box.hidden = !invite.id;
  if (!invite.id) return;
  const g = groups.get(invite.id);
  const data = g && withOrder(g.data, myOrderIn(invite.id));
  const form = $('invite-form');
  const message = $('invite-message');
  setText(message, invite.result ? invite.result.text : '');
  message.className = `message ${invite.result ? invite.result.kind : ''}`;
  if (!data) {
    form.hidden = true;
    setText($('invite-state'), g && g.missing
      ? 'This link does not lead to a group: check that it was copied whole, or choose a sale below.'
      : 'Loading the group…');
    return;
  }
  const sale = sales.get(data.activity_id);
  const mine = myOrderIn(data.id);
  const over = data.status === 'open' && groupWindowOver(data);
  const full = data.status === 'complete' || data.members >= data.size;
  const left = plural(data.size - data.members, 'seat', 'seats');
  box.dataset.status = data.status;
  box.dataset.members = String(data.members);
  box.dataset.mine = String(Boolean(mine));
  setText($('invite-title'), mine ? 'Your group' : 'A group invites you');
  setText($('invite-sale'), sale
    ? `${sale.data.name}: ${sale.data.product_name} at ${money(sale.data.price_cents)} each, in groups of ${data.size}.`
    : `A group of ${data.size} buyers.`);
  renderSeats($('invite-seats'), data.members, data.size);
  let state;
  if (mine && data.status === 'complete') {
    if (mine.status === 'created') state = `This group is complete: ${data.size} of ${data.size} joined. Your order is now payable: pay it under Your orders.`;
    else if (mine.status === 'paid') state = `This group is complete: ${data.size} of ${data.size} joined, and your order is paid.`;
    else state = `This group is complete: ${data.size} of ${data.size} joined. Your order becomes payable in a moment.`;
  } else if (mine && (data.status === 'failed' || over)) {
    state = `This group did not fill in time (${data.members} of ${data.size}): your order is cancelled and nothing is owed.`;
  } else if (mine) {
    state = `You are in this group: ${data.members} of ${data.size} joined, ${left} left. Share the link so that it fills.`;
  } else if (full) {
    state = `This group is full: all ${data.size} seats are taken. Open your own group in the sale below.`;
  } else if (data.status === 'failed' || over) {
    state = 'This group has closed: its time ran out before it filled. Open a new group in the sale below.';
  } else {
    state = `${data.members} of ${data.size} joined: ${left} left.`;
  }
  setText($('invite-state'), state);
  const open = data.status === 'open' && !over;
  setText($('invite-clock'), open ? `Closes in ${duration(Date.parse(data.expires_at) - clock.now())}, at ${when(data.expires_at)}.` : '');
  const canSeat = !mine && !full && open;
  form.hidden = !canSeat;
  let limit = '';
  let canJoin = canSeat && Boolean(sale);
  if (sale) {
    const st = saleState(sale.data);
    if (!session.token) {
      limit = 'Sign in below to join this group.';
      canJoin = false;
    } else if (st.sentence) {
      limit = st.sentence;
      canJoin = false;
    } else {
      limit = limitText(sale.data, st);
    }
    const room = String(Math.max(1, sale.data.per_user_limit - st.held));
    if ($('invite-qty').max !== room) $('invite-qty').max = room;
  }
  setText($('invite-limit'), limit);
  $('invite-join').disabled = invite.busy || !canJoin;
  $('invite-qty').disabled = !canJoin;
  setText($('invite-join'), invite.busy ? 'Joining…' : 'Join this group');
}

async function joinFromInvite() {
  const data = groups.get(invite.id)?.data;
  const sale = data && sales.get(data.activity_id);
  if (invite.busy || !sale) return;
  const quantity = wholeQuantity($('invite-qty'));
  if (!quantity) {
    invite.result = { kind: 'error', text: quantityProblem };
    renderInvite();
    $('invite-qty').focus();
    return;
  }
  if (!invite.pending || invite.pending.quantity !== quantity) invite.pending = { quantity, key: idempotencyKey() };
  invite.busy = true;
  invite.result = null;
  renderInvite();
  const res = await takeSeat(`/api/v1/groups/${encodeURIComponent(invite.id)}/join`, invite.pending, sale.data);
  invite.busy = false;
  if (res.status !== 0) invite.pending = null;
  if (res.status === 401) {
    signOut(expiredSignIn);
    return;
  }
  if (res.ok) {
    invite.result = { kind: 'ok', text: joinedText(res.data.group) };
  } else {
    invite.result = { kind: 'error', text: seatError(res, sale.data, true) };
    if (refreshAfter.includes(res.error.code)) fetchGroup(invite.id, true);
  }
  renderInvite();
  // The form is gone once the buyer holds the seat: keep the keyboard's place.
  if (res.ok) $('invite-title').focus();
}

$('invite-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  joinFromInvite();
});

// ---- a seat's group, on its order ----

function renderOrderGroup(entry) {
  const o = entry.data;
  const node = entry.node;
  const box = el(node, '.group-box');
  const data = o.group_id ? withOrder(groups.get(o.group_id)?.data, o) : null;
  // An order whose group ended before this page saw it tells the outcome by its status.
  box.hidden = !o.group_id || o.status === 'failed' || (!data && o.status === 'cancelled');
  if (box.hidden) return;
  node.dataset.group = data ? data.status : '';
  let state;
  let open = false;
  if (data && data.status === 'complete') {
    const all = `${data.size} of ${data.size} joined`;
    if (o.status === 'created') state = `Group complete: ${all}. Your order is now payable.`;
    else if (o.status === 'queued' || o.status === 'grouping') state = `Group complete: ${all}. Your order becomes payable in a moment.`;
    else state = `Group complete: ${all}.`;
  } else if (data && (data.status === 'failed' || groupWindowOver(data))) {
    state = o.status === 'cancelled'
      ? `The group did not fill in time: ${data.members} of ${data.size} joined.`
      : `The group's time ran out with ${data.members} of ${data.size}: the order will be cancelled and its units returned.`;
  } else if (data) {
    open = true;
    state = `Group: ${data.members} of ${data.size} joined, ${plural(data.size - data.members, 'seat', 'seats')} left. `
      + 'Share the link so that it fills.';
  } else if (o.status === 'created') {
    state = 'Group complete: your order is now payable.';
  } else if (o.status === 'paid') {
    state = 'Group complete.';
  } else {
    state = 'Reading the group…';
  }
  setText(el(node, '.group-state'), state);
  const seats = el(node, '.group-box .seats');
  seats.hidden = !data;
  if (data) renderSeats(seats, data.members, data.size);
  setText(el(node, '.group-clock'), open
    ? `It closes in ${duration(Date.parse(data.expires_at) - clock.now())}, at ${when(data.expires_at)}.` : '');
  el(node, '.share').hidden = !open;
  const url = shareURL(o.group_id);
  const input = el(node, '.share-url');
  if (input.value !== url) input.value = url;
  setText(el(node, '.share-result'), open ? entry.share : '');
}

// copyShareLink puts the group's link on the clipboard, or, where the browser does
// not allow it, selects the link for the buyer to copy.
async function copyShareLink(entry) {
  const input = el(entry.node, '.share-url');
  let copied = false;
  try {
    await navigator.clipboard.writeText(input.value);
    copied = true;
  } catch {
    copied = false;
  }
  if (!copied) {
    input.focus();
    input.select();
    try {
      copied = document.execCommand('copy');
    } catch {
      copied = false;
    }
  }
  entry.share = copied
    ? 'Link copied. Send it to the people you want in your group.'
    : 'This browser did not let the page copy: the link is selected, press Ctrl+C (⌘C on a Mac) to copy it.';
  renderOrderCard(entry);
}

// ---- start ----

if (session.token) {
  const problem = tokenProblem(session.token);
  if (problem) signOut(problem);
}
setupLines(session, (entry) => renderSaleCard(entry));
trackCards(() => [...sales.values()]);
showSignedIn();
salesPoll.kick();
ordersPoll.kick();
groupsPoll.kick();
waitlistPoll.kick();
startLines();
