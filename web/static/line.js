// The waiting room on the buyer's page: a sale with waiting_room shows "Join the line"
// (solving the ALTCHA proof-of-work first when the sale asks for one, with the widget
// vendored under vendor/altcha and its progress shown), then the ticket, read every
// second: place, people ahead, units left, the countdown to the lottery at the start,
// "your turn: buy within mm:ss" once admitted, and sold out as soon as it happens. The
// purchase of an admitted buyer carries the ticket's pass (X-Sale-Pass).
import './vendor/altcha/altcha.js';
import { api, clock, duration, el, setText, poller } from './common.js';

// activity id -> {ticket, at, busy, error, solving, solvingSince, widget}
const lines = new Map();
let session = null;
let onChange = () => {};

// setupLines gives the module the page's session and what to call when a ticket
// changes (the page re-renders its cards).
export function setupLines(s, changed) {
  session = s;
  onChange = changed;
}

const lineOf = (id) => {
  let l = lines.get(id);
  if (!l) {
    l = { ticket: null, at: 0, busy: false, error: '', solving: false, solvingSince: 0, widget: null, missing: false };
    lines.set(id, l);
  }
  return l;
};

// admittedPass returns the pass of an admitted, unexpired ticket of the sale, or ''.
export function admittedPass(activityId) {
  const t = lines.get(activityId)?.ticket;
  if (!t || t.status !== 'admitted' || !t.pass) return '';
  return clock.now() < Date.parse(t.pass_expires_at) ? t.pass : '';
}

const plural = (n, one, many) => `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;

// mmss writes a duration as m:ss.
function mmss(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

// lineText is the sentence a ticket says now, and its kind (for the style). status is
// the sale's own (upcoming, active, sold_out, ended), which a ticket of an admitted
// buyer does not repeat.
function lineText(a, t, status) {
  const now = clock.now();
  const start = Date.parse(a.starts_at);
  if (t.status === 'sold_out' || (t.status === 'admitted' && (status === 'sold_out' || status === 'ended'))) {
    return { kind: 'error', text: status === 'ended' || now >= Date.parse(a.ends_at) ? 'The sale has ended: the line is closed.' : 'Sold out: every unit has been taken. The line is closed.' };
  }
  switch (t.status) {
    case 'expired':
      return { kind: 'error', text: 'Your turn has passed: the pass expired before you bought.' };
    case 'admitted': {
      // now is the server's time within half a second: never more than the pass's life
      // (its expiry is whole seconds, rounded up: up to a second past the TTL).
      const expires = Date.parse(t.pass_expires_at);
      const left = Math.min(expires - now, t.admitted_at ? expires - Date.parse(t.admitted_at) : Infinity,
        a.pass_ttl_seconds ? a.pass_ttl_seconds * 1000 : Infinity);
      if (left <= 0) return { kind: 'state', text: 'Your pass has expired.' };
      return { kind: 'ok', text: `Your turn: buy within ${mmss(left)}.` };
    }
  }
  const units = plural(t.units_left, 'unit', 'units');
  if (now < start) {
    // Before the lottery the place is not decided: say so rather than a number.
    return { kind: 'state', text: `You are in the line. The lottery in ${mmss(start - now)} places everyone `
      + `who joined before the start in a random order, so joining early gives no edge. ${units} for sale.` };
  }
  let text = [`You are number ${t.position.toLocaleString('en-US')} in line`,
    t.ahead === 0 ? 'nobody is ahead of you' : `${plural(t.ahead, 'person', 'people')} ahead of you`,
    `${units} left`].join(', ') + '.';
  if (t.estimated_wait_seconds > 0) text += ` Estimated wait: about ${duration(t.estimated_wait_seconds * 1000)}.`;
  return { kind: 'state', text };
}

// renderLine draws the waiting room of a sale card and reports whether the buyer may
// buy now (admitted, the pass unexpired). status is the sale's; the line can be
// joined from prequeue_seconds before the start until the sale sells out or ends.
export function renderLine(entry, status) {
  const a = entry.data;
  const box = el(entry.node, '.line-box');
  box.hidden = !a.waiting_room;
  if (!a.waiting_room) return true;
  const l = lineOf(a.id);
  setText(el(box, '.line-rule'), `Waiting room: join the line to buy. Everyone who joins before the start is `
    + `placed by a lottery (joining early gives no edge); later buyers follow in the order they join. `
    + `The line lets ${plural(a.admit_per_second || 0, 'buyer', 'buyers')} in per second; once it is your turn, `
    + `you have ${duration((a.pass_ttl_seconds || 300) * 1000)} to buy.`);
  const join = el(box, '.join-line');
  join.hidden = Boolean(l.ticket) || !session.token;
  join.disabled = l.busy || l.solving || !['upcoming', 'active'].includes(status);
  setText(join, l.solving ? 'Solving the challenge…' : (l.busy ? 'Joining…' : 'Join the line'));
  const solving = el(box, '.challenge');
  solving.hidden = !l.solving;
  if (l.solving) {
    setText(el(box, '.challenge-progress'), `Proving you are not a bot: your device is solving a small puzzle `
      + `(${Math.floor((Date.now() - l.solvingSince) / 1000)} s so far, about a second on a phone).`);
  }
  const state = el(box, '.line-state');
  const said = l.ticket ? lineText(a, l.ticket, status) : (l.error ? { kind: 'error', text: l.error } : null);
  setText(state, said ? said.text : '');
  state.className = `line-state ${said ? said.kind : ''}`;
  entry.node.dataset.line = l.ticket ? l.ticket.status : '';
  return admittedPass(a.id) !== '';
}

// wireLine connects the card's Join button.
export function wireLine(entry) {
  el(entry.node, '.join-line').addEventListener('click', () => join(entry));
}

// joinError is the sentence for a refused join.
function joinError(res, a) {
  switch (res.error.code) {
    case 'line_not_open':
      return `The line opens ${duration((a.prequeue_seconds || 0) * 1000)} before the start. Come back then.`;
    case 'sold_out':
      return 'Sold out: every unit has been taken. The line is closed.';
    case 'sale_ended':
      return 'The sale has ended: the line is closed.';
    case 'challenge_failed':
      return 'The puzzle was not accepted (expired or used before). Press Join the line to try again.';
    case 'rate_limited':
      return `Too many requests: wait ${res.retryAfter || 1} seconds, then try again.`;
    case 'network':
      return 'Could not reach the server. Press Join the line again.';
    default:
      return res.error.message;
  }
}

async function join(entry) {
  const a = entry.data;
  const l = lineOf(a.id);
  if (l.busy || l.solving) return;
  l.error = '';
  if (a.challenge) {
    solve(entry);
    return;
  }
  await send(entry, {});
}

// solve shows the ALTCHA widget, which fetches a challenge and solves it in a Web
// Worker; its solution then joins the line.
function solve(entry) {
  const a = entry.data;
  const l = lineOf(a.id);
  l.solving = true;
  l.solvingSince = Date.now();
  const widget = document.createElement('altcha-widget');
  widget.setAttribute('challengeurl', `/api/v1/activities/${a.id}/line/challenge`);
  widget.setAttribute('workerurl', '/static/vendor/altcha/worker.js');
  widget.setAttribute('auto', 'onload');
  widget.setAttribute('hidefooter', '');
  widget.setAttribute('hidelogo', '');
  widget.addEventListener('statechange', (ev) => {
    const { state, payload } = ev.detail || {};
    if (state === 'verified' && payload) {
      finishSolving(entry);
      send(entry, { altcha: payload });
    } else if (state === 'error' || state === 'expired') {
      finishSolving(entry);
      l.error = 'The puzzle could not be solved. Press Join the line to try again.';
      onChange(entry);
    }
  });
  el(entry.node, '.challenge-widget').replaceChildren(widget);
  l.widget = widget;
  onChange(entry);
}

function finishSolving(entry) {
  const l = lineOf(entry.data.id);
  l.solving = false;
  if (l.widget) l.widget.remove();
  l.widget = null;
}

async function send(entry, body) {
  const a = entry.data;
  const l = lineOf(a.id);
  l.busy = true;
  onChange(entry);
  const res = await api('POST', `/api/v1/activities/${a.id}/line`, { token: session.token, body });
  l.busy = false;
  if (res.ok) {
    l.ticket = res.data;
    l.at = Date.now();
    ticketsPoll.kick();
  } else {
    l.error = joinError(res, a);
  }
  onChange(entry);
  if (res.ok) el(entry.node, '.line-state').focus?.();
}

// refreshTickets reads the ticket of every waiting-room sale the buyer may have joined.
let cards = () => [];
export function trackCards(list) {
  cards = list;
}

const ticketsPoll = poller(async () => {
  if (!session || !session.token) return 2000;
  let fast = false;
  for (const entry of cards()) {
    const a = entry.data;
    if (!a.waiting_room) continue;
    const l = lineOf(a.id);
    if (l.missing && !l.ticket) continue; // never joined: nothing to read until a join
    const res = await api('GET', `/api/v1/activities/${a.id}/line`, { token: session.token });
    if (res.ok) {
      l.ticket = res.data;
      l.at = Date.now();
      l.missing = false;
      fast ||= ['waiting', 'admitted'].includes(res.data.status);
    } else if (res.status === 404) {
      // A place the line no longer knows (lost with a Redis master's last writes in a
      // failover): say so, and offer the join again.
      if (l.ticket) l.error = 'Your place in line was lost by the server: join the line again.';
      l.ticket = null;
      l.missing = true;
    } else if (res.status === 429) {
      return (res.retryAfter || 1) * 1000;
    }
    onChange(entry);
  }
  return fast ? 1000 : 3000;
});

// startLines begins reading tickets; forgetLines drops them (sign-out).
export function startLines() {
  ticketsPoll.kick();
}

export function forgetLines() {
  for (const l of lines.values()) {
    l.ticket = null;
    l.missing = false;
    l.error = '';
  }
}
