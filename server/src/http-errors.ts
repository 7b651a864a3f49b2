import type { ErrorRequestHandler } from 'express';

import { throttled } from './log';

/** The `extensions.code` of an HTTP-level refusal, in GraphQL's error shape. */
export type HttpErrorCode =
  'BAD_REQUEST' | 'PAYLOAD_TOO_LARGE' | 'UNSUPPORTED_MEDIA_TYPE' | 'INTERNAL_SERVER_ERROR';

/** What body-parser and http-errors put on the errors they raise. */
interface HttpError {
  readonly status?: unknown;
  readonly type?: unknown;
}

const MESSAGES: Record<string, string> = {
  'entity.parse.failed': 'The request body must be a JSON object.',
  'entity.too.large': 'The request body is too large.',
  'encoding.unsupported': 'The request body has an unsupported Content-Encoding.',
  'charset.unsupported': 'The request body has an unsupported charset.',
};

/**
 * The app's last error handler. It answers in GraphQL's error shape
 * (`{"errors":[{"message","extensions":{"code"}}]}`) instead of Express's HTML page, which
 * outside production carries a stack trace with the server's paths. It never echoes or logs
 * the request body (a body that fails to parse is often a flag guess, and JSON.parse quotes
 * it in its message). Refusals are logged as one line at most every few seconds, with how many
 * were folded into it.
 */
export function jsonErrorHandler(): ErrorRequestHandler {
  const refused = throttled('warn', 'request refused before GraphQL');
  const failed = throttled('error', 'request failed');
  return (error: unknown, _req, res, next) => {
    if (res.headersSent) return next(error);
    const { status: raw, type } = (error ?? {}) as HttpError;
    const status = typeof raw === 'number' && raw >= 400 && raw < 500 ? raw : 500;
    const code: HttpErrorCode =
      status === 413
        ? 'PAYLOAD_TOO_LARGE'
        : status === 415
          ? 'UNSUPPORTED_MEDIA_TYPE'
          : status < 500
            ? 'BAD_REQUEST'
            : 'INTERNAL_SERVER_ERROR';
    const kind = typeof type === 'string' ? type : undefined;
    if (status < 500) refused({ status, code, type: kind });
    else failed({ error: error instanceof Error ? error.message : String(error), type: kind });
    const message =
      (kind && MESSAGES[kind]) ?? (status < 500 ? 'Bad request.' : 'Internal server error.');
    res.status(status).json({ errors: [{ message, extensions: { code } }] });
  };
}
