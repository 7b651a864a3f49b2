import { Catch, type ExceptionFilter } from '@nestjs/common';

import {
  RateLimitCostExceededError,
  RateLimitedError,
  RateLimitUnavailableError,
  UnauthenticatedError,
} from '../errors';

/**
 * Hands the library's refusals on to GraphQL as they are. A refusal is an expected answer:
 * without this filter Nest's exception handler would log each one as an error with its stack
 * (it logs every error but its own). A store outage is logged once by the module, not once per
 * refused call (store-health.ts). Registered application-wide by `RateLimitModule`.
 */
export class RefusalFilter implements ExceptionFilter {
  catch(exception: unknown): never {
    throw exception;
  }
}
Catch(
  RateLimitedError,
  RateLimitCostExceededError,
  RateLimitUnavailableError,
  UnauthenticatedError,
)(RefusalFilter);
