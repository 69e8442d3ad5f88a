// Module resolve hook registered by lambda_bootstrap.js before it imports an ES module handler:
// ES modules ignore NODE_PATH, yet on Lambda they import the runtime's AWS SDK and the layers'
// packages. A bare specifier the default resolution does not find is looked up from each
// NODE_PATH folder in turn.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const folders = (process.env.NODE_PATH || '').split(path.delimiter).filter(Boolean);

export async function resolve(specifier, context, nextResolve) {
  try {
    return await nextResolve(specifier, context);
  } catch (err) {
    const bare = !specifier.startsWith('.') && !specifier.startsWith('/') && !/^[a-z]+:/i.test(specifier);
    if (!bare || err.code !== 'ERR_MODULE_NOT_FOUND') throw err;
    for (const folder of folders) {
      // A parent just inside `folder`: resolution searches folder/node_modules, then folder's
      // parents' node_modules, so both "x/node_modules" and a plain folder work.
      const parentURL = pathToFileURL(path.join(folder, '..', '__cdkd_emulator_parent__.mjs')).href;
      try {
        return await nextResolve(specifier, { ...context, parentURL });
      } catch (_ignored) {
        // next folder
      }
    }
    throw err;
  }
}
