// The admin's page: sign in with an admin token, create a sale (the API's
// validation messages beside their fields), and watch and change every sale.
import {
  api, activities, clock, Session, decodeClaims, money, duration, when, el, setText, statusLabel, poller,
  groupWindowOver, onScreen, offScreen,
} from './common.js';
import { liveChart, sparkline, perSecond } from './charts.js';
import { roomFields, roomBody, wireRoom, renderRoom, readLines } from './admin-line.js';
import { webhooksPoller } from './webhooks.js';
import { wireOrders } from './admin-orders.js';
import { wireCodes, renderCodes } from './admin-codes.js';
import { wireFunnel } from './admin-funnel.js';

const session = new Session('seckill.admin.token');
const sales = new Map(); // activity id -> {data, stats, node, busy}
// Stats are fetched for this many of the newest sales at each refresh.
const maxStatsSales = 50;
// A group sale's card lists this many of its newest groups.
const maxGroupRows = 50;
// A group sale's groups are read at most this often, and only while its card is on
// screen (or near it).
const groupsEvery = 2000;

const $ = (id) => document.getElementById(id);
const units = (n) => `${Number(n).toLocaleString('en-US')} ${n === 1 ? 'unit' : 'units'}`;

// ---- signing in ----

function showSignedIn(signedIn) {
  $('signin').hidden = signedIn;
  $('console').hidden = !signedIn;
  $('who').hidden = !signedIn;
  if (signedIn) {
    const claims = session.claims() || {};
    setText($('who-name'), `Signed in as admin ${claims.sub || ''}`.trim());
  }
}

function signOut(reason) {
  session.set('');
  for (const entry of sales.values()) offScreen(entry.node);
  sales.clear();
  $('sales').replaceChildren();
  $('token').value = '';
  setText($('token-error'), reason || '');
  $('token').setAttribute('aria-invalid', reason ? 'true' : 'false');
  showSignedIn(false);
  $('token').focus();
}

// refused handles 401 and 403 anywhere on the page; it reports whether it did.
function refused(res) {
  if (res.status === 401) {
    signOut('The server did not accept this token: it is malformed, expired, or signed with another secret.');
    return true;
  }
  if (res.status === 403) {
    signOut('This token is a buyer’s. Sign in with an admin token (made with -admin).');
    return true;
  }
  return false;
}

async function signIn(token) {
  const claims = decodeClaims(token);
  if (!token) return signOut('Paste a token first.');
  if (!claims) return signOut('This is not a token: a token is three parts separated by dots.');
  if (claims.exp && claims.exp * 1000 < clock.now()) {
    return signOut('This token has expired. Get a new one with go run ./cmd/api token -user 1 -admin.');
  }
  session.set(token);
  const res = await api('GET', '/api/v1/admin/activities?limit=1', { token }); // is the token an admin's?
  if (refused(res)) return undefined;
  setText($('token-error'), '');
  showSignedIn(true);
  defaultTimes();
  salesPoll.kick();
  instancesPoll.kick();
  webhooksPoll.kick();
  return undefined;
}

$('signin-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  signIn($('token').value.trim());
});

$('sign-out').addEventListener('click', () => signOut(''));

// ---- creating a sale ----

// fields maps the API's JSON field names to the form's inputs.
const fields = {
  name: 'f-name',
  product_name: 'f-product',
  price_cents: 'f-price',
  stock: 'f-stock',
  per_user_limit: 'f-limit',
  starts_at: 'f-starts',
  ends_at: 'f-ends',
  pay_window_seconds: 'f-pay-window',
  kind: 'f-kind',
  group_size: 'f-group-size',
  group_window_seconds: 'f-group-window',
  per_user_participations: 'f-participations',
  stock_buckets: 'f-buckets',
  variants: 'f-variants',
  per_variant_limit: 'f-per-variant',
  early_access_seconds: 'f-early',
  ...roomFields,
};

// showKindFields shows the group fields for a group-buy sale only.
function showKindFields() {
  const group = $('f-kind').value === 'group';
  document.querySelectorAll('#create-form .group-only').forEach((f) => { f.hidden = !group; });
}
$('f-kind').addEventListener('change', showKindFields);

// fieldOf returns the JSON field a validation message is about: the API's 400
// messages start with the field's name, such as "Price_cents must be ...".
function fieldOf(message) {
  const m = /^([A-Za-z_]+)/.exec(message || '');
  return m ? m[1].toLowerCase() : '';
}

function localInputValue(ms) {
  const d = new Date(ms);
  const two = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

// defaultTimes proposes a sale that starts now and lasts an hour.
function defaultTimes() {
  const now = Math.floor(clock.now() / 1000) * 1000;
  if (!$('f-starts').value) $('f-starts').value = localInputValue(now);
  if (!$('f-ends').value) $('f-ends').value = localInputValue(now + 3600 * 1000);
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'this device’s zone';
  document.querySelectorAll('.zone').forEach((z) => setText(z, zone));
}

function clearCreateErrors() {
  for (const id of Object.values(fields)) {
    setText($(`${id}-error`), '');
    $(id).removeAttribute('aria-invalid');
  }
  setText($('create-error'), '');
}

// parseVariants reads the variants field, one "name: stock" a line, into the API's
// variants (undefined when empty). A line without a number keeps its text as the stock,
// so the API names the variant in its answer.
function parseVariants(text) {
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l !== '');
  if (lines.length === 0) return undefined;
  return lines.map((line) => {
    const at = line.lastIndexOf(':');
    const name = at < 0 ? line : line.slice(0, at).trim();
    const stock = at < 0 ? '' : line.slice(at + 1).trim();
    return { name, stock: /^\d+$/.test(stock) ? Number(stock) : stock };
  });
}

// createBody reads the form. Empty fields are left out, so the API names what is missing.
function createBody() {
  const body = {};
  const text = (id) => $(id).value.trim();
  const number = (id) => (text(id) === '' ? undefined : Number(text(id)));
  const time = (id) => {
    if (!$(id).value) return undefined;
    const d = new Date($(id).value);
    return Number.isNaN(d.getTime()) ? $(id).value : d.toISOString();
  };
  if (text('f-name') !== '') body.name = $('f-name').value;
  if (text('f-product') !== '') body.product_name = $('f-product').value;
  const price = number('f-price');
  if (price !== undefined) body.price_cents = Number.isFinite(price) ? Math.round(price * 100) : price;
  body.stock = number('f-stock');
  const variants = parseVariants($('f-variants').value);
  if (variants) body.variants = variants;
  body.per_variant_limit = number('f-per-variant');
  body.per_user_limit = number('f-limit');
  body.starts_at = time('f-starts');
  body.ends_at = time('f-ends');
  body.pay_window_seconds = number('f-pay-window');
  body.kind = $('f-kind').value;
  if (body.kind === 'group') { // the API refuses group fields on a plain sale
    body.group_size = number('f-group-size');
    body.group_window_seconds = number('f-group-window');
  }
  body.per_user_participations = number('f-participations');
  body.stock_buckets = number('f-buckets');
  body.early_access_seconds = number('f-early');
  return Object.assign(body, roomBody());
}

$('create-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  clearCreateErrors();
  setText($('create-result'), '');
  const button = $('create-button');
  button.disabled = true;
  setText(button, 'Creating…');
  const res = await api('POST', '/api/v1/admin/activities', { token: session.token, body: createBody() });
  button.disabled = false;
  setText(button, 'Create sale');
  if (res.ok) {
    const a = res.data;
    let kind = a.kind === 'group'
      ? `Group-buy sale ${a.id}, “${a.name}”, created with ${units(a.stock_total)} in groups of ${a.group_size} (each has ${duration(a.group_window_seconds * 1000)} to fill)`
      : `Sale ${a.id}, “${a.name}”, created with ${units(a.stock_total)}`;
    if (a.variants) kind += ` in ${a.variants.length} ${a.variants.length === 1 ? 'variant' : 'variants'}`;
    setText($('create-result'), `${kind}: on sale from ${when(a.starts_at)} to ${when(a.ends_at)}.`);
    $('f-name').value = '';
    $('f-product').value = '';
    $('f-variants').value = '';
    salesPoll.kick();
    return;
  }
  if (refused(res)) return;
  const id = res.error.code === 'invalid_request' ? fields[fieldOf(res.error.message)] : undefined;
  if (id) {
    setText($(`${id}-error`), res.error.message);
    $(id).setAttribute('aria-invalid', 'true');
    $(id).focus();
  } else {
    setText($('create-error'), `The sale was not created: ${res.error.message}`);
  }
});

// ---- the sales ----

function newSaleCard(a) {
  const node = $('sale-template').content.firstElementChild.cloneNode(true);
  node.dataset.activityId = a.id;
  const entry = { data: a, stats: null, node, busy: false, chart: null, answers: null, rate: perSecond(),
    groups: null, groupsAt: 0, groupsError: '', groupsBusy: false, onScreen: false, groupRows: new Map() };
  const pairs = [['.limit-input', '.limit-label', '.limit-error', 'limit'], ['.stock-input', '.stock-label', '.stock-error', 'stock']];
  for (const [input, label, error, name] of pairs) {
    el(node, input).id = `sale-${a.id}-${name}`;
    el(node, label).htmlFor = `sale-${a.id}-${name}`;
    el(node, error).id = `sale-${a.id}-${name}-error`;
    el(node, input).setAttribute('aria-describedby', `sale-${a.id}-${name}-error sale-${a.id}-name`);
  }
  el(node, '.sale-name').id = `sale-${a.id}-name`;
  el(node, '.end-button').setAttribute('aria-describedby', `sale-${a.id}-name`);
  if (a.kind === 'group') {
    el(node, '.groups-title').id = `sale-${a.id}-groups`;
    el(node, '.groups-admin .table-scroll').setAttribute('aria-labelledby', `sale-${a.id}-groups sale-${a.id}-name`);
    // The groups are read only while the card can be seen: one request per such sale
    // every groupsEvery, and at once when it scrolls into view.
    onScreen(node, (visible) => {
      entry.onScreen = visible;
      if (visible) fetchGroups(entry);
    });
  }
  el(node, '.set-limit').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const value = el(node, '.limit-input').value.trim();
    if (value === '') return showPatchError(entry, 'per_user_limit', 'Enter the new per-user limit.');
    return patch(entry, { per_user_limit: Number(value) }, (b) => `Per-user limit set to ${b.per_user_limit}.`);
  });
  el(node, '.add-stock').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const value = el(node, '.stock-input').value.trim();
    if (value === '') return showPatchError(entry, 'add_stock', 'Enter how many units to add.');
    const variant = entry.data.variants ? el(node, '.stock-variant').value : '';
    return patch(entry, { add_stock: variant ? { [variant]: Number(value) } : Number(value) },
      (b) => `Added ${units(Number(value))}${variant ? ` of ${variant}` : ''}: ${b.stock_available} of ${b.stock_total} available.`);
  });
  el(node, '.end-button').addEventListener('click', () => {
    setText(el(node, '.confirm-text'), `End “${entry.data.name}” now? Buyers can no longer buy from it.`);
    el(node, '.end-button').hidden = true;
    el(node, '.confirm').hidden = false;
    el(node, '.end-no').focus();
  });
  el(node, '.rebuild-button').addEventListener('click', async () => {
    const res = await api('POST', `/api/v1/admin/activities/${entry.data.id}/rebuild`, { token: session.token });
    if (refused(res)) return;
    const message = el(node, ':scope > .message');
    if (res.ok) {
      entry.stats = res.data;
      setText(message, `Redis holds the sale: ${res.data.stock_available} of ${res.data.stock_total} available.`);
      message.className = 'message ok';
      renderSale(entry);
    } else {
      setText(message, `Could not rebuild: ${res.error.message}`);
      message.className = 'message error';
    }
  });
  wireRoom(entry, patch);
  wireOrders(entry, () => session.token, refused);
  wireCodes(entry, () => session.token, refused, patch);
  wireFunnel(entry, () => session.token, refused);
  el(node, '.end-no').addEventListener('click', () => closeConfirm(entry));
  el(node, '.end-yes').addEventListener('click', async () => {
    closeConfirm(entry);
    await patch(entry, { ends_at: new Date(clock.now()).toISOString() }, () => 'The sale has ended.');
  });
  return entry;
}

function closeConfirm(entry) {
  el(entry.node, '.confirm').hidden = true;
  el(entry.node, '.end-button').hidden = false;
  el(entry.node, '.end-button').focus();
}

// patchErrorSlot is where a PATCH's validation message goes, by the field it names.
const patchErrorSlot = { per_user_limit: '.limit-error', add_stock: '.stock-error', ends_at: '.end-error',
  waiting_room: '.room-error', admit_per_second: '.room-error', challenge: '.room-error',
  early_access_seconds: '.early-error' };
const patchInput = { per_user_limit: '.limit-input', add_stock: '.stock-input', admit_per_second: '.room-rate',
  early_access_seconds: '.early-input' };

function clearPatchErrors(entry) {
  for (const [field, slot] of Object.entries(patchErrorSlot)) {
    setText(el(entry.node, slot), '');
    if (patchInput[field]) el(entry.node, patchInput[field]).removeAttribute('aria-invalid');
  }
  setText(el(entry.node, ':scope > .message'), '');
}

function showPatchError(entry, field, message) {
  clearPatchErrors(entry);
  const slot = patchErrorSlot[field];
  if (slot) {
    setText(el(entry.node, slot), message);
    if (patchInput[field]) {
      el(entry.node, patchInput[field]).setAttribute('aria-invalid', 'true');
      el(entry.node, patchInput[field]).focus();
    }
    return;
  }
  const msg = el(entry.node, ':scope > .message');
  msg.className = 'message error';
  setText(msg, message);
}

async function patch(entry, body, done) {
  if (entry.busy) return;
  entry.busy = true;
  clearPatchErrors(entry);
  const res = await api('PATCH', `/api/v1/admin/activities/${entry.data.id}`, { token: session.token, body });
  entry.busy = false;
  if (res.ok) {
    entry.data = res.data;
    el(entry.node, '.limit-input').value = '';
    el(entry.node, '.stock-input').value = '';
    renderSale(entry);
    const msg = el(entry.node, ':scope > .message');
    msg.className = 'message ok';
    setText(msg, done(res.data));
    salesPoll.kick();
    return;
  }
  if (refused(res)) return;
  const field = res.error.code === 'invalid_request' ? fieldOf(res.error.message) : '';
  showPatchError(entry, field, res.error.message);
}

// chartSale adds the sale's latest stats to its chart, and notes when it sold out.
function chartSale(entry, at) {
  const st = entry.stats;
  if (!entry.chart) {
    entry.chart = liveChart(el(entry.node, '.sale-chart'), [
      { label: 'Available', color: '#1b7f3b' },
      { label: 'Sold', color: '#0b5cd5' },
      { label: 'Purchases/s', color: '#c2410c', scale: 'rate' },
      { label: 'Queued', color: '#6b7280', scale: 'rate' },
    ]);
  }
  entry.chart.add(at, [st.stock_available, st.sold, entry.rate(at, st.sold), (st.orders || {}).queued || 0]);
  if (st.stock_available === 0 && !entry.soldOutAt) entry.soldOutAt = at;
  if (st.stock_available > 0) entry.soldOutAt = 0;
}

// archive shows an archived sale as MySQL keeps it: a note, no chart (its figures no
// longer move) and none of the actions that would change it (the API refuses them).
function archive(entry) {
  const at = entry.data.archived_at;
  const note = el(entry.node, '.archived-note');
  note.hidden = !at;
  if (!at) return;
  setText(note, `Archived ${when(at)}: the sale is over, Redis holds nothing of it, and these figures come from MySQL.`);
  el(entry.node, '.controls').hidden = true;
  el(entry.node, '.line-admin').hidden = true;
  for (const fig of entry.node.querySelectorAll('.chart-figure')) fig.hidden = true;
  for (const name of ['chart', 'answers', 'lineChart']) {
    if (entry[name]) entry[name].plot.destroy();
    entry[name] = null;
  }
}

function figure(entry, selector, value) {
  setText(el(entry.node, selector), value === undefined || value === null ? '…' : Number(value).toLocaleString('en-US'));
}

function renderSale(entry) {
  const a = entry.data;
  const st = entry.stats;
  const node = entry.node;
  const now = clock.now();
  let status = a.status;
  if (status === 'upcoming' && now >= Date.parse(a.starts_at)) status = 'active';
  if (status !== 'ended' && now >= Date.parse(a.ends_at)) status = 'ended';
  if (a.archived_at) status = 'archived';
  node.dataset.status = status;
  setText(el(node, '.sale-name'), `${a.id}. ${a.name}`);
  const badge = el(node, '.sale-status');
  setText(badge, statusLabel(status));
  badge.className = `badge sale-status status-${status}`;
  setText(el(node, '.product'), `${a.product_name}${a.external_ref ? ` (the shop's ${a.external_ref})` : ''} at ${money(a.price_cents)}; `
    + `pay window ${duration(a.pay_window_seconds * 1000)}`);
  let times = `${when(a.starts_at)} to ${when(a.ends_at)}`;
  if (status === 'upcoming') times += `; starts in ${duration(Date.parse(a.starts_at) - now)}`;
  else if (status !== 'ended') times += `; ends in ${duration(Date.parse(a.ends_at) - now)}`;
  setText(el(node, '.times'), times);
  figure(entry, '.f-available', st ? st.stock_available : a.stock_available);
  figure(entry, '.f-total', st ? st.stock_total : a.stock_total);
  figure(entry, '.f-limit', a.per_user_limit);
  figure(entry, '.f-waitlist', st && st.waitlist);
  figure(entry, '.f-sold', st && st.sold);
  const counts = (st && st.orders) || {};
  figure(entry, '.f-queued', st && counts.queued);
  figure(entry, '.f-created', st && counts.created);
  figure(entry, '.f-paid', st && counts.paid);
  figure(entry, '.f-cancelled', st && counts.cancelled);
  figure(entry, '.f-failed', st && counts.failed);
  figure(entry, '.f-refunded', st && counts.refunded);
  figure(entry, '.f-off-sale', st && st.off_sale);
  const group = a.kind === 'group';
  const cap = a.per_user_participations;
  let parts = cap ? ` At most ${cap} ${cap === 1 ? 'participation' : 'participations'} per buyer.` : '';
  if (a.stock_buckets > 1) parts += ` Stock and buyers in ${a.stock_buckets} buckets (Redis slots); the figures add them up.`;
  setText(el(node, '.kind-text'), group
    ? `Group-buy: groups of ${a.group_size}, each with ${duration(a.group_window_seconds * 1000)} to fill from its first seat.${parts}`
    : parts.trim());
  el(node, '.figures .group-only').hidden = !group;
  el(node, '.group-answers-note').hidden = !group;
  figure(entry, '.f-grouping', st && counts.grouping);
  renderVariants(entry, (st && st.variants) || a.variants);
  el(node, '.groups-admin').hidden = !group;
  if (group) renderGroups(entry);
  const ended = status === 'ended' || status === 'archived';
  el(node, '.end').hidden = ended;
  archive(entry);
  const start = Date.parse(a.starts_at);
  setText(el(node, '.sellout'), entry.soldOutAt && entry.soldOutAt >= start
    ? `Sold out ${duration(entry.soldOutAt - start)} after the start (within 2 s).` : '');
  renderRoom(entry);
  renderCodes(entry);
}

// renderVariants lists a sale of variants' variants with their units left (from the
// stats, read every 2 s), and offers them to the add-stock form.
function renderVariants(entry, vs) {
  const node = entry.node;
  el(node, '.variants-admin').hidden = !vs;
  const select = el(node, '.stock-variant');
  select.hidden = !vs;
  if (!vs) return;
  const names = vs.map((v) => v.name);
  if (select.dataset.names !== JSON.stringify(names)) {
    select.dataset.names = JSON.stringify(names);
    select.replaceChildren(...names.map((n) => Object.assign(document.createElement('option'), { value: n, textContent: n })));
  }
  const sku = new Map((entry.data.variants || []).map((v) => [v.name, v.external_ref || '']));
  const body = el(node, '.variants-table tbody');
  while (body.children.length > vs.length) body.lastElementChild.remove();
  vs.forEach((v, i) => {
    let row = body.children[i];
    if (!row) {
      row = document.createElement('tr');
      row.append(...[0, 1, 2, 3, 4].map(() => document.createElement('td')));
      body.append(row);
    }
    const cells = row.children;
    setText(cells[0], v.name);
    setText(cells[1], sku.get(v.name) || '—');
    setText(cells[2], Number(v.stock_available).toLocaleString('en-US'));
    setText(cells[3], Number(v.stock_total).toLocaleString('en-US'));
    setText(cells[4], statusLabel(v.status));
    row.dataset.status = v.status;
  });
}

// ---- a group sale's groups ----

// groupsSettled reports a group sale that can no longer change: ended, and no group
// open at a reading taken well after the end (a group shows in MySQL with its first
// stored seat, within a second; open ones fail when their window passes).
function groupsSettled(entry) {
  const ends = Date.parse(entry.data.ends_at);
  return entry.groups !== null && entry.groupsAt > ends + 10000 && clock.now() >= ends
    && entry.groups.every((g) => g.status !== 'open');
}

// fetchGroups reads a group sale's groups, unless they were read less than
// groupsEvery ago, a read is in flight, or nothing can change any more.
async function fetchGroups(entry) {
  const now = clock.now();
  if (entry.data.kind !== 'group' || entry.groupsBusy || now - entry.groupsAt < groupsEvery - 200
    || groupsSettled(entry)) return;
  entry.groupsBusy = true;
  const res = await api('GET', `/api/v1/admin/activities/${entry.data.id}/groups`, { token: session.token });
  entry.groupsBusy = false;
  entry.groupsAt = clock.now();
  if (res.ok) {
    entry.groups = res.data.groups || [];
    entry.groupsError = '';
  } else {
    if (refused(res)) return;
    entry.groupsError = `Could not load the groups: ${res.error.message} Trying again…`;
  }
  renderGroups(entry);
}

// groupTimeLeft is what the admin reads in a group's "Time left" column.
function groupTimeLeft(g) {
  if (g.status === 'complete') return 'Filled';
  if (g.status === 'failed') return `Did not fill by ${when(g.expires_at)}`;
  if (groupWindowOver(g)) return 'Window passed: failing';
  return `Closes in ${duration(Date.parse(g.expires_at) - clock.now())}`;
}

function renderGroups(entry) {
  const node = entry.node;
  const note = el(node, '.groups-note');
  const table = el(node, '.groups-table');
  if (entry.groups === null) {
    setText(note, entry.groupsError || 'Loading the groups…');
    table.hidden = true;
    return;
  }
  const list = entry.groups;
  const count = (status) => list.filter((g) => g.status === status).length;
  let text = list.length === 0
    ? 'No group yet: a buyer opens one with the first seat.'
    : `${list.length} ${list.length === 1 ? 'group' : 'groups'}: ${count('open')} open, ${count('complete')} complete, ${count('failed')} failed.`;
  if (list.length > maxGroupRows) text += ` The ${maxGroupRows} newest are listed.`;
  if (entry.groupsError) text = `${entry.groupsError} ${text}`;
  setText(note, text);
  table.hidden = list.length === 0;
  const parent = el(table, 'tbody');
  const seen = new Set();
  list.slice(0, maxGroupRows).forEach((g, i) => {
    seen.add(g.id);
    let row = entry.groupRows.get(g.id);
    if (!row) {
      row = document.createElement('tr');
      row.dataset.groupId = g.id;
      for (let c = 0; c < 5; c++) row.appendChild(document.createElement('td'));
      const badge = document.createElement('span');
      row.cells[1].append(badge);
      entry.groupRows.set(g.id, row);
    }
    row.dataset.status = g.status;
    const members = (g.member_buyers || []).map((m) => m.buyer);
    setText(row.cells[0], g.id);
    const badge = row.cells[1].firstChild;
    setText(badge, statusLabel(g.status));
    badge.className = `badge status-${g.status}`;
    setText(row.cells[2], `${g.members} of ${g.size}`);
    setText(row.cells[3], members.length ? members.join(', ') : '—');
    setText(row.cells[4], groupTimeLeft(g));
    if (parent.children[i] !== row) parent.insertBefore(row, parent.children[i] || null);
  });
  for (const [id, row] of entry.groupRows) {
    if (!seen.has(id)) {
      row.remove();
      entry.groupRows.delete(id);
    }
  }
}

function showSales(list) {
  const parent = $('sales');
  const seen = new Set();
  list.forEach((a, i) => {
    seen.add(a.id);
    let entry = sales.get(a.id);
    if (!entry) {
      entry = newSaleCard(a);
      sales.set(a.id, entry);
    }
    if (!entry.busy) entry.data = a;
    renderSale(entry);
    if (parent.children[i] !== entry.node) parent.insertBefore(entry.node, parent.children[i] || null);
  });
  for (const [id, entry] of sales) {
    if (!seen.has(id)) {
      offScreen(entry.node);
      entry.node.remove();
      sales.delete(id);
    }
  }
  let note = list.length === 0 ? 'No sales yet: create one above.' : '';
  if (list.length > maxStatsSales) note = `Order figures refresh for the ${maxStatsSales} newest sales.`;
  setText($('sales-note'), note);
}

const salesPoll = poller(async () => {
  if (!session.token || $('console').hidden) return 2000;
  const res = await activities('/api/v1/admin/activities', { token: session.token });
  if (!res.ok) {
    if (refused(res)) return 2000;
    if (res.status === 429) return (res.retryAfter || 1) * 1000;
    setText($('sales-note'), `Could not load the sales: ${res.error.message} Trying again…`);
    return 5000;
  }
  const list = res.data.activities || [];
  showSales(list);
  const shown = list.slice(0, maxStatsSales);
  const groups = Promise.all(shown.map((a) => sales.get(a.id))
    .filter((entry) => entry && entry.onScreen).map(fetchGroups));
  // An archived sale's figures no longer move: read once.
  const live = shown.filter((a) => !a.archived_at || !(sales.get(a.id) || {}).stats);
  const stats = await Promise.all(live.map((a) => api('GET', `/api/v1/admin/activities/${a.id}/stats`, { token: session.token })));
  const at = clock.now();
  live.forEach((a, i) => {
    const entry = sales.get(a.id);
    if (entry && stats[i].ok) {
      entry.stats = stats[i].data;
      if (!a.archived_at) chartSale(entry, at);
      renderSale(entry);
    }
  });
  await Promise.all([groups, readLines(shown.map((a) => sales.get(a.id)), session.token, at)]);
  return 2000;
});

// ---- processes ----

// figureText names a heartbeat's live figures, such as "12.5 purchases/s".
function figureText(figures) {
  const names = {
    requests_per_second: 'requests/s', purchases_per_second: 'purchases/s',
    answers_409_per_second: '409/s', answers_429_per_second: '429/s', answers_503_per_second: '503/s',
    orders_written_per_second: 'orders written/s', transactions_per_second: 'transactions/s',
    queue_depth: 'tasks queued', webhooks_delivered_per_second: 'webhooks delivered/s',
  };
  return Object.entries(figures || {})
    .map(([k, v]) => `${Number(v).toLocaleString('en-US')} ${names[k] || k}`)
    .join(', ');
}

// The answers chart sums the API instances' heartbeat figures.
let answersChart = null;
const outcomes = [['202', '#1b7f3b'], ['409', '#0b5cd5'], ['429', '#b45309'], ['503', '#b91c1c']];

function chartAnswers(list) {
  if (!answersChart) {
    answersChart = liveChart($('answers-chart'), outcomes.map(([code, color]) => ({ label: code, color })));
  }
  const figure = (code) => (code === '202' ? 'purchases_per_second' : `answers_${code}_per_second`);
  const sum = (code) => list.filter((p) => p.kind === 'api')
    .reduce((n, p) => n + ((p.figures || {})[figure(code)] || 0), 0);
  answersChart.add(clock.now(), outcomes.map(([code]) => Math.round(sum(code) * 10) / 10));
}

// saleOutcomes are the keys of a heartbeat's per-sale answers, as the sale's answers
// chart draws them.
const saleOutcomes = [
  ['202', '202', '#1b7f3b'], ['409_sold_out', '409 sold out', '#0b5cd5'],
  ['409_limit_exceeded', '409 limit', '#7c3aed'], ['409_other', '409 other', '#6b7280'],
  ['429', '429', '#b45309'], ['503', '503', '#b91c1c'],
];

// chartSaleAnswers sums the APIs' per-sale answers and adds them to each charted
// sale's answers chart (0 for a sale no API answered in its last interval).
function chartSaleAnswers(list) {
  const bySale = new Map();
  for (const p of list) {
    if (p.kind !== 'api') continue;
    for (const sale of p.sales || []) {
      const sum = bySale.get(sale.activity_id) || {};
      for (const [k, v] of Object.entries(sale.answers_per_second || {})) sum[k] = (sum[k] || 0) + v;
      bySale.set(sale.activity_id, sum);
    }
  }
  const at = clock.now();
  for (const entry of sales.values()) {
    if (!entry.chart) continue; // only the sales whose stats are charted
    if (!entry.answers) {
      entry.answers = liveChart(el(entry.node, '.sale-answers-chart'),
        saleOutcomes.map(([, label, color]) => ({ label, color })));
    }
    const sum = bySale.get(entry.data.id) || {};
    entry.answers.add(at, saleOutcomes.map(([key]) => Math.round((sum[key] || 0) * 10) / 10));
  }
}

// trends are the heartbeat figures each kind of process draws over time in its row.
const trends = {
  api: [
    { label: 'requests/s', color: '#0b5cd5', figure: 'requests_per_second' },
    { label: 'purchases/s', color: '#1b7f3b', figure: 'purchases_per_second' },
  ],
  worker: [
    { label: 'orders written/s', color: '#7c3aed', figure: 'orders_written_per_second' },
    { label: 'transactions/s', color: '#c2410c', figure: 'transactions_per_second' },
  ],
};

const processes = new Map(); // instance id -> {row, cells, trend, lastSeen}

// processRow returns the instance's row, made at its first heartbeat and kept while it
// is listed, so its sparkline gathers one point per heartbeat.
function processRow(p) {
  let proc = processes.get(p.id);
  if (!proc) {
    const row = document.createElement('tr');
    row.dataset.kind = p.kind;
    row.dataset.id = p.id;
    const cells = Array.from({ length: 7 }, () => row.appendChild(document.createElement('td')));
    const spark = document.createElement('div');
    spark.className = 'sparkline';
    cells[6].append(spark);
    const lines = trends[p.kind] || trends.api;
    const name = `${p.kind === 'api' ? 'API' : 'Worker'} ${p.addr}`;
    const trend = sparkline(spark, lines,
      (values) => `${name} at its last heartbeat: ${lines.map((l, i) => `${values[i]} ${l.label}`).join(', ')}`);
    proc = { row, cells, lines, trend, lastSeen: '' };
    processes.set(p.id, proc);
  }
  return proc;
}

function showInstances(list) {
  chartAnswers(list);
  chartSaleAnswers(list);
  const now = clock.now();
  const parent = $('instances-body');
  const seen = new Set();
  list.forEach((p, i) => {
    seen.add(p.id);
    const proc = processRow(p);
    const texts = [p.kind === 'api' ? 'API' : 'Worker', p.addr, p.version,
      duration(now - Date.parse(p.started_at)), `${Math.max(0, Math.round((now - Date.parse(p.last_seen)) / 1000))} s ago`,
      figureText(p.figures)];
    texts.forEach((text, c) => setText(proc.cells[c], text));
    if (p.last_seen !== proc.lastSeen) { // a new heartbeat
      proc.lastSeen = p.last_seen;
      proc.trend.add(Date.parse(p.last_seen), proc.lines.map((l) => (p.figures || {})[l.figure] || 0));
    }
    if (parent.children[i] !== proc.row) parent.insertBefore(proc.row, parent.children[i] || null);
  });
  for (const [id, proc] of processes) {
    if (!seen.has(id)) {
      proc.row.remove();
      processes.delete(id);
    }
  }
  $('instances').hidden = list.length === 0;
  $('instances-trend-help').hidden = list.length === 0;
  const apis = list.filter((p) => p.kind === 'api').length;
  setText($('instances-note'), list.length === 0 ? 'No process has sent a heartbeat.'
    : `${apis} API ${apis === 1 ? 'instance' : 'instances'} and ${list.length - apis} ${list.length - apis === 1 ? 'worker' : 'workers'} alive.`);
}

const instancesPoll = poller(async () => {
  if (!session.token || $('console').hidden) return 2000;
  const res = await api('GET', '/api/v1/admin/instances', { token: session.token });
  if (res.ok) {
    showInstances(res.data.instances || []);
    return 2000;
  }
  if (refused(res)) return 2000;
  if (res.status === 429) return (res.retryAfter || 1) * 1000;
  setText($('instances-note'), `Could not load the processes: ${res.error.message} Trying again…`);
  return 5000;
});

const webhooksPoll = webhooksPoller(session, refused);

setInterval(() => {
  for (const entry of sales.values()) renderSale(entry);
}, 1000);

// ---- start ----

if (session.token) {
  signIn(session.token);
} else {
  showSignedIn(false);
}
