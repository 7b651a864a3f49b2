import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

import {
  chromium,
  type Browser,
  type BrowserContext,
  type Locator,
  type Page,
} from 'playwright-core';

import { postGraphQL } from '../support/http';
import { stopAll } from '../support/processes';
import { redisUrl, startRedisServer, uniquePrefix } from '../support/redis';
import { startServerProcess } from '../support/servers';

// The team page at `/` in headless Chromium, against `node server/dist/main.js` on a real Redis.
// Chromium is Debian's package (no browser download); CHROMIUM_PATH points elsewhere.

const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const SCREENSHOTS = join(__dirname, 'screenshots');
const WAIT_MS = 10_000;

const WARMUP = 'Warm-up: read the rules';
const RACE = 'Race to the counter';
const TITLES = [WARMUP, RACE, 'XOR marks the spot'];

let browser: Browser | undefined;
let origin = '';
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `No Chromium at ${CHROMIUM_PATH}: install it with \`apt-get install chromium\` (Debian), or set CHROMIUM_PATH`,
    );
  }
  const server = await startServerProcess({
    REDIS_URL: redisUrl(),
    RATE_LIMIT_PREFIX: uniquePrefix(),
  });
  origin = new URL(server.url).origin;
  browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: CHROMIUM_ARGS,
    timeout: 30_000,
  });
  mkdirSync(SCREENSHOTS, { recursive: true });
});

afterEach(async () => {
  await Promise.all(contexts.splice(0).map((c) => c.close()));
});

afterAll(async () => {
  await browser?.close();
  await stopAll();
});

/** A page on `site` in a fresh context, recording what should never happen on it. */
interface TeamPage {
  readonly page: Page;
  /** Page errors, console errors and requests that left `site`. */
  readonly problems: string[];
}

async function openPage(site = origin, viewport = { width: 1000, height: 860 }): Promise<TeamPage> {
  if (!browser) throw new Error('The browser did not start');
  const context = await browser.newContext({ viewport });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  page.setDefaultNavigationTimeout(WAIT_MS);
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
  });
  page.on('request', (request) => {
    const url = request.url();
    if (!url.startsWith(`${site}/`) && !url.startsWith('data:'))
      problems.push(`request outside the server: ${url}`);
  });
  await page.goto(`${site}/`);
  return { page, problems };
}

/** Resolves once `read()` gives a value that `accept` takes; fails after WAIT_MS with the last one. */
async function eventually<T>(
  what: string,
  read: () => Promise<T>,
  accept: (value: T) => boolean,
): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  let last: T | undefined;
  for (;;) {
    last = await read();
    if (accept(last)) return last;
    if (Date.now() > deadline)
      throw new Error(
        `Timed out after ${WAIT_MS} ms waiting for ${what}; last saw ${String(last)}`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}

const textOf = async (locator: Locator): Promise<string> =>
  ((await locator.textContent()) ?? '').replace(/\s+/g, ' ').trim();

const hasText = (locator: Locator, text: string): Promise<string> =>
  eventually(
    `${String(locator)} to read "${text}"`,
    () => textOf(locator),
    (t) => t === text,
  );

const contains = (locator: Locator, part: string): Promise<string> =>
  eventually(
    `${String(locator)} to contain "${part}"`,
    () => textOf(locator),
    (t) => t.includes(part),
  );

async function signIn(page: Page, token: string): Promise<void> {
  await page.getByLabel('Team token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

function challenge(page: Page, title: string): Locator {
  return page.locator('#challenges > li', { hasText: title });
}

async function submitFlag(page: Page, title: string, flag: string): Promise<void> {
  await page.getByLabel(`Flag for ${title}`).fill(flag);
  await challenge(page, title).getByRole('button', { name: 'Submit' }).click();
}

const storedToken = (page: Page): Promise<unknown> =>
  page.evaluate('sessionStorage.getItem("ctf.teamToken")');

/** Error codes are for programs: the team reads sentences, never `RATE_LIMITED` and the like. */
const RAW_CODE = /\b(?:[A-Z]+_[A-Z_]+|UNAUTHENTICATED|FORBIDDEN)\b/;

async function statusText(page: Page): Promise<string> {
  const text = await textOf(page.getByRole('status'));
  expect(text).not.toMatch(RAW_CODE);
  return text;
}

async function submitButtonsDisabled(page: Page): Promise<boolean[]> {
  return Promise.all(
    TITLES.map((title) =>
      challenge(page, title).getByRole('button', { name: 'Submit' }).isDisabled(),
    ),
  );
}

test('a team spends its three attempts, Submit stays off until the window resets, a teammate is told why', async () => {
  const { page, problems } = await openPage();
  expect(await page.title()).toBe('CTF: team page');
  await signIn(page, 'demo-token-alpha');

  await hasText(page.locator('#team-name'), 'Null Pointers');
  await hasText(page.locator('#team-score'), '0');
  await eventually(
    'three challenges',
    () => page.locator('#challenges > li').count(),
    (n) => n === 3,
  );
  expect(await page.locator('.challenge-title').allTextContents()).toEqual(TITLES);
  expect(await storedToken(page)).toBe('demo-token-alpha');

  // The attempts left come from the server as the page loads, before any submission.
  const remaining = page.locator('#remaining');
  await hasText(remaining, '3');
  expect(await textOf(page.locator('#limit'))).toBe('3');
  expect(await page.locator('#attempts-unknown').isHidden()).toBe(true);
  // A teammate's page, open before the attempts below are spent, believes three are left.
  const mate = await openPage();
  await signIn(mate.page, 'demo-token-alpha');
  await hasText(mate.page.locator('#remaining'), '3');
  const submit = challenge(page, WARMUP).getByRole('button', { name: 'Submit' });
  for (const left of ['2', '1']) {
    await submitFlag(page, WARMUP, `CTF{wrong-${left}}`);
    await hasText(remaining, left);
    await contains(page.getByRole('status'), `Wrong flag for “${WARMUP}”`);
    await eventually('the submit button to be enabled', () => submit.isEnabled(), Boolean);
  }
  expect(await textOf(page.locator('#limit'))).toBe('3');

  // The last attempt of the window: the page knows a fourth cannot pass, so it offers none.
  await submitFlag(page, WARMUP, 'CTF{wrong-0}');
  await hasText(remaining, '0');
  await contains(page.getByRole('status'), `Wrong flag for “${WARMUP}”`);
  await page.locator('#blocked').waitFor({ state: 'visible' });
  expect(await submitButtonsDisabled(page)).toEqual([true, true, true]);
  const timer = page.getByRole('timer');
  const first = Number(await textOf(timer));
  expect(first).toBeGreaterThan(0);
  expect(first).toBeLessThanOrEqual(60);
  expect(await textOf(page.locator('#blocked'))).toMatch(/You can submit again in \d+ seconds?\./);
  // Enter in the flag field does not get past the disabled button either.
  await page.getByLabel(`Flag for ${RACE}`).fill('CTF{enter-key}');
  await page.getByLabel(`Flag for ${RACE}`).press('Enter');
  // The countdown runs in the page: it goes down without another request.
  await eventually(
    'the countdown to tick',
    async () => Number(await textOf(timer)),
    (n) => n < first,
  );
  expect(await textOf(remaining)).toBe('0');
  expect(await submitButtonsDisabled(page)).toEqual([true, true, true]);
  await page.screenshot({ path: join(SCREENSHOTS, 'page.png'), fullPage: true });

  // The teammate's page has not seen those attempts: its try is refused by the server, in words.
  expect(await textOf(mate.page.locator('#remaining'))).toBe('3');
  await submitFlag(mate.page, WARMUP, 'CTF{one-too-many}');
  await mate.page.locator('#blocked').waitFor({ state: 'visible' });
  await contains(mate.page.getByRole('status'), 'Too many flag attempts');
  await statusText(mate.page);
  expect(await textOf(mate.page.locator('#remaining'))).toBe('0');
  expect(await submitButtonsDisabled(mate.page)).toEqual([true, true, true]);

  // Three wrong flags and the teammate's refused one: the Enter key sent nothing.
  const submissions = await mate.page.evaluate(async () => {
    const response = await fetch('graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer demo-token-alpha' },
      body: JSON.stringify({ query: '{ me { submissions } }' }),
    });
    return ((await response.json()) as { data: { me: { submissions: number } } }).data.me
      .submissions;
  });
  expect(submissions).toBe(3);
  expect(problems).toEqual([]);
  expect(mate.problems).toEqual([]);
});

test('a pause survives a reload, because the page asks the server; an admin reset ends it', async () => {
  const { page, problems } = await openPage();
  await signIn(page, 'demo-token-charlie');
  await hasText(page.locator('#team-name'), 'Heap Spray Heroes');
  const remaining = page.locator('#remaining');
  await hasText(remaining, '3');
  for (const left of ['2', '1', '0']) {
    await submitFlag(page, WARMUP, `CTF{wrong-${left}}`);
    await hasText(remaining, left);
  }
  await page.locator('#blocked').waitFor({ state: 'visible' });

  // Nothing about the pause is kept in the browser: after a reload the server's word restores it.
  await page.reload();
  await hasText(page.locator('#team-name'), 'Heap Spray Heroes');
  await page.locator('#blocked').waitFor({ state: 'visible' });
  expect(await textOf(remaining)).toBe('0');
  const timer = page.getByRole('timer');
  const seconds = Number(await textOf(timer));
  expect(seconds).toBeGreaterThan(0);
  expect(seconds).toBeLessThanOrEqual(60);
  expect(await submitButtonsDisabled(page)).toEqual([true, true, true]);
  await eventually(
    'the countdown to tick after the reload',
    async () => Number(await textOf(timer)),
    (n) => n < seconds,
  );

  const reset = await postGraphQL(
    `${origin}/graphql`,
    'mutation { resetRateLimit(teamId: "t3", action: "submit") }',
    'demo-admin-token',
  );
  expect(reset.body.data).toEqual({ resetRateLimit: true });
  await page.reload();
  await hasText(page.locator('#team-name'), 'Heap Spray Heroes');
  await hasText(remaining, '3');
  expect(await page.locator('#blocked').isHidden()).toBe(true);
  expect(await submitButtonsDisabled(page)).toEqual([false, false, false]);
  expect(problems).toEqual([]);
});

test('a correct flag shows as solved, on a narrow screen, and the token lasts the tab', async () => {
  const { page, problems } = await openPage(origin, { width: 375, height: 812 });
  await signIn(page, 'demo-token-bravo');
  await hasText(page.locator('#team-name'), 'Segfault Society');
  // The query budget, as the board's answer left it (`extensions.cost`): 1,000 points a
  // minute, of which loading the page spent a few.
  await page.locator('#budget').waitFor({ state: 'visible' });
  expect(await textOf(page.locator('#budget'))).toMatch(
    /^Query budget: \d+ of 1000 points left, refilling 16\.7 a second\.$/,
  );
  const available = Number(await textOf(page.locator('#budget-available')));
  expect(available).toBeGreaterThan(900);
  expect(available).toBeLessThanOrEqual(1000);

  await submitFlag(page, RACE, 'CTF{one_script_one_step}');
  await contains(page.getByRole('status'), `Correct! “${RACE}” is solved`);
  const solved = challenge(page, RACE);
  await solved.locator('.solved-badge').waitFor({ state: 'visible' });
  expect(await solved.locator('form').isHidden()).toBe(true);
  await hasText(page.locator('#team-score'), '300');
  await hasText(page.locator('#remaining'), '2');
  expect(await challenge(page, WARMUP).locator('.solved-badge').isHidden()).toBe(true);

  const overflow = await page.evaluate(
    'document.documentElement.scrollWidth - document.documentElement.clientWidth',
  );
  expect(overflow).toBe(0);
  await page.screenshot({ path: join(SCREENSHOTS, 'page-narrow.png'), fullPage: true });

  await page.reload();
  await hasText(page.locator('#team-name'), 'Segfault Society');
  await challenge(page, RACE).locator('.solved-badge').waitFor({ state: 'visible' });

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('Team token').waitFor({ state: 'visible' });
  expect(await page.locator('#board').isHidden()).toBe(true);
  expect(await storedToken(page)).toBeNull();
  expect(problems).toEqual([]);
});

test('an unknown token is refused in words and not kept', async () => {
  const { page, problems } = await openPage();
  await signIn(page, 'not-a-team-token');
  await contains(page.getByRole('status'), 'That token was not accepted');
  await statusText(page);
  expect(await page.getByLabel('Team token').isVisible()).toBe(true);
  expect(await page.locator('#board').isHidden()).toBe(true);
  expect(await storedToken(page)).toBeNull();

  // The form is usable again: a good token after a bad one signs in.
  await signIn(page, 'demo-token-charlie');
  await hasText(page.locator('#team-name'), 'Heap Spray Heroes');
  expect(await storedToken(page)).toBe('demo-token-charlie');
  expect(problems).toEqual([]);
});

test('a store lost after sign-in: the flag is not checked, Submit stays open; a reload says why', async () => {
  const redis = await startRedisServer();
  const server = await startServerProcess({
    REDIS_URL: redis.url,
    RATE_LIMIT_PREFIX: uniquePrefix(),
  });
  const site = new URL(server.url).origin;
  const { page, problems } = await openPage(site);
  await signIn(page, 'demo-token-charlie');
  await hasText(page.locator('#team-name'), 'Heap Spray Heroes');
  await redis.stop();

  await submitFlag(page, WARMUP, 'CTF{welcome_aboard}');
  await contains(page.getByRole('status'), 'cannot check its rate limits right now');
  await statusText(page);
  expect(await page.locator('#blocked').isHidden()).toBe(true);
  const submit = challenge(page, WARMUP).getByRole('button', { name: 'Submit' });
  await eventually('the submit button to be enabled', () => submit.isEnabled(), Boolean);
  expect(await challenge(page, WARMUP).locator('.solved-badge').isHidden()).toBe(true);

  // Reads are rate limited too, and the store-error policy (deny) holds for them as well.
  await page.reload();
  await contains(page.getByRole('status'), 'cannot check its rate limits right now');
  await statusText(page);
  expect(await page.locator('#board').isHidden()).toBe(true);
  expect(await page.getByLabel('Team token').isVisible()).toBe(true);
  expect(problems).toEqual([]);
  await server.stop();
});

test('another site cannot frame the page', async () => {
  if (!browser) throw new Error('The browser did not start');
  const context = await browser.newContext();
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  await page.setContent(`<iframe src="${origin}/" width="600" height="400"></iframe>`);
  // Chromium replaces a refused frame with its own error document instead of the team page.
  const framed = await eventually(
    'the iframe to settle',
    async () => page.frames()[1]?.url() ?? '',
    (url) => url !== '' && url !== 'about:blank',
  );
  expect(framed).not.toBe(`${origin}/`);
  expect(await page.frames()[1]?.locator('#token-input').count()).toBe(0);
});

test('typing a flag at human speed during a countdown: every key lands, focus stays, Submit submits', async () => {
  // a server of its own (fresh counters): the demo teams' attempts are spent by the tests above
  const server = await startServerProcess({
    REDIS_URL: redisUrl(),
    RATE_LIMIT_PREFIX: uniquePrefix(),
  });
  const { page, problems } = await openPage(new URL(server.url).origin);
  await signIn(page, 'demo-token-alpha');
  await hasText(page.locator('#team-name'), 'Null Pointers');
  await hasText(page.locator('#remaining'), '3');

  // One wrong flag: 2 attempts left, and the window's countdown runs (the page ticks every 250 ms).
  await submitFlag(page, WARMUP, 'CTF{wrong}');
  await hasText(page.locator('#remaining'), '2');
  await page.locator('#reset').waitFor({ state: 'visible' });
  const countdown = Number(await textOf(page.locator('#reset-seconds')));
  expect(countdown).toBeGreaterThan(0);

  const flag = 'CTF{one_script_one_step}';
  const field = page.getByLabel(`Flag for ${RACE}`);
  await field.click();
  await page.keyboard.type(flag, { delay: 80 }); // about 2 s: 8 ticks of the countdown
  await eventually(
    'the countdown to tick while typing',
    async () => Number(await textOf(page.locator('#reset-seconds'))),
    (n) => n < countdown,
  );
  expect(await field.inputValue()).toBe(flag);
  expect(await field.evaluate((input) => input === document.activeElement)).toBe(true);

  // A real click (mouse down, then up) while the countdown ticks: it submits.
  await challenge(page, RACE).getByRole('button', { name: 'Submit' }).click();
  await contains(page.getByRole('status'), `Correct! “${RACE}” is solved`);
  await hasText(page.locator('#remaining'), '1');
  expect(problems).toEqual([]);
  await server.stop();
});
