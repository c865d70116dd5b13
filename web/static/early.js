// Early access on the buyer's page: a sale with an early window asks for an access code
// before its start; the code is kept in this browser per sale and sent as X-Access-Code
// with the purchases and the line's join, so that in the window its holder buys, or
// joins the line, as after the start. The first buyer who presents a code owns it: a
// code another buyer presented, or one the sale does not have, is refused.
import { clock, el, setText, when } from './common.js';

const stored = (id) => `seckill-access-code-${id}`;

// accessCode is the code the buyer gave for the sale, '' for none.
export function accessCode(activityId) {
  try {
    return localStorage.getItem(stored(activityId)) || '';
  } catch {
    return '';
  }
}

function keepCode(activityId, code) {
  try {
    if (code) localStorage.setItem(stored(activityId), code);
    else localStorage.removeItem(stored(activityId));
  } catch {
    // storage off: the code lasts as long as the field holds it
  }
}

const hasWindow = (a) => (a.early_access_seconds || 0) > 0;

// earlyOpen reports whether the sale is in its early window now.
export function earlyOpen(a) {
  const now = clock.now();
  return hasWindow(a) && now >= Date.parse(a.early_access_at) && now < Date.parse(a.starts_at);
}

// codeHeaders are a purchase's or a join's headers for the buyer's code: before the
// start only (from then on a code changes nothing).
export function codeHeaders(a) {
  const code = accessCode(a.id);
  return code && clock.now() < Date.parse(a.starts_at) ? { 'X-Access-Code': code } : {};
}

// earlyBuyable reports whether the buyer may buy now in the sale's early window: it is
// open and the buyer gave a code.
export function earlyBuyable(a) {
  return earlyOpen(a) && accessCode(a.id) !== '';
}

// earlySentence is what an upcoming sale with an early window says to a buyer who
// cannot buy yet, '' when it has none.
export function earlySentence(a) {
  if (!hasWindow(a)) return '';
  if (earlyOpen(a)) {
    return `Early access: buyers with an access code may buy now; everyone else from ${when(a.starts_at, true)}.`
      + ' Enter your code above.';
  }
  return `Not started yet: buyers with an access code may buy from ${when(a.early_access_at, true)}, everyone else `
    + `from ${when(a.starts_at, true)}.`;
}

// codeError is the sentence for a refused code, '' for another refusal.
export function codeError(res) {
  switch (res.error.code) {
    case 'access_code_taken':
      return 'This access code was presented by another buyer: each code serves the first buyer who uses it.';
    case 'access_code_invalid':
      return 'This access code is not one of this sale’s, or it was revoked. Check it and try again.';
  }
  return '';
}

// wireEarly connects a sale card's code field; changed(entry) re-renders the card.
export function wireEarly(entry, changed) {
  const node = entry.node;
  const input = el(node, '.early-code');
  input.id = `code-${entry.data.id}`;
  el(node, '.early-label').htmlFor = input.id;
  input.value = accessCode(entry.data.id);
  input.addEventListener('input', () => {
    keepCode(entry.data.id, input.value.trim());
    entry.result = null;
    changed(entry);
  });
}

// renderEarly shows the code field while a sale with an early window has not started,
// to a buyer who is signed in.
export function renderEarly(entry, status, signedIn) {
  const a = entry.data;
  const box = el(entry.node, '.early');
  box.hidden = !hasWindow(a) || status !== 'upcoming' || !signedIn;
  if (box.hidden) return;
  setText(el(box, '.early-help'), earlyOpen(a)
    ? 'The early window is open: with a code, buy now.'
    : `With a code you may buy from ${when(a.early_access_at, true)}.`);
}
