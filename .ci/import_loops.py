#!/usr/bin/env python3
"""Fails when any two .rs files of a crate import each other, directly or
through others (an import loop). Data must flow one way: see the invariant in
ARCHITECTURE.md. An import is a `crate::`/`super::` path outside comments and
outside `#[cfg(test)] mod tests`; module declarations are not imports, nor
are re-exports through `lib.rs` (only files other than lib.rs/main.rs count).

Usage: python3 .ci/import_loops.py [ROOT]   (ROOT defaults to the workspace)
"""
import os, re, sys, itertools
root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
def modfile(src, parts):
    # longest prefix of parts that maps to a file
    for n in range(len(parts), 0, -1):
        p = os.path.join(src, *parts[:n])
        for cand in (p + '.rs', os.path.join(p, 'mod.rs')):
            if os.path.exists(cand):
                return cand
    return None
edges = {}
for crate in sorted(os.listdir(root)):
    src = os.path.join(root, crate, 'src')
    if not os.path.isdir(src): continue
    for dp, _, fs in os.walk(src):
        for f in fs:
            if not f.endswith('.rs'): continue
            path = os.path.join(dp, f)
            text = open(path).read()
            text = re.sub(r'//[^\n]*', '', text)
            text = re.sub(r'#\[cfg\(test\)\]\s*mod tests \{.*', '', text, flags=re.S)
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
