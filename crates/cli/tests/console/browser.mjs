// The web console's real-browser test: drives chromium (playwright-core) through every page of seglog's console and checks what they show.
//
// Environment: SEGLOG_CONSOLE_URL (the console, e.g. http://127.0.0.1:9309), SEGLOG_CHROMIUM (the
// chromium binary), SEGLOG_SCREENSHOTS (a directory for <page>.png), SEGLOG_CONSOLE_EXPECT (JSON:
// topic, topic_size_bytes, topic_records, partition, segments, group, group_lag, topics,
// partitions, and for a broker with security login: {user, password}, with which the run logs
// in through the login form first and logs out at the end). Prints one "ok - ..." or "not ok - ..." line per check; exits 1 when any failed.
// Any console error or uncaught exception in the page fails the run.

import { chromium } from 'playwright-core';
import fs from 'node:fs';
import path from 'node:path';

const RUN_TIME_MAX_MS = 60000;
const WAIT_MS = 15000;

const url = (process.env.SEGLOG_CONSOLE_URL || 'http://127.0.0.1:9309').replace(/\/+$/, '');
const executablePath = process.env.SEGLOG_CHROMIUM || '/usr/bin/chromium';
const shots = process.env.SEGLOG_SCREENSHOTS || path.join(process.cwd(), 'screenshots');
let expect;
try {
  expect = JSON.parse(process.env.SEGLOG_CONSOLE_EXPECT || '');
} catch (e) {
  console.log('not ok - SEGLOG_CONSOLE_EXPECT is not JSON: ' + e.message);
  process.exit(1);
}
fs.mkdirSync(shots, { recursive: true });

let failures = 0;
function check(name, ok, detail) {
  if (ok) console.log('ok - ' + name);
  else {
    failures++;
    console.log('not ok - ' + name + (detail !== undefined ? ' (' + detail + ')' : ''));
  }
  return ok;
}

const overall = setTimeout(() => {
  console.log('not ok - the run took longer than ' + RUN_TIME_MAX_MS / 1000 + ' s');
  process.exit(1);
}, RUN_TIME_MAX_MS);

// Errors the pages report: every console error and uncaught exception, except the browser's
// own "Failed to load resource" lines while a step expects an HTTP error on purpose.
const pageErrors = [];
let httpErrorsExpected = false;
function watch(page, label) {
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const text = msg.text();
    if (httpErrorsExpected && /Failed to load resource/.test(text)) return;
    pageErrors.push(label + ': console error: ' + text);
  });
  page.on('pageerror', (error) => {
    pageErrors.push(label + ': uncaught exception: ' + (error && error.message ? error.message : String(error)));
  });
}

// The session cookie once the run has logged in (a broker with security).
let cookie = null;

async function api(p) {
  const res = await fetch(url + '/api/v1' + p, { headers: cookie ? { Cookie: cookie } : {} });
  if (!res.ok) throw new Error('GET ' + p + ': HTTP ' + res.status + ' ' + (await res.text()));
  return res.json();
}

// Marks the current page stale, runs `go` (a click or a navigation), and waits until the next
// page says it has rendered its data.
async function loaded(page, go) {
  await page.evaluate(() => {
    const main = document.querySelector('main');
    if (main) main.setAttribute('data-loaded', 'stale');
  }).catch(() => {});
  await go();
  await page.waitForSelector('main[data-loaded="true"]', { timeout: WAIT_MS });
}

async function bannerText(page) {
  const banner = page.locator('[data-testid="error-banner"]');
  if ((await banner.count()) === 0 || !(await banner.isVisible())) return null;
  return (await banner.innerText()).trim();
}

async function noBanner(page, what) {
  const text = await bannerText(page);
  check(what + ': no error banner', text === null, text || '');
}

async function shot(page, name) {
  await page.mouse.move(0, 0);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(shots, name + '.png'), fullPage: true });
}

async function attr(page, selector, name) {
  const loc = page.locator(selector).first();
  if ((await loc.count()) === 0) return null;
  return loc.getAttribute(name);
}

async function step(name, fn) {
  try {
    await fn();
  } catch (e) {
    check(name, false, (e && e.message ? e.message : String(e)).split('\n')[0]);
  }
}

const topic = expect.topic;
const partition = expect.partition ?? 0;
const group = expect.group;
const cssEsc = (s) => String(s).replace(/["\\]/g, '\\$&');

let browser;
try {
  browser = await chromium.launch({
    executablePath,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  watch(page, 'light');

  if (expect.login) {
    await step('login', async () => {
      await loaded(page, () => page.goto(url + '/#/'));
      check('login: the form is shown', (await page.locator('[data-testid="login-user"]').count()) === 1);
      await shot(page, 'login');
      httpErrorsExpected = true;
      await page.fill('[data-testid="login-user"]', expect.login.user);
      await page.fill('[data-testid="login-password"]', expect.login.password + '-wrong');
      await page.click('[data-testid="login-submit"]');
      await page.waitForSelector('[data-testid="error-banner"]:not([hidden])', { timeout: WAIT_MS });
      const refused = await bannerText(page);
      check('login: a wrong password is refused', refused !== null && /wrong user name or password/.test(refused), refused || '');
      httpErrorsExpected = false;
      await page.fill('[data-testid="login-password"]', expect.login.password);
      await loaded(page, () => page.click('[data-testid="login-submit"]'));
      const who = await page.locator('[data-testid="session"]').innerText();
      check('login: the sidebar names the user', who.includes('User:' + expect.login.user), who);
      const cookies = await context.cookies();
      const session = cookies.find((c) => c.name === 'seglog_console');
      check('login: an HttpOnly session cookie', Boolean(session && session.httpOnly));
      cookie = session ? 'seglog_console=' + session.value : null;
    });
  }

  await step('overview', async () => {
    // After the login the page is already at #/ (a goto to the same URL would not load it).
    await loaded(page, () => (expect.login ? page.reload() : page.goto(url + '/#/')));
    await noBanner(page, 'overview');
    const topics = (await page.locator('[data-testid="overview-topics"]').innerText()).trim();
    check('overview: topic count is ' + expect.topics, topics === String(expect.topics), 'shows ' + topics);
    const partitions = (await page.locator('[data-testid="overview-partitions"]').innerText()).trim();
    check('overview: partition count is ' + expect.partitions, partitions === String(expect.partitions), 'shows ' + partitions);
    check('overview: bytes in/out chart drawn', (await page.locator('svg[data-testid="chart-bytes-in"]').count()) === 1);
    check('overview: records in chart drawn', (await page.locator('svg[data-testid="chart-records-in"]').count()) === 1);
    const nav = await page.locator('[data-testid^="nav-"]').count();
    check('overview: four nav links', nav === 4, nav + ' found');
    await shot(page, 'overview');
  });

  await step('topics', async () => {
    await loaded(page, () => page.click('[data-testid="nav-topics"]'));
    await noBanner(page, 'topics');
    check('topics: the table is shown', await page.locator('[data-testid="topics-table"]').isVisible());
    const row = '[data-testid="topic-row"][data-topic="' + cssEsc(topic) + '"]';
    if ((await page.locator(row).count()) === 0) {
      // not on the first page: filter the list down to it
      await page.fill('[data-testid="topics-filter"]', topic);
      await page.waitForSelector(row, { timeout: WAIT_MS }).catch(() => {});
    }
    check('topics: a row for ' + topic, (await page.locator(row).count()) === 1);
    const bytes = await attr(page, row + ' [data-testid="topic-size"]', 'data-bytes');
    check('topics: ' + topic + ' holds ' + expect.topic_size_bytes + ' bytes', bytes === String(expect.topic_size_bytes), 'shows ' + bytes);
    const records = await attr(page, row + ' [data-testid="topic-records"]', 'data-records');
    check('topics: ' + topic + ' holds ' + expect.topic_records + ' records', records === String(expect.topic_records), 'shows ' + records);
    await shot(page, 'topics');
  });

  await step('topic', async () => {
    const row = '[data-testid="topic-row"][data-topic="' + cssEsc(topic) + '"] a';
    await loaded(page, () => page.click(row));
    await noBanner(page, 'topic');
    check('topic: the page title names ' + topic, (await page.locator('[data-testid="page-title"]').innerText()).includes(topic));
    const rows = await page.locator('[data-testid="partition-row"]').count();
    check('topic: partition rows shown', rows > 0, rows + ' rows');
    check('topic: partition ' + partition + ' listed', (await page.locator('[data-testid="partition-row"][data-partition="' + partition + '"]').count()) === 1);
    const configs = await page.locator('[data-testid="configs-table"] tbody tr').count();
    check('topic: configs listed', configs > 1, configs + ' rows');
    await shot(page, 'topic');
  });

  let segmentsView = null;
  await step('partition', async () => {
    segmentsView = await api('/topics/' + encodeURIComponent(topic) + '/partitions/' + partition + '/segments');
    await loaded(page, () => page.click('[data-testid="partition-row"][data-partition="' + partition + '"] a'));
    await noBanner(page, 'partition');
    check('partition: the timeline is drawn', (await page.locator('svg[data-testid="timeline"]').count()) === 1);
    const local = await page.locator('[data-testid="timeline-segment"][data-state="active"], [data-testid="timeline-segment"][data-state="closed"]').count();
    check('partition: the timeline has ' + expect.segments + ' local segments', local === expect.segments, local + ' drawn');
    const active = await page.locator('[data-testid="timeline-segment"][data-state="active"]').count();
    check('partition: one active segment', active === 1, active + ' drawn');
    const cuts = await page.locator('[data-testid="cut-line"]').count();
    check('partition: a cut line per retention rule', cuts === segmentsView.cut_points.length, cuts + ' drawn, ' + segmentsView.cut_points.length + ' rules');
    const tableRows = await page.locator('[data-testid="segments-table"] tbody tr[data-i]').count();
    check('partition: the segments table lists every segment', tableRows === segmentsView.segments.length, tableRows + ' rows');
    const seg = page.locator('[data-testid="timeline-segment"][data-state="closed"], [data-testid="timeline-segment"][data-state="active"]').first();
    await seg.hover();
    await page.waitForSelector('#tooltip:not([hidden])', { timeout: WAIT_MS });
    check('partition: hovering a segment shows its tooltip', (await page.locator('#tooltip').innerText()).includes('Base offset'));
    await seg.click();
    await page.waitForFunction(() => {
      const pre = document.querySelector('[data-testid="dump-view"]');
      return pre && pre.textContent.startsWith('Dumping ');
    }, null, { timeout: WAIT_MS });
    const dump = await page.locator('[data-testid="dump-view"]').innerText();
    check('partition: clicking a segment dumps it', dump.startsWith('Dumping '), dump.slice(0, 60));
    check('partition: dump paging buttons', (await page.locator('[data-testid="dump-next"]').count()) === 1 && (await page.locator('[data-testid="dump-prev"]').isDisabled()));
    await noBanner(page, 'partition after the dump');
    await shot(page, 'partition');
  });

  await step('messages', async () => {
    const start = segmentsView ? segmentsView.log_start_offset : 0;
    await page.selectOption('[data-testid="messages-from"]', 'earliest');
    await page.click('[data-testid="messages-load"]');
    await page.waitForFunction((first) => {
      const row = document.querySelector('[data-testid="message-row"]');
      return row && row.getAttribute('data-offset') === String(first);
    }, start, { timeout: WAIT_MS });
    const offsets = await page.locator('[data-testid="message-row"]').evaluateAll((rows) => rows.map((r) => Number(r.getAttribute('data-offset'))));
    check('messages: rows start at the log start ' + start, offsets.length > 0 && offsets[0] === start, 'first ' + offsets[0]);
    check('messages: offsets ascend', offsets.every((o, i) => i === 0 || o > offsets[i - 1]));
    await page.selectOption('[data-testid="messages-format"]', 'hex');
    const hex = (await page.locator('[data-testid="message-row"] .msg-val').first().innerText()).trim();
    check('messages: hex format', /^([0-9a-f]{2}( |$))+/.test(hex) || hex.startsWith('null'), hex.slice(0, 40));
    await page.selectOption('[data-testid="messages-format"]', 'json');
    await page.locator('[data-testid="message-row"]').first().click();
    await noBanner(page, 'messages');
    await shot(page, 'messages');
  });

  await step('groups', async () => {
    await loaded(page, () => page.click('[data-testid="nav-groups"]'));
    await noBanner(page, 'groups');
    check('groups: the table is shown', await page.locator('[data-testid="groups-table"]').isVisible());
    const row = '[data-testid="group-row"][data-group="' + cssEsc(group) + '"]';
    if ((await page.locator(row).count()) === 0) {
      await page.fill('[data-testid="groups-filter"]', group);
      await page.waitForSelector(row, { timeout: WAIT_MS }).catch(() => {});
    }
    check('groups: a row for ' + group, (await page.locator(row).count()) === 1);
    const lag = await attr(page, row + ' [data-testid="group-lag"]', 'data-lag');
    check('groups: ' + group + ' lags ' + expect.group_lag, lag === String(expect.group_lag), 'shows ' + lag);
    await shot(page, 'groups');
  });

  await step('group', async () => {
    await loaded(page, () => page.click('[data-testid="group-row"][data-group="' + cssEsc(group) + '"] a'));
    await noBanner(page, 'group');
    const lag = await attr(page, '[data-testid="group-lag-total"]', 'data-lag');
    check('group: total lag ' + expect.group_lag, lag === String(expect.group_lag), 'shows ' + lag);
    check('group: lag per partition chart', (await page.locator('svg[data-testid="chart-lag-partitions"]').count()) === 1);
    check('group: lag history chart', (await page.locator('svg[data-testid="chart-lag-history"]').count()) === 1);
    check('group: members table', (await page.locator('[data-testid="members-table"]').count()) === 1);
    await shot(page, 'group');
  });

  await step('health', async () => {
    await loaded(page, () => page.click('[data-testid="nav-health"]'));
    await noBanner(page, 'health');
    for (const id of ['cleaner-card', 'recovery-card', 'fsync-card']) {
      check('health: ' + id + ' shown', await page.locator('[data-testid="' + id + '"]').isVisible());
    }
    // the rates come from the broker's sampler: a broker started a moment ago may have none yet
    const reqs = await page.locator('[data-testid="requests-table"] tbody tr[data-api]').count();
    check('health: request rates table (' + reqs + ' APIs)', await page.locator('[data-testid="requests-table"]').isVisible());
    const fsync = await page.locator('[data-testid="fsync-card"]').innerText();
    check('health: fsync latency in ms', / ms/.test(fsync));
    await shot(page, 'health');
  });

  await step('error banner', async () => {
    httpErrorsExpected = true;
    try {
      await loaded(page, () => page.goto(url + '/#/topics/' + encodeURIComponent('no-such-topic-' + Date.now())));
      const text = await bannerText(page);
      check('an API error shows in the error banner', text !== null && /no topic/.test(text), text || 'no banner');
    } finally {
      httpErrorsExpected = false;
    }
    await loaded(page, () => page.click('[data-testid="nav-overview"]'));
    check('the banner goes when leaving the page', (await bannerText(page)) === null);
  });

  await step('partition (dark)', async () => {
    const dark = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'dark', storageState: await context.storageState() });
    const dpage = await dark.newPage();
    dpage.setDefaultTimeout(WAIT_MS);
    watch(dpage, 'dark');
    await loaded(dpage, () => dpage.goto(url + '/#/topics/' + encodeURIComponent(topic) + '/' + partition));
    await noBanner(dpage, 'partition (dark)');
    const bg = await dpage.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const rgb = (bg.match(/\d+/g) || []).map(Number);
    check('partition (dark): the page is dark', rgb.length >= 3 && rgb[0] + rgb[1] + rgb[2] < 150, bg);
    const local = await dpage.locator('[data-testid="timeline-segment"][data-state="active"], [data-testid="timeline-segment"][data-state="closed"]').count();
    check('partition (dark): the timeline has ' + expect.segments + ' local segments', local === expect.segments, local + ' drawn');
    await dpage.locator('[data-testid="timeline-segment"][data-state="closed"], [data-testid="timeline-segment"][data-state="active"]').first().click();
    await dpage.waitForFunction(() => {
      const pre = document.querySelector('[data-testid="dump-view"]');
      return pre && pre.textContent.startsWith('Dumping ');
    }, null, { timeout: WAIT_MS });
    await shot(dpage, 'partition-dark');
    await dark.close();
  });

  if (expect.login) {
    await step('logout', async () => {
      await loaded(page, () => page.click('[data-testid="logout"]'));
      check('logout: the login form is back', (await page.locator('[data-testid="login-user"]').count()) === 1);
    });
  }

  check('no console errors or uncaught exceptions', pageErrors.length === 0, pageErrors.slice(0, 5).join(' | '));
} catch (e) {
  check('the browser run', false, (e && e.message ? e.message : String(e)).split('\n')[0]);
} finally {
  if (browser) await browser.close().catch(() => {});
  clearTimeout(overall);
}
console.log(failures ? failures + ' checks failed' : 'all checks passed');
process.exit(failures ? 1 : 0);
