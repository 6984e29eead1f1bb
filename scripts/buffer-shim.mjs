// The global `Buffer` of the browser bundle (scripts/build-msw.mjs): the `buffer` package's.
export { Buffer } from 'buffer';
