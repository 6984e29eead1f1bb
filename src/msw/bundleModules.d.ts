/** The bundled scenarios as the build resolved them (`dist/scenarios/bundled.json`), for the browser bundle (scripts/build-msw.mjs). */
declare module 'video-service-sim-bundled-scenarios' {
  const bundled: {
    scenarios: Record<string, import('../core/scenario/scenario.js').Scenario>;
    /** Each bundled scenario's name and one-line purpose, in order. */
    list: { name: string; purpose: string }[];
  };
  export default bundled;
}
