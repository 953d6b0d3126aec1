#!/usr/bin/env python3
"""pprof_same.py A.raw B.raw: whether two `go tool pprof -raw` dumps hold the
same samples (each stack by its locations' names and lines, with its labels
and values, counted) and the same comments; location ids and their order may
differ (a merged profile numbers them anew). Prints the counts; exit 0 when
the same."""
import collections
import re
import sys


def parse(path):
    txt = open(path).read()
    if 'Samples:' not in txt or '\nLocations' not in txt:
        sys.exit('%s: not a pprof -raw dump' % path)
    samples = txt.split('Samples:')[1].split('\nLocations')[0]
    locs_part = txt.split('\nLocations')[1].split('\nMappings')[0]
    locs, cur = {}, None
    for line in locs_part.splitlines():
        m = re.match(r'\s+(\d+): 0x[0-9a-f]+ (?:M=\d+ )?(.*)', line)
        if m:
            cur = m.group(1)
            locs[cur] = [m.group(2)]
        elif cur and line.strip():
            locs[cur].append(line.strip())
    count = collections.Counter()
    lines = samples.strip().splitlines()[1:]
    i = 0
    while i < len(lines):
        m = re.match(r'\s+(\d+)\s+(\d+): ([\d ]+)$', lines[i])
        if not m:
            i += 1
            continue
        stack = tuple(tuple(locs[x]) for x in m.group(3).split())
        labels = []
        i += 1
        while i < len(lines) and not re.match(r'\s+\d+\s+\d+: ', lines[i]):
            labels.append(lines[i].strip())
            i += 1
        count[(stack, tuple(labels))] += int(m.group(1)) * 10**12 + int(m.group(2))
    comments = [l for l in txt.splitlines() if l.startswith('Comment')]
    return count, comments


a, ca = parse(sys.argv[1])
b, cb = parse(sys.argv[2])
same = a == b and ca == cb
print('%d and %d distinct samples; samples %s; comments %s' %
      (len(a), len(b), 'same' if a == b else 'DIFFER', 'same' if ca == cb else 'DIFFER'))
if ca != cb:
    print('  ', set(ca) ^ set(cb))
sys.exit(0 if same else 1)
