// What the build steps that read openapi.yaml's operations share (scripts/build-contract.mjs,
// scripts/request-defaults.mjs, scripts/operation-table.mjs): following a document's local `$ref`s,
// and an operation's parameters. Each step walks the document's paths its own way (the methods it
// takes, their order, what it refuses).

/**
 * Reading `document` (a parsed OpenAPI document): `deref(node)` follows the node's local `$ref`s
 * (`#/components/...`, JSON Pointer escapes undone) to what they lead to (a node without one: the
 * node itself; undefined: undefined), and `parameters(item, operation)` is the operation's
 * parameters, its path item's first, each dereferenced.
 */
export function openapiDocument(document) {
  const deref = (node) => {
    let n = node;
    while (n && n.$ref) n = n.$ref.slice(2).split('/').reduce((o, k) => o[k.replace(/~1/g, '/').replace(/~0/g, '~')], document);
    return n;
  };
  const parameters = (item, operation) => [...(item.parameters ?? []), ...(operation.parameters ?? [])].map(deref);
  return { deref, parameters };
}
