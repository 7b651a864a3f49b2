// The team page of the reference CTF server: plain DOM, no build step. Every value that comes
// from the server is written with textContent, never parsed as HTML.

const ENDPOINT = 'graphql';
const TOKEN_KEY = 'ctf.teamToken';
const ACTION = 'submit';
const REQUEST_TIMEOUT_MS = 10_000;
const TICK_MS = 250;

const BOARD_QUERY = 'query Board { me { name score } challenges { id title points solved } }';
const LIMITS_QUERY = 'query Limits { rateLimits { action limit remaining resetIn } }';
const SUBMIT_MUTATION =
  'mutation Submit($challengeId: ID!, $flag: String!) ' +
  '{ submitFlag(challengeId: $challengeId, flag: $flag) { correct } }';

const byId = (id) => {
  const found = document.getElementById(id);
  if (!found) throw new Error(`#${id} is missing from index.html`);
  return found;
};

const ui = {
  signIn: byId('sign-in'),
  tokenForm: byId('token-form'),
  tokenInput: byId('token-input'),
  signInButton: byId('sign-in-button'),
  teamBar: byId('team-bar'),
  teamName: byId('team-name'),
  teamScore: byId('team-score'),
  signOut: byId('sign-out'),
  message: byId('message'),
  board: byId('board'),
  attemptsKnown: byId('attempts-known'),
  attemptsUnknown: byId('attempts-unknown'),
  remaining: byId('remaining'),
  limit: byId('limit'),
  pips: byId('pips'),
  reset: byId('reset'),
  resetSeconds: byId('reset-seconds'),
  blocked: byId('blocked'),
  retrySeconds: byId('retry-seconds'),
  retryUnit: byId('retry-unit'),
  budget: byId('budget'),
  budgetAvailable: byId('budget-available'),
  budgetMaximum: byId('budget-maximum'),
  budgetRate: byId('budget-rate'),
  challenges: byId('challenges'),
  noChallenges: byId('no-challenges'),
  template: byId('challenge-template'),
};

/** Everything the page knows; render() draws it. */
const state = {
  token: null,
  busy: false,
  /** The signed-in team, { name, score }, once the server accepted the token. */
  team: null,
  challenges: [],
  /** The submit limit as the server last reported it: { limit, remaining, resetAt } or null. */
  limits: null,
  /** Epoch ms until which the server refuses submissions, or null. */
  blockedUntil: null,
  /** The team's query budget as the last answer left it: { available, maximum, rate } or null. */
  budget: null,
};

let ticker = null;
let inputCount = 0;

function readStoredToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

function storeToken(token) {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Storage disabled: the token lives as long as the page.
  }
}

/**
 * POSTs one GraphQL operation. Resolves to { data, errors, extensions, headers } or, when no
 * GraphQL answer came back at all, to { failure } with a sentence for the team.
 */
async function graphql(query, variables) {
  const headers = { 'content-type': 'application/json', accept: 'application/json' };
  const token = state.token;
  if (token) headers.authorization = `Bearer ${token}`;
  let response;
  try {
    response = await fetch(ENDPOINT, {
      method: 'POST',
      headers,
      body: JSON.stringify({ query, variables }),
      cache: 'no-store',
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    const timedOut = error instanceof DOMException && error.name === 'TimeoutError';
    return {
      failure: timedOut
        ? 'The server did not answer in time. Try again.'
        : 'Could not reach the server. Check your connection and try again.',
    };
  }
  let body = null;
  try {
    body = await response.json();
  } catch {
    // Not JSON: reported below with the HTTP status.
  }
  if (!body || typeof body !== 'object') {
    return { failure: `The server answered HTTP ${response.status} without a GraphQL result.` };
  }
  if (state.token === token) rememberBudget(body.extensions?.cost);
  return {
    data: body.data ?? null,
    errors: Array.isArray(body.errors) ? body.errors : [],
    extensions: body.extensions ?? {},
    headers: response.headers,
  };
}

const codeOf = (error) => error?.extensions?.code;

function findError(result, code) {
  return (result.errors ?? []).find((e) => codeOf(e) === code);
}

const wholeSeconds = (value) => {
  const n = Number(value);
  return Number.isFinite(n) && n >= 0 ? Math.ceil(n) : null;
};

/**
 * The submit limit from a response: `extensions.rateLimit.submit` when the server exposes it,
 * else the `RateLimit: "submit";r=2;t=58` and `RateLimit-Policy: "submit";q=3;w=60` headers.
 */
function limitsFrom(result) {
  const exposed = result.extensions?.rateLimit?.[ACTION];
  if (exposed && wholeSeconds(exposed.remaining) !== null) {
    return {
      limit: wholeSeconds(exposed.limit),
      remaining: wholeSeconds(exposed.remaining),
      reset: wholeSeconds(exposed.reset),
    };
  }
  const header = result.headers?.get('ratelimit');
  if (!header || !header.startsWith(`"${ACTION}"`)) return null;
  const param = (text, name) => wholeSeconds(new RegExp(`;\\s*${name}=(\\d+)`).exec(text)?.[1]);
  const remaining = param(header, 'r');
  if (remaining === null) return null;
  return {
    limit: param(result.headers.get('ratelimit-policy') ?? '', 'q'),
    remaining,
    reset: param(header, 't'),
  };
}

/**
 * The submit limit as the server holds it, from `Query.rateLimits`: what makes the attempts
 * left, and a pause, survive a reload. Left as it was when the server could not say.
 */
function rememberStatus(result) {
  const list = result.data?.rateLimits;
  if (result.failure || result.errors?.length || !Array.isArray(list)) return;
  const submit = list.find((s) => s?.action === ACTION);
  const limit = wholeSeconds(submit?.limit);
  const remaining = wholeSeconds(submit?.remaining);
  if (limit === null || remaining === null) return;
  const resetIn = wholeSeconds(submit.resetIn) ?? 0;
  state.limits = { limit, remaining, resetAt: resetIn > 0 ? Date.now() + resetIn * 1000 : null };
}

function rememberLimits(result) {
  const found = limitsFrom(result);
  if (!found) return;
  state.limits = {
    limit: found.limit ?? state.limits?.limit ?? null,
    remaining: found.remaining,
    resetAt: found.reset ? Date.now() + found.reset * 1000 : null,
  };
}

/**
 * The query budget from an answer's `extensions.cost` (Shopify's shape): every operation is
 * priced before it runs, and what it did not use comes back. Kept as it was when the answer
 * does not say (an operation that cost nothing asks no one).
 */
function rememberBudget(cost) {
  const status = cost?.throttleStatus;
  const available = wholeSeconds(status?.currentlyAvailable);
  const maximum = wholeSeconds(status?.maximumAvailable);
  const rate = Number(status?.restoreRate);
  if (available === null || maximum === null || !Number.isFinite(rate)) return;
  state.budget = { available, maximum, rate };
}

/** A flag-attempt refusal; a refusal by the query budget is explained like other errors. */
function findAttemptsLimit(result) {
  return (result.errors ?? []).find(
    (e) => codeOf(e) === 'RATE_LIMITED' && e.extensions?.action !== 'budget',
  );
}

function block(result, error) {
  const seconds =
    wholeSeconds(error.extensions?.retryAfter) ??
    wholeSeconds(result.headers?.get('retry-after')) ??
    1;
  state.blockedUntil = Date.now() + Math.max(1, seconds) * 1000;
  if (state.limits) state.limits.remaining = 0;
  say('Too many flag attempts: that one was neither checked nor counted.', 'error');
}

/**
 * Epoch ms until which a submission cannot pass: the server said so (blocked), or the page saw
 * the last attempt of the window spent and knows when the window resets. Null when it may pass.
 */
function pausedUntil() {
  if (state.blockedUntil !== null) return state.blockedUntil;
  const { limits } = state;
  return limits?.remaining === 0 && limits.resetAt ? limits.resetAt : null;
}

/** Puts one sentence in the live region; kind is 'info', 'success' or 'error'. */
function say(text, kind = 'info') {
  ui.message.textContent = text;
  ui.message.className = `message message-${kind}`;
  ui.message.hidden = !text;
}

/** Explains errors that are not about the submit budget; returns true when there were some. */
function explain(result) {
  if (result.failure) {
    say(result.failure, 'error');
    return true;
  }
  if (findError(result, 'UNAUTHENTICATED')) {
    signOut();
    say('That token was not accepted. Check it and sign in again.', 'error');
    ui.tokenInput.focus();
    return true;
  }
  const other = result.errors?.[0];
  if (other) {
    say(humanText(other), 'error');
    return true;
  }
  return false;
}

/** A sentence for the team about a GraphQL error; codes are for programs, not for people. */
function humanText(error) {
  switch (codeOf(error)) {
    case 'RATE_LIMIT_UNAVAILABLE':
      return 'The server cannot check its rate limits right now, so nothing was done. Try again in a moment.';
    case 'RATE_LIMITED': {
      const seconds = wholeSeconds(error.extensions?.retryAfter) ?? 1;
      const wait = `${seconds} ${seconds === 1 ? 'second' : 'seconds'}`;
      if (error.extensions?.action === 'budget') {
        return `Your team's query budget is spent for now, so nothing was done. Try again in ${wait}.`;
      }
      return `Too many requests from your team. Try again in ${wait}.`;
    }
    case 'COST_ESTIMATED_TOO_EXPENSIVE':
      return 'That request asks for more than the query budget allows at once, so nothing was done.';
    case 'BAD_USER_INPUT':
      return String(error.message ?? 'The server did not accept that input.');
    case 'INTERNAL_SERVER_ERROR':
      return 'Something went wrong on the server. Try again in a moment.';
    default:
      return 'The server refused the request. Reload the page and try again.';
  }
}

/**
 * The board and the team's limits, asked together. The limits are a separate operation so that
 * the board still loads when they cannot be read (the attempts then show after a submission).
 */
async function loadBoard() {
  const token = state.token;
  const [result, status] = await Promise.all([graphql(BOARD_QUERY), graphql(LIMITS_QUERY)]);
  if (explain(result)) return false;
  const { me, challenges } = result.data ?? {};
  if (!me || !Array.isArray(challenges)) {
    say('The server sent an incomplete answer. Reload the page to try again.', 'error');
    return false;
  }
  state.team = { name: String(me.name), score: Number(me.score) };
  state.challenges = challenges;
  if (state.token === token) rememberStatus(status);
  return true;
}

async function signIn(token) {
  state.token = token;
  state.busy = true;
  render();
  const ok = await loadBoard();
  state.busy = false;
  // An UNAUTHENTICATED answer has signed out meanwhile; then this token is not kept.
  const accepted = ok && state.token === token;
  if (accepted) {
    storeToken(token);
    ui.tokenInput.value = '';
  }
  render();
  return accepted;
}

function signOut() {
  storeToken(null);
  state.token = null;
  state.team = null;
  state.challenges = [];
  state.limits = null;
  state.blockedUntil = null;
  state.budget = null;
  ui.challenges.replaceChildren();
  render();
}

async function submitFlag(challenge, input) {
  const flag = input.value.trim();
  if (!flag) {
    say(`Type a flag for “${challenge.title}” first.`, 'error');
    input.focus();
    return;
  }
  const token = state.token;
  state.busy = true;
  render();
  const result = await graphql(SUBMIT_MUTATION, { challengeId: challenge.id, flag });
  state.busy = false;
  // Signed out (or in as another team) meanwhile: this answer is about a page that is gone.
  if (state.token !== token) return render();
  if (!result.failure) rememberLimits(result);
  const limited = findAttemptsLimit(result);
  if (limited) {
    block(result, limited);
  } else if (!explain(result)) {
    if (result.data?.submitFlag?.correct === true) {
      input.value = '';
      say(`Correct! “${challenge.title}” is solved: +${challenge.points} points.`, 'success');
      await loadBoard();
    } else {
      say(`Wrong flag for “${challenge.title}”.`, 'error');
      input.select();
    }
  }
  render();
  if (!input.disabled && input.isConnected && !input.closest('[hidden]')) input.focus();
}

/** Creates the list item of a challenge once; later renders only update it. */
function challengeItem(challenge) {
  const existing = ui.challenges.querySelector(`li[data-id="${CSS.escape(challenge.id)}"]`);
  if (existing) return existing;
  const item = ui.template.content.firstElementChild.cloneNode(true);
  item.dataset.id = challenge.id;
  const input = item.querySelector('.flag-input');
  const label = item.querySelector('.flag-label');
  input.id = `flag-input-${++inputCount}`;
  label.htmlFor = input.id;
  item.querySelector('.flag-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const current = state.challenges.find((c) => c.id === item.dataset.id);
    if (current && !state.busy && pausedUntil() === null) void submitFlag(current, input);
  });
  return item;
}

/** Sets `node.textContent` only when it changes: a rewrite replaces the node's text. */
function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

function renderChallenges() {
  const items = state.challenges.map((challenge) => {
    const item = challengeItem(challenge);
    const solved = challenge.solved === true;
    item.classList.toggle('is-solved', solved);
    setText(item.querySelector('.challenge-title'), String(challenge.title));
    setText(item.querySelector('.points'), `${Number(challenge.points)} pts`);
    item.querySelector('.solved-badge').hidden = !solved;
    setText(item.querySelector('.flag-label'), `Flag for ${challenge.title}`);
    item.querySelector('.flag-form').hidden = solved;
    return item;
  });
  // Only a list that changed is rebuilt: moving a node, even to where it was, takes the focus
  // from the field being typed into and drops a click whose mouse-up lands after the move.
  const current = [...ui.challenges.children];
  if (current.length !== items.length || items.some((item, i) => current[i] !== item)) {
    ui.challenges.replaceChildren(...items);
  }
  ui.noChallenges.hidden = items.length > 0;
  renderLocks();
}

/** Whether a submission may be sent: the buttons and fields, nothing else. */
function renderLocks() {
  const locked = state.busy || pausedUntil() !== null;
  for (const item of ui.challenges.children) {
    const button = item.querySelector('.submit-button');
    const input = item.querySelector('.flag-input');
    if (button.disabled !== locked) button.disabled = locked;
    if (input.readOnly !== state.busy) input.readOnly = state.busy;
  }
}

function secondsUntil(epochMs) {
  return Math.max(0, Math.ceil((epochMs - Date.now()) / 1000));
}

/** Advances the countdowns; the window's end restores the full budget the server reported. */
function tick() {
  const now = Date.now();
  const paused = pausedUntil() !== null;
  if (state.blockedUntil !== null && now >= state.blockedUntil) state.blockedUntil = null;
  if (state.limits?.resetAt && now >= state.limits.resetAt) {
    state.limits.resetAt = null;
    if (state.limits.limit !== null) state.limits.remaining = state.limits.limit;
  }
  if (paused && pausedUntil() === null) say('You can submit flags again.', 'info');
  // Only what a tick changes: the countdowns, the attempts left and whether Submit is on. The
  // list and its fields stay as they are, with what the team is typing and where its focus is.
  if (state.token === null || state.team === null) return render();
  renderLimits();
  renderLocks();
}

const MAX_PIPS = 10;

/** One dot per attempt, filled while unused; a large limit gets the number alone. */
function renderPips(remaining, limit) {
  const count = limit <= MAX_PIPS ? limit : 0;
  if (ui.pips.childElementCount !== count) {
    ui.pips.replaceChildren(...Array.from({ length: count }, () => document.createElement('span')));
  }
  [...ui.pips.children].forEach((pip, i) => pip.classList.toggle('is-used', i >= remaining));
}

function renderLimits() {
  const { limits } = state;
  const paused = pausedUntil();
  const known = limits !== null && limits.limit !== null;
  ui.attemptsKnown.hidden = !known;
  ui.attemptsUnknown.hidden = known;
  if (known) {
    setText(ui.remaining, String(limits.remaining));
    setText(ui.limit, String(limits.limit));
    ui.remaining.classList.toggle('is-empty', limits.remaining === 0);
    renderPips(limits.remaining, limits.limit);
    const showReset = limits.resetAt !== null && paused === null;
    ui.reset.hidden = !showReset;
    if (showReset) setText(ui.resetSeconds, String(secondsUntil(limits.resetAt)));
  }
  ui.blocked.hidden = paused === null;
  if (paused !== null) {
    const seconds = secondsUntil(paused);
    setText(ui.retrySeconds, String(seconds));
    setText(ui.retryUnit, seconds === 1 ? 'second' : 'seconds');
  }
  renderBudget();
  const counting = paused !== null || Boolean(limits?.resetAt);
  if (counting && ticker === null) ticker = setInterval(tick, TICK_MS);
  if (!counting && ticker !== null) {
    clearInterval(ticker);
    ticker = null;
  }
}

const RATE_FORMAT = new Intl.NumberFormat('en', { maximumFractionDigits: 1 });

function renderBudget() {
  const { budget } = state;
  ui.budget.hidden = budget === null;
  if (budget === null) return;
  ui.budgetAvailable.textContent = String(budget.available);
  ui.budgetMaximum.textContent = String(budget.maximum);
  ui.budgetRate.textContent = RATE_FORMAT.format(budget.rate);
}

function render() {
  const signedIn = state.token !== null && state.team !== null;
  ui.signIn.hidden = signedIn;
  ui.board.hidden = !signedIn;
  ui.teamBar.hidden = !signedIn;
  ui.signInButton.disabled = state.busy;
  ui.signIn.setAttribute('aria-busy', String(state.busy && !signedIn));
  if (signedIn) {
    ui.teamName.textContent = state.team.name;
    ui.teamScore.textContent = String(state.team.score);
    renderChallenges();
    renderLimits();
  } else if (ticker !== null) {
    clearInterval(ticker);
    ticker = null;
  }
}

ui.tokenForm.addEventListener('submit', (event) => {
  event.preventDefault();
  const token = ui.tokenInput.value.trim().replace(/^Bearer\s+/i, '');
  if (!token) {
    say('Paste your team token first.', 'error');
    ui.tokenInput.focus();
    return;
  }
  say('');
  void signIn(token).then((ok) => {
    if (ok) say('Signed in.', 'info');
  });
});

ui.signOut.addEventListener('click', () => {
  signOut();
  say('Signed out. The token was removed from this tab.', 'info');
  ui.tokenInput.focus();
});

const stored = readStoredToken();
if (stored) void signIn(stored);
else render();
