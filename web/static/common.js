// Shared by the buyer's and the admin's page: calls to the API, the signed-in token,
// the server's clock, and how money, times and durations are written.

// api calls the API and never throws. It resolves to
// {ok, status, data, error: {code, message}, retryAfter} where error is the
// contract's error body, or code "network" when the server could not be reached.
export async function api(method, path, { token, body, headers = {} } = {}) {
  const h = { Accept: 'application/json', ...headers };
  if (token) h.Authorization = 'Bearer ' + token;
  if (body !== undefined) h['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, {
      method,
      headers: h,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
    });
  } catch {
    return { ok: false, status: 0, error: { code: 'network', message: 'Could not reach the server. Check the connection and try again.' } };
  }
  clock.observe(res.headers.get('Date'));
  let data = null;
  try {
    data = await res.json();
  } catch {
    data = null;
  }
  const retryAfter = Number(res.headers.get('Retry-After')) || 0;
  if (res.ok) return { ok: true, status: res.status, data, retryAfter };
  const error = data && data.error && data.error.code
    ? data.error
    : { code: 'http_' + res.status, message: 'The server answered ' + res.status + '.' };
  return { ok: false, status: res.status, data, error, retryAfter };
}

// activities reads a list of sales page by page (1000 a page, following next), path
// being /api/v1/activities or /api/v1/admin/activities, and resolves as api does, with
// every sale in data.activities; the first page that fails is the answer.
export async function activities(path, opts = {}) {
  const all = [];
  let after = null;
  for (;;) {
    const res = await api('GET', path + '?limit=1000' + (after ? '&after=' + after : ''), opts);
    if (!res.ok) return res;
    all.push(...((res.data && res.data.activities) || []));
    after = res.data && res.data.next;
    if (!after) return { ...res, data: { activities: all, next: null } };
  }
}

// clock estimates the server's time from the Date header of each response, so that
// countdowns agree with the server even when this device's clock is off.
export const clock = {
  offset: 0,
  seen: false,
  observe(dateHeader) {
    const server = Date.parse(dateHeader || '');
    if (Number.isNaN(server)) return;
    // The header has whole seconds: the server's time lies in [server, server+1s).
    const offset = server + 500 - Date.now();
    if (!this.seen || Math.abs(offset - this.offset) > 1500) this.offset = offset;
    this.seen = true;
  },
  now() {
    return Date.now() + this.offset;
  },
};

// Session keeps one page's token in localStorage under key. A token in the URL
// fragment (#token=...) signs in and is then removed from the address bar.
export class Session {
  constructor(key) {
    this.key = key;
    this.token = '';
    try {
      this.token = localStorage.getItem(key) || '';
    } catch {
      this.token = '';
    }
    const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
    if (m) {
      this.set(decodeURIComponent(m[1]).trim());
      history.replaceState(null, '', location.pathname + location.search);
    }
  }

  set(token) {
    this.token = token;
    try {
      if (token) localStorage.setItem(this.key, token);
      else localStorage.removeItem(this.key);
    } catch {
      // Storage can be off (private mode); the token then lasts for this page only.
    }
  }

  // claims are the token's payload, read without checking: the server checks.
  claims() {
    return decodeClaims(this.token);
  }
}

// decodeClaims returns a JWT's payload, or null when token is not a JWT.
export function decodeClaims(token) {
  const parts = (token || '').split('.');
  if (parts.length !== 3) return null;
  try {
    const b64 = parts[1].replace(/-/g, '+').replace(/_/g, '/');
    const json = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
    const claims = JSON.parse(json);
    return claims && typeof claims === 'object' ? claims : null;
  } catch {
    return null;
  }
}

// money writes integer cents as 1,234.56.
export function money(cents) {
  const n = Number(cents) || 0;
  const sign = n < 0 ? '-' : '';
  const abs = Math.abs(n);
  const units = Math.floor(abs / 100).toLocaleString('en-US');
  return sign + units + '.' + String(abs % 100).padStart(2, '0');
}

// duration writes milliseconds as "2d 3h 04m", "1h 02m 03s", "4m 05s" or "9s".
export function duration(ms) {
  let s = Math.max(0, Math.ceil(ms / 1000));
  const d = Math.floor(s / 86400);
  s -= d * 86400;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  const two = (n) => String(n).padStart(2, '0');
  if (d > 0) return `${d}d ${h}h ${two(m)}m`;
  if (h > 0) return `${h}h ${two(m)}m ${two(s)}s`;
  if (m > 0) return `${m}m ${two(s)}s`;
  return `${s}s`;
}

// when writes an RFC 3339 time in the reader's zone, e.g. "21 Nov 2026, 20:00";
// with seconds true, "21 Nov 2026, 20:00:00".
export function when(iso, seconds = false) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: seconds ? 'medium' : 'short' });
}

// idempotencyKey returns a fresh key of 32 hex digits, within the contract's
// 1..64 characters of [A-Za-z0-9_-].
export function idempotencyKey() {
  if (crypto.randomUUID) return crypto.randomUUID().replace(/-/g, '');
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

// el returns the first element under root that matches selector.
export function el(root, selector) {
  return root.querySelector(selector);
}

// setText changes an element's text only when it differs, so that screen readers
// hear live regions only when something changed.
export function setText(node, text) {
  if (node && node.textContent !== text) node.textContent = text;
}

// statusLabel is the word shown for an activity's or an order's status.
export function statusLabel(status) {
  return {
    upcoming: 'Not started',
    active: 'On sale',
    sold_out: 'Sold out',
    ended: 'Ended',
    queued: 'Queued',
    created: 'Created',
    paid: 'Paid',
    refunded: 'Refunded',
    cancelled: 'Cancelled',
    failed: 'Failed',
    grouping: 'Waiting for group',
    open: 'Open',
    complete: 'Complete',
  }[status] || status;
}

// groupWindowOver reports whether a group's window has passed by the server's clock:
// an open group then cannot be joined, and the worker fails it within seconds.
export function groupWindowOver(group) {
  return clock.now() >= Date.parse(group.expires_at);
}

// onScreen calls change(true) when node comes within a screen of the viewport and
// change(false) when it leaves, so that a page asks the server only about what can be
// seen. Without IntersectionObserver everything counts as on screen.
let observer = null;
const observed = new WeakMap();
export function onScreen(node, change) {
  if (!('IntersectionObserver' in window)) {
    change(true);
    return;
  }
  if (!observer) {
    observer = new IntersectionObserver((entries) => {
      for (const e of entries) {
        const f = observed.get(e.target);
        if (f) f(e.isIntersecting);
      }
    }, { rootMargin: '100% 0px' });
  }
  observed.set(node, change);
  observer.observe(node);
}

// offScreen stops watching node.
export function offScreen(node) {
  if (observer) observer.unobserve(node);
  observed.delete(node);
}

// poller runs fn now and then again after the delay fn returns (milliseconds),
// pausing while the page is hidden. kick() runs it again at once.
export function poller(fn) {
  let timer = 0;
  let running = false;
  let again = false;
  async function run() {
    clearTimeout(timer);
    if (running) {
      again = true;
      return;
    }
    running = true;
    let delay = 2000;
    try {
      delay = await fn();
    } finally {
      running = false;
    }
    if (again) {
      again = false;
      run();
      return;
    }
    if (!document.hidden) timer = setTimeout(run, delay);
  }
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) run();
  });
  return { kick: run };
}
