/** The scenario file's validator as the build compiled it (`dist/scenarios/scenario-schema.cjs`), for the browser bundle (scripts/build-msw.mjs). */
declare module 'video-service-sim-scenario-validator' {
  const validate: (data: unknown) => boolean;
  export default validate;
}
