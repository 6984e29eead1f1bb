// Build step, after tsc: writes the dashboard's ui/addresses.js (the control endpoints, the forms of
// media files and the kinds of network fault, as src/control-client/endpoints.ts, src/core/generations/mediaPaths.ts and
// src/core/faults/network.ts state them; the text is ADDRESSES_JS of src/http/dashboard.ts) into
// src/generated/dashboard/ and dist/generated/dashboard/, where the dashboard's router serves it
// beside assets/dashboard/.
import { ADDRESSES_JS } from '../dist/http/dashboard.js';
import { writeGenerated } from './write-generated.mjs';

for (const dir of ['src/generated/dashboard/', 'dist/generated/dashboard/']) {
  writeGenerated(new URL(`../${dir}addresses.js`, import.meta.url), ADDRESSES_JS);
}
