// The waiting room on the buyer's page: a sale with waiting_room shows "Join the line"
// (solving the ALTCHA proof-of-work first when the sale asks for one, with the widget
// vendored under vendor/altcha and its progress shown), then the ticket: place, people
// ahead, units left, the countdown to the lottery at the start, "your turn: buy within
// mm:ss" once admitted, and sold out as soon as it happens. The purchase of an admitted
// buyer carries the ticket's pass (X-Sale-Pass).
//
// A waiting buyer costs the service nothing per poll: the page reads its ticket (with
// the token) when the page opens and on a join, then polls the line's public status
// (no token, the same answer for everyone, which the front or a CDN answers) every 1 to
// 1.5 s, and reads the ticket once more, for the pass, when the status's
// admitted_through reaches the ticket's place.
import './vendor/altcha/altcha.js';
import { api, clock, duration, el, setText, poller } from './common.js';
import { codeHeaders, codeError } from './early.js';

// A code holder's ticket has a place below 3e15 (places of bands 1 and 2): the line
// admits it from the early window's opening, not from the start.
const memberPlace = (t) => t.place >= 1e15 && t.place < 3e15;

// activity id -> {ticket, at, busy, error, solving, solvingSince, widget, missing,
// checked (the ticket was read once), due (to be read again: the status admitted it),
// status (the line's public status), afterStart (the ticket was read after the start,
// when its position is final)}
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
    l = { ticket: null, at: 0, busy: false, error: '', solving: false, solvingSince: 0, widget: null, missing: false,
      checked: false, due: false, status: null, afterStart: false };
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

// shown is the ticket as it stands now: a waiting ticket reads sold_out while the
// line's status says the line is closed, and waiting again if it opens again.
function shown(l) {
  const t = l.ticket;
  if (!t || t.status !== 'waiting' && t.status !== 'sold_out' || !l.status) return t;
  const closed = l.status.state === 'sold_out' || l.status.state === 'ended';
  return { ...t, status: closed ? 'sold_out' : 'waiting', units_left: l.status.units_left };
}

// lineText is the sentence a ticket says now, and its kind (for the style). status is
// the sale's own (upcoming, active, sold_out, ended), which a ticket of an admitted
// buyer does not repeat.
function lineText(a, l, status) {
  const t = shown(l);
  const now = clock.now();
  const member = memberPlace(t);
  const start = Date.parse(member ? a.early_access_at : a.starts_at);
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
    if (member) {
      return { kind: 'state', text: `You are in the line with your access code, before every buyer without one. `
        + `The line lets code holders in from the early window, in ${mmss(start - now)}, in a random order among `
        + `those who joined before it. ${units} for sale.` };
    }
    return { kind: 'state', text: `You are in the line. The lottery in ${mmss(start - now)} places everyone `
      + `who joined before the start in a random order, so joining early gives no edge. ${units} for sale.` };
  }
  const st = l.status;
  if (!l.afterStart) {
    // Read before the lottery: the place is drawn, its rank among the others is not known here.
    const admitted = st ? `${plural(st.admitted, 'buyer', 'buyers')} of ${st.joined.toLocaleString('en-US')} let in so far, ` : '';
    return { kind: 'state', text: `You are in the line, placed by the lottery. ${admitted}${units} left.` };
  }
  // The position read after the start is final; those admitted since were ahead.
  const ahead = Math.max(0, t.position - 1 - (st ? st.admitted : t.position - 1 - t.ahead));
  let text = [`You are number ${t.position.toLocaleString('en-US')} in line`,
    ahead === 0 ? 'nobody is ahead of you' : `${plural(ahead, 'person', 'people')} ahead of you`,
    `${units} left`].join(', ') + '.';
  const rate = (st && st.admit_per_second) || a.admit_per_second;
  if (ahead > 0 && rate > 0) text += ` Estimated wait: about ${duration(Math.ceil(ahead / rate) * 1000)}.`;
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
    + `you have ${duration((a.pass_ttl_seconds || 300) * 1000)} to buy.`
    + (a.early_access_seconds > 0 ? ' Buyers who join with an access code go before everyone else, and are let in '
      + 'from the early window.' : ''));
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
  const said = l.ticket ? lineText(a, l, status) : (l.error ? { kind: 'error', text: l.error } : null);
  setText(state, said ? said.text : '');
  state.className = `line-state ${said ? said.kind : ''}`;
  entry.node.dataset.line = l.ticket ? shown(l).status : '';
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
    case 'sale_not_started':
      return 'Early access: only buyers with an access code join the line now. Enter your code above, or come back '
        + 'at the start.';
    case 'access_code_taken':
    case 'access_code_invalid':
      return codeError(res);
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
  const res = await api('POST', `/api/v1/activities/${a.id}/line`, { token: session.token, body, headers: codeHeaders(a) });
  l.busy = false;
  if (res.ok) {
    took(l, res.data, a);
    statusPoll.kick();
  } else {
    l.error = joinError(res, a);
  }
  onChange(entry);
  if (res.ok) el(entry.node, '.line-state').focus?.();
}

// took keeps a ticket of the sale a just read.
function took(l, t, a) {
  l.ticket = t;
  l.at = Date.now();
  l.missing = false;
  l.checked = true;
  l.due = false;
  l.afterStart = clock.now() >= Date.parse(memberPlace(t) ? a.early_access_at : a.starts_at);
}

let cards = () => [];
export function trackCards(list) {
  cards = list;
}

// ticketsPoll reads, with the token, the tickets the page needs: each waiting-room
// sale's once (has the buyer joined it?), and a waiting one again when the line's
// status has admitted its place (for the pass).
const ticketsPoll = poller(async () => {
  if (!session || !session.token) return 2000;
  for (const entry of cards()) {
    const a = entry.data;
    if (!a.waiting_room) continue;
    const l = lineOf(a.id);
    if (l.checked && !l.due) continue;
    const before = l.at;
    const res = await api('GET', `/api/v1/activities/${a.id}/line`, { token: session.token });
    if (l.at !== before) continue; // a join answered meanwhile: its ticket is newer
    if (res.ok) {
      took(l, res.data, a);
      statusPoll.kick();
    } else if (res.status === 404) {
      // A place the line no longer knows (lost with a Redis master's last writes in a
      // failover): say so, and offer the join again.
      if (l.ticket) l.error = 'Your place in line was lost by the server: join the line again.';
      l.ticket = null;
      l.missing = true;
      l.checked = true;
      l.due = false;
    } else if (res.status === 429) {
      return (res.retryAfter || 1) * 1000;
    } else {
      return 2000; // asked again in a moment
    }
    onChange(entry);
  }
  return 1000;
});

// statusPoll reads the public status of each line the buyer waits in, every 1 to 1.5 s
// (the jitter keeps a crowd's polls from bunching up): no token, so the front or a CDN
// answers it.
const statusPoll = poller(async () => {
  let waiting = false;
  for (const entry of cards()) {
    const a = entry.data;
    const l = lines.get(a.id);
    if (!a.waiting_room || !l || !l.ticket || !['waiting', 'sold_out'].includes(l.ticket.status)) continue;
    waiting = true;
    const res = await api('GET', `/api/v1/activities/${a.id}/line/status`);
    if (!res.ok) continue; // a missed poll: the next comes in a second
    l.status = res.data;
    if (res.data.admitted_through >= l.ticket.place && !l.due) {
      l.due = true;
      ticketsPoll.kick();
    }
    onChange(entry);
  }
  return waiting ? 1000 + Math.random() * 500 : 2000;
});

// startLines begins reading tickets; forgetLines drops them (sign-out).
export function startLines() {
  ticketsPoll.kick();
  statusPoll.kick();
}

export function forgetLines() {
  for (const l of lines.values()) {
    l.ticket = null;
    l.missing = false;
    l.error = '';
    l.checked = false;
    l.due = false;
    l.status = null;
  }
}
