'use strict';
/* Summaries of repeated runs, and how the report prints them. */

/** The value at quantile `q` (0..1) of sorted numbers. */
function quantile(sorted, q) {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

/** Median, min and max of several runs' values. */
function summary(values) {
  const s = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (s.length === 0) return { median: NaN, min: NaN, max: NaN, runs: values };
  const mid = Math.floor(s.length / 2);
  const median = s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
  return { median, min: s[0], max: s[s.length - 1], runs: values };
}

/** a / b, or NaN when either is missing. */
function ratio(a, b) {
  return Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? a / b : NaN;
}

/** A number with `digits` significant figures and thousands separators. */
function fmt(value, digits = 3) {
  if (!Number.isFinite(value)) return 'n/a';
  if (Math.abs(value) >= 10 ** digits) return Math.round(value).toLocaleString('en-US');
  return Number(value.toPrecision(digits)).toLocaleString('en-US', { maximumFractionDigits: 6 });
}

/** `median (min-max)` of a summary. */
function range(s, digits = 3) {
  if (!s || !Number.isFinite(s.median)) return 'n/a';
  if (s.runs.length === 1) return fmt(s.median, digits);
  return `${fmt(s.median, digits)} (${fmt(s.min, digits)}-${fmt(s.max, digits)})`;
}

/** `1.23x`, or n/a. */
const times = (v) => (Number.isFinite(v) ? `${v.toFixed(2)}x` : 'n/a');

/** A Markdown table from a header row and rows of cells. */
function table(header, rows) {
  const all = [header, ...rows].map((r) => r.map((c) => String(c)));
  const widths = header.map((_, i) => Math.max(3, ...all.map((r) => r[i].length)));
  const line = (r) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [
    line(all[0]),
    `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`,
    ...all.slice(1).map(line),
  ].join('\n');
}

module.exports = { fmt, quantile, range, ratio, summary, table, times };
