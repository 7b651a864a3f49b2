import type { RequestHandler } from 'express';

/**
 * The team page's Content Security Policy: its own script, style and API only, nothing inline,
 * and no framing by any site (clickjacking a Submit button), which only a header can forbid.
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Headers for every response: the page's CSP, no framing (`X-Frame-Options` for browsers that
 * predate `frame-ancestors`), no MIME sniffing, no Referer leaving the page, and a browsing
 * context and resources of its own. `/graphql` keeps only `frame-ancestors` of the CSP, so
 * that Apollo's landing page, which loads its explorer from Apollo's CDN, still works in
 * development.
 */
export function securityHeaders(): RequestHandler {
  return (req, res, next) => {
    const api = req.path === '/graphql' || req.path.startsWith('/graphql/');
    res.setHeader('Content-Security-Policy', api ? "frame-ancestors 'none'" : PAGE_CSP);
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
    res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
    next();
  };
}
