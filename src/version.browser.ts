/** `version.ts` for a browser bundle (see there): the package's version, written in by the build. */
declare const __SIMULATOR_VERSION__: string;

export const SIMULATOR_VERSION: string = __SIMULATOR_VERSION__;
