import { type RateLimitAlgorithm, type RateLimitRule } from '../rate-limit-rule';
import type { Decider } from './decider';
import { RateLimitConfigError } from '../errors';
import type { Config } from '../options/directive-options';
import { showValue } from '../show-value';
import type { RateLimitStore } from '../stores/store';

/** Whose limits of which action an operator means. */
export interface LimitTarget {
  /** The identity, as `identify` (or the `by` source) gives it. */
  readonly identity: string | number;
  readonly action: string;
  /** The source the limits count against, as in the directive; absent = `identify`. */
  readonly by?: string | undefined;
}

/** The state of one limit of an action for one identity. */
export interface LimitStatus {
  readonly action: string;
  readonly algorithm: RateLimitAlgorithm;
  /** Seconds. */
  readonly window: number;
  readonly limit: number;
  /** Units a hit could take now. */
  readonly remaining: number;
  /** Milliseconds until the limit is whole again; 0 when it is. */
  readonly resetMs: number;
}

/** Operators' controls over the limits `transformer` has seen. */
export interface RateLimitControls {
  /** Every limit of `action` for `identity`, counting nothing. */
  readonly peek: (target: LimitTarget) => Promise<LimitStatus[]>;
  /** Makes every limit of `action` for `identity` whole again at once. */
  readonly reset: (target: LimitTarget) => Promise<void>;
  /**
   * The rules `transformer` saw, checked, by field (`Type.field`) in directive order: what the
   * schema's `@rateLimit`s (or their types') declare, for a server that lists or resets them
   * without reading the directives again. Empty until `transformer` ran.
   */
  readonly rules: () => ReadonlyMap<string, readonly RateLimitRule[]>;
}

/** The rules `transformer` saw, by action (what `peek` and `reset` act on) and by field. */
export interface RuleRegistry {
  /** Adds `rules`, the rules of `field` (`Type.field`) when they are a field's. */
  add(rules: readonly RateLimitRule[], field?: string): void;
  /** One rule per distinct algorithm, window and limit of `action` under source `by`. */
  of(action: string, by: string | undefined): readonly RateLimitRule[];
  /** Every field's rules that `transformer` saw. */
  byField(): ReadonlyMap<string, readonly RateLimitRule[]>;
  /** Every action seen, with its sources, as `peek` and `reset` name them: `"submit"`, `"login" by "ip"`. */
  known(): string[];
}

const frozenCopy = (rule: RateLimitRule): RateLimitRule => Object.freeze({ ...rule });

/** An empty registry. */
export function createRuleRegistry(): RuleRegistry {
  const byAction = new Map<string, Map<string, RateLimitRule>>();
  const byField = new Map<string, readonly RateLimitRule[]>();
  return {
    add(rules, field) {
      // copies: what the server is shown can never change what the field counts
      if (field !== undefined) byField.set(field, rules.map(frozenCopy));
      for (const rule of rules) {
        let seen = byAction.get(rule.action);
        if (!seen) byAction.set(rule.action, (seen = new Map()));
        const id = `${rule.by ?? ''}/${rule.algorithm}/${rule.windowSeconds}/${rule.limit}`;
        if (!seen.has(id)) seen.set(id, { ...rule, cost: 1 });
      }
    },
    of(action, by) {
      return [...(byAction.get(action)?.values() ?? [])].filter((r) => r.by === by);
    },
    byField: () => new Map(byField),
    known() {
      const named = new Set<string>();
      for (const [action, rules] of byAction) {
        for (const { by } of rules.values()) {
          named.add(JSON.stringify(action) + (by === undefined ? '' : ` by ${JSON.stringify(by)}`));
        }
      }
      return [...named];
    },
  };
}

/**
 * `peek` and `reset` on `config.store`, each bounded by the directive's timer (`timeoutMs`);
 * store errors reject them.
 * An action `transformer` never saw (under that `by`) rejects, naming it: an operator's typo
 * should not read as "whole".
 */
export function createControls(
  config: Config,
  registry: RuleRegistry,
  { bounded }: Pick<Decider, 'bounded'>,
): RateLimitControls {
  const { store } = config;
  const resolveTarget = (target: LimitTarget) => {
    const { identity, action, by } = target ?? {};
    if (
      !(typeof identity === 'string' && identity !== '') &&
      !(typeof identity === 'number' && Number.isFinite(identity))
    ) {
      throw new TypeError('identity must be a non-empty string or a finite number');
    }
    const rules = registry.of(action, by);
    if (rules.length === 0) {
      const known = registry.known();
      const shown = known.length > 20 ? [...known.slice(0, 20), '...'] : known;
      throw new TypeError(
        `no @${config.name}(action: ${showValue(action)}${by === undefined ? '' : `, by: ${showValue(by)}`}) ` +
          `was seen by transformer; known: ${shown.join(', ') || 'none (was the schema passed through transformer?)'}`,
      );
    }
    return { identity: String(identity), rules, store: capable(store) };
  };
  return {
    async peek(target) {
      const { identity, rules, store: s } = resolveTarget(target);
      const states = await bounded(s.peek(identity, rules));
      return rules.map((rule, i) => {
        const remaining = states[i]?.remaining ?? rule.limit;
        return {
          action: rule.action,
          algorithm: rule.algorithm,
          window: rule.windowSeconds,
          limit: rule.limit,
          remaining,
          // a whole limit waits for nothing (a fresh fixed window would say its full length)
          resetMs: remaining >= rule.limit ? 0 : (states[i]?.resetMs ?? 0),
        };
      });
    },
    async reset(target) {
      const { identity, rules, store: s } = resolveTarget(target);
      await bounded(s.reset(identity, rules));
    },
    rules: () => registry.byField(),
  };
}

function capable(store: RateLimitStore): Required<RateLimitStore> {
  if (typeof store.peek !== 'function' || typeof store.reset !== 'function') {
    throw new RateLimitConfigError(
      'rateLimitDirective: the store does not implement peek and reset',
    );
  }
  return store as Required<RateLimitStore>;
}
