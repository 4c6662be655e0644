#!/usr/bin/env python3
"""Fails when any two .rs files of a crate import each other, directly or
through others (an import loop). Data must flow one way: see the invariant in
ARCHITECTURE.md. An import is a `crate::`/`super::` path outside comments and
outside `#[cfg(test)] mod tests`; module declarations are not imports. A
path through a re-export (`use crate::Metrics` where `lib.rs` says
`pub use metrics::Metrics`) is followed to the file that defines the name,
so a loop cannot hide behind a crate root; the `pub use` line itself is not
an import of the file that holds it.

Usage: python3 .ci/import_loops.py [ROOT]   (ROOT defaults to the workspace)
"""
import os, re, sys, itertools
root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
def strip(text):
    text = re.sub(r'//[^\n]*', '', text)
    return re.sub(r'#\[cfg\(test\)\]\s*mod tests \{.*', '', text, flags=re.S)
def module_of(src, path):
    parts = os.path.relpath(path, src)[:-3].split('/')
    return parts[:-1] if parts[-1] in ('mod', 'lib', 'main') else parts
def reexports(src, path, cache={}):
    """name -> module path (list of parts, from the crate root) for each
    `pub use` in the file at path."""
    if path in cache: return cache[path]
    here = module_of(src, path)
    out = {}
    text = strip(open(path).read())
    for m in re.finditer(r'\bpub(?:\([^)]*\))?\s+use\s+([^;]+);', text):
        body = re.sub(r'\s+', '', m.group(1))
        g = re.match(r'(.*?)::\{(.*)\}$', body)
        items = [(g.group(1) + '::' + i) for i in g.group(2).split(',') if i] if g else [body]
        for item in items:
            item = item.split('as')[0] if '::' not in item.split('as')[-1] and 'as' in item and re.search(r'\bas\b', item.replace('::', ' ')) else item
            item = re.split(r'\bas\b', item.replace('::', ' :: '))[0].replace(' :: ', '::').strip()
            segs = item.split('::')
            if segs[0] == 'crate': target = segs[1:]
            elif segs[0] == 'self': target = here + segs[1:]
            elif segs[0] == 'super': target = here[:-1] + segs[1:]
            else: target = here + segs
            out[segs[-1]] = target
    cache[path] = out
    return out
def modfile(src, parts, depth=0):
    """The file that defines the item at parts (a path from the crate root),
    following re-exports."""
    root_file = next((os.path.join(src, r) for r in ('lib.rs', 'main.rs') if os.path.exists(os.path.join(src, r))), None)
    for n in range(len(parts), -1, -1):
        if n == 0:
            found = root_file
        else:
            p = os.path.join(src, *parts[:n])
            found = next((c for c in (p + '.rs', os.path.join(p, 'mod.rs')) if os.path.exists(c)), None)
        if found is None: continue
        if n < len(parts) and depth < 8:
            target = reexports(src, found).get(parts[n])
            if target is not None and target != parts[:n + 1]:
                followed = modfile(src, target + parts[n + 1:], depth + 1)
                if followed: return followed
        return found if n > 0 else None
    return None
edges = {}
# every crate of the workspace: a folder with a Cargo.toml and a src/, at
# the top or one level down (drivers/double-fire, …)
def is_crate(d): return os.path.isfile(os.path.join(root, d, 'Cargo.toml')) and os.path.isdir(os.path.join(root, d, 'src'))
top = [d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)) and d not in ('target',) and not d.startswith('.')]
crates = sorted([d for d in top if is_crate(d)] +
                [os.path.join(d, e) for d in top for e in os.listdir(os.path.join(root, d))
                 if os.path.isdir(os.path.join(root, d, e)) and is_crate(os.path.join(d, e))])
for crate in crates:
    src = os.path.join(root, crate, 'src')
    for dp, _, fs in os.walk(src):
        for f in fs:
            if not f.endswith('.rs'): continue
            path = os.path.join(dp, f)
            text = strip(open(path).read())
            # a re-export names what the file offers, not what it uses
            text = re.sub(r'\bpub(?:\([^)]*\))?\s+use\s+[^;]+;', '', text)
            rel = os.path.relpath(path, src)
            modparts = rel[:-3].split('/')
            if modparts[-1] in ('mod', 'lib', 'main'): modparts = modparts[:-1]
            targets = set()
            for m in re.finditer(r'\b(crate|super)((?:::\w+)+)', text):
                head, rest = m.group(1), m.group(2).split('::')[1:]
                if head == 'crate': parts = rest
                else:
                    base = modparts[:-1] if not path.endswith('mod.rs') else modparts[:-1]
                    # super from a.rs (module a) → parent; from a/mod.rs (module a) → parent too
                    parts = base + rest
                    # nested super::super
                    while parts and parts[0:1] == ['super']: parts = parts[1:]
                t = modfile(src, parts)
                if t and t != path: targets.add(t)
            # grouped `use super::{a, b}` / `use crate::{a::b, c}`
            for m in re.finditer(r'\buse (crate|super)::\{([^}]*)\}', text, flags=re.S):
                head = m.group(1)
                for item in m.group(2).split(','):
                    item = item.strip().split(' as ')[0]
                    if not item or item in ('self',): continue
                    rest = item.split('::')
                    parts = rest if head == 'crate' else modparts[:-1] + rest
                    t = modfile(src, parts)
                    if t and t != path: targets.add(t)
            edges[path] = targets
# find 2-cycles and longer cycles via SCC
sys.setrecursionlimit(10000)
index = {}; low = {}; stack = []; on = set(); sccs = []; i = [0]
def strong(v):
    index[v] = low[v] = i[0]; i[0] += 1; stack.append(v); on.add(v)
    for w in edges.get(v, ()):
        if w not in index: strong(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1: sccs.append(comp)
for v in list(edges):
    if v not in index: strong(v)
for c in sccs:
    print('LOOP:', ' ⇄ '.join(os.path.relpath(x, root) for x in sorted(c)))
    for a in c:
        for b in c:
            if b in edges.get(a, ()): print('   ', os.path.relpath(a, root), '->', os.path.relpath(b, root))
print(len(sccs), 'import loops')
sys.exit(1 if sccs else 0)
