// Loaded with `node --import ./scripts/typescript-6.mjs` by lint steps whose tool reads TypeScript
// through its JavaScript API: TypeScript 7 (the project's `tsc`) has no such API in-process, and
// dependency-cruiser supports TypeScript below 7 or from 7.1. Those tools' `import 'typescript'`
// gets the TypeScript 6.0 installed as `typescript-6` (package.json); nothing else is redirected,
// so `tsc` and every other module keep TypeScript 7.
import { registerHooks } from 'node:module';

/** The packages given TypeScript 6.0, by the path of the importing module. */
const TOOLS = /\/node_modules\/dependency-cruiser\//;

registerHooks({
  resolve(specifier, context, nextResolve) {
    if ((specifier === 'typescript' || specifier.startsWith('typescript/')) && TOOLS.test(context.parentURL ?? '')) {
      return nextResolve(`typescript-6${specifier.slice('typescript'.length)}`, context);
    }
    return nextResolve(specifier, context);
  },
});
