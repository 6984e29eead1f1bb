/** The clips as modules of the browser bundle (written by scripts/build-msw.mjs): each one's bytes in base64. */
declare module 'video-service-sim-clips/*' {
  export const base64: string;
}
