// Early access on the admin's page: each sale's early window (changed with PATCH), its
// access codes' figures (issued, used, revoked, from the stats), codes made here
// (offered as a CSV to hand out), the shop's own imported from a CSV file, and a code
// revoked by name (POST, DELETE /api/v1/admin/activities/{id}/access-codes).
import { api, duration, el, setText, when } from './common.js';

// importChunk is the most codes one import call carries (the API's bound).
const importChunk = 100000;

// parseCodes reads a CSV's codes: the first field of each line that has one (quoted or
// not), a header "code" skipped.
export function parseCodes(text) {
  const codes = [];
  text.split(/\r?\n/).forEach((line, i) => {
    let field = line.trim();
    if (field.startsWith('"')) {
      const m = /^"((?:[^"]|"")*)"/.exec(field);
      field = m ? m[1].replaceAll('""', '"') : field.slice(1);
    } else {
      field = field.split(/[,;\t]/)[0].trim();
    }
    if (field === '' || (i === 0 && field.toLowerCase() === 'code')) return;
    codes.push(field);
  });
  return codes;
}

// codesSentence says a sale's early window.
export function codesSentence(a) {
  const seconds = a.early_access_seconds || 0;
  const room = a.waiting_room ? ' In the line, code holders go before every buyer without a code.' : '';
  if (seconds === 0) {
    return `No early window: a code lets nobody buy before ${when(a.starts_at)}.${room}`;
  }
  return `Early window: from ${when(a.early_access_at)} (${duration(seconds * 1000)} before the start) only buyers `
    + `with an access code may buy${a.waiting_room ? ' or join the line' : ''}; each code serves the first buyer `
    + `who presents it.${room}`;
}

// wireCodes connects a sale card's early access section; token() is the session's,
// refused(res) handles the answers that end it, patch the page's PATCH.
export function wireCodes(entry, token, refused, patch) {
  const node = entry.node;
  const id = entry.data.id;
  for (const [input, label] of [['.early-input', '.early-label'], ['.make-count', '.make-label'],
    ['.import-file', '.import-label'], ['.revoke-input', '.revoke-label']]) {
    el(node, input).id = `sale-${id}-${input.slice(1)}`;
    el(node, label).htmlFor = el(node, input).id;
  }
  const path = `/api/v1/admin/activities/${id}/access-codes`;
  const say = (kind, text) => {
    const msg = el(node, '.codes-message');
    msg.className = `message codes-message ${kind}`;
    setText(msg, text);
  };
  el(node, '.early-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const value = el(node, '.early-input').value.trim();
    if (value === '') {
      setText(el(node, '.early-error'), 'Enter the window in seconds (0 for none).');
      return;
    }
    setText(el(node, '.early-error'), '');
    patch(entry, { early_access_seconds: Number(value) }, (a) => {
      el(node, '.early-input').value = '';
      say('ok', `Saved. ${codesSentence(a)}`); // beside the form, not at the card's foot
      return '';
    });
  });
  el(node, '.make-codes').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const count = Number(el(node, '.make-count').value.trim() || '0');
    const res = await api('POST', path, { token: token(), body: { count } });
    if (!res.ok) {
      if (!refused(res)) say('error', `No codes made: ${res.error.message}`);
      return;
    }
    const codes = res.data.codes;
    const link = el(node, '.codes-download');
    if (link.href) URL.revokeObjectURL(link.href);
    link.href = URL.createObjectURL(new Blob([`code\n${codes.join('\n')}\n`], { type: 'text/csv' }));
    link.download = `access-codes-${id}.csv`;
    link.hidden = false;
    setText(link, `Download the ${codes.length.toLocaleString('en-US')} codes just made (CSV)`);
    say('ok', `${codes.length.toLocaleString('en-US')} codes made${codes.length <= 5 ? `: ${codes.join(', ')}` : ''}. `
      + 'Hand each to one buyer: it serves the first who presents it.');
    el(node, '.make-count').value = '';
  });
  el(node, '.import-codes').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const file = el(node, '.import-file').files[0];
    if (!file) {
      say('error', 'Choose a CSV file of codes first.');
      return;
    }
    const codes = parseCodes(await file.text());
    if (codes.length === 0) {
      say('error', 'The file holds no code.');
      return;
    }
    let added = 0;
    for (let i = 0; i < codes.length; i += importChunk) {
      say('state', `Importing ${codes.length.toLocaleString('en-US')} codes…`);
      const res = await api('POST', path, { token: token(), body: { codes: codes.slice(i, i + importChunk) } });
      if (!res.ok) {
        if (!refused(res)) {
          const where = i > 0 ? ` after ${i.toLocaleString('en-US')} codes` : '';
          say('error', `The import stopped${where}: ${res.error.message}`);
        }
        return;
      }
      added += res.data.added;
    }
    say('ok', `${codes.length.toLocaleString('en-US')} codes read, ${added.toLocaleString('en-US')} new `
      + `(the others the sale had already).`);
  });
  el(node, '.revoke-code').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const code = el(node, '.revoke-input').value.trim();
    if (code === '') return;
    const res = await api('DELETE', `${path}/${encodeURIComponent(code)}`, { token: token() });
    if (res.ok) {
      el(node, '.revoke-input').value = '';
      say('ok', `Code ${code} revoked: nobody may present it any more (what its buyer bought stays bought).`);
    } else if (!refused(res)) {
      say('error', res.status === 404 ? `The sale has no code ${code}.` : `Not revoked: ${res.error.message}`);
    }
  });
}

// renderCodes draws the section from the sale and its stats: hidden for a sale of
// several buckets (which has no early access) and an archived one.
export function renderCodes(entry) {
  const a = entry.data;
  const node = entry.node;
  const box = el(node, '.codes-admin');
  box.hidden = a.stock_buckets > 1 || Boolean(a.archived_at);
  if (box.hidden) return;
  setText(el(node, '.codes-text'), codesSentence(a));
  const st = entry.stats || {};
  const codes = st.access_codes;
  const show = (selector, v) => setText(el(node, selector), v === undefined || v === null ? '…' : Number(v).toLocaleString('en-US'));
  show('.f-codes-issued', codes && codes.issued);
  show('.f-codes-used', codes && codes.used);
  show('.f-codes-revoked', codes && codes.revoked);
  show('.f-codes-orders', st.orders && st.orders.early_access);
  const ended = Date.now() >= Date.parse(a.ends_at);
  for (const f of ['.make-codes', '.import-codes']) el(node, f).hidden = ended;
}
