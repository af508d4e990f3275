// Validates a glTF / GLB file with the Khronos glTF validator (npm package
// `gltf-validator`) and prints its JSON report on stdout.
//
//   node tests/support/validate_gltf.js NODE_TOOLS_DIR FILE.glb
//
// NODE_TOOLS_DIR is the --prefix the package was installed into
// (`npm install --prefix NODE_TOOLS_DIR gltf-validator`). Exits 0 when the
// report was printed (whatever it says), 2 when validation could not run.
'use strict';
const fs = require('fs');
const path = require('path');

const [toolsDir, file] = process.argv.slice(2);
if (!toolsDir || !file) {
  console.error('usage: node validate_gltf.js NODE_TOOLS_DIR FILE.glb');
  process.exit(2);
}
const validator = require(path.resolve(toolsDir, 'node_modules', 'gltf-validator'));
const bytes = new Uint8Array(fs.readFileSync(file));
validator
  .validateBytes(bytes, {
    uri: path.basename(file),
    maxIssues: 0, // report every issue
    externalResourceFunction: (uri) =>
      Promise.reject(new Error(`external resource ${uri}: a .glb must be self-contained`)),
  })
  .then((report) => {
    process.stdout.write(JSON.stringify(report, null, 2) + '\n');
  })
  .catch((error) => {
    console.error(`validation did not run: ${error}`);
    process.exit(2);
  });
