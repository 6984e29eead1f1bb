/** The clips as modules of the browser bundle (written by scripts/build-msw.mjs): each one's bytes in base64. */
declare module 'video-service-sim-clips/*' {
  export const base64: string;
}

/** The scenario file's validator as the build compiled it (`dist/scenarios/scenario-schema.cjs`), for the browser bundle. */
declare module 'video-service-sim-scenario-validator' {
  const validate: (data: unknown) => boolean;
  export default validate;
}

/** The bundled scenarios as the build resolved them (`dist/scenarios/bundled.json`), for the browser bundle. */
declare module 'video-service-sim-bundled-scenarios' {
  const bundled: {
    scenarios: Record<string, import('../core/scenario.js').Scenario>;
    /** Each bundled scenario's name and one-line purpose, in order. */
    list: { name: string; purpose: string }[];
  };
  export default bundled;
}
