/**
 * `then(value)` at once when `value` is at hand, or once its promise settles: for a middleware whose
 * answer is usually known already (a token verified moments ago, a rate-limit window already read),
 * so that the common case costs the request no turn of the event loop. The promise, when there is
 * one, is returned: Express passes its failure on as an error.
 */
export function whenReady<T, R>(value: T | Promise<T>, then: (value: T) => R): R | Promise<R> {
  return value instanceof Promise ? value.then(then) : then(value);
}
