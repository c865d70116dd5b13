// The waiting room on the admin's page: the create form's room fields, and on each
// room sale's card its settings (changed with PATCH), its line's figures (in line,
// joined, admitted, admitted per second, passes outstanding, used and expired, from
// GET /api/v1/admin/activities/{id}/line) and a live chart of them.
import { api, duration, el, setText } from './common.js';
import { liveChart, perSecond } from './charts.js';

const $ = (id) => document.getElementById(id);

// roomFields maps the room's JSON fields to the create form's inputs, for the API's
// validation messages.
export const roomFields = {
  waiting_room: 'f-room',
  admit_per_second: 'f-admit',
  pass_ttl_seconds: 'f-pass-ttl',
  prequeue_seconds: 'f-prequeue',
  challenge: 'f-challenge',
  challenge_cost: 'f-challenge-cost',
};

const number = (input) => (input.value.trim() === '' ? undefined : Number(input.value.trim()));

// roomBody is the create body's room fields: none unless the room is ticked, and empty
// fields left out so the API's defaults apply (or it names what is missing).
export function roomBody() {
  if (!$('f-room').checked) return {};
  return {
    waiting_room: true,
    admit_per_second: number($('f-admit')),
    pass_ttl_seconds: number($('f-pass-ttl')),
    prequeue_seconds: number($('f-prequeue')),
    challenge: $('f-challenge').checked,
    challenge_cost: number($('f-challenge-cost')),
  };
}

// The room's fields show when the room is ticked.
function showRoomFields() {
  document.querySelectorAll('#create-form .room-only').forEach((f) => { f.hidden = !$('f-room').checked; });
}
$('f-room').addEventListener('change', showRoomFields);
showRoomFields();

// roomSentence says a room sale's settings.
export function roomSentence(a) {
  if (!a.waiting_room) return 'No waiting room: buyers buy directly.';
  const challenge = a.challenge
    ? `a proof-of-work to join (cost ${Number(a.challenge_cost).toLocaleString('en-US')})`
    : 'no proof-of-work';
  return `Waiting room: admits ${Number(a.admit_per_second).toLocaleString('en-US')} per second in line order, `
    + `a pass lasts ${duration(a.pass_ttl_seconds * 1000)}, the line opens ${duration(a.prequeue_seconds * 1000)} `
    + `before the start, ${challenge}.`;
}

// wireRoom connects a sale card's room form; patch is the page's PATCH with its
// messages, done(body) the sentence on success.
export function wireRoom(entry, patch) {
  const node = entry.node;
  const id = entry.data.id;
  for (const [input, label] of [['.room-on', '.room-on-label'], ['.room-rate', '.room-rate-label'], ['.room-challenge', '.room-challenge-label']]) {
    el(node, input).id = `sale-${id}-${input.slice(1)}`;
    el(node, label).htmlFor = el(node, input).id;
  }
  const form = el(node, '.room-form');
  // What the admin typed stays until it is saved, whatever the page's reads bring.
  form.addEventListener('input', () => { form.dataset.edited = '1'; });
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const body = { waiting_room: el(node, '.room-on').checked, challenge: el(node, '.room-challenge').checked };
    const rate = number(el(node, '.room-rate'));
    if (rate !== undefined) body.admit_per_second = rate;
    patch(entry, body, (a) => {
      delete form.dataset.edited;
      return `Saved. ${roomSentence(a)}`;
    });
  });
}

// fillRoomForm sets the card's room form from the sale, unless the admin has edited it
// without saving.
function fillRoomForm(entry) {
  const form = el(entry.node, '.room-form');
  if (form.dataset.edited) return;
  const a = entry.data;
  el(form, '.room-on').checked = Boolean(a.waiting_room);
  el(form, '.room-challenge').checked = Boolean(a.challenge);
  el(form, '.room-rate').value = a.admit_per_second ? String(a.admit_per_second) : '';
}

const count = (v) => (v === undefined || v === null ? '…' : Number(v).toLocaleString('en-US'));

// renderRoom draws the card's room: its settings, form, figures and chart.
export function renderRoom(entry) {
  const a = entry.data;
  const node = entry.node;
  setText(el(node, '.room-text'), roomSentence(a));
  fillRoomForm(entry);
  const box = el(node, '.line-admin');
  box.hidden = !a.waiting_room;
  const f = entry.line;
  for (const [cls, v] of [['.f-line-waiting', f?.waiting], ['.f-line-joined', f?.joined], ['.f-line-admitted', f?.admitted],
    ['.f-line-rate', entry.lineRate], ['.f-line-outstanding', f?.passes_outstanding], ['.f-line-used', f?.passes_used],
    ['.f-line-expired', f?.passes_expired]]) {
    setText(el(box, cls), count(v));
  }
}

// readLines reads the line of every room sale among entries and charts it at at (ms).
export async function readLines(entries, token, at) {
  const rooms = entries.filter((e) => e && e.data.waiting_room && !e.data.archived_at);
  const res = await Promise.all(rooms.map((e) => api('GET', `/api/v1/admin/activities/${e.data.id}/line`, { token })));
  rooms.forEach((entry, i) => {
    if (!res[i].ok) return;
    const f = res[i].data;
    entry.line = f;
    entry.admitRate ||= perSecond();
    entry.lineRate = entry.admitRate(at, f.admitted);
    if (!entry.lineChart) {
      entry.lineChart = liveChart(el(entry.node, '.line-chart'), [
        { label: 'In line', color: '#6b7280' },
        { label: 'Admitted/s', color: '#c2410c', scale: 'rate' },
        { label: 'Passes outstanding', color: '#0b5cd5', scale: 'rate' },
        { label: 'Passes used', color: '#1b7f3b', scale: 'rate' },
      ]);
    }
    entry.lineChart.add(at, [f.waiting, entry.lineRate, f.passes_outstanding, f.passes_used]);
    renderRoom(entry);
  });
}
