#!/usr/bin/env node
/*
 * Copies the repository's CHANGELOG.md into libs/delay before npm packs the library (its "prepack"
 * script), so the package ships the same changelog. The copy is not committed (.gitignore).
 */
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
fs.copyFileSync(path.join(ROOT, 'CHANGELOG.md'), path.join(ROOT, 'libs', 'delay', 'CHANGELOG.md'));
