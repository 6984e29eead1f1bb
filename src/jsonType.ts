/**
 * The content types of JSON: what a request with a JSON body is sent as (and what the API accepts,
 * parameters such as `charset` aside), and what every JSON answer is sent as (the request path's,
 * the HTTP adapter's own errors, the proxy's refusals).
 */

/** The media type of a JSON body: the `Content-Type` the clients send, and the one the API accepts. */
export const JSON_MEDIA_TYPE = 'application/json';

/** The content type of every JSON answer. */
export const JSON_TYPE = `${JSON_MEDIA_TYPE}; charset=utf-8`;

/** The content type of a JSON Lines file handed over whole (a transcript, a state file). */
export const JSON_LINES_TYPE = 'application/x-ndjson';
