// seglog web console: a single-page app over the broker's JSON API (/api/v1), hash routed,
// no dependencies. Charts and the partition timeline are plain inline SVG drawn below.
'use strict';

(function () {
  const API = '/api/v1';
  const main = document.getElementById('main');
  const tooltip = document.getElementById('tooltip');

  // ------------------------------------------------------------------ DOM helpers

  function append(el, kids) {
    for (const c of kids) {
      if (c === null || c === undefined || c === false) continue;
      if (Array.isArray(c)) append(el, c);
      else el.append(c instanceof Node ? c : String(c));
    }
  }

  // h('div', {class: 'x', onclick: fn, 'data-testid': 'y'}, child, ...): an element.
  function h(tag, props, ...kids) {
    const el = document.createElement(tag);
    let value;
    if (props) {
      for (const [k, v] of Object.entries(props)) {
        if (v === null || v === undefined || v === false) continue;
        if (k === 'class') el.className = v;
        else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
        else if (k === 'value') value = v;
        else if (k === 'checked' || k === 'disabled' || k === 'selected' || k === 'hidden') el[k] = true;
        else if (k === 'html') el.innerHTML = v;
        else el.setAttribute(k, v === true ? '' : String(v));
      }
    }
    append(el, kids);
    if (value !== undefined) el.value = value;
    return el;
  }

  function clear(el, ...kids) {
    el.replaceChildren();
    append(el, kids);
    return el;
  }

  // Escapes text for SVG or HTML strings.
  function esc(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
  }

  const enc = encodeURIComponent;

  // ------------------------------------------------------------------ formatting

  function isNum(n) {
    return typeof n === 'number' && Number.isFinite(n);
  }

  function fmtInt(n) {
    if (!isNum(n)) return '-';
    return Math.round(n).toLocaleString('en-US');
  }

  function fmtNum(n, digits) {
    if (!isNum(n)) return '-';
    return n.toLocaleString('en-US', { maximumFractionDigits: digits === undefined ? 2 : digits });
  }

  const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

  function fmtBytes(n) {
    if (!isNum(n)) return '-';
    if (n < 0) return '-' + fmtBytes(-n);
    let i = 0;
    let v = n;
    while (v >= 1024 && i < BYTE_UNITS.length - 1) {
      v /= 1024;
      i++;
    }
    if (i === 0) return Math.round(v) + ' B';
    return (v >= 100 ? v.toFixed(0) : v.toFixed(1)) + ' ' + BYTE_UNITS[i];
  }

  function fmtRate(n) {
    if (!isNum(n)) return '-';
    return fmtBytes(n) + '/s';
  }

  function fmtCompact(n) {
    if (!isNum(n)) return '-';
    const a = Math.abs(n);
    if (a >= 1e9) return (n / 1e9).toFixed(a >= 1e10 ? 0 : 1) + 'G';
    if (a >= 1e6) return (n / 1e6).toFixed(a >= 1e7 ? 0 : 1) + 'M';
    if (a >= 1e4) return (n / 1e3).toFixed(a >= 1e5 ? 0 : 1) + 'k';
    return fmtNum(n, a < 10 ? 2 : 1);
  }

  function fmtDuration(ms) {
    if (!isNum(ms)) return '-';
    if (ms < 0) return 'unlimited';
    if (ms < 1000) return Math.round(ms) + ' ms';
    const units = [['d', 86400000], ['h', 3600000], ['m', 60000], ['s', 1000]];
    const out = [];
    let rest = ms;
    for (const [name, size] of units) {
      if (rest >= size || out.length) {
        const k = Math.floor(rest / size);
        rest -= k * size;
        if (k > 0 || out.length) out.push(k + ' ' + name);
      }
      if (out.length === 2) break;
    }
    return out.filter((s) => !s.startsWith('0 ')).join(' ') || '0 s';
  }

  function pad(n, w) {
    return String(n).padStart(w || 2, '0');
  }

  function fmtTs(ms, withMs) {
    if (!isNum(ms) || ms < 0) return '-';
    const d = new Date(ms);
    const s = d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' +
      pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
    return withMs === false ? s : s + '.' + pad(d.getMilliseconds(), 3);
  }

  // "first - last" timestamps, the second without its date when it is the same day.
  function fmtRange(first, last) {
    const a = fmtTs(first);
    const b = fmtTs(last);
    if (a === '-' && b === '-') return '-';
    const year = String(new Date().getFullYear()) + '-';
    const trim = (t) => (t.startsWith(year) ? t.slice(5) : t);
    if (a.slice(0, 10) === b.slice(0, 10)) return trim(a) + ' - ' + b.slice(11);
    return trim(a) + ' - ' + trim(b);
  }

  function fmtClock(ms, seconds) {
    const d = new Date(ms);
    const s = pad(d.getHours()) + ':' + pad(d.getMinutes());
    return seconds ? s + ':' + pad(d.getSeconds()) : s;
  }

  function fmtPct(ratio, digits) {
    if (!isNum(ratio)) return '-';
    return (ratio * 100).toFixed(digits === undefined ? 1 : digits) + '%';
  }

  function fmtRetentionBytes(n) {
    if (!isNum(n)) return '-';
    return n < 0 ? 'unlimited' : fmtBytes(n);
  }

  function dash() {
    return h('span', { class: 'faint' }, '-');
  }

  function orDash(v, f) {
    if (v === null || v === undefined) return dash();
    return f ? f(v) : String(v);
  }

  // ------------------------------------------------------------------ banners

  const banner = document.getElementById('error-banner');
  const bannerText = document.getElementById('error-text');
  const notice = document.getElementById('notice');
  const noticeText = document.getElementById('notice-text');
  let bannerSource = null;
  let noticeTimer = null;

  document.getElementById('error-close').addEventListener('click', () => clearError());
  document.getElementById('notice-close').addEventListener('click', () => { notice.hidden = true; });

  function errText(err) {
    if (!err) return 'unknown error';
    if (typeof err === 'string') return err;
    return err.message || String(err);
  }

  function showError(err, source) {
    bannerText.textContent = errText(err);
    banner.hidden = false;
    bannerSource = source || null;
  }

  // Clears the banner (only when it came from `source`, when given).
  function clearError(source) {
    if (source && bannerSource !== source) return;
    banner.hidden = true;
    bannerText.textContent = '';
    bannerSource = null;
  }

  function showNotice(text) {
    noticeText.textContent = text;
    notice.hidden = false;
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(() => { notice.hidden = true; }, 12000);
  }

  window.addEventListener('unhandledrejection', (event) => {
    event.preventDefault();
    showError(event.reason);
  });

  // ------------------------------------------------------------------ API

  class ApiError extends Error {
    constructor(message, status) {
      super(message);
      this.status = status;
    }
  }

  function qs(params) {
    const parts = [];
    for (const [k, v] of Object.entries(params || {})) {
      if (v === null || v === undefined || v === '') continue;
      parts.push(enc(k) + '=' + enc(String(v)));
    }
    return parts.length ? '?' + parts.join('&') : '';
  }

  async function api(path, options) {
    const opts = Object.assign({ headers: { Accept: 'application/json' } }, options || {});
    if (opts.body !== undefined && typeof opts.body !== 'string') {
      opts.body = JSON.stringify(opts.body);
      opts.headers = Object.assign({ 'Content-Type': 'application/json' }, opts.headers);
    }
    let res;
    try {
      res = await fetch(API + path, opts);
    } catch (e) {
      throw new ApiError('cannot reach the broker (' + errText(e) + ')', 0);
    }
    let text = '';
    try {
      text = await res.text();
    } catch (e) {
      text = '';
    }
    let body = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch (e) {
      body = null;
    }
    if (res.status === 401 && path !== '/login' && session && session.principal) {
      // The session ended (expired, logged out elsewhere): back to the login form.
      session = null;
      setTimeout(navigate, 0);
    }
    if (!res.ok) {
      const msg = body && body.message ? body.message : (text || res.statusText || 'request failed');
      const what = body && body.error ? body.error : 'HTTP ' + res.status;
      throw new ApiError(what + ': ' + msg, res.status);
    }
    if (body === null) throw new ApiError('the broker answered ' + path + ' with no JSON', res.status);
    return body;
  }

  // An action: shows its answer ({ok, message}) or its error; true when it succeeded.
  async function act(method, path, body) {
    try {
      const done = await api(path, { method, body });
      clearError();
      showNotice(done.message || 'done');
      return true;
    } catch (e) {
      notice.hidden = true;
      showError(e);
      return false;
    }
  }

  // ------------------------------------------------------------------ overview cache, sidebar

  let overviewCache = null;

  function setOverview(o) {
    overviewCache = o;
    const foot = document.getElementById('sidebar-foot');
    clear(foot,
      h('div', null, 'cluster ', h('span', { class: 'mono' }, o.cluster_id)),
      h('div', null, 'node ' + o.node_id + ' - seglog ' + o.version),
      h('div', { class: o.actions_enabled ? 'rw' : 'ro' }, o.actions_enabled ? 'actions enabled' : 'read-only'),
      session && session.login_required && session.principal
        ? h('div', { 'data-testid': 'session' }, session.principal, ' ',
          h('button', { class: 'btn small', type: 'button', 'data-testid': 'logout', onclick: logout }, 'Log out'))
        : null);
  }

  // ------------------------------------------------------------------ login

  // `/session` as last read: whether a login is needed, and who is logged in.
  let session = null;

  async function logout() {
    try {
      await api('/logout', { method: 'POST' });
    } catch (e) {
      showError(e);
    }
    session = null;
    overviewCache = null;
    navigate();
  }

  // The login form, when the broker has security and nobody is logged in here.
  function pageLogin(c) {
    document.title = 'Log in - seglog';
    const user = h('input', { type: 'text', name: 'username', autocomplete: 'username', 'data-testid': 'login-user', required: true });
    const password = h('input', { type: 'password', name: 'password', autocomplete: 'current-password', 'data-testid': 'login-password', required: true });
    const form = h('form', {
      class: 'login-form',
      onsubmit: async (e) => {
        e.preventDefault();
        try {
          session = await api('/login', { method: 'POST', body: { username: user.value, password: password.value } });
          clearError();
          navigate();
        } catch (err) {
          if (c.alive) showError(err);
        }
      },
    },
    h('label', null, 'User ', user),
    h('label', null, 'Password ', password),
    h('button', { class: 'btn primary', type: 'submit', 'data-testid': 'login-submit' }, 'Log in'));
    append(main, [
      pageHead([], 'Log in'),
      h('div', { class: 'card' },
        h('p', { class: 'muted' }, 'This broker has security: log in as a SASL user (its PLAIN or SCRAM password). The console then shows and does what that user\'s ACLs allow.'),
        form),
    ]);
    user.focus();
  }

  async function actionsEnabled() {
    if (overviewCache) return overviewCache.actions_enabled;
    try {
      setOverview(await api('/overview'));
      return overviewCache.actions_enabled;
    } catch (e) {
      return false;
    }
  }

  function readOnlyNote() {
    return h('div', { class: 'readonly-note' }, 'read-only: set ', h('code', null, 'seglog.console.actions.enable=true'), ' to allow changes');
  }

  // ------------------------------------------------------------------ page lifecycle

  let ctx = null;

  function newCtx() {
    const c = {
      alive: true,
      timers: [],
      every(ms, fn) {
        const id = setInterval(() => {
          if (c.alive && !document.hidden) fn();
        }, ms);
        c.timers.push(id);
        return id;
      },
      stop() {
        c.alive = false;
        for (const id of c.timers) clearInterval(id);
        c.timers = [];
      },
    };
    return c;
  }

  function autoPref() {
    try {
      return localStorage.getItem('seglog.console.auto') !== 'off';
    } catch (e) {
      return true;
    }
  }

  function setAutoPref(on) {
    try {
      localStorage.setItem('seglog.console.auto', on ? 'on' : 'off');
    } catch (e) {
      // storage may be unavailable: the choice lasts for the page only
    }
  }

  const REFRESH_ICON = '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M20 11a8 8 0 1 0-2.3 5.7"/><path d="M20 4v7h-7"/></svg>';

  // The page's refresh button (and auto-refresh toggle, or the live badge): `load(silent)`
  // fills the page; returns {tools, run}.
  function refresher(c, load, opts) {
    const o = opts || {};
    const interval = o.interval || 10000;
    const updated = h('span', { class: 'updated' });
    const btn = h('button', { class: 'btn', type: 'button', title: 'Refresh now', 'data-testid': 'refresh', html: REFRESH_ICON }, 'Refresh');
    const auto = h('input', { type: 'checkbox', checked: autoPref(), onchange: (e) => setAutoPref(e.target.checked) });
    let busy = false;
    async function run(silent) {
      if (busy || !c.alive) return;
      busy = true;
      btn.classList.add('spin');
      try {
        await load(silent);
        if (!c.alive) return;
        updated.textContent = 'updated ' + fmtClock(Date.now(), true);
        clearError('refresh');
      } catch (e) {
        if (c.alive) showError(e, 'refresh');
      } finally {
        busy = false;
        btn.classList.remove('spin');
      }
    }
    btn.addEventListener('click', () => run(false));
    c.every(interval, () => {
      if (o.live || auto.checked) run(true);
    });
    const mode = o.live
      ? h('span', { class: 'badge ok', title: 'refreshed every ' + interval / 1000 + ' s' }, 'live')
      : h('label', { title: 'refresh this page every ' + interval / 1000 + ' s' }, auto, 'auto-refresh');
    return { tools: h('div', { class: 'head-tools' }, updated, mode, btn), run };
  }

  function pageHead(crumbs, title, tools) {
    const crumbEls = [];
    (crumbs || []).forEach(([text, href], i) => {
      if (i) crumbEls.push(h('span', { class: 'sep' }, '/'));
      crumbEls.push(href ? h('a', { href }, text) : h('span', null, text));
    });
    return h('div', { class: 'page-head' },
      h('div', null,
        crumbEls.length ? h('div', { class: 'crumbs' }, crumbEls) : null,
        h('h1', { 'data-testid': 'page-title' }, title)),
      tools || null);
  }

  function setNav(name) {
    for (const a of document.querySelectorAll('.nav a')) {
      a.classList.toggle('active', a.dataset.nav === name);
    }
  }

  function parseRoute() {
    const raw = location.hash.replace(/^#/, '').split('?')[0];
    const parts = raw.split('/').filter((s) => s.length).map((s) => {
      try {
        return decodeURIComponent(s);
      } catch (e) {
        return s;
      }
    });
    if (parts.length === 0) return { nav: 'overview', page: pageOverview, args: [] };
    if (parts[0] === 'topics') {
      if (parts.length === 1) return { nav: 'topics', page: pageTopics, args: [] };
      if (parts.length === 2) return { nav: 'topics', page: pageTopic, args: [parts[1]] };
      if (parts.length === 3 && /^\d+$/.test(parts[2])) return { nav: 'topics', page: pagePartition, args: [parts[1], Number(parts[2])] };
    }
    if (parts[0] === 'groups') {
      if (parts.length === 1) return { nav: 'groups', page: pageGroups, args: [] };
      if (parts.length === 2) return { nav: 'groups', page: pageGroup, args: [parts[1]] };
    }
    if (parts[0] === 'health' && parts.length === 1) return { nav: 'health', page: pageHealth, args: [] };
    return { nav: null, page: pageNotFound, args: [] };
  }

  async function navigate() {
    if (ctx) ctx.stop();
    hideTooltip();
    charts.clear();
    const c = newCtx();
    ctx = c;
    let r = parseRoute();
    setNav(r.nav);
    clearError();
    main.dataset.loaded = 'false';
    main.replaceChildren();
    window.scrollTo(0, 0);
    try {
      if (!session) session = await api('/session');
      if (!c.alive) return;
      if (session.login_required && !session.principal) r = { nav: null, page: pageLogin, args: [] };
      await r.page(c, ...r.args);
    } catch (e) {
      if (c.alive) showError(e);
    }
    if (c.alive) main.dataset.loaded = 'true';
  }

  function pageNotFound(c) {
    document.title = 'Not found - seglog';
    append(main, [
      pageHead([], 'Not found'),
      h('div', { class: 'card' }, 'There is no page at ', h('code', null, location.hash), '. ', h('a', { href: '#/' }, 'Back to the overview'), '.'),
    ]);
    showError('no such page: ' + location.hash);
  }

  // ------------------------------------------------------------------ charts

  function niceStep(raw) {
    if (!(raw > 0)) return 1;
    const e = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / e;
    const n = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
    return n * e;
  }

  function decimalsOf(step) {
    for (let d = 0; d < 6; d++) {
      const m = step * Math.pow(10, d);
      if (Math.abs(Math.round(m) - m) < 1e-6) return d;
    }
    return 6;
  }

  // Y axis ticks from 0 to at least `max`: [{v, label}].
  function axisTicks(max, kind, suffix) {
    let unit = 1;
    let name = '';
    if (kind === 'bytes') {
      let i = 0;
      while (i < BYTE_UNITS.length - 1 && max >= Math.pow(1024, i + 1)) i++;
      unit = Math.pow(1024, i);
      name = ' ' + BYTE_UNITS[i];
    } else if (max >= 1e9) {
      unit = 1e9;
      name = 'G';
    } else if (max >= 1e6) {
      unit = 1e6;
      name = 'M';
    } else if (max >= 1e4) {
      unit = 1e3;
      name = 'k';
    }
    let m = max / unit;
    if (!(m > 0)) m = 4;
    const step = niceStep(m / 4);
    const n = Math.max(1, Math.ceil(m / step - 1e-9));
    const d = decimalsOf(step);
    const ticks = [];
    for (let i = 0; i <= n; i++) {
      const v = i * step;
      ticks.push({ v: v * unit, label: (i === 0 ? '0' : v.toFixed(d) + name) + (i === 0 ? '' : suffix || '') });
    }
    return ticks;
  }

  const TIME_STEPS = [1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5, 18e5, 36e5, 72e5, 108e5, 216e5, 432e5, 864e5];

  function timeTicks(x0, x1, maxTicks) {
    const span = x1 - x0;
    let step = TIME_STEPS[TIME_STEPS.length - 1];
    for (const s of TIME_STEPS) {
      if (span / s <= maxTicks) {
        step = s;
        break;
      }
    }
    const tz = new Date(x0).getTimezoneOffset() * 60000;
    const ticks = [];
    for (let t = Math.ceil((x0 - tz) / step) * step + tz; t <= x1; t += step) {
      ticks.push({ t, label: fmtClock(t, step < 60000) });
    }
    return ticks;
  }

  function fmtValue(v, kind) {
    if (kind === 'bytes') return fmtBytes(v);
    if (kind === 'bytes-rate') return fmtRate(v);
    if (kind === 'rate') return fmtNum(v, 1) + '/s';
    return fmtInt(v);
  }

  const charts = new Set();

  // A line chart in `el`: {testid, label, kind ('bytes-rate' | 'rate' | 'count'), series:
  // [{name, cls, values: [[t_ms, v]]}], gapMs, xMin, xMax, height, empty}.
  function lineChart(el, opts) {
    el._chart = opts;
    el._draw = drawLineChart;
    charts.add(el);
    if (!el._hover) {
      el._hover = true;
      el.addEventListener('mousemove', (e) => lineHover(el, e));
      el.addEventListener('mouseleave', () => {
        hideTooltip();
        const line = el.querySelector('.hover-line');
        if (line) line.setAttribute('visibility', 'hidden');
        for (const dot of el.querySelectorAll('.hover-dot')) dot.setAttribute('visibility', 'hidden');
      });
    }
    drawLineChart(el);
  }

  function drawLineChart(el) {
    const o = el._chart;
    const W = Math.max(280, Math.floor(el.clientWidth || 600));
    const H = o.height || 210;
    const kind = o.kind || 'count';
    const axisKind = kind === 'bytes-rate' || kind === 'bytes' ? 'bytes' : 'count';
    const suffix = kind === 'bytes-rate' || kind === 'rate' ? '/s' : '';
    const m = { l: 70, r: 14, t: 10, b: 24 };
    const iw = W - m.l - m.r;
    const ih = H - m.t - m.b;
    const out = [];
    out.push('<svg data-testid="' + esc(o.testid) + '" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '" role="img" aria-label="' + esc(o.label || '') + '">');
    const all = [];
    for (const s of o.series) for (const p of s.values) all.push(p);
    if (!all.length) {
      out.push('<line class="axis-line" x1="' + m.l + '" x2="' + (W - m.r) + '" y1="' + (m.t + ih) + '" y2="' + (m.t + ih) + '"/>');
      out.push('<text class="empty-text" x="' + (m.l + iw / 2) + '" y="' + (m.t + ih / 2) + '" text-anchor="middle">' + esc(o.empty || 'no samples yet') + '</text></svg>');
      el.innerHTML = out.join('');
      el._geom = null;
      return;
    }
    let x0 = isNum(o.xMin) ? o.xMin : Math.min(...all.map((p) => p[0]));
    let x1 = isNum(o.xMax) ? o.xMax : Math.max(...all.map((p) => p[0]));
    if (x1 - x0 < 2000) {
      x0 -= 30000;
      x1 += 30000;
    }
    const vmax = Math.max(0, ...all.map((p) => p[1]));
    const yt = axisTicks(vmax, axisKind, suffix);
    const ymax = yt[yt.length - 1].v || 1;
    const sx = (t) => m.l + ((t - x0) / (x1 - x0)) * iw;
    const sy = (v) => m.t + ih - (v / ymax) * ih;
    for (const t of yt) {
      const y = sy(t.v).toFixed(1);
      out.push('<line class="grid-line" x1="' + m.l + '" x2="' + (W - m.r) + '" y1="' + y + '" y2="' + y + '"/>');
      out.push('<text x="' + (m.l - 8) + '" y="' + (Number(y) + 4) + '" text-anchor="end">' + esc(t.label) + '</text>');
    }
    for (const t of timeTicks(x0, x1, Math.max(2, Math.floor(iw / 85)))) {
      const x = sx(t.t).toFixed(1);
      out.push('<line class="grid-line" x1="' + x + '" x2="' + x + '" y1="' + m.t + '" y2="' + (m.t + ih) + '"/>');
      out.push('<text x="' + x + '" y="' + (H - 6) + '" text-anchor="middle">' + esc(t.label) + '</text>');
    }
    out.push('<line class="axis-line" x1="' + m.l + '" x2="' + (W - m.r) + '" y1="' + (m.t + ih) + '" y2="' + (m.t + ih) + '"/>');
    const gap = o.gapMs || Infinity;
    o.series.forEach((s, si) => {
      const pts = s.values.filter((p) => p[0] >= x0 && p[0] <= x1);
      let line = '';
      let area = '';
      let run = [];
      const flush = () => {
        if (!run.length) return;
        line += 'M' + run.map((p) => sx(p[0]).toFixed(1) + ',' + sy(p[1]).toFixed(1)).join('L');
        if (run.length > 1) {
          area += 'M' + sx(run[0][0]).toFixed(1) + ',' + sy(0).toFixed(1) + 'L' +
            run.map((p) => sx(p[0]).toFixed(1) + ',' + sy(p[1]).toFixed(1)).join('L') +
            'L' + sx(run[run.length - 1][0]).toFixed(1) + ',' + sy(0).toFixed(1) + 'Z';
        }
        run = [];
      };
      let prev = null;
      for (const p of pts) {
        if (prev && p[0] - prev[0] > gap) flush();
        run.push(p);
        prev = p;
      }
      flush();
      const cls = s.cls || 'c' + (si + 1);
      if (area && o.series.length <= 2) out.push('<path class="area ' + cls + '" d="' + area + '"/>');
      if (line) out.push('<path class="series ' + cls + '" d="' + line + '"/>');
      if (pts.length === 1) out.push('<circle class="' + cls + '" r="3" cx="' + sx(pts[0][0]).toFixed(1) + '" cy="' + sy(pts[0][1]).toFixed(1) + '"/>');
    });
    out.push('<line class="hover-line" visibility="hidden" x1="0" x2="0" y1="' + m.t + '" y2="' + (m.t + ih) + '"/>');
    o.series.forEach((s, si) => {
      out.push('<circle class="hover-dot ' + (s.cls || 'c' + (si + 1)) + '" r="3.5" visibility="hidden" cx="0" cy="0"/>');
    });
    out.push('</svg>');
    el.innerHTML = out.join('');
    el._geom = { sx, sy, x0, x1, m, iw, kind };
  }

  function nearest(values, t) {
    let lo = 0;
    let hi = values.length - 1;
    if (hi < 0) return -1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (values[mid][0] < t) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0 && Math.abs(values[lo - 1][0] - t) <= Math.abs(values[lo][0] - t)) lo--;
    return lo;
  }

  function lineHover(el, e) {
    const g = el._geom;
    const o = el._chart;
    if (!g || !o) return;
    const svg = el.querySelector('svg');
    const rect = svg.getBoundingClientRect();
    const x = e.clientX - rect.left;
    if (x < g.m.l || x > g.m.l + g.iw) {
      hideTooltip();
      return;
    }
    const t = g.x0 + ((x - g.m.l) / g.iw) * (g.x1 - g.x0);
    const ref = o.series.find((s) => s.values.length) || o.series[0];
    const i = nearest(ref.values, t);
    if (i < 0) return;
    const tt = ref.values[i][0];
    const lx = g.sx(tt).toFixed(1);
    const line = el.querySelector('.hover-line');
    line.setAttribute('x1', lx);
    line.setAttribute('x2', lx);
    line.setAttribute('visibility', 'visible');
    const dots = el.querySelectorAll('.hover-dot');
    const rows = [];
    o.series.forEach((s, si) => {
      const j = nearest(s.values, tt);
      const dot = dots[si];
      if (j < 0 || !dot) return;
      const v = s.values[j][1];
      dot.setAttribute('cx', g.sx(s.values[j][0]).toFixed(1));
      dot.setAttribute('cy', g.sy(v).toFixed(1));
      dot.setAttribute('visibility', 'visible');
      rows.push('<tr><td><span class="swatch legend-' + esc(s.cls || 'c' + (si + 1)) + '"></span>' + esc(s.name) + '</td><td class="mono">' + esc(fmtValue(v, g.kind)) + '</td></tr>');
    });
    showTooltip('<div class="tt-title">' + esc(fmtTs(tt, false)) + '</div><table>' + rows.join('') + '</table>', e.clientX, e.clientY);
  }

  // A horizontal bar chart in `el`: {testid, label, kind, items: [{label, value, title}], empty}.
  function barChart(el, opts) {
    el._chart = opts;
    el._draw = drawBarChart;
    charts.add(el);
    drawBarChart(el);
  }

  function drawBarChart(el) {
    const o = el._chart;
    const W = Math.max(280, Math.floor(el.clientWidth || 500));
    const items = o.items || [];
    const out = [];
    if (!items.length) {
      const H = 70;
      out.push('<svg data-testid="' + esc(o.testid) + '" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '" role="img" aria-label="' + esc(o.label || '') + '">');
      out.push('<text class="empty-text" x="' + W / 2 + '" y="' + H / 2 + '" text-anchor="middle">' + esc(o.empty || 'nothing to show') + '</text></svg>');
      el.innerHTML = out.join('');
      return;
    }
    const rowH = Math.max(24, Math.min(40, Math.floor((o.minHeight || 0) / items.length)));
    const barH = rowH >= 32 ? 20 : 14;
    const top = 4;
    const longest = Math.max(...items.map((it) => Math.min(34, String(it.label).length)));
    const labelW = Math.min(250, Math.max(60, longest * 6.7 + 14));
    const valueW = 92;
    const bw = Math.max(40, W - labelW - valueW);
    const max = Math.max(0, ...items.map((it) => (isNum(it.value) ? it.value : 0))) || 1;
    const H = top + items.length * rowH + 4;
    out.push('<svg data-testid="' + esc(o.testid) + '" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '" role="img" aria-label="' + esc(o.label || '') + '">');
    items.forEach((it, i) => {
      const y = top + i * rowH;
      const v = isNum(it.value) ? it.value : 0;
      const w = v > 0 ? Math.max(2, (v / max) * bw) : 0;
      let label = String(it.label);
      if (label.length > 34) label = label.slice(0, 32) + '...';
      out.push('<text class="bar-label" x="' + (labelW - 10) + '" y="' + (y + barH / 2 + 4) + '" text-anchor="end">' + esc(label) + '</text>');
      out.push('<rect class="grid-line" style="fill:var(--grid);stroke:none" x="' + labelW + '" y="' + y + '" width="' + bw.toFixed(1) + '" height="' + barH + '" rx="3"/>');
      out.push('<rect class="bar" x="' + labelW + '" y="' + y + '" width="' + w.toFixed(1) + '" height="' + barH + '" rx="3"><title>' + esc(it.title || it.label + ': ' + fmtValue(v, o.kind)) + '</title></rect>');
      out.push('<text class="bar-value" x="' + (labelW + w + 6).toFixed(1) + '" y="' + (y + barH / 2 + 4) + '">' + esc(isNum(it.value) ? fmtValue(v, o.kind) : '-') + '</text>');
    });
    out.push('</svg>');
    el.innerHTML = out.join('');
  }

  function chartBox() {
    return h('div', { class: 'chart' });
  }

  let resizeTimer = null;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      for (const el of [...charts]) {
        if (!el.isConnected) {
          charts.delete(el);
          continue;
        }
        try {
          el._draw(el);
        } catch (e) {
          showError(e);
        }
      }
    }, 150);
  });

  // ------------------------------------------------------------------ tooltip

  function showTooltip(html, x, y) {
    tooltip.innerHTML = html;
    tooltip.hidden = false;
    const r = tooltip.getBoundingClientRect();
    let left = x + 14;
    let top = y + 14;
    if (left + r.width > window.innerWidth - 8) left = Math.max(8, x - r.width - 14);
    if (top + r.height > window.innerHeight - 8) top = Math.max(8, y - r.height - 14);
    tooltip.style.left = left + 'px';
    tooltip.style.top = top + 'px';
  }

  function hideTooltip() {
    tooltip.hidden = true;
  }

  // ------------------------------------------------------------------ small widgets

  function tile(label, value, opts) {
    const o = opts || {};
    const v = h('div', { class: 'value' + (o.mono ? ' mono' : ''), 'data-testid': o.testid || null, title: o.title || null }, value);
    const t = h(o.href ? 'a' : 'div', { class: 'tile' + (o.bad ? ' bad' : ''), href: o.href || null },
      h('div', { class: 'label' }, label), v, o.foot ? h('div', { class: 'foot' }, o.foot) : null);
    return t;
  }

  function facts(pairs) {
    const dl = h('dl', { class: 'facts' });
    for (const p of pairs) {
      if (!p) continue;
      dl.append(h('dt', null, p[0]), h('dd', null, p[1]));
    }
    return dl;
  }

  function minibar(ratio, cls) {
    const r = Math.max(0, Math.min(1, isNum(ratio) ? ratio : 0));
    return h('span', { class: 'minibar' + (cls ? ' ' + cls : '') }, h('span', { style: 'width:' + (r * 100).toFixed(1) + '%' }));
  }

  function stateBadge(state) {
    const s = String(state || '');
    const l = s.toLowerCase();
    let cls = '';
    if (l === 'stable') cls = 'ok';
    else if (l === 'dead') cls = 'bad';
    else if (l.includes('rebalanc') || l === 'reconciling' || l === 'assigning') cls = 'warn';
    else if (l === 'empty') cls = 'info';
    return h('span', { class: 'badge ' + cls }, s || '-');
  }

  // A table: `cols` [{label, num, sort, title}], `body` a tbody element.
  function table(testid, cols, opts) {
    const o = opts || {};
    const tr = h('tr');
    for (const col of cols) {
      const th = h('th', { class: (col.num ? 'num ' : '') + (col.sort ? 'sortable ' : '') + (col.sorted ? 'sorted' : ''), title: col.title || null }, col.label);
      if (col.sorted) th.append(h('span', { class: 'arrow' }, col.sorted === 'asc' ? '\u25b2' : '\u25bc'));
      if (col.sort) th.addEventListener('click', col.sort);
      tr.append(th);
    }
    const tbody = h('tbody');
    const t = h('table', { 'data-testid': testid, class: o.compact ? 'compact' : null }, h('thead', null, tr), tbody);
    const wrap = h('div', { class: 'table-wrap' + (o.tall ? ' tall' : '') + (o.short ? ' short' : '') }, t);
    return { wrap, table: t, tbody, thead: tr };
  }

  // Puts a (re)built table in `box`, keeping the scroll position of the one it replaces.
  function swapTable(box, wrap) {
    const old = box.querySelector('.table-wrap');
    if (old) {
      const top = old.scrollTop;
      const left = old.scrollLeft;
      box.replaceChildren(wrap);
      wrap.scrollTop = top;
      wrap.scrollLeft = left;
    } else box.replaceChildren(wrap);
  }

  function emptyRow(cols, text) {
    return h('tr', null, h('td', { class: 'empty', colspan: cols }, text));
  }

  function pager(state, total, onChange, sizes) {
    const from = total ? state.offset + 1 : 0;
    const to = Math.min(total, state.offset + state.limit);
    const size = h('select', { 'aria-label': 'rows per page', onchange: (e) => { state.limit = Number(e.target.value); state.offset = 0; onChange(); } },
      (sizes || [25, 50, 100, 250]).map((n) => h('option', { value: n, selected: n === state.limit }, n + ' per page')));
    size.value = String(state.limit);
    return h('div', { class: 'pager' },
      h('span', null, fmtInt(from) + '-' + fmtInt(to) + ' of ' + fmtInt(total)),
      size,
      h('button', { class: 'btn small', type: 'button', disabled: state.offset <= 0, onclick: () => { state.offset = Math.max(0, state.offset - state.limit); onChange(); } }, 'Previous'),
      h('button', { class: 'btn small', type: 'button', disabled: state.offset + state.limit >= total, onclick: () => { state.offset += state.limit; onChange(); } }, 'Next'));
  }

  function debounce(fn, ms) {
    let t = null;
    return (...args) => {
      clearTimeout(t);
      t = setTimeout(() => fn(...args), ms);
    };
  }

  function topicHref(t) {
    return '#/topics/' + enc(t);
  }

  function partitionHref(t, p) {
    return '#/topics/' + enc(t) + '/' + p;
  }

  function groupHref(g) {
    return '#/groups/' + enc(g);
  }

  // ------------------------------------------------------------------ overview

  const overviewState = { window: 15 * 60000 };

  async function pageOverview(c) {
    document.title = 'Overview - seglog';
    const tiles = h('div', { class: 'tiles' });
    const broker = h('div');
    const dirs = h('div');
    const bytesChart = chartBox();
    const recordsChart = chartBox();
    const bytesLegend = h('div', { class: 'chart-legend' });
    const recordsLegend = h('div', { class: 'chart-legend' });
    let last = null;
    const windowSel = h('select', { 'aria-label': 'time window', onchange: (e) => { overviewState.window = Number(e.target.value); if (last) drawThroughput(last); } },
      [[5 * 60000, 'last 5 minutes'], [15 * 60000, 'last 15 minutes'], [60 * 60000, 'last hour']].map(([v, l]) => h('option', { value: v, selected: v === overviewState.window }, l)));
    windowSel.value = String(overviewState.window);

    function drawThroughput(tp) {
      const pts = tp.points || [];
      const now = pts.length ? pts[pts.length - 1].t_ms : Date.now();
      const x0 = now - overviewState.window;
      const shown = pts.filter((p) => p.t_ms >= x0);
      const gapMs = (tp.interval_ms || 5000) * 3;
      lineChart(bytesChart, {
        testid: 'chart-bytes-in', label: 'bytes in and out per second', kind: 'bytes-rate', gapMs, xMin: x0, xMax: now,
        series: [
          { name: 'bytes in', cls: 'c1', values: shown.map((p) => [p.t_ms, p.bytes_in_per_sec]) },
          { name: 'bytes out', cls: 'c2', values: shown.map((p) => [p.t_ms, p.bytes_out_per_sec]) },
        ],
      });
      lineChart(recordsChart, {
        testid: 'chart-records-in', label: 'records in per second', kind: 'rate', gapMs, xMin: x0, xMax: now,
        series: [{ name: 'records in', cls: 'c3', values: shown.map((p) => [p.t_ms, p.records_in_per_sec]) }],
      });
    }

    async function load() {
      const [o, tp] = await Promise.all([api('/overview'), api('/throughput')]);
      if (!c.alive) return;
      setOverview(o);
      last = tp;
      const t = o.throughput;
      clear(tiles,
        tile('Topics', String(o.topics), { testid: 'overview-topics', href: '#/topics' }),
        tile('Partitions', String(o.partitions), {
          testid: 'overview-partitions',
          foot: fmtInt(o.partitions_unloaded) + ' unloaded, ' + fmtInt(o.partitions_offline) + ' offline',
          bad: o.partitions_offline > 0,
        }),
        tile('Log size', fmtBytes(o.log_bytes), { title: fmtInt(o.log_bytes) + ' bytes', foot: 'loaded partitions' }),
        tile('Offline log dirs', String(o.offline_log_dirs), { bad: o.offline_log_dirs > 0, foot: 'of ' + o.log_dirs.length + ' log dirs', href: '#/health' }),
        tile('Bytes in', t ? fmtRate(t.bytes_in_per_sec) : '-', { foot: 'produced' }),
        tile('Bytes out', t ? fmtRate(t.bytes_out_per_sec) : '-', { foot: 'fetched' }),
        tile('Records in', t ? fmtNum(t.records_in_per_sec, 1) + '/s' : '-', { foot: 'appended' }));
      clear(broker, facts([
        ['Cluster id', h('span', { class: 'mono' }, o.cluster_id)],
        ['Node id', String(o.node_id)],
        ['Version', o.version],
        ['Uptime', fmtDuration(o.uptime_ms)],
        ['Listeners', o.listeners.length ? h('div', null, o.listeners.map((l) => h('div', { class: 'mono' }, l))) : dash()],
        ['Tiered storage', o.tiered_storage ? h('span', { class: 'badge remote' }, 'enabled') : h('span', { class: 'muted' }, 'off')],
        ['Actions', o.actions_enabled ? h('span', { class: 'badge ok' }, 'enabled') : readOnlyNote()],
      ]));
      clear(dirs, o.log_dirs.length ? o.log_dirs.map(logDirView) : h('div', { class: 'muted' }, 'no log directories'));
      clear(bytesLegend,
        h('span', null, h('span', { class: 'swatch legend-c1' }), 'in ', h('b', null, t ? fmtRate(t.bytes_in_per_sec) : '-')),
        h('span', null, h('span', { class: 'swatch legend-c2' }), 'out ', h('b', null, t ? fmtRate(t.bytes_out_per_sec) : '-')));
      clear(recordsLegend,
        h('span', null, h('span', { class: 'swatch legend-c3' }), 'records in ', h('b', null, t ? fmtNum(t.records_in_per_sec, 1) + '/s' : '-')));
      drawThroughput(tp);
    }

    const r = refresher(c, load, { interval: 5000, live: true });
    append(main, [
      pageHead([], 'Overview', r.tools),
      tiles,
      h('div', { class: 'card' },
        h('h2', null, 'Throughput', h('span', { class: 'hint' }, 'sampled by the broker'), h('span', { class: 'spacer' }), windowSel),
        h('div', { class: 'grid grid-2' },
          h('div', null, h('div', { class: 'chart-legend' }, h('b', null, 'Bytes per second')), bytesLegend, bytesChart),
          h('div', null, h('div', { class: 'chart-legend' }, h('b', null, 'Records in per second')), recordsLegend, recordsChart))),
      h('div', { class: 'grid grid-2' },
        h('div', { class: 'card' }, h('h2', null, 'Broker'), broker),
        h('div', { class: 'card' }, h('h2', null, 'Log directories'), dirs)),
    ]);
    await r.run(false);
  }

  function logDirView(d) {
    const total = d.total_bytes;
    const usable = d.usable_bytes;
    let bar = null;
    let legend = null;
    if (isNum(total) && total > 0 && isNum(usable)) {
      const used = Math.max(0, total - usable);
      const logPart = Math.min(used, d.log_bytes);
      const other = Math.max(0, used - logPart);
      bar = h('div', { class: 'usage-bar', title: fmtPct(used / total) + ' used' },
        h('span', { class: 'u-log', style: 'width:' + ((logPart / total) * 100).toFixed(2) + '%' }),
        h('span', { class: 'u-other', style: 'width:' + ((other / total) * 100).toFixed(2) + '%' }));
      legend = h('div', { class: 'usage-legend' },
        h('span', null, h('span', { class: 'swatch legend-c1' }), 'seglog logs ' + fmtBytes(d.log_bytes)),
        h('span', null, h('span', { class: 'swatch', style: 'background:var(--faint);opacity:.55' }), 'other ' + fmtBytes(other)),
        h('span', null, h('span', { class: 'swatch', style: 'background:var(--grid)' }), 'free ' + fmtBytes(usable)),
        h('span', null, 'total ' + fmtBytes(total) + ' (' + fmtPct(used / total) + ' used)'));
    } else {
      legend = h('div', { class: 'usage-legend' }, 'seglog logs ' + fmtBytes(d.log_bytes) + '; disk space unknown');
    }
    return h('div', { class: 'dir' },
      h('div', null, h('span', { class: 'dir-path' }, d.path), ' ',
        d.online ? h('span', { class: 'badge ok' }, 'online') : h('span', { class: 'badge bad' }, 'offline')),
      h('div', { class: 'usage' }, bar, legend));
  }

  // ------------------------------------------------------------------ topics

  const topicsState = { filter: '', sort: 'name', order: 'asc', offset: 0, limit: 50, internal: true };

  async function pageTopics(c) {
    document.title = 'Topics - seglog';
    const st = topicsState;
    const actions = await actionsEnabled();
    if (!c.alive) return;
    const holder = h('div');
    const pagerBox = h('div');
    const count = h('span', { class: 'muted' });
    let seq = 0;

    const cols = () => {
      const sortable = (label, key, num, title) => ({
        label, num, title,
        sorted: st.sort === key ? st.order : null,
        sort: () => {
          if (st.sort === key) st.order = st.order === 'asc' ? 'desc' : 'asc';
          else {
            st.sort = key;
            st.order = key === 'name' ? 'asc' : 'desc';
          }
          st.offset = 0;
          r.run(false);
        },
      });
      return [
        sortable('Name', 'name'),
        sortable('Partitions', 'partitions', true),
        sortable('Size', 'size', true),
        sortable('Records', 'records', true, 'high watermark minus log start, summed over partitions'),
        sortable('Retention', 'retention', true),
        { label: 'Retention bytes', num: true, title: 'per partition' },
        { label: 'Cleanup' },
        { label: 'Durability' },
      ];
    };

    async function load() {
      const my = ++seq;
      const data = await api('/topics' + qs({ filter: st.filter, sort: st.sort, order: st.order, offset: st.offset, limit: st.limit, internal: st.internal ? 'true' : 'false' }));
      if (!c.alive || my !== seq) return;
      if (data.total > 0 && st.offset >= data.total) {
        st.offset = Math.max(0, Math.floor((data.total - 1) / st.limit) * st.limit);
        return load();
      }
      const t = table('topics-table', cols(), { tall: true });
      for (const tp of data.topics) {
        const href = topicHref(tp.name);
        t.tbody.append(h('tr', { class: 'clickable', 'data-testid': 'topic-row', 'data-topic': tp.name, onclick: (e) => { if (!e.target.closest('a')) location.hash = href; } },
          h('td', null, h('a', { href }, tp.name), tp.internal ? [' ', h('span', { class: 'badge' }, 'internal')] : null,
            tp.remote_storage ? [' ', h('span', { class: 'badge remote' }, 'tiered')] : null),
          h('td', { class: 'num' }, fmtInt(tp.partitions), tp.partitions_unloaded ? h('span', { class: 'faint', title: 'not loaded yet' }, ' (' + tp.partitions_unloaded + ' unloaded)') : null),
          h('td', { class: 'num', 'data-testid': 'topic-size', 'data-bytes': String(tp.size_bytes), title: fmtInt(tp.size_bytes) + ' bytes' }, fmtBytes(tp.size_bytes)),
          h('td', { class: 'num', 'data-testid': 'topic-records', 'data-records': String(tp.records) }, fmtInt(tp.records)),
          h('td', { class: 'num', title: fmtInt(tp.retention_ms) + ' ms' }, fmtDuration(tp.retention_ms)),
          h('td', { class: 'num' }, fmtRetentionBytes(tp.retention_bytes)),
          h('td', null, tp.cleanup_policy.includes('compact') ? h('span', { class: 'badge info' }, tp.cleanup_policy) : tp.cleanup_policy),
          h('td', null, tp.durability || dash())));
      }
      if (!data.topics.length) t.tbody.append(emptyRow(8, st.filter ? 'no topic matches "' + st.filter + '"' : 'no topics'));
      swapTable(holder, t.wrap);
      clear(pagerBox, pager(st, data.total, () => r.run(false)));
      count.textContent = fmtInt(data.total) + (data.total === 1 ? ' topic' : ' topics');
    }

    const r = refresher(c, load);
    const filter = h('input', {
      type: 'search', placeholder: 'Filter topics by name', value: st.filter, 'data-testid': 'topics-filter', 'aria-label': 'filter topics',
      oninput: debounce((e) => { st.filter = e.target.value.trim(); st.offset = 0; r.run(false); }, 250),
    });
    const internal = h('input', { type: 'checkbox', checked: st.internal, onchange: (e) => { st.internal = e.target.checked; st.offset = 0; r.run(false); } });
    append(main, [
      pageHead([], 'Topics', r.tools),
      h('div', { class: 'card' },
        h('div', { class: 'toolbar' }, filter, h('label', null, internal, 'show internal topics'), h('span', { class: 'grow' }), count),
        holder, pagerBox),
      h('div', { class: 'card' }, h('h2', null, 'Create a topic'), actions ? createTopicForm(() => r.run(false)) : readOnlyNote()),
    ]);
    await r.run(false);
  }

  function parseConfigLines(text) {
    const configs = {};
    for (const raw of text.split('\n')) {
      const line = raw.trim();
      if (!line || line.startsWith('#')) continue;
      const i = line.indexOf('=');
      if (i <= 0) throw new Error('a config line must be key=value: "' + line + '"');
      configs[line.slice(0, i).trim()] = line.slice(i + 1).trim();
    }
    return configs;
  }

  // A readable form of a config value: durations and sizes.
  function configHint(name, value) {
    if (!/^-?\d+$/.test(value)) return null;
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < 0) return null;
    if (/\.ms$/.test(name) && n >= 1000) return h('span', { class: 'cfg-hint' }, fmtDuration(n));
    if (/bytes$/.test(name) && n >= 1024) return h('span', { class: 'cfg-hint' }, fmtBytes(n));
    return null;
  }

  function createTopicForm(after) {
    const name = h('input', { type: 'text', placeholder: 'my-topic', required: true, 'aria-label': 'topic name' });
    const parts = h('input', { type: 'number', min: 1, placeholder: 'broker default', 'aria-label': 'partitions' });
    const configs = h('textarea', { rows: 3, placeholder: 'one key=value per line, e.g.\nretention.ms=86400000\ncleanup.policy=compact', 'aria-label': 'configs' });
    const btn = h('button', { class: 'btn primary', type: 'submit' }, 'Create topic');
    const form = h('form', {
      class: 'form-grid',
      onsubmit: async (e) => {
        e.preventDefault();
        let cfg;
        try {
          cfg = parseConfigLines(configs.value);
        } catch (err) {
          showError(err);
          return;
        }
        if (!name.value.trim()) {
          showError('give the topic a name');
          return;
        }
        const body = { name: name.value.trim(), configs: cfg };
        if (parts.value) body.partitions = Number(parts.value);
        btn.disabled = true;
        const ok = await act('POST', '/topics', body);
        btn.disabled = false;
        if (ok) {
          name.value = '';
          parts.value = '';
          configs.value = '';
          after();
        }
      },
    },
    h('label', { class: 'field' }, 'Name', name),
    h('label', { class: 'field' }, 'Partitions', parts),
    h('label', { class: 'field wide' }, 'Configs', configs),
    btn);
    return form;
  }

  // ------------------------------------------------------------------ topic

  async function pageTopic(c, topic) {
    document.title = topic + ' - seglog';
    const actions = await actionsEnabled();
    if (!c.alive) return;
    const tiles = h('div', { class: 'tiles' });
    const info = h('div');
    const partsBox = h('div');
    const partsPager = h('div');
    const partState = { offset: 0, limit: 100 };
    const cfgBox = h('div');
    const cfgCount = h('span', { class: 'hint' });
    const cfgState = { filter: '', onlyOverrides: false, editing: null, data: null };
    const titleBadges = h('span');

    function renderConfigs() {
      const data = cfgState.data || [];
      const f = cfgState.filter.toLowerCase();
      const shown = data.filter((cf) => (!f || cf.name.toLowerCase().includes(f)) && (!cfgState.onlyOverrides || cf.source !== 'DEFAULT_CONFIG'));
      const overrides = data.filter((cf) => cf.source !== 'DEFAULT_CONFIG').length;
      cfgCount.textContent = data.length + ' configs, ' + overrides + ' not default';
      const t = table('configs-table', [{ label: 'Name' }, { label: 'Value' }, { label: 'Source' }, { label: '' }], { tall: true });
      for (const cf of shown) {
        const overridden = cf.source !== 'DEFAULT_CONFIG';
        const valueCell = h('td', { class: 'cfg-value mono' });
        const toolCell = h('td', { class: 'num cfg-tools' });
        const tr = h('tr', { class: overridden ? 'overridden' : null, 'data-config': cf.name },
          h('td', { class: 'cfg-name mono' }, cf.name),
          valueCell,
          h('td', null, h('span', { class: 'config-source' }, cf.source),
            cf.read_only ? [' ', h('span', { class: 'badge' }, 'read-only')] : null,
            cf.sensitive ? [' ', h('span', { class: 'badge warn' }, 'sensitive')] : null),
          toolCell);
        const showValue = () => {
          clear(valueCell, cf.value === null || cf.value === undefined ? h('span', { class: 'null' }, cf.sensitive ? 'hidden' : 'null') : [cf.value, configHint(cf.name, cf.value)]);
          clear(toolCell);
          if (actions && !cf.read_only) {
            toolCell.append(h('button', { class: 'btn small', type: 'button', onclick: () => { cfgState.editing = cf.name; edit(); } }, 'Edit'));
            if (cf.source === 'DYNAMIC_TOPIC_CONFIG') {
              toolCell.append(' ', h('button', {
                class: 'btn small', type: 'button', title: 'delete the topic override',
                onclick: async () => {
                  if (!window.confirm('Reset ' + cf.name + ' of ' + topic + ' to its default?')) return;
                  if (await act('POST', '/topics/' + enc(topic) + '/configs', { delete: [cf.name] })) r.run(false);
                },
              }, 'Reset'));
            }
          }
        };
        const edit = () => {
          const input = h('input', { type: 'text', value: cf.value || '', 'aria-label': cf.name });
          const save = async () => {
            const set = {};
            set[cf.name] = input.value;
            if (await act('POST', '/topics/' + enc(topic) + '/configs', { set })) {
              cfgState.editing = null;
              r.run(false);
            }
          };
          input.addEventListener('keydown', (e) => {
            if (e.key === 'Enter') save();
            if (e.key === 'Escape') { cfgState.editing = null; showValue(); }
          });
          clear(valueCell, h('div', { class: 'cfg-edit' }, input));
          clear(toolCell,
            h('button', { class: 'btn small primary', type: 'button', onclick: save }, 'Save'), ' ',
            h('button', { class: 'btn small', type: 'button', onclick: () => { cfgState.editing = null; showValue(); } }, 'Cancel'));
          input.focus();
        };
        if (cfgState.editing === cf.name) edit();
        else showValue();
        t.tbody.append(tr);
      }
      if (!shown.length) t.tbody.append(emptyRow(4, 'no config matches'));
      swapTable(cfgBox, t.wrap);
    }

    async function load() {
      const d = await api('/topics/' + enc(topic) + qs({ offset: partState.offset, limit: partState.limit }));
      if (!c.alive) return;
      clear(titleBadges,
        d.internal ? [' ', h('span', { class: 'badge' }, 'internal')] : null,
        d.cleanup_policy.includes('compact') ? [' ', h('span', { class: 'badge info' }, d.cleanup_policy)] : null,
        d.remote_storage ? [' ', h('span', { class: 'badge remote' }, 'tiered')] : null);
      clear(tiles,
        tile('Partitions', fmtInt(d.partitions), { foot: d.partitions_unloaded ? d.partitions_unloaded + ' not loaded' : 'all loaded' }),
        tile('Size', fmtBytes(d.size_bytes), { title: fmtInt(d.size_bytes) + ' bytes', foot: fmtInt(d.size_bytes) + ' bytes' }),
        tile('Records', fmtInt(d.records), { foot: 'high watermark - log start' }),
        tile('Retention', fmtDuration(d.retention_ms), { foot: 'retention.ms' }),
        tile('Retention bytes', fmtRetentionBytes(d.retention_bytes), { foot: 'per partition' }),
        tile('Cleanup policy', d.cleanup_policy || '-', { foot: 'durability: ' + (d.durability || '-') }));
      clear(info, h('span', { class: 'muted' }, 'topic id '), h('span', { class: 'mono' }, d.topic_id || '-'),
        h('span', { class: 'muted' }, '  -  tiered storage '), d.remote_storage ? 'on' : 'off');
      const rows = d.partition_rows;
      const showLocal = d.remote_storage || rows.some((p) => isNum(p.local_log_start_offset) && p.local_log_start_offset !== p.log_start_offset);
      const t = table('partitions-table', [
        { label: 'Partition', num: true }, { label: 'Status' }, { label: 'Size', num: true }, { label: 'Log start', num: true },
        showLocal ? { label: 'Local start', num: true, title: 'local log start offset (differs from the log start when tiered)' } : null,
        { label: 'High watermark', num: true }, { label: 'Last stable', num: true }, { label: 'Log end', num: true },
        { label: 'Records', num: true }, { label: 'Segments', num: true }, { label: 'Log dir' },
      ].filter(Boolean), { tall: true });
      for (const p of rows) {
        const href = partitionHref(topic, p.partition);
        const status = p.offline ? h('span', { class: 'badge bad' }, 'offline') : p.loaded ? h('span', { class: 'badge ok' }, 'loaded') : h('span', { class: 'badge warn', title: 'figures from the checkpoints' }, 'not loaded');
        const records = isNum(p.high_watermark) ? Math.max(0, p.high_watermark - (p.log_start_offset || 0)) : null;
        t.tbody.append(h('tr', { class: 'clickable', 'data-testid': 'partition-row', 'data-partition': String(p.partition), onclick: (e) => { if (!e.target.closest('a')) location.hash = href; } },
          h('td', { class: 'num' }, h('a', { href }, String(p.partition))),
          h('td', null, status),
          h('td', { class: 'num', title: isNum(p.size_bytes) ? fmtInt(p.size_bytes) + ' bytes' : null }, orDash(p.size_bytes, fmtBytes)),
          h('td', { class: 'num mono' }, orDash(p.log_start_offset, fmtInt)),
          showLocal ? h('td', { class: 'num mono' }, orDash(p.local_log_start_offset, fmtInt)) : null,
          h('td', { class: 'num mono' }, orDash(p.high_watermark, fmtInt)),
          h('td', { class: 'num mono' }, orDash(p.last_stable_offset, fmtInt)),
          h('td', { class: 'num mono' }, orDash(p.log_end_offset, fmtInt)),
          h('td', { class: 'num' }, orDash(records, fmtInt)),
          h('td', { class: 'num' }, orDash(p.segments, fmtInt)),
          h('td', { class: 'mono' }, orDash(p.log_dir))));
      }
      if (!rows.length) t.tbody.append(emptyRow(showLocal ? 11 : 10, 'no partitions'));
      swapTable(partsBox, t.wrap);
      clear(partsPager, d.partitions > 25 ? pager(partState, d.partitions, () => r.run(false), [25, 100, 250, 500]) : null);
      cfgState.data = d.configs;
      if (!cfgState.editing) renderConfigs();
    }

    const r = refresher(c, load);
    const tools = r.tools;
    if (actions) {
      tools.append(h('button', {
        class: 'btn danger', type: 'button', 'data-testid': 'delete-topic',
        onclick: async () => {
          if (!window.confirm('Delete topic ' + topic + ' and all its data? This cannot be undone.')) return;
          if (await act('DELETE', '/topics/' + enc(topic))) location.hash = '#/topics';
        },
      }, 'Delete topic'));
    }
    const cfgFilter = h('input', { type: 'search', placeholder: 'Filter configs', 'aria-label': 'filter configs', oninput: (e) => { cfgState.filter = e.target.value.trim(); renderConfigs(); } });
    const onlyOv = h('input', { type: 'checkbox', onchange: (e) => { cfgState.onlyOverrides = e.target.checked; renderConfigs(); } });
    append(main, [
      pageHead([['Topics', '#/topics'], [topic]], [topic, titleBadges], tools),
      tiles,
      h('div', { class: 'card' }, h('h2', null, 'Partitions', h('span', { class: 'hint' }, 'click a partition for its segments, dumps and messages'), h('span', { class: 'spacer' }), h('span', { class: 'hint' }, info)), partsBox, partsPager),
      h('div', { class: 'card' },
        h('h2', null, 'Configs', cfgCount),
        h('div', { class: 'toolbar' }, cfgFilter, h('label', null, onlyOv, 'only non-default'), h('span', { class: 'grow' }),
          actions ? h('span', { class: 'muted' }, 'highlighted: set on the topic or the broker') : readOnlyNote()),
        cfgBox),
    ]);
    await r.run(false);
  }

  // ------------------------------------------------------------------ partition

  const SEG_STATE_LABEL = { active: 'active', closed: 'closed', deleting: 'deleting', remote: 'remote (tiered)' };

  function segEnd(view, segs, i) {
    const s = segs[i];
    if (isNum(s.end_offset)) return s.end_offset;
    if (i + 1 < segs.length) return segs[i + 1].base_offset;
    return Math.max(s.base_offset, view.log_end_offset);
  }

  // Widths proportional to `sizes` filling `avail`, none below `minW`.
  function layoutWidths(sizes, avail, minW) {
    const n = sizes.length;
    if (!n) return [];
    if (n * minW >= avail) return sizes.map(() => minW);
    const fixed = new Array(n).fill(false);
    let widths = new Array(n).fill(minW);
    for (let iter = 0; iter < 60; iter++) {
      let nFixed = 0;
      let sumFree = 0;
      for (let i = 0; i < n; i++) {
        if (fixed[i]) nFixed++;
        else sumFree += Math.max(0, sizes[i]);
      }
      const room = avail - nFixed * minW;
      let changed = false;
      for (let i = 0; i < n; i++) {
        if (fixed[i]) continue;
        const w = sumFree > 0 ? (Math.max(0, sizes[i]) / sumFree) * room : room / (n - nFixed);
        if (w < minW) {
          fixed[i] = true;
          changed = true;
        }
        widths[i] = w;
      }
      if (!changed) break;
    }
    widths = widths.map((w, i) => (fixed[i] ? minW : w));
    return widths;
  }

  function segTooltip(view, seg, end) {
    const fill = (n, max) => (max > 0 ? fmtInt(n) + ' / ' + fmtInt(max) + ' (' + fmtPct(n / max, 2) + ')' : fmtInt(n));
    const flags = [];
    if (seg.cleaned) flags.push('cleaned');
    if (seg.tiered) flags.push('tiered (copied to remote storage)');
    const rows = [
      ['State', SEG_STATE_LABEL[seg.state] || seg.state],
      flags.length ? ['Flags', flags.join(', ')] : null,
      ['Base offset', fmtInt(seg.base_offset)],
      ['End offset', isNum(seg.end_offset) ? fmtInt(seg.end_offset) + ' (exclusive)' : '-'],
      ['Offsets', isNum(end) ? fmtInt(Math.max(0, end - seg.base_offset)) : '-'],
      ['Size', fmtBytes(seg.size_bytes) + ' (' + fmtInt(seg.size_bytes) + ' B)'],
      ['First timestamp', fmtTs(seg.first_timestamp_ms)],
      ['Largest timestamp', fmtTs(seg.largest_timestamp_ms)],
      ['Offset index', fill(seg.offset_index_entries, seg.offset_index_entries_max)],
      ['Time index', fill(seg.time_index_entries, seg.time_index_entries_max)],
    ].filter(Boolean);
    return '<div class="tt-title">Segment ' + esc(fmtInt(seg.base_offset)) + '</div><table>' +
      rows.map((r) => '<tr><td>' + esc(r[0]) + '</td><td class="mono">' + esc(r[1]) + '</td></tr>').join('') + '</table>';
  }

  function ruleClass(rule) {
    return 'rule-' + String(rule).replace(/[^a-z]+/gi, '-');
  }

  // The partition's log as an SVG timeline in `el`: `state.view` (the segments answer),
  // `state.selected` (the index of the selected segment), `state.onSelect(i)`.
  function drawTimeline(el) {
    const st = el._timeline;
    const view = st.view;
    const all = view.segments;
    const lane = [];
    const deleting = [];
    all.forEach((s, i) => (s.state === 'deleting' ? deleting : lane).push(i));
    const W0 = Math.max(600, Math.floor(el.clientWidth || 900));
    const padL = 12;
    const padR = 12;
    const minW = 4;
    const avail = W0 - padL - padR;
    const widths = layoutWidths(lane.map((i) => all[i].size_bytes), avail, minW);
    const laneW = widths.reduce((a, b) => a + b, 0);
    const delWidths = layoutWidths(deleting.map((i) => all[i].size_bytes), Math.min(avail, Math.max(avail * 0.5, laneW)), minW);
    const W = Math.max(W0, Math.ceil(padL + Math.max(laneW, delWidths.reduce((a, b) => a + b, 0)) + padR));
    const cuts = view.cut_points || [];
    const rowH = 17;
    const cutTop = 6;
    const barY = cutTop + cuts.length * rowH + (cuts.length ? 8 : 4);
    const barH = 56;
    const laneSegs = lane.map((i) => all[i]);
    const xs = [];
    let x = padL;
    for (const w of widths) {
      xs.push(x);
      x += w;
    }
    const laneEnd = x;

    // x of an offset on the lane: inside the segment that holds it, proportionally.
    function offsetX(off) {
      if (!laneSegs.length) return padL;
      if (off <= laneSegs[0].base_offset) return xs[0];
      for (let k = 0; k < laneSegs.length; k++) {
        const base = laneSegs[k].base_offset;
        const end = segEnd(view, laneSegs, k);
        if (off >= base && off < end) return xs[k] + ((off - base) / Math.max(1, end - base)) * widths[k];
      }
      return laneEnd;
    }

    // a cut is drawn at the boundary of the segment whose base offset is the cut's offset
    function boundaryX(off) {
      for (let k = 0; k < laneSegs.length; k++) {
        if (laneSegs[k].base_offset === off && laneSegs[k].state !== 'remote') return xs[k];
      }
      return offsetX(off);
    }

    const out = [];
    const charW = 6.4;
    // markers below the lane
    const markerDefs = [];
    const addMarker = (name, off) => {
      if (!isNum(off) || off < 0) return;
      const same = markerDefs.find((m) => m.off === off);
      if (same) same.names.push(name);
      else markerDefs.push({ off, names: [name] });
    };
    addMarker('log start', view.log_start_offset);
    if (view.local_log_start_offset !== view.log_start_offset) addMarker('local log start', view.local_log_start_offset);
    addMarker('recovery point', view.recovery_point);
    if (isNum(view.first_dirty_offset)) addMarker('first dirty', view.first_dirty_offset);
    if (view.last_stable_offset !== view.high_watermark) addMarker('last stable', view.last_stable_offset);
    addMarker('high watermark', view.high_watermark);
    if (view.log_end_offset !== view.high_watermark) addMarker('log end', view.log_end_offset);
    const markers = markerDefs.map((m) => ({ x: offsetX(m.off), text: m.names.join(', ') + ' ', value: fmtInt(m.off), off: m.off })).sort((a, b) => a.x - b.x);
    const rowsEnd = [];
    for (const mk of markers) {
      const w = (mk.text.length + mk.value.length) * charW + 8;
      let startX = mk.x - 4;
      let anchor = 'start';
      if (startX + w > W - 4) {
        anchor = 'end';
        startX = mk.x - w + 4;
      }
      let row = 0;
      while (row < rowsEnd.length && rowsEnd[row] > startX - 8) row++;
      rowsEnd[row] = startX + w;
      mk.row = row;
      mk.anchor = anchor;
    }
    const markTop = barY + barH + 8;
    const markRows = Math.max(1, rowsEnd.length);
    let delY = markTop + markRows * 16 + 12;
    const H = deleting.length ? delY + 20 + 24 + 6 : markTop + markRows * 16 + 8;

    out.push('<svg class="timeline" data-testid="timeline" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '" role="img" aria-label="segments of ' + esc(view.topic) + '-' + view.partition + '">');
    out.push('<defs><pattern id="tl-stripes" width="7" height="7" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><line class="stripe" x1="0" y1="0" x2="0" y2="7"/></pattern></defs>');

    // the lane
    if (!laneSegs.length) {
      out.push('<rect x="' + padL + '" y="' + barY + '" width="' + avail + '" height="' + barH + '" rx="4" style="fill:var(--grid)"/>');
      out.push('<text x="' + (padL + avail / 2) + '" y="' + (barY + barH / 2 + 4) + '" text-anchor="middle">no segments</text>');
    }
    laneSegs.forEach((s, k) => {
      const i = lane[k];
      const sx = xs[k];
      const w = widths[k];
      out.push('<rect class="seg ' + esc(s.state) + '" data-testid="timeline-segment" data-base-offset="' + s.base_offset + '" data-state="' + esc(s.state) + '" data-i="' + i + '" x="' + sx.toFixed(2) + '" y="' + barY + '" width="' + w.toFixed(2) + '" height="' + barH + '"/>');
      if (s.cleaned) out.push('<rect class="seg-overlay" fill="url(#tl-stripes)" x="' + sx.toFixed(2) + '" y="' + barY + '" width="' + w.toFixed(2) + '" height="' + barH + '"/>');
      if (s.tiered && s.state !== 'remote' && w > 5) out.push('<rect class="seg-tiered" x="' + (sx + 1.5).toFixed(2) + '" y="' + (barY + 1.5) + '" width="' + (w - 3).toFixed(2) + '" height="' + (barH - 3) + '"/>');
      const label = fmtInt(s.base_offset);
      if (w >= label.length * 6.8 + 10) out.push('<text class="seg-label" x="' + (sx + 5).toFixed(2) + '" y="' + (barY + 22) + '">' + esc(label) + '</text>');
      const size = fmtBytes(s.size_bytes);
      if (w >= size.length * 6 + 10) out.push('<text class="seg-size" x="' + (sx + 5).toFixed(2) + '" y="' + (barY + 41) + '">' + esc(size) + '</text>');
    });

    // cut points: the zone each would delete, then its line and label
    cuts.forEach((cut, ci) => {
      const cx = boundaryX(cut.offset);
      const cls = ruleClass(cut.rule);
      const firstLocal = laneSegs.findIndex((s) => s.state !== 'remote');
      const ly = cutTop + ci * rowH + 12;
      if (cut.segments > 0 && firstLocal >= 0 && cx > xs[firstLocal] + 1) {
        // the range the rule would delete: a bracket on the rule's row, from the oldest local segment to the cut
        const x0 = xs[firstLocal];
        out.push('<path class="cut-range ' + cls + '" d="M' + x0.toFixed(2) + ',' + (ly - 1) + 'v-6M' + x0.toFixed(2) + ',' + (ly - 4) + 'H' + cx.toFixed(2) + '"/>');
      }
      out.push('<line class="cut ' + cls + '" data-testid="cut-line" data-rule="' + esc(cut.rule) + '" data-offset="' + cut.offset + '" x1="' + cx.toFixed(2) + '" x2="' + cx.toFixed(2) + '" y1="' + (ly - 10) + '" y2="' + (barY + barH + 4) + '"/>');
      const text = cut.rule + ' at ' + fmtInt(cut.offset) + (cut.segments > 0 ? ': deletes ' + cut.segments + (cut.segments === 1 ? ' segment, ' : ' segments, ') + fmtBytes(cut.bytes) : ': nothing to delete');
      const tw = text.length * 6.6;
      const anchorEnd = cx + 6 + tw > W - 4;
      out.push('<text class="cut-label ' + cls + '" style="stroke:none" x="' + (anchorEnd ? cx - 6 : cx + 6).toFixed(2) + '" y="' + ly + '" text-anchor="' + (anchorEnd ? 'end' : 'start') + '">' + esc(text) + '</text>');
    });

    // selection outline
    if (isNum(st.selected)) {
      const k = lane.indexOf(st.selected);
      if (k >= 0) out.push('<rect class="seg-selected" x="' + (xs[k] + 1.25).toFixed(2) + '" y="' + (barY + 1.25) + '" width="' + Math.max(1, widths[k] - 2.5).toFixed(2) + '" height="' + (barH - 2.5) + '"/>');
    }

    // markers
    for (const mk of markers) {
      const mx = mk.x.toFixed(2);
      const ly = markTop + mk.row * 16 + 12;
      out.push('<line class="marker-line" x1="' + mx + '" x2="' + mx + '" y1="' + (barY - 2) + '" y2="' + (ly - 10) + '"/>');
      out.push('<path class="marker-head" d="M' + mx + ',' + (barY + barH) + 'l-4,6h8z"/>');
      const tx = mk.anchor === 'end' ? mk.x + 4 : mk.x - 4;
      out.push('<text class="marker-label" x="' + tx.toFixed(2) + '" y="' + ly + '" text-anchor="' + mk.anchor + '">' + esc(mk.text) + '<tspan class="mv">' + esc(mk.value) + '</tspan></text>');
    }

    // segments pending deletion
    if (deleting.length) {
      const bytes = deleting.reduce((a, i) => a + all[i].size_bytes, 0);
      out.push('<text class="lane-label" x="' + padL + '" y="' + (delY + 12) + '">Pending deletion: ' + deleting.length + (deleting.length === 1 ? ' segment, ' : ' segments, ') + esc(fmtBytes(bytes)) + ' (removed after file.delete.delay.ms)</text>');
      let dx = padL;
      deleting.forEach((i, k) => {
        const s = all[i];
        const w = delWidths[k];
        out.push('<rect class="seg deleting" data-testid="timeline-segment" data-base-offset="' + s.base_offset + '" data-state="deleting" data-i="' + i + '" x="' + dx.toFixed(2) + '" y="' + (delY + 20) + '" width="' + w.toFixed(2) + '" height="24"/>');
        const label = fmtInt(s.base_offset);
        if (w >= label.length * 6.8 + 10) out.push('<text class="seg-label" x="' + (dx + 5).toFixed(2) + '" y="' + (delY + 36) + '">' + esc(label) + '</text>');
        if (st.selected === i) out.push('<rect class="seg-selected" x="' + (dx + 1.25).toFixed(2) + '" y="' + (delY + 21.25) + '" width="' + Math.max(1, w - 2.5).toFixed(2) + '" height="21.5"/>');
        dx += w;
      });
    }
    out.push('</svg>');
    el.innerHTML = out.join('');
  }

  function timeline(el, st) {
    el._timeline = st;
    el._draw = drawTimeline;
    charts.add(el);
    if (!el._bound) {
      el._bound = true;
      el.addEventListener('mousemove', (e) => {
        const seg = e.target.closest && e.target.closest('.seg');
        if (!seg) {
          hideTooltip();
          return;
        }
        const t = el._timeline;
        const i = Number(seg.getAttribute('data-i'));
        const segs = t.view.segments;
        const s = segs[i];
        if (!s) return;
        const sameLane = segs.filter((x) => (x.state === 'deleting') === (s.state === 'deleting'));
        const end = s.state === 'deleting' ? s.end_offset : segEnd(t.view, sameLane, sameLane.indexOf(s));
        showTooltip(segTooltip(t.view, s, end), e.clientX, e.clientY);
      });
      el.addEventListener('mouseleave', hideTooltip);
      el.addEventListener('click', (e) => {
        const seg = e.target.closest && e.target.closest('.seg');
        if (!seg) return;
        el._timeline.onSelect(Number(seg.getAttribute('data-i')));
      });
    }
    drawTimeline(el);
  }

  function legendSwatch(fill, extra) {
    return h('span', {
      html: '<svg viewBox="0 0 22 12" aria-hidden="true"><rect x="0.5" y="0.5" width="21" height="11" rx="2" style="fill:' + fill + '"/>' + (extra || '') + '</svg>',
    });
  }

  function timelineLegend(view) {
    const items = [
      [legendSwatch('var(--seg-closed)'), 'closed'],
      [legendSwatch('var(--seg-active)'), 'active'],
      [legendSwatch('var(--seg-deleting)'), 'deleting'],
      [legendSwatch('var(--seg-remote)'), 'remote (tiered, no longer local)'],
      [legendSwatch('var(--seg-closed)', '<g style="stroke:rgba(255,255,255,.6);stroke-width:2"><line x1="4" y1="12" x2="14" y2="0"/><line x1="11" y1="12" x2="21" y2="0"/></g>'), 'cleaned'],
      [legendSwatch('var(--seg-closed)', '<rect x="1.5" y="1.5" width="19" height="9" style="fill:none;stroke:var(--seg-remote);stroke-width:2;stroke-dasharray:3 2"/>'), 'tiered (also in remote storage)'],
    ];
    const rules = ['retention.ms', 'retention.bytes', 'local.retention.ms', 'local.retention.bytes'];
    const colors = { 'retention.ms': 'var(--cut-ms)', 'retention.bytes': 'var(--cut-bytes)', 'local.retention.ms': 'var(--cut-local-ms)', 'local.retention.bytes': 'var(--cut-local-bytes)' };
    const present = new Set((view.cut_points || []).map((c) => c.rule));
    return h('div', { class: 'legend' },
      items.map(([sw, text]) => h('span', null, sw, text)),
      rules.filter((r) => present.has(r)).map((r) => h('span', null, h('span', { class: 'lg-line', style: 'border-color:' + colors[r] }), r + ' cut')),
      h('span', { class: 'faint' }, 'widths proportional to size; hover for details, click to dump'));
  }

  async function pagePartition(c, topic, partition) {
    document.title = topic + '-' + partition + ' - seglog';
    const actions = await actionsEnabled();
    if (!c.alive) return;
    const base = '/topics/' + enc(topic) + '/partitions/' + partition;
    const tiles = h('div', { class: 'tiles' });
    const tlBox = h('div', { class: 'timeline-wrap' });
    const legendBox = h('div');
    const omitted = h('div', { class: 'card-note' });
    const segBox = h('div');
    const tl = { view: null, selected: null, onSelect: null };
    let selectedKey = null;

    // ---- dump
    const dump = { seg: null, file: 'log', page: 0, lines: 200, printData: false, seq: 0 };
    const dumpPre = h('pre', { class: 'dump placeholder', 'data-testid': 'dump-view' }, 'Click a segment in the timeline or the table to dump it (the text of seglog dump).');
    const dumpTitle = h('span', { class: 'hint' }, 'no segment selected');
    const fileSel = h('select', { 'aria-label': 'file', 'data-testid': 'dump-file', onchange: (e) => { dump.file = e.target.value; dump.page = 0; loadDump(); } },
      h('option', { value: 'log' }, '.log'), h('option', { value: 'index' }, '.index'), h('option', { value: 'timeindex' }, '.timeindex'));
    const printData = h('input', { type: 'checkbox', 'data-testid': 'dump-print-data', onchange: (e) => { dump.printData = e.target.checked; dump.page = 0; loadDump(); } });
    const linesSel = h('select', { 'aria-label': 'lines per page', onchange: (e) => { dump.lines = Number(e.target.value); dump.page = 0; loadDump(); } },
      [100, 200, 500, 1000].map((n) => h('option', { value: n, selected: n === 200 }, n + ' lines')));
    linesSel.value = '200';
    const prevBtn = h('button', { class: 'btn small', type: 'button', 'data-testid': 'dump-prev', disabled: true, onclick: () => { if (dump.page > 0) { dump.page--; loadDump(); } } }, 'Previous page');
    const nextBtn = h('button', { class: 'btn small', type: 'button', 'data-testid': 'dump-next', disabled: true, onclick: () => { dump.page++; loadDump(); } }, 'Next page');
    const pageLabel = h('span', { class: 'muted' });
    const wrapLines = h('input', { type: 'checkbox', onchange: (e) => dumpPre.classList.toggle('wrap', e.target.checked) });

    async function loadDump() {
      const seg = dump.seg;
      if (!seg) return;
      const my = ++dump.seq;
      dumpTitle.textContent = 'segment ' + fmtInt(seg.base_offset) + ' (' + (SEG_STATE_LABEL[seg.state] || seg.state) + ')';
      if (seg.state === 'remote' || seg.state === 'deleting') {
        dumpPre.className = 'dump placeholder';
        dumpPre.textContent = seg.state === 'remote'
          ? 'This segment is in remote storage only: it has no local files to dump.'
          : 'This segment is being deleted: its files are renamed .deleted and are no longer dumped.';
        prevBtn.disabled = true;
        nextBtn.disabled = true;
        pageLabel.textContent = '';
        return;
      }
      prevBtn.disabled = true;
      nextBtn.disabled = true;
      pageLabel.textContent = 'loading...';
      try {
        const d = await api(base + '/segments/' + seg.base_offset + '/dump' + qs({ file: dump.file, page: dump.page, lines: dump.lines, print_data_log: dump.printData ? 'true' : 'false' }));
        if (!c.alive || my !== dump.seq) return;
        dumpPre.className = 'dump' + (wrapLines.checked ? ' wrap' : '');
        dumpPre.textContent = d.lines.length ? d.lines.join('\n') : '(no lines on this page)';
        dumpPre.scrollTop = 0;
        dumpTitle.textContent = d.file;
        const first = d.page * d.lines_per_page + 1;
        pageLabel.textContent = 'page ' + (d.page + 1) + ' - lines ' + fmtInt(first) + '-' + fmtInt(first + d.lines.length - 1);
        prevBtn.disabled = d.page <= 0;
        nextBtn.disabled = !d.more;
      } catch (e) {
        if (!c.alive || my !== dump.seq) return;
        pageLabel.textContent = '';
        prevBtn.disabled = dump.page <= 0;
        showError(e);
      }
    }

    function select(i) {
      const seg = tl.view && tl.view.segments[i];
      if (!seg) return;
      tl.selected = i;
      selectedKey = seg.state + ':' + seg.base_offset;
      drawTimeline(tlBox);
      for (const tr of segBox.querySelectorAll('tr[data-i]')) tr.classList.toggle('selected', Number(tr.dataset.i) === i);
      dump.seg = seg;
      dump.page = 0;
      printData.disabled = false;
      loadDump();
    }
    tl.onSelect = select;

    function renderSegments(view) {
      const t = table('segments-table', [
        { label: 'Base offset', num: true }, { label: 'End offset', num: true }, { label: 'Offsets', num: true }, { label: 'Size', num: true },
        { label: 'Time range', title: 'first timestamp - largest timestamp' },
        { label: 'Offset index', title: 'entries (fill of the max entries)' }, { label: 'Time index', title: 'entries (fill of the max entries)' }, { label: 'State' },
      ], { tall: true, compact: true });
      const segs = view.segments;
      const lane = segs.filter((s) => s.state !== 'deleting');
      segs.forEach((s, i) => {
        const end = s.state === 'deleting' ? s.end_offset : segEnd(view, lane, lane.indexOf(s));
        const idx = (n, max) => h('td', { title: fmtInt(n) + ' of ' + fmtInt(max) + ' entries' }, minibar(max > 0 ? n / max : 0, n / max > 0.9 ? 'warn' : ''), fmtCompact(n), h('span', { class: 'faint' }, max > 0 ? ' ' + fmtPct(n / max, 2) : ''));
        const cls = s.state === 'active' ? 'ok' : s.state === 'deleting' ? 'bad' : s.state === 'remote' ? 'remote' : '';
        t.tbody.append(h('tr', { class: 'clickable' + (tl.selected === i ? ' selected' : ''), 'data-i': String(i), 'data-base-offset': String(s.base_offset), onclick: () => select(i) },
          h('td', { class: 'num mono' }, fmtInt(s.base_offset)),
          h('td', { class: 'num mono' }, orDash(s.end_offset, fmtInt)),
          h('td', { class: 'num' }, isNum(end) ? fmtInt(Math.max(0, end - s.base_offset)) : dash()),
          h('td', { class: 'num', title: fmtInt(s.size_bytes) + ' bytes' }, fmtBytes(s.size_bytes)),
          h('td', { class: 'mono' }, fmtRange(s.first_timestamp_ms, s.largest_timestamp_ms)),
          idx(s.offset_index_entries, s.offset_index_entries_max),
          idx(s.time_index_entries, s.time_index_entries_max),
          h('td', null, h('span', { class: 'badge ' + cls }, s.state), s.cleaned ? [' ', h('span', { class: 'badge info' }, 'cleaned')] : null, s.tiered && s.state !== 'remote' ? [' ', h('span', { class: 'badge remote' }, 'tiered')] : null)));
      });
      if (!segs.length) t.tbody.append(emptyRow(8, 'no segments'));
      swapTable(segBox, t.wrap);
    }

    async function load() {
      const view = await api(base + '/segments');
      if (!c.alive) return;
      tl.view = view;
      tl.selected = null;
      if (selectedKey) {
        const i = view.segments.findIndex((s) => s.state + ':' + s.base_offset === selectedKey);
        if (i >= 0) tl.selected = i;
      }
      const local = view.segments.filter((s) => s.state === 'active' || s.state === 'closed').length;
      const remote = view.segments.filter((s) => s.state === 'remote').length;
      clear(tiles,
        tile('Log start', fmtInt(view.log_start_offset), { mono: true, foot: view.local_log_start_offset !== view.log_start_offset ? 'local start ' + fmtInt(view.local_log_start_offset) : 'log start offset' }),
        tile('High watermark', fmtInt(view.high_watermark), { mono: true, foot: 'last stable ' + fmtInt(view.last_stable_offset) }),
        tile('Log end', fmtInt(view.log_end_offset), { mono: true, foot: 'log end offset' }),
        tile('Recovery point', fmtInt(view.recovery_point), { mono: true, foot: 'flushed up to' }),
        tile('Size', fmtBytes(view.size_bytes), { foot: fmtInt(view.size_bytes) + ' bytes local' }),
        tile('Segments', fmtInt(local), { foot: (remote ? remote + ' remote, ' : '') + view.segments.filter((s) => s.state === 'deleting').length + ' deleting' }),
        isNum(view.dirty_ratio) ? tile('Dirty ratio', fmtPct(view.dirty_ratio), { foot: 'first dirty ' + fmtInt(view.first_dirty_offset) }) : null,
        view.highest_offset_in_remote_storage >= 0 ? tile('Tiered up to', fmtInt(view.highest_offset_in_remote_storage), { mono: true, foot: 'highest offset in remote storage' }) : null);
      timeline(tlBox, tl);
      clear(legendBox, timelineLegend(view));
      omitted.textContent = view.segments_omitted > 0 ? fmtInt(view.segments_omitted) + ' older segments are not shown (the newest ' + fmtInt(view.segments.length) + ' are).' : '';
      renderSegments(view);
    }

    // ---- messages
    const msgs = { from: 'end', limit: 20, format: 'text', data: null, seq: 0, open: new Set() };
    const fromSel = h('select', { 'data-testid': 'messages-from', 'aria-label': 'start from', onchange: (e) => { msgs.from = e.target.value; syncInputs(); } },
      h('option', { value: 'end' }, 'the end (newest)'), h('option', { value: 'earliest' }, 'the earliest'), h('option', { value: 'offset' }, 'an offset'), h('option', { value: 'timestamp' }, 'a timestamp'));
    fromSel.value = 'end';
    const offsetIn = h('input', { type: 'number', min: 0, placeholder: 'offset', 'data-testid': 'messages-offset', 'aria-label': 'offset', oninput: () => { if (offsetIn.value !== '') { fromSel.value = 'offset'; msgs.from = 'offset'; syncInputs(); } } });
    const tsIn = h('input', { type: 'datetime-local', step: 1, 'data-testid': 'messages-timestamp', 'aria-label': 'timestamp', oninput: () => { if (tsIn.value) { fromSel.value = 'timestamp'; msgs.from = 'timestamp'; syncInputs(); } } });
    const limitSel = h('select', { 'aria-label': 'messages per page', onchange: (e) => { msgs.limit = Number(e.target.value); } },
      [10, 20, 50, 100].map((n) => h('option', { value: n }, n + ' messages')));
    limitSel.value = '20';
    const formatSel = h('select', { 'data-testid': 'messages-format', 'aria-label': 'format', onchange: (e) => { msgs.format = e.target.value; renderMessages(); } },
      h('option', { value: 'text' }, 'Text (UTF-8)'), h('option', { value: 'json' }, 'JSON'), h('option', { value: 'hex' }, 'Hex'), h('option', { value: 'base64' }, 'Base64'));
    formatSel.value = 'text';
    const loadBtn = h('button', { class: 'btn primary', type: 'button', 'data-testid': 'messages-load', onclick: () => loadFromInputs() }, 'Load');
    const olderBtn = h('button', { class: 'btn small', type: 'button', 'data-testid': 'messages-older', disabled: true, onclick: () => pageMessages(-1) }, 'Older');
    const newerBtn = h('button', { class: 'btn small', type: 'button', 'data-testid': 'messages-newer', disabled: true, onclick: () => pageMessages(1) }, 'Newer');
    const msgStatus = h('span', { class: 'status-line' });
    const msgBox = h('div');

    function syncInputs() {
      offsetIn.classList.toggle('muted', msgs.from !== 'offset');
      tsIn.classList.toggle('muted', msgs.from !== 'timestamp');
    }

    function loadFromInputs() {
      const from = fromSel.value;
      const p = { from, limit: msgs.limit };
      if (from === 'offset') {
        if (offsetIn.value === '' || Number(offsetIn.value) < 0) {
          showError('give an offset of 0 or more to start from');
          return;
        }
        p.offset = Math.floor(Number(offsetIn.value));
      }
      if (from === 'timestamp') {
        const t = tsIn.value ? new Date(tsIn.value).getTime() : NaN;
        if (!isNum(t) || t < 0) {
          showError('pick a date and time to start from');
          return;
        }
        p.timestamp = t;
      }
      loadMessages(p);
    }

    function pageMessages(dir) {
      const d = msgs.data;
      if (!d) return;
      const offset = dir < 0 ? Math.max(d.log_start_offset, d.start_offset - msgs.limit) : d.next_offset;
      fromSel.value = 'offset';
      msgs.from = 'offset';
      offsetIn.value = String(offset);
      syncInputs();
      loadMessages({ from: 'offset', offset, limit: msgs.limit });
    }

    async function loadMessages(p) {
      const my = ++msgs.seq;
      loadBtn.disabled = true;
      try {
        const d = await api(base + '/messages' + qs(p));
        if (!c.alive || my !== msgs.seq) return;
        msgs.data = d;
        msgs.open = new Set();
        renderMessages();
      } catch (e) {
        if (c.alive && my === msgs.seq) showError(e);
      } finally {
        if (my === msgs.seq) loadBtn.disabled = false;
      }
    }

    function renderMessages() {
      const d = msgs.data;
      if (!d) return;
      const n = d.messages.length;
      clear(msgStatus,
        n ? ['offsets ', h('span', { class: 'mono' }, fmtInt(d.messages[0].offset) + ' - ' + fmtInt(d.messages[n - 1].offset)), ' (' + n + (n === 1 ? ' message' : ' messages') + ')']
          : ['no messages from offset ', h('span', { class: 'mono' }, fmtInt(d.start_offset))],
        '; the log holds offsets ', h('span', { class: 'mono' }, fmtInt(d.log_start_offset)), ' to ', h('span', { class: 'mono' }, fmtInt(d.high_watermark - 1)),
        ' (high watermark ', h('span', { class: 'mono' }, fmtInt(d.high_watermark)), ')');
      olderBtn.disabled = d.start_offset <= d.log_start_offset;
      newerBtn.disabled = d.next_offset >= d.high_watermark;
      const t = table('messages-table', [
        { label: 'Offset', num: true }, { label: 'Timestamp' }, { label: 'Key' }, { label: 'Value' }, { label: 'Headers', num: true }, { label: 'Size', num: true },
      ], { tall: false });
      for (const m of d.messages) {
        const key = payload(m.key, msgs.format, false);
        const value = payload(m.value, msgs.format, false);
        const tr = h('tr', { class: 'clickable', 'data-testid': 'message-row', 'data-offset': String(m.offset), title: 'click for details' },
          h('td', { class: 'num mono' }, fmtInt(m.offset)),
          h('td', { class: 'mono', title: m.timestamp_type + ' ' + m.timestamp }, fmtTs(m.timestamp)),
          h('td', null, h('div', { class: 'msg-key' }, key === null ? h('span', { class: 'null' }, 'null') : shorten(key, 120))),
          h('td', null, h('div', { class: 'msg-val' }, value === null ? h('span', { class: 'null' }, 'null (tombstone)') : shorten(value, 400))),
          h('td', { class: 'num' }, String(m.headers.length)),
          h('td', { class: 'num' }, fmtBytes(m.size_bytes)));
        t.tbody.append(tr);
        const detail = h('tr', { class: 'msg-detail', hidden: !msgs.open.has(m.offset) }, h('td', { colspan: 6 }, messageDetail(m, msgs.format)));
        tr.addEventListener('click', () => {
          detail.hidden = !detail.hidden;
          if (detail.hidden) msgs.open.delete(m.offset);
          else msgs.open.add(m.offset);
        });
        t.tbody.append(detail);
      }
      if (!n) t.tbody.append(emptyRow(6, 'no messages here'));
      swapTable(msgBox, t.wrap);
    }

    const r = refresher(c, load);
    const deleteRecords = actions ? deleteRecordsForm(base, topic, partition, () => r.run(false)) : readOnlyNote();
    syncInputs();
    append(main, [
      pageHead([['Topics', '#/topics'], [topic, topicHref(topic)], ['partition ' + partition]], [topic, h('span', { class: 'sub' }, ' / partition ' + partition)], r.tools),
      tiles,
      h('div', { class: 'card' },
        h('h2', null, 'Log timeline', h('span', { class: 'hint' }, 'oldest segment on the left, active on the right')),
        tlBox, legendBox, omitted),
      h('div', { class: 'card' }, h('h2', null, 'Segments'), segBox),
      h('div', { class: 'card' },
        h('h2', null, 'Segment dump', dumpTitle),
        h('div', { class: 'toolbar' },
          h('label', null, 'File', fileSel),
          h('label', null, printData, 'print data log'),
          linesSel,
          h('label', null, wrapLines, 'wrap lines'),
          h('span', { class: 'grow' }),
          pageLabel, prevBtn, nextBtn),
        dumpPre),
      h('div', { class: 'card' },
        h('h2', null, 'Messages'),
        h('div', { class: 'toolbar' },
          h('label', null, 'From', fromSel), offsetIn, tsIn, limitSel, loadBtn),
        h('div', { class: 'toolbar' }, msgStatus, h('span', { class: 'grow' }), h('label', null, 'Show as', formatSel), olderBtn, newerBtn),
        msgBox),
      h('div', { class: 'card' }, h('h2', null, 'Delete records', h('span', { class: 'hint' }, 'moves the log start forward (DeleteRecords)')), deleteRecords),
    ]);
    await Promise.all([r.run(false), loadMessages({ from: 'end', limit: msgs.limit })]);
  }

  function deleteRecordsForm(base, topic, partition, after) {
    const off = h('input', { type: 'number', min: -1, placeholder: 'offset', 'aria-label': 'delete records before offset' });
    return h('form', {
      class: 'form-grid',
      onsubmit: async (e) => {
        e.preventDefault();
        if (off.value === '') {
          showError('give the offset to delete records before (-1: the high watermark)');
          return;
        }
        const before = Math.floor(Number(off.value));
        if (!window.confirm('Delete every record of ' + topic + '-' + partition + ' before offset ' + (before < 0 ? 'the high watermark' : before) + '?')) return;
        if (await act('POST', base + '/delete-records', { before_offset: before })) {
          off.value = '';
          after();
        }
      },
    },
    h('label', { class: 'field' }, 'Before offset', off),
    h('button', { class: 'btn danger', type: 'submit' }, 'Delete records'),
    h('span', { class: 'muted', style: 'align-self:center' }, 'every record below the offset goes; -1 deletes up to the high watermark'));
  }

  // ---- message payloads

  const utf8 = new TextDecoder('utf-8');

  function b64bytes(b64) {
    let bin;
    try {
      bin = atob(b64);
    } catch (e) {
      return new Uint8Array(0);
    }
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  function hexOf(bytes, limit) {
    const n = Math.min(bytes.length, limit || bytes.length);
    const parts = [];
    for (let i = 0; i < n; i++) parts.push(bytes[i].toString(16).padStart(2, '0'));
    return parts.join(' ') + (n < bytes.length ? ' ...' : '');
  }

  function hexDump(bytes) {
    const lines = [];
    const max = Math.min(bytes.length, 16 * 256);
    for (let i = 0; i < max; i += 16) {
      const row = bytes.subarray(i, Math.min(i + 16, bytes.length));
      let hex = '';
      let text = '';
      for (let j = 0; j < 16; j++) {
        if (j < row.length) {
          hex += row[j].toString(16).padStart(2, '0') + ' ';
          text += row[j] >= 32 && row[j] < 127 ? String.fromCharCode(row[j]) : '.';
        } else hex += '   ';
        if (j === 7) hex += ' ';
      }
      lines.push(i.toString(16).padStart(8, '0') + '  ' + hex + ' |' + text + '|');
    }
    if (max < bytes.length) lines.push('... ' + fmtInt(bytes.length - max) + ' more bytes');
    return lines.join('\n');
  }

  // A key or value (base64 or null) as `format` shows it; `full` for the detail view.
  function payload(b64, format, full) {
    if (b64 === null || b64 === undefined) return null;
    if (format === 'base64') return b64;
    const bytes = b64bytes(b64);
    if (format === 'hex') return full ? hexDump(bytes) : hexOf(bytes, 96);
    const text = utf8.decode(bytes);
    if (format === 'json') {
      try {
        const v = JSON.parse(text);
        return full ? JSON.stringify(v, null, 2) : JSON.stringify(v);
      } catch (e) {
        return text;
      }
    }
    return text;
  }

  function shorten(s, n) {
    return s.length > n ? s.slice(0, n) + '...' : s;
  }

  function messageDetail(m, format) {
    const key = payload(m.key, format, true);
    const value = payload(m.value, format, true);
    return h('div', null,
      h('div', { class: 'msg-head' }, 'offset ', h('span', { class: 'mono' }, fmtInt(m.offset)), ' - ' + m.timestamp_type + ' ', h('span', { class: 'mono' }, fmtTs(m.timestamp) + ' (' + m.timestamp + ')'), ' - ' + fmtInt(m.size_bytes) + ' bytes'),
      h('h4', null, 'Key'), key === null ? h('pre', { class: 'null' }, 'null') : h('pre', null, key),
      h('h4', null, 'Value'), value === null ? h('pre', { class: 'null' }, 'null (tombstone)') : h('pre', null, value),
      m.headers.length ? [h('h4', null, 'Headers'), h('pre', null, m.headers.map((hd) => hd.key + ': ' + (hd.value === null ? 'null' : payload(hd.value, format === 'json' ? 'text' : format, false))).join('\n'))] : null);
  }

  // ------------------------------------------------------------------ groups

  const groupsState = { filter: '', offset: 0, limit: 50 };

  async function pageGroups(c) {
    document.title = 'Consumer groups - seglog';
    const st = groupsState;
    const holder = h('div');
    const pagerBox = h('div');
    const count = h('span', { class: 'muted' });
    let seq = 0;

    async function load() {
      const my = ++seq;
      const data = await api('/groups' + qs({ filter: st.filter, offset: st.offset, limit: st.limit }));
      if (!c.alive || my !== seq) return;
      if (data.total > 0 && st.offset >= data.total) {
        st.offset = Math.max(0, Math.floor((data.total - 1) / st.limit) * st.limit);
        return load();
      }
      const t = table('groups-table', [
        { label: 'Group' }, { label: 'State' }, { label: 'Protocol' }, { label: 'Protocol type' },
        { label: 'Members', num: true }, { label: 'Partitions', num: true, title: 'partitions with a committed offset' }, { label: 'Lag', num: true, title: 'sum of high watermark - committed offset' },
      ], { tall: true });
      for (const g of data.groups) {
        const href = groupHref(g.group_id);
        t.tbody.append(h('tr', { class: 'clickable', 'data-testid': 'group-row', 'data-group': g.group_id, onclick: (e) => { if (!e.target.closest('a')) location.hash = href; } },
          h('td', null, h('a', { href }, g.group_id)),
          h('td', null, stateBadge(g.state)),
          h('td', null, g.protocol),
          h('td', null, g.protocol_type || dash()),
          h('td', { class: 'num' }, fmtInt(g.members)),
          h('td', { class: 'num' }, fmtInt(g.partitions)),
          h('td', { class: 'num' + (g.lag > 0 ? ' warn-text' : ''), 'data-testid': 'group-lag', 'data-lag': String(g.lag) }, fmtInt(g.lag))));
      }
      if (!data.groups.length) t.tbody.append(emptyRow(7, st.filter ? 'no group matches "' + st.filter + '"' : 'no consumer groups'));
      swapTable(holder, t.wrap);
      clear(pagerBox, pager(st, data.total, () => r.run(false)));
      count.textContent = fmtInt(data.total) + (data.total === 1 ? ' group' : ' groups');
    }

    const r = refresher(c, load);
    const filter = h('input', {
      type: 'search', placeholder: 'Filter groups by id', value: st.filter, 'aria-label': 'filter groups', 'data-testid': 'groups-filter',
      oninput: debounce((e) => { st.filter = e.target.value.trim(); st.offset = 0; r.run(false); }, 250),
    });
    append(main, [
      pageHead([], 'Consumer groups', r.tools),
      h('div', { class: 'card' }, h('div', { class: 'toolbar' }, filter, h('span', { class: 'grow' }), count), holder, pagerBox),
    ]);
    await r.run(false);
  }

  async function pageGroup(c, group) {
    document.title = group + ' - seglog';
    const actions = await actionsEnabled();
    if (!c.alive) return;
    const tiles = h('div', { class: 'tiles' });
    const lagChart = chartBox();
    const histChart = chartBox();
    const lagBox = h('div');
    const membersBox = h('div');
    const stateBox = h('span');
    const resetBox = h('div');
    let topics = [];

    async function load() {
      const g = await api('/groups/' + enc(group));
      if (!c.alive) return;
      clear(stateBox, ' ', stateBadge(g.state));
      clear(tiles,
        tile('State', g.state || '-'),
        tile('Protocol', g.protocol, { foot: 'protocol type: ' + (g.protocol_type || '-') }),
        tile('Members', fmtInt(g.members.length)),
        tile('Partitions', fmtInt(g.partitions.length), { foot: 'with committed offsets' }),
        (() => {
          const t = tile('Total lag', fmtInt(g.lag), { foot: 'messages behind the high watermarks' });
          const v = t.querySelector('.value');
          v.setAttribute('data-testid', 'group-lag-total');
          v.setAttribute('data-lag', String(g.lag));
          return t;
        })());
      barChart(lagChart, {
        testid: 'chart-lag-partitions', label: 'lag per partition', kind: 'count', empty: 'no committed offsets', minHeight: 170,
        items: g.partitions.map((p) => ({ label: p.topic + '-' + p.partition, value: p.lag, title: p.topic + '-' + p.partition + ': lag ' + fmtInt(p.lag) + ' (committed ' + fmtInt(p.committed_offset) + ', high watermark ' + fmtInt(p.high_watermark) + ')' })),
      });
      lineChart(histChart, {
        testid: 'chart-lag-history', label: 'total lag over time', kind: 'count', height: Math.max(180, Math.min(320, 30 + g.partitions.length * 24)),
        series: [{ name: 'total lag', cls: 'c2', values: g.lag_history.map((p) => [p.t_ms, p.lag]) }],
        empty: 'no lag samples yet (sampled every few intervals)',
      });
      const t = table('lag-table', [
        { label: 'Topic' }, { label: 'Partition', num: true }, { label: 'Committed offset', num: true }, { label: 'High watermark', num: true }, { label: 'Lag', num: true }, { label: 'Member' },
      ], { tall: true });
      for (const p of g.partitions) {
        t.tbody.append(h('tr', { 'data-testid': 'lag-row', 'data-topic': p.topic, 'data-partition': String(p.partition) },
          h('td', null, h('a', { href: topicHref(p.topic) }, p.topic)),
          h('td', { class: 'num' }, h('a', { href: partitionHref(p.topic, p.partition) }, String(p.partition))),
          h('td', { class: 'num mono' }, fmtInt(p.committed_offset)),
          h('td', { class: 'num mono' }, orDash(p.high_watermark, fmtInt)),
          h('td', { class: 'num' + (p.lag > 0 ? ' warn-text' : ''), 'data-lag': String(p.lag) }, orDash(p.lag, fmtInt)),
          h('td', { class: 'mono' }, p.member_id || dash())));
      }
      if (!g.partitions.length) t.tbody.append(emptyRow(6, 'no committed offsets'));
      swapTable(lagBox, t.wrap);
      const mt = table('members-table', [{ label: 'Member id' }, { label: 'Client id' }, { label: 'Host' }, { label: 'Assignment' }], { short: true });
      for (const m of g.members) {
        const assigned = Object.entries(m.assignment || {}).map(([tp, ps]) => tp + ': ' + ps.join(', '));
        mt.tbody.append(h('tr', null,
          h('td', { class: 'mono' }, m.member_id),
          h('td', null, m.client_id || dash()),
          h('td', { class: 'mono' }, m.client_host || dash()),
          h('td', { class: 'wrap mono' }, assigned.length ? assigned.join('; ') : dash())));
      }
      if (!g.members.length) mt.tbody.append(emptyRow(4, 'no members (the group is ' + (g.state || 'empty').toLowerCase() + ')'));
      swapTable(membersBox, mt.wrap);
      const newTopics = [...new Set(g.partitions.map((p) => p.topic))];
      if (actions && newTopics.join('\n') !== topics.join('\n')) {
        topics = newTopics;
        clear(resetBox, resetOffsetsForm(group, topics, () => r.run(false)));
      }
    }

    const r = refresher(c, load);
    append(main, [
      pageHead([['Consumer groups', '#/groups'], [group]], [group, stateBox], r.tools),
      tiles,
      h('div', { class: 'grid grid-2' },
        h('div', { class: 'card' }, h('h2', null, 'Lag per partition'), lagChart),
        h('div', { class: 'card' }, h('h2', null, 'Total lag over time', h('span', { class: 'hint' }, 'last hour')), histChart)),
      h('div', { class: 'card' }, h('h2', null, 'Partitions'), lagBox),
      h('div', { class: 'card' }, h('h2', null, 'Members'), membersBox),
      h('div', { class: 'card' }, h('h2', null, 'Reset offsets', h('span', { class: 'hint' }, 'the group must have no members')), actions ? resetBox : readOnlyNote()),
    ]);
    if (actions) resetBox.append(resetOffsetsForm(group, topics, () => r.run(false)));
    await r.run(false);
  }

  function resetOffsetsForm(group, topics, after) {
    const to = h('select', { 'aria-label': 'reset to' },
      h('option', { value: 'earliest' }, 'earliest (log start)'), h('option', { value: 'latest' }, 'latest (high watermark)'),
      h('option', { value: 'offset' }, 'an offset'), h('option', { value: 'timestamp' }, 'a timestamp'));
    const off = h('input', { type: 'number', min: 0, placeholder: 'offset', 'aria-label': 'offset' });
    const ts = h('input', { type: 'datetime-local', step: 1, 'aria-label': 'timestamp' });
    const topic = h('select', { 'aria-label': 'topic' }, h('option', { value: '' }, 'every committed partition'), topics.map((t) => h('option', { value: t }, t)));
    const sync = () => {
      off.disabled = to.value !== 'offset';
      ts.disabled = to.value !== 'timestamp';
    };
    to.addEventListener('change', sync);
    sync();
    return h('form', {
      class: 'form-grid',
      onsubmit: async (e) => {
        e.preventDefault();
        const body = { to: to.value };
        if (topic.value) body.topic = topic.value;
        if (to.value === 'offset') {
          if (off.value === '') {
            showError('give the offset to reset to');
            return;
          }
          body.offset = Math.floor(Number(off.value));
        }
        if (to.value === 'timestamp') {
          const t = ts.value ? new Date(ts.value).getTime() : NaN;
          if (!isNum(t) || t < 0) {
            showError('pick the date and time to reset to');
            return;
          }
          body.timestamp = t;
        }
        const what = body.to === 'offset' ? 'offset ' + body.offset : body.to === 'timestamp' ? fmtTs(body.timestamp) : body.to;
        if (!window.confirm('Reset the offsets of group ' + group + (body.topic ? ' on ' + body.topic : '') + ' to ' + what + '?')) return;
        if (await act('POST', '/groups/' + enc(group) + '/reset-offsets', body)) after();
      },
    },
    h('label', { class: 'field' }, 'Reset to', to),
    h('label', { class: 'field' }, 'Offset', off),
    h('label', { class: 'field' }, 'Timestamp', ts),
    h('label', { class: 'field' }, 'Topic', topic),
    h('button', { class: 'btn danger', type: 'submit' }, 'Reset offsets'));
  }

  // ------------------------------------------------------------------ health

  const healthState = { chart: null };

  async function pageHealth(c) {
    document.title = 'Health - seglog';
    const tiles = h('div', { class: 'tiles' });
    const cleanerBox = h('div');
    const recoveryBox = h('div');
    const fsyncBox = h('div');
    const filesBox = h('div');
    const cleanerParts = h('div');
    const cleanerCount = h('span', { class: 'hint' });
    const reqBox = h('div');
    const reqChart = chartBox();
    const problems = h('div');
    let last = null;
    const chartSel = h('select', { 'aria-label': 'requests chart', onchange: (e) => { healthState.chart = e.target.value; if (last) drawRequests(last); } },
      h('option', { value: 'rate' }, 'requests per second'), h('option', { value: 'total' }, 'requests since start'));
    chartSel.value = healthState.chart || 'rate';

    function drawRequests(reqs) {
      const rate = healthState.chart === 'rate';
      const items = reqs.slice().sort((a, b) => (rate ? b.requests_per_sec - a.requests_per_sec : b.requests_total - a.requests_total) || a.api.localeCompare(b.api)).slice(0, 25)
        .map((q) => ({ label: q.api, value: rate ? q.requests_per_sec : q.requests_total }));
      barChart(reqChart, { testid: 'chart-requests', label: 'requests per API', kind: rate ? 'rate' : 'count', items, empty: 'no requests yet' });
    }

    const ms = (us) => (isNum(us) ? (us / 1000).toFixed(2) + ' ms' : '-');

    async function load() {
      const d = await api('/health');
      if (!c.alive) return;
      last = d.requests;
      if (!healthState.chart) {
        healthState.chart = d.requests.some((q) => q.requests_per_sec > 0) ? 'rate' : 'total';
        chartSel.value = healthState.chart;
      }
      const cl = d.cleaner;
      const rc = d.recovery;
      const fs = d.fsync_latency;
      const of = d.open_files;
      clear(tiles,
        tile('Offline log dirs', String(d.offline_log_dirs.length), { bad: d.offline_log_dirs.length > 0 }),
        tile('Uncleanable', fmtInt(cl.uncleanable_partitions), { bad: cl.uncleanable_partitions > 0, foot: fmtBytes(cl.uncleanable_bytes) }),
        tile('Failed cleanings', fmtInt(cl.failed_rounds), { bad: cl.failed_rounds > 0, foot: fmtInt(cl.completed_rounds) + ' completed' }),
        tile('fsync p99', ms(fs.p99_us), { foot: fmtInt(fs.count) + ' fsyncs' }),
        tile('Open files', fmtInt(of.open), { foot: 'of ' + fmtInt(of.max) + ' allowed' }),
        tile('Fenced tiered', String(d.fenced_tiered_partitions.length), { bad: d.fenced_tiered_partitions.length > 0, foot: 'partitions' }));
      clear(cleanerBox, facts([
        ['Threads', fmtInt(cl.threads)],
        ['Max dirty', fmtNum(cl.max_dirty_percent, 1) + ' %'],
        ['Last run', cl.time_since_last_run_ms >= 0 ? fmtDuration(cl.time_since_last_run_ms) + ' ago' : 'never'],
        ['Rounds', fmtInt(cl.completed_rounds) + ' completed, ', cl.failed_rounds > 0 ? h('span', { class: 'bad-text' }, fmtInt(cl.failed_rounds) + ' failed') : '0 failed'],
        ['Uncleanable', h('span', { class: cl.uncleanable_partitions > 0 ? 'bad-text' : '' }, fmtInt(cl.uncleanable_partitions) + ' partitions, ' + fmtBytes(cl.uncleanable_bytes))],
        ['Bytes read', fmtBytes(cl.bytes_read)],
        ['Bytes written', fmtBytes(cl.bytes_written)],
      ].map((p) => (p.length > 2 ? [p[0], h('span', null, p.slice(1))] : p))));
      clear(recoveryBox, facts([
        ['Open', fmtInt(rc.open_ms) + ' ms, ' + fmtInt(rc.partitions) + ' partitions listed'],
        ['Log dirs', h('span', null, fmtInt(rc.clean_dirs) + ' clean, ', h('span', { class: rc.unclean_dirs > 0 ? 'warn-text' : '' }, fmtInt(rc.unclean_dirs) + ' unclean'))],
        ['Background load', rc.background_done ? h('span', null, h('span', { class: 'badge ok' }, 'done'), ' in ' + fmtInt(rc.background_ms) + ' ms') : h('span', { class: 'badge warn' }, 'running')],
        ['Loaded', fmtInt(rc.loaded) + ' partitions'],
        ['Failed', h('span', { class: rc.failed > 0 ? 'bad-text' : '' }, fmtInt(rc.failed) + ' partitions')],
        ['Segments recovered', fmtInt(rc.segments_recovered)],
        ['Bytes truncated', h('span', { class: rc.bytes_truncated > 0 ? 'warn-text' : '' }, fmtBytes(rc.bytes_truncated))],
      ]));
      const maxUs = Math.max(1, fs.max_us);
      const pct = (label, us) => [label, h('span', null, minibar(us / maxUs), h('span', { class: 'mono' }, ms(us)))];
      clear(fsyncBox, facts([
        ['Count', fmtInt(fs.count)],
        pct('p50', fs.p50_us),
        pct('p99', fs.p99_us),
        pct('p99.9', fs.p999_us),
        pct('max', fs.max_us),
      ]));
      clear(filesBox, facts([
        ['Open', h('span', null, minibar(of.max > 0 ? of.open / of.max : 0, of.max > 0 && of.open / of.max > 0.9 ? 'warn' : ''), fmtInt(of.open) + ' / ' + fmtInt(of.max))],
        ['Peak', fmtInt(of.peak)],
        ['Evictions', fmtInt(of.evictions)],
      ]));
      const ct = table('cleaner-table', [{ label: 'Topic' }, { label: 'Partition', num: true }, { label: 'Dirty ratio' }, { label: 'First dirty offset', num: true }, { label: 'State' }, { label: 'Uncleanable' }], { short: true });
      for (const p of cl.partitions) {
        ct.tbody.append(h('tr', null,
          h('td', null, h('a', { href: topicHref(p.topic) }, p.topic)),
          h('td', { class: 'num' }, h('a', { href: partitionHref(p.topic, p.partition) }, String(p.partition))),
          h('td', null, minibar(p.dirty_ratio, p.dirty_ratio >= 0.5 ? 'warn' : ''), fmtPct(p.dirty_ratio)),
          h('td', { class: 'num mono' }, fmtInt(p.first_dirty_offset)),
          h('td', null, p.state === 'idle' ? h('span', { class: 'muted' }, 'idle') : h('span', { class: 'badge ' + (p.state === 'cleaning' ? 'info' : 'warn') }, p.state)),
          h('td', { class: 'wrap' }, p.uncleanable ? h('span', { class: 'bad-text' }, p.uncleanable) : dash())));
      }
      if (!cl.partitions.length) ct.tbody.append(emptyRow(6, 'no compacted partitions loaded'));
      cleanerCount.textContent = cl.partitions.length + ' compacted partitions, dirtiest first';
      swapTable(cleanerParts, ct.wrap);
      const rt = table('requests-table', [{ label: 'API' }, { label: 'Key', num: true }, { label: 'Requests', num: true }, { label: 'Failed', num: true }, { label: 'Per second', num: true }], { short: true });
      for (const q of d.requests) {
        rt.tbody.append(h('tr', { 'data-api': q.api },
          h('td', null, q.api),
          h('td', { class: 'num mono' }, String(q.api_key)),
          h('td', { class: 'num' }, fmtInt(q.requests_total)),
          h('td', { class: 'num' + (q.failed_total > 0 ? ' bad-text' : '') }, fmtInt(q.failed_total)),
          h('td', { class: 'num' }, fmtNum(q.requests_per_sec, 2))));
      }
      if (!d.requests.length) rt.tbody.append(emptyRow(5, 'no requests yet'));
      swapTable(reqBox, rt.wrap);
      drawRequests(d.requests);
      const bad = [];
      if (d.offline_log_dirs.length) bad.push(h('div', null, h('b', null, 'Offline log directories: '), h('span', { class: 'mono' }, d.offline_log_dirs.join(', '))));
      if (d.fenced_tiered_partitions.length) bad.push(h('div', null, h('b', null, 'Fenced tiered partitions: '), h('span', { class: 'mono' }, d.fenced_tiered_partitions.join(', '))));
      clear(problems, bad.length ? h('div', { class: 'card bad-text', style: 'border-color:var(--bad);margin-top:16px' }, bad) : null);
    }

    const r = refresher(c, load);
    append(main, [
      pageHead([], 'Health', r.tools),
      tiles,
      problems,
      h('div', { class: 'grid grid-3', style: 'margin-top:16px' },
        h('div', { class: 'card', 'data-testid': 'cleaner-card' }, h('h2', null, 'Log cleaner'), cleanerBox),
        h('div', { class: 'card', 'data-testid': 'recovery-card' }, h('h2', null, 'Recovery', h('span', { class: 'hint' }, 'at the last start')), recoveryBox),
        h('div', { class: 'stack' },
          h('div', { class: 'card', 'data-testid': 'fsync-card' }, h('h2', null, 'fsync latency'), fsyncBox),
          h('div', { class: 'card', 'data-testid': 'files-card' }, h('h2', null, 'Open files'), filesBox))),
      h('div', { class: 'grid grid-2', style: 'margin-top:16px' },
        h('div', { class: 'card' }, h('h2', null, 'Requests per API'), reqBox),
        h('div', { class: 'card' }, h('h2', null, 'Request rates', h('span', { class: 'spacer' }), chartSel), reqChart)),
      h('div', { class: 'card' }, h('h2', null, 'Cleaner partitions', cleanerCount), cleanerParts),
    ]);
    await r.run(false);
  }

  // ------------------------------------------------------------------ start

  window.addEventListener('hashchange', () => {
    navigate();
  });
  navigate();
})();
