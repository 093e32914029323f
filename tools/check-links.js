#!/usr/bin/env node
// npm run docs:check-links: every internal link and anchor resolves.
//  - the built site (docs/.vitepress/dist, from npm run docs:build): each <a href> and <img src> that
//    stays on the site names a page or file that exists, and its #anchor an id on that page;
//  - the Markdown as GitHub shows it (README.md, BENCHMARKS.md, CHANGELOG.md, the package's and the shop's READMEs, docs/**/*.md):
//    each relative link names a file of the repository, and its #anchor a heading of that file (GitHub's anchors).
// Prints each broken link and exits 1; exits 0 when all resolve.
//
//   node tools/check-links.js [--site <built site>] [--root <repository>] [--no-site] [--no-markdown]
'use strict';

const { existsSync, readdirSync, readFileSync, statSync } = require('node:fs');
const path = require('node:path');
const { githubSlug } = require('./docs-split.js');

function walk(dir, keep, skip = () => false) {
  const files = [];
  if (!existsSync(dir)) return files;
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    if (skip(file)) continue;
    if (statSync(file).isDirectory()) files.push(...walk(file, keep, skip));
    else if (keep(file)) files.push(file);
  }
  return files;
}

function decodeEntities(text) {
  return text.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

function safeDecode(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Broken links of a built site: [{ from, link, reason }]. */
function checkSite(site) {
  if (!existsSync(path.join(site, 'index.html'))) throw new Error(`${site} holds no built site: run npm run docs:build first`);
  const pages = walk(site, (file) => file.endsWith('.html'));
  const ids = new Map();
  const idsOf = (file) => {
    if (!ids.has(file)) {
      const html = readFileSync(file, 'utf8');
      ids.set(file, new Set([...html.matchAll(/\sid="([^"]*)"/g)].map((match) => decodeEntities(match[1]))));
    }
    return ids.get(file);
  };
  const broken = [];
  let links = 0;
  for (const page of pages) {
    const html = readFileSync(page, 'utf8');
    const from = '/' + path.relative(site, page).split(path.sep).join('/');
    const targets = [...html.matchAll(/<a\s[^>]*?href="([^"]*)"/g), ...html.matchAll(/<img\s[^>]*?src="([^"]*)"/g)].map((match) => decodeEntities(match[1]));
    for (const href of targets) {
      if (href === '' || /^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//')) continue;
      links++;
      const [pathAndQuery, anchor] = href.split('#', 2);
      const urlPath = pathAndQuery.split('?')[0];
      let file = page;
      if (urlPath !== '') {
        const resolved = urlPath.startsWith('/') ? urlPath : path.posix.join(path.posix.dirname(from), urlPath);
        file = path.join(site, safeDecode(resolved));
        if (resolved.endsWith('/')) file = path.join(file, 'index.html');
        else if (!existsSync(file) && existsSync(`${file}.html`)) file = `${file}.html`;
        if (!existsSync(file) || statSync(file).isDirectory()) {
          broken.push({ from, link: href, reason: 'no such page or file' });
          continue;
        }
      }
      if (anchor && file.endsWith('.html') && !idsOf(file).has(safeDecode(anchor))) {
        broken.push({ from, link: href, reason: `no #${safeDecode(anchor)} on ${'/' + path.relative(site, file).split(path.sep).join('/')}` });
      }
    }
  }
  return { broken, pages: pages.length, links };
}

/** GitHub's anchors of a Markdown file's headings (outside code fences). */
function markdownAnchors(text) {
  const anchors = new Set();
  const seen = new Map();
  let fence = null;
  for (const line of text.split('\n')) {
    const opening = /^(```+|~~~+)/.exec(line);
    if (opening) {
      if (fence === null) fence = opening[1];
      else if (line.startsWith(fence)) fence = null;
      continue;
    }
    if (fence !== null) continue;
    const heading = /^#{1,6} (.*)$/.exec(line);
    if (heading) {
      const base = githubSlug(heading[1].replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[`*]/g, ''));
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const match of line.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(match[1]);
  }
  return anchors;
}

/** Broken relative links of the Markdown files as GitHub shows them. */
function checkMarkdown(root) {
  const files = [
    ...['README.md', 'BENCHMARKS.md', 'CHANGELOG.md', 'libs/delay/README.md', 'apps/shop/README.md'].map((file) => path.join(root, file)).filter((file) => existsSync(file)),
    ...walk(path.join(root, 'docs'), (file) => file.endsWith('.md'), (file) => /[/\\](api|\.vitepress|node_modules)$/.test(file)),
  ];
  const anchorsOf = new Map();
  const broken = [];
  let links = 0;
  for (const file of files) {
    const from = path.relative(root, file).split(path.sep).join('/');
    let fence = false;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (/^(```|~~~)/.test(line)) fence = !fence;
      if (fence) continue;
      const code = line.replace(/`[^`]*`/g, '');
      const targets = [...code.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g), ...code.matchAll(/<img\s[^>]*?src="([^"]*)"/g)].map((match) => match[1]);
      for (const href of targets) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('/')) continue;
        links++;
        const [target, anchor] = href.split('#', 2);
        const targetFile = target === '' ? file : path.resolve(path.dirname(file), safeDecode(target));
        if (!existsSync(targetFile)) {
          broken.push({ from, link: href, reason: 'no such file' });
          continue;
        }
        if (anchor && targetFile.endsWith('.md')) {
          if (!anchorsOf.has(targetFile)) anchorsOf.set(targetFile, markdownAnchors(readFileSync(targetFile, 'utf8')));
          if (!anchorsOf.get(targetFile).has(anchor)) broken.push({ from, link: href, reason: `no heading #${anchor} in ${path.relative(root, targetFile).split(path.sep).join('/')}` });
        }
      }
    }
  }
  return { broken, files: files.length, links };
}

function main() {
  const args = process.argv.slice(2);
  const option = (name, fallback) => (args.includes(name) ? path.resolve(args[args.indexOf(name) + 1]) : fallback);
  const root = option('--root', path.resolve(__dirname, '..'));
  const site = option('--site', path.join(root, 'docs', '.vitepress', 'dist'));
  const broken = [];
  if (!args.includes('--no-site')) {
    if (!existsSync(path.join(site, 'index.html'))) {
      process.stderr.write(`${site} holds no built site: run npm run docs:build first (or pass --no-site)\n`);
      process.exit(2);
    }
    const result = checkSite(site);
    broken.push(...result.broken.map((entry) => ({ ...entry, from: `site ${entry.from}` })));
    process.stdout.write(`site: ${result.links} internal links on ${result.pages} pages\n`);
  }
  if (!args.includes('--no-markdown')) {
    const result = checkMarkdown(root);
    broken.push(...result.broken);
    process.stdout.write(`markdown: ${result.links} relative links in ${result.files} files\n`);
  }
  for (const entry of broken) process.stderr.write(`broken link in ${entry.from}: ${entry.link} (${entry.reason})\n`);
  if (broken.length > 0) {
    process.stderr.write(`${broken.length} broken link(s)\n`);
    process.exit(1);
  }
  process.stdout.write('every internal link and anchor resolves\n');
}

if (require.main === module) main();

module.exports = { checkSite, checkMarkdown, markdownAnchors };
